"""The precompiled shim (kernlint/frontend/shim_pch.py) changes nothing but the time: the same IR as the shim
included as text, a PCH clang refuses switches it off, and a run leaves no PCH behind."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.frontend import clang_frontend as cf
from kernlint.frontend import parse_cache, shim_pch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").glob("*.cu"))


def _parse(path: Path, parses: int) -> object:
    shim_pch._parses = parses  # 0: the shim as text (a process's first parse); WARM_PARSES and more: the PCH
    parse_cache.clear()  # (a unit kept from the text parse would be taken instead of a PCH parse)
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


# Files with explicit instantiations (`template __global__ void k<float>(...);`, `template class C<double>;`):
# the index that leaves out the PCH's declarations lists the specializations they make, which must
# not become second definitions of the kernel or of a method that launches one (shim_pch.EXCLUDE).
_INSTANTIATING = [p for p in sorted((ROOT / "fixtures").rglob("*.cu"))
                  if re.search(r"^\s*template\s+(?!<)", p.read_text(errors="replace"), re.M)]


def test_some_fixtures_instantiate_explicitly() -> None:
    names = {p.name for p in _INSTANTIATING}
    assert {"KL102_chained_pointer.cu", "engine.cu"} <= names


@pytest.mark.parametrize("path", _INSTANTIATING, ids=lambda p: p.name)
def test_same_ir_with_the_pch_for_explicit_instantiations(path: Path, fresh_pch: None) -> None:
    text_ir = _parse(path, 0)
    pch_ir = _parse(path, shim_pch.WARM_PARSES)
    assert shim_pch._built and all(shim_pch._built.values()), "no PCH was built"
    assert pch_ir == text_ir
    if not isinstance(text_ir, tuple):  # every function, the lazily lowered ones too
        assert {k: text_ir.functions[k] for k in text_ir.functions} == {k: pch_ir.functions[k] for k in pch_ir.functions}


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
