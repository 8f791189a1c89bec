"""`-j N`: worker processes give the same output as one process, and one bad file never stops the others."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.runner.parallel import FileJob, LintSetup, lint_files

ROOT = Path(__file__).resolve().parent.parent
STRIDED = "__global__ void k(float* x, int s) { x[threadIdx.x * 32] = 0; }\n"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # --no-cache: the second run must lint, not read the first run's results.
    return subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--no-cache", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=600)


def _one_per_rule() -> list[str]:
    """The first fixture file of each rule (`KL101_aos.cu` for KL101): the default run's sample."""
    seen: dict[str, str] = {}
    for p in sorted((ROOT / "fixtures").glob("KL*.cu")):
        seen.setdefault(p.name.split("_")[0], str(p.relative_to(ROOT)))
    return list(seen.values())


@pytest.mark.parametrize("fmt, which, lines", [
    ("text", "one per rule", 20),
    pytest.param("text", "all", 50, marks=pytest.mark.slow),
    pytest.param("json", "all", 50, marks=pytest.mark.slow),
])
def test_two_workers_print_exactly_what_one_process_prints(fmt: str, which: str, lines: int) -> None:
    files = ["fixtures"] if which == "all" else _one_per_rule()
    one = _run("-j", "1", "--format", fmt, *files)
    two = _run("-j", "2", "--format", fmt, *files)
    assert one.stdout.count("\n") > lines  # the fixtures have findings: the comparison is not vacuous
    assert two.stdout == one.stdout
    assert two.stderr == one.stderr
    assert two.returncode == one.returncode


def test_a_bad_file_among_workers_is_reported_and_the_others_linted(tmp_path: Path) -> None:
    files = []
    for i in range(4):
        f = tmp_path / f"k{i}.cu"
        f.write_text(STRIDED)
        files.append(str(f))
    (tmp_path / "k2.cu").write_bytes(b"\x00\x01binary")
    res = _run("-j", "2", "--format", "concise", *files)
    assert res.returncode == 2, res.stderr
    assert f"{files[2]}: error: binary file" in res.stderr
    for i in (0, 1, 3):
        assert f"{files[i]}:1:" in res.stdout and "KL102" in res.stdout


class _DieWhenUnpickled:
    """Kills the worker process that receives it, as a crash inside libclang would."""

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (os._exit, (3,))


def test_a_worker_that_dies_costs_only_its_own_file(tmp_path: Path) -> None:
    from kernlint.checks import ALL_RULES
    from kernlint.settings.config import load_settings
    from kernlint.engine.lint import LintOptions

    paths = []
    for i in range(4):
        f = tmp_path / f"k{i}.cu"
        f.write_text(STRIDED)
        paths.append(str(f))
    common = dict(settings=load_settings(None, ALL_RULES), options=LintOptions(resources=False), no_project=True)
    jobs = [FileJob(p, p, **common) for p in paths]  # type: ignore[arg-type]
    jobs[1] = FileJob(paths[1], paths[1], data=_DieWhenUnpickled(), **common)  # type: ignore[arg-type]
    setup = LintSetup()
    outcomes = list(lint_files(jobs, setup, workers=2))
    assert [o.name for o in outcomes] == paths
    [crash] = outcomes[1].diagnostics
    assert crash.code == "KL900" and crash.severity.label == "error"
    assert "crashed" in crash.message and "exited with status 3" in crash.message
    for i in (0, 2, 3):
        assert not outcomes[i].problems
        assert any(d.code == "KL102" for d in outcomes[i].diagnostics)
