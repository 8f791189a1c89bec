"""The command line end to end: formats, exit codes, bad input, several paths."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main

ROOT = Path(__file__).resolve().parent.parent
STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
CLEAN = "__global__ void k(const float* a, float* o) { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = a[i]; }\n"


def run(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args + ["--no-ptxas"], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("bad.cu", STRIDED), ("good.cu", CLEAN)):
        p = tmp_path / name
        p.write_text(text)
        out[name] = p
    return out


def test_finding_exits_1_and_clean_exits_0(files: dict[str, Path]) -> None:
    code, out, _ = run([str(files["bad.cu"])])
    assert code == 1
    assert "[KL101 uncoalesced-global-load]" in out
    assert f"{files['bad.cu']}:1:" in out
    code, out, _ = run([str(files["good.cu"])])
    assert code == 0


def test_json_carries_metrics_and_assumptions(files: dict[str, Path]) -> None:
    code, out, _ = run([str(files["bad.cu"]), "--format", "json"])
    assert code == 1
    data = json.loads(out)
    assert data["version"]
    (d,) = data["diagnostics"]
    assert set(d) >= {"path", "line", "column", "code", "name", "severity", "message", "kernel", "notes",
                      "assumptions", "metrics"}
    m = d["metrics"]
    assert (m["sectors"], m["ideal_sectors"], m["active_lanes"], m["bytes_per_lane"]) == (32, 4, 32, 4)
    assert d["kernel"] == "k"
    assert any("blockDim = (256, 1, 1)" in a for a in d["assumptions"])


def test_fail_on_error_ignores_warnings(files: dict[str, Path]) -> None:
    code, _, _ = run([str(files["bad.cu"]), "--fail-on", "error"])
    assert code == 0


def test_bad_inputs_exit_2_but_other_paths_are_linted(files: dict[str, Path], tmp_path: Path) -> None:
    binary = tmp_path / "blob.cu"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    latin = tmp_path / "latin.cu"
    latin.write_bytes(b"// caf\xe9\n__global__ void k() {}\n")
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    code, out, err = run([str(tmp_path / "missing.cu"), str(binary), str(latin), str(empty), str(files["bad.cu"])])
    assert code == 2
    assert "missing.cu: error: no such file or directory" in err
    assert "blob.cu: error: binary file" in err
    assert "latin.cu:1: note: not valid UTF-8" in err  # read leniently, as nvcc does
    assert "empty_dir: error: directory contains no .cu or .cuh files" in err
    assert "Traceback" not in err + out
    assert "KL101" in out  # the good path was still linted


def test_directories_are_searched_for_cu_and_cuh(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.cuh").write_text(STRIDED)
    (tmp_path / "sub" / "notes.txt").write_text("not cuda")
    code, out, _ = run([str(tmp_path), "--format", "concise"])
    assert code == 1
    assert "a.cuh:1:" in out and "notes.txt" not in out


def test_stdin_with_filename() -> None:
    code, out, _ = run(["-", "--stdin-filename", "piped.cu", "--format", "concise"], stdin=STRIDED.encode())
    assert code == 1
    assert out.startswith("piped.cu:1:")


def test_block_and_define_change_the_verdict(tmp_path: Path) -> None:
    p = tmp_path / "ld.cu"
    # `ld` multiplies the row `threadIdx.x` beside the column `blockIdx.y`: a row pitch, sampled large (a
    # warning). Alone (`a[threadIdx.x * ld]`) it would be a stride, and 1 plausible: an info.
    p.write_text("__global__ void k(const float* a, float* o, int ld) { o[threadIdx.x] = a[threadIdx.x * ld + blockIdx.y]; }\n")
    assert run([str(p)])[0] == 1
    assert run([str(p), "--define", "ld=1"])[0] == 0
    code, out, _ = run([str(p), "--define", "ld=1", "--block", "64", "--format", "json"])
    assert json.loads(out)["diagnostics"] == []


def test_usage_errors_exit_2(files: dict[str, Path], tmp_path: Path) -> None:
    assert run([str(files["good.cu"]), "--define", "oops"])[0] == 2
    assert run([str(files["good.cu"]), "--block", "0,8"])[0] == 2
    assert run([])[0] == 2
    bad_cfg = tmp_path / "kernlint.toml"
    bad_cfg.write_text("fail-on = 'sometimes'\n")
    code, _, err = run([str(files["good.cu"]), "--config", str(bad_cfg)])
    assert code == 2 and "kernlint.toml:1" in err


def test_syntax_error_in_one_kernel_reports_the_rest() -> None:
    code, out, _ = run([str(ROOT / "fixtures" / "KL900_syntax_error.cu"), "--format", "concise"])
    assert code == 2
    assert "KL900" in out and "KL101" in out


def test_console_script_runs_on_the_readme_example() -> None:
    proc = subprocess.run([sys.executable, "-m", "kernlint.cli.command", str(ROOT / "examples" / "transpose.cu"),
                           "--no-ptxas"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "KL102 uncoalesced-global-store" in proc.stdout
    assert "\x1b[" not in proc.stdout  # piped: no colour


@pytest.mark.parametrize("args,code,needle", [
    (["examples/transpose.cu", "--no-ptxas", "--format", "concise"], 1, "KL102"),
    (["--bogus-option"], 2, "No such option"),
    (["missing.cu"], 2, "no such file"),
    (["--version"], 0, "kernlint"),
])
def test_console_entry_point_exit_codes(args: list[str], code: int, needle: str) -> None:
    """`kernlint` (cli.run) ends the process itself: its exit status and output must survive that."""
    proc = subprocess.run([sys.executable, "-c", "from kernlint.cli.command import run; run()", *args],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert needle in proc.stdout + proc.stderr
