"""The rule table: every rule kernlint knows, sorted by code (like ruff's codes.rs).

Registration is explicit. Rules whose `check` is set run on each evaluated kernel
(`KernelResult`); the others are produced by their own stage (parsing, occupancy, suppressions).
"""
from __future__ import annotations

from kernlint.checks import coalescing, parse_problems
from kernlint.checks.base import Rule
from kernlint import suppress

_EXTRA: tuple[Rule, ...] = ()
try:  # occupancy rules are optional until their module lands
    from kernlint.checks import occupancy_rules

    _EXTRA = tuple(occupancy_rules.RULES)
except ImportError:  # pragma: no cover
    occupancy_rules = None  # type: ignore[assignment]

ALL_RULES: tuple[Rule, ...] = tuple(sorted(
    (coalescing.KL101, coalescing.KL102, coalescing.KL103, parse_problems.KL900, parse_problems.KL903)
    + _EXTRA + suppress.RULES,
    key=lambda r: r.code,
))

KERNEL_RULES: tuple[Rule, ...] = tuple(r for r in ALL_RULES if r.check is not None)
BY_CODE = {r.code: r for r in ALL_RULES}
BY_NAME = {r.name: r for r in ALL_RULES}
