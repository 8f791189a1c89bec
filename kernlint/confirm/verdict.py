"""Verdicts: what the GPU's trace says of each static finding (confirmed, refuted, not run), and the per-site
summaries it is judged by.
"""
from __future__ import annotations

import dataclasses
import posixpath
import re
from typing import Any

import numpy as np

from kernlint.confirm.model import (
    _LOADED,
    _SHOWN,
    MAXSEQ,
    FilePlan,
    KernelRun,
    _bits,
    _confirmable,
    _mark,
    NOT_RUN_REASONS,
    _run_category,
)
from kernlint.base.diagnostics import Diagnostic
from kernlint.eval import events as ev
from kernlint.eval.asm_memory import NOTE_PREFIX as ASM_NOTE
from kernlint.eval.async_copy import NOTE_PREFIX as ASYNC_NOTE
from kernlint.eval.result import KernelResult
from kernlint.ir.known_cub import is_cub


def _loop_entries(mask: np.ndarray, ballot: np.ndarray, count: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split each warp's condition records into loop entries: per entry (trips, entry mask), (2, W, 32).

    A record holds the lanes that evaluated the condition together and those for which it held.
    An entry ends when a lane that already left (its condition was false) evaluates it again: the
    loop was entered anew (an inner loop inside an outer one).
    """
    S, W = count.shape
    per_warp: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
    longest = 0
    for s in range(S):
        for w in range(W):
            n = int(min(count[s, w], mask.shape[-1]))
            entries: list[tuple[np.ndarray, np.ndarray]] = []
            state = np.zeros(32, dtype=np.int8)  # 0 outside, 1 iterating, 2 left
            trips = np.zeros(32, dtype=np.int64)
            entry = np.zeros(32, dtype=bool)
            for q in range(n):
                m = _bits(mask[s, w, q])
                b = _bits(ballot[s, w, q]) & m
                if entry.any() and np.any(m & (state == 2)):
                    entries.append((trips, entry))
                    state = np.zeros(32, dtype=np.int8)
                    trips = np.zeros(32, dtype=np.int64)
                    entry = np.zeros(32, dtype=bool)
                entry |= m & (state == 0)
                trips += b
                state = np.where(m, np.where(b, 1, 2), state).astype(np.int8)
            if entry.any():
                entries.append((trips, entry))
            per_warp[(s, w)] = entries
            longest = max(longest, len(entries))
    out = []
    for i in range(longest):
        trips_a = np.zeros((S, W, 32), dtype=np.int64)
        mask_a = np.zeros((S, W, 32), dtype=bool)
        for (s, w), entries in per_warp.items():
            if i < len(entries):
                trips_a[s, w], mask_a[s, w] = entries[i]
        out.append((trips_a, mask_a))
    return out


def site_summary(measured: KernelResult, line: int, column: int) -> dict[str, Any]:
    """Measured numbers for one site, whatever the rules said: sectors, banks, divergence."""
    from kernlint.checks.coalescing import site_costs

    out: dict[str, Any] = {}
    for kind in ("load", "store"):
        for cost in site_costs(measured, kind):
            if (cost.first.span.line, cost.first.span.column) == (line, column):
                out.update({"measured_sectors": cost.sectors, "measured_ideal_sectors": cost.ideal,
                            "measured_ratio": round(cost.ratio, 3), "measured_requests": cost.requests,
                            "measured_active_lanes": cost.active_lanes})
                return out
    accesses = [e for e in measured.events if isinstance(e, ev.MemoryAccess) and e.space == "shared"
                and (e.span.line, e.span.column) == (line, column)]
    if accesses:
        out.update(_shared_summary(accesses))
        return out
    branches = [e for e in measured.events if isinstance(e, ev.Branch)
                and (e.span.line, e.span.column) == (line, column)]
    if branches:
        div = 0
        total = 0
        for b in branches:
            m = b.mask
            live = m.any(axis=-1)
            if b.arms is not None:  # a switch: lanes of one warp in different cases
                big = np.iinfo(np.int64).max
                lo = np.where(m, b.arms, big).min(axis=-1)
                hi = np.where(m, b.arms, -big).max(axis=-1)
                div += int(((lo != hi) & live).sum())
            else:
                taken = (b.cond & m).any(axis=-1)
                not_taken = (~b.cond & m).any(axis=-1)
                div += int((taken & not_taken & live).sum())
            total += int(live.sum())
        out.update({"measured_divergent_requests": div, "measured_requests": total})
    return out


def site_totals(measured: KernelResult, line: int, column: int, sample: int | None = None) -> dict[str, Any]:
    """Totals over every traced request at a site, per access kind: global sectors (and ideal) or shared
    wavefronts (and ideal). These are what Nsight Compute counts per instruction (`--confirm=ncu`),
    when only the sampled blocks run and no site was reached more than MAXSEQ times per warp."""
    from kernlint.model.metrics import global_sectors, shared_wavefronts

    out: dict[str, Any] = {}
    for e in measured.events:
        if not isinstance(e, ev.MemoryAccess) or (e.span.line, e.span.column) != (line, column):
            continue
        live = e.mask.any(axis=-1)
        if sample is not None and live.ndim >= 1 and live.shape[0] > sample:
            keep = np.zeros(live.shape, dtype=bool)
            keep[sample] = True
            live = live & keep
        if e.space == "global":
            sec, ideal = global_sectors(e.address, e.mask, e.width)
            key = f"measured_{e.kind}_sectors_total"
            out[key] = out.get(key, 0) + int(sec[live].sum())
            out[key.replace("_total", "_ideal_total")] = out.get(key.replace("_total", "_ideal_total"), 0) + \
                int(ideal[live].sum())
        elif e.space == "shared":
            _ways, wf, idl = shared_wavefronts(e.address, e.mask, e.width)
            key = f"measured_{e.kind}_wavefronts_total"
            out[key] = out.get(key, 0) + int(wf[live].sum())
            out[key.replace("_total", "_ideal_total")] = out.get(key.replace("_total", "_ideal_total"), 0) + \
                int(idl[live].sum())
    return out


def _shared_summary(accesses: list[ev.MemoryAccess]) -> dict[str, Any]:
    """Worst bank-conflict degree and wavefronts over the measured requests.

    The same model as KL201 (`metrics.shared_wavefronts`: 8-byte accesses in two half-warp phases,
    16-byte in four quarter-warp phases), so measured and predicted numbers compare like for like.
    """
    from kernlint.model.metrics import shared_wavefronts

    worst = 0
    total = 0
    wavefronts = 0
    ideal = 0
    for e in accesses:
        ways, wf, idl = shared_wavefronts(e.address, e.mask, e.width)
        live = e.mask.any(axis=-1)
        total += int(live.sum())
        if live.any():
            worst = max(worst, int(ways[live].max()))
            wavefronts += int(wf[live].sum())
            ideal += int(idl[live].sum())
    return {"measured_bank_conflict_degree": worst, "measured_requests": total,
            "measured_wavefronts": wavefronts, "measured_ideal_wavefronts": ideal}


def apply_results(diagnostics: list[Diagnostic], plans: list[FilePlan], results: list[Any],
                  notes: list[str]) -> list[Diagnostic]:
    """Set `confirmation` and `measured_*` metrics on each finding; add found-by-confirm ones."""
    from kernlint.engine.suppress import parse_suppressions

    by_path = {p.path: p for p in plans}
    out: list[Diagnostic] = []
    for d in diagnostics:
        plan = by_path.get(d.path)
        if not _confirmable(d):
            out.append(d)
            continue
        if plan is None or plan.instrumented is None:
            why = plan.problem if plan else "file not analysed"
            out.append(_mark(d, "not-run", {"confirm_not_run": "no-launch"}, f"not run on a GPU: {why}"))
            continue
        if d.code.startswith("KL4"):
            out.append(_occupancy_verdict(d, plan))
            continue
        out.append(_verdict(d, plan))
    # Found by confirmation: a rule fires on measured events at a traced site, statically silent.
    static_all: set[tuple[str, int, int, str]] = set()
    for r in results:
        static_all.update((r.path, d.line, d.column, d.code) for d in r.diagnostics)
    static_all.update((d.path, d.line, d.column, d.code) for d in diagnostics)
    # A finding grouped by root cause predicted its related sites too (kernlint/checks/grouping.py).
    for d in [*diagnostics, *(x for r in results for x in r.diagnostics)]:
        for rel in (d.metrics or {}).get("related_locations") or ():
            if isinstance(rel, dict) and "line" in rel and "column" in rel:
                static_all.add((d.path, int(rel["line"]), int(rel["column"]), d.code))
    added: set[tuple[str, int, int, str]] = set()
    for plan in plans:
        sup = parse_suppressions(plan.text) if plan.runs else ()
        for run in plan.runs:
            for md in run.measured_diags:
                key = (plan.path, md.line, md.column, md.code)
                if key in static_all or key in added or (md.line, md.column) not in run.traced_spans:
                    continue
                if (md.line, md.column, md.code) in run.static_keys:
                    continue  # the static rules predict it for this very evaluation (the engine left it out)
                if run.result.odd_offset is not None or run.result.regions:
                    continue  # a partial re-evaluation (an odd offset, re-sampled regions): run to judge the
                    # findings it adds, its other measurements are not comparable with what the engine reports
                if any(s.covers(md) for s in sup) or not _agrees_across_guesses(plan, run, md):
                    continue
                if run.data_dependent or run.refit or run.hung:
                    continue  # zeroed inputs decide some addresses or branches, the sizes are not the
                    # static ones, or the trace stops at a hang: no claim of its own
                added.add(key)
                summary = {f"measured_{k}": v for k, v in md.metrics.items() if _numeric(v)}
                if run.measured is not None:
                    summary.update(site_totals(run.measured, md.line, md.column))
                summary["measured_trace_complete"] = (md.line, md.column) not in run.truncated_spans
                summary["confirm_run"] = run.id
                out.append(dataclasses.replace(
                    md, confirmation="found-by-confirm", metrics=summary,
                    notes=(*md.notes, (f"measured on {run.device or 'the GPU'} with {_launch_text(run)}; "
                                       "the static analysis did not predict it"))))
    # One line per kernel that could not be run (so the user knows which findings stay unconfirmed).
    for plan in plans:
        if plan.problem:
            notes.append(f"{plan.path}: --confirm not run: {plan.problem}")
        if plan.instrumented is not None and plan.instrumented.skipped:
            for site, why in plan.instrumented.skipped[:5]:
                notes.append(f"{plan.path}:{site.span.line}:{site.span.column}: not traced: {why}")
        for run in plan.runs:
            if run.status == "compile-error":
                notes.append(f"{plan.path}: {run.name_expr}: rejected by the GPU compiler: {run.reason[:300]}")
            elif run.status in ("not-run", "error"):
                notes.append(f"{plan.path}: {run.name_expr}: not run on the GPU: {run.reason[:300]}")
    return out


def _agrees_across_guesses(plan: FilePlan, run: KernelRun, md: Diagnostic) -> bool:
    """The engine's rule for guessed launch shapes, applied to measurements.

    When every shape of a kernel is a guess (the default 2-D shapes), the static analysis keeps a
    finding only if all shapes produce it (`engine.combine`); a measured finding is held to the
    same standard, so a guess can never be the only reason for a found-by-confirm either.
    """

    runs = [r for r in plan.runs if r.result.kernel.name == run.result.kernel.name]
    if len(runs) < 2 or not all(r.result.shape.guess for r in runs):
        return True
    key = (md.line, md.column, md.code)
    return all(r.status == "ok" and any((m.line, m.column, m.code) == key for m in r.measured_diags)
               for r in runs)


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float, bool, np.integer, np.floating))


def _launch_text(run: KernelRun) -> str:
    assert run.spec is not None
    b, g = run.spec["block"], run.spec["grid"]
    vals = ", ".join(f"{k}={v}" for k, v in run.spec.get("values", {}).items() if not isinstance(v, str))
    text = f"block ({b[0]}, {b[1]}, {b[2]}), grid ({g[0]}, {g[1]}, {g[2]})"
    return text + (f", {vals}" if vals else "")


_INLINED = re.compile(r"the access is in .* at ([^\s:]+):\d+, inlined here")


# Accesses the instrumentation cannot wrap in the source (made by a call or an asm statement it does not
# rewrite), by the note their findings carry: the NOT_RUN_REASONS key that says so.
_UNTRACED_ACCESSES = ((ASYNC_NOTE, "async-copy"), (ASM_NOTE, "inline-asm"))


def in_library_model(d: Diagnostic, stubbed: tuple[str, ...]) -> bool:
    """Whether `d`'s access is inside kernlint's model of a missing library header (the CUB stub,
    kernlint/ir/known_cub.py), `stubbed` being the includes its unit read as stubs. On a GPU the real
    library is compiled instead, and what it does inside is not traced: such a finding is not judged."""
    models = {posixpath.basename(n.replace("\\", "/")) for n in stubbed if is_cub(n)}
    if not models:
        return False
    return any((m := _INLINED.search(n)) is not None and m.group(1) in models for n in d.notes)


def _verdict(d: Diagnostic, plan: FilePlan) -> Diagnostic:
    runs = [r for r in plan.runs if r.result.kernel.name == d.kernel]
    if not runs:
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"}, "not run on a GPU: no launch shape for this kernel")
    for prefix, reason in _UNTRACED_ACCESSES:
        if any(n.startswith(prefix) for n in d.notes):
            return _mark(d, "not-run", {"confirm_not_run": reason}, "not run on a GPU: " + NOT_RUN_REASONS[reason])
    if any(r.result.unit is not None and in_library_model(d, r.result.unit.stubbed) for r in runs):
        return _mark(d, "not-run", {"confirm_not_run": "library-model"},
                     "not run on a GPU: " + NOT_RUN_REASONS["library-model"])
    lane_data = any("data-dependent branch" in a for a in d.assumptions)
    loaded = any(_LOADED.search(a) for a in d.assumptions)
    if lane_data or (loaded and not all(r.seeded for r in runs)):
        # (the phrases of result.assumptions and eval/uniform_data.py: a branch decided by lane-varying
        # loaded data, an address computed from a value or a pointer loaded from memory.) A uniform
        # load is reproduced when the run seeded it (confirm/seeding.py); lane-varying data never is.
        why = next((r.unseeded for r in runs if r.unseeded), "") if not lane_data else ""
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     "not judged on a GPU: it depends on values loaded from memory (a branch or a stride), and "
                     "the synthesized inputs are zeros" + (f" ({why[:200]})" if why else ""))
    ok = [r for r in runs if r.status == "ok" and r.measured is not None]
    if not ok:
        failed = next((r for r in runs if r.reason), runs[0])
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed)},
                     f"not run on a GPU: {(failed.reason or 'not run')[:300]}")
    key = (d.line, d.column, d.code)
    relevant = [r for r in ok if key in r.static_keys]
    if not relevant and not any(r.refit for r in ok) and any((d.line, d.column) in r.traced_spans for r in ok):
        # No run was made under the shape and samples that predict it (a run at other values would
        # judge another pattern: an odd offset's misalignment against an aligned launch).
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"},
                     "not run on a GPU: no launch ran with the shape and sampled values this finding was "
                     "predicted under")
    # The engine reports a finding of the first evaluation over the same one from a re-evaluation
    # (engine.combine: regions and odd offsets add only what the first samples did not show).
    relevant = [r for r in relevant if not r.result.regions and r.result.odd_offset is None] or relevant or ok
    traced = [r for r in relevant if (d.line, d.column) in r.traced_spans]
    # A run at refit sizes judges a finding only where the static analysis at those sizes predicts it
    # too (a stride of 4096 floats and one of 64 are different patterns).
    refit = [r for r in traced if r.refit and key not in r.static_keys]
    traced = [r for r in traced if r not in refit]
    if not traced and refit:
        return _mark(d, "not-run", {"confirm_not_run": "size" if "fit the buffers" in refit[0].refit else "fault"},
                     f"not run on a GPU at the static sizes: {refit[0].refit}; at those sizes the static analysis "
                     "does not predict this finding, so the run cannot judge it")
    loaded_branches = sorted({st.key[0] for r in relevant for st in r.result.coverage
                              if not st.evaluated and st.why[0] == "loaded" and st.key[-1] == "branch"})
    if not traced and loaded_branches:
        # Control flow decided by loaded values: on zeroed inputs the site may never run.
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     f"not run on a GPU: the site did not execute on zeroed inputs, and branches of the kernel "
                     f"depend on loaded data (line {', '.join(map(str, loaded_branches[:3]))})")
    cut_loops = sorted({e.span.line for r in relevant for e in r.result.events
                        if isinstance(e, ev.Loop) and e.truncated and e.span.line <= d.line <= e.span.end_line})
    if not traced and cut_loops:
        # The static analysis assumed iterations of an enclosing loop it did not run to its end (a trip
        # count from loaded data, `while (*residual > tol)`): on the GPU's inputs the loop need not run.
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     "not run on a GPU: the site did not execute on the synthesized inputs, and the static "
                     f"analysis assumed iterations of the loop at line {cut_loops[0]}, whose trip count it did "
                     "not evaluate to its end")
    if not traced and any(r.data_dependent for r in relevant):
        why = next(r.data_dependent for r in relevant if r.data_dependent)
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     f"not run on a GPU: the site did not execute on zeroed inputs; {why[:200]}")
    if not traced and any(r.hung for r in relevant):
        return _mark(d, "not-run", {"confirm_not_run": "fault"}, "not run on a GPU: the kernel hung before this "
                     "site ran (the trace stops at the hang)")
    if not traced:
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"}, "not run on a GPU: this site was not traced "
                     "(the rewrite could not place a probe there, or it never executed)")
    errors = [r.rule_errors[d.code] for r in traced if d.code in r.rule_errors]
    if errors:
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"}, "not run on a GPU: the rule could not evaluate the measured events "
                     f"({errors[0][:200]})")
    verdicts = []
    measured: dict[str, Any] = {}
    for r in traced:
        hit = next((m for m in r.measured_diags if (m.line, m.column, m.code) == key), None)
        verdicts.append(hit is not None)
        assert r.measured is not None
        summary = site_summary(r.measured, d.line, d.column)
        if hit is not None:
            # The rule's own numbers on the measured events are the comparable ones; the generic
            # summary only adds what the rule does not report.
            ruled = {f"measured_{k}": v for k, v in hit.metrics.items() if _numeric(v)}
            if any(k in ruled for k in ("measured_ways", "measured_wavefronts")):
                summary.pop("measured_bank_conflict_degree", None)
            summary.update(ruled)
        if not measured:
            measured = summary
    run = traced[0]
    assert run.measured is not None
    if run.hung and d.code not in ("KL303", "KL304"):
        return _mark(d, "not-run", {"confirm_not_run": "fault"},
                     "not run on a GPU: the kernel hung; only its barriers and collectives were judged from the "
                     "trace recorded up to the hang")
    measured.update(site_totals(run.measured, d.line, d.column))
    measured["measured_trace_complete"] = (d.line, d.column) not in run.truncated_spans
    measured["confirm_run"] = run.id
    status = "confirmed" if all(verdicts) else "refuted"
    if status == "refuted" and any((d.line, d.column) in r.truncated_spans for r in traced):
        # The trace holds a warp's first requests at this site only (a loop whose early iterations are
        # aligned, `data[i * M + j2]` from j2 = j1): silence in a prefix is no evidence against it.
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"},
                     f"not judged on a GPU: the trace kept only the first {run.spec.get('maxseq', MAXSEQ) if run.spec else MAXSEQ} "
                     "requests per warp at this site, and they do not show the pattern; the later ones were not "
                     "recorded")
    shown = ", ".join(f"{k.removeprefix('measured_')} {v}" for k, v in measured.items()
                      if k in _SHOWN)
    # The reporters list every measured_* number; this note says where and how it was measured.
    note = f"measured on {run.device or 'the GPU'} with {_launch_text(run)}" + (f": {shown}" if shown else "")
    if run.refit:
        note += f" ({run.refit})"
    if run.hung:
        note += " (the kernel hung there, as a barrier or collective that not all lanes reach may: measured up to the hang)"
    if run.redirected:
        note += (f" ({run.redirected} accesses fell outside the synthesized buffers and went to a scratch "
                 "buffer; their addresses were still traced)")
    return _mark(d, status, measured, note)


def _occupancy_verdict(d: Diagnostic, plan: FilePlan) -> Diagnostic:
    """KL4xx from the compiled kernel: attributes, the occupancy query, the launch itself."""
    runs = [r for r in plan.runs if r.result.kernel.name == d.kernel]
    if d.code == "KL405":
        # The static limit is enforced by ptxas/the launch: a rejection confirms, a clean run refutes.
        rejected = next((r for r in runs if r.status in ("compile-error", "error", "fault")
                         and "shared" in r.reason.lower()), None)
        if rejected is not None:
            return _mark(d, "confirmed", {"measured_rejected": True},
                         f"confirmed: the GPU toolchain rejects the kernel: {rejected.reason[:200]}")
        ran = next((r for r in runs if r.status == "ok"), None)
        if ran is not None:
            return _mark(d, "refuted", {"measured_shared_bytes": ran.attributes.get("shared_size_bytes")},
                         f"refuted: the kernel compiled and ran on {ran.device}")
        failed = next((r for r in runs if r.reason), None)
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed) if failed else "no-launch"},
                     "not run on a GPU: " + (failed.reason if failed else "no run"))
    if d.code == "KL404":
        block = d.metrics.get("block_size")
        for r in runs:
            if r.status != "ok" or r.measured is None or r.result.shape.threads != block:
                continue
            lanes = _last_warp_lanes(r.measured)
            if lanes is None:
                continue
            expected = int(block) % 32 if block else 0
            status = "confirmed" if lanes == expected else "refuted"
            return _mark(d, status, {"measured_last_warp_lanes": lanes},
                         f"{status} on {r.device}: the last warp of a {block}-thread block ran {lanes} active lanes")
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"}, "not run on a GPU: no traced run with this block size")
    ok = [r for r in runs if r.status == "ok" and r.attributes.get("num_regs") is not None]
    if not ok:
        failed = next((r for r in runs if r.reason), None)
        why = failed.reason if failed else "no compiled kernel attributes"
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed) if failed else "no-launch"},
                     f"not run on a GPU: {why[:200]}")
    run = ok[0]
    a = run.attributes
    measured: dict[str, Any] = {"measured_registers": a["num_regs"], "measured_local_bytes": a.get("local_size_bytes"),
                                "measured_shared_bytes": a.get("shared_size_bytes")}
    threads = run.result.shape.threads
    occ = None
    if a.get("active_blocks") is not None and a.get("max_threads_per_sm"):
        occ = a["active_blocks"] * threads / a["max_threads_per_sm"]
        measured["measured_active_blocks"] = a["active_blocks"]
        measured["measured_occupancy"] = round(occ, 4)
    if d.code == "KL402":
        status = "confirmed" if (a.get("local_size_bytes") or 0) > 0 else "refuted"
    elif d.code == "KL401":
        threshold = float(d.metrics.get("threshold") or 0.5)
        status = "not-run" if occ is None else ("confirmed" if occ < threshold else "refuted")
    elif d.code == "KL403":
        # A cliff is a claim about the register count: confirmed when the compiled kernel has it.
        status = "confirmed" if d.metrics.get("registers") in (None, a["num_regs"]) else "refuted"
    else:
        status = "not-run"
    if status == "not-run":
        measured["confirm_not_run"] = "not-traced"  # compiled, but the occupancy query gave nothing
    arch_note = ""
    if d.metrics.get("arch") and run.device and f"({d.metrics['arch']})" not in run.device:
        arch_note = f" (predicted for {d.metrics['arch']}, measured on {run.device})"
    text = (f"{status} from the compiled kernel on {run.device or 'the GPU'}: {a['num_regs']} registers, "
            f"{a.get('local_size_bytes', 0)} B local" + (f", occupancy {occ:.0%}" if occ is not None else "")
            + arch_note)
    return _mark(d, status, measured, text)


def _last_warp_lanes(measured: KernelResult) -> int | None:
    """Most active lanes the last warp of a block showed at any traced site."""
    best: int | None = None
    for e in measured.events:
        if isinstance(e, (ev.MemoryAccess, ev.Branch)) and e.mask.ndim == 3:
            lanes = int(e.mask[:, -1, :].sum(axis=-1).max())
            best = lanes if best is None else max(best, lanes)
    return best
