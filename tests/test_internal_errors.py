"""The policy for the unexpected (`kernlint/base/exitcodes.py`): a bug in kernlint is one line naming the
file and the error, KL905 where a kernel is involved, exit status 2, and a traceback only on request."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernlint.engine import lint as engine
from kernlint.cli.command import main
from kernlint.base.exitcodes import TRACEBACK_ENV

ROOT = Path(__file__).resolve().parent.parent
STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
TWO_KERNELS = (
    "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
    "__global__ void bad(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x]; }\n"
)


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Any:
    # The variable is cleared unless a test sets it: the result must not depend on the caller's shell.
    env = {TRACEBACK_ENV: None, **(env or {})}
    return CliRunner().invoke(main, [*args, "--no-ptxas"], env=env, catch_exceptions=False)


@pytest.fixture()
def two_files(tmp_path: Path) -> tuple[Path, Path]:
    crash, fine = tmp_path / "crash.cu", tmp_path / "fine.cu"
    crash.write_text(STRIDED)
    fine.write_text(STRIDED)
    return crash, fine


def _crash_on(monkeypatch: pytest.MonkeyPatch, victim: str) -> None:
    """Make `engine.lint_source` raise for the file named `victim` (as a bug in the front end would)."""
    real = engine.lint_source

    def lint_source(text: str, path: str, *a: Any, **k: Any) -> Any:
        if Path(path).name == victim:
            raise ValueError("boom: an index the evaluator\nnever expected")
        return real(text, path, *a, **k)

    monkeypatch.setattr(engine, "lint_source", lint_source)


def test_a_crash_in_one_file_is_one_line_exit_2_and_the_other_file_is_reported(
        monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path]) -> None:
    crash, fine = two_files
    _crash_on(monkeypatch, "crash.cu")
    res = invoke([str(crash), str(fine), "--format", "concise"])
    assert res.exit_code == 2, res.output
    errors = [ln for ln in res.stderr.splitlines() if "internal error" in ln]
    assert len(errors) == 1, res.stderr
    assert errors[0].startswith(f"{crash}: error: internal error in kernlint: ValueError: boom: an index the "
                                "evaluator never expected")
    assert "Traceback" not in res.stderr
    assert f"{fine}:1:" in res.stdout and "KL101" in res.stdout  # the other file is still linted
    assert str(crash) not in res.stdout


@pytest.mark.parametrize("how", ["--verbose", "env"])
def test_the_traceback_only_on_request(monkeypatch: pytest.MonkeyPatch, two_files: tuple[Path, Path],
                                       how: str) -> None:
    crash, fine = two_files
    _crash_on(monkeypatch, "crash.cu")
    if how == "env":
        res = invoke([str(crash), str(fine)], env={TRACEBACK_ENV: "1"})
    else:
        res = invoke([str(crash), str(fine), "--verbose"])
    assert res.exit_code == 2
    assert "Traceback (most recent call last)" in res.stderr
    assert "in lint_source" in res.stderr and "ValueError: boom" in res.stderr


def test_a_crash_outside_any_file_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import kernlint.reporters

    def render(*_a: Any, **_k: Any) -> str:
        raise RuntimeError("the reporter fell over")

    monkeypatch.setattr(kernlint.reporters, "render", render)
    path = tmp_path / "k.cu"
    path.write_text(STRIDED)
    res = invoke([str(path)])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    # Not blamed on the last file linted: the failure happened after linting.
    assert lines[0].startswith("kernlint: error: internal error in kernlint: RuntimeError: the reporter fell over")
    assert "--verbose" in lines[0]
    verbose = invoke([str(path), "--verbose"])
    assert verbose.exit_code == 2 and "Traceback (most recent call last)" in verbose.stderr


def test_a_crash_in_one_kernel_is_kl905_and_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = engine.analyse_kernel

    def analyse_kernel(tu: Any, fn: Any, *a: Any, **k: Any) -> Any:
        if fn.name == "bad":
            raise KeyError("unexpected node")
        return real(tu, fn, *a, **k)

    monkeypatch.setattr(engine, "analyse_kernel", analyse_kernel)
    path = tmp_path / "two.cu"
    path.write_text(TWO_KERNELS)
    for fail_on in ("warning", "error"):
        res = invoke([str(path), "--format", "json", "--fail-on", fail_on])
        assert res.exit_code == 2, res.output  # part of the input went unchecked, whatever --fail-on says
        diags = json.loads(res.stdout)["diagnostics"]
        assert {(d["code"], d["kernel"]) for d in diags} == {("KL101", "good"), ("KL905", "bad")}
        kl905 = next(d for d in diags if d["code"] == "KL905")
        assert "KeyError" in kl905["message"]
        assert any(n.startswith("raised at test_internal_errors.py:") for n in kl905["notes"])
        assert not any("Traceback" in n for n in kl905["notes"])
    # A selection that leaves KL905 out must not turn "not analysed" into "no findings", exit 0.
    res = invoke([str(path), "--format", "json", "--select", "KL2"])
    assert res.exit_code == 2, res.output
    assert [d["code"] for d in json.loads(res.stdout)["diagnostics"]] == ["KL905"]
    res = invoke([str(path), "--format", "json", "--select", "KL2", "--ignore", "internal-error"])
    assert res.exit_code == 0 and json.loads(res.stdout)["diagnostics"] == []  # named: the user's call
    res = invoke([str(path), "--format", "json", "--verbose"])
    kl905 = next(d for d in json.loads(res.stdout)["diagnostics"] if d["code"] == "KL905")
    assert any("Traceback (most recent call last)" in n for n in kl905["notes"])


def test_the_console_entry_point_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """`kernlint` (cli.run) ends the process with os._exit: the policy must hold there too."""
    path = tmp_path / "k.cu"
    path.write_text(STRIDED)
    code = ("import kernlint.engine.lint as e\n"
            "def boom(*a, **k): raise ZeroDivisionError('division by zero in a helper')\n"
            "e.lint_source = boom\n"
            "from kernlint.cli.command import run; run()\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != TRACEBACK_ENV}
    proc = subprocess.run([sys.executable, "-c", code, str(path), "--no-ptxas"], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}: error: internal error in kernlint: ZeroDivisionError" in proc.stderr


def test_python_dash_m_kernlint() -> None:
    proc = subprocess.run([sys.executable, "-m", "kernlint", "examples/transpose.cu", "--no-ptxas", "--format",
                           "concise"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "KL102" in proc.stdout


def test_exit_code_counts_unchecked_input_as_an_error() -> None:
    from kernlint.base.diagnostics import Diagnostic, Severity
    from kernlint.base.exitcodes import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, exit_code

    def diag(code: str, severity: Severity) -> Diagnostic:
        return Diagnostic(path="k.cu", line=1, column=1, code=code, name=code, severity=severity, message="m")

    assert exit_code([diag("KL905", Severity.ERROR)], Severity.WARNING, had_errors=False) == EXIT_USAGE
    assert exit_code([diag("KL900", Severity.ERROR)], Severity.WARNING, had_errors=False) == EXIT_USAGE
    # Host code that did not parse (an info KL900) left no kernel unread.
    assert exit_code([diag("KL900", Severity.INFO)], Severity.WARNING, had_errors=False) == EXIT_OK
    assert exit_code([diag("KL405", Severity.ERROR)], Severity.WARNING, had_errors=False) == EXIT_FINDINGS
