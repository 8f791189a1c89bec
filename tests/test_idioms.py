"""Device-code C++ idioms: methods and conversion operators, helper templates, site attribution in
helpers, cooperative groups, atomics, folded math, and dim3 launch shapes assigned member by member."""
from __future__ import annotations

import numpy as np
import pytest

from kernlint.engine.lint import LintOptions, lint_source, lint_with_suppressions
from kernlint.eval import builtins_math
from kernlint.eval.events import Barrier, MemoryAccess
from kernlint.eval.values import const
from kernlint.frontend import parse_source

OPTS = LintOptions(resources=False)


def lint(src: str, block: tuple[int, int, int] | None = (256, 1, 1)):
    return lint_source(src, "idioms.cu", LintOptions(block=block, resources=False))


def events(src: str, kind: type, block: tuple[int, int, int] = (256, 1, 1)) -> list:
    res = lint(src, block)
    return [e for r in res.results for e in r.events if isinstance(e, kind)]


# --- dim3 launch shapes -------------------------------------------------------------------------------


def test_dim3_assigned_member_by_member_is_the_launch_shape() -> None:
    src = """
    __global__ void k(float* a) { a[threadIdx.x] = 0; }
    void host(float* a, int n) {
        dim3 b; b.x = 256; b.y = 2;
        dim3 g; g.x = n / 256;
        k<<<g, b>>>(a);
    }"""
    tu = parse_source(src, "d.cu")
    (launch,) = tu.launches
    assert launch.block == (256, 2, 1)
    assert launch.grid is None  # g.x depends on a runtime size


def test_dim3_member_assigned_twice_or_compound_is_unknown() -> None:
    src = """
    __global__ void k(float* a) { a[threadIdx.x] = 0; }
    void host(float* a, int n) {
        dim3 b; b.x = 128;
        if (n > 4) b.x = 256;
        k<<<1, b>>>(a);
        dim3 c(64); c.x <<= 1;
        k<<<1, c>>>(a);
    }"""
    tu = parse_source(src, "d.cu")
    assert [l.block for l in tu.launches] == [None, None]


def test_dim3_parameter_with_one_member_set_is_not_guessed() -> None:
    src = """
    __global__ void k(float* a) { a[threadIdx.x] = 0; }
    void host(float* a, dim3 b) { b.x = 64; k<<<1, b>>>(a); }"""
    assert parse_source(src, "d.cu").launches[0].block is None


def test_dim3_from_folded_variables() -> None:
    src = """
    __global__ void k(float* a) { a[threadIdx.x] = 0; }
    void host(float* a) { int t = 32; const int rows = 4; dim3 b(t, rows); k<<<1, b>>>(a); }"""
    assert parse_source(src, "d.cu").launches[0].block == (32, 4, 1)


# --- members, conversion operators, helper templates -------------------------------------------------

SHARED_MEMORY = """
template <class T> struct SharedMemory {
    __device__ operator T*() { extern __shared__ int __smem[]; return (T*)__smem; }
};
"""


def test_conversion_operator_makes_the_pointer_shared() -> None:
    src = SHARED_MEMORY + """
    __global__ void k(float* out) {
        float* s = SharedMemory<float>();
        s[threadIdx.x * 4] = out[threadIdx.x];
    }"""
    acc = [e for e in events(src, MemoryAccess) if e.space == "shared"]
    assert acc and acc[0].root == "__smem"
    assert int(acc[0].address[0, 0, 1] - acc[0].address[0, 0, 0]) == 16


def test_methods_constructors_and_fields_of_a_helper_struct() -> None:
    src = """
    struct Idx {
        int base, stride;
        __device__ Idx(int b, int s) : base(b), stride(s) {}
        __device__ void skip(int k) { base += k * stride; }
        __device__ int at(int i) const { return base + i * this->stride; }
    };
    __global__ void k(float* a) {
        Idx ix(7, 32);
        ix.skip(1);
        a[ix.at(threadIdx.x)] = 0.f;
    }"""
    (acc,) = [e for e in events(src, MemoryAccess) if e.space == "global"]
    lane = acc.address[0, 0] - acc.address[0, 0, 0]
    assert list(lane[:3]) == [0, 128, 256]
    res = lint(src)
    assert any(d.code == "KL102" for d in res.diagnostics)


