"""The commit the README pins (pre-commit `rev:`, GitHub Actions `ref:`) has what the README's snippets use.

The pinned revision is read from this repository with `git` (no network) and run: its pre-commit hook
must select every suffix kernlint's directory walk lints, and every `run:` step of the README's
workflows that calls kernlint is run with the pinned kernlint, in order, in a scratch project (base and
head copies, `$RUNNER_TEMP`, a stand-in `gh`): none may fail as a bad command line would (exit 2), the
SARIF must parse, GitHub annotations of a finding spanning two lines carry no columns (the README says
so), and `kernlint compare` must write its table.

Updating the pin is one substitution: `sed -i "s/$OLD/$NEW/g" README.md` (every pin is the same commit;
this test fails when they differ).
"""
from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kernlint.cli.command import CUDA_SUFFIXES, HEADER_SUFFIXES

yaml = pytest.importorskip("yaml")  # pre-commit's own dependency, in [dev]

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```yaml\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
# A store whose expression spans lines 2-3 (KL102): its GitHub annotation must have no col/endColumn.
KERNEL = "__global__ void k(float* a, int n) {\n    a[threadIdx.x * 32\n      + blockIdx.x] = 0.f;\n}\n"


def _snippets() -> list[dict]:
    return [yaml.safe_load(body) for body in FENCE.findall(README.read_text(encoding="utf-8"))]


def _pins(snippets: list[dict]) -> tuple[set[str], list[dict]]:
    """The pinned revisions, and the workflows (GitHub Actions snippets)."""
    pins: set[str] = set()
    workflows = []
    for doc in snippets:
        for repo in doc.get("repos", []) if isinstance(doc, dict) else []:
            if "kernlint" in str(repo.get("repo", "")):
                pins.add(str(repo["rev"]))
        if isinstance(doc, dict) and "jobs" in doc:
            workflows.append(doc)
            for job in doc["jobs"].values():
                for step in job["steps"]:
                    if (step.get("with") or {}).get("repository") == "kernlint/kernlint":
                        pins.add(str(step["with"]["ref"]))
    return pins, workflows


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=False)


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, list[dict]]:
    """The pinned revision, its tree extracted with `git archive`, and the README's workflows."""
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    pins, workflows = _pins(_snippets())
    assert len(pins) == 1, f"the README pins different revisions: {sorted(pins)}"
    (rev,) = pins
    if _git("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        if _git("rev-parse", "--is-shallow-repository").stdout.strip() == b"true":
            pytest.skip("a shallow clone: the pinned commit may be outside its history")
        pytest.fail(f"the README pins {rev}, which is not a commit of this repository")
    tree = tmp_path_factory.mktemp("pinned")
    archive = _git("archive", "--format=tar", rev)
    assert archive.returncode == 0, archive.stderr
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    return rev, tree, workflows


def test_the_pinned_hook_selects_every_suffix_the_walk_lints(pinned: tuple[str, Path, list[dict]]) -> None:
    rev, tree, _ = pinned
    hooks = yaml.safe_load((tree / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == "kernlint")
    assert set(hook.get("types_or") or ["any"]) - {"cuda"}, f"{rev}'s hook passes only .cu/.cuh (types_or: [cuda])"
    pattern = re.compile(hook.get("files", ""))
    missed = [s for s in (*CUDA_SUFFIXES, *HEADER_SUFFIXES) if not pattern.search(f"src/k{s}")]
    assert not missed, f"{rev}'s hook does not pass {missed}"


def test_the_readme_workflows_run_with_the_pinned_kernlint(pinned: tuple[str, Path, list[dict]],
                                                           tmp_path: Path) -> None:
    rev, tree, workflows = pinned
    assert len(workflows) >= 2
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kernlint").write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(tree))} exec '
                                      f'{shlex.quote(sys.executable)} -m kernlint "$@"\n')
    (bin_dir / "gh").write_text('#!/bin/sh\necho "$@" >> "$RUNNER_TEMP/gh.log"\n')  # posts nothing
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    for side in ("head", "base"):  # the checkout, and `git worktree add ../base` of the base commit
        (tmp_path / side / "src").mkdir(parents=True)
        (tmp_path / side / "src" / "k.cu").write_text(KERNEL, encoding="utf-8")
    head = tmp_path / "head"
    ran = []
    for workflow in workflows:
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                command = step.get("run", "")
                if not re.search(r"(^|[\s;&|{(])kernlint ", command):
                    continue
                env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                           RUNNER_TEMP=str(runner_temp), KERNLINT_CACHE_DIR=str(tmp_path / "cache"), NO_COLOR="1")
                env.update({k: re.sub(r"\$\{\{.*?\}\}", "1", str(v)) for k, v in (step.get("env") or {}).items()})
                proc = subprocess.run(["bash", "-e", "-c", command], cwd=head, env=env, capture_output=True,
                                      text=True, timeout=300, check=False)
                # --fail-on warning fails the job on the kernel's warning (1); anything else must pass.
                expected = (0, 1) if "--fail-on" in command else (0,)
                assert proc.returncode in expected, f"{rev}: `{command}` -> {proc.returncode}\n{proc.stderr}"
                assert "Traceback" not in proc.stderr, proc.stderr
                ran.append((command, proc.stdout))
    assert len(ran) >= 5
    sarif = json.loads((head / "kernlint.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["results"], sarif
    annotations = [out for cmd, out in ran if "--format github" in cmd][0]
    (line,) = [x for x in annotations.splitlines() if x.startswith("::warning ")]
    assert "line=2,endLine=3" in line and "col=" not in line and "Column=" not in line, line
    assert json.loads((runner_temp / "base.json").read_text())["kernels"]
    comparison = (head / "comparison.md").read_text(encoding="utf-8")
    assert "0 of 1 kernel compared got worse by more than 5 %" in comparison, comparison
    assert (runner_temp / "gh.log").read_text().startswith("pr comment 1 --body-file comparison.md")
