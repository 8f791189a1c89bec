"""Evaluator reach (issue 11): code after the step budget ran out that the samples make dead,
guards on fields of `__constant__` structs, thread-local arrays with folded indices."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source

OPTIONS = LintOptions(resources=False)


def _lint(src: str, path: str = "reach_eval.cu"):
    return lint_source(src, path, OPTIONS)


BUDGET_THEN_DEAD = """
struct Config { int frame; };
__constant__ Config C;
__global__ void phases(float* a, const float* b, int n) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += 32) {
        s += b[i];
    }
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < 16; k++) {
            s += b[j * 16 + k] * b[k * n + j] + b[j + k];
        }
    }
    if (C.frame == 0) {
        a[threadIdx.x * 64] = s;
    }
}
void run(float* a, const float* b, int n) { phases<<<1, 32>>>(a, b, n); }
"""


def test_a_guard_dead_under_the_samples_after_the_budget_ran_out_is_re_sampled(monkeypatch) -> None:
    from kernlint.eval.interp import Interpreter

    defaults = Interpreter.__init__.__defaults__
    monkeypatch.setattr(Interpreter.__init__, "__defaults__", (1000,) + defaults[1:])
    res = _lint(BUDGET_THEN_DEAD)
    main = [r for r in res.results if not r.regions]
    assert main and any("step budget" in n for r in main for n in r.notes)
    # Lane i stores a float 256 bytes after lane i-1: 32 sectors for one request.
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.line == 15 and d.metrics["sectors"] == 32
    said = " ".join(d.assumptions)
    assert "C.frame = 0" in said and "step budget ran out" in said
    (rec,) = res.coverage
    assert rec.status == "full"


def test_without_the_re_sampling_the_budget_is_not_the_reason_given(monkeypatch) -> None:
    """A site the frugal re-evaluation reaches but does not evaluate is reported with that run's
    reason, not as cut off by the budget (which the re-evaluation did not run out of)."""
    from kernlint.engine import lint as engine
    from kernlint.eval.interp import Interpreter

    defaults = Interpreter.__init__.__defaults__
    monkeypatch.setattr(Interpreter.__init__, "__defaults__", (1000,) + defaults[1:])
    monkeypatch.setattr(engine, "_resample_dead", lambda *a, **k: [])
    res = _lint(BUDGET_THEN_DEAD)
    (rec,) = res.coverage
    assert rec.status == "partial"
    assert [g.kind for g in rec.gaps] == ["unreached"]
    assert not [d for d in res.diagnostics if d.code == "KL102"]


def test_a_mode_field_of_a_constant_struct_is_sampled_as_the_value_its_guard_asks_for() -> None:
    src = """
struct Params { int mode; };
__constant__ Params P;
__global__ void k(float* out, const float* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (P.mode == 2) {
        out[i] = in[i * 2];
    }
}
void run(float* out, const float* in) { k<<<8, 128>>>(out, in); }
"""
    res = _lint(src)
    # 8-byte stride: a warp's 32 loads span 256 bytes, 8 sectors for 128 bytes used.
    (d,) = [d for d in res.diagnostics if d.code == "KL101"]
    assert d.line == 7 and d.metrics["sectors"] == 8
    assert any("P.mode = 2" in a for a in d.assumptions)


def test_a_guard_on_a_value_affine_in_a_parameter_is_solved_only_exactly() -> None:
    template = """
__global__ void k(float* out, int n) {
    int m = n * 2 + 4;
    if (m == %d) {
        out[threadIdx.x * 32] = 0.0f;
    }
}
void run(float* out, int n) { k<<<64, 128>>>(out, n); }
"""
    # m = 2n + 4 == 100 for n = 48: solved, the store evaluated there (128-byte lane stride: 32 sectors).
    res = _lint(template % 100)
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.metrics["sectors"] == 32 and any("n = 48" in a for a in d.assumptions)
    assert res.coverage[0].status == "full"
    # m is even for every integer n: 101 has no solution, so nothing is made up and the region stays
    # not evaluated (KL904), without a finding.
    res = _lint(template % 101)
    assert not [d for d in res.diagnostics if d.code == "KL102"]
    assert res.coverage[0].status == "partial" and [d for d in res.diagnostics if d.code == "KL904"]


def test_a_value_that_differs_between_lanes_is_not_solved_for() -> None:
    src = """
