"""Reporters, rule docs and the exit-code policy, on hand-built diagnostics and a small source."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from kernlint.checks import docs
from kernlint.reporters.baseline import fingerprints
from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Edit, Severity
from kernlint.base.exitcodes import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, exit_code
from kernlint.reporters import FORMATS, ReportContext, render
from kernlint.reporters.github import escape_data, escape_property
from kernlint.reporters.text import caret_line

SCHEMA = Path(__file__).resolve().parents[1] / "kernlint" / "reporters" / "sarif-schema-2.1.0.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

KERNEL = """\
__global__ void transpose(const float* in, float* out, int h) {
    int x = blockIdx.x * 32 + threadIdx.x;
\tout[x * h] = in[threadIdx.x * 32];
}
"""
OTHER = "__global__ void other(float* a) {\n    a[threadIdx.x + 1] = 0.f;\n}\n"

RULES = (
    Rule("KL101", "uncoalesced-global-load", "global load is not coalesced across the warp", Severity.WARNING),
    Rule("KL102", "uncoalesced-global-store", "global store is not coalesced across the warp", Severity.WARNING),
    Rule("KL103", "misaligned-global-access", "global access straddles an extra sector", Severity.INFO),
    Rule("KL301", "divergent-barrier", "__syncthreads under a divergent branch", Severity.ERROR, category="sync"),
)

LOAD = Diagnostic(
    path="src/transpose.cu",
    line=3,
    column=16,
    end_line=3,
    end_column=34,
    code="KL101",
    name="uncoalesced-global-load",
    severity=Severity.WARNING,
    message="global load touches 32 sectors per warp; 4 would suffice",
    kernel="transpose",
    notes=("lane 0 -> +0 B, lane 1 -> +128 B", "fix: swap the x/y mapping"),
    assumptions=("blockDim = (32, 8, 1)", "h = symbol"),
    metrics={"sectors": np.int64(32), "ideal_sectors": 4, "active_lanes": 32, "bytes_per_lane": 4},
    fixes=(Edit(3, 17, 3, 33, "threadIdx.x", "read contiguously"),),
)
STORE = Diagnostic(
    path="src/transpose.cu",
    line=3,
    column=2,
    code="KL102",
    name="uncoalesced-global-store",
    severity=Severity.WARNING,
    message="global store touches 32 sectors per warp; 4 would suffice",
    kernel="transpose",
    confirmation="confirmed",
    metrics={"sectors": 32, "measured_sectors": 32},
)
MISALIGNED = Diagnostic(
    path="src/other.cu",
    line=2,
    column=5,
    code="KL103",
    name="misaligned-global-access",
    severity=Severity.INFO,
    message="store straddles 5 sectors; 4 if aligned",
    kernel="other",
)
BARRIER = Diagnostic(
    path="src/other.cu",
    line=1,
    column=1,
    code="KL301",
    name="divergent-barrier",
    severity=Severity.ERROR,
    message="__syncthreads() under a divergent branch",
)
ALL = [MISALIGNED, LOAD, BARRIER, STORE]


def make_ctx(color: bool = False, sources: dict[str, str] | None = None, **kw: str) -> ReportContext:
    srcs = {"src/transpose.cu": KERNEL, "src/other.cu": OTHER} if sources is None else sources
    return ReportContext(sources=srcs, rules=RULES, color=color, version="0.1.0", **kw)


# --------------------------------------------------------------------------------------- dispatch


def test_every_format_renders_and_unknown_is_refused() -> None:
    for fmt in FORMATS:
        assert render(fmt, ALL, make_ctx()).endswith("\n")
    with pytest.raises(ValueError, match="unknown format"):
        render("xml", ALL, make_ctx())


# ------------------------------------------------------------------------------------------- text


def test_text_has_location_rule_frame_notes_and_summary() -> None:
    out = render("text", ALL, make_ctx())
    lines = out.splitlines()
    head = lines.index(
        "src/transpose.cu:3:16: warning: global load touches 32 sectors per warp; 4 would suffice "
        "[KL101 uncoalesced-global-load]"
    )
    assert lines[head + 1] == "\tout[x * h] = in[threadIdx.x * 32];"
    # The caret line copies the tab, then puts ^ under column 16 and ~ up to column 33.
    assert lines[head + 2] == "\t" + " " * 14 + "^" + "~" * 17
    assert lines[head + 3] == "  note: lane 0 -> +0 B, lane 1 -> +128 B"
    assert lines[head + 4] == "  note: fix: swap the x/y mapping"
    assert lines[head + 5] == "  note: assuming blockDim = (32, 8, 1); h = symbol"
    assert lines[-1] == "Found 1 error, 2 warnings, 1 info in 2 files"


def test_text_caret_sits_under_the_column() -> None:
    out = render("text", [MISALIGNED], make_ctx())
    source, caret = out.splitlines()[1:3]
    assert source == "    a[threadIdx.x + 1] = 0.f;"
    assert caret.index("^") == MISALIGNED.column - 1
    assert caret.strip() == "^"
    assert caret_line("abc", 2, 4) == " ^~"
    assert caret_line("ab", 5) == "    ^"  # past the end of a short line: still placed


def test_text_shows_confirmation() -> None:
    out = render("text", [STORE], make_ctx())
    assert "  note: confirmed on a GPU (measured sectors=32)" in out


def test_text_without_colour_has_no_ansi_and_with_colour_has_it() -> None:
    plain = render("text", ALL, make_ctx(color=False))
    assert not ANSI.search(plain)
    coloured = render("text", ALL, make_ctx(color=True))
    assert "\x1b[1;31merror:" in coloured
    assert "\x1b[1;33mwarning:" in coloured
    assert "\x1b[1;36minfo:" in coloured
    assert ANSI.sub("", coloured) == plain


def test_text_summary_without_findings() -> None:
    assert render("text", [], make_ctx()) == "No findings\n"


def test_text_skips_frame_when_source_is_unknown() -> None:
    out = render("text", [LOAD], make_ctx(sources={}))
    assert out.splitlines()[1] == "  note: lane 0 -> +0 B, lane 1 -> +128 B"


# ---------------------------------------------------------------------------------------- concise


def test_concise_is_one_line_per_finding() -> None:
    out = render("concise", ALL, make_ctx())
    assert out.splitlines() == [
        "src/other.cu:1:1: KL301 [error] __syncthreads() under a divergent branch",
        "src/other.cu:2:5: KL103 [info] store straddles 5 sectors; 4 if aligned",
        "src/transpose.cu:3:2: KL102 [warning] (confirmed) global store touches 32 sectors per warp; 4 would suffice",
        "src/transpose.cu:3:16: KL101 [warning] global load touches 32 sectors per warp; 4 would suffice",
    ]
    assert render("concise", [], make_ctx()) == ""


# ------------------------------------------------------------------------------------------- json


def test_json_is_one_object_with_version_and_diagnostics() -> None:
    doc = json.loads(render("json", ALL, make_ctx()))
    assert set(doc) == {"version", "diagnostics"}
    assert doc["version"] == "0.1.0"
    assert [d["code"] for d in doc["diagnostics"]] == ["KL301", "KL103", "KL102", "KL101"]
    load = doc["diagnostics"][3]
    assert load["metrics"] == {"sectors": 32, "ideal_sectors": 4, "active_lanes": 32, "bytes_per_lane": 4}
    assert load["assumptions"] == ["blockDim = (32, 8, 1)", "h = symbol"]
    assert load["severity"] == "warning"
    assert load["fixes"][0]["text"] == "threadIdx.x"


# ------------------------------------------------------------------------------------------ sarif


def sarif(diags: list[Diagnostic], **kw: str) -> dict:
    log = json.loads(render("sarif", diags, make_ctx(**kw)))
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    # A dev-only dependency: imported here so that `pytest -m gpu` collects with only the runtime
    # and `gpu` extras installed.
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def test_sarif_validates_against_the_oasis_schema() -> None:
    log = sarif(ALL, tool_uri="https://github.com/example/kernlint")
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kernlint" and driver["version"] == "0.1.0"
    assert driver["informationUri"] == "https://github.com/example/kernlint"
    assert [r["id"] for r in driver["rules"]] == ["KL101", "KL102", "KL103", "KL301"]
    kl301 = driver["rules"][3]
    assert kl301["name"] == "divergent-barrier"
    assert kl301["defaultConfiguration"]["level"] == "error"
    assert kl301["helpUri"] == "https://github.com/example/kernlint/blob/main/rules/KL301-divergent-barrier.md"
    assert driver["rules"][2]["defaultConfiguration"]["level"] == "note"
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]


def test_sarif_result_carries_region_properties_fingerprint_and_fix() -> None:
    log = sarif([LOAD])
    res = log["runs"][0]["results"][0]
    assert res["level"] == "warning"
    assert res["message"]["text"].startswith(LOAD.message)
    phys = res["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"] == {"uri": "src/transpose.cu", "uriBaseId": "%SRCROOT%"}
    assert phys["region"] == {"startLine": 3, "startColumn": 16, "endLine": 3, "endColumn": 34}
    assert res["locations"][0]["logicalLocations"] == [{"name": "transpose", "kind": "function"}]
    props = res["properties"]
    assert props["metrics"]["sectors"] == 32
    assert props["assumptions"] == list(LOAD.assumptions)
    assert props["kernel"] == "transpose"
    assert props["notes"] == list(LOAD.notes)
    assert res["partialFingerprints"]["kernlint/v1"] == fingerprints([LOAD], make_ctx().sources)[0]
    fix = res["fixes"][0]
    assert fix["description"]["text"] == "read contiguously"
    replacement = fix["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"] == {"startLine": 3, "startColumn": 17, "endLine": 3, "endColumn": 33}
    assert replacement["insertedContent"]["text"] == "threadIdx.x"
    assert sarif([STORE])["runs"][0]["results"][0]["properties"]["confirmation"] == "confirmed"


def test_sarif_relativises_absolute_paths_and_handles_odd_ones() -> None:
    moved = dataclasses.replace(LOAD, path="/work/proj/src/a b.cu")
    phys = sarif([moved], root="/work/proj")["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "src/a%20b.cu"
    elsewhere = sarif([moved], root="/other")["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert elsewhere["artifactLocation"] == {"uri": "file:///work/proj/src/a%20b.cu"}
    # A file-level finding (line 0) and a code missing from the catalogue still give a valid log.
    odd = Diagnostic("x.cu", 0, 0, "KL999", "parse-failure", Severity.ERROR, "cannot parse")
    log = sarif([odd])
    assert "region" not in log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert log["runs"][0]["tool"]["driver"]["rules"][0]["id"] == "KL999"


def test_sarif_rule_help_comes_from_the_doc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "KL101-uncoalesced-global-load.md").write_text(DOC, encoding="utf-8")
    monkeypatch.setattr(docs, "_docs_root", lambda: tmp_path)
    rule = sarif([LOAD])["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["help"]["markdown"] == DOC
    assert rule["fullDescription"]["text"].startswith("Flags a global-memory load")
    assert rule["shortDescription"]["text"] == RULES[0].summary


def test_fingerprints_survive_line_shifts_and_reindenting() -> None:
    sources = {"src/transpose.cu": KERNEL}
    before = fingerprints([LOAD, STORE], sources)
    shifted_text = "// header\n#include <cuda.h>\n\n" + KERNEL.replace("\tout", "        out")
    shifted = [dataclasses.replace(d, line=d.line + 3) for d in (LOAD, STORE)]
    assert fingerprints(shifted, {"src/transpose.cu": shifted_text}) == before
    sarif_fp = sarif([LOAD])["runs"][0]["results"][0]["partialFingerprints"]
    assert sarif_fp == {"kernlint/v1": before[0]}
    # Editing the flagged line itself changes it.
    edited = {"src/transpose.cu": KERNEL.replace("in[threadIdx.x * 32]", "in[threadIdx.x * 64]")}
    assert fingerprints([LOAD], edited)[0] != before[0]


def test_identical_lines_get_distinct_fingerprints_by_occurrence() -> None:
    text = "k() {\n  a[t*32] = 0;\n  a[t*32] = 0;\n}\n"
    first = dataclasses.replace(LOAD, path="d.cu", line=2)
    second = dataclasses.replace(LOAD, path="d.cu", line=3)
    fps = fingerprints([second, first], {"d.cu": text})
    assert fps[0] != fps[1]
    assert fingerprints([first], {"d.cu": text})[0] == fps[1]


# ----------------------------------------------------------------------------------------- github

WORKFLOW_COMMAND = re.compile(
    r"^::(?P<cmd>error|warning|notice) "
    r"file=(?P<file>[^,:\r\n]*),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"endLine=\d+,endColumn=\d+,title=(?P<title>[^,:\r\n]*)"
    r"::(?P<msg>[^\r\n]*)$"
)


def test_github_lines_match_the_workflow_command_grammar() -> None:
    lines = render("github", ALL, make_ctx()).splitlines()
    assert len(lines) == 4
    matches = [WORKFLOW_COMMAND.match(line) for line in lines]
    assert all(matches), lines
    # Errors first, then warnings, then notices (GitHub shows only 10 of each kind per step).
    assert [m["cmd"] for m in matches if m] == ["error", "warning", "warning", "notice"]
    load = next(m for m in matches if m and m["title"] == "KL101 uncoalesced-global-load")
    assert load is not None
    assert (load["file"], load["line"], load["col"]) == ("src/transpose.cu", "3", "16")
    assert load["title"] == "KL101 uncoalesced-global-load"
    assert load["msg"].split("%0A") == [LOAD.message, *LOAD.notes, "assuming blockDim = (32, 8, 1); h = symbol"]
    assert render("github", [], make_ctx()) == ""


def test_github_escaping() -> None:
    assert escape_data("100% a\r\nb") == "100%25 a%0D%0Ab"
    assert escape_property("C:\\x,y%") == "C%3A\\x%2Cy%25"
    odd = dataclasses.replace(MISALIGNED, path="dir,1/a:b.cu", message="50% of\nlanes")
    line = render("github", [odd], make_ctx()).rstrip("\n")
    m = WORKFLOW_COMMAND.match(line)
    assert m is not None
    assert m["file"] == "dir%2C1/a%3Ab.cu"
    assert m["msg"] == "50%25 of%0Alanes"


# ------------------------------------------------------------------------------------------- docs

DOC = """\
# uncoalesced-global-load (KL101)

