"""Facts about IR statements and expressions the evaluator asks often (memoised: names assigned, operation counts, loop shapes)."""
from __future__ import annotations

import re

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.eval.library_calls import is_asm_access, is_asm_loaded
from kernlint.frontend.inline_asm import OUTPUT as ASM_OUTPUT
from kernlint.eval.values import Val
from kernlint.base.memo import by_identity


def _block_member(e: ir.Expr) -> str | None:
    """'x' for `blockIdx.x` (through casts), else None."""
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Member) and e.field in ("x", "y", "z"):
        base = e.base.operand if isinstance(e.base, ir.Cast) else e.base
        if isinstance(base, ir.Ref) and base.kind == "builtin" and base.name == "blockIdx":
            return e.field
    return None


@by_identity(max_entries=1024)  # asked at every branch on the variable, of the whole kernel body
def _block_alias(body: ir.Stmt, name: str) -> str | None:
    """'x' when every write to the variable `name` in `body` stores blockIdx.x (`int bx = blockIdx.x;`)."""
    dims: set[str | None] = set()
    for n in ir.walk(body):
        if isinstance(n, ir.VarDecl) and n.name == name:
            dims.add(_block_member(n.init) if n.init is not None else "")
        elif isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">=") \
                and _target_name(n.lhs) == name:
            dims.add(_block_member(n.rhs) if n.op == "=" else None)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--", "&") \
                and _target_name(n.operand) == name:
            dims.add(None)
    dims.discard("")  # a declaration without an initializer
    return next(iter(dims)) if len(dims) == 1 else None


# Math and conversion intrinsics that read no memory and write none (a load before them can be reused).
_PURE_CALL = lazy_compile(r"(__)?(sqrt|rsqrt|cbrt|exp|exp2|exp10|log|log2|log10|sin|cos|tan|sincos|pow|fabs|abs|"
                          r"min|max|fmin|fmax|floor|ceil|fma|fmaf|tanh|erf|erfc|round|rint|trunc|fdividef|frcp|"
                          r"fdiv|fadd|fmul|fsub|saturate|expf|logf|powf)\w*$|make_\w+$|__(float|half|int|uint|"
                          r"double|bfloat|ll|ull)\w*$|__(float2half|half2float|shfl)\w*$")
_MAKE_VECTOR = lazy_compile(r"make_(?:u?char|u?short|u?int|u?long|u?longlong|float|double)([1-4])")
_BARRIERS = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"}
_BUILTIN_TYPES = {
    "float": ir.CType("float", 4, name="float"), "double": ir.CType("float", 8, name="double"),
    "int": ir.CType("int", 4, True, name="int"), "unsigned": ir.CType("int", 4, False, name="unsigned int"),
    "unsigned int": ir.CType("int", 4, False, name="unsigned int"), "uint32_t": ir.CType("int", 4, False, name="uint32_t"),
    "int32_t": ir.CType("int", 4, True, name="int32_t"), "long": ir.CType("int", 8, True, name="long"),
    "long long": ir.CType("int", 8, True, name="long long"), "int64_t": ir.CType("int", 8, True, name="int64_t"),
    "unsigned long long": ir.CType("int", 8, False, name="unsigned long long"),
    "short": ir.CType("int", 2, True, name="short"), "char": ir.CType("int", 1, True, name="char"),
    "unsigned char": ir.CType("int", 1, False, name="unsigned char"), "uint8_t": ir.CType("int", 1, False, name="uint8_t"),
    "int8_t": ir.CType("int", 1, True, name="int8_t"), "bool": ir.CType("bool", 1, False, name="bool"),
    "half": ir.CType("float", 2, name="half"), "__half": ir.CType("float", 2, name="__half"),
    "__nv_bfloat16": ir.CType("float", 2, name="__nv_bfloat16"), "nv_bfloat16": ir.CType("float", 2, name="nv_bfloat16"),
    "float2": ir.CType("struct", 8, name="float2", align=8, fields=(ir.Field("x", 0, ir.CType("float", 4)), ir.Field("y", 4, ir.CType("float", 4)))),
    "float4": ir.CType("struct", 16, name="float4", align=16, fields=tuple(ir.Field(n, 4 * i, ir.CType("float", 4)) for i, n in enumerate("xyzw"))),
    "int2": ir.CType("struct", 8, name="int2", align=8, fields=(ir.Field("x", 0, ir.CType("int", 4)), ir.Field("y", 4, ir.CType("int", 4)))),
    "int4": ir.CType("struct", 16, name="int4", align=16, fields=tuple(ir.Field(n, 4 * i, ir.CType("int", 4)) for i, n in enumerate("xyzw"))),
    "double2": ir.CType("struct", 16, name="double2", align=16, fields=(ir.Field("x", 0, ir.CType("float", 8)), ir.Field("y", 8, ir.CType("float", 8)))),
}


