"""Per-thread local arrays (`int idx[4]; idx[k] = tid * 4 + k; a[idx[k]]`) whose elements are
read and written at indices the evaluator knows in every lane: each element holds one value per
lane, as a scalar variable does.

Only one-dimensional arrays of scalars or pointers are tracked, and only when the array is never
used other than through a plain subscript (`idx[k]`): an array passed to a function, decayed to a
pointer or whose element's address is taken may be written where this model does not look, so it
stays untracked (its elements unknown, as before). A write at an index that is unknown or out of
bounds in some active lane makes every element unknown; so do writes the evaluator cannot place
(under a data-dependent condition, in a loop stopped before its end: `forget`). A read at an index
that differs between lanes gathers each lane's element. Nothing is guessed: an element never
written, or written where the evaluator lost track, reads as unknown.
"""
from __future__ import annotations

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import UNINIT, Val, any_set, spread
from kernlint.base.memo import by_identity

# The cause an element the model does not know is reported under (eval/coverage.py).
UNTRACKED = ("unmodelled", "a value kept in a thread-local array")
# Arrays longer than this are not tracked (per-lane values for each element cost memory and time).
MAX_LENGTH = 64


def tracked_type(t: ir.CType) -> bool:
    """A one-dimensional array of scalars or pointers of known length."""
    el = t.pointee
    return (t.kind == "array" and 0 < t.count <= MAX_LENGTH and el is not None
            and el.kind in ("int", "float", "bool", "pointer") and el.size > 0)


_strip = ir.strip_casts  # casts around an expression, implicit and explicit


def escaping_names(bodies: list[object]) -> frozenset[str]:
    """Names used anywhere in `bodies` other than as the array of a plain subscript `name[i]`
    (passed to a call, decayed to a pointer, `&name[i]`, assigned): such arrays are not tracked.
    The union of each body's own (a node is in one body), each found once per body: every evaluation
    of a kernel (launch shapes, re-runs, other kernels of the file) asks about the same functions."""
    out: set[str] = set()
    for body in bodies:
        out |= _escaping_in(body)
    return frozenset(out)


@by_identity(max_entries=4096)
def _escaping_in(body: object) -> frozenset[str]:
    subscripted: set[int] = set()
    escaping: set[str] = set()
    for n in ir.walk(body):
        if isinstance(n, ir.Index):
            b = _strip(n.base)
            if isinstance(b, ir.Ref):
                subscripted.add(id(b))
        elif isinstance(n, ir.Unary) and n.op == "&":
            inner = _strip(n.operand)
            if isinstance(inner, ir.Index) and isinstance(_strip(inner.base), ir.Ref):
                escaping.add(_strip(inner.base).name)  # type: ignore[union-attr]
    for n in ir.walk(body):
        if isinstance(n, ir.Ref) and id(n) not in subscripted and n.kind in ("local", "unknown", "param"):
            escaping.add(n.name)
    return frozenset(escaping)


def subscripted_name(e: ir.Expr) -> str | None:
    """`name` when `e` is `name[i]` on a plain variable."""
    e = _strip(e)
    if isinstance(e, ir.Index):
        b = _strip(e.base)
        if isinstance(b, ir.Ref) and b.kind == "local":
            return b.name
    return None


@by_identity(max_entries=4096)  # asked again at every unknown branch and stopped loop
def stored_arrays(node: object) -> frozenset[str]:
    """Names of arrays `node` writes through a subscript (`a[i] = v`, `a[i] += v`, `a[i]++`)."""
    out: set[str] = set()
    for n in ir.walk(node):
        target = None
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            target = n.lhs
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            target = n.operand
        if target is not None:
            name = subscripted_name(target)
            if name is not None:
                out.add(name)
    return frozenset(out)


class LocalArrays:
    """The tracked arrays' elements: key -> length, key -> (element index -> value). A key is
    (the function activation, the array's name): a helper's array never shadows its caller's."""

    def __init__(self) -> None:
        self.length: dict[object, int] = {}
        self.elems: dict[object, dict[int, Val]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.length

    def declare(self, name: object, length: int, items: list[Val] | None) -> None:
        """A new array (each execution of its declaration): elements from the initializer list
        (the rest zero, as C has it), else none written yet."""
        self.length[name] = length
        if items is None:
            self.elems[name] = {}
            return
        zero = Val(np.zeros((1, 1, 1), dtype=np.int64))
        self.elems[name] = {k: (items[k] if k < len(items) else zero) for k in range(length)}

    def untrack(self, name: object) -> None:
        self.length.pop(name, None)
        self.elems.pop(name, None)

    def forget(self, names: object, why: tuple[str, str] | None = None) -> None:
        """Arrays written where the evaluator cannot tell which value stands: every element unknown."""
        for name in names:  # type: ignore[attr-defined]
            if name in self.length:
                self.elems[name] = {k: Val(None, why=why or UNTRACKED) for k in range(self.length[name])}

    def _lanes(self, name: object, idx: Val, mask: np.ndarray) -> tuple[np.ndarray, list[int]] | None:
        """The index per lane and the elements the active lanes use; None when unknown or out of bounds."""
        if idx.data is None or idx.is_float or not any_set(mask):
            return None
        d = np.asarray(idx.data)
        at = spread(d, mask.shape)
        # One index for every sample and lane (a loop counter, a constant): that element, without
        # np.unique's sort of the active lanes' copies of it.
        ks = [int(d.flat[0])] if d.size == 1 else [int(k) for k in np.unique(at[mask], return_index=True)[0]]
        if ks[0] < 0 or ks[-1] >= self.length[name]:
            return None
        return at, ks

    def store(self, name: object, idx: Val, v: Val, mask: np.ndarray, merge) -> None:  # type: ignore[no-untyped-def]
        """The active lanes `mask` write `v` at `idx`; `merge(old, new, mask)` is the interpreter's."""
        lanes = self._lanes(name, idx, mask)
        if lanes is None:
            self.forget([name], idx.why if idx.data is None else None)
            return
        at, ks = lanes
        elems = self.elems[name]
        for k in ks:
            elems[k] = merge(elems.get(k, UNINIT), v, mask & (at == k))

    def load(self, name: object, idx: Val, mask: np.ndarray) -> Val:
        """The value the active lanes read at `idx` (each its own element); unknown when any
        element read is, or the index is unknown or out of bounds."""
        lanes = self._lanes(name, idx, mask)
        if lanes is None:
            return Val(None, idx.deps, why=idx.why if idx.data is None else UNTRACKED)
        at, ks = lanes
        vals = [self.elems[name].get(k) for k in ks]
        if any(v is None or v.data is None for v in vals):
            bad = next((v for v in vals if v is not None and v.data is None and not v.uninit), None)
            if bad is not None:
                return Val(None, bad.deps | idx.deps, loads=bad.loads, why=bad.why or UNTRACKED, uniform=False)
            return Val(None, idx.deps, why=UNTRACKED)
        first = vals[0]
        deps = idx.deps.union(*(v.deps for v in vals))
        if len(vals) == 1:
            return Val(first.data, deps, first.space, first.root, is_float=first.is_float)
        if any(v.is_float != first.is_float or v.space != first.space or v.root != first.root for v in vals):
            return Val(None, deps, why=UNTRACKED)
        data = np.broadcast_to(np.asarray(first.data), mask.shape).copy()
        for k, v in zip(ks[1:], vals[1:]):
            data = np.where(at == k, np.broadcast_to(np.asarray(v.data), mask.shape), data)
        return Val(data, deps, first.space, first.root, is_float=first.is_float)
