"""The roofline per kernel and launch: FLOPs and global bytes per thread, intensity, ridge, bound.

Model (Williams, Waterman, Patterson, "Roofline", CACM 2009): attainable FLOP/s =
min(peak FLOP/s, intensity x DRAM bandwidth), intensity = FLOPs / bytes moved. A kernel whose
intensity is below the ridge point (peak / bandwidth) is memory-bound. Every figure comes from
the evaluated warps: FLOPs from eval/flops.py (FMA = 2), bytes as the hardware moves them (32-byte
sectors per warp request, `kernlint.model.metrics.global_sectors`) and ideally (the same bytes in the
fewest sectors), both divided by the threads evaluated. Caches are not modelled: bytes are L1/L2
requests, an upper bound on DRAM traffic when data is reused. User documentation: rules/roofline.md.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kernlint.ir import nodes as ir
from kernlint.base.frozen import frozen

if TYPE_CHECKING:
    from kernlint.eval.result import KernelResult

# NumPy and the evaluator's modules are imported where the figures are computed (in the lint), so
# that a process only showing rows (cached results, the reporters) does not load them.


@frozen
class ArchPeak:
    """Peak throughput of the GPU that represents an architecture (vendor datasheet figures)."""

    gpu: str
    fp32_tflops: float
    fp64_tflops: float
    dram_gbs: float


# Boost-clock peaks without sparsity, from the vendor datasheets:
# sm_70 Tesla V100 SXM2 datasheet (15.7 / 7.8 TFLOP/s, 900 GB/s HBM2);
# sm_75 Tesla T4 datasheet (8.1 TFLOP/s FP32, 320 GB/s GDDR6; FP64 is 1/32 of FP32: 0.25);
# sm_80 A100 datasheet, SXM4 40GB (19.5 / 9.7 TFLOP/s, 1555 GB/s HBM2);
# sm_86 A10 datasheet (31.2 TFLOP/s FP32, 600 GB/s GDDR6; FP64 1/32: 0.98);
# sm_89 L4 datasheet (30.3 TFLOP/s FP32, 300 GB/s GDDR6; FP64 1/64: 0.49);
# sm_90 H100 SXM5 datasheet (67 / 34 TFLOP/s, 3350 GB/s HBM3).
ARCH_PEAKS: dict[str, ArchPeak] = {
    "sm_70": ArchPeak("Tesla V100-SXM2", 15.7, 7.8, 900.0),
    "sm_75": ArchPeak("Tesla T4", 8.1, 0.25, 320.0),
    "sm_80": ArchPeak("A100-SXM4-40GB", 19.5, 9.7, 1555.0),
    "sm_86": ArchPeak("A10", 31.2, 0.98, 600.0),
    "sm_89": ArchPeak("L4", 30.3, 0.49, 300.0),
    "sm_90": ArchPeak("H100-SXM5", 67.0, 34.0, 3350.0),
}
DEFAULT_ARCH = "sm_80"


def arch_peak(arch: str | None, override: tuple[float, float, float] | None = None) -> tuple[str, ArchPeak]:
    """The table entry for `arch` (sm_90a -> sm_90); the default architecture for unknown ones.

    `override` (config `roofline-peak = [FP32 TFLOP/s, FP64 TFLOP/s, DRAM GB/s]`) replaces the row."""
    key = (arch or DEFAULT_ARCH).lower().rstrip("af")
    if key not in ARCH_PEAKS:
        key = DEFAULT_ARCH
    if override is not None:
        return key, ArchPeak("configured roofline-peak", *override)
    return key, ARCH_PEAKS[key]


@frozen
class Roofline:
    """One kernel under one launch shape; per-thread figures are means over the evaluated threads."""

    kernel: str
    path: str
    line: int
    launch: str
    arch: str
    gpu: str
    fp32_flops: float
    fp64_flops: float
    bytes: float
    ideal_bytes: float
    loops: tuple[tuple[int, int | None], ...]  # (line, trips) per loop; None: not run to its end
    samples_differ: bool
    peak_figures: ArchPeak | None = None  # the peaks used; None: the table row of `arch`
    # Per global access site (line, column, kind): (bytes per thread as moved, ideal), same sample.
    sites: tuple[tuple[int, int, str, float, float], ...] = ()
    # The costs a pull request may change (`kernlint compare`), same sample: shared-memory wavefronts per
    # evaluated warp (as serialised, and conflict-free), the mean active lanes of the warps' operations
    # (None: no operation counted), and the template arguments the kernel was evaluated with.
    shared_wavefronts: float = 0.0
    ideal_shared_wavefronts: float = 0.0
    active_lanes: float | None = None
    binding: tuple[tuple[str, str], ...] = ()

    @property
    def flops(self) -> float:
        return self.fp32_flops + self.fp64_flops

    @property
    def trips_known(self) -> bool:
        return all(t is not None for _l, t in self.loops)

    def peak(self) -> ArchPeak:
        return self.peak_figures or ARCH_PEAKS[self.arch]

    @property
    def precision(self) -> str:
        return "fp64" if self.fp64_flops > self.fp32_flops else "fp32"

    def ridge(self) -> float:
        """FLOP per byte where the roofline turns: peak FLOP/s over DRAM bytes/s, for the dominant precision."""
        p = self.peak()
        tflops = p.fp64_tflops if self.precision == "fp64" else p.fp32_tflops
        return tflops * 1e12 / (p.dram_gbs * 1e9)

    def intensity(self, ideal: bool = False) -> float | None:
        b = self.ideal_bytes if ideal else self.bytes
        return self.flops / b if b > 0 else None

    def bound(self) -> str:
        i = self.intensity()
        return "compute" if i is None or i >= self.ridge() else "memory"

    def attainable_fraction(self, ideal: bool = False) -> float:
        """Attainable FLOP/s as a fraction of peak: min(1, intensity / ridge)."""
        i = self.intensity(ideal)
        return 1.0 if i is None else min(1.0, i / self.ridge())

    def to_dict(self) -> dict[str, object]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)
        return {
            "launch": self.launch,
            "arch": self.arch, "gpu": self.gpu,
            "flops_per_thread": r(self.flops),
            "fp32_flops_per_thread": r(self.fp32_flops), "fp64_flops_per_thread": r(self.fp64_flops),
            "bytes_per_thread": r(self.bytes), "ideal_bytes_per_thread": r(self.ideal_bytes),
            "intensity": r(self.intensity()), "ideal_intensity": r(self.intensity(ideal=True)),
            "ridge": r(self.ridge()), "bound": self.bound(),
            "attainable_fraction": r(self.attainable_fraction()),
            "trip_counts_known": self.trips_known,
            "loops": [{"line": ln, "trips": t} for ln, t in self.loops],
            "depends_on_samples": self.samples_differ,
            "shared_wavefronts_per_warp": r(self.shared_wavefronts),
            "ideal_shared_wavefronts_per_warp": r(self.ideal_shared_wavefronts),
            "active_lanes": r(self.active_lanes),
            "binding": dict(self.binding),
        }


def roofline(result: KernelResult, arch: str | None = None,
             override: tuple[float, float, float] | None = None) -> Roofline | None:
    """The roofline figures of one evaluated kernel, None when it has no evaluated thread."""
    import numpy as np

    from kernlint.eval import events as ev

    key, peak = arch_peak(arch, override)
    work = next((e for e in result.events if isinstance(e, ev.Work)), None)
    if work is None:
        return None
    samples, warps = work.per_warp.shape
    threads = min(warps * 32, result.shape.threads)
    if threads <= 0:
        return None
    flop = work.flops if work.flops is not None else np.zeros((2, samples, warps), dtype=np.int64)
    f32 = flop[0].sum(axis=-1) / threads
    f64 = flop[1].sum(axis=-1) / threads
    moved = np.zeros(samples)
    ideal = np.zeros(samples)
    loops: dict[int, int | None] = {}
    loop_events: dict[tuple[int, int], list[ev.Loop]] = {}
    per_site: dict[tuple[int, int, str], list[np.ndarray]] = {}
    traffic = _global_bytes(result.events)
    for e in result.events:
        if isinstance(e, ev.MemoryAccess) and e.space == "global":
            real_b, ideal_b = traffic[id(e)]
            moved += real_b
            ideal += ideal_b
            site = (e.span.line, e.span.column, "load" if e.kind == "load" else "store")
            acc = per_site.setdefault(site, [np.zeros(samples), np.zeros(samples)])
            acc[0] += real_b
            acc[1] += ideal_b
        elif isinstance(e, ev.Loop) and not e.via:
            trips = int(e.trips[e.mask].max()) if e.mask.any() else 0
            prev = loops.get(e.span.line, 0)
            loops[e.span.line] = None if e.truncated or prev is None else max(prev, trips)
            loop_events.setdefault((e.span.line, e.span.column), []).append(e)
    # A loop the evaluator stopped early (its iteration cap) with a constant trip count and a body
    # of straight-line arithmetic: the missing iterations are added from the body's FLOPs per lane.
    for (line, col), evs in loop_events.items():
        if len(evs) != 1 or not evs[0].truncated:
            continue
        node = _for_at(result.kernel, line, col)
        total = static_trips(node) if node is not None else None
        body = _straight_body_flops(node) if node is not None else None
        if total is None or body is None:
            continue
        e = evs[0]
        ran = e.trips.astype(np.int64)
        missing = np.where(e.mask, np.maximum(total - ran, 0), 0).sum(axis=(-1, -2))  # lane-iterations, (S,)
        f32 = f32 + missing * body[0] / threads
        f64 = f64 + missing * body[1] / threads
        loops[line] = total
    moved /= threads
    ideal /= threads
    # The sample with the most traffic per FLOP is reported (the conservative verdict); the figures
    # of every sample agree for most kernels, and `samples_differ` says when they do not.
    pick = int(np.argmax(moved)) if samples else 0
    differ = bool(np.ptp(f32) or np.ptp(f64) or np.ptp(moved))
    fn = result.kernel
    sites = tuple(sorted((line, col, kind, float(a[0][pick]) / threads, float(a[1][pick]) / threads)
                         for (line, col, kind), a in per_site.items()))
    wavefronts, ideal_wavefronts = _shared_wavefronts(result.events, samples)
    lanes = None
    if work.lanes is not None and float(work.per_warp[pick].sum()) > 0:
        lanes = float(work.lanes[pick].sum()) / float(work.per_warp[pick].sum())
    return Roofline(fn.name, result.path, fn.span.line, result.shape.describe(), key, peak.gpu,
                    float(f32[pick]), float(f64[pick]), float(moved[pick]), float(ideal[pick]),
                    tuple(sorted(loops.items())), differ, peak, sites,
                    float(wavefronts[pick]) / warps, float(ideal_wavefronts[pick]) / warps, lanes,
                    tuple(result.shape.bindings))


def _shared_wavefronts(events: "tuple[object, ...]", samples: int) -> "tuple[object, object]":
    """Shared-memory wavefronts of every evaluated warp request, summed per sample: as the banks serialise
    them and as a conflict-free request would take (`kernlint.model.metrics.shared_wavefronts`)."""
    import numpy as np

    from kernlint.eval import events as ev
    from kernlint.model.metrics import shared_wavefronts

    real = np.zeros(samples)
    ideal = np.zeros(samples)
    # Measured with one `shared_wavefronts` call per access width and shape, as `_global_bytes` does (each
    # warp request is measured on its own, and the sums are of integers: exact in any order).
    groups: dict[tuple[object, ...], list[ev.MemoryAccess]] = {}
    for e in events:
        if isinstance(e, ev.MemoryAccess) and e.space == "shared":
            groups.setdefault((e.width, e.address.shape), []).append(e)
    for (width, shape), group in groups.items():
        per = max(1, _BATCH_REQUESTS // max(1, int(np.prod(shape[:-1]))))  # accesses per call (bounds its arrays)
        for at in range(0, len(group), per):
            evs = group[at:at + per]
            mask = np.stack([np.broadcast_to(e.mask, shape) for e in evs])
            _ways, wf, best = shared_wavefronts(np.stack([e.address for e in evs]), mask, width)  # type: ignore[arg-type]
            live = mask.any(axis=-1)
            real += np.where(live, wf, 0).reshape(len(evs), samples, -1).sum(axis=-1).sum(axis=0)
            ideal += np.where(live, best, 0).reshape(len(evs), samples, -1).sum(axis=-1).sum(axis=0)
    return real, ideal


def _for_at(fn: ir.Function, line: int, col: int) -> ir.For | None:
    for n in ir.walk(fn.body):
        if isinstance(n, ir.For) and n.span.line == line and n.span.column == col:
            return n
    return None


def _lit(e: object) -> int | None:
    while isinstance(e, ir.Cast):
        e = e.operand
    return int(e.value) if isinstance(e, ir.Lit) and isinstance(e.value, int) else None


def static_trips(loop: ir.For) -> int | None:
    """Iterations of `for (int v = A; v < B; ++v)` (or `<=`, `+= C`) with literal A, B, C; None otherwise."""
    init, cond, step = loop.init, loop.cond, loop.step
    if not isinstance(init, ir.VarDecl) or _lit(init.init) is None:
        return None
    v, lo = init.name, _lit(init.init)
    while isinstance(cond, ir.Cast):
        cond = cond.operand
    if not isinstance(cond, ir.Binary) or cond.op not in ("<", "<="):
        return None
    lhs = cond.lhs
    while isinstance(lhs, ir.Cast):
        lhs = lhs.operand
    hi = _lit(cond.rhs)
    if not isinstance(lhs, ir.Ref) or lhs.name != v or hi is None:
        return None
    if cond.op == "<=":
        hi += 1
    inc = None
    if isinstance(step, ir.Unary) and step.op in ("pre++", "post++"):
        inc = 1
    elif isinstance(step, ir.Binary) and step.op == "+=":
        inc = _lit(step.rhs)
    if not inc or inc <= 0 or lo is None:
        return None
    return max(0, -(-(hi - lo) // inc))


def _straight_body_flops(loop: ir.For) -> tuple[int, int] | None:
    """FLOPs of one iteration when the body is straight-line code without memory accesses or calls."""
    from kernlint.eval.flops import statement_flops

    f32 = f64 = 0
    for st in ir.iter_statements(loop.body):
        if not isinstance(st, (ir.Block, ir.ExprStmt, ir.VarDecl)):
            return None
        if any(isinstance(n, (ir.Index, ir.Call, ir.Member)) or (isinstance(n, ir.Unary) and n.op == "*")
               for n in ir.walk(getattr(st, "expr", None) or getattr(st, "init", None))):
            return None
        a, b = statement_flops(st)
        f32, f64 = f32 + a, f64 + b
    return f32, f64


def _global_bytes(events: "tuple[object, ...]") -> "dict[int, tuple[object, object]]":
    """id() of each global access -> (bytes in the sectors its requests touch, the same bytes in the
    fewest sectors), per sample, counting requests with an active lane: measured with one
    `global_sectors` call per access width and shape (it measures each request on its own)."""
    import numpy as np

    from kernlint.eval import events as ev
    from kernlint.model.metrics import SECTOR_BYTES, global_sectors

    groups: dict[tuple[object, ...], list[ev.MemoryAccess]] = {}
    for e in events:
        if isinstance(e, ev.MemoryAccess) and e.space == "global":
            groups.setdefault((e.width, e.address.shape, e.mask.shape), []).append(e)
    out: dict[int, tuple[object, object]] = {}
    for (width, _a, mshape), group in groups.items():
        per = max(1, _BATCH_REQUESTS // max(1, int(np.prod(mshape[:-1]))))  # accesses per call (bounds its arrays)
        for at in range(0, len(group), per):
            evs = group[at:at + per]
            mask = np.stack([e.mask for e in evs])
            sectors, best = global_sectors(np.stack([e.address for e in evs]), mask, width)  # type: ignore[arg-type]
            live = mask.any(axis=-1)
            real_b = np.where(live, sectors, 0).sum(axis=-1) * SECTOR_BYTES
            ideal_b = np.where(live, best, 0).sum(axis=-1) * SECTOR_BYTES
            for k, e in enumerate(evs):
                out[id(e)] = (real_b[k], ideal_b[k])
    return out


_BATCH_REQUESTS = 1 << 13  # warp requests measured in one global_sectors call


def rooflines(results: tuple[KernelResult, ...] | list[KernelResult], arch: str | None,
              override: tuple[float, float, float] | None = None) -> list[Roofline]:
    """One roofline per kernel and launch shape (re-evaluations of regions or odd offsets left out)."""
    out = []
    for r in results:
        if r.regions or r.odd_offset:
            continue
        rl = roofline(r, arch, override)
        if rl is not None:
            out.append(rl)
    return out


def percent_of_peak(fraction: float) -> float:
    """A fraction of peak as a percentage with one decimal, rounded once from the unrounded fraction (the
    table and the findings' notes print the same figure)."""
    return round(100 * fraction, 1)


def table(rows: "list[Roofline] | tuple[Roofline, ...]") -> str:
    """The `--statistics` table: one line per kernel and launch, then the model's footnotes."""
    rows = list(rows)
    head = ("kernel", "line", "FLOP/thr", "B/thr", "ideal B/thr", "FLOP/B", "ideal FLOP/B", "ridge", "bound",
            "of peak")
    body = []
    for r in rows:
        i, ii = r.intensity(), r.intensity(ideal=True)
        flops = f"{r.flops:g}" + ("" if r.trips_known else "*")
        body.append((r.kernel, str(r.line), flops, f"{r.bytes:g}", f"{r.ideal_bytes:g}",
                     "-" if i is None else f"{i:.3g}", "-" if ii is None else f"{ii:.3g}", f"{r.ridge():.3g}",
                     r.bound() + (" (fp64)" if r.precision == "fp64" else ""),
                     f"{percent_of_peak(r.attainable_fraction()):.1f} %"))
    widths = [max(len(x[c]) for x in [head, *body]) for c in range(len(head))]
    lines = ["  ".join(x[c].ljust(widths[c]) for c in range(len(head))).rstrip() for x in [head, *body]]
    peaks = {(r.arch, r.gpu): r.peak() for r in rows}
    for (arch, gpu), p in sorted(peaks.items()):
        lines.append(f"roofline for {arch} as {gpu}: {p.fp32_tflops:g} TFLOP/s FP32, {p.fp64_tflops:g} FP64, "
                     f"{p.dram_gbs:g} GB/s (rules/roofline.md)")
    if any(not r.trips_known for r in rows):
        lines.append("* a loop was not run to its end and its trip count is unknown: the FLOPs and bytes "
                     "cover the evaluated iterations only")
    return "\n".join(lines)
