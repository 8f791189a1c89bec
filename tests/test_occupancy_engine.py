"""Occupancy through the whole engine: exact registers from ptxas when nvcc is present, else an estimate."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kernlint.engine.lint import LintOptions, lint_source

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL401_register_heavy.cu"


def kl401(options: LintOptions):  # type: ignore[no-untyped-def]
    res = lint_source(FIXTURE.read_text(), str(FIXTURE), options)
    found = [d for d in res.diagnostics if d.code == "KL401"]
    assert len(found) == 1, [d.code for d in res.diagnostics]
    return found[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_heavy_kernel_gets_exact_registers_from_ptxas(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = kl401(LintOptions())
    assert d.metrics["registers_source"] == "exact"
    assert d.metrics["registers"] >= 96
    assert d.metrics["limiter"] == "registers"
    assert d.metrics["block_size"] == 256


def test_without_nvcc_registers_are_estimated_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    bare = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p) / "nvcc").exists() and not (Path(p) / "ptxas").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(bare))
    assert shutil.which("nvcc") is None
    d = kl401(LintOptions())
    assert d.metrics["registers_source"] == "estimated"
    assert "estimated" in d.message
    assert any("nvcc not found" in a for a in d.assumptions)


def test_no_ptxas_option_estimates_without_running_the_compiler() -> None:
    d = kl401(LintOptions(resources=False))
    assert d.metrics["registers_source"] == "estimated"


def test_launch_bounds_given_by_a_macro_is_folded() -> None:
    src = ("#define THREADS 100\n"
           "__global__ void __launch_bounds__(THREADS) k(float* a) { a[blockIdx.x * blockDim.x + threadIdx.x] = 0.f; }\n")
    codes = {d.code for d in lint_source(src, "lb.cu", LintOptions(resources=False)).diagnostics}
    assert "KL404" in codes
