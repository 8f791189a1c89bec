"""Kernels whose every launch is tiny: performance warnings weighed against the launch itself.

A kernel launched as `demo<<<1, 256>>>(...)` whose threads run no loop issues a few hundred warp
instructions in all: it finishes in well under the few microseconds a kernel launch itself costs
(CUDA C++ Best Practices Guide, "Kernel launch overhead"), so no divergence or access pattern inside it
changes what the launch costs. When every launch of the kernel that kernlint found has a folded grid,
and that grid times the evaluated block's warp instructions is under TINY_WARP_INSTRUCTIONS (evaluated
exactly: no loop cut at the iteration cap, no trip count decided by loaded data), the kernel's access
and divergence warnings become info, with a note giving the count. Correctness errors are untouched.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from kernlint import ir
from kernlint.diagnostics import Diagnostic, Severity
from kernlint.eval.events import DataBranch, Loop, Work
from kernlint.eval.result import KernelResult

# One SM issues up to 4 warp instructions per cycle: 10,000 of them are a few microseconds on one SM
# even at one per cycle, the order of a launch's own overhead.
TINY_WARP_INSTRUCTIONS = 10_000
DEMOTED = frozenset({"KL101", "KL102", "KL103", "KL201", "KL301", "KL302", "KL305"})


def _block_instructions(result: KernelResult) -> int | None:
    """Warp instructions one block issued (largest sample), or None when the count is not exact."""
    total = None
    for e in result.events:
        if isinstance(e, Loop) and e.truncated:
            return None
        if isinstance(e, DataBranch) and (e.kind == "loop" or e.has_loop):
            return None  # a loop run once for every lane: its real trip count is unknown
        if isinstance(e, Work):
            total = int(e.per_warp.sum(axis=-1).max())
    return total


def launch_work(results: Sequence[KernelResult], launches: Sequence[ir.Launch]) -> tuple[int, int, str] | None:
    """(most blocks of any launch, warp instructions of the whole largest launch, its site) when every
    launch has a folded grid and the evaluation is exact; None otherwise."""
    if not launches or any(ln.grid is None for ln in launches):
        return None
    main = [r for r in results if not r.regions and r.odd_offset is None and r.events]
    if not main:
        return None
    per_block = [_block_instructions(r) for r in main]
    if any(p is None for p in per_block):
        return None
    biggest = max(launches, key=lambda ln: ln.grid[0] * ln.grid[1] * ln.grid[2])  # type: ignore[index]
    g = biggest.grid
    assert g is not None
    blocks = g[0] * g[1] * g[2]
    site = biggest.site or f"line {biggest.span.line}"
    return blocks, blocks * max(p for p in per_block if p is not None), site


def weigh(diags: Iterable[Diagnostic], results: Sequence[KernelResult], launches: Sequence[ir.Launch]) -> list[Diagnostic]:
    """Demote the access and divergence warnings of a kernel whose every launch is tiny."""
    diags = list(diags)
    if not any(d.severity is Severity.WARNING and d.code in DEMOTED for d in diags):
        return diags
    work = launch_work(results, launches)
    if work is None or work[1] >= TINY_WARP_INSTRUCTIONS:
        return diags
    blocks, total, site = work
    note = (f"severity info: every launch of the kernel is tiny (the largest, at {site}, runs {blocks} "
            f"block{'s' if blocks != 1 else ''}: about {total} warp instructions in all, no loop over data), "
            f"so it finishes within the microseconds a launch itself costs and this cannot change its time")
    out = []
    for d in diags:
        if d.severity is not Severity.WARNING or d.code not in DEMOTED:
            out.append(d)
            continue
        notes = list(d.notes)
        at = next((i for i, n in enumerate(notes) if n.startswith("fix:")), len(notes))
        notes.insert(at, note)
        metrics = dict(d.metrics)
        metrics["launch_warp_instructions"] = total
        out.append(replace(d, severity=Severity.INFO, notes=tuple(notes), metrics=metrics))
    return out
