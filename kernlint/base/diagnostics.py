"""Diagnostics: what a rule reports, as frozen data. Printing lives in `kernlint.reporters`."""
from __future__ import annotations

import enum
from dataclasses import field
from typing import Any, Mapping

from kernlint.base.frozen import frozen


class Severity(enum.IntEnum):
    """Ordered severities; `--fail-on` compares against these."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected info, warning or error)") from None


@frozen
class Edit:
    """A machine-applicable suggested edit: replace [start, end) of `path` (1-based line/col) by `text`."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str
    description: str = ""


@frozen
class Diagnostic:
    """One finding at one source location.

    `metrics` holds the numbers behind the message (for KL101: sectors, ideal_sectors, ...);
    `assumptions` the launch shape and sampled values the finding depends on.
    """

    path: str
    line: int
    column: int
    code: str
    name: str
    severity: Severity
    message: str
    kernel: str = ""
    notes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    end_line: int = 0
    end_column: int = 0
    fixes: tuple[Edit, ...] = ()
    confirmation: str = ""  # "", "confirmed", "refuted", "not-run", "found-by-confirm"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form documented in the README."""
        out: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line or self.line,
            "end_column": self.end_column or self.column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "message": self.message,
            "kernel": self.kernel,
            "notes": list(self.notes),
            "assumptions": list(self.assumptions),
            "metrics": dict(self.metrics),
        }
        if self.fixes:
            out["fixes"] = [
                {
                    "line": f.line,
                    "column": f.column,
                    "end_line": f.end_line,
                    "end_column": f.end_column,
                    "text": f.text,
                    "description": f.description,
                }
                for f in self.fixes
            ]
        if self.confirmation:
            out["confirmation"] = self.confirmation
        return out
