"""Template kernels on traits classes (issue 29): which lines of a template depend on its parameters,
which bindings are tried in which order, and what a re-evaluation of budget-cut lines drops."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.ir import nodes as ir
from kernlint.cli.command import main
from kernlint.eval import coverage as evcov
from kernlint.frontend.instantiate import dependent_lines
from kernlint.project.launch import _by_chain

KERNEL = """\
template <typename Kt>
__global__ void k(float* out) {
    using vec_t = typename Kt::vec_t;
    constexpr int kN = Kt::kN;
    float a[kN], b[kN];
    int plain = threadIdx.x;
    out[plain] = 0.f;
    b[0] = 1.f;
    vec_t v;
}
"""


def test_dependent_lines_follow_aliases_constants_and_every_declarator() -> None:
    lines = dependent_lines(KERNEL, 1, 10, ("Kt",))
    assert {3, 4, 5, 8, 9} <= lines  # Kt, kN (from Kt), b (second declarator of a kN array), vec_t
    assert not {6, 7} & lines  # `plain` and the store through it do not depend on the binding


def _launch(line: int, via: str, arg: str) -> ir.Launch:
    return ir.Launch("k", (arg,), None, (32, 1, 1), None, ir.Span(line, 1, line, 1), via=via)


def test_copies_of_one_launch_do_not_crowd_out_the_other_chains() -> None:
    # 3 copies (a switch macro's lambda) of the launch reached through run<half>, then through run<float>.
    half = [_launch(40, "run<half> at a.cu:3", f"T<half, {i}>") for i in range(3)]
    flt = [_launch(40, "run<float> at a.cu:4", f"T<float, {i}>") for i in range(3)]
    order = [ln.template_args[0] for ln in _by_chain(tuple(half + flt))]
    assert order[:2] == ["T<half, 0>", "T<float, 1>"]  # one of each chain first, the copies rotated
    assert sorted(order) == sorted(ln.template_args[0] for ln in half + flt)
    # Launches at distinct lines keep the index's order.
    single = [_launch(10 + i, "", f"T<{i}>") for i in range(4)]
    assert _by_chain(tuple(single)) == single


def test_a_budget_cut_site_the_complete_re_evaluation_never_meets_is_dropped() -> None:
    def st(line: int, col: int, ok: bool, why: tuple[str, str] = ("", "")) -> evcov.SiteStatus:
        return evcov.SiteStatus((line, col, line, col, line, col + 5, evcov.ACCESS), ok, why)

    first = (st(10, 5, True), st(20, 7, False, ("budget", "")), st(21, 7, False, ("budget", "")))
    again = (st(21, 7, True),)  # line 20 re-evaluated (covered) without meeting its site: no code here
    merged = {s.key[0]: s for s in evcov.union(first, again, lines=(20, 21))}
    assert set(merged) == {10, 21} and merged[21].evaluated
    kept = {s.key[0] for s in evcov.union(first, again)}  # without the covered lines: still a gap
    assert 20 in kept


@pytest.fixture()
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))


def test_a_binding_naming_a_missing_headers_type_is_passed_over(tmp_path: Path, _private_cache: None) -> None:
    """`run<lib::half_t>` (from a header kernlint lacks) cannot be instantiated: the next binding,
    `run<float>`, is evaluated instead, and the finding names it."""
    (tmp_path / "kernlint.toml").write_text("")
    (tmp_path / "k.cuh").write_text("""\
#include <lib/half.h>
template <int N_, typename T_> struct Tr { using T = T_; static constexpr int kPitch = N_ * int(sizeof(T)) / 4; };
template <typename Kt>
__global__ void k(typename Kt::T* out) {
    __shared__ typename Kt::T s[32 * 32];
    s[threadIdx.x * Kt::kPitch] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
template <typename T> void run(T* out) { k<Tr<8, T>><<<1, 32>>>(out); }
""")
    (tmp_path / "inst.cu").write_text('#include "k.cuh"\ntemplate void run<lib::half_t>(lib::half_t*);\n'
                                      'template void run<float>(float*);\n')
    res = CliRunner().invoke(main, [str(tmp_path / "inst.cu"), "--format", "json", "--no-ptxas"],
                             catch_exceptions=False)
    import json

    doc = json.loads(res.stdout)
    hits = [d for d in doc["diagnostics"] if d["code"] == "KL201"]
    # float: kPitch = 8 words, lanes 4 apart in banks: gcd(8, 32) = 8-way.
    assert [(d["line"], d["metrics"]["ways"]) for d in hits] == [(6, 8)]
    said = " ".join(a.replace(" ", "") for a in hits[0]["assumptions"])
    assert "Kt=Tr<8,float>" in said and "half_t" not in said
    assert "1ofthe2bindings" in said  # the binding passed over is counted, not hidden
