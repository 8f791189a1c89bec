"""Warp-uniform loaded data (eval/uniform_data.py): which loads are sampled runtime values, which stay
unknown, and what findings built on them say."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import LintOptions, analyse_kernel, lint_with_suppressions
from kernlint.eval import uniform_data
from kernlint.eval.events import Branch, MemoryAccess
from kernlint.frontend import parse_source

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL101_uniform_loads.cu"


def evaluate(src: str, block: tuple[int, int, int] = (64, 1, 1)):
    tu = parse_source(src, "t.cu")
    assert tu.kernels, tu.problems
    results = analyse_kernel(tu, tu.kernels[0], LintOptions(block=block), tuple(src.splitlines()))
    return results[0]


def sites(result, root: str, kind: str | None = None) -> list[MemoryAccess]:
    return [e for e in result.events if isinstance(e, MemoryAccess) and e.root == root
            and (kind is None or e.kind == kind)]


def load_symbols(result) -> dict[str, tuple[int, ...]]:
    return {k: v for k, v in result.assumed if uniform_data.is_load_symbol(k)}


def test_block_uniform_load_is_sampled_and_the_access_through_it_evaluated() -> None:
    r = evaluate("""
    __global__ void k(const int* ranks, const float* src, float* dst) {
        int start = ranks[blockIdx.x];
        dst[threadIdx.x] = src[start + threadIdx.x];
    }""")
    (e,) = sites(r, "src")
    syms = load_symbols(r)
    assert len(syms) == 1
    (name, values), = syms.items()
    assert name in e.deps
    # every lane is start + lane elements from the base, start being the sampled value in each sample
    for s, v in enumerate(values):
        a = e.address[s, 0]
        assert list(a - a[0]) == [4 * i for i in range(32)]
        assert int(a[0]) - int(sites(r, "src")[0].address[0, 0, 0]) == 4 * (v - values[0])
    text = " ".join(r.assumptions(e.deps))
    assert "`start = ranks[blockIdx.x]`, loaded at line 3" in text
    assert " and ".join(str(v) for v in values) in text


def test_per_lane_load_stays_unknown() -> None:
    r = evaluate("""
    __global__ void k(const int* idx, const float* src, float* dst) {
        dst[threadIdx.x] = src[idx[threadIdx.x]];
    }""")
    assert not sites(r, "src")
    assert not load_symbols(r)
    assert any(not st.evaluated and st.why and st.why[0] == "loaded" for st in r.coverage)


def test_warp_uniform_address_that_differs_between_warps_is_sampled() -> None:
    # Each warp reads its own word: uniform within the warp, which is what coalescing depends on.
    r = evaluate("""
    __global__ void k(const int* starts, const float* src, float* dst) {
        int s = starts[threadIdx.x / 32];
        dst[threadIdx.x] = src[s + threadIdx.x % 32];
    }""")
    assert len(sites(r, "src")) == 1 and load_symbols(r)


def test_floats_chars_and_shared_words_are_not_sampled() -> None:
    r = evaluate("""
    __global__ void k(const float* f, const char* c, const float* src, float* dst) {
        __shared__ int s[4];
        if (threadIdx.x == 0) s[0] = 7;
        __syncthreads();
        int a = (int)f[blockIdx.x];
        int b = c[blockIdx.x];
        int d = s[0];
        dst[threadIdx.x] = src[a + threadIdx.x] + src[b + threadIdx.x] + src[d + threadIdx.x];
    }""")
    assert not sites(r, "src")
    assert not load_symbols(r)


def test_same_word_reloaded_is_the_same_value_until_a_store() -> None:
    src = """
    __global__ void k(int* p, float* out) {
        int a = p[blockIdx.x];
        %s
        int b = p[blockIdx.x];
        out[a - b + threadIdx.x] = 1.0f;
    }"""
    same = evaluate(src % "")
    (e,) = sites(same, "out")
    base = e.address[0, 0, 0]
    assert base % (1 << 36) == 0  # a - b == 0: lane 0 at the array's base
    stored = evaluate(src % "p[blockIdx.x] = 5;")
    (e2,) = sites(stored, "out")
    assert e2.address[0, 0, 0] != base  # a fresh value after the store
    assert len(load_symbols(stored)) == 2 and len(load_symbols(same)) == 1


def test_condition_on_loaded_values_alone_keeps_both_sides() -> None:
    # No thread index in it: the condition cannot split a warp for any value, so the code under both
    # sides is evaluated, not only the side the samples pick.
    r = evaluate("""
    __global__ void k(const int* flags, float* a, float* b) {
        int f = flags[blockIdx.x];
        if (f == 0) a[threadIdx.x] = 1.0f;
        else b[threadIdx.x] = 2.0f;
    }""")
    assert sites(r, "a") and sites(r, "b")
    assert not [x for x in r.events if isinstance(x, Branch) and x.kind == "if"]


def test_lane_dependent_condition_on_loaded_value_is_evaluated_under_the_samples() -> None:
    # 4096 % 48 == 16 splits the first warp in the first sample: a branch, decided under the samples.
    r = evaluate("""
    __global__ void k(const int* lens, float* a) {
        int len = lens[blockIdx.x];
        if (threadIdx.x < len % 48) a[threadIdx.x] = 1.0f;
    }""")
    (br,) = [x for x in r.events if isinstance(x, Branch) and x.kind == "if"]
    assert any(uniform_data.is_load_symbol(d) for d in br.deps)
    assert all(st.evaluated for st in r.coverage)
    (e,) = sites(r, "a")
    assert e.mask[0, 0].sum() == 16


def test_condition_the_samples_settle_for_every_lane_keeps_what_follows() -> None:
    # `group` is a small index in practice; sampled as a size it would send every lane to the return.
    r = evaluate("""
    __global__ void k(const int4* info, float* a, int C) {
        int c = info[blockIdx.x].w * 256 + threadIdx.x * 8;
        if (c >= C) { return; }
        a[c] = 1.0f;
    }""")
    (e,) = sites(r, "a")
    assert e.mask.any()
    assert all(st.evaluated for st in r.coverage)


def test_constant_struct_fields_are_sampled_like_parameters() -> None:
    r = evaluate("""
    struct P { int rows; int cols; };
    __constant__ P d_p;
    __global__ void k(float* a) {
        for (int i = threadIdx.x; i < d_p.rows; i += blockDim.x) a[blockIdx.x * d_p.cols + i] = 0.0f;
    }""")
    assumed = dict(r.assumed)
    assert "d_p.rows" in assumed and "d_p.cols" in assumed
    assert sites(r, "a") and all(st.evaluated for st in r.coverage)


def test_global_the_kernel_writes_is_not_sampled() -> None:
    r = evaluate("""
    __device__ int counter;
    __global__ void k(float* a) {
        int slot = atomicAdd(&counter, 1);
        a[counter + threadIdx.x] = 0.0f;
    }""")
    assert "counter" not in dict(r.assumed)
    assert not sites(r, "a")


def test_uniform_loads_table() -> None:
    t = uniform_data.UniformLoads(2)
    addr = np.array([10, 20]).reshape(2, 1)
    n1, v1 = t.value("@load:1:1:1:5", "p", addr)
    assert v1 == uniform_data.BASE_SAMPLES
    assert t.value("@load:2:1:2:5", "p", addr) == (n1, v1)  # the same word: the same value
    t.forget("q")
    assert t.value("@load:2:1:2:5", "p", addr)[0] == n1  # a store elsewhere changes nothing
    t.forget("p")
    n3, v3 = t.value("@load:2:1:2:5", "p", addr)
    assert n3 != n1 and v3 == tuple(v + uniform_data.STEP for v in uniform_data.BASE_SAMPLES)
    defined = uniform_data.UniformLoads(2, defines={"@load:3:1:3:5": 1})
    assert defined.value("@load:3:1:3:5", "p", addr)[1] == (1, 1)


def test_eligibility_and_block_uniform_conditions() -> None:
    int4 = ir.CType("int", 4, True, name="int")
    assert uniform_data.eligible(int4, "global") and uniform_data.eligible(int4, "constant")
    assert not uniform_data.eligible(int4, "shared")
    assert not uniform_data.eligible(ir.CType("int", 1, True, name="char"), "global")
    assert not uniform_data.eligible(ir.CType("float", 4, name="float"), "global")
    sym = frozenset({"@load:3:1:3:5"})
    assert uniform_data.block_uniform_condition(np.ones((2, 1, 1)), sym)
    assert not uniform_data.block_uniform_condition(np.ones((2, 2, 32)), sym)  # a thread index in it
    assert not uniform_data.block_uniform_condition(np.ones((2, 1, 1)), frozenset({"n"}))  # a parameter


def test_fixture_severities_and_stated_assumptions() -> None:
    result = lint_with_suppressions(FIXTURE.read_text(), str(FIXTURE))
    by_line = {(d.line, d.code): d for d in result.diagnostics}
    lines = FIXTURE.read_text().splitlines()
    strided = next(i for i, ln in enumerate(lines, 1) if "src[base + threadIdx.x * 32]" in ln)
    d = by_line[(strided, "KL101")]
    assert d.severity == Severity.WARNING and d.metrics["sectors"] == 32 and d.metrics["ideal_sectors"] == 4
    assert any("`base = offsets[blockIdx.x]`, loaded at line" in a for a in d.assumptions)
    loaded_stride = next(i for i, ln in enumerate(lines, 1) if "src[threadIdx.x * ld]" in ln)
    info = by_line[(loaded_stride, "KL101")]
    assert info.severity == Severity.INFO and "unless `ld` == 1" in info.message
    assert info.metrics["coalesced_if"]


def test_one_active_lane_reading_its_own_word_is_not_sampled() -> None:
    # Lane 0 alone is trivially "uniform", but p[threadIdx.x] is a different word in every lane.
    r = evaluate("""
    __global__ void k(const int* p, float* a) {
        int v = 0;
        if (threadIdx.x % 32 == 0) v = p[threadIdx.x];
        a[v + threadIdx.x] = 1.0f;
    }""")
    assert not load_symbols(r)
    assert not sites(r, "a")


def test_uniform_pointer_load_is_an_allocation_of_its_own() -> None:
    r = evaluate("""
    __global__ void k(float** rows, float* out) {
        float* row = rows[blockIdx.x];
        out[threadIdx.x] = row[threadIdx.x];
        if (row == 0) out[threadIdx.x + 64] = 0.0f;
    }""")
    (e,) = [x for x in r.events if isinstance(x, MemoryAccess) and x.root.startswith(uniform_data.PTR_PREFIX)]
    a = e.address[0, 0]
    assert a[0] % 256 == 0 and list(a - a[0]) == [4 * i for i in range(32)]
    assert any("`row = rows[blockIdx.x]`, a pointer loaded at line 3" in x for x in r.assumptions(e.deps))
    # the null test cannot split a warp, and both of its sides are evaluated
    assert len(sites(r, "out", "store")) == 2
    # a per-lane pointer load stays unknown
    r2 = evaluate("""
    __global__ void k(float** rows, float* out) {
        float* row = rows[threadIdx.x];
        out[threadIdx.x] = row[0];
    }""")
    assert not [x for x in r2.events if isinstance(x, MemoryAccess) and x.root.startswith(uniform_data.PTR_PREFIX)]


def test_condition_the_samples_settle_without_losing_code_stays_a_known_branch() -> None:
    # Nothing is skipped that holds an access and nothing leaves: the sampled decision stands, and
    # what the branch writes stays known (a wrap-around index, Rodinia leukocyte's `if (j >= n) j -= n;`).
    r = evaluate("""
    __global__ void k(const int* ns, float* a) {
        int n = ns[blockIdx.x];
        int j = threadIdx.x + 8;
        if (j >= n) j -= n;
        a[j] = 0.0f;
    }""")
    (e,) = sites(r, "a")
    assert list(e.address[0, 0] - e.address[0, 0, 0]) == [4 * i for i in range(32)]
    (br,) = [x for x in r.events if isinstance(x, Branch) and x.kind == "if"]
    assert not br.cond[br.mask].any()  # no lane takes it under the samples


def test_an_atomic_result_is_never_warp_uniform() -> None:
    """`slot = atomicAdd(count, 1)` hands each lane its own value, although every lane names one word:
    a branch on it may split the warp, so it is not evaluated as a uniform one (no clean bill)."""
    src = """
__global__ void k(int* count, float* out) {
    int slot = atomicAdd(count, 1);
    if (slot < 100) out[threadIdx.x] = 1.0f;
}
"""
    result = lint_with_suppressions(src, "t.cu", LintOptions(block=(256, 1, 1)))
    (cov,) = result.coverage
    assert cov.status != "full"
    assert any(d.code in ("KL904", "KL305") for d in result.diagnostics)
