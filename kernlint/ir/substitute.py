"""Rewriting a function body with some of its parameters replaced by expressions (a rebuilt IR tree).

Used for a reference parameter of class type bound to an element of memory (`advance(ps[i])` with
`void advance(Particle &p)`): the callee's every `p` becomes `*ref` of a pointer to that element, so its
field reads and writes are accesses of the element (eval/interp_calls.py).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from kernlint.ir import nodes as ir


def replace_refs(node: object, replace: Callable[[ir.Ref], "ir.Expr | None"]) -> object:
    """`node` with every `ir.Ref` for which `replace` gives an expression replaced by it; nodes without
    such a reference under them are kept as they are (shared, not copied)."""
    if isinstance(node, ir.Ref):
        new = replace(node)
        return node if new is None else new
    if isinstance(node, tuple):
        items = tuple(replace_refs(n, replace) for n in node)
        return node if all(a is b for a, b in zip(items, node)) else items
    if not dataclasses.is_dataclass(node) or isinstance(node, (ir.CType, ir.Span)):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name, None)
        if value is None or isinstance(value, (str, int, float, bool, ir.CType, ir.Span)):
            continue
        new = replace_refs(value, replace)
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node
