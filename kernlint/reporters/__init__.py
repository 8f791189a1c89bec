"""Reporters: turn diagnostics into text for one output format.

May import kernlint.confirm and below (the layers: tests/test_layers.py).

Every format is a module with `render(diagnostics, ctx) -> str`; this package picks one by name.
Reporters only build strings: the CLI prints them (`click.echo(out, nl=False)`, since every
non-empty result already ends in a newline) and decides the exit code.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic
from kernlint.eval.coverage import KernelCoverage
from kernlint.base.frozen import frozen

FORMATS: tuple[str, ...] = ("text", "concise", "json", "sarif", "github")
PER_SITE_FORMATS = frozenset({"json", "sarif", "github"})
"""Formats that list every site of a grouped finding as its own finding (kernlint/checks/grouping.py);
the text formats show a root cause once, with its other lines in a note."""

# Modules are imported on first use: a plain `kernlint file.cu` should not pay for the SARIF and
# docs machinery at start-up (the budget is 0.3 s per file including the interpreter).
_MODULES: Mapping[str, str] = {
    "text": "kernlint.reporters.text",
    "concise": "kernlint.reporters.concise",
    "json": "kernlint.reporters.json_",
    "sarif": "kernlint.reporters.sarif",
    "github": "kernlint.reporters.github",
}


@frozen
class ReportContext:
    """What a reporter needs besides the diagnostics.

    `sources` maps each path (as spelled in `Diagnostic.path`) to its text, for code frames and
    fingerprints; `rules` is the rule catalogue (for names, summaries and SARIF descriptors);
    `color` asks for ANSI colour in the text format; `version` is kernlint's version; `tool_uri`
    is the project's home page, used as SARIF `informationUri` and to build rule `helpUri`s;
    `root`, when set, is the directory that absolute paths are made relative to in SARIF;
    `notes` are run-level notes (checks skipped and why) that JSON and SARIF carry in the document;
    `problems` are (path, line, message) of inputs that could not be linted (SARIF records them as
    tool execution notifications); `files_checked` is how many files were linted (0: unknown);
    `kernels`, when set, is one coverage record per kernel analysed (the text summary counts them,
    JSON lists them); None when the caller has none (then those parts are left out); `roofline`
    holds the per-kernel roofline figures, `statistics` asks the text format to print them.
    """

    sources: Mapping[str, str]
    rules: Sequence[Rule]
    color: bool
    version: str
    tool_uri: str = ""
    root: str = ""
    notes: tuple[str, ...] = ()
    problems: tuple[tuple[str, int, str], ...] = ()
    files_checked: int = 0
    kernels: Sequence[KernelCoverage] | None = None
    # kernlint.checks.roofline.Roofline per kernel and launch (JSON merges them into `kernels`); `statistics`
    # asks the text format for the roofline table.
    roofline: Sequence[Any] | None = None
    statistics: bool = False
    # Kernels the files include from the project without reaching them (the summary says so, not "no kernels").
    included_kernels: int = 0
    _by_code: Mapping[str, Rule] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen, so the lookup table is set through object.__setattr__ once, here.
        object.__setattr__(self, "_by_code", {r.code: r for r in self.rules})

    def rule(self, code: str) -> Rule | None:
        """Return the rule with `code`, or None when the catalogue does not know it."""
        return self._by_code.get(code)


def render(fmt: str, diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Render `diagnostics` in format `fmt` (one of FORMATS), sorted by path, line and column.

    In PER_SITE_FORMATS every site of a grouped finding is a finding of its own. Raises ValueError
    for an unknown format name.
    """
    try:
        module_name = _MODULES[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})") from None
    module = importlib.import_module(module_name)
    if fmt in PER_SITE_FORMATS:
        from kernlint.checks.grouping import expand

        diagnostics = expand(diagnostics)
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    result: str = module.render(ordered, ctx)
    return result


_last_split: list = []  # [text, text.split("\n")] of the last source_line call


def source_line(text: str | None, line: int) -> str | None:
    """Return line `line` (1-based) of `text` without its line ending, or None if out of range.

    Lines are split on "\\n" only, as a compiler counts them; `str.splitlines` would also split
    on form feeds and other separators and shift every later line number.
    """
    if text is None or line < 1:
        return None
    # The text last split is kept (by identity): a reporter asks for the lines of one file once per
    # finding, and 20,000 findings must not split the whole file 20,000 times.
    if _last_split and _last_split[0] is text:
        lines = _last_split[1]
    else:
        lines = text.split("\n")
        _last_split[:] = [text, lines]
    if line > len(lines):
        return None
    return lines[line - 1].rstrip("\r")
