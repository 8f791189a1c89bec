"""KL306 low-active-lanes: a kernel whose warps, over all they issue, keep too few lanes active.

KL301/KL302 weigh one branch or loop at a time, and a wavefront (an anti-diagonal sweep as in a
Needleman-Wunsch tile, a shrinking halo) is reported there as an info per branch: each branch is a
sweep that no remapping packs tighter. Yet the kernel as a whole may leave most lanes idle. This rule
looks at the whole: the predicted average of active lanes per warp instruction over the kernel (the
evaluator's `Work` event: operations each warp issued, and the active lanes summed over them), the
quantity Nsight Compute's ThreadDivergence rule (WarpStateStats section,
smsp__thread_inst_executed_per_inst_executed.ratio) flags below 24 of 32.

It warns when the average is below 24 in every sample of the unknowns (a warning must hold for every
plausible value), when divergence alone takes it there (lanes a partial last warp never has are
counted as present: they are KL404's, so a 16-thread block is not called divergent for its size), and
when it stays there with the idle lanes of the sites KL301/KL302 already warn about set aside (one
branch that splits every warp in half is that branch's finding, not the kernel's). The
average must not hang on an unknown trip count either: a loop bounded by a sampled value or data that
runs busier than the average would lift it with more iterations, and the finding is then an info. The
finding names the branches and loops whose idle lanes cost the most and what each costs (its share of
the block's lane-slots), and the fix families that apply to the kernel as a whole.

User documentation: rules/KL306-low-active-lanes.md
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from kernlint.checks.base import Rule
from kernlint.checks.data_divergence import NCU_ACTIVE_LANES, kernel_work
from kernlint.checks.divergence import WARN_FRACTION, branch_sites, classify_branch, trip_spread
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.events import Loop, Work
from kernlint.eval.result import KernelResult

WARP = 32
# Sites named in the message (the rest are counted in a note).
MAX_SITES_SHOWN = 3


def _existing_slots(result: KernelResult, per_warp: np.ndarray) -> np.ndarray:
    """Lane-slots of the threads that exist (S,): each warp's operations x its threads (the last warp
    of a block that is not a multiple of 32 has fewer)."""
    bx, by, bz = result.shape.block
    threads = bx * by * bz
    W = per_warp.shape[-1]
    lanes = np.array([max(0, min(WARP, threads - w * WARP)) for w in range(W)], dtype=np.float64)
    out: np.ndarray = (per_warp * lanes).sum(axis=-1)
    return out


# (share of the block's lane-slots, line, words, deps, whether KL301/KL302 report the site as a warning)
Cost = tuple[float, int, str, frozenset[str], bool]


def _loop_costs(result: KernelResult, lane_slots: np.ndarray) -> list[Cost]:
    """Each loop whose lanes run different trip counts, with the lane-slots they idle (as KL302 weighs them)."""
    groups: dict[tuple[int, int, tuple[int, ...]], list[Loop]] = defaultdict(list)
    for e in result.events:
        if isinstance(e, Loop):
            groups[(e.span.line, e.span.column, e.via)].append(e)
    out: list[Cost] = []
    for (line, _col, _via), evs in groups.items():
        waste = np.zeros(lane_slots.shape)
        for e in evs:
            ts = trip_spread(e.trips, e.mask)
            if not ts.split.any():
                continue
            work = e.work if e.work is not None else ts.hi * max(e.body_cost, 1)
            per_iter = np.where(ts.hi > 0, work / np.maximum(ts.hi, 1), 0)
            waste += np.where(ts.split, ts.idle * per_iter, 0).sum(axis=-1)
        if waste.any():
            share = float((waste / np.maximum(lane_slots, 1)).min())
            out.append((share, line, "lanes run the loop for different numbers of iterations", evs[0].deps,
                        share >= WARN_FRACTION))  # (KL302's warning, remainders aside: they split one warp)
    return out


def _branch_costs(result: KernelResult) -> tuple[list[Cost], bool]:
    """Each branch that splits warps, with the lane-slots its idle lanes cost (KL301's measure), and
    whether one of them is a sweep that moves by a constant step with its loop (a wavefront, a halo)."""
    out: list[Cost] = []
    sweep = False
    for site in branch_sites(result):
        v = classify_branch(site, result)
        if v is None:
            continue
        if v.split_at and not v.halving and "sweep" in v.reason:
            sweep = True
            var = v.split_at.split(" = ")[0]
            words = f"a sweep: the working lanes move with `{var}`"
        elif v.split_at and v.halving:
            words = "the last steps of a halving or doubling loop"
        elif site.returns and not site.events:
            words = "an early return"
        else:
            words = "a branch that splits warps"
        out.append((v.fraction, site.first.span.line, words, site.first.deps, v.severity is Severity.WARNING))
    return out, sweep


def _uncertain_loop(result: KernelResult, average: float) -> tuple[int, str] | None:
    """A loop whose trip count kernlint does not know (sampled values, loaded data, cut at the iteration
    cap) and whose lanes are busier than `average` (of the threads that exist): more of its iterations
    would lift the kernel's average, so a low average is no fact. (line, why) of the first, or None."""
    sampled = {name for name, _v in result.assumed}
    threads = int(np.prod(result.shape.block))
    for e in result.events:
        if not isinstance(e, Loop):
            continue
        known = sorted(d for d in e.deps if d in sampled)
        if not (e.truncated or known):
            continue
        lanes = np.asarray(e.mask, dtype=bool).sum(axis=-1)
        reached = lanes[lanes > 0]
        if not reached.size:
            continue
        present = min(WARP, threads)
        if float(reached.mean()) * WARP / present >= average:
            why = (f"it depends on {', '.join(f'`{d}`' for d in known)}, sampled" if known
                   else "its trip count was not evaluated to its end")
            return e.span.line, why
    return None


def check_kernel_lanes(result: KernelResult) -> Iterator[Diagnostic]:
    """KL306: the kernel's predicted average of active lanes per instruction is below 24 of 32."""
    kw = kernel_work(result)
    work = next((e for e in result.events if isinstance(e, Work)), None)
    if kw is None or work is None or not np.all(kw.ops > 0):
        return
    slots = _existing_slots(result, work.per_warp)
    if not np.all(slots > 0):
        return
    avg = kw.avg_active  # (S,) of 32 lanes per operation, as Nsight Compute counts
    avg_present = WARP * kw.lane_ops / slots  # the same with only the threads that exist as slots
    if float(avg.max()) >= NCU_ACTIVE_LANES or float(avg_present.max()) >= NCU_ACTIVE_LANES:
        return
    branches, sweep = _branch_costs(result)
    costs = sorted(branches + _loop_costs(result, kw.ops * WARP), key=lambda c: (-c[0], c[1]))
    costs = [c for c in costs if c[0] > 0]
    if not costs:
        return  # lanes idle for no branch or loop evaluated (data-dependent code is KL305's): no claim
    s = int(np.argmax(avg))  # the best sample: what holds in every sample
    unsure = _uncertain_loop(result, float(avg_present[s]))
    idle = 1.0 - float(avg[s]) / WARP
    # Sites that KL301/KL302 already report as warnings say what their idle lanes cost. The kernel is
    # reported as a whole only when the rest, the sites each minor on its own, still keep it below 24.
    # (Lanes a partial last warp never has are counted as present here, as above: KL404's.)
    warned = sum(c[0] for c in costs if c[4])
    if 1.0 - float(avg_present[s]) / WARP - warned <= 1.0 - NCU_ACTIVE_LANES / WARP:
        return
    shown = [c for c in costs if c[0] >= 0.005][:MAX_SITES_SHOWN] or costs[:1]  # (under 0.5 %: not named)
    listed = "; ".join(f"line {line}: {100 * share:.0f} % ({words}{'; its own warning' if w else ''})"
                       for share, line, words, _d, w in shown)
    empty = 1.0 - float(slots[s]) / float(kw.ops[s] * WARP)  # lanes a partial last warp never has
    where = (f"{100 * empty:.0f} % in lanes the block's last warp never has (KL404), and by site: {listed}"
             if empty > 0 else f"by site: {listed}")
    message = (f"the kernel keeps few lanes busy: its warps average {float(avg[s]):.1f} of 32 active lanes per "
               f"instruction (predicted), below the {NCU_ACTIVE_LANES:.0f} at which Nsight Compute's "
               f"thread-divergence rule fires; {100 * idle:.0f} % of the lane-slots idle, {where}")
    notes = [f"the idle lane-slots by site (share of all the block's lane-slots, the cheapest sample): {listed}"]
    if len(costs) > len(shown):
        rest = sum(c[0] for c in costs[len(shown):])
        notes.append(f"and {len(costs) - len(shown)} more site{'s' if len(costs) - len(shown) > 1 else ''} "
                     f"({100 * rest:.0f} % together)")
    notes.append("each site alone is minor (a sweep that no remapping packs tighter is an info of KL301), or "
                 "its own warning does not account for the rest: together they decide how much of the machine "
                 "the kernel uses")
    threads = int(np.prod(result.shape.block))
    if threads % WARP:
        notes.append(f"the block's {threads} threads leave {WARP - threads % WARP} lanes of its last warp empty "
                     f"(KL404); counted as present here, the average would be {float(avg_present[s]):.1f}")
    fixes = ["more independent work per warp: give each warp several tiles or problems (a batch of "
             "independent tiles, several rows of the grid), so that lanes idle in one are busy in another"]
    if sweep:
        fixes += ["fewer threads per block for the wavefront: size the block to the widest anti-diagonal or halo "
                  "step the work really has, or let the block shrink with the work (a smaller tile for the "
                  "triangles at the ends)",
                  "process several anti-diagonals (or steps) at once: each thread computes a short run of cells "
                  "along its row or column, so a step keeps more lanes busy and there are fewer steps"]
    notes.append("fix (for the kernel as a whole): " + " | ".join(fixes))
    metrics = {"avg_active_lanes": round(float(avg[s]), 2),
               "avg_active_lanes_worst": round(float(avg.min()), 2),
               "idle_fraction": round(idle, 4),
               "sites": [{"line": line, "idle_fraction": round(share, 4)} for share, line, _w, _d, _x in costs]}
    severity = KL306.severity
    if unsure is not None:
        line, why = unsure
        severity = Severity.INFO
        notes.insert(0, f"severity info: the average depends on the trip count of the loop at line {line} ({why}), "
                        f"which runs with more active lanes than the kernel's average: with more iterations the "
                        f"average rises, and it may not stay below {NCU_ACTIVE_LANES:.0f}")
    fn = result.kernel
    deps = frozenset().union(*(c[3] for c in costs))
    yield Diagnostic(
        path=result.path, line=fn.span.line, column=fn.span.column, code=KL306.code, name=KL306.name,
        severity=severity, message=message, kernel=fn.name, notes=tuple(notes),
        assumptions=result.assumptions(deps), metrics=metrics,
    )


KL306 = Rule("KL306", "low-active-lanes",
             "the kernel averages fewer than 24 of 32 active lanes per instruction (its divergence as a whole)",
             Severity.WARNING, check_kernel_lanes, category="control-flow")
RULES = (KL306,)
