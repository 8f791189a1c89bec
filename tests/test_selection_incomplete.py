"""A kernel that was only partly analysed says so (KL904) whatever rule families the user selects:
silence must mean "evaluated and clean". Only ignoring KL904 itself (code or name) drops it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main

# One access is not evaluated (an undeclared helper from a missing header): KL904, next to a KL101.
SOURCE = """#include "missing_header.h"
__global__ void k(const float* a, float* o) {
    int i = threadIdx.x;
    o[i] = a[i * 32];
    o[i + 64] = a[lookup(i)];
}
"""


def codes(tmp_path: Path, *args: str, config: str | None = None) -> list[str]:
    (tmp_path / "k.cu").write_text(SOURCE)
    if config is not None:
        (tmp_path / "kernlint.toml").write_text(config)
    res: Any = CliRunner().invoke(main, [str(tmp_path / "k.cu"), "--format", "json", "--no-ptxas", "--no-cache",
                                         "-j", "1", *args], catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    return sorted(d["code"] for d in json.loads(res.stdout)["diagnostics"])


def test_kl904_is_reported_without_a_selection(tmp_path: Path) -> None:
    assert codes(tmp_path) == ["KL101", "KL903", "KL904"]


@pytest.mark.parametrize("args", [("--select", "KL1"), ("--select", "KL101"), ("--select", "uncoalesced-global-load"),
                                  ("--ignore", "KL9"), ("--ignore", "KL90"), ("--select", "KL1", "--ignore", "KL9")])
def test_a_selection_of_families_keeps_kl904(tmp_path: Path, args: tuple[str, ...]) -> None:
    got = codes(tmp_path, *args)
    assert "KL904" in got and "KL101" in got
    assert "KL903" not in got  # the rest of the selection still applies


@pytest.mark.parametrize("config", ['select = ["KL1"]\n', 'ignore = ["KL9"]\n',
                                    'per-file-ignores = { "*.cu" = ["KL9"] }\n'])
def test_a_config_selection_keeps_kl904(tmp_path: Path, config: str) -> None:
    got = codes(tmp_path, config=config)
    assert "KL904" in got and "KL101" in got and "KL903" not in got


@pytest.mark.parametrize("args", [("--ignore", "KL904"), ("--ignore", "analysis-incomplete"),
                                  ("--select", "KL1", "--ignore", "KL904")])
def test_ignoring_kl904_by_name_drops_it(tmp_path: Path, args: tuple[str, ...]) -> None:
    got = codes(tmp_path, *args)
    assert "KL904" not in got and "KL101" in got


@pytest.mark.parametrize("config", ['ignore = ["KL904"]\n', 'select = ["KL1"]\nignore = ["analysis-incomplete"]\n',
                                    'per-file-ignores = { "*.cu" = ["KL904"] }\n'])
def test_a_config_ignoring_kl904_drops_it(tmp_path: Path, config: str) -> None:
    got = codes(tmp_path, config=config)
    assert "KL904" not in got and "KL101" in got
