"""`--confirm` where nothing can run on a GPU: one note for the run, every finding not-run, the static
exit status unchanged. CuPy is replaced by a stand-in package that fails as the real one does on a
machine without a usable driver or device, so this runs everywhere (no GPU, no CuPy needed)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main

ROOT = Path(__file__).resolve().parent.parent
TRANSPOSE = str(ROOT / "examples" / "transpose.cu")
AOS = str(ROOT / "fixtures" / "KL101_aos.cu")
INSUFFICIENT = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"

# A stand-in `cupy`: every import appends a line to $KERNLINT_FAKE_CUPY_LOG (to count the probes), the
# device query behaves as FAKE_MODE says, and compiling is an error the test would see.
FAKE_CUPY = textwrap.dedent('''
    import os

    with open(os.environ["KERNLINT_FAKE_CUPY_LOG"], "a") as log:
        log.write("import\\n")
    MODE = os.environ["KERNLINT_FAKE_CUPY_MODE"]


    class CUDARuntimeError(RuntimeError):
        pass


    class _Runtime:
        @staticmethod
        def getDeviceCount():
            if MODE == "driver":
                raise CUDARuntimeError("%s")
            return 0 if MODE == "no-device" else 1


    class _Nvrtc:
        @staticmethod
        def getVersion():
            if MODE == "no-nvrtc":
                raise RuntimeError("CuPy failed to load libnvrtc.so.13")
            return (13, 0)


    class cuda:
        runtime = _Runtime
        nvrtc = _Nvrtc


    class RawModule:
        def __init__(self, *a, **k):
            raise CUDARuntimeError("%s")
''' % (INSUFFICIENT, INSUFFICIENT))


@pytest.fixture()
def fake_cupy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "fakecupy" / "cupy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_CUPY)
    log = tmp_path / "imports.log"
    log.write_text("")
    monkeypatch.syspath_prepend(str(pkg.parent))  # so that find_spec("cupy") sees it here
    monkeypatch.setenv("PYTHONPATH", str(pkg.parent))  # and the probe's child process imports it
    monkeypatch.setenv("KERNLINT_FAKE_CUPY_LOG", str(log))
    return log


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(main, [*args, "--no-ptxas", "--format", "json"], catch_exceptions=False)


@pytest.mark.parametrize("mode,reason", [
    ("driver", "cudaErrorInsufficientDriver"),
    ("no-device", "the driver reports 0 devices"),
    ("no-nvrtc", "libnvrtc"),
])
def test_cupy_without_a_usable_device_is_one_note_and_not_run(fake_cupy: Path, monkeypatch: pytest.MonkeyPatch,
                                                               mode: str, reason: str) -> None:
    monkeypatch.setenv("KERNLINT_FAKE_CUPY_MODE", mode)
    plain = _run([TRANSPOSE, AOS])
    confirmed = _run([TRANSPOSE, AOS, "--confirm"])
    assert plain.exit_code == confirmed.exit_code == 1, confirmed.output
    notes = [ln for ln in confirmed.stderr.splitlines() if ln.strip()]
    assert len(notes) == 1, confirmed.stderr
    assert "no usable CUDA device/driver: confirmation not run" in notes[0] and reason in notes[0]
    assert "rejected" not in confirmed.stderr and "Traceback" not in confirmed.stderr
    before = json.loads(plain.stdout)["diagnostics"]
    after = json.loads(confirmed.stdout)["diagnostics"]
    assert before and len(after) == len(before)
    assert {d["confirmation"] for d in after} == {"not-run"}
    assert [(d["code"], d["line"]) for d in after] == [(d["code"], d["line"]) for d in before]
    assert fake_cupy.read_text().count("import") == 1  # probed once for the run, not per file or kernel


def test_without_cupy_the_same_one_note(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    plain = _run([TRANSPOSE])
    confirmed = _run([TRANSPOSE, "--confirm"])
    assert plain.exit_code == confirmed.exit_code == 1
    notes = [ln for ln in confirmed.stderr.splitlines() if ln.strip()]
    assert len(notes) == 1 and "no usable CUDA device/driver: confirmation not run" in notes[0]
    assert "pip install 'kernlint[gpu]'" in notes[0]
    assert {d["confirmation"] for d in json.loads(confirmed.stdout)["diagnostics"]} == {"not-run"}
