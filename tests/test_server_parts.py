"""The parts of `kernlint server` that need no client: the missing extra, client settings, suppression
edits, and one finding per site (`grouping.expand`) in the line-annotating formats."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernlint.checks.grouping import expand
from kernlint.base.diagnostics import Diagnostic, Edit, Severity
from kernlint.engine.fix import apply_edits
from kernlint.server.actions import suppression_edit
from kernlint.server.linting import SettingsProblem, client_overrides
from kernlint.engine.suppress import parse_suppressions

ROOT = Path(__file__).resolve().parent.parent

BLOCK_PYGLS = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pygls", "lsprotocol"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Blocker())
sys.argv = ["kernlint", "server"]
from kernlint.cli.console import run
run()
"""


def test_server_without_the_extra_says_what_to_install_and_exits_2() -> None:
    proc = subprocess.run([sys.executable, "-c", BLOCK_PYGLS], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "pip install 'kernlint[server]'" in proc.stderr and proc.stdout == ""


def test_server_rejects_an_unknown_argument() -> None:
    proc = subprocess.run([sys.executable, "-m", "kernlint", "server", "--port", "9"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "unexpected argument '--port'" in proc.stderr


def test_client_settings_take_the_flags_shapes() -> None:
    got = client_overrides({"select": "KL1, KL201", "ignore": ["KL103"], "arch": "sm_90", "block": [32, 8],
                            "defines": {"n": 4096, "m": "0x10"}, "unrelated": 1})
    assert got["select"] == ["KL1", "KL201"] and got["ignore"] == ["KL103"] and got["arch"] == "sm_90"
    assert got["block"] == (32, 8, 1)
    assert dict(got["define"]) == {"n": 4096, "m": 16}
    assert client_overrides({"defines": ["n=7"]})["define"] == (("n", 7),)
    assert client_overrides(None) == {}


@pytest.mark.parametrize("raw, word", [
    ({"select": ["KL999"]}, "kernlint.select"),
    ({"block": "33,x"}, "kernlint.block"),
    ({"block": [2048]}, "kernlint.block"),
    ({"defines": {"n": "many"}}, "kernlint.defines"),
    ({"defines": 3}, "kernlint.defines"),
    ({"arch": 80}, "kernlint.arch"),
])
def test_bad_client_settings_are_named(raw: dict, word: str) -> None:
    with pytest.raises(SettingsProblem, match=word.replace(".", r"\.")):
        client_overrides(raw)


def _covered(text: str, line: int, code: str) -> bool:
    return any(line in s.lines and code in s.codes for s in parse_suppressions(text))


@pytest.mark.parametrize("source, line, expected", [
    ("  x = t[i];\n", 1, "  x = t[i];  // kernlint: ignore[KL201]"),
    ("  x = t[i];  // why\n", 1, "  x = t[i];  // why  // kernlint: ignore[KL201]"),
    ("  x = t[i];  // kernlint: ignore[KL101]\n", 1, "  x = t[i];  // kernlint: ignore[KL101, KL201]"),
    ("#define M(i) \\\n  t[i] \\\n  + 1\n", 2, "  t[i] /* kernlint: ignore[KL201] */ \\"),
])
def test_suppression_edit_silences_the_code_on_that_line(source: str, line: int, expected: str) -> None:
    edit = suppression_edit(source, line, "KL201")
    assert edit is not None
    new = apply_edits(source, [edit])
    assert new.split("\n")[line - 1] == expected
    assert _covered(new, line, "KL201")


def test_no_suppression_edit_where_the_code_is_already_silenced() -> None:
    assert suppression_edit("  x = t[i];  // kernlint: ignore[KL201]\n", 1, "KL201") is None


def _grouped() -> Diagnostic:
    related = [{"line": 7, "column": 3, "end_line": 7, "end_column": 9, "message": "load at 7", "ways": 2,
                "severity": "info"},
               {"line": 9, "column": 5, "end_line": 9, "end_column": 11, "message": "store at 9", "ways": 4,
                "severity": "warning"}]
    return Diagnostic(path="k.cu", line=5, column=3, end_line=5, end_column=10, code="KL201",
                      name="shared-bank-conflict", severity=Severity.WARNING, message="worst at 5", kernel="k",
                      notes=("fix: declare t[32][33]", "the same padding also fixes ..."),
                      assumptions=("blockDim = (32, 1, 1) from --block",),
                      metrics={"ways": 4, "array": "t", "related_locations": related},
                      fixes=(Edit(2, 20, 2, 22, "33", "pad t"),))


def test_expand_gives_each_site_its_own_finding() -> None:
    worst, at7, at9 = expand([_grouped()])
    assert worst == _grouped()
    assert (at7.line, at7.column, at7.end_column, at7.severity, at7.message) == (7, 3, 9, Severity.INFO, "load at 7")
    assert (at9.line, at9.severity, at9.metrics["ways"]) == (9, Severity.WARNING, 4)
    for site in (at7, at9):
        assert site.fixes == worst.fixes and site.assumptions == worst.assumptions  # the shared fix
        assert site.metrics["grouped_with"] == {"line": 5, "column": 3}
        assert "fix: declare t[32][33]" in site.notes
    assert [r["line"] for r in at7.metrics["related_locations"]] == [5, 9]
    assert [r["line"] for r in at9.metrics["related_locations"]] == [5, 7]


def _render(fmt: str) -> str:
    from kernlint.reporters import ReportContext, render
    from kernlint.checks.rule_table import RULES

    return render(fmt, [_grouped()], ReportContext(sources={"k.cu": "\n" * 12}, rules=RULES, color=False,
                                                   version="0"))


def test_line_annotating_formats_list_every_site_and_text_one_heading() -> None:
    assert [d["line"] for d in json.loads(_render("json"))["diagnostics"]] == [5, 7, 9]
    sarif = json.loads(_render("sarif"))["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in sarif] == [5, 7, 9]
    github = _render("github").splitlines()
    assert sorted(int(g.split("line=")[1].split(",")[0]) for g in github) == [5, 7, 9]
    assert _render("text").count("[KL201 shared-bank-conflict]") == 1


def test_a_bad_config_is_one_problem_on_the_first_line_and_nothing_is_linted(tmp_path: Path) -> None:
    from kernlint.server.linting import BufferLinter

    (tmp_path / "kernlint.toml").write_text('select = ["KL999"]\n')
    kernel = tmp_path / "k.cu"
    done = BufferLinter(use_cache=False).lint(str(kernel), "__global__ void k(float* a) { a[threadIdx.x * 32] = 0; }\n")
    assert done.diagnostics == ()
    ((line, message),) = done.problems
    assert line == 1 and "kernlint.toml" in message and "KL999" in message


def _hover_of(fixture: str, code: str, line: int) -> str:
    from kernlint.server.hover import finding_markdown
    from kernlint.server.linting import BufferLinter

    path = ROOT / "fixtures" / fixture
    done = BufferLinter(use_cache=False).lint(str(path), path.read_text(encoding="utf-8"), keep_results=True,
                                              exact=False)
    (d,) = [d for d in done.diagnostics if d.code == code and d.line == line]
    return finding_markdown(d, done.result)


def test_hover_of_a_divergent_loop_lists_each_lanes_trips() -> None:
    md = _hover_of("KL302_loops.cu", "KL302", 9)  # for (j = 0; j < tid; ++j): lane t runs t iterations
    assert "| lane | trips |" in md
    assert "| 0 | 0 | 1 | 1 | 2 | 2 | 3 | 3 |" in md and "| 28 | 28 | 29 | 29 | 30 | 30 | 31 | 31 |" in md


def test_hover_of_a_divergent_branch_shows_which_lanes_take_it() -> None:
    md = _hover_of("KL301_branches.cu", "KL301", 10)  # if (threadIdx.x % 2): the odd lanes
    assert "| lane | side |" in md
    assert "| 0 | not taken | 1 | taken | 2 | not taken | 3 | taken |" in md


def test_a_header_saved_meanwhile_is_not_answered_from_the_cache(tmp_path: Path) -> None:
    from kernlint.server.linting import BufferLinter

    (tmp_path / "params.h").write_text("#define STRIDE 32\n")
    kernel = tmp_path / "k.cu"
    text = ('#include "params.h"\n// kernlint: block=(256,1,1)\n'
            "__global__ void k(const float* a, float* b) { b[threadIdx.x] = a[threadIdx.x * STRIDE]; }\n")
    linter = BufferLinter(cache_dir=str(tmp_path / "cache"))
    first = linter.lint(str(kernel), text)
    assert [d.code for d in first.diagnostics] == ["KL101"] and not first.cached
    assert linter.lint(str(kernel), text).cached  # the same text and header: from the cache
    (tmp_path / "params.h").write_text("#define STRIDE 1\n")
    after = linter.lint(str(kernel), text)
    assert not after.cached and after.diagnostics == ()
