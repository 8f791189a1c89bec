"""Inline suppressions: grammar, reach, and the KL901/KL902 reports on stale or mistyped ones."""
from __future__ import annotations

from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.engine.suppress import RULES, Suppression, apply_suppressions, parse_suppressions

CATALOG = (
    Rule("KL101", "uncoalesced-global-load", "load not coalesced", Severity.WARNING),
    Rule("KL102", "uncoalesced-global-store", "store not coalesced", Severity.WARNING),
    Rule("KL201", "shared-bank-conflict", "bank conflict", Severity.WARNING),
    Rule("KL202", "shared-broadcast", "x", Severity.INFO),
)

SOURCE = """\
// kernlint: block=(32,8) define(width=1024)
//--blockDim=[32,8]
__global__ void k(float* a, float* out) {
    out[0] = a[threadIdx.x * 32];  // kernlint: ignore[KL101] odd halves read elsewhere
    // kernlint: ignore[KL101,shared-bank-conflict] staged on purpose
    // (a second comment line is skipped)

    out[1] = a[threadIdx.x * 64];
    const char* s = "// kernlint: ignore[KL102]";
    /* kernlint: ignore[KL102] */ out[threadIdx.x * 2] = 0.f;
    int n = 1'000; // kernlint: ignore[KL103x]
}
"""


def diag(line: int, code: str = "KL101", name: str = "uncoalesced-global-load", path: str = "k.cu") -> Diagnostic:
    return Diagnostic(path, line, 5, code, name, Severity.WARNING, f"{code} at {line}")


def codes_at(diags: list[Diagnostic]) -> list[tuple[int, str]]:
    return sorted((d.line, d.code) for d in diags)


def test_parse_finds_directives_and_their_reach() -> None:
    sups = parse_suppressions(SOURCE)
    assert [(s.line, s.codes, s.lines) for s in sups] == [
        (4, ("KL101",), (4,)),
        (5, ("KL101", "shared-bank-conflict"), (5, 8)),  # alone on its line: reaches the next code line
        (10, ("KL102",), (10,)),  # a block comment followed by code covers only its own line
        (11, ("KL103x",), (11,)),  # the digit separator in 1'000 is not a char literal
    ]
    assert sups[0].reason == "odd halves read elsewhere"
    assert sups[0].column == SOURCE.splitlines()[3].index("kernlint") + 1
    assert sups[1].columns[1] == SOURCE.splitlines()[4].index("shared-bank") + 1
    assert not any(s.file_level for s in sups)


def test_launch_annotations_and_strings_are_not_suppressions() -> None:
    assert parse_suppressions("// kernlint: block=(32,8)\n// kernlint: assume blockDim=(256,1,1)\nx;\n") == ()
    assert parse_suppressions('const char* s = "/* kernlint: ignore[KL101] */";\n') == ()
    assert parse_suppressions('auto r = R"x(// kernlint: ignore[KL101])x";\n') == ()


def test_file_level_block_comment_and_multiline() -> None:
    text = "/*\n * kernlint: ignore-file[KL2xx] tiles are padded elsewhere\n */\nint x;\n"
    (sup,) = parse_suppressions(text)
    assert sup.file_level and sup.codes == ("KL2xx",) and sup.line == 2 and sup.column == 4
    assert sup.reason == "tiles are padded elsewhere"


def test_malformed_directives_are_kept_with_a_problem() -> None:
    bare, empty, typo = parse_suppressions(
        "x; // kernlint: ignore\ny; // kernlint: ignore[]\nz; // kernlint: ignore-next-line[KL101]\n"
    )
    assert bare.problem and not bare.codes
    assert empty.problem and not empty.codes
    assert "ignore-next-line" in typo.problem


def test_apply_drops_suppressed_findings_on_the_line_and_next_line() -> None:
    diags = [diag(4), diag(8), diag(8, "KL201", "shared-bank-conflict"), diag(10, "KL102", "uncoalesced-global-store")]
    out = apply_suppressions("k.cu", diags, parse_suppressions(SOURCE), CATALOG)
    # KL103x matches no rule: one KL902; everything else was used.
    assert codes_at(out) == [(11, "KL902")]
    (unknown,) = out
    assert unknown.name == "unknown-code-in-suppression" and unknown.severity is Severity.WARNING
    assert unknown.column == SOURCE.splitlines()[10].index("KL103x") + 1


