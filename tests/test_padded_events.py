"""checks/padded_events.py: KL201's padding search computes the padded evaluation from the first where
the padding can change nothing but the shared addresses, and evaluates again everywhere else."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kernlint.checks import padded_events, shared_banks
from kernlint.checks.shared_banks import padded_type
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval.events import MemoryAccess
from kernlint.eval.interp import Interpreter

OPTIONS = LintOptions(resources=False)

# A transposed read of `tile` (32-way conflict); `other`, allocated after it, moves when it grows.
PLAIN = """// kernlint: block=(32,8,1)
__global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[32][32];
    __shared__ float other[8][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    for (int j = 0; j < 32; j += 8)
        tile[threadIdx.y + j][threadIdx.x] = in[(blockIdx.y * 32 + threadIdx.y + j) * n + x];
    other[threadIdx.y][threadIdx.x] = 0.0f;
    __syncthreads();
    for (int j = 0; j < 32; j += 8)
        out[(blockIdx.x * 32 + threadIdx.y + j) * n + blockIdx.y * 32 + threadIdx.x] =
            tile[threadIdx.x][threadIdx.y + j] + other[threadIdx.y][threadIdx.x];
}
"""

# Twins where the padding may change more than the addresses the first evaluation split: a column past
# its row (lanes 32..63 write `tile[r][32 + c]`, the next row's words unpadded, not padded), an address
# taken, a row passed on as a pointer.
PAST_ROW = PLAIN.replace("block=(32,8,1)", "block=(64,4,1)").replace(
    "other[threadIdx.y][threadIdx.x]", "other[threadIdx.y][threadIdx.x % 32]")
ADDRESS_TAKEN = PLAIN.replace("other[threadIdx.y][threadIdx.x] = 0.0f;",
                              "float* p = &other[threadIdx.y][threadIdx.x]; *p = 0.0f;")
ROW_POINTER = PLAIN.replace("other[threadIdx.y][threadIdx.x] = 0.0f;",
                            "float* row = other[threadIdx.y]; row[threadIdx.x] = 0.0f;")


def _main(src: str):  # type: ignore[no-untyped-def]
    res = lint_source(src, "t.cu", OPTIONS)
    (r,) = [r for r in res.results if not r.regions and r.odd_offset is None]
    return res, r


def _same_events(a: list[object], b: list[object]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if type(x) is not type(y):
            return False
        if isinstance(x, MemoryAccess):
            m = x.mask
            if (x.span, x.root, x.kind, x.width) != (y.span, y.root, y.kind, y.width) or not np.array_equal(m, y.mask):
                return False
            if not np.array_equal(np.broadcast_to(x.address, m.shape)[m], np.broadcast_to(y.address, m.shape)[m]):
                return False
    return True


@pytest.mark.parametrize("pad", [-16, 1, 2, 7])
def test_padded_events_are_the_evaluation_again(pad: int) -> None:
    _res, r = _main(PLAIN)
    assert padded_events.predictable(r, "tile")
    padded = padded_type(dict((n, t) for n, _b, t in r.shared_layout)["tile"], pad)
    again = Interpreter(r.unit, r.kernel, r.shape, dict(r.defines), shared_types={"tile": padded}).run()  # type: ignore[arg-type]
    predicted = padded_events.padded_events(r, "tile", padded)
    assert _same_events(predicted, list(again.events))
    if pad > 0:  # (the other array moved: a different list than the first evaluation's)
        assert not _same_events(predicted, list(r.events))


def test_a_column_past_its_row_is_not_predicted_and_would_be_wrong() -> None:
    _res, r = _main(PAST_ROW)
    assert "tile" not in r.arrays_in_row() and "other" in r.arrays_in_row()
    assert not padded_events.predictable(r, "tile")
    padded = padded_type(dict((n, t) for n, _b, t in r.shared_layout)["tile"], 1)
    again = Interpreter(r.unit, r.kernel, r.shape, dict(r.defines), shared_types={"tile": padded}).run()  # type: ignore[arg-type]
    assert not _same_events(padded_events.padded_events(r, "tile", padded), list(again.events))


@pytest.mark.parametrize("src", [ADDRESS_TAKEN, ROW_POINTER])
def test_an_address_used_as_a_value_is_not_predicted(src: str) -> None:
    _res, r = _main(src)
    assert not padded_events.predictable(r, "tile")


@pytest.mark.parametrize("src, runs", [(PLAIN, 0), (PAST_ROW, 1), (ADDRESS_TAKEN, 1)])
def test_the_search_evaluates_again_only_where_it_must(src: str, runs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    made = []

    class Counted(Interpreter):
        def run(self):  # type: ignore[no-untyped-def]
            made.append(self)
            return super().run()

    with monkeypatch.context() as m:
        m.setattr(shared_banks, "Interpreter", Counted)
        res = lint_source(src, "t.cu", OPTIONS)
    with monkeypatch.context() as m:
        m.setattr(padded_events, "predictable", lambda result, root: False)
        full = lint_source(src, "t.cu", OPTIONS)
    assert len(made) == runs
    fixes = [d for d in res.diagnostics if d.code == "KL201"]
    assert fixes and res.diagnostics == full.diagnostics
    assert any("tile[32][33]" in " ".join(d.notes) or "tile[32][33]" in d.message for d in fixes)


def test_a_result_with_other_events_is_not_predicted() -> None:
    # (the odd-offset run and --confirm's measured result are the first result with other events: what
    # the first evaluation found of its subscripts says nothing of those)
    _res, r = _main(PLAIN)
    other = dataclasses.replace(r, events=tuple(list(r.events)))
    assert padded_events.predictable(r, "tile") and not padded_events.predictable(other, "tile")
