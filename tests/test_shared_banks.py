"""KL201: the bank model (metrics.shared_wavefronts), the padding search, and the suggested edit."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kernlint.ir import nodes as ir
from kernlint.checks.shared_banks import padded_type
from kernlint.base.diagnostics import Diagnostic, Edit
from kernlint.engine.lint import LintOptions, lint_with_suppressions
from kernlint.eval.events import MemoryAccess
from kernlint.eval.interp import Interpreter
from kernlint.frontend import parse_source
from kernlint.project.launch import LaunchShape
from kernlint.model.metrics import shared_phases, shared_wavefronts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LANES = np.arange(32, dtype=np.int64)
ALL = np.ones(32, dtype=bool)
OPTIONS = LintOptions(resources=False)


def cost(address: np.ndarray, width: int = 4, mask: np.ndarray = ALL) -> tuple[int, int, int]:
    ways, wavefronts, ideal = shared_wavefronts(address, mask, width)
    return int(ways), int(wavefronts), int(ideal)


# --- the bank model ------------------------------------------------------------------------------


@pytest.mark.parametrize("stride", range(1, 66))
def test_word_stride_gives_gcd_way_conflicts(stride: int) -> None:
    g = math.gcd(stride, 32)
    assert cost(LANES * 4 * stride) == (g, g, 1)


def test_seed_strides() -> None:
    assert cost(LANES * 4 * 12)[0] == 4
    assert cost(LANES * 4 * 13)[0] == 1
    assert cost(LANES * 4 * 32)[0] == 32
    assert cost(LANES * 4 * 33)[0] == 1


def test_same_word_is_a_multicast() -> None:
    assert cost(np.zeros(32, dtype=np.int64)) == (1, 1, 1)  # broadcast
    assert cost((LANES // 2) * 4) == (1, 1, 1)  # pairs of lanes share a word
    assert cost(LANES)[0] == 1  # bytes: four lanes per word
    assert cost(LANES * 2, width=2)[0] == 1  # halves: two lanes per word
    # Two words in bank 0, each read by 16 lanes: 2-way, not 32-way.
    assert cost((LANES % 2) * 128) == (2, 2, 1)


def test_inactive_lanes_do_not_count() -> None:
    assert cost(LANES * 128, mask=LANES < 1) == (1, 1, 1)
    assert cost(LANES * 128, mask=LANES < 16) == (16, 16, 1)
    assert cost(LANES * 128, mask=np.zeros(32, dtype=bool)) == (0, 0, 0)


def test_eight_byte_accesses_are_two_half_warp_phases() -> None:
    assert shared_phases(8) == 2
    assert cost(LANES * 8, width=8) == (1, 2, 2)  # double d[t]: conflict-free
    assert cost(LANES * 16, width=8) == (2, 4, 2)  # double d[2t]: 2-way in each half warp
    assert cost(LANES * 8, width=8, mask=LANES < 16) == (1, 1, 1)  # one phase active
    # Lanes 0 and 16 in the same bank are in different phases: no conflict.
    assert cost((LANES % 16) * 8 + (LANES // 16) * 256, width=8) == (1, 2, 2)


def test_sixteen_byte_accesses_are_four_quarter_warp_phases() -> None:
    assert shared_phases(16) == 4
    assert cost(LANES * 16, width=16) == (1, 4, 4)  # float4 v[t]
    assert cost(LANES * 32, width=16) == (2, 8, 4)  # float4 v[2t]
    assert cost(np.zeros(32, dtype=np.int64), width=16) == (1, 4, 4)  # broadcast in every phase


def test_leading_dimensions_are_requests() -> None:
    addr = np.stack([LANES * 4, LANES * 128, LANES * 48])[None].repeat(2, axis=0)  # (2, 3, 32)
    ways, wavefronts, ideal = shared_wavefronts(addr, np.ones(addr.shape, dtype=bool), 4)
    assert ways.shape == (2, 3)
    assert ways[0].tolist() == [1, 32, 4]
    assert wavefronts[1].tolist() == [1, 32, 4]
    assert ideal.tolist() == [[1, 1, 1], [1, 1, 1]]


# --- padding through the evaluator ---------------------------------------------------------------

def _lane_by_lane(address: np.ndarray, mask: np.ndarray, width: int) -> tuple[int, int, int]:
    """The bank model of one request written out lane by lane, phase by phase (the reference)."""
    per = 32 // shared_phases(width)
    degrees = []
    for phase in range(0, 32, per):
        banks: dict[int, set[int]] = {}
        for lane in range(phase, phase + per):
            if mask[lane]:
                for word in range(int(address[lane]) // 4, (int(address[lane]) + width - 1) // 4 + 1):
                    banks.setdefault(word % 32, set()).add(word)
        degrees.append(max((len(words) for words in banks.values()), default=0))
    return max(degrees), sum(degrees), sum(1 for d in degrees if d)


@pytest.mark.parametrize("width", [1, 2, 4, 8, 12, 16])
def test_bank_model_matches_a_lane_by_lane_count(width: int) -> None:
    # Aligned and misaligned addresses (a misaligned 4-byte access spans two words), partial masks,
    # several requests in one call: each request is measured as the reference measures it alone.
    rng = np.random.default_rng(width)
    for unit in (1, 2, 4, width):
        addr = rng.integers(-40, 400, (3, 5, 32)) * unit
        mask = rng.random((3, 5, 32)) < rng.random((3, 5, 1))
        ways, wavefronts, ideal = shared_wavefronts(addr, mask, width)
        for s in range(3):
            for w in range(5):
                assert (ways[s, w], wavefronts[s, w], ideal[s, w]) == _lane_by_lane(addr[s, w], mask[s, w], width)



def test_padded_type_grows_the_innermost_dimension() -> None:
    f = ir.CType("float", 4, name="float")
    row = ir.CType("array", 128, pointee=f, count=32, name="float[32]")
    tile = ir.CType("array", 4096, pointee=row, count=32, name="float[32][32]")
    p = padded_type(tile, 1)
    assert (p.count, p.size, p.pointee.count, p.pointee.size) == (32, 32 * 33 * 4, 33, 132)  # type: ignore[union-attr]
    assert p.name == "float[32][33]"


def test_interpreter_honours_a_shared_type_override() -> None:
    src = ("__global__ void k(float* out) {\n    __shared__ float tile[32][32];\n"
           "    out[threadIdx.x] = tile[threadIdx.x][0];\n}\n")
    tu = parse_source(src, "k.cu")
    fn = tu.kernels[0]
    shape = LaunchShape((32, 1, 1), "test")
    plain = Interpreter(tu, fn, shape, {}).run()
    layout_t = plain.shared_layout["tile"][1]
    padded = Interpreter(tu, fn, shape, {}, shared_types={"tile": padded_type(layout_t, 1)}).run()

    def lanes(res: object) -> list[int]:
        ev = [e for e in res.events if isinstance(e, MemoryAccess) and e.space == "shared"]  # type: ignore[attr-defined]
        return (ev[0].address[0, 0] - ev[0].address[0, 0, 0]).tolist()

    assert lanes(plain)[:3] == [0, 128, 256]
    assert lanes(padded)[:3] == [0, 132, 264]
    assert padded.shared_layout["tile"][1].size == 32 * 33 * 4


# --- findings, fixes and the edit ----------------------------------------------------------------


def kl201(path: Path, text: str | None = None) -> list[Diagnostic]:
    text = path.read_text() if text is None else text
    return [d for d in lint_with_suppressions(text, str(path), OPTIONS).diagnostics if d.code == "KL201"]


def apply_edits(text: str, edits: list[Edit]) -> str:
    lines = text.split("\n")
    # Apply from the bottom right so earlier positions stay valid.
    for e in sorted(set(edits), key=lambda e: (e.line, e.column), reverse=True):
        assert e.line == e.end_line
        line = lines[e.line - 1]
        lines[e.line - 1] = line[: e.column - 1] + e.text + line[e.end_column - 1:]
    return "\n".join(lines)


def test_transpose_metrics_and_suggestion() -> None:
    diags = kl201(FIXTURES / "KL201_transpose.cu")
    assert [d.line for d in diags] == [17, 45]
    first = diags[0]
    m = first.metrics
    assert (m["ways"], m["wavefronts"], m["ideal_wavefronts"]) == (32, 32, 1)
    assert (m["active_lanes"], m["bytes_per_lane"], m["array"]) == (32, 4, "tile")
    assert m["suggested_padding"] == 33 and m["suggested_declaration"] == "tile[32][33]"
    assert "declare tile[32][33]: every access becomes conflict-free" in first.message
    assert first.fixes and first.fixes[0].text == "33"
    assert diags[1].metrics["suggested_padding"] == 33
    assert diags[1].fixes[0].text == "TILE + 1"
    assert "tile[TILE][TILE + 1]" in diags[1].message


def test_applying_the_suggested_edit_silences_kl201_for_the_array() -> None:
    path = FIXTURES / "KL201_transpose.cu"
    text = path.read_text()
    diags = kl201(path)
    for d in diags:
        assert d.fixes, f"line {d.line}: no suggested edit"
        fixed = apply_edits(text, list(d.fixes))
        edit = d.fixes[0]
        assert fixed.split("\n")[edit.line - 1].count("[") == 2
        after = kl201(path, fixed)
        # The array whose declaration was edited is quiet; the other kernel's finding remains.
        assert d.line not in {a.line for a in after}
        assert len(after) == len(diags) - 1
    everything = apply_edits(text, [f for d in diags for f in d.fixes])
    assert kl201(path, everything) == []


def test_stride_fixture_suggests_13_and_33() -> None:
    path = FIXTURES / "KL201_stride.cu"
    diags = kl201(path)
    twelve = [d for d in diags if d.metrics["array"] == "rows" and d.metrics["ways"] == 4]
    thirty_two = [d for d in diags if d.metrics["array"] == "rows" and d.metrics["ways"] == 32]
    assert twelve and thirty_two
    assert {d.metrics["suggested_padding"] for d in twelve} == {13}
    assert {d.metrics["suggested_padding"] for d in thirty_two} == {33}
    assert all(d.metrics.get("lane_stride_words") == 12 for d in twelve)
    flat = [d for d in diags if d.metrics["array"] == "buf"]
    assert flat and not flat[0].fixes and "suggested_padding" not in flat[0].metrics
    assert "padding the declaration cannot help" in " ".join(flat[0].notes)
    # Applying every suggested edit leaves only the flat array's finding.
    fixed = apply_edits(path.read_text(), [f for d in diags for f in d.fixes])
    assert {d.metrics["array"] for d in kl201(path, fixed)} == {"buf"}


def test_reduction_reports_the_degree_per_step() -> None:
    diags = kl201(FIXTURES / "KL201_reduction.cu")
    assert {d.line for d in diags} == {17}
    steps = diags[0].metrics["ways_by_step"]
    assert steps == {"s = 1": 2, "s = 2": 4, "s = 4": 8, "s = 8": 8, "s = 16": 8, "s = 32": 4, "s = 64": 2,
                     "s = 128": 1}
    assert diags[0].metrics["ways"] == 8
    assert "s = 1: 2-way" in " ".join(diags[0].notes)


def test_scan_padding_macro_removes_every_conflict() -> None:
    diags = kl201(FIXTURES / "KL201_scan.cu")
    assert diags and all(d.line < 45 for d in diags)  # prescan_padded starts below line 45
    assert max(d.metrics["ways"] for d in diags) == 16


def test_wide_accesses_compare_against_their_phases() -> None:
    diags = kl201(FIXTURES / "KL201_wide.cu")
    m = {d.metrics["bytes_per_lane"]: d.metrics for d in diags}
    assert (m[8]["ways"], m[8]["wavefronts"], m[8]["ideal_wavefronts"]) == (2, 4, 2)
    assert (m[16]["ways"], m[16]["wavefronts"], m[16]["ideal_wavefronts"]) == (2, 8, 4)


def test_extern_shared_through_casts() -> None:
    diags = kl201(FIXTURES / "KL201_extern.cu")
    assert {d.metrics["array"] for d in diags} == {"smem", "buf"}
    smem = next(d for d in diags if d.metrics["array"] == "smem")
    assert smem.metrics["ways"] == 32 and not smem.fixes
    buf = next(d for d in diags if d.metrics["array"] == "buf")
    assert buf.metrics["ways"] == 4


def test_swizzle_is_offered_and_recognised() -> None:
    assert kl201(FIXTURES / "KL201_swizzle.cu") == []
    first = kl201(FIXTURES / "KL201_transpose.cu")[0]
    assert "tile[r][c ^ r]" in " ".join(first.notes)
    assert first.metrics.get("swizzle_conflict_free") is True


def test_json_output_carries_metrics_and_the_fix() -> None:
    proc = subprocess.run([sys.executable, "-m", "kernlint.cli.command", "--format", "json", "--no-ptxas",
                           "--select", "KL201", str(FIXTURES / "KL201_transpose.cu")],
                          capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        pytest.skip(f"CLI not runnable as a module here: {proc.stderr[-300:]}")
    doc = json.loads(proc.stdout)
    found = [d for d in doc["diagnostics"] if d["code"] == "KL201"]
    assert found
    d = found[0]
    for key in ("ways", "wavefronts", "ideal_wavefronts", "active_lanes", "bytes_per_lane", "suggested_padding"):
        assert key in d["metrics"], key
    fix = d["fixes"][0]
    assert fix["text"] == "33" and fix["line"] == 9 and fix["end_column"] - fix["column"] == 2


def test_template_tile_is_sized_from_the_launch_and_padded_with_its_parameter() -> None:
    path = FIXTURES / "KL201_template.cu"
    diags = kl201(path)
    assert [d.line for d in diags] == [12]
    d = diags[0]
    assert d.metrics["ways"] == 32 and d.metrics["suggested_padding"] == 33
    assert d.fixes[0].text == "TILE + 1"
    fixed = apply_edits(path.read_text(), list(d.fixes))
    assert "__shared__ T tile[TILE][TILE + 1];" in fixed
    assert kl201(path, fixed) == []


def test_partial_padding_is_reported_as_a_tradeoff_and_the_swizzle_preferred() -> None:
    src = ("// kernlint: block=(16,16)\n"
           "__global__ void k(float* out, const float* in) {\n"
           "    __shared__ float t[16][16];\n"
           "    t[threadIdx.y][threadIdx.x] = in[threadIdx.y * 16 + threadIdx.x];\n"
           "    __syncthreads();\n"
           "    out[threadIdx.y * 16 + threadIdx.x] = t[threadIdx.x][threadIdx.y];\n"
           "}\n")
    diags = kl201(Path("partial.cu"), src)
    assert [d.line for d in diags] == [6]
    d = diags[0]
    assert d.metrics["ways"] == 8
    assert d.metrics["padding_removes_all_conflicts"] is False
    assert "XOR swizzle" in d.message
    assert "no padding makes every access conflict-free" in " ".join(d.notes)


def test_array_of_structs_suggests_structure_of_arrays() -> None:
    src = ("struct P { float x, y, z, w; };\n"
           "// kernlint: block=(128)\n"
           "__global__ void k(const P* in, float* out) {\n"
           "    __shared__ P ps[128];\n"
           "    ps[threadIdx.x] = in[threadIdx.x];\n"
           "    __syncthreads();\n"
           "    out[threadIdx.x] = ps[threadIdx.x].x;\n"
           "}\n")
    diags = kl201(Path("aos.cu"), src)
    # P is 16 bytes but only 4-byte aligned: the copy on line 5 is four 4-byte stores, each 4-way.
    # The load on line 7 collides the same way (lanes 16 bytes apart): one cause, one finding, the
    # load listed as a related location.
    assert [(d.line, d.metrics["ways"]) for d in diags] == [(5, 4)]
    assert [(r["line"], r["ways"]) for r in diags[0].metrics["related_locations"]] == [(7, 4)]
    assert "structure of arrays" in " ".join(diags[0].notes)


def test_a_block_scoped_declaration_hides_the_outer_variable_only_inside_the_block() -> None:
    src = ("// kernlint: block=(256)\n"
           "__global__ void k(float* out, const float* in) {\n"
           "    __shared__ float temp[512];\n"
           "    int ai = threadIdx.x;\n"
           "    temp[ai] = in[ai];\n"
           "    if (threadIdx.x < 128) {\n"
           "        int ai = 2 * threadIdx.x;\n"
           "        temp[ai] += 1.0f;\n"
           "    }\n"
           "    out[ai] = temp[ai];\n"
           "}\n")
    diags = lint_with_suppressions(src, "shadow.cu", OPTIONS).diagnostics
    assert [(d.line, d.code) for d in diags] == [(8, "KL201")]


def test_evidence_lists_colliding_lanes() -> None:
    import re

    from kernlint.engine.lint import lint_source
    path = Path(__file__).resolve().parents[1] / "fixtures" / "KL201_evidence.cu"
    diag = next(d for d in lint_source(path.read_text(), str(path)).diagnostics if d.code == "KL201")
    note = next(n for n in diag.notes if n.startswith("the worst request"))
    # Lanes 1-15 read words 1-15 (banks 1-15): they collide with nothing and are not shown.
    shown = [int(x) for x in re.findall(r"lane (\d+) ->", note)]
    assert all(lane == 0 or lane >= 16 for lane in shown) and len(shown) == 4
    assert set(re.findall(r"\(bank (\d+)\)", note)) == {"0"}
    assert "16 lanes, each a different word of bank 0" in note


DEFERRED_SRC = """#define TILE 32
__global__ void transpose(float* out, const float* in, int n) {
    __shared__ float tile[TILE][TILE];
    __shared__ float pair[TILE][TILE];
    __shared__ float odd[TILE][48];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    pair[threadIdx.y][threadIdx.x] = in[y * n + x];
    odd[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    out[x * n + y] = tile[threadIdx.x][threadIdx.y];
    out[x * n + y + 1] = pair[threadIdx.x][threadIdx.y] + pair[threadIdx.x][(threadIdx.y + 1) % TILE];
    out[x * n + y + 2] = odd[threadIdx.x][threadIdx.y] + odd[threadIdx.x][threadIdx.y + 1];
}
"""
TWO_LAUNCHES = """void host(float* o, const float* i) {
    transpose<<<dim3(4, 4), dim3(32, 32)>>>(o, i, 128);
    transpose<<<dim3(8, 8), dim3(32, 32)>>>(o, i, 256);
}
"""


@pytest.mark.parametrize("host", [TWO_LAUNCHES, ""], ids=["two-launches", "guessed-shapes"])
def test_fix_search_runs_only_for_the_findings_combine_keeps(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Several launch shapes (two launches, or the guessed shapes) each find the conflicts, but one
    # finding per site is reported: the fix search (re-evaluations of the kernel) runs for that one
    # only, where the fix cannot change which findings there are (tile: one conflicting access; pair:
    # a swizzle edit fixes both accesses). odd[32][48] has no swizzle and two conflicting accesses,
    # so whether they are one finding depends on the padding found: searched for every shape (as
    # tile and pair are under the guessed 16 x 16 block, where their stores conflict too). The
    # findings are the same as with every search run.
    from kernlint.checks import KERNEL_RULES, shared_banks
    from kernlint.engine.lint import lint_source

    searched: list[tuple[tuple[tuple[str, int], ...], tuple[int, ...], str]] = []
    search = shared_banks._suggest_fix

    def counted(result: object, root: str) -> object:
        searched.append((result.shape.arg_values, result.shape.block, root))  # type: ignore[attr-defined]
        return search(result, root)  # type: ignore[arg-type]

    monkeypatch.setattr(shared_banks, "_suggest_fix", counted)
    text = DEFERRED_SRC + host
    deferred = lint_source(text, "t.cu", OPTIONS)
    lazy = list(searched)
    searched.clear()
    eager = lint_source(text, "t.cu", OPTIONS, rules=tuple(replace(r, deferred=None) for r in KERNEL_RULES))
    assert [d.to_dict() for d in deferred.diagnostics] == [d.to_dict() for d in eager.diagnostics]
    assert any(d.code == "KL201" for d in deferred.diagnostics)
    shapes = {s[:2] for s in searched}
    assert len(shapes) >= 2 and sorted(searched) == sorted((*s, root) for s in shapes for root in ("tile", "pair", "odd"))
    assert Counter(lazy) <= Counter(searched)
    if host:
        # The launch with n = 256 finds the same conflicts as the first (tied, so the first is
        # reported): only odd's search runs for it.
        assert sorted(r for *_s, r in lazy) == ["odd", "odd", "pair", "tile"]


def test_measuring_a_site_at_once_matches_event_by_event(monkeypatch: pytest.MonkeyPatch) -> None:
    # measure_site stacks the events of a site (one shape and width) and measures them together;
    # the event-by-event loop is the reference (worst request, steps, typical ways, totals, deps).
    from kernlint.engine import lint as engine
    from kernlint.checks import bank_sites

    combine = engine.combine
    stacked = []

    def checked(results, rules, skipped=None):  # type: ignore[no-untyped-def]
        for r in results:
            for evs in bank_sites._sites(r.events).values():
                assert bank_sites.measure_site(evs) == bank_sites._measure_each(evs)
                stacked.append(len(evs) > 1)
        return combine(results, rules, skipped)

    monkeypatch.setattr(engine, "combine", checked)
    for path in sorted(FIXTURES.glob("KL201_*.cu")):
        kl201(path)
    assert sum(stacked) >= 10
