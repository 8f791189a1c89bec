"""Every command the README marks runnable is run, and its example output is what kernlint prints.

Fenced blocks carry their role in the info string: `sh runnable` (each line a command run here, from a
scratch copy of `examples/`, with `kernlint` this checkout), `text output` (lines kernlint prints for the
command of the next `sh install` block: each line, but `...`, must appear in that order) and `sh install`
(the install and test commands: what follows `pip install` is run here; installing needs the package
index and running the suite is what CI does with them, .ci/run).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
NOT_RUN_HERE = ("python3 -m venv", ". .venv/bin/activate", "pip install", "python -m pytest")


def blocks(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(info-string words, body) of every fenced block, in order."""
    return [(tuple(m.group(1).split()), m.group(2)) for m in FENCE.finditer(text)]


def commands_of(role: str) -> list[str]:
    out = []
    for info, body in blocks(README.read_text(encoding="utf-8")):
        if role in info[1:]:
            out.extend(line.strip() for line in body.splitlines() if line.strip() and not line.startswith("#"))
    return out


@pytest.fixture()
def shell(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A scratch directory holding a copy of examples/, and an environment whose `kernlint` is this checkout."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kernlint"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kernlint "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=str(ROOT),
               NO_COLOR="1", KERNLINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("KERNLINT_NO_CACHE", None)
    env.pop("FORCE_COLOR", None)
    return tmp_path, env


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_readme_starts_with_the_install_and_test_commands() -> None:
    text = README.read_text(encoding="utf-8")
    commands = [(info, body.strip()) for info, body in blocks(text) if info and info[0] == "sh"]
    assert commands[0] == (("sh", "install"), "python3 -m venv .venv && . .venv/bin/activate && pip install . && "
                                              "kernlint examples/transpose.cu")
    assert commands[1] == (("sh", "install"), "pip install '.[dev]' && python -m pytest -q")
    # CI runs the second one as it stands (.ci/run).
    assert "pip install '.[dev]' && python -m pytest -q" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_runnable_commands_run(shell: tuple[Path, dict[str, str]]) -> None:
    cwd, env = shell
    commands = commands_of("runnable")
    assert len(commands) >= 5 and any(c.startswith("kernlint compare") for c in commands)
    for command in commands:
        proc = run(command, cwd, env)
        # 0 clean or 1 findings; 2 (a bad option, a missing path, an internal error) is a README that lies.
        assert proc.returncode in (0, 1), f"{command}\n{proc.stdout}{proc.stderr}"
        assert "Traceback" not in proc.stderr and "error:" not in proc.stderr, f"{command}\n{proc.stderr}"


def test_the_install_commands_tail_runs_and_prints_the_example_output(shell: tuple[Path, dict[str, str]]) -> None:
    cwd, env = shell
    ran = 0
    for line in commands_of("install"):
        for part in (p.strip() for p in line.split("&&")):
            if part.startswith(NOT_RUN_HERE):
                continue
            proc = run(part, cwd, env)
            assert proc.returncode in (0, 1), f"{part}\n{proc.stdout}{proc.stderr}"
            ran += 1
            expected = [body for info, body in blocks(README.read_text(encoding="utf-8")) if "output" in info[1:]]
            assert len(expected) == 1
            printed = proc.stdout.splitlines()
            at = 0
            for want in expected[0].splitlines():
                if want.strip() == "...":
                    continue
                assert want in printed[at:], f"{want!r} not printed (in order) by {part}:\n{proc.stdout}"
                at = printed.index(want, at) + 1
    assert ran == 1  # `kernlint examples/transpose.cu`


def test_the_readme_and_docs_links_resolve() -> None:
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    assert {p.name for p in pages} >= {"how-it-decides.md", "hardware-model.md", "projects.md", "confirmation.md"}
    for page in pages:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"
    text = README.read_text(encoding="utf-8")
    for name in ("how-it-decides.md", "hardware-model.md", "projects.md", "confirmation.md", "cli.md"):
        assert f"(docs/{name})" in text, name
