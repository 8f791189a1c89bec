"""What the warp evaluator observed: one event per executed site, for the lanes of every warp.

Arrays have shape (samples, warps, 32): a sample is one assignment of the assumed unknowns
(blockIdx, runtime sizes), a warp is 32 consecutive linear thread ids of the block.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernlint.ir import Span


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Branch:
    """A two-way branch: `cond` per lane, under `mask`. kind: if | ternary | return | switch."""

    span: Span
    kind: str
    cond: np.ndarray  # bool (S, W, 32)
    mask: np.ndarray
    deps: frozenset[str]
    loop_iter: tuple[int, ...] = ()
    loop_vars: tuple[tuple[str, int | None], ...] = ()
    then_cost: int = 0  # statements evaluated on the taken side (a rough instruction proxy)
    else_cost: int = 0
    then_has_loop: bool = False
    else_has_loop: bool = False
    text: str = ""
    # Statements each warp executed on each side (S, W); for kind 'return': the warp's work so far.
    then_work: np.ndarray | None = None
    else_work: np.ndarray | None = None
    arms: np.ndarray | None = None  # int (S, W, 32): the arm each lane takes (switch); None: `cond`


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop and how many iterations each lane ran; `truncated` when evaluation stopped early."""

    span: Span
    trips: np.ndarray  # int (S, W, 32)
    mask: np.ndarray  # lanes that reached the loop
    truncated: bool
    deps: frozenset[str]
    body_cost: int = 0
    text: str = ""
    work: np.ndarray | None = None  # statements each warp executed in the loop (S, W)


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Work:
    """Emitted once at the end: statements each warp executed in the whole kernel, shape (S, W)."""

    span: Span
    per_warp: np.ndarray


Event = MemoryAccess | Branch | Loop | Barrier | Work
