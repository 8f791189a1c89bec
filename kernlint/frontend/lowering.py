"""Lowering: a function body's libclang cursors to kernlint's IR (statements, expressions, types)."""
from __future__ import annotations

from typing import Iterable

from kernlint.base import deadline
from kernlint.ir import nodes as ir
from kernlint.frontend import inline_asm, lambdas, memory_refs
from kernlint.frontend.callees import _function_pointer_callee, _is_device
from kernlint.frontend.template_args import (
    _resolved_template_args,
    _specialization_args,
    _split_template_args,
    _split_type_args,
    _template_args_from_tokens,
)
from kernlint.frontend.clang_base import (
    _BINARY_SPELLINGS,
    _BINOPS,
    _SITE_KINDS,
    _UNOPS,
    MAX_NESTING,
    MAX_STATEMENTS,
    STUB_DIR,
    K,
    MainText,
    _Ctx,
    _evaluate,
    _lib,
    _span,
    _TypeConverter,
    ci,
    shim_path,
    spellings,
)


class _Lowering:
    """Walk clang cursors and build IR nodes."""

    def __init__(self, ctx: _Ctx, types: _TypeConverter) -> None:
        self.ctx = ctx
        self.types = types
        self.depth = 0  # statements and expressions being lowered, nested (bounded by MAX_NESTING)
        self.statements = 0  # statements lowered in the current function (bounded by MAX_STATEMENTS)
        # Whether the file's work budget stops the lowering (the rest of a body opaque): while parsing. A function
        # lowered on demand later (function_table.py) is not stopped part-way: the evaluator asking for it
        # has no use for half a body, and MAX_STATEMENTS bounds the work.
        self.budgeted = True
        # Per variable declaration (its cursor kind and clang's Decl*, which a cursor's first data word
        # holds): the kind of its semantic parent, and the kinds of its children (attributes). A variable
        # is named many times; asking libclang each time cost a call or a visit per use.
        self.parent_kinds: dict[tuple[int, int | None], ci.CursorKind | None] = {}
        self.var_attrs: dict[tuple[int, int | None], frozenset[ci.CursorKind]] = {}
        # Local references bound to an element of memory, lowered as pointers (frontend/memory_refs.py).
        self.memory_refs: set[tuple[int, int | None]] = set()
        self.main: MainText | None = None  # the lowered file, for its tokens (clang_base.MainText)
        # The classes and lambdas defined inside the bodies lowered since the front end last took them: their
        # call operators and methods are recorded for lowering on demand (clang_frontend._defer_local_methods).
        self.local_defs: list[ci.Cursor] = []

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
            if kids and kids[0].kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and not kids[0].spelling:
                span = _span(c)  # a call of a name clang could not resolve: a site (eval/library_calls.py)
            return ir.Opaque("unexposed expression", self.ctype(c), span, tuple(self.expr(k) for k in kids))
        if kind == K.CALL_EXPR:
            return self.call(c, span)
        if kind == K.INIT_LIST_EXPR:
            return ir.InitList(tuple(self.expr(k) for k in c.get_children()), self.ctype(c), span)
        if kind == K.LAMBDA_EXPR:
            self.local_defs.append(c)
            closure = self.closure(c)
            if closure is not None:
                return closure
        v = _evaluate(c) if kind.is_expression() else None
        if v is not None:
            return ir.Lit(v, self.ctype(c), span)
        kids = tuple(self.expr(k) for k in c.get_children() if k.kind.is_expression())
        return ir.Opaque(kind.name.lower(), self.ctype(c), span, kids)

    def closure(self, c: ci.Cursor) -> ir.Closure | None:
        """Lambda `c`, when it captures and kernlint follows its captures (frontend/lambdas.py): the object it
        makes, its copies read here. None otherwise (a lambda that captures nothing is called without its object;
        one kernlint does not follow is an opaque value, its calls not read: eval/coverage.unread_callee)."""
        caps = lambdas.captures(c)
        if caps is None or not caps.names:
            return None
        span = _span(c)
        copies = tuple(ir.Ref(n.name, "param" if n.decl is not None and n.decl.kind == K.PARM_DECL else "local",
                              self.ctype(n.decl) if n.decl is not None else ir.UNKNOWN_TYPE, span)
                       for n in caps.names if n.mode == lambdas.COPY)
        refs = tuple(n.name for n in caps.names if n.mode == lambdas.REF)
        return ir.Closure(lambdas.call_key(c), copies, refs, self.ctype(c), span)

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
            if not name:
                # A member of a dependent class (`Opt<Real>::Put` in a template): no spelling, no
                # declaration; named as written, so coverage can say what it is.
                name = "".join(t.spelling for _, t in zip(range(24), c.get_tokens()))[:80]
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
            key = (ref._kind_id, ref.data[0])
            parent_kind = self._parent_kind(key, ref)
            if parent_kind in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                # `size` inside a class template (`static constexpr size_t size = sizeof(int4) /
                # sizeof(T)`): dependent, so its initializer, which the evaluator folds once T is bound.
                init = _static_init(ref)
                if init is not None:
                    return self.expr(init)
            if parent_kind in (K.TRANSLATION_UNIT, K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL):
                if name in ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"):
                    return ir.Ref(name, "builtin", ctype, span)
                v = _evaluate(c)
                if v is not None and ctype.kind in ("int", "float", "bool"):
                    return ir.Lit(v, ctype, span)
                attrs = self._attrs(key, ref)
                if K.CUDASHARED_ATTR in attrs:
                    return ir.Ref(name, "shared", ctype, span)
                if K.CUDACONSTANT_ATTR in attrs:
                    return ir.Ref(name, "constant", ctype, span)
                return ir.Ref(name, "global", ctype, span)
            if key in self.memory_refs:  # `x` of `T &x = a[i]` is `*x` of `T *x = &a[i]`: an access site
                span = _span(c)
                return ir.Unary("*", ir.Ref(name, "local", ir.CType("pointer", 8, False, pointee=ctype), span),
                                ctype, span)
            return ir.Ref(name, "local", ctype, span)
        return ir.Ref(name, "unknown", ctype, span)

    def _memory_var(self, decl: ci.Cursor) -> bool:
        """Whether a variable declaration is of memory kernlint addresses: `__shared__`, `__constant__`
        or at namespace scope."""
        key = (decl._kind_id, decl.data[0])
        attrs = self._attrs(key, decl)
        if K.CUDASHARED_ATTR in attrs or K.CUDACONSTANT_ATTR in attrs:
            return True
        return self._parent_kind(key, decl) in (K.TRANSLATION_UNIT, K.NAMESPACE)

    def _parent_kind(self, key: tuple[int, int | None], decl: ci.Cursor) -> ci.CursorKind | None:
        """The kind of a variable declaration's semantic parent (cached by `key`, see parent_kinds)."""
        if key not in self.parent_kinds:
            parent = decl.semantic_parent
            self.parent_kinds[key] = parent.kind if parent is not None else None
        return self.parent_kinds[key]

    def _attrs(self, key: tuple[int, int | None], decl: ci.Cursor) -> frozenset[ci.CursorKind]:
        """The kinds of a variable declaration's children, its attributes (cached by `key`, see var_attrs)."""
        attrs = self.var_attrs.get(key)
        if attrs is None:
            attrs = self.var_attrs[key] = frozenset(k.kind for k in decl.get_children())
        return attrs

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
            toks = spellings(c, self.main)
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
                return ir.Cast(self.arguments(ref, args)[0], ctype, False, span)
            # A constructor with a body kernlint can run (`Acc a(0.f)`, `View v(layout)` whose
            # `: lay(l)` keeps the argument in a member): the call's value is the object.
            device = _is_device(defn or ref)
            target = _function_key(defn if defn is not None else ref) if device else ""
            return ir.Call(name, self.arguments(ref, args), ctype, span, None, target,
                           _split_type_args(ctype.name), written=_written_at(ref) if device else "")
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
                           _split_type_args(rtype.name), written=_written_at(ref))
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
                    toks = spellings(inner, self.main)
                    name = toks[-1] if toks and toks[-1].isidentifier() else ""
                    if len(toks) >= 3 and toks[-1] == ">" and "<" in toks:
                        j = len(toks) - 1 - toks[::-1].index("<")
                        name = toks[j - 1] if toks[j - 1].isidentifier() else name
                        template_args = _split_template_args(toks[j + 1:])
                elif base and base[0].type.get_canonical().kind in (ci.TypeKind.RECORD, ci.TypeKind.POINTER):
                    bt = base[0].type.get_canonical()
                    bt = bt.get_pointee() if bt.kind == ci.TypeKind.POINTER else bt
                    template_args = _specialization_args(bt.get_declaration(), _split_type_args(bt.spelling))
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
            elif inner.kind == K.DECL_REF_EXPR and inner.referenced is not None \
                    and inner.referenced.kind in (K.VAR_DECL, K.PARM_DECL) and _called_variable(c, inner):
                # `f(p, i)` with `f` a variable of a template parameter's type (`template <class F> ...
                # apply(F f, ...)`): a function object or pointer whose callee clang resolves only when
                # the template is bound; kernlint reads the pattern, so the callee is unknown. (Its name is
                # kept, and the arguments are the call's: the value is "returned by `f()`" as before.)
                name = via = inner.spelling
            elif inner.kind == K.DECL_REF_EXPR:
                name = inner.spelling
                template_args = _template_args_from_tokens(inner, self.main)
                if not name:
                    # A call to a function template from a template (`loadChunk<isNP2>(...)`): an
                    # overloaded-declaration reference inside; the name is its spelling.
                    over = [k for k in inner.get_children() if k.kind == K.OVERLOADED_DECL_REF]
                    name = over[0].spelling if over else ""
                if name and not template_args:
                    # A qualified callee (`cg::tiled_partition<32>(block)`): the arguments follow the name.
                    toks = spellings(inner, self.main)
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
                                 template_args, _written_at(ref))
        scope = _namespace_of(ref, callee_kids[0] if callee_kids else None) if not target and receiver is None else ""
        return ir.Call(name, self.arguments(ref, arg_kids), ctype, span, receiver, target, template_args,
                       via, scope, _written_at(ref) if not via else "")

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
        if op in ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=") and len(args) == 2:
            return ir.Binary(op, self.expr(args[0]), self.expr(args[1]), ctype, span)
        written = _written_at(ref)
        if ref is not None and ref.kind == K.CXX_METHOD and (_is_device(ref) or written) and args \
                and ref.result_type.kind == ci.TypeKind.LVALUEREFERENCE:
            # A member operator returning a reference (`T& operator[](int)` of a wrapper, `T& operator()(int r,
            # int c)` of a matrix accessor, `T& operator*()` of an iterator): the element it refers to.
            defn = ref.get_definition()
            return _element_call(name, self.expr(args[0]), tuple(self.expr(a) for a in args[1:]), ctype, span,
                                 _function_key(defn if defn is not None else ref), written=written)
        if ref is not None and (_is_device(ref) or written) and args \
                and ref.result_type.kind != ci.TypeKind.LVALUEREFERENCE:
            # A user's operator returning a value (`float3 operator*(float3, float)` of
            # helper_math.h, `V V::operator+(const V&) const`, a lambda's `operator()`, implicitly
            # `__host__ __device__`): a call the evaluator inlines, or says it could not.
            defn = ref.get_definition()
            target = _function_key(defn if defn is not None else ref)
            if ref.kind == K.CXX_METHOD:
                return ir.Call(name, tuple(self.expr(a) for a in args[1:]), ctype, span, self.expr(args[0]), target,
                               written=written)
            return ir.Call(name, tuple(self.expr(a) for a in args), ctype, span, None, target, written=written)
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
            kids = list(c.get_children())
            self.local_defs.extend(k for k in kids if k.kind in (K.STRUCT_DECL, K.CLASS_DECL) and k.is_definition())
            decls = [self.var_decl(v) for v in kids if v.kind == K.VAR_DECL]
            if len(decls) == 1:
                return decls[0]
            return ir.Block(tuple(decls), span, scope=False)
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
        if kind == K.ASM_STMT:
            read = inline_asm.operand_counts(spellings(c, self.main))
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            if read is not None and read[1] + read[2] == len(kids):
                lowered = inline_asm.lower_asm(read[0], read[1], [self.expr(k) for k in kids], span)
                if lowered is not None:
                    return lowered
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
            deadline.charge(deadline.LOWERING_STEPS)
            spent = self.budgeted and deadline.expired()
            if self.statements >= MAX_STATEMENTS or spent:
                # The rest of the block, unlowered: one opaque statement from here to its last one. Past
                # the file's work budget every kernel is still read (a KL904 names it), its body cut here.
                first, last = _span(k), _span(kids[-1])
                out.append(ir.OpaqueStmt(ir.OUT_OF_BUDGET if spent else ir.TOO_LARGE,
                                         ir.Span(first.line, first.column, last.end_line, last.end_column)))
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
        if init is not None and ctype.kind == "reference" and ctype.pointee is not None \
                and memory_refs.binds_memory(v, init_c[-1], self._memory_var,
                                             lambda d: (d._kind_id, d.data[0]) in self.memory_refs):
            # `T &x = a[i]` as `T *x = &a[i]`; its uses are `*x` (decl_ref): nothing is read here.
            self.memory_refs.add((v._kind_id, v.data[0]))
            pointer = ir.CType("pointer", 8, False, pointee=ctype.pointee, name=ctype.name)
            init = self.address_of(init_c[-1], pointer)
            return ir.VarDecl(v.spelling, pointer, init, _span(v), shared, extern, static)
        if ctype.kind == "unknown" and (isinstance(init, ir.Closure)
                                        or isinstance(init, ir.Opaque) and init.reason == "lambda_expr"):
            ctype = init.ctype  # (`auto f = [&](...) {...}` in a template's pattern: clang leaves `auto` undeduced)
        return ir.VarDecl(v.spelling, ctype, init, _span(v), shared, extern, static)

    def address_of(self, c: ci.Cursor, pointer: ir.CType) -> ir.Expr:
        """`&e` for the memory lvalue `e` a reference is bound to; of a conditional, each side's."""
        c = memory_refs.strip(c)
        if c.kind == K.CONDITIONAL_OPERATOR:
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            return ir.Cond(self.expr(kids[0]), self.address_of(kids[1], pointer), self.address_of(kids[2], pointer),
                           pointer, _span(c))
        if c.kind == K.CXX_REINTERPRET_CAST_EXPR:  # `&reinterpret_cast<T &>(x)` is `reinterpret_cast<T *>(&x)`
            kids = [k for k in c.get_children() if k.kind.is_expression()]
            inner = ir.CType("pointer", 8, False, pointee=self.types.convert(kids[-1].type))
            return ir.Cast(self.address_of(kids[-1], inner), pointer, True, _span(c))
        return ir.Unary("&", self.expr(c), pointer, _span(c))

    def arguments(self, callee: ci.Cursor | None, kids: list[ci.Cursor]) -> tuple[ir.Expr, ...]:
        """A call's arguments. A reference to memory (frontend/memory_refs.py) passed on to a reference
        parameter of class type (`BlockScan(temp_storage)`) is not read by the call: it is an opaque value
        there, not a load of the whole object."""
        if not self.memory_refs or callee is None:
            return tuple(self.expr(a) for a in kids)
        params = list(callee.get_arguments()) if callee.kind in (K.CONSTRUCTOR, K.FUNCTION_DECL, K.CXX_METHOD) else []
        out = []
        for i, a in enumerate(kids):
            if i < len(params) and memory_refs.passed_on(a, params[i], self.memory_refs):
                out.append(ir.Opaque("a reference passed on", self.ctype(a), _span(a)))
            else:
                out.append(self.expr(a))
        return tuple(out)

    def for_stmt(self, c: ci.Cursor, span: ir.Span) -> ir.Stmt:
        kids = list(c.get_children())
        present = _for_header_parts(c, kids[-1] if kids else None, self.main)
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


