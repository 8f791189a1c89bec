"""Parse a .cu/.cuh file with libclang and lower every kernel and device function to the IR.

Decisions (see DESIGN.md): parse as CUDA device code (`--cuda-device-only`) against kernlint's own
shim header, never a CUDA installation; every `#include` that cannot be found is fed to clang as an
empty in-memory file, so a missing header costs only the names it would have declared.
"""
from __future__ import annotations

import ctypes
import dataclasses
import os
import re
from importlib import resources
from typing import Any, Callable, Iterable, Iterator

from kernlint import deadline, ir
from kernlint.eval.dependent_types import PARTIAL as PARTIAL_SPECIALIZATION
from kernlint.frontend import shim_pch
from kernlint.frozen import frozen
from kernlint.known_headers import stub_text
from kernlint.includes import scan_includes
from kernlint.occupancy import DEFAULT_ARCH
from kernlint.project.pointer_offsets import arg_offsets

try:  # libclang is a hard dependency, but keep the import error readable.
    import clang.cindex as ci
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError("kernlint needs the 'libclang' package: pip install libclang") from exc

K = ci.CursorKind
STUB_DIR = "/__kernlint_stub__"

_CURSOR_VISIT = ci.callbacks["cursor_visit"]


def _get_children(self: ci.Cursor) -> Iterator[ci.Cursor]:
    """`Cursor.get_children` of the bindings, less their per-child assertion that the child is not the null
    cursor (two ctypes calls per child, ~10,000 children per parse of a corpus file; libclang never visits a null
    cursor): the same children, in the same order, keeping their translation unit alive."""
    children: list[ci.Cursor] = []
    tu = self._tu

    def visitor(child: ci.Cursor, _parent: ci.Cursor, _data: object) -> int:
        child._tu = tu
        children.append(child)
        return 1  # CXChildVisit_Continue

    ci.conf.lib.clang_visitChildren(self, _CURSOR_VISIT(visitor), children)
    return iter(children)


ci.Cursor.get_children = _get_children  # type: ignore[method-assign]


class FrontendError(Exception):
    """The file could not be parsed at all (not a per-kernel problem)."""


# Binary/unary operator kinds (CXBinaryOperatorKind / CXUnaryOperatorKind, clang-c/Index.h, LLVM 17+).
_BINOPS = {
    3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>", 10: "<=>", 11: "<", 12: ">", 13: "<=",
    14: ">=", 15: "==", 16: "!=", 17: "&", 18: "^", 19: "|", 20: "&&", 21: "||", 22: "=", 23: "*=",
    24: "/=", 25: "%=", 26: "+=", 27: "-=", 28: "<<=", 29: ">>=", 30: "&=", 31: "^=", 32: "|=", 33: ",",
}
_BINARY_SPELLINGS = frozenset(("*", "/", "%", "+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^",
                               "|", "&&", "||", "=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=",
                               "|="))
_UNOPS = {1: "post++", 2: "post--", 3: "pre++", 4: "pre--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~", 10: "!"}

_lib_ready = False


def _lib() -> object:
    """Return the libclang handle with the few functions the 18.x bindings do not wrap."""
    global _lib_ready
    lib = ci.conf.lib
    if not _lib_ready:
        lib.clang_getCursorBinaryOperatorKind.argtypes = [ci.Cursor]
        lib.clang_getCursorBinaryOperatorKind.restype = ctypes.c_int
        lib.clang_getCursorUnaryOperatorKind.argtypes = [ci.Cursor]
        lib.clang_getCursorUnaryOperatorKind.restype = ctypes.c_int
        lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getKind.restype = ctypes.c_int
        lib.clang_EvalResult_isUnsignedInt.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_isUnsignedInt.restype = ctypes.c_uint
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_getAsUnsigned.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsUnsigned.restype = ctypes.c_ulonglong
        lib.clang_EvalResult_getAsDouble.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsDouble.restype = ctypes.c_double
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_dispose.restype = None
        lib.clang_Location_isFromMainFile.argtypes = [ci.SourceLocation]
        lib.clang_Location_isFromMainFile.restype = ctypes.c_int
        _lib_ready = True
    return lib


def _evaluate(cursor: ci.Cursor) -> int | float | None:
    """Constant-fold `cursor` with clang's own evaluator (handles macros, sizeof, constexpr)."""
    lib = _lib()
    res = lib.clang_Cursor_Evaluate(cursor)  # type: ignore[attr-defined]
    if not res:
        return None
    try:
        kind = lib.clang_EvalResult_getKind(res)  # type: ignore[attr-defined]
        if kind == 1:  # CXEval_Int
            if lib.clang_EvalResult_isUnsignedInt(res):  # type: ignore[attr-defined]
                return int(lib.clang_EvalResult_getAsUnsigned(res))  # type: ignore[attr-defined]
            return int(lib.clang_EvalResult_getAsLongLong(res))  # type: ignore[attr-defined]
        if kind == 2:  # CXEval_Float
            return float(lib.clang_EvalResult_getAsDouble(res))  # type: ignore[attr-defined]
        return None
    finally:
        lib.clang_EvalResult_dispose(res)  # type: ignore[attr-defined]


def shim_path() -> str:
    return str(resources.files("kernlint.frontend").joinpath("kernlint_cuda_shim.h"))


@frozen
class _Ctx:
    path: str
    text: str


