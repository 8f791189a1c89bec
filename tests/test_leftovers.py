"""No temporary file or directory outlives a failure (issue 15): nvcc killed at its timeout, a worker
killed at the file timeout in the middle of a compile or a cache write."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from kernlint.system import leftovers
from kernlint.frontend import resources
from kernlint.system.isolation import Failure, Limits, run_isolated


def _compile_forever(marker: str) -> None:
    """What a worker does mid-compile: its nvcc directory, a cache write under way, a child in its own
    session (nvcc is started so), and then no end."""
    d = Path(tempfile.mkdtemp(prefix=leftovers.nvcc_dir_prefix()))
    (d / "k.cu").write_text("x")
    writes = Path(os.environ["KERNLINT_CACHE_DIR"]) / leftovers.CACHE_TEMP_DIR  # where atomic_write makes it
    writes.mkdir(parents=True, exist_ok=True)
    tempfile.mkstemp(dir=writes, prefix=leftovers.temp_file_prefix(), suffix=".tmp")
    child = subprocess.Popen(["sleep", "120"], start_new_session=True)
    Path(marker).write_text(str(child.pid))
    while True:
        pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_killed_at_the_timeout_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(cache))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    marker = tmp_path / "child.pid"
    # Forked from here, so the worker sees this environment and this module (a forkserver that an earlier
    # test started would have neither).
    import multiprocessing

    from kernlint.system import isolation

    monkeypatch.setattr(isolation, "_context", lambda: multiprocessing.get_context("fork"))
    out = dict(run_isolated(_compile_forever, [str(marker)], workers=1, limits=Limits(timeout_s=1.0, memory_mb=None)))
    assert isinstance(out[0], Failure) and out[0].kind == "timeout"
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)  # the worker's child in its own session was killed with it
    assert list(tmp.iterdir()) == []
    assert [p.name for p in cache.rglob("*") if not p.is_dir()] == []


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_killed_at_its_timeout_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    src = "__global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n"
    # (0.02 s: an idle machine's nvcc compiles this kernel in about 0.2 s, so 0.3 s let it finish)
    kernels, note = resources.exact_resources(src, str(tmp_path / "k.cu"), "sm_80", timeout=0.02)
    assert kernels == {} and note is not None and "timed out" in note
    assert list(tmp.iterdir()) == []  # neither kernlint's directory nor nvcc's tmpxft_* files
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())  # a timeout is not cached
