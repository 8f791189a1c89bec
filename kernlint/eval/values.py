"""Per-lane values: NumPy arrays over (samples, warps, lanes), or unknown.

A uniform value is stored with shape (S, 1, 1) and broadcast; a per-lane value with (S, W, 32).
`deps` records which assumed unknowns (runtime sizes, blockIdx) a value was computed from, so a
finding can say what it assumed. `data is None` means unknown: loaded data, an opaque call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from kernlint.ir import nodes as ir

# The interpreter (eval/interp.py) as the helper modules it calls with itself see it (atomics, cooperative
# groups): they call back into it, and name its type loosely rather than import the module that imports them.
Interp = Any


class Val(NamedTuple):
    """One expression's value for every lane (see the module's docstring).

    A `NamedTuple` rather than a `kernlint.base.frozen` dataclass: as immutable, with the same fields,
    defaults, repr, equality and hash, and built in a third of the time (one tuple, where the dataclass's
    __init__ stores eleven slots one by one; ~2 million are built over the speed bench's 299 files).
    Unlike the dataclass it is also a tuple: nothing iterates, indexes or sizes one."""

    data: np.ndarray | None
    deps: frozenset[str] = frozenset()
    space: str = ""  # pointers: global | shared | constant | local | unknown
    root: str = ""  # pointers: the parameter or array they point into
    fields: tuple[tuple[str, "Val"], ...] = ()  # struct values whose members are known
    is_float: bool = False
    uninit: bool = False  # declared without an initializer: lanes never assigned hold no value at all
    # Unknown values computed from memory that lanes of a warp read at different addresses (KL305):
    # each load as (line, column, end_line, end_column, root). Empty for warp-uniform or opaque values.
    loads: frozenset[tuple[int, int, int, int, str]] = frozenset()
    # Why an unknown value is unknown, as (kind, detail): ("loaded", ""), ("template", "N"), ... (see
    # `kernlint.eval.coverage.REASONS`); None when known or when nothing more specific is known.
    why: tuple[str, str] | None = None
    # Unknown, but the same for every lane of a warp (a load every lane makes at one address, a
    # parameter, a ballot, a __shared__ scalar): a branch on it cannot split a warp.
    uniform: bool = False
    # Unknown integers: every lane's value lies in [lo, hi] (its narrow C type, a mask `& m`: see
    # eval/bounded_index.py). On a known address: a stand-in for a read at such an index (its
    # `uniform`: every lane reads the one element a warp-uniform index picks).
    bound: tuple[int, int] | None = None

    @property
    def known(self) -> bool:
        return self.data is not None

    def field(self, name: str) -> "Val | None":
        for k, v in self.fields:
            if k == name:
                return v
        return None


UNKNOWN = Val(None)
UNINIT = Val(None, uninit=True)


# Which cause to name when an unknown value has several: the most actionable first (a template
# argument or a header the user can supply), loaded data (inherent to the code) after them.
WHY_RANK = {"local": 0, "template": 1, "unresolved": 2, "missing_type": 2, "param": 3, "type": 4, "global": 5,
            "loaded": 6, "loop": 7, "depth": 8, "call": 9, "fnptr": 9, "unmodelled": 10}


def best_why(*whys: tuple[str, str] | None) -> tuple[str, str] | None:
    """The most telling of several causes of unknown (see `WHY_RANK`); None when there is none."""
    best = None
    for w in whys:
        if w is not None and (best is None or WHY_RANK.get(w[0], 99) < WHY_RANK.get(best[0], 99)):
            best = w
    return best


def unknown(*vals: Val, why: tuple[str, str] | None = None, uniform: bool | None = None) -> Val:
    """An unknown value computed from `vals`: their deps, and the most telling cause among them (else `why`).

    It is warp-uniform when every input is (known values stored once per warp, shape (S, 1, 1), or
    unknown uniform ones), unless `uniform` says otherwise (a value merged across a branch is not).
    """
    deps: frozenset[str] = _NONE
    loads: frozenset[tuple[int, int, int, int, str]] = _NONE
    best = None
    all_uniform = bool(vals)
    for v in vals:  # (one of the evaluator's most frequent calls: unions only of what is not empty)
        if v.deps:
            deps = deps | v.deps if deps else v.deps
        if v.loads:
            loads = loads | v.loads if loads else v.loads
        if v.data is None:
            w = v.why
            if w is not None:
                # best_why(best, w), written out: the first of the most telling rank stays
                if best is None or _RANK(w[0], 99) < _RANK(best[0], 99):
                    best = w
            if not v.uniform:
                all_uniform = False
        elif v.data.shape[-1] != 1:
            all_uniform = False
    if uniform is None:
        uniform = all_uniform
    return Val(None, deps, loads=loads, why=best or why, uniform=uniform)


_NONE: frozenset = frozenset()
_RANK = WHY_RANK.get


def why_of(*vals: Val) -> tuple[str, str] | None:
    """The most telling cause among the unknown values of `vals`."""
    return best_why(*(v.why for v in vals if v.data is None))


def const(value: int | float) -> Val:
    is_float = isinstance(value, float)
    if is_float:
        return Val(np.full((1, 1, 1), value, dtype=np.float64), is_float=True)
    data = _INT_CONSTANTS.get(value)
    if data is None:
        key = value
        if not -(1 << 63) <= value < (1 << 63):
            # `0xFFFFFFFFFFFFFFFFull`: held as the 64-bit pattern (int64 arithmetic wraps the same way)
            value = ((int(value) + (1 << 63)) % (1 << 64)) - (1 << 63)
        data = np.full((1, 1, 1), value, dtype=np.int64)
        if len(_INT_CONSTANTS) >= 1024:
            _INT_CONSTANTS.clear()
        _INT_CONSTANTS[key] = data
    return Val(data)


# The arrays of integer constants, shared: value arrays are never written in place. Each `const` is a
# Val of its own (one constant assigned on two paths must still merge).
_INT_CONSTANTS: dict[int, np.ndarray] = {}


def wrap_int(data: np.ndarray, ctype: ir.CType) -> np.ndarray:
    """Reduce integer results to the C type's width (int wraps at 32 bits, unsigned modulo 2^32)."""
    if ctype.kind == "bool":
        return (data != 0).astype(np.int64)
    if ctype.kind != "int" or ctype.size >= 8 or ctype.size <= 0:
        return data
    bits = ctype.size * 8
    m = (1 << bits) - 1
    if ctype.signed:
        narrow = _SIGNED.get(ctype.size)
        if narrow is not None and data.dtype == np.int64:
            # Through the signed type of that width: the same two's-complement wrap as below, in two
            # NumPy calls instead of three (the evaluator wraps most integer results).
            return data.astype(narrow).astype(np.int64)
        half = 1 << (bits - 1)
        return ((data + half) & m) - half
    return data & m


_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32}


