"""KL201's padding screen (checks/shared_banks.py `_screen_paddings`) against a direct computation: each
access's addresses split into (row, column, byte) of the declared array, laid out again with the padded
row and measured request by request. The screen measures each distinct request once (and, for whole-word
elements, a request moved as a whole by rows and columns as the same request): these cases check that
its predictions are still those of measuring every request."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kernlint.ir import nodes as ir
from kernlint.checks.shared_banks import _screen_paddings
from kernlint.eval.events import MemoryAccess
from kernlint.model.metrics import shared_wavefronts

SPAN = ir.Span(1, 1)


def _array(elem: ir.CType, dims: list[int]) -> ir.CType:
    t = elem
    for d in reversed(dims):
        t = ir.CType("array", t.size * d, pointee=t, count=d, name="tile")
    return t


def _direct(events: list[MemoryAccess], base: int, elem_size: int, dims: list[int], pads: list[int],
            old_sites: dict[tuple[int, int], int]) -> dict[int, tuple[int, int, int]]:
    """(worst ways, excess wavefronts, sites made worse) for each padding, one request at a time."""
    out = {}
    for pad in pads:
        worst_at: dict[tuple[int, int], int] = {}
        excess = 0
        for e in events:
            off = np.where(e.mask, e.address - base, 0).reshape(-1, 32)
            mask = e.mask.reshape(-1, 32)
            k = off // elem_size
            row, col, rem = k // dims[-1], k % dims[-1], off - k * elem_size
            for r in range(len(off)):
                addr = base + (row[r] * (dims[-1] + pad) + col[r]) * elem_size + rem[r]
                ways, wf, ideal = shared_wavefronts(addr, mask[r], e.width)
                key = (e.span.line, e.span.column)
                worst_at[key] = max(worst_at.get(key, 0), int(ways))
                excess += int(wf) - int(ideal)
        worse = sum(1 for k, w in worst_at.items() if k in old_sites and w > old_sites[k])
        out[pad] = (max(worst_at.values(), default=0), excess, worse)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_screen_predicts_what_measuring_every_request_gives(seed: int) -> None:
    rng = np.random.default_rng(seed)
    elem_size = int(rng.choice([1, 2, 4, 8, 16]))
    elem = ir.CType("int" if elem_size <= 8 else "struct", elem_size, name="e")
    dims = [int(rng.choice([4, 8, 16, 17, 32])), int(rng.choice([8, 16, 17, 32, 33]))]
    t = _array(elem, dims)
    base = int(rng.choice([0, 128]))
    events = []
    for n in range(int(rng.integers(1, 4))):
        shape = (2, int(rng.integers(1, 3)), 32)
        lanes = np.arange(32)
        if rng.random() < 0.6:  # strided rows and columns, repeated at several places (a loop)
            row = (rng.integers(0, dims[0], size=(*shape[:2], 1)) + lanes // int(rng.choice([1, 4, 32]))) % dims[0]
            col = (rng.integers(0, dims[1], size=(*shape[:2], 1)) + lanes * int(rng.choice([0, 1, 2]))) % dims[1]
            element = np.broadcast_to(row * dims[1] + col, shape)
        else:
            element = rng.integers(0, dims[0] * dims[1], size=shape)
        mask = rng.random(shape) < float(rng.choice([1.0, 0.6]))
        events.append(MemoryAccess(ir.Span(1 + n % 2, 3), "shared", "load", elem_size,
                                   (base + element * elem_size).astype(np.int64), mask, "tile", frozenset()))
    tries = min(32, 128 // elem_size)
    old_sites = {(1, 3): 2}
    got = _screen_paddings(events, "tile", base, t, tries, old_sites)
    assert got is not None
    assert got == _direct(events, base, elem_size, dims, sorted(got), old_sites)
    assert set(range(1, tries + 1)) <= set(got)


def test_screen_gives_up_on_an_access_past_the_array() -> None:
    t = _array(ir.CType("float", 4, name="float"), [16, 16])
    inside = np.arange(32, dtype=np.int64).reshape(1, 1, 32) * 4
    ok = MemoryAccess(SPAN, "shared", "load", 4, inside, np.ones((1, 1, 32), bool), "tile", frozenset())
    assert _screen_paddings([ok], "tile", 0, t, 32, {}) is not None
    past = replace(ok, address=inside + t.size)
    assert _screen_paddings([ok, past], "tile", 0, t, 32, {}) is None
