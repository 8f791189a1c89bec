"""Floating-point arithmetic on unknown values: one pass over a node's plan instead of the per-node evaluator.

kernlint models no floating-point value it cannot compute from constants and thread indices, so
`y = x * y * T(2.0) + yC` on loaded or parameter-derived values is unknown, and the per-node
evaluator (`ExpressionsMixin.eval` -> `eval_binary` -> `arith` -> `_arith`, `eval_cast`,
`eval_ref`) spends its time learning that again at every node of every evaluation. For such a tree
the slow path's answer is fixed by its shape: every `+ - * /` with a float result and an unknown
operand gives `unknown(lhs, rhs)` (`_arith`'s first test; `arith` adds nothing for a float result
and operands that hold no address), and so does a comparison (`arith` bounds none); a conversion to
a floating type and a sign keep an unknown value's deps, loads, cause and uniformity (`convert` ->
`bounded_index.with_bound(v, None)`; `eval_unary`); a member of a struct variable is its field's
value, or `unknown(variable, why=member)` (`eval_memory_read`); and a literal under conversions to a
floating type and signs is a known constant with no deps.

`plan` compiles an expression once per node into a postfix program over its variable and member
reads, or None where the shape does not fit; `applies` checks its template parameter types under
the bindings of the moment. `run` executes it: it answers only when every read is, in the innermost
frame, an unknown value that holds no address (else None, and the caller takes the slow path, which
nothing here has touched), and folds the operands as `unknown` does at each operator, in the slow
path's order, so deps (their union order included), loads, cause and uniformity come out as the
slow path builds them. The caller charges the plan's node count as steps, one per node as `eval`
does, and leaves to the slow path a plan that would reach the step budget, the clock or the nesting
bound. tests/test_unknown_float.py compares the two paths statement by statement.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from kernlint.eval.values import WHY_RANK, Val, const, unknown
from kernlint.ir import nodes as ir

# The operators whose result `_arith` makes `unknown(a, b)` whenever an operand is unknown, and for which
# `arith` and `eval_binary` add nothing when the result is a float (comparisons have an integer result:
# `arith` may bound it; assignments store).
FLOAT_OPS = frozenset(("+", "-", "*", "/"))
# Comparisons: with an unknown operand `_arith` makes them `unknown(a, b)` too, and `arith` adds nothing
# (`bounded_index.arith` bounds no comparison; tests/test_unknown_float.py holds it to that).
COMPARISONS = frozenset(("<", ">", "<=", ">=", "==", "!="))
# The result types under which a `FLOAT_OPS` node may be planned: a floating type, or a template
# parameter that resolves to one or stays unbound (`applies` resolves it).
FLOAT_KINDS = frozenset(("float", "template"))

_READ = 0  # a variable read: the operand is its name
_CONST = 1  # a known constant with no deps (a literal under floating conversions)
_OP = 2  # an operator: fold the two values on top
_MEMBER = 3  # a member of a struct value held in a variable: the operand is (variable, member)


class Plan(NamedTuple):
    """A tree's postfix program, its node count (steps charged), its depth (root 0), and the template
    parameter types among its operators' and conversions' types (each must resolve to a floating type,
    or stay unbound, for the plan to apply under the bindings of the moment)."""

    program: tuple[tuple[int, object], ...]
    nodes: int
    depth: int
    templates: tuple[ir.CType, ...]


# What a literal contributes to `unknown`: known, no deps, no loads, stored once per warp. Every
# literal under floating conversions is such a value (`const`, then `convert`'s `astype`).
_KNOWN = const(0.0)


def plan(e: ir.Binary) -> Plan | None:
    """The plan of `e` (a `FLOAT_OPS` node or a comparison), or None where its value is not certainly the
    fold of its reads (remembered per node: IR is immutable)."""
    hit = _PLANS.get(id(e))
    if hit is not None and hit[0] is e:
        return hit[1]
    out = _plan(e)
    if len(_PLANS) >= 20000:
        _PLANS.clear()
    _PLANS[id(e)] = (e, out)
    return out


_PLANS: dict[int, tuple[ir.Binary, Plan | None]] = {}


def _plan(e: ir.Binary) -> Plan | None:
    program: list[tuple[int, object]] = []
    counts = [0, 0]  # nodes, depth
    templates: dict[ir.CType, None] = {}

    def float_type(t: ir.CType) -> bool:
        # A floating type, or a template parameter (checked under each evaluation's bindings: `applies`).
        # As `eval_cast` and `eval_binary` resolve: only a template parameter can become another kind.
        if t.kind == "template":
            templates[t] = None
            return True
        return t.kind == "float"

    def literal(n: ir.Expr, d: int) -> bool:
        """A literal under floating conversions and signs only: counted, and pushed as a known constant
        (`eval_unary` gives a known operand's negation, known)."""
        k = 0
        while type(n) is ir.Cast or type(n) is ir.Unary and n.op in _SIGNS:
            if type(n) is ir.Cast and not float_type(n.ctype):
                return False
            n, k = n.operand, k + 1
        if type(n) is not ir.Lit or not isinstance(n.value, (int, float)):
            return False
        counts[0] += k + 1
        counts[1] = max(counts[1], d + k)
        program.append((_CONST, _KNOWN))
        return True

    def reads(n: ir.Expr, d: int) -> bool:
        """A tree with at least one variable read, every other node planned (pushed in evaluation order)."""
        k = 0
        while type(n) is ir.Cast:
            if not float_type(n.ctype):
                return False
            n, k = n.operand, k + 1
        d += k
        counts[0] += k + 1
        counts[1] = max(counts[1], d)
        if type(n) is ir.Ref:
            if n.kind == "template" or n.kind == "builtin":
                return False
            program.append((_READ, n.name))
            return True
        if type(n) is ir.Unary and n.op in _SIGNS:
            # `eval_unary` returns an unknown operand as it is
            return reads(n.operand, d + 1)
        if type(n) is ir.Member and not n.arrow:
            # `bi.x`, `bi` a local struct or a parameter: `eval_memory_read` takes the member from the
            # variable's value (`eval_struct_value`, which strips one implicit conversion and charges no
            # step for the variable); `builtin_member` declines, the variable being no builtin.
            base = n.base
            if type(base) is ir.Cast and not base.explicit:
                base = base.operand
            if type(base) is not ir.Ref or base.kind not in ("local", "param"):
                return False
            program.append((_MEMBER, (base.name, n.field, ("unmodelled", f"member `{n.field}`"))))
            return True
        if type(n) is ir.Binary and n.op in FLOAT_OPS and float_type(n.ctype):
            return operands(n, d)
        return False

    def operands(n: ir.Binary, d: int) -> bool:
        """Both operands of `n` (at depth `d`), then its fold: each operator needs an operand with a read
        (then unknown); the other may be a literal."""
        lhs, rhs = n.lhs, n.rhs
        mark = len(program), counts[0], counts[1]
        if not reads(lhs, d + 1):
            del program[mark[0]:]
            counts[0], counts[1] = mark[1], mark[2]
            if not literal(lhs, d + 1):
                return False
            return reads(rhs, d + 1) and _op(program)
        mark = len(program), counts[0], counts[1]
        if not reads(rhs, d + 1):
            del program[mark[0]:]
            counts[0], counts[1] = mark[1], mark[2]
            if not literal(rhs, d + 1):
                return False
        return _op(program)

    if type(e) is not ir.Binary:
        return None
    if e.op in COMPARISONS:
        # A comparison with a floating operand (integer ones are left to the per-node path: their reads are
        # mostly known, and a plan that declines costs a look-up).
        if not (float_type(e.lhs.ctype) or float_type(e.rhs.ctype)):
            return None
        counts[0] = 1
        if not operands(e, 0):
            return None
    elif not reads(e, 0):
        return None
    # (a failed operand may have listed a template type the plan does not hold: harmless, it is only checked)
    return Plan(tuple(program), counts[0], counts[1], tuple(templates))


def applies(p: Plan, resolve: Callable[[ir.CType], ir.CType]) -> bool:
    """Whether each template parameter type of `p` is, under the bindings `resolve` reads, a floating type
    or unbound (then `eval_cast` returns the value as it is, and `arith` bounds only integer results).
    (A guard: an operator over `T` bound to `int` with a literal operand, `a * T(4)`, would be bounded;
    clang types that product as dependent, unbound, so no test has reached it.)"""
    for t in p.templates:
        if resolve(t).kind not in FLOAT_KINDS:
            return False
    return True


_SIGNS = frozenset(("-", "+"))
_RANK = WHY_RANK.get


def _op(program: list[tuple[int, object]]) -> bool:
    program.append((_OP, None))
    return True


def run(p: Plan, env: dict[str, Val]) -> Val | None:
    """The value the slow path gives the planned tree, with variables `env`; None where a read is not an
    unknown value without an address (a known float, a pointer, a name not bound in the frame)."""
    stack: list[Val] = []
    push = stack.append
    pop = stack.pop
    for code, arg in p.program:
        if code == _READ:
            v = env.get(arg)  # type: ignore[arg-type]
            if v is None or v.data is not None or v.space:
                return None
            push(v)
        elif code == _CONST:
            push(arg)  # type: ignore[arg-type]
        elif code == _MEMBER:
            name, member, why = arg  # type: ignore[misc]
            base = env.get(name)
            if base is None:
                return None
            v = base.field(member)
            if v is None:
                push(unknown(base, why=why))  # as `eval_memory_read` makes it
            elif v.data is not None or v.space:
                return None
            else:
                push(v)
        else:
            # `unknown(a, b)`, written out for its two cases here (a fold per operator): `a` and `b` are
            # unknown, or one of them the literals' `_KNOWN` (no deps, no loads, once per warp).
            b = pop()
            a = pop()
            if b is _KNOWN:
                push(Val(None, a.deps, "", "", (), False, False, a.loads, a.why, True if a.uniform else False))
            elif a is _KNOWN:
                push(Val(None, b.deps, "", "", (), False, False, b.loads, b.why, True if b.uniform else False))
            else:
                deps, loads, why = a.deps, a.loads, a.why
                if b.deps:
                    deps = deps | b.deps if deps else b.deps
                if b.loads:
                    loads = loads | b.loads if loads else b.loads
                w = b.why
                if w is not None and (why is None or _RANK(w[0], 99) < _RANK(why[0], 99)):
                    why = w  # the first of the most telling causes (`unknown`)
                push(Val(None, deps, "", "", (), False, False, loads, why, True if a.uniform and b.uniform else False))
    return stack[0]
