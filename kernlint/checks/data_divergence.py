"""KL305 data-dependent-divergence: branches and loop trip counts decided by lane-varying loaded data.

The warp evaluator tags every value loaded at addresses that differ between the lanes of a warp
(`rowPtr[row]`, `mask[tid]`) and everything computed from it; a load from a warp-uniform address
(`flags[blockIdx.x]`) is not tagged. A condition built from tagged values is a `DataBranch` event:
the evaluator cannot tell which lanes take it, so it ran the code under it for every lane that
reaches it and recorded the operations and memory requests that code issues per warp.

Severity is by the work under the condition, against Nsight Compute's ThreadDivergence rule
(WarpStateStats section: it fires when smsp__thread_inst_executed_per_inst_executed.ratio, the
average active threads per executed warp instruction, is below 24 of 32):
- warning: the guarded code is a loop (a data-dependent trip count, or a loop under the branch), or
  it is heavy (at least HEAVY_OPS operations including memory traffic) and, if only one lane of each
  warp took it, the kernel would average fewer than 24 active lanes per instruction;
- info: light code (`if (a[i] < 0) a[i] = 0;`), which the compiler predicates, or heavy code too
  small a share of the kernel to matter by that measure.

User documentation: rules/KL305-data-dependent-divergence.md
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from kernlint.checks.base import Rule, helper_site
from kernlint.ir import nodes as ir
from kernlint.checks.divergent_entry import group_in_region
from kernlint.checks.search_hit import is_bracket_test
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.events import DataBranch, Loop, Work
from kernlint.eval.result import KernelResult
from kernlint.base.frozen import frozen
from kernlint.eval.stmt_facts import _assigned_names, _loop_var

WARP = 32
# Operations under a branch from which the compiler no longer predicates it (the same threshold as
# KL301's HEAVY_WORK): below this the code is light whatever it does.
HEAVY_OPS = 8
# Nsight Compute's ThreadDivergence rule fires below this many active threads per warp instruction.
NCU_ACTIVE_LANES = 24.0
# A heavy branch is a warning only when its worst case takes at least this many active lanes per
# instruction off the kernel's average: a kernel already below 24 for other reasons (a single-warp
# phase, other divergence) would otherwise make every branch in it a warning.
MIN_LANE_IMPACT = 1.0

_KIND_WORDS = {"if": "branch", "loop": "loop trip count", "switch": "switch"}
_EXIT_WORDS = {"return": "early return", "break": "early loop exit", "continue": "early continue"}


@frozen
class KernelWork:
    """What the whole block issued in one sample: warp instructions and active-lane instructions."""

    ops: np.ndarray  # (S,) warp-level operations, summed over warps
    lane_ops: np.ndarray  # (S,) active lanes summed over those operations

    @property
    def avg_active(self) -> np.ndarray:
        return np.where(self.ops > 0, self.lane_ops / np.maximum(self.ops, 1), WARP)


def kernel_work(result: KernelResult) -> KernelWork | None:
    """The block's total work from the evaluator's final `Work` event (None for hand-built results)."""
    for e in result.events:
        if isinstance(e, Work):
            lanes = e.lanes if e.lanes is not None else e.per_warp * WARP
            return KernelWork(e.per_warp.sum(axis=-1).astype(np.float64), lanes.sum(axis=-1).astype(np.float64))
    return None


def average_active_lanes(result: KernelResult) -> float | None:
    """Predicted active lanes per warp instruction for the whole kernel (worst sample), as ncu measures it."""
    kw = kernel_work(result)
    if kw is None:
        return None
    return float(kw.avg_active.min())


@frozen
class DataVerdict:
    severity: Severity
    heavy: bool
    ops: int  # operations per warp under the condition (one evaluated pass; loops: one iteration)
    memory: int  # memory requests per warp under it
    share: float  # of the kernel's operations
    avg_now: float  # kernel average active lanes per instruction as evaluated (every lane taking it)
    avg_worst: float  # the same if only one lane of each warp took it
    warps: int
    reason: str
    unmeasured: int = 0  # of `memory`: requests at addresses the evaluator could not compute
    body_ran: bool = True  # False: a loop whose body was not evaluated (its work is unknown)
    opaque: int = 0  # statements under it the evaluator cannot run (the work is a lower bound)


def classify(events: list[DataBranch], result: KernelResult) -> DataVerdict | None:
    """Weigh one site: the work under the condition against the kernel's, per warp and sample."""
    first = events[0]
    kw = kernel_work(result)
    end = next((e for e in result.events if isinstance(e, Work)), None)
    end_work = end.per_warp if end is not None else None
    end_mem = end.memory if end is not None else None
    S = first.mask.shape[0]
    region = np.zeros(first.mask.shape[:2])
    memory = np.zeros(first.mask.shape[:2])
    idle_worst = np.zeros(S)
    evals = np.zeros(first.mask.shape[:2])
    loop_exit = _exited_loop(first, result) if first.exit == "break" else None
    for e in events:
        active = e.mask.sum(axis=-1)
        if loop_exit is not None:
            # `if (data) break;`: lanes that leave early idle through the rest of the loop; the worst
            # case is the whole loop (one lane stays to the end).
            w = loop_exit.work if loop_exit.work is not None else np.zeros(active.shape)
            m = np.zeros(active.shape)
            if e is not first:
                continue
        elif e.exit == "return" and e.work_before is not None and end_work is not None:
            # Lanes that leave idle through the rest; the others through the side that leaves.
            w = np.maximum(end_work - e.work_before, 0) + (e.work if e.work is not None else 0)
            m = (np.maximum(end_mem - e.memory_before, 0) if end_mem is not None and e.memory_before is not None
                 else np.zeros(active.shape)) + (e.memory if e.memory is not None else 0)
        else:
            w = e.work if e.work is not None else np.zeros(active.shape)
            m = e.memory if e.memory is not None else np.zeros(active.shape)
        w = np.where(active > 1, w, 0)  # a warp with one lane reaching it cannot split
        region += w
        evals += active > 1
        memory += np.where(active > 1, m, 0)
        if e.common_work is not None and loop_exit is None:
            # An index-validity test: all lanes but one take the common (indexing) side; the one
            # exceptional lane idles through it, the others through the exceptional side.
            common = np.where(active > 1, np.minimum(e.common_work, w), 0)
            idle_worst += ((w - common) * np.maximum(active - 1, 0) + common).sum(axis=-1)
        else:
            idle_worst += (w * np.maximum(active - 1, 0)).sum(axis=-1)
    warps = int((first.mask.any(axis=-1) & (first.mask.sum(axis=-1) > 1)).sum(axis=-1).max())
    if warps == 0:
        return None
    # Per warp and evaluation (a branch inside a loop is evaluated once per iteration; a loop exit
    # per iteration of its loop), in the sample where it weighs least (what holds in every sample).
    if loop_exit is not None:
        evals = np.maximum(np.broadcast_to(loop_exit.trips, loop_exit.mask.shape).max(axis=-1), 1) * (evals > 0)
    n_evals = np.maximum(evals.sum(axis=-1), 1)
    # Only samples (blocks, sizes) in which some warp reaches it with two lanes or more count.
    live = evals.sum(axis=-1) > 0
    if not live.any():
        return None
    ops_per_warp = np.where(live, region.sum(axis=-1) / n_evals, np.inf)
    mem_per_warp = memory.sum(axis=-1) / n_evals
    s_min = int(np.argmin(ops_per_warp))
    ops, mem = int(round(ops_per_warp[s_min])), int(round(mem_per_warp[s_min]))
    # Accesses whose address was not evaluated are requests all the same (one pass each).
    unmeasured = max(e.unmeasured for e in events)
    mem += unmeasured
    opaque = max(e.opaque for e in events)
    if kw is not None and np.all(kw.ops[live] > 0):
        share = float((region.sum(axis=-1) / np.maximum(kw.ops, 1))[live].min())
        avg_now = float(kw.avg_active[live].min())
        avg_worst = float(((kw.lane_ops - idle_worst) / np.maximum(kw.ops, 1))[live].max())
    else:
        share, avg_now, avg_worst = 0.0, float(WARP), float(WARP)
    loop = first.kind == "loop" or any(e.has_loop for e in events) or (
        loop_exit is not None and int(loop_exit.trips.max()) >= 2)
    heavy = loop or (ops >= HEAVY_OPS and mem >= 1)
    if not all(e.body_ran for e in events):
        # A message may state only what was evaluated: the loop's own condition and step were, its
        # body was not, so neither its work nor the cost of the wait is known.
        reason = ("its body was not evaluated: what it does is statements kernlint cannot run (inline assembly) or "
                  "memory accesses at addresses it could not compute, so the work a lane waits through is unknown")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured,
                           False, max(e.opaque for e in events))
    if first.role == "diagnostic":
        reason = ("the code under it reports an error (printf, assert, __trap): a path correct runs do not take, "
                  "so its divergence costs nothing in practice")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if first.role == "compaction" and not loop:
        reason = ("the code under it appends the item to an output through a slot an atomic hands out: the branch "
                  "is the filter of a stream compaction, the remedy itself, and its divergence is inherent")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if first.role == "refinement":
        reason = ("it refines in place the elements whose neighbours in the same array disagree (adaptive "
                  "refinement): which elements need it is only known from the previous pass's results, and they "
                  "lie along edges, so most warps take it with all or none of their lanes")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    grouped = group_in_region(result.kernel, result.unit, result.source_lines, first.span)
    if grouped:
        reason = (f"the code under it forms a group of the lanes that reached it ({grouped}): it is written for "
                  f"divergent entry (warp-aggregated atomics, per-key reductions, a warp partitioned by the same "
                  f"condition), so the divergence is by design and sorting the items is not the remedy")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    single = _singled_out_iteration(result, first) if first.kind == "if" and not first.exit else ""
    if single:
        reason = (f"its condition `{single}` compares the loop's counter with a value the loop does not change, so "
                  f"it singles out at most one iteration of each lane (skipping the element itself, say): a lane "
                  f"leaves the common side at most once, whatever the data")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured,
                           True, opaque)
    if first.kind == "if" and not loop and _bracket(result, first):
        reason = ("it is the bracket test of a parallel search (`a[i] <= key && key < a[i + 1]` with one key for "
                  "the warp): the lanes' intervals do not overlap, so at most one lane takes it, the one that found "
                  "the key; like a single-lane election without a loop, it costs that lane's short region")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if loop and first.search:
        reason = ("the trip count is decided inside the loop (a search, convergence or pointer-chasing loop: its "
                  "exit reads what the loop itself computes or advances through), so it is only known by running "
                  "the loop: the items cannot be sorted or binned by it beforehand and the lanes cannot split its "
                  "dependent iterations; the wait for the slowest lane is inherent to the algorithm")
        return DataVerdict(Severity.INFO, True, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if loop and ops > 0 and avg_worst < NCU_ACTIVE_LANES:
        return DataVerdict(Severity.WARNING, True, ops, mem, share, avg_now, avg_worst, warps, "", unmeasured, True, opaque)
    if loop and ops > 0:
        # The finding's own estimate must not contradict its severity: one evaluated iteration run by
        # one lane per warp leaves the kernel above the threshold.
        reason = (f"one evaluated iteration of it is {_pct(share)} of the kernel's operations: with one lane per "
                  f"warp running it the kernel would still average {avg_worst:.1f} active lanes per instruction "
                  f"(Nsight Compute flags fewer than {NCU_ACTIVE_LANES:.0f}); the wait grows with the spread of the "
                  f"lanes' trip counts, which the data decides")
        return DataVerdict(Severity.INFO, True, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if first.exceptional:
        reason = (f"it lies on the exceptional side of the index-validity test at line {first.exceptional}, so "
                  f"only the few lanes whose index is a sentinel (padding, a boundary, an empty slot) reach it")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if heavy and any(e.common_work is not None for e in events):
        reason = ("it tests a loaded index against a sentinel and indexes with it on one side only: that side is "
                  "the common case, and the sentinels (padding, boundaries, empty slots) are exceptions that most "
                  "warps never meet, so most warps run it with every lane; the divergence costs the exceptional "
                  f"side in the few warps that hold one ({avg_worst:.1f} active lanes per instruction if every "
                  "warp held exactly one)")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if heavy and avg_worst < NCU_ACTIVE_LANES and avg_now - avg_worst >= MIN_LANE_IMPACT:
        return DataVerdict(Severity.WARNING, True, ops, mem, share, avg_now, avg_worst, warps, "", unmeasured, True, opaque)
    if heavy and avg_worst < NCU_ACTIVE_LANES:
        # The kernel is below the threshold whatever this branch does (other divergence, a single-warp
        # phase): what it takes away is under one lane per instruction.
        reason = (f"the code under it is {_pct(share)} of the kernel's operations: the kernel averages "
                  f"{avg_now:.1f} active lanes per instruction with every lane taking it and {avg_worst:.1f} with one "
                  f"lane per warp, so this branch costs under {MIN_LANE_IMPACT:.0f} lane of that (the low average "
                  f"comes from elsewhere)")
        return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)
    if heavy:
        reason = (f"the code under it is {_pct(share)} of the kernel's operations: even with one active lane per "
                  f"warp there, the kernel would average {avg_worst:.1f} active lanes per instruction (Nsight "
                  f"Compute flags fewer than {NCU_ACTIVE_LANES:.0f})")
    else:
        reason = (f"the code under it is light ({ops} operation{'s' if ops != 1 else ''}, {mem} memory "
                  f"request{'s' if mem != 1 else ''}; heavy from {HEAVY_OPS} operations with memory traffic, or "
                  f"a loop): the compiler will likely predicate it")
    return DataVerdict(Severity.INFO, heavy, ops, mem, share, avg_now, avg_worst, warps, reason, unmeasured, True, opaque)


def _bracket(result: KernelResult, e: DataBranch) -> bool:
    """Whether the `if` at `e` is a parallel search's bracket test (checks/search_hit.py)."""
    if result.kernel.body is None:
        return False
    for n in ir.walk(result.kernel.body):
        if isinstance(n, ir.If) and (n.span.line, n.span.column) == (e.span.line, e.span.column):
            return is_bracket_test(n.cond)
    return False


def _singled_out_iteration(result: KernelResult, e: DataBranch) -> str:
    """The condition's text when the `if` at `e` tests the innermost enclosing `for` loop's counter for
    (in)equality with an expression the loop body never assigns (`if (j != index)`): true or false for at
    most one iteration of a lane. '' otherwise (or when the `if` is not in the kernel's own body)."""
    body = result.kernel.body
    if (body is None or not _contains(result.kernel.span, e.span)) and result.unit is not None:
        # In a helper of the same file, inlined (its events keep the helper's own lines).
        body = next((f.body for f in result.unit.functions.in_file(lowered=True)
                     if f.body is not None and _contains(f.span, e.span)), None)
    if body is None:
        return ""
    node, loop = None, None
    for n in ir.walk(body):
        if isinstance(n, ir.For) and _contains(n.span, e.span) and (loop is None or _contains(loop.span, n.span)):
            loop = n
        if isinstance(n, ir.If) and (n.span.line, n.span.column) == (e.span.line, e.span.column):
            node = n
    if node is None or loop is None or not _contains(loop.span, node.span):
        return ""
    var = _loop_var(loop)
    cond = node.cond
    while isinstance(cond, ir.Cast):
        cond = cond.operand
    if var is None or not isinstance(cond, ir.Binary) or cond.op not in ("==", "!="):
        return ""
    assigned = _assigned_names(loop.body)

    def names(x: object) -> set[str]:
        return {r.name for r in ir.walk(x) if isinstance(r, ir.Ref)}

    def is_var(x: object) -> bool:
        while isinstance(x, ir.Cast):
            x = x.operand
        return isinstance(x, ir.Ref) and x.name == var

    for side, other in ((cond.lhs, cond.rhs), (cond.rhs, cond.lhs)):
        if is_var(side) and not (names(other) & (assigned | {var})):
            return f"{_text(cond.lhs)} {cond.op} {_text(cond.rhs)}"
    return ""


def _text(x: object) -> str:
    """A short rendering of a simple expression (names, literals, members, arithmetic); '...' beyond."""
    while isinstance(x, ir.Cast):
        x = x.operand
    if isinstance(x, ir.Ref):
        return x.name
    if isinstance(x, ir.Lit):
        return str(x.value)
    if isinstance(x, ir.Member):
        return f"{_text(x.base)}{'->' if x.arrow else '.'}{x.field}"
    if isinstance(x, ir.Binary) and x.op in ("+", "-", "*", "/"):
        return f"{_text(x.lhs)} {x.op} {_text(x.rhs)}"
    return "..."


def _exited_loop(e: DataBranch, result: KernelResult) -> Loop | None:
    """The innermost loop around `e` (its first evaluation), whose iterations a `break` cuts short."""
    best: Loop | None = None
    for x in result.events:
        if isinstance(x, Loop) and _contains(x.span, e.span) and (best is None or _contains(best.span, x.span)):
            if best is None or x.span != best.span:
                best = x
    return best


def _contains(o: object, i: object) -> bool:
    oe = (o.end_line, o.end_column) if o.end_line else (o.line, 10**9)  # type: ignore[attr-defined]
    ie = (i.end_line, i.end_column) if i.end_line else (i.line, i.column)  # type: ignore[attr-defined]
    return (o.line, o.column) <= (i.line, i.column) and ie <= oe  # type: ignore[attr-defined]


def load_texts(result: KernelResult, loads: tuple[tuple[int, int, int, int, str], ...], limit: int = 3) -> list[str]:
    """The source text of each deciding load (`rowPtr[row + 1]`), else its array's name."""
    out: list[str] = []
    for line, col, end_line, end_col, root in loads:
        text = ""
        if end_line == line and 1 <= line <= len(result.source_lines) and end_col > col:
            text = result.source_lines[line - 1][col - 1:end_col - 1].strip()
        if not text or (root and root.split(".")[-1] not in text):
            text = root or "loaded data"
        if text not in out:
            out.append(text)
    if len(out) > limit:
        out = out[:limit] + [f"{len(out) - limit} more"]
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.1f} %"


