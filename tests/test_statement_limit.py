"""The front end lowers at most MAX_STATEMENTS statements per function: the rest of the block is one
opaque statement that KL904 names (lines and why), whose suppressions are not called unused, and which
withholds KL104's "only read" claim. A hostile body of 40,000 statements stays cheap."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kernlint.base import deadline
from kernlint.ir import nodes as ir
from kernlint.engine.lint import lint_with_suppressions
from kernlint.frontend import parse_source
from kernlint.frontend.clang_frontend import MAX_STATEMENTS
from kernlint.base.options import LintOptions

sys.path.insert(0, str(Path(__file__).parent))
from fuzzgen import hostile  # noqa: E402

OPTS = LintOptions(resources=False)


def body(n: int, tail: str = "") -> str:
    """A kernel of n + 2 statements: a strided load first (a KL101), n plain copies, then `tail`."""
    lines = ["__global__ void k(const float* a, float* o, float* w) {", "  int i = threadIdx.x;",
             "  o[i] = a[i * 32];"]
    lines += [f"  o[i + {j}] = a[i];" for j in range(n)]
    lines += [tail, "}", ""]
    return "\n".join(lines)


def test_a_function_under_the_limit_is_lowered_whole() -> None:
    tu = parse_source(body(100), "k.cu")
    assert not any(isinstance(s, ir.OpaqueStmt) for s in ir.iter_statements(tu.kernels[0].body))


def test_the_rest_past_the_limit_is_one_opaque_statement_named_by_kl904() -> None:
    n = MAX_STATEMENTS + 500
    text = body(n, "  w[i * 32] = 1;  // kernlint: ignore[KL102]")
    tu = parse_source(text, "k.cu")
    stmts = list(ir.iter_statements(tu.kernels[0].body))
    assert len(stmts) == MAX_STATEMENTS + 1  # the ones lowered (the body's block included) and the rest
    rest = stmts[-1]
    assert isinstance(rest, ir.OpaqueStmt) and rest.reason == ir.TOO_LARGE
    last_line = text.splitlines().index("  w[i * 32] = 1;  // kernlint: ignore[KL102]") + 1
    assert rest.span.end_line == last_line and rest.span.line < last_line
    res = lint_with_suppressions(text, "k.cu", OPTS)
    codes = [d.code for d in res.diagnostics]
    assert "KL101" in codes  # before the limit: analysed
    assert "KL102" not in codes  # past it: not analysed, and said so
    kl904 = [d for d in res.diagnostics if d.code == "KL904"]
    assert len(kl904) == 1 and "past its first 2,000" in kl904[0].message
    assert f"lines {rest.span.line}-{last_line}" in kl904[0].message
    # The suppression on the unanalysed store silenced nothing only because nothing was checked there.
    assert not any(d.code == "KL901" for d in res.diagnostics)
    # `a` is only read in what was lowered, but the rest might write it: no KL104 claim.
    assert "KL104" not in codes


def test_a_suppression_before_the_limit_is_still_judged() -> None:
    text = body(MAX_STATEMENTS + 10).replace("  o[i + 0] = a[i];", "  o[i + 0] = a[i];  // kernlint: ignore[KL102]")
    res = lint_with_suppressions(text, "k.cu", OPTS)
    assert [d.line for d in res.diagnostics if d.code == "KL901"] == [4]


@pytest.mark.slow
def test_forty_thousand_suppressions_cost_a_few_seconds() -> None:
    text = hostile()["h_suppressions.cu"].decode()
    t0 = time.process_time()  # CPU time: the machine's load does not count
    with deadline.running(deadline.steps_for(20)):
        res = lint_with_suppressions(text, "h.cu", OPTS)
        assert not deadline.expired()
    cpu = time.process_time() - t0
    kl904 = [d for d in res.diagnostics if d.code == "KL904"]
    assert len(kl904) == 1 and "work budget" not in kl904[0].message and "past its first 2,000" in kl904[0].message
    assert cpu < 8, cpu  # about 4 s here; lowering alone was 10 s before the statement limit


@pytest.mark.slow
def test_twenty_thousand_uncoalesced_stores_cost_a_few_seconds() -> None:
    """h_findings: each finding's fix advice scanned the whole file for `threadIdx.y` (quadratic)."""
    text = hostile()["h_findings.cu"].decode()
    t0 = time.process_time()
    with deadline.running(deadline.steps_for(20)):
        res = lint_with_suppressions(text, "h.cu", OPTS)
        assert not deadline.expired()
    cpu = time.process_time() - t0
    codes = {d.code for d in res.diagnostics}
    assert {"KL102", "KL904"} <= codes
    assert cpu < 8, cpu  # about 2.5 s here; 14 s of CPU before
