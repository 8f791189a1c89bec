"""A call of a function kernlint has no body for (eval/coverage.unread_callee): an access seen and not
evaluated, so the kernel is not called fully analysed; calls kernlint inlines or models are not counted."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source


def _coverage(src: str):
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    return rec, res


def _kernel(decls: str, call: str) -> str:
    return (f"{decls}\n// kernlint: block=(256,1,1)\n__global__ void k(float* a, int n) {{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {{ {call}; }}\n}}\n")


def test_a_device_function_declared_without_a_body_is_not_evaluated() -> None:
    """`g` may be defined in another translation unit (-rdc): what it writes through `a` is unknown."""
    rec, res = _coverage(_kernel("__device__ void g(float* p, int i);", "g(a, i)"))
    assert rec.status == "partial" and (rec.accesses_seen, rec.accesses_evaluated) == (1, 0), rec
    [gap] = [g for g in rec.gaps if g.kind == "unread_body"]
    assert gap.detail == "`g` (declared at k.cu:1, defined in none of the code kernlint read)"
    [kl904] = [d for d in res.diagnostics if d.code == "KL904"]
    assert f"calls {gap.detail}: kernlint did not read its body" in kl904.message


def test_a_value_only_call_without_a_body_is_counted_too() -> None:
    """No pointer passed: the body can still read or write global memory (`__device__` arrays)."""
    rec, _ = _coverage(_kernel("__device__ float h(int i);", "a[i] = h(i)"))
    assert (rec.accesses_seen, rec.accesses_evaluated) == (2, 1), rec
    assert {g.kind for g in rec.gaps} == {"unread_body"}


def test_a_pure_virtual_method_is_not_evaluated() -> None:
    """A virtual call's target is chosen at run time; the declared method has no body."""
    decls = "struct Sink { __device__ virtual void put(float* p, int i) = 0; };"
    src = (f"{decls}\n// kernlint: block=(256,1,1)\n__global__ void k(Sink** s, float* a, int n) {{\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) (*s)->put(a, i);\n}\n")
    rec, _ = _coverage(src)
    assert rec.status == "partial" and [g.detail for g in rec.gaps if g.kind == "unread_body"] == ["`put` (k.cu:1)"]


def test_builtins_intrinsics_and_defined_helpers_stay_fully_analysed() -> None:
    """A compiler builtin (what INFINITY expands to), CUDA intrinsics of kernlint's shim, and a helper with a
    body kernlint inlines: nothing unread, the kernel is fully analysed."""
    decls = ("#define INF __builtin_huge_valf()\n"
             "__device__ float twice(float x) { return 2.f * x; }")
    call = ("a[i] = fminf(INF, __builtin_fabsf(twice(a[i]))) + __popc(i) + sqrtf((float)i)"
            " + __shfl_down_sync(0xffffffffu, 1.f, 1)")
    rec, res = _coverage(_kernel(decls, call))
    assert rec.status == "full" and (rec.accesses_seen, rec.accesses_evaluated) == (2, 2), rec
    assert not [d for d in res.diagnostics if d.code == "KL904"]


def test_a_library_view_declared_in_a_namespace_is_left_to_the_library_model() -> None:
    """eval/library_calls.py judges bodiless functions of a namespace by what they are passed: a view
    (`make_view(p, n)`) is no access, so no unread body either."""
    decls = ("namespace lib { template <class T> struct View { T* p; int n; };\n"
             "template <class T> __device__ View<T> make_view(T* p, int n); }")
    rec, _ = _coverage(_kernel(decls, "auto v = lib::make_view(a, n); a[i] = 0.f"))
    assert rec.status == "full", rec
