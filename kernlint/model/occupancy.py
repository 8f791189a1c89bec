"""Theoretical occupancy: how many blocks and warps of a kernel fit on one SM.

This reproduces the algorithm of NVIDIA's ``cuda_occupancy.h`` (shipped with the CUDA toolkit,
``include/cuda_occupancy.h``; read here from CUDA 13.0, ``__CUDA_OCC_MAJOR__ 12 / MINOR 1``), which
is the model behind ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` and the Nsight Compute
occupancy section.  The function names in the comments below (``cudaOccMaxBlocksPerSMRegsLimit``
and friends) point at the header routine each step mirrors.

The result is the minimum of five per-SM block limits:

* **warps**: ``max_warps_per_sm // ceil(block_size / 32)``;
* **registers**: registers are allocated per warp in units of 256 (``numRegs * 32`` rounded up),
  each of the 4 SM sub-partitions holds ``65536 / 4`` registers, so the SM holds
  ``4 * floor(16384 / regs_per_warp)`` warps; a block also has to pass the per-block check that
  rounds its warp count up to a multiple of the 4 sub-partitions;
* **shared memory**: static + dynamic bytes plus the per-block driver reserve (1 KB on sm_80+),
  rounded up to the allocation unit (256 B on sm_7x, 128 B on sm_8x+), divided into the shared
  memory carve-out of the SM;
* **blocks**: the architectural cap on resident blocks per SM;
* **barriers** (sm_90+ only): hardware barrier slots, relevant only to kernels that use more than
  the one barrier ``__syncthreads`` needs.

Per-architecture limits come from the same header (allocation units, blocks per SM, carve-out
tables) and from the "Technical Specifications per Compute Capability" table of the CUDA C++
Programming Guide (warps per SM, shared memory per SM and per block), cross-checked with CCCL's
``libcudacxx/include/cuda/__device/arch_traits.h``.  ``bench/occupancy_sweep.py`` checks the
calculator against the runtime's own query on a real GPU.
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable

from kernlint.base.frozen import frozen

WARP_SIZE = 32
KIB = 1024
UNLIMITED = 2**31 - 1  # cuda_occupancy.h reports "no limit" as INT_MAX; keep the same sentinel

DEFAULT_ARCH = "sm_80"
"""Target when neither ``--arch`` nor ``[tool.kernlint] arch`` names one: A100, a 64-warp SM."""

LIMITERS = ("warps", "registers", "shared", "blocks", "barriers")
"""Limiting factors in the bit order of ``cudaOccLimitingFactor`` (``OCC_LIMIT_WARPS`` = 0x01, ...).

