"""kernlint as a user gets it: built into a wheel, installed into a fresh virtual environment, run
with the source tree out of sight. Every module of the source tree must import from the installed
package, every data file must be there, and the documented entry points must work.

The wheel is built from a copy of the checkout, and the copy is deleted before anything runs. It is
installed with --no-deps into a fresh virtual environment, which borrows the running interpreter's
site-packages for click, numpy and libclang through a .pth file (after its own site-packages, so the
freshly installed kernlint is the one imported), so nothing is downloaded at install time. Building
prefers an isolated build (setuptools from the package index) and falls back to the setuptools
already installed; when neither works offline, the tests skip with the reason. Commands run from an
empty directory with no PYTHONPATH, and every imported module must come from the virtual environment.
The modules and data files expected are enumerated from the source tree when the tests run, so a new
module is covered without editing this file.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
from offline import NETWORK_HINTS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kernlint"
RULE_DOCS = ROOT / "rules"  # shipped as the package `kernlint.rules`
DOC = RULE_DOCS / "KL101-uncoalesced-global-load.md"
EXAMPLE = ROOT / "examples" / "transpose.cu"

SKIP_IN_COPY = shutil.ignore_patterns(
    ".git", ".venv", ".venv-ci", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
    ".kernlint_cache",
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


@dataclass(frozen=True)
class Installed:
    venv: Path
    bindir: Path
    package: Path  # the installed kernlint/ directory
    cwd: Path  # an empty directory (plus a copy of the example kernel) to run commands in
    env: dict[str, str]

    @property
    def python(self) -> str:
        return str(self.bindir / ("python.exe" if os.name == "nt" else "python"))

    @property
    def kernlint(self) -> str:
        return str(self.bindir / ("kernlint.exe" if os.name == "nt" else "kernlint"))

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return _run(list(cmd), cwd=self.cwd, env=self.env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """One wheel build and one virtual environment for the whole module."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(ROOT, src, ignore=SKIP_IN_COPY)
    wheel = _build_wheel(src, base / "dist")
    bindir = _venv_with_wheel(wheel, base / "venv")
    shutil.rmtree(src)  # nothing may be read from a source tree any more
    cwd = base / "work"
    cwd.mkdir()
    shutil.copy(EXAMPLE, cwd / EXAMPLE.name)  # input data, not code
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "KERNLINT_TRACEBACK")}
    env["NO_COLOR"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""  # "without a GPU", even where the tests run on a machine with one
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    where = _run([str(python), "-c", "import kernlint; print(kernlint.__file__)"], cwd=cwd, env=env)
    package = Path(where.stdout.strip()).parent
    assert package.is_relative_to(base / "venv"), where.stdout + where.stderr
    return Installed(base / "venv", bindir, package, cwd, env)


def source_modules() -> list[str]:
    """Every module of the source tree's kernlint package, by dotted name."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if "__pycache__" in rel.parts:
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append(".".join(parts))
    return out


def source_data_files() -> list[tuple[Path, str]]:
    """(file in the source tree, where it must be in the installed package) for every non-Python file."""
    out = []
    for path in sorted(PACKAGE.rglob("*")):
        rel = path.relative_to(PACKAGE)
        if (not path.is_file() or path.suffix in (".py", ".pyc") or "__pycache__" in rel.parts
                or any(p.startswith(".") for p in rel.parts)):
            continue
        out.append((path, rel.as_posix()))
    out.extend((doc, f"rules/{doc.name}") for doc in sorted(RULE_DOCS.glob("*.md")))
    return out


def test_the_source_tree_lists_what_the_wheel_must_hold() -> None:
    """The enumeration itself: it must see the subpackages and data files known today."""
    mods = source_modules()
    for name in ("kernlint", "kernlint.__main__", "kernlint.cli.command", "kernlint.confirm", "kernlint.confirm.cupy_probe",
                 "kernlint.eval.interp", "kernlint.frontend.clang_frontend", "kernlint.reporters.sarif"):
        assert name in mods
    data = {dest for _, dest in source_data_files()}
    assert {"frontend/kernlint_cuda_shim.h", "reporters/sarif-schema-2.1.0.json", f"rules/{DOC.name}"} <= data
    assert len([d for d in data if d.startswith("rules/")]) >= 19


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_every_module_imports_from_the_installed_package(installed: Installed) -> None:
    mods = source_modules()
    script = (
        "import importlib, json, sys\n"
        "out = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        out[name] = importlib.import_module(name).__file__ or ''\n"
        "    except BaseException as exc:\n"
        "        out[name] = f'!{type(exc).__name__}: {exc}'\n"
        "print(json.dumps(out))\n"
    )
    proc = installed.run(installed.python, "-c", script, *mods)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads(proc.stdout)
    failed = {k: v for k, v in found.items() if v.startswith("!")}
    assert not failed, f"modules of the source tree that the installed wheel lacks: {failed}"
    elsewhere = {k: v for k, v in found.items() if not Path(v).is_relative_to(installed.package)}
    assert not elsewhere, f"imported from outside the installed package: {elsewhere}"


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_every_data_file_is_installed(installed: Installed) -> None:
    missing, differ = [], []
    for src, dest in source_data_files():
        target = installed.package / dest
        if not target.is_file():
            missing.append(dest)
        elif target.read_bytes() != src.read_bytes():
            differ.append(dest)
    assert not missing, f"data files of the source tree that the installed wheel lacks: {missing}"
    assert not differ, f"installed data files that differ from the source tree: {differ}"


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_version_from_the_script_and_from_python_dash_m(installed: Installed) -> None:
    expected = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert expected
    for cmd in ([installed.kernlint, "--version"], [installed.python, "-m", "kernlint", "--version"]):
        proc = installed.run(*cmd)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.strip() == f"kernlint, version {expected.group(1)}", proc.stdout


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_explain(installed: Installed) -> None:
    proc = installed.run(installed.kernlint, "--explain", "KL101")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = DOC.read_text(encoding="utf-8")
    title = next(line for line in doc.splitlines() if line.startswith("# "))
    assert title in proc.stdout
    assert "## What it does" in proc.stdout


def _lint_json(installed: Installed, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    proc = installed.run(installed.kernlint, EXAMPLE.name, "--format", "json", *extra)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(proc.stdout)["diagnostics"]


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_lint_with_json_output(installed: Installed) -> None:
    proc, diags = _lint_json(installed)
    assert proc.returncode == 1, proc.stderr
    store = [d for d in diags if d["code"] == "KL102"]
    assert store and store[0]["kernel"] == "transposeNaive" and store[0]["line"] == 11
    assert store[0]["metrics"]["sectors"] > store[0]["metrics"]["ideal_sectors"]


@pytest.mark.slow  # (one wheel build and virtual environment for these)
def test_confirm_without_a_gpu(installed: Installed) -> None:
    static, before = _lint_json(installed)
    proc, after = _lint_json(installed, "--confirm")
    assert proc.returncode == static.returncode == 1, proc.stderr
    assert after and {d["confirmation"] for d in after} == {"not-run"}
    assert [(d["code"], d["line"]) for d in after] == [(d["code"], d["line"]) for d in before]
    notes = [ln for ln in proc.stderr.splitlines() if "confirmation not run" in ln]
    assert len(notes) == 1 and "no usable CUDA device/driver" in notes[0], proc.stderr
