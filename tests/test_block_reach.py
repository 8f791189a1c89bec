"""Regions guarded for blocks the samples miss are re-evaluated with a block that enters them."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval import resample

OPTIONS = LintOptions(resources=False)


def _lint(src: str):
    return lint_source(src, "blocks.cu", OPTIONS)


def test_block_target_follows_the_comparison() -> None:
    assert resample.block_target("==", 1, False) == 1
    assert resample.block_target(">", 0, False) == 1
    assert resample.block_target("<", 5, False) == 4
    assert resample.block_target("<", 0, True) == 1  # 0 < bx
    assert resample.block_target(">=", 63, True) == 63  # 63 >= bx -> bx <= 63
    assert resample.block_target("!=", 0, False) is None


def test_last_block_of_a_known_grid_is_reached_and_stated() -> None:
    src = """
__global__ void last(float* a, int n) {
    int tx = threadIdx.x;
    if (blockIdx.x == gridDim.x - 1 && blockIdx.y > 0) {
        a[tx * n] = 0.0f;
    }
}
void run(float* a, int n) { last<<<dim3(8, 2), 32>>>(a, n); }
"""
    res = _lint(src)
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.line == 5
    said = [a for a in d.assumptions if "to reach the guarded code" in a]
    # Clamped to the launched grid: the last of 8 blocks, and the only row after the first of 2.
    assert said and "blockIdx.x = 7" in said[0] and "blockIdx.y = 1" in said[0] and "line 4" in said[0]
    (rec,) = res.coverage
    assert rec.status == "full" and rec.access_lines_evaluated == rec.access_lines_seen == 1
    assert not [d for d in res.diagnostics if d.code == "KL904"]


def test_only_findings_inside_the_region_come_from_the_re_evaluation() -> None:
    src = """
// kernlint: block=(32,1,1)
__global__ void k(float* a, int n) {
    int bx = blockIdx.x;
    a[bx * 32 + threadIdx.x] = 0.0f;
    if (bx == 1) {
        a[threadIdx.x] = 1.0f;
    }
    if (bx == 1) {
        a[threadIdx.x * n] = 2.0f;
    }
}
"""
    res = _lint(src)
    assert [d.line for d in res.diagnostics if d.code == "KL102"] == [10]
    (rec,) = res.coverage
    assert rec.status == "full"


def test_a_guard_with_no_block_to_pick_stays_unevaluated() -> None:
    # `bx * 2 == 2` is not a comparison of blockIdx itself: no block is guessed, and the access
    # stays honestly unevaluated (KL904), not silently clean.
    src = """
// kernlint: block=(32,1,1)
__global__ void k(float* a, int n) {
    int bx = blockIdx.x;
    if (bx * 2 == 2) {
        a[threadIdx.x * n] = 2.0f;
    }
}
"""
    res = _lint(src)
    assert not [d for d in res.diagnostics if d.code == "KL102"]
    (rec,) = res.coverage
    assert rec.access_lines_evaluated == 0 and rec.access_lines_seen == 1
    assert [d for d in res.diagnostics if d.code == "KL904"]


def test_a_variable_that_is_not_only_blockidx_names_no_block() -> None:
    # `b` is blockIdx.x % 4, which equals blockIdx.x for the sampled blocks 0 and 3: still no target.
    src = """
// kernlint: block=(32,1,1)
__global__ void k(float* a, int n) {
    int b = blockIdx.x % 4;
    if (b == 1) {
        a[threadIdx.x * n] = 2.0f;
    }
}
"""
    res = _lint(src)
    assert not [d for d in res.diagnostics if d.code == "KL102"]
    assert [d for d in res.diagnostics if d.code == "KL904"]


def test_a_variable_assigned_blockidx_later_is_followed() -> None:
    # rodinia myocyte: `int bx; ... bx = blockIdx.x; ... else if (bx == 1) { ... }`
    src = """
// kernlint: block=(32,1,1)
__global__ void k(float* a, int n) {
    int bx;
    bx = blockIdx.x;
    if (bx == 0) {
        a[threadIdx.x] = 1.0f;
    } else if (bx == 1) {
        a[threadIdx.x * n] = 2.0f;
    }
}
"""
    res = _lint(src)
    (d,) = [d for d in res.diagnostics if d.code == "KL102"]
    assert d.line == 9 and any("blockIdx.x = 1 (to reach the guarded code at line 8" in a for a in d.assumptions)
