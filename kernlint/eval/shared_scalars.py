"""Block-wide values of `__shared__` scalar variables (one value per block, not a per-thread copy).

A `__shared__ int done;` is one word of block memory: thread 0 writes it, a barrier publishes it,
and every thread reads the same value. So the evaluator keeps one value per sample, shape
(S, 1, 1), for each such variable instead of a per-lane local:

- a write by some lanes sets the value when every writing lane writes the same value (per sample);
  lanes writing different values (a race, or a reduction's last writer) leave a value that is
  uniform across the block but unknown; samples where no lane writes keep the old value;
- a write under a data-dependent condition, in a loop stopped early, or through an escaped address
  (`atomicAdd(&count, 1)`) leaves the value unknown;
- a read returns that block-wide value. Reads are not ordered against writes (a read before the
  barrier that publishes a write is a race, which is not what these rules check), so the value
  read is the last one written; either way it is the same for every thread of the block, so a
  condition on it never splits a warp or a block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import Val


def is_shared_scalar_type(t: ir.CType) -> bool:
    """A `__shared__` declaration the evaluator tracks by value: a scalar or a pointer."""
    return t.kind in ("int", "float", "bool", "pointer")


@dataclass
class SharedScalars:
    """The current block-wide value of each tracked `__shared__` scalar, by name."""

    samples: int
    values: dict[str, Val] = field(default_factory=dict)
    types: dict[str, ir.CType] = field(default_factory=dict)

    def declare(self, name: str, ctype: ir.CType) -> None:
        if name not in self.types:
            self.types[name] = ctype
            self.values[name] = Val(None, uniform=True)

    def __contains__(self, name: str) -> bool:
        return name in self.types

    def read(self, name: str) -> Val:
        return self.values.get(name, Val(None, uniform=True))

    def forget(self, names: object, why: tuple[str, str] | None = None) -> None:
        """Variables written where the evaluator cannot tell which value stands become unknown
        (`why`: the cause, for coverage: the condition's, a loop's)."""
        for name in names:  # type: ignore[attr-defined]
            if name in self.values:
                old = self.values[name]
                self.values[name] = Val(None, old.deps, why=why or old.why, uniform=True)

    def write(self, name: str, v: Val, mask: np.ndarray) -> None:
        """Lanes in `mask` (S, W, 32) store `v`; the block then holds one value per sample."""
        old = self.values.get(name, Val(None, uniform=True))
        deps = old.deps | v.deps
        if v.data is None:
            self.values[name] = Val(None, deps, why=v.why, uniform=True)
            return
        data = np.broadcast_to(v.data, mask.shape)
        out = np.zeros((mask.shape[0], 1, 1), dtype=data.dtype)
        for s in range(mask.shape[0]):
            lanes = data[s][mask[s]]
            if lanes.size == 0:
                if old.data is None:
                    self.values[name] = Val(None, deps, why=old.why, uniform=True)
                    return
                out[s, 0, 0] = np.broadcast_to(old.data, (mask.shape[0], 1, 1))[s, 0, 0]
            elif np.all(lanes == lanes[0]):
                out[s, 0, 0] = lanes[0]
            else:
                # Threads store different values: one of them wins, the same for the whole block.
                self.values[name] = Val(None, deps, uniform=True, why=("unmodelled", f"`{name}`, a __shared__ variable "
                                                         "that threads write with different values"))
                return
        space = v.space if old.data is None or old.space == v.space else ""
        root = v.root if old.data is None or old.root == v.root else ""
        self.values[name] = Val(out, deps, space, root, is_float=v.is_float)
