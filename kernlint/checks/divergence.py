"""KL301 divergent-branch, KL302 divergent-loop, KL303 barrier-in-divergent-code,
KL304 full-mask-warp-intrinsic-in-divergent-code.

All four read the warp evaluator's control-flow events (`Branch`, `Loop`, `Barrier`, `Work`) and
decide per warp from the lanes: a warp splits when its *active* lanes disagree. A condition that
is uniform across every warp never fires, whatever its syntax.

KL301/KL302 weigh what the split costs instead of reporting every `if`: idle lanes x the work of
the region they wait through x how often it runs, against the lane-slots the whole block issues
(operations each warp issued x 32; an operation is an arithmetic or logical operator, a memory
access, a call or a `?:`, counted where it runs, so an inner loop counts each iteration and a
one-statement stencil with eight loads weighs as eight loads, not one statement). Each finding also
carries the kernel's predicted average active lanes per warp instruction (`avg_active_lanes`), the
quantity Nsight Compute's ThreadDivergence rule checks against 24 of 32. Tail guards, single-lane elections and the last steps of a
halving reduction are kept quiet or `info` (see `classify_branch`). KL303/KL304 are correctness
rules: a barrier or a full-mask warp intrinsic that some live lane named in its mask does not
reach is undefined behaviour, so they report `error` whatever the cost.

User documentation: rules/KL301-divergent-branch.md, rules/KL302-divergent-loop.md,
rules/KL303-barrier-in-divergent-code.md, rules/KL304-full-mask-warp-intrinsic-in-divergent-code.md
"""
from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.checks.base import Rule, call_chain_notes, helper_site
from kernlint.checks.data_divergence import NCU_ACTIVE_LANES, average_active_lanes
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.events import Barrier, Branch, Loop, Work
from kernlint.eval.result import KernelResult
from kernlint.base.frozen import frozen

WARP = 32
FULL_MASK = 0xFFFFFFFF
# A split region (a loop's trip spread, KL302; the kernel's lanes, KL306) costs a warning when its idle
# lane-slots reach this share of the block's: under it the best a remapping can save is under a tenth of
# the issue slots.
WARN_FRACTION = 0.10
# A branch (KL301) needs more, because its fix is a remapping of work to lanes (a rewrite): its idle
# lane-slots must reach a fifth of the kernel's. A fifth is what lifts an issue-bound kernel by a
# quarter when removed (1 / (1 - 0.2) = 1.25x), the same order as Nsight Compute's ThreadDivergence
# rule, which fires when the kernel averages fewer than 24 of 32 active lanes per instruction (a
# quarter idle, from every cause together). The data of issue 28's corpus audit agree: the branches
# judged true but not worth acting cost 11 % and 16 % (a bitonic network's first step, a demo's
# alternate lanes); the interleaved tree reduction of the seed costs 24 % (fixtures/KL301_reduction.cu)
# and the corpus's reductions and half-warp row/column splits 39 % and more.
BRANCH_WARN_FRACTION = 0.20
# Operations on a side from which the compiler will not predicate it: the branch is real.
HEAVY_WORK = 8
# The last steps of a halving loop: the loop variable is below a warp's width.
HALVING_LIMIT = WARP


# --- per-warp measurement (pure; unit-tested in tests/test_divergence.py) ----------------------------


@frozen
class WarpSplit:
    """How the active lanes of each warp divide on a condition; arrays of shape (S, W)."""

    split: np.ndarray  # bool: the active lanes disagree
    active: np.ndarray  # int: active lanes
    taken: np.ndarray  # int: active lanes on the taken side (the largest arm for a switch)


def warp_split(cond: np.ndarray, mask: np.ndarray) -> WarpSplit:
    """Split of each warp for a two-way condition `cond` under `mask` (both bool (S, W, 32))."""
    mask = np.asarray(mask, dtype=bool)
    c = np.broadcast_to(np.asarray(cond, dtype=bool), mask.shape)
    active = mask.sum(axis=-1)
    taken = (mask & c).sum(axis=-1)
    split = (taken > 0) & (taken < active)
    return WarpSplit(split, active, taken)


def arm_split(arms: np.ndarray, mask: np.ndarray) -> WarpSplit:
    """Split of each warp for a multi-way choice: `arms` is the arm index each lane takes."""
    mask = np.asarray(mask, dtype=bool)
    a = np.broadcast_to(arms, mask.shape)
    big = np.iinfo(np.int64).max
    lo = np.where(mask, a, big).min(axis=-1)
    hi = np.where(mask, a, -big).max(axis=-1)
    active = mask.sum(axis=-1)
    split = (active > 0) & (lo != hi)
    # Lanes in the most common arm of each warp.
    values = np.unique(a[mask], return_index=True)[0] if mask.any() else np.zeros(0, dtype=np.int64)
    largest = np.zeros(active.shape, dtype=np.int64)
    for v in values:
        largest = np.maximum(largest, (mask & (a == v)).sum(axis=-1))
    return WarpSplit(split, active, largest)


