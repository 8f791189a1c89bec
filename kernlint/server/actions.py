"""Code actions: apply a finding's computed fix, suppress its code on its line, fix all that re-linting proves.

Edits are computed here as (line, column, end_line, end_column, text) in kernlint's 1-based character
positions (as `kernlint.engine.fix.apply_edits` reads them); `kernlint.server.protocol` turns them into LSP
text edits. A suppression is checked by parsing the edited text with `kernlint.engine.suppress`: the action
is offered only when the comment it adds really silences that code on that line.
"""
from __future__ import annotations

from kernlint.base.diagnostics import Diagnostic, Edit
from kernlint.engine.suppress import parse_suppressions


def fix_edits(d: Diagnostic) -> tuple[Edit, ...]:
    """The finding's own machine-applicable edits (the `fixes` of its JSON)."""
    return tuple(d.fixes)


def fix_title(d: Diagnostic) -> str:
    described = next((e.description for e in d.fixes if e.description), "apply the suggested edit")
    return f"kernlint: {described} ({d.code})"


def _covers(text: str, line: int, code: str) -> bool:
    return any(not s.problem and not s.file_level and line in s.lines and any(c.upper() == code for c in s.codes)
               for s in parse_suppressions(text))


def suppression_edit(text: str, line: int, code: str) -> Edit | None:
    """The edit that silences `code` on `line` of `text` with an inline `kernlint: ignore[CODE]`, or None.

    An `ignore[...]` already on the line gets the code added to its list; else the comment goes at the
    end of the line (`/* */` before a macro's line continuation), or, where a trailing comment would
    not count, alone on the line above (which covers the next line of code).
    """
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    if _covers(text, line, code):
        return None  # already silenced there
    from kernlint.engine.fix import apply_edits

    candidates: list[Edit] = []
    for s in parse_suppressions(text):
        if s.line == line and not s.file_level and not s.problem and s.codes:
            last, col = s.codes[-1], s.columns[-1]
            candidates.append(Edit(line, col + len(last), line, col + len(last), f", {code}",
                                   f"add {code} to the suppression"))
    body = lines[line - 1].rstrip("\r")
    end = len(body) + 1
    if body.rstrip().endswith("\\"):
        at = body.rstrip().rfind("\\") + 1
        candidates.append(Edit(line, at, line, at, f"/* kernlint: ignore[{code}] */ ", f"suppress {code} on this line"))
    else:
        candidates.append(Edit(line, end, line, end, f"  // kernlint: ignore[{code}]", f"suppress {code} on this line"))
    indent = body[: len(body) - len(body.lstrip())]
    candidates.append(Edit(line, 1, line, 1, f"{indent}// kernlint: ignore[{code}]\n", f"suppress {code} on the next line"))
    for edit in candidates:
        new = apply_edits(text, [edit])
        # The comment above shifts the finding's line down by one.
        target = line + 1 if edit.text.endswith("\n") else line
        if _covers(new, target, code):
            return edit
    return None
