"""The occupancy calculator: the seed's figures, each limiter, cliffs, and points measured on a GPU."""
from __future__ import annotations

import pytest

from kernlint.model.occupancy import (
    ARCHS,
    DEFAULT_ARCH,
    arch_limits,
    format_percent,
    next_cliff,
    occupancy,
    occupancy_by_block_size,
)

KB = 1024


# --- the seed's figures ------------------------------------------------------------------------

def test_default_arch_is_a_64_warp_sm() -> None:
    assert DEFAULT_ARCH == "sm_80"
    assert arch_limits(DEFAULT_ARCH).max_warps_per_sm == 64


def test_64_registers_at_256_threads_is_50_percent() -> None:
    occ = occupancy("sm_80", 256, 64, 0)
    assert (occ.active_blocks, occ.active_warps, occ.max_warps) == (4, 32, 64)
    assert occ.occupancy == 0.5
    assert occ.limiter == "registers"


def test_65_registers_at_256_threads_is_37_5_percent() -> None:
    # 65 x 32 = 2080 registers per warp, rounded to 2304; 16384 per sub-partition / 2304 = 7 warps,
    # 28 per SM, so 3 blocks of 8 warps.
    occ = occupancy("sm_80", 256, 65, 0)
    assert (occ.active_blocks, occ.active_warps) == (3, 24)
    assert occ.occupancy == 0.375
    assert occ.limiter == "registers"
    assert occ.percent == "37.5%"


def test_kernel_fusion_story_40_to_76_registers() -> None:
    """The seed's fusion story on sm_80 (64 warps per SM), worked out.

    After fusion, 76 registers: 76 x 32 = 2432 registers per warp, rounded up to 2560; a
    sub-partition (16384 registers) holds 6 such warps, the SM 24: **37.5 %** at 256 threads
    (3 blocks of 8 warps) -- the seed's figure holds.

    Before fusion, 40 registers: 1280 per warp, 12 warps per sub-partition, at most 48 of 64 warps
    per SM: **75 %**, reached by every block size whose warp count divides 48 -- 64, 96, 128, 192,
    256, 384, 512 and 768 threads.  So **256 threads gives the seed's 75 % -> 37.5 %**.

    **No block size gives 87.5 % at 40 registers**: the register limit alone caps the SM at 48
    warps, whatever the block size or shared memory.  Register counts only ever allow 64, 48, 40,
    36, 32, 28, 24, ... warps per SM (16, 12, 10, 9, 8, 7, 6 per sub-partition), never 56, so
    87.5 % (56 warps) needs <= 32 registers *and* another limit stopping at 56 warps: 448 or 896
    threads per block (the warp limit: 4 x 14 or 2 x 28 warps), or, at 256 threads, shared memory
    that admits 7 blocks (e.g. 20 KB per block).  The 87.5 % figure cannot be the 40-register
    kernel on a 64-warp SM.
    """
    before = occupancy("sm_80", 256, 40, 0)
    after = occupancy("sm_80", 256, 76, 0)
    assert before.occupancy == 0.75
    assert after.occupancy == 0.375
    assert (before.active_blocks, after.active_blocks) == (6, 3)

    at_40 = {o.block_size: o.occupancy for o in occupancy_by_block_size("sm_80", 40)}
    assert sorted(size for size, value in at_40.items() if value == 0.75) == [
        64, 96, 128, 192, 256, 384, 512, 768]
    # 40 registers never exceed 75 %, for any block size or shared-memory size.
    assert max(occupancy("sm_80", block, 40, shared).occupancy
               for block in range(32, 1025, 32) for shared in range(0, 64 * KB, 4 * KB)) == 0.75

    # Where 87.5 % does occur without shared memory: only <= 32 registers at 448 / 896 threads.
    hits = {(block, regs) for block in range(32, 1025, 32) for regs in range(256)
            if occupancy("sm_80", block, regs).occupancy == 0.875}
    assert {block for block, _ in hits} == {448, 896}
    assert max(regs for _, regs in hits) == 32
    assert occupancy("sm_80", 256, 32, 20 * KB).occupancy == 0.875  # shared memory: 7 blocks


