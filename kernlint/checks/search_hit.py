"""Bracket tests of a parallel search: `a[t] <= key && key < a[t + 1]` with one key for the warp.

Each lane tests whether the key falls into its interval of a sorted array (a B-tree node's keys, bin
boundaries): the intervals do not overlap, so at most one lane takes the branch, and what it runs is
the search's hit (record the slot). That is a single-lane election decided by data, which KL301 keeps
quiet for thread indices; KL305 makes it an info. Read from the IR of the condition: a conjunction
that bounds `a[i]` from one side and `a[i + 1]` from the other by the same expression, which uses no
thread index and none of the index's names.
"""
from __future__ import annotations

from kernlint.ir import nodes as ir

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


_strip = ir.strip_casts  # casts around an expression, implicit and explicit


def canon(e: object) -> str:
    """A structural text of an expression, without spans and casts."""
    e = _strip(e)
    if isinstance(e, ir.Ref):
        return e.name
    if isinstance(e, ir.Lit):
        return repr(e.value)
    if isinstance(e, ir.Binary):
        return f"({canon(e.lhs)}{e.op}{canon(e.rhs)})"
    if isinstance(e, ir.Unary):
        return f"{e.op}({canon(e.operand)})"
    if isinstance(e, ir.Index):
        return f"{canon(e.base)}[{canon(e.index)}]"
    if isinstance(e, ir.Member):
        return f"{canon(e.base)}.{e.field}"
    return f"<{type(e).__name__}@{id(e)}>"  # anything else never matches another expression


def _conjuncts(e: object) -> list[object]:
    e = _strip(e)
    if isinstance(e, ir.Binary) and e.op == "&&":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _bounds(c: object) -> list[tuple[ir.Index, str, object]]:
    """Each reading (element, 'below' | 'above', key) of a comparison: the element is at most / above the key
    (both sides are tried as the element when both are subscripts)."""
    c = _strip(c)
    if not isinstance(c, ir.Binary) or c.op not in _FLIP:
        return []
    lhs, rhs = _strip(c.lhs), _strip(c.rhs)
    out: list[tuple[ir.Index, str, object]] = []
    if isinstance(lhs, ir.Index):
        out.append((lhs, "below" if c.op in ("<", "<=") else "above", rhs))
    if isinstance(rhs, ir.Index):
        out.append((rhs, "below" if _FLIP[c.op] in ("<", "<=") else "above", lhs))
    return out


def _next_index(a: object, b: object) -> bool:
    """`b` is `a + 1`."""
    b = _strip(b)
    return isinstance(b, ir.Binary) and b.op == "+" and isinstance(_strip(b.rhs), ir.Lit) and \
        _strip(b.rhs).value == 1 and canon(b.lhs) == canon(a)  # type: ignore[attr-defined]


def _names(e: object) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Ref)}


def is_bracket_test(cond: object) -> bool:
    """Whether `cond` bounds adjacent elements `a[i]` and `a[i + 1]` from opposite sides by one key."""
    found = [b for c in _conjuncts(cond) for b in _bounds(c)]
    for lo_el, lo_side, key in found:
        if lo_side != "below":
            continue
        for hi_el, hi_side, key2 in found:
            if hi_side != "above" or canon(key) != canon(key2):
                continue
            if canon(lo_el.base) != canon(hi_el.base) or not _next_index(lo_el.index, hi_el.index):
                continue
            used = _names(key)
            if "threadIdx" in canon(key) or used & _names(lo_el.index):
                continue
            return True
    return False
