"""Runtime trip counts: loops bounded by a sampled runtime value, evaluated again under plausible counts.

Runtime parameters are sampled as sizes (thousands, eval/interp.py). A loop bounded by one
(`for (i = 0; i < iteration; i++)`) then runs to the evaluator's iteration cap (MAX_LOOP_ITERATIONS)
and stops: what it writes becomes unknown, the code after it is not evaluated, and values derived from
the same parameter elsewhere are nonsense for a count (`BLOCK - 2 * iteration` goes negative, so a
validity test holds for no lane). When such a loop holds a branch on its own variable (a pyramid of
shrinking guards `if (IN_RANGE(tx, i + 1, BLOCK - i - 2))`, a wavefront's `if (tx <= d)`), its later
iterations are where the lanes diverge most, and a cut loop never shows them.

Such loops are evaluated once more with their bounding parameters sampled as trip counts: a small one
(`SMALL_TRIPS`) and one derived from the block size (`block_trips`: a quarter of the block's longest
side, so that a guard moving one lane per step at both ends of a 256-thread block reaches the second
warp). Findings from that evaluation that the first did not make are reported with the assumption
("`iteration` = 3 and 48: trip counts of the loop at line 138 ..."), and the sites it evaluated count
as evaluated (engine.py `_trip_count_run`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kernlint.ir import nodes as ir
from kernlint.eval.limits import MAX_LOOP_ITERATIONS
from kernlint.eval.events import Loop

if TYPE_CHECKING:
    from kernlint.eval.limits import EvalResult

# The small trip count (a few time steps per launch, as a host loop's last launch often has).
SMALL_TRIPS = 3


def block_trips(block: tuple[int, int, int]) -> int:
    """The block-derived trip count: a quarter of the block's longest side, within [4, the iteration cap]."""
    return max(4, min(MAX_LOOP_ITERATIONS, max(block) // 4))


def _loop_var(s: ir.For) -> str | None:
    if isinstance(s.init, ir.VarDecl):
        return s.init.name
    if isinstance(s.init, ir.ExprStmt) and isinstance(s.init.expr, ir.Binary) and s.init.expr.op == "=":
        t = ir.strip_casts(s.init.expr.lhs)
        return t.name if isinstance(t, ir.Ref) else None
    return None


def _branches_on(body: ir.Stmt, var: str) -> bool:
    """Whether `body` holds an `if` whose condition reads `var` (a guard that moves with the loop)."""
    for n in ir.iter_statements(body):
        if isinstance(n, ir.If) and any(isinstance(r, ir.Ref) and r.name == var for r in ir.walk(n.cond)):
            return True
    return False


def capped_trip_loops(fn: ir.Function, res: "EvalResult") -> dict[str, int]:
    """Sampled parameters that bound a loop the evaluation cut at its iteration cap, where the loop
    holds a branch on its own variable: parameter -> the line of (the first) such loop."""
    if fn.body is None:
        return {}
    cut = {(e.span.line, e.span.column): e for e in res.events if isinstance(e, Loop) and e.truncated and e.deps}
    if not cut:
        return {}
    sampled = {name for name in res.assumed if not name.startswith(("blockIdx", "gridDim"))
               and name.isidentifier()}
    out: dict[str, int] = {}
    for s in ir.iter_statements(fn.body):
        if not isinstance(s, ir.For) or (s.span.line, s.span.column) not in cut:
            continue
        var = _loop_var(s)
        if var is None or not _branches_on(s.body, var):
            continue
        for p in sorted(cut[(s.span.line, s.span.column)].deps & sampled):
            out.setdefault(p, s.span.line)
    return out


def overrides(params: dict[str, int], block: tuple[int, int, int]) -> dict[str, tuple[int, ...]]:
    """The trip-count samples of each parameter: (SMALL_TRIPS, block_trips)."""
    return {p: (SMALL_TRIPS, block_trips(block)) for p in params}


def describe(params: dict[str, int], block: tuple[int, int, int], assumed: dict[str, tuple[int, ...]]) -> str:
    """The assumption a finding of the trip-count evaluation states."""
    big = block_trips(block)
    parts = []
    for p, line in sorted(params.items(), key=lambda kv: (kv[1], kv[0])):
        was = " and ".join(str(v) for v in assumed.get(p, ()))
        parts.append(f"`{p}` = {SMALL_TRIPS} and {big}: trip counts of the loop at line {line}, sampled small "
                     f"and from the block size (a quarter of its longest side); sampled as a size ({was}) "
                     f"the loop was cut after {MAX_LOOP_ITERATIONS} iterations; set --define {p}=VALUE")
    return "; ".join(parts)
