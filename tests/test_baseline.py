"""Baselines: old findings stay hidden through unrelated edits; new ones and bad files surface."""
from __future__ import annotations

import dataclasses
import json

import pytest

from kernlint.reporters.baseline import filter_new, fingerprint, load_baseline, write_baseline
from kernlint.base.diagnostics import Diagnostic, Severity

SOURCE = """\
__global__ void k(const float* a, float* out, int ld) {
    out[threadIdx.x] = a[threadIdx.x * 32];
    out[threadIdx.x + 32] = a[threadIdx.x * ld];
}
"""


def d(line: int, code: str = "KL101", kernel: str = "k", path: str = "k.cu") -> Diagnostic:
    return Diagnostic(path, line, 24, code, "uncoalesced-global-load", Severity.WARNING, f"finding on {line}", kernel=kernel)


def test_round_trip_hides_everything_recorded() -> None:
    diags = [d(2), d(3), d(2, "KL102")]
    sources = {"k.cu": SOURCE}
    text = write_baseline(diags, sources)
    doc = json.loads(text)
    assert doc["kernlint_baseline"] == 1
    assert {(e["line"], e["code"]) for e in doc["findings"]} == {(2, "KL101"), (3, "KL101"), (2, "KL102")}
    baseline = load_baseline(text)
    assert len(baseline) == 3
    assert filter_new(diags, sources, baseline) == []


def test_unrelated_edits_do_not_resurface_old_findings() -> None:
    baseline = load_baseline(write_baseline([d(2), d(3)], {"k.cu": SOURCE}))
    edited = "#include <cstdio>\n// a new comment\n\n" + SOURCE.replace("    out", "  out")
    later = [d(5), d(6)]
    assert filter_new(later, {"k.cu": edited}, baseline) == []


def test_new_findings_are_reported() -> None:
    baseline = load_baseline(write_baseline([d(2)], {"k.cu": SOURCE}))
    grown = SOURCE.replace("}\n", "    out[0] = a[threadIdx.x * 64];\n}\n")
    new = filter_new([d(2), d(3), d(4)], {"k.cu": grown}, baseline)
    assert [x.line for x in new] == [3, 4]
    # Another kernel, rule or file with the same line text is a different finding.
    assert filter_new([d(2, kernel="k2")], {"k.cu": SOURCE}, baseline) == [d(2, kernel="k2")]
    assert filter_new([d(2, "KL102")], {"k.cu": SOURCE}, baseline) == [d(2, "KL102")]
    other = d(2, path="copy.cu")
    assert filter_new([other], {"copy.cu": SOURCE}, baseline) == [other]


def test_a_second_identical_line_is_new() -> None:
    text = "k() {\n  a[t*32] = 0;\n}\n"
    baseline = load_baseline(write_baseline([d(2)], {"k.cu": text}))
    doubled = "k() {\n  a[t*32] = 0;\n  a[t*32] = 0;\n}\n"
    assert len(filter_new([d(2), d(3)], {"k.cu": doubled}, baseline)) == 1


def test_fingerprint_ignores_line_number_and_message() -> None:
    moved = dataclasses.replace(d(2), line=7, message="reworded")
    assert fingerprint(d(2), SOURCE) == fingerprint(moved, "\n" * 5 + SOURCE)
    assert fingerprint(d(2), SOURCE, occurrence=1) != fingerprint(d(2), SOURCE)
    assert fingerprint(d(2), None)  # no source text: still a fingerprint (from the other parts)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a kernlint baseline"),
        ('{"kernlint_baseline": 99, "findings": []}', "format 99 is not supported"),
        ('{"kernlint_baseline": 1}', "no \"findings\" list"),
        ('{"kernlint_baseline": 1, "findings": [{"path": "k.cu"}]}', "entry 0 has no \"fingerprint\""),
    ],
)
def test_bad_baselines_are_refused_clearly(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        load_baseline(text)
    assert fragment in str(info.value)
