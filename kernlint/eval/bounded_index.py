"""Table lookups at an unknown but bounded index (`lut[code & 7]`, `smem_lut[byte >> 4]`): reads the
evaluator can judge for every value of the index, because every value gives the same verdict.

An integer the evaluator does not know (loaded data, an element of a thread-local array it does not
track) can still be known to lie in a range [lo, hi], from how it is computed:

- its C type: an `unsigned char` holds 0..255, a `short` -32768..32767, a `bool` 0..1, whatever was
  stored in it (a conversion to a narrower type keeps only the type's range);
- `x & m` with a constant m >= 0 is in [0, m] for any x (two's complement: no bit outside m survives);
- `x >> k`, `x + c`, `x - c`, `x * c` (c >= 0) of a bounded x with constants k, c map the range
  through the (monotone) operation; `x % m` of a non-negative x with a constant m > 0 is in [0, m-1].

A read `a[i]` at such an index touches, in each lane, one element of the window a[lo..hi]. When the
union of the active lanes' windows in a warp is small enough, the cost of the request is the same
for every value the lanes may hold:

- shared memory, elements of at most 4 bytes, the union within 128 bytes: the 32 consecutive 4-byte
  words of any 128-byte span lie in 32 distinct banks, so no two distinct words share a bank and the
  request is one wavefront whatever the indices (CUDA C++ Programming Guide, "Shared Memory",
  compute capability 5.x and newer: 32 banks of 4-byte words; lanes reading one word are served
  together);
- global memory, the union within one 32-byte sector of the model's addresses: one sector, which is
  also the ideal for any bytes the lanes read. The model places a table where the evaluator places
  every array (aligned); a table the compiler aligned only to its element size may straddle two
  sectors, so on the GPU the request can cost ideal + 1 sectors (1 or 2). That holds for every
  evaluated global access of the model alike (`metrics.py` counts sectors of the model's addresses).

Such a read is evaluated with a stand-in address per lane inside its window (lane l reads element
lo + l mod n; every lane the same element when the index is warp-uniform): any placement in the
window gives the verdict above. The value it returns stays unknown: per-lane data tagged with its
loads (KL305 follows it), or a warp-uniform unknown after a uniform index; never a sampled runtime
value (the element read is not the stand-in's).
Writes and atomics at a bounded index are not evaluated this way: which element a lane changes
matters to what later reads see, so they stay unknown as before. Larger windows stay unevaluated
(a gather: which banks or sectors the lanes hit depends on the data).
"""
from __future__ import annotations

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import Val

Bound = tuple[int, int]

SHARED_SPAN = 128  # bytes: 32 banks x 4-byte words
SECTOR = 32  # bytes: one global-memory sector
MAX_ELEMENT = 4  # shared elements wider than a bank word are served in phases: not handled here


def type_bound(t: ir.CType) -> Bound | None:
    """The values a variable of integer type `t` can hold, when that range is narrow (bool, 8 or 16 bits)."""
    if t.kind == "bool":
        return (0, 1)
    if t.kind != "int" or not 0 < t.size <= 2:
        return None
    bits = 8 * t.size
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.signed else (0, (1 << bits) - 1)


def with_bound(v: Val, bound: Bound | None) -> Val:
    """Unknown `v` carrying exactly `bound` (None drops it); a known `v` as it is."""
    if v.data is not None or v.bound == bound:
        return v
    return Val(None, v.deps, v.space, v.root, v.fields, v.is_float, v.uninit, v.loads, v.why, v.uniform, bound)


def fit(v: Val, t: ir.CType) -> Val:
    """Unknown `v` converted to integer type `t`: the range it keeps (see `converted`)."""
    return with_bound(v, converted(v, t))


