"""Runtime trip counts (eval/trip_counts.py): a loop bounded by a runtime value, cut at the iteration cap
under the size samples, is evaluated again under plausible trip counts, and its findings say so."""
from __future__ import annotations

from pathlib import Path

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval import trip_counts

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL301_runtime_trips.cu"


def test_block_trips_is_a_quarter_of_the_longest_side_within_the_cap() -> None:
    assert trip_counts.block_trips((256, 1, 1)) == 48  # 64, capped at MAX_LOOP_ITERATIONS
    assert trip_counts.block_trips((16, 16, 1)) == 4
    assert trip_counts.block_trips((8, 1, 1)) == 4
    assert trip_counts.block_trips((128, 1, 1)) == 32


def test_the_pyramid_under_a_runtime_bound_is_found_with_its_trip_counts_stated() -> None:
    res = lint_source(FIXTURE.read_text(), str(FIXTURE), LintOptions(resources=False))
    [d] = [d for d in res.diagnostics if d.code == "KL301"]
    assert d.line == 38
    # Iterations past the first 32 were evaluated: the split reached warps 1 and 6.
    assert "warps 0-1, 6-7" in d.message and d.metrics["warps_split"] == 4
    said = " ".join(d.assumptions)
    assert "`steps` = 3 and 48: trip counts of the loop at line 36" in said
    assert "steps = 4096" not in said  # the size samples are not what the finding rests on
    assert [r.status for r in res.coverage] == ["full"]  # the code after the loop was reached


def test_a_defined_bound_is_not_resampled() -> None:
    """With the real value supplied the loop runs as told: no trip-count evaluation, nothing assumed."""
    res = lint_source(FIXTURE.read_text(), str(FIXTURE),
                      LintOptions(resources=False, defines=(("steps", 20), ("shift", 20))))
    kl301 = [d for d in res.diagnostics if d.code == "KL301"]
    assert kl301 and not any("trip counts" in a for d in kl301 for a in d.assumptions)


def test_a_loop_without_a_branch_on_its_variable_is_not_evaluated_again() -> None:
    src = """__global__ void k(const float* a, float* o, int n) {
  float s = 0.f;
  for (int j = 0; j < n; ++j) s += a[threadIdx.x + j * 256];
  o[threadIdx.x] = s;
}
"""
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    assert not any(r.resampled for r in res.results)
