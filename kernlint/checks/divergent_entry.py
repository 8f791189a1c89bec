"""Regions written for divergent entry: code that forms a group of the lanes that reached it.

`cg::coalesced_threads()`, `cg::labeled_partition(g, key)`, `cg::binary_partition(g, pred)` and
`__activemask()` exist to be called from divergent code: warp-aggregated atomics, per-key reductions,
a partition of a warp by a predicate (CUDA C++ Programming Guide, "Cooperative Groups": coalesced
groups and `binary_partition`/`labeled_partition`). A data-dependent branch whose region uses such a
group (directly, through a helper of the same file, or a group partitioned before the branch) diverges
by design: sorting or binning the items, KL305's remedy, is not what its author left out.

Read from the source text of the region (the branch's lines, and the bodies of the functions it calls
that are defined in the linted file).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir

_GROUP_CALL = lazy_compile(r"\b(coalesced_threads|labeled_partition|binary_partition|__activemask)\s*\(")
_GROUP_VAR = lazy_compile(r"\b([A-Za-z_]\w*)\s*=\s*(?:cg::|cooperative_groups::)?"
                          r"(coalesced_threads|labeled_partition|binary_partition)\s*(?:<[^<>]*>)?\s*\(")


def _text(lines: Sequence[str], first: int, last: int) -> str:
    return "\n".join(re.sub(r"//.*", "", t) for t in lines[max(first, 1) - 1:max(last, first)])


def _called_bodies(node: object, unit: ir.TranslationUnit | None, lines: Sequence[str], depth: int = 0) -> list[tuple[str, str]]:
    """(name, text) of the functions called in `node` whose bodies are in the linted file (two levels)."""
    if unit is None or depth > 1:
        return []
    out = []
    for n in ir.walk(node):
        if isinstance(n, ir.Call) and n.target and n.target in unit.functions:
            fn = unit.functions[n.target]
            sp = fn.span
            last = sp.end_line or sp.line
            if fn.body is None or sp.line < 1 or last > len(lines) or fn.name not in lines[sp.line - 1]:
                continue
            out.append((fn.name, _text(lines, sp.line, last)))
            out.extend(_called_bodies(fn.body, unit, lines, depth + 1))
    return out


def _node_at(fn: ir.Function, span: ir.Span) -> object | None:
    if fn.body is None:
        return None
    for n in ir.walk(fn.body):
        sp = getattr(n, "span", None)
        if isinstance(n, (ir.If, ir.For, ir.While, ir.Switch)) and sp is not None and \
                (sp.line, sp.column) == (span.line, span.column):
            return n
    return None


def group_in_region(fn: ir.Function, unit: ir.TranslationUnit | None, lines: Sequence[str], span: ir.Span) -> str:
    """What in the region at `span` forms a group of the lanes that reached it ("" for nothing)."""
    last = span.end_line or span.line
    if span.line < 1 or last > len(lines):
        return ""
    region = _text(lines, span.line, last)
    m = _GROUP_CALL.search(region)
    if m:
        return f"`{m.group(1)}()` at line {span.line + region[:m.start()].count(chr(10))}"
    node = _node_at(fn, span)
    if node is not None:
        for name, body in _called_bodies(node, unit, lines):
            m = _GROUP_CALL.search(body)
            if m:
                return f"`{m.group(1)}()` in {name}()"
    # A group partitioned before the branch and used under it (`auto odd = cg::binary_partition(tile, x & 1);
    # if (x & 1) { cg::reduce(odd, ...); }`).
    sp = fn.span
    before = _text(lines, sp.line, span.line - 1) if sp.line >= 1 else ""
    for m in _GROUP_VAR.finditer(before):
        if re.search(rf"\b{re.escape(m.group(1))}\b", region):
            return f"the group `{m.group(1)}` from `{m.group(2)}()`"
    return ""
