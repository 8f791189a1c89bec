"""Rule documentation: find a rule's Markdown doc, pull examples out of it, tabulate the catalogue.

The docs live in the repository's top-level `rules/` directory, which pyproject.toml maps onto the
package `kernlint.rules`, so an installed wheel carries them and `--explain` works anywhere.
"""
from __future__ import annotations

import importlib.resources
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kernlint.checks.base import Rule

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # 3.11+; only needed for annotations

_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CUDA_TAGS = frozenset({"cuda", "cu", "cpp", "c++"})


def _docs_root() -> Traversable:
    """Return the directory holding the rule docs, installed or in a source checkout."""
    try:
        return importlib.resources.files("kernlint.rules")
    except ModuleNotFoundError:
        # Running from a source tree that was never installed: `kernlint.rules` exists only
        # through the package-dir mapping of an install, but the files sit next to the package.
        return Path(__file__).resolve().parents[2] / "rules"


def find_rule(code_or_name: str, rules: Sequence[Rule]) -> Rule:
    """Return the rule whose code (any case) or kebab-case name is `code_or_name`.

    Raises KeyError when no rule matches.
    """
    wanted = code_or_name.strip()
    for rule in rules:
        if rule.code.upper() == wanted.upper() or rule.name == wanted.lower():
            return rule
    raise KeyError(f"unknown rule {code_or_name!r}; `kernlint --list-rules` lists them")


def rule_doc(code_or_name: str, rules: Sequence[Rule]) -> str:
    """Return the Markdown documentation of the rule named by code or name.

    Raises KeyError for an unknown rule and FileNotFoundError when the rule has no doc file
    (a packaging bug: every rule ships one).
    """
    rule = find_rule(code_or_name, rules)
    doc = _docs_root().joinpath(rule.doc_filename)
    if not doc.is_file():
        raise FileNotFoundError(f"no documentation file {rule.doc_filename} for {rule.code}")
    return doc.read_text(encoding="utf-8")


def parse_doc_examples(md: str) -> tuple[str | None, str | None]:
    """Return the first CUDA code block of the Example and of the "Use instead" part of `md`.

    The Example block is the first fenced cuda block after a `## Example` heading and before any
    "Use instead" marker; the "Use instead" block is the first one after a `## Use instead`
    heading or a paragraph line starting with "Use instead" (ruff's docs use the latter form).
    Either is None when absent.
    """
    section = ""  # "example", "instead" or "" for anywhere else
    example: str | None = None
    instead: str | None = None
    lines = md.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        heading = _HEADING.match(line)
        fence = _FENCE_OPEN.match(line.strip())
        if heading:
            title = heading.group(2).strip().rstrip(":").lower()
            if title.startswith("use instead"):
                section = "instead"
            elif title.startswith("example"):
                section = "example"
            else:
                section = ""
        elif line.strip().lower().startswith("use instead") and section in ("example", "instead"):
            section = "instead"
        elif fence:
            marker, tag = fence.group(1), fence.group(2).lower()
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i].rstrip("\r"))
                i += 1
            if tag in _CUDA_TAGS:
                code = "\n".join(body) + "\n"
                if section == "example" and example is None:
                    example = code
                elif section == "instead" and instead is None:
                    instead = code
        i += 1
    return example, instead


def doc_section(md: str, title: str) -> str | None:
    """Return the text under the heading `title` (case-insensitive) up to the next heading."""
    out: list[str] = []
    inside = False
    in_fence = False
    for line in md.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            if inside:
                break
            inside = heading.group(2).strip().rstrip(":").lower() == title.lower()
            continue
        if inside:
            out.append(line.rstrip("\r"))
    text = "\n".join(out).strip()
    return text or None


def rules_table(rules: Sequence[Rule], fixable: Collection[str] | None = None) -> str:
    """Return the rule catalogue as an aligned plain-text table, one rule per line, sorted by code.

    With `fixable` (codes whose findings `--fix` can apply), a "fix" column says which rules can fix.
    """
    if fixable is not None:
        header: tuple[str, ...] = ("code", "name", "severity", "category", "fix", "summary")
        rows = [header] + [
            (r.code, r.name, r.severity.label, r.category, "yes" if r.code in fixable else "-", r.summary)
            for r in sorted(rules, key=lambda r: r.code)
        ]
    else:
        header = ("code", "name", "severity", "category", "summary")
        rows = [header] + [
            (r.code, r.name, r.severity.label, r.category, r.summary)
            for r in sorted(rules, key=lambda r: r.code)
        ]
    widths = [max(len(row[col]) for row in rows) for col in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths)) + "  " + row[-1]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"
