"""`kernlint --explain` works from an installed wheel, not only from the source tree.

The wheel is built from a copy of the checkout and installed with --no-deps into a fresh virtual
environment, which borrows the running interpreter's site-packages for click, numpy and libclang
through a .pth file, so nothing is downloaded at install time. Building prefers an isolated build
(which fetches setuptools from the package index) and falls back to the setuptools already
installed; when neither works offline, the test skips with the reason.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from offline import NETWORK_HINTS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "rules" / "KL101-uncoalesced-global-load.md"

SKIP_IN_COPY = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".kernlint_cache"
)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def _build_wheel(src: Path, out: Path) -> Path:
    """Build a wheel of `src` into `out` and return its path, or skip when it cannot be built offline."""
    attempts: list[list[str]] = []
    if importlib.util.find_spec("build") is not None:
        attempts.append([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)])
    attempts.append([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(src)])
    attempts.append([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)])
    logs: list[str] = []
    for cmd in attempts:
        proc = _run(cmd, cwd=src)
        wheels = sorted(out.glob("kernlint-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[-1]
        logs.append(f"$ {' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    joined = "\n".join(logs)
    if any(hint in joined for hint in NETWORK_HINTS):
        pytest.skip("cannot build the wheel offline:\n" + joined[-1500:])
    pytest.fail("building the wheel failed:\n" + joined)


def _venv_with_wheel(wheel: Path, where: Path) -> Path:
    """Create a venv at `where` with `wheel` installed (no deps) and return its bin directory."""
    venv.create(where, with_pip=True, clear=True)
    bindir = where / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    probe = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=where)
    site = Path(probe.stdout.strip())
    # Dependencies come from the interpreter running the tests, appended after the venv's own
    # site-packages, so the freshly installed kernlint is the one imported.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_kernlint_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n", encoding="utf-8")
    # --ignore-installed: the kernlint of the test run is visible through the .pth above, and pip
    # would otherwise call the requirement satisfied and install nothing.
    proc = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", str(wheel)],
                cwd=where)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return bindir


def test_explain_from_an_installed_wheel(tmp_path: Path) -> None:
    assert DOC.is_file(), "rules/KL101-uncoalesced-global-load.md is missing from the checkout"
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=SKIP_IN_COPY)
    wheel = _build_wheel(src, tmp_path / "dist")
    bindir = _venv_with_wheel(wheel, tmp_path / "venv")
    shutil.rmtree(src)  # nothing may be read from a source tree any more

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["NO_COLOR"] = "1"
    python = bindir / "python"
    where = _run([str(python), "-c", "import kernlint; print(kernlint.__file__)"], cwd=tmp_path, env=env)
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout + where.stderr

    proc = _run([str(bindir / "kernlint"), "--explain", "KL101"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = DOC.read_text(encoding="utf-8")
    title = next(line for line in doc.splitlines() if line.startswith("# "))
    assert title in proc.stdout
    assert "## What it does" in proc.stdout
