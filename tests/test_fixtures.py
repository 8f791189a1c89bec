"""Run every fixture in fixtures/ and compare findings with its inline expectations.

A directory under fixtures/projects/ is a small multi-file project (its own `kernlint.toml` makes it
its own root for the project index): every CUDA file in it is linted with the project's index, and
the markers of every file are checked.

Markers (semgrep/mypy style): `// expect: KL101 name` (must fire; the name must match the code),
`// ok: KL101` (must not fire), `// todo-expect: KL101` (known miss: xfail, and a failure once it
fires). An expectation may name the severity after the name (`// expect: KL301 divergent-branch (info)`):
the finding must then have it (a warning demoted to info is the false positive such a line guards). A marker on a line with code applies to that line; on a comment-only line, to the next line
with code. Any finding no marker expects fails the test.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernlint.checks import BY_CODE
from kernlint.engine.lint import LintOptions, lint_with_suppressions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROJECTS = FIXTURES / "projects"
PROJECT_SUFFIXES = (".cu", ".cuh", ".h", ".hpp")
MARKER = re.compile(r"//\s*(expect|ok|todo-expect):\s*(KL\d{3})(?:\s+([a-z0-9-]+))?")
SEVERITY = re.compile(r"//\s*expect:\s*(KL\d{3})\s+[a-z0-9-]+\s+\((info|warning|error)\)")


def parse_severities(text: str) -> dict[tuple[int, str], str]:
    """(line, code) -> the severity an `expect:` marker names, on the line it applies to."""
    out: dict[tuple[int, str], str] = {}
    pending: list[tuple[str, str]] = []
    for no, line in enumerate(text.splitlines(), start=1):
        found = SEVERITY.findall(line)
        code_part = line.strip().split("//", 1)[0].strip()
        if not code_part:
            pending.extend(found)
            continue
        if code_part.startswith("/*") or code_part.startswith("*"):
            continue
        for code, sev in pending + found:
            out[(no, code)] = sev
        pending = []
    return out


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


def _check(fixture: Path, text: str, diagnostics: tuple, expect: set, ok: set, todo: set) -> None:
    found = {(d.line, d.code) for d in diagnostics}
    # A finding grouped by root cause (one edit fixes several accesses) reports the others as related.
    found |= {(r["line"], d.code) for d in diagnostics for r in d.metrics.get("related_locations", ())}
    missing = expect - found
    forbidden = ok & found
    unexpected = found - expect - todo - ok
    detail = "\n".join(f"  {fixture.name}:{d.line}:{d.column} {d.code} {d.message}" for d in diagnostics)
    assert not missing, f"expected but not reported: {sorted(missing)}\nreported:\n{detail}"
    assert not forbidden, f"reported on an ok: line: {sorted(forbidden)}\nreported:\n{detail}"
    assert not unexpected, f"reported without a marker: {sorted(unexpected)}\nreported:\n{detail}"
    fixed_todo = todo & found
    assert not fixed_todo, f"todo-expect now fires (promote it to expect): {sorted(fixed_todo)}"
    wrong = []
    for (line, code), sev in parse_severities(text).items():
        got = {d.severity.label for d in diagnostics if (d.line, d.code) == (line, code)}
        if got and sev not in got:
            wrong.append(f"line {line} {code}: expected {sev}, reported {sorted(got)}")
    assert not wrong, "severity differs from the marker: " + "; ".join(wrong)


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.cu")), ids=lambda p: p.name)
def test_fixture(fixture: Path) -> None:
    text = fixture.read_text()
    expect, ok, todo, problems = parse_markers(text)
    assert not problems, problems
    assert expect or ok, f"{fixture.name} has no markers"
    result = lint_with_suppressions(text, str(fixture))
    _check(fixture, text, result.diagnostics, expect, ok, todo)
    if todo - {(d.line, d.code) for d in result.diagnostics}:
        pytest.xfail("known misses")


def project_files(project: Path) -> list[Path]:
    return sorted(f for f in project.rglob("*") if f.suffix in PROJECT_SUFFIXES and f.is_file())


def lint_project_file(project: Path, f: Path, fresh: bool = False) -> tuple:
    """Lint one file of a fixture project with that project's index and work budget (as the CLI does)."""
    from kernlint.base import deadline
    from kernlint.settings.config import load_settings
    from kernlint.project.index import ProjectIndex, load_index

    index = ProjectIndex.build(project.resolve()) if fresh else load_index(project.resolve())
    settings = load_settings(project / "kernlint.toml")
    budget = deadline.steps_for(settings.timeout) if settings.work_budget is None else settings.work_budget
    with deadline.running(budget):
        return lint_with_suppressions(f.read_text(), str(f), LintOptions(project=index)).diagnostics


@pytest.mark.parametrize("project", sorted(p for p in PROJECTS.iterdir() if p.is_dir()) if PROJECTS.is_dir() else [],
                         ids=lambda p: p.name)
def test_project_fixture(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path))
    assert (project / "kernlint.toml").is_file(), f"{project.name} needs its own kernlint.toml (project root)"
    files = project_files(project)
    any_marker = False
    missed: set = set()
    for f in files:
        text = f.read_text()
        expect, ok, todo, problems = parse_markers(text)
        assert not problems, (f.name, problems)
        any_marker = any_marker or bool(expect or ok)
        diags = lint_project_file(project, f, fresh=True)
        _check(f, text, diags, expect, ok, todo)
        missed |= todo - {(d.line, d.code) for d in diags}
    assert any_marker, f"{project.name} has no markers"
    if missed:
        pytest.xfail("known misses")


def test_marker_parser_applies_comment_lines_to_next_code_line() -> None:
    text = "// expect: KL101\n\nint x = a[i];\nint y = 0; // ok: KL102\n"
    expect, ok, _todo, problems = parse_markers(text)
    assert expect == {(3, "KL101")}
    assert ok == {(4, "KL102")}
    assert not problems


def test_marker_parser_rejects_wrong_name() -> None:
    _e, _o, _t, problems = parse_markers("x = 1; // expect: KL101 shared-bank-conflict\n")
    assert problems


def _cli_findings(args: list[str], cwd: Path) -> set[tuple[str, int, str, str]]:
    import json

    from click.testing import CliRunner

    from kernlint.cli.command import main

    res = CliRunner().invoke(main, [*args, "--format", "json", "--no-ptxas"], catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    diags = json.loads(res.stdout)["diagnostics"]
    return {(str(Path(d["path"]).resolve().relative_to(cwd)), d["line"], d["code"], d["message"]) for d in diags}


@pytest.mark.parametrize("project", sorted(p for p in PROJECTS.iterdir() if p.is_dir()) if PROJECTS.is_dir() else [],
                         ids=lambda p: p.name)
def test_project_file_by_file_equals_whole(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pre-commit passes only changed files: each file linted alone gives what the whole run gives for it."""
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path))
    root = project.resolve()
    whole = _cli_findings([str(root)], root)
    from kernlint.cli.command import collect_paths

    one_by_one: set = set()
    files, _problems = collect_paths((str(root),), ())
    for f in files:
        one_by_one |= _cli_findings([f], root)
    assert whole == one_by_one
    expected = any(parse_markers(f.read_text())[0] for f in project_files(root))
    assert bool(whole) == expected  # the comparison is not vacuous where findings are expected
