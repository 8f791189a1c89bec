"""Applying suggested edits (`--fix`, `--diff`): only edits proven by linting the edited text again.

A finding's `fixes` are machine-applicable edits (KL201's padded declaration). An edit is applied
only when re-evaluating the edited file shows that the finding is gone (with the accesses grouped
with it) and that nothing new appeared; edits are tried one finding at a time, each on top of the
edits already proven, so one bad edit never blocks the others.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

from kernlint.base.diagnostics import Diagnostic, Edit
from kernlint.base.frozen import frozen

FIXABLE_CODES = frozenset({"KL201"})
"""Rules whose findings carry machine-applicable edits (shown by `--list-rules`)."""


@frozen
class FixOutcome:
    """The result of fixing one file: its new text, the findings fixed, and those left after the fix."""

    path: str
    original: str
    text: str
    fixed: tuple[Diagnostic, ...]
    remaining: tuple[Diagnostic, ...]

    @property
    def changed(self) -> bool:
        return self.text != self.original

    def diff(self) -> str:
        """Unified diff of the change (empty when nothing changed)."""
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True),
                                            self.text.splitlines(keepends=True),
                                            fromfile=f"a/{self.path.lstrip('/')}", tofile=f"b/{self.path.lstrip('/')}"))


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Return `text` with `edits` applied (1-based positions in `text`, end exclusive).

    Duplicates are applied once; raises ValueError for overlapping edits.
    """
    lines = text.split("\n")
    spans = sorted({(_offset(lines, e.line, e.column), _offset(lines, e.end_line or e.line, e.end_column), e.text)
                    for e in edits})
    for (s1, e1, _t1), (s2, _e2, _t2) in zip(spans, spans[1:]):
        if s2 < e1:
            raise ValueError("overlapping edits")
    out = text
    for start, end, new in reversed(spans):
        out = out[:start] + new + out[end:]
    return out


def _key(d: Diagnostic) -> tuple[str, str, int]:
    return (d.code, d.kernel, d.line)


def _lines_of(d: Diagnostic) -> set[tuple[str, str, int]]:
    """The finding's own key and those of the accesses grouped with it (KL201's related locations)."""
    related = d.metrics.get("related_locations") or ()
    return {_key(d)} | {(d.code, d.kernel, int(r["line"])) for r in related if isinstance(r, dict) and "line" in r}


def fix_file(path: str, text: str, diagnostics: Sequence[Diagnostic],
             relint: Callable[[str], Sequence[Diagnostic]]) -> FixOutcome:
    """Apply the edits of `diagnostics` (the findings of `path`) that re-evaluation proves.

    `relint(text)` lints an edited text of the file as the run lints it (same settings, suppressions
    and selection). An edit is kept when, with it and the edits kept before, the findings it fixes
    are gone and every finding left was there before. Edits that change the number of lines are not
    applied (positions of the other findings would move and the proof could not compare them).
    """
    before = {_key(d) for d in diagnostics}
    accepted: list[Edit] = []
    fixed: list[Diagnostic] = []
    current_text, current = text, list(diagnostics)
    for d in diagnostics:
        if not d.fixes or any("\n" in e.text or (e.end_line and e.end_line != e.line) for e in d.fixes):
            continue
        if all(e in accepted for e in d.fixes):
            if not any(_key(x) == _key(d) for x in current):
                fixed.append(d)  # fixed by the same edit as an earlier finding
            continue
        try:
            candidate_text = apply_edits(text, [*accepted, *d.fixes])
        except ValueError:
            continue
        after = list(relint(candidate_text))
        keys = {_key(x) for x in after}
        if keys & _lines_of(d) or not keys <= before:
            continue
        accepted.extend(e for e in d.fixes if e not in accepted)
        fixed.append(d)
        current_text, current = candidate_text, after
    return FixOutcome(path, text, current_text, tuple(fixed), tuple(current))