@frozen
class TripSpread:
    """Per-warp trip counts of a loop over the lanes that reached it; arrays of shape (S, W)."""

    split: np.ndarray  # bool: lanes ran different numbers of iterations
    lo: np.ndarray  # int: fewest iterations of a lane
    hi: np.ndarray  # int: most iterations of a lane
    idle: np.ndarray  # int: lane-iterations spent waiting for the slowest lane
    lanes: np.ndarray  # int: lanes that reached the loop
    at_max: np.ndarray  # int: lanes that ran `hi` iterations


def trip_spread(trips: np.ndarray, mask: np.ndarray) -> TripSpread:
    """Spread of per-lane trip counts within each warp, counting only lanes in `mask`."""
    mask = np.asarray(mask, dtype=bool)
    t = np.broadcast_to(trips, mask.shape).astype(np.int64)
    big = np.iinfo(np.int64).max
    lo = np.where(mask, t, big).min(axis=-1)
    hi = np.where(mask, t, -1).max(axis=-1)
    lanes = mask.sum(axis=-1)
    lo = np.where(lanes > 0, lo, 0)
    hi = np.where(lanes > 0, hi, 0)
    idle = np.where(mask, hi[..., None] - t, 0).sum(axis=-1)
    at_max = (mask & (t == hi[..., None])).sum(axis=-1)
    return TripSpread((lanes > 0) & (lo != hi), lo, hi, idle, lanes, at_max)


def missing_lanes(reached: np.ndarray, live: np.ndarray, member: int | None = None) -> np.ndarray:
    """Lanes (S, W, 32) that are live and named by `member` but did not reach a collective."""
    miss = np.asarray(live, dtype=bool) & ~np.asarray(reached, dtype=bool)
    if member is not None and member != FULL_MASK:
        bits = np.array([(member >> i) & 1 for i in range(WARP)], dtype=bool)
        miss = miss & bits
    out: np.ndarray = miss
    return out


def lane_ranges(lanes: Iterable[int], limit: int = 4) -> str:
    """'0-15', '0, 2, 4, ... (16 lanes)' — a short human form of a set of lane or warp indices."""
    xs = sorted({int(x) for x in lanes})
    if not xs:
        return "none"
    runs: list[tuple[int, int]] = []
    for x in xs:
        if runs and x == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], x)
        else:
            runs.append((x, x))
    if len(runs) > limit:
        steps = np.diff(xs)
        if len(xs) > 2 and np.all(steps == steps[0]):
            return f"{xs[0]}, {xs[1]}, {xs[2]}, ..., {xs[-1]} ({len(xs)})"
        head = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs[:limit])
        return f"{head}, ... ({len(xs)})"
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.1f} %"


def _active_lanes_note(result: KernelResult, metrics: dict[str, object]) -> list[str]:
    """Add the kernel's predicted average active lanes per instruction; a note when ncu would flag it."""
    avg = average_active_lanes(result)
    if avg is None:
        return []
    metrics["avg_active_lanes"] = round(avg, 2)
    if avg < NCU_ACTIVE_LANES:
        return [f"the kernel averages {avg:.1f} of 32 active lanes per instruction (predicted): below the "
                f"{NCU_ACTIVE_LANES:.0f} at which Nsight Compute's thread-divergence rule fires"]
    return []


def _block_lane_work(result: KernelResult) -> np.ndarray | None:
    """Lane-slots each sample of the block issued: 32 x operations issued, summed over warps."""
    for e in result.events:
        if isinstance(e, Work):
            total: np.ndarray = e.per_warp.sum(axis=-1).astype(np.float64) * WARP
            return total
    return None


def _mentions_define(result: KernelResult, line: int) -> bool:
    text = result.line_text(line)
    return any(re.search(rf"\b{re.escape(name)}\b", text) for name, _v in result.defines)


def _loop_note(vars_seen: dict[str, list[int]]) -> str:
    for name, values in vars_seen.items():
        vals = list(dict.fromkeys(values))
        if vals:
            shown = ", ".join(str(v) for v in vals[:6]) + (", ..." if len(vals) > 6 else "")
            return f"{name} = {shown}"
    return ""


def _elects(taken: int, active: int) -> bool:
    """One lane of a warp (or one lane per row of a 2-D block: at most one lane in 8) takes the branch."""
    return taken == 1 or 8 * taken <= active


def _halving(values: Sequence[int]) -> bool:
    """Values of a loop variable that double or halve from one iteration to the next."""
    vals = list(dict.fromkeys(values))
    if len(vals) < 2 or any(v <= 0 for v in vals):
        return False
    return all(b * 2 == a or a * 2 == b for a, b in itertools.pairwise(vals))


# --- KL301 divergent-branch ----------------------------------------------------------------------------


@dataclass
class BranchSite:
    """Every evaluation of one branch site, with the returns folded into their enclosing `if`."""

    first: Branch
    events: list[Branch] = field(default_factory=list)
    returns: list[Branch] = field(default_factory=list)