def any_set(a: np.ndarray) -> bool:
    """`bool(a.any())`: np.count_nonzero is one C call (~0.3 us on the evaluator's arrays of a few
    warps), `.any()` a Python-level wrapper around a reduction (~1 us), asked at every branch and loop."""
    return np.count_nonzero(a) != 0


def spread(data: np.ndarray, shape: tuple[int, ...], dtype: object = None) -> np.ndarray:
    """`data` broadcast to `shape`, as an array of its own: what `np.broadcast_to(data, shape)` reads
    (and raises on the same shapes), in a fraction of its time at the evaluator's sizes (a Python-level
    wrapper, several microseconds a call); `dtype` converts as `astype` does."""
    out = np.empty(shape, dtype=data.dtype if dtype is None else dtype)
    out[...] = data
    return out


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C integer division: truncates toward zero."""
    q = np.floor_divide(a, b)
    adjust = (np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
    return q + adjust


def c_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b * c_div(a, b)


@dataclass(slots=True)
class Frame:
    """Variables of one function activation (the kernel, or an inlined device function)."""

    env: dict[str, Val] = field(default_factory=dict)
    decl_mask: dict[str, np.ndarray] = field(default_factory=dict)
    ret_mask: np.ndarray | None = None
    ret_val: Val | None = None
    ctype_of: dict[str, ir.CType] = field(default_factory=dict)
    # Reference parameters bound to a caller's `__shared__` scalar: parameter -> the scalar's name
    # (`&flag` in the callee is that variable's address).
    shared_refs: dict[str, str] = field(default_factory=dict)
    # Parameters of a template parameter's type bound to a class object (`apply(F f, ...)` called with `Op()` or
    # a lambda): parameter -> the class's type as the caller's argument has it, for a call `f(...)` of it.
    callable_types: dict[str, ir.CType] = field(default_factory=dict)
