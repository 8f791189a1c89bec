"""Worker isolation: a crash, a timeout or memory exhaustion costs one file (KL900), never the run."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernlint.system.isolation import Failure, Limits, run_isolated

GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
BODY = "__global__ void k(const float* a, float* o) {{\n  int i = threadIdx.x;\n{}\n}}\n"


def _kernlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", "concise", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONHASHSEED": "0"})


def test_results_come_back_in_input_order_and_failures_are_named() -> None:
    # Builtins only, so any start method can run them: abs is work, string_at(0) a segfault,
    # bytearray(4 GiB) more than the memory limit, sleep(60) more than the timeout.
    tasks = [(abs, -1), (ctypes.string_at, 0), (abs, -2), (bytearray, 4 << 30), (time.sleep, 60), (abs, -3)]
    t0 = time.monotonic()
    # (A short timeout: the sleeping task is given up after WALL_FACTOR of them, and the test waits for it.)
    out = dict(run_isolated(_call, tasks, workers=2, limits=Limits(timeout_s=1.5, memory_mb=1024)))
    assert time.monotonic() - t0 < 30
    assert [out[0], out[2], out[5]] == [1, 2, 3]
    assert isinstance(out[1], Failure) and out[1].kind == "crash" and "SIGSEGV" in out[1].detail
    assert isinstance(out[3], Failure) and out[3].kind == "memory"
    # A sleeping worker uses no CPU: the wall-clock backstop (WALL_FACTOR timeouts) gives it up.
    assert isinstance(out[4], Failure) and out[4].kind == "timeout" and "within 6 s (blocked" in out[4].detail
    assert "not computing" in out[4].detail


def test_the_timeout_counts_cpu_time_not_the_wall_clock() -> None:
    """A busy worker is stopped after `timeout` seconds of its own CPU time; a slow machine (or one
    that waits) does not make a file fail sooner."""
    from kernlint.system.isolation import cpu_seconds

    import os
    before = cpu_seconds(os.getpid())
    x = 0
    t0 = time.process_time()
    while time.process_time() - t0 < 0.3:
        x += 1
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None and after - before >= 0.2
    tasks = [(_spin, 30.0), (abs, -4)]
    t0 = time.monotonic()
    out = dict(run_isolated(_call, tasks, workers=1, limits=Limits(timeout_s=1.5, memory_mb=None)))
    assert isinstance(out[0], Failure) and "1.5 s of CPU time" in out[0].detail
    assert out[1] == 4 and time.monotonic() - t0 < 30


def _spin(seconds: float) -> int:
    t0 = time.process_time()
    n = 0
    while time.process_time() - t0 < seconds:
        n += 1
    return n


def test_order_is_the_input_order_whatever_finishes_first() -> None:
    tasks = [(time.sleep, 0.5), (abs, -7), (time.sleep, 0.1), (abs, 8)]
    assert [i for i, _ in run_isolated(_call, tasks, workers=3, limits=Limits())] == [0, 1, 2, 3]


def _call(task: tuple) -> object:
    fn, arg = task
    return fn(arg)


def test_a_libclang_crash_is_a_kl900_for_its_file_with_any_number_of_workers(tmp_path: Path) -> None:
    # About 2,830 nested unary minus signs overflow the stack of libclang's parse thread (SIGSEGV).
    (tmp_path / "deep.cu").write_text(BODY.format("  o[i] = " + "- " * 6000 + "1;"))
    (tmp_path / "zz_good.cu").write_text(GOOD)
    runs = [_kernlint("-j", j, ".", cwd=tmp_path) for j in ("1", "2")]
    for r in runs:
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert "zz_good.cu:1:67: KL101" in r.stdout
        assert "deep.cu:1:1: KL900 [error] the C++ front end crashed on this file" in r.stdout
        assert "SIGSEGV" in r.stdout
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    assert not list(tmp_path.glob("core*"))  # no core dump left in the user's directory


@pytest.mark.slow
def test_a_file_past_the_timeout_is_a_kl900_and_the_run_ends_soon_after(tmp_path: Path) -> None:
    # Unbalanced `<`: libclang's time grows exponentially (22 of them: ~9 s; 26: 77 s and 3.8 GB).
    (tmp_path / "less.cu").write_text("T<" * 26 + "\n" + BODY.format("  o[i] = a[i];"))
    (tmp_path / "zz_good.cu").write_text(GOOD)
    # Without the memory limit the timeout is what stops it: 4 s of the worker's CPU time (the wall
    # clock would make the outcome depend on the machine's load).
    t0 = time.monotonic()
    r = _kernlint("--timeout", "4", "--memory-limit", "0", ".", cwd=tmp_path)
    assert time.monotonic() - t0 < 90
    assert r.returncode == 2, r.stderr
    assert "zz_good.cu:1:67: KL101" in r.stdout
    assert ("less.cu:1:1: KL900 [error] the C++ front end or the analysis gave up on this file: no result within "
            "4 s of CPU time") in r.stdout
    # With the default memory limit libclang runs out of address space first and gives up on the
    # file itself: still one error naming it, exit 2, the good file linted.
    r = _kernlint("--timeout", "60", ".", cwd=tmp_path)
    assert r.returncode == 2 and "zz_good.cu:1:67: KL101" in r.stdout
    assert "less.cu" in r.stdout + r.stderr


def test_limits_are_settings(tmp_path: Path) -> None:
    (tmp_path / "kernlint.toml").write_text("timeout = 7.5\nmemory-limit = 512\n")
    r = _kernlint("--show-settings", ".", cwd=tmp_path)
    assert "timeout = 7.5" in r.stdout and "memory-limit = 512" in r.stdout
    r = _kernlint("--memory-limit", "12", ".", cwd=tmp_path)
    assert r.returncode == 2 and "--memory-limit" in r.stderr and "at least 256" in r.stderr
