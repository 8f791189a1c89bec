"""Calls into a template library's copy and MMA abstractions, which the evaluator does not see into.

CuTe/CUTLASS-style kernels move data with calls such as `cute::copy(tiled_copy, tAgA, tAsA)` and
compute with `gemm(tiled_mma, tCrA, tCrB, tCrC)` (and `wmma::load_matrix_sync(frag, p, ld)`): the
accesses are inside the library, on tensor and fragment objects whose layouts are template
metaprograms. Without a body kernlint can lower, such a call is not a memory access kernlint can
evaluate, yet it is one: silence about it would count the kernel as analysed.

Recognised by use and declaration, not by name: a free function declared in a namespace, whose body
kernlint does not have, that takes an object (a class value: a tensor, a fragment, a copy or MMA
descriptor) and at least one more object or pointer, i.e. moves or combines data between objects and
memory. Each such call is an access site that coverage counts as seen and not evaluated, its reason
naming the call (`tl::copy`): KL904 says so. A call the evaluator models (cooperative groups, atomics,
intrinsics) is not counted.

When the library's header is not found, clang drops the whole statement (`cute::copy(tc, tAgA, tAsA);`
with `cute` undeclared): no IR is left of it, only the unresolved name on its line. Such a statement,
a call qualified by the name clang could not resolve, is counted the same way from the source text
(`unread_calls`): one access seen and not evaluated, naming the call and the missing declaration.
"""
from __future__ import annotations

import re

from typing import TYPE_CHECKING

from kernlint import ir

if TYPE_CHECKING:
    from kernlint.eval import coverage as cov

_OBJECT_KINDS = ("struct", "unknown", "template")


def _kind(e: ir.Expr) -> str:
    return ir.strip_casts(e).ctype.kind  # type: ignore[attr-defined]


def is_library_transfer(e: ir.Call) -> bool:
    """Whether `e` is a call into a library's copy/MMA abstraction (see the module docstring)."""
    if e.receiver is not None or e.target or not e.scope or not e.name or e.name.startswith("__") or e.via:
        return False
    kinds = [_kind(a) for a in e.args]
    objects = sum(1 for k in kinds if k in _OBJECT_KINDS)
    return objects >= 1 and objects + sum(1 for k in kinds if k == "pointer") >= 2


def unresolved_call(e: ir.Opaque) -> bool:
    """Whether `e` calls a name clang could not resolve (undeclared: its header was not found) and passes
    it a pointer or an array. clang keeps such a call as an unexposed expression whose first child is the
    unresolved name (of overloaded-function type); the address of a variable of the thread's own
    (`cudaMalloc(&p, n)`: an output) does not count. What the callee does through the pointer is unknown
    (a device helper of a missing header, such as an atomic wrapper `gpuAtomicAdd(&dA[i], v)`, reads or
    writes there), so the call is an access seen and not evaluated: KL904 says so, and the kernel is not
    called fully analysed."""
    if not e.children:
        return False
    head = e.children[0]
    if not (isinstance(head, ir.Ref) and head.kind == "unknown" and head.ctype.name == "<overloaded function type>"):
        return False
    return any(_kind(a) in ("pointer", "array") and not _variable_address(a) for a in e.children[1:])


def _variable_address(e: ir.Expr) -> bool:
    """`&p` of a variable of the thread's own (a local or a parameter): where a call returns a value
    (`cudaMalloc(&p, n)`), not memory of the kernel's arrays."""
    e = ir.strip_casts(e)
    if not (isinstance(e, ir.Unary) and e.op == "&"):
        return False
    inner = ir.strip_casts(e.operand)
    return isinstance(inner, ir.Ref) and inner.kind in ("local", "param")


def qualified(e: ir.Call) -> str:
    """`tl::copy`: the call's name with the namespace it was declared in."""
    return f"{e.scope}::{e.name}" if e.scope else e.name


# `ns::name(` or `ns::inner::name<...>(` at the unresolved name's column.
_QUALIFIED_CALL = re.compile(r"([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)\s*(?:<[^;(){}]*>)?\s*\(")


def unread_calls(fn: ir.Function, lines: tuple[str, ...]) -> "tuple[cov.SiteStatus, ...]":
    """Statements of kernel `fn` that clang dropped because a call's namespace was not declared (its
    header not found), each an access site not evaluated: ("unread_call", the qualified name)."""
    from kernlint.eval import coverage as cov  # (coverage imports this module)

    if fn.body is None or not fn.unresolved:
        return ()
    lowered = {s.span.line for s in ir.iter_statements(fn.body) if not isinstance(s, ir.Block)}
    first, last = fn.span.line, fn.span.end_line or fn.span.line
    out: "dict[cov.SiteKey, cov.SiteStatus]" = {}
    for line, col, msg in fn.unresolved:
        if "undeclared identifier" not in msg or msg.count("'") < 2 or line in lowered or not first < line <= last:
            continue
        name = msg.split("'")[1]
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        m = _QUALIFIED_CALL.match(text, max(0, col - 1))
        if m is None or not m.group(1).startswith(name + "::") or _arguments(text, m.end()) < 2:
            continue  # (as above: data moves between two things at least; `make_pipeline()` moves none)
        key = (line, col, line, col, line, col + len(m.group(1)), cov.ACCESS)
        out.setdefault(key, cov.SiteStatus(key, False, ("unread_call", m.group(1))))
    return tuple(out.values())


def _arguments(text: str, start: int) -> int:
    """Top-level arguments of the call whose `(` ends at `start` (2 when the line ends first: a call
    that goes on past its line is taken to have several)."""
    depth, count, seen = 1, 1, False
    for ch in text[start:]:
        if ch in "([{<":
            depth += 1 if ch != "<" else 0
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return count if seen else 0
        elif ch == "," and depth == 1:
            count += 1
        if not ch.isspace() and depth >= 1:
            seen = True
    return 2
