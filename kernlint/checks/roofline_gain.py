"""What fixing one coalescing finding buys on its kernel's roofline (issue 19, seed 001).

For a KL101/KL102/KL103 finding, the kernel's global bytes per thread are recomputed with that one
access moved in the fewest sectors (its ideal bytes), everything else unchanged; the intensity, the
bound and the attainable fraction of peak follow from the same roofline (kernlint.checks.roofline). The
speed-up is the ratio of attainable FLOP/s after and before, which for a kernel that stays
memory-bound is the ratio of bytes: an upper bound, since caches are not modelled (the bytes are
L1/L2 requests) and a kernel can be limited by latency rather than bandwidth.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from kernlint.base.diagnostics import Diagnostic
from kernlint.checks.roofline import Roofline, percent_of_peak

COALESCING_CODES = {"KL101": "load", "KL102": "store", "KL103": None}
MIN_SPEEDUP = 1.01  # below this the note would only say "nothing"


def _gain(d: Diagnostic, row: Roofline) -> dict[str, object] | None:
    kind = COALESCING_CODES[d.code]
    mine = [(real, ideal) for line, col, k, real, ideal in row.sites
            if line == d.line and col == d.column and (kind is None or k == kind)]
    if not mine or row.bytes <= 0:
        return None
    # A load whose sectors L1 partly serves (reuse across its loop, checks/l1_reuse.py): what the fix
    # saves is what leaves L1 beyond the ideal, and the kernel's bytes count that site's misses only.
    fraction = float(d.metrics.get("l1_miss_fraction", 1.0))  # type: ignore[arg-type]
    served = sum(real * (1.0 - fraction) for real, _ideal in mine)
    before = row.bytes - served
    saved = sum(real * fraction - ideal for real, ideal in mine)
    if saved <= 0 or before <= 0:
        return None
    after = max(before - saved, 1e-9)
    ridge = row.ridge()
    i0 = row.flops / before
    i1 = row.flops / after
    f0 = min(1.0, i0 / ridge)
    f1 = min(1.0, i1 / ridge)
    speedup = f1 / f0 if f0 > 0 else before / after
    if speedup < MIN_SPEEDUP:
        return None
    return {
        "launch": row.launch, "arch": row.arch, "gpu": row.gpu,
        "bytes_per_thread": round(before, 4), "bytes_per_thread_after_fix": round(after, 4),
        "intensity": round(i0, 4), "intensity_after_fix": round(i1, 4),
        "bound": "compute" if i0 >= ridge else "memory", "bound_after_fix": "compute" if i1 >= ridge else "memory",
        "attainable_fraction": round(f0, 4), "attainable_fraction_after_fix": round(f1, 4),
        # Rounded once, from the unrounded fraction, as the --statistics table rounds it (percent_of_peak).
        "attainable_percent": percent_of_peak(f0), "attainable_percent_after_fix": percent_of_peak(f1),
        "speedup_bound": round(speedup, 3), "trip_counts_known": row.trips_known,
        "unknown_trip_loops": tuple(line for line, trips in row.loops if trips is None),
        "l1_served_bytes_per_thread": round(served, 4),
    }


def _note(g: dict[str, object]) -> str:
    if g["flops_known"]:
        bound = (f"stays {g['bound']}-bound" if g["bound"] == g["bound_after_fix"]
                 else f"{g['bound']}-bound -> {g['bound_after_fix']}-bound")
        where = (f"intensity {g['intensity']:.3g} -> {g['intensity_after_fix']:.3g} FLOP/B, "
                 f"{bound} on {g['arch']} ({g['gpu']}): attainable "
                 f"{g['attainable_percent']:.1f} % -> {g['attainable_percent_after_fix']:.1f} % of peak")
    else:
        where = "the kernel does no floating-point arithmetic, so it is memory-bound throughout"
    loops = g["unknown_trip_loops"]
    # Bytes and FLOPs of a loop not run to its end cover the evaluated iterations only: the ratios hold,
    # the absolute figures do not (the roofline table says the same with its `*`).
    over = (f" over the evaluated iterations (the trip count of the loop at line{'s' if len(loops) > 1 else ''} "
            f"{', '.join(map(str, loops))} is unknown)" if loops else "")
    caches = ("this access's L1 hits across its loop are not counted, other caches not modelled"
              if float(g.get("l1_served_bytes_per_thread") or 0) > 0 else "caches not modelled")  # type: ignore[arg-type]
    return (f"what fixing it buys: the kernel's global bytes per thread{over} fall from {g['bytes_per_thread']:g} to "
            f"{g['bytes_per_thread_after_fix']:g} ({where}); up to {g['speedup_bound']:.3g}x faster if bandwidth "
            f"limits it (roofline, {caches}: rules/roofline.md)")


def with_gains(diagnostics: Sequence[Diagnostic], rows: Iterable[Roofline]) -> list[Diagnostic]:
    """`diagnostics` with a roofline gain note and metric on each coalescing finding it applies to.

    When a kernel was evaluated under several launch shapes, the shape where the fix saves the most
    bytes is used (it is named in the metric).
    """
    by_kernel: dict[tuple[str, str], list[Roofline]] = {}
    for r in rows:
        by_kernel.setdefault((r.path, r.kernel), []).append(r)
    out = []
    for d in diagnostics:
        if d.code not in COALESCING_CODES or not d.kernel:
            out.append(d)
            continue
        gains = [g for r in by_kernel.get((d.path, d.kernel), ()) if (g := _gain(d, r)) is not None]
        if not gains:
            out.append(d)
            continue
        best = max(gains, key=lambda g: (float(g["bytes_per_thread"]) - float(g["bytes_per_thread_after_fix"]),
                                         float(g["speedup_bound"])))
        best["flops_known"] = float(best["intensity"]) > 0
        metrics = dict(d.metrics)
        hidden = ("flops_known", "unknown_trip_loops", "attainable_percent", "attainable_percent_after_fix")
        metrics["roofline_gain"] = {k: v for k, v in best.items() if k not in hidden}
        out.append(replace(d, notes=(*d.notes, _note(best)), metrics=metrics))
    return out
