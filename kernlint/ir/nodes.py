"""The intermediate representation: frozen dataclasses for kernels, types, statements, expressions.

The front end (libclang) is the only producer; nothing past this module sees a clang cursor.
Every node carries a `Span` so a finding can point at the source.
"""
from __future__ import annotations

from dataclasses import field
import operator
from typing import Callable, Iterator, Union

from kernlint.base.frozen import frozen
from kernlint.ir.function_table import FunctionTable
from kernlint.base.memo import by_identity


@frozen
class Span:
    """1-based source range."""

    line: int
    column: int
    end_line: int = 0
    end_column: int = 0


NO_SPAN = Span(0, 0, 0, 0)


@frozen
class Field:
    name: str
    offset: int  # bytes from the start of the struct; -1 when unknown
    ctype: "CType"


@frozen
class CType:
    """A C type reduced to what the analyses need: its kind, size in bytes and element layout.

    kind is one of: int, float, bool, void, pointer, array, struct, template, reference, unknown.
    `size == 0` means unknown (a dependent type, an incomplete array).
    """

    kind: str
    size: int = 0
    signed: bool = True
    pointee: "CType | None" = None
    count: int = 0
    name: str = ""
    fields: tuple[Field, ...] = ()
    align: int = 0
    const: bool = False

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @property
    def is_scalar_int(self) -> bool:
        return self.kind in ("int", "bool")


UNKNOWN_TYPE = CType("unknown")
INT = CType("int", 4, True, name="int")


# --- expressions -------------------------------------------------------------------------------


@frozen
class Lit:
    value: int | float
    ctype: CType
    span: Span


@frozen
class Ref:
    """A name. kind: local, param, global, constant, shared, template, function, builtin, unknown."""

    name: str
    kind: str
    ctype: CType
    span: Span


@frozen
class Member:
    base: "Expr"
    field: str
    offset: int  # byte offset of the field in the base struct; -1 unknown
    arrow: bool
    ctype: CType
    span: Span


@frozen
class Index:
    base: "Expr"
    index: "Expr"
    ctype: CType  # the element type
    span: Span


@frozen
class Unary:
    """op: - + ! ~ * & pre++ pre-- post++ post-- sizeof."""

    op: str
    operand: "Expr"
    ctype: CType
    span: Span


@frozen
class Binary:
    """Arithmetic, comparison, logical, comma; assignments (=, +=, ...) too."""

    op: str
    lhs: "Expr"
    rhs: "Expr"
    ctype: CType
    span: Span


@frozen
class Cond:
    cond: "Expr"
    then: "Expr"
    other: "Expr"
    ctype: CType
    span: Span


@frozen
class Cast:
    operand: "Expr"
    ctype: CType
    explicit: bool
    span: Span


@frozen
class Call:
    """A call. `receiver` is set for member calls (`block.sync()`); `target` names a known function."""

    name: str
    args: tuple["Expr", ...]
    ctype: CType
    span: Span
    receiver: "Expr | None" = None
    target: str = ""  # key into TranslationUnit.functions when the callee's body is known
    template_args: tuple[str, ...] = ()
    via: str = ""  # a call through a function pointer kernlint cannot resolve: the pointer as written
    # The namespace the callee is declared in (`cute`, `nvcuda::wmma`) when kernlint has no body for it
    # ("" otherwise): eval/library_calls.py.
    scope: str = ""
    # The callee's key (`name@file:line`, of its definition, else of its declaration) when the user's code
    # declares it: not a compiler builtin, an implicit member or one of kernlint's shim or stub headers,
    # whose calls the evaluator models. A call of such a callee that kernlint has no body for is not
    # evaluated, and coverage says so (eval/coverage.unread_callee).
    written: str = ""


@frozen
class InitList:
    items: tuple["Expr", ...]
    ctype: CType
    span: Span


@frozen
class Opaque:
    """Something the evaluator cannot model (a lambda, a recovery expression): its value is unknown."""

    reason: str
    ctype: CType
    span: Span
    children: tuple["Expr", ...] = ()


