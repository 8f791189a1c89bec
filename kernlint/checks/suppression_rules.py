"""The rules about suppression comments themselves (KL901, KL902); kernlint.engine.suppress applies them."""
from __future__ import annotations

from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Severity

UNUSED = Rule(
    code="KL901",
    name="unused-suppression",
    summary="a kernlint: ignore comment names a rule that does not fire there",
    severity=Severity.WARNING,
    category="meta",
)
UNKNOWN = Rule(
    code="KL902",
    name="unknown-code-in-suppression",
    summary="a kernlint: ignore comment names no known rule",
    severity=Severity.WARNING,
    category="meta",
)
RULES: tuple[Rule, ...] = (UNUSED, UNKNOWN)
