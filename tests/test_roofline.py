"""Roofline figures against answers worked out by hand (fixtures/roofline_kernels.cu, rules/roofline.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli import main
from kernlint.engine import LintOptions, lint_with_suppressions
from kernlint.roofline import ARCH_PEAKS, rooflines

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "roofline_kernels.cu"


def _by_kernel(arch: str) -> dict:
    result = lint_with_suppressions(FIXTURE.read_text(), str(FIXTURE), LintOptions())
    return {r.kernel: r for r in rooflines(result.results, arch)}


@pytest.mark.parametrize("arch", sorted(ARCH_PEAKS))
def test_saxpy_two_flops_twelve_bytes_memory_bound_everywhere(arch: str) -> None:
    r = _by_kernel(arch)["saxpy"]
    assert (r.fp32_flops, r.fp64_flops) == (2, 0)  # a * x[i] + y[i]: one FMA = 2 FLOPs; i is integer
    assert r.bytes == r.ideal_bytes == 12  # x and y loaded, y stored: 3 x 4 bytes, coalesced
    assert r.bound() == "memory"
    assert r.attainable_fraction() == pytest.approx((2 / 12) / r.ridge())


def test_polynomial_is_compute_bound_on_sm_90_with_its_loop_extrapolated() -> None:
    r = _by_kernel("sm_90")["polynomial"]
    assert r.flops == 2000 and r.bytes == 8  # 1000 multiply-adds; one float loaded, one stored
    assert r.loops == ((15, 1000),) and r.trips_known
    assert r.ridge() == pytest.approx(67e12 / 3350e9)  # 20 FLOP/B
    assert r.bound() == "compute" and r.attainable_fraction() == 1.0


def test_uncoalesced_real_bytes_exceed_ideal_by_the_sector_ratio() -> None:
    r = _by_kernel("sm_80")["rows"]
    # a[i * ld]: one 32-byte sector per lane for 4 useful bytes (8x), plus a coalesced 4-byte store.
    assert r.bytes == 32 + 4 and r.ideal_bytes == 4 + 4
    assert r.intensity() == pytest.approx(1 / 36) and r.intensity(ideal=True) == pytest.approx(1 / 8)


def test_double_precision_counts_apart_and_uses_the_fp64_ridge() -> None:
    r = _by_kernel("sm_80")["daxpy"]
    assert (r.fp32_flops, r.fp64_flops) == (0, 2) and r.bytes == 24
    assert r.ridge() == pytest.approx(9.7e12 / 1555e9)


def test_json_kernels_carry_the_roofline_and_text_table_is_opt_in() -> None:
    runner = CliRunner()
    out = runner.invoke(main, [str(FIXTURE), "--format", "json", "--arch", "sm_90", "--no-project"])
    kernels = {k["name"]: k for k in json.loads(out.output)["kernels"]}
    assert kernels["saxpy"]["flops_per_thread"] == 2 and kernels["saxpy"]["bytes_per_thread"] == 12
    assert kernels["polynomial"]["bound"] == "compute" and kernels["polynomial"]["ridge"] == 20
    assert kernels["rows"]["ideal_bytes_per_thread"] == 8 and "coverage" in kernels["rows"]
    plain = runner.invoke(main, [str(FIXTURE), "--no-project"]).output
    table = runner.invoke(main, [str(FIXTURE), "--statistics", "--arch", "sm_90", "--no-project"]).output
    assert "FLOP/B" not in plain
    assert "FLOP/B" in table and "H100-SXM5" in table
    assert any(line.startswith("polynomial") and "compute" in line for line in table.splitlines())


def test_config_roofline_peak_replaces_the_table_row(tmp_path: Path) -> None:
    (tmp_path / "kernlint.toml").write_text("roofline-peak = [1.0, 0.5, 1000]\n")
    src = tmp_path / "k.cu"
    src.write_text(FIXTURE.read_text())
    out = CliRunner().invoke(main, [str(src), "--format", "json", "--config", str(tmp_path / "kernlint.toml")])
    kernels = {k["name"]: k for k in json.loads(out.output)["kernels"]}
    # 1 TFLOP/s over 1000 GB/s: ridge 1 FLOP/B; the polynomial's 250 FLOP/B is compute bound.
    assert kernels["saxpy"]["ridge"] == 1.0 and kernels["saxpy"]["gpu"] == "configured roofline-peak"
    assert kernels["daxpy"]["ridge"] == 0.5
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "kernlint.toml").write_text("roofline-peak = [1.0, 2.0]\n")
    res = CliRunner().invoke(main, [str(src), "--config", str(bad / "kernlint.toml")])
    assert res.exit_code == 2 and "roofline-peak" in res.output