@frozen
class BranchVerdict:
    """What KL301 concluded for one site; `severity` None means quiet."""

    severity: Severity | None
    reason: str
    fraction: float
    warps_split: int
    warps_evaluated: int
    lanes_taken: tuple[int, ...]
    worst_warp: int
    worst_active: int
    split_events: int
    heavy: bool
    repeated: bool
    split_at: str  # loop-variable values where it split ("s = 1, 2, 4")
    worst_lanes: tuple[int, ...]  # lanes of the worst warp on the taken side
    worst_where: str = ""  # loop-variable values at the worst split ("s = 1")
    # The worst split is an early `return` in the region: lanes_taken is then (go on, return).
    worst_is_return: bool = False
    # A variable of the enclosing loops doubles or halves (a tree, a butterfly); False: it moves by
    # a constant step (a shrinking halo, a triangular solve) or there is no loop.
    halving: bool = False


def branch_sites(result: KernelResult) -> list[BranchSite]:
    """Group Branch events by site; fold each early `return` into the innermost `if` around it."""
    sites: dict[tuple[int, int, str], BranchSite] = {}
    returns: list[Branch] = []
    for e in result.events:
        if not isinstance(e, Branch):
            continue
        if e.kind == "return":
            returns.append(e)
            continue
        key = (e.span.line, e.span.column, e.kind, e.via)
        site = sites.setdefault(key, BranchSite(e))
        site.events.append(e)
    for r in returns:
        best: BranchSite | None = None
        for site in sites.values():
            sp = site.first.span
            if site.first.kind in ("if", "switch") and _contains(sp, r.span) and (
                    best is None or _contains(best.first.span, sp)):
                best = site
        if best is None:
            key = (r.span.line, r.span.column, "return", r.via)
            best = sites.setdefault(key, BranchSite(r))
        best.returns.append(r)
    return list(sites.values())


def _contains(outer: object, inner: object) -> bool:
    o, i = outer, inner
    oe = (o.end_line, o.end_column) if o.end_line else (o.line, 10**9)  # type: ignore[attr-defined]
    ie = (i.end_line, i.end_column) if i.end_line else (i.line, i.column)  # type: ignore[attr-defined]
    return (o.line, o.column) <= (i.line, i.column) and ie <= oe  # type: ignore[attr-defined]


def _contiguous_end(cond: np.ndarray, mask: np.ndarray, split: np.ndarray) -> bool:
    """Whether, in every split warp, the lanes taking the branch are one contiguous run of the active
    lanes that starts at the first or ends at the last of them."""
    for s, w in zip(*np.nonzero(split)):
        act = np.flatnonzero(mask[s, w])
        taken = cond[s, w][act]
        k = int(taken.sum())
        if not (taken[:k].all() or taken[len(taken) - k:].all()):
            return False
        if not np.all(np.diff(act) == 1):
            return False
    return True


def _split_of(e: Branch) -> WarpSplit:
    return arm_split(e.arms, e.mask) if e.arms is not None else warp_split(e.cond, e.mask)


