"""Honest coverage: accesses and branches seen vs evaluated per kernel, KL904, the summary line, JSON."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kernlint.checks import ALL_RULES
from kernlint.cli.command import main
from kernlint.engine.lint import LintOptions, lint_source, lint_with_suppressions
from kernlint.eval.coverage import KernelCoverage, show_lines, summary
from kernlint.reporters import ReportContext, render

GATHER = """\
__global__ void gather(const float* a, const int* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[idx[i]];
}
"""

UNBOUND = """\
template <int N>
__global__ void tiled(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i * N] = 1.0f;
}
"""

FULL = """\
__global__ void scale(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[4];
    for (int k = 0; k < 4; ++k)
        acc[k] = a[i];
    if (i < n)
        out[i] = acc[0] * 2.0f;
}
"""

OPTS = LintOptions(resources=False)


def record(text: str, options: LintOptions = OPTS) -> KernelCoverage:
    (rec,) = lint_source(text, "k.cu", options).coverage
    return rec


def kl904(text: str, options: LintOptions = OPTS) -> list:
    return [d for d in lint_source(text, "k.cu", options).diagnostics if d.code == "KL904"]


def test_gather_is_partly_analysed_because_of_loaded_data() -> None:
    rec = record(GATHER)
    assert rec.status == "partial"
    # idx[i] and out[i] are evaluated; a[idx[i]] is seen but its address is data.
    assert (rec.accesses_evaluated, rec.accesses_seen) == (2, 3)
    assert (rec.branches_evaluated, rec.branches_seen) == (1, 1)
    assert [(g.kind, g.lines) for g in rec.gaps] == [("loaded", (4,))]
    (d,) = kl904(GATHER)
    assert d.line == 1 and d.severity.label == "info"
    assert "loaded data" in d.message
    assert any(n.startswith("line 4:") for n in d.notes)


def test_unbound_template_parameter_is_named_with_how_to_supply_it() -> None:
    rec = record(UNBOUND)
    assert rec.status == "none"
    assert [(g.kind, g.detail) for g in rec.gaps] == [("template", "N")]
    (d,) = kl904(UNBOUND)
    assert d.line == 1  # the kernel's line (its template header)
    assert "`N`" in d.message and "not analysed" in d.message
    assert any("--define N=" in n for n in d.notes)
    assert any("kernlint: define(N=" in n for n in d.notes)


def test_defining_the_template_parameter_makes_it_full() -> None:
    opts = LintOptions(resources=False, defines=(("N", 4),))
    assert record(UNBOUND, opts).status == "full"
    assert not kl904(UNBOUND, opts)


def test_fully_evaluated_kernel_has_no_kl904_and_local_arrays_are_not_accesses() -> None:
    rec = record(FULL)
    assert rec.status == "full"
    # a[i] and out[i]: the local array acc is registers, not memory.
    assert (rec.accesses_evaluated, rec.accesses_seen) == (2, 2)
    assert (rec.branches_evaluated, rec.branches_seen) == (2, 2)  # the loop condition and the if
    assert not kl904(FULL)


def test_code_skipped_by_a_launch_constant_is_dead_not_unevaluated() -> None:
    text = """\
__global__ void k(float* a) {
    if (blockDim.x > 512)
        a[threadIdx.x + 512] = 0.0f;
    a[threadIdx.x] = 1.0f;
}
void run(float* a) { k<<<64, 256>>>(a); }
"""
    rec = record(text)
    assert rec.status == "full" and rec.accesses_seen == 1


def test_code_not_reached_under_the_samples_is_reported_as_such() -> None:
    # `blockIdx.x == 1` would be re-evaluated in block 1 (eval/resample.py, tests/test_block_reach.py);
    # `blockIdx.x % 4 == 1` names no block to pick, and the sampled blocks 0 and 3 never enter it.
    text = """\