def _line_column(loc: ci.SourceLocation) -> tuple[bool, int, int]:
    """(in a file, line, column) of `loc` in one ctypes call (the bindings' `file`, `line` and `column`
    properties make one each, and wrap the file)."""
    f, line, col, off = ci.c_object_p(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    ci.conf.lib.clang_getInstantiationLocation(loc, ctypes.byref(f), ctypes.byref(line), ctypes.byref(col),
                                               ctypes.byref(off))
    return bool(f), line.value, col.value


def _span(cursor: ci.Cursor) -> ir.Span:
    ext = cursor.extent
    lib = ci.conf.lib
    in_file, line, col = _line_column(lib.clang_getRangeStart(ext))
    if not in_file or line == 0:
        _f, line, col = _line_column(cursor.location)
    _f, end_line, end_col = _line_column(lib.clang_getRangeEnd(ext))
    return ir.Span(line, col, end_line, end_col)


def _in_main(cursor: ci.Cursor, path: str) -> bool:
    f = cursor.location.file
    return f is not None and f.name == path


_INT_KINDS = {
    ci.TypeKind.BOOL: (1, False), ci.TypeKind.CHAR_U: (1, False), ci.TypeKind.UCHAR: (1, False),
    ci.TypeKind.CHAR_S: (1, True), ci.TypeKind.SCHAR: (1, True), ci.TypeKind.SHORT: (2, True),
    ci.TypeKind.USHORT: (2, False), ci.TypeKind.INT: (4, True), ci.TypeKind.UINT: (4, False),
    ci.TypeKind.LONG: (8, True), ci.TypeKind.ULONG: (8, False), ci.TypeKind.LONGLONG: (8, True),
    ci.TypeKind.ULONGLONG: (8, False), ci.TypeKind.INT128: (16, True), ci.TypeKind.UINT128: (16, False),
    ci.TypeKind.WCHAR: (4, True), ci.TypeKind.CHAR16: (2, False), ci.TypeKind.CHAR32: (4, False),
}
_FLOAT_KINDS = {ci.TypeKind.FLOAT: 4, ci.TypeKind.DOUBLE: 8, ci.TypeKind.HALF: 2, ci.TypeKind.LONGDOUBLE: 16}


class _TypeConverter:
    """clang Type -> ir.CType, cached by spelling (the same types recur across a file)."""

    def __init__(self) -> None:
        self.cache: dict[str, ir.CType] = {}
        # The same clang type by identity (its CXType: kind, QualType pointer, translation unit), which
        # needs no ctypes call for its spelling: ~15 % of lowering a large body. One converter serves one
        # parse, during which the translation unit, and so every pointer in a key, stays alive.
        self.by_identity: dict[tuple[int, int, int], ir.CType] = {}

    def convert(self, t: ci.Type, depth: int = 0) -> ir.CType:
        ident = t.data[0]
        if ident:
            idkey = (t._kind_id, ident, t.data[1] or 0)
            hit = self.by_identity.get(idkey)
            if hit is None:
                hit = self.by_identity[idkey] = self._convert_by_spelling(t, depth)
            return hit
        return self._convert_by_spelling(t, depth)

    def _convert_by_spelling(self, t: ci.Type, depth: int) -> ir.CType:
        # The written spelling alone is not a key: `typename vec4<T>::Type` is dependent in a function
        # template and `float4` in the same file's instantiated kernel (where `T` is an alias), and
        # whichever came first would be reused for the other. The canonical spelling tells them apart.
        key = t.spelling
        if "<" in key or not key.replace(" ", "").replace("_", "").isalnum():
            key = f"{key}\x00{t.get_canonical().spelling}"
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        out = self._convert(t, depth)
        self.cache[key] = out
        return out

    def _convert(self, t: ci.Type, depth: int) -> ir.CType:
        if depth > 8:
            return ir.UNKNOWN_TYPE
        const = t.is_const_qualified()
        c = t.get_canonical()
        k = c.kind
        if k in _INT_KINDS:
            size, signed = _INT_KINDS[k]
            return ir.CType("bool" if k == ci.TypeKind.BOOL else "int", size, signed, name=c.spelling, const=const)
        if k in _FLOAT_KINDS:
            return ir.CType("float", _FLOAT_KINDS[k], True, name=c.spelling, const=const)
        if k == ci.TypeKind.ENUM:
            size = c.get_size()
            return ir.CType("int", size if size > 0 else 4, True, name=c.spelling, const=const)
        if k == ci.TypeKind.VOID:
            return ir.CType("void", 0, name="void", const=const)
        if k in (ci.TypeKind.FUNCTIONPROTO, ci.TypeKind.FUNCTIONNOPROTO):
            # What `*op` names for a function pointer `op`: code, not data (no memory is read).
            return ir.CType("function", 0, name=c.spelling)
        if k == ci.TypeKind.POINTER:
            # Recurse on the written pointee where there is one, so `const T*` keeps the name `T`
            # (the canonical type says `type-parameter-0-0`); typedefs need the canonical one.
            written = t.get_pointee()
            pointee = self.convert(written if written.kind != ci.TypeKind.INVALID else c.get_pointee(), depth + 1)
            return ir.CType("pointer", 8, False, pointee=pointee, name=c.spelling, const=const)
        if k in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
            return ir.CType("reference", 8, False, pointee=self.convert(c.get_pointee(), depth + 1), name=c.spelling)
        if k in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY, ci.TypeKind.VARIABLEARRAY,
                 ci.TypeKind.DEPENDENTSIZEDARRAY):
            elem = self.convert(c.get_array_element_type(), depth + 1)
            count = c.element_count if k == ci.TypeKind.CONSTANTARRAY else 0
            size = c.get_size()
            return ir.CType("array", size if size > 0 else 0, pointee=elem, count=max(count, 0), name=c.spelling)
        if k == ci.TypeKind.RECORD:
            size = c.get_size()
            align = c.get_align()
            fields = []
            try:
                for f in c.get_fields():
                    off = c.get_offset(f.spelling)
                    fields.append(ir.Field(f.spelling, off // 8 if off >= 0 else -1, self.convert(f.type, depth + 1)))
            except Exception:  # libclang raises on some dependent records; layout unknown then
                fields = []
            name = c.spelling.replace("struct ", "").replace("const ", "")
            return ir.CType("struct", size if size > 0 else 0, name=name, fields=tuple(fields),
                            align=align if align > 0 else 0, const=const)
        spelling = c.spelling.replace("const ", "").replace("volatile ", "").strip()
        if k in (ci.TypeKind.UNEXPOSED, ci.TypeKind.DEPENDENT) or "type-parameter" in spelling:
            return ir.CType("template", 0, name=t.spelling.replace("const ", "").strip(), const=const)
        return ir.CType("unknown", 0, name=spelling)


_SITE_KINDS = frozenset({K.ARRAY_SUBSCRIPT_EXPR, K.MEMBER_REF_EXPR, K.UNARY_OPERATOR, K.CALL_EXPR,
                         K.CONDITIONAL_OPERATOR})


# Statements and expressions nested deeper than this are lowered as opaque "too deeply nested to
# analyse" (coverage reports them, KL904): Python's recursion limit (1,000 frames) must never be reached
# by the lowering, the evaluator or the rules, whatever the input (an `else if` chain of 1,000 arms).
MAX_NESTING = 150
# Statements lowered per function (nested ones included). The rest of a block past it becomes one
# OpaqueStmt(TOO_LARGE) spanning it, which coverage reports (KL904): the evaluator's step budget
# (60,000 steps, eval/limits.py) would not reach that far on real code, where a statement costs 20-30
# steps, and lowering one through libclang's bindings costs about 0.1-0.2 ms (a hostile body of 40,000
# statements was 10 s of CPU before any analysis). The largest function of the corpus (rodinia
# myocyte's kernel_ecc) has 678 statements.
MAX_STATEMENTS = ir.MAX_STATEMENTS


class _Lowering:
    """Walk clang cursors and build IR nodes."""

    def __init__(self, ctx: _Ctx, types: _TypeConverter) -> None:
        self.ctx = ctx
        self.types = types
        self.depth = 0  # statements and expressions being lowered, nested (bounded by MAX_NESTING)
        self.statements = 0  # statements lowered in the current function (bounded by MAX_STATEMENTS)

    def ctype(self, cursor: ci.Cursor) -> ir.CType:
        return self.types.convert(cursor.type)

    # --- expressions ---------------------------------------------------------------------------

    def expr(self, c: ci.Cursor) -> ir.Expr:
        if self.depth >= MAX_NESTING:  # deeper code stays opaque: the rest is analysed, this is reported
            return ir.Opaque(ir.TOO_DEEP, self.ctype(c), _span(c))
        self.depth += 1
        try:
            return self._expr(c)
        finally:
            self.depth -= 1

    def _expr(self, c: ci.Cursor) -> ir.Expr:
        kind = c.kind
        # Source locations are costly to read through libclang; only sites that can carry a finding
        # (memory accesses and calls) need one.
        span = _span(c) if kind in _SITE_KINDS else ir.NO_SPAN
        if kind in (K.INTEGER_LITERAL, K.CHARACTER_LITERAL, K.CXX_BOOL_LITERAL_EXPR, K.FLOATING_LITERAL, K.CXX_UNARY_EXPR,
                    K.CXX_NULL_PTR_LITERAL_EXPR):
            v = _evaluate(c)
            if kind == K.CXX_NULL_PTR_LITERAL_EXPR:
                v = 0
            if v is None and kind == K.CXX_UNARY_EXPR:
                return self.size_of(c, span)
            if v is None:
                return ir.Opaque(f"literal {kind.name}", self.ctype(c), span)
            return ir.Lit(v, self.ctype(c), span)
        if kind == K.PAREN_EXPR:
            kids = list(c.get_children())
            return self.expr(kids[0]) if kids else ir.Opaque("empty parens", self.ctype(c), span)
        if kind == K.DECL_REF_EXPR:
            return self.decl_ref(c, span)
        if kind == K.MEMBER_REF_EXPR:
            return self.member(c, span)
        if kind == K.ARRAY_SUBSCRIPT_EXPR:
            kids = list(c.get_children())
            if len(kids) != 2:
                return ir.Opaque("subscript", self.ctype(c), span)
            bt = kids[0].type.get_canonical()
            if bt.kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.DEPENDENT) and "<" in kids[0].type.spelling:
                # `sdata[i]` on an object of a class template (SharedMemory<T>) in a template: its
                # `operator[]`, found when the template is bound.
                return _element_call("operator[]", self.expr(kids[0]), (self.expr(kids[1]),), self.ctype(c), span)
            return ir.Index(self.expr(kids[0]), self.expr(kids[1]), self.ctype(c), span)
        if kind == K.BINARY_OPERATOR or kind == K.COMPOUND_ASSIGNMENT_OPERATOR:
            kids = list(c.get_children())
            op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(c))  # type: ignore[attr-defined]
            if op is None or len(kids) != 2:
                return ir.Opaque("binary operator", self.ctype(c), span, tuple(self.expr(k) for k in kids))
            return ir.Binary(op, self.expr(kids[0]), self.expr(kids[1]), self.ctype(c), span)
        if kind == K.UNARY_OPERATOR:
            kids = list(c.get_children())
            op = _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(c))  # type: ignore[attr-defined]
            if op is None or len(kids) != 1:
                return ir.Opaque("unary operator", self.ctype(c), span, tuple(self.expr(k) for k in kids))
            return ir.Unary(op, self.expr(kids[0]), self.ctype(c), span)
        if kind == K.CONDITIONAL_OPERATOR:
            kids = list(c.get_children())
            if len(kids) != 3:
                return ir.Opaque("conditional", self.ctype(c), span)
            return ir.Cond(self.expr(kids[0]), self.expr(kids[1]), self.expr(kids[2]), self.ctype(c), span)
        if kind in (K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_CONST_CAST_EXPR,
                    K.CXX_FUNCTIONAL_CAST_EXPR, K.CXX_DYNAMIC_CAST_EXPR):
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            if not kids:
                return ir.Opaque("cast", self.ctype(c), span)
            return ir.Cast(self.expr(kids[-1]), self.ctype(c), True, span)
        if kind == K.UNEXPOSED_EXPR:
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            if len(kids) == 1:
                return ir.Cast(self.expr(kids[0]), self.ctype(c), False, span)
            v = _evaluate(c)
            if v is not None:
                return ir.Lit(v, self.ctype(c), span)
            return ir.Opaque("unexposed expression", self.ctype(c), span, tuple(self.expr(k) for k in kids))
        if kind == K.CALL_EXPR:
            return self.call(c, span)
        if kind == K.INIT_LIST_EXPR:
            return ir.InitList(tuple(self.expr(k) for k in c.get_children()), self.ctype(c), span)
        v = _evaluate(c) if kind.is_expression() else None
        if v is not None:
            return ir.Lit(v, self.ctype(c), span)
        kids = tuple(self.expr(k) for k in c.get_children() if k.kind.is_expression())
        return ir.Opaque(kind.name.lower(), self.ctype(c), span, kids)

    def size_of(self, c: ci.Cursor, span: ir.Span) -> ir.Expr:
        """`sizeof(T)`, `sizeof(v)` or `alignof(T)` that clang could not fold (a dependent type): an
        ir.SizeOf of the operand's type, which the evaluator folds with the bound arguments."""
        toks = [t.spelling for _, t in zip(range(2), c.get_tokens())]
        kids = list(c.get_children())
        op = toks[0] if toks else ""
        if op not in ("sizeof", "alignof", "__alignof__", "_Alignof", "__alignof") or len(kids) != 1 \
                or (len(toks) > 1 and toks[1] == "..."):
            return ir.Opaque(f"literal {c.kind.name}", self.ctype(c), span)
        return ir.SizeOf(self.types.convert(kids[0].type), op != "sizeof", self.ctype(c), span)

    def decl_ref(self, c: ci.Cursor, span: ir.Span) -> ir.Expr:
        ref = c.referenced
        name = c.spelling
        ctype = self.ctype(c)
        if ref is None:
            return ir.Ref(name, "unknown", ctype, span)
        rk = ref.kind
        if rk == K.PARM_DECL:
            return ir.Ref(name, "param", ctype, span)
        if rk == K.TEMPLATE_NON_TYPE_PARAMETER:
            return ir.Ref(name, "template", ctype, span)
        if rk == K.ENUM_CONSTANT_DECL:
            return ir.Lit(ref.enum_value, ctype, span)
        if rk in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
            return ir.Ref(name, "function", ctype, span)
        if rk == K.VAR_DECL:
            parent = ref.semantic_parent
            if parent is not None and parent.kind in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                # `size` inside a class template (`static constexpr size_t size = sizeof(int4) /
                # sizeof(T)`): dependent, so its initializer, which the evaluator folds once T is bound.
                init = _static_init(ref)
                if init is not None:
                    return self.expr(init)
            if parent is not None and parent.kind in (K.TRANSLATION_UNIT, K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL):
                if name in ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"):
                    return ir.Ref(name, "builtin", ctype, span)
                v = _evaluate(c)
                if v is not None and ctype.kind in ("int", "float", "bool"):
                    return ir.Lit(v, ctype, span)
                attrs = {k.kind for k in ref.get_children()}
                if K.CUDASHARED_ATTR in attrs:
                    return ir.Ref(name, "shared", ctype, span)
                if K.CUDACONSTANT_ATTR in attrs:
                    return ir.Ref(name, "constant", ctype, span)
                return ir.Ref(name, "global", ctype, span)
            return ir.Ref(name, "local", ctype, span)
        return ir.Ref(name, "unknown", ctype, span)

    def member(self, c: ci.Cursor, span: ir.Span) -> ir.Expr:
        kids = [k for k in c.get_children() if k.kind.is_expression()]
        ctype = self.ctype(c)
        ref = c.referenced
        if ref is not None and ref.kind == K.VAR_DECL:
            # A static data member named through an object (`packed.size`, `x128::size` spelled on a
            # value): the object is not read ([expr.ref]/6.1: the member is the class's variable).
            return self.static_member(c, ref, ctype, span)
        if not kids or kids[0].kind == K.CXX_THIS_EXPR:
            return self.this_member(c, ctype, span)
        base_cursor = kids[0]
        base = self.expr(base_cursor)
        btype = base_cursor.type.get_canonical()
        arrow = btype.kind == ci.TypeKind.POINTER
        rec = btype.get_pointee().get_canonical() if arrow else btype
        offset = -1
        try:
            off = rec.get_offset(c.spelling)
            if off >= 0:
                offset = off // 8
        except Exception:
            offset = -1
        name = c.spelling
        if not name:
            # A member of a dependent type (`in[i].r` with `in` a `const T*`) has no spelling in
            # libclang; the member name is the expression's last token.
            toks = [t.spelling for t in c.get_tokens()]
            name = toks[-1] if toks and toks[-1].isidentifier() else ""
            arrow = arrow or (len(toks) >= 2 and toks[-2] == "->")
        return ir.Member(base, name, offset, arrow, ctype, span)

    def static_member(self, c: ci.Cursor, ref: ci.Cursor, ctype: ir.CType, span: ir.Span) -> ir.Expr:
        """`obj.size` for `static constexpr int size = ...`: the constant, else the class's variable."""
        for cur in (c, ref):
            v = _evaluate(cur)
            if v is not None and ctype.kind in ("int", "float", "bool"):
                return ir.Lit(v, ctype, span)
        init = _static_init(ref)
        if init is not None and self.depth < MAX_NESTING // 2:
            return self.expr(init)
        attrs = {k.kind for k in ref.get_children()}
        kind = "shared" if K.CUDASHARED_ATTR in attrs else "constant" if K.CUDACONSTANT_ATTR in attrs else "global"
        return ir.Ref(ref.spelling, kind, ctype, span)

    def this_member(self, c: ci.Cursor, ctype: ir.CType, span: ir.Span) -> ir.Expr:
        """A member named inside a method (`sum`, `this->sum`): a field of the object, `(*this).sum`."""
        ref = c.referenced
        if ref is None or ref.kind != K.FIELD_DECL:
            return ir.Opaque("implicit this member", ctype, span)
        record = ref.semantic_parent
        rtype = self.types.convert(record.type) if record is not None else ir.UNKNOWN_TYPE
        f = rtype.field(c.spelling)
        this = ir.Ref("this", "local", rtype, span)
        return ir.Member(this, c.spelling, f.offset if f is not None else -1, False, ctype, span)

    def call(self, c: ci.Cursor, span: ir.Span) -> ir.Expr:
        ctype = self.ctype(c)
        kids = [k for k in c.get_children() if k.kind.is_expression()]
        ref = c.referenced
        name = c.spelling
        if ref is not None and ref.kind == K.CONSTRUCTOR:
            args = kids
            defn = ref.get_definition()
            if len(args) == 1 and (name == ctype.name.split("<")[0].split("::")[-1] or ctype.kind == "struct") \
                    and not _initializes_members(defn, self.ctx.path):
                # A copy/converting construction `T v = expr`: the value is the argument's.
                return ir.Cast(self.expr(args[0]), ctype, False, span)
            # A constructor with a body kernlint can run (`Acc a(0.f)`, `View v(layout)` whose
            # `: lay(l)` keeps the argument in a member): the call's value is the object.
            target = _function_key(defn if defn is not None else ref) if _is_device(defn or ref) else ""
            return ir.Call(name, tuple(self.expr(a) for a in args), ctype, span, None, target,
                           _split_type_args(ctype.name))
        if ref is not None and ref.kind == K.CONVERSION_FUNCTION and kids:
            # `float* s = SharedMemory<float>()`: construct, then call `operator float*()` on the object.
            member = kids[0]
            base = [k for k in member.get_children() if k.kind.is_expression()]
            receiver = self.expr(base[0]) if base else None
            defn = ref.get_definition()
            rtype = self.types.convert(base[0].type) if base else ir.UNKNOWN_TYPE
            # (a member of a class template specialization may have no definition of its own: its
            # place is the pattern's, which the evaluator finds by location)
            return ir.Call(name, (), ctype, span, receiver, _function_key(defn if defn is not None else ref),
                           _split_type_args(rtype.name))
        if name.startswith("operator") and ref is not None and ref.kind in (K.CXX_METHOD, K.FUNCTION_DECL):
            return self.operator_call(c, name, kids, ctype, span)
        if not name and ref is None:
            dependent = self.dependent_operator(c, kids, ctype, span)
            if dependent is not None:
                return dependent
            if len(kids) == 1 and ctype.kind == "template" and kids[0].kind not in (
                    K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF, K.MEMBER_REF_EXPR, K.UNEXPOSED_EXPR):
                # `T(4.0)` with T a template type parameter (an unresolved construction): a cast.
                first = next(iter(c.get_tokens()), None)
                if first is not None and first.spelling == ctype.name.split("<")[0].strip():
                    return ir.Cast(self.expr(kids[0]), ctype, True, span)
        receiver: ir.Expr | None = None
        via = ""
        callee_kids = kids[:1]
        arg_kids = kids[1:]
        template_args: tuple[str, ...] = ()
        if callee_kids:
            callee = callee_kids[0]
            inner = callee
            while inner.kind == K.UNEXPOSED_EXPR:
                sub = [k for k in inner.get_children() if k.kind.is_expression()]
                if len(sub) != 1:
                    break
                inner = sub[0]
            if inner.kind == K.MEMBER_REF_EXPR:
                base = [k for k in inner.get_children() if k.kind.is_expression()]
                receiver = self.expr(base[0]) if base else None
                name = inner.spelling
                if not name:
                    # A member call on a dependent object (`tile.shfl_down(v, 1)` in a template):
                    # libclang has no spelling; the name is the token after the last `.`/`->`.
                    toks = [t.spelling for t in inner.get_tokens()]
                    name = toks[-1] if toks and toks[-1].isidentifier() else ""
                    if len(toks) >= 3 and toks[-1] == ">" and "<" in toks:
                        j = len(toks) - 1 - toks[::-1].index("<")
                        name = toks[j - 1] if toks[j - 1].isidentifier() else name
                        template_args = _split_template_args(toks[j + 1:])
                elif base and base[0].type.get_canonical().kind in (ci.TypeKind.RECORD, ci.TypeKind.POINTER):
                    bt = base[0].type.get_canonical()
                    template_args = _split_type_args((bt.get_pointee() if bt.kind == ci.TypeKind.POINTER
                                                      else bt).spelling)
                if base and base[0].kind == K.CXX_THIS_EXPR:
                    receiver = ir.Ref("this", "local", self.types.convert(base[0].type.get_pointee()), span)
            elif inner.kind == K.DECL_REF_EXPR and inner.referenced is not None \
                    and inner.referenced.kind in (K.VAR_DECL, K.PARM_DECL) \
                    and _function_pointer_callee(inner) is not None:
                # `op(a, b)` with `op` a function pointer variable (see the `else` below)
                var, fn_decl = _function_pointer_callee(inner)  # type: ignore[misc]
                arg_kids = kids
                if fn_decl is not None:
                    name, ref, arg_kids = fn_decl.spelling, fn_decl, kids[1:]
                else:
                    name, via = "", var
            elif inner.kind == K.DECL_REF_EXPR:
                name = inner.spelling
                template_args = _template_args_from_tokens(inner)
                if not name:
                    # A call to a function template from a template (`loadChunk<isNP2>(...)`): an
                    # overloaded-declaration reference inside; the name is its spelling.
                    over = [k for k in inner.get_children() if k.kind == K.OVERLOADED_DECL_REF]
                    name = over[0].spelling if over else ""
                if name and not template_args:
                    # A qualified callee (`cg::tiled_partition<32>(block)`): the arguments follow the name.
                    toks = [t.spelling for t in inner.get_tokens()]
                    if name in toks and toks.index(name) + 1 < len(toks) and toks[toks.index(name) + 1] == "<":
                        template_args = _split_template_args(toks[toks.index(name) + 2:])
                if not template_args and ref is not None and ref.kind == K.CXX_METHOD:
                    # A static member of a class template specialization (`x128::zeros()`, x128 a typedef
                    # of `Packed128<floatX>`): the class's arguments, for its dependent `sizeof(E)`.
                    owner = ref.semantic_parent
                    if owner is not None and owner.kind in (K.STRUCT_DECL, K.CLASS_DECL):
                        template_args = _split_type_args(owner.type.get_canonical().spelling)
            elif inner.kind == K.OVERLOADED_DECL_REF:
                name = inner.spelling
            else:
                # Not a named callee (a function pointer, a functor): keep the args for side effects.
                arg_kids = kids
                pointer = _function_pointer_callee(inner)
                if pointer is not None:
                    var, fn_decl = pointer
                    if fn_decl is not None:
                        # `op(a, b)` with `op` a pointer that can only hold `add`: a call of `add`.
                        name, ref, arg_kids = fn_decl.spelling, fn_decl, kids[1:]
                    else:
                        via = var
        target = ""
        if ref is not None and ref.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD):
            defn = ref.get_definition()
            if defn is not None:
                target = _function_key(defn)
            elif ref.kind == K.CXX_METHOD:
                target = _function_key(ref)  # a class template's member: found by its place
        if template_args and ref is not None and ref.kind == K.FUNCTION_DECL:
            # `sumReduce<real, SUM_N>(...)` with `typedef float real`: the arguments as clang resolved
            # them for this specialization (`float`, the macro's value), not as written.
            template_args = _resolved_template_args(ref, template_args)
        if ref is not None and ref.kind == K.CXX_METHOD and ref.result_type.kind == ci.TypeKind.LVALUEREFERENCE \
                and _is_device(ref):
            return _element_call(name, receiver, tuple(self.expr(a) for a in arg_kids), ctype, span, target,
                                 template_args)
        return ir.Call(name, tuple(self.expr(a) for a in arg_kids), ctype, span, receiver, target, template_args,
                       via)

    def dependent_operator(self, c: ci.Cursor, kids: list[ci.Cursor], ctype: ir.CType,
                           span: ir.Span) -> ir.Expr | None:
        """`search<D>(k) + threadIdx.x` in a template: with an operand of dependent type and some
        `operator+` overload visible, clang keeps an unresolved operator call (its callee an
        overload set). It is the built-in operator on the operands once they are bound (an
        overload for class types applies only to class operands, whose value is unknown either
        way). None when `c` is not such a call."""
        op_at = -1
        op = ""
        for i, k in enumerate(kids):
            over = k if k.kind == K.OVERLOADED_DECL_REF else next(
                (g for g in k.get_children() if g.kind == K.OVERLOADED_DECL_REF), None) \
                if k.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) and not k.spelling else None
            if over is not None and over.spelling.startswith("operator"):
                op_at, op = i, over.spelling[len("operator"):].strip()
                break
        if op_at < 0:
            return None
        operands = [k for i, k in enumerate(kids) if i != op_at]
        if len(operands) == 2 and op in _BINARY_SPELLINGS:
            return ir.Binary(op, self.expr(operands[0]), self.expr(operands[1]), ctype, span)
        if len(operands) == 1 and op in ("-", "+", "!", "~", "*", "&"):
            return ir.Unary(op, self.expr(operands[0]), ctype, span)
        if len(operands) == 1 and op in ("++", "--"):
            first = next(iter(c.get_tokens()), None)
            fix = "pre" if first is not None and first.spelling == op else "post"
            return ir.Unary(fix + op, self.expr(operands[0]), ctype, span)
        return None

    def converted(self, init: ci.Cursor, lowered: ir.Expr, to: ir.CType) -> ir.Expr:
        """`T* s = SharedMemory<T>();` in a template: clang leaves the conversion of the (dependent)
        object to the pointer implicit, so call the class's conversion operator explicitly."""
        if to.kind != "pointer" or lowered.ctype.kind not in ("template", "struct"):
            return lowered
        decl = None
        for k in init.walk_preorder():
            if k.kind == K.TEMPLATE_REF and k.referenced is not None:
                decl = k.referenced
                break
            if k.kind == K.TYPE_REF and k.referenced is not None and k.referenced.kind in (K.STRUCT_DECL, K.CLASS_DECL):
                decl = k.referenced
                break
        if decl is None:
            return lowered
        convs = [k for k in decl.get_children() if k.kind == K.CONVERSION_FUNCTION and k.is_definition()]
        if not convs:
            return lowered
        # The non-const `operator T*()` where there are both (the object is a non-const temporary).
        conv = next((k for k in convs if not k.is_const_method()), convs[0])
        return ir.Call(conv.spelling, (), to, lowered.span, lowered, _function_key(conv),
                       _split_type_args(lowered.ctype.name))

    def operator_call(self, c: ci.Cursor, name: str, kids: list[ci.Cursor], ctype: ir.CType,
                      span: ir.Span) -> ir.Expr:
        """`a = b` / `a += b` on class types (float4, __half, structs) is an `operator=` call in clang."""
        args = [k for k in kids if not _is_callee_ref(k, name)]
        op = name[len("operator"):].strip()
        ref = c.referenced
        if op == "[]" and len(args) == 2 and ref is not None and ref.kind == K.CXX_METHOD and _is_device(ref) \
                and ref.result_type.kind == ci.TypeKind.LVALUEREFERENCE:
            defn = ref.get_definition()
            return _element_call(name, self.expr(args[0]), (self.expr(args[1]),), ctype, span,
                                 _function_key(defn if defn is not None else ref))
        if op in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=") and len(args) == 2:
            return ir.Binary(op, self.expr(args[0]), self.expr(args[1]), ctype, span)
        if ref is not None and _is_device(ref) and args and ref.result_type.kind != ci.TypeKind.LVALUEREFERENCE:
            # A user's operator returning a value (`float3 operator*(float3, float)` of
            # helper_math.h, `V V::operator+(const V&) const`): a call the evaluator inlines.
            defn = ref.get_definition()
            target = _function_key(defn if defn is not None else ref)
            if ref.kind == K.CXX_METHOD:
                return ir.Call(name, tuple(self.expr(a) for a in args[1:]), ctype, span, self.expr(args[0]), target)
            return ir.Call(name, tuple(self.expr(a) for a in args), ctype, span, None, target)
        # Any other overloaded operator (operator[] of a wrapper class, arithmetic on vector types):
        # its value is unknown, but its operands are still evaluated for their accesses.
        return ir.Opaque(f"overloaded {name}", ctype, span, tuple(self.expr(a) for a in args))

    # --- statements ----------------------------------------------------------------------------

    def stmt(self, c: ci.Cursor) -> ir.Stmt:
        if self.depth >= MAX_NESTING:
            return ir.OpaqueStmt(ir.TOO_DEEP, _span(c))
        self.depth += 1
        try:
            return self._stmt(c)
        finally:
            self.depth -= 1

    def _stmt(self, c: ci.Cursor) -> ir.Stmt:
        self.statements += 1
        kind = c.kind
        span = _span(c)
        if kind == K.COMPOUND_STMT:
            return ir.Block(tuple(self.stmts(c.get_children())), span)
        if kind == K.DECL_STMT:
            decls = [self.var_decl(v) for v in c.get_children() if v.kind == K.VAR_DECL]
            if len(decls) == 1:
                return decls[0]
            return ir.Block(tuple(decls), span)
        if kind == K.IF_STMT:
            kids = list(c.get_children())
            exprs = [k for k in kids]
            if len(exprs) < 2:
                return ir.OpaqueStmt("if", span)
            # Children: [init-stmt?] [condition-variable?] cond then [else]. Find cond as first expression.
            idx = 0
            while idx < len(exprs) and not exprs[idx].kind.is_expression():
                idx += 1
            if idx >= len(exprs) - 1:
                return ir.OpaqueStmt("if with declaration", span)
            cond = self.expr(exprs[idx])
            then = self.stmt(exprs[idx + 1])
            other = self.stmt(exprs[idx + 2]) if len(exprs) > idx + 2 else None
            return ir.If(cond, then, other, span)
        if kind == K.FOR_STMT:
            return self.for_stmt(c, span)
        if kind == K.WHILE_STMT:
            kids = list(c.get_children())
            if len(kids) != 2 or not kids[0].kind.is_expression():
                return ir.OpaqueStmt("while", span)
            return ir.While(self.expr(kids[0]), self.stmt(kids[1]), span)
        if kind == K.DO_STMT:
            kids = list(c.get_children())
            if len(kids) != 2:
                return ir.OpaqueStmt("do", span)
            return ir.While(self.expr(kids[1]), self.stmt(kids[0]), span, do_while=True)
        if kind == K.RETURN_STMT:
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            return ir.Return(self.expr(kids[0]) if kids else None, span)
        if kind == K.BREAK_STMT:
            return ir.Break(span)
        if kind == K.CONTINUE_STMT:
            return ir.Continue(span)
        if kind == K.NULL_STMT:
            return ir.Block((), span)
        if kind == K.SWITCH_STMT:
            return self.switch(c, span)
        if kind.is_expression():
            return ir.ExprStmt(self.expr(c), span)
        if kind in (K.LABEL_STMT,):
            kids = list(c.get_children())
            return self.stmt(kids[0]) if kids else ir.Block((), span)
        if kind == K.UNEXPOSED_STMT:
            # `#pragma unroll` and [[attributes]] wrap the statement they apply to (an AttributedStmt).
            kids = [k for k in c.get_children() if k.kind.is_statement() or k.kind.is_expression()
                    or k.kind == K.DECL_STMT]
            if len(kids) == 1:
                return self.stmt(kids[0])
        return ir.OpaqueStmt(kind.name.lower(), span)

    def stmts(self, cursors: Iterable[ci.Cursor]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        kids = list(cursors)
        for i, k in enumerate(kids):
            deadline.check()  # a body of 40,000 statements is many seconds of lowering
            if self.statements >= MAX_STATEMENTS:
                # The rest of the block, unlowered: one opaque statement from here to its last one.
                first, last = _span(k), _span(kids[-1])
                out.append(ir.OpaqueStmt(ir.TOO_LARGE, ir.Span(first.line, first.column, last.end_line,
                                                               last.end_column)))
                break
            out.append(self.stmt(k))
        return out

    def var_decl(self, v: ci.Cursor) -> ir.VarDecl:
        kids = list(v.get_children())
        shared = any(k.kind == K.CUDASHARED_ATTR for k in kids)
        init_c = [k for k in kids if k.kind.is_expression()]
        ctype = self.ctype(v)
        init = None
        if init_c and not (ctype.kind == "array" and init_c[-1].kind != K.INIT_LIST_EXPR):
            init = self.converted(init_c[-1], self.expr(init_c[-1]), ctype)
        extern = v.storage_class == ci.StorageClass.EXTERN
        static = v.storage_class == ci.StorageClass.STATIC
        return ir.VarDecl(v.spelling, ctype, init, _span(v), shared, extern, static)

    def for_stmt(self, c: ci.Cursor, span: ir.Span) -> ir.Stmt:
        kids = list(c.get_children())
        present = _for_header_parts(c, kids[-1] if kids else None)
        if present is None or sum(present) + 1 != len(kids):
            return ir.OpaqueStmt("for header", span)
        it = iter(kids[:-1])
        init = self.stmt(next(it)) if present[0] else None
        cond = self.expr(next(it)) if present[1] else None
        step = self.expr(next(it)) if present[2] else None
        return ir.For(init, cond, step, self.stmt(kids[-1]), span)

    def switch(self, c: ci.Cursor, span: ir.Span) -> ir.Stmt:
        kids = list(c.get_children())
        if len(kids) != 2 or not kids[0].kind.is_expression():
            return ir.OpaqueStmt("switch", span)
        cond = self.expr(kids[0])
        body = kids[1]
        cases: list[tuple[tuple[ir.Expr, ...], list[ir.Stmt]]] = []
        items = list(body.get_children()) if body.kind == K.COMPOUND_STMT else [body]
        for item in items:
            labels: list[ir.Expr] = []
            node = item
            is_label = False
            while node.kind in (K.CASE_STMT, K.DEFAULT_STMT):
                is_label = True
                sub = list(node.get_children())
                if node.kind == K.CASE_STMT:
                    labels.append(self.expr(sub[0]))
                    node = sub[-1] if len(sub) > 1 else None  # type: ignore[assignment]
                else:
                    labels.append(ir.Opaque("default", ir.INT, _span(node)))
                    node = sub[0] if sub else None  # type: ignore[assignment]
                if node is None:
                    break
            if is_label:
                cases.append((tuple(labels), [self.stmt(node)] if node is not None else []))
            elif cases:
                cases[-1][1].append(self.stmt(item))
        return ir.Switch(cond, tuple((lab, tuple(st)) for lab, st in cases), span)


def _static_init(ref: ci.Cursor) -> ci.Cursor | None:
    """The initializer of a `static const`/`constexpr` data member (its value wherever it is named)."""
    if not ref.type.is_const_qualified() and "constexpr" not in [t.spelling for t in ref.get_tokens()][:8]:
        return None
    inits = [k for k in ref.get_children() if k.kind.is_expression()]
    return inits[-1] if inits else None


def _initializes_members(ctor: ci.Cursor | None, parse_path: str) -> bool:
    """Whether `ctor` is a user's device constructor (not a copy or move constructor) with member
    initializers (`View(const Layout &l) : lay(l) {}`): the object it builds is not its argument."""
    if ctor is None or ctor.kind != K.CONSTRUCTOR or not ctor.is_definition() or not _is_device(ctor):
        return False
    if ctor.is_copy_constructor() or ctor.is_move_constructor():
        return False
    f = ctor.location.file
    if f is None or f.name == shim_path() or f.name.startswith(STUB_DIR):
        return False
    return any(k.kind == K.MEMBER_REF for k in ctor.get_children())


def _is_callee_ref(c: ci.Cursor, name: str) -> bool:
    inner = c
    while inner.kind == K.UNEXPOSED_EXPR:
        sub = [k for k in inner.get_children() if k.kind.is_expression()]
        if len(sub) != 1:
            break
        inner = sub[0]
    return inner.kind == K.DECL_REF_EXPR and inner.spelling == name


def _for_header_parts(c: ci.Cursor, body: ci.Cursor | None = None) -> tuple[bool, bool, bool] | None:
    """Which of init; cond; step a `for` header has (libclang omits the missing ones).

    Only the header is tokenized (up to the body), not the whole loop: tokenizing long bodies
    dominated the front end's time.
    """
    toks: list[str] = []
    if body is not None and body.extent.start.file is not None and c.extent.start.file is not None:
        header = ci.SourceRange.from_locations(c.extent.start, body.extent.start)
        toks = [t.spelling for t in c.translation_unit.get_tokens(extent=header)]
    if len(toks) < 4:
        toks = [t.spelling for t in c.get_tokens()]
    if len(toks) < 4 or toks[0] != "for" or toks[1] != "(":
        return None
    depth = 0
    parts: list[list[str]] = [[]]
    for t in toks[2:]:
        if t in ("(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}"):
            if depth == 0:
                break
            depth -= 1
        if t == ";" and depth == 0:
            parts.append([])
            continue
        parts[-1].append(t)
    if len(parts) != 3:
        return None
    return (bool(parts[0]), bool(parts[1]), bool(parts[2]))


def _template_args_from_tokens(c: ci.Cursor) -> tuple[str, ...]:
    toks = [t.spelling for t in c.get_tokens()]
    if len(toks) >= 3 and toks[1] == "<":
        return _split_template_args(toks[2:])
    return ()


def _split_type_args(spelling: str) -> tuple[str, ...]:
    """Template arguments of a class type's spelling: `SharedMemory<float>` -> ("float",)."""
    if "<" not in spelling or not spelling.rstrip().endswith(">"):
        return ()
    return _split_template_args(re.findall(r"\w+|::|[^\s\w]", spelling[spelling.index("<") + 1:]))


def _split_template_args(toks: list[str]) -> tuple[str, ...]:
    depth = 0
    args: list[list[str]] = [[]]
    for t in toks:
        if t == "<":
            depth += 1
        elif t == ">":
            if depth == 0:
                break
            depth -= 1
        elif t == ">>":
            if depth == 0:
                break
            depth -= 1
            if depth == 0:
                args[-1].append(">")
                break
        if t == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    return tuple(" ".join(a) for a in args if a)


def _function_key(c: ci.Cursor) -> str:
    name = c.spelling
    if c.kind == K.CONSTRUCTOR:
        # A class template's constructor is spelled `global_stack<T, N, THREADS>`, a specialization's
        # (what a call in an instantiated kernel refers to) `global_stack`: one key for both.
        name = name.split("<", 1)[0]
    return f"{name}@{c.location.file.name if c.location.file else ''}:{c.location.line}"


def _is_kernel(c: ci.Cursor) -> bool:
    return any(k.kind == K.CUDAGLOBAL_ATTR for k in c.get_children())


def _is_device(c: ci.Cursor) -> bool:
    return any(k.kind in (K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR) for k in c.get_children())


def _launch_bounds(c: ci.Cursor, lines: list[str]) -> tuple[str, ...]:
    """`__launch_bounds__(...)` arguments as written, read from the text before the kernel's name.

    libclang returns no tokens for an extent that begins inside a macro expansion (`__global__`
    is one), so the declaration's text is scanned instead.
    """
    start, name = c.extent.start, c.location
    if start.line <= 0 or name.line < start.line:
        return ()
    text = "\n".join(lines[start.line - 1:name.line])
    m = re.search(r"__launch_bounds__\s*\(", text)
    if not m:
        return ()
    depth = 0
    args: list[str] = [""]
    for ch in text[m.end():]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append("")
            continue
        args[-1] += ch
    return tuple(" ".join(a.split()) for a in args if a.strip())


def _annotation_above(lines: list[str], line: int) -> str:
    """The `// kernlint: ...` (or GPUVerify `//--blockDim=`) comments directly above `line` (1-based)."""
    found: list[str] = []
    i = line - 2
    while i >= 0:
        s = lines[i].strip()
        if s.startswith("//") or s.startswith("template") or s.startswith("__launch_bounds__") or s.startswith("/*") or s.startswith("*"):
            if "kernlint:" in s or "--blockDim" in s or "--gridDim" in s:
                found.append(s)
            i -= 1
            continue
        break
    return " ".join(reversed(found))


_MAX_PARSE_ROUNDS = 64
"""Bound on re-parses that each stub one more include clang reported missing. The pre-scan finds
almost all of them, so real files need one parse; the bound only stops a pathological loop."""


def _stub_includes(text: str, path: str, include_dirs: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """Includes clang should read as empty files: names to create under STUB_DIR, and absolute
    paths to shadow (missing absolute includes, FIFOs, devices, directories: never opened)."""
    found = scan_includes(text, path, include_dirs)
    return set(found.names), set(found.paths)


_NOT_FOUND_RE = re.compile(r"'([^']+)' file not found")


def _classify(diag: ci.Diagnostic) -> bool:
    """True for a real syntax error; False for a semantic one (an unknown name from a missing header)."""
    cat = (diag.category_name or "").lower()
    if _NOT_FOUND_RE.match(diag.spelling):
        return False  # an include still missing (only past _MAX_PARSE_ROUNDS): a missing header, not syntax
    return "parse" in cat or "lexical" in cat


def _problems(tu: ci.TranslationUnit, parse_path: str, context: str = "") -> list[ir.ParseProblem]:
    """clang's errors as ParseProblems: syntax errors apart from names a missing header would declare.

    A parse error that follows an unresolved name on the same line is its consequence, not a
    syntax error of its own: `(Foo*)p` with `Foo` undeclared reads as `(Foo) * ) p`, so clang adds
    "expected expression" after "use of undeclared identifier 'Foo'".
    """
    problems: list[ir.ParseProblem] = []
    unresolved_at: dict[int, int] = {}  # line -> column of the first unresolved name on it
    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error:
            continue
        loc = d.location
        if loc.file is None or loc.file.name != parse_path:
            if _NOT_FOUND_RE.match(d.spelling) or (context and loc.file is not None and loc.file.name == context):
                continue
            # An error inside a real header the user pointed at: report it on line 1.
            problems.append(ir.ParseProblem(1, 1, f"{loc.file.name if loc.file else '?'}:{loc.line}: {d.spelling}", False))
            continue
        syntax = _classify(d)
        if not syntax:
            unresolved_at.setdefault(loc.line, loc.column)
        elif unresolved_at.get(loc.line, loc.column + 1) < loc.column:
            syntax = False
        problems.append(ir.ParseProblem(loc.line, loc.column, d.spelling, syntax))
    return problems


# `__shared__ alignas(16) float t[...]` is valid CUDA (nvcc accepts it; cuda-samples use it), but the
# shim spells `__shared__` as a GNU attribute, after which clang refuses a C++11 attribute. Swapping the
# two specifiers is the same declaration and keeps every offset of the file (same length, same line).
_SPACE_THEN_ALIGNAS_RE = re.compile(
    r"\b(__shared__|__constant__|__device__|__managed__)([ \t]+)(alignas[ \t]*\((?:[^()\n]|\([^()\n]*\))*\))")


def clang_spelling(text: str) -> str:
    """`text` with CUDA spellings the shim cannot take rewritten in place (same length and lines)."""
    if "alignas" not in text:
        return text
    return _SPACE_THEN_ALIGNAS_RE.sub(lambda m: m.group(3) + m.group(2) + m.group(1), text)


def parse_source(text: str, path: str, *, include_dirs: tuple[str, ...] = (), defines: tuple[str, ...] = (),
                 arch: str = DEFAULT_ARCH, fragment: str | None = None, fragment_text: str | None = None,
                 ) -> ir.TranslationUnit:
    """Parse CUDA source `text` (named `path` in messages) into a TranslationUnit.

    Every include that cannot be found is stubbed (an empty file): first those a text pre-scan
    finds, then, parse after parse, any further one clang stops at (a fatal error ends clang's
    work on the file: no more templates, no more errors), until none is left.

    With `fragment` (a file `text` includes, e.g. a fragment parsed in its includer's context), only
    the kernels, launches and problems located in `fragment` are lowered, and the unit is named after
    it; `fragment_text` is then that file's content (the disk copy is not read).
    """
    path = path or "<stdin>"
    parse_path = _clang_name(os.path.abspath(path)) if path != "<stdin>" else "/__kernlint_stdin__.cu"
    include_dirs = tuple(_clang_name(os.path.abspath(d)) for d in include_dirs)
    base = ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "-nostdinc", "-nostdinc++",
            *_clang_arch_args(arch), "-std=c++17", "-fsyntax-only", "-Wno-everything", "-ferror-limit=0"]
    pch = shim_pch.pch_for(ci, shim_path(), base + [f"-D{d}" for d in defines])  # see shim_pch.py
    args = base + (["-include-pch", pch] if pch else ["-include", shim_path()])
    # The main file's directory is searched after the user's include directories for `<name>` too
    # (nvcc builds nearly always pass it: the CUDA SDK's common.mk and Rodinia's makefiles add `-I.`;
    # kernlint's own nvcc run passes it first). The stub directory comes last, so a stub never hides
    # a real header of the same name.
    here = os.path.dirname(parse_path) if path != "<stdin>" else ""
    args += [f"-I{d}" for d in include_dirs] + ([f"-I{here}"] if here and here not in include_dirs else [])
    args += [f"-I{STUB_DIR}"]
    args += [f"-D{d}" for d in defines]
    names, paths = _stub_includes(text, parse_path, include_dirs + ((here,) if here else ()))
    text = clang_spelling(text)
    if fragment_text is not None:
        fragment_text = clang_spelling(fragment_text)
    # With the PCH, the index leaves out the shim's declarations (they come from the PCH).
    index = ci.Index.create(excludeDecls=pch is not None and shim_pch.EXCLUDE)
    tu = None
    for _round in range(_MAX_PARSE_ROUNDS):
        unsaved = [(parse_path, text)] + [(f"{STUB_DIR}/{n}", stub_text(n)) for n in sorted(names)]
        unsaved += [(p, "") for p in sorted(paths) if p != parse_path]
        if fragment is not None and fragment_text is not None:
            unsaved.append((_clang_name(os.path.abspath(fragment)), fragment_text))
        try:
            tu = index.parse(parse_path, args=args, unsaved_files=unsaved,
                             options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
                             | ci.TranslationUnit.PARSE_INCOMPLETE)
        except ci.TranslationUnitLoadError as exc:
            if pch is None:
                raise FrontendError(f"clang could not parse the file: {exc}") from exc
            tu = None
        if pch is not None and (tu is None or any(d.severity >= 4 and _PCH_PROBLEM_RE.search(d.spelling)
                                                  for d in tu.diagnostics)):
            shim_pch.disable()  # clang would not take the PCH: the shim as text, from now on
            pch = None
            args[args.index("-include-pch"):args.index("-include-pch") + 2] = ["-include", shim_path()]
            index = ci.Index.create()
            continue
        grew = False
        for d in tu.diagnostics:
            m = _NOT_FOUND_RE.match(d.spelling)
            if not m:
                continue
            name = m.group(1)
            target = paths if os.path.isabs(name) else names
            if name not in target:
                target.add(name)
                grew = True
        if not grew:
            break
    assert tu is not None
    if fragment is not None:
        fpath = _clang_name(os.path.abspath(fragment))
        ftext = (fragment_text if fragment_text is not None
                 else open(os.path.abspath(fragment), encoding="utf-8", errors="replace").read())
        unit = _lower(tu, ftext, fragment, fpath, context=parse_path)
    else:
        unit = _lower(tu, text, path, parse_path,
                      launch_text_only=not _chevrons_outside(tu, text, defines, parse_path, paths))
    stubbed = _stubbed(tu, paths)
    return dataclasses.replace(unit, stubbed=stubbed) if stubbed else unit


_PCH_PROBLEM_RE = re.compile(r"precompiled|\bPCH\b|AST file")


def _clang_name(path: str) -> str:
    """`path` as libclang can take it (UTF-8): bytes of a non-UTF-8 file name (surrogate escapes)
    become U+FFFD. The file's text is always handed over in memory, so the name only labels it."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _stubbed(tu: ci.TranslationUnit, paths: set[str]) -> tuple[str, ...]:
    """The includes clang actually read as empty stubs, as written in the source (sorted)."""
    out = set()
    prefix = STUB_DIR + "/"
    for inc in tu.get_includes():
        name = inc.include.name
        if name.startswith(prefix):
            out.add(name[len(prefix):])
        elif name in paths:
            out.add(name)
    return tuple(sorted(out))


def _clang_arch(arch: str) -> str:
    # libclang 18 knows sm_XX up to sm_90; pass a value it accepts, the arch matters only for __CUDA_ARCH__.
    m = re.match(r"(?:sm_|compute_)?(\d+)", (arch or DEFAULT_ARCH).strip().lower().replace(".", ""))
    n = int(m.group(1)) if m else int(DEFAULT_ARCH[3:])
    return f"sm_{min(max(n, 50), 90)}"


def _clang_arch_args(arch: str) -> list[str]:
    """`--cuda-gpu-arch` for `arch`, and `__CUDA_ARCH__` set to its value where clang 18 lacks the arch."""
    m = re.match(r"(?:sm_|compute_)?(\d+)", (arch or DEFAULT_ARCH).strip().lower().replace(".", ""))
    n = int(m.group(1)) if m else int(DEFAULT_ARCH[3:])
    out = [f"--cuda-gpu-arch={_clang_arch(arch)}"]
    if n > 90:  # sm_100, sm_120: device code is preprocessed for the real value (__CUDA_ARCH__ = 10 * n)
        out += ["-U__CUDA_ARCH__", f"-D__CUDA_ARCH__={n * 10}"]
    return out


def _file_namer(lib: Any) -> Callable[[ci.Cursor], str | None]:
    """A function giving the name of the file a cursor is in (None: none, a builtin), with one ctypes call
    per cursor: the name is looked up once per file handle of the translation unit (`cursor.location.file.name`
    costs three calls and a string conversion, for each of the ~1,500 declarations of the shim)."""
    names: dict[int | None, str] = {}
    get = lib.clang_getInstantiationLocation

    def file_of(c: ci.Cursor) -> str | None:
        handle = ci.c_object_p()
        get(c.location, ctypes.byref(handle), None, None, None)
        if not handle:
            return None
        key = ctypes.cast(handle, ctypes.c_void_p).value
        name = names.get(key)
        if name is None:
            f = c.location.file
            if f is None:
                return None
            name = names[key] = f.name
        return name

    return file_of


def _chevrons_outside(tu: ci.TranslationUnit, text: str, defines: Iterable[str], parse_path: str,
                      shadowed: set[str]) -> bool:
    """Whether a `<<<` reaches the parse from elsewhere than the main file's code outside `#define`s: a
    command-line define, a `#define` of the main file, or any file the parse read (a header, the shim).
    When none does, a host function whose own text has no `<<<` launches nothing (see `_lower`)."""
    if any("<<<" in d for d in defines):
        return True
    if "<<<" in text:
        in_define = False
        for line in text.split("\n"):
            if in_define or line.lstrip(" \t").startswith("#") and "define" in line:
                if "<<<" in line:
                    return True
                in_define = line.rstrip("\r").endswith("\\")
    for inc in tu.get_includes():
        name = inc.include.name
        if name == parse_path or name.startswith(STUB_DIR + "/") or name in shadowed or not os.path.isfile(name):
            continue  # the main file, or read as an empty stub (never open a FIFO or a device)
        try:
            with open(name, "rb") as fh:
                if b"<<<" in fh.read():
                    return True
        except OSError:
            return True  # unreadable: assume it may
    try:
        with open(shim_path(), "rb") as fh:
            return b"<<<" in fh.read()
    except OSError:
        return True


def _lower(tu: ci.TranslationUnit, text: str, path: str, parse_path: str, context: str = "",
           launch_text_only: bool = False) -> ir.TranslationUnit:
    """Lower the kernels of `parse_path`; `context` is the includer it was parsed through, if any
    (its own errors are not this file's problems; its macros and globals are visible here).
    `launch_text_only`: every `<<<` of the parse is in the main file's text outside macros (see
    `_chevrons_outside`), so host functions whose text has none are not searched for launches."""
    types = _TypeConverter()
    low = _Lowering(_Ctx(parse_path, text), types)
    lines = text.splitlines()
    problems = _problems(tu, parse_path, context)

    kernels: list[ir.Function] = []
    functions: dict[str, ir.Function] = {}
    launches: list[ir.Launch] = []
    instantiations: list[tuple[str, tuple[str, ...]]] = []
    globals_: dict[str, ir.VarDecl] = {}
    macros: dict[str, int] = {}
    structs: dict[str, ir.CType] = {}
    member_types: dict[str, tuple[tuple[str, ...], ir.CType]] = {}
    shim = shim_path()

    lib = _lib()
    file_of = _file_namer(lib)
    data = text.encode("utf-8", "surrogateescape") if launch_text_only else b""

    def may_launch(c: ci.Cursor) -> bool:
        """Whether host function `c` can hold a kernel launch (`k<<<...>>>`): only where `<<<` is spelled."""
        if not launch_text_only:
            return True
        ext = c.extent
        return b"<<<" in data[ext.start.offset:ext.end.offset + 3]

    main_only = context is None  # macros and globals come from parse_path only: libclang's main file

    def visit(c: ci.Cursor, depth: int) -> None:
        for child in c.get_children():
            # The kind first (cheap, cached): most top-level cursors are macro expansions and the
            # compiler's builtin macros, which are either never lowered or lowered only from the main
            # file; those need no file name (each costs several ctypes calls, ~1,300 per file).
            kind = child.kind
            if kind not in _LOWERED_KINDS:
                continue
            if kind == K.MACRO_DEFINITION and main_only and not lib.clang_Location_isFromMainFile(child.location):
                continue
            fname = file_of(child)
            if fname is None or fname == shim or fname.startswith(STUB_DIR):
                continue
            if kind in (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL) and depth < 6:
                visit(child, depth + 1)
            elif kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
                if not child.is_definition():
                    if kind == K.FUNCTION_DECL and _is_kernel(child):
                        targs = _explicit_instantiation_args(child)
                        if targs:
                            instantiations.append((child.spelling, targs))
                    continue
                if _is_device(child):
                    fn = _function(low, child, lines, problems, parse_path)
                    functions[fn.key] = fn
                    if fn.is_kernel and fname == parse_path:
                        kernels.append(fn)
                if fname == parse_path and not _is_kernel(child) and may_launch(child):
                    launches.extend(_launches(child))
            elif kind == K.VAR_DECL and (fname == parse_path or fname == context):
                globals_[child.spelling] = low.var_decl(child)
            elif kind in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE) and depth < 6:
                if kind != K.CLASS_TEMPLATE and child.spelling and child.is_definition():
                    structs[child.spelling] = types.convert(child.type)
                visit(child, depth + 1)
            elif kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION and child.spelling:
                # (its members are not matched: a dependent member type of this class stays unknown)
                member_types[child.spelling + PARTIAL_SPECIALIZATION] = ((), ir.UNKNOWN_TYPE)
            elif kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL) and child.spelling:
                under = types.convert(child.underlying_typedef_type)
                if kind == K.TYPEDEF_DECL and under.kind == "struct":
                    structs[child.spelling] = under
                owner = _member_type_owner(c)
                if owner is not None:
                    member_types.setdefault(f"{owner[0]}::{child.spelling}", (owner[1], under))
            elif kind == K.MACRO_DEFINITION and (fname == parse_path or fname == context):
                toks = [t.spelling for t in child.get_tokens()]
                if len(toks) >= 2 and toks[0] == child.spelling and toks[1] != "(":
                    value = fold_tokens(toks[1:], macros)
                    if value is not None:
                        macros[child.spelling] = value
            elif kind in _METHOD_KINDS and child.is_definition():
                if _is_device(child):
                    fn = _method(low, child, lines, problems, parse_path)
                    functions[fn.key] = fn
                if kind == K.CXX_METHOD and fname == parse_path and may_launch(child):
                    launches.extend(_launches(child))

    visit(tu.cursor, 0)
    file_annotation = " ".join(
        ln.strip() for ln in lines[:40] if ln.strip().startswith("//") and ("kernlint:" in ln or "--blockDim" in ln)
    )
    return ir.TranslationUnit(path=path, kernels=tuple(kernels), functions=functions, globals=globals_,
                              launches=tuple(launches), problems=tuple(problems), file_annotation=file_annotation,
                              instantiations=tuple(instantiations) + _text_instantiations(text),
                              macros=macros, structs=structs, member_types=member_types)


_INSTANTIATION_RE = re.compile(
    # `^[ \t]*` (not `^\s*`, quadratic on runs of blank lines); the arguments are bounded in length.
    r"^[ \t]*template\s+(?:__global__\s+)?(?:void\s+)?(?:__global__\s+)?(?:void\s+)?([A-Za-z_]\w*)\s*<([^;{]{0,2000}?)>\s*\(",
    re.M)


def _text_instantiations(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Explicit instantiations (`template __global__ void k<128>(float*);`): libclang has no cursor for them."""
    out = []
    for m in _INSTANTIATION_RE.finditer(text):
        args = _split_template_args(re.findall(r"\w+|::|[^\s\w]", m.group(2)) + [">"])
        if args:
            out.append((m.group(1), args))
    return tuple(out)


def fold_tokens(toks: list[str], macros: dict[str, int]) -> int | None:
    """Value of an object-like macro whose body is integer arithmetic over literals and other macros.

    Bounded (kernlint.intfold): values beyond 64 bits, huge literals and deep nesting are unknown (None)."""
    from kernlint import intfold

    parts: list[str | int] = []
    for t in toks:
        if t in macros:
            parts.append(macros[t])
        elif t in ("true", "false"):  # bool template arguments (`loadChunk<true>`)
            parts.append(1 if t == "true" else 0)
        elif t in ("+", "-", "*", "/", "%", "(", ")", "<<", ">>") or t[:1].isdigit():
            parts.append(t)
        else:
            return None
    return intfold.evaluate(parts)


def _explicit_instantiation_args(c: ci.Cursor) -> tuple[str, ...]:
    toks = [t.spelling for t in c.get_tokens()]
    if not toks or toks[0] != "template":
        return ()
    try:
        i = toks.index(c.spelling)
    except ValueError:
        return ()
    if i + 1 < len(toks) and toks[i + 1] == "<":
        return _split_template_args(toks[i + 2:])
    return ()


def _function(low: _Lowering, c: ci.Cursor, lines: list[str], problems: list[ir.ParseProblem],
              parse_path: str) -> ir.Function:
    params = []
    param_cursors: list[ci.Cursor] = []
    tparams = []
    body = None
    for k in c.get_children():
        if k.kind == K.PARM_DECL:
            params.append(ir.Param(k.spelling, low.ctype(k), k.type.spelling))
            param_cursors.append(k)
        elif k.kind == K.TEMPLATE_TYPE_PARAMETER:
            tparams.append(ir.TemplateParam(k.spelling, True))
        elif k.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            tparams.append(ir.TemplateParam(k.spelling, False))
        elif k.kind == K.COMPOUND_STMT:
            body = k
    span = _span(c)
    ext = c.extent
    in_main = c.location.file is not None and c.location.file.name == parse_path
    errors = tuple((p.line, p.column, p.message) for p in problems
                   if in_main and p.syntax and ext.start.line <= p.line <= ext.end.line)
    unresolved = tuple((p.line, p.column, p.message) for p in problems
                       if in_main and not p.syntax and ext.start.line <= p.line <= ext.end.line)
    params = [_unresolved_param(p, param_cursors[i], unresolved) for i, p in enumerate(params)]
    low.statements = 0
    lowered = low.stmt(body) if body is not None else None
    if lowered is not None and not isinstance(lowered, ir.Block):
        lowered = ir.Block((lowered,), span)
    is_kernel = _is_kernel(c)
    return ir.Function(
        name=c.spelling, params=tuple(params), body=lowered, span=span, is_kernel=is_kernel,
        template_params=tuple(tparams), launch_bounds=_launch_bounds(c, lines) if is_kernel and in_main else (),
        parse_errors=errors, unresolved=unresolved,
        annotation=_annotation_above(lines, ext.start.line) if in_main else "", key=_function_key(c),
    )


def _unresolved_param(p: ir.Param, k: ci.Cursor, unresolved: tuple[tuple[int, int, str], ...]) -> ir.Param:
    """A parameter whose declared type is a name clang did not know (`cufftComplex *a` without
    cufft.h): clang recovers with `int`, a size that would be wrong; its type is unknown, named
    after the missing name (the evaluator says so, with how to supply it)."""
    if not unresolved:
        return p
    ext = k.extent
    for line, col, msg in unresolved:
        inside = (ext.start.line, ext.start.column) <= (line, col) <= (ext.end.line, ext.end.column)
        m = re.match(r"unknown type name '([^']+)'", msg)
        if inside and m:
            return ir.Param(p.name, ir.CType("unknown", 0, name=m.group(1)))
    return p


_METHOD_KINDS = (K.CXX_METHOD, K.CONVERSION_FUNCTION, K.CONSTRUCTOR)
_LOWERED_KINDS = frozenset((K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE,
                            K.VAR_DECL, K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.TYPEDEF_DECL,
                            K.TYPE_ALIAS_DECL, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.MACRO_DEFINITION)
                           + _METHOD_KINDS)
"""The cursor kinds `_lower`'s walk acts on (at any depth); every other cursor is skipped unread."""


def _member_type_owner(c: ci.Cursor) -> tuple[str, tuple[str, ...]] | None:
    """For a member type declared in `c`: the class's name as a dependent type names it (`vec4` for the
    primary template, `vec4<float>` for an explicit specialization, unqualified) and the primary
    template's parameter names (() for a concrete class); None when `c` is no class."""
    if c.kind == K.CLASS_TEMPLATE:
        params = tuple(k.spelling for k in c.get_children()
                       if k.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER))
        return (c.spelling, params) if c.spelling else None
    if c.kind in (K.STRUCT_DECL, K.CLASS_DECL) and c.spelling:
        canon = c.type.get_canonical().spelling
        return (c.spelling + (canon[canon.index("<"):] if "<" in canon else ""), ())
    return None


