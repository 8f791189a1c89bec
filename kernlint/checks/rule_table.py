"""The rule catalogue without the checks: codes, names, severities and summaries, for what needs no analysis.

`--list-rules`, `--explain`, settings, selection and the reporters need only these; importing the
checks themselves loads NumPy and libclang (about 0.25 s). `kernlint.checks.ALL_RULES` is the
authority: tests/test_rule_table.py fails when this table differs from it. After adding or changing
a rule, regenerate this table with `python -m kernlint.checks.rule_table > kernlint/checks/rule_table.py`.
"""
from __future__ import annotations

from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Severity

TABLE: tuple[tuple[str, str, Severity, str, str], ...] = (
    ('KL101', 'uncoalesced-global-load', Severity.WARNING, 'memory',
     'global load touches at least 2x the sectors it needs'),
    ('KL102', 'uncoalesced-global-store', Severity.WARNING, 'memory',
     'global store touches at least 2x the sectors it needs'),
    ('KL103', 'misaligned-global-access', Severity.INFO, 'memory',
     'global access touches more sectors than ideal (under 2x)'),
    ('KL104', 'read-only-not-restrict', Severity.INFO, 'memory',
     'a read-only pointer whose loads are reused is not `const T* __restrict__`'),
    ('KL201', 'shared-bank-conflict', Severity.WARNING, 'memory',
     'shared-memory request hits a bank with two or more distinct words'),
    ('KL301', 'divergent-branch', Severity.WARNING, 'control-flow',
     'a branch splits the active lanes of warps and costs idle lanes'),
    ('KL302', 'divergent-loop', Severity.WARNING, 'control-flow',
     'lanes of a warp run a loop for different numbers of iterations'),
    ('KL303', 'barrier-in-divergent-code', Severity.ERROR, 'synchronisation',
     'a barrier is reached by some but not all threads of its scope'),
    ('KL304', 'full-mask-warp-intrinsic-in-divergent-code', Severity.ERROR, 'synchronisation',
     'a *_sync warp intrinsic names lanes in its mask that do not execute it'),
    ('KL305', 'data-dependent-divergence', Severity.WARNING, 'control-flow',
     'a branch or loop trip count depends on data that lanes of a warp load from different addresses'),
    ('KL306', 'low-active-lanes', Severity.WARNING, 'control-flow',
     'the kernel averages fewer than 24 of 32 active lanes per instruction (its divergence as a whole)'),
    ('KL401', 'low-occupancy', Severity.WARNING, 'occupancy',
     'theoretical occupancy is below the threshold'),
    ('KL402', 'register-spill', Severity.WARNING, 'occupancy',
     'ptxas spills registers to local memory'),
    ('KL403', 'occupancy-cliff', Severity.INFO, 'occupancy',
     'a few more registers or shared bytes drop occupancy a level'),
    ('KL404', 'block-size-not-multiple-of-32', Severity.WARNING, 'occupancy',
     'block size is not a multiple of the warp size'),
    ('KL405', 'shared-memory-exceeds-limit', Severity.ERROR, 'occupancy',
     'shared memory per block exceeds the architecture limit'),
    ('KL900', 'parse-error', Severity.ERROR, 'meta',
     'a kernel (or the file) has a syntax error kernlint could not parse'),
    ('KL901', 'unused-suppression', Severity.WARNING, 'meta',
     'a kernlint: ignore comment names a rule that does not fire there'),
    ('KL902', 'unknown-code-in-suppression', Severity.WARNING, 'meta',
     'a kernlint: ignore comment names no known rule'),
    ('KL903', 'unresolved-names', Severity.INFO, 'meta',
     'a kernel uses names kernlint could not resolve (a missing header?)'),
    ('KL904', 'analysis-incomplete', Severity.INFO, 'meta',
     'part of a kernel was not evaluated (what, why, and how to supply what is missing)'),
    ('KL905', 'internal-error', Severity.ERROR, 'meta',
     'kernlint failed while analysing a kernel (a bug: please report it)'),
)

RULES: tuple[Rule, ...] = tuple(Rule(code, name, summary, severity, None, category)
                                for code, name, severity, category, summary in TABLE)
"""Every rule, sorted by code, with `check` None (the checks are in `kernlint.checks.ALL_RULES`)."""


def _source() -> str:
    from kernlint.checks import ALL_RULES

    rows = "\n".join(f"    ({r.code!r}, {r.name!r}, Severity.{r.severity.name}, {r.category!r},\n     {r.summary!r}),"
                     for r in ALL_RULES)
    with open(__file__, encoding="utf-8") as fh:
        text = fh.read()
    head, _, rest = text.partition("TABLE: tuple[tuple[str, str, Severity, str, str], ...] = (\n")
    _, _, tail = rest.partition("\n)\n")
    return f"{head}TABLE: tuple[tuple[str, str, Severity, str, str], ...] = (\n{rows}\n)\n{tail}"


if __name__ == "__main__":  # pragma: no cover - regenerates the table
    print(_source(), end="")