def converted(v: Val, t: ir.CType) -> Bound | None:
    """The range of unknown `v` converted to integer type `t`: its own when `t` holds all of it, else
    the range of `t` when that is narrow."""
    tb = type_bound(t)
    if v.bound is not None and not v.is_float:
        lo, hi = v.bound
        if tb is None:
            if t.kind == "int" and t.size >= 4 and _fits(v.bound, t):
                return v.bound
            return None
        if tb[0] <= lo and hi <= tb[1]:
            return v.bound
    return tb


def _fits(b: Bound, t: ir.CType) -> bool:
    bits = 8 * t.size
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.signed else (0, (1 << bits) - 1)
    return lo <= b[0] and b[1] <= hi


def _constant(v: Val) -> int | None:
    """The one integer value of a known `v` in every sample, warp and lane; None otherwise."""
    d = v.data
    if d is None or v.is_float or d.dtype.kind not in "iu" or d.size == 0:
        return None
    first = int(d.flat[0])
    if d.size > 1 and not np.all(d == first):
        return None
    return first


def arith(op: str, a: Val, b: Val) -> Bound | None:
    """The range of `a op b` where one operand is unknown (bounded or not) and the other constant."""
    if a.is_float or b.is_float:
        return None
    if a.data is None and b.data is not None:
        x, c = a.bound, _constant(b)
        swapped = False
    elif b.data is None and a.data is not None:
        x, c = b.bound, _constant(a)
        swapped = True
    else:
        return None
    if c is None:
        return None
    if op == "&":
        if c >= 0:
            return (0, c if x is None or x[0] < 0 else min(c, x[1]))
        return None
    if x is None:
        return None
    lo, hi = x
    if op == ">>" and not swapped and 0 <= c < 63:
        return (lo >> c, hi >> c)
    if op == "%" and not swapped and c > 0 and lo >= 0:
        return (0, min(hi, c - 1))
    if op == "+":
        return (lo + c, hi + c)
    if op == "-" and not swapped:
        return (lo - c, hi - c)
    if op == "*" and c >= 0:
        return (lo * c, hi * c)
    return None


def window_address(base: Val, idx: Val, size: int, mask: np.ndarray) -> tuple[np.ndarray, bool] | None:
    """Stand-in addresses (samples, warps, 32) for `base[idx]`, idx unknown in `idx.bound`, when every
    value gives the same verdict (see the module docstring), and whether every lane of a warp reads
    the same element (a warp-uniform index on one base: a broadcast); None otherwise."""
    if idx.bound is None or base.data is None or size <= 0 or base.space not in ("shared", "global"):
        return None
    if base.space == "shared" and size > MAX_ELEMENT:
        return None
    lo, hi = idx.bound
    n = hi - lo + 1
    if n <= 0 or n * size > SHARED_SPAN:
        return None
    b = np.broadcast_to(base.data, mask.shape).astype(np.int64)
    start = b + lo * size
    end = b + (hi + 1) * size  # exclusive
    big = np.iinfo(np.int64).max
    active = mask.any(axis=-1)
    first = np.where(mask, start, big).min(axis=-1)
    last = np.where(mask, end, -big).max(axis=-1)
    if base.space == "shared":
        ok = last - first <= SHARED_SPAN
    else:
        ok = first // SECTOR == (last - 1) // SECTOR
    if not np.all(ok | ~active):
        return None
    same = idx.uniform and bool(np.all(np.where(mask, b, first[..., None]) == first[..., None]))
    if same:
        return start, True  # every lane reads the one element the warp's index picks
    lanes = np.arange(mask.shape[-1], dtype=np.int64) % n
    return start + lanes * size, False


def read_value(addr: Val) -> Val:
    """The value a read at stand-in address `addr` returns: unknown; warp-uniform when every lane read
    the same element (`addr.uniform`), else per-lane data tagged with its loads (KL305 follows them).
    Never a sampled runtime value: the element read is not the stand-in's."""
    return Val(None, addr.deps, loads=frozenset() if addr.uniform else addr.loads, why=("loaded", ""),
               uniform=addr.uniform)