def _method(low: _Lowering, c: ci.Cursor, lines: list[str], problems: list[ir.ParseProblem],
            parse_path: str) -> ir.Function:
    """A member function, conversion operator or constructor of a struct: named `Class::name`, with
    the class's template parameters first and a constructor's member initializers (`: x(v)`) as
    assignments to `this`'s fields before its body."""
    fn = _function(low, c, lines, problems, parse_path)
    record = c.semantic_parent
    cls = record.spelling if record is not None else ""
    if record is not None and record.kind in (K.STRUCT_DECL, K.CLASS_DECL) and "<" in record.type.spelling:
        cls = record.type.get_canonical().spelling  # an explicit specialization: `SharedMemory<float>`
    ctparams = tuple(ir.TemplateParam(k.spelling, k.kind == K.TEMPLATE_TYPE_PARAMETER)
                     for k in (record.get_children() if record is not None else ())
                     if k.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER))
    body = fn.body
    if c.kind == K.CONSTRUCTOR and body is not None:
        inits: list[ir.Stmt] = []
        kids = list(c.get_children())
        rtype = low.types.convert(record.type) if record is not None else ir.UNKNOWN_TYPE
        for i, k in enumerate(kids):
            if k.kind != K.MEMBER_REF or i + 1 >= len(kids) or not kids[i + 1].kind.is_expression():
                continue
            value = low.expr(kids[i + 1])
            f = rtype.field(k.spelling)
            target = ir.Member(ir.Ref("this", "local", rtype, fn.span), k.spelling, f.offset if f else -1, False,
                               f.ctype if f else ir.UNKNOWN_TYPE, fn.span)
            inits.append(ir.ExprStmt(ir.Binary("=", target, value, target.ctype, fn.span), fn.span))
        body = ir.Block(tuple(inits) + body.body, body.span)
    if body is not None and c.result_type.kind == ci.TypeKind.LVALUEREFERENCE:
        # `T& operator[](int i) { return s[i]; }`: the call is the element itself, so the method
        # returns its address and the call site dereferences it (see _Lowering.call).
        body = _address_returns(body)  # type: ignore[assignment]
    return dataclasses.replace(fn, name=f"{cls}::{c.spelling}" if cls else c.spelling, body=body,
                               template_params=ctparams + fn.template_params)


