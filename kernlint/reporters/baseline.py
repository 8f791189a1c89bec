"""Baselines: record today's findings so that a gate reports only new ones.

A finding is identified by a fingerprint that survives unrelated edits: it hashes the file (its path
relative to the project root, so a baseline works from any directory), the
rule, the kernel, the text of the flagged line (whitespace-normalised) and the finding's rank among
identical ones, but never the line number, so inserting code above a finding does not make it
"new". SARIF's `partialFingerprints` use the same function.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from kernlint.base.diagnostics import Diagnostic
from kernlint.reporters import source_line

BASELINE_FORMAT = 1  # bump when the fingerprint recipe changes, so old files are refused clearly
FINGERPRINT_VERSION = "v1"


@functools.lru_cache(maxsize=1024)
def _project_root(directory: str) -> str | None:
    from kernlint.project import find_project_root

    root = find_project_root(directory)
    return str(root) if root is not None else None


def project_path(path: str) -> str:
    """Return `path` relative to its project root (nearest pyproject.toml, kernlint.toml or .git), POSIX style.

    So a baseline written from one directory matches a run from another, and `./k.cu`, `k.cu` and
    `/abs/k.cu` are one file. A path outside any project, or standard input, is kept as spelled.
    """
    if path.startswith("<") or path == "-":
        return PurePath(path).as_posix()
    absolute = os.path.abspath(path)
    root = _project_root(os.path.dirname(absolute))
    if root is not None:
        try:
            return PurePath(absolute).relative_to(root).as_posix()
        except ValueError:
            pass
    return PurePath(path).as_posix()


def normalized_line(diag: Diagnostic, source_text: str | None) -> str:
    """Return the flagged line with runs of whitespace collapsed, so re-indenting keeps the hash."""
    text = source_line(source_text, diag.line)
    return " ".join(text.split()) if text else ""


def fingerprint(diag: Diagnostic, source_text: str | None, occurrence: int = 0) -> str:
    """Return the stable fingerprint of `diag` in a file whose text is `source_text`.

    `occurrence` is the rank of `diag` among findings with the same path, code, kernel and
    normalised line (see `fingerprints`), which keeps two identical lines apart.
    """
    parts = (
        FINGERPRINT_VERSION,
        project_path(diag.path),
        diag.code,
        diag.kernel,
        normalized_line(diag, source_text),
        str(occurrence),
    )
    # surrogateescape: a non-UTF-8 file name (bytes kept as surrogates) hashes as its bytes.
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def fingerprints(diags: Sequence[Diagnostic], sources: Mapping[str, str]) -> list[str]:
    """Return the fingerprint of each diagnostic in `diags`, in the same order.

    Identical findings (same path, code, kernel and line text) are ranked by position, so the
    n-th copy keeps its fingerprint when lines move, as long as the copies keep their order.
    """
    order = sorted(range(len(diags)), key=lambda i: (diags[i].line, diags[i].column, i))
    seen: dict[tuple[str, str, str, str], int] = {}
    result = [""] * len(diags)
    for i in order:
        d = diags[i]
        text = sources.get(d.path)
        key = (d.path, d.code, d.kernel, normalized_line(d, text))
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        result[i] = fingerprint(d, text, occurrence)
    return result


def write_baseline(diags: Sequence[Diagnostic], sources: Mapping[str, str]) -> str:
    """Return the JSON text of a baseline holding every finding in `diags`.

    Besides the fingerprint each entry keeps the path, line, code and message, only so that a
    person reading the file (or its diff) can tell which finding it is.
    """
    rows = sorted(zip(fingerprints(diags, sources), diags), key=lambda r: (r[1].path, r[1].line, r[1].code, r[0]))
    entries = [
        {"fingerprint": fp, "path": d.path, "line": d.line, "code": d.code, "message": d.message}
        for fp, d in rows
    ]
    doc = {"kernlint_baseline": BASELINE_FORMAT, "findings": entries}
    return json.dumps(doc, indent=2) + "\n"


def load_baseline(text: str) -> frozenset[str]:
    """Return the fingerprints recorded in baseline JSON `text`.

    Raises ValueError, with a message fit to show the user, when `text` is not a baseline that
    this version of kernlint wrote.
    """
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"baseline is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(doc, dict) or "kernlint_baseline" not in doc:
        raise ValueError("not a kernlint baseline (no \"kernlint_baseline\" key); write one with --write-baseline")
    if doc["kernlint_baseline"] != BASELINE_FORMAT:
        raise ValueError(
            f"baseline format {doc['kernlint_baseline']!r} is not supported "
            f"(expected {BASELINE_FORMAT}); regenerate it with --write-baseline"
        )
    findings = doc.get("findings")
    if not isinstance(findings, list):
        raise ValueError("baseline has no \"findings\" list")
    result: set[str] = set()
    for n, entry in enumerate(findings):
        fp = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fp, str) or not fp:
            raise ValueError(f"baseline entry {n} has no \"fingerprint\" string")
        result.add(fp)
    return frozenset(result)


def filter_new(
    diags: Sequence[Diagnostic], sources: Mapping[str, str], baseline: Iterable[str]
) -> list[Diagnostic]:
    """Return the diagnostics of `diags` whose fingerprints are not in `baseline`, in order.

    Fingerprints are computed over the whole of `diags`, so pass the same set of findings
    (after suppressions, before any other filtering) as when the baseline was written.
    """
    known = frozenset(baseline)
    return [d for fp, d in zip(fingerprints(diags, sources), diags) if fp not in known]
