"""JSON: exactly one object, `{"version": ..., "diagnostics": [Diagnostic.to_dict(), ...]}`.

When the run has coverage records, the object also has `"kernels"`: one
`{"name", "path", "line", "coverage": {"status", "accesses", "branches", "access_lines", "reasons"}}`
per kernel (status full/partial/none; accesses and branches as `{"evaluated", "seen"}`), with the
kernel's roofline figures and the costs `kernlint compare` reads (kernlint/checks/roofline.py). Inputs that
could not be linted are listed under `"errors"` (`{"path", "line", "message"}`).

Named `json_` so that it does not shadow the standard library's `json` inside this package.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kernlint.base.diagnostics import Diagnostic
from kernlint.reporters import ReportContext


def jsonable(value: Any) -> Any:
    """Convert what `json` cannot encode by itself (NumPy scalars and arrays, sets, paths).

    Used as `json.dumps(default=...)`: rules store raw analysis numbers in `metrics`, and a
    NumPy integer there must not crash the report.
    """
    if hasattr(value, "tolist"):  # numpy.ndarray and numpy scalar types
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def render(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Return the JSON document, indented by two spaces, with a trailing newline."""
    doc: dict[str, Any] = {"version": ctx.version, "diagnostics": [d.to_dict() for d in diagnostics]}
    if ctx.notes:
        doc["notes"] = list(ctx.notes)  # run-level: checks that were skipped, and why
    if ctx.kernels is not None:
        doc["kernels"] = [_with_roofline(k.to_dict(), ctx.roofline or ()) for k in ctx.kernels]
    if ctx.problems:  # inputs that could not be linted: the report is not a clean bill for them
        doc["errors"] = [{"path": path, "line": line, "message": message} for path, line, message in ctx.problems]
    return json.dumps(doc, indent=2, default=jsonable) + "\n"


def _with_roofline(kernel: dict[str, Any], rooflines: Sequence[Any]) -> dict[str, Any]:
    """Add the kernel's roofline figures (kernlint/checks/roofline.py): those of its first launch shape at the
    top level, every launch under `"launches"` when there are several."""
    mine = [r.to_dict() for r in rooflines if r.path == kernel["path"] and r.kernel == kernel["name"]]
    if mine:
        kernel.update(mine[0])
        if len(mine) > 1:
            kernel["launches"] = mine
    return kernel