def _address_returns(s: ir.Stmt) -> ir.Stmt:
    """`return e;` -> `return &e;` throughout a statement tree (for functions returning references)."""
    if isinstance(s, ir.Return) and s.value is not None:
        v = s.value
        t = ir.CType("pointer", 8, False, pointee=v.ctype, name=v.ctype.name + " *")
        return ir.Return(ir.Unary("&", v, t, v.span if hasattr(v, "span") else s.span), s.span)
    if isinstance(s, ir.Block):
        return ir.Block(tuple(_address_returns(b) for b in s.body), s.span)
    if isinstance(s, ir.If):
        return ir.If(s.cond, _address_returns(s.then), _address_returns(s.other) if s.other else None, s.span)
    if isinstance(s, ir.For):
        return ir.For(s.init, s.cond, s.step, _address_returns(s.body), s.span)
    if isinstance(s, ir.While):
        return ir.While(s.cond, _address_returns(s.body), s.span, s.do_while)
    if isinstance(s, ir.Switch):
        return ir.Switch(s.cond, tuple((lab, tuple(_address_returns(b) for b in body)) for lab, body in s.cases),
                         s.span)
    return s


def _element_call(name: str, receiver: ir.Expr, args: tuple[ir.Expr, ...], ctype: ir.CType, span: ir.Span,
                  target: str = "", template_args: tuple[str, ...] = ()) -> ir.Expr:
    """A call to a method returning a reference (`sdata[i]` through `T& operator[](int)`): the call
    yields the element's address (see _address_returns) and the expression is that element."""
    ptr = ir.CType("pointer", 8, False, pointee=ctype, name=ctype.name + " *")
    return ir.Unary("*", ir.Call(name, args, ptr, span, receiver, target, template_args), ctype, span)


