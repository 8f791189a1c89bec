"""Start-up: what needs no analysis loads no NumPy or libclang, and the rule table matches the checks."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import sys
from kernlint.cli.command import main
try:
    main.main(sys.argv[1:], prog_name="kernlint")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("numpy", "clang.cindex", "kernlint.engine.lint", "kernlint.eval.interp") if m in sys.modules)
print("HEAVY:", ",".join(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--version"], ["--list-rules"], ["--explain", "KL201"], ["--help"]])
def test_what_needs_no_analysis_loads_no_numpy_or_libclang(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.stdout.strip(), proc.stderr
    assert "HEAVY: \n" in proc.stderr + "\n", proc.stderr


def test_rule_table_matches_the_checks() -> None:
    from kernlint.checks import ALL_RULES
    from kernlint.checks.rule_table import RULES

    want = [(r.code, r.name, r.summary, r.severity, r.category) for r in ALL_RULES]
    have = [(r.code, r.name, r.summary, r.severity, r.category) for r in RULES]
    assert have == want, ("kernlint/checks/rule_table.py is out of date: regenerate it with "
                          "`python -m kernlint.checks.rule_table > kernlint/checks/rule_table.py`")


def test_progress_only_on_a_terminal_for_people() -> None:
    from kernlint.cli.progress import Progress, wanted

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wanted(Tty(), "text") and wanted(Tty(), "concise")
    assert not wanted(Tty(), "json") and not wanted(Tty(), "sarif") and not wanted(Tty(), "github")
    assert not wanted(io.StringIO(), "text")
    s = Tty()
    p = Progress(s, 10, delay=0.0, interval=0.0)
    p.update(3)
    assert s.getvalue().endswith("kernlint: 3/10 files")
    p.clear()
    assert s.getvalue().endswith("\r\x1b[2K") and not p.shown
    quiet = Tty()
    late = Progress(quiet, 10, delay=3600)
    late.update(5)  # a short run shows nothing
    assert quiet.getvalue() == ""


def test_the_fast_version_line_is_clicks() -> None:
    fast = subprocess.run([sys.executable, "-m", "kernlint", "--version"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    slow = subprocess.run([sys.executable, "-c", "from kernlint.cli.command import main; main(['--version'])"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and fast.stdout.startswith("kernlint, version ")



# Modules a plain lint of a small file has no use for: each was imported at every start-up until avoided
# (numpy.ma by np.unique's default path, with the inspect.signature calls it makes; importlib.resources and
# zipfile by the shim header's path). The lint runs in this process (no -j: no worker pool), so
# sys.modules shows what the analysis itself imported.
_NOT_FOR_A_PLAIN_LINT = ("numpy.ma", "importlib.resources", "zipfile")

_LINT_PROBE = """
import os, sys
from kernlint.cli.command import main
try:
    main.main(sys.argv[1:], prog_name="kernlint")
except SystemExit as exc:
    pass
names = os.environ["PROBE_MODULES"].split(",")
print("LOADED:", ",".join(sorted(m for m in names if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("fixture, code", [("KL103_misaligned.cu", "KL103"), ("KL104_read_only.cu", "KL104"),
                                           ("KL305_data_dependent.cu", "KL305")])
def test_a_plain_lint_imports_nothing_it_does_not_use(fixture: str, code: str, tmp_path: Path) -> None:
    import json
    import os

    env = dict(os.environ, PROBE_MODULES=",".join(_NOT_FOR_A_PLAIN_LINT))
    proc = subprocess.run([sys.executable, "-c", _LINT_PROBE, "--no-ptxas", "--cache-dir", str(tmp_path), "--no-cache",
                           "--format", "json", str(ROOT / "fixtures" / fixture)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    found = {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert code in found, (found, proc.stderr)  # the analysis that used to import them did run
    assert "LOADED: \n" in proc.stderr + "\n", proc.stderr
