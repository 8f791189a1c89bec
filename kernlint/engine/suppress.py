"""Inline suppressions: `// kernlint: ignore[KL101] reason` and `// kernlint: ignore-file[KL2xx]`.

A line suppression silences the named rules on its own line; when the comment is alone on its
line it also covers the next line that has code (comment-only and blank lines are skipped), the
NOLINTNEXTLINE idea without a second keyword. `ignore-file` covers the whole file. Rules are named
by code, kebab-case name or code prefix (`KL2`, `KL2xx`); both `//` and `/* */` comments work, and
text in string literals is never read as a directive. Other `kernlint:` annotations (the launch
shape `// kernlint: block=(32,8)`) are not suppressions and are left alone.

There is no blanket form: a suppression must say what it silences. Stale and mistyped ones are
reported, as ruff's RUF100 does: KL901 unused-suppression for a rule that did not fire where the
comment says, KL902 unknown-code-in-suppression for a name that matches no rule.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from kernlint.base.lazy_re import lazy_compile
from kernlint.checks.base import Rule
from kernlint.checks.suppression_rules import RULES, UNKNOWN, UNUSED
from kernlint.settings.config import selector_known, selector_matches
from kernlint.base.diagnostics import Diagnostic
from kernlint.base.frozen import frozen

_META_CODES = frozenset(r.code for r in RULES)

_DIRECTIVE = lazy_compile(r"kernlint:\s*(ignore[\w-]*)(\s*\[([^\]\n]*)\])?")
_KEYWORDS = ("ignore", "ignore-file")
# Comments that look like a suppression but are not one, so a typo never silently fails to
# suppress: another linter's verb after `kernlint:` (`kernlint: disable[KL101]`), a missing colon
# (`kernlint ignore KL101`), a wrong case (`kernlint: Ignore[KL101]`), or another tool's syntax naming
# a kernlint code (`NOLINT(KL101)`, `noqa: KL101`). The launch annotations (`kernlint: block=...`,
# `grid=`, `define(...)`) do not match.
_VERBS = r"ignore|disable|enable|noqa|nolint|suppress|silence|skip|allow|off"
_LOOKALIKE = lazy_compile(
    rf"\bkernlint(?:\s*[:=]\s*|\s*-\s*|\s+)(?P<verb>(?:{_VERBS})[\w-]*)|"
    r"\b(?P<foreign>noqa|NOLINT(?:NEXTLINE|BEGIN)?)\b[\s:(]*(?=KL\d{3})",
    re.IGNORECASE)
_CODE_WORD = lazy_compile(r"\bKL\d{3}\b|\bKL\d{1,2}(?:x{1,2})?\b|\b[a-z]+(?:-[a-z0-9]+)+\b", re.IGNORECASE)


@frozen
class Suppression:
    """One `kernlint: ignore[...]` or `ignore-file[...]` directive.

    `line`/`column` locate the directive; `codes` are the selectors as written, with the column
    of each in `columns`; `lines` are the lines whose findings it silences (unused for a
    file-level one). `problem` is set for a malformed directive, which silences nothing.
    """

    line: int
    column: int
    codes: tuple[str, ...]
    columns: tuple[int, ...]
    reason: str
    file_level: bool = False
    lines: tuple[int, ...] = ()
    problem: str = ""

    def covers(self, diag: Diagnostic) -> bool:
        """Return whether `diag`'s location is within this suppression's reach (codes aside)."""
        if self.file_level:
            return True
        last = max(diag.end_line, diag.line)
        return any(diag.line <= n <= last for n in self.lines)


@frozen
class _Comment:
    """A comment's body and where it starts (line, column) and ends (line, column of its last char)."""

    text: str
    line: int
    column: int
    end_line: int
    end_column: int