@frozen
class Closure:
    """A lambda expression that captures: the object it makes. Its copies (`[=]`, `[x]`, `[*this]`) are read
    here, at its making; the variables it captures by reference (`refs`: `[&]`, `[&x]`, `this`) are read and
    written by each call, in the frame that made it. `key` names its call operator (a Function whose
    `captures` says the same: frontend/lambdas.py; eval/closures.py)."""

    key: str
    copies: tuple[Ref, ...]
    refs: tuple[str, ...]
    ctype: CType
    span: Span


@frozen
class SizeOf:
    """`sizeof(T)` / `alignof(T)` of a dependent type (`sizeof(E)` in a class template's method): clang
    cannot fold it; the evaluator does once the template arguments are bound."""

    of: CType
    align: bool  # alignof rather than sizeof
    ctype: CType
    span: Span


Expr = Union[Lit, Ref, Member, Index, Unary, Binary, Cond, Cast, Call, InitList, Opaque, SizeOf, Closure]


# --- statements --------------------------------------------------------------------------------


@frozen
class VarDecl:
    name: str
    ctype: CType
    init: Expr | None
    span: Span
    shared: bool = False
    extern: bool = False
    static: bool = False


@frozen
class ExprStmt:
    expr: Expr
    span: Span


@frozen
class Block:
    body: tuple["Stmt", ...]
    span: Span
    # False for the declarators of one declaration (`int y = d - tx, x = tx + 1;`): they belong to the
    # enclosing scope, so the block must not restore what they hide when it ends.
    scope: bool = True


@frozen
class If:
    cond: Expr
    then: "Stmt"
    other: "Stmt | None"
    span: Span


@frozen
class For:
    init: "Stmt | None"
    cond: Expr | None
    step: Expr | None
    body: "Stmt"
    span: Span


@frozen
class While:
    cond: Expr
    body: "Stmt"
    span: Span
    do_while: bool = False


@frozen
class Switch:
    cond: Expr
    cases: tuple[tuple[tuple[Expr, ...], tuple["Stmt", ...]], ...]  # (labels; empty = default), body
    span: Span


@frozen
class Return:
    value: Expr | None
    span: Span


@frozen
class Break:
    span: Span


@frozen
class Continue:
    span: Span


@frozen
class OpaqueStmt:
    reason: str
    span: Span


# The reason of an Opaque / OpaqueStmt the front end made of code nested beyond its depth budget.
TOO_DEEP = "too deeply nested to analyse"
# The reason of the OpaqueStmt that stands for the rest of a block once a function has more statements
# than the front end lowers (frontend/clang_frontend.py MAX_STATEMENTS); its span covers that rest.
TOO_LARGE = "too many statements to analyse"
MAX_STATEMENTS = 2_000  # statements lowered per function (why this many: frontend/clang_frontend.py)
# The reason of the OpaqueStmt that stands for the rest of a block the front end did not lower because
# the file's work budget (kernlint/base/deadline.py) ran out while it read the file; its span covers that rest.
OUT_OF_BUDGET = "not read: the file's work budget ran out"
UNREAD = (TOO_DEEP, TOO_LARGE, OUT_OF_BUDGET)  # the reasons of code the front end left unlowered


Stmt = Union[VarDecl, ExprStmt, Block, If, For, While, Switch, Return, Break, Continue, OpaqueStmt]


_CHILDREN: dict[type, "Callable[[object], tuple[object, ...]]"] = {}
"""Per node class: its fields' values in slot order (one attrgetter call instead of a getattr per slot)."""


# Field annotations of IR classes whose values are always leaves of `walk` (names, flags, types, spans):
# those fields are not pushed on its stack at all.
_LEAF_FIELDS = frozenset({"str", "int", "bool", "float", "int | float", "CType", "'CType'", "Span", "tuple[str, ...]"})


