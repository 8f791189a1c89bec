"""Data every lane of a warp reads alike: integer values loaded from one address shared by the warp's
active lanes (`start = d_Ranks[blockIdx.x]`), and `__constant__`/`__device__` globals the kernel does
not write, are warp-uniform runtime values, sampled the way unknown kernel parameters are.

Why this is sound enough to evaluate with: a warp's load instruction reads each lane's address at
once, so lanes that share the address get one value (CUDA C++ Programming Guide, SIMT architecture:
the warp executes one common instruction at a time). Such a value is unknown, like `n`, but it cannot
split a warp; it is sampled (multiples of 256, so addresses built from it stay aligned as sampled sizes
do) and every finding that depends on it names the load and the values it took. What changes between
plausible values is left to the rules' existing guards (a stride that is only uncoalesced for large
values is a conditional info, `checks/coalescing.py`).

What is *not* sampled: data lanes load from different addresses (a gather, KL305's business), values
narrower than 4 bytes (flags and characters are data, not sizes or offsets), floating-point values,
and anything loaded from `__shared__` memory (the kernel writes it, often with a value it knows).
A store to an array drops the values remembered for it, so a later load there is a new value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.eval.values import spread

# Symbols for loaded values are named `@load:LINE:COL:END_LINE:END_COL` (the load's span in the
# kernel's file) or `@load:LINE:COL:END_LINE:END_COL:helper` when the load is inside a helper from
# another file (the span is then the call site).
PREFIX = "@load:"
# The first loaded value is sampled as these, the k-th one STEP*k higher: values loaded later in a
# kernel are larger (`len = end - start` stays positive), and all stay multiples of 256 elements.
BASE_SAMPLES = (4096, 6144)
STEP = 256
MAX_SYMBOLS = 64  # one per load site at most; a kernel with more keeps the rest unknown


def is_load_symbol(name: str) -> bool:
    return name.startswith(PREFIX)


# A pointer every lane loads from one address (`float* row = rows[blockIdx.x]`) is the start of an
# allocation of its own: `@ptr:LINE:COL:END_LINE:END_COL[:helper]`. It has no sampled values (a dep, not
# an entry of `assumed`), so nothing re-samples it; KernelResult.assumptions states it from the deps.
PTR_PREFIX = "@ptr:"
# Where the k-th loaded pointer's allocation starts, in units of interp.POINTER_SPACING: past every
# parameter's and global array's base, so that two allocations never overlap.
PTR_SLOT = 400


def is_loaded(name: str) -> bool:
    """A dep that stands for loaded data sampled by this module (an integer or a pointer)."""
    return name.startswith((PREFIX, PTR_PREFIX))


def symbol(span: ir.Span, helper: str = "") -> str:
    base = f"{PREFIX}{span.line}:{span.column}:{span.end_line}:{span.end_column}"
    return f"{base}:{helper}" if helper else base


def eligible(t: ir.CType, space: str) -> bool:
    """A loaded value the evaluator samples: a 4- or 8-byte integer from global or constant memory."""
    return t.kind == "int" and t.size in (4, 8) and space in ("global", "constant")


def eligible_pointer(t: ir.CType, space: str) -> bool:
    """A loaded pointer the evaluator takes as an allocation of its own: one to a sized element, read
    from global or constant memory (pointers there point to global memory)."""
    return (t.kind == "pointer" and t.pointee is not None and t.pointee.kind in ("int", "float", "struct")
            and space in ("global", "constant"))


def settled_outcome(data: np.ndarray | None, deps: frozenset[str], mask: np.ndarray) -> bool | None:
    """For a condition on a sampled load that every active lane decides alike in every sample, that
    decision (True: all take it); None otherwise. The samples (sizes in the thousands) may be what
    decides it (`c = group * 512 + lane * 8; if (c >= C) return;` with `group` a small index sampled as
    4096 leaves nothing to evaluate after it): the evaluator then keeps both sides evaluated where the
    side the samples skip holds accesses, or the side they take leaves (`Interpreter.uniform_condition`)."""
    if data is None or not any(map(is_loaded, deps)):
        return None
    c = spread(data != 0, mask.shape)
    outcome: bool | None = None
    for s in range(mask.shape[0]):
        m = mask[s]
        if not m.any():
            continue
        lanes = c[s][m]
        if lanes.any() and not lanes.all():
            return None
        this = bool(lanes[0])
        if outcome is not None and this != outcome:
            return None
        outcome = this
    return outcome


def block_uniform_condition(data: np.ndarray | None, deps: frozenset[str]) -> bool:
    """A condition computed only from block-wide values (no thread index in it) that depends on a
    sampled load: it cannot split a warp whatever the value, so the evaluator keeps running both of
    its sides as for any uniform unknown rather than only the side the samples pick."""
    return data is not None and data.shape[-1] == 1 and data.shape[-2] == 1 and any(map(is_loaded, deps))


@dataclass
class UniformLoads:
    """Symbols for the uniform loads of one evaluation, by site, and the values remembered by address."""

    samples: int
    defines: dict[str, int] = field(default_factory=dict)
    overrides: dict[str, tuple[int, ...]] = field(default_factory=dict)
    by_site: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # (root, address bytes) -> symbol: the same word loaded again with no store to its array in between
    by_address: dict[tuple[str, bytes], str] = field(default_factory=dict)
    pointer_slots: dict[str, int] = field(default_factory=dict)

    def value(self, name: str, root: str, address: np.ndarray) -> tuple[str, tuple[int, ...]] | None:
        """The symbol and samples for a uniform load at `address` (its per-sample values, one per warp
        and lane broadcast), or None when the kernel has too many load sites to sample."""
        key = _address_key(root, address)
        known = self.by_address.get(key)
        if known is not None:
            return known, self.by_site[known]
        if name not in self.by_site:
            if len(self.by_site) >= MAX_SYMBOLS:
                return None
            k = len(self.by_site)
            vals = tuple(v + STEP * k for v in BASE_SAMPLES)[: self.samples]
            vals = vals + (vals[-1],) * (self.samples - len(vals))
            if name in self.overrides:
                vals = self.overrides[name]
            if name in self.defines:
                vals = (int(self.defines[name]),) * self.samples
            self.by_site[name] = vals
        self.by_address[key] = name
        return name, self.by_site[name]

    def pointer(self, name: str, root: str, address: np.ndarray) -> tuple[str, int] | None:
        """The symbol and allocation slot of a uniform pointer load at `address` (None past the cap)."""
        key = _address_key("*" + root, address)
        known = self.by_address.get(key)
        if known is not None:
            return known, self.pointer_slots[known]
        if name not in self.pointer_slots:
            if len(self.pointer_slots) >= MAX_SYMBOLS:
                return None
            self.pointer_slots[name] = PTR_SLOT + len(self.pointer_slots)
        self.by_address[key] = name
        return name, self.pointer_slots[name]

    def forget(self, root: str) -> None:
        """A store into `root`: the words remembered there may hold something else now."""
        if not root:
            self.by_address.clear()
            return
        for k in [k for k in self.by_address if k[0] in (root, "*" + root)]:
            del self.by_address[k]


def _address_key(root: str, address: np.ndarray) -> tuple[str, bytes]:
    """The key of the words a load read: the array (`*array` for a pointer load) and every address."""
    return root, np.ascontiguousarray(address).tobytes() + str(address.shape).encode()


def writes_global(fn: ir.Function, name: str, tu: ir.TranslationUnit | None = None) -> bool:
    """Whether the kernel, or a device function it calls (`tu` given), assigns the global `name` or takes
    its address (an atomic, a helper)."""
    from kernlint.eval.coverage import find_callee  # one call resolution for the evaluator and coverage

    todo, seen = [fn], set()
    while todo:
        f = todo.pop()
        if f.body is None or id(f) in seen or len(seen) > 64:
            continue
        seen.add(id(f))
        for n in ir.walk(f.body):
            target = None
            if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
                target = n.lhs
            elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--", "&"):
                target = n.operand
            elif isinstance(n, ir.Call) and tu is not None:
                callee = find_callee(tu, n)
                if callee is not None:
                    todo.append(callee)
            while target is not None and isinstance(target, (ir.Cast, ir.Member, ir.Index)):
                target = target.operand if isinstance(target, ir.Cast) else target.base
            if isinstance(target, ir.Ref) and target.name == name:
                return True
    return False


def describe(name: str, values: tuple[int, ...], source_lines: tuple[str, ...]) -> str:
    """The assumption line for a sampled load: "`startSrcA = d_LimitsA[blockIdx.x]`, loaded at line 357 ..."."""
    parts = name[len(PREFIX):].split(":")
    line, col, end_line, end_col = (int(x) for x in parts[:4])
    helper = parts[4] if len(parts) > 4 else ""
    shown = " and ".join(str(v) for v in dict.fromkeys(values))
    what = _load_text(line, col, end_line, end_col, source_lines) if not helper else f"a value loaded in {helper}()"
    return (f"{what}, loaded at line {line} from an address every lane of the warp shares, sampled as {shown} "
            f"(a runtime value, like a kernel parameter)")


def describe_pointer(name: str, source_lines: tuple[str, ...]) -> str:
    """The assumption line for a loaded pointer: what was loaded, and that it is taken as an allocation."""
    parts = name[len(PTR_PREFIX):].split(":")
    line, col, end_line, end_col = (int(x) for x in parts[:4])
    what = (f"a pointer loaded in {parts[4]}()" if len(parts) > 4
            else _load_text(line, col, end_line, end_col, source_lines))
    return (f"{what}, a pointer loaded at line {line} from an address every lane of the warp shares, taken as "
            f"the start of an allocation (256-byte aligned, as cudaMalloc returns)")


def short(name: str) -> str:
    """A load symbol as "the value loaded at line 12"; any other name unchanged."""
    if not is_load_symbol(name):
        return name
    parts = name[len(PREFIX):].split(":")
    where = f" in {parts[4]}()" if len(parts) > 4 else ""
    return f"the value loaded at line {parts[0]}{where}"


def label(name: str, source_lines: tuple[str, ...]) -> str:
    """A short name for a sampled load in a message: the variable it is stored into, else its text."""
    parts = name[len(PREFIX):].split(":")
    line, col, end_line, end_col = (int(x) for x in parts[:4])
    if len(parts) > 4:
        return f"the value loaded in {parts[4]}() (line {line})"
    text = _load_text(line, col, end_line, end_col, source_lines)
    return text.split(" = ", 1)[0] + "`" if " = " in text else text


def _load_text(line: int, col: int, end_line: int, end_col: int, source_lines: tuple[str, ...]) -> str:
    if not (1 <= line <= len(source_lines)):
        return "a value"
    src = source_lines[line - 1]
    expr = src[col - 1:end_col - 1] if end_line == line and end_col > col else src[col - 1:].strip()
    expr = expr.strip() or "a value"
    # `startSrcA = d_LimitsA[blockIdx.x]`: name the variable it goes into when the line says so.
    m = re.search(r"([A-Za-z_]\w*)\s*=\s*$", src[:col - 1])
    if m and not src[:col - 1].rstrip().endswith(("==", "!=", "<=", ">=")):
        return f"`{m.group(1)} = {expr}`"
    return f"`{expr}`"
