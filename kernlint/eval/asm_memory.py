"""Plain inline-PTX loads and stores (`ld.global.nc.v4.u32`, `st.shared.b32`) evaluated as one access per lane.

The front end (frontend/inline_asm.py) lowers an asm statement of plain `ld`s or `st`s of global or shared
memory to one expression: per instruction `__kernlint_asm_ldst(address, offset, guard, other inputs...)`,
its instruction name, guard rule and whether it reuses the previous instruction's address operand as
template arguments, then each output of a load assigned `__kernlint_asm_loaded()`.

PTX ISA, "ld" and "st": each thread moves (vector width x type size) bytes at the address, one access
(`ld.global.nc.v4.u32` 16 bytes, as `*(const uint4 *)p`), so the coalescing and bank rules judge it as they
judge that vector access. The state space is the instruction's: an address kernlint follows into another
space (a pointer into a `__shared__` array given to `ld.global`) is not evaluated, nor is one it cannot
follow. (kernlint reads `__cvta_generic_to_shared(p)` as pointing where `p` points: a generic address given
to `ld.shared` unconverted, a bug of its own, is not told apart.) What the load returns is unknown, a value
loaded from memory per lane; a guard operand that does not fold leaves the access not evaluated, never
guessed.
"""
from __future__ import annotations

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov
from kernlint.eval.async_copy import access_type, not_evaluated
from kernlint.eval.values import UNKNOWN, Interp, Val, spread
from kernlint.frontend.inline_asm import opcode

# An inline-PTX access's events carry this before the instruction in `text` (the checks' note, --confirm's verdict).
TEXT_PREFIX = "asm:"
NOTE_PREFIX = "the access is the inline PTX"


def asm_note(text: str) -> str | None:
    """The note for a finding on an inline-PTX load or store (`text`: the event's), else None."""
    if not text.startswith(TEXT_PREFIX):
        return None
    name = text[len(TEXT_PREFIX):]
    op = opcode(name)
    size = f", {op.size} bytes per lane" if op is not None else ""
    return (f"{NOTE_PREFIX} `{name}`: one access per lane of its vector width times its type's size{size} "
            "(PTX ISA, \"ld\" and \"st\")")


def eval_ld_st(interp: Interp, e: ir.Call) -> Val:
    """Evaluate the access `e` stands for, on the lanes its guard lets through; or say why it is not. Its
    address is kept for the load's outputs (`eval_loaded`)."""
    name, rule, again = e.template_args
    op = opcode(name)
    base = interp.asm_address[2] if again else interp.eval(e.args[0])  # (the statement's earlier instruction's)
    offset = int(e.args[1].value) if isinstance(e.args[1], ir.Lit) else 0
    addr = base if base.data is None or not offset else Val(base.data + offset, base.deps, base.space, base.root,
                                                            loads=base.loads, uniform=base.uniform)
    guard = interp.eval(e.args[2])
    for x in e.args[3:]:
        interp.eval(x)  # (a store's values, a cache policy, a guarded load's fallback values: read)
    interp.asm_address = (e, addr, base)
    key = interp.site_key(e.span, cov.ACCESS)
    if not interp.any_active():
        return UNKNOWN
    interp.recent_loads.forget()  # (an asm statement's access is its own: never one a C++ load reuses)
    if op is None:
        return _not_evaluated(interp, key, f"`{name}` is not a plain load or store kernlint reads")
    if guard.data is None or guard.is_float:
        return _not_evaluated(interp, key, f"`{name}` under a predicate that does not fold (which lanes "
                                           "load is unknown)")
    nonzero = spread(guard.data != 0, interp.mask.shape)
    takes = interp.mask & (~nonzero if rule == "zero" else nonzero)
    if addr.data is None or not addr.space:
        interp.cov.drop(key, addr.why or ("asm_memory", f"`{name}`: an address kernlint could not follow"))
        interp.unmeasured_requests += 1
        return UNKNOWN
    if addr.space != op.space:
        return _not_evaluated(interp, key, f"`{name}` at an address kernlint follows into {addr.space} memory, "
                                           f"not the instruction's {op.space} state space")
    if not takes.any():
        return UNKNOWN  # (no lane takes it here: as an access in a branch no lane enters)
    parent = interp.mask
    try:
        interp.mask = takes
        interp.access(e, addr, access_type(op.size), op.kind, text=TEXT_PREFIX + name)
    finally:
        interp.mask = parent
    interp.recent_loads.forget()
    return UNKNOWN


def eval_loaded(interp: Interp, e: ir.Call) -> Val:
    """What a load's output holds afterwards: a value loaded from memory at the address of the access
    evaluated just before it in the same expression (unknown; tagged per lane where lanes read different
    addresses, as any load is)."""
    at, addr, _ = interp.asm_address
    return interp.loaded(at, addr) if at is not None else Val(None, why=("loaded", ""))


def _not_evaluated(interp: Interp, key: cov.SiteKey, why: str) -> Val:
    return not_evaluated(interp, key, why, "asm_memory")
