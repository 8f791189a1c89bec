"""eval/samples.py: additive offsets sampled odd (conditional KL103), iteration counts sampled small."""
from __future__ import annotations

from kernlint.diagnostics import Severity
from kernlint.engine import LintOptions, lint_source
from kernlint.eval.samples import ITERATION_SAMPLES, iteration_parameters, offset_parameters
from kernlint.frontend import parse_source

OPTIONS = LintOptions(resources=False)


def _kernel(src: str):  # type: ignore[no-untyped-def]
    return parse_source(src, "t.cu").kernels[0]


def test_offset_parameters_are_plain_addends_of_an_index() -> None:
    fn = _kernel("__global__ void k(const float* a, float* o, int s, int w, int r) {"
                 " int i = threadIdx.x; o[i] = a[i + s] + a[r * w + i] + a[w]; }")
    assert offset_parameters(fn) == {"s"}


def test_iteration_counts_bound_loops_whose_variable_reaches_no_address() -> None:
    fn = _kernel("__global__ void k(float* a, int steps, int n) { float v = a[threadIdx.x];"
                 " for (int t = 0; t < steps; ++t) v = v * 0.5f;"
                 " for (int j = 0; j < n; ++j) v += a[j]; a[threadIdx.x] = v; }")
    assert iteration_parameters(fn) == {"steps"}
    # A count that moves an address (i += 1 per step) is more than a count.
    fn2 = _kernel("__global__ void k(float* a, int n) { int i = threadIdx.x;"
                  " for (int k = 0; k < n; ++k) i += 1; a[i] = 0; }")
    assert iteration_parameters(fn2) == frozenset()


def test_iteration_count_is_sampled_small_and_stated() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(float* a, int iteration) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i];
    for (int t = 0; t < iteration; ++t) v = v * 0.5f + 1.0f;
    a[i] = v;
}
"""
    (r,) = lint_source(src, "t.cu", OPTIONS).results
    assert dict(r.assumed)["iteration"] == ITERATION_SAMPLES


def test_runtime_offset_is_a_conditional_kl103() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(const double* a, double* out, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + s];
}
"""
    (d,) = [d for d in lint_source(src, "t.cu", OPTIONS).diagnostics if d.code == "KL103"]
    assert d.severity is Severity.INFO
    assert "unless `s` is a multiple of 4" in d.message and "s = 1" in d.message  # 4 doubles = 32 bytes
    assert d.metrics["aligned_if"] == "s % 4 == 0"
    assert any("s = 1" in a for a in d.assumptions)
    # With the offset given, no condition remains: aligned for 8, misaligned (plain KL103) for 3.
    opts = LintOptions(resources=False, defines=(("s", 8),))
    assert [d for d in lint_source(src, "t.cu", opts).diagnostics if d.code == "KL103"] == []
    opts = LintOptions(resources=False, defines=(("s", 3),))
    (d3,) = [d for d in lint_source(src, "t.cu", opts).diagnostics if d.code == "KL103"]
    assert "unless" not in d3.message
