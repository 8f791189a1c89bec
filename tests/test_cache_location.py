"""Every cache (results, ptxas figures, project index) lives in one directory, resolved one way:
`--cache-dir`, else `$KERNLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/kernlint`, else `~/.cache/kernlint`
(issue 17); `--no-cache` / `KERNLINT_NO_CACHE` turn them all off."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.frontend import resources
from kernlint.project import cache as index_cache
from kernlint.runner.resultcache import cache_root

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def _dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, explicit: bool, xdg: bool) -> None:
    for k in ("KERNLINT_CACHE_DIR", "XDG_CACHE_HOME", "KERNLINT_NO_CACHE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if explicit:
        monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "explicit"))
    if xdg:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.mark.parametrize(("explicit", "xdg", "want"), [
    (True, True, "explicit"), (True, False, "explicit"), (False, True, "xdg/kernlint"),
    (False, False, "home/.cache/kernlint")])
def test_one_resolution_for_every_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        explicit: bool, xdg: bool, want: str) -> None:
    _dirs(monkeypatch, tmp_path, explicit, xdg)
    expected = tmp_path / want
    assert index_cache.cache_dir() == expected
    assert cache_root() == expected
    assert resources.cache_dir() == expected
    assert cache_root(str(tmp_path / "flag")) == tmp_path / "flag"  # --cache-dir first
    # A ptxas entry goes there too.
    resources._write_cache("k" * 64, {"format": resources.CACHE_FORMAT, "kernels": [], "note": None})
    assert (expected / f"resources-{'k' * 64}.json").is_file()
    assert resources._read_cache("k" * 64) is not None
    # And nowhere when caching is off ("0" means on, as for every cache).
    monkeypatch.setenv("KERNLINT_NO_CACHE", "1")
    assert index_cache.cache_dir() is None and cache_root() is None and resources._read_cache("k" * 64) is None
    monkeypatch.setenv("KERNLINT_NO_CACHE", "0")
    assert resources._read_cache("k" * 64) is not None


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_real_run_writes_every_cache_in_the_one_directory(tmp_path: Path, how: str) -> None:
    work, home, xdg, chosen = (tmp_path / n for n in ("work", "home", "xdg", "chosen"))
    for d in (work, home, xdg):
        d.mkdir()
    (work / "pyproject.toml").write_text("[tool.kernlint]\n")  # a project: the index is cached too
    (work / "k.cu").write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k not in ("KERNLINT_CACHE_DIR", "KERNLINT_NO_CACHE")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(xdg), PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "kernlint", "--format", "concise", "."]
    if how == "flag":
        args[3:3] = ["--cache-dir", str(chosen)]
        env["KERNLINT_CACHE_DIR"] = str(tmp_path / "not-this")
    else:
        env["KERNLINT_CACHE_DIR"] = str(chosen)
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    names = sorted(p.name for p in chosen.iterdir())
    assert any(n.startswith("results-v") for n in names), names
    assert any(n.startswith("index-v") for n in names), names
    if shutil.which("nvcc"):
        assert any(n.startswith("resources-") for n in names), names  # the ptxas figures, with the rest
    assert list(xdg.iterdir()) == [] and list(home.iterdir()) == []
    assert not (tmp_path / "not-this").exists()
