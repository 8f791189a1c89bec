"""Hover text: a finding's numbers as a lane table, its assumptions and what fixing it buys; a rule's doc.

The lane table is built from the evaluation itself (the `MemoryAccess`/`Branch` events of the kernel
the finding came from), for the worst warp request at the finding's site: for a global access each
lane's byte offset from the first active lane and the 32-byte sector it falls in (counted from that
lane's sector); for a shared access each lane's word and bank; for a branch which active lanes take it;
for a loop each lane's trip count.
No pygls here: the protocol module wraps the Markdown in an LSP Hover.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernlint.base.diagnostics import Diagnostic

LANES_PER_ROW = 4  # (lane, value, value) triples per table row: 32 lanes in 8 rows
_CODE_RE = re.compile(r"KL\d{3}", re.IGNORECASE)


def _events_at(result: Any, d: Diagnostic, kinds: tuple[type, ...]) -> list[Any]:
    """The events of type `kinds` at `d`'s line and column, in the kernels `d` names (all when none)."""
    out = []
    if result is None:
        return out
    for kr in getattr(result, "results", ()):
        if d.kernel and kr.kernel.name != d.kernel and not kr.kernel.name.startswith(d.kernel.split("<")[0]):
            continue
        for e in kr.events:
            if isinstance(e, kinds) and e.span.line == d.line and e.span.column == d.column:
                out.append(e)
    return out


def _worst_request(values: np.ndarray, mask: np.ndarray) -> tuple[int, int] | None:
    """(sample, warp) of the largest value in `values` (S, W) among requests with an active lane."""
    active = mask.any(axis=-1)
    if not active.any():
        return None
    scored = np.where(active, values, -1)
    s, w = np.unravel_index(int(np.argmax(scored)), scored.shape)
    return int(s), int(w)


def _table(header: tuple[str, ...], cells: Sequence[tuple[Any, ...]]) -> str:
    """A Markdown table of (lane, value, ...) cells, LANES_PER_ROW lanes per row."""
    n = len(header)
    head = "|" + "|".join(" " + " | ".join(header) + " " for _ in range(LANES_PER_ROW)) + "|"
    rule = "|" + "|".join("|".join("---:" for _ in header) for _ in range(LANES_PER_ROW)) + "|"
    rows = [head, rule]
    for i in range(0, len(cells), LANES_PER_ROW):
        chunk = [tuple(str(v) for v in c) for c in cells[i:i + LANES_PER_ROW]]
        chunk += [("",) * n] * (LANES_PER_ROW - len(chunk))
        rows.append("|" + "|".join(" " + " | ".join(c) + " " for c in chunk) + "|")
    return "\n".join(rows)


