"""Precision mechanisms on real-code patterns: what a finding says, and at which severity."""
from __future__ import annotations

from pathlib import Path

from kernlint.diagnostics import Severity
from kernlint.engine import lint_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def lint(name: str):  # type: ignore[no-untyped-def]
    path = FIXTURES / name
    return lint_source(path.read_text(), str(path)).diagnostics


def test_byte_stride_is_a_conditional_info_and_a_row_pitch_a_warning() -> None:
    diags = {d.line: d for d in lint("KL101_byte_stride.cu") if d.code == "KL101"}
    byte_stride = diags[12]
    assert byte_stride.severity is Severity.INFO
    assert byte_stride.message.startswith("uncoalesced global load unless nb0 == 4")
    assert byte_stride.metrics["coalesced_if"] == {"nb0": 4}
    pitch = diags[19]
    assert pitch.severity is Severity.WARNING and "unless" not in pitch.message
