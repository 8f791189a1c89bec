"""Template-library copy/MMA calls (eval/library_calls.py): counted as accesses seen and not evaluated."""
from __future__ import annotations

from pathlib import Path

from kernlint.ir import nodes as ir
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval.library_calls import is_library_transfer, qualified
from kernlint.frontend import parse_source

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL904_library_copy.cu"


def test_copies_and_mmas_are_seen_and_named_and_views_are_not() -> None:
    text = FIXTURE.read_text()
    tu = parse_source(text, str(FIXTURE))
    calls = {n.name: n for n in ir.walk(tu.kernels[0].body) if isinstance(n, ir.Call)}
    assert is_library_transfer(calls["copy"]) and qualified(calls["copy"]) == "tiles::copy"
    assert is_library_transfer(calls["mma"]) and qualified(calls["mma"]) == "tiles::mma"  # found by ADL
    assert not is_library_transfer(calls["make_view"])  # a pointer and a size: no object moved
    assert not is_library_transfer(calls["partition_src"])  # a method: a view of an object
    res = lint_source(text, str(FIXTURE), LintOptions(resources=False))
    [rec] = res.coverage
    assert (rec.accesses_seen, rec.accesses_evaluated) == (4, 2)
    [kl904] = [d for d in res.diagnostics if d.code == "KL904"]
    assert "line 30: calls `tiles::copy`" in " ".join(kl904.notes)
    assert "line 33: calls `tiles::mma`" in " ".join(kl904.notes)


def test_a_modelled_or_plain_call_is_not_a_library_access() -> None:
    src = """namespace util { __device__ float twice(float x) { return 2.f * x; }
template <class T> __device__ void fill(T* p, int n); }
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// kernlint: block=(128,1,1)
__global__ void k(float* a) {
    cg::thread_block b = cg::this_thread_block();
    cg::thread_block_tile<32> t = cg::tiled_partition<32>(b);
    float v = util::twice(a[blockIdx.x * 128 + threadIdx.x]);
    util::fill(a, 4);
    a[blockIdx.x * 128 + threadIdx.x] = t.shfl_down(v, 1);
}
"""
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert rec.status == "full" and rec.accesses_seen == 2, rec


def test_a_call_dropped_for_an_undeclared_namespace_is_counted_not_lost() -> None:
    """clang drops `vtile::copy(...);` when `vtile` is undeclared (its header not found): the statement
    is counted from the source as an access seen and not evaluated, so the kernel is not "fully analysed"."""
    f = FIXTURE.with_name("KL904_library_unread.cu")
    res = lint_source(f.read_text(), str(f), LintOptions(resources=False))
    [rec] = res.coverage
    assert (rec.accesses_seen, rec.accesses_evaluated, rec.status) == (4, 3, "partial")
    [gap] = [g for g in rec.gaps if g.kind == "unread_call"]
    assert gap.detail == "vtile::copy" and gap.lines == (14,)
    # A resolved call with the same shape is not counted from text: it has IR.
    assert "unread_call" not in {g.kind for r in lint_source(FIXTURE.read_text(), str(FIXTURE),
                                                               LintOptions(resources=False)).coverage for g in r.gaps}


def test_an_undeclared_call_given_a_pointer_is_an_access_seen_and_not_evaluated() -> None:
    # Every #include found (none here), so only the call itself can say the kernel was not fully seen.
    def coverage(call: str) -> tuple[int, int]:
        src = ("// kernlint: block=(64,1,1)\n__global__ void k(float* out, const float* in) {\n"
               "    int i = blockIdx.x * 64 + threadIdx.x;\n    float r = 0.f;\n"
               f"    {call};\n    out[i] = in[i] + r;\n}}\n")
        res = lint_source(src, "k.cu", LintOptions(resources=False))
        [rec] = res.coverage
        return rec.accesses_seen, rec.accesses_evaluated

    assert coverage("r = fetch_undeclared(in, i)") == (3, 2)  # a base pointer and an index
    assert coverage("stash_undeclared(&out[i], 1.f)") == (3, 2)  # an element's address
    assert coverage("read_into_undeclared(&r, i)") == (2, 2)  # the thread's own variable: an output
    assert coverage("r = scale_undeclared(i, 2)") == (2, 2)  # values only: no memory of the kernel's


def test_an_undeclared_call_inside_a_helper_is_named() -> None:
    """The call is in an inlined helper: its name comes from the helper's own unresolved names (it was `?`)."""
    src = ("__device__ void helper(float* p, int i) { store_streaming(&p[i], 1.0f); }\n"
           "__global__ void k(float* p) { helper(p, threadIdx.x); }\n")
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    [gap] = [g for g in rec.gaps if g.kind == "unresolved_call"]
    assert gap.detail == "store_streaming"


def test_an_object_of_a_local_array_is_registers_not_an_access() -> None:
    """`accum[i][j].x[0]` on a local array of fragments (a class template's member array, dependent in the
    template): thread-local storage, not two memory accesses left unevaluated ('operator[]')."""
    src = ("template <typename T> struct Frag { T x[4]; };\n"
           "template <typename T, int N>\n__global__ void k(T* out) {\n  Frag<T> accum[N][N];\n"
           "  for (int i = 0; i < N; ++i)\n    for (int j = 0; j < N; ++j) accum[i][j].x[0] = T(0);\n"
           "  out[threadIdx.x] = accum[0][0].x[0];\n}\n")
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert (rec.accesses_seen, rec.accesses_evaluated, rec.status) == (1, 1, "full"), rec
