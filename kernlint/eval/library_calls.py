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
(`eval/unread_calls.py`): one access seen and not evaluated, naming the call and the missing declaration.
"""
from __future__ import annotations

from kernlint import ir

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


def qualified(e: ir.Call) -> str:
    """`tl::copy`: the call's name with the namespace it was declared in."""
    return f"{e.scope}::{e.name}" if e.scope else e.name