def classify_branch(site: BranchSite, result: KernelResult) -> BranchVerdict | None:
    """Measure one branch site over all its evaluations and decide its severity (None: no split)."""
    lane_work = _block_lane_work(result)
    S = site.first.mask.shape[0]
    waste = np.zeros(S)
    split_warps: list[set[int]] = [set() for _ in range(S)]
    reached_warps: list[set[int]] = [set() for _ in range(S)]
    per_warp_events: dict[tuple[int, int], int] = defaultdict(int)
    election = True
    heavy = False
    max_split_per_event = 0
    split_vars: dict[str, list[int]] = defaultdict(list)
    all_vars: dict[str, list[int]] = defaultdict(list)
    capped_steps = True  # every split event is a last step of a tree: under 32 working threads
    # The worst warp is the most evenly split one (both sides serialised with the most lanes), then
    # the one with the most idle work: (key, sample, warp, lanes_taken, active, lanes, where).
    worst: tuple[tuple[int, float], int, int, tuple[int, int], int, tuple[int, ...], str] = (
        (-1, -1.0), 0, 0, (0, 0), 0, (), "")
    n_split_events = 0
    worst_is_return = False
    # A sweep: a one-sided branch whose working lanes are, in every split warp, one contiguous run at
    # an end of the warp's active lanes, moving with an enclosing loop (`if (lane < i)` in a warp's
    # tree reduction or shuffle scan, `if (tid > i)` in a triangular solve).
    sweep = bool(site.events) and not site.returns
    sweep_counts: set[int] = set()
    for e in site.events:
        sp = _split_of(e)
        if sweep and sp.split.any():
            sweep = e.arms is None and not e.else_has_loop and (
                e.else_work is None or not np.any(np.where(sp.split, e.else_work, 0))) and e.else_cost == 0 \
                and bool(e.loop_vars) and _contiguous_end(np.broadcast_to(e.cond, e.mask.shape), e.mask, sp.split)
            sweep_counts.update(int(x) for x in np.unique(sp.taken[sp.split], return_index=True)[0])
        tw = e.then_work if e.then_work is not None else np.full(sp.active.shape, e.then_cost)
        ew = e.else_work if e.else_work is not None else np.full(sp.active.shape, e.else_cost)
        for name, v in e.loop_vars:
            if v is not None:
                all_vars[name].append(v)
        for s in range(S):
            reached_warps[s].update(np.nonzero(sp.active[s] > 0)[0].tolist())
        if not sp.split.any():
            continue
        n_split_events += 1
        max_split_per_event = max(max_split_per_event, int(sp.split.sum(axis=-1).max()))
        for name, v in e.loop_vars:
            if v is not None:
                split_vars[name].append(v)
        # The last steps of a tree: fewer threads of the whole block work than a warp holds (the
        # loop variable below 32 for `tid < s`, blockDim / (2*s) below 32 for `2*s*tid < blockDim`).
        if e.arms is not None or e.then_has_loop or int(sp.taken.sum(axis=-1).max()) >= HALVING_LIMIT:
            capped_steps = False
        if e.arms is not None:
            idle = (sp.active - sp.taken) * tw  # lanes outside the largest arm wait through the rest
        else:
            idle = (sp.active - sp.taken) * tw + sp.taken * ew
        idle = np.where(sp.split, idle, 0)
        waste += idle.sum(axis=-1)
        for s, w in zip(*np.nonzero(sp.split)):
            split_warps[s].add(int(w))
            per_warp_events[(int(s), int(w))] += 1
            t, a = int(sp.taken[s, w]), int(sp.active[s, w])
            if not (_elects(t, a) and not e.then_has_loop) or e.arms is not None:
                election = False
            side_work = max(int(tw[s, w]) if a - t else 0, int(ew[s, w]) if t else 0)
            if side_work >= HEAVY_WORK or (e.then_has_loop and a - t) or (e.else_has_loop and t):
                heavy = True
            key = (min(t, a - t), float(idle[s, w]))
            if key > worst[0]:
                lanes = tuple(np.nonzero(e.mask[s, w] & np.broadcast_to(e.cond, e.mask.shape)[s, w])[0].tolist())
                where = ", ".join(f"{n} = {x}" for n, x in e.loop_vars if x is not None)
                worst = (key, int(s), int(w), (t, a - t), a, lanes, where)
    # Early returns inside the region: lanes that left wait while the rest of their warp works on.
    work_end = None
    for ev_ in result.events:
        if isinstance(ev_, Work):
            work_end = ev_.per_warp
    for r in site.returns:
        if r.then_work is None or work_end is None:
            continue
        sp = warp_split(r.cond, r.mask)
        rest = np.maximum(work_end - r.then_work, 0)
        idle = np.where(sp.split, sp.taken * rest, 0)
        if not sp.split.any():
            continue
        election = False
        waste += idle.sum(axis=-1)
        if int(rest[sp.split].max()) >= HEAVY_WORK:
            heavy = True
        if site.first.kind == "return":
            n_split_events += 1
            max_split_per_event = max(max_split_per_event, int(sp.split.sum(axis=-1).max()))
            capped_steps = False
        for s, w in zip(*np.nonzero(sp.split)):
            split_warps[s].add(int(w))
            reached_warps[s].add(int(w))
            per_warp_events[(int(s), int(w))] += 1
            t, a = int(sp.taken[s, w]), int(sp.active[s, w])
            key = (min(t, a - t), float(idle[s, w]))
            if key > worst[0]:
                worst = (key, int(s), int(w), (a - t, t), a, (), "")
                worst_is_return = True
    if not any(split_warps):
        return None
    counts = [len(x) for x in split_warps]
    if lane_work is not None and np.all(lane_work > 0):
        fractions = waste / lane_work
    else:
        fractions = np.zeros(S)
    # Report what holds in every sample: the cheapest sample decides.
    s_min = int(np.argmin(fractions))
    fraction = float(fractions[s_min])
    repeated = any(n > 1 for n in per_warp_events.values())
    halving = any(_halving(v) for v in all_vars.values())
    sample_show = worst[1]
    def verdict(severity: Severity | None, reason: str) -> BranchVerdict:
        return BranchVerdict(
            severity, reason, fraction=fraction, warps_split=counts[sample_show],
            warps_evaluated=len(reached_warps[sample_show]), lanes_taken=worst[3], worst_warp=worst[2],
            worst_active=worst[4], split_events=n_split_events, heavy=heavy, repeated=repeated,
            split_at=_loop_note(split_vars), worst_lanes=worst[5], worst_where=worst[6],
            worst_is_return=worst_is_return, halving=halving)

    deps = site.first.deps
    if (deps or _mentions_define(result, site.first.span.line)) and max(counts) <= 1:
        return verdict(None, "tail guard: it splits at most one warp of the grid")
    if election:
        return verdict(None, "single-lane election without a loop")
    if halving and capped_steps and max_split_per_event <= 1:
        doubling = any(_halving(v) and list(v)[-1] > list(v)[0] for v in all_vars.values())
        kind = "doubling" if doubling else "halving"  # say what the loop does, not what it should do
        return verdict(Severity.INFO, f"it splits one warp only in the last steps of a {kind} loop "
                             f"(fewer than {HALVING_LIMIT} threads of the block work)")
    if not (heavy or repeated):
        return verdict(Severity.INFO, "the region is short and runs once: the compiler will likely "
                             "predicate it")
    if sweep and len(sweep_counts) >= 2 and len(split_vars) >= 1 and any(len(set(v)) >= 2 for v in split_vars.values()):
        return verdict(Severity.INFO, "it is a sweep: in every warp it splits, the working lanes are one "
                             "contiguous run at an end of the warp that moves with the enclosing loop (a tree "
                             "reduction or scan inside a warp, a triangular solve, a shrinking halo), and the branch has no else: "
                             "the idle lanes cost no extra instructions, and no remapping packs the work into "
                             "fewer warps")
    if fraction < BRANCH_WARN_FRACTION:
        return verdict(Severity.INFO, f"its idle lanes cost {_pct(fraction)} of the block's lane-slots "
                             f"(warning from {_pct(BRANCH_WARN_FRACTION)}: rules/KL301-divergent-branch.md)")
    return verdict(Severity.WARNING, "")


