"""Sectors of a global load that L1 serves because the same warp touched them in earlier iterations of its loop.

Nsight Compute's L1 counters (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld` per request) count every
sector a warp request touches, whether L1 holds it or not; what leaves L1 for L2/DRAM is the misses.
A warp that reads 18-byte records whole across an unrolled `for (l = 0; l < 4; ++l)` touches the same
5 sectors in each iteration: 5 sectors per request, but only the first iteration's 5 leave L1. The
coalescing rules keep sectors per request in their metrics and base severity on the misses.

The model is deliberately narrow, so that it never calls a waste a hit:
- only loads (global stores are written through L1 to L2 on sm_70+; CUDA C++ Programming Guide,
  "Compute Capability 7.x / Global Memory": L1 caches loads, stores go to L2);
- only reuse by the same warp at the same site, in strictly earlier iterations of the innermost loop
  around it, within one run of that loop (the evaluated iterations, `MemoryAccess.loop_iter`);
- only a bounded working set: when the sectors the warp touches at the site over the loop's run exceed
  `L1_WARP_SECTORS`, no reuse is credited at all (other warps' lines evict them first).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from kernlint.eval.events import MemoryAccess
from kernlint.base.frozen import frozen
from kernlint.model.metrics import SECTOR_BYTES

# L1 per warp that reuse may count on: the smallest unified L1/shared array of sm_70..sm_90 that
# loads keep is 64 KB (sm_75 with 32 KB of shared memory; sm_70 128 KB, sm_80 192 KB, sm_90 256 KB),
# shared by up to 64 resident warps (32 on sm_75): 64 KB / 64 warps = 1 KB = 32 sectors per warp.
# Half of that, 16 sectors (512 B), leaves room for the kernel's other loads and for LRU's imperfect
# replacement. A row-per-lane walk (`A[row * K + k]`, 32 sectors per request) exceeds it and keeps
# its warning: whether L1 serves it depends on occupancy and on every other access of the kernel.
L1_WARP_SECTORS = 16


@frozen
class L1Cost:
    """Sectors of a load site's requests and how many of them miss L1, summed per sample."""

    sectors_by_sample: tuple[int, ...]
    misses_by_sample: tuple[int, ...]
    working_set: int  # the largest per-warp working set of the site over one run of its loop (sectors)


def _request_sectors(address: np.ndarray, mask: np.ndarray, width: int) -> frozenset[int]:
    """The sectors one warp request touches (active lanes only)."""
    a = address[mask]
    if a.size == 0:
        return frozenset()
    first = a // SECTOR_BYTES
    last = (a + (width - 1)) // SECTOR_BYTES
    if np.array_equal(first, last):
        return frozenset(first.tolist())
    out: set[int] = set()
    for f, g in zip(first.tolist(), last.tolist()):
        out.update(range(f, g + 1))
    return frozenset(out)


def l1_cost(evs: list[MemoryAccess]) -> L1Cost | None:
    """The L1 misses of one load site's events (one site: same span, root and call chain).

    None when nothing can be reused: a store, or no event inside a loop that ran two evaluated
    iterations. Events of one run of the innermost loop share `loop_iter[:-1]`; the last element
    orders the iterations.
    """
    if not evs or evs[0].kind != "load" or not any(len(e.loop_iter) for e in evs):
        return None
    runs: dict[tuple[int, ...], dict[int, list[MemoryAccess]]] = defaultdict(lambda: defaultdict(list))
    for e in evs:
        if e.loop_iter:
            runs[e.loop_iter[:-1]][e.loop_iter[-1]].append(e)
    if not any(len(its) > 1 for its in runs.values()):
        return None
    samples, warps = evs[0].mask.shape[:2]
    sectors = [0] * samples
    misses = [0] * samples
    widest = 0
    for e in evs:
        if not e.loop_iter:  # outside any loop: every sector is a first touch
            for s in range(samples):
                for w in range(warps):
                    n = len(_request_sectors(e.address[s, w], e.mask[s, w], e.width))
                    sectors[s] += n
                    misses[s] += n
    for its in runs.values():
        order = sorted(its)
        for s in range(samples):
            for w in range(warps):
                seen: set[int] = set()
                run_sectors = 0
                run_misses = 0
                for k in order:
                    fresh: set[int] = set()
                    for e in its[k]:
                        req = _request_sectors(e.address[s, w], e.mask[s, w], e.width)
                        run_sectors += len(req)
                        run_misses += len(req - seen)
                        fresh |= req
                    seen |= fresh
                widest = max(widest, len(seen))
                sectors[s] += run_sectors
                # An unbounded working set: the earlier iterations' sectors are gone when they come back.
                misses[s] += run_misses if len(seen) <= L1_WARP_SECTORS else run_sectors
    return L1Cost(tuple(sectors), tuple(misses), widest)