def _launches(c: ci.Cursor) -> list[ir.Launch]:
    """Find `k<<<g, b, s>>>(...)` calls in a host function and fold their configuration to numbers."""
    out: list[ir.Launch] = []
    local_inits: dict[str, ci.Cursor | None] = {}
    reassigned = _reassigned_names(c)
    # `dim3 b; b.x = 256;`: a member assigned exactly once overrides the declared value (key
    # "b.x"); one assigned more than once, or by `+=`/`>>=`, is unknown (None).
    local_inits.update(_member_assignments(c))

    ancestors: list[ci.Cursor] = []  # enclosing for/if statements of the host code (host_samples.py)
    tokens: list[tuple[int, str]] | None = None  # the host function's tokens (offset, text), read once

    def offsets(launch: ci.Cursor, arg_cursors: list[ci.Cursor]) -> tuple[str, ...]:
        """Pointer offsets the arguments pass (project/pointer_offsets.py), from the text before the launch."""
        nonlocal tokens
        ptrs = [a for a in arg_cursors if a.type.get_canonical().kind == ci.TypeKind.POINTER]
        if not ptrs:
            return ()
        if tokens is None:
            tokens = [(t.extent.start.offset, t.spelling) for t in c.get_tokens()]
        at = launch.extent.start.offset  # once, not per token (four ctypes calls)
        before = " ".join(s for off, s in tokens if off < at)
        texts = [" ".join(t.spelling for t in a.get_tokens()) if a.type.get_canonical().kind == ci.TypeKind.POINTER
                 else "" for a in arg_cursors]
        return arg_offsets(texts, before)

    def walk(n: ci.Cursor, depth: int) -> None:
        if depth > 200:
            return
        for ch in n.get_children():
            if ch.kind == K.VAR_DECL and ch.spelling not in reassigned:
                # Only variables never assigned after their declaration fold to their initializer
                # (`for (int s = 1; ...; s++) k<<<...>>>(s)` must not bind s = 1).
                inits = [k for k in ch.get_children() if k.kind.is_expression()]
                if inits:
                    local_inits[ch.spelling] = inits[-1]
            if ch.kind == K.CALL_EXPR:
                kids = [k for k in ch.get_children() if k.kind.is_expression()]
                config = kids[1] if len(kids) > 1 else None
                if config is not None and config.kind == K.CALL_EXPR and config.spelling in (
                        "cudaConfigureCall", "__cudaPushCallConfiguration"):
                    cargs = [k for k in config.get_children() if k.kind.is_expression()][1:]
                    grid = _fold_dim3(cargs[0], local_inits) if cargs else None
                    block = _fold_dim3(cargs[1], local_inits) if len(cargs) > 1 else None
                    shmem = _fold_int(cargs[2], local_inits) if len(cargs) > 2 else None
                    callee = kids[0]
                    targs: tuple[str, ...] = ()
                    ref = callee
                    while ref.kind == K.UNEXPOSED_EXPR:
                        sub = [k for k in ref.get_children() if k.kind.is_expression()]
                        if not sub:
                            break
                        ref = sub[0]
                    if ref.kind == K.DECL_REF_EXPR:
                        targs = _template_args_from_tokens(ref)
                    block_text = " ".join(t.spelling for t in cargs[1].get_tokens()) if len(cargs) > 1 else ""
                    name = ref.spelling or ch.spelling
                    if not name:
                        # A launch inside a host template has a dependent callee with no name.
                        toks = [t.spelling for t in ch.get_tokens()]
                        name = toks[0] if toks and toks[0].isidentifier() else ""
                        if len(toks) > 2 and toks[1] == "<":
                            targs = _split_template_args(toks[2:])
                    targs = _fold_template_args(targs, local_inits)
                    decl = ref.referenced if ref.kind == K.DECL_REF_EXPR else None
                    deduced = _deduced_template_args(decl, targs) if decl is not None else ()
                    key = _function_key(decl.get_definition() or decl) if decl is not None else ""
                    args = tuple(_fold_int(a, local_inits) if a.type.get_canonical().kind in _INT_KINDS else None
                                 for a in kids[2:])
                    out.append(ir.Launch(name, deduced or targs, grid, block, shmem, _span(ch), block_text, args, key,
                                         arg_samples=_host_samples(ch, ancestors, kids[2:], args, local_inits),
                                         deduced=len(deduced) > len(targs), arg_offsets=offsets(ch, kids[2:])))
            scoped = ch.kind in (K.FOR_STMT, K.IF_STMT)
            if scoped:
                ancestors.append(ch)
            walk(ch, depth + 1)
            if scoped:
                ancestors.pop()

    walk(c, 0)
    return out


