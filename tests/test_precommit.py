"""The real pre-commit tool runs the hook from this checkout: fails on a bad kernel, passes a good one.

`pre-commit try-repo` builds the hook's virtualenv by pip-installing this checkout, which needs
the package index for kernlint's dependencies. Offline, that step fails; the test then skips
with the reason instead of failing.
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
from offline import NETWORK_HINTS

ROOT = Path(__file__).resolve().parents[1]

BAD = "__global__ void k(float* a){ a[threadIdx.x*32] = 0.f; }\n"
GOOD = "__global__ void k(float* a){ a[blockIdx.x*blockDim.x+threadIdx.x] = 0.f; }\n"



def _pre_commit() -> list[str]:
    if importlib.util.find_spec("pre_commit") is not None:
        return [sys.executable, "-m", "pre_commit"]
    exe = shutil.which("pre-commit")
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install 'kernlint[dev]')")
    return [exe]


def _git(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Return a throwaway git repository holding bad.cu and good.cu, and the env to run in."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tmp = tmp_path_factory.mktemp("precommit")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PRE_COMMIT"}
    env.update(
        PRE_COMMIT_HOME=str(tmp / "pre-commit-home"),  # a fresh hook cache, nothing shared
        GIT_AUTHOR_NAME="kernlint test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="kernlint test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
        PIP_NO_INPUT="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        NO_COLOR="1",
    )
    if _git("rev-parse", "--verify", "HEAD", cwd=ROOT, env=env).returncode != 0:
        pytest.skip("the checkout is not a git repository with a commit; try-repo needs one")
    repo = tmp / "user-repo"
    repo.mkdir()
    (repo / "bad.cu").write_text(BAD, encoding="utf-8")
    (repo / "good.cu").write_text(GOOD, encoding="utf-8")
    assert _git("init", "-q", cwd=repo, env=env).returncode == 0
    assert _git("add", "bad.cu", "good.cu", cwd=repo, env=env).returncode == 0
    return repo, env


def _try_repo(repo: Path, env: dict[str, str], *files: str) -> subprocess.CompletedProcess[str]:
    cmd = [*_pre_commit(), "try-repo", str(ROOT), "kernlint", "--color", "never", "--files", *files]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = proc.stdout + proc.stderr
    installing_failed = "An unexpected error has occurred" in output or "CalledProcessError" in output
    if installing_failed and any(hint in output for hint in NETWORK_HINTS):
        pytest.skip("pre-commit could not install the hook environment (no package index reachable)")
    return proc


@pytest.mark.slow
def test_hook_fails_on_the_bad_kernel(workspace: tuple[Path, dict[str, str]]) -> None:
    repo, env = workspace
    proc = _try_repo(repo, env, "bad.cu", "good.cu")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "kernlint" in output and "Failed" in output, output
    # The bad kernel's strided write is an uncoalesced store (KL102); accept either coalescing rule.
    assert "bad.cu:1:" in output and re.search(r"KL10[12]", output), output
    assert "good.cu:1:" not in output, output


@pytest.mark.slow
def test_hook_passes_the_good_kernel(workspace: tuple[Path, dict[str, str]]) -> None:
    repo, env = workspace
    proc = _try_repo(repo, env, "good.cu")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Passed" in output, output