def _for_header_parts(c: ci.Cursor, body: ci.Cursor | None = None,
                      main: MainText | None = None) -> tuple[bool, bool, bool] | None:
    """Which of init; cond; step a `for` header has (libclang omits the missing ones). `main`: the
    lowered file, for its tokens (clang_base.MainText).

    Only the header is tokenized (up to the body), not the whole loop: tokenizing long bodies
    dominated the front end's time.
    """
    toks: list[str] = []
    if body is not None and body.extent.start.file is not None and c.extent.start.file is not None:
        header = ci.SourceRange.from_locations(c.extent.start, body.extent.start)
        toks = main.tokens_in(c.translation_unit, header) if main is not None else \
            [t.spelling for t in c.translation_unit.get_tokens(extent=header)]
    if len(toks) < 4:
        toks = spellings(c, main)
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


def _function_key(c: ci.Cursor) -> str:
    name = c.spelling
    if c.kind == K.CONSTRUCTOR:
        # A class template's constructor is spelled `global_stack<T, N, THREADS>`, a specialization's
        # (what a call in an instantiated kernel refers to) `global_stack`: one key for both.
        name = name.split("<", 1)[0]
    return f"{name}@{c.location.file.name if c.location.file else ''}:{c.location.line}"


def _element_call(name: str, receiver: ir.Expr, args: tuple[ir.Expr, ...], ctype: ir.CType, span: ir.Span,
                  target: str = "", template_args: tuple[str, ...] = (), written: str = "") -> ir.Expr:
    """A call to a method returning a reference (`sdata[i]` through `T& operator[](int)`): the call
    yields the element's address (see _address_returns) and the expression is that element."""
    ptr = ir.CType("pointer", 8, False, pointee=ctype, name=ctype.name + " *")
    return ir.Unary("*", ir.Call(name, args, ptr, span, receiver, target, template_args, written=written), ctype, span)


