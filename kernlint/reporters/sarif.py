"""SARIF 2.1.0, the format GitHub code scanning and most CI dashboards ingest.

One run; `tool.driver.rules` describes the rules that have results (as ruff does), with the rule's
Markdown doc as help; each result carries its region, a partial fingerprint that survives line
shifts (shared with baselines, see `kernlint.reporters.baseline`), the numbers and assumptions behind the
finding in `properties`, and suggested edits as `fixes`. `tests/test_reporters.py` validates the
output against the OASIS schema vendored beside this file.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote as _quote

from kernlint.checks import docs
from kernlint.reporters.baseline import fingerprints
from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Edit, Severity
from kernlint.reporters import ReportContext
from kernlint.reporters.json_ import jsonable

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "kernlint/v1"
SRCROOT = "%SRCROOT%"  # the uriBaseId GitHub code scanning resolves against the checkout

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def quote(path: str, safe: str) -> str:
    """Percent-encode `path` for a URI; a non-UTF-8 file name's bytes (surrogate escapes) are encoded as bytes."""
    return _quote(path.encode("utf-8", "surrogateescape"), safe=safe)


def artifact_uri(path: str, root: str = "") -> tuple[str, str | None]:
    """Return (uri, uriBaseId) for `path`: relative to %SRCROOT% when possible, else a file URI."""
    pure = PurePath(path)
    if root and not path.startswith("<"):
        # Relative paths are relative to the working directory, which need not be the root.
        absolute = PurePath(os.path.abspath(path))
        try:
            pure = absolute.relative_to(root)
        except ValueError:
            pass  # outside the root: keep the path as given
    posix = pure.as_posix()
    if pure.is_absolute():
        return "file://" + quote(posix if posix.startswith("/") else "/" + posix, safe="/:"), None
    return quote(posix, safe="/"), SRCROOT


def _artifact(path: str, ctx: ReportContext) -> dict[str, Any]:
    uri, base = artifact_uri(path, ctx.root)
    return {"uri": uri, "uriBaseId": base} if base else {"uri": uri}


def help_uri(rule: Rule, tool_uri: str) -> str | None:
    """Return where the rule's doc can be read online, derived from the project's home page."""
    if not tool_uri:
        return None
    base = tool_uri.rstrip("/")
    # A GitHub repository page serves files under /blob/<branch>/; other hosts are assumed to
    # publish the rules/ directory as it is.
    if base.startswith("https://github.com/") and base.count("/") == 4:
        return f"{base}/blob/main/rules/{rule.doc_filename}"
    return f"{base}/rules/{rule.doc_filename}"


def rule_descriptor(rule: Rule, ctx: ReportContext) -> dict[str, Any]:
    """Return the SARIF reportingDescriptor of `rule`, with its doc as help when one ships."""
    try:
        md: str | None = docs.rule_doc(rule.code, [rule])
    except (KeyError, OSError):
        md = None
    full = (docs.doc_section(md, "What it does") if md else None) or rule.summary
    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"category": rule.category, "tags": [rule.category]},
    }
    if md:
        descriptor["help"] = {"text": md, "markdown": md}
    uri = help_uri(rule, ctx.tool_uri)
    if uri:
        descriptor["helpUri"] = uri
    return descriptor


def _placeholder_rule(diag: Diagnostic) -> Rule:
    """Describe a code missing from the catalogue from the diagnostic itself, so the log stays valid."""
    return Rule(code=diag.code, name=diag.name, summary=diag.name.replace("-", " "), severity=diag.severity)


def region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int] | None:
    """Return a SARIF region (1-based, endColumn exclusive), or None for a file-level finding."""
    if line < 1:
        return None
    start_col = max(column, 1)
    last_line = max(end_line, line)
    if last_line == line:
        end_col = end_column if end_column > start_col else start_col + 1
    else:
        end_col = max(end_column, 1)
    return {"startLine": line, "startColumn": start_col, "endLine": last_line, "endColumn": end_col}


def _location(path: str, reg: dict[str, int] | None, ctx: ReportContext) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(path, ctx)}
    if reg:
        physical["region"] = reg
    return physical


