"""Rule docs cannot drift: every rule has one, and its Example fires the rule while Use instead is quiet."""
from __future__ import annotations

import shutil

import pytest

from kernlint.checks import ALL_RULES
from kernlint.checks.docs import parse_doc_examples, rule_doc
from kernlint.engine.lint import LintOptions, lint_with_suppressions

NO_EXAMPLE = {"KL905"}
SECTIONS = ("## What it does", "## Why it matters", "## How kernlint decides", "## Example", "## When to ignore",
            "## References")


def test_rule_table_is_sorted_and_unique() -> None:
    codes = [r.code for r in ALL_RULES]
    names = [r.name for r in ALL_RULES]
    assert codes == sorted(codes)
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    for r in ALL_RULES:
        assert r.name == r.name.lower() and " " not in r.name


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_doc_has_sections_and_examples_behave(rule) -> None:  # type: ignore[no-untyped-def]
    md = rule_doc(rule.code, ALL_RULES)
    assert md.startswith(f"# {rule.name} ({rule.code})")
    for section in SECTIONS:
        assert section in md, f"{rule.code} doc lacks {section}"
    if rule.code in NO_EXAMPLE:
        pytest.skip(f"{rule.code} reports kernlint's own bugs: no source can be written to trigger it")
    bad, good = parse_doc_examples(md)
    assert bad and good, f"{rule.code} doc needs an Example and a Use instead block"
    has_nvcc = shutil.which("nvcc") is not None
    if rule.code == "KL402" and not has_nvcc:
        pytest.skip("KL402 needs ptxas spill counts: nvcc is not on PATH")
    options = LintOptions(resources=rule.code == "KL402")
    fired = {d.code for d in lint_with_suppressions(bad, f"{rule.code}_example.cu", options).diagnostics}
    assert rule.code in fired, f"{rule.code}: the Example does not fire the rule (got {sorted(fired)})"
    quiet = {d.code for d in lint_with_suppressions(good, f"{rule.code}_use_instead.cu", options).diagnostics}
    assert rule.code not in quiet, f"{rule.code}: the Use instead block still fires the rule"
