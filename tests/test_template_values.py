"""Integral template arguments read from clang's specialization keep their values: a `bool` argument
`true` is 1 (libclang's signed reading of a one-bit value is -1), a negative `int` stays negative."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source

SOURCE = """
template <bool B, int N> __global__ void k(float* a) { if (B) a[threadIdx.x * N] = 1.0f; }
void host(float* a) { k<true, -3><<<1, 32>>>(a); }
"""


def test_a_bool_true_argument_is_1_and_a_negative_int_stays_negative() -> None:
    result = lint_source(SOURCE, "t.cu", LintOptions(resources=False))
    texts = [a for d in result.diagnostics for a in d.assumptions if "template arguments" in a]
    assert texts and all("B = 1" in t and "N = -3" in t for t in texts), texts