def test_unused_suppression_is_reported_per_code() -> None:
    out = apply_suppressions("k.cu", [diag(8)], parse_suppressions(SOURCE), CATALOG)
    unused = sorted((d.line, d.column, d.message) for d in out if d.code == "KL901")
    line5 = SOURCE.splitlines()[4]
    assert [(ln, col) for ln, col, _ in unused] == [
        (4, SOURCE.splitlines()[3].index("KL101") + 1),
        (5, line5.index("shared-bank-conflict") + 1),
        (10, SOURCE.splitlines()[9].index("KL102") + 1),
    ]
    assert "KL101 (uncoalesced-global-load) reports nothing on line 4" in unused[0][2]
    assert "shared-bank-conflict" in unused[1][2] and "line 8" in unused[1][2]
    assert all(d.name == "unused-suppression" for d in out if d.code == "KL901")


def test_file_level_prefix_and_name_selectors() -> None:
    text = "// kernlint: ignore-file[KL2xx, uncoalesced-global-store]\nint x;\n"
    diags = [diag(9, "KL201", "shared-bank-conflict"), diag(3, "KL202", "shared-broadcast"),
             diag(4, "KL102", "uncoalesced-global-store"), diag(5)]
    out = apply_suppressions("k.cu", diags, parse_suppressions(text), CATALOG)
    assert codes_at(out) == [(5, "KL101")]
    bare_prefix = parse_suppressions("// kernlint: ignore-file[KL2]\nint x;\n")
    assert apply_suppressions("k.cu", diags[:1], bare_prefix, CATALOG) == []


def test_multiline_finding_is_covered_on_any_of_its_lines() -> None:
    text = "out[i] =\n   a[i * 32];  // kernlint: ignore[KL101]\n"
    spanning = Diagnostic("k.cu", 1, 1, "KL101", "uncoalesced-global-load", Severity.WARNING, "m", end_line=2)
    assert apply_suppressions("k.cu", [spanning], parse_suppressions(text), CATALOG) == []


def test_unknown_blanket_and_malformed_give_kl902() -> None:
    text = "a; // kernlint: ignore[ALL]\nb; // kernlint: ignore[KL999, not-a-rule]\nc; // kernlint: ignore\n"
    out = apply_suppressions("k.cu", [diag(1), diag(3)], parse_suppressions(text), CATALOG)
    assert codes_at(out) == [(1, "KL101"), (1, "KL902"), (2, "KL902"), (2, "KL902"), (3, "KL101"), (3, "KL902")]
    messages = [d.message for d in out if d.code == "KL902"]
    assert "blanket" in messages[0]
    assert "'KL999'" in messages[1] and "'not-a-rule'" in messages[2]
    assert "must name the rules" in messages[3]


def test_other_paths_pass_through() -> None:
    other = diag(4, path="other.cu")
    out = apply_suppressions("k.cu", [other, diag(4)], parse_suppressions(SOURCE)[:1], CATALOG)
    assert out == [other]


def test_disabled_rules_do_not_make_suppressions_unused() -> None:
    sups = parse_suppressions("a; // kernlint: ignore[KL101]\n")
    assert apply_suppressions("k.cu", [], sups, CATALOG, active_codes={"KL102"}) == []
    assert [d.code for d in apply_suppressions("k.cu", [], sups, CATALOG, active_codes={"KL101"})] == ["KL901"]


def test_meta_findings_can_be_silenced_and_meta_selectors_judged() -> None:
    text = "// kernlint: ignore-file[KL901]\na; // kernlint: ignore[KL101]\n"
    assert apply_suppressions("k.cu", [], parse_suppressions(text), CATALOG) == []
    # With nothing for it to silence, the KL901 selector is itself unused.
    lonely = parse_suppressions("// kernlint: ignore-file[unused-suppression]\n")
    (report,) = apply_suppressions("k.cu", [], lonely, CATALOG)
    assert report.code == "KL901" and "in this file" in report.message


def test_rules_are_exported_for_the_catalogue() -> None:
    assert [(r.code, r.name, r.severity, r.check) for r in RULES] == [
        ("KL901", "unused-suppression", Severity.WARNING, None),
        ("KL902", "unknown-code-in-suppression", Severity.WARNING, None),
    ]
    assert isinstance(parse_suppressions("x; // kernlint: ignore[KL101]\n")[0], Suppression)