## What it does
Flags a global-memory load whose active lanes touch more sectors than they need.

## Example
```cuda
__global__ void bad(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }
```
Use instead:
```cuda
__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x]; }
```

## References
- CUDA C++ Best Practices Guide
"""


def test_parse_doc_examples_reads_both_forms() -> None:
    bad, good = docs.parse_doc_examples(DOC)
    assert bad is not None and "threadIdx.x * 32" in bad
    assert good is not None and "void good" in good
    heading_form = DOC.replace("Use instead:", "## Use instead")
    assert docs.parse_doc_examples(heading_form) == (bad, good)
    assert docs.parse_doc_examples("# x\n\n## Example\n```text\nno\n```\n") == (None, None)


def test_rule_doc_finds_by_code_or_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "KL101-uncoalesced-global-load.md").write_text(DOC, encoding="utf-8")
    monkeypatch.setattr(docs, "_docs_root", lambda: tmp_path)
    assert docs.rule_doc("KL101", RULES) == DOC
    assert docs.rule_doc("kl101", RULES) == DOC
    assert docs.rule_doc("uncoalesced-global-load", RULES) == DOC
    with pytest.raises(KeyError):
        docs.rule_doc("KL999", RULES)
    with pytest.raises(FileNotFoundError):
        docs.rule_doc("KL102", RULES)


def test_rules_table_lists_every_rule_sorted() -> None:
    table = docs.rules_table(list(reversed(RULES))).splitlines()
    assert table[0].split() == ["code", "name", "severity", "category", "summary"]
    assert [row.split()[0] for row in table[1:]] == ["KL101", "KL102", "KL103", "KL301"]
    assert table[4].split()[:4] == ["KL301", "divergent-barrier", "error", "sync"]
    # Columns line up: every summary starts at the same offset.
    offsets = {row.index(rule.summary) for row, rule in zip(table[1:], RULES)}
    assert len(offsets) == 1


# ------------------------------------------------------------------------------------- exit codes


def test_exit_code_policy() -> None:
    assert exit_code([], Severity.WARNING, had_errors=False) == EXIT_OK == 0
    assert exit_code([MISALIGNED], Severity.WARNING, had_errors=False) == EXIT_OK
    assert exit_code([MISALIGNED], Severity.INFO, had_errors=False) == EXIT_FINDINGS == 1
    assert exit_code([LOAD], Severity.WARNING, had_errors=False) == EXIT_FINDINGS
    assert exit_code([LOAD], Severity.ERROR, had_errors=False) == EXIT_OK
    assert exit_code([LOAD], Severity.WARNING, had_errors=True) == EXIT_USAGE == 2
