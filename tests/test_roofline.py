"""Roofline figures against answers worked out by hand (fixtures/roofline_kernels.cu, rules/roofline.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main
from kernlint.engine.lint import LintOptions, lint_with_suppressions
from kernlint.checks.roofline import ARCH_PEAKS, rooflines

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
    assert "ideal FLOP/B" not in plain and "roofline for" not in plain  # the table is opt-in
    assert "ideal FLOP/B" in table and "H100-SXM5" in table
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


def test_a_coalescing_finding_says_what_fixing_it_buys_on_the_roofline() -> None:
    out = CliRunner().invoke(main, [str(FIXTURE), "--format", "json", "--arch", "sm_80", "--no-project"]).output
    (d,) = [d for d in json.loads(out)["diagnostics"] if d["code"] == "KL101"]
    g = d["metrics"]["roofline_gain"]
    # rows: 32 + 4 bytes per thread; with a[i * ld] coalesced, 4 + 4. Memory-bound either way, so the
    # attainable FLOP/s (and the bound on the speed-up) scale with the bytes: 36 / 8 = 4.5x.
    assert (g["bytes_per_thread"], g["bytes_per_thread_after_fix"]) == (36, 8)
    assert (g["bound"], g["bound_after_fix"]) == ("memory", "memory")
    assert g["speedup_bound"] == pytest.approx(4.5)
    assert g["intensity_after_fix"] == pytest.approx(1 / 8)  # out[i] = a[...] * 2.0f: 1 FLOP per 8 bytes
    assert any("what fixing it buys" in n and "36 to 8" in n for n in d["notes"])


def test_the_gain_stops_at_the_compute_roof() -> None:
    from kernlint.base.diagnostics import Diagnostic, Severity
    from kernlint.checks.roofline import ARCH_PEAKS, Roofline
    from kernlint.checks.roofline_gain import with_gains

    # 100 FLOPs per thread; 40 bytes, 36 of them one access that ideally moves 4: intensity 2.5 -> 12.5
    # on sm_80 (ridge 19.5e12 / 1555e9 = 12.54): still memory-bound, 5x. With 200 FLOPs the fix
    # crosses the ridge (5 -> 25 FLOP/B) and buys only up to the compute roof: 12.54 / 5 = 2.5x.
    d = Diagnostic("k.cu", 7, 3, "KL101", "uncoalesced-global-load", Severity.WARNING, "m", kernel="k")
    for flops, want in ((100, 5.0), (200, 19.5e12 / 1555e9 / 5)):
        row = Roofline("k", "k.cu", 1, "block (256,1,1)", "sm_80", "A100", flops, 0, 40, 8, (), False,
                       ARCH_PEAKS["sm_80"], ((7, 3, "load", 36.0, 4.0), (8, 3, "store", 4.0, 4.0)))
        (out,) = with_gains([d], [row])
        assert out.metrics["roofline_gain"]["speedup_bound"] == pytest.approx(want, rel=1e-3)
    other = Diagnostic("k.cu", 8, 3, "KL101", "uncoalesced-global-load", Severity.WARNING, "m", kernel="k")
    assert with_gains([other], [row]) == [other]  # its site wastes nothing: no note



def test_a_gain_over_a_loop_of_unknown_trip_count_says_its_bytes_cover_the_evaluated_iterations() -> None:
    from kernlint.base.diagnostics import Diagnostic, Severity
    from kernlint.checks.roofline import ARCH_PEAKS, Roofline
    from kernlint.checks.roofline_gain import with_gains

    # The loop at line 5 was not run to its end: 40 bytes per thread are what the evaluated iterations
    # moved, not the kernel's total, so the note must say so (the ratio, 5x, still holds).
    d = Diagnostic("k.cu", 7, 3, "KL101", "uncoalesced-global-load", Severity.WARNING, "m", kernel="k")
    for loops, said in (((), False), (((5, 12),), False), (((5, None),), True)):
        row = Roofline("k", "k.cu", 1, "block (256,1,1)", "sm_80", "A100", 100, 0, 40, 8, loops, False,
                       ARCH_PEAKS["sm_80"], ((7, 3, "load", 36.0, 4.0), (8, 3, "store", 4.0, 4.0)))
        (out,) = with_gains([d], [row])
        assert ("over the evaluated iterations (the trip count of the loop at line 5 is unknown)"
                in out.notes[-1]) == said
        assert out.metrics["roofline_gain"]["trip_counts_known"] == (not said)
        assert out.metrics["roofline_gain"]["speedup_bound"] == pytest.approx(5.0, rel=1e-3)

GEMM = Path(__file__).resolve().parent.parent / "fixtures" / "roofline_gemm.cu"


def test_gemm_intensity_rises_with_the_tile() -> None:
    """The seed's naive vs tiled GEMM (fixtures/roofline_gemm.cu, N = 32, figures per thread by hand).

    Every version does 32 multiply-adds: 64 FLOPs. Naive, block 16x16: per k, A[row*N+k] is two words
    (two rows per warp) in two sectors, 64 B per 32 threads = 2 B, B[k*N+col] 16 words of each half-warp,
    the same for both, two sectors = 2 B; 32 x 4 B + the 4 B store = 132 B. Ideal: A's two words fit one
    sector (1 B), so 32 x 3 + 4 = 100 B. Tiled 16x16: per tile one element of A and one of B per thread,
    each warp request two rows of 64 B = 4 sectors = 4 B per thread: 2 tiles x 8 B + 4 B = 20 B.
    Tiled 32x32: a warp is one 128-byte row, 4 B per thread per operand: 1 tile x 8 B + 4 B = 12 B.
    """
    result = lint_with_suppressions(GEMM.read_text(), str(GEMM), LintOptions())
    rows = {r.kernel: r for r in rooflines(result.results, "sm_90")}
    naive, t16, t32 = rows["gemm_naive"], rows["gemm_tiled16"], rows["gemm_tiled32"]
    assert naive.flops == t16.flops == t32.flops == 64
    assert (naive.bytes, naive.ideal_bytes) == (132, 100)
    assert (t16.bytes, t16.ideal_bytes) == (20, 20) and (t32.bytes, t32.ideal_bytes) == (12, 12)
    assert naive.intensity() < t16.intensity() < t32.intensity()
    assert all(r.trips_known and r.bound() == "memory" for r in (naive, t16, t32))


def test_a_fix_worth_under_one_percent_gets_no_gain_note() -> None:
    from kernlint.base.diagnostics import Diagnostic, Severity
    from kernlint.checks.roofline import ARCH_PEAKS, Roofline
    from kernlint.checks.roofline_gain import with_gains

    # No FLOPs, 102.5 bytes per thread, the access wastes 1: 102.5 / 101.5 = 1.0099x, under 1 %
    # (it rounds to 1.01, which must not let it through), and 1.2x is printed as 1.2, not 1.
    d = Diagnostic("k.cu", 7, 3, "KL103", "misaligned-global-access", Severity.INFO, "m", kernel="k")
    for waste, note in ((1.0, False), (17.75, True)):
        row = Roofline("k", "k.cu", 1, "block (256,1,1)", "sm_80", "A100", 0, 0, 102.5, 80, (), False,
                       ARCH_PEAKS["sm_80"], ((7, 3, "load", 5 + waste, 5.0),))
        (out,) = with_gains([d], [row])
        assert ("roofline_gain" in out.metrics) == note
        if note:
            assert "up to 1.21x faster" in out.notes[-1]




# `const T` spelled alike in a function template (T its own parameter) and in an instance of the file's
# kernel template (T = float): the type converter once keyed its cache on the written spelling alone, so
# whichever was lowered first typed the other, and the kernel's float arithmetic went uncounted.
HELPER = """
template <class T> __device__ inline int level(const T x, const T y) {
    const T r = x * y;
    return r < (T)4 ? 1 : 0;
}
"""
KERNEL = """
template <class T>
__global__ void shade(int* dst, const T scale, const T off) {
    const T x = (T)threadIdx.x * scale + off;
    dst[threadIdx.x] = level<T>(x, x);
}
void run(int* d) { shade<float><<<1, 32>>>(d, 0.5f, 1.0f); }
"""


@pytest.mark.parametrize("helper_in_header", [False, True])
def test_a_template_parameter_and_an_instance_type_spelled_alike_stay_apart(
        tmp_path: Path, helper_in_header: bool) -> None:
    if helper_in_header:
        (tmp_path / "level.cuh").write_text(HELPER)
        text = '#include "level.cuh"\n' + KERNEL
    else:
        text = HELPER + KERNEL  # lowered before the kernel's instance
    src = tmp_path / "shade.cu"
    src.write_text(text)
    result = lint_with_suppressions(text, str(src), LintOptions())
    r = {r.kernel: r for r in rooflines(result.results, "sm_80")}["shade"]
    # At least the kernel's own multiply-add (`(T)threadIdx.x * scale + off`); 0 with the old key.
    assert r.fp32_flops >= 2 and r.fp64_flops == 0