# --- each limiter --------------------------------------------------------------------------------

def test_warp_limit() -> None:
    occ = occupancy("sm_80", 1024, 32, 0)
    assert occ.active_blocks == 2 and occ.occupancy == 1.0
    assert occ.limiter == "warps"  # registers tie (2 blocks too): warps comes first, as in the header
    assert occ.limiters == ("warps", "registers")


def test_block_limit() -> None:
    occ = occupancy("sm_80", 32, 32, 0)
    assert occ.active_blocks == 32 and occ.occupancy == 0.5 and occ.limiter == "blocks"
    occ86 = occupancy("sm_86", 32, 32, 0)
    assert occ86.active_blocks == 16 and occ86.max_warps == 48 and occ86.limiter == "blocks"


def test_shared_limit_with_per_block_reserve() -> None:
    # 48 KB + the 1 KB reserve = 50176 B per block; sm_80's largest carve-out is 164 KB.
    occ = occupancy("sm_80", 256, 32, 48 * KB)
    assert occ.shared_allocated_per_block == 49 * KB
    assert occ.active_blocks == 3 and occ.limiter == "shared"
    assert occupancy("sm_90", 256, 32, 48 * KB).active_blocks == 4  # 228 KB per SM


def test_shared_allocation_granularity() -> None:
    assert occupancy("sm_75", 64, 32, 1).shared_allocated_per_block == 256
    assert occupancy("sm_80", 64, 32, 1).shared_allocated_per_block == 1024 + 128
    assert occupancy("sm_70", 64, 32, 0).shared_allocated_per_block == 0


def test_register_limit_per_block_makes_launch_impossible() -> None:
    occ = occupancy("sm_80", 1024, 65, 0)
    assert occ.active_blocks == 0 and occ.limiter == "registers"
    assert "too many resources" in occ.reason


def test_block_too_large() -> None:
    occ = occupancy("sm_80", 1056, 16, 0)
    assert occ.active_blocks == 0 and occ.limiter == "warps"
    assert "1024" in occ.reason


def test_partial_warp_rounds_up() -> None:
    occ = occupancy("sm_80", 100, 65, 0)
    assert occ.warps_per_block == 4
    assert occ.active_blocks == 7  # 28 warps / 4


def test_shared_over_default_limit_needs_opt_in() -> None:
    assert occupancy("sm_90", 256, 32, 64 * KB).active_blocks == 3  # opt-in assumed
    refused = occupancy("sm_90", 256, 32, 64 * KB, opt_in=False)
    assert refused.active_blocks == 0 and refused.limiter == "shared"
    assert "opt in" in refused.reason
    assert occupancy("sm_90", 256, 32, 228 * KB).active_blocks == 0  # beyond the opt-in maximum


def test_carveout_preference() -> None:
    # sm_90, 48 KB static: 50176 B per block.  0 % rounds up to the 64 KB carve-out, 50 % of 228 KB
    # to 132 KB, the default to 228 KB (all four measured on an H200, see below).
    assert occupancy("sm_90", 256, 32, 48 * KB, carveout=0).active_blocks == 1
    assert occupancy("sm_90", 256, 32, 48 * KB, carveout=50).active_blocks == 2
    assert occupancy("sm_90", 256, 32, 48 * KB, carveout=75).active_blocks == 4
    assert occupancy("sm_90", 256, 32, 48 * KB).active_blocks == 4
    assert occupancy("sm_90", 64, 32, 16 * KB, carveout=25).active_blocks == 3
    with pytest.raises(ValueError):
        occupancy("sm_90", 256, 32, 0, carveout=101)


def test_barrier_limit_only_on_sm90_and_only_for_many_barriers() -> None:
    assert occupancy("sm_90", 32, 16, 0, barriers=1).active_blocks == 32
    occ = occupancy("sm_90", 32, 16, 0, barriers=4)
    assert occ.active_blocks == 16 and occ.limiter == "barriers"
    assert occupancy("sm_80", 32, 16, 0, barriers=4).active_blocks == 32


def test_zero_registers_is_no_register_limit() -> None:
    assert occupancy("sm_80", 256, 0, 0).active_blocks == 8


