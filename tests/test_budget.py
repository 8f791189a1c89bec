"""The per-file work budget: counted in evaluation steps, never in time; when it runs out, what was not
analysed is named (KL904), nothing is lost silently, and the same input gives the same output however
slow or loaded the machine is."""
from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import kernlint.base.deadline as deadline
from kernlint.cli.command import main
from kernlint.engine.lint import LintOptions, analyse_kernel, lint_source
from kernlint.eval.coverage import summary
from kernlint.frontend import parse_source

LOOP = """__global__ void k(const float* a, float* o, int n) {
  for (int j = 0; j < n; ++j) o[threadIdx.x * 32 + j] = a[threadIdx.x];
}
"""
GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def test_the_budget_counts_charged_steps_and_only_inside_a_budgeted_lint() -> None:
    deadline.charge(10**9)  # outside a lint: nothing is counted
    assert not deadline.expired() and deadline.spent() == 0 and deadline.limit() is None
    with deadline.running(None):
        deadline.charge(10**9)
        assert not deadline.expired()
    with deadline.running(100):
        deadline.charge(100)
        assert not deadline.expired() and deadline.spent() == 100
        deadline.charge(1)
        assert deadline.expired()
        with deadline.running(10**9):  # a nested block keeps the outer budget
            assert deadline.limit() == 100
    assert not deadline.expired() and deadline.limit() is None
    assert deadline.steps_for(20) == 1_000_000 and deadline.steps_for(0) is None and deadline.steps_for(None) is None


def test_a_budget_spent_while_the_file_is_read_names_every_kernel() -> None:
    """Out of budget in the front end, each kernel is still found and named: never "no kernels found"."""
    two = LOOP + LOOP.replace("void k(", "void k2(")
    with deadline.running(1):
        res = lint_source(two, "k.cu", LintOptions(resources=False))
    assert res.kernels == ("k", "k2")
    kl904 = [d for d in res.diagnostics if d.code == "KL904"]
    assert [d.kernel for d in kl904] == ["k", "k2"]
    assert all("the whole kernel not analysed" in d.message and "work budget" in d.message for d in kl904)
    assert summary(res.coverage) == "2 kernels: 0 fully analysed, 2 not analysed (KL904)"
    assert not [d for d in res.diagnostics if d.code not in ("KL904", "KL903")]


def test_a_budget_spent_in_the_evaluator_names_the_sites_not_evaluated() -> None:
    tu = parse_source(LOOP, "k.cu")
    [fn] = tu.kernels
    with deadline.running(600):  # the evaluator charges every CLOCK_EVERY (500) steps: it stops at 1,000
        results = analyse_kernel(tu, fn, LintOptions(resources=False, defines=(("n", 100000),)),
                                 tuple(LOOP.splitlines()))
        assert deadline.spent() == 1000
    assert results and any("work budget" in n for n in results[0].notes)
    reasons = {st.why[0] for r in results for st in r.coverage if not st.evaluated}
    assert "time" in reasons  # (the reason's key; its words say "work budget")


def test_kernels_after_the_budget_ran_out_are_named(monkeypatch) -> None:
    import kernlint.engine.lint as engine

    two = LOOP + LOOP.replace("void k(", "void k2(")
    calls = []
    real = engine.analyse_kernel

    def first_then_spent(*args, **kw):
        calls.append(args[1].name)
        out = real(*args, **kw)
        monkeypatch.setattr(deadline, "expired", lambda: True)  # the budget runs out during the first kernel
        return out

    monkeypatch.setattr(engine, "analyse_kernel", first_then_spent)
    res = lint_source(two, "k.cu", LintOptions(resources=False))
    assert calls == ["k"]
    kl904 = [d for d in res.diagnostics if d.code == "KL904"]
    assert any(d.kernel == "k2" and "the whole kernel not analysed" in d.message for d in kl904)
    assert [r.name for r in res.coverage] == ["k", "k2"] and res.coverage[1].status == "none"