def _deduced_template_args(decl: ci.Cursor, explicit: tuple[str, ...]) -> tuple[str, ...]:
    """All template arguments of the kernel specialization a launch calls, when clang deduced some
    from the argument types (`scale<<<g, b>>>(out, inp)` with `template <class T> scale(T*, const T*)`
    and `floatX* out`): the explicit ones as written, the deduced ones as clang resolved them (the
    canonical type, or the integer value). () when nothing was deduced or an argument is not a type
    or an integer."""
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings: no deduction
        return ()
    if n <= len(explicit):
        return ()
    out = list(explicit)
    for i in range(len(explicit), n):
        kind = decl.get_template_argument_kind(i)
        if kind == ci.TemplateArgumentKind.TYPE:
            spelling = decl.get_template_argument_type(i).get_canonical().spelling
            out.append(spelling.replace("struct ", "").replace("class ", ""))
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append(str(decl.get_template_argument_value(i)))
        else:
            return ()
    return tuple(out)


def _resolved_template_args(decl: ci.Cursor, written: tuple[str, ...]) -> tuple[str, ...]:
    """The written template arguments of a call to a function template specialization, each type
    replaced by its canonical spelling and each integer by its value where clang has them (a
    typedef or macro name means nothing inside the callee); `written` when they do not line up."""
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings
        return written
    if n < len(written) or n <= 0:
        return written
    out = list(written)
    for i in range(len(written)):
        kind = decl.get_template_argument_kind(i)
        if kind == ci.TemplateArgumentKind.TYPE:
            spelling = decl.get_template_argument_type(i).get_canonical().spelling
            if spelling and "type-parameter" not in spelling:
                out[i] = spelling.replace("struct ", "").replace("class ", "")
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out[i] = str(decl.get_template_argument_value(i))
    return tuple(out)


