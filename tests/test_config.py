"""Config files: discovery, loading, errors with line numbers, CLI overrides, rule selection."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kernlint.checks.base import Rule
from kernlint.settings.config import (
    ConfigError,
    Settings,
    find_config,
    is_excluded,
    is_selected,
    load_settings,
    merge_cli,
    resolved_settings_text,
)
from kernlint.base.diagnostics import Severity
from kernlint.reporters import FORMATS

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

RULES = (
    Rule("KL101", "uncoalesced-global-load", "s", Severity.WARNING),
    Rule("KL102", "uncoalesced-global-store", "s", Severity.WARNING),
    Rule("KL103", "misaligned-global-access", "s", Severity.INFO),
    Rule("KL201", "shared-bank-conflict", "s", Severity.WARNING),
    Rule("KL301", "divergent-barrier", "s", Severity.ERROR),
)

PYPROJECT = """\
[project]
name = "demo"

[tool.kernlint]
select = ["KL1", "shared-bank-conflict"]
ignore = ["KL103"]
fail-on = "error"
arch = "80"
block = [32, 8]
define = { width = 1024, height = 512 }
include-dirs = ["include", "/opt/cuda/include"]
exclude = ["third_party/", "*_generated.cu"]
occupancy-threshold = 0.25
format = "sarif"

[tool.kernlint.per-file-ignores]
"tests/*.cu" = ["KL101"]
"legacy/**/*.cuh" = ["KL2xx"]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, name: str = "pyproject.toml") -> ConfigError:
    cfg = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, RULES)
    assert info.value.path == cfg
    return info.value


def test_defaults() -> None:
    s = load_settings(None)
    assert s == Settings()
    assert s.select == ("ALL",) and s.fail_on is Severity.WARNING and s.occupancy_threshold == 0.5
    assert s.format == "text" and s.block is None and s.source is None
    assert set(FORMATS) == {"text", "concise", "json", "sarif", "github"}


def test_load_every_key(tmp_path: Path) -> None:
    cfg = write(tmp_path / "pyproject.toml", PYPROJECT)
    s = load_settings(cfg, RULES)
    assert s.select == ("KL1", "shared-bank-conflict")
    assert s.ignore == ("KL103",)
    assert s.fail_on is Severity.ERROR
    assert s.arch == "sm_80"
    assert s.block == (32, 8, 1)
    assert s.define == (("width", 1024), ("height", 512))
    assert s.include_dirs == (tmp_path / "include", Path("/opt/cuda/include"))
    assert s.exclude == ("third_party/", "*_generated.cu")
    assert s.occupancy_threshold == 0.25
    assert s.format == "sarif"
    assert s.per_file_ignores == (("tests/*.cu", ("KL101",)), ("legacy/**/*.cuh", ("KL2xx",)))
    assert s.source == cfg


def test_find_config_walks_up_and_prefers_kernlint_toml(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", PYPROJECT)
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'inner'\n")  # no [tool.kernlint]
    kernel = write(tmp_path / "pkg" / "src" / "k.cu", "")
    assert find_config(kernel) == tmp_path / "pyproject.toml"
    assert find_config(kernel.parent) == tmp_path / "pyproject.toml"
    write(tmp_path / "pkg" / "kernlint.toml", "select = ['KL2']\n")
    assert find_config(kernel) == tmp_path / "pkg" / "kernlint.toml"
    assert load_settings(tmp_path / "pkg" / "kernlint.toml").select == ("KL2",)


def test_find_config_returns_a_broken_pyproject_that_names_the_table(tmp_path: Path) -> None:
    cfg = write(tmp_path / "pyproject.toml", "[tool.kernlint]\nselect = [\n")
    assert find_config(tmp_path) == cfg
    assert error_of(tmp_path, "[tool.kernlint]\nselect = [\n").line is not None


def test_unknown_key_points_at_its_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, "[project]\nname='x'\n\n[tool.kernlint]\nselect = ['KL1']\nfail_on = 'error'\n")
    assert err.line == 6
    assert "unknown key 'fail_on'" in err.message and "did you mean 'fail-on'" in err.message
    assert str(err) == f"{err.path}:6: {err.message}"


@pytest.mark.parametrize(
    ("body", "line", "fragment"),
    [
        ("fail-on = 'loud'", 3, "unknown severity"),
        ("block = [32, 64]", 3, "not a valid CUDA block"),
        ("block = 'big'", 3, "block shape"),
        ("arch = 'volta'", 3, "GPU architecture"),
        ("define = { width = 'wide' }", 3, "must be an integer"),
        ("occupancy-threshold = 1.5", 3, "fraction"),
        ("format = 'xml'", 3, "expected one of"),
        ("ignore = ['KL1', 'K L 1']", 3, "not a rule code"),
        ("ignore = ['KL999']", 3, "matches no rule"),
    ],
)
def test_bad_values_point_at_their_line(tmp_path: Path, body: str, line: int, fragment: str) -> None:
    err = error_of(tmp_path, f"[tool.kernlint]\nselect = ['ALL']\n{body}\n")
    assert err.line == line
    assert fragment in err.message


