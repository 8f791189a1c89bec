"""checks/l1_reuse.py: which sectors of a load's requests L1 serves from the same warp's earlier iterations."""
from __future__ import annotations

import numpy as np

from kernlint.checks.l1_reuse import L1_WARP_SECTORS, l1_cost
from kernlint.eval.events import MemoryAccess
from kernlint.ir.nodes import Span


def _event(addresses: list[int], it: int, kind: str = "load", width: int = 4) -> MemoryAccess:
    a = np.zeros((1, 1, 32), dtype=np.int64)
    m = np.zeros((1, 1, 32), dtype=bool)
    a[0, 0, :len(addresses)] = addresses
    m[0, 0, :len(addresses)] = True
    return MemoryAccess(Span(1, 1, 1, 2), "global", kind, width, a, m, "p", frozenset(), loop_iter=(it,))


def test_same_sectors_each_iteration_miss_once() -> None:
    # 32 lanes, 4 bytes each, 64 bytes apart: 32 lanes over 2048 bytes would be 32 sectors; take 8 lanes
    # 64 bytes apart (8 sectors) read in 4 iterations at the same addresses + 4 * it: same 8 sectors.
    evs = [_event([64 * k + 4 * it for k in range(8)], it) for it in range(4)]
    c = l1_cost(evs)
    assert c is not None
    assert c.sectors_by_sample == (32,)  # 8 sectors x 4 requests, as Nsight's L1 counters count them
    assert c.misses_by_sample == (8,)  # only the first iteration's leave L1
    assert c.working_set == 8


def test_working_set_over_the_bound_gets_no_credit() -> None:
    n = L1_WARP_SECTORS + 1  # one sector per lane, one more than the bound
    evs = [_event([32 * k + 4 * it for k in range(n)], it) for it in range(3)]
    c = l1_cost(evs)
    assert c is not None
    assert c.misses_by_sample == c.sectors_by_sample == (3 * n,)


def test_stores_and_single_iterations_are_not_modelled() -> None:
    assert l1_cost([_event([0, 64], it, kind="store") for it in range(2)]) is None
    assert l1_cost([_event([0, 64], 0)]) is None


def test_new_sectors_each_iteration_all_miss() -> None:
    # A walk that moves one sector per iteration per lane: nothing comes back.
    evs = [_event([1024 * k + 32 * it for k in range(4)], it) for it in range(4)]
    c = l1_cost(evs)
    assert c is not None and c.misses_by_sample == c.sectors_by_sample == (16,)
