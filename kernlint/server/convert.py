"""kernlint findings as LSP diagnostics: positions, severity, code and its doc link, related locations.

kernlint counts lines and columns from 1, a column in bytes of the UTF-8 line as clang does; LSP
counts from 0, a character in UTF-16 code units (the protocol's default encoding). Related
information is the other sites of a grouped finding (kernlint/checks/grouping.py) and the launch
the finding's shape came from, when an assumption names one ("launch at runner.cu:5").
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types

from kernlint.base.diagnostics import Diagnostic, Severity

SOURCE = "kernlint"
_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
             Severity.INFO: types.DiagnosticSeverity.Information}
_LAUNCH_RE = re.compile(r"\blaunch at (?:line (\d+)|([^\s:;()]+):(\d+))")


def path_to_uri(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri()


def utf16_column(line_text: str, byte_column: int) -> int:
    """The 0-based UTF-16 column of 1-based byte column `byte_column` in `line_text`."""
    prefix = line_text.encode("utf-8", "surrogatepass")[: max(byte_column - 1, 0)].decode("utf-8", "ignore")
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def char_utf16_column(line_text: str, char_column: int) -> int:
    """The 0-based UTF-16 column of 1-based character column `char_column` (edits count characters)."""
    return len(line_text[: max(char_column - 1, 0)].encode("utf-16-le", "surrogatepass")) // 2


def _line(lines: Sequence[str], n: int) -> str:
    return lines[n - 1] if 1 <= n <= len(lines) else ""


def position(lines: Sequence[str], line: int, column: int, chars: bool = False) -> types.Position:
    """The LSP position of kernlint's 1-based (`line`, `column`); `chars`: the column counts characters."""
    line = max(line, 1)
    text = _line(lines, line)
    col = char_utf16_column(text, column) if chars else utf16_column(text, column)
    return types.Position(line=line - 1, character=col)


def span_range(lines: Sequence[str], line: int, column: int, end_line: int = 0, end_column: int = 0) -> types.Range:
    """The LSP range of a kernlint span; an empty span covers the rest of its line (an editor shows nothing
    for a zero-width range on some clients)."""
    start = position(lines, line, column or 1)
    end_line = end_line or line
    if end_line < line or (end_line == line and (end_column or 0) <= (column or 1)):
        text = _line(lines, line)
        return types.Range(start=start, end=types.Position(line=line - 1, character=max(
            start.character, len(text.encode("utf-16-le", "surrogatepass")) // 2)))
    return types.Range(start=start, end=position(lines, end_line, end_column))


def doc_uri(code: str) -> str | None:
    """Where the rule's doc can be read: the Markdown file kernlint ships (rules/KLxxx.md)."""
    from kernlint.checks.docs import _docs_root, find_rule
    from kernlint.checks.rule_table import RULES

    try:
        rule = find_rule(code, RULES)
        doc = _docs_root().joinpath(rule.doc_filename)
        return Path(str(doc)).resolve().as_uri() if doc.is_file() else None
    except (KeyError, OSError, ValueError):
        return None


def related_information(d: Diagnostic, uri: str, lines: Sequence[str]) -> list[types.DiagnosticRelatedInformation]:
    """The other sites of `d`'s root cause, then the launch its shape came from."""
    out = []
    for r in d.metrics.get("related_locations") or ():
        if not isinstance(r, dict) or "line" not in r:
            continue
        rng = span_range(lines, int(r["line"]), int(r.get("column") or 1), int(r.get("end_line") or 0),
                         int(r.get("end_column") or 0))
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=rng),
            message=f"same pattern: {r.get('message') or 'the same root cause'}"))
    seen: set[tuple[str, int]] = set()
    here = os.path.dirname(os.path.abspath(d.path))
    for a in d.assumptions:
        for m in _LAUNCH_RE.finditer(a):
            if m.group(1):
                target, line = uri, int(m.group(1))
                target_lines = lines
            else:
                p = os.path.join(here, m.group(2))
                if not os.path.isfile(p):
                    continue
                target, line = path_to_uri(p), int(m.group(3))
                target_lines = ()
            if (target, line) in seen:
                continue
            seen.add((target, line))
            pos = types.Position(line=line - 1, character=0)
            end = types.Position(line=line - 1, character=len(_line(target_lines, line)) if target_lines else 0)
            out.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=target, range=types.Range(start=pos, end=end)),
                message=f"the launch shape came from here: {a}"))
    return out


def to_lsp(d: Diagnostic, uri: str, lines: Sequence[str], related: bool = True, link: bool = True) -> types.Diagnostic:
    """The LSP diagnostic of finding `d` of the document `uri` whose text is `lines`; `related` and `link`:
    with related information and the code's doc link (what the client says it supports)."""
    href = doc_uri(d.code) if link else None
    data: dict[str, Any] = {"code": d.code, "line": d.line, "column": d.column, "kernel": d.kernel}
    return types.Diagnostic(
        range=span_range(lines, d.line, d.column, d.end_line, d.end_column),
        message=d.message,
        severity=_SEVERITY[d.severity],
        code=d.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related_information(d, uri, lines) or None if related else None,
        data=data,
    )


def problem_to_lsp(line: int, message: str, lines: Sequence[str]) -> types.Diagnostic:
    """An input problem (bad config, unreadable text) as an error diagnostic at its line (or the first)."""
    n = line if 1 <= line <= max(len(lines), 1) else 1
    return types.Diagnostic(range=span_range(lines, n, 1), message=message, severity=types.DiagnosticSeverity.Error,
                            source=SOURCE)