def _scan(text: str) -> tuple[list[_Comment], dict[int, tuple[int, int]]]:
    """Split C/C++ `text` into comments and code.

    Returns the comments and, for each line holding code, the first and last code column.
    String and character literals count as code, so `"// kernlint: ignore[...]"` is no comment.
    """
    comments: list[_Comment] = []
    code: dict[int, tuple[int, int]] = {}
    i, n = 0, len(text)
    line, line_start = 1, 0

    def mark(pos: int) -> None:
        col = pos - line_start + 1
        lo, hi = code.get(line, (col, col))
        code[line] = (min(lo, col), max(hi, col))

    while i < n:
        ch = text[i]
        if ch == "\n":
            line, line_start = line + 1, i + 1
            i += 1
        elif text.startswith(("//", "/*"), i):
            block = text[i + 1] == "*"
            start, start_line, start_col = i, line, i - line_start + 1
            if block:
                close = text.find("*/", i + 2)
                end = n if close < 0 else close + 2
                body = text[i + 2 : close if close >= 0 else n]
            else:
                end = i
                # A backslash at the end of a // comment continues it onto the next line.
                while True:
                    nl = text.find("\n", end)
                    if nl < 0:
                        end = n
                        break
                    if text[nl - 1] == "\\" or text[nl - 2 : nl] == "\\\r":
                        end = nl + 1
                        continue
                    end = nl
                    break
                body = text[i + 2 : end]
            for k in range(start, end):
                if text[k] == "\n":
                    line, line_start = line + 1, k + 1
            comments.append(_Comment(body, start_line, start_col, line, end - line_start))
            i = end
        elif ch == '"' or (ch == "'" and not (i > 0 and text[i - 1].isdigit())):
            # A quote after a digit is a C++14 digit separator (1'000'000), not a char literal.
            mark(i)
            raw = ch == '"' and i > 0 and text[i - 1] == "R"
            if raw:
                paren = text.find("(", i)
                delim = text[i + 1 : paren] if paren >= 0 else ""
                close = text.find(")" + delim + '"', paren + 1) if paren >= 0 else -1
                end = n if close < 0 else close + len(delim) + 2
            else:
                end = i + 1
                while end < n and text[end] not in (ch, "\n"):
                    end += 2 if text[end] == "\\" else 1
                end = min(end + 1, n)
            for k in range(i, end):
                if text[k] == "\n":
                    line, line_start = line + 1, k + 1
                elif not text[k].isspace():
                    mark(k)
            i = end
        else:
            run = _PLAIN_RUN.match(text, i)
            if run is None:  # a lone `/`, or a quote that is a digit separator
                if not ch.isspace():
                    mark(i)
                i += 1
                continue
            # A run of plain code on this line: only its first and last non-blank columns count.
            chunk = run.group()
            lead = len(chunk) - len(chunk.lstrip())
            if lead < len(chunk):
                mark(i + lead)
                mark(i + len(chunk.rstrip()) - 1)
            i = run.end()
    return comments, code


_PLAIN_RUN = lazy_compile(r"[^\n\"'/]+")
"""Characters `_scan` treats one by one as code (not a line end, a quote or a comment opener)."""


def _position(comment: _Comment, offset: int) -> tuple[int, int]:
    """Return the (line, column) of character `offset` of a comment's body."""
    before = comment.text[:offset]
    newlines = before.count("\n")
    if newlines == 0:
        return comment.line, comment.column + 2 + offset  # 2: the "//" or "/*" opener
    return comment.line + newlines, offset - before.rfind("\n")


