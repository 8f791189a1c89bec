"""A kernel's events with one `__shared__` array's rows padded, computed from its evaluation where the
padding can change nothing but the addresses of the shared arrays: what KL201's padding search
(checks/shared_banks.py) would get from evaluating the kernel again with the padded declaration.

Why the evaluation again would give these events: the evaluator computes `a[r][c]` as the array's base
+ (r * row length + c) * element size (eval/interp_memory.py), and padding changes only the row length,
so an access whose column `c` lies within its row (0 <= c < row length: `KernelResult.in_row`, on every
active lane) moves from (r * R + c) to (r * (R + pad) + c), and its (r, c) are its offset divided by R.
Arrays allocated after the padded one move by the change of its size rounded to 128 bytes (the
evaluator's allocation). Nothing else moves when no shared address reaches a value: every use of every
shared array is an element access (`a[r][c]`, all its dimensions subscripted; a scalar by name), never
`&a[...]`, `sizeof a` or `a` itself passed on, and all of them are declared in the kernel's body (a
file-scope array may be used by a helper this does not read; an array declared in a helper is never
`in_row`). Then the branches, loop trips and loaded values are those of the first evaluation, and so is
every event but the shared accesses' addresses.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from kernlint.eval.events import MemoryAccess
from kernlint.eval.result import KernelResult
from kernlint.eval.stmt_facts import _strip_implicit
from kernlint.ir import nodes as ir

_ROW = 128  # the evaluator's alignment of each shared array (Interpreter.allocate_shared)


def _rank(t: ir.CType) -> int:
    n = 0
    while t.kind == "array" and t.pointee is not None:
        n += 1
        t = t.pointee
    return n


def predictable(result: KernelResult, root: str) -> bool:
    """Whether `padded_events` gives what evaluating `result`'s kernel again with `root` padded gives."""
    body = result.kernel.body
    if body is None or result.unit is None:
        return False
    ranks = {name: _rank(t) for name, _b, t in result.shared_layout}
    if root not in ranks or ranks[root] < 2 or not set(ranks) <= result.arrays_in_row():
        return False
    if any(name in result.unit.globals for name in ranks):
        return False
    declared = {n.name for n in ir.walk(body) if isinstance(n, ir.VarDecl) and n.shared}
    if not set(ranks) <= declared:
        return False
    if any(isinstance(e, MemoryAccess) and e.space == "shared" and e.via for e in result.events):
        return False
    return _element_uses_only(body, ranks)


def _element_uses_only(body: ir.Block, ranks: dict[str, int]) -> bool:
    """Whether every use of a name in `ranks` is an element access: `a[i][j]` with all its dimensions
    subscripted (a scalar's name alone), never under `&` or `sizeof`."""
    stack: list[object] = [body]
    while stack:
        n = stack.pop()
        if isinstance(n, ir.Unary) and n.op in ("&", "sizeof"):
            if any(isinstance(x, ir.Ref) and x.name in ranks for x in ir.walk(n.operand)):
                return False
        elif isinstance(n, ir.Index):
            indexes: list[object] = []
            e: object = n
            while isinstance(e, ir.Index):
                indexes.append(e.index)
                e = _strip_implicit(e.base)
            if isinstance(e, ir.Ref) and e.name in ranks:
                if len(indexes) != ranks[e.name]:
                    return False
                stack.extend(indexes)
                continue
        elif isinstance(n, ir.Ref) and n.name in ranks and ranks[n.name] != 0:
            return False
        stack.extend(ir.children(n))
    return True


def padded_events(result: KernelResult, root: str, padded: ir.CType) -> list[object]:
    """`result`'s events with `root` declared as `padded` (its innermost dimension grown or shrunk), where
    `predictable` holds."""
    layout = {name: (base, t) for name, base, t in result.shared_layout}
    base, t = layout[root]
    row = t
    while row.pointee is not None and row.pointee.kind == "array":
        row = row.pointee
    length, esize = row.count, row.pointee.size  # type: ignore[union-attr]
    inner = padded
    while inner.pointee is not None and inner.pointee.kind == "array":
        inner = inner.pointee
    new_length = inner.count
    moved = _aligned(padded.size) - _aligned(t.size)
    after = {name for name, (b, _t) in layout.items() if b > base}
    out: list[object] = []
    for e in result.events:
        if isinstance(e, MemoryAccess) and e.space == "shared":
            if e.root == root:
                off = e.address - base
                element = off // esize
                r, c = element // length, element % length
                e = _with_address(e, base + (r * new_length + c) * esize + (off - element * esize))
            elif e.root in after and moved:
                e = _with_address(e, e.address + moved)
        out.append(e)
    return out


def _aligned(size: int) -> int:
    return ((size + _ROW - 1) // _ROW) * _ROW + (_ROW if size == 0 else 0)


def _with_address(e: MemoryAccess, address: np.ndarray) -> MemoryAccess:
    return dataclasses.replace(e, address=address)
