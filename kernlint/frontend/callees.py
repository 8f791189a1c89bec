"""Which functions a call can reach, read from clang's cursors: device functions, the one function a function pointer holds, and the names a function body assigns."""
from __future__ import annotations

from typing import Callable, Iterator

from kernlint.frontend.clang_base import _BINOPS, _UNOPS, K, _lib, ci


def _is_device(c: ci.Cursor, kids: list[ci.Cursor] | None = None) -> bool:
    """Whether `c` is `__device__` or `__global__` (`kids`: its children, when already listed)."""
    return any(k.kind in (K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR) for k in (c.get_children() if kids is None else kids))


def _function_pointer_callee(c: ci.Cursor) -> tuple[str, ci.Cursor | None] | None:
    """For a call through a function pointer (`(*op)(a, b)`, `op(a, b)`, `(*table[k])(a)`): the
    pointer as written, and the one function it can hold, when that is certain: a variable that is
    `const`, or a local never assigned after its declaration, initialised with a function's name
    (`= add`, `= &add`). None when `c` is no function pointer."""
    n: ci.Cursor | None = c
    while n is not None and n.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.UNARY_OPERATOR):
        if n.kind == K.UNARY_OPERATOR and _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(n)) != "*":  # type: ignore[attr-defined]
            return None
        sub = [k for k in n.get_children() if k.kind.is_expression()]
        n = sub[0] if len(sub) == 1 else None
    if n is None:
        return None
    t = n.type.get_canonical()
    if t.kind == ci.TypeKind.POINTER:
        t = t.get_pointee()
    if t.kind not in (ci.TypeKind.FUNCTIONPROTO, ci.TypeKind.FUNCTIONNOPROTO):
        return None
    written = " ".join(tok.spelling for tok in n.get_tokens())[:60] or "?"
    var = n.referenced if n.kind == K.DECL_REF_EXPR else None
    if var is None or var.kind != K.VAR_DECL:
        return (written, None)
    init = [k for k in var.get_children() if k.kind.is_expression()]
    f = init[-1] if init else None
    while f is not None and f.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.UNARY_OPERATOR):
        if f.kind == K.UNARY_OPERATOR and _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(f)) != "&":  # type: ignore[attr-defined]
            return (written, None)
        sub = [k for k in f.get_children() if k.kind.is_expression()]
        f = sub[0] if len(sub) == 1 else None
    target = f.referenced if f is not None and f.kind == K.DECL_REF_EXPR else None
    if target is None or target.kind != K.FUNCTION_DECL or not _is_device(target.get_definition() or target):
        return (written, None)
    parent = var.semantic_parent
    fixed = var.type.is_const_qualified() or (
        parent is not None and parent.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD)
        and var.spelling not in _reassigned_names(parent))
    return (written, target.get_definition() or target) if fixed else (written, None)


def _listed(c: ci.Cursor) -> list[ci.Cursor]:
    """A cursor's children, listed (the default where a walk can be given a cheaper `children`)."""
    return list(c.get_children())


def stack_order(fn: ci.Cursor, kids_of: Callable[[ci.Cursor], list[ci.Cursor]]
                ) -> Iterator[tuple[ci.Cursor, ci.CursorKind, list[ci.Cursor]]]:
    """(cursor, its kind, its children) of `fn` and every cursor under it, in the order of a walk with a
    stack (a cursor, then its children from the last), which the walks of a host function share."""
    stack = [fn]
    while stack:
        n = stack.pop()
        kids = kids_of(n)
        stack.extend(kids)
        yield n, n.kind, kids


def _reassigned_names(fn: ci.Cursor, children: Callable[[ci.Cursor], list[ci.Cursor]] | None = None,
                      nodes: list[tuple[ci.Cursor, ci.CursorKind, list[ci.Cursor]]] | None = None) -> set[str]:
    """Names assigned anywhere in a host function after their declaration (=, op=, ++, --, &x).
    `children`: a cursor's children, read only (clang_launches._children_once); by default, listed.
    `nodes`: `stack_order(fn, children)`, when already listed."""
    kids_of = children or _listed
    out: set[str] = set()
    for n, kind, kids in stack_order(fn, kids_of) if nodes is None else nodes:
        target = None
        if kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR) and kids:
            op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(n))  # type: ignore[attr-defined]
            if op and op.endswith("=") and op not in ("==", "!=", "<=", ">="):
                target = kids[0]
        elif kind == K.UNARY_OPERATOR and kids:
            op = _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(n))  # type: ignore[attr-defined]
            if op in ("pre++", "pre--", "post++", "post--", "&"):
                target = kids[0]
        while target is not None and target.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
            sub = [k for k in kids_of(target) if k.kind.is_expression()]
            target = sub[0] if len(sub) == 1 else None
        if target is not None and target.kind == K.DECL_REF_EXPR:
            out.add(target.spelling)
    return out
