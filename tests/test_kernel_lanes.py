"""KL306 low-active-lanes: the kernel-level average, checked against the numbers worked by hand in
fixtures/KL306_wavefront.cu."""
from __future__ import annotations

from pathlib import Path

from kernlint.engine.lint import LintOptions, lint_source

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "KL306_wavefront.cu"


def test_the_wavefront_average_and_site_costs_match_the_hand_count() -> None:
    res = lint_source(FIXTURE.read_text(), str(FIXTURE), LintOptions(resources=False))
    [d] = [d for d in res.diagnostics if d.code == "KL306" and d.kernel == "align_tile"]
    assert d.severity.label == "warning"
    # 52723 active-lane operations over 2565 operations (the fixture's comment).
    assert d.metrics["avg_active_lanes"] == round(52723 / 2565, 2)
    sites = {s["line"]: s["idle_fraction"] for s in d.metrics["sites"]}
    assert sites[40] == round(16368 / 82080, 4) and sites[50] == round(12896 / 82080, 4)
    assert "20.6 of 32 active lanes" in d.message and "line 40: 20 %" in d.message
    fixes = d.notes[-1]
    assert "more independent work per warp" in fixes and "several anti-diagonals" in fixes
    # The branches themselves stay infos: each is a sweep.
    assert {x.severity.label for x in res.diagnostics if x.code == "KL301" and x.line in (40, 50)} == {"info"}


def test_an_average_that_hangs_on_a_sampled_trip_count_is_an_info_naming_the_loop() -> None:
    res = lint_source(FIXTURE.read_text(), str(FIXTURE), LintOptions(resources=False))
    [d] = [d for d in res.diagnostics if d.code == "KL306" and d.kernel == "sum_then_tree"]
    assert d.severity.label == "info"
    assert "the trip count of the loop at line 102 (it depends on" in d.notes[0] and "`n`, sampled" in d.notes[0]
