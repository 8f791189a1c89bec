"""Findings on a kernel's deliberate slow path (the side of a branch that pins a stride or layout) become info.

`if (stride == 1) { ... in[i] ... } else { ... in[i * stride] ... }` is the code's own choice: the
fast path handles the contiguous case and the other side exists for the strided one. A finding there
is real for that case but not a defect to fix (issue 28, item 2), so it is reported as an info that
names the fast path's line. Which branches pin a layout comes from eval/roles.py (`fallback_regions`).
"""
from __future__ import annotations

import dataclasses

from kernlint.ir import nodes as ir
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval import roles


def _inside(d: Diagnostic, fn: ir.Function, first: int, last: int) -> bool:
    """Whether `d` is at a line of `fn`'s file between `first` and `last`, or inlined from a call there."""
    lines = [d.line] if fn.span.line <= d.line <= max(fn.span.end_line, fn.span.line) else []
    calls = (d.metrics or {}).get("called_from", ())
    if calls:
        lines.append(int(calls[0]))  # the kernel's call that inlined the helper holding it
    return any(first <= ln <= last for ln in lines)


def demote(diags: list[Diagnostic], fn: ir.Function, tu: ir.TranslationUnit | None = None) -> list[Diagnostic]:
    """`diags` of kernel `fn` with the warnings on a fallback side turned into infos that say so."""
    if not any(d.severity is Severity.WARNING and d.kernel == fn.name for d in diags):
        return diags  # nothing to demote: the kernel's branches need not be read
    regions = roles.fallback_regions(fn, tu)
    if not regions:
        return diags
    out = []
    for d in diags:
        if d.severity is not Severity.WARNING or d.kernel != fn.name:
            out.append(d)
            continue
        hit = None
        for r in regions:
            if not _inside(d, fn, r.first, r.last):
                continue
            if r.flag and any(x.code == d.code and x.severity is Severity.WARNING and _inside(x, fn, r.fast_line, r.fast_last)
                              for x in diags):
                continue  # a flag's side is the fast one only when it holds no such warning itself
            hit = r
            break
        if hit is None:
            out.append(d)
            continue
        note = (f"severity info: this is the fallback side of a branch on `{hit.cond.lstrip('!')}`: the fast path "
                f"at line {hit.fast_line} handles `{hit.cond}`, and this side is the code's own path for the "
                f"other values (a layout it chose to serve, not a defect to fix)")
        metrics = dict(d.metrics or {})
        metrics["fallback_of"] = {"fast_line": hit.fast_line, "condition": hit.cond}
        out.append(dataclasses.replace(
            d, severity=Severity.INFO, message=f"{d.message} (on the fallback path; the fast path at line "
                                                f"{hit.fast_line} handles `{hit.cond}`)",
            notes=(note,) + tuple(d.notes), metrics=metrics))
    return out
