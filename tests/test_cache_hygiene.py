"""The ptxas cache: invalid entries are ignored and rewritten, environment failures are never cached,
only regular files are read, and no temporary file outlives an error. A fake nvcc plays the compiler."""
from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest

from kernlint.ir import demangle
from kernlint.frontend import resources
from kernlint.system.cacheentry import seal, unseal
from kernlint.frontend.resources import exact_resources

SRC = "__global__ void k(float* p) { p[threadIdx.x] = 1; }\n"
PTXAS = """ptxas info    : Compiling entry function '_Z1kPf' for 'sm_80'
ptxas info    : Function properties for _Z1kPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 360 bytes cmem[0]
"""
FAKE = """#!/bin/sh
case "$*" in *--version*) echo "Cuda compilation tools, release 99.0 (fake)"; exit 0;; esac
echo run >> "{log}"
mode=$(cat "{mode}")
case "$mode" in
  ok) cat "{ptxas}"; exit 0;;
  error) echo "k.cu(1): error: identifier \\"x\\" is undefined"; exit 1;;
  xfsz) kill -XFSZ $$;;
  full) echo "fatal error: No space left on device"; exit 1;;
esac
"""


@pytest.fixture()
def nvcc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    files = {"log": tmp_path / "runs.log", "mode": tmp_path / "mode", "ptxas": tmp_path / "ptxas.txt",
             "cache": tmp_path / "cache" / "kernlint"}
    files["ptxas"].write_text(PTXAS)
    files["mode"].write_text("ok")
    exe = bin_dir / "nvcc"
    exe.write_text(FAKE.format(**{k: str(v) for k, v in files.items()}))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    monkeypatch.setattr(demangle, "_demangle_tool", lambda names: {})
    return files


def runs(files: dict[str, Path]) -> int:
    return len(files["log"].read_text().splitlines()) if files["log"].exists() else 0


def lint(tmp_path: Path) -> tuple[dict, str | None]:
    return exact_resources(SRC, str(tmp_path / "k.cu"), "sm_80")


def entry(files: dict[str, Path]) -> Path:
    [path] = files["cache"].glob("resources-*.json")
    return path


def _key(path: Path) -> str:
    return path.name[len("resources-"):-len(".json")]


def read_entry_json(path: Path) -> object:
    """An entry's JSON (entries are sealed with a checksum of their content and key: kernlint/system/cacheentry.py)."""
    payload = unseal(_key(path), path.read_bytes())
    assert payload is not None
    return json.loads(payload)


def write_entry_json(path: Path, data: object) -> None:
    """Store `data` as a sound entry (its checksum right): what is tested is the check of its shape."""
    path.write_bytes(seal(_key(path), json.dumps(data).encode()))


@pytest.mark.parametrize("bad", ["many", None, -5, 1.5, True])
def test_an_entry_with_a_bad_register_count_is_ignored_and_rewritten(tmp_path: Path, nvcc: dict, bad: object) -> None:
    kernels, note = lint(tmp_path)
    assert note is None and kernels["k"][0].registers == 12 and runs(nvcc) == 1
    data = read_entry_json(entry(nvcc))
    data["kernels"][0]["registers"] = bad  # type: ignore[index]
    write_entry_json(entry(nvcc), data)
    kernels, note = lint(tmp_path)
    assert note is None and kernels["k"][0].registers == 12
    assert runs(nvcc) == 2  # compiled again
    assert read_entry_json(entry(nvcc))["kernels"][0]["registers"] == 12  # type: ignore[index]  # and rewritten
    lint(tmp_path)
    assert runs(nvcc) == 2  # the rewritten entry is used


@pytest.mark.parametrize("shape", [[], {"kernels": "x"}, {"format": resources.CACHE_FORMAT, "kernels": [1]},
                                   {"format": resources.CACHE_FORMAT, "kernels": [], "note": 5}])
def test_entries_of_the_wrong_shape_are_ignored(tmp_path: Path, nvcc: dict, shape: object) -> None:
    lint(tmp_path)
    write_entry_json(entry(nvcc), shape)
    kernels, note = lint(tmp_path)
    assert note is None and kernels["k"][0].registers == 12 and runs(nvcc) == 2


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_an_entry_that_is_not_a_regular_file_is_not_read(tmp_path: Path, nvcc: dict, kind: str) -> None:
    lint(tmp_path)
    path = entry(nvcc)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    signal.alarm(60)  # a hang fails the test instead of stalling the suite
    try:
        kernels, note = lint(tmp_path)
    finally:
        signal.alarm(0)
    assert note is None and kernels["k"][0].registers == 12 and runs(nvcc) == 2


@pytest.mark.parametrize("mode", ["xfsz", "full"])
def test_a_failure_caused_by_the_environment_is_not_cached(tmp_path: Path, nvcc: dict, mode: str) -> None:
    nvcc["mode"].write_text(mode)
    kernels, note = lint(tmp_path)
    assert kernels == {} and note and "estimated" in note
    assert not list(nvcc["cache"].glob("resources-*.json"))
    nvcc["mode"].write_text("ok")  # the machine is fine again: exact figures, not a cached failure
    kernels, note = lint(tmp_path)
    assert note is None and kernels["k"][0].registers == 12


def test_a_compile_error_in_the_source_is_cached(tmp_path: Path, nvcc: dict) -> None:
    nvcc["mode"].write_text("error")
    _, note = lint(tmp_path)
    assert note and "could not compile" in note
    n = runs(nvcc)
    _, again = lint(tmp_path)
    assert again == note and runs(nvcc) == n


def test_no_temporary_file_survives_a_failed_write(tmp_path: Path, nvcc: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_rename(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(resources.os, "replace", no_rename)
    kernels, note = lint(tmp_path)
    assert note is None and kernels["k"][0].registers == 12
    assert [p for p in nvcc["cache"].rglob("*") if not p.is_dir()] == []
