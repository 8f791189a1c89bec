"""Re-sampling for regions that the sampled values make dead.

Runtime parameters are sampled as sizes (thousands). A guard such as `if (i > k && i < n)`, with
`k` a host loop variable (`for (k = 0; k < n; k++) step<<<...>>>(a, n, k)`), then holds for no
thread of the sampled blocks, and the accesses under it are never evaluated: silence that does
not mean "clean". When an `if` whose condition depends on sampled parameters never runs under
any sample, the kernel is evaluated once more with those parameters sampled small (as a loop
counter starting from 0 is early on), and the findings inside such regions are taken from that
evaluation, which says so in its assumptions.

blockIdx is sampled as two blocks only (eval/interp.py BLOCK_SAMPLES), so a guard that picks out
other blocks (`if (bx == 1)`, `if (by == gridDim.y - 1)`, border tiles) is dead the same way. Its
region is evaluated once more with blockIdx taken from the constants the guard compares it with
(`block_targets`): `bx == 1` -> 1, `bx > 0` -> 1, `bx == gridDim.x - 1` -> the last block of the
known or sampled grid, clamped to the grid.
"""
from __future__ import annotations

from kernlint import ir
from kernlint.eval.uniform_data import short

# Small values for a re-sampled parameter: near a host loop's start, one per sample.
SMALL_SAMPLES = (1, 32)


def sampled_parameters(deps: frozenset[str], assumed: dict[str, tuple[int, ...]]) -> frozenset[str]:
    """The runtime parameters (not blockIdx/gridDim) among `deps` that were sampled."""
    return frozenset(d for d in deps if d in assumed and not d.startswith(("blockIdx", "gridDim")))


def has_memory_access(s: ir.Stmt | None) -> bool:
    return s is not None and any(isinstance(n, (ir.Index, ir.Member)) or (isinstance(n, ir.Unary) and n.op == "*")
                                 for n in ir.walk(s))


# Comparison `blockIdx op r` -> the block index that makes it hold (None: no single one).
_REACH = {"==": 0, ">=": 0, "<=": 0, ">": 1, "<": -1}
_FLIP = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


def block_target(op: str, value: int, swapped: bool) -> int | None:
    """The blockIdx component that satisfies `blockIdx op value` (`value op blockIdx` when swapped)."""
    if swapped:
        op = _FLIP.get(op, op)
    step = _REACH.get(op)
    return None if step is None else value + step


def block_names(deps: frozenset[str]) -> frozenset[str]:
    """The blockIdx components among `deps`."""
    return frozenset(d for d in deps if d.startswith("blockIdx."))


def overrides_for(dead: dict[tuple[int, int, int, int], frozenset[str]],
                  targets: dict[tuple[int, int, int, int], dict[str, int]] | None = None,
                  samples: int = len(SMALL_SAMPLES)) -> dict[str, tuple[int, ...]]:
    """Sample overrides for the parameters that the dead regions' conditions depend on.

    Sizes are sampled small; a blockIdx component is sampled as the blocks the regions' guards pick
    out (at most one per sample, the first ones in line order; a region not reached stays unevaluated).
    """
    names: set[str] = set()
    for deps in dead.values():
        names |= {d for d in deps if not d.startswith(("blockIdx", "gridDim"))}
    out: dict[str, tuple[int, ...]] = {name: SMALL_SAMPLES for name in sorted(names)}
    wanted: dict[str, list[int]] = {}
    for key in sorted(targets or {}):
        if key not in dead:
            continue
        for name, v in sorted((targets or {})[key].items()):
            if v not in wanted.setdefault(name, []):
                wanted[name].append(v)
    for name, vals in sorted(wanted.items()):
        vals = vals[:samples]
        out[name] = tuple(vals + [vals[-1]] * (samples - len(vals)))
    return out


def describe(dead: dict[tuple[int, int, int, int], frozenset[str]],
             assumed: dict[str, tuple[int, ...]],
             overrides: dict[str, tuple[int, ...]] | None = None,
             targets: dict[tuple[int, int, int, int], dict[str, int]] | None = None) -> str:
    """The assumption line a finding from the re-sampled evaluation carries."""
    targets = targets or {}
    overrides = overrides or {}
    parts = []
    sized = {k: v for k, v in dead.items() if any(not n.startswith(("blockIdx", "gridDim")) for n in v)}
    names = sorted({n for v in sized.values() for n in v if not n.startswith(("blockIdx", "gridDim"))})
    if names:
        lines = sorted({span[0] for span in sized})
        shown = ", ".join(f"{short(n)} = {' and '.join(str(v) for v in assumed.get(n, ()))}" for n in names)
        small = " and ".join(str(v) for v in SMALL_SAMPLES)
        at = ", ".join(str(ln) for ln in lines)
        parts.append(f"re-sampled {', '.join(map(short, names))} as {small}: with {shown} the guard at line {at} never "
                     f"holds, so the code under it was evaluated with small values (a host loop's early iterations)")
    blocks = sorted({n for k in dead for n in targets.get(k, {})})
    if blocks:
        lines = sorted({k[0] for k in dead if targets.get(k)})
        shown = ", ".join(f"{n} = {' and '.join(str(v) for v in dict.fromkeys(overrides.get(n, ())))}"
                          for n in blocks)
        at = ", ".join(str(ln) for ln in lines)
        parts.append(f"{shown} (to reach the guarded code at line {at}, which the sampled blocks "
                     f"{', '.join(f'{n} = ' + ' and '.join(str(v) for v in assumed.get(n, ())) for n in blocks)} "
                     f"never enter)")
    return "; ".join(parts)


def in_regions(line: int, dead: dict[tuple[int, int, int, int], frozenset[str]]) -> bool:
    return any(lo <= line <= hi for (_l, _c, lo, hi) in dead)
