"""Issue 28 items 4-7: what the fixtures' findings say (the fixtures' markers check which findings and
severities; these check the numbers and words worked by hand in the fixtures' comments)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.engine.lint import lint_with_suppressions
from kernlint.eval.result import _shown

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _lint(name: str) -> dict[tuple[int, str], object]:
    path = FIXTURES / name
    diags = lint_with_suppressions(path.read_text(), str(path)).diagnostics
    return {(d.line, d.code): d for d in diags}


def test_l1_reuse_across_unrolled_loop_bases_severity_on_misses() -> None:
    found = _lint("KL101_l1_reuse_loop.cu")
    quant = found[(21, "KL101")]
    assert quant.severity.name == "INFO"
    # Sectors per request as Nsight's L1 counters show them stay in the metrics...
    assert quant.metrics["sectors"] == 5 and quant.metrics["ideal_sectors"] == 1
    # ...and the misses: 5 sectors over 4 requests (iteration 0 only), 1.25x the ideal 4.
    assert quant.metrics["l1_miss_sectors_per_request"] == 1.25
    assert quant.metrics["l1_miss_ratio"] == 1.25
    assert quant.metrics["l1_working_set_sectors"] == 5
    gain = quant.metrics.get("roofline_gain")
    assert gain is None or gain["speedup_bound"] < 1.5  # not the 3x of counting L1 hits as traffic
    rows = found[(37, "KL101")]
    assert rows.severity.name == "WARNING"
    assert "l1_miss_ratio" not in rows.metrics  # a 32-sector working set is not credited


def test_unevaluated_loop_body_says_work_unknown() -> None:
    found = _lint("KL305_unevaluated_body.cu")
    for line in (14, 26):
        d = found[(line, "KL305")]
        assert d.severity.name == "INFO"
        assert "work unknown" in d.message
        assert "memory request" not in d.message  # nothing about requests it did not evaluate
        assert d.metrics["region_memory_requests"] is None
    spmv = found[(44, "KL305")]
    assert spmv.severity.name == "WARNING"
    assert "9 operations and 4 memory requests per warp in each iteration" in spmv.message
    assert "3 of the requests at addresses kernlint could not evaluate" in spmv.message


@pytest.fixture()
def message_defects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[tuple[int, str], object]:
    from kernlint.engine.lint import LintOptions
    from kernlint.project.index import ProjectIndex

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path))
    project = FIXTURES / "projects" / "message_defects"
    f = project / "kernels.cu"
    index = ProjectIndex.build(project.resolve())
    diags = lint_with_suppressions(f.read_text(), str(f), LintOptions(project=index)).diagnostics
    return {(d.line, d.code): d for d in diags}


def test_divergence_in_header_helper_names_its_place(message_defects: dict) -> None:
    d = message_defects[(9, "KL301")]
    assert "divergent branch in pick() at pick.cuh:4, inlined by the call on this line" in d.message


def test_requested_and_distinct_bytes_are_both_named(message_defects: dict) -> None:
    d = message_defects[(19, "KL101")]
    assert "8 32-byte sectors for 128 requested (32 distinct) bytes; 1 would suffice" in d.message
    assert d.metrics["distinct_bytes"] == 32


def test_kl305_warning_never_contradicts_its_own_estimate(message_defects: dict) -> None:
    d = message_defects[(35, "KL305")]
    assert d.severity.name == "INFO"
    assert d.metrics["avg_active_lanes_worst"] >= 24


def test_sampled_values_are_listed_once_each() -> None:
    assert _shown((1024, 1024)) == "1024"
    assert _shown((4096, 6144)) == "4096 and 6144"


def test_each_launch_finding_cites_its_own_launch() -> None:
    found = _lint("KL404_each_launch.cu")
    for line, threads in ((8, 48), (9, 80), (10, 100)):
        d = found[(line, "KL404")]
        assert f"block size {threads} (launch at line {line})" in d.assumptions, d.assumptions
        assert d.metrics["block_size"] == threads