def _local_lvalue(e: ir.Expr) -> tuple[str, str] | None:
    """(variable, member) when `e` names a local variable or parameter, or a member of one held by
    value (`x`, `acc.sum`): an lvalue a reference parameter can be bound to by copy-in/copy-out."""
    while isinstance(e, ir.Cast) and not e.explicit:
        e = e.operand
    if isinstance(e, ir.Ref) and e.kind in ("local", "param") and e.ctype.kind in ("int", "float", "bool", "struct",
                                                                                  "pointer"):
        return e.name, ""
    if isinstance(e, ir.Member) and not e.arrow and e.ctype.kind in ("int", "float", "bool", "pointer"):
        base = e.base
        while isinstance(base, ir.Cast) and not base.explicit:
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind in ("local", "param") and base.ctype.kind == "struct":
            return base.name, e.field
    return None


def _sampled_name(e: ir.Expr) -> str | None:
    """The name a sampled runtime value goes by: a parameter (`n`), or a field of a struct parameter
    or of a `__constant__`/`__device__` struct (`d_common.frame_no`, as `param_value` names it)."""
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Ref) and e.kind == "param":
        return e.name
    if isinstance(e, ir.Member) and not e.arrow:
        base = e.base
        while isinstance(base, ir.Cast):
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind in ("param", "global", "constant"):
            return f"{base.name}.{e.field}"
    return None


def _with_field(old: Val, path: list[str], v: Val) -> Val:
    """The struct value `old` with the field at `path` (`["b", "c"]` for `.b.c`) set to `v`; a struct
    field along the path that held no known fields gets only this one (its others stay unknown)."""
    fields = dict(old.fields)
    if len(path) == 1:
        fields[path[0]] = v
    else:
        sub = fields.get(path[0])
        fields[path[0]] = _with_field(sub if sub is not None and sub.space == "" else Val(None), path[1:], v)
    return Val(None, old.deps, fields=tuple(fields.items()))


def _template_param_name(name: str, fn: ir.Function) -> str:
    """Map clang's spelling of a dependent type (`type-parameter-0-1`) to the parameter's name."""
    m = re.fullmatch(r"type-parameter-0-(\d+)", name)
    if m and int(m.group(1)) < len(fn.template_params):
        return fn.template_params[int(m.group(1))].name
    return name


def _fold_dim(text: str, values: dict[str, str]) -> int:
    """Evaluate an array dimension such as `TILE + 1` with bound template arguments; 0 when unknown."""
    expr = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: values.get(m.group(1), m.group(1)), text)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    if not re.fullmatch(r"[0-9\s+\-*/%()<>]*[0-9][0-9\s+\-*/%()<>]*", expr):
        return 0
    try:
        value = eval(expr.replace("/", "//"), {"__builtins__": {}}, {})  # noqa: S307 - digits and operators only
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError):
        return 0
    return int(value) if isinstance(value, int) and value > 0 else 0


