"""Hostile input: bounded folding, depth budgets, special files, linear scanning, loud syntax errors."""
from __future__ import annotations

import resource
import time

import pytest
from click.testing import CliRunner

from kernlint import intfold
from kernlint.cli import main
from kernlint.engine import LintOptions, lint_source
from kernlint.frontend.clang_frontend import fold_tokens
from kernlint.launch import fold_bound
from kernlint.project.fold import fold

STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def codes(text: str, path: str = "t.cu") -> dict[str, list]:
    out: dict[str, list] = {}
    for d in lint_source(text, path, LintOptions(resources=False)).diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def run(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-ptxas"], input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# --- bounded integer folding ----------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("2*(3+4)<<2", 56), ("(1<<62)/(1<<61)", 2), ("-7/2", -3), ("-7%2", -1), ("256u", 256),
    ("0x10 + 1", 17), ("(((1)))", 1),
    ("1<<20000000000", None), ("1<<1100", None), ("(1<<63)*(1<<63)", None), ("1/0", None),
    ("9" * 20000, None), ("-" * 5000 + "1", None), ("1<<-1", None), ("(1", None), ("1 2", None),
])
def test_folding_is_bounded_and_exact(text: str, value: int | None) -> None:
    import re
    toks = re.findall(r"0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|\w+|<<|>>|\S", text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.monotonic()
    assert intfold.evaluate(toks) == value
    assert fold_tokens(toks, {}) == value
    assert fold_bound(text, {}, {}) == value
    if len(text) <= 400:
        assert fold(text, {}) == value
    assert time.monotonic() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no GB-sized ints


def test_hostile_macros_and_launch_bounds_do_not_lose_the_file() -> None:
    src = ("#define A 1<<20000000000\n#define B ((1<<4000)/(1<<3999))\n"
           f"#define C {'9' * 20000}\n#define D {'-' * 5000}1\n"
           "__global__ void __launch_bounds__(1<<1100) h(float* o) { o[threadIdx.x] = 0; }\n" + STRIDED)
    t0 = time.monotonic()
    found = codes(src)
    assert time.monotonic() - t0 < 60
    assert "KL101" in found, found  # the strided kernel is still analysed
    assert "KL905" not in found, found


# --- depth budgets ------------------------------------------------------------------------------------

def _deep_kernel(arms: int) -> str:
    chain = "".join(f"    else if (i == {k}) o[i] = {k};\n" for k in range(1, arms))
    terms = " + ".join(f"a[i + {k}]" for k in range(arms))
    return ("__global__ void deep(const float* a, float* o) {\n    int i = threadIdx.x;\n"
            f"    if (i == 0) o[i] = 0;\n{chain}    o[i] = {terms};\n}}\n")


@pytest.mark.parametrize("arms", [1200])
def test_deep_code_is_reported_not_a_crash(arms: int) -> None:
    found = codes(_deep_kernel(arms) + STRIDED)
    assert "KL905" not in found and "KL900" not in found, {k: [d.message for d in v][:2] for k, v in found.items()}
    assert "KL101" in found  # the other kernel is analysed
    kl904 = [d for d in found.get("KL904", []) if "too deeply nested" in (d.message + str(d.notes))]
    assert kl904, {k: [d.message for d in v][:2] for k, v in found.items()}
