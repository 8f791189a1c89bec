"""The stubs for missing asynchronous-copy headers: `cuda::memcpy_async` made the accesses the CUDA guide documents.

The headers: libcu++ `<cuda/pipeline>` and `<cuda/barrier>`, and `<cooperative_groups/memcpy_async.h>`.

Ampere-era kernels stage global memory into shared memory with `cuda::memcpy_async(dst, src, size, pipe)`
(or `..., barrier)`). The CUDA C++ Programming Guide ("Asynchronous Data Copies", "memcpy_async API") says
the per-thread form, without a group argument, copies `size` bytes from `src` to `dst` for the calling
thread as if by `memcpy`, asynchronously; on sm_80 and later a global-to-shared copy of 4, 8 or 16 aligned
bytes is one `cp.async` of that size (PTX ISA, "cp.async"). For the warp's lanes that is one global read
and one shared write of `size` bytes each: the body of every per-thread overload below hands the three
operands to `cuda::__kernlint_memcpy_async`, which the evaluator reads as exactly that
(kernlint/eval/async_copy.py; a size that does not fold to 4, 8 or 16 is an access not evaluated).

`cuda::aligned_size_t<N>(bytes)` is declared as `size_t`: only the byte count reaches the access (the
alignment is a promise to the compiler), so `cuda::aligned_size_t<alignof(float4)>(sizeof(float4))` folds
to 16.

The group forms (`cuda::memcpy_async(group, dst, src, size, pipe)`, `cooperative_groups::memcpy_async(group,
dst, src, size)`) are collective: the library spreads the bytes over the group's threads in a way the
guide does not fix. They are declared without a body, so each call is an access seen and not evaluated
(eval/library_calls.py names it), never a guessed lane mapping.

Pipelines and barriers are empty objects whose methods do nothing kernlint models (their ordering is not a
memory access). The per-thread overloads take the non-template bases of `pipeline<Scope>` and
`barrier<Scope>`, so no template argument has to be deduced for them. A real header, when found, always
wins (stubs are searched after every include directory).

`<cuda_pipeline.h>` and `<cuda_pipeline_primitives.h>` need no stub: their primitives
(`__pipeline_memcpy_async`, `__pipeline_commit`, `__pipeline_wait_prior`) are declared by kernlint's CUDA
shim in every file. The experimental C++ form of `<cuda_pipeline.h>` (`nvcuda::experimental::memcpy_async(
dst, src, pipe)`, sizeof(T) bytes) is not declared: a template whose T kernlint could not bind would copy
an unknown size, so such a call stays an unresolved one (KL904).
"""
from __future__ import annotations

import posixpath

_CUDA = """\
#ifndef KERNLINT_KNOWN_CUDA_ASYNC
#define KERNLINT_KNOWN_CUDA_ASYNC
namespace cuda {
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2,
                    thread_scope_thread = 3 };
template <size_t Alignment> using aligned_size_t = size_t;
__device__ void __kernlint_memcpy_async(void *dst, const void *src, size_t size);

struct __kernlint_pipeline {};
template <thread_scope Scope> class pipeline : public __kernlint_pipeline {
public:
  __device__ void producer_acquire() {}
  __device__ void producer_commit() {}
  __device__ void consumer_wait() {}
  __device__ void consumer_release() {}
  __device__ bool quit() { return true; }
};
template <thread_scope Scope, uint8_t Stages> class pipeline_shared_state {};
enum class pipeline_role { producer, consumer };
__device__ inline pipeline<thread_scope_thread> make_pipeline() { return pipeline<thread_scope_thread>(); }
template <class Group, thread_scope Scope, uint8_t Stages>
__device__ pipeline<Scope> make_pipeline(const Group &group, pipeline_shared_state<Scope, Stages> *state) {
  return pipeline<Scope>();
}
// (one template for the producer count and the role: kernlint finds a template's body by name and arity)
template <class Group, thread_scope Scope, uint8_t Stages, class CountOrRole>
__device__ pipeline<Scope> make_pipeline(const Group &group, pipeline_shared_state<Scope, Stages> *state,
                                         CountOrRole producers) {
  return pipeline<Scope>();
}
template <uint8_t Prior, thread_scope Scope> __device__ void pipeline_consumer_wait_prior(pipeline<Scope> &pipe) {}

struct __kernlint_barrier {};
struct __kernlint_empty_completion {};
template <thread_scope Scope, class Completion = __kernlint_empty_completion>
class barrier : public __kernlint_barrier {
public:
  typedef unsigned long long arrival_token;
  __device__ arrival_token arrive(ptrdiff_t update = 1) { return 0; }
  __device__ void wait(arrival_token token) const {}
  __device__ void arrive_and_wait() {}
  __device__ void arrive_and_drop() {}
};
template <thread_scope Scope, class Completion>
__device__ void init(barrier<Scope, Completion> *bar, ptrdiff_t expected) {}
template <thread_scope Scope>
__device__ void pipeline_producer_commit(pipeline<thread_scope_thread> &pipe, barrier<Scope> &bar) {}

__device__ inline void memcpy_async(void *dst, const void *src, size_t size, __kernlint_pipeline &pipe) {
  __kernlint_memcpy_async(dst, src, size);
}
__device__ inline void memcpy_async(void *dst, const void *src, size_t size, __kernlint_barrier &bar) {
  __kernlint_memcpy_async(dst, src, size);
}
template <class Group>
__device__ void memcpy_async(const Group &group, void *dst, const void *src, size_t size, __kernlint_pipeline &pipe);
template <class Group>
__device__ void memcpy_async(const Group &group, void *dst, const void *src, size_t size, __kernlint_barrier &bar);
}  // namespace cuda
#endif
"""

_CG_ASYNC = """\
#ifndef KERNLINT_KNOWN_CG_MEMCPY_ASYNC
#define KERNLINT_KNOWN_CG_MEMCPY_ASYNC
namespace cooperative_groups {
template <class Group> __device__ void memcpy_async(const Group &group, void *dst, const void *src, size_t size);
template <class Group> __device__ void wait(const Group &group);
template <unsigned int Prior, class Group> __device__ void wait_prior(const Group &group);
}
#endif
"""

# Missing include (its last two components, else its file name) -> the stub's text.
ASYNC: dict[str, str] = {
    "cuda/pipeline": _CUDA,
    "cuda/barrier": _CUDA,
    "cooperative_groups/memcpy_async.h": _CG_ASYNC,
}


def _key(name: str) -> str:
    parts = posixpath.normpath(name.replace("\\", "/")).split("/")
    two = "/".join(parts[-2:])
    return two if two in ASYNC else parts[-1]


def async_stub(name: str) -> str | None:
    """The stub text for the missing include `name`, or None when it is not one of these headers."""
    return ASYNC.get(_key(name))


def is_async_stub(path: str) -> bool:
    """Whether `path` (under the stub directory) is one of these stubs, whose definitions kernlint lowers."""
    path = path.replace("\\", "/")
    return any(path.endswith("/" + k) for k, text in ASYNC.items() if text)