def test_monotone_in_registers_and_shared() -> None:
    for arch in ("sm_75", "sm_80", "sm_86", "sm_90"):
        for block in (32, 96, 256, 640, 1024):
            by_regs = [occupancy(arch, block, r).active_blocks for r in range(256)]
            assert by_regs == sorted(by_regs, reverse=True)
            by_shared = [occupancy(arch, block, 32, s).active_blocks for s in range(0, 64 * KB, 500)]
            assert by_shared == sorted(by_shared, reverse=True)


# --- cliffs -------------------------------------------------------------------------------------

def test_register_cliff_at_64() -> None:
    cliffs = next_cliff("sm_80", 256, 64, 0)
    assert cliffs.registers_up is not None
    assert (cliffs.registers_up.delta, cliffs.registers_up.value) == (1, 65)
    assert cliffs.registers_up.occupancy.occupancy == 0.375
    down = cliffs.registers_down
    # 57..64 registers all round to 2048 per warp; 48 is the first that fits a fifth block.
    assert down is not None and down.value == 48 and down.occupancy.occupancy == 0.625


def test_fewer_registers_raise_occupancy_from_65() -> None:
    cliffs = next_cliff("sm_80", 256, 65, 0)
    assert cliffs.registers_down is not None
    assert (cliffs.registers_down.delta, cliffs.registers_down.occupancy.percent) == (-1, "50%")
    # 65..80 registers all allow 24 warps; 81 rounds to 2816 per warp: 20 warps, 2 blocks.
    assert cliffs.registers_up is not None and cliffs.registers_up.value == 81


def test_register_cliff_to_launch_failure() -> None:
    step = next_cliff("sm_80", 1024, 64, 0).registers_up
    assert step is not None and step.value == 65 and step.occupancy.active_blocks == 0


def test_shared_cliff() -> None:
    # 40000 B + 1 KB reserve = 41088 B allocated; 4 blocks fit in 164 KB.  Five blocks need at
    # most 33587 B each; 4 -> 3 blocks happens when the allocation passes 167936 / 4 = 41984 B.
    cliffs = next_cliff("sm_80", 128, 32, 40000)
    assert cliffs.current.active_blocks == 4
    up, down = cliffs.shared_up, cliffs.shared_down
    assert up is not None and up.value == 40961 and up.occupancy.active_blocks == 3
    assert down is not None and down.occupancy.active_blocks == 5
    assert occupancy("sm_80", 128, 32, down.value).active_blocks == 5
    assert occupancy("sm_80", 128, 32, down.value + 1).active_blocks == 4


def test_no_cliff_when_nothing_changes() -> None:
    cliffs = next_cliff("sm_80", 32, 16, 0)  # 32 tiny blocks: the block limit rules
    assert cliffs.registers_down is None


# --- architecture table -------------------------------------------------------------------------

@pytest.mark.parametrize("text, name", [
    ("sm_90a", "sm_90"), ("90", "sm_90"), ("8.6", "sm_86"), ("compute_80", "sm_80"),
    ("SM_89", "sm_89"), ("sm_100a", "sm_100"), ("sm_120", "sm_120"),
])
def test_arch_names(text: str, name: str) -> None:
    assert arch_limits(text).name == name


def test_unknown_arch() -> None:
    with pytest.raises(ValueError, match="known architectures"):
        arch_limits("sm_61")
    with pytest.raises(ValueError):
        arch_limits("volta")