__global__ void k(float* out, int n) {
    int m = n + threadIdx.x;
    if (m == 7) {
        out[threadIdx.x * 32] = 0.0f;
    }
}
void run(float* out, int n) { k<<<64, 128>>>(out, n); }
"""
    res = _lint(src)
    # Re-sampled small (n = 1: lane 6 enters), never solved for an exact n.
    assert all("to reach the guarded code" not in r.resampled for r in res.results)
    assert any("re-sampled n as 1 and 32" in r.resampled for r in res.results)


def _kl102_lines(res) -> set[int]:
    return {d.line for d in res.diagnostics if d.code == "KL102"}


def test_a_local_array_passed_to_a_helper_stays_unknown() -> None:
    src = """
__device__ void fill(int* p, int v) { p[0] = v; }
__global__ void k(float* out) {
    int idx[2];
    idx[0] = threadIdx.x * 32;
    fill(idx, threadIdx.x);
    out[idx[0]] = 1.0f;
}
void run(float* out) { k<<<1, 32>>>(out); }
"""
    res = _lint(src)
    # The helper rewrote idx[0] = threadIdx.x (coalesced): the array escapes, so it is not tracked and
    # no stride-32 finding is made up from the stale element.
    assert not _kl102_lines(res)
    assert res.coverage[0].status != "full"


def test_a_local_array_written_under_a_data_dependent_branch_becomes_unknown() -> None:
    src = """
__global__ void k(float* out, const float* in) {
    int idx[2];
    idx[0] = threadIdx.x;
    if (in[threadIdx.x] > 0.0f) {
        idx[0] = threadIdx.x * 32;
    }
    out[idx[0]] = 1.0f;
}
void run(float* out, const float* in) { k<<<1, 32>>>(out, in); }
"""
    res = _lint(src)
    assert not _kl102_lines(res)
    assert res.coverage[0].status != "full"


def test_a_local_array_written_at_an_unknown_index_forgets_every_element() -> None:
    src = """
__global__ void k(float* out, const int* sel) {
    int idx[2] = {0, 0};
    idx[1] = threadIdx.x;
    idx[sel[0]] = threadIdx.x * 32;
    out[idx[1]] = 1.0f;
}
void run(float* out, const int* sel) { k<<<1, 32>>>(out, sel); }
"""
    res = _lint(src)
    assert res.coverage[0].status != "full"


def test_a_local_array_written_by_a_loop_cut_short_becomes_unknown() -> None:
    src = """
__global__ void k(float* out, int n) {
    int idx[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        idx[i & 1] = threadIdx.x * (i + 1);
    }
    out[idx[0]] = 1.0f;
}
void run(float* out, int n) { k<<<1, 32>>>(out, n); }
"""
    res = _lint(src)
    # n is sampled in the thousands: the loop stops early, its last write is not known.
    assert not _kl102_lines(res)


def test_per_lane_element_choice_and_masked_writes() -> None:
    src = """
__global__ void k(float* out) {
    int t = threadIdx.x;
    int idx[2] = {t, t};
    if (t < 16) {
        idx[1] = t * 32;
    }
    out[idx[1]] = 1.0f;
}
void run(float* out) { k<<<1, 32>>>(out); }
"""
    res = _lint(src)
    # Lanes 0-15 store at t*32 (16 sectors, one per lane; lane 0's is also where lanes 16-31 would
    # not be), lanes 16-31 at t (64 contiguous bytes: 2 sectors): 18 sectors for 128 bytes.
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.metrics["sectors"] == 18
    assert res.coverage[0].status == "full"


def test_every_nth_step_guard_takes_the_residue() -> None:
    src = """
__global__ void k(float* out, int step) {
    if (step % 4 == 3) {
        out[threadIdx.x * 16] = 0.0f;
    }
}
void run(float* out, int step) { k<<<1, 32>>>(out, step); }
"""
    res = _lint(src)
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.metrics["sectors"] == 32 and any("step = 3" in a for a in d.assumptions)


def test_a_dead_region_in_a_helper_counts_at_its_call_line_once_re_sampled() -> None:
    src = """
__device__ void tail(float* row, int w, int r) {
    for (int x = 0; x < r + 1; x++) {
        row[x] = 0.0f;
    }
    for (int x = r + 1; x < w - r; x++) {
        row[x] = 1.0f;
    }
}
__global__ void k(float* a, int w, int r) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    tail(&a[y * w], w, r);
}
void run(float* a, int w, int r) { k<<<4, 32>>>(a, w, r); }
"""
    res = _lint(src)
    # The first loop runs under the first samples, the second only with r small: both are evaluated,
    # and the second loop's store (lanes a row of w floats apart: 32 sectors) is reported.
    assert res.coverage[0].status == "full"
    lines = {d.line for d in res.diagnostics if d.code == "KL102"}
    lines |= {r["line"] for d in res.diagnostics if d.code == "KL102" for r in d.metrics.get("related_locations", ())}
    assert lines >= {4, 7}
