"""One finding per root cause: a kernel's findings that one edit fixes are merged into the worst one.

Inside kernlint (exit status, baselines, `--fix`, the text formats) a root cause is one finding; the
formats that annotate lines (`--format json/sarif/github`) and the language server list every site
(`expand`), each naming the shared fix, so each offending line has its own diagnostic to read, jump
to and suppress.

A rule states what a finding's cause is in `metrics["root_cause"]` (a string; KL201: the array and
how the lanes of the worst request collide; KL101/KL102: the lane stride and access width, i.e. the
thread-to-address mapping). Findings of one kernel with the same code and root cause are one
finding at the worst of them (severity, then the ratio it reports, then the earliest line); the
others become `metrics["related_locations"]` (SARIF `relatedLocations`), and a note lists their
lines. Findings without a root cause pass through unchanged.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kernlint.base.diagnostics import Diagnostic, Severity

MAX_LINES_IN_NOTE = 12

_WHAT = {
    "KL101": "the same thread-to-address mapping makes these loads uncoalesced too (one remapping fixes them all)",
    "KL102": "the same thread-to-address mapping makes these stores uncoalesced too (one remapping fixes them all)",
    "KL201": "the same bank-conflict pattern (the same lanes collide at the same word distance) occurs at",
}


def _ratio(d: Diagnostic) -> float:
    m = d.metrics or {}
    try:
        if "ways" in m:
            return float(m["ways"])
        if m.get("ideal_sectors"):
            return float(m["sectors"]) / float(m["ideal_sectors"])
    except (TypeError, ValueError, ZeroDivisionError):
        return 0.0
    return 0.0


def _related(d: Diagnostic) -> dict[str, object]:
    r: dict[str, object] = {"line": d.line, "column": d.column, "end_line": d.end_line,
                            "end_column": d.end_column, "message": d.message, "severity": d.severity.label}
    if "ways" in d.metrics:
        r["ways"] = d.metrics["ways"]
    if d.metrics.get("called_from"):
        r["called_from"] = list(d.metrics["called_from"])  # type: ignore[call-overload]
    return r


def group(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Merge findings of one kernel that share code and `metrics["root_cause"]` (input order kept)."""
    groups: dict[tuple[str, str, str, str], list[Diagnostic]] = {}
    out: list[Diagnostic | tuple[str, str, str, str]] = []
    for d in diags:
        cause = (d.metrics or {}).get("root_cause")
        if not cause:
            out.append(d)
            continue
        key = (d.path, d.kernel or "", d.code, str(cause))
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append(d)
    merged: list[Diagnostic] = []
    for item in out:
        if isinstance(item, Diagnostic):
            merged.append(item)
            continue
        members = groups[item]
        if len(members) == 1:
            merged.append(members[0])
            continue
        worst = max(members, key=lambda d: (int(d.severity), _ratio(d), -d.line, -d.column))
        related = [r for d in members for r in (d.metrics.get("related_locations") or ())]
        related += [_related(d) for d in members if d is not worst]
        seen: set[tuple[object, ...]] = {_where(worst.line, worst.column, worst.metrics)}
        unique = []
        for r in sorted(related, key=lambda r: (r["line"], r["column"])):  # type: ignore[arg-type,return-value]
            k = _where(r["line"], r["column"], r)
            if k not in seen:
                seen.add(k)
                unique.append(r)
        metrics = dict(worst.metrics)
        metrics["related_locations"] = unique
        merged.append(replace(worst, notes=(*worst.notes, related_note(worst.code, unique)), metrics=metrics))
    return merged


def _where(line: object, column: object, m: object) -> tuple[object, ...]:
    called = tuple(m.get("called_from", ())) if isinstance(m, dict) else ()
    return (line, column, called)


def is_group_note(note: str) -> bool:
    return note.startswith("also at line") or note.startswith(_WHAT["KL201"])


def related_note(code: str, related: Sequence[dict[str, object]]) -> str:
    """'also at lines 3, 4 (inlined from the call at line 7): ...' for a grouped finding's other sites."""
    parts: list[str] = []
    for r in related:
        via = r.get("called_from") or ()
        text = str(r["line"]) + (f" (inlined from the call at line {via[-1]})" if via else "")  # type: ignore[index]
        if text not in parts:
            parts.append(text)
    shown = ", ".join(parts[:MAX_LINES_IN_NOTE])
    if len(parts) > MAX_LINES_IN_NOTE:
        shown += f" and {len(parts) - MAX_LINES_IN_NOTE} more"
    lines = f"line{'s' if len(parts) != 1 else ''} {shown}"
    what = _WHAT.get(code, "the same cause")
    return f"{what}: {lines}" if code == "KL201" else f"also at {lines}: {what}"


def expand(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """One finding per site: each grouped finding, then one finding per related location it lists.

    A related site's finding has its own position, message and severity (as the rule reported it
    before grouping), the worst site's assumptions and fix (the shared edit), and as related
    locations the worst site and the group's other sites; `metrics["grouped_with"]` names the worst.
    Findings without related locations pass through unchanged.
    """
    out: list[Diagnostic] = []
    for d in diags:
        out.append(d)
        related = [r for r in (d.metrics.get("related_locations") or ()) if isinstance(r, dict) and "line" in r]
        if not related:
            continue
        worst = _related(d)
        fix_notes = tuple(n for n in d.notes if n.startswith("fix:"))
        for r in related:
            others = sorted([worst, *(o for o in related if o is not r)],
                            key=lambda o: (o["line"], o["column"]))  # type: ignore[arg-type,return-value]
            metrics: dict[str, object] = {
                "grouped_with": {"line": d.line, "column": d.column},
                "related_locations": others,
            }
            for key in ("ways", "called_from"):
                if key in r:
                    metrics[key] = r[key]
            for key in ("array", "root_cause"):
                if key in d.metrics:
                    metrics[key] = d.metrics[key]
            try:
                severity = Severity.parse(str(r["severity"])) if "severity" in r else d.severity
            except ValueError:
                severity = d.severity
            line, column = int(r["line"]), int(r.get("column") or 1)  # type: ignore[call-overload]
            notes = (*fix_notes, related_note(d.code, others),
                     f"the numbers behind this pattern are those of its worst site, line {d.line}")
            out.append(replace(d, line=line, column=column,
                               end_line=int(r.get("end_line") or line),  # type: ignore[call-overload]
                               end_column=int(r.get("end_column") or column),  # type: ignore[call-overload]
                               severity=severity, message=str(r.get("message") or d.message),
                               notes=notes, metrics=metrics))
    return out
