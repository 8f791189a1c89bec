"""Reach of regions the samples leave dead or unvisited: position-like parameters sampled as the
first positions, helpers dead at several call lines, data-dependent loops that branch on a counter."""
from __future__ import annotations

from kernlint import ir
from kernlint.engine import LintOptions, lint_source
from kernlint.eval import resample
from kernlint.eval.stmt_facts import _counter_branches

OPTIONS = LintOptions(resources=False)


def test_position_names() -> None:
    for name in ("rank", "deviceRank", "data.deviceRank", "part_id", "gpuID", "dev_idx", "shard"):
        assert resample.is_position_name(name), name
    for name in ("n", "grid", "valid", "width", "numDevices", "tid", "frank", "size"):
        assert not resample.is_position_name(name), name


def test_position_parameters_are_tried_first_as_the_first_positions() -> None:
    dead = {(5, 5, 5, 7): frozenset({"n", "p.rank"})}
    assumed = {"n": (4096, 6144), "p.rank": (3840, 5888)}
    (first, how), *rest = resample.other_overrides(dead, assumed)
    assert first == {"p.rank": resample.FIRST_SAMPLES} and "first positions" in how
    # Without a position-like name nothing changes in the order of the others.
    plain = resample.other_overrides({(5, 5, 5, 7): frozenset({"n", "m"})}, {"n": (4096, 6144), "m": (3840, 5888)})
    assert plain[0][1] == "with their order reversed"


HELPER_TWICE = """
__device__ void saxpy(float* y, const float* x, int n, int rank) {
    for (int i = rank * gridDim.x * blockDim.x + blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        y[i] = x[i * 2];
    }
}
__global__ void k(float* a, float* b, float* c, int n, int rank) {
    saxpy(a, b, n, rank);
    saxpy(c, a, n, rank);
}
void run(float* a, float* b, float* c, int n, int rank) { k<<<64, 256>>>(a, b, c, n, rank); }
"""


def test_a_helper_dead_at_two_call_lines_is_reached_at_both() -> None:
    res = lint_source(HELPER_TWICE, "twice.cu", OPTIONS)
    (rec,) = res.coverage
    assert rec.status == "full", rec.gaps
    # x[i * 2]: lanes 8 bytes apart, 8 sectors for 128 bytes, evaluated with rank = 0 (reported once,
    # at the helper's line).
    (d,) = [d for d in res.diagnostics if d.code == "KL101"]
    assert d.line == 5 and d.metrics["sectors"] == 8
    assert any("rank = 0 and 1" in a for a in d.assumptions)


def _loop(src: str) -> ir.Stmt:
    from kernlint.frontend import parse_source

    tu = parse_source(src, "loop.cu")
    fn = next(f for key, f in tu.functions.items() if key.startswith("k@"))
    return next(n for n in ir.walk(fn.body) if isinstance(n, (ir.For, ir.While)))


def test_counter_branches() -> None:
    assert _counter_branches(_loop("""
__global__ void k(float* a, const int* n) {
    for (int j = 0; j < *n; j++) { if (j == 0) a[0] = 1; else a[j] = 2; }
}"""))
    assert _counter_branches(_loop("""
__global__ void k(float* a, const float* r) {
    int k = 1;
    while (*r > 0.5f) { if (k > 1) a[k] = 1; k++; }
}"""))
    # A branch on data the loop writes (a running maximum) is no counter.
    assert not _counter_branches(_loop("""
__global__ void k(float* a, const float* r, const int* n) {
    float m = 0;
    for (int j = 0; j < *n; j++) { if (r[j] > m) m = r[j]; }
    a[0] = m;
}"""))


def test_a_guard_dead_inside_a_re_sampled_region_is_re_sampled_again(monkeypatch) -> None:
    from pathlib import Path

    from kernlint import engine

    path = Path(__file__).parent.parent / "fixtures" / "KL102_resample_nested_guards.cu"
    src = path.read_text()
    res = lint_source(src, str(path), OPTIONS)
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.line == 22 and d.metrics["sectors"] == 32
    assert any("sn = 3328 and 5376 the guard at line 21 never holds" in a for a in d.assumptions)
    assert res.coverage[0].status == "full"
    # One level only: the inner guard stays dead, its store not evaluated (and not reported).
    monkeypatch.setattr(engine, "MAX_NESTED_RESAMPLES", 0)
    res = lint_source(src, str(path), OPTIONS)
    assert not [d for d in res.diagnostics if d.code == "KL102"]
    assert res.coverage[0].status == "partial"
