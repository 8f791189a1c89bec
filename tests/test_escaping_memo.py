"""Which local arrays escape (eval/local_arrays.escaping_names) is found once per function body and reused by
every evaluation asking about it; the answer is the union of each body's own."""
from __future__ import annotations

import pytest

from kernlint.ir import nodes as ir
from kernlint.eval import local_arrays
from kernlint.frontend import parse_source

SRC = """
__device__ void fill(float* p) { p[0] = 1.0f; }
__global__ void k(float* out) {
    float a[4];
    float b[4];
    a[threadIdx.x % 4] = 1.0f;
    fill(b);
    out[threadIdx.x] = a[0] + b[1];
}
"""


def test_escaping_names_found_once_per_body(monkeypatch: pytest.MonkeyPatch) -> None:
    tu = parse_source(SRC, "esc.cu")
    kernel = tu.kernels[0]
    helper = tu.functions.named("fill")[0]
    walked: list[object] = []
    real_walk = ir.walk

    def counting(node: object):  # type: ignore[no-untyped-def]
        walked.append(node)
        return real_walk(node)

    monkeypatch.setattr(ir, "walk", counting)
    both = local_arrays.escaping_names([kernel.body, helper.body])
    assert "b" in both and "a" not in both  # b is passed to a call, a only subscripted
    assert both == local_arrays.escaping_names([kernel.body]) | local_arrays.escaping_names([helper.body])
    first = len(walked)
    assert local_arrays.escaping_names([helper.body, kernel.body]) == both
    assert len(walked) == first  # (every body was walked by the first call)
