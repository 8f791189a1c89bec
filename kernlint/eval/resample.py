"""Re-sampling for regions that the sampled values make dead.

Runtime parameters are sampled as sizes (thousands). A guard such as `if (i > k && i < n)`, with
`k` a host loop variable (`for (k = 0; k < n; k++) step<<<...>>>(a, n, k)`), then holds for no
thread of the sampled blocks, and the accesses under it are never evaluated: silence that does
not mean "clean". When an `if` whose condition depends on sampled parameters never runs under
any sample, the kernel is evaluated once more with those parameters sampled small (as a loop
counter starting from 0 is early on), and the findings inside such regions are taken from that
evaluation, which says so in its assumptions.
"""
from __future__ import annotations

from kernlint import ir

# Small values for a re-sampled parameter: near a host loop's start, one per sample.
SMALL_SAMPLES = (1, 32)


def sampled_parameters(deps: frozenset[str], assumed: dict[str, tuple[int, ...]]) -> frozenset[str]:
    """The runtime parameters (not blockIdx/gridDim) among `deps` that were sampled."""
    return frozenset(d for d in deps if d in assumed and not d.startswith(("blockIdx", "gridDim")))


def has_memory_access(s: ir.Stmt | None) -> bool:
    return s is not None and any(isinstance(n, (ir.Index, ir.Member)) or (isinstance(n, ir.Unary) and n.op == "*")
                                 for n in ir.walk(s))


def overrides_for(dead: dict[tuple[int, int, int, int], frozenset[str]]) -> dict[str, tuple[int, ...]]:
    """Sample overrides for the parameters that the dead regions' conditions depend on."""
    names: set[str] = set()
    for deps in dead.values():
        names |= deps
    return {name: SMALL_SAMPLES for name in sorted(names)}


def describe(dead: dict[tuple[int, int, int, int], frozenset[str]],
             assumed: dict[str, tuple[int, ...]]) -> str:
    """The assumption line a finding from the re-sampled evaluation carries."""
    names = sorted(set().union(*dead.values())) if dead else []
    lines = sorted({span[0] for span in dead})
    shown = ", ".join(f"{n} = {' and '.join(str(v) for v in assumed.get(n, ()))}" for n in names)
    small = " and ".join(str(v) for v in SMALL_SAMPLES)
    at = ", ".join(str(ln) for ln in lines)
    return (f"re-sampled {', '.join(names)} as {small}: with {shown} the guard at line {at} never holds, "
            f"so the code under it was evaluated with small values (a host loop's early iterations)")


def in_regions(line: int, dead: dict[tuple[int, int, int, int], frozenset[str]]) -> bool:
    return any(lo <= line <= hi for (_l, _c, lo, hi) in dead)
