"""Atomic functions (atomicAdd, atomicCAS, ... and their _block/_system forms) as memory accesses."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import Interp, Val, unknown

if TYPE_CHECKING:
    from kernlint.eval.events import MemoryAccess

# CUDA C++ Programming Guide, "Atomic Functions": arithmetic and bitwise atomics.
_BASES = ("atomicAdd", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicInc", "atomicDec",
          "atomicCAS", "atomicAnd", "atomicOr", "atomicXor")
ATOMICS = frozenset(b + s for b in _BASES for s in ("", "_block", "_system"))


def is_atomic(name: str) -> bool:
    return name in ATOMICS


def eval_atomic(interp: Interp, e: ir.Call) -> Val:
    """One read-modify-write of the pointed-to element, recorded as a store of that width at the
    pointer (coalescing and bank rules see it); the value it returns is the old contents: data."""
    p = interp.eval(e.args[0])
    rest = [interp.eval(a) for a in e.args[1:]]
    target = e.args[0]
    while isinstance(target, ir.Cast) and not target.explicit:
        target = target.operand
    if isinstance(target, ir.Unary) and target.op == "&":
        var = interp.ref_target(target.operand)
        if var is not None:
            # `atomicExch(&flag, 0)` on a variable: what it holds afterwards is whichever thread's
            # update came last (a __shared__ scalar stays one value per block).
            interp.store(var, Val(None, why=("loaded", "")), e.span)
    pt = interp.resolve(e.args[0].ctype)
    if pt.kind in ("pointer", "array") and pt.pointee is not None:
        elem = interp.resolve(pt.pointee)
        if elem.kind != "template" and elem.size > 0:
            interp.access(e, p, elem, "store", text=e.name)
    # Each lane gets its own old value (atomicAdd(&count, 1) hands out 0, 1, 2, ...), so the result is
    # never warp-uniform, even when every lane names the same word.
    return unknown(p, *rest, uniform=False)


def atomic_note(name: str, lanes_per_address: int) -> str:
    """What a finding on an atomic says: it is a read-modify-write, and whether lanes contend."""
    text = f"{name}: an atomic read-modify-write, counted as one access of its width per lane"
    if lanes_per_address > 1:
        text += (f"; up to {lanes_per_address} lanes of one request update the same address: those "
                 f"serialize (contention), which is not a bank conflict and is not counted in the figures above")
    return text


def contention(evs: "list[MemoryAccess]") -> int:
    """The most active lanes of one warp request that update the same address (1: none share one)."""
    worst = 1
    for e in evs:
        addr = np.broadcast_to(e.address, e.mask.shape).reshape(-1, 32)
        mask = e.mask.reshape(-1, 32)
        for a, m in zip(addr, mask):
            if m.sum() > 1:
                _u, counts = np.unique(a[m], return_counts=True)
                worst = max(worst, int(counts.max()))
    return worst
