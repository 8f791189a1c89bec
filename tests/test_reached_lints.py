"""A reached file's lint is done once per run and reused by every file reaching it (runner/reached_lints.py),
with the same outcome as doing it again: its budget steps, stderr and index questions replayed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.base import deadline
from kernlint.cli.command import main
from kernlint.base.options import LintOptions
from kernlint.runner import reached_lints
from kernlint.runner.resultcache import Deps, _Recorder

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    reached_lints.clear()
    monkeypatch.setattr(reached_lints, "STATS", {"computed": 0, "reused": 0})


class _NeverKept(dict):
    def __setitem__(self, key: object, value: object) -> None:
        pass


def _run(*paths: Path) -> str:
    res = CliRunner().invoke(main, [*map(str, paths), "--format", "json", "--no-ptxas", "--no-cache"],
                             catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    return res.stdout


def test_two_files_reaching_one_header_kernel_share_one_lint(monkeypatch: pytest.MonkeyPatch) -> None:
    project = PROJECTS / "shared_header"
    files = (project / "a.cu", project / "b.cu")  # (the header itself not in the run: each file lints its kernel)
    shared = _run(*files)
    assert reached_lints.STATS == {"computed": 1, "reused": 1}  # a.cu computes transpose.cuh's, b.cu reuses it
    doc = json.loads(shared)
    assert ("transpose.cuh", 16, "KL201") in [(Path(d["path"]).name, d["line"], d["code"]) for d in doc["diagnostics"]]
    reached_lints.clear()
    monkeypatch.setattr(reached_lints, "_KEPT", _NeverKept())
    assert _run(*files) == shared  # the same output as linting it again for each file
    assert reached_lints.STATS == {"computed": 3, "reused": 1}


class _Index:
    def __init__(self) -> None:
        self.root = "/p"
        self.asked = 0

    def includers_of(self, path: str) -> list[str]:
        self.asked += 1
        return [path + ".cu"]


def _counting(calls: list[int], steps: int = 0, say: str = "", ask: object = None):
    def lint() -> str:
        calls.append(1)
        deadline.charge(steps)
        if say:
            sys.stderr.write(say)
        if ask is not None:
            ask.includers_of("h.cuh")  # type: ignore[attr-defined]
        return f"result {len(calls)}"
    return lint


def test_key_holds_text_path_options_index_and_extra() -> None:
    index = _Index()
    opts = LintOptions(only_kernels=("k",), project=index)
    calls: list[int] = []
    assert reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls)) == "result 1"
    assert reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls)) == "result 1"
    assert len(calls) == 1
    for text, shown, o, extra in [("b", "h.cuh", opts, ()), ("a", "g.cuh", opts, ()),
                                  ("a", "h.cuh", LintOptions(only_kernels=("k",), macros=("X=1",), project=index), ()),
                                  ("a", "h.cuh", LintOptions(only_kernels=("k", "j"), project=index), ()),
                                  ("a", "h.cuh", LintOptions(only_kernels=("k",), project=_Index()), ()),
                                  ("a", "h.cuh", opts, ("sm_90",))]:
        before = len(calls)
        reached_lints.lint_once(text, shown, o, extra, _counting(calls))
        assert len(calls) == before + 1, (text, shown, o, extra)


def test_reuse_charges_the_steps_and_needs_them_left() -> None:
    opts = LintOptions(project=_Index())
    calls: list[int] = []
    with deadline.running(1000):
        reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls, steps=400))
        assert deadline.spent() == 400
    with deadline.running(1000):
        deadline.charge(500)
        reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls, steps=400))
        assert len(calls) == 1 and deadline.spent() == 900  # reused, its steps charged
    with deadline.running(1000):
        deadline.charge(700)
        reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls, steps=400))
        assert len(calls) == 2 and deadline.expired()  # 700 + 400 > 1000: done again, and it ran out


def test_a_lint_that_ran_out_of_budget_is_not_kept() -> None:
    opts = LintOptions(project=_Index())
    calls: list[int] = []
    with deadline.running(100):
        reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls, steps=400))
    reached_lints.lint_once("a", "h.cuh", opts, (), _counting(calls))
    assert len(calls) == 2


def test_stderr_and_index_questions_replayed(capsys: pytest.CaptureFixture[str]) -> None:
    index = _Index()
    first = _Recorder(index, Deps())
    calls: list[int] = []
    reached_lints.lint_once("a", "h.cuh", LintOptions(project=first), (), _counting(calls, say="seen\n", ask=first))
    second = _Recorder(index, Deps())
    reached_lints.lint_once("a", "h.cuh", LintOptions(project=second), (), _counting(calls, say="seen\n", ask=second))
    assert len(calls) == 1 and index.asked == 1
    assert capsys.readouterr().err == "seen\nseen\n"
    assert second._deps.questions == first._deps.questions and second._deps.questions
    assert second._deps.files == first._deps.files and "h.cuh.cu" in second._deps.files