def test_dependent_helper_template_call_is_inlined_with_its_bound_argument() -> None:
    src = """
    template <int STRIDE> __device__ void put(float* s, int t) { s[STRIDE * t] = 1.f; }
    template <int STRIDE> __global__ void k(float* out) {
        __shared__ float s[256 * 4];
        put<STRIDE>(s, threadIdx.x);
        __syncthreads();
        out[threadIdx.x] = s[threadIdx.x];
    }
    void host(float* o) { k<4><<<1, 256>>>(o); }"""
    res = lint_source(src, "t.cu", OPTS)
    kl201 = [d for d in res.diagnostics if d.code == "KL201"]
    assert [(d.line, d.metrics["ways"] if "ways" in d.metrics else None) for d in kl201][0][0] == 2


# --- site attribution in helpers ---------------------------------------------------------------------

TWO_CALLS = """
__device__ void store2(float* s, int i) { s[2 * i] = 0.f; }
// kernlint: block=(256)
__global__ void k(float* out) {
    __shared__ float s[1024];
    store2(s, threadIdx.x);
    store2(s + 512, threadIdx.x);
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
"""


def test_helper_access_is_reported_at_its_own_line_once_per_call_site() -> None:
    res = lint_source(TWO_CALLS, "h.cu", OPTS)
    kl201 = [d for d in res.diagnostics if d.code == "KL201"]
    # Both call sites conflict the same way through the helper's one index expression: one finding
    # (one edit fixes both), the other call chain listed as its related location.
    assert [d.line for d in kl201] == [2]
    (d,) = kl201
    chains = [tuple(d.metrics["called_from"])] + [tuple(r["called_from"]) for r in d.metrics["related_locations"]]
    assert sorted(chains) == [(6,), (7,)]
    assert any("inlined from the call at line" in n for n in d.notes)
    assert any("line 2 (inlined from the call at line" in n for n in d.notes)


def test_suppression_on_the_helper_line_works() -> None:
    src = TWO_CALLS.replace("s[2 * i] = 0.f; }", "s[2 * i] = 0.f; }  // kernlint: ignore[KL201] test")
    res = lint_with_suppressions(src, "h.cu", OPTS)
    assert not [d for d in res.diagnostics if d.code in ("KL201", "KL901")]


def test_helper_from_another_file_is_reported_at_the_call(tmp_path) -> None:
    (tmp_path / "helper.cuh").write_text("__device__ void store2(float* s, int i) { s[2 * i] = 0.f; }\n")
    src = '#include "helper.cuh"\n' + TWO_CALLS.split("\n", 2)[2]
    path = tmp_path / "k.cu"
    path.write_text(src)
    res = lint_source(src, str(path), OPTS)
    lines = sorted(d.line for d in res.diagnostics if d.code == "KL201")
    text = src.splitlines()
    assert lines and all("store2" in text[ln - 1] for ln in lines)


# --- cooperative groups --------------------------------------------------------------------------------

CG = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"


