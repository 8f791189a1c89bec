"""Cooperative groups under the launch shape: thread blocks, tiles and coalesced groups, their ranks and sizes, and their syncs and collectives as barriers and warp-synchronous operations."""
from __future__ import annotations

import re

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import events as ev
from kernlint.eval.values import UNKNOWN, Interp, Val, const, unknown
from kernlint.project.launch import fold_bound

WARP = 32
FULL = 0xFFFFFFFF

# Group values carry their kind and sizes as fields (a group handle has no data of its own).
BLOCK, TILE, COALESCED, GRID, PARTITION = 1, 2, 3, 4, 5

_FACTORIES = {"this_thread_block", "tiled_partition", "coalesced_threads", "this_grid", "binary_partition",
              "labeled_partition"}
_COLLECTIVE_METHODS = {"shfl", "shfl_up", "shfl_down", "shfl_xor", "any", "all", "ballot", "match_any", "match_all"}
_COLLECTIVE_FUNCTIONS = {"reduce", "inclusive_scan", "exclusive_scan", "reduce_update_async", "reduce_store_async"}
_RANKS = {"thread_rank", "meta_group_rank", "meta_group_size", "size", "num_threads", "group_index", "thread_index",
          "group_dim", "dim_threads", "block_rank", "block_index", "num_blocks", "dim_blocks", "sync", "barrier_wait"}


def group(kind: int, size: Val, parent: int = 0, ident: Val | None = None) -> Val:
    """A group handle: `size` threads (per lane), partitioned from a group of `parent` threads."""
    fields: list[tuple[str, Val]] = [("__cg", const(kind)), ("size", size), ("parent", const(parent))]
    if ident is not None:
        fields.append(("rank", ident))
    return Val(None, fields=tuple(fields))


def _kind(v: Val) -> int:
    k = v.field("__cg")
    return int(k.data.flat[0]) if k is not None and k.data is not None else 0


def _group_from_type(interp: Interp, t: ir.CType) -> Val | None:
    """A group from its declared type where its value is not known (a member, an opaque copy)."""
    name = t.name or ""
    if t.kind == "reference" and t.pointee is not None:
        name = t.pointee.name
    m = re.search(r"thread_block_tile<\s*([^>]+?)\s*>", name)
    if m:
        n = _fold(interp, m.group(1))
        return group(TILE, const(n), _threads(interp)) if n else None
    if re.search(r"\bthread_block\b", name):
        return block_group(interp)
    if "grid_group" in name:
        return grid_group(interp)
    return None


def _threads(interp: Interp) -> int:
    bx, by, bz = interp.shape.block
    return bx * by * bz


def block_group(interp: Interp) -> Val:
    return group(BLOCK, const(_threads(interp)), _threads(interp))


def _builtin(interp: Interp, name: str, f: str) -> Val:
    v = interp.builtin_member(ir.Ref(name, "builtin", ir.UNKNOWN_TYPE, ir.NO_SPAN), f)
    return v if v is not None else UNKNOWN


def _block_rank(interp: Interp) -> Val:
    """The block's rank in the grid: blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)."""
    bx, by, bz = (_builtin(interp, "blockIdx", f) for f in "xyz")
    gx, gy = (_builtin(interp, "gridDim", f) for f in "xy")
    parts = (bx, by, bz, gx, gy)
    if any(p.data is None for p in parts):
        return unknown(*parts)
    data = bx.data + gx.data * (by.data + gy.data * bz.data)
    return Val(data, frozenset().union(*(p.deps for p in parts)))


def grid_group(interp: Interp) -> Val:
    """`this_grid()`: every thread of the launch; a lane's rank is its block's rank times the block's
    threads plus its rank in the block (CUDA C++ Programming Guide, "Grid Group")."""
    blocks = [_builtin(interp, "gridDim", f) for f in "xyz"]
    if any(b.data is None for b in blocks):
        size = unknown(*blocks)
    else:
        size = Val(blocks[0].data * blocks[1].data * blocks[2].data * _threads(interp),
                   frozenset().union(*(b.deps for b in blocks)))
    brank = _block_rank(interp)
    rank = (Val(brank.data * _threads(interp) + np.array(interp.lin, dtype=np.int64), brank.deps)
            if brank.data is not None else brank)
    return group(GRID, size, 0, rank)


