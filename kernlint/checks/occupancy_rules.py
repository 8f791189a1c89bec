"""KL401-KL405: occupancy, register spills, occupancy cliffs, warp-sized blocks, shared-memory limits.

User documentation: rules/KL401-low-occupancy.md, rules/KL402-register-spill.md,
rules/KL403-occupancy-cliff.md, rules/KL404-block-size-not-multiple-of-32.md,
rules/KL405-shared-memory-exceeds-limit.md.

One pure function, :func:`occupancy_diagnostics`, takes what the evaluator knows about one kernel
(launch shape, resources from ptxas or the IR estimate, shared bytes) and returns the findings.
Unknown is not a finding: without a block size or a register figure, KL401/KL403 stay silent.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.model.occupancy import (
    DEFAULT_ARCH,
    UNLIMITED,
    WARP_SIZE,
    ArchLimits,
    Occupancy,
    arch_limits,
    format_percent,
    next_cliff,
    occupancy,
    register_steps,
    shared_steps,
)
from kernlint.frontend.resources import KernelResources

LOW_OCCUPANCY = Rule("KL401", "low-occupancy",
                     "theoretical occupancy is below the threshold", Severity.WARNING,
                     category="occupancy")
REGISTER_SPILL = Rule("KL402", "register-spill",
                      "ptxas spills registers to local memory", Severity.WARNING,
                      category="occupancy")
OCCUPANCY_CLIFF = Rule("KL403", "occupancy-cliff",
                       "a few more registers or shared bytes drop occupancy a level", Severity.INFO,
                       category="occupancy")
# A partial warp is a warning when its idle lanes are at least a tenth of the block's lane-slots, the
# share from which kernlint calls idle lanes material elsewhere (KL302 and KL306: WARN_FRACTION in
# kernlint/checks/divergence.py). Under it the fix (one number at the launch) buys at most a tenth of
# the issue slots of an issue-bound kernel and nothing of a memory-bound one: a block of 176 threads
# idles 16 of 192 lanes, 8 %, info; one of 100 threads idles 28 of 128, 22 %, warning.
IDLE_LANE_WARN_FRACTION = 0.10
BLOCK_NOT_WARP_MULTIPLE = Rule("KL404", "block-size-not-multiple-of-32",
                               "block size is not a multiple of the warp size", Severity.WARNING,
                               category="occupancy")
SHARED_EXCEEDS_LIMIT = Rule("KL405", "shared-memory-exceeds-limit",
                            "shared memory per block exceeds the architecture limit", Severity.ERROR,
                            category="occupancy")

RULES = (LOW_OCCUPANCY, REGISTER_SPILL, OCCUPANCY_CLIFF, BLOCK_NOT_WARP_MULTIPLE,
         SHARED_EXCEEDS_LIMIT)

REGISTER_CLIFF_MARGIN = 4
"""KL403 fires when this many more registers per thread (or fewer) drop occupancy.  Registers go
to a warp in units of 256, i.e. 8 per thread, so every cliff sits on an 8-register boundary; 4 is
half a unit: close enough that an innocent edit (one more temporary, a new compiler) crosses it."""

SHARED_CLIFF_FRACTION = 0.10
"""KL403 fires when growing shared memory by at most this fraction of the current bytes drops
occupancy."""

MATERIAL_DROP = 0.10
"""KL403 reports only cliffs that cost at least this much theoretical occupancy (10 points) and land
below the KL401 threshold: losing one small block out of 32 per SM (50 % -> 48.4 %) or going from
100 % to 75 % is not worth a finding for most kernels; 64 -> 65 registers at 256 threads
(50 % -> 37.5 %, below the 50 % threshold) is: one small edit away from a KL401."""

BLOCK_SUGGESTIONS = 3  # at most this many alternative block sizes in a KL401 note


def _bytes(n: int) -> str:
    """``49152`` -> ``48 KB``; sizes that are not whole kilobytes stay in bytes."""
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KB"
    return f"{n} B"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _limit(n: int) -> int | None:
    """A per-limit block count for JSON: ``None`` where the resource imposes no limit."""
    return None if n >= UNLIMITED else n


def _count(n: int) -> str:
    return "no limit" if n >= UNLIMITED else str(n)


def _limiter_phrase(occ: Occupancy, limits: ArchLimits, registers_text: str) -> str:
    if occ.limiter == "registers":
        return f"registers ({registers_text}, {occ.block_size} threads per block)"
    if occ.limiter == "shared":
        return (f"shared memory ({_bytes(occ.shared_bytes_per_block)} per block, "
                f"{_bytes(occ.shared_allocated_per_block)} allocated with the driver reserve; "
                f"{_bytes(occ.shared_per_sm)} per SM)")
    if occ.limiter == "blocks":
        return (f"resident blocks (at most {limits.max_blocks_per_sm} per SM, "
                f"{occ.block_size} threads per block)")
    if occ.limiter == "barriers":
        return "hardware barriers per SM"
    return f"warps ({occ.warps_per_block} warps per block)"


def _largest_below(values: Iterable[int], compute: Callable[[int], Occupancy], target: float,
                   current: Occupancy) -> tuple[int, Occupancy] | None:
    """First value (searching ``values`` in order) reaching ``target`` and beating ``current``."""
    for value in values:
        occ = compute(value)
        if occ.occupancy >= target and occ.active_warps > current.active_warps:
            return value, occ
    return None


def _register_cap(limits: ArchLimits, block_size: int, min_blocks: int = 1) -> int:
    """Most registers per thread with which ``min_blocks`` blocks of ``block_size`` threads fit.

    ptxas applies this cap for ``__launch_bounds__(block_size, min_blocks)``.
    """
    for registers in range(limits.max_registers_per_thread, 0, -1):
        if occupancy(limits, block_size, registers, 0).blocks_by_registers >= max(1, min_blocks):
            return registers
    return 0


def _lift_notes(occ: Occupancy, limits: ArchLimits, registers: int, shared_total: int,
                threshold: float, barriers: int, launch_bounds: int | None = None,
                min_blocks: int | None = None) -> list[str]:
    """Concrete changes that raise occupancy, with the occupancy each would give.

    An existing ``__launch_bounds__(N, minBlocks)`` is named as what to change, never suggested
    again as if it were missing.
    """
    notes: list[str] = []
    block = occ.block_size
    if occ.limiter == "registers" or occ.blocks_by_registers <= occ.active_blocks:
        steps = register_steps(limits, registers, up=False)
        found = _largest_below(
            steps, lambda r: occupancy(limits, block, r, shared_total, barriers=barriers),
            threshold, occ,
        ) or _largest_below(
            steps, lambda r: occupancy(limits, block, r, shared_total, barriers=barriers), 0.0, occ,
        )
        if found is not None:
            cap, better = found
            if launch_bounds and min_blocks and min_blocks >= better.active_blocks:
                pass  # the attribute already asks for that many blocks: ptxas caps registers itself
            elif launch_bounds:
                have = f"{launch_bounds}, {min_blocks}" if min_blocks else f"{launch_bounds}"
                notes.append(
                    f"at most {cap} registers per thread would give {better.percent} "
                    f"({_plural(better.active_blocks, 'block')} per SM): change the existing "
                    f"__launch_bounds__({have}) to __launch_bounds__({launch_bounds}, "
                    f"{better.active_blocks}) or use -maxrregcount={cap}; check that ptxas does "
                    f"not spill (KL402)"
                )
            else:
                notes.append(
                    f"at most {cap} registers per thread would give {better.percent} "
                    f"({_plural(better.active_blocks, 'block')} per SM): __launch_bounds__({block}, "
                    f"{better.active_blocks}) or -maxrregcount={cap}; check that ptxas does not spill "
                    f"(KL402)"
                )
    if shared_total > 0 and (occ.limiter == "shared" or occ.blocks_by_shared <= occ.active_blocks):
        found = _largest_below(
            shared_steps(limits, shared_total, up=False),
            lambda s: occupancy(limits, block, registers, s, barriers=barriers), threshold, occ,
        )
        if found is not None:
            size, better = found
            notes.append(
                f"at most {_bytes(size)} of shared memory per block (now "
                f"{_bytes(shared_total)}) would give {better.percent}: smaller tiles, or reuse "
                f"buffers"
            )
    # Another block size with the same per-thread registers and per-block shared memory.
    candidates = []
    for size in range(WARP_SIZE, limits.max_threads_per_block + 1, WARP_SIZE):
        other = occupancy(limits, size, registers, shared_total, barriers=barriers)
        if other.active_warps > occ.active_warps:
            candidates.append(other)
    candidates.sort(key=lambda o: (-o.active_warps, abs(o.block_size - block)))
    if candidates:
        listed = ", ".join(f"{o.block_size} threads -> {o.percent}"
                           for o in candidates[:BLOCK_SUGGESTIONS])
        notes.append(f"other block sizes with the same registers and shared memory per block: "
                     f"{listed}")
    return notes


def _metrics(*, registers: int | None, registers_source: str | None, shared_bytes: int,
             block_size: int | None, occ: Occupancy | None, arch: str,
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "registers": registers,
        "registers_source": registers_source,
        "shared_bytes": shared_bytes,
        "block_size": block_size,
        "active_blocks": occ.active_blocks if occ else None,
        "active_warps": occ.active_warps if occ else None,
        "occupancy": occ.occupancy if occ else None,
        "limiter": occ.limiter if occ else None,
        "arch": arch,
    }
    if occ is not None:
        metrics["max_warps"] = occ.max_warps
    if extra:
        metrics.update(extra)
    return metrics


ESTIMATE_MARGIN = 2.5
"""The register estimate from the source (`kernlint.frontend.resources.estimate_registers`) is off by up to this
factor either way (unrolled loops, promoted arrays, inlined helpers): its verdict on occupancy holds only
when it holds for every count from estimate / 2.5 to estimate x 2.5. Measured with ptxas
(bench/register_estimate.py over fixtures/ and rodinia, 281 kernels): ptxas / estimate from 0.43 to 3.20,
median 0.83; 277 of 281 within the margin, and none below it (a count below the margin is the one that
could turn a warning without nvcc into no finding with it)."""


def _estimate_verdict(limits: ArchLimits, block_size: int, shared_total: int, threshold: float, barriers: int,
                      estimate: KernelResources | None, launch_bounds: int | None,
                      min_blocks: int | None) -> tuple[bool, str] | None:
    """Whether the register estimate, over its margin, decides that occupancy is below `threshold`, and a
    note saying so; None without an estimate. The same answer with and without nvcc: KL401's severity
    (warning when decided, info when not) never depends on whether ptxas is on PATH."""
    if estimate is None:
        return None
    regs = estimate.registers
    if launch_bounds:
        regs = min(regs, _register_cap(limits, launch_bounds, min_blocks or 1))
    low = max(1, int(regs / ESTIMATE_MARGIN))
    high = min(limits.max_registers_per_thread, -int(-regs * ESTIMATE_MARGIN // 1))
    if launch_bounds:
        high = min(high, _register_cap(limits, launch_bounds, min_blocks or 1))
    best = occupancy(limits, block_size, low, shared_total, barriers=barriers).occupancy
    worst = occupancy(limits, block_size, high, shared_total, barriers=barriers).occupancy
    span = (f"the source estimate of ~{regs} registers per thread is good to a factor of {ESTIMATE_MARGIN:g} "
            f"({low} to {high} registers: occupancy {format_percent(worst)} to {format_percent(best)})")
    if best < threshold:
        return True, f"{span}: below the {format_percent(threshold)} threshold over the whole margin"
    return False, (f"severity info: {span}; the estimate cannot decide whether occupancy is below "
                   f"{format_percent(threshold)}, so this is an info with or without nvcc (ptxas's exact count, "
                   f"when nvcc is on PATH, is in the message)")


def occupancy_diagnostics(
    *,
    path: str,
    kernel: str,
    line: int,
    column: int,
    block_size: int | None,
    block_source: str,
    resources: KernelResources | None,
    static_shared_bytes: int,
    dynamic_shared_bytes: int,
    arch: str,
    threshold: float = 0.5,
    launch_bounds: int | None = None,
    launch_sites: tuple[tuple[int, ...], ...] = (),
    launch_bounds_min_blocks: int | None = None,
    register_estimate: KernelResources | None = None,
    dynamic_shared_unknown: bool = False,
) -> list[Diagnostic]:
    """Return the KL401-KL405 findings for one kernel (or one template instantiation).

    ``line``/``column`` locate the kernel's declaration; ``launch_sites`` are ``(line, column,
    threads per block[, blocks in the grid or None])`` of its launches in the file.  ``resources`` comes from ptxas (``exact``) or
    the IR estimate (``estimated``); with ``None`` registers are unknown.  ptxas's static shared
    figure wins over ``static_shared_bytes`` (the IR's count) when it is exact.  ``arch`` must be
    known to :func:`kernlint.model.occupancy.arch_limits` (it raises ``ValueError`` otherwise).
    ``launch_bounds_min_blocks`` is the second ``__launch_bounds__`` argument when present: ptxas
    then never uses more registers than that many blocks allow, so a register cliff below it is
    not reported. ``register_estimate`` is the register estimate from the source (the figure a run without nvcc
    uses; when ``resources`` is the estimate it is that): KL401's severity follows what the estimate can
    decide over its margin, so that a kernel has one severity with and without nvcc.
    ``dynamic_shared_unknown``: the dynamic shared-memory amount is not known (a launch's that did not fold,
    or a shape given without one): counted as 0, which the assumption says (more only lowers occupancy).
    """
    limits = arch_limits(arch)
    exact = resources is not None and resources.source == "exact"
    static = resources.static_shared_bytes if exact and resources is not None else static_shared_bytes
    dynamic = dynamic_shared_bytes
    shared_total = static + dynamic
    registers = resources.registers if resources is not None else None
    registers_source = resources.source if resources is not None else None
    barriers = max(1, resources.barriers) if exact and resources is not None else 1

    assumptions = [
        f"arch {limits.name}"
        + (" (kernlint's default; choose with --arch or [tool.kernlint] arch)"
           if limits.name == DEFAULT_ARCH else ""),
        f"block size {block_size} ({block_source})" if block_size else "block size unknown",
    ]
    if resources is None:
        assumptions.append("registers per thread unknown")
    elif exact:
        assumptions.append(f"{registers} registers per thread (exact, from ptxas"
                           + (f" for {resources.arch}" if resources.arch else "") + ")")
    else:
        estimate = f"{registers} registers per thread (estimated from the source, not exact"
        assumptions.append(estimate + (f"; {resources.note}" if resources.note else "") + ")")
    if registers is not None and not exact and launch_bounds:
        # ptxas honours both arguments: at most `launch_bounds` threads, and registers few enough
        # for `min_blocks` such blocks per SM (CUDA C++ Programming Guide, "Launch Bounds").
        min_blocks = launch_bounds_min_blocks or 1
        cap = _register_cap(limits, launch_bounds, min_blocks)
        if registers > cap:
            bounds = f"{launch_bounds}, {min_blocks}" if launch_bounds_min_blocks else f"{launch_bounds}"
            assumptions.append(f"estimate capped at {cap} registers by __launch_bounds__({bounds})")
            registers = cap
    assumptions.append(f"shared memory {_bytes(static)} static + {_bytes(dynamic)} dynamic per block"
                       + (" (the dynamic amount is not known: counted as none; more would only lower "
                          "occupancy)" if dynamic_shared_unknown else ""))
    assumptions.append(f"default shared-memory carve-out (the runtime assumes the largest, "
                       f"{_bytes(limits.shared_per_sm)} per SM)")
    assumption_tuple = tuple(assumptions)
    registers_text = (f"{registers} per thread" if exact else f"~{registers} per thread, estimated")

    occ: Occupancy | None = None
    if block_size and block_size > 0 and registers is not None:
        occ = occupancy(limits, block_size, registers, shared_total, barriers=barriers)
    base_metrics = _metrics(registers=registers, registers_source=registers_source,
                            shared_bytes=shared_total, block_size=block_size, occ=occ,
                            arch=limits.name)

    def make(rule: Rule, message: str, notes: list[str], at: tuple[int, int] = (line, column),
             extra: dict[str, Any] | None = None, severity: Severity | None = None,
             block: str = "") -> Diagnostic:
        # A finding about one launch names that launch's block, not the kernel's first one.
        assumed = assumption_tuple if not block else tuple(
            block if a.startswith("block size ") else a for a in assumption_tuple)
        return Diagnostic(
            path=path, line=at[0], column=at[1], code=rule.code, name=rule.name,
            severity=severity or rule.severity, message=message, kernel=kernel, notes=tuple(notes),
            assumptions=assumed, metrics={**base_metrics, **(extra or {})},
        )

    out: list[Diagnostic] = []

    # KL405: a launch that cannot happen.  Static arrays over 48 KB do not even compile.
    shared_error = False
    if static > limits.shared_per_block:
        shared_error = True
        out.append(make(
            SHARED_EXCEEDS_LIMIT,
            (f"static shared memory of {_bytes(static)} per block exceeds the "
             f"{_bytes(limits.shared_per_block)} limit for static __shared__ arrays: ptxas rejects "
             f"the kernel"),
            [(f"declare the buffer as dynamic shared memory (extern __shared__) and opt in with "
              f"cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): "
              f"up to {_bytes(limits.shared_per_block_optin)} per block on {limits.name}"),
             "or shrink the tile so each block needs less"],
            extra={"limit_bytes": limits.shared_per_block},
        ))
    elif shared_total > limits.shared_per_block_optin:
        shared_error = True
        out.append(make(
            SHARED_EXCEEDS_LIMIT,
            f"shared memory of {_bytes(shared_total)} per block ({_bytes(static)} static + "
            f"{_bytes(dynamic)} dynamic) exceeds the {_bytes(limits.shared_per_block_optin)} "
            f"per-block maximum on {limits.name}: the launch fails",
            ["shrink the tile, or split the work over more blocks"],
            extra={"limit_bytes": limits.shared_per_block_optin},
        ))

    # KL404: partially filled warps, at every launch and at __launch_bounds__.
    # A launch whose whole grid is at most one warp of threads (`setup<<<1, 1>>>`, a one-block
    # diagonal step of 16 threads, a printf demo) is a serial or setup kernel by choice: its idle
    # lanes take nothing from other work, and a bigger block would not make it faster.
    sites: list[tuple[int, int, int, str]] = [
        (site[0], site[1], site[2], "block") for site in launch_sites
        if not (len(site) > 3 and site[3] is not None and site[3] * site[2] <= WARP_SIZE)]
    if launch_bounds:
        sites.append((line, column, launch_bounds, "__launch_bounds__"))
    for site_line, site_col, threads, what in sites:
        if threads <= 0 or threads % WARP_SIZE == 0:
            continue
        warps = -(-threads // WARP_SIZE)
        idle = warps * WARP_SIZE - threads
        lower = threads // WARP_SIZE * WARP_SIZE
        upper = warps * WARP_SIZE
        choices = f"{lower} or {upper}" if lower else f"{upper}"
        subject = (f"__launch_bounds__({threads})" if what == "__launch_bounds__"
                   else f"block of {threads} threads")
        share = idle / (warps * WARP_SIZE)
        block_notes = [f"use {choices} threads per block and guard the tail with a bounds check (if (i < n))",
                       "warps are scheduled, and registers allocated, for all 32 lanes"]
        if share < IDLE_LANE_WARN_FRACTION:
            block_notes.append(f"severity info: the idle lanes are {format_percent(share)} of the block's "
                               f"lane-slots (warning from {format_percent(IDLE_LANE_WARN_FRACTION)})")
        out.append(make(
            BLOCK_NOT_WARP_MULTIPLE,
            f"{subject} is not a multiple of the warp size ({WARP_SIZE}): its last warp runs "
            f"{threads - (warps - 1) * WARP_SIZE} of {WARP_SIZE} lanes, so {idle} of "
            f"{warps * WARP_SIZE} lanes per block ({format_percent(share)}) "
            f"are scheduled but idle",
            block_notes,
            severity=Severity.INFO if share < IDLE_LANE_WARN_FRACTION else None,
            at=(site_line, site_col),
            extra={"block_size": threads, "idle_lanes": idle, "warps_per_block": warps},
            block=(f"block size {threads} (launch at line {site_line})" if what == "block"
                   else f"block size {threads} (__launch_bounds__)"),
        ))

    # KL402: spills, only from ptxas (an estimate cannot see them).
    if exact and resources is not None and resources.spills:
        notes = [("spilled values live in local memory (cached in L1/L2, backed by DRAM): each "
                  "reload costs a memory access where a register read was free")]
        cap = _register_cap(limits, launch_bounds) if launch_bounds else 0
        if launch_bounds and cap < limits.max_registers_per_thread:
            notes.append(f"__launch_bounds__({launch_bounds}) lets ptxas use at most about {cap} "
                         f"registers per thread (less with a minimum-blocks argument); a smaller "
                         f"maximum block size or fewer minimum blocks raises that cap")
        if resources.registers >= limits.max_registers_per_thread:
            notes.append(f"the kernel already uses the {limits.max_registers_per_thread}-register "
                         f"maximum: reduce live values (smaller per-thread tiles, fewer unrolled "
                         f"accumulators, recompute instead of keeping)")
        else:
            notes.append("if a -maxrregcount or __launch_bounds__ cap forces this, raise it; "
                         "otherwise reduce live values or avoid dynamically indexed local arrays")
        out.append(make(
            REGISTER_SPILL,
            f"ptxas spills registers to local memory: {resources.spill_stores} bytes of spill "
            f"stores and {resources.spill_loads} bytes of spill loads per thread "
            f"({resources.registers} registers used, {resources.stack_bytes}-byte stack frame)",
            notes,
            extra={"spill_stores": resources.spill_stores, "spill_loads": resources.spill_loads,
                   "stack_bytes": resources.stack_bytes},
        ))

    if occ is None or registers is None or block_size is None or shared_error:
        return out  # nothing to say, or KL405 already says the kernel cannot run at all

    # KL401: low occupancy.
    if occ.occupancy < threshold:
        per_limit = (f"blocks per SM by limit: warps {_count(occ.blocks_by_warps)}, registers "
                     f"{_count(occ.blocks_by_registers)}, shared memory "
                     f"{_count(occ.blocks_by_shared)}, blocks {_count(occ.blocks_by_blocks)}")
        if occ.active_blocks == 0:
            message = (f"theoretical occupancy 0%: no block of {block_size} threads fits on an SM "
                       f"({occ.reason})")
        else:
            message = (f"theoretical occupancy {occ.percent} ({occ.active_warps} of "
                       f"{occ.max_warps} warps per SM): limited by "
                       f"{_limiter_phrase(occ, limits, registers_text)}")
        notes = [per_limit, *_lift_notes(occ, limits, registers, shared_total, threshold, barriers,
                                         launch_bounds, launch_bounds_min_blocks)]
        notes.append(f"threshold {format_percent(threshold)}; low occupancy is fine when each "
                     f"warp has enough independent work (ILP) to hide latency")
        severity = None
        shared_binds = occ.limiter == "shared" or (occ.blocks_by_shared is not None
                                                   and occ.blocks_by_shared <= occ.active_blocks)
        if shared_binds and shared_total > limits.shared_per_block:
            # More than 48 KB per block needs an explicit opt-in (cudaFuncSetAttribute(...,
            # cudaFuncAttributeMaxDynamicSharedMemorySize, ...)): large tiles were chosen over
            # occupancy on purpose, as tensor-core GEMMs do. Stated, not warned about.
            severity = Severity.INFO
            notes.append(f"severity info: the kernel opts in to {_bytes(shared_total)} of shared memory per "
                         f"block, over the {_bytes(limits.shared_per_block)} default: a deliberate trade of "
                         f"occupancy for tile size")
        else:
            verdict = _estimate_verdict(limits, block_size, shared_total, threshold, barriers,
                                        register_estimate if register_estimate is not None
                                        else (None if exact else resources),
                                        launch_bounds, launch_bounds_min_blocks)
            if verdict is not None:
                decided, note = verdict
                notes.append(note)
                if not decided:
                    severity = Severity.INFO
        out.append(make(LOW_OCCUPANCY, message, notes, severity=severity,
                        extra={"threshold": threshold,
                               "blocks_by_warps": _limit(occ.blocks_by_warps),
                               "blocks_by_registers": _limit(occ.blocks_by_registers),
                               "blocks_by_shared": _limit(occ.blocks_by_shared),
                               "blocks_by_blocks": _limit(occ.blocks_by_blocks)}))

    # KL403: one small step away from a lower occupancy level.
    if occ.active_blocks > 0 and occ.occupancy >= threshold:  # below it, KL401 already speaks
        cliffs = next_cliff(limits, block_size, registers, shared_total, barriers=barriers)
        findings: list[tuple[str, dict[str, Any]]] = []
        reg_step = cliffs.registers_up
        pinned = (launch_bounds_min_blocks is not None and reg_step is not None
                  and (launch_bounds is None or launch_bounds >= block_size)
                  and reg_step.occupancy.active_blocks < launch_bounds_min_blocks)
        if (exact and reg_step is not None and reg_step.delta <= REGISTER_CLIFF_MARGIN and not pinned
                and occ.occupancy - reg_step.occupancy.occupancy >= MATERIAL_DROP
                and reg_step.occupancy.occupancy < threshold):
            after = reg_step.occupancy
            plural = "s" if reg_step.delta > 1 else ""
            if after.active_blocks == 0:
                outcome = f"make the launch fail ({after.reason})"
            else:
                outcome = (f"drop occupancy from {occ.percent} to {after.percent} "
                           f"({occ.active_warps} -> {after.active_warps} warps per SM)")
            findings.append((
                (f"{reg_step.delta} more register{plural} per thread ({registers} -> "
                 f"{reg_step.value}) would {outcome}"),
                {"cliff_resource": "registers", "cliff_delta": reg_step.delta,
                 "cliff_occupancy": after.occupancy},
            ))
        shared_step = cliffs.shared_up
        if (shared_total > 0 and shared_step is not None
                and shared_step.occupancy.active_blocks > 0
                and shared_step.delta <= SHARED_CLIFF_FRACTION * shared_total
                and occ.occupancy - shared_step.occupancy.occupancy >= MATERIAL_DROP
                and shared_step.occupancy.occupancy < threshold):
            after = shared_step.occupancy
            findings.append((
                (f"{_plural(shared_step.delta, 'more byte')} of shared memory per block "
                 f"({shared_total} -> {shared_step.value}) would drop occupancy from "
                 f"{occ.percent} to {after.percent} ({occ.active_warps} -> {after.active_warps} "
                 f"warps per SM)"),
                {"cliff_resource": "shared", "cliff_delta": shared_step.delta,
                 "cliff_occupancy": after.occupancy},
            ))
        if findings:
            message, extra = findings[0]
            notes = [text for text, _ in findings[1:]]
            if extra["cliff_resource"] == "registers":
                notes.append(
                    f"registers are allocated per warp in units of {limits.register_allocation_unit} "
                    f"({limits.register_allocation_unit // WARP_SIZE} per thread); "
                    f"__launch_bounds__({block_size}, {occ.active_blocks}) keeps ptxas at or below "
                    f"{reg_step.value - 1 if reg_step else registers} registers so a compiler or "
                    f"code change cannot cross the cliff unnoticed")
            out.append(make(OCCUPANCY_CLIFF, message, notes, extra=extra))
    return out