When several limits tie, ``Occupancy.limiter`` names the first of them in this order.
"""


@frozen
class ArchLimits:
    """Per-SM resource limits of one GPU architecture (one compute capability).

    Byte sizes are bytes; register counts are 32-bit registers.
    """

    name: str
    major: int
    minor: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int
    """Largest shared-memory carve-out of an SM (``sharedMemPerMultiprocessor``)."""
    shared_per_block_optin: int
    """Most shared memory one block may use after ``cudaFuncSetAttribute`` opt-in."""
    shared_allocation_unit: int
    reserved_shared_per_block: int
    """Shared memory the driver reserves for every resident block (sm_80 and newer)."""
    carveouts: tuple[int, ...]
    """Shared-memory sizes (bytes) an SM can be configured to; a requested carve-out rounds up."""
    barrier_slots_per_block: int = 2
    """Hardware barriers per block slot (``cudaOccMaxBlocksPerSMBlockBarrierLimit``, sm_90+)."""
    max_threads_per_block: int = 1024
    registers_per_sm: int = 64 * KIB
    registers_per_block: int = 64 * KIB
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256
    """Registers are handed to a warp in chunks of this many (``cudaOccRegAllocationGranularity``)."""
    warp_allocation_granularity: int = 4
    """SM sub-partitions: the per-block register check rounds warps up to a multiple of this."""
    shared_per_block: int = 48 * KIB
    """Default per-block limit, and the hard limit for static ``__shared__`` arrays."""

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * WARP_SIZE

    @property
    def registers_per_sub_partition(self) -> int:
        return self.registers_per_sm // self.warp_allocation_granularity


def _kib(*sizes: int) -> tuple[int, ...]:
    return tuple(size * KIB for size in sizes)


# Carve-out tables: cudaOccAlignUpShmemSizeVoltaPlus.  Warps/blocks per SM: Programming Guide table
# and cudaOccMaxBlocksPerMultiprocessor.  Opt-in maximum = carve-out maximum - per-block reserve
# (Programming Guide: 96 KB on 7.0, 64 KB on 7.5, 163 KB on 8.0/8.7, 99 KB on 8.6/8.9/12.x,
# 227 KB on 9.0/10.x).
_VOLTA = _kib(0, 8, 16, 32, 64, 96)
_TURING = _kib(32, 64)
_GA100 = _kib(0, 8, 16, 32, 64, 100, 132, 164)
_GA10X = _kib(0, 8, 16, 32, 64, 100)
_HOPPER = _kib(0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

ARCHS: dict[str, ArchLimits] = {
    limits.name: limits
    for limits in (
        ArchLimits("sm_70", 7, 0, 64, 32, 96 * KIB, 96 * KIB, 256, 0, _VOLTA),
        ArchLimits("sm_72", 7, 2, 64, 32, 96 * KIB, 96 * KIB, 256, 0, _VOLTA),
        ArchLimits("sm_75", 7, 5, 32, 16, 64 * KIB, 64 * KIB, 256, 0, _TURING),
        ArchLimits("sm_80", 8, 0, 64, 32, 164 * KIB, 163 * KIB, 128, KIB, _GA100),
        ArchLimits("sm_86", 8, 6, 48, 16, 100 * KIB, 99 * KIB, 128, KIB, _GA10X),
        ArchLimits("sm_87", 8, 7, 48, 16, 164 * KIB, 163 * KIB, 128, KIB, _GA100),
        ArchLimits("sm_89", 8, 9, 48, 24, 100 * KIB, 99 * KIB, 128, KIB, _GA10X),
        ArchLimits("sm_90", 9, 0, 64, 32, 228 * KIB, 227 * KIB, 128, KIB, _HOPPER),
        ArchLimits("sm_100", 10, 0, 64, 32, 228 * KIB, 227 * KIB, 128, KIB, _HOPPER),
        ArchLimits("sm_103", 10, 3, 64, 32, 228 * KIB, 227 * KIB, 128, KIB, _HOPPER),
        # sm_120 (RTX 50xx): cuda_occupancy.h of CUDA 13.0 gives 24 blocks per SM and one barrier
        # slot per block; CCCL's arch_traits.h says 32 blocks.  We follow the occupancy header,
        # since that is the calculator the runtime and Nsight agree with.
        ArchLimits("sm_120", 12, 0, 48, 24, 100 * KIB, 99 * KIB, 128, KIB, _GA10X, 1),
    )
}


def arch_limits(arch: str) -> ArchLimits:
    """Return the limits for ``arch``: ``sm_80``, ``sm_90a``, ``compute_86``, ``86`` or ``8.6``."""
    text = arch.strip().lower()
    match = re.fullmatch(r"(?:sm_|compute_|sm)?(\d+)\.?(\d)?[af]?", text)
    if match is None:
        raise ValueError(f"unknown GPU architecture {arch!r} (expected e.g. sm_80)")
    digits = match.group(1) + (match.group(2) or "")
    name = f"sm_{digits}"
    try:
        return ARCHS[name]
    except KeyError:
        known = ", ".join(ARCHS)
        raise ValueError(f"no occupancy limits for {arch!r}; known architectures: {known}") from None


@frozen
class Occupancy:
    """Theoretical occupancy of one kernel configuration on one SM.

    ``blocks_by_*`` are the per-limit block counts of ``cudaOccResult`` (``UNLIMITED`` when a
    resource imposes no limit); ``active_blocks`` is their minimum.
    """

    arch: str
    block_size: int
    registers_per_thread: int
    shared_bytes_per_block: int
    active_blocks: int
    active_warps: int
    max_warps: int
    occupancy: float
    limiter: str
    limiters: tuple[str, ...]
    warps_per_block: int
    blocks_by_warps: int
    blocks_by_registers: int
    blocks_by_shared: int
    blocks_by_blocks: int
    blocks_by_barriers: int
    registers_per_block: int
    """Registers allocated to one block (per-warp allocation x warps)."""
    shared_allocated_per_block: int
    """Shared bytes one block occupies: request + reserve, rounded to the allocation unit."""
    shared_per_sm: int
    """The carve-out the calculation assumed (bytes of shared memory on the SM)."""
    reason: str = ""
    """Why no block fits, when ``active_blocks`` is 0; empty otherwise."""

    @property
    def percent(self) -> str:
        """Occupancy as text: ``37.5%``, ``50%``."""
        return format_percent(self.occupancy)

    def blocks_by(self, limiter: str) -> int:
        """Return the block count allowed by one limiting factor."""
        return {
            "warps": self.blocks_by_warps,
            "registers": self.blocks_by_registers,
            "shared": self.blocks_by_shared,
            "blocks": self.blocks_by_blocks,
            "barriers": self.blocks_by_barriers,
        }[limiter]


def format_percent(fraction: float) -> str:
    """Render a fraction as a percentage, trailing zeros dropped: 0.375 -> '37.5%', 0.5 -> '50%'."""
    text = f"{fraction * 100:.2f}".rstrip("0").rstrip(".")
    return text + "%"


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _align_carveout(limits: ArchLimits, size: int) -> int | None:
    """Round ``size`` up to the next carve-out the SM supports (None: larger than any)."""
    for config in limits.carveouts:
        if size <= config:
            return config
    return None


def _carveout_preference(limits: ArchLimits, carveout: int | None) -> int:
    """Shared bytes per SM the user prefers (``cudaOccSMemPreferenceVoltaPlus``).

    ``None`` is the runtime default (``SHAREDMEM_CARVEOUT_DEFAULT``), which the header maps to the
    device's full ``sharedMemPerMultiprocessor``; an integer is a percentage of it, as passed to
    ``cudaFuncAttributePreferredSharedMemoryCarveout``, rounded up to a supported configuration.
    """
    if carveout is None or carveout == -1:
        preferred = limits.shared_per_sm
    elif 0 <= carveout <= 100:
        preferred = carveout * limits.shared_per_sm // 100
    else:
        raise ValueError(f"carve-out must be a percentage 0..100 (or None), not {carveout}")
    aligned = _align_carveout(limits, preferred)
    assert aligned is not None  # the largest configuration equals shared_per_sm
    return aligned


@functools.lru_cache(maxsize=1 << 16)  # pure and cheap, but cliff searches repeat the same points
def occupancy(
    arch: str | ArchLimits,
    block_size: int,
    registers_per_thread: int,
    shared_bytes_per_block: int = 0,
    carveout: int | None = None,
    *,
    opt_in: bool | None = None,
    barriers: int = 1,
) -> Occupancy:
    """Compute the theoretical occupancy of a kernel launch, as ``cuda_occupancy.h`` does.

    ``shared_bytes_per_block`` is static plus dynamic shared memory.  ``carveout`` is a
    percentage preference (``cudaFuncAttributePreferredSharedMemoryCarveout``); ``None`` means
    the runtime default, under which the occupancy query assumes the largest carve-out.
    ``opt_in`` says whether the kernel raised its dynamic shared-memory limit with
    ``cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)``; ``None``
    assumes it did exactly when the request exceeds the default 48 KB (otherwise the launch could
    not happen at all).  ``barriers`` is the count of hardware barriers the kernel uses (1 for
    ``__syncthreads``), which limits occupancy on sm_90+ only when it exceeds 2.
    """
    limits = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    if block_size <= 0:
        raise ValueError(f"block size must be positive, not {block_size}")
    if registers_per_thread < 0 or shared_bytes_per_block < 0:
        raise ValueError("registers and shared bytes must not be negative")
    reasons: list[str] = []
    warps_per_block = math.ceil(block_size / WARP_SIZE)

    # cudaOccMaxBlocksPerSMWarpsLimit
    if block_size > limits.max_threads_per_block:
        by_warps = 0
        reasons.append(
            f"{block_size} threads per block exceed the limit of {limits.max_threads_per_block}"
        )
    else:
        by_warps = limits.max_warps_per_sm // warps_per_block

    # cudaOccMaxBlocksPerSMRegsLimit
    regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, limits.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    # The hardware check assumes the block's warps are spread over all sub-partitions at once.
    regs_assumed = regs_per_warp * _round_up(warps_per_block, limits.warp_allocation_granularity)
    if registers_per_thread > limits.max_registers_per_thread:
        by_registers = 0
        reasons.append(
            f"{registers_per_thread} registers per thread exceed the limit of "
            f"{limits.max_registers_per_thread}"
        )
    elif regs_assumed > limits.registers_per_block or regs_per_block > limits.registers_per_block:
        by_registers = 0
        reasons.append(
            f"{max(regs_assumed, regs_per_block)} registers per block exceed the limit of "
            f"{limits.registers_per_block} (too many resources requested for launch)"
        )
    elif regs_per_warp == 0:
        by_registers = UNLIMITED
    else:
        warps_per_sub_partition = limits.registers_per_sub_partition // regs_per_warp
        warps_per_sm = warps_per_sub_partition * limits.warp_allocation_granularity
        by_registers = warps_per_sm // warps_per_block

    by_blocks = limits.max_blocks_per_sm  # cudaOccMaxBlocksPerMultiprocessor

    # cudaOccMaxBlocksPerSMSmemLimit
    if opt_in is None:
        opt_in = shared_bytes_per_block > limits.shared_per_block
    shared_allocated = _round_up(
        shared_bytes_per_block + limits.reserved_shared_per_block, limits.shared_allocation_unit
    )
    per_block_limit = limits.shared_per_block_optin if opt_in else limits.shared_per_block
    preferred = _carveout_preference(limits, carveout)
    if shared_allocated > per_block_limit + limits.reserved_shared_per_block:
        by_shared = 0
        how = "the opt-in maximum" if opt_in else "the default limit (opt in for more)"
        reasons.append(
            f"{shared_bytes_per_block} bytes of shared memory per block exceed {how} of "
            f"{per_block_limit} bytes"
        )
        shared_per_sm = preferred
    else:
        if preferred >= shared_allocated:
            shared_per_sm = preferred
        else:
            # The preference is only a hint: a block that needs more gets the next carve-out up.
            aligned = _align_carveout(limits, shared_allocated)
            shared_per_sm = aligned if aligned is not None else limits.shared_per_sm
        by_shared = shared_per_sm // shared_allocated if shared_allocated else UNLIMITED

    # cudaOccMaxBlocksPerSMBlockBarrierLimit: only sm_90 and newer count barriers.
    if limits.major >= 9 and barriers > 0:
        by_barriers = limits.max_blocks_per_sm * limits.barrier_slots_per_block // barriers
    else:
        by_barriers = UNLIMITED

    counts = {
        "warps": by_warps,
        "registers": by_registers,
        "shared": by_shared,
        "blocks": by_blocks,
        "barriers": by_barriers,
    }
    active = min(counts.values())
    limiters = tuple(name for name in LIMITERS if counts[name] == active)
    active_warps = active * warps_per_block
    return Occupancy(
        arch=limits.name,
        block_size=block_size,
        registers_per_thread=registers_per_thread,
        shared_bytes_per_block=shared_bytes_per_block,
        active_blocks=active,
        active_warps=active_warps,
        max_warps=limits.max_warps_per_sm,
        occupancy=active_warps / limits.max_warps_per_sm,
        limiter=limiters[0],
        limiters=limiters,
        warps_per_block=warps_per_block,
        blocks_by_warps=by_warps,
        blocks_by_registers=by_registers,
        blocks_by_shared=by_shared,
        blocks_by_blocks=by_blocks,
        blocks_by_barriers=by_barriers,
        registers_per_block=regs_per_block,
        shared_allocated_per_block=shared_allocated,
        shared_per_sm=shared_per_sm,
        reason="; ".join(reasons) if active == 0 else "",
    )


@frozen
class Step:
    """The nearest change of one resource that moves occupancy to another level."""

    resource: str
    """``registers`` (per thread) or ``shared`` (bytes per block)."""
    delta: int
    """How much the resource changes to reach the step: positive = more, negative = fewer."""
    value: int
    """The resource's value at the step."""
    occupancy: Occupancy
    """Occupancy at the step (``active_blocks`` 0: the launch would fail)."""