def _fold(interp: Interp, text: str) -> int | None:
    text = interp.bindings.get(text.strip(), text.strip())
    if text in interp.defines:
        return int(interp.defines[text])
    return fold_bound(text, {}, interp.tu.macros)


def _receiver_group(interp: Interp, e: ir.Call) -> Val | None:
    assert e.receiver is not None
    v = interp.eval(e.receiver)
    if _kind(v):
        return v
    return _group_from_type(interp, e.receiver.ctype)


def _arg_group(interp: Interp, arg: ir.Expr) -> Val | None:
    v = interp.eval(arg)
    if _kind(v):
        return v
    return _group_from_type(interp, arg.ctype)


def _is_cg_type(t: ir.CType) -> bool:
    name = t.pointee.name if t.kind == "reference" and t.pointee is not None else t.name
    return bool(re.search(r"thread_block|thread_group|grid_group|coalesced_group|cooperative_groups", name or ""))


def eval_call(interp: Interp, e: ir.Call) -> Val | None:
    """The value of a cooperative-groups call, or None when `e` is not one (the caller goes on)."""
    name = e.name
    if e.receiver is not None:
        if name not in _RANKS and name not in _COLLECTIVE_METHODS:
            return None
        if not (_is_cg_type(e.receiver.ctype) or e.receiver.ctype.kind in ("template", "unknown")
                or _kind(_peek(interp, e.receiver))):
            return None
        g = _receiver_group(interp, e)
        if g is None:
            if e.receiver.ctype.kind in ("template", "unknown") and not _is_cg_type(e.receiver.ctype):
                return None  # a dependent object of some other class: not ours
            for a in e.args:
                interp.eval(a)
            return UNKNOWN
        return _method(interp, e, g)
    if name in _FACTORIES:
        if name != "this_thread_block" and name != "this_grid" and name != "coalesced_threads" and not e.args:
            return None
        if e.args and not _is_cg_type(e.args[0].ctype) and e.args[0].ctype.kind not in ("template", "unknown"):
            return None
        return _factory(interp, e)
    if name in _COLLECTIVE_FUNCTIONS or name in ("sync", "wait", "wait_prior"):
        if not e.args or not (_is_cg_type(e.args[0].ctype) or e.args[0].ctype.kind in ("template", "unknown")):
            return None
        if interp.find_callee(e) is not None:
            return None  # a user's own `reduce(...)`
        g = _arg_group(interp, e.args[0])
        for a in e.args[1:]:
            interp.eval(a)
        if g is None:
            return UNKNOWN
        if name == "sync":
            _sync(interp, e, g, "cg::sync")
            return UNKNOWN
        if name in ("wait", "wait_prior"):
            return UNKNOWN
        _collective(interp, e, g, f"cg::{name}")
        return UNKNOWN
    return None


def _peek(interp: Interp, e: ir.Expr) -> Val:
    """A local's value without evaluating anything (to ask whether it is a group)."""
    inner = e
    while isinstance(inner, ir.Cast):
        inner = inner.operand
    if isinstance(inner, ir.Ref):
        return interp.frame.env.get(inner.name, UNKNOWN)
    return UNKNOWN


def _factory(interp: Interp, e: ir.Call) -> Val:
    name = e.name
    if name == "this_thread_block":
        return block_group(interp)
    if name == "this_grid":
        return grid_group(interp)
    if name == "coalesced_threads":
        return group(COALESCED, UNKNOWN, ident=Val(interp.mask.copy().astype(np.int64)))
    if name in ("labeled_partition", "binary_partition"):
        return _partition(interp, e)
    parent = _arg_group(interp, e.args[0])
    size: int | None = None
    if name == "tiled_partition":
        if e.template_args:
            size = _fold(interp, e.template_args[0])
        elif len(e.args) >= 2:
            v = interp.eval(e.args[1])
            if v.data is not None and np.all(v.data == v.data.flat[0]):
                size = int(v.data.flat[0])
        else:
            m = re.search(r"thread_block_tile<\s*(\d+)\s*>", e.ctype.name)
            size = int(m.group(1)) if m else None
    else:
        for a in e.args[1:]:
            interp.eval(a)
    if parent is None or size is None or size <= 0 or size & (size - 1):
        return group(TILE, UNKNOWN)
    psize = _size_of(interp, parent)
    if psize is None or psize % size and psize > size:
        return group(TILE, UNKNOWN)
    # A tile's lanes in its parent: consecutive ranks of the parent, `size` at a time.
    prank = _rank(interp, parent)
    return group(TILE, const(size), psize, prank)


