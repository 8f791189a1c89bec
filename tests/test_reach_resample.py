"""Reach of regions the samples leave dead or unvisited: position-like parameters sampled as the
first positions, helpers dead at several call lines, data-dependent loops that branch on a counter."""
from __future__ import annotations

from kernlint.ir import nodes as ir
from kernlint.engine.lint import LintOptions, lint_source
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

    from kernlint.engine import lint as engine

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


def _kernel(src: str):
    from kernlint.frontend import parse_source

    tu = parse_source(src, "live.cu")
    return next(f for key, f in tu.functions.items() if key.startswith("k@"))


def _first_loop(fn):
    return min((n for n in ir.walk(fn.body) if isinstance(n, (ir.For, ir.While))), key=lambda n: n.span.line)


def test_names_read_after_a_loop() -> None:
    from kernlint.eval.liveness import names_read_after

    fn = _kernel("""
__global__ void k(float* a, const float* b, int n) {
    int i, j = 0;
    float s = 0;
    for (i = 0; i < n; i++) { s += b[i]; j += 2; }
    a[j] = s;
    if (threadIdx.x == 0) { for (i = 0; i < 4; i++) a[i] = 0; }
}""")
    # s and j are read after the loop; i is assigned again (under a guard, then read only there).
    assert names_read_after(fn.body, _first_loop(fn), {"i", "j", "s"}) == {"j", "s"}
    fn = _kernel("""
__global__ void k(float* a, const float* b, int n) {
    int i;
    for (i = 0; i < n; i++) { a[i] = b[i]; }
    if (threadIdx.x == 0) { i = 0; }
    a[i] = 1;
}""")
    # A conditional assignment does not hide the read after it.
    assert names_read_after(fn.body, _first_loop(fn), {"i"}) == {"i"}
    fn = _kernel("""
__global__ void k(float* a, const float* b, int n, int m) {
    int i, r = 0;
    while (r < m) {
        for (i = 0; i < n; i++) { a[i] = b[i]; }
        r += i;
    }
}""")
    inner = next(n for n in ir.walk(fn.body) if isinstance(n, ir.For))
    # Read after the inner loop in the outer body.
    assert names_read_after(fn.body, inner, {"i"}) == {"i"}
    fn = _kernel("""
__global__ void k(float* a, const float* b, int n, int m) {
    int i, r = 0;
    while (r < m) {
        for (i = 0; i < n; i++) { a[i] = b[i]; }
        r += 1;
        if (r > 3) break;
    }
    a[i] = 0;
}""")
    inner = next(n for n in ir.walk(fn.body) if isinstance(n, ir.For))
    # The next iteration assigns it first, but the exit path (the read after the loop) decides.
    assert names_read_after(fn.body, inner, {"i"}) == {"i"}


def test_a_plain_dim3_set_member_by_member_folds_at_the_launch() -> None:
    from kernlint.project.scan import scan_text

    facts = scan_text("""
#define NT 512
void host(float* a, int n) {
    dim3 threads;
    dim3 grid;
    threads.x = NT;
    threads.y = 1;
    grid.x = n / NT;
    while (n > 1) {
        k<<<grid, threads>>>(a, n);
        grid.x = grid.x / NT;
        n = n / NT;
    }
}
""")
    (ln,) = facts.launches
    loc = dict(ln.locals)
    # threads: each member assigned once (z keeps the default 1); grid.x is assigned again after
    # the launch, in the loop around it: no single value.
    assert loc["threads"] == "dim3(NT, 1, 1)"
    assert "grid" not in loc


def test_a_data_loop_runs_twice_only_when_a_counter_guard_left_a_side_untaken() -> None:
    from kernlint.eval.events import MemoryAccess

    template = """
__global__ void k(float* a, float* b, const float* r, const int* n) {
    for (int d = 0; d < n[0]; d++) {
        b[threadIdx.x] = 0.0f;
        if (%s) { a[threadIdx.x * 2] = r[threadIdx.x]; }
    }
}
void run(float* a, float* b, const float* r, const int* n) { k<<<1, 64>>>(a, b, r, n); }
"""

    def iterations(cond: str) -> int:
        res = lint_source(template % cond, "twice.cu", OPTIONS)
        (main,) = [r for r in res.results if not r.regions and not r.odd_offset]
        return sum(1 for e in main.events if isinstance(e, MemoryAccess) and e.span.line == 4)

    # `d > 0` holds for no lane in the first iteration: a second one runs it.
    assert iterations("d > 0") == 2
    # `threadIdx.x < d + 40` splits the block in the first iteration already: one iteration.
    assert iterations("threadIdx.x < d + 40") == 1
    # `d == 0` is taken in the first iteration, and it has no else: one iteration.
    assert iterations("d == 0") == 1