def global_table(e: Any) -> str:
    """Lane -> byte offset / sector for the request of global access `e` that touches the most sectors."""
    from kernlint.model.metrics import SECTOR_BYTES, global_sectors

    sectors, _ideal = global_sectors(e.address, e.mask, e.width)
    at = _worst_request(sectors, e.mask)
    if at is None:
        return ""
    addr, m = e.address[at], e.mask[at]
    lanes = np.flatnonzero(m)
    base = int(addr[lanes[0]])
    first_sector = base // SECTOR_BYTES
    cells = [(int(k), f"{int(addr[k]) - base:+d}", str(int(addr[k]) // SECTOR_BYTES - first_sector)) for k in lanes]
    n = int(sectors[at])
    title = (f"Worst warp request ({n} sectors of {SECTOR_BYTES} B for {len(lanes)} lanes x {e.width} B; "
             f"sample {at[0]}, warp {at[1]}): byte offset from lane {lanes[0]}, sector counted from its sector")
    return title + "\n\n" + _table(("lane", "offset B", "sector"), cells)


def shared_table(e: Any) -> str:
    """Lane -> word / bank for the request of shared access `e` with the highest conflict degree."""
    from kernlint.model.metrics import shared_wavefronts

    ways, _wave, _ideal = shared_wavefronts(e.address, e.mask, e.width)
    at = _worst_request(ways, e.mask)
    if at is None:
        return ""
    addr, m = e.address[at], e.mask[at]
    lanes = np.flatnonzero(m)
    words = addr // 4
    cells = [(int(k), str(int(words[k])), str(int(words[k]) % 32)) for k in lanes]
    title = (f"Worst warp request ({int(ways[at])}-way; sample {at[0]}, warp {at[1]}): the 4-byte word of "
             f"{e.root} each lane touches, and its bank (word mod 32)")
    return title + "\n\n" + _table(("lane", "word", "bank"), cells)


def branch_table(e: Any) -> str:
    """Which active lanes of the most evenly split warp take the branch `e`."""
    mask = e.mask
    if e.arms is not None:
        side = e.arms
    else:
        side = e.cond.astype(np.int64)
    # The most even split: the warp whose smaller side holds the most lanes.
    taken = np.where(mask, side != 0, False).sum(axis=-1) if e.arms is None else None
    if taken is not None:
        score = np.minimum(taken, mask.sum(axis=-1) - taken)
    else:
        score = np.array([[len(np.unique(side[s, w][mask[s, w]])) for w in range(mask.shape[1])]
                          for s in range(mask.shape[0])])
    at = _worst_request(score, mask)
    if at is None:
        return ""
    m, sd = mask[at], side[at]
    cells = []
    for k in range(32):
        if not m[k]:
            cells.append((k, "inactive"))
        elif e.arms is not None:
            cells.append((k, f"arm {int(sd[k])}"))
        else:
            cells.append((k, "taken" if sd[k] else "not taken"))
    title = f"Active lanes of the most divided warp (sample {at[0]}, warp {at[1]}) at this branch"
    return title + "\n\n" + _table(("lane", "side"), cells)


def loop_table(e: Any) -> str:
    """Each lane's trip count in the warp whose lanes' trip counts differ most, at the loop `e`."""
    mask, trips = e.mask, e.trips
    hi = np.where(mask, trips, np.iinfo(np.int64).min).max(axis=-1)
    lo = np.where(mask, trips, np.iinfo(np.int64).max).min(axis=-1)
    at = _worst_request(np.where(mask.any(axis=-1), hi - lo, -1), mask)
    if at is None:
        return ""
    m, t = mask[at], trips[at]
    cells = [(k, str(int(t[k])) if m[k] else "inactive") for k in range(32)]
    more = " (at least: the evaluation stopped counting)" if e.truncated else ""
    title = f"Trip counts of the most divided warp (sample {at[0]}, warp {at[1]}) at this loop{more}"
    return title + "\n\n" + _table(("lane", "trips"), cells)


def lane_table(d: Diagnostic, result: Any) -> str:
    """The lane table of finding `d` from the evaluation `result` (a LintResult), or "" when none applies."""
    from kernlint.eval.events import Branch, Loop, MemoryAccess

    if d.code in ("KL101", "KL102", "KL103", "KL201"):
        space = "shared" if d.code == "KL201" else "global"
        kind = {"KL101": "load", "KL102": "store"}.get(d.code)
        for e in _events_at(result, d, (MemoryAccess,)):
            if e.space == space and (kind is None or e.kind == kind):
                return shared_table(e) if space == "shared" else global_table(e)
    if d.code in ("KL301", "KL303", "KL304", "KL305"):
        for e in _events_at(result, d, (Branch,)):
            return branch_table(e)
    if d.code in ("KL302", "KL305"):
        for e in _events_at(result, d, (Loop,)):
            return loop_table(e)
    return ""


def finding_markdown(d: Diagnostic, result: Any) -> str:
    """The hover of finding `d`: the message, the lane table, the notes, the assumptions, what fixing buys."""
    parts = [f"**{d.code} {d.name}** ({d.severity.label}): {d.message}"]
    table = lane_table(d, result)
    if table:
        parts.append(table)
    buys = [n for n in d.notes if n.startswith("what fixing it buys")]
    notes = [n for n in d.notes if n not in buys]
    if notes:
        parts.append("\n".join(f"- {n}" for n in notes))
    if d.assumptions:
        parts.append("**Assuming**\n\n" + "\n".join(f"- {a}" for a in d.assumptions))
    if buys:
        parts.append("**" + buys[0].split(":", 1)[0].capitalize() + "**:" + buys[0].split(":", 1)[1])
    parts.append(f"`kernlint --explain {d.code}` for the rule's documentation")
    return "\n\n".join(parts)


def code_at(line_text: str, character: int) -> str | None:
    """The rule code (KLnnn) under the 0-based `character` of `line_text`, if any."""
    for m in _CODE_RE.finditer(line_text):
        if m.start() <= character <= m.end():
            return m.group(0).upper()
    return None


def rule_markdown(code: str) -> str | None:
    """The rule's documentation (what `kernlint --explain CODE` prints), or None for an unknown code."""
    from kernlint.checks.docs import rule_doc
    from kernlint.checks.rule_table import RULES

    try:
        return rule_doc(code, RULES)
    except (KeyError, OSError):
        return None
