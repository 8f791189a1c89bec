"""Which of several launch shapes' findings at one site is kept (engine/lint.py `_severity_score`): the most
severe, then the worst ratio to the ideal, then, at one ratio, the one that wastes the most."""
from __future__ import annotations

from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.engine.lint import _severity_score


def _finding(sectors: int, ideal: int, severity: Severity = Severity.INFO) -> Diagnostic:
    return Diagnostic(path="k.cu", line=3, column=5, code="KL102", name="uncoalesced-global-store",
                      severity=severity, message="", kernel="k",
                      metrics={"sectors": sectors, "ideal_sectors": ideal})


def test_at_one_ratio_the_shape_that_wastes_more_sectors_is_worse() -> None:
    rgba8, rgba32 = _finding(4, 1), _finding(16, 4)  # both 4.0x: 3 sectors wasted against 12
    assert _severity_score(rgba32) > _severity_score(rgba8)
    assert max([rgba8, rgba32], key=_severity_score) is rgba32


def test_severity_then_ratio_come_first() -> None:
    assert _severity_score(_finding(8, 4, Severity.WARNING)) > _severity_score(_finding(32, 4))
    assert _severity_score(_finding(8, 1)) > _severity_score(_finding(16, 4))  # 8x beats 4x with more waste