def _fold_template_args(targs: tuple[str, ...], local_inits: dict[str, ci.Cursor | None]) -> tuple[str, ...]:
    """Template arguments that name a host constant (`const int N = 128; k<N><<<1, N>>>()`) as its value."""
    out = []
    for a in targs:
        init = local_inits.get(a.strip()) if a.strip().isidentifier() else None
        v = _fold_int(init, local_inits) if init is not None else None
        out.append(str(v) if v is not None else a)
    return tuple(out)


def _member_assignments(fn: ci.Cursor) -> dict[str, ci.Cursor | None]:
    """`v.x = expr` in a host function, keyed "v.x": the assigned value, or None when `v.x` is
    assigned more than once or by a compound assignment (its value at a launch is then unknown)."""
    out: dict[str, ci.Cursor | None] = {}
    wholes: dict[str, list[ci.Cursor]] = {}
    stack = [fn]
    while stack:
        n = stack.pop()
        kids = list(n.get_children())
        stack.extend(kids)
        if n.kind == K.CALL_EXPR and n.spelling == "operator=":
            # `threads = dim3(512, 1);` on a class type is an operator= call: "threads=" lists the
            # values assigned (the variable's value at a launch when they all fold to the same).
            ops = [k for k in kids if k.kind.is_expression() and not _is_callee_ref(k, "operator=")]
            t = ops[0] if len(ops) == 2 else None
            while t is not None and t.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
                sub = [k for k in t.get_children() if k.kind.is_expression()]
                t = sub[0] if len(sub) == 1 else None
            if t is not None and t.kind == K.DECL_REF_EXPR:
                wholes.setdefault(t.spelling, []).append(ops[1])
            continue
        if n.kind not in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR) or len(kids) != 2:
            continue
        op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(n))  # type: ignore[attr-defined]
        if not op or not op.endswith("=") or op in ("==", "!=", "<=", ">="):
            continue
        lhs = kids[0]
        if lhs.kind != K.MEMBER_REF_EXPR or lhs.spelling not in ("x", "y", "z"):
            continue
        base = [k for k in lhs.get_children() if k.kind.is_expression()]
        b = base[0] if base else None
        while b is not None and b.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
            sub = [k for k in b.get_children() if k.kind.is_expression()]
            b = sub[0] if len(sub) == 1 else None
        if b is None or b.kind != K.DECL_REF_EXPR:
            continue
        key = f"{b.spelling}.{lhs.spelling}"
        out[key] = kids[1] if op == "=" and key not in out else None
    for name, values in wholes.items():
        for i, v in enumerate(values):
            out[f"{name}={i}"] = v
    return out


