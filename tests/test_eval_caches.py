"""The evaluator's remembered answers (issue 31: evaluate once, reuse): each one changes with what it depends on."""
from __future__ import annotations

import numpy as np

from kernlint.checks import roofline
from kernlint.eval import coverage as cov
from kernlint.eval import events as ev
from kernlint.eval.interp import Interpreter
from kernlint.frontend import parse_source
from kernlint.ir import nodes as ir
from kernlint.model.metrics import shared_wavefronts
from kernlint.project.launch import LaunchShape

SRC = """
template <typename T> __global__ void k(T* a, int n) {
    if (threadIdx.x < n) a[threadIdx.x] = 0;
}
"""


def _interpreter() -> tuple[ir.TranslationUnit, ir.Function, Interpreter]:
    tu = parse_source(SRC, "t.cu")
    fn = tu.kernels[0]
    return tu, fn, Interpreter(tu, fn, LaunchShape(block=(32, 1, 1), source="test"), {})


def test_resolve_follows_the_bindings_object_and_known_types() -> None:
    _tu, _fn, interp = _interpreter()
    t = ir.CType("template", 0, name="T")
    first = {"T": "float"}
    interp.bindings = first
    assert interp.resolve(t).kind == "float" and interp.resolve(t).size == 4
    interp.bindings = {"T": "double"}  # an inlined helper's own bindings
    assert interp.resolve(t).size == 8
    interp.bindings = first  # restored after the call
    assert interp.resolve(t).size == 4
    # A pointer to the parameter is resolved through it, under each binding.
    p = ir.CType("pointer", 8, False, pointee=t)
    assert interp.resolve(p).pointee.size == 4  # type: ignore[union-attr]
    interp.bindings = {"T": "double"}
    assert interp.resolve(p).pointee.size == 8  # type: ignore[union-attr]
    # A name the evaluator learns the type of only later (known_types grows during a run).
    interp.bindings = {"T": "Pixel"}
    assert interp.resolve(t) is t
    pixel = ir.CType("struct", 12, name="Pixel")
    interp.known_types["Pixel"] = pixel
    assert interp.resolve(t) is pixel


def test_sites_of_depends_on_the_outer_span() -> None:
    tu, fn, interp = _interpreter()
    assert fn.body is not None
    here = cov.sites_of(fn.body, tu, interp.cov_shared)
    assert here == cov.sites_of(fn.body, tu, interp.cov_shared)
    assert {k[-1] for k in here} == {cov.ACCESS, cov.BRANCH}
    outer = ir.Span(99, 5, 99, 20)
    inlined = cov.sites_of(fn.body, tu, interp.cov_shared, outer, 2)
    assert [k[:2] for k in inlined] == [(99, 5)] * len(here)  # reported at the call
    assert [k[2:] for k in inlined] == [k[2:] for k in here]


def test_roofline_wavefronts_batched_equal_one_request_at_a_time() -> None:
    rng = np.random.default_rng(7)
    span = ir.Span(1, 1, 1, 1)
    events = []
    for i in range(40):
        warps = (1, 2, 4)[i % 3]
        width = (4, 8, 16, 2)[i % 4]
        address = rng.integers(0, 512, (2, warps, 32)) * (4, 1, 8)[i % 3]
        mask = rng.random((2, 1 if i % 5 == 0 else warps, 32)) < 0.6  # some masks broadcast over warps
        space = "global" if i % 7 == 0 else "shared"
        events.append(ev.MemoryAccess(span, space, "load", width, address, mask, "s", frozenset()))
    real, ideal = roofline._shared_wavefronts(tuple(events), 2)
    want_real, want_ideal = np.zeros(2), np.zeros(2)
    for e in events:
        if e.space != "shared":
            continue
        _ways, wf, best = shared_wavefronts(e.address, e.mask, e.width)
        live = np.broadcast_to(e.mask, e.address.shape).any(axis=-1)
        want_real += np.where(live, wf, 0).reshape(2, -1).sum(axis=-1)
        want_ideal += np.where(live, best, 0).reshape(2, -1).sum(axis=-1)
    assert want_real.sum() > 0
    assert np.array_equal(real, want_real) and np.array_equal(ideal, want_ideal)