_KIND_WORDS = {"if": "branch", "ternary": "conditional expression with side effects", "switch": "switch",
               "return": "early return"}


def _break_only_ifs(body: ir.Block | None) -> set[tuple[int, int]]:
    """Spans of `if (c) break;` statements: their divergence is the loop's, reported by KL302."""
    out: set[tuple[int, int]] = set()
    for n in ir.iter_statements(body):
        if isinstance(n, ir.If) and n.other is None:
            then = n.then
            while isinstance(then, ir.Block) and len(then.body) == 1:
                then = then.body[0]
            if isinstance(then, ir.Break):
                out.add((n.span.line, n.span.column))
    return out


def check_branch(result: KernelResult) -> Iterator[Diagnostic]:
    """KL301: a branch whose condition splits the active lanes of warps, weighted by its cost."""
    loop_exits = _break_only_ifs(result.kernel.body)
    for site in branch_sites(result):
        if site.first.kind == "if" and (site.first.span.line, site.first.span.column) in loop_exits:
            continue
        v = classify_branch(site, result)
        if v is None or v.severity is None:
            continue
        e = site.first
        what = _KIND_WORDS.get(e.kind, "branch")
        t, nt = v.lanes_taken
        a = max(v.worst_active, 1)
        if e.kind == "switch":
            sides = f"the largest case holds {t} of {a} active lanes ({_pct(t / a)})"
        elif e.kind == "return" or (site.returns and not site.events) or v.worst_is_return:
            sides = f"{nt} of {a} live lanes return ({_pct(nt / a)}) and {t} go on"
        else:
            sides = f"{t} of {a} active lanes take it ({_pct(t / a)}) and {nt} do not ({_pct(nt / a)})"
        serial = ("lanes that return wait while the others run on" if "return (" in sides
                  else "the sides run one after the other")
        at = f" (at {v.worst_where})" if v.worst_where else ""
        warps: set[int] = set()
        for ev_ in site.events:
            warps.update(np.nonzero(_split_of(ev_).split.any(axis=0))[0].tolist())
        for r in site.returns:
            warps.update(np.nonzero(warp_split(r.cond, r.mask).split.any(axis=0))[0].tolist())
        which = f" (warp{'s' if len(warps) > 1 else ''} {lane_ranges(warps)})" if warps else ""
        message = (f"divergent {what}{helper_site(e.text)}: it splits {v.warps_split} of {v.warps_evaluated} warps{which}; in the worst "
                   f"warp{at} {sides}; {serial}, idle lanes cost {_pct(v.fraction)} of the "
                   f"block's lane-slots")
        notes = []
        if v.worst_lanes and len(v.worst_lanes) < a:
            notes.append(f"worst warp {v.worst_warp}: lanes {lane_ranges(l % WARP for l in v.worst_lanes)} "
                         f"take the branch{_rows_note(result, v.worst_warp, v.worst_lanes)}")
        if v.split_at:
            notes.append(f"splits in {v.split_events} evaluations of the enclosing loop ({v.split_at})")
        if v.reason:
            notes.append(f"severity info: {v.reason}")
        notes.append("fix: " + _branch_fix(site, v))
        metrics = {
            "warps_split": v.warps_split,
            "warps_evaluated": v.warps_evaluated,
            "lanes_taken": [t, nt],
            "idle_fraction": round(v.fraction, 4),
            "split_events": v.split_events,
        }
        notes[-1:-1] = _active_lanes_note(result, metrics)
        yield Diagnostic(
            path=result.path, line=e.span.line, column=e.span.column, code=KL301.code, name=KL301.name,
            severity=v.severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
            assumptions=result.assumptions(e.deps), metrics=metrics,
            end_line=e.span.end_line, end_column=e.span.end_column,
        )