@frozen
class Cliffs:
    """Where occupancy changes next around a kernel's current resource usage.

    ``*_up`` is the smallest increase that lowers occupancy (the cliff); ``*_down`` the smallest
    decrease that raises it.  ``None`` when no such change exists within the architecture limits.
    """

    current: Occupancy
    registers_up: Step | None
    registers_down: Step | None
    shared_up: Step | None
    shared_down: Step | None


def _first_step(
    resource: str,
    start: int,
    candidates: Iterable[int],
    compute: Callable[[int], Occupancy],
    base: Occupancy,
    better: bool,
) -> Step | None:
    """Return the first candidate value whose occupancy is above (``better``) or below ``base``."""
    for value in candidates:
        occ = compute(value)
        if (occ.active_warps > base.active_warps) if better else (occ.active_warps < base.active_warps):
            return Step(resource=resource, delta=value - start, value=value, occupancy=occ)
    return None


def register_steps(arch: str | ArchLimits, registers_per_thread: int, *, up: bool) -> list[int]:
    """Register counts at which the per-warp allocation changes, nearest first.

    Occupancy depends on registers only through ``ceil(registers * 32 / 256)`` units, so only one
    count per unit needs evaluating: going up, the first count of each higher unit (65, 73, ...
    from 64); going down, the last count of each lower unit (56, 48, ..., 0 from 64).
    """
    limits = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    per_thread = limits.register_allocation_unit // WARP_SIZE
    unit = -(-registers_per_thread // per_thread)
    if up:
        return list(range(unit * per_thread + 1, limits.max_registers_per_thread + 1, per_thread))
    return list(range((unit - 1) * per_thread, -1, -per_thread))


def shared_steps(arch: str | ArchLimits, shared_bytes_per_block: int, carveout: int | None = None,
                 *, up: bool) -> list[int]:
    """Shared-memory requests (bytes per block) at which some block count can change, nearest first.

    The shared-memory limit is ``carve-out // allocation``, so block counts change only where the
    allocation passes ``C // k`` for a carve-out configuration ``C`` and a block count ``k``, or a
    per-block limit.  Going up, each candidate is the smallest request needing that allocation;
    going down, the largest request fitting it.  A few hundred candidates replace a scan over
    every allocation unit.
    """
    limits = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    unit = limits.shared_allocation_unit
    reserve = limits.reserved_shared_per_block
    # The preferred carve-out applies while a block fits in it; past that the SM takes the next
    # larger configuration, so smaller configurations never matter.
    preferred = _carveout_preference(limits, carveout)
    configs = {preferred} | {config for config in limits.carveouts if config > preferred}
    edges: set[int] = {_round_up(reserve, unit)}
    for config in configs:
        # Counts above the block cap cannot change the minimum, so they need no edge.
        for blocks in range(1, limits.max_blocks_per_sm + 2):
            fit = config // blocks // unit * unit  # largest allocation that fits `blocks` blocks
            edges.update((fit, fit + unit))
    for limit in (limits.shared_per_block, limits.shared_per_block_optin):
        edge = _round_up(limit + reserve, unit)
        edges.update((edge, edge + unit))
    current = _round_up(shared_bytes_per_block + reserve, unit)
    if up:
        requests = {edge - unit - reserve + 1 for edge in edges if edge > current}
        return sorted(r for r in requests if r > shared_bytes_per_block)
    requests = {edge - reserve for edge in edges if edge < current} | {0}
    return sorted((r for r in requests if 0 <= r < shared_bytes_per_block), reverse=True)


def next_cliff(
    arch: str | ArchLimits,
    block_size: int,
    registers_per_thread: int,
    shared_bytes_per_block: int = 0,
    carveout: int | None = None,
    *,
    opt_in: bool | None = None,
    barriers: int = 1,
) -> Cliffs:
    """Find how many more registers / shared bytes drop occupancy, and how many fewer raise it.

    Only the sizes where an allocation or a block count can change are evaluated
    (:func:`register_steps`, :func:`shared_steps`), so the answer is exact and costs a few dozen
    evaluations of the closed-form calculator.
    """
    limits = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    base = occupancy(limits, block_size, registers_per_thread, shared_bytes_per_block, carveout,
                     opt_in=opt_in, barriers=barriers)

    def regs(value: int) -> Occupancy:
        return occupancy(limits, block_size, value, shared_bytes_per_block, carveout,
                         opt_in=opt_in, barriers=barriers)

    def shared(value: int) -> Occupancy:
        return occupancy(limits, block_size, registers_per_thread, value, carveout,
                         opt_in=opt_in, barriers=barriers)

    r, s = registers_per_thread, shared_bytes_per_block
    return Cliffs(
        current=base,
        registers_up=_first_step("registers", r, register_steps(limits, r, up=True), regs,
                                 base, better=False),
        registers_down=_first_step("registers", r, register_steps(limits, r, up=False), regs,
                                   base, better=True),
        shared_up=_first_step("shared", s, shared_steps(limits, s, carveout, up=True), shared,
                              base, better=False),
        shared_down=_first_step("shared", s, shared_steps(limits, s, carveout, up=False), shared,
                                base, better=True),
    )


def occupancy_by_block_size(
    arch: str | ArchLimits,
    registers_per_thread: int,
    shared_bytes_per_block: int = 0,
    block_sizes: Iterable[int] | None = None,
    carveout: int | None = None,
) -> list[Occupancy]:
    """Evaluate every block size (default: multiples of 32 up to the per-block maximum)."""
    limits = arch if isinstance(arch, ArchLimits) else arch_limits(arch)
    sizes = block_sizes or range(WARP_SIZE, limits.max_threads_per_block + 1, WARP_SIZE)
    return [occupancy(limits, size, registers_per_thread, shared_bytes_per_block, carveout)
            for size in sizes]
