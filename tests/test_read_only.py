"""KL104: the overlap figure and the cases that must stay quiet, with numbers worked out by hand."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_with_suppressions

STENCIL = """// kernlint: block=(256,1,1)
__global__ void k({qual} in, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (i < n - 1) {{
        out[i] = in[i - 1] + in[i] + in[i + 1];{extra}
    }}
}}
"""


def _kl104(src: str) -> list:
    return [d for d in lint_with_suppressions(src, "t.cu", LintOptions()).diagnostics if d.code == "KL104"]


def test_three_point_stencil_reads_each_byte_three_times() -> None:
    found = _kl104(STENCIL.format(qual="float*", extra=""))
    assert len(found) == 1
    d = found[0]
    assert d.metrics["parameter"] == "in" and d.metrics["load_sites"] == 3
    # 256 lanes x 4 bytes per site; the union spans 258 floats: 3072 / 1032 bytes.
    assert d.metrics["requested_bytes"] == 3 * 256 * 4
    assert d.metrics["distinct_bytes"] == 258 * 4
    assert "const float* __restrict__" in d.message and "`const` and `__restrict__`" in d.message
    assert any("__ldg" in n for n in d.notes)


def test_restrict_without_const_is_still_reported_and_names_what_is_missing() -> None:
    found = _kl104(STENCIL.format(qual="float* __restrict__", extra=""))
    assert len(found) == 1 and "lacks `const`)" in found[0].message


def test_quiet_when_const_restrict_written_or_escaping() -> None:
    assert not _kl104(STENCIL.format(qual="const float* __restrict__", extra=""))
    # A store through the pointer on a path the samples never take still silences the hint.
    assert not _kl104(STENCIL.format(qual="float*", extra="\n        if (n == -7) in[0] = 1.0f;"))
    assert not _kl104(STENCIL.format(qual="float*", extra="\n        float* alias = in; out[0] = alias[0];"))


def test_one_site_broadcast_or_stream_is_not_overlap() -> None:
    src = """// kernlint: block=(256,1,1)
__global__ void k(float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < 8; ++j) s += in[j];
    out[i] = s + in[i];
}
"""
    assert not _kl104(src)