def parse_suppressions(text: str) -> tuple[Suppression, ...]:
    """Return every suppression directive in the comments of CUDA source `text`, in order."""
    folded = text.lower()
    if "kernlint" not in folded and "noqa" not in folded and "nolint" not in folded:
        return ()  # what _DIRECTIVE and _LOOKALIKE need spelled: no comment can hold one (no scan)
    comments, code = _scan(text)
    code_lines = sorted(code)
    out: list[Suppression] = []
    for comment in comments:
        first_code = code.get(comment.line, (10**9, 0))[0]
        last_code = code.get(comment.end_line, (0, 0))[1]
        alone = first_code > comment.column and last_code <= comment.end_column
        at = bisect.bisect_right(code_lines, comment.end_line)  # not a scan per comment (quadratic)
        following = code_lines[at] if at < len(code_lines) else None
        for match in _DIRECTIVE.finditer(comment.text):
            line, column = _position(comment, match.start())
            keyword, bracket, inner = match.group(1), match.group(2), match.group(3)
            reason = comment.text[match.end() :].split("kernlint:")[0].strip().rstrip("*/").strip()
            codes: list[str] = []
            columns: list[int] = []
            if inner is not None:
                inner_start = match.start(3)
                for part in re.finditer(r"[^,\s]+", inner):
                    codes.append(part.group(0))
                    columns.append(_position(comment, inner_start + part.start())[1])
            problem = ""
            if keyword not in _KEYWORDS:
                problem = f"unknown suppression directive {keyword!r} (use ignore[...] or ignore-file[...])"
            elif not bracket or not codes:
                problem = f"{keyword} must name the rules it silences, e.g. {keyword}[KL101]"
            lines = (line,) if not alone or following is None else (line, following)
            out.append(
                Suppression(
                    line=line,
                    column=column,
                    codes=tuple(codes) if not problem else (),
                    columns=tuple(columns) if not problem else (),
                    reason=reason,
                    file_level=keyword == "ignore-file",
                    lines=lines,
                    problem=problem,
                )
            )
        starts = {m.start() for m in _DIRECTIVE.finditer(comment.text)}
        for look in _LOOKALIKE.finditer(comment.text):
            if look.start() in starts:
                continue  # a real directive (its own problems are reported above)
            line, column = _position(comment, look.start())
            rest = comment.text[look.end(): look.end() + 80]
            named = [c.group(0) for c in _CODE_WORD.finditer(rest)][:4]
            keyword = "ignore-file" if (look.group("verb") or "").lower().endswith("file") else "ignore"
            example = f"kernlint: {keyword}[{','.join(named) if named else 'KL101'}]"
            found = " ".join(look.group(0).split()).rstrip("(: ")
            out.append(Suppression(line=line, column=column, codes=(), columns=(), reason="",
                                   problem=f"{found!r} is not a kernlint suppression and silences nothing; "
                                           f"write `{example}`"))
    return tuple(out)


def _meta(path: str, rule: Rule, line: int, column: int, message: str, width: int = 0) -> Diagnostic:
    return Diagnostic(
        path=path,
        line=line,
        column=column,
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        message=message,
        end_line=line,
        end_column=column + width if width else 0,
    )


def _unknown_message(selector: str) -> str:
    if selector.strip().upper() == "ALL":
        return "blanket suppression 'ALL' is not supported; name the rules to silence"
    return f"{selector!r} in a suppression matches no kernlint rule (see `kernlint --list-rules`)"


