"""Values after a loop stopped before its end, for variables that advance by a constant step.

A loop over a sampled size (`for (k = 1; k < nz - 1; ++k) { ...; c += xy; }`) is evaluated for at
most MAX_LOOP_ITERATIONS iterations (or fewer, to save the step budget), and what it writes becomes
unknown after it, so the code after it (`tOut[c] = ...` for the last plane) is not evaluated.
When every iteration adds the same amount to a variable (checked on the last three iterations
evaluated, lane by lane) and the loop's condition reads only such variables and values the loop
does not change, the number of further iterations each lane runs is found by searching the
condition over the extrapolated values, and the variables are set to where the loop leaves them.
Loops whose body can leave early (`break`, `return`, `goto`) or whose condition reads memory are
not fast-forwarded.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import Val
from kernlint.base.memo import by_identity

# Further iterations searched at most (a bound no real loop over a size reaches).
MAX_FURTHER = 1 << 26


@by_identity  # asked each time the loop is entered
def _exits_early(body: ir.Stmt) -> bool:
    return any(isinstance(n, (ir.Break, ir.Return)) or type(n).__name__ == "Goto" for n in ir.walk(body))




class Tracker:
    """The written variables' values after each of the last three iterations of one loop."""

    def __init__(self, cond: ir.Expr | None, body: ir.Stmt, written: set[str], do_while: bool) -> None:
        self.names = sorted(written)
        self.cond = cond
        self.enabled = (cond is not None and not do_while and ir.is_pure(cond) and not _exits_early(body)
                        and bool(self.names))
        self.history: list[dict[str, Val]] = []

    def record(self, env: dict[str, Val]) -> None:
        if not self.enabled:
            return
        self.history.append({n: env[n] for n in self.names if n in env})
        del self.history[:-3]

    def steps(self, shape: tuple[int, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """name -> (value after the last iteration, step per iteration), both of `shape`, for the
        variables whose last two steps were equal in every lane."""
        if len(self.history) < 3:
            return {}
        out = {}
        h0, h1, h2 = self.history
        for n in self.names:
            vals = [h.get(n) for h in (h0, h1, h2)]
            if any(v is None or v.data is None or v.is_float or v.fields for v in vals):
                continue
            a, b, c = (np.broadcast_to(np.asarray(v.data, dtype=np.int64), shape) for v in vals)  # type: ignore[union-attr]
            d = c - b
            if np.array_equal(b - a, d):
                out[n] = (c, d)
        return out


def fast_forward(interp: Any, tracker: Tracker, active: np.ndarray) -> dict[str, Val]:
    """The values the affine variables hold after the loop, for a loop stopped with the lanes
    `active` still wanting iterations; {} when it cannot be done."""
    if not tracker.enabled or tracker.cond is None:
        return {}
    shape = active.shape
    steps = tracker.steps(shape)
    read = {n.name for n in ir.walk(tracker.cond) if isinstance(n, ir.Ref)}
    if not steps or any(n in tracker.names and n not in steps for n in read):
        return {}
    env = interp.frame.env
    saved = {n: env.get(n) for n in steps}
    saved_mask = interp.mask
    deps: frozenset[str] = frozenset()

    def holds(m: np.ndarray) -> np.ndarray | None:
        nonlocal deps
        for n, (v, d) in steps.items():
            env[n] = Val(v + d * m, saved[n].deps, saved[n].space, saved[n].root)  # type: ignore[union-attr]
        c = interp.eval(tracker.cond)
        if c.data is None:
            return None
        deps |= c.deps
        return np.broadcast_to(np.asarray(c.data) != 0, shape)

    try:
        interp.mask = active
        zero = np.zeros(shape, dtype=np.int64)
        # Exponential search for a count at which every active lane's condition fails, then a
        # lane-wise binary search for the first such count (the loop's condition is monotone in
        # the count for the loops this applies to; a lane whose condition holds again later would
        # have left the loop already).
        hi = np.ones(shape, dtype=np.int64)
        while True:
            h = holds(hi)
            if h is None:
                return {}
            if not (h & active).any():
                break
            if int(hi.max()) >= MAX_FURTHER:
                return {}
            hi = np.where(h & active, hi * 2, hi)
        lo = np.where(active, hi // 2, zero)  # the condition holds at lo (lo >= 1), or lo = 0
        hi = np.where(active, hi, zero)
        while (hi - lo > 1).any():
            mid = (lo + hi) // 2
            h = holds(mid)
            if h is None:
                return {}
            live = hi - lo > 1
            lo = np.where(live & h, mid, lo)
            hi = np.where(live & ~h, mid, hi)
        further = np.where(active, hi, zero)
    finally:
        for n, v in saved.items():
            env[n] = v  # type: ignore[assignment]
        interp.mask = saved_mask
    out = {}
    for n, (v, d) in steps.items():
        old = saved[n]
        out[n] = Val(v + d * further, old.deps | deps, old.space, old.root)  # type: ignore[union-attr]
    return out