def _rows_note(result: KernelResult, warp: int, taken: Sequence[int]) -> str:
    """For 2-D/3-D blocks: which threadIdx.y rows the warp holds and which of them take the branch."""
    bx, by, _bz = result.shape.block
    if by * _bz <= 1:
        return ""
    lin = [warp * WARP + i for i in range(WARP) if warp * WARP + i < bx * by * _bz]
    rows = sorted({(t // bx) % by for t in lin})
    rows_taken = sorted({((warp * WARP + (l % WARP)) // bx) % by for l in taken})
    took = f"row {rows_taken[0]} takes it" if len(rows_taken) == 1 else f"rows {lane_ranges(rows_taken)} take it"
    return f" (the warp holds threadIdx.y = {lane_ranges(rows)} with blockDim.x = {bx}; {took})"


def _branch_fix(site: BranchSite, v: BranchVerdict) -> str:
    """Advice that matches the pattern of the split: a halving tree, a butterfly, a moving sweep, or a
    plain condition."""
    lanes = v.worst_lanes
    contiguous = bool(lanes) and lanes == tuple(range(lanes[0], lanes[0] + len(lanes)))
    if v.split_at and contiguous and v.halving:
        # The working lanes are already contiguous (sequential addressing): suggesting it again would
        # tell the author to do what the code does. What is left is the steps with under 32 workers.
        return ("the working threads are already contiguous, so whole warps drop out together; the split left "
                "is the steps where fewer than 32 threads work: finish those in one warp with warp shuffles "
                "(__shfl_down_sync) instead of shared memory and __syncthreads()")
    if v.split_at and contiguous:
        # A run of lanes that moves by a constant step with the loop (pathfinder's pyramid, a triangular
        # solve): not a reduction, so warp shuffles are no answer, and the lanes are already packed.
        return ("none in the lane mapping: the working lanes are already one contiguous run that moves by a "
                "constant step with the loop (a shrinking halo as in ghost-zone tiling, a triangular solve), so "
                "no remapping packs them tighter; the idle share falls only with fewer steps per pass (a lower "
                "pyramid) or more working lanes per step")
    if v.split_at and v.halving:
        return ("give the working threads contiguous indices so that whole warps drop out together: in a tree "
                "reduction, sequential addressing (`if (tid < s)` with s halving from blockDim.x / 2); in a "
                "compare-exchange network (bitonic sort), one thread per pair (`pos = 2 * tid - (tid & (j - 1))`) "
                "instead of two threads of which one idles")
    return ("make the condition uniform per warp: give each warp's 32 lanes the same side (branch on "
            "threadIdx.x / 32, or remap the work so that one warp handles one case)")


# --- KL302 divergent-loop ------------------------------------------------------------------------------


def check_loop(result: KernelResult) -> Iterator[Diagnostic]:
    """KL302: a loop whose trip count differs between lanes of a warp."""
    groups: dict[tuple[int, int, tuple[int, ...]], list[Loop]] = defaultdict(list)
    for e in result.events:
        if isinstance(e, Loop):
            groups[(e.span.line, e.span.column, e.via)].append(e)
    lane_work = _block_lane_work(result)
    for evs in groups.values():
        first = evs[0]
        S = first.mask.shape[0]
        waste = np.zeros(S)
        split_warps: list[set[int]] = [set() for _ in range(S)]
        reached: list[set[int]] = [set() for _ in range(S)]
        worst = (-1.0, 0, 0, 0, 0, 0, 0)  # waste, sample, warp, lo, hi, at_max, lanes
        truncated = any(e.truncated for e in evs)
        for e in evs:
            ts = trip_spread(e.trips, e.mask)
            for s in range(S):
                reached[s].update(np.nonzero(ts.lanes[s] > 0)[0].tolist())
            if not ts.split.any():
                continue
            work = e.work if e.work is not None else ts.hi * max(e.body_cost, 1)
            per_iter = np.where(ts.hi > 0, work / np.maximum(ts.hi, 1), 0)
            idle = np.where(ts.split, ts.idle * per_iter, 0)
            waste += idle.sum(axis=-1)
            for s, w in zip(*np.nonzero(ts.split)):
                split_warps[s].add(int(w))
                if float(idle[s, w]) > worst[0]:
                    worst = (float(idle[s, w]), int(s), int(w), int(ts.lo[s, w]), int(ts.hi[s, w]),
                             int(ts.at_max[s, w]), int(ts.lanes[s, w]))
        if not any(split_warps):
            continue
        counts = [len(x) for x in split_warps]
        if (first.deps or _mentions_define(result, first.span.line)) and max(counts) <= 1:
            continue  # a tail: the last warp of the grid runs one iteration fewer
        fractions = waste / lane_work if lane_work is not None and np.all(lane_work > 0) else np.zeros(S)
        fraction = float(fractions.min())
        _w, s_show, warp, lo, hi, at_max, lanes = worst
        severity = Severity.WARNING if fraction >= WARN_FRACTION else Severity.INFO
        # A remainder: one warp of the block splits, its lanes one trip apart. That is the tail of a
        # strided loop whose fixed bound is not a multiple of the stride (100 items on 128 threads):
        # the loop is already written as the fix below says, and only a work count that is a
        # multiple of 32 removes the idle lanes, so it is reported as info, as KL301 does a tail guard.
        remainder = max(counts) <= 1 and hi - lo == 1 and not truncated
        if remainder:
            severity = Severity.INFO
        hi_txt = f"{hi} or more" if truncated and hi >= _max_trips(evs) else str(hi)
        message = (f"divergent loop{helper_site(evs[0].text)}: lanes of {counts[s_show]} of {len(reached[s_show])} warps run different "
                   f"numbers of iterations; in the worst warp from {lo} to {hi_txt}, and lanes that finish early "
                   f"wait for the slowest: idle lanes cost {_pct(fraction)} of the block's lane-slots")
        warps = set().union(*split_warps)
        notes = [f"warps whose lanes disagree: {lane_ranges(warps)}",
                 f"worst warp {warp}: {at_max} of {lanes} lanes run the last iteration"]
        if truncated:
            notes.append("evaluation stopped at the iteration cap: the largest trip counts are lower bounds")
        if remainder:
            notes.append("severity info: a remainder: only one warp of the block splits, its lanes one trip "
                         "apart (the tail of a strided loop whose bound is not a multiple of its stride)")
            notes.append("fix: only a work count per block that is a multiple of 32 (or several work items "
                         "packed into the last warp) removes the idle lanes")
        else:
            if severity is Severity.INFO:
                notes.append(f"severity info: the idle lanes cost less than {_pct(WARN_FRACTION)} of the "
                             f"block's lane-slots")
            notes.append("fix: give every lane of a warp the same trip count (split the work evenly, e.g. a "
                         "strided loop `for (j = lane; j < n; j += 32)`, or sort/bin the work by length)")
        metrics = {
            "warps_split": counts[s_show],
            "warps_evaluated": len(reached[s_show]),
            "lanes_taken": [at_max, lanes - at_max],
            "min_trips": lo,
            "max_trips": hi,
            "idle_fraction": round(fraction, 4),
        }
        if truncated:
            metrics["max_trips_is_lower_bound"] = True
        notes[-1:-1] = _active_lanes_note(result, metrics)
        yield Diagnostic(
            path=result.path, line=first.span.line, column=first.span.column, code=KL302.code, name=KL302.name,
            severity=severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
            assumptions=result.assumptions(first.deps), metrics=metrics,
            end_line=first.span.end_line, end_column=first.span.end_column,
        )


def _max_trips(evs: list[Loop]) -> int:
    return max(int(e.trips.max()) for e in evs)


# --- KL303 / KL304: collectives that some live lane does not reach --------------------------------------


def _is_barrier(e: Barrier) -> bool:
    return e.scope == "block" or e.name in ("__syncwarp", "tile.sync")


def _collective_findings(result: KernelResult, want_barrier: bool) -> Iterator[tuple[Barrier, np.ndarray, np.ndarray, int, bool]]:
    """Sites where live lanes named by the collective do not reach it: (event, missing, reached, iteration, all samples)."""
    groups: dict[tuple[int, int, tuple[int, ...]], list[Barrier]] = defaultdict(list)
    for e in result.events:
        if isinstance(e, Barrier) and _is_barrier(e) == want_barrier:
            groups[(e.span.line, e.span.column, e.via)].append(e)
    for evs in groups.values():
        for e in evs:
            if e.scope == "block":
                reached = np.broadcast_to(e.mask, e.live.shape)
                any_reached = reached.any(axis=(1, 2), keepdims=True)
                miss = missing_lanes(reached, e.live) & any_reached
            else:
                if e.member_mask is None:
                    continue  # mask unknown (computed from data): say nothing
                reached = e.mask
                any_reached = reached.any(axis=-1, keepdims=True)
                miss = missing_lanes(reached, e.live, e.member_mask) & any_reached
            if miss.any():
                per_sample = miss.any(axis=(1, 2))
                yield e, miss, reached, (e.loop_iter[-1] if e.loop_iter else -1), bool(per_sample.all())
                break  # one finding per site: the first evaluation that shows it


def check_barrier(result: KernelResult) -> Iterator[Diagnostic]:
    """KL303: a barrier reached by some but not all live threads of its scope."""
    for e, miss, reached, it, everywhere in _collective_findings(result, want_barrier=True):
        s = int(np.argmax(miss.any(axis=(1, 2))))
        live = e.live[s]
        got = reached[s] & live
        notes = []
        if e.scope == "block":
            n_live, n_got = int(live.sum()), int(got.sum())
            lin_missing = np.nonzero(miss[s].reshape(-1))[0]
            lin_got = np.nonzero(got.reshape(-1))[0]
            message = (f"{_call_name(e)}{helper_site(e.text)} in divergent code: {n_got} of {n_live} live threads of the block reach it and "
                       f"{n_live - n_got} do not; a block barrier must be reached by all threads or none "
                       f"(undefined behaviour: deadlock or stale shared data)")
            notes.append(f"threads that reach it: {lane_ranges(lin_got)}; threads that skip it: "
                         f"{lane_ranges(lin_missing)}")
            metrics = {"threads_reaching": n_got, "threads_live": n_live,
                       "warps_reaching": int(got.any(axis=-1).sum()), "warps_evaluated": int(live.any(axis=-1).sum())}
            fix = ("move the barrier out of the condition (compute the condition, sync unconditionally, then "
                   "branch), or make the condition uniform across the block (blockIdx, kernel parameters)")
        else:
            warps = np.nonzero(miss[s].any(axis=-1))[0]
            w = int(warps[0])
            mask_txt = " (its tile's threads)" if _is_tile(e) else f" with mask {_hex(e.member_mask)}"
            message = (f"{_call_name(e)}{mask_txt}{helper_site(e.text)} in divergent code: in {len(warps)} warp(s) "
                       f"only {int(got[w].sum())} of {int((live[w] & _bits(e.member_mask)).sum())} named live "
                       f"lanes reach it (undefined behaviour)")
            notes.append(f"warps: {lane_ranges(warps)}; in warp {w} lanes {lane_ranges(np.nonzero(miss[s, w])[0])} "
                         f"are named in the mask but do not arrive")
            metrics = {"warps_split": len(warps), "warps_evaluated": int(live.any(axis=-1).sum()),
                       "lanes_reaching": int(got[w].sum())}
            fix = ("call it where the whole warp is converged, or pass the mask of the lanes that arrive "
                   "(`__ballot_sync(0xffffffff, cond)` computed before the branch)")
        if it >= 0:
            notes.append(f"first seen at iteration {it} of the enclosing loop")
        if not everywhere:
            notes.append("shown for one of the sampled blocks/sizes only")
        notes.extend(call_chain_notes(e.via))
        notes.append("fix: " + fix)
        if e.via:
            metrics["called_from"] = list(e.via)
        yield Diagnostic(
            path=result.path, line=e.span.line, column=e.span.column, code=KL303.code, name=KL303.name,
            severity=KL303.severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
            assumptions=result.assumptions(None if not everywhere else e.deps), metrics=metrics,
            end_line=e.span.end_line, end_column=e.span.end_column,
        )


def check_intrinsic(result: KernelResult) -> Iterator[Diagnostic]:
    """KL304: a `__shfl_*_sync`/`__ballot_sync`/... whose mask names live lanes that do not execute it."""
    for e, miss, reached, it, everywhere in _collective_findings(result, want_barrier=False):
        s = int(np.argmax(miss.any(axis=(1, 2))))
        live = e.live[s]
        got = reached[s] & live
        warps = np.nonzero(miss[s].any(axis=-1))[0]
        w = int(warps[0])
        named = int((live[w] & _bits(e.member_mask)).sum())
        call_txt = f"{e.name}() (its tile's threads)" if _is_tile(e) else f"{e.name}(mask {_hex(e.member_mask)})"
        message = (f"{call_txt}{helper_site(e.text)} in divergent code: in {len(warps)} of "
                   f"{int(got.any(axis=-1).sum())} warps that execute it, lanes named in the mask do not "
                   f"(warp {w}: {int(got[w].sum())} of {named} lanes); the result is undefined and the call may hang")
        notes = [(f"warp {w}: lanes {lane_ranges(np.nonzero(got[w])[0])} execute it; lanes "
                  f"{lane_ranges(np.nonzero(miss[s, w])[0])} are named in the mask but do not")]
        if it >= 0:
            notes.append(f"first seen at iteration {it} of the enclosing loop")
        if not everywhere:
            notes.append("shown for one of the sampled blocks/sizes only")
        notes.append("fix: call it before the branch with the full warp converged, or pass the mask of the "
                     "participating lanes (`unsigned m = __ballot_sync(0xffffffff, cond);` before the branch)")
        metrics = {"warps_split": len(warps), "warps_evaluated": int(got.any(axis=-1).sum()),
                   "lanes_taken": [int(got[w].sum()), int(miss[s, w].sum())],
                   "member_mask": _hex(e.member_mask)}
        notes.extend(call_chain_notes(e.via))
        if e.via:
            metrics["called_from"] = list(e.via)
        yield Diagnostic(
            path=result.path, line=e.span.line, column=e.span.column, code=KL304.code, name=KL304.name,
            severity=KL304.severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
            assumptions=result.assumptions(None if not everywhere else e.deps), metrics=metrics,
            end_line=e.span.end_line, end_column=e.span.end_column,
        )


def _is_tile(e: Barrier) -> bool:
    """A cooperative-groups tile operation (eval/coop_groups.py): checked per tile, not per mask."""
    return e.name == "tile.sync" or e.name.startswith(("thread_block_tile<", "cg::"))


def _call_name(e: Barrier) -> str:
    if e.name == "tile.sync":
        return "cooperative-groups tile sync()"
    return "cooperative-groups sync()" if e.name == "sync" else f"{e.name}()"


def _bits(member: int | None) -> np.ndarray:
    m = FULL_MASK if member is None else member
    return np.array([(m >> i) & 1 for i in range(WARP)], dtype=bool)


def _hex(member: int | None) -> str:
    return "unknown" if member is None else f"0x{member:08x}"


KL301 = Rule("KL301", "divergent-branch", "a branch splits the active lanes of warps and costs idle lanes",
             Severity.WARNING, check_branch, category="control-flow")
KL302 = Rule("KL302", "divergent-loop", "lanes of a warp run a loop for different numbers of iterations",
             Severity.WARNING, check_loop, category="control-flow")
KL303 = Rule("KL303", "barrier-in-divergent-code", "a barrier is reached by some but not all threads of its scope",
             Severity.ERROR, check_barrier, category="synchronisation")
KL304 = Rule("KL304", "full-mask-warp-intrinsic-in-divergent-code",
             "a *_sync warp intrinsic names lanes in its mask that do not execute it",
             Severity.ERROR, check_intrinsic, category="synchronisation")
RULES = (KL301, KL302, KL303, KL304)
