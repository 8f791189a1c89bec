"""GitHub Actions workflow commands, which the runner turns into annotations on a pull request.

    ::warning file=k.cu,line=7,col=14,endLine=7,endColumn=18,title=KL101 uncoalesced-global-load::message

Severity maps error -> error, warning -> warning, info -> notice. Errors come first; a span over
several lines carries no columns. Values are escaped as the
runner's own toolkit (`@actions/core`, `escapeData` / `escapeProperty`) does.
"""
from __future__ import annotations

from collections.abc import Sequence

from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.reporters import ReportContext

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape the message part of a workflow command (`%`, CR and LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a `key=value` property (as data, plus `:` and `,`, which delimit properties)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_diagnostic(diag: Diagnostic) -> str:
    """Return the workflow command for `diag`; notes and assumptions follow the message."""
    end_line = max(diag.end_line or diag.line, diag.line)
    props = [("file", diag.path), ("line", str(diag.line))]
    if end_line == diag.line:
        props += [("col", str(diag.column)), ("endLine", str(end_line)),
                  ("endColumn", str(diag.end_column or diag.column))]
    else:
        # GitHub rejects an annotation whose span covers several lines and also gives columns.
        props.append(("endLine", str(end_line)))
    props.append(("title", f"{diag.code} {diag.name}"))
    body = [diag.message, *diag.notes]
    if diag.assumptions:
        body.append("assuming " + "; ".join(diag.assumptions))
    if diag.confirmation:
        body.append(f"GPU confirmation: {diag.confirmation}")
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{_COMMAND[diag.severity]} {joined}::{escape_data(chr(10).join(body))}"


def render(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Return one workflow command per diagnostic, errors first, or an empty string when there are none.

    GitHub shows only the first 10 annotations of each kind per step, so the most severe come first
    (a stable sort: within one severity the order stays by path and line).
    """
    ordered = sorted(diagnostics, key=lambda d: -int(d.severity))
    return "".join(format_diagnostic(d) + "\n" for d in ordered)
