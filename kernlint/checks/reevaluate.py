"""A kernel's result evaluated again with one runtime value defined: the "and if it were N?" some rules ask."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernlint.eval.limits import EvalResult
    from kernlint.eval.result import KernelResult

_RUNS: list[tuple[object, str, int, "EvalResult"]] = []  # the last few (result, name, value, evaluation)


def evaluated_with(result: "KernelResult", name: str, value: int) -> "EvalResult":
    """`result`'s kernel, shape and defines evaluated again with `name` defined as `value` (the last few
    kept: KL101's smallest stride and KL201's odd pitch ask it once per value, for every site)."""
    for r, n, v, run in _RUNS:
        if r is result and n == name and v == value:
            return run
    from kernlint.eval.interp import Interpreter  # (imported when a rule first asks: not at start-up)

    defines = dict(result.defines)
    defines[name] = value
    run = Interpreter(result.unit, result.kernel, result.shape, defines).run()  # type: ignore[arg-type]
    _RUNS.append((result, name, value, run))
    del _RUNS[:-8]
    return run
