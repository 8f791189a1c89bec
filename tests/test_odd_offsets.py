"""checks/odd_offsets.py: the odd-offset runs that cannot add a conditional KL103 are not made, and the
findings are those of every run made."""
from __future__ import annotations

import pytest

from kernlint.checks import odd_offsets
from kernlint.engine.lint import LintOptions, lint_source

OPTIONS = LintOptions(resources=False)

# Two instantiations read `a[i + s]` at one site: the float one's odd run reports it ("unless `s` is a
# multiple of 8"), so the double one's run could only find the site reported already.
TWIN_TYPES = """
template <typename T>
__global__ void shift(const T* a, T* out, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + s];
}
void host(const float* a, float* out, const double* b, double* o2, int n, int s) {
    shift<float><<<n / 256, 256>>>(a, out, n, s);
    shift<double><<<n / 256, 256>>>(b, o2, n, s);
}
"""

# The twin where the second run must be made: each instantiation reads through its own site.
TWIN_SITES = """
template <int K>
__global__ void shift(const float* a, float* out, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (K == 1) out[i] = a[i + s];
    else out[i] = a[i + s];
}
void host(const float* a, float* out, int n, int s) {
    shift<1><<<n / 256, 256>>>(a, out, n, s);
    shift<2><<<n / 256, 256>>>(a, out, n, s);
}
"""

# One launch whose block is a runtime value: the engine merges the shapes tried into the first, and an
# odd run of another shape would have nothing to be compared with.
RUNTIME_BLOCK = """
__global__ void shift(const float* a, float* out, int n, int s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + s];
}
void host(const float* a, float* out, int n, int s, int threads) {
    shift<<<n / threads, threads>>>(a, out, n, s);
}
"""


def _lint(src: str, every_run: bool, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with monkeypatch.context() as m:
        if every_run:  # what the engine did before: an odd run for every offset of every result
            m.setattr(odd_offsets, "_adds_nothing", lambda sites, reported: False)
        res = lint_source(src, "t.cu", OPTIONS)
    return res, [r for r in res.results if r.odd_offset is not None]


@pytest.mark.parametrize("src, runs, every", [(TWIN_TYPES, 1, 2), (TWIN_SITES, 2, 2), (RUNTIME_BLOCK, 1, None)])
def test_runs_that_add_nothing_are_not_made(src: str, runs: int, every: int | None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    res, odd = _lint(src, False, monkeypatch)
    full, odd_full = _lint(src, True, monkeypatch)
    assert len(odd) == runs
    if every is not None:
        assert len(odd_full) == every
    else:  # one run per runtime shape tried
        assert len(odd_full) == len([r for r in full.results if r.odd_offset is None]) > runs
    assert res.diagnostics == full.diagnostics
    conditional = [d for d in res.diagnostics if d.code == "KL103"]
    assert conditional and all("unless `s` is a multiple of" in d.message for d in conditional)
    assert len(conditional) == (2 if src is TWIN_SITES else 1)
