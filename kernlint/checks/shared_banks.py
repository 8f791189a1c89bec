"""KL201 shared-bank-conflict: a warp's shared-memory request touches one bank more than once.

Measurement (kernlint/checks/bank_sites.py): `kernlint.model.metrics.shared_wavefronts` on every
evaluated warp request (the same function `--confirm` applies to recorded lanes). The fix is
computed, not guessed: for each conflicting array the kernel is evaluated again with the innermost
dimension of the array's declaration padded by 1, 2, ... elements, and the smallest padding under
which every access of that array is conflict-free (and no other array's access gets worse) is
suggested, as a message and as an `Edit` of the declaration. An XOR swizzle of the column is
checked on the measured addresses too.
User documentation: rules/KL201-shared-bank-conflict.md
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from kernlint.base import deadline
from kernlint.ir import nodes as ir
from kernlint.checks.bank_sites import (
    _BATCH_REQUESTS,
    SiteBanks,
    _sites,
    measure_site,
)
from kernlint.checks import bank_values, padded_events
from kernlint.checks.base import Rule, call_chain_notes
from kernlint.checks.swizzle_edit import mask_comments_and_strings, swizzle_edits
from kernlint.base.diagnostics import Diagnostic, Edit, Severity
from kernlint.eval.asm_memory import asm_note
from kernlint.eval.async_copy import async_note
from kernlint.eval.atomics import atomic_note, contention
from kernlint.eval.events import MemoryAccess, Work
from kernlint.eval.interp import Interpreter
from kernlint.eval.result import KernelResult
from kernlint.base.frozen import frozen
from kernlint.model.metrics import BANK_BYTES, SHARED_BANKS, shared_phases, shared_wavefronts

_BIG = np.iinfo(np.int64).max
MAX_PADDING = 32  # padding candidates tried per array (row pitch mod 32 words repeats after that)
MAX_STEPS_SHOWN = 10
MAX_CONFIRM_RUNS = 3  # re-evaluations of the kernel per conflicting array
# A site is a warning when its requests average at least this many wavefronts per ideal one over all
# evaluated requests (a 2-way conflict in every other step); below it, conflicts in a few steps of a
# network (sorting networks' strides) are an info naming how many steps conflict.
MATERIAL_AVERAGE = 1.5
# A site whose extra wavefronts are under this share of the kernel's evaluated shared-memory
# wavefronts is an info (as KL101/KL102 do with global sectors).
IMPACT_FRACTION = 0.05
# ... and when they are under this share of the warp instructions the kernel issued (its evaluated work,
# the Work event). A wavefront holds the SM's shared-memory pipe for a clock (32 banks of 4 bytes a clock
# per SM: CUDA C++ Programming Guide, compute capabilities 5.x and later, "Shared Memory"), in which its
# four warp schedulers can issue four instructions (one each per clock): E extra wavefronts are worth at
# most 4E issue slots, so under 2.5 % of the instructions a conflict costs under a tenth of the kernel's
# issue time, the share from which kernlint calls lost lanes material (KL302, KL404). On issue 28's
# corpus audit the 2-way conflicts judged true but not worth acting cost 0.4 % to 2.5 % (a sort network's
# merge step, a scan's one-off transpose, a histogram's merge, a Haar step, a bisection's compaction);
# the row-filter's 17-tap loop (2.8 %), lavaMD's 4-way loop (4.5 %) and LU's 8-way perimeter (20 %) more.
ISSUE_FRACTION = 0.025


# --- the computed fix (the measurement is in kernlint/checks/bank_sites.py) ---------------------


@frozen
class Fix:
    """What to change for one array: a padded declaration (with its edit) and/or a swizzle, or why not."""

    text: str  # the sentence for the finding ("declare tile[32][33]: every access becomes conflict-free")
    padded_dim: int | None = None  # the new innermost dimension (33 for float[32][32])
    padding: int = 0  # elements added to the innermost dimension
    declaration: str = ""  # "tile[32][33]"
    edit: Edit | None = None
    complete: bool = False  # every access of the array becomes conflict-free
    swizzle: str = ""
    headline: str = ""  # the short form for the message, when there is a fix worth stating there
    extra_bytes: int = 0  # shared memory the padding adds per block
    swizzle_edits: tuple[Edit, ...] = ()  # the swizzle at every access, when no padding edit fixes it all
    # A partial padding: the worst ways of each site (line, column) after it, so a site it does not
    # help is not told that it does.
    site_ways: tuple[tuple[tuple[int, int], int], ...] = ()

    @property
    def edits(self) -> tuple[Edit, ...]:
        """The machine-applicable edits: the complete padding, else the swizzle, else a partial padding."""
        if self.edit is not None and self.complete:
            return (self.edit,)
        if self.swizzle_edits:
            return self.swizzle_edits
        return (self.edit,) if self.edit is not None else ()

    @property
    def one_edit_fixes_all(self) -> bool:
        return bool(self.swizzle_edits) or (self.complete and self.edit is not None)


def _dims(t: ir.CType) -> list[int]:
    dims = []
    while t.kind == "array" and t.pointee is not None:
        dims.append(t.count)
        t = t.pointee
    return dims


def _elem(t: ir.CType) -> ir.CType:
    while t.kind == "array" and t.pointee is not None:
        t = t.pointee
    return t


def padded_type(t: ir.CType, pad: int) -> ir.CType:
    """`t` with its innermost array dimension grown by `pad` elements (float[32][32] -> float[32][33])."""
    assert t.kind == "array" and t.pointee is not None
    if t.pointee.kind != "array":
        count = t.count + pad
        new = replace(t, count=count, size=t.pointee.size * count)
    else:
        inner = padded_type(t.pointee, pad)
        new = replace(t, pointee=inner, size=inner.size * t.count)
    return replace(new, name=(_elem(new).name or "T") + "".join(f"[{d}]" for d in _dims(new)))


_SiteKey = tuple[int, int, str, tuple[int, ...]]
_MEASURED: list[tuple[object, dict[_SiteKey, SiteBanks]]] = []
"""The sites of the last few event sequences measured by `_root_cost` (kept with the sequence itself,
so an identity match is never a recycled id): a kernel with many conflicting arrays searches a fix
for each, and each search starts from the same evaluation (measured once, not once per array)."""


def _measured_sites(events: Sequence[object]) -> dict[_SiteKey, SiteBanks]:
    for seq, sites in _MEASURED:
        if seq is events:
            return sites
    out = {}
    for key, evs in _sites(events).items():
        site = measure_site(evs)
        if site is not None:
            out[key] = site
    _MEASURED.insert(0, (events, out))
    del _MEASURED[4:]
    return out


def _moved_by_bank_rows(new: list[MemoryAccess], old: list[MemoryAccess]) -> bool:
    """Whether each request of `new` is the same request of `old` with every lane moved by one multiple
    of SHARED_BANKS words: the same lanes meet in the same banks, so the measurement is the same."""
    row = SHARED_BANKS * BANK_BYTES
    if len(new) != len(old):
        return False
    for a, b in zip(new, old):
        if a.width != b.width or a.address.shape != b.address.shape or not np.array_equal(a.mask, b.mask):
            return False
        d = (a.address - b.address)[a.mask]
        if d.size and (int(d.flat[0]) % row or not (d == d.flat[0]).all()):
            return False
    return True


def _root_cost(events: Sequence[object], root: str, before: Sequence[object] | None = None
               ) -> tuple[int, dict[tuple[int, int], int], int]:
    """(worst ways over the root's requests, worst ways per site of every array, excess wavefronts of root).

    With `before` (the evaluation `events` re-evaluates with `root` padded), the other arrays' sites
    whose requests only moved by whole bank rows keep their measurement from `before`."""
    worst = 0
    per_site: dict[tuple[int, int], int] = {}
    excess = 0
    if before is None:
        measured = _measured_sites(events)
    else:
        old_groups, old_measured = _sites(before), _measured_sites(before)
        measured = {}
        for key, evs in _sites(events).items():
            old = old_groups.get(key)
            if key[2] != root and key in old_measured and old is not None and _moved_by_bank_rows(evs, old):
                measured[key] = old_measured[key]
                continue
            site = measure_site(evs)
            if site is not None:
                measured[key] = site
    for (line, col, r, _via), site in measured.items():
        per_site[(line, col)] = max(per_site.get((line, col), 0), site.ways)
        if r == root:
            worst = max(worst, site.ways)
            excess += site.total_wavefronts - site.total_ideal
    return worst, per_site, excess


def _root_addresses(events: Sequence[object], root: str, base: int) -> list[np.ndarray]:
    return [np.where(e.mask, e.address - base, -1) for e in events
            if isinstance(e, MemoryAccess) and e.space == "shared" and e.root == root]


def suggest_fix(result: KernelResult, root: str) -> Fix:
    """The fix for `root`'s conflicts: the cheapest padding, with the swizzle's edits where padding falls short."""
    fix = _suggest_fix(result, root)
    if not fix.swizzle or (fix.complete and fix.edit is not None):
        return fix
    edits = _swizzle_edits(result, root, fix.swizzle)
    if not edits:
        return fix
    return replace(fix, swizzle_edits=edits, headline=f"an XOR swizzle of the column ({root}[r][c ^ r]) removes it")


def _swizzle_edits(result: KernelResult, root: str, swizzle: str) -> tuple[Edit, ...]:
    """The swizzle's edit at every access of `root` (a 2-D array declared in the source), when there is
    a conflict-free swizzle (`swizzle`, from `_array_swizzle`); () when it cannot be written as edits."""
    if not swizzle:
        return ()
    layout = {name: t for name, _b, t in result.shared_layout}
    decl = _find_decl(result, root)
    dims = _dims(layout[root]) if root in layout else []
    if decl is None or decl.span.line <= 0 or len(dims) != 2:
        return ()
    is_global = result.unit is not None and result.unit.globals.get(root) is decl
    span = result.kernel.span
    scope = None if is_global else (span.line, max(span.end_line, span.line))
    return tuple(swizzle_edits(result.source_lines, root, decl.span.line, scope, dims[0], dims[1]))


_SWIZZLED: list[tuple[object, object, str, str]] = []
"""The last few `_array_swizzle` answers, with the events and layout they were computed from (kept, so
an identity match is never a recycled id): check_deferred asks before the fix search, which asks again."""


def _array_swizzle(result: KernelResult, root: str) -> str:
    """`_swizzle` of a sized shared array `root` as `_suggest_fix` computes it; "" for an unsized (extern) one."""
    for events, layout, name, swizzle in _SWIZZLED:
        if events is result.events and name == root and layout == result.shared_layout:
            return swizzle
    swizzle = _compute_swizzle(result, root)
    _SWIZZLED.insert(0, (result.events, result.shared_layout, root, swizzle))
    del _SWIZZLED[4:]
    return swizzle


def _compute_swizzle(result: KernelResult, root: str) -> str:
    layout = {name: (base, t) for name, base, t in result.shared_layout}
    if root not in layout:
        return ""
    base, t = layout[root]
    dims = _dims(t)
    decl = _find_decl(result, root)
    if t.kind != "array" or not dims or dims[0] == 0 or (decl is not None and decl.extern):
        return ""
    return _swizzle(result.events, root, base, t)


def _suggest_fix(result: KernelResult, root: str) -> Fix:
    """Search the cheapest row pitch of `root`'s innermost dimension that removes its conflicts.

    Shorter rows (removing existing padding) are tried before longer ones; each candidate the screen
    accepts is confirmed by evaluating the kernel again with the changed declaration.
    """
    layout = {name: (base, t) for name, base, t in result.shared_layout}
    if root not in layout:
        return Fix("")
    base, t = layout[root]
    dims = _dims(t)
    decl = _find_decl(result, root)
    if t.kind != "array" or not dims or dims[0] == 0 or (decl is not None and decl.extern):
        return Fix(f"{root} is an unsized (extern) array: pad the row pitch in the index arithmetic "
                   f"(for example row * (width + 1) + col), or swizzle the column with an XOR of the row")
    events = result.events  # the same sequence for every array of this result (see _measured_sites)
    swizzle = _array_swizzle(result, root)
    if len(dims) < 2:
        text = (f"padding the declaration cannot help: {root} is one-dimensional, so the conflict comes "
                f"from the index arithmetic; make consecutive lanes touch consecutive elements")
        elem_t = _elem(t)
        if elem_t.kind == "struct" and any(isinstance(e, MemoryAccess) and e.root == root and e.width < elem_t.size
                                           for e in events):
            text = (f"padding the declaration cannot help: lanes read one field of consecutive {elem_t.size}-byte "
                    f"records; keep each field in its own shared array (structure of arrays) so that "
                    f"consecutive lanes read consecutive words")
        if _elem(t).size == BANK_BYTES:
            text += (f", or skew the index (i + i / {SHARED_BANKS}, one word of padding every {SHARED_BANKS} "
                     f"words, with the array grown to match) so that lanes a multiple of {SHARED_BANKS} "
                     f"words apart land in different banks")
        return Fix(text + (f"; or {swizzle}" if swizzle else ""), swizzle=swizzle)
    if result.unit is None:
        return Fix(swizzle, swizzle=swizzle)
    old_worst, old_sites, old_excess = _root_cost(events, root)
    elem = _elem(t)
    tries = min(MAX_PADDING, max(1, (SHARED_BANKS * BANK_BYTES) // max(1, elem.size)))
    # Screen every padding on the measured addresses (each split into the indices of the declared
    # array and laid out again with the padded row), then confirm the promising ones by evaluating
    # the kernel again with the padded declaration: the index arithmetic may not follow the
    # declaration (a flattened pointer), and only the re-evaluation tells.
    screen = _screen_paddings(events, root, base, t, tries, old_sites)
    if screen is None:  # some access is not a plain in-bounds element of the array: try the first few
        order = list(range(1, min(tries, MAX_CONFIRM_RUNS) + 1))
    else:
        complete = [pad for pad, (worst, excess, worse) in screen.items() if worst <= 1 and not worse]
        partial = sorted((excess, pad) for pad, (worst, excess, worse) in screen.items()
                         if excess < old_excess and pad not in complete)
        order = (complete + [pad for _e, pad in partial])[:MAX_CONFIRM_RUNS]
    best: tuple[int, int, int, int, dict[tuple[int, int], int]] | None = None  # (excess, pad, worst, worse, site ways)
    original = _root_addresses(events, root, base)
    cut_short = False
    # Where the padding can change nothing but the shared addresses, the evaluation again is computed
    # from this one (checks/padded_events.py says when, and why it is the same).
    predicted = padded_events.predictable(result, root)
    for n, pad in enumerate(order):
        if deadline.expired():
            cut_short = True  # no more re-evaluations: the best found so far (if any) is still a measured one
            break
        if predicted:
            new_events: list[object] = padded_events.padded_events(result, root, padded_type(t, pad))
            new_base = base
        else:
            run = Interpreter(result.unit, result.kernel, result.shape, dict(result.defines),
                              shared_types={root: padded_type(t, pad)}).run()
            if run.out_of_time:
                cut_short = True  # a re-evaluation cut short would make any padding look conflict-free
                break
            new_events = list(run.events)
            new_base = run.shared_layout.get(root, (0, t))[0]
        if n == 0:
            again = _root_addresses(new_events, root, new_base)
            if len(again) == len(original) and all(np.array_equal(a, b) for a, b in zip(again, original)):
                text = (f"padding {root}'s rows cannot help: its index arithmetic does not use the declared "
                        f"row length (addresses are unchanged with {_decl_text(result, root, decl, dims, pad)})")
                return Fix(text + (f"; {swizzle}" if swizzle else ""), swizzle=swizzle)
        worst, sites, excess = _root_cost(new_events, root, before=events)
        worse = sum(1 for k, ways in sites.items() if ways > old_sites.get(k, ways))
        if worst <= 1 and not worse:
            return _padding_fix(result, root, decl, dims, pad, True, swizzle)
        # No complete fix (yet): remember the padding that saves the most wavefronts overall,
        # even if it trades a new, smaller conflict at another access of the same array.
        if excess < old_excess and (best is None or excess < best[0]):
            best = (excess, pad, worst, worse, sites)
    if best is not None:
        excess, pad, worst, worse, after = best
        tradeoff = (f"no padding makes every access conflict-free; this one cuts the extra wavefronts of "
                    f"{root} from {old_excess} to {excess} (worst {old_worst}-way -> {worst}-way)")
        if worse:
            tradeoff += (f", though {worse} other access{'es' if worse != 1 else ''} of {root} "
                         f"{'get' if worse != 1 else 'gets'} worse")
        return replace(_padding_fix(result, root, decl, dims, pad, False, swizzle, tradeoff),
                       site_ways=tuple(sorted(after.items())))
    if cut_short:
        text = f"the search for a padding of {root} was cut short: {deadline.describe()} ran out"
        return Fix(text + (f"; {swizzle}" if swizzle else ""), swizzle=swizzle)
    text = f"no padding of {root}'s innermost dimension (+1 to +{tries}) removes the conflict"
    return Fix(text + (f"; {swizzle}" if swizzle else ""), swizzle=swizzle)


def _screen_paddings(events: Sequence[object], root: str, base: int, t: ir.CType, tries: int,
                     old_sites: dict[tuple[int, int], int]) -> dict[int, tuple[int, int, int]] | None:
    """Predict (worst ways, excess wavefronts, sites made worse) of `root` for each padding 1..tries,
    and for each negative padding that keeps every accessed element inside its row.

    Each measured address is split into the indices of the declared array and laid out again with
    the innermost dimension padded. None when some access falls outside the array or straddles the
    end of a row (then only re-evaluating the kernel can tell).
    """
    dims = _dims(t)
    esize = _elem(t).size
    total = t.size
    if esize <= 0 or total <= 0:
        return None
    accesses = [e for e in events if isinstance(e, MemoryAccess) and e.space == "shared" and e.root == root]
    # Every access at once, as rows of 32 lanes laid end to end (the checks below hold for all or for none).
    rows = [e.mask.size // 32 for e in accesses]
    address = np.concatenate([np.zeros((0, 32), dtype=np.int64)] + [
        (e.address if e.address.shape == e.mask.shape else np.broadcast_to(e.address, e.mask.shape)).reshape(-1, 32)
        for e in accesses]) - base
    live = np.concatenate([np.zeros((0, 32), dtype=bool)] + [e.mask.reshape(-1, 32) for e in accesses])
    width = np.repeat(np.array([e.width for e in accesses], dtype=np.int64), rows)[:, None]
    off = np.where(live, address, 0)
    if np.any(live & ((off < 0) | (off + width > total))):
        return None
    first = off // esize
    last = (off + width - 1) // esize
    if np.any(live & (first // dims[-1] != last // dims[-1])):
        return None  # a vector read that runs past the end of a row: padding would split it
    # The row among the outer dimensions and the column of each lane's element, and its byte within it.
    row_all, col_all, rem_all = first // dims[-1], first % dims[-1], off - first * esize
    # The largest innermost index any access touches: rows may shrink to just past it.
    widest = max(0, int(np.max(np.where(live, last % dims[-1], 0)))) if live.size else 0
    out: dict[int, tuple[int, int, int]] = {}
    # Every pitch: shrinking rows (removing existing padding: a [16][17] tile read by 16-wide rows is
    # conflict-free as [16][16]) as well as growing them; smaller rows first, as they cost less.
    # Only padding is removed: rows keep at least the largest power of two within the declared length
    # (the data's extent: 16 of [16][17]) besides every column the evaluated accesses touch, since a
    # shape evaluated here need not be the only one the kernel runs with.
    floor = max(widest + 1, 1 << (dims[-1].bit_length() - 1))
    shrink = list(range(floor - dims[-1], 0))
    # What does not depend on the padding, once per access width (one batch each): where each access's
    # rows start, and the site each belongs to.
    keys: dict[tuple[int, int], int] = {}
    groups: dict[int, list[int]] = defaultdict(list)
    for n, e in enumerate(accesses):
        groups[e.width].append(n)
    batches = []
    for w, members in groups.items():
        take = np.flatnonzero(width[:, 0] == w)  # the rows of its accesses, in order
        starts = np.cumsum([0, *[rows[n] for n in members[:-1]]])
        site = np.array([keys.setdefault((accesses[n].span.line, accesses[n].span.column), len(keys))
                         for n in members])
        batches.append((w, row_all[take], col_all[take], rem_all[take], live[take], starts, site,
                        min(rows[n] for n in members) > 0))
    old = np.array([old_sites.get(k, -1) for k in keys])  # -1: a site not measured before is never "worse"
    pads = np.array([*shrink, *range(1, tries + 1)], dtype=np.int64)
    per_site = np.zeros((len(pads), len(keys)), dtype=np.int64)
    excess = np.zeros(len(pads), dtype=np.int64)
    for w, row, col, rem, mask, starts, site, no_empty in batches:
        # Only the innermost dimension changes: an element's offset is (its row among the outer
        # dimensions) * (row length) + its column, for every padding at once. Requests that are the same
        # lanes at the same (row, column, byte) cost the same under every padding: each is measured once.
        # With whole-word elements, a request moved as a whole by some rows and columns is one too (the
        # move is a whole number of words, which only renames the banks), so each request is taken from
        # its first active row and column.
        row = np.where(mask, row, 0)
        col = np.where(mask, col, 0)
        if esize % BANK_BYTES == 0:
            row = np.where(mask, row - np.where(mask, row, _BIG).min(axis=1, keepdims=True), 0)
            col = np.where(mask, col - np.where(mask, col, _BIG).min(axis=1, keepdims=True), 0)
        rem = np.where(mask, rem, 0)
        # (distinct rows by their bytes: one sort of opaque values, not of 128-field records)
        table = np.ascontiguousarray(np.concatenate([row, col, rem, mask], axis=1), dtype=np.int64)
        _r, first_of, inverse = np.unique(table.view(np.dtype((np.void, table.shape[1] * 8))).reshape(-1),
                                          return_index=True, return_inverse=True)
        distinct, inverse = table[first_of], inverse.reshape(-1)
        u_row, u_col, u_rem = distinct[:, :32], distinct[:, 32:64], distinct[:, 64:96]
        u_mask = distinct[:, 96:].astype(bool)
        requests = len(distinct)
        # (a few paddings per shared_wavefronts call, so that a call measures at most _BATCH_REQUESTS requests)
        per = max(1, _BATCH_REQUESTS // max(1, requests))
        for at in range(0, len(pads), per):
            chunk = pads[at:at + per, None, None]
            addr = base + (u_row * (dims[-1] + chunk) + u_col) * esize + u_rem  # (paddings, requests, lanes)
            u_ways, u_wf, u_ideal = shared_wavefronts(addr, u_mask, w)
            ways = u_ways[:, inverse]
            excess[at:at + per] += (u_wf - u_ideal)[:, inverse].sum(axis=1)
            if no_empty:
                per_access = np.maximum.reduceat(ways, starts, axis=1)  # the worst request of each access
            else:
                ends = [*starts[1:], len(inverse)]
                per_access = np.array([[w_[a:b].max() if b > a else 0 for a, b in zip(starts, ends)] for w_ in ways],
                                      dtype=np.int64).reshape(len(chunk), len(starts))
            for j in range(len(keys)):
                of_site = per_access[:, site == j]
                if of_site.shape[1]:
                    per_site[at:at + per, j] = np.maximum(per_site[at:at + per, j], of_site.max(axis=1))
    for n, pad in enumerate(pads.tolist()):
        worst = int(per_site[n].max()) if len(keys) else 0
        worse = int(((old >= 0) & (per_site[n] > old)).sum())
        out[pad] = (worst, int(excess[n]), worse)
    return out


def _padding_fix(result: KernelResult, root: str, decl: ir.VarDecl | None, dims: list[int], pad: int,
                 complete: bool, swizzle: str, tradeoff: str = "") -> Fix:
    declaration = _decl_text(result, root, decl, dims, pad)
    if complete:
        text = headline = f"declare {declaration}: every access becomes conflict-free"
    else:
        text = f"declare {declaration}: {tradeoff}"
        headline = (f"an XOR swizzle of the column ({root}[r][c ^ r]) removes it" if swizzle
                    else f"declare {declaration} to reduce it")
    layout = {name: t for name, _b, t in result.shared_layout}
    extra = padded_type(layout[root], pad).size - layout[root].size if root in layout else 0
    if extra > 0:
        text += f" (the padding costs {extra} bytes of shared memory per block)"
    elif extra < 0:
        text += f" (and saves {-extra} bytes of shared memory per block)"
    if swizzle:
        text += f"; alternatively {swizzle}"
    edit = _dimension_edit(result, root, decl, dims, pad)
    return Fix(text, padded_dim=dims[-1] + pad, padding=pad, declaration=declaration, edit=edit,
               complete=complete, swizzle=swizzle, headline=headline, extra_bytes=extra)


def _swizzle(events: Sequence[object], root: str, base: int, t: ir.CType) -> str:
    """'swizzle the column: tile[r][c ^ r] at every access ...' when that makes every access conflict-free.

    Checked on the measured addresses: each is split into (row, column) of the declared 2-D array,
    the column XORed with the row (mod the row length), and the requests measured again. Only for a
    power-of-two row length, accesses of exactly one element, and addresses inside the array.
    """
    dims = _dims(t)
    elem = _elem(t)
    if len(dims) != 2 or elem.size <= 0:
        return ""
    rows, cols = dims
    if cols < 2 or cols & (cols - 1):
        return ""
    accesses = [e for e in events if isinstance(e, MemoryAccess) and e.space == "shared" and e.root == root]
    if not accesses:
        return ""
    if any(e.width != elem.size for e in accesses):
        return ""
    # Every access checked and measured at once (one width, so one batch of requests): each request is
    # measured on its own, so laying them end to end changes nothing but the number of NumPy calls.
    off = np.concatenate([(e.address - base).reshape(-1, 32) for e in accesses])
    mask = np.concatenate([np.broadcast_to(e.mask, e.address.shape).reshape(-1, 32) for e in accesses])
    live = off[mask]
    if np.any(live % elem.size) or np.any(live < 0) or np.any(live >= rows * cols * elem.size):
        return ""
    k = off // elem.size
    r, c = k // cols, k % cols
    ways, _wf, _ideal = shared_wavefronts(base + (r * cols + (c ^ (r % cols))) * elem.size, mask, elem.size)
    if np.any(ways[mask.any(axis=-1)] > 1):
        return ""
    xor = "r" if rows <= cols else f"(r % {cols})"
    return (f"swizzle the column: index {root}[r][c ^ {xor}] at every access (conflict-free for every "
            f"access, with no extra memory)")


def _find_decl(result: KernelResult, root: str) -> ir.VarDecl | None:
    """The declaration of shared array `root`: in the kernel body or at file scope."""
    body = result.kernel.body
    stack: list[object] = [body] if body is not None else []
    while stack:
        n = stack.pop()
        if isinstance(n, ir.VarDecl) and n.name == root and n.shared:
            return n
        if isinstance(n, tuple):
            stack.extend(n)
            continue
        for slot in getattr(n, "__slots__", ()):
            v = getattr(n, slot, None)
            if isinstance(v, (ir.Block, ir.If, ir.For, ir.While, ir.Switch, ir.VarDecl, tuple)):
                stack.append(v)
    if result.unit is not None:
        g = result.unit.globals.get(root)
        if g is not None and g.shared:
            return g
    return None


_BRACKETS = re.compile(r"\[([^\[\]]*)\]")


def _decl_brackets(result: KernelResult, root: str, decl: ir.VarDecl | None
                   ) -> list[tuple[int, int, str]] | None:
    """(line, column of the text inside, text) of each `[dim]` of `root`'s declaration in the source."""
    if decl is None or decl.span.line <= 0:
        return None
    # Comments and strings blanked: `tile[a][b]` in a comment after the declaration is not its shape.
    lines = mask_comments_and_strings(result.source_lines[: max(decl.span.end_line, decl.span.line) + 2])
    start = decl.span.line
    # A declaration may spread over lines (`__shared__ float\n tile[32]\n [33];`): look a few past its span.
    end = max(decl.span.end_line, start) + 2
    for no in range(start, min(end, len(lines)) + 1):
        line = lines[no - 1]
        from_col = decl.span.column - 1 if no == start else 0
        m = re.compile(r"\b" + re.escape(root) + r"\b").search(line, from_col)
        if m is None:
            continue
        m = re.compile(r"(\s*)(\[|$)").match(line, m.end())
        if m is None:
            return None  # the declared name is not followed by its dimensions (a typedef'd array type)
        out = []
        row, pos = no, m.start(2)
        while row <= len(lines):
            text = lines[row - 1]
            while pos < len(text) and text[pos] in " \t":
                pos += 1
            if pos >= len(text):  # the next bracket may be on the next line
                if row >= min(end, len(lines)):
                    break
                row, pos = row + 1, 0
                continue
            b = _BRACKETS.match(text, pos)
            if b is None:
                break
            out.append((row, b.start(1) + 1, b.group(1)))
            pos = b.end()
        return out or None
    return None


def _grown(text: str, pad: int) -> str:
    """The dimension expression `text` changed by `pad` elements (negative: padding removed)."""
    s = text.strip()
    if re.fullmatch(r"\d+", s):
        return str(int(s) + pad)
    simple = re.fullmatch(r"[\w\s.*/%+()-]+", s) is not None and "<<" not in s
    trailing = re.fullmatch(r"(.*\S)\s*([+-])\s*(\d+)", s) if simple else None
    if trailing and re.fullmatch(r"[\w\s.*/%()]+", trailing.group(1)):
        # `TILE + 1` less one element is `TILE`, not `TILE + 1 + -1`.
        k = int(trailing.group(3)) * (1 if trailing.group(2) == "+" else -1) + pad
        head = trailing.group(1)
        return head if k == 0 else f"{head} + {k}" if k > 0 else f"{head} - {-k}"
    op = "+" if pad > 0 else "-"
    return f"{s} {op} {abs(pad)}" if simple else f"({s}) {op} {abs(pad)}"


def _decl_text(result: KernelResult, root: str, decl: ir.VarDecl | None, dims: list[int], pad: int) -> str:
    found = _decl_brackets(result, root, decl)
    if found is not None and len(found) == len(dims):
        parts = [f"[{text.strip()}]" for _l, _c, text in found]
        parts[-1] = f"[{_grown(found[-1][2], pad)}]"
        return root + "".join(parts)
    return root + "".join(f"[{d}]" for d in dims[:-1]) + f"[{dims[-1] + pad}]"


def _dimension_edit(result: KernelResult, root: str, decl: ir.VarDecl | None, dims: list[int],
                    pad: int) -> Edit | None:
    found = _decl_brackets(result, root, decl)
    if found is None or len(found) != len(dims):
        return None  # the declaration comes from a macro or spans lines we cannot match: no edit
    line, col, text = found[-1]
    what = (f"pad the innermost dimension of {root} by {pad} element{'s' if pad != 1 else ''}" if pad > 0 else
            f"remove {-pad} element{'s' if pad != -1 else ''} of padding from the innermost dimension of {root}")
    return Edit(line, col, line, col + len(text), _grown(text, pad), what)


# --- the rule -----------------------------------------------------------------------------------


def _lane_words(site: SiteBanks, base: int) -> tuple[str, int | None, str]:
    """'lane 0 -> word 15 (bank 15), lane 1 -> word 47 (bank 15), ...' for the worst request, and the word stride.

    Words are counted from the start of the array (`base` is its 128-byte-aligned offset, so the
    bank of a word is its index mod 32).
    """
    s, w = site.worst_at
    m = site.worst.mask[s, w]
    a = site.worst.address[s, w]
    lanes = np.flatnonzero(m)
    if lanes.size == 0:
        return "", None, ""
    words = (a[lanes] - base) // BANK_BYTES
    banks = (a[lanes] // BANK_BYTES) % SHARED_BANKS
    # Show the collision, not the first lanes: in the phase and bank with the most distinct words,
    # one lane per distinct word (lanes reading the same word are a broadcast, not a conflict).
    per_phase = 32 // shared_phases(site.width)
    best: list[int] = []
    for phase in np.unique(lanes // per_phase, return_index=True)[0]:
        in_phase = np.flatnonzero(lanes // per_phase == phase)
        for bank in np.unique(banks[in_phase], return_index=True)[0]:
            idx = in_phase[banks[in_phase] == bank]
            _w, first = np.unique(words[idx], return_index=True)
            if len(first) > len(best):
                best = sorted(int(i) for i in idx[first])
    pick = best if len(best) >= 2 else list(range(min(4, lanes.size)))
    # How the lanes collide, relative to the first of them: the same lanes at the same word distances
    # is the same index arithmetic, so the same fix (kernlint/checks/grouping.py groups by it).
    pattern = ",".join(f"{int(lanes[i] - lanes[pick[0]])}:{int(words[i] - words[pick[0]])}" for i in pick)
    shown = ", ".join(f"lane {int(lanes[i])} -> word {int(words[i])} (bank {int(banks[i])})" for i in pick[:4])
    if len(pick) > 4:
        shown += f", ... ({len(pick)} lanes, each a different word of bank {int(banks[pick[0]])})"
    stride = None
    if lanes.size >= 2 and np.all(np.diff(lanes) == 1):
        d = np.diff(a[lanes])
        if np.all(d == d[0]) and d[0] % BANK_BYTES == 0:
            stride = int(d[0]) // BANK_BYTES
    return shown, stride, pattern


def _steps_note(site: SiteBanks) -> str:
    steps = site.steps
    if len(steps) < 2 or len({st.ways for st in steps}) < 2:
        return ""
    shown = [f"{st.label}: {st.ways}-way" if st.ways >= 2 else f"{st.label}: conflict-free"
             for st in steps[:MAX_STEPS_SHOWN]]
    more = f" (and {len(steps) - MAX_STEPS_SHOWN} more steps)" if len(steps) > MAX_STEPS_SHOWN else ""
    conflicted = [st for st in steps if st.ways >= 2]
    return (f"the degree changes from step to step ({len(conflicted)} of {len(steps)} steps conflict): "
            + "; ".join(shown) + more)


def check(result: KernelResult) -> Iterator[Diagnostic]:
    """KL201: report shared-memory requests whose lanes touch some bank in two or more distinct words.

    One finding per root cause: when one padding of an array's declaration removes the conflicts of
    all its accesses (a single edit), those accesses are one finding at the worst of them, listing
    the others (`metrics["related_locations"]`, SARIF `relatedLocations`).
    """
    sites, kernel_wavefronts = _conflicting(result)
    out: list[Diagnostic] = []
    for root, group in _by_root(sites).items():
        out.extend(_root_findings(result, root, group, suggest_fix(result, root), kernel_wavefronts))
    yield from sorted(out, key=lambda d: (d.line, d.column))


def check_deferred(result: KernelResult) -> Iterator[tuple[Diagnostic, Callable[[], Diagnostic] | None]]:
    """The findings of `check`, each as (draft, finish), for engine.combine, which compares the
    findings of several launch shapes by place, code, severity and ways and reports one per site.

    An array's fix search (re-evaluations of the kernel) is left to finish(), which gives the finding
    `check` gives, whenever the fix cannot change which findings the array has: it has one conflicting
    access, or an XOR swizzle with edits at every access removes all its conflicts (then one edit fixes
    them all whatever the padding search finds, and they are one finding at the worst access). The
    draft is that finding without the fix and is never reported. Otherwise the array's findings are
    computed as `check` computes them (finish is None).
    """
    sites, kernel_wavefronts = _conflicting(result)
    out: list[tuple[Diagnostic, Callable[[], Diagnostic] | None]] = []
    for root, group in _by_root(sites).items():
        if len(group) == 1 or _swizzle_edits(result, root, _array_swizzle(result, root)):
            worst = group[0] if len(group) == 1 else group[_worst(group)]
            out.append((_diagnostic(result, worst, Fix(""), kernel_wavefronts),
                        partial(_finished, result, root, group, kernel_wavefronts)))
            continue
        fix = suggest_fix(result, root)
        out.extend((d, None) for d in _root_findings(result, root, group, fix, kernel_wavefronts))
    yield from sorted(out, key=lambda p: (p[0].line, p[0].column))


def _finished(result: KernelResult, root: str, group: list[SiteBanks], kernel_wavefronts: int) -> Diagnostic:
    (found,) = _root_findings(result, root, group, suggest_fix(result, root), kernel_wavefronts)
    return found


def _by_root(sites: list[SiteBanks]) -> dict[str, list[SiteBanks]]:
    by_root: dict[str, list[SiteBanks]] = {}
    for site in sites:
        by_root.setdefault(site.root, []).append(site)
    return by_root


def _worst(group: list[SiteBanks]) -> int:
    """The index of the worst of an array's conflicting accesses: most ways, then most extra wavefronts,
    then the first line."""
    return max(range(len(group)), key=lambda i: (group[i].ways, group[i].total_wavefronts - group[i].total_ideal,
                                                 -group[i].first.span.line))


def _root_findings(result: KernelResult, root: str, group: list[SiteBanks], fix: Fix,
                   kernel_wavefronts: int) -> list[Diagnostic]:
    """The findings of one array's conflicting accesses (source order) given its fix: one at the worst
    of them, listing the others, when one edit fixes them all."""
    diags = [_diagnostic(result, site, fix, kernel_wavefronts) for site in group]
    if len(group) < 2 or not fix.one_edit_fixes_all:
        return diags
    w = _worst(group)
    worst = diags[w]
    others = [(s, d) for i, (s, d) in enumerate(zip(group, diags)) if i != w]
    related = [{"line": d.line, "column": d.column, "end_line": d.end_line, "end_column": d.end_column,
                "ways": s.ways, "message": d.message,
                "severity": d.severity.label} for s, d in sorted(others, key=lambda o: o[1].line)]
    listed = ", ".join(f"line {r['line']} ({r['ways']}-way)" for r in related)
    how = "padding" if fix.complete and fix.edit is not None else "swizzle"
    note = f"the same {how} also fixes the other conflicting accesses of {root}: {listed}"
    metrics = dict(worst.metrics)
    metrics["related_locations"] = related
    return [replace(worst, notes=(*worst.notes, note), metrics=metrics)]


def _conflicting(result: KernelResult) -> tuple[list[SiteBanks], int]:
    """The conflicting access sites in source order, and the kernel's evaluated shared-memory wavefronts."""
    every = list(_measured_sites(result.events).values())  # measured once per evaluation (the fix search reuses it)
    kernel_wavefronts = sum(s.total_wavefronts for s in every)
    sites = [s for s in every if s.ways >= 2 and s.always]
    return sorted(sites, key=lambda s: (s.first.span.line, s.first.span.column)), kernel_wavefronts


def _kernel_operations(result: KernelResult) -> int:
    """The warp instructions the kernel issued over its evaluated warps and samples (0: not known)."""
    end = next((e for e in result.events if isinstance(e, Work)), None)
    return int(np.asarray(end.per_warp).sum()) if end is not None else 0


def _diagnostic(result: KernelResult, site: SiteBanks, fix: Fix, kernel_wavefronts: int) -> Diagnostic:
    """The finding at one conflicting site, given the fix of its array."""
    e = site.first
    what = " and ".join(site.kinds)
    phases = shared_phases(site.width)
    average = site.total_wavefronts / site.total_ideal if site.total_ideal else float(site.ways)
    share = (site.total_wavefronts - site.total_ideal) / kernel_wavefronts if kernel_wavefronts else 1.0
    issued = _kernel_operations(result)
    work_share = (site.total_wavefronts - site.total_ideal) / issued if issued else None
    small = average >= MATERIAL_AVERAGE and (share < IMPACT_FRACTION
                                             or (work_share is not None and work_share < ISSUE_FRACTION))
    # A warning made by the sampled sizes alone (checks/bank_values.py): asked only of what would warn, as
    # each question is an evaluation of the kernel more.
    flip = bank_values.milder_at(result, site) if average >= MATERIAL_AVERAGE and not small else None
    depends = ""
    if flip is not None:
        name, samples, value, ways = flip
        depends = (f" with {name} sampled as a size ({' and '.join(map(str, samples))}), {ways}-way with "
                   f"{name} = {value}: it depends on {name}")
    message = (f"shared-memory {what} of {site.root}: {site.ways}-way bank conflict{depends}; the warp request "
               f"takes {site.wavefronts} wavefronts where {site.ideal} would do")
    severity = KL201.severity
    conflicted_steps = [st for st in site.steps if st.ways >= 2]
    if average < MATERIAL_AVERAGE:
        # Conflicts in a few steps of a network (a sort's compare-exchange strides) or a few
        # requests: what the site costs over all of them is what matters, not its worst request.
        severity = Severity.INFO
        where = (f"in {len(conflicted_steps)} of {len(site.steps)} steps" if len(site.steps) > 1
                 else f"in {site.conflicting} of {site.requests} requests")
        message += (f" ({site.ways}-way {where}; {average:.2f} wavefronts per request on average over the "
                    f"{site.requests} evaluated)")
    elif site.typical_ways != site.ways:
        message += f" (worst request; typical {site.typical_ways}-way)"
    if small:
        # A one-off access beside the kernel's main shared traffic (a final merge by one warp), or
        # conflicts that are a small part of the kernel's work: the message states the figure.
        severity = Severity.INFO
        if share < IMPACT_FRACTION:
            message += f" ({100 * share:.1f} % of the kernel's shared-memory wavefronts: info)"
        else:
            message += f" ({100 * (work_share or 0.0):.1f} % of the kernel's warp instructions: info)"
    if flip is not None:
        severity = Severity.INFO
    headline = fix.headline
    after = dict(fix.site_ways).get((e.span.line, e.span.column))
    if headline.endswith(" to reduce it") and after is not None and after >= site.ways:
        # The partial padding helps the array's other accesses, not this one.
        headline = (headline.removesuffix(" to reduce it")
                    + f" to reduce {site.root}'s other conflicts (this access stays {after}-way)")
    if headline:
        message += f"; {headline}"
    notes = []
    bases = {name: base for name, base, _t in result.shared_layout}
    shown, stride, pattern = _lane_words(site, bases.get(site.root, 0))
    if shown:
        notes.append(f"the worst request, in words of {site.root}: {shown}")
    if stride is not None and site.width == BANK_BYTES and stride:
        g = math.gcd(stride, SHARED_BANKS)
        notes.append(f"consecutive lanes are {stride} words ({stride * BANK_BYTES} bytes) apart: "
                     f"gcd({stride}, {SHARED_BANKS}) = {g}, so {g} lanes share each bank used")
    if phases > 1:
        notes.append(f"{site.width}-byte accesses are served in {phases} phases of {32 // phases} lanes; "
                     f"conflict-free costs {phases} wavefronts for a full warp")
    steps = _steps_note(site)
    if steps:
        notes.append(steps)
    if flip is not None:
        notes.append(f"severity info: the lanes' spacing scales with {flip[0]}, which kernlint sampled as a size: "
                     f"every sample is a multiple of the {SHARED_BANKS} banks, and an odd {flip[0]} is as "
                     f"plausible; set --define {flip[0]}=VALUE to decide")
    elif small and share < IMPACT_FRACTION:
        notes.append(f"severity info: its extra wavefronts are {100 * share:.1f} % of the kernel's evaluated "
                     f"shared-memory wavefronts (warning from {100 * IMPACT_FRACTION:.0f} %)")
    elif small:
        notes.append(f"severity info: its {site.total_wavefronts - site.total_ideal} extra wavefronts are "
                     f"{100 * share:.1f} % of the kernel's evaluated shared-memory wavefronts but "
                     f"{100 * (work_share or 0.0):.1f} % of the warp instructions it issues (warning from "
                     f"{100 * ISSUE_FRACTION:.1f} %: at most 4 issue slots each, under a tenth of the "
                     f"kernel's issue time)")
    elif severity is Severity.INFO:
        notes.append(f"severity info: averaged over the evaluated requests the conflict costs {average:.2f} "
                     f"wavefronts per request where 1 would do (warning from {MATERIAL_AVERAGE})")
    notes.append(f"{site.active_lanes} active lanes, {site.width} bytes per lane; {site.requests} warp requests "
                 f"evaluated, {site.conflicting} with conflicts (worst {site.ways}-way, typical "
                 f"{site.typical_ways}-way); {site.total_wavefronts} wavefronts in all where "
                 f"{site.total_ideal} would do")
    if e.text.startswith("in ") and " called from line " not in e.text:
        notes.append(f"the access is {e.text}, inlined here")
    elif async_note(e.text) or asm_note(e.text):
        notes.append(async_note(e.text) or asm_note(e.text))  # type: ignore[arg-type]
    notes.extend(call_chain_notes(e.via))
    if e.text.startswith("atomic"):
        notes.append(atomic_note(e.text, contention([e])))
    if fix.text:
        notes.append(f"fix: {fix.text}")
    metrics: dict[str, object] = {
        "array": site.root,
        "ways": site.ways,
        "typical_ways": site.typical_ways,
        "wavefronts": site.wavefronts,
        "ideal_wavefronts": site.ideal,
        "active_lanes": site.active_lanes,
        "bytes_per_lane": site.width,
        "requests": site.requests,
        "conflicting_requests": site.conflicting,
        "total_wavefronts": site.total_wavefronts,
        "total_ideal_wavefronts": site.total_ideal,
        "share_of_shared_wavefronts": round(share, 4),
    }
    if work_share is not None:
        metrics["share_of_operations"] = round(work_share, 4)
    if stride is not None:
        metrics["lane_stride_words"] = stride
    if pattern:
        metrics["root_cause"] = f"{site.ways}-way, width {site.width}, lanes:words {pattern}"
    if len(site.steps) > 1:
        metrics["ways_by_step"] = {st.label: st.ways for st in site.steps}
    if fix.padded_dim is not None:
        metrics["suggested_padding"] = fix.padded_dim
        metrics["padding_elements"] = fix.padding
        metrics["suggested_declaration"] = fix.declaration
        metrics["padding_removes_all_conflicts"] = fix.complete
        metrics["padding_bytes"] = fix.extra_bytes
    if fix.swizzle:
        metrics["swizzle_conflict_free"] = True
    if e.via:
        metrics["called_from"] = list(e.via)
    return Diagnostic(
        path=result.path, line=e.span.line, column=e.span.column, code=KL201.code, name=KL201.name,
        severity=severity, message=message, kernel=result.kernel.name, notes=tuple(notes),
        assumptions=result.assumptions(site.deps), metrics=metrics,
        end_line=e.span.end_line, end_column=e.span.end_column,
        fixes=fix.edits,
    )


KL201 = Rule("KL201", "shared-bank-conflict", "shared-memory request hits a bank with two or more distinct words",
             Severity.WARNING, check, deferred=check_deferred)