def test_tile_ranks_and_sizes_follow_the_launch_shape() -> None:
    src = CG + """
    __global__ void k(int* out) {
        cg::thread_block b = cg::this_thread_block();
        cg::thread_block_tile<8> t = cg::tiled_partition<8>(b);
        out[t.meta_group_rank() * 1000 + t.thread_rank() * 10 + t.size() + t.meta_group_size() * 0] = 0;
    }"""
    (acc,) = events(src, MemoryAccess, (64, 1, 1))
    idx = (acc.address[0].reshape(-1) - acc.address[0, 0, 0]) // 4
    lin = np.arange(64)
    assert list(idx) == list((lin // 8) * 1000 + (lin % 8) * 10)


def test_dynamic_partition_and_block_rank() -> None:
    src = CG + """
    __global__ void k(int* out) {
        cg::thread_block b = cg::this_thread_block();
        cg::thread_group g = cg::tiled_partition(b, 4);
        out[b.thread_rank() * 0 + g.thread_rank() + 100 * b.size()] = 0;
    }"""
    (acc,) = events(src, MemoryAccess, (32, 1, 1))
    idx = (acc.address[0, 0] - acc.address[0, 0, 0]) // 4
    assert list(idx[:8]) == [0, 1, 2, 3, 0, 1, 2, 3]


def test_block_sync_is_a_block_barrier_and_tile_sync_a_tile_one() -> None:
    src = CG + """
    __global__ void k(float* a) {
        cg::thread_block b = cg::this_thread_block();
        auto t = cg::tiled_partition<32>(b);
        b.sync();
        t.sync();
    }"""
    bars = events(src, Barrier, (64, 1, 1))
    assert [(e.name, e.scope) for e in bars] == [("sync", "block"), ("tile.sync", "warp")]


# --- atomics and math ------------------------------------------------------------------------------------


def test_atomic_on_one_word_is_contention_not_a_bank_conflict() -> None:
    src = """
    __global__ void k(float* a) {
        __shared__ float acc[64];
        atomicAdd(&acc[0], 1.f);
        atomicAdd(&acc[(threadIdx.x * 32) % 64], 1.f);
    }"""
    res = lint(src, (32, 1, 1))
    kl201 = [d for d in res.diagnostics if d.code == "KL201"]
    assert [d.line for d in kl201] == [5]
    assert any("contention" in n for n in kl201[0].notes)
    acc = [e for r in res.results for e in r.events if isinstance(e, MemoryAccess)]
    assert {e.text for e in acc} == {"atomicAdd"}


def test_atomic_result_is_data() -> None:
    src = """
    __global__ void k(unsigned* c, float* a) {
        unsigned slot = atomicAdd(c, 1u);
        a[slot * 32] = 0.f;
    }"""
    assert not [d for d in lint(src).diagnostics if d.code.startswith("KL10")]


@pytest.mark.parametrize("name, args, want", [
    ("__powf", (2.0, 5.0), 32.0), ("powf", (3.0, 2.0), 9.0), ("exp2f", (4.0,), 16.0), ("log2f", (256.0,), 8.0),
    ("__log2f", (1024.0,), 10.0), ("sqrtf", (16.0,), 4.0), ("rsqrtf", (4.0,), 0.5), ("ceilf", (1.2,), 2.0),
    ("floor", (-1.5,), -2.0), ("fabsf", (-3.0,), 3.0), ("fminf", (1.0, 2.0), 1.0), ("fmaxf", (1.0, 2.0), 2.0),
    ("__popc", (0xF0F0,), 8), ("__popcll", ((1 << 40) | 1,), 2), ("__clz", (1,), 31), ("__clz", (0,), 32),
    ("__ffs", (8,), 4), ("__ffs", (0,), 0), ("__brev", (1,), 1 << 31), ("__float2int_rn", (2.5,), 2),
    ("__float2int_rn", (3.5,), 4), ("__float2int_rz", (-2.7,), -2), ("__float2int_rd", (-2.1,), -3),
    ("__float2uint_ru", (2.1,), 3),
])
def test_math_folds(name: str, args: tuple, want: float) -> None:
    v = builtins_math.fold(name, [const(a) for a in args])
    assert v is not None and v.data is not None
    assert float(v.data.flat[0]) == pytest.approx(want)


def test_math_with_unknown_argument_is_unknown_and_non_math_is_not_folded() -> None:
    from kernlint.eval.values import UNKNOWN

    assert builtins_math.fold("sqrtf", [UNKNOWN]).data is None  # type: ignore[union-attr]
    assert builtins_math.fold("printf", [const(1)]) is None


def test_math_api_resolves_in_the_shim() -> None:
    src = """
    __global__ void k(float* a, unsigned* u, int* i, double* d) {
        a[0] = __log2f(a[1]) + __exp10f(a[2]) + __saturatef(a[3]) + __fdividef(a[4], 2.f) + norm3df(1.f, 2.f, 3.f);
        i[0] = __float2int_rd(a[0]) + __double2int_rn(d[0]) + __ffsll(5ll) + __clzll(7ll) + min(i[1], 2) + max(u[0], 3u);
        u[1] = __brevll(1ull) + __byte_perm(u[0], 0u, 0x3210u) + __funnelshift_l(u[0], u[1], 3u) + __usad(1u, 2u, 3u);
        atomicAdd_block(i, 1); atomicCAS_system(u, 0u, 1u); atomicMax(reinterpret_cast<unsigned long long*>(d), 1ull);
    }"""
    tu = parse_source(src, "m.cu")
    assert not tu.problems, tu.problems


def test_dim3_assigned_as_a_whole() -> None:
    src = """
    __global__ void k(float* a) { a[threadIdx.x] = 0; }
    void host(float* a, int n, int bs) {
        dim3 threads, blocks;
        threads = dim3(512, 1);
        blocks = dim3(n / threads.x, 1);
        k<<<blocks, threads>>>(a);
        threads = dim3(512, 1);
        k<<<blocks, threads>>>(a);
        dim3 t2;
        t2 = dim3(256);
        t2 = dim3(bs);
        k<<<1, t2>>>(a);
    }"""
    tu = parse_source(src, "d.cu")
    assert [l.block for l in tu.launches] == [(512, 1, 1), (512, 1, 1), None]
