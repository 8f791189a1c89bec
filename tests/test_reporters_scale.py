"""Every reporter on ~20,000 findings in one large file: linear work (the source is split once, not once
per finding), and every finding reported (issue 15: the reporters split the whole file per finding)."""
from __future__ import annotations

import json
import time

import pytest

from kernlint.checks import ALL_RULES
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.reporters import FORMATS, ReportContext, render

N = 20_000


class CountingText(str):
    """A source text that counts how often it is split into lines."""

    splits = 0

    def split(self, *args, **kwargs):  # type: ignore[override]
        CountingText.splits += 1
        return super().split(*args, **kwargs)

    def splitlines(self, *args, **kwargs):  # type: ignore[override]
        CountingText.splits += 1
        return super().splitlines(*args, **kwargs)


def _case(n: int) -> tuple[list[Diagnostic], ReportContext]:
    path = "src/big.cu"
    body = "".join(f"  o[i * 32 + {k}] = a[i * 64];\n" for k in range(n))
    source = CountingText("__global__ void k(const float* a, float* o) {\n  int i = threadIdx.x;\n" + body + "}\n")
    diags = [Diagnostic(path=path, line=k + 3, column=3, end_line=k + 3, end_column=20 + len(str(k)),
                        code="KL102", name="uncoalesced-global-store", severity=Severity.WARNING,
                        message=f"uncoalesced global store number {k}", kernel="k",
                        notes=("consecutive lanes are 128 bytes apart",))
             for k in range(n)]
    ctx = ReportContext(sources={path: source}, rules=ALL_RULES, color=False, version="0.0", files_checked=1)
    return diags, ctx


def _cpu(fn, *args) -> float:
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_reporter_is_linear_in_the_findings(fmt: str) -> None:
    diags, ctx = _case(N)
    CountingText.splits = 0
    t0 = time.process_time()
    out = render(fmt, diags, ctx)
    big = time.process_time() - t0
    # Not once per finding: at most a few passes over the file for the whole report.
    assert CountingText.splits <= 2, f"{fmt}: the source was split {CountingText.splits} times"
    # Every finding is in the output (the last one too: nothing cut off).
    if fmt == "json":
        assert len(json.loads(out)["diagnostics"]) == N
    elif fmt == "sarif":
        assert len(json.loads(out)["runs"][0]["results"]) == N
    else:
        assert out.count("number ") == N and f"number {N - 1}" in out
    # CPU time grows about linearly: a tenth of the findings in a tenth of the file takes more than
    # a twenty-fifth of the time (quadratic work would make it a hundredth).
    # The best of three runs of each size, so a garbage collection or a busy machine in one run does
    # not decide the ratio.
    big = min(big, *(_cpu(render, fmt, diags, ctx) for _ in range(2)))
    small_diags, small_ctx = _case(N // 10)
    small = min(_cpu(render, fmt, small_diags, small_ctx) for _ in range(3))
    assert big < 25 * max(small, 0.01), f"{fmt}: {N} findings took {big:.2f} s, {N // 10} took {small:.2f} s"
