"""The libclang layer every front-end module shares: the bindings, cursor kinds, operator tables,
source spans and the type converter (clang Type -> ir.CType).
"""
from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any, Callable, Iterator

from kernlint.ir import nodes as ir
from kernlint.base.frozen import frozen
from kernlint.model.occupancy import DEFAULT_ARCH

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
    cursor): the same children, in the same order, keeping their translation unit alive. A cursor of a subtree
    read whole (`Prefetched`) gives the children read then."""
    hit = _PREFETCHED.get(id(self))
    if hit is not None and hit[0] is self:
        return iter(hit[1])
    children: list[ci.Cursor] = []
    ci.conf.lib.clang_visitChildren(self, _COLLECT, children)
    tu = self._tu
    for child in children:
        child._tu = tu
    return iter(children)


def _collect(child: ci.Cursor, _parent: ci.Cursor, children: list[ci.Cursor]) -> int:
    children.append(child)
    return 1  # CXChildVisit_Continue


# One callback for every visit (the list to fill is its client data): making a ctypes callback per
# visit was about a third of the cost of listing a cursor's children.
_COLLECT = _CURSOR_VISIT(_collect)


ci.Cursor.get_children = _get_children  # type: ignore[method-assign]

_PREFETCHED: dict[int, tuple[ci.Cursor, list[ci.Cursor]]] = {}
"""id(cursor) -> (the cursor, its children) for the cursors of the subtrees being read (`Prefetched`). Each
entry holds its cursor, so no other object can take its id while the entry lives."""


class _Subtree:
    """The state of one recursive visit (`_subtree`): the path from the root to the cursor last visited, as
    (its bytes, the list its children go to), and what was read."""

    __slots__ = ("path", "read", "tu", "failed")

    def __init__(self, root: ci.Cursor, kids: list[ci.Cursor]) -> None:
        self.path: list[tuple[bytes, list[ci.Cursor]]] = [(bytes(root), kids)]
        self.read: dict[int, tuple[ci.Cursor, list[ci.Cursor]]] = {id(root): (root, kids)}
        self.tu = getattr(root, "_tu", None)
        self.failed = False


def _visit_subtree(child: ci.Cursor, parent: ci.Cursor, tree: _Subtree) -> int:
    """One cursor of a recursive visit: libclang visits depth first, and names each cursor's parent, which is
    the cursor it visited as such (the same bytes), so the parent is the nearest cursor of the path with its
    bytes. One exception, met as a cursor that repeats its parent (the same kind and the same statement, data
    word 1): a cursor of a `ConstantExpr` is made for the expression inside it (CXCursor.cpp's MakeCXCursor),
    and the visit then lists that expression once more as its own child, which the expression's own visit
    does not; the repeat is dropped, its children are its parent's."""
    pb = bytes(parent)
    path = tree.path
    while path[-1][0] != pb:
        path.pop()
        if not path:  # (not met on the corpus: the subtree is read the usual way)
            tree.failed = True
            return 0  # CXChildVisit_Break
    cb = bytes(child)
    kids = path[-1][1]
    if cb[:8] == pb[:8] and cb[16:24] == pb[16:24] and (child.kind.is_expression() or child.kind.is_statement()):
        path.append((cb, kids))
        return 2  # CXChildVisit_Recurse
    child._tu = tree.tu
    mine: list[ci.Cursor] = []
    kids.append(child)
    path.append((cb, mine))
    tree.read[id(child)] = (child, mine)
    return 2


_VISIT_SUBTREE = _CURSOR_VISIT(_visit_subtree)


class Prefetched:
    """`with Prefetched(root):` the children of `root` and of every cursor under it are read in one recursive
    visit of libclang, and `get_children` gives them from there: the same cursors in the same order (the
    corpus's 6,743 functions were compared), at a third of the cost of a visit per cursor (each cursor's own
    visit, a ctypes call, is most of that cost, and half the cursors are leaves). One difference: the first
    data word of a statement's or expression's cursor, the declaration clang names as its parent (only
    `semantic_parent` and `lexical_parent` of such a cursor read it, which kernlint never asks), may differ.
    A cursor met outside the subtree (a declaration a name refers to) is listed as before."""

    __slots__ = ("root", "read")

    def __init__(self, root: ci.Cursor | None) -> None:
        self.root = root
        self.read: dict[int, tuple[ci.Cursor, list[ci.Cursor]]] = {}

    def __enter__(self) -> "Prefetched":
        root = self.root
        if root is None or id(root) in _PREFETCHED:
            return self  # (inside a subtree already read)
        tree = _Subtree(root, [])
        ci.conf.lib.clang_visitChildren(root, _VISIT_SUBTREE, tree)
        if not tree.failed:
            self.read = tree.read
            _PREFETCHED.update(tree.read)
        return self

    def __exit__(self, *exc: object) -> None:
        for key in self.read:
            del _PREFETCHED[key]
        self.read = {}

_KINDS: list[ci.CursorKind | None] = ci.CursorKind._kinds  # type: ignore[attr-defined]


def _cursor_kind(self: ci.Cursor) -> ci.CursorKind:
    """`Cursor.kind` of the bindings without its `from_id` call (~350,000 reads for the corpus's 42-file set)."""
    kind_id = self._kind_id
    kind = _KINDS[kind_id] if 0 <= kind_id < len(_KINDS) else None
    return kind if kind is not None else ci.CursorKind.from_id(kind_id)  # (an unknown id raises as before)


ci.Cursor.kind = property(_cursor_kind)  # type: ignore[assignment]


def _per_kind(test: str) -> Callable[[ci.CursorKind], bool]:
    """A `CursorKind` predicate of the bindings (`clang_isExpression`, ...: one ctypes call each time, for a
    fact of the kind alone) answered once per kind."""
    lib_fn = getattr(ci.CursorKind, test)
    memo: dict[int, bool] = {}

    def predicate(self: ci.CursorKind) -> bool:
        hit = memo.get(self.value)
        if hit is None:
            hit = memo[self.value] = bool(lib_fn(self))
        return hit

    predicate.__doc__ = lib_fn.__doc__
    return predicate


for _test in ("is_expression", "is_statement", "is_declaration", "is_reference", "is_attribute", "is_preprocessing"):
    setattr(ci.CursorKind, _test, _per_kind(_test))


_TOKEN_WORDS = ctypes.sizeof(ci.Token) // 4  # a CXToken as 32-bit words: int_data[4], then ptr_data
_IDENTIFIER_KINDS = (1, 2)  # CXToken_Keyword, CXToken_Identifier (clang-c/Index.h)


class MainText:
    """The text of the file a parse lowers (its bytes, as clang read them), so that the tokens of a cursor in it
    are spelled and placed without two or three ctypes calls each (`tokens`).

    A CXToken holds its kind, its location's raw encoding and its length (CIndex.cpp, getTokens); the raw
    encoding of a location in a file is the file's start in the source manager's offsets plus the offset in
    the file, so a token of this file is at `raw - base` (`base`: the raw encoding of offset 0, from
    clang_getLocationForOffset). clang_getTokenSpelling gives a literal's and a punctuator's bytes from the
    file as they stand, and an identifier's or keyword's name, which is its bytes unless a backslash (a line
    splice, a universal character name) is among them: such a token, and any token outside this file, is
    spelled by libclang as before."""

    __slots__ = ("data", "base")

    def __init__(self, tu: ci.TranslationUnit, path: str, data: bytes) -> None:
        self.data = data
        self.base = -1
        try:
            f = ci.File.from_name(tu, path)
            if f:
                self.base = int(ci.conf.lib.clang_getLocationForOffset(tu, f, 0).int_data)
        except Exception:  # noqa: BLE001 - (not met) every token is then spelled by libclang
            self.base = -1

    def tokens(self, cursor: ci.Cursor, offsets: bool = False) -> list:
        """The spellings of `cursor`'s tokens, as `[t.spelling for t in cursor.get_tokens()]` gives them; with
        `offsets`, (offset in the file, spelling) pairs, as `t.extent.start.offset` gives the offset (None when
        a token lies outside this file: the caller then reads them the usual way)."""
        return self.tokens_in(cursor._tu, cursor.extent, offsets)

    def tokens_in(self, tu: ci.TranslationUnit, extent: ci.SourceRange, offsets: bool = False) -> list:
        """`tokens` of a source range, as `tu.get_tokens(extent=extent)` gives them."""
        lib = ci.conf.lib
        memory = ctypes.POINTER(ci.Token)()
        count = ctypes.c_uint()
        lib.clang_tokenize(tu, extent, ctypes.byref(memory), ctypes.byref(count))
        n = count.value
        if n < 1:
            return []
        try:
            address = ctypes.addressof(memory.contents)
            words = list((ctypes.c_uint32 * (_TOKEN_WORDS * n)).from_address(address))
            data, base, size = self.data, self.base, len(self.data)
            out: list = []
            for i in range(n):
                w = i * _TOKEN_WORDS
                at = words[w + 1] - base
                end = at + words[w + 2]
                spelled = None
                if base >= 0 and 0 <= at and end <= size:
                    raw = data[at:end]
                    if words[w] not in _IDENTIFIER_KINDS or b"\\" not in raw:
                        try:
                            spelled = raw.decode("utf-8")
                        except UnicodeDecodeError:
                            spelled = None
                elif offsets:
                    return None  # type: ignore[return-value]
                if spelled is None:
                    spelled = lib.clang_getTokenSpelling(tu, ci.Token.from_address(address + 4 * w))
                out.append((at, spelled) if offsets else spelled)
            return out
        finally:
            lib.clang_disposeTokens(tu, memory, count)


def spellings(cursor: ci.Cursor, main: MainText | None = None) -> list[str]:
    """`[t.spelling for t in cursor.get_tokens()]`, through `main` (see MainText) when given."""
    if main is not None:
        return main.tokens(cursor)
    return [t.spelling for t in cursor.get_tokens()]


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
        lib.clang_isInvalidDeclaration.argtypes = [ci.Cursor]
        lib.clang_isInvalidDeclaration.restype = ctypes.c_uint
        _fast_result_checks(lib)
        _lib_ready = True
    return lib


def _fast_result_checks(lib: object) -> None:
    """Cheaper result checks (`errcheck`) for the bindings' hottest cursor and type queries, giving the same
    results: the bindings test a returned cursor for null by asking libclang for the null cursor and comparing
    the two (two ctypes calls, for each `referenced` and `semantic_parent`), and find a returned type's
    translation unit by scanning the arguments. Here a cursor is null when its bytes are the null cursor's
    (`clang_equalCursors` compares kind, xdata and data, clang-c/Index.h; it ignores one data word of a
    declaration only, and the null cursor is no declaration), and a type's unit is its one argument's."""
    null = lib.clang_getNullCursor()  # type: ignore[attr-defined]
    null_kind, null_bytes = null._kind_id, bytes(null)

    def faster(fn: Any, cursor: bool) -> None:
        original = fn.errcheck

        def check(res: Any, func: object, args: tuple) -> Any:
            if cursor and res._kind_id == null_kind and bytes(res) == null_bytes:
                return None
            tu = getattr(args[0], "_tu", None) if len(args) == 1 else None
            if tu is None:  # (not met: every cursor and type kernlint holds has its unit)
                return original(res, func, args)
            res._tu = tu
            return res

        fn.errcheck = check

    for name in ("clang_getCursorReferenced", "clang_getCursorSemanticParent", "clang_getCursorDefinition",
                 "clang_getCursorLexicalParent"):
        faster(getattr(lib, name), True)
    for name in ("clang_getCursorType", "clang_getCanonicalType", "clang_getPointeeType", "clang_getCursorResultType",
                 "clang_getTypedefDeclUnderlyingType", "clang_getArrayElementType", "clang_getElementType",
                 "clang_getResultType"):
        faster(getattr(lib, name), False)


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


def template_int_value(decl: ci.Cursor, i: int) -> int:
    """The integral template argument `i` of specialization `decl`. libclang's signed reading extends the
    sign of the argument's own width, so a `bool` argument `true` (one bit) reads -1: a value that reads
    negative signed but 1 unsigned is such a one-bit `true` (any wider negative value reads far above 1
    unsigned)."""
    value = decl.get_template_argument_value(i)
    if value < 0 and decl.get_template_argument_unsigned_value(i) == 1:
        return 1
    return value


def shim_path() -> str:
    # The file beside this module (what importlib.resources.files gives for a package on disk, without
    # importing importlib.resources and zipfile at every start-up).
    return str(Path(__file__).parent / "kernlint_cuda_shim.h")


@frozen
class _Ctx:
    path: str
    text: str


# Out-parameters of clang_getInstantiationLocation (file, line, column; no offset), made once: allocating
# four ctypes objects and their `byref`s was most of the cost of a span (~45,000 locations for the corpus's
# 42-file set). The front end runs on one thread (a process lints one file at a time), and each caller reads
# the values right after its call.
_LOC_FILE, _LOC_LINE, _LOC_COL = ci.c_object_p(), ctypes.c_uint(), ctypes.c_uint()
_LOC_OUT = (ctypes.byref(_LOC_FILE), ctypes.byref(_LOC_LINE), ctypes.byref(_LOC_COL), None)


def spelled_line(cursor: ci.Cursor, span: ir.Span) -> int:
    """The line of the file `cursor` is written at, when that differs from `span` (its expansion) and lies
    in the same file (a macro's argument); 0 otherwise."""
    lib = ci.conf.lib
    lib.clang_getInstantiationLocation(cursor.location, *_LOC_OUT)
    at = ctypes.cast(_LOC_FILE, ctypes.c_void_p).value
    lib.clang_getFileLocation(cursor.location, *_LOC_OUT)
    line = _LOC_LINE.value
    if not at or ctypes.cast(_LOC_FILE, ctypes.c_void_p).value != at or line in (0, span.line):
        return 0
    return line


def _span(cursor: ci.Cursor) -> ir.Span:
    ext = cursor.extent
    lib = ci.conf.lib
    where = lib.clang_getInstantiationLocation
    where(lib.clang_getRangeStart(ext), *_LOC_OUT)
    line, col = _LOC_LINE.value, _LOC_COL.value
    if not _LOC_FILE or line == 0:
        where(cursor.location, *_LOC_OUT)
        line, col = _LOC_LINE.value, _LOC_COL.value
    where(lib.clang_getRangeEnd(ext), *_LOC_OUT)
    return ir.Span(line, col, _LOC_LINE.value, _LOC_COL.value)


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

    def _base_fields(self, record: ci.Type, depth: int) -> list[ir.Field]:
        """The fields a struct inherits from its first base class (`struct Bwd : Base { ... }`, `p.n` a
        member of Base), which libclang's field list leaves out. libclang gives no base offsets; the
        first non-virtual base of a class without virtual functions starts the object (Itanium C++ ABI
        2.4: it is the primary base or, with no vptr, laid out first at offset 0). Other bases: none."""
        decl = record.get_declaration()
        bases = [k for k in decl.get_children() if k.kind == K.CXX_BASE_SPECIFIER]
        if not bases or depth > 4:
            return []
        first = bases[0]
        base_decl = first.type.get_declaration()
        if ci.conf.lib.clang_isVirtualBase(first) or any(
                m.kind == K.CXX_METHOD and m.is_virtual_method()
                for d in (decl, base_decl) for m in d.get_children()):
            return []
        base = self.convert(first.type, depth + 1)
        return [f for f in base.fields if f.offset >= 0]

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
        # template and `float4` in the same file's instantiated kernel (where `T` is an alias), `const T`
        # a template's parameter in a header and `const float` in an instantiated kernel (`typedef float
        # T`), and whichever came first would be reused for the other: the result would depend on the
        # order functions are lowered in (on demand, function_table.py). The canonical spelling tells
        # them apart.
        key = f"{t.spelling}\x00{t.get_canonical().spelling}"
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
            if _layout_lost(c.get_declaration()):
                # A member or base whose type clang could not resolve (a header not found): clang lays the
                # class out without it (an empty class is 1 byte), so its size and offsets would be wrong.
                name = c.spelling.replace("struct ", "").replace("const ", "")
                return ir.CType("struct", 0, name=name, const=const)
            size = c.get_size()
            align = c.get_align()
            fields = []
            try:
                fields.extend(self._base_fields(c, depth))
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


def _layout_lost(decl: ci.Cursor) -> bool:
    """Whether clang laid a class out without some of what it declares: a member of a type it could not
    resolve (the declaration is invalid), or a base class it dropped (`struct T : Undeclared<U> {}` keeps
    no base specifier, and clang does not mark it invalid)."""
    if decl is None or not decl.kind.is_declaration():
        return False
    if _lib().clang_isInvalidDeclaration(decl):  # type: ignore[attr-defined]
        return True
    kids = list(decl.get_children())
    if any(k.kind == K.CXX_BASE_SPECIFIER for k in kids):
        return False
    depth = 0
    for tok in decl.get_tokens():  # a `:` before the body, outside template brackets: a base was written
        s = tok.spelling
        if s == "{" or s == ";":
            return False
        if s in ("<", "("):
            depth += 1
        elif s in (">", ")"):
            depth -= 1
        elif s == ":" and depth == 0:
            return True
    return False


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
