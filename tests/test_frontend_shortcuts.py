"""The front end's shortcuts change only its cost: skipping the shim's declarations by their count, and
tokenizing a host function for launch pointer offsets only where its text may assign an argument."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.frontend import clang_frontend as cf
from kernlint.frontend import parse_cache, shim_pch
from kernlint.frontend.clang_launches import _may_assign

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").glob("*.cu"))


def _parse(path: Path, pch: bool) -> object:
    shim_pch._parses = shim_pch.WARM_PARSES if pch else 0  # the shim as a PCH, or as text
    parse_cache.clear()  # (a unit kept from the text parse would be taken instead of a PCH parse)
    return cf.parse_source(path.read_text(), str(path))


@pytest.mark.parametrize("pch", [False, True], ids=["text", "pch"])
@pytest.mark.parametrize("path", FIXTURES[::25], ids=lambda p: p.name)
def test_the_shim_run_counted_or_checked_gives_the_same_ir(path: Path, pch: bool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim_pch, "_parses", 0)
    monkeypatch.setattr(shim_pch, "_disabled", False)
    monkeypatch.setattr(shim_pch, "_built", {})
    monkeypatch.delenv("KERNLINT_NO_PCH", raising=False)
    monkeypatch.setattr(cf, "_SHIM_RUNS", {})
    # With a PCH the index leaves the shim's declarations out (shim_pch.EXCLUDE), so there is no run to
    # skip; the run is still counted where the index lists them (EXCLUDE off).
    monkeypatch.setattr(shim_pch, "EXCLUDE", False)
    counted = _parse(path, pch)  # every child asked for its file; the run is counted
    assert cf._SHIM_RUNS and all(n > 100 for n in cf._SHIM_RUNS.values())
    used: list[range] = []
    real = cf._shim_run
    monkeypatch.setattr(cf, "_shim_run", lambda *a: used.append(real(*a)) or used[-1])
    assert _parse(path, pch) == counted  # the known run, checked at its ends
    assert used and len(used[-1]) in cf._SHIM_RUNS.values()
    for key in cf._SHIM_RUNS:
        cf._SHIM_RUNS[key] += 1  # a wrong count fails the check: nothing is skipped, the IR is the same
    used.clear()
    assert _parse(path, pch) == counted
    assert used and len(used[-1]) == 0


def test_may_assign_is_true_wherever_the_tokens_could_assign_an_argument() -> None:
    assert not _may_assign(["in", "out"], b"void run(const float* in, float* out) { k<<<1, 32>>>(in, out); }")
    assert not _may_assign(["in"], b"if (in == 0) return; k<<<1, 32>>>(in);")  # == is no assignment...
    assert _may_assign(["in"], b"float* in = base + 4;")
    assert _may_assign(["(float*)src"], b"src\t=\n  buf + pad;")
    assert _may_assign(["src"], b"src /* shifted */ = buf + pad;")  # a comment between: maybe
    assert _may_assign(["src"], b"sr\\\nc = buf + pad;")  # a line splice inside the name
    assert not _may_assign(["src"], b"my_src = buf + pad; src2 = buf;")  # other names
    assert not _may_assign(["", ""], b"a = b + 1;")  # no pointer argument names anything


def test_launch_offsets_are_found_through_the_shortcut() -> None:
    src = """
__global__ void k(float* p) { p[threadIdx.x] = 0.f; }
void run(float* buf, int pad) {
    float* src = buf + pad;
    float* dst /* aligned */ = buf;
    k<<<1, 32>>>(src);
    k<<<1, 32>>>(dst);
    k<<<1, 32>>>(buf);
}
"""
    unit = cf.parse_source(src, "offsets.cu")
    assert [launch.arg_offsets for launch in unit.launches] == [("src = buf + pad",), (), ()]


def test_with_the_pch_the_index_lists_no_shim_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim_pch, "_parses", 0)
    monkeypatch.setattr(shim_pch, "_disabled", False)
    monkeypatch.setattr(shim_pch, "_built", {})
    monkeypatch.delenv("KERNLINT_NO_PCH", raising=False)
    monkeypatch.setattr(cf, "_SHIM_RUNS", {})
    path = FIXTURES[0]
    text_ir = _parse(path, False)
    assert cf._SHIM_RUNS  # the shim as text: its declarations are listed (and skipped as a run)
    monkeypatch.setattr(cf, "_SHIM_RUNS", {})
    assert _parse(path, True) == text_ir
    assert shim_pch._built and all(shim_pch._built.values()), "no PCH was built"
    assert not cf._SHIM_RUNS  # from the PCH: none listed, nothing to count