def _called_variable(c: "ci.Cursor", ref: "ci.Cursor") -> bool:
    """Whether call `c`, whose first child is `ref` (a variable's name), calls that variable (`f(p, i)`), not
    constructs a dependent type from it (`typename K::Load(smem)(...)`: clang lists only the arguments)."""
    first = next(iter(c.get_tokens()), None)
    return first is not None and first.spelling == ref.spelling and ref.extent.start == c.extent.start


_CALLABLE_KINDS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.CONVERSION_FUNCTION)


def _written_at(ref: "ci.Cursor | None") -> str:
    """ir.Call.written: the key of the callee `ref` (of its definition, else of its declaration) when the
    user's code declares it; "" for a compiler builtin, kernlint's shim or stub headers (CUDA's intrinsics
    and the libraries kernlint models: eval/interp_calls.py), or no function at all. A builtin
    (`__builtin_huge_valf`, what `INFINITY` expands to) is declared implicitly, placed at its first use
    and with no attribute: a function declared without a body in device code is one, or `__device__`.
    A function declared without a body in a namespace (or a class of one) is a library's, whose calls
    eval/library_calls.py judges by what they are passed (a copy or MMA is an access; a view is not): "" too."""
    if ref is None or ref.kind not in _CALLABLE_KINDS:
        return ""
    decl = ref.get_definition()
    if decl is None and (not _is_device(ref) or _in_namespace(ref)):
        return ""
    decl = decl or ref
    f = decl.location.file
    if f is None or f.name == shim_path() or f.name.startswith(STUB_DIR):
        return ""
    return _function_key(decl)


def _in_namespace(c: "ci.Cursor") -> bool:
    """Whether declaration `c` is inside a namespace (directly, or as a member of a class there)."""
    p = c.semantic_parent
    for _ in range(32):
        if p is None or p.kind == K.TRANSLATION_UNIT:
            return False
        if p.kind == K.NAMESPACE:
            return True
        p = p.semantic_parent
    return False


def _namespace_of(ref: "ci.Cursor | None", callee: "ci.Cursor | None") -> str:
    """The namespace a body-less callee is declared in (`cute`, `nvcuda::wmma`): from its declaration,
    else (a dependent call in a template) from a qualifier written before its name; "" for none."""
    parts: list[str] = []
    p = ref.semantic_parent if ref is not None else None
    while p is not None and p.kind == K.NAMESPACE:
        parts.append(p.spelling)
        p = p.semantic_parent
    if parts:
        return "::".join(reversed(parts))
    if ref is None and callee is not None:
        toks = [t.spelling for t in callee.get_tokens()]
        if len(toks) >= 3 and toks[-2] == "::" and all(t.isidentifier() or t == "::" for t in toks):
            return "".join(toks[:-2])
    return ""