def _subtype_map(old: ir.CType, new: ir.CType) -> dict[ir.CType, ir.CType]:
    """Pair the nested array types of `old` with those of `new` (same depth), outermost first."""
    out: dict[ir.CType, ir.CType] = {}
    while old.kind == "array" and new.kind == "array" and old.pointee is not None and new.pointee is not None:
        out[old] = new
        old, new = old.pointee, new.pointee
    return out


def _vector_chunks(t: ir.CType) -> list[tuple[int, ir.CType]]:
    """The 16-byte pieces a whole copy of a wide, 16-byte-aligned struct of one scalar type moves.

    A struct over 16 bytes whose fields are one scalar type back to back (no padding) and whose
    alignment is at least 16 (`double4`, `longlong4`, `struct __align__(16) { float v[8]; }`) is
    copied in 16-byte vector instructions, not one per field: nvcc 13 for sm_80 emits two
    `ld.global.nc.v4.u32` and two `st.global.v4.u32` for `o[i] = a[i]` on `double4*` (checked in
    PTX). 16 bytes is the widest vector access before sm_100. Empty when the struct is not of that
    shape (it is then copied field by field, as a struct aligned to 8 is)."""
    if t.align < 16 or t.size <= 16 or t.size % 16:
        return []
    fields = _scalar_fields(t)
    if not fields:
        return []
    size = fields[0][1].size
    kind = fields[0][1].kind
    if size <= 0 or 16 % size or any(ft.kind not in ("int", "float") or ft.kind != kind or ft.size != size
                                     or off != k * size for k, (off, ft) in enumerate(fields)):
        return []
    if len(fields) * size != t.size:
        return []
    per = 16 // size
    return [(base, ir.CType("struct", size=16, align=16, name=f"{t.name} (16-byte piece)",
                            fields=tuple(ir.Field(f"[{k}]", k * size, fields[0][1]) for k in range(per))))
            for base in range(0, t.size, 16)]


def _scalar_fields(t: ir.CType, base: int = 0, depth: int = 0) -> list[tuple[int, ir.CType]]:
    """(offset, type) of every scalar (or naturally aligned vector) field of a struct, flattened."""
    out: list[tuple[int, ir.CType]] = []
    if depth > 3:
        return out
    for f in t.fields:
        if f.offset < 0 or f.ctype.size <= 0:
            continue
        ft = f.ctype
        if ft.kind == "struct" and (ft.size not in (1, 2, 4, 8, 16) or (ft.align and ft.align < ft.size)):
            out.extend(_scalar_fields(ft, base + f.offset, depth + 1))
        elif ft.kind == "array" and ft.pointee is not None and ft.count and ft.pointee.size > 0:
            for i in range(min(ft.count, 16)):
                out.append((base + f.offset + i * ft.pointee.size, ft.pointee))
        elif ft.kind in ("int", "float", "bool", "pointer", "struct"):
            out.append((base + f.offset, ft))
    return out


def _pointer_chain_type(e: ir.Expr, resolve) -> ir.CType | None:  # type: ignore[no-untyped-def]
    """The pointer type a `p + a + b` chain starts from, when clang left the sums dependent."""
    for _ in range(16):
        while isinstance(e, ir.Cast) and not e.explicit:
            e = e.operand
        t = resolve(e.ctype)
        if t.kind in ("pointer", "array") and t.pointee is not None and resolve(t.pointee).size > 0:
            return t
        if not (isinstance(e, ir.Binary) and e.op in ("+", "-")):
            return None
        rt = resolve(e.rhs.ctype)
        if e.op == "+" and rt.kind in ("pointer", "array") and rt.pointee is not None:
            e = e.rhs
        else:
            e = e.lhs
    return None


def _builtin_type(name: str) -> ir.CType | None:
    return _BUILTIN_TYPES.get(" ".join(name.replace("const", "").split()))


def _strip_implicit(e: ir.Expr) -> ir.Expr:
    while isinstance(e, ir.Cast) and not e.explicit:
        e = e.operand
    return e