def _partition(interp: Interp, e: ir.Call) -> Val:
    """`labeled_partition(parent, label)` / `binary_partition(parent, pred)`: the lanes of each tile of
    `parent` (each warp for a coalesced group) that run the call with equal labels form a group; a
    lane's rank is the number of such lanes below it (CUDA C++ Programming Guide, "labeled_partition").
    When the labels are unknown (loaded data), so are ranks and sizes, for the labels' reason."""
    parent = _arg_group(interp, e.args[0]) if e.args else None
    label = interp.eval(e.args[1]) if len(e.args) >= 2 else UNKNOWN
    for a in e.args[2:]:
        interp.eval(a)
    pkind = _kind(parent) if parent is not None else 0
    n = _size_of(interp, parent) if pkind == TILE and parent is not None else WARP if pkind == COALESCED else None
    if label.data is None or n is None or n > WARP:
        # Unknown for the labels' reason, but not "loaded data lanes read at different addresses"
        # (KL305): a leader test on the rank (`g.thread_rank() == 0`) is one lane per group by design.
        why = Val(None, label.deps, why=label.why if label.data is None else ("unmodelled", "a partition of this group"))
        return Val(None, fields=(("__cg", const(PARTITION)), ("size", why), ("rank", why), ("parent", const(0))))
    shape = interp.mask.shape
    lab = np.broadcast_to(label.data, shape)
    if e.name == "binary_partition":
        lab = (lab != 0).astype(np.int64)
    tile = np.broadcast_to(interp.lin // n, shape)
    same = (lab[..., :, None] == lab[..., None, :]) & (tile[..., :, None] == tile[..., None, :])
    members = same & interp.mask[..., None, :]
    below = np.tril(np.ones((shape[-1], shape[-1]), dtype=bool), -1)  # [j, i]: lane i is below lane j
    rank = (members & below).sum(axis=-1).astype(np.int64)
    size = members.sum(axis=-1).astype(np.int64)
    return Val(None, fields=(("__cg", const(PARTITION)), ("size", Val(size, label.deps)),
                             ("rank", Val(rank, label.deps)), ("parent", const(n))))


def _size_of(interp: Interp, g: Val) -> int | None:
    s = g.field("size")
    if s is None or s.data is None or not np.all(s.data == s.data.flat[0]):
        return None
    return int(s.data.flat[0])


def _rank(interp: Interp, g: Val) -> Val:
    """Each lane's rank in group `g`."""
    kind = _kind(g)
    if kind == BLOCK:
        return Val(np.array(interp.lin, dtype=np.int64))
    if kind == TILE:
        n = _size_of(interp, g)
        prank = g.field("rank")
        if n is None or prank is None or prank.data is None:
            return UNKNOWN
        return Val(prank.data % n, prank.deps)
    if kind == COALESCED:
        active = g.field("rank")
        if active is None or active.data is None:
            return UNKNOWN
        return Val(np.cumsum(active.data, axis=-1) - 1)
    if kind in (GRID, PARTITION):
        rank = g.field("rank")
        return rank if rank is not None else UNKNOWN
    return UNKNOWN


def _method(interp: Interp, e: ir.Call, g: Val) -> Val:
    name = e.name
    kind = _kind(g)
    if name in ("sync", "barrier_wait"):
        _sync(interp, e, g, f"{_label(interp, g)}.sync")
        return UNKNOWN
    if name in _COLLECTIVE_METHODS:
        args = [interp.eval(a) for a in e.args]
        _collective(interp, e, g, f"{_label(interp, g)}.{name}")
        return unknown(*args)
    for a in e.args:
        interp.eval(a)
    if name == "thread_rank":
        return _rank(interp, g)
    if name in ("size", "num_threads"):
        if kind == COALESCED:
            active = g.field("rank")
            if active is None or active.data is None:
                return UNKNOWN
            return Val(np.broadcast_to(active.data.sum(axis=-1, keepdims=True), active.data.shape).copy())
        s = g.field("size")
        return s if s is not None else UNKNOWN
    if kind == TILE and name in ("meta_group_rank", "meta_group_size"):
        n = _size_of(interp, g)
        prank = g.field("rank")
        parent = g.field("parent")
        if n is None or prank is None or prank.data is None:
            return UNKNOWN
        if name == "meta_group_rank":
            return Val(prank.data // n, prank.deps)
        p = int(parent.data.flat[0]) if parent is not None and parent.data is not None else 0
        return const((p + n - 1) // n) if p > 0 else UNKNOWN
    if kind == GRID and name in ("block_rank", "num_blocks"):
        if name == "block_rank":
            return _block_rank(interp)
        blocks = [_builtin(interp, "gridDim", f) for f in "xyz"]
        if any(b.data is None for b in blocks):
            return unknown(*blocks)
        return Val(blocks[0].data * blocks[1].data * blocks[2].data, frozenset().union(*(b.deps for b in blocks)))
    if kind == BLOCK and name in ("group_index", "thread_index", "group_dim", "dim_threads"):
        src = {"group_index": "blockIdx", "thread_index": "threadIdx"}.get(name, "blockDim")
        base = ir.Ref(src, "builtin", ir.UNKNOWN_TYPE, e.span)
        fields = []
        for f in "xyz":
            v = interp.builtin_member(base, f)
            fields.append((f, v if v is not None else UNKNOWN))
        return Val(None, fields=tuple(fields))
    return UNKNOWN


def _label(interp: Interp, g: Val) -> str:
    kind = _kind(g)
    if kind == TILE:
        n = _size_of(interp, g)
        return f"thread_block_tile<{n if n is not None else '?'}>"
    return {BLOCK: "thread_block", COALESCED: "coalesced_group", GRID: "grid_group",
            PARTITION: "coalesced_group"}.get(kind, "group")


def _sync(interp: Interp, e: ir.Call, g: Val, name: str) -> None:
    kind = _kind(g)
    if kind in (BLOCK, GRID):
        interp.barrier(e, "sync", "block", None)  # __syncthreads() semantics (a grid sync includes it)
        return
    if kind == TILE:
        _tile_event(interp, e, g, "tile.sync")
    # A coalesced group is, by construction, the lanes that run the call: it never diverges.


def _collective(interp: Interp, e: ir.Call, g: Val, name: str) -> None:
    if _kind(g) == TILE:
        _tile_event(interp, e, g, name)


def _tile_event(interp: Interp, e: ir.Call, g: Val, name: str) -> None:
    """A tile-wide operation: every live lane of a tile must run it when any lane of that tile does.

    Lanes of tiles that do not run it at all are not part of this operation, so they count as
    arriving; what remains missing is a lane of a participating tile that did not come.
    """
    n = _size_of(interp, g)
    prank = g.field("rank")
    if n is None or prank is None or prank.data is None:
        return  # a tile of unknown size or placement: say nothing
    ret = interp.frames[0].ret_mask
    live = interp.entry_mask & ~ret if ret is not None else interp.entry_mask
    reached = interp.mask
    tile_id = np.broadcast_to(interp.lin // n, reached.shape)  # tiles are consecutive threads
    flat_ids = tile_id.reshape(reached.shape[0], -1)
    flat_reached = reached.reshape(reached.shape[0], -1)
    participating = np.zeros_like(flat_reached)
    for s in range(flat_ids.shape[0]):
        ids = flat_ids[s]
        hit = np.zeros(int(ids.max()) + 1, dtype=bool)
        np.logical_or.at(hit, ids[flat_reached[s]], True)
        participating[s] = hit[ids]
    arrived = (flat_reached | ~participating).reshape(reached.shape)
    iters, _ = interp.loop_context()
    scope = "warp" if n <= WARP else "block"
    interp.emit(ev.Barrier(e.span, name, scope, arrived.copy(), live.copy(), FULL if scope == "warp" else None,
                           frozenset(), iters))