@pytest.mark.slow
def test_forty_thousand_suppressed_accesses_finish_within_the_timeout(tmp_path: Path) -> None:
    body = "".join(f"  // kernlint: ignore[KL101]\n  o[i + {k}] = a[i];\n" for k in range(40000))
    (tmp_path / "big.cu").write_text("__global__ void k(const float* a, float* o) {\n  int i = threadIdx.x;\n"
                                     + body + "}\n")
    (tmp_path / "zz_good.cu").write_text(GOOD)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", "concise",
                        "."], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONHASHSEED": "0"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU time of kernlint and its workers: the budget and the timeout count CPU time, so a busy
    # machine stretches the wall clock but not this.
    elapsed = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert "KL900" not in r.stdout, r.stdout[-2000:]  # not killed
    # The front end lowers the first 2,000 statements (ir.MAX_STATEMENTS), and KL904 names the rest; the
    # work budget (a million steps at the default timeout) is not reached: this was 14 s of CPU when all 40,000
    # were lowered and the budget stopped the analysis.
    kl904 = [ln for ln in r.stdout.splitlines() if ln.startswith("big.cu:1:1: KL904")]
    assert len(kl904) == 1 and "past its first 2,000" in kl904[0] and "work budget" not in kl904[0], r.stdout[-2000:]
    first_unanalysed = int(re.search(r"lines (\d+)-(\d+) were not analysed", kl904[0]).group(1))  # type: ignore[union-attr]
    assert "zz_good.cu:1:67: KL101" in r.stdout
    # A suppression that silenced nothing is unused only in code that was analysed.
    unused = [int(m) for m in re.findall(r"^big\.cu:(\d+):\d+: KL901", r.stdout, re.M)]
    assert unused and max(unused) < first_unanalysed
    assert elapsed < 20, elapsed


# Three kernels whose loops over a sampled size run to the evaluator's iteration cap (48): about 2,600
# steps each, so a budget of 5,000 steps runs out in the second kernel.
THREE = "".join(f"""__global__ void k{i}(const float* a, float* o, int n) {{
  float s = 0.f;
  for (int j = 0; j < n; ++j) {{
    s += a[threadIdx.x * 32 + j] * {i + 2}.f;
    if (threadIdx.x % {i + 2} == 0) o[threadIdx.x * 16 + j] = s;
  }}
  o[blockIdx.x * blockDim.x + threadIdx.x] = s;
}}
""" for i in range(3))


def _lint_cli(path: Path, *args: str) -> str:
    r = CliRunner().invoke(main, [str(path), "--no-ptxas", "--no-cache", "--format", "json", *args],
                           catch_exceptions=False)
    return r.output


def test_a_slow_clock_does_not_change_what_is_analysed(tmp_path: Path, monkeypatch) -> None:
    """The same file under a budget that runs out part-way, linted as usual and under a clock that runs
    1,000 s per look (as if the machine were a million times slower, or loaded): identical output."""
    f = tmp_path / "three.cu"
    f.write_text(THREE)
    (tmp_path / "kernlint.toml").write_text("work-budget = 5000\n")
    normal = _lint_cli(f)
    # The budget did run out part-way: the first kernel analysed, the second partly, the third named.
    assert "kernel 'k2': the whole kernel not analysed: the file's work budget (5,000 evaluation steps" in normal
    # The default budget comes from the timeout: 5,000 steps at --timeout 0.1, the same findings.
    (tmp_path / "kernlint.toml").unlink()
    assert _lint_cli(f, "--timeout", "0.1") == normal
    (tmp_path / "kernlint.toml").write_text("work-budget = 5000\n")
    assert '"line": 4' in normal and "KL101" in normal

    ticks = [0.0]

    def slow() -> float:
        ticks[0] += 1000.0
        return ticks[0]

    for name in ("process_time", "monotonic", "perf_counter", "time", "thread_time"):
        monkeypatch.setattr(time, name, slow)
    monkeypatch.setattr(time, "process_time_ns", lambda: int(slow() * 1e9))
    monkeypatch.setattr(time, "monotonic_ns", lambda: int(slow() * 1e9))
    monkeypatch.setattr(time, "perf_counter_ns", lambda: int(slow() * 1e9))
    slowed = _lint_cli(f)
    # (A CPU-time budget, as before, read this clock and found the budget spent before the first kernel.)
    assert slowed == normal
