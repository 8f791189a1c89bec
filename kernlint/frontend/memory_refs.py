"""Local references bound to global or shared memory (`T &x = a[i];`): lowered as pointers, so no access is made at the binding.

C++ binds a reference to an object without reading it ([dcl.init.ref]): `Big &mine = b[threadIdx.x];`
reads nothing, and `mine.v[0] = 2.0f` later is a store to `b[threadIdx.x].v[0]`. Lowered as a copy, the
binding became a load of the element (a KL101 on a line that makes no access) and every write through
the reference a write to a thread's own copy (the store never reported).

So a local reference whose initializer is an element of memory (reached through a pointer, or an element
of a `__shared__`, `__constant__` or global array) is lowered as a pointer to that element, `T *x = &a[i];`,
and each use of `x` as `*x`: the access happens, and is reported, where the reference is read or written.
References to a vector-like class (`const uchar4 &c = img[i]`: see `vector_like`), to a thread's own
variables, to whole arrays (`float (&row)[33] = tile[ty]`, which already name
an address) and to what a call returns are lowered as before.
"""
from __future__ import annotations

from kernlint.frontend.clang_base import K, ci

# Expression wrappers that do not change which object an lvalue names.
_TRANSPARENT = (K.UNEXPOSED_EXPR, K.PAREN_EXPR)


def strip(c: ci.Cursor) -> ci.Cursor:
    while c.kind in _TRANSPARENT:
        kids = [k for k in c.get_children() if k.kind.is_expression()]
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _is_pointer(t: ci.Type) -> bool:
    return t.get_canonical().kind == ci.TypeKind.POINTER


def binds_memory(var: ci.Cursor, init: ci.Cursor, is_memory_var, is_memory_ref) -> bool:
    """Whether the local reference `var`, initialised by `init`, names an element of global or shared
    memory. `is_memory_var(decl)`: whether a variable declaration is a `__shared__`, `__constant__` or
    namespace-scope one; `is_memory_ref(decl)`: whether it is a reference already lowered as a pointer."""
    t = var.type
    if t.kind != ci.TypeKind.LVALUEREFERENCE:
        return False
    pointee = t.get_pointee().get_canonical()
    if pointee.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY, ci.TypeKind.VARIABLEARRAY,
                        ci.TypeKind.DEPENDENTSIZEDARRAY, ci.TypeKind.INVALID):
        return False
    if pointee.kind == ci.TypeKind.RECORD and vector_like(pointee.get_size(), pointee.get_align()):
        return False
    return _names_memory(strip(init), is_memory_var, is_memory_ref, 0)


def vector_like(size: int, align: int) -> bool:
    """A class as wide as its alignment, at most 16 bytes (`uchar4`, `float2`, `float4`, an aligned pair):
    the compiler reads such an element whole in one vector instruction, whichever fields are used, so
    splitting its reads by field would report accesses narrower than the real one. Such references keep
    the element read where they are bound."""
    return 0 < size <= 16 and size == align


def _names_memory(c: ci.Cursor, is_memory_var, is_memory_ref, depth: int) -> bool:
    if depth > 16:
        return False
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    if c.kind == K.ARRAY_SUBSCRIPT_EXPR and len(kids) == 2:
        base = strip(kids[0])
        if _is_pointer(base.type) or _is_pointer(kids[0].type):
            return True  # `p[i]`: through a pointer
        return _names_memory(base, is_memory_var, is_memory_ref, depth + 1)  # `s[i][j]`: an element of s
    if c.kind == K.UNARY_OPERATOR and len(kids) == 1:
        toks = [t.spelling for _, t in zip(range(1), c.get_tokens())]
        return bool(toks) and toks[0] == "*" and _is_pointer(kids[0].type) \
            and strip(kids[0]).kind != K.CXX_THIS_EXPR  # (`*this`: the object a method runs on)
    if c.kind == K.MEMBER_REF_EXPR and kids:
        base = strip(kids[0])
        if _is_pointer(kids[0].type):
            return True  # `p->f`
        if kids[0].kind == K.CXX_THIS_EXPR:
            return False
        return _names_memory(base, is_memory_var, is_memory_ref, depth + 1)  # `s.f` of what s names
    if c.kind == K.CXX_REINTERPRET_CAST_EXPR and kids and not _is_pointer(c.type):
        # `reinterpret_cast<T &>(smem)`: an lvalue (a cast to a class type is one only to a reference)
        return _names_memory(strip(kids[-1]), is_memory_var, is_memory_ref, depth + 1)
    if c.kind == K.CONDITIONAL_OPERATOR and len(kids) == 3:  # `b ? s1 : s2`, both sides memory
        return all(_names_memory(strip(k), is_memory_var, is_memory_ref, depth + 1) for k in kids[1:])
    if c.kind == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.VAR_DECL:
        return is_memory_var(c.referenced) or is_memory_ref(c.referenced)
    return False


def passed_on(arg: ci.Cursor, param: ci.Cursor, refs: set) -> bool:
    """Whether `arg` names a reference to memory (its declaration's key in `refs`) and `param` binds it to a
    reference of class type: the call receives the object's address, and reads nothing by being called."""
    t = param.type
    if t.kind != ci.TypeKind.LVALUEREFERENCE or t.get_pointee().get_canonical().kind != ci.TypeKind.RECORD:
        return False
    a = strip(arg)
    d = a.referenced if a.kind == K.DECL_REF_EXPR else None
    return d is not None and d.kind == K.VAR_DECL and (d._kind_id, d.data[0]) in refs
