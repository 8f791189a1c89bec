"""Compiler-style text: location, severity, message and rule, then a code frame and notes.

    kernel.cu:7:14: warning: global load touches 16 sectors; 4 would suffice [KL101 uncoalesced-global-load]
        out[i] = p[i].x;
                 ^~~~
      note: lane 0 -> +0 B, lane 1 -> +16 B
      note: assuming blockDim = (256, 1, 1); width = symbol

Colours follow clang (bold location and message, red errors, yellow warnings, cyan info and notes,
green caret) and are emitted only when the context asks for them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.coverage import summary as coverage_summary
from kernlint.base.inputs import display_path
from kernlint.reporters import ReportContext, source_line

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_SEVERITY_COLOR = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_NOTE = "\x1b[1;36m"
_CARET = "\x1b[1;32m"

# How each confirmation status reads in a note; unknown statuses are shown as they are.
_CONFIRMATION_TEXT = {
    "confirmed": "confirmed on a GPU",
    "refuted": "refuted on a GPU: the measured access pattern does not show the problem",
    "not-run": "GPU confirmation was not run",
    "found-by-confirm": "found by GPU confirmation, not by the static analysis",
}


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color and text else text


def caret_line(line_text: str, column: int, end_column: int = 0) -> str:
    """Return the marker line for `line_text`: `^` under `column`, `~` up to `end_column`.

    Columns are 1-based; `end_column` is exclusive (as in `Edit`) and ignored unless it lies
    past `column`. Tabs before the column are copied so the caret lines up in any tab width.
    """
    col = max(column, 1)
    prefix = "".join("\t" if ch == "\t" else " " for ch in line_text[: col - 1])
    prefix += " " * max(0, col - 1 - len(line_text))
    width = end_column - col if end_column > col else 1
    return prefix + "^" + "~" * (width - 1)


def _confirmation(diag: Diagnostic) -> str | None:
    """Return the note describing the GPU confirmation of `diag`, if there was one."""
    status = diag.confirmation or str(diag.metrics.get("confirmation", "") or "")
    if not status:
        return None
    text = _CONFIRMATION_TEXT.get(status, status)
    measured = _measured(diag.metrics)
    return f"{text} ({measured})" if measured else text


def _measured(metrics: Mapping[str, Any]) -> str:
    """Return "measured sectors=32, ..." from metrics whose keys start with `measured_`."""
    items = [(k.removeprefix("measured_"), v) for k, v in metrics.items() if k.startswith("measured_")]
    return ("measured " + ", ".join(f"{k}={v}" for k, v in items)) if items else ""


def _line(text: str) -> str:
    """`text` on one line: a control character (a newline in a file name that a message or a launch
    site quotes) is written as `\\xNN`, so it cannot forge a diagnostic line."""
    return display_path(text)


def format_diagnostic(diag: Diagnostic, ctx: ReportContext) -> str:
    """Return the lines for one diagnostic, without a trailing newline."""
    c = ctx.color
    sev_color = _SEVERITY_COLOR[diag.severity]
    location = _paint(f"{display_path(diag.path)}:{diag.line}:{diag.column}:", _BOLD, c)
    head = (
        f"{location} {_paint(diag.severity.label + ':', sev_color, c)} "
        f"{_paint(_line(diag.message), _BOLD, c)} [{diag.code} {diag.name}]"
    )
    lines = [head]
    text = source_line(ctx.sources.get(diag.path), diag.line)
    if text is not None and text.strip():
        end = diag.end_column if diag.end_line in (0, diag.line) else len(text) + 1
        lines.append(text)
        lines.append(_paint(caret_line(text, diag.column, end), _CARET, c))
    note = _paint("note:", _NOTE, c)
    lines.extend(f"  {note} {n if n.startswith('Traceback (most recent call last)') else _line(n)}"
                 for n in diag.notes)
    if diag.assumptions:
        lines.append(f"  {note} assuming {_line('; '.join(diag.assumptions))}")
    confirmation = _confirmation(diag)
    if confirmation:
        lines.append(f"  {note} {confirmation}")
    return "\n".join(lines)


def _plural(n: int, word: str) -> str:
    # "info" is a mass noun: "3 info" reads better than "3 infos".
    return f"{n} {word}" if n == 1 or word == "info" else f"{n} {word}s"


def summary(diagnostics: Sequence[Diagnostic], files_checked: int = 0, problems: int = 0) -> str:
    """Return the closing line, as ruff's "Found 3 errors.": counts by severity and files.

    "Found 1 error, 3 warnings, 1 info in 2 files (5 checked)", or "No findings (5 files checked)";
    the number of files checked is left out when unknown (0). Inputs that could not be linted
    (`problems`, their errors printed above) are never a clean bill: "Nothing linted: 1 input could not
    be read (error above)", or the findings line followed by "; 2 inputs could not be linted".
    """
    unread = f"{_plural(problems, 'input')} could not be linted (error{'s' if problems != 1 else ''} above)"
    if problems and not files_checked and not diagnostics:
        return f"Nothing linted: {unread}"
    tail = f"; {unread}" if problems else ""
    return _counts(diagnostics, files_checked) + tail


def _counts(diagnostics: Sequence[Diagnostic], files_checked: int) -> str:
    checked = f" ({_plural(files_checked, 'file')} checked)" if files_checked else ""
    if not diagnostics:
        return f"No findings{checked}"
    counts = {sev: sum(1 for d in diagnostics if d.severity is sev) for sev in Severity}
    parts = [_plural(counts[s], s.label) for s in sorted(Severity, reverse=True) if counts[s]]
    files = len({d.path for d in diagnostics})
    checked = f" ({files_checked} checked)" if files_checked else ""
    return f"Found {', '.join(parts)} in {_plural(files, 'file')}{checked}"


def render(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Return every diagnostic as a compiler-style block, then (when the context has coverage
    records) how many kernels were fully, partly or not analysed, then the summary line."""
    blocks = [format_diagnostic(d, ctx) for d in diagnostics]
    closing = []
    if ctx.kernels is not None and (ctx.kernels or ctx.files_checked or not ctx.problems):
        closing.append(coverage_summary(ctx.kernels, ctx.included_kernels))
    if ctx.statistics and ctx.roofline:
        from kernlint.checks.roofline import table

        closing.append(table(ctx.roofline))
    # The summary comes last, as ruff's "Found N errors." does.
    closing.append(_paint(summary(diagnostics, ctx.files_checked, len(ctx.problems)), _BOLD, ctx.color))
    return "\n".join([*blocks, *closing]) + "\n"
