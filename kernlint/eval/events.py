"""What the warp evaluator observed: one event per executed site, for the lanes of every warp.

Arrays have shape (samples, warps, 32): a sample is one assignment of the assumed unknowns
(blockIdx, runtime sizes), a warp is 32 consecutive linear thread ids of the block.
"""
from __future__ import annotations


import numpy as np

from kernlint.base.frozen import frozen
from kernlint.ir.nodes import Span


@frozen
class MemoryAccess:
    """A load or store of `width` bytes per lane at byte address `address` in `space`."""

    span: Span
    space: str  # global | shared | constant | local
    kind: str  # load | store
    width: int
    address: np.ndarray  # int64 (S, W, 32); meaningful where `mask`
    mask: np.ndarray  # bool (S, W, 32): lanes that executed the access
    root: str  # the array or pointer parameter reached
    deps: frozenset[str]  # assumed symbols the address depends on
    loop_iter: tuple[int, ...] = ()  # iteration numbers of the enclosing loops
    loop_vars: tuple[tuple[str, int | None], ...] = ()  # (name, uniform value) of enclosing loop variables
    vector_elems: int = 1  # lanes move this many elements (float4 = 4)
    text: str = ""  # the source expression, for messages
    live: np.ndarray | None = None  # lanes still running the kernel (not returned) when it executed
    merged: tuple[str, ...] = ()  # fields of one vector element whose loads nvcc merges into this access
    via: tuple[int, ...] = ()  # lines of the calls that inlined the helper it is in, outermost first


@frozen
class Branch:
    """A two-way branch: `cond` per lane, under `mask`. kind: if | ternary | return | switch."""

    span: Span
    kind: str
    cond: np.ndarray  # bool (S, W, 32)
    mask: np.ndarray
    deps: frozenset[str]
    loop_iter: tuple[int, ...] = ()
    loop_vars: tuple[tuple[str, int | None], ...] = ()
    then_cost: int = 0  # expression nodes on the taken side, loops x 8 (a static proxy)
    else_cost: int = 0
    then_has_loop: bool = False
    else_has_loop: bool = False
    text: str = ""
    # Operations each warp issued on each side (S, W); for kind 'return': the warp's work so far.
    then_work: np.ndarray | None = None
    else_work: np.ndarray | None = None
    arms: np.ndarray | None = None  # int (S, W, 32): the arm each lane takes (switch); None: `cond`
    via: tuple[int, ...] = ()  # lines of the calls that inlined the helper it is in, outermost first


@frozen
class Loop:
    """A loop and how many iterations each lane ran; `truncated` when evaluation stopped early."""

    span: Span
    trips: np.ndarray  # int (S, W, 32)
    mask: np.ndarray  # lanes that reached the loop
    truncated: bool
    deps: frozenset[str]
    body_cost: int = 0
    text: str = ""
    work: np.ndarray | None = None  # operations each warp issued in the loop (S, W)
    via: tuple[int, ...] = ()  # lines of the calls that inlined the helper it is in, outermost first


@frozen
class Barrier:
    """`__syncthreads()` and friends (scope block) or `__syncwarp`/`*_sync` intrinsics (scope warp)."""

    span: Span
    name: str
    scope: str  # block | warp
    mask: np.ndarray  # lanes that reached it
    live: np.ndarray  # lanes of the block still running (not returned) at that point
    member_mask: int | None = None  # the mask argument of a *_sync intrinsic, when known
    deps: frozenset[str] = frozenset()
    loop_iter: tuple[int, ...] = ()
    via: tuple[int, ...] = ()  # lines of the calls that inlined the helper it is in, outermost first
    text: str = ""  # where it is when a helper from another file was inlined ("in f() at h.cuh:3")


@frozen
class DataBranch:
    """A branch, loop or switch whose condition depends on data loaded at lane-varying addresses.

    The evaluator cannot tell which lanes take it, so it runs the code under it for every lane that
    reaches it (`mask`) and records what that code costs. kind: if | loop | switch.
    """

    span: Span
    kind: str
    mask: np.ndarray  # bool (S, W, 32): lanes that reach the condition
    loads: tuple[tuple[int, int, int, int, str], ...]  # the loads deciding it: (line, col, end_line, end_col, root)
    deps: frozenset[str]
    loop_iter: tuple[int, ...] = ()
    loop_vars: tuple[tuple[str, int | None], ...] = ()
    work: np.ndarray | None = None  # operations each warp issued under the condition (S, W), one evaluated pass
    memory: np.ndarray | None = None  # memory requests each warp issued under it (S, W)
    has_loop: bool = False  # the guarded code contains a loop (or is one)
    exit: str = ""  # the branch only leaves: return | break | continue
    work_before: np.ndarray | None = None  # for exits: operations each warp issued up to the branch
    memory_before: np.ndarray | None = None  # for exits: memory requests each warp issued up to the branch
    search: bool = False  # a loop (or a `break`'s loop) whose trip count is decided inside it (eval/data_shape.py)
    common_work: np.ndarray | None = None  # an index-validity test: operations of its common (indexing) side (S, W)
    exceptional: int = 0  # line of the index-validity test on whose exceptional side this condition lies
    role: str = ""  # the guarded code reports an error ('diagnostic') or appends via an atomic slot ('compaction')
    unmeasured: int = 0  # memory accesses executed under it whose address was not evaluated (one pass)
    body_ran: bool = True  # a loop: its body issued work in the evaluated pass (False: the work is unknown)
    opaque: int = 0  # a loop: statements of its body the evaluator cannot run (inline assembly, ...)
    text: str = ""  # where it is when a helper from another file was inlined ("in f() at h.cuh:3")


@frozen
class Work:
    """Emitted once at the end: operations each warp issued in the whole kernel, shape (S, W)."""

    span: Span
    per_warp: np.ndarray
    lanes: np.ndarray | None = None  # active lanes summed over those operations (S, W)
    memory: np.ndarray | None = None  # memory requests each warp issued (S, W)
    flops: np.ndarray | None = None  # (2, S, W): FP32 and FP64 operations summed over lanes (eval/flops.py)


Event = MemoryAccess | Branch | Loop | Barrier | DataBranch | Work
