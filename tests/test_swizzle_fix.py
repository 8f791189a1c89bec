"""KL201's swizzle as an edit: every access of the array rewritten, or none (`--fix`, `--diff`)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.checks.swizzle_edit import mask_comments_and_strings, swizzle_edits
from kernlint.cli.command import main
from kernlint.engine.fix import apply_edits

# A transpose whose tile is declared through a typedef: its dimensions cannot be padded in place,
# so the swizzle is the fix that can be applied.
TYPEDEF_TRANSPOSE = """typedef float Tile[32][32];
// kernlint: block=(32,32,1)
__global__ void transpose(const float* in, float* out, int n) {
    __shared__ Tile tile;  /* tile[a][b] in a comment is not an access */
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
"""


def run(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-ptxas"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def kl201(path: Path) -> list[dict]:
    _code, out, _err = run([str(path), "--format", "json", "--select", "KL201"])
    return [d for d in json.loads(out)["diagnostics"] if d["code"] == "KL201"]


def test_mask_blanks_comments_and_strings_keeping_columns() -> None:
    lines = ['a[1] /* b[2]', 'still */ c[3] // d[4]', 'e("f[5]") + \'[\'']
    masked = mask_comments_and_strings(lines)
    assert [len(x) for x in masked] == [len(x) for x in lines]
    assert "b[2]" not in masked[0] and "a[1]" in masked[0]
    assert "c[3]" in masked[1] and "d[4]" not in masked[1] and "still" not in masked[1]
    assert "f[5]" not in masked[2] and "[" not in masked[2]


def test_every_access_is_rewritten() -> None:
    lines = TYPEDEF_TRANSPOSE.split("\n")
    edits = swizzle_edits(lines, "tile", 4, (3, 10), 32, 32)
    assert [e.line for e in edits] == [6, 9]
    new = apply_edits(TYPEDEF_TRANSPOSE, edits).split("\n")
    assert new[5].strip().startswith("tile[threadIdx.y][threadIdx.x ^ threadIdx.y] =")
    assert "tile[threadIdx.x][threadIdx.y ^ threadIdx.x]" in new[8]
    assert new[3] == lines[3]  # the declaration and its comment are untouched


@pytest.mark.parametrize("use", [
    "float* p = &tile[0][0];",            # a pointer taken: later uses go through p
    "f(tile);",                           # the array handed to a function
    "n = sizeof(tile);",                  # not an element access
    "tile[threadIdx.y][threadIdx.x++] = 0;",  # a side effect in an index
    "tile[threadIdx.y]\n[threadIdx.x] = 0;",  # an access spread over lines
])
def test_any_other_use_means_no_edit(use: str) -> None:
    text = TYPEDEF_TRANSPOSE.replace("    __syncthreads();", "    " + use + "\n    __syncthreads();")
    lines = text.split("\n")
    assert swizzle_edits(lines, "tile", 4, (3, len(lines)), 32, 32) == ()


def test_a_local_array_named_outside_its_kernel_means_no_edit() -> None:
    text = "#define AT(r, c) tile[r][c]\n" + TYPEDEF_TRANSPOSE
    lines = text.split("\n")
    assert swizzle_edits(lines, "tile", 5, (4, 11), 32, 32) == ()
    assert swizzle_edits(lines, "tile", 5, (4, 11), 32, 24) == ()  # not a power of two: no XOR swizzle


def test_more_rows_than_columns_wrap_the_row() -> None:
    lines = ["__shared__ float s[64][16];", "s[ty + 1][tx] = 0;"]
    (edit,) = swizzle_edits(lines, "s", 1, None, 64, 16)
    assert apply_edits("\n".join(lines), [edit]).split("\n")[1] == "s[ty + 1][tx ^ ((ty + 1) % 16)] = 0;"


def test_fix_applies_the_swizzle_and_the_result_relints_clean(tmp_path: Path) -> None:
    p = tmp_path / "transpose.cu"
    p.write_text(TYPEDEF_TRANSPOSE)
    (before,) = kl201(p)
    assert "XOR swizzle" in before["message"] and len(before["fixes"]) == 2
    code, out, _err = run([str(p), "--diff"])
    assert code == 1 and p.read_text() == TYPEDEF_TRANSPOSE
    assert "+    out[y * n + x] = tile[threadIdx.x][threadIdx.y ^ threadIdx.x];" in out
    code, _out, err = run([str(p), "--fix", "--select", "KL201"])
    assert code == 0 and "fixed 1 finding" in err
    assert kl201(p) == []
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed: the fixed file's compilation is not checked")
    proc = subprocess.run([nvcc, "-c", "-o", str(tmp_path / "t.o"), str(p)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_padding_stays_the_fix_where_it_can_be_edited(tmp_path: Path) -> None:
    p = tmp_path / "t.cu"
    p.write_text(TYPEDEF_TRANSPOSE.replace("__shared__ Tile tile;", "__shared__ float tile[32][32];"))
    (d,) = kl201(p)
    assert [f["text"] for f in d["fixes"]] == ["33"]