def check_data_branch(result: KernelResult) -> Iterator[Diagnostic]:
    """KL305: a condition or trip count decided by data that the lanes of a warp load from different addresses."""
    sites: dict[tuple[int, int, str], list[DataBranch]] = defaultdict(list)
    for e in result.events:
        if isinstance(e, DataBranch):
            sites[(e.span.line, e.span.column, e.kind)].append(e)
    for evs in sites.values():
        v = classify(evs, result)
        if v is None:
            continue
        e = evs[0]
        # The condition's own loads come last in the source: name them first.
        loads = load_texts(result, tuple(sorted({ld for ev_ in evs for ld in ev_.loads}, reverse=True)))
        data = ", ".join(f"`{t}`" for t in loads)
        what = (_EXIT_WORDS.get(e.exit) or _KIND_WORDS.get(e.kind, "branch")) + helper_site(e.text)
        if e.exit == "break" and v.heavy:
            message = (f"data-dependent {what}: whether a lane leaves the loop depends on {data}, which the lanes of "
                       f"a warp load from different addresses, so lanes that leave early wait for the rest of their "
                       f"warp to finish the loop ({_n(v.ops, 'operation')} per warp in each iteration)")
        elif e.kind == "loop":
            message = (f"data-dependent {what}: how many iterations a lane runs depends on {data}, which the lanes of "
                       f"a warp load from different addresses, so lanes that finish early wait for the slowest "
                       f"({_work(v, ' per warp in each iteration')})")
        elif e.exit == "return":
            message = (f"data-dependent {what}: whether a lane leaves depends on {data}, which the lanes of a warp "
                       f"load from different addresses; lanes that leave idle while the rest of their warp runs the "
                       f"remaining {_work(v, '')}")
        else:
            body = "a loop, " if any(ev_.has_loop for ev_ in evs) else ""
            message = (f"data-dependent {what}: whether a lane takes it depends on {data}, which the lanes of a warp "
                       f"load from different addresses, so a warp may run the code under it ({body}{_work(v, ' per warp', ', ')}) "
                       f"with only some of its lanes active")
        notes = [
            f"if one lane of each warp took it the kernel would average {v.avg_worst:.1f} of 32 active lanes per "
            f"instruction (Nsight Compute's thread-divergence rule flags fewer than {NCU_ACTIVE_LANES:.0f}); "
            f"with every lane taking it, {v.avg_now:.1f}",
            "the accesses under it were evaluated for every lane that reaches it (the data is not known)",
        ]
        if v.reason:
            notes.append(f"severity info: {v.reason}")
        notes.append("fix: give the lanes of a warp similar work: sort or bin the items by their amount of work "
                     "(rows by length, vertices by degree), hand heavy items a warp (or a block) each whose lanes "
                     "split the inner loop, or compact the active items into a dense list first (stream "
                     "compaction) so that every lane of a warp has work")
        metrics = {
            "region_ops": v.ops if v.body_ran else None,
            "region_memory_requests": v.memory if v.body_ran else None,
            "region_unmeasured_requests": v.unmeasured,
            "region_share": round(v.share, 4),
            "warps_reaching": v.warps,
            "avg_active_lanes": round(v.avg_now, 2),
            "avg_active_lanes_worst": round(v.avg_worst, 2),
            "deciding_loads": loads,
        }
        deps = frozenset(d for d in e.deps if not d.startswith("?"))
        yield Diagnostic(
            path=result.path, line=e.span.line, column=e.span.column, code=KL305.code, name=KL305.name,
            severity=v.severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
            assumptions=result.assumptions(deps), metrics=metrics,
            end_line=e.span.end_line, end_column=e.span.end_column,
        )


KL305 = Rule("KL305", "data-dependent-divergence",
             "a branch or loop trip count depends on data that lanes of a warp load from different addresses",
             Severity.WARNING, check_data_branch, category="control-flow")
RULES = (KL305,)


def _work(v: DataVerdict, per: str, joiner: str = " and ") -> str:
    """The evaluated work under a condition, saying what was not evaluated: '9 operations and 3 memory
    requests per warp; 2 of the requests at addresses kernlint could not evaluate', or 'work unknown:
    the loop's body was not evaluated'."""
    if not v.body_ran:
        return "work unknown: the loop's body was not evaluated"
    out = f"{_n(v.ops, 'operation')}{joiner}{_n(v.memory, 'memory request')}{per}"
    caveats = []
    if v.opaque:
        out = "at least " + out
        caveats.append(f"{_n(v.opaque, 'statement')} of the body not evaluated")
    if v.unmeasured:
        caveats.append(f"{'all' if v.unmeasured == v.memory else v.unmeasured} of the requests at addresses kernlint "
                       f"could not evaluate")
    return out + ("; " + " and ".join(caveats) if caveats else "")


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"
