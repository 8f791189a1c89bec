"""Global loads the compiler combines: repeated loads of the same addresses, and field loads of one vector.

What nvcc emits (checked with `nvcc -ptx -arch=sm_80`, CUDA 13):

- `s = x[row*C]; t = x[row*C] * 2;` with no store in between is one `ld.global.f32`: the second
  read reuses the register, so it is not a second warp request;
- `a = p[i].x; b = p[i].y;` on a `float2*` (or a `float4*`, or a struct declared `__align__(8)`)
  is one `ld.global.v2.f32`; `.x` and `.z` of a `float4` one `ld.global.v4.f32`: the fields of
  one naturally aligned element read in straight-line code become one access of the combined
  width, when that width starts at an offset aligned to it (`.y` and `.z` of a `float4` stay two
  scalar loads, and so do the fields of a struct without `__align__`).

So the evaluator reports only the first of repeated loads, and widens the first field load of an
element to the merged access instead of reporting two strided narrow loads. Both only within
straight-line code: the loads must run for the same lanes in the same loop iteration, and any
store, barrier or call the evaluator cannot see into in between forgets every recorded load
(the compiler must assume a store may alias).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from kernlint.eval.events import MemoryAccess

MERGE_WIDTHS = (8, 16)  # vector load widths (ld.global.v2 / v4)


@dataclass
class _Load:
    index: int  # position of the emitted event in the result's event list
    root: str
    address: np.ndarray  # the emitted event's address (start of its bytes) per lane
    width: int
    mask: np.ndarray
    loop_iter: tuple[int, ...]
    element: np.ndarray | None = None  # start of the enclosing aligned element, for field loads
    align: int = 0  # the element's alignment (8 or 16); 0: not a field of an aligned element
    lo: int = 0  # byte range of the element the event covers
    hi: int = 0
    fields: tuple[str, ...] = ()


@dataclass
class RecentLoads:
    """Global loads since the last store, barrier or opaque call."""

    loads: list[_Load] = field(default_factory=list)

    def forget(self) -> None:
        self.loads.clear()

    def seen(self, e: MemoryAccess) -> bool:
        """True when every active lane of `e` already loaded the same bytes in this straight-line run."""
        if e.kind != "load" or e.space != "global":
            return False
        for r in self.loads:
            if (r.root == e.root and r.loop_iter == e.loop_iter and r.width >= e.width
                    and not (e.mask & ~r.mask).any()
                    and np.all((e.address >= r.address) & (e.address + e.width <= r.address + r.width) | ~e.mask)):
                return True
        return False

    def merge(self, e: MemoryAccess, element: np.ndarray, align: int, offset: int, fieldname: str,
              events: list) -> bool:
        """Widen an earlier field load of the same element to cover `e`; True when `e` is absorbed."""
        lo, hi = offset, offset + e.width
        for r in self.loads:
            if (r.align != align or r.root != e.root or r.loop_iter != e.loop_iter or r.element is None
                    or not np.array_equal(r.mask, e.mask) or not np.array_equal(np.where(e.mask, r.element, 0),
                                                                                np.where(e.mask, element, 0))):
                continue
            new_lo, new_hi = min(r.lo, lo), max(r.hi, hi)
            width = next((w for w in MERGE_WIDTHS if w <= align and new_lo % w == 0 and new_hi - new_lo <= w), 0)
            if not width:
                continue
            old = events[r.index]
            if not isinstance(old, MemoryAccess):
                continue
            r.fields = r.fields + (fieldname,)
            address = (np.broadcast_to(element, e.mask.shape) + new_lo).astype(np.int64)
            events[r.index] = replace(old, width=width, address=address, vector_elems=max(1, width // 4),
                                      merged=r.fields)
            r.lo, r.hi, r.width, r.address = new_lo, new_hi, width, address
            return True
        return False

    def record(self, index: int, e: MemoryAccess, element: np.ndarray | None = None, align: int = 0,
               offset: int = 0, fieldname: str = "") -> None:
        if e.kind != "load" or e.space != "global":
            return
        self.loads.append(_Load(index, e.root, e.address, e.width, e.mask, e.loop_iter,
                                None if element is None else np.broadcast_to(element, e.mask.shape),
                                align, offset, offset + e.width, (fieldname,) if fieldname else ()))
        if len(self.loads) > 64:
            del self.loads[:-64]
