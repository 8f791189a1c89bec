"""Per-thread asynchronous copies evaluated as the one global read and one shared write each lane makes.

The copies: `cp.async`, `__pipeline_memcpy_async`, `cuda::memcpy_async`, of 4, 8 or 16 bytes per thread.

PTX ISA, "cp.async": each thread copies cp-size bytes (4, 8 or 16; with `.cg` only 16) from the global
address to the shared address; an optional src-size operand reads only that many bytes and fills the
rest with zeros. The CUDA C++ Programming Guide ("Pipeline Primitives Interface") spells the same copy
`__pipeline_memcpy_async(dst_shared, src_global, size_and_align, zfill = 0)`: `size_and_align - zfill`
bytes are read and `zfill` zero bytes written after them; and ("memcpy_async API") the per-thread
`cuda::memcpy_async(dst, src, size, pipe_or_barrier)` copies `size` bytes as if by `memcpy` (the stub of
ir/known_pipeline.py hands its operands to `__kernlint_memcpy_async`). The inline-asm form is lowered to
`__kernlint_cp_async(dst, src, size[, src_size])` by the front end (frontend/inline_asm.py).

So a warp's copy is, for the coalescing and bank rules, exactly a vector load `*(const uint4 *)src` and a
vector store `*(uint4 *)dst` (uint2, unsigned int for 8, 4 bytes), made at the copy's site. What kernlint
cannot stand behind is not evaluated and says why, naming the copy: a byte count that does not fold to
4, 8 or 16 for every active lane alike, a read of some but not all of those bytes (a src-size between 0
and the size), an operand whose address cannot be followed. Lanes whose src-size is 0 read nothing.
"""
from __future__ import annotations

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval.library_calls import COPIES
from kernlint.eval.values import UNKNOWN, Interp, Val, spread


def _uint(n: int) -> ir.CType:
    return ir.CType("int", n, False, name="unsigned int", align=n)


def _vector(name: str, n: int) -> ir.CType:
    fields = tuple(ir.Field(f, 4 * i, _uint(4)) for i, f in enumerate("xyzw"[:n // 4]))
    return ir.CType("struct", n, name=name, fields=fields, align=n)


# An async copy's events carry this before the copy's name in `text` (the checks' note, --confirm's verdict).
TEXT_PREFIX = "async:"
NOTE_PREFIX = "the access is each lane's part of the asynchronous copy"


def async_note(text: str) -> str | None:
    """The note for a finding on an asynchronous copy's access (`text`: the event's), else None."""
    if not text.startswith(TEXT_PREFIX):
        return None
    return (f"{NOTE_PREFIX} `{text[len(TEXT_PREFIX):]}`: its global read and its shared write, one vector access of "
            "the copy's size each (CUDA C++ Programming Guide, \"Asynchronous Data Copies\"; PTX ISA, \"cp.async\")")


# The access each lane makes for a copy of this many bytes (the CUDA vector types of those sizes).
_TYPES = {4: _uint(4), 8: _vector("uint2", 8), 16: _vector("uint4", 16)}


def access_type(n: int) -> ir.CType:
    """The type of one access of `n` bytes (1, 2, 4, 8 or 16): an unsigned integer, or a vector of them."""
    return _TYPES.get(n) or ir.CType("int", n, False, name=f"uint{8 * n}_t", align=n)


def _uniform_int(v: Val, mask: np.ndarray) -> int | None:
    """The one value `v` has on every active lane, else None."""
    if v.data is None or v.is_float:
        return None
    data = spread(v.data, mask.shape)[mask]
    if data.size == 0 or not np.all(data == data.flat[0]):
        return None
    return int(data.flat[0])


def eval_async_copy(interp: Interp, e: ir.Call) -> Val:
    """Evaluate the copy `e`: a load at the source and a store at the destination, or a site not evaluated."""
    name = COPIES[e.name]
    dst, src, size = (interp.eval(a) for a in e.args[:3])
    extra = interp.eval(e.args[3]) if len(e.args) == 4 else None
    key = interp.site_key(e.span, cov.ACCESS)
    if not interp.any_active():
        return UNKNOWN
    interp.recent_loads.forget()  # (the shared write lands later, when the pipeline waits: no value is reused)
    n = _uniform_int(size, interp.mask)
    if n not in _TYPES:
        what = "a byte count that does not fold to one value for the warp" if n is None else f"{n} bytes per thread"
        return not_evaluated(interp, key, f"`{name}` of {what} (kernlint evaluates copies of 4, 8 or 16 bytes, "
                                          "one vector access each)")
    reads = interp.mask
    if extra is not None:
        # src-size (cp.async) or zfill (__pipeline_memcpy_async): the bytes read are src-size, or size - zfill.
        if extra.data is None or extra.is_float:
            return not_evaluated(interp, key, f"`{name}` with a source size that does not fold (how much it "
                                              "reads is unknown)")
        read = spread(extra.data if e.name == "__kernlint_cp_async" else n - extra.data, interp.mask.shape)
        partial = interp.mask & (read != 0) & (read != n)
        if partial.any():
            return not_evaluated(interp, key, f"`{name}` reading part of its {n} bytes on some lanes")
        reads = interp.mask & (read == n)
    for addr in (dst, src):
        if addr.data is None or not addr.space:
            interp.cov.drop(key, addr.why or ("async_copy", f"`{name}`: an address kernlint could not follow"))
            interp.unmeasured_requests += 1
            return UNKNOWN
    t = _TYPES[n]
    parent = interp.mask
    try:
        if reads.any():
            interp.mask = reads
            interp.access(e, src, t, "load", text=TEXT_PREFIX + name)
        interp.mask = parent
        interp.access(e, dst, t, "store", text=TEXT_PREFIX + name)
    finally:
        interp.mask = parent
    return UNKNOWN


def not_evaluated(interp: Interp, key: cov.SiteKey, why: str, kind: str = "async_copy") -> Val:
    """Count the access at `key` seen and not evaluated, for the reason `why` (of coverage.REASONS' `kind`)."""
    interp.cov.drop(key, (kind, why))
    interp.unmeasured_requests += 1
    return UNKNOWN