def _host_samples(launch: ci.Cursor, ancestors: list[ci.Cursor], args: list[ci.Cursor],
                  folded: tuple[int | None, ...], inits: dict[str, ci.Cursor]) -> tuple[tuple[int, ...] | None, ...]:
    """Joint samples for integer arguments that do not fold, from the loops and ifs around the launch."""
    from kernlint.frontend.host_samples import launch_arg_samples

    todo = [i for i, a in enumerate(args) if folded[i] is None and a.type.get_canonical().kind in _INT_KINDS]
    if not todo or not ancestors:
        return ()
    try:
        got = launch_arg_samples(
            launch, list(ancestors), [args[i] for i in todo], inits,
            lambda c: _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(c)),  # type: ignore[attr-defined]
            lambda c: _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(c)),  # type: ignore[attr-defined]
            _evaluate)
    except Exception:  # noqa: BLE001 - host code is only a hint: trouble here must not stop the parse
        return ()
    out: list[tuple[int, ...] | None] = [None] * len(args)
    for i, v in zip(todo, got):
        out[i] = v
    return tuple(out) if any(v is not None for v in out) else ()


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


def _reassigned_names(fn: ci.Cursor) -> set[str]:
    """Names assigned anywhere in a host function after their declaration (=, op=, ++, --, &x)."""
    out: set[str] = set()
    stack = [fn]
    while stack:
        n = stack.pop()
        kids = list(n.get_children())
        stack.extend(kids)
        target = None
        if n.kind in (K.BINARY_OPERATOR, K.COMPOUND_ASSIGNMENT_OPERATOR) and kids:
            op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(n))  # type: ignore[attr-defined]
            if op and op.endswith("=") and op not in ("==", "!=", "<=", ">="):
                target = kids[0]
        elif n.kind == K.UNARY_OPERATOR and kids:
            op = _UNOPS.get(_lib().clang_getCursorUnaryOperatorKind(n))  # type: ignore[attr-defined]
            if op in ("pre++", "pre--", "post++", "post--", "&"):
                target = kids[0]
        while target is not None and target.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
            sub = [k for k in target.get_children() if k.kind.is_expression()]
            target = sub[0] if len(sub) == 1 else None
        if target is not None and target.kind == K.DECL_REF_EXPR:
            out.add(target.spelling)
    return out


def _fold_int(c: ci.Cursor, inits: dict[str, ci.Cursor | None], depth: int = 0) -> int | None:
    v = _evaluate(c)
    if isinstance(v, (int, float)):
        return int(v) if abs(v) < 1 << 64 else None  # (inf/NaN fail the comparison too)
    if depth > 8:
        return None
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    if c.kind == K.DECL_REF_EXPR and inits.get(c.spelling) is not None:
        return _fold_int(inits[c.spelling], inits, depth + 1)  # type: ignore[arg-type]
    if c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
                  K.CXX_FUNCTIONAL_CAST_EXPR) and kids:
        return _fold_int(kids[-1], inits, depth + 1)
    if c.kind == K.BINARY_OPERATOR and len(kids) == 2:
        op = _BINOPS.get(_lib().clang_getCursorBinaryOperatorKind(c))  # type: ignore[attr-defined]
        a = _fold_int(kids[0], inits, depth + 1)
        b = _fold_int(kids[1], inits, depth + 1)
        if a is None or b is None:
            return None
        if op not in ("+", "-", "*", "/", "%", "<<", ">>"):
            return None
        from kernlint import intfold

        return intfold.evaluate([a, op, b])  # bounded: `1 << huge` is unknown, never a huge int
    if c.kind == K.MEMBER_REF_EXPR and kids and kids[0].kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR):
        base = kids[0]
        while base.kind == K.UNEXPOSED_EXPR:
            sub = [k for k in base.get_children() if k.kind.is_expression()]
            if not sub:
                break
            base = sub[0]
        if base.kind == K.DECL_REF_EXPR and (base.spelling in inits or f"{base.spelling}.{c.spelling}" in inits
                                             or f"{base.spelling}=0" in inits):
            dims = _fold_dim3_var(base.spelling, inits, depth + 1)
            if dims is not None and c.spelling in ("x", "y", "z"):
                return dims["xyz".index(c.spelling)]
    return None


def _fold_dim3_var(name: str, inits: dict[str, ci.Cursor | None], depth: int) -> tuple[int, int, int] | None:
    """A dim3 local's value at a launch: its initializer (a plain `dim3 b;` is (1, 1, 1)) with the
    members assigned one by one (`b.x = 256`) folded in."""
    init = inits.get(name)
    if f"{name}=0" in inits:
        # Assigned as a whole (`threads = dim3(512, 1)`): the value when every assignment agrees.
        values = {_fold_dim3(v, inits, depth + 1) for k, v in inits.items()
                  if k.startswith(f"{name}=") and k[len(name) + 1:].isdigit() and v is not None}
        init = None
        folded = values.pop() if len(values) == 1 else None
        if folded is None:
            return None
    elif init is None:  # not a local declared here (a parameter, a member): its other members are unknown
        return None
    else:
        folded = _fold_dim3(init, inits, depth + 1)
    dims: list[int | None] = list(folded) if folded is not None else [None, None, None]
    for i, m in enumerate("xyz"):
        key = f"{name}.{m}"
        if key in inits:
            value = inits[key]
            dims[i] = _fold_int(value, inits, depth + 1) if value is not None else None
    if any(d is None for d in dims):
        return None
    return (int(dims[0]), int(dims[1]), int(dims[2]))  # type: ignore[arg-type]


def _fold_dim3(c: ci.Cursor, inits: dict[str, ci.Cursor | None], depth: int = 0) -> tuple[int, int, int] | None:
    """Fold a launch-configuration argument (an int, `dim3(a, b)`, `{a, b}` or a dim3 variable)."""
    if depth > 8:
        return None
    kids = [k for k in c.get_children() if k.kind.is_expression()]
    spelling_type = c.type.get_canonical().spelling
    if "dim3" not in spelling_type:
        v = _fold_int(c, inits, depth + 1)
        return (v, 1, 1) if v is not None else None
    if c.kind == K.DECL_REF_EXPR and (c.spelling in inits or f"{c.spelling}=0" in inits
                                      or any(f"{c.spelling}.{m}" in inits for m in "xyz")):
        return _fold_dim3_var(c.spelling, inits, depth)
    if c.kind in (K.CALL_EXPR, K.INIT_LIST_EXPR, K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR):
        if c.kind == K.CALL_EXPR and len(kids) >= 1 and c.spelling == "dim3" and len(kids) <= 3 and not (
                len(kids) == 1 and "dim3" in kids[0].type.get_canonical().spelling):
            vals = [_fold_int(k, inits, depth + 1) for k in kids]
            if any(v is None for v in vals):
                # Default arguments appear as expressions without tokens; clang evaluates them.
                return None
            dims = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (dims[0], dims[1], dims[2])
        if c.kind == K.INIT_LIST_EXPR:
            vals = [_fold_int(k, inits, depth + 1) for k in kids]
            if any(v is None for v in vals):
                return None
            dims = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (dims[0], dims[1], dims[2])
        if len(kids) == 1:
            return _fold_dim3(kids[0], inits, depth + 1)
    return None