def _fix(diag: Diagnostic, edit: Edit, ctx: ReportContext) -> dict[str, Any]:
    """Return one SARIF fix per Edit: each Edit is a self-contained suggestion with its own description."""
    deleted = region(edit.line, edit.column, edit.end_line, edit.end_column) or {"startLine": 1}
    # A zero-width edit (insertion) keeps endColumn == startColumn; `region` would widen it.
    if edit.end_line in (0, edit.line) and edit.end_column == edit.column:
        deleted["endColumn"] = deleted["startColumn"]
    return {
        "description": {"text": edit.description or "suggested fix"},
        "artifactChanges": [
            {
                "artifactLocation": _artifact(diag.path, ctx),
                "replacements": [{"deletedRegion": deleted, "insertedContent": {"text": edit.text}}],
            }
        ],
    }


def result(diag: Diagnostic, rule_index: int, fp: str, ctx: ReportContext) -> dict[str, Any]:
    """Return the SARIF result for `diag`."""
    # Code scanning shows only the message, so the notes and assumptions travel in it too.
    lines = [diag.message, *diag.notes]
    if diag.assumptions:
        lines.append("assuming " + "; ".join(diag.assumptions))
    reg = region(diag.line, diag.column, diag.end_line, diag.end_column)
    location: dict[str, Any] = {"physicalLocation": _location(diag.path, reg, ctx)}
    if diag.kernel:
        location["logicalLocations"] = [{"name": diag.kernel, "kind": "function"}]
    props: dict[str, Any] = {
        "kernel": diag.kernel,
        "metrics": dict(diag.metrics),
        "assumptions": list(diag.assumptions),
        "notes": list(diag.notes),
    }
    if diag.confirmation:
        props["confirmation"] = diag.confirmation
    out: dict[str, Any] = {
        "ruleId": diag.code,
        "ruleIndex": rule_index,
        "level": _LEVEL[diag.severity],
        "message": {"text": "\n".join(lines)},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: fp},
        "properties": props,
    }
    related = diag.metrics.get("related_locations") or ()
    if related:
        # Other accesses with the same root cause (one edit fixes them all), as in KL201's grouping.
        out["relatedLocations"] = [
            {"id": n, "physicalLocation": _location(
                diag.path, region(r["line"], r.get("column", 1), r.get("end_line", 0), r.get("end_column", 0)), ctx),
             "message": {"text": str(r.get("message") or "same root cause")}}
            for n, r in enumerate(related, start=1)]
    if diag.fixes:
        out["fixes"] = [_fix(diag, e, ctx) for e in diag.fixes]
    return out


def build_log(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> dict[str, Any]:
    """Return the SARIF log as a dict (what `render` serialises)."""
    codes = sorted({d.code for d in diagnostics})
    first_diag = {d.code: d for d in reversed(diagnostics)}
    rules = [ctx.rule(code) or _placeholder_rule(first_diag[code]) for code in codes]
    index = {code: i for i, code in enumerate(codes)}
    driver: dict[str, Any] = {
        "name": "kernlint",
        "version": ctx.version,
        "rules": [rule_descriptor(r, ctx) for r in rules],
    }
    if ctx.tool_uri:
        driver["informationUri"] = ctx.tool_uri
    fps = fingerprints(diagnostics, ctx.sources)
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [_invocation(ctx)],
        "columnKind": "unicodeCodePoints",
        "results": [result(d, index[d.code], fp, ctx) for d, fp in zip(diagnostics, fps)],
    }
    if ctx.root:
        # Consumers resolve %SRCROOT%-relative URIs against this; GitHub code scanning substitutes its checkout.
        run["originalUriBaseIds"] = {SRCROOT: {"uri": _dir_uri(ctx.root)}}
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [run],
    }


def _dir_uri(directory: str) -> str:
    """Return the file URI of `directory`, ending in "/" as SARIF requires of a base URI."""
    posix = PurePath(directory).as_posix()
    uri = "file://" + quote(posix if posix.startswith("/") else "/" + posix, safe="/:")
    return uri if uri.endswith("/") else uri + "/"


def _invocation(ctx: ReportContext) -> dict[str, Any]:
    """Return the SARIF invocation: files that could not be linted and run-level notes as notifications."""
    notes: list[dict[str, Any]] = []
    for path, line, message in ctx.problems:
        location: dict[str, Any] = {"physicalLocation": _location(path, region(line, 1, line, 1) if line else None, ctx)}
        notes.append({"level": "error", "message": {"text": message}, "locations": [location]})
    notes.extend({"level": "note", "message": {"text": n}} for n in ctx.notes)
    out: dict[str, Any] = {"executionSuccessful": not ctx.problems}
    if notes:
        out["toolExecutionNotifications"] = notes
    return out


def render(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Return the SARIF log as indented JSON with a trailing newline."""
    return json.dumps(build_log(diagnostics, ctx), indent=2, default=jsonable) + "\n"
