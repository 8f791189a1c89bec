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

from kernlint.ir import nodes as ir

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


def indirect_call(e: ir.Call) -> bool:
    """Whether `e` calls through a function pointer or function object whose callee kernlint cannot tell
    (ir.Call.via) and passes it a pointer or an array (the callee itself, an argument the front end keeps for
    its reads, does not count; nor does the address of the thread's own variable). What the callee does there
    is unknown, as for a call of an undeclared name (`unresolved_call`): an access seen and not evaluated."""
    if not e.via:
        return False
    for a in e.args:
        t = ir.strip_casts(a).ctype  # type: ignore[attr-defined]
        if t.kind in ("pointer", "array") and not (t.pointee is not None and t.pointee.kind == "function") \
                and not _variable_address(a):
            return True
    return False


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


# Per-thread asynchronous copies the evaluator models (eval/async_copy.py): the intrinsic or kernlint's
# internal name -> the copy as the source spells it (for reasons).
COPIES = {
    "__kernlint_memcpy_async": "cuda::memcpy_async",  # the body of the stub's per-thread forms (ir/known_pipeline.py)
    "__pipeline_memcpy_async": "__pipeline_memcpy_async",
    "__kernlint_cp_async": "cp.async",  # an inline-asm `cp.async` (frontend/inline_asm.py)
}

# Another inline-asm instruction that addresses memory (frontend/inline_asm.py): its input operands as the
# arguments, the instruction's name as the one template argument. An access seen and not evaluated.
ASM_ACCESS = "__kernlint_asm"


# A plain inline-asm load or store (frontend/inline_asm.py, eval/asm_memory.py): the access, and the value a
# load's output holds afterwards.
ASM_LD_ST = "__kernlint_asm_ldst"
ASM_LOADED = "__kernlint_asm_loaded"


def is_asm_ld_st(e: ir.Call) -> bool:
    """Whether `e` is a plain inline-asm `ld`/`st` kernlint evaluates (address, offset, guard, other inputs...)."""
    return e.receiver is None and e.name == ASM_LD_ST and len(e.args) >= 3 and len(e.template_args) == 3


def is_asm_loaded(e: ir.Call) -> bool:
    """Whether `e` is the value the inline-asm load just evaluated left in an output (no arguments)."""
    return e.receiver is None and e.name == ASM_LOADED and not e.args


def is_async_copy(e: ir.Call) -> bool:
    """Whether `e` is a per-thread asynchronous copy (dst, src, size[, src-size or zfill]) kernlint evaluates."""
    return e.receiver is None and e.name in COPIES and 3 <= len(e.args) <= 4


def is_asm_access(e: ir.Call) -> bool:
    """Whether `e` stands for an inline-asm memory instruction kernlint does not evaluate (`ld.global`)."""
    return e.receiver is None and e.name == ASM_ACCESS


def asm_instruction(e: ir.Call) -> str:
    """The instruction an `is_asm_access` call stands for (`ld.global.ca.v4.u32`)."""
    return e.template_args[0] if e.template_args else "asm"
