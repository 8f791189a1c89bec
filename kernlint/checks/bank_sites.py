"""KL201's measurement: each shared-memory access site's warp requests, their wavefronts and n-way
conflicts (`kernlint.model.metrics.shared_wavefronts` on the evaluated lanes), step by step."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from kernlint.eval.events import MemoryAccess
from kernlint.base.frozen import frozen
from kernlint.model.metrics import shared_wavefronts


@frozen
class Step:
    """The worst request of one loop step (one value of the enclosing loop variables)."""

    label: str  # "s = 4", or "iteration 3" when the loop variable is not warp-uniform
    ways: int


@frozen
class SiteBanks:
    """Bank-conflict cost of one shared-memory access site (all its loads/stores, warps, steps)."""

    first: MemoryAccess
    root: str
    kinds: tuple[str, ...]  # ("load",), ("store",) or both for `a[i] += ...`
    width: int
    ways: int  # worst request
    wavefronts: int  # of the worst request
    ideal: int  # of the worst request
    active_lanes: int  # of the worst request
    worst: MemoryAccess  # the event holding the worst request
    worst_at: tuple[int, int]  # (sample, warp) of the worst request in `worst`
    typical_ways: int  # median over evaluated requests
    requests: int
    conflicting: int  # requests with ways >= 2
    always: bool  # some request conflicts in every sample (the finding holds for all assumptions)
    total_wavefronts: int
    total_ideal: int
    steps: tuple[Step, ...]
    deps: frozenset[str]


def _sites(events: Sequence[object]) -> dict[tuple[int, int, str, tuple[int, ...]], list[MemoryAccess]]:
    groups: dict[tuple[int, int, str, tuple[int, ...]], list[MemoryAccess]] = defaultdict(list)
    for e in events:
        if isinstance(e, MemoryAccess) and e.space == "shared":
            groups[(e.span.line, e.span.column, e.root, e.via)].append(e)
    return groups


_BATCH_REQUESTS = 1 << 14  # warp requests measured in one shared_wavefronts call (bounds its arrays)


def _site_wavefronts(evs: list[MemoryAccess]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`shared_wavefronts` of each event: the events of one width and shape measured in batches (each warp
    request is measured on its own, so stacking them changes nothing but the number of NumPy calls)."""
    shape, width = evs[0].address.shape, evs[0].width
    if len(evs) == 1 or any(e.address.shape != shape or e.width != width for e in evs):
        return [shared_wavefronts(e.address, e.mask, e.width) for e in evs]
    per = max(1, _BATCH_REQUESTS // max(1, int(np.prod(shape[:-1]))))
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for at in range(0, len(evs), per):
        chunk = evs[at:at + per]
        ways, wf, ideal = shared_wavefronts(np.stack([e.address for e in chunk]),
                                            np.stack([np.broadcast_to(e.mask, shape) for e in chunk]), width)
        out.extend((ways[i], wf[i], ideal[i]) for i in range(len(chunk)))
    return out


def _stacked_wavefronts(evs: list[MemoryAccess], masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`shared_wavefronts` of events of one width and shape (their masks stacked in `masks`), stacked:
    arrays of shape (events, ...)."""
    shape, width = evs[0].address.shape, evs[0].width
    per = max(1, _BATCH_REQUESTS // max(1, int(np.prod(shape[:-1]))))
    parts = [shared_wavefronts(np.stack([e.address for e in evs[at:at + per]]), masks[at:at + per], width)
             for at in range(0, len(evs), per)]
    if len(parts) == 1:
        return parts[0]
    ways, wf, ideal = zip(*parts)
    return np.concatenate(ways), np.concatenate(wf), np.concatenate(ideal)


def measure_site(evs: list[MemoryAccess]) -> SiteBanks | None:
    """Measure the requests of one site; None when no lane was active."""
    shape = evs[0].address.shape
    if len(evs) > 1 and len(shape) == 3 and all(e.address.shape == shape and e.mask.shape == shape
                                                and e.width == evs[0].width for e in evs):
        return _measure_stacked(evs)
    return _measure_each(evs)


def _measure_each(evs: list[MemoryAccess]) -> SiteBanks | None:
    """`measure_site` event by event (events of several shapes or widths)."""
    width = evs[0].width
    samples = evs[0].mask.shape[0]
    sample_worst = np.zeros(samples, dtype=np.int64)
    sample_live = np.zeros(samples, dtype=bool)
    all_ways: list[np.ndarray] = []
    # The worst request: most ways, then most active lanes, then the earliest event.
    best: tuple[tuple[int, int, int], int, int, int, int, int] | None = None  # key, event, s, w, wf, ideal
    total_wf = total_ideal = 0
    step_worst: dict[str, int] = {}
    step_order: list[str] = []
    varying = _varying_loops(evs)
    deps: frozenset[str] = frozenset()
    costs = _site_wavefronts(evs)
    for n, e in enumerate(evs):
        ways, wf, ideal = costs[n]
        lanes = e.mask.sum(axis=-1)
        live = lanes > 0
        if not live.any():
            continue
        deps |= e.deps
        sample_live |= live.any(axis=-1)
        sample_worst = np.maximum(sample_worst, np.where(live, ways, 0).max(axis=-1))
        all_ways.append(ways[live])
        total_wf += int(wf[live].sum())
        total_ideal += int(ideal[live].sum())
        s, w = np.unravel_index(np.argmax(np.where(live, ways * 64 + lanes, -1)), ways.shape)
        key = (int(ways[s, w]), int(lanes[s, w]), -n)
        if best is None or key > best[0]:
            best = (key, n, int(s), int(w), int(wf[s, w]), int(ideal[s, w]))
        label = _step_label(e, varying)
        if label:
            if label not in step_worst:
                step_order.append(label)
                step_worst[label] = 0
            step_worst[label] = max(step_worst[label], int(ways[live].max()))
    if best is None:
        return None
    flat = np.sort(np.concatenate(all_ways))
    (worst_ways, worst_lanes, _order), n, s_at, w_at, worst_wf, worst_ideal = best
    steps = tuple(Step(lbl, step_worst[lbl]) for lbl in step_order)
    return SiteBanks(
        first=evs[0], root=evs[0].root, kinds=tuple(sorted({e.kind for e in evs})), width=width,
        ways=worst_ways, wavefronts=worst_wf, ideal=worst_ideal, active_lanes=worst_lanes,
        worst=evs[n], worst_at=(s_at, w_at), typical_ways=int(flat[len(flat) // 2]),
        requests=int(flat.size), conflicting=int((flat >= 2).sum()),
        always=bool(sample_live.any() and np.all(sample_worst[sample_live] >= 2)),
        total_wavefronts=total_wf, total_ideal=total_ideal, steps=steps, deps=deps,
    )


def _measure_stacked(evs: list[MemoryAccess]) -> SiteBanks | None:
    """`measure_site` of events of one width and (samples, warps, 32) shape, every event at once."""
    masks = np.stack([e.mask for e in evs])
    ways, wf, ideal = _stacked_wavefronts(evs, masks)  # (events, samples, warps)
    lanes = masks.sum(axis=-1)
    live = lanes > 0
    live_events = live.any(axis=(1, 2))
    if not live_events.any():
        return None
    deps: frozenset[str] = frozenset().union(*(e.deps for e, lv in zip(evs, live_events) if lv))
    sample_live = live.any(axis=(0, 2))
    sample_worst = np.where(live, ways, 0).max(axis=(0, 2))
    flat = np.sort(ways[live])
    # The worst request: most ways, then most active lanes, then the earliest event (the first maximum
    # in event order; lanes < 64).
    n, s_at, w_at = (int(i) for i in np.unravel_index(np.argmax(np.where(live, ways * 64 + lanes, -1)), ways.shape))
    step_worst: dict[str, int] = {}
    varying = _varying_loops(evs)
    event_worst = np.where(live, ways, np.iinfo(np.int64).min).max(axis=(1, 2))
    for e, lv, worst in zip(evs, live_events, event_worst):
        label = _step_label(e, varying) if lv else ""
        if label:
            step_worst[label] = max(step_worst.get(label, 0), int(worst))
    return SiteBanks(
        first=evs[0], root=evs[0].root, kinds=tuple(sorted({e.kind for e in evs})), width=evs[0].width,
        ways=int(ways[n, s_at, w_at]), wavefronts=int(wf[n, s_at, w_at]), ideal=int(ideal[n, s_at, w_at]),
        active_lanes=int(lanes[n, s_at, w_at]), worst=evs[n], worst_at=(s_at, w_at),
        typical_ways=int(flat[len(flat) // 2]), requests=int(flat.size), conflicting=int((flat >= 2).sum()),
        always=bool(sample_live.any() and np.all(sample_worst[sample_live] >= 2)),
        total_wavefronts=int(wf[live].sum()), total_ideal=int(ideal[live].sum()),
        steps=tuple(Step(lbl, w) for lbl, w in step_worst.items()), deps=deps,
    )


def _varying_loops(evs: list[MemoryAccess]) -> tuple[int, ...]:
    """Indices of the enclosing loops whose iteration differs between the site's events."""
    depth = min(len(e.loop_iter) for e in evs)
    return tuple(i for i in range(depth) if len({e.loop_iter[i] for e in evs}) > 1)


def _step_label(e: MemoryAccess, varying: tuple[int, ...]) -> str:
    """'s = 4' for the loop variables that vary at this site ('iteration 3' where one is unknown)."""
    parts = []
    # loop_vars lists only loops with a recognised variable; it lines up with loop_iter only when
    # every enclosing loop has one.
    aligned = len(e.loop_vars) == len(e.loop_iter)
    for i in varying:
        name, value = e.loop_vars[i] if aligned else ("", None)
        parts.append(f"{name} = {value}" if name and value is not None else f"iteration {e.loop_iter[i]}")
    return ", ".join(parts)


def measure(events: Sequence[object]) -> list[SiteBanks]:
    """Measure every shared-memory access site among `events`."""
    out = []
    for evs in _sites(events).values():
        site = measure_site(evs)
        if site is not None:
            out.append(site)
    return out