def _children_of(cls: type) -> "Callable[[object], tuple[object, ...]]":
    slots = tuple(getattr(cls, "__slots__", ()))
    fields = getattr(cls, "__dataclass_fields__", None)
    if fields is not None and cls.__module__ == __name__:
        slots = tuple(s for s in slots if not (s in fields and fields[s].type in _LEAF_FIELDS))
    if not slots:
        get: Callable[[object], tuple[object, ...]] = lambda n: ()  # noqa: E731
    elif len(slots) == 1:
        one = slots[0]
        get = lambda n: (getattr(n, one, None),)  # noqa: E731
    else:
        many = operator.attrgetter(*slots)

        def get(n: object) -> tuple[object, ...]:
            try:
                return many(n)  # type: ignore[no-any-return]
            except AttributeError:  # an unset slot: None, as getattr(n, s, None) gives
                return tuple(getattr(n, s, None) for s in slots)
    _CHILDREN[cls] = get
    return get


def walk(node: object) -> "Iterator[object]":
    """Every IR node under `node` (statements and expressions), `node` first; types and spans are leaves."""
    stack: list[object] = [node]
    leaves = (str, int, float, bool, CType, Span)
    children = _CHILDREN
    pop, extend = stack.pop, stack.extend
    while stack:
        n = pop()
        get = children.get(type(n))  # a node class seen before: one lookup
        if get is None:
            if n is None or isinstance(n, leaves):
                continue
            if isinstance(n, (tuple, list)):
                extend(n)
                continue
            get = _children_of(type(n))
        yield n
        extend(get(n))


def children(node: object) -> "Iterator[object]":
    """The IR nodes directly under `node` (tuples of nodes flattened; types and spans are leaves)."""
    get = _CHILDREN.get(type(node)) or _children_of(type(node))
    stack = list(get(node))
    while stack:
        n = stack.pop(0)
        if n is None or isinstance(n, (str, int, float, bool, CType, Span)):
            continue
        if isinstance(n, (tuple, list)):
            stack[:0] = list(n)
            continue
        yield n


def iter_statements(node: "Stmt | None") -> "Iterator[Stmt]":
    """Every statement in a statement tree, outermost first (expressions are not entered)."""
    stack: list[object] = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        yield n  # type: ignore[misc]
        if isinstance(n, Block):
            stack.extend(reversed(n.body))
        elif isinstance(n, If):
            stack.extend((n.other, n.then))
        elif isinstance(n, For):
            stack.extend((n.body, n.init))
        elif isinstance(n, While):
            stack.append(n.body)
        elif isinstance(n, Switch):
            for _labels, body in reversed(n.cases):
                stack.extend(reversed(body))


# --- declarations ------------------------------------------------------------------------------


LAMBDA_CALL = "lambda::operator()"
"""The name of a lambda's lowered call operator (never a name a call spells: the call is found by its key)."""


@frozen
class Param:
    name: str
    ctype: CType
    spelling: str = ""  # the type as clang spells it (`const float *`): NVRTC names an overloaded kernel by it


@frozen
class TemplateParam:
    name: str
    is_type: bool
    default: str = ""


@frozen
class Function:
    """A `__global__` kernel or a `__device__` function with its body."""

    name: str
    params: tuple[Param, ...]
    body: Block | None
    span: Span
    is_kernel: bool
    template_params: tuple[TemplateParam, ...] = ()
    launch_bounds: tuple[str, ...] = ()  # expressions as written: max threads, min blocks
    parse_errors: tuple[tuple[int, int, str], ...] = ()  # syntax errors inside the body
    unresolved: tuple[tuple[int, int, str], ...] = ()  # semantic errors (unknown names/types)
    annotation: str = ""  # the `// kernlint: ...` text right above the kernel, if any
    key: str = ""  # unique key (name + signature) for calls
    # A lambda's call operator (named LAMBDA_CALL): the variables it captures, each (name, "copy" | "ref"),
    # and whether it is `mutable` (its calls may write its copies). See Closure.
    captures: tuple[tuple[str, str], ...] = ()
    mutable: bool = False

    def calls(self) -> "Iterator[Call]":
        """The calls in the body, in `walk`'s order (what the function table follows for reachability)."""
        return (n for n in walk(self.body) if isinstance(n, Call))