__global__ void k(float* a, int n) {
    if (blockIdx.x % 4 == 1)
        a[threadIdx.x] = 0.0f;
    a[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""
    rec = record(text)
    assert rec.status == "partial"
    assert [(g.kind, g.lines) for g in rec.gaps] == [("unreached", (3,))]
    assert "not reached under the sampled values" in kl904(text)[0].message


def test_unknown_pointer_from_memory_and_inlined_helper_report_at_call_site() -> None:
    text = """\
__device__ float get(const float* const* rows, int r, int c) { return rows[r][c]; }
__global__ void k(const float* const* rows, float* out) {
    out[threadIdx.x] = get(rows, threadIdx.x, 0);
}
"""
    rec = record(text)
    # rows[r] is evaluated; rows[r][c] goes through a pointer each lane loads from its own address (one
    # all lanes load from one address is an allocation of its own: eval/uniform_data.py); out[...] is
    # evaluated.
    assert (rec.accesses_evaluated, rec.accesses_seen) == (2, 3)
    assert [(g.kind, g.lines) for g in rec.gaps] == [("loaded", (3,))]


def test_budget_exhaustion_is_one_kl904_naming_the_budget() -> None:
    text = """\
__global__ void deep(float* a, int n) {
    for (int i = 0; i < 40; ++i)
        for (int j = 0; j < 40; ++j)
            for (int k = 0; k < 40; ++k)
                for (int m = 0; m < 40; ++m)
                    a[((i * 40 + j) * 40 + k) * 40 + m + threadIdx.x] += 1.0f;
    a[threadIdx.x] = 0.0f;
}
"""
    found = kl904(text)
    assert len(found) == 1
    rec = record(text)
    assert rec.status == "partial"
    assert "budget" in {g.kind for g in rec.gaps} or "loop" in {g.kind for g in rec.gaps}


def test_kl904_is_suppressible() -> None:
    text = "// kernlint: ignore[KL904] CSR gather\n" + GATHER
    result = lint_with_suppressions(text, "k.cu", OPTS)
    assert not [d for d in result.diagnostics if d.code in ("KL904", "KL901")]


def test_show_lines_caps_the_list() -> None:
    assert show_lines([7]) == "line 7"
    assert show_lines([3, 5]) == "lines 3, 5"
    assert show_lines(list(range(1, 14))) == "lines 1, 2, 3, 4, 5, 6 and 7 more lines"


def test_summary_line_counts_kernels_by_status() -> None:
    recs = [record(FULL), record(GATHER), record(UNBOUND)]
    assert summary(recs) == "3 kernels: 1 fully analysed, 1 partly, 1 not analysed (KL904)"
    assert summary([record(FULL)]) == "1 kernel: fully analysed"
    assert summary([record(FULL), record(FULL)]) == "2 kernels: all fully analysed"


def ctx(kernels: list[KernelCoverage] | None) -> ReportContext:
    return ReportContext(sources={}, rules=ALL_RULES, color=False, version="0.1.0", kernels=kernels)


def test_text_output_ends_with_the_coverage_line_and_machine_formats_do_not() -> None:
    recs = [record(FULL), record(GATHER)]
    out = render("text", [], ctx(recs))
    # The coverage line comes just before the closing "Found ..." / "No findings" summary.
    assert out.splitlines()[-2] == "2 kernels: 1 fully analysed, 1 partly (KL904)"
    assert out.splitlines()[-1] == "No findings"
    assert "kernels:" not in render("sarif", [], ctx(recs))
    assert "fully analysed" not in render("concise", [], ctx(recs))


def test_json_carries_one_coverage_record_per_kernel() -> None:
    doc = json.loads(render("json", [], ctx([record(GATHER)])))
    assert set(doc) == {"version", "diagnostics", "kernels"}
    (k,) = doc["kernels"]
    assert (k["name"], k["path"], k["line"]) == ("gather", "k.cu", 1)
    cov = k["coverage"]
    assert cov["status"] == "partial"
    assert cov["accesses"] == {"evaluated": 2, "seen": 3}
    assert cov["branches"] == {"evaluated": 1, "seen": 1}
    assert cov["reasons"][0]["reason"] == "loaded" and cov["reasons"][0]["lines"] == [4]


def test_cli_kl904_does_not_change_the_exit_status_at_the_default_fail_on(tmp_path: Path) -> None:
    p = tmp_path / "g.cu"
    p.write_text(GATHER)
    result = CliRunner().invoke(main, [str(p), "--no-ptxas"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "[KL904 analysis-incomplete]" in result.stdout
    assert result.stdout.splitlines()[-2] == "1 kernel: 0 fully analysed, 1 partly (KL904)"
    assert result.stdout.splitlines()[-1].startswith("Found 1 info in 1 file")
    result = CliRunner().invoke(main, [str(p), "--no-ptxas", "--format", "json"], catch_exceptions=False)
    assert json.loads(result.stdout)["kernels"][0]["coverage"]["status"] == "partial"
    result = CliRunner().invoke(main, [str(p), "--no-ptxas", "--fail-on", "info"], catch_exceptions=False)
    assert result.exit_code == 1


def test_a_region_re_evaluated_with_small_samples_counts_as_evaluated() -> None:
    text = """\
__global__ void k(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 64) {
        a[i * 2] = 0.0f;
    }
    a[i] = 1.0f;
}
"""
    result = lint_source(text, "k.cu", OPTS)
    (rec,) = result.coverage
    assert any(r.regions for r in result.results)  # the sampled n made the guard dead: re-evaluated
    assert rec.status == "full" and rec.accesses_seen == 2


def test_branches_on_warp_uniform_unknowns_are_evaluated() -> None:
    # A per-block flag, a float parameter, a ballot: unknown values, but one per warp, so the
    # branches cannot split a warp. A per-lane loaded value can.
    text = """\
__global__ void k(const int* flags, const float* in, float* out, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (flags[blockIdx.x]) out[i] = 0.0f;
    if (alpha > 0.0f) out[i] = 1.0f;
    if (__ballot_sync(0xffffffffu, in[i] > 0.0f) == 0u) out[i] = 2.0f;
    if (in[i] > 0.0f) out[i] = 3.0f;
}
"""
    rec = record(text)
    assert (rec.branches_evaluated, rec.branches_seen) == (3, 4)
    assert [(g.kind, g.lines, g.branches) for g in rec.gaps] == [("loaded", (6,), 1)]


def test_elements_of_a_register_object_are_not_memory_accesses() -> None:
    text = """\
struct Pack { float v[4]; __device__ float& operator[](int i) { return v[i]; } };
__global__ void k(const float* in, float* out) {
    Pack p;
    for (int j = 0; j < 4; ++j) p[j] = in[threadIdx.x * 4 + j];
    out[threadIdx.x] = p[0] + p[3];
}
"""
    rec = record(text)
    assert rec.status == "full"
    assert (rec.accesses_evaluated, rec.accesses_seen) == (2, 2)  # in[...] and out[...]
