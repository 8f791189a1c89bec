"""The real entry points (`python -m kernlint`, the `kernlint` script) end the process without the
interpreter's teardown (`cli.exit_process`): nothing may be lost by that, and a reader that goes away
(`kernlint ... | head -1`) must not turn into an error or change the exit status."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main

ROOT = Path(__file__).resolve().parent.parent
STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
CLEAN = "__global__ void k(const float* a, float* o) { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = a[i]; }\n"
# Both entry points: `python -m kernlint` and the console script's function (pyproject.toml [project.scripts]).
ENTRY_POINTS = {"python -m kernlint": ["-m", "kernlint"],
                "kernlint script": ["-c", "from kernlint.cli.console import run; run()"]}
# The console script's runs repeat the module's with another entry function: they run under `-m slow`.
ENTRIES = ["python -m kernlint", pytest.param("kernlint script", marks=pytest.mark.slow)]
QUIET_WORDS = ("Traceback", "Exception ignored", "internal error", "Broken pipe", "BrokenPipeError")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _kernlint(entry: str, args: list[str], **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *ENTRY_POINTS[entry], "--no-ptxas", *args], env=kwargs.pop("env", _env()),
                          **kwargs)  # type: ignore[call-overload]


@pytest.fixture()
def sources(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("bad.cu", STRIDED), ("good.cu", CLEAN)):
        out[name] = tmp_path / name
        out[name].write_text(text)
    return out


def _fixtures(n: int) -> list[str]:
    return [str(p) for p in sorted((ROOT / "fixtures").glob("KL1*.cu"))[:n]]


@pytest.mark.parametrize("entry", ENTRIES)
def test_all_output_arrives_with_the_status(entry: str, tmp_path: Path) -> None:
    """A report larger than a pipe's buffer arrives whole, the same as an in-process run's, with its status."""
    files = _fixtures(12)
    args = ["--format", "json", "--no-cache", "-j", "2", *files]
    proc = _kernlint(entry, args, capture_output=True, text=True)
    ref = CliRunner().invoke(main, ["--no-ptxas", *args], catch_exceptions=False)
    assert len(proc.stdout) > 65536, "the report should not fit in one pipe buffer"
    assert proc.stdout == ref.stdout
    assert proc.returncode == ref.exit_code == 1, proc.stderr
    assert json.loads(proc.stdout)["diagnostics"]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("case,code", [("bad.cu", 1), ("good.cu", 0), ("missing.cu", 2), ("--explain", 0),
                                       ("--list-rules", 0)])
def test_closed_stdout_is_quiet_and_keeps_the_status(entry: str, case: str, code: int,
                                                     sources: dict[str, Path], tmp_path: Path) -> None:
    """stdout is a pipe nobody reads any more: every write to it fails (EPIPE). The run still ends with the
    status its findings give, and says nothing about the pipe."""
    args = {"--explain": ["--explain", "KL101"], "--list-rules": ["--list-rules"]}.get(
        case, ["--no-cache", "--format", "text", str(sources.get(case, tmp_path / case))])
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = _kernlint(entry, args, stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    assert proc.returncode == code, proc.stderr
    assert not any(word in proc.stderr for word in QUIET_WORDS), proc.stderr


@pytest.mark.parametrize("entry", ENTRIES)
def test_head_reads_one_line(entry: str) -> None:
    """`kernlint ... | head -1`: the reader closes after the first line, while output is still coming."""
    proc = subprocess.Popen([sys.executable, *ENTRY_POINTS[entry], "--no-ptxas", "--no-cache", "--format", "json",
                             *_fixtures(12)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert first.strip() == b"{"
    assert not any(word in err for word in QUIET_WORDS), err


def _marked_processes(mark: str) -> list[int]:
    """Processes of ours whose environment holds `mark` (a run's workers inherit its environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if mark.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize("extra", [["-j", "2"], ["-j", "1"], ["--confirm"]])
def test_no_process_and_no_temporary_directory_is_left(extra: list[str], tmp_path: Path) -> None:
    """Workers end with the run, and so does the shim PCH's temporary directory of a process that parsed
    several files (the in-process --confirm run: it is removed by an exit handler, which must still run)."""
    mark = f"KERNLINT_TEST_RUN={uuid.uuid4().hex}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    key, value = mark.split("=")
    proc = _kernlint("python -m kernlint", ["--no-cache", "--format", "concise", *extra, *_fixtures(4)],
                     capture_output=True, text=True, env=_env(TMPDIR=str(tmp), **{key: value}))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("KL1") >= 4
    assert _marked_processes(mark) == []
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("entry", ENTRIES)
def test_files_written_by_the_run_are_complete(entry: str, sources: dict[str, Path], tmp_path: Path) -> None:
    """A baseline, the result cache's entries and a --fix edit are all on disk when the process is gone."""
    baseline = tmp_path / "baseline.json"
    bad = sources["bad.cu"]
    proc = _kernlint(entry, ["--no-cache", "--write-baseline", str(baseline), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(baseline.read_text())
    proc = _kernlint(entry, ["--no-cache", "--baseline", str(baseline), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    cache = tmp_path / "cache"
    cold = _kernlint(entry, ["--cache-dir", str(cache), "--format", "json", str(bad)], capture_output=True, text=True)
    entries = sorted(p for p in cache.rglob("*") if p.is_file())
    assert entries, "the result cache wrote nothing"
    warm = _kernlint(entry, ["--cache-dir", str(cache), "--format", "json", str(bad)], capture_output=True, text=True)
    assert (warm.stdout, warm.returncode) == (cold.stdout, cold.returncode) == (cold.stdout, 1)
    assert sorted(p for p in cache.rglob("*") if p.is_file()) == entries

    fixable = sorted((ROOT / "fixtures").glob("KL201*.cu"))
    target = tmp_path / "fixme.cu"
    for src in fixable:
        target.write_text(src.read_text())
        diff = _kernlint(entry, ["--no-cache", "--diff", str(target)], capture_output=True, text=True)
        if diff.stdout:
            break
    else:
        pytest.skip("no fixture with a fix")
    before = target.read_text()
    proc = _kernlint(entry, ["--no-cache", "--fix", str(target)], capture_output=True, text=True)
    assert "kernlint: fixed" in proc.stderr
    after = target.read_text()
    assert after != before
    # What --diff showed is what --fix wrote: every added line of the diff is in the file.
    added = [line[1:] for line in diff.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added and all(line in after.splitlines() for line in added)
