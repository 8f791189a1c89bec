"""The rule table: every rule kernlint knows, sorted by code (like ruff's codes.rs).

Registration is explicit. Rules whose `check` is set run on each evaluated kernel
(`KernelResult`); the others are produced by their own stage (parsing, occupancy, suppressions).
"""
from __future__ import annotations

from kernlint.checks import coalescing, parse_problems, shared_banks
from kernlint.checks import data_divergence, divergence, occupancy_rules, read_only
from kernlint.checks.base import Rule
from kernlint.checks import suppression_rules

ALL_RULES: tuple[Rule, ...] = tuple(sorted(
    (coalescing.KL101, coalescing.KL102, coalescing.KL103, shared_banks.KL201, parse_problems.KL900,
     parse_problems.KL903, parse_problems.KL904, parse_problems.KL905)
    + divergence.RULES + read_only.RULES + data_divergence.RULES + occupancy_rules.RULES + suppression_rules.RULES,
    key=lambda r: r.code,
))

KERNEL_RULES: tuple[Rule, ...] = tuple(r for r in ALL_RULES if r.check is not None)
BY_CODE = {r.code: r for r in ALL_RULES}
BY_NAME = {r.name: r for r in ALL_RULES}
