"""KL301-KL304: the per-warp split logic on hand-built lanes, and the verdicts on small kernels."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kernlint.checks.divergence import (
    arm_split,
    lane_ranges,
    missing_lanes,
    trip_spread,
    warp_split,
)
from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import LintOptions, lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def lanes(values: list[int] | np.ndarray, warps: int = 1) -> np.ndarray:
    """Shape (1, warps, 32) from a flat per-thread list."""
    return np.asarray(values).reshape(1, warps, 32)


TID = np.arange(64)
ALL = np.ones((1, 2, 32), dtype=bool)


# --- warp_split ---------------------------------------------------------------------------------------


def test_uniform_per_warp_condition_does_not_split() -> None:
    sp = warp_split(lanes(TID // 32 == 0, 2), ALL)
    assert not sp.split.any()
    assert sp.taken.tolist() == [[32, 0]]


def test_lane_condition_splits_every_warp() -> None:
    sp = warp_split(lanes(TID % 2 == 1, 2), ALL)
    assert sp.split.tolist() == [[True, True]]
    assert sp.taken.tolist() == [[16, 16]] and sp.active.tolist() == [[32, 32]]


def test_only_active_lanes_count() -> None:
    # Lanes 0-15 disagree with 16-31, but only lanes 0-15 are active: no split.
    cond = lanes(TID < 16, 2)
    mask = lanes(TID % 32 < 16, 2)
    assert not warp_split(cond, mask).split.any()
    # A warp with no active lane never splits.
    assert not warp_split(lanes(TID % 2 == 0, 2), np.zeros((1, 2, 32), dtype=bool)).split.any()


def test_two_dimensional_blocks_are_computed_not_assumed() -> None:
    def y_of(bx: int, by: int) -> np.ndarray:
        lin = np.arange(bx * by)
        return (lin // bx) % by

    # (16, 16): a warp holds rows 2k and 2k+1.
    y = y_of(16, 16)
    assert not warp_split(lanes(y < 8, 8), np.ones((1, 8, 32), bool)).split.any()
    sp = warp_split(lanes(y < 7, 8), np.ones((1, 8, 32), bool))
    assert np.nonzero(sp.split[0])[0].tolist() == [3]  # rows 6 and 7
    # (8, 32): a warp holds four rows; y < 8 is warps 0 and 1.
    y = y_of(8, 32)
    assert not warp_split(lanes(y < 8, 8), np.ones((1, 8, 32), bool)).split.any()
    assert warp_split(lanes(y < 6, 8), np.ones((1, 8, 32), bool)).split[0].tolist().count(True) == 1


def test_samples_are_independent() -> None:
    cond = np.stack([np.arange(32) < 16, np.ones(32, bool)]).reshape(2, 1, 32)
    sp = warp_split(cond, np.ones((2, 1, 32), bool))
    assert sp.split.tolist() == [[True], [False]]


def test_arm_split_counts_the_largest_arm() -> None:
    arms = lanes(TID % 4, 2)
    sp = arm_split(arms, ALL)
    assert sp.split.all()
    assert sp.taken.tolist() == [[8, 8]]
    same = arm_split(lanes(TID // 32, 2), ALL)
    assert not same.split.any()


# --- trip_spread ------------------------------------------------------------------------------------


def test_trip_spread_per_warp() -> None:
    ts = trip_spread(lanes(TID, 2), ALL)
    assert ts.split.tolist() == [[True, True]]
    assert ts.lo.tolist() == [[0, 32]] and ts.hi.tolist() == [[31, 63]]
    assert ts.idle.tolist() == [[sum(range(32))] * 2]
    assert ts.at_max.tolist() == [[1, 1]]


def test_trip_spread_ignores_lanes_that_did_not_reach_the_loop() -> None:
    trips = lanes(np.where(TID % 32 < 16, 4, 0), 2)
    mask = lanes(TID % 32 < 16, 2)
    ts = trip_spread(trips, mask)
    assert not ts.split.any()
    assert ts.lo.tolist() == [[4, 4]] and ts.hi.tolist() == [[4, 4]]


# --- missing_lanes ----------------------------------------------------------------------------------


def test_missing_lanes_respect_the_member_mask_and_live_lanes() -> None:
    reached = lanes(np.arange(32) < 16)
    live = np.ones((1, 1, 32), bool)
    assert missing_lanes(reached, live).sum() == 16
    assert missing_lanes(reached, live, 0x0000FFFF).sum() == 0
    # Lanes that returned are not live: they do not count as missing.
    assert missing_lanes(reached, reached).sum() == 0


def test_lane_ranges() -> None:
    assert lane_ranges(range(16)) == "0-15"
    assert lane_ranges([0, 2, 4, 6, 8, 10]) == "0, 2, 4, ..., 10 (6)"
    assert lane_ranges([3]) == "3"
    assert lane_ranges([]) == "none"


# --- verdicts on kernels ------------------------------------------------------------------------------


def lint(src: str, block: tuple[int, int, int] = (256, 1, 1), **kw: object) -> list:  # type: ignore[type-arg]
    res = lint_source(src, "t.cu", LintOptions(block=block, resources=False, **kw))  # type: ignore[arg-type]
    return [d for d in res.diagnostics if d.code.startswith("KL30")]


REDUCE = """
__global__ void k(const float* in, float* out) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (COND) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
"""


def test_interleaved_reduction_is_a_warning_with_metrics() -> None:
    (d,) = lint(REDUCE.replace("COND", "tid % (2 * s) == 0"))
    assert d.code == "KL301" and d.severity is Severity.WARNING
    assert d.metrics["warps_split"] == 8 and d.metrics["warps_evaluated"] == 8
    assert d.metrics["lanes_taken"] == [16, 16]  # s = 1: half the lanes
    assert "s = 1" in d.message


def test_last_steps_of_a_reduction_are_info() -> None:
    (d,) = lint(REDUCE.replace("COND", "2 * s * tid < blockDim.x"))
    assert d.severity is Severity.INFO
    assert d.metrics["warps_split"] == 1


@pytest.mark.parametrize("block", [64, 128, 256, 1024])
def test_strided_index_ladder_is_info_at_every_block_size(block: int) -> None:
    src = REDUCE.replace("sdata[256]", "sdata[1024]").replace("COND", "2 * s * tid < blockDim.x")
    (d,) = lint(src, block=(block, 1, 1))
    assert d.severity is Severity.INFO


def test_last_steps_are_info_even_in_a_small_block() -> None:
    src = REDUCE.replace("s = 1; s < blockDim.x; s *= 2", "s = blockDim.x / 2; s > 0; s >>= 1")
    (d,) = lint(src.replace("COND", "tid < s"), block=(64, 1, 1))
    assert d.severity is Severity.INFO


@pytest.mark.parametrize("cond", ["threadIdx.x / 32 == 0", "threadIdx.x / 32 < 3", "blockIdx.x == 1"])
def test_uniform_conditions_are_quiet(cond: str) -> None:
    src = f"""__global__ void k(const float* in, float* out, int n) {{
        float acc = 0.0f;
        if ({cond}) {{ for (int j = 0; j < n; ++j) acc += in[j]; }}
        out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    }}"""
    assert lint(src) == []


def test_tail_guard_with_a_defined_size_is_quiet() -> None:
    src = """__global__ void k(const float* in, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = in[i];
    }"""
    assert lint(src, defines=(("n", 1000),)) == []


def test_guard_on_a_block_constant_still_splits_every_block() -> None:
    src = """__global__ void k(const float* in, float* out, int n) {
        float acc = 0.0f;
        if (threadIdx.x < 16) { for (int j = 0; j < n; ++j) acc += in[j]; }
        out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    }"""
    (d,) = lint(src)
    assert d.severity is Severity.WARNING and d.metrics["lanes_taken"] == [16, 16]


def test_short_region_run_once_is_info_and_election_is_quiet() -> None:
    src = """__global__ void k(const float* in, float* out) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = in[i];
        if (threadIdx.x < 16) v = 0.0f;
        if (threadIdx.x % 32 == 0) out[i / 32] = v;
        out[i] = v;
    }"""
    (d,) = lint(src)
    assert d.line == 4 and d.severity is Severity.INFO


def test_ternary_with_side_effects_is_a_branch() -> None:
    src = """__global__ void k(const float* in, float* out, int* count) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = (threadIdx.x % 2) ? atomicAdd(count, 1) : in[i];
        float w = (threadIdx.x % 2) ? 1.0f : 2.0f;
        out[i] = v + w;
    }"""
    found = lint(src)
    assert [d.line for d in found] == [3]


def test_divergent_loop_reports_trip_spread() -> None:
    src = """__global__ void k(const float* in, float* out) {
        float acc = 0.0f;
        for (int j = 0; j < threadIdx.x % 32; ++j) acc += in[j];
        out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
    }"""
    (d,) = lint(src)
    assert d.code == "KL302"
    assert d.metrics["min_trips"] == 0 and d.metrics["max_trips"] == 31
    assert d.metrics["warps_split"] == 8 and d.metrics["lanes_taken"] == [1, 31]


def test_barrier_under_a_thread_condition_is_an_error() -> None:
    src = """__global__ void k(float* a) {
        if (threadIdx.x < 128) __syncthreads();
        if (blockIdx.x == 0) __syncthreads();
    }"""
    (d,) = lint(src)
    assert d.code == "KL303" and d.line == 2 and d.severity is Severity.ERROR
    assert d.metrics["threads_reaching"] == 128 and d.metrics["threads_live"] == 256


def test_barrier_after_an_early_return_counts_live_threads_only() -> None:
    src = """__global__ void k(float* a) {
        if (threadIdx.x >= 128) return;
        __syncthreads();
    }"""
    assert [d.code for d in lint(src)] == []


def test_full_mask_shuffle_in_divergent_code() -> None:
    src = """__global__ void k(float* a) {
        float v = a[threadIdx.x];
        if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffff, v, 1);
        if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffff, v, 1);
        if (threadIdx.x < 32) v += __shfl_down_sync(0xffffffff, v, 1);
        a[threadIdx.x] = v;
    }"""
    codes = [(d.line, d.code) for d in lint(src) if d.code == "KL304"]
    assert codes == [(3, "KL304")]


# --- severities of the fixtures ---------------------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("KL30*.cu")), ids=lambda p: p.name)
def test_fixture_severities(fixture: Path) -> None:
    """An `expect: KL30x ... (info ...)` marker must be info; other KL301/KL302 expectations warnings."""
    text = fixture.read_text()
    want: dict[tuple[int, str], str] = {}
    pending: list[tuple[str, str]] = []
    for no, line in enumerate(text.splitlines(), start=1):
        m = re.search(r"//\s*expect:\s*(KL30\d)\s+[a-z0-9-]+(.*)$", line)
        code_part = line.split("//", 1)[0].strip()
        if m and not code_part:
            pending.append((m.group(1), m.group(2)))
            continue
        if not code_part:
            continue
        items = pending + ([(m.group(1), m.group(2))] if m else [])
        for code, rest in items:
            want[(no, code)] = "info" if "(info" in rest else ("error" if code in ("KL303", "KL304") else "warning")
        pending = []
    res = lint_source(text, str(fixture), LintOptions(resources=False))
    got = {(d.line, d.code): d.severity.label for d in res.diagnostics if d.code.startswith("KL30")}
    for key, sev in want.items():
        assert got.get(key) == sev, f"{fixture.name}:{key[0]} {key[1]}: want {sev}, got {got.get(key)}"


def test_early_return_message_names_the_returning_side() -> None:
    # `if (threadIdx.x % 32 != 0) return;`: 31 lanes of each warp return, lane 0 goes on.
    from pathlib import Path

    from kernlint.engine.lint import lint_source
    path = Path(__file__).resolve().parents[1] / "fixtures" / "KL301_early_return_sides.cu"
    diags = [d for d in lint_source(path.read_text(), str(path)).diagnostics if d.code == "KL301"]
    assert len(diags) == 1
    assert "31 of 32 live lanes return (97 %) and 1 go on" in diags[0].message
