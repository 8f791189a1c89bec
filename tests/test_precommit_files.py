"""The pre-commit hook sees every file a directory walk of kernlint lints (.cu, .cuh and the C/C++ suffixes).

The hook definition in .pre-commit-hooks.yaml is run by the real `pre-commit run --all-files` in a scratch
git repository. Offline, pre-commit cannot build the hook's own virtualenv (`language: python` pip-installs
kernlint's dependencies), so the test runs the same definition as a `repo: local` hook with `language:
system` and this interpreter: only how the command is found changes, the file selection (`files`,
`types`, `types_or`, `exclude`) is the one the published hook has.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.cli.command import CUDA_SUFFIXES, HEADER_SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
BAD = "__global__ void k_{n}(float* a){{ a[threadIdx.x*32] = 0.f; }}\n"  # a 32-float lane stride: KL102
SELECTION_KEYS = ("files", "exclude", "types", "types_or", "exclude_types")


def _hook() -> dict:
    yaml = pytest.importorskip("yaml")  # pre-commit's own dependency
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return next(h for h in hooks if h["id"] == "kernlint")


def test_hook_files_pattern_is_the_walks_suffixes() -> None:
    """Every suffix the walk lints matches the hook's `files`, and a few it does not lint do not."""
    hook = _hook()
    assert "types_or" not in hook or set(hook["types_or"]) - {"cuda"}, "types_or: [cuda] drops .h/.hpp kernels"
    pattern = re.compile(hook["files"])
    for suffix in (*CUDA_SUFFIXES, *HEADER_SUFFIXES):
        assert pattern.search(f"src/kernel{suffix}"), suffix
    for other in ("README.md", "setup.py", "kernel.cu.orig", "notes.txt"):
        assert not pattern.search(other), other


def _pre_commit() -> list[str]:
    if importlib.util.find_spec("pre_commit") is not None:
        return [sys.executable, "-m", "pre_commit"]
    exe = shutil.which("pre-commit")
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install 'kernlint[dev]')")
    return [exe]


def test_pre_commit_reports_kernels_in_every_suffix(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    cmd = _pre_commit()
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hook = {k: v for k, v in _hook().items() if k in ("id", "name", *SELECTION_KEYS)}
    hook.update(language="system", entry=f"{sys.executable} -m kernlint --no-cache")
    repo = tmp_path / "user-repo"
    (repo / "src").mkdir(parents=True)
    names = ["src/a.cu", "src/b.cuh", "src/c.h", "src/d.hpp"]
    for n, name in enumerate(names):
        (repo / name).write_text(BAD.format(n=n), encoding="utf-8")
    (repo / "README.md").write_text("no kernels here\n", encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}),
                                                  encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PRE_COMMIT"}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PYTHONPATH=str(ROOT), NO_COLOR="1")
    for args in (["init", "-q"], ["add", "-A"]):
        assert subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True).returncode == 0
    proc = subprocess.run([*cmd, "run", "--all-files", "--color", "never"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Failed" in output, output
    for name in names:
        assert re.search(rf"{re.escape(name)}:1:\d+: warning: .*KL102", output), (name, output)
    # What `kernlint .` reports in the same tree: the hook saw the same files.
    walk = subprocess.run([sys.executable, "-m", "kernlint", "--no-cache", "--format", "concise", "."], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    walked = {line.split(":")[0].removeprefix("./") for line in walk.stdout.splitlines() if "KL102" in line}
    assert walked == set(names), walk.stdout + walk.stderr