def _target_name(e: ir.Expr) -> str | None:
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Ref):
        return e.name
    if isinstance(e, ir.Member) and not e.arrow:
        return _target_name(e.base)
    return None


# The static questions asked at every branch and loop iteration (what does this body assign, how costly
# is it) are answered once per node.
_memo_by_identity = by_identity(max_entries=20001)


@_memo_by_identity
def _assigned_names_expr(e: object) -> frozenset[str]:
    out: set[str] = set()
    for n in ir.walk(e):
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            t = _target_name(n.lhs)
            if t:
                out.add(t)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = _target_name(n.operand)
            if t:
                out.add(t)
    return frozenset(out)


def _assigned_names(s: object) -> frozenset[str]:
    return _assigned_names_expr(s)


def _ops(e: object) -> int:
    """Operations in an expression (the instruction proxy the divergence rules weigh work by): each
    arithmetic or logical operator, memory access, call and `?:` counts one; plain assignments,
    casts, names and literals count nothing."""
    if e is None:
        return 0
    return _expr_ops(e)


@_memo_by_identity
def _expr_ops(e: object) -> int:
    total = 0
    for n in ir.walk(e):
        if isinstance(n, ir.Binary):
            total += n.op not in ("=", ",")
        elif isinstance(n, ir.Unary):
            total += n.op != "&"
        elif isinstance(n, ir.Member):
            total += bool(n.arrow)
        elif isinstance(n, (ir.Index, ir.Cond)) or (isinstance(n, ir.Call) and not is_asm_loaded(n)):
            total += 1  # (an inline-asm load's outputs take what its one access loaded: no work of their own)
    return total


@_memo_by_identity
def _own_ops(s: object) -> int:
    """Operations a statement issues itself (at least one, none for an asm output made unknown); nested statements are charged when they run,
    a loop's condition and step once per iteration (exec_loop)."""
    if isinstance(s, (ir.ExprStmt,)):
        e = s.expr
        if isinstance(e, ir.Binary) and e.op == "=" and isinstance(e.rhs, ir.Opaque) and e.rhs.reason == ASM_OUTPUT:
            return 0  # (an asm output made unknown: the asm statement, just before, was charged)
        return max(1, _ops(e))
    if isinstance(s, ir.VarDecl):
        return max(1, _ops(s.init))
    if isinstance(s, ir.Return):
        return max(1, _ops(s.value))
    if isinstance(s, (ir.If, ir.Switch)):
        return max(1, _ops(s.cond))
    return 1


@_memo_by_identity
def _has_real_loop(s: object) -> bool:
    """A loop other than `do { } while (0)` (the statement-macro idiom) under `s`."""
    for n in ir.walk(s):
        if isinstance(n, (ir.For, ir.While)):
            c = n.cond
            while isinstance(c, ir.Cast):
                c = c.operand
            if not (isinstance(n, ir.While) and n.do_while and isinstance(c, ir.Lit) and not c.value):
                return True
    return False


def _has_exit(s: object) -> bool:
    """Whether a `return`, `break` or `continue` appears anywhere in `s`."""
    return s is not None and any(isinstance(n, (ir.Return, ir.Break, ir.Continue)) for n in ir.walk(s))


def _exit_kind(s: object) -> str:
    """'return', 'break' or 'continue' when a branch side ends by leaving; '' otherwise."""
    while isinstance(s, ir.Block) and s.body:
        s = s.body[-1]
    if isinstance(s, ir.Return):
        return "return"
    if isinstance(s, ir.Break):
        return "break"
    if isinstance(s, ir.Continue):
        return "continue"
    return ""


@_memo_by_identity
def _stmt_cost(s: object) -> int:
    """A rough instruction proxy: expression nodes in the statement, loops weighted by 8."""
    if s is None:
        return 0
    total = 0
    for n in ir.walk(s):
        if isinstance(n, (ir.Binary, ir.Unary, ir.Index, ir.Call, ir.Cond)):
            total += 1
        elif isinstance(n, (ir.For, ir.While)):
            total += 8
    return total


