"""A read-only home and working directory: kernlint still lints, says once that it could not cache, and
writes no file anywhere (the cache directory is where it would have written)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def _tree(*dirs: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for d in dirs:
        for p in d.rglob("*"):
            st = p.lstat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def _read_only_runner(home: Path, work: Path) -> list[str] | None:
    """A command prefix under which `home` and `work` are read-only, or None where that cannot be had.

    Not root: the directories' write permission is taken away. Root ignores permissions, so the
    directories are bind-mounted read-only in a private mount namespace (unshare), when allowed."""
    if os.geteuid() != 0:
        home.chmod(0o555)
        work.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        return None
    script = f'mount --bind -o ro "{home}" "{home}" && mount --bind -o ro "{work}" "{work}" && exec "$@"'
    probe = subprocess.run(["unshare", "-m", "sh", "-c", script + f' && touch "{work}/x"', "sh", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0 and "Read-only" not in probe.stderr:
        return None  # no mount namespace here
    return ["unshare", "-m", "sh", "-c", script, "sh"]


@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_read_only_home_and_working_directory(tmp_path: Path, jobs: str) -> None:
    home, work, tmp = tmp_path / "home", tmp_path / "work", tmp_path / "tmp"
    for d in (home, work, tmp):
        d.mkdir()
    for i in range(3):
        (work / f"k{i}.cu").write_text(STRIDED)
    (work / "pyproject.toml").write_text("[tool.kernlint]\n")  # a project: the index cache is tried too
    before = _tree(home, work)
    prefix = _read_only_runner(home, work)
    if prefix is None:
        pytest.skip("no way to make a directory read-only for this user here")
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "KERNLINT_CACHE_DIR", "KERNLINT_NO_CACHE")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "kernlint", "-j", jobs, "--format", "concise", "."],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300)
    finally:
        if os.geteuid() != 0:
            home.chmod(0o755)
            work.chmod(0o755)
    assert proc.returncode == 1, proc.stderr  # the findings, nothing worse
    for i in range(3):
        assert f"k{i}.cu:1:64: KL101" in proc.stdout
    notes = [ln for ln in proc.stderr.splitlines() if "could not write the cache" in ln]
    assert len(notes) == 1, proc.stderr
    assert str(home / ".cache" / "kernlint") in notes[0]
    assert "Traceback" not in proc.stderr
    assert _tree(home, work) == before  # nothing written in the home or the working directory
    assert list(tmp.iterdir()) == []  # and no temporary file or directory left behind