@frozen
class Launch:
    """A `kernel<<<grid, block, shmem>>>(...)` in host code."""

    kernel: str
    template_args: tuple[str, ...]
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    shared_bytes: int | None
    span: Span
    block_text: str = ""
    args: tuple[int | None, ...] = ()  # scalar arguments folded to constants where possible
    kernel_key: str = ""  # Function.key of the launched kernel when clang resolved it (overloads)
    site: str = ""  # "runner.cu:193" for a launch found in another file of the project ("" = this file)
    via: str = ""  # the host function template call that bound its template arguments, if any
    # Values for arguments that do not fold, from the host loops/ifs around the launch
    # (frontend/host_samples.py): one tuple per argument (value k of each from one host iteration).
    arg_samples: tuple[tuple[int, ...] | None, ...] = ()
    deduced: bool = False  # some template arguments were deduced from the argument types
    # Per argument, a pointer offset it passes (`buf + padding`, or a local assigned from one); "" none
    # (frontend/pointer_offsets.py). KL103 cannot know the alignment of such a pointer.
    arg_offsets: tuple[str, ...] = ()
    # A block that does not fold, per component: a decimal value, or the runtime expression as written
    # (`dim3 block(ne13, ne12)` -> ("ne13", "ne12", "1")); () when the block folds or nothing is known.
    # launch.py evaluates such a launch over plausible values of the runtime components.
    block_dims: tuple[str, ...] = ()
    # For a runtime component that is a parameter of the host function holding the launch, the values every
    # call of that function in the file passes, when each folds (`launch(in, out, 256)`): (name, values).
    dim_values: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # The line the launch is written at, where that is not span.line: a launch written in a macro's
    # argument (`BOOL_SWITCH(c, kB, [&] { k<<<g, b>>>(); })`) spans the macro's use; 0 otherwise.
    spelled_line: int = 0
    # Template arguments (their positions) written as a local type alias that clang resolved to the type
    # it names in this launch (`using scalar_t = ...;` of a dispatch macro's case: "float", "c10::Half").
    resolved_args: tuple[int, ...] = ()


@frozen
class ParseProblem:
    line: int
    column: int
    message: str
    syntax: bool  # a real syntax error, as opposed to an unresolved name from a missing header


@frozen
class TranslationUnit:
    path: str
    kernels: tuple[Function, ...]
    # By key; all but the file's kernels are lowered when first asked for (function_table.py).
    functions: FunctionTable[Function] = field(hash=False, compare=False, default_factory=FunctionTable)
    globals: dict[str, "VarDecl"] = field(hash=False, compare=False, default_factory=dict)
    launches: tuple[Launch, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    file_annotation: str = ""
    instantiations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    macros: dict[str, int] = field(hash=False, compare=False, default_factory=dict)  # integer object-like macros
    structs: dict[str, CType] = field(hash=False, compare=False, default_factory=dict)  # by name, for T = MyStruct
    stubbed: tuple[str, ...] = ()  # includes that were not found and were read as empty files
    # Member types of structs and class templates (`vec4<float>::Type`, `Traits::Acc`), by qualified
    # name: (the class template's parameter names, () for a concrete class; the aliased type). The
    # evaluator resolves `typename vec4<T>::Type` with T bound through it.
    member_types: dict[str, tuple[tuple[str, ...], CType]] = field(hash=False, compare=False, default_factory=dict)


def strip_casts(e: object) -> object:
    """`e` without the casts around it, implicit and explicit."""
    while isinstance(e, Cast):
        e = e.operand
    return e


@by_identity(max_entries=4096)  # the evaluator asks it of the same expressions at every loop iteration
def is_pure(e: Expr) -> bool:
    """`e` reads no memory, calls nothing and changes nothing: evaluating it again is harmless."""
    for n in walk(e):
        if isinstance(n, Member) and n.arrow:
            return False
        if isinstance(n, Unary) and n.op in ("*", "&", "post++", "post--", "pre++", "pre--"):
            return False
        if isinstance(n, Binary) and (n.op == "," or n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">=")):
            return False
        if not isinstance(n, (Lit, Ref, Member, Unary, Binary, Cast, SizeOf)):
            return False
    return True
