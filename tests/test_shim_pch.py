"""The precompiled shim (kernlint/frontend/shim_pch.py) changes nothing but the time: the same IR as the shim
included as text, a PCH clang refuses switches it off, and a run leaves no PCH behind."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.frontend import clang_frontend as cf
from kernlint.frontend import shim_pch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").glob("*.cu"))


def _parse(path: Path, parses: int) -> object:
    shim_pch._parses = parses  # 0: the shim as text (a process's first parse); WARM_PARSES and more: the PCH
    try:
        return cf.parse_source(path.read_text(), str(path))
    except cf.FrontendError as exc:
        return ("FrontendError", str(exc))


@pytest.fixture()
def fresh_pch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim_pch, "_parses", 0)
    monkeypatch.setattr(shim_pch, "_disabled", False)
    monkeypatch.setattr(shim_pch, "_built", {})
    monkeypatch.delenv("KERNLINT_NO_PCH", raising=False)


@pytest.mark.parametrize("path", FIXTURES[::6], ids=lambda p: p.name)
def test_same_ir_with_the_pch(path: Path, fresh_pch: None) -> None:
    text_ir = _parse(path, 0)
    pch_ir = _parse(path, shim_pch.WARM_PARSES)
    assert shim_pch._built and all(shim_pch._built.values()), "no PCH was built"
    assert pch_ir == text_ir


def test_a_refused_pch_switches_it_off(tmp_path: Path, fresh_pch: None, monkeypatch: pytest.MonkeyPatch) -> None:
    bogus = tmp_path / "bogus.pch"
    bogus.write_bytes(b"not a PCH")
    path = FIXTURES[0]
    expected = _parse(path, 0)
    monkeypatch.setattr(shim_pch, "_build", lambda *a: str(bogus))
    assert _parse(path, shim_pch.WARM_PARSES) == expected
    assert shim_pch._disabled
    assert shim_pch.pch_for(cf.ci, cf.shim_path(), []) is None


def test_a_run_of_several_files_is_the_same_and_leaves_no_pch(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    picked = [str(p) for p in FIXTURES[:5]]
    env = {k: v for k, v in os.environ.items() if k != "KERNLINT_NO_PCH"}
    env.update(TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "kernlint", "-j", "1", "--no-cache", "--no-ptxas", "--format", "json", *picked]
    with_pch = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    without = subprocess.run(argv, env={**env, "KERNLINT_NO_PCH": "1"}, capture_output=True, text=True, timeout=300)
    assert with_pch.stdout == without.stdout and with_pch.returncode == without.returncode
    assert "Traceback" not in with_pch.stderr
    assert list(tmp.iterdir()) == []
