"""Run every fixture in fixtures/ and compare findings with its inline expectations.

Markers (semgrep/mypy style): `// expect: KL101 name` (must fire; the name must match the code),
`// ok: KL101` (must not fire), `// todo-expect: KL101` (known miss: xfail, and a failure once it
fires). A marker on a line with code applies to that line; on a comment-only line, to the next line
with code. Any finding no marker expects fails the test.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlint.checks import BY_CODE
from kernlint.engine import lint_with_suppressions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MARKER = re.compile(r"//\s*(expect|ok|todo-expect):\s*(KL\d{3})(?:\s+([a-z0-9-]+))?")


def parse_markers(text: str) -> tuple[set[tuple[int, str]], set[tuple[int, str]], set[tuple[int, str]], list[str]]:
    expect: set[tuple[int, str]] = set()
    ok: set[tuple[int, str]] = set()
    todo: set[tuple[int, str]] = set()
    problems: list[str] = []
    lines = text.splitlines()
    pending: list[tuple[str, str, str | None, int]] = []
    for no, line in enumerate(lines, start=1):
        stripped = line.strip()
        markers = [(m.group(1), m.group(2), m.group(3)) for m in MARKER.finditer(line)]
        code_part = stripped.split("//", 1)[0].strip()
        if markers and not code_part:
            pending.extend((k, c, n, no) for k, c, n in markers)
            continue
        if not code_part or code_part.startswith("/*") or code_part.startswith("*"):
            continue
        for kind, code, name, at in pending + [(k, c, n, no) for k, c, n in markers]:
            if name is not None and kind == "expect" and code in BY_CODE and BY_CODE[code].name != name:
                problems.append(f"line {at}: marker names {name!r} but {code} is {BY_CODE[code].name!r}")
            {"expect": expect, "ok": ok, "todo-expect": todo}[kind].add((no, code))
        pending = []
    return expect, ok, todo, problems


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.cu")), ids=lambda p: p.name)
def test_fixture(fixture: Path) -> None:
    text = fixture.read_text()
    expect, ok, todo, problems = parse_markers(text)
    assert not problems, problems
    assert expect or ok, f"{fixture.name} has no markers"
    result = lint_with_suppressions(text, str(fixture))
    found = {(d.line, d.code) for d in result.diagnostics}
    missing = expect - found
    forbidden = ok & found
    unexpected = found - expect - todo - ok
    detail = "\n".join(f"  {d.line}:{d.column} {d.code} {d.message}" for d in result.diagnostics)
    assert not missing, f"expected but not reported: {sorted(missing)}\nreported:\n{detail}"
    assert not forbidden, f"reported on an ok: line: {sorted(forbidden)}\nreported:\n{detail}"
    assert not unexpected, f"reported without a marker: {sorted(unexpected)}\nreported:\n{detail}"
    fixed_todo = todo & found
    assert not fixed_todo, f"todo-expect now fires (promote it to expect): {sorted(fixed_todo)}"
    if todo - found:
        pytest.xfail(f"known misses: {sorted(todo - found)}")


def test_marker_parser_applies_comment_lines_to_next_code_line() -> None:
    text = "// expect: KL101\n\nint x = a[i];\nint y = 0; // ok: KL102\n"
    expect, ok, _todo, problems = parse_markers(text)
    assert expect == {(3, "KL101")}
    assert ok == {(4, "KL102")}
    assert not problems


def test_marker_parser_rejects_wrong_name() -> None:
    _e, _o, _t, problems = parse_markers("x = 1; // expect: KL101 shared-bank-conflict\n")
    assert problems