@_memo_by_identity
def _has_loop(s: object) -> bool:
    return any(isinstance(n, (ir.For, ir.While)) for n in ir.walk(s))


def _loop_var(s: ir.Stmt) -> str | None:
    if isinstance(s, ir.For):
        if isinstance(s.init, ir.VarDecl):
            return s.init.name
        if isinstance(s.init, ir.ExprStmt):
            return _target_name(s.init.expr.lhs) if isinstance(s.init.expr, ir.Binary) else None
        if s.step is not None:
            names = _assigned_names_expr(s.step)
            if len(names) == 1:
                return next(iter(names))
    return None


@_memo_by_identity
def _counter_branches(s: object) -> tuple[object, ...]:
    """The `if`s of a loop `s` on one of its counters: its own variable, or a name the body steps by
    `++`/`--` (`while (r > tol) { if (k > 1) {...} else {...} k++; }`). A loop whose trip count is
    data runs its body once for evaluation; a side of such a guard that the first iteration does not
    take is only taken from the second iteration on (eval/interp_statements.py `exec_loop`)."""
    body = getattr(s, "body", None)
    if body is None:
        return ()
    counters: set[str] = set()
    var = _loop_var(s)  # type: ignore[arg-type]
    if var:
        counters.add(var)
    for n in ir.walk(body):
        if isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = _target_name(n.operand)
            if t:
                counters.add(t)
    if not counters:
        return ()
    out = []
    for n in ir.walk(body):
        if isinstance(n, ir.If):
            # The counter itself, not an element it indexes (`if (r[j] > m)` is a test on data).
            inside = {id(r) for x in ir.walk(n.cond) if isinstance(x, ir.Index) for r in ir.walk(x.index)}
            if any(isinstance(r, ir.Ref) and r.name in counters and id(r) not in inside for r in ir.walk(n.cond)):
                out.append(n)
    return tuple(out)


_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})


@by_identity(max_entries=256)
def reference_use(fn: ir.Function, name: str) -> tuple[bool, bool]:
    """(reads, writes) of the reference parameter `name` in `fn`'s body.

    Writes: `name = v`, `name op= v`, `++name`, `name--`. Reads: every other mention, the left side
    of a compound assignment or increment included; a mention the callee passes on (to another call,
    by address) counts as a read only, so what cannot be seen is never called a store.
    """
    if fn.body is None:
        return True, False
    pure_lhs: set[int] = set()
    writes = False

    def target(e: ir.Expr) -> ir.Expr:
        while isinstance(e, ir.Cast) and not e.explicit:
            e = e.operand
        return e

    nodes = list(ir.walk(fn.body))
    for n in nodes:
        if isinstance(n, ir.Binary) and n.op in _ASSIGN_OPS:
            t = target(n.lhs)
            if isinstance(t, ir.Ref) and t.name == name and t.kind == "param":
                writes = True
                if n.op == "=":
                    pure_lhs.add(id(t))
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = target(n.operand)
            if isinstance(t, ir.Ref) and t.name == name and t.kind == "param":
                writes = True
    reads = any(isinstance(n, ir.Ref) and n.name == name and n.kind == "param" and id(n) not in pure_lhs
                for n in nodes)
    return reads, writes


@by_identity(max_entries=256)
def opaque_statements(body: ir.Stmt) -> tuple[int, int]:
    """(statements the evaluator cannot run, statements it can) in `body`: an `OpaqueStmt` (inline
    assembly, a construct the front end could not lower) is never evaluated, nor is an inline-asm memory
    instruction other than a cp.async copy (eval/library_calls.py); blocks count neither."""
    opaque = understood = 0
    for s in ir.iter_statements(body):
        if isinstance(s, ir.OpaqueStmt) or (isinstance(s, ir.ExprStmt) and isinstance(s.expr, ir.Call)
                                            and is_asm_access(s.expr)):
            opaque += 1
        elif not isinstance(s, ir.Block):
            understood += 1
    return opaque, understood
