"""The rule table: every rule kernlint knows, sorted by code (like ruff's codes.rs).

May import kernlint.eval and below (the layers: tests/test_layers.py).

Registration is explicit. Rules whose `check` is set run on each evaluated kernel
(`KernelResult`); the others are produced by their own stage (parsing, occupancy, suppressions).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernlint.checks.base import Rule

ALL_RULES: tuple["Rule", ...]
KERNEL_RULES: tuple["Rule", ...]
BY_CODE: dict[str, "Rule"]
BY_NAME: dict[str, "Rule"]


def _load() -> None:
    # Loaded on first use (module __getattr__ below): the checks import NumPy and libclang, which
    # `--list-rules`, `--explain` and cached runs do without (they use kernlint.checks.rule_table).
    from kernlint.checks import coalescing, parse_problems, shared_banks
    from kernlint.checks import data_divergence, divergence, kernel_lanes, occupancy_rules, read_only
    from kernlint.checks import suppression_rules

    all_rules: tuple[Rule, ...] = tuple(sorted(
        (coalescing.KL101, coalescing.KL102, coalescing.KL103, shared_banks.KL201, parse_problems.KL900,
         parse_problems.KL903, parse_problems.KL904, parse_problems.KL905)
        + divergence.RULES + kernel_lanes.RULES + read_only.RULES + data_divergence.RULES + occupancy_rules.RULES + suppression_rules.RULES,
        key=lambda r: r.code,
    ))
    globals().update(
        ALL_RULES=all_rules,
        KERNEL_RULES=tuple(r for r in all_rules if r.check is not None),
        BY_CODE={r.code: r for r in all_rules},
        BY_NAME={r.name: r for r in all_rules},
    )


def __getattr__(name: str) -> Any:
    if name in ("ALL_RULES", "KERNEL_RULES", "BY_CODE", "BY_NAME"):
        _load()
        return globals()[name]
    raise AttributeError(f"module 'kernlint.checks' has no attribute {name!r}")