def test_bad_per_file_ignore_points_at_the_glob(tmp_path: Path) -> None:
    text = "[tool.kernlint]\n\n[tool.kernlint.per-file-ignores]\n'a/*.cu' = ['KL1']\n'b/*.cu' = [3]\n"
    err = error_of(tmp_path, text)
    assert err.line == 5 and "'b/*.cu'" in err.message


def test_toml_syntax_error_has_a_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, "[tool.kernlint]\nselect = ['KL1'\nignore = []\n", name="kernlint.toml")
    assert err.line in (2, 3) and "invalid TOML" in err.message


def test_explicit_pyproject_without_table_is_an_error(tmp_path: Path) -> None:
    err = error_of(tmp_path, "[project]\nname = 'x'\n")
    assert "no [tool.kernlint] table" in err.message


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.toml")


def test_merge_cli_overrides(tmp_path: Path) -> None:
    base = load_settings(write(tmp_path / "pyproject.toml", PYPROJECT), RULES)
    merged = merge_cli(
        base,
        select=("KL301",),
        fail_on="info",
        block="16x16",
        define=("width=2048", "n=7"),
        include_dirs=("cli_inc",),
        arch=None,  # not given: the config value stays
        format="json",
    )
    assert merged.select == ("KL301",)
    assert merged.fail_on is Severity.INFO
    assert merged.block == (16, 16, 1)
    assert merged.define == (("width", 2048), ("height", 512), ("n", 7))
    assert merged.include_dirs[0] == Path("cli_inc") and len(merged.include_dirs) == 3
    assert merged.arch == "sm_80" and merged.format == "json"
    assert merge_cli(base) == base
    with pytest.raises(ConfigError, match="--block"):
        merge_cli(base, block=(2048,))
    with pytest.raises(TypeError):
        merge_cli(base, colour=True)


def test_is_selected_with_codes_names_prefixes_and_specificity() -> None:
    s = Settings(select=("KL1", "shared-bank-conflict"), ignore=("KL103",))
    picked = {r.code for r in RULES if is_selected(r.code, r.name, "k.cu", s, RULES)}
    assert picked == {"KL101", "KL102", "KL201"}
    # The more specific selector wins; on a tie, ignore wins.
    assert is_selected("KL101", "", "k.cu", Settings(select=("KL101",), ignore=("KL1",)), RULES)
    assert not is_selected("KL101", "", "k.cu", Settings(select=("KL1",), ignore=("KL1xx",)), RULES)
    assert not is_selected("KL101", "", "k.cu", Settings(ignore=("uncoalesced-global-load",)), RULES)
    assert is_selected("KL301", "divergent-barrier", "k.cu", Settings(), RULES)


def test_per_file_ignores_and_exclude(tmp_path: Path) -> None:
    cfg = write(tmp_path / "pyproject.toml", PYPROJECT)
    s = load_settings(cfg, RULES)
    assert not is_selected("KL101", "uncoalesced-global-load", "tests/a.cu", s, RULES)
    assert not is_selected("KL101", "uncoalesced-global-load", str(tmp_path / "tests" / "a.cu"), s, RULES)
    assert is_selected("KL101", "uncoalesced-global-load", "src/a.cu", s, RULES)
    assert not is_selected("KL201", "shared-bank-conflict", "legacy/x/y/h.cuh", s, RULES)
    assert not is_selected("KL201", "shared-bank-conflict", "legacy/h.cuh", s, RULES)  # **/ may be empty
    assert is_excluded("third_party/cub/k.cu", s)
    assert is_excluded(tmp_path / "third_party", s)
    assert is_excluded("src/kernels_generated.cu", s)
    assert not is_excluded("src/kernels.cu", s)


def test_resolved_settings_text_is_valid_toml_that_loads_back(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path / "pyproject.toml", PYPROJECT), RULES)
    text = resolved_settings_text(s)
    assert text.startswith(f"# kernlint settings (from {tmp_path / 'pyproject.toml'})")
    again = load_settings(write(tmp_path / "again" / "pyproject.toml", text), RULES)
    assert again.select == s.select and again.per_file_ignores == s.per_file_ignores
    assert again.define == s.define and again.block == s.block and again.fail_on is s.fail_on
    assert again.include_dirs == s.include_dirs  # absolute after resolution, so they survive a move
    defaults = tomllib.loads(resolved_settings_text(Settings()))["tool"]["kernlint"]
    assert defaults["select"] == ["ALL"] and "arch" not in defaults


@pytest.mark.parametrize("text", [
    "[project]\nname = 'x'\n\n[tool.kernlint\nselect = ['KL1']\n",  # the table header lost its bracket
    "[tool.kern lint]\nselect = ['KL1']\n",
    "[project]\nname = 'x\n\n[tool.kernlint]\nselect = ['KL1']\n",  # an error before the table
])
def test_any_toml_error_in_pyproject_is_exit_2_with_file_and_line(tmp_path: Path, text: str) -> None:
    from click.testing import CliRunner

    from kernlint.cli.command import main

    write(tmp_path / "pyproject.toml", text)
    kernel = write(tmp_path / "k.cu", "__global__ void k(float* a) { a[threadIdx.x] = 0.f; }\n")
    result = CliRunner().invoke(main, [str(kernel)])
    assert result.exit_code == 2, result.output
    assert re.search(r"pyproject\.toml:\d+: invalid TOML", result.output), result.output