def test_arch_table_matches_the_design_notes() -> None:
    warps = {n: ARCHS[n].max_warps_per_sm for n in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")}
    assert warps == {"sm_70": 64, "sm_75": 32, "sm_80": 64, "sm_86": 48, "sm_89": 48, "sm_90": 64}
    blocks = {n: ARCHS[n].max_blocks_per_sm for n in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")}
    assert blocks == {"sm_70": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_89": 24, "sm_90": 32}
    for limits in ARCHS.values():
        assert limits.registers_per_sm == 64 * KB
        assert limits.shared_per_sm == max(limits.carveouts)
        assert limits.shared_per_block_optin == limits.shared_per_sm - max(limits.reserved_shared_per_block, 0) \
            or limits.major == 7
        assert limits.shared_allocation_unit == (256 if limits.major == 7 else 128)
        assert limits.reserved_shared_per_block == (0 if limits.major == 7 else KB)


def test_format_percent() -> None:
    assert [format_percent(x) for x in (0.5, 0.375, 1.0, 0.3125, 2 / 3)] == [
        "50%", "37.5%", "100%", "31.25%", "66.67%"]


# --- agreement with the CUDA runtime -------------------------------------------------------------

# (block size, num_regs, static shared, dynamic shared, blocks per SM) as reported by
# cuOccupancyMaxActiveBlocksPerMultiprocessor on an NVIDIA H200 (sm_90, driver 580.159.04,
# CUDA 13.0), from bench/occupancy_sweep.py: 686 points, 0 mismatches.  A sample, kept here so a
# change to the calculator that breaks agreement fails without a GPU.
MEASURED_SM90 = [
    (128, 64, 0, 0, 8),
    (512, 200, 49152, 0, 0),
    (128, 40, 4096, 0, 12),
    (768, 80, 4096, 0, 1),
    (256, 168, 0, 0, 1),
    (192, 255, 49152, 0, 1),
    (512, 24, 16384, 0, 4),
    (128, 24, 4096, 0, 16),
    (32, 168, 0, 0, 12),
    (256, 64, 16384, 0, 4),
    (192, 255, 0, 0, 1),
    (1024, 56, 49152, 0, 1),
    (384, 48, 49152, 0, 3),
    (64, 168, 0, 0, 6),
    (256, 32, 0, 20000, 8),
    (1000, 64, 0, 0, 1),
    (100, 65, 0, 0, 7),
    (256, 65, 0, 40000, 3),
    (128, 128, 0, 2049, 4),
]


@pytest.mark.parametrize("block, regs, static, dynamic, blocks", MEASURED_SM90)
def test_matches_runtime_on_h200(block: int, regs: int, static: int, dynamic: int, blocks: int) -> None:
    assert occupancy("sm_90", block, regs, static + dynamic).active_blocks == blocks


# --- the fast cliff search agrees with an exhaustive one ----------------------------------------

def _brute_cliffs(arch: str, block: int, regs: int, shared: int, carveout: int | None
                  ) -> tuple[int | None, int | None, int | None, int | None]:
    """Values at the four steps, found by trying every register count and every allocation unit."""
    limits = arch_limits(arch)
    base = occupancy(arch, block, regs, shared, carveout).active_warps

    def warps_r(r: int) -> int:
        return occupancy(arch, block, r, shared, carveout).active_warps

    def warps_s(s: int) -> int:
        return occupancy(arch, block, regs, s, carveout).active_warps

    up_r = next((r for r in range(regs + 1, 256) if warps_r(r) < base), None)
    down_r = next((r for r in range(regs - 1, -1, -1) if warps_r(r) > base), None)
    unit, reserve = limits.shared_allocation_unit, limits.reserved_shared_per_block
    alloc = -(-(shared + reserve) // unit) * unit
    ups = range(alloc - reserve + 1, limits.shared_per_block_optin + unit + 2, unit)
    up_s = next((s for s in ups if warps_s(s) < base), None)
    downs = sorted({max(0, alloc - reserve - k * unit) for k in range(1, alloc // unit + 1)} - {shared},
                   reverse=True)
    down_s = next((s for s in downs if s < shared and warps_s(s) > base), None)
    return up_r, down_r, up_s, down_s


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_90"])
def test_fast_cliffs_match_exhaustive_search(arch: str) -> None:
    for block in (64, 256, 1024):
        for regs in (0, 40, 65, 128):
            for shared in (0, 100, 30000):
                for carveout in (None, 0, 50):
                    c = next_cliff(arch, block, regs, shared, carveout)
                    fast = tuple(step.value if step else None for step in
                                 (c.registers_up, c.registers_down, c.shared_up, c.shared_down))
                    assert fast == _brute_cliffs(arch, block, regs, shared, carveout), (
                        block, regs, shared, carveout)
