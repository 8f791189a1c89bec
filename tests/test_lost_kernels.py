"""A syntax error that swallows a kernel declared after it is an error naming that kernel, never the
'outside the kernels' info (issue 15: syntax errors silently lost kernels in fuzzed files)."""
from __future__ import annotations

from kernlint.base.diagnostics import Severity
from kernlint.engine.lint import LintOptions, lint_source

KEPT = "__global__ void kept(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def _kl900(src: str) -> list:
    res = lint_source(src, "lost.cu", LintOptions(resources=False))
    return [d for d in res.diagnostics if d.code == "KL900"]


def test_a_kernel_swallowed_by_an_error_before_it_is_an_error() -> None:
    # A comment that lost one of its slashes: clang's recovery takes the next declaration with it.
    src = KEPT + "/ half-warp comment\n// kernlint: block=(16,16,1)\n" \
        "__global__ void lost(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x]; }\n"
    found = _kl900(src)
    assert len(found) == 1 and found[0].severity is Severity.ERROR, found
    assert found[0].line == 2 and "kernel 'lost' (line 4)" in found[0].message


def test_an_error_in_host_code_that_loses_no_kernel_stays_an_info() -> None:
    src = "int x = ;\n" + KEPT + "#if 0\n__global__ void disabled(float* o) { o[0] = 1; }\n#endif\n" \
        "template <int B> __global__ void __launch_bounds__(256) tk(float* o) { o[threadIdx.x * B] = 1; }\n" \
        "// __global__ void in_a_comment(float* o);\n"
    found = _kl900(src)
    assert len(found) == 1 and found[0].severity is Severity.INFO, found
    assert "outside the kernels" in found[0].message