def apply_suppressions(
    path: str,
    diagnostics: Sequence[Diagnostic],
    suppressions: Sequence[Suppression],
    rules: Sequence[Rule],
    active_codes: Collection[str] | None = None,
    unanalysed: Sequence[tuple[int, int]] = (),
) -> list[Diagnostic]:
    """Drop the diagnostics of file `path` that `suppressions` silence; report stale ones.

    Diagnostics of other paths pass through untouched. Appended: a KL902 for each selector that
    matches no rule of `rules` (or a malformed directive), and a KL901 for each known selector
    that silenced nothing. When `active_codes` is given (the codes that were checked on this
    file), a selector whose rules were all switched off by configuration is not called unused,
    since disabling a rule should not make its suppressions noisy. KL901/KL902 findings can
    themselves be silenced (`ignore-file[KL901]`). `unanalysed`: (first, last) line ranges of code the
    analysis never looked at (a function past its statement limit): a suppression covering only such
    lines, or a file-level one when there are any, silenced nothing there only because nothing was
    checked, so it is not called unused.
    """
    catalog = list(rules) + [r for r in RULES if r.code not in {x.code for x in rules}]
    memo: dict[str, bool] = {}  # one look-up per distinct selector (40,000 suppressions name one rule)

    def is_known(sel: str) -> bool:
        if sel not in memo:
            memo[sel] = selector_known(sel, catalog, allow_all=False)
        return memo[sel]

    known = [[is_known(sel) for sel in s.codes] for s in suppressions]
    used: set[tuple[int, int]] = set()

    # Suppressions by the lines they cover, so each finding looks only at those that can reach it
    # (a scan of every suppression per finding is quadratic: 40,000 suppressed accesses took minutes).
    file_level = [si for si, sup in enumerate(suppressions) if sup.file_level]
    by_line: dict[int, list[int]] = {}
    for si, sup in enumerate(suppressions):
        if not sup.file_level:
            for n in dict.fromkeys(sup.lines):
                by_line.setdefault(n, []).append(si)
    covered = sorted(by_line)

    def reaching(diag: Diagnostic) -> list[int]:
        last = max(diag.end_line, diag.line)
        found = list(file_level)
        k = bisect.bisect_left(covered, diag.line)
        while k < len(covered) and covered[k] <= last:
            found.extend(by_line[covered[k]])
            k += 1
        return sorted(set(found))

    def silenced(diag: Diagnostic) -> bool:
        hit = False
        for si in reaching(diag):
            sup = suppressions[si]
            for ci, sel in enumerate(sup.codes):
                if known[si][ci] and selector_matches(sel, diag.code, diag.name):
                    used.add((si, ci))
                    hit = True
        return hit

    def matches_meta(sel: str) -> bool:
        return any(selector_matches(sel, r.code, r.name) for r in RULES)

    def unchecked(sup: Suppression) -> bool:
        if not unanalysed:
            return False
        return sup.file_level or bool(sup.lines) and all(any(a <= n <= b for a, b in unanalysed) for n in sup.lines)

    def active(sel: str) -> bool:
        if active_codes is None:
            return True
        return any(selector_matches(sel, r.code, r.name) and r.code in active_codes for r in catalog)

    def unused(si: int, ci: int) -> Diagnostic:
        sup, sel = suppressions[si], suppressions[si].codes[ci]
        rule = next((r for r in catalog if selector_matches(sel, r.code, r.name)), None)
        label = f"{rule.code} ({rule.name})" if rule and sel.upper() in (rule.code, rule.name.upper()) else sel
        where = "in this file" if sup.file_level else f"on line {sup.lines[-1]}"
        return _meta(path, UNUSED, sup.line, sup.columns[ci], f"unused suppression: {label} reports nothing {where}", len(sel))

    def unrelate(diag: Diagnostic) -> Diagnostic:
        # A finding grouped by root cause lists its other sites as related locations: a suppression
        # on one of those lines silences that site (and is used), not the finding.
        related = diag.metrics.get("related_locations") if diag.metrics else None
        if not related or diag.path != path:
            return diag
        left = [r for r in related if not (isinstance(r, dict) and "line" in r and silenced(
            replace(diag, line=int(r["line"]), end_line=int(r.get("end_line") or r["line"]))))]
        if len(left) == len(related):
            return diag
        from kernlint.checks.grouping import is_group_note, related_note

        notes = tuple(n for n in diag.notes if not is_group_note(n))
        if left:
            notes += (related_note(diag.code, left),)
        return replace(diag, notes=notes, metrics={**diag.metrics, "related_locations": left})

    kept = [unrelate(d) for d in diagnostics if d.path != path or not silenced(d)]

    meta: list[Diagnostic] = []
    for si, sup in enumerate(suppressions):
        if sup.problem:
            meta.append(_meta(path, UNKNOWN, sup.line, sup.column, sup.problem))
            continue
        for ci, sel in enumerate(sup.codes):
            if not known[si][ci]:
                meta.append(_meta(path, UNKNOWN, sup.line, sup.columns[ci], _unknown_message(sel), len(sel)))
            elif (si, ci) not in used and not matches_meta(sel) and active(sel) and not unchecked(sup):
                meta.append(unused(si, ci))
    # Meta findings go through the same suppressions; only then can selectors naming KL901/KL902
    # (or a prefix such as KL9xx that covers them) be judged used or not.
    kept_meta = [d for d in meta if not silenced(d)]
    for si, sup in enumerate(suppressions):
        for ci, sel in enumerate(sup.codes):
            if known[si][ci] and (si, ci) not in used and matches_meta(sel) and active(sel) and not unchecked(sup):
                kept_meta.append(unused(si, ci))
    return kept + kept_meta
