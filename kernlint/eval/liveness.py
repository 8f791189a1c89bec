"""Whether a local's value can still be read after a statement of the kernel (liveness over the IR).

A loop the evaluator stops early (iteration cap, step budget) leaves the names it writes unknown, and
an unknown value stays unknown for every lane even where a later statement assigns it under a mask
(`if (tx == 0) for (i = 0; i < n; i++) s += partial[i];`: the lanes outside the `if` keep their old,
unknown `i`, so the whole value is unknown). A name that every path assigns before reading it after
the loop (a loop counter the next loop starts again) holds no stale value that anything reads: it is
left as it is (`names_read_after`). The analysis is conservative: any mention other than a plain
assignment `name = expr` (without `name` in expr) counts as a read, a redeclaration of the name or a
statement kernlint does not model, a `break` or `continue` count as a read, and inside a loop both the
next iteration and the code after the loop are followed.
"""
from __future__ import annotations

from kernlint.ir import nodes as ir
from kernlint.base.memo import by_identity

DEF, USE = "def", "use"


def _mentions(e: object, name: str) -> bool:
    names = _ref_names(e)
    return name in names or _ANY in names


_ANY = "(any)"  # (no C++ name): an expression that may run a lambda, which reads what it captures by reference


@by_identity(max_entries=4096)  # the analysis asks of each statement once per name
def _ref_names(e: object) -> frozenset[str]:
    """The names `e` mentions; with _ANY when it may call a lambda (a call on one or through a function object,
    or one handed one): its body reads the variables it captures by reference, which `e` does not name."""
    names = set()
    for n in ir.walk(e):
        if isinstance(n, ir.Ref):
            names.add(n.name)
            if "(lambda at " in n.ctype.name:
                names.add(_ANY)
        elif isinstance(n, ir.Closure) or isinstance(n, ir.Call) and n.via:
            names.add(_ANY)
    return frozenset(names)


def _expr(e: ir.Expr | None, name: str) -> str | None:
    """DEF when `e` assigns `name` before reading it, USE when it may read it, None when neither."""
    if e is None:
        return None
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Binary) and e.op == "=":
        lhs = e.lhs
        while isinstance(lhs, ir.Cast):
            lhs = lhs.operand
        if isinstance(lhs, ir.Ref) and lhs.name == name:
            return USE if _mentions(e.rhs, name) else DEF
    return USE if _mentions(e, name) else None


def _stmt(s: object, name: str) -> str | None:
    if s is None:
        return None
    if isinstance(s, ir.VarDecl):
        if s.name == name:
            return USE  # a declaration that shadows it: not followed (conservative)
        return _expr(s.init, name)
    if isinstance(s, ir.ExprStmt):
        return _expr(s.expr, name)
    if isinstance(s, ir.Block):
        return _seq(s.body, name)
    if isinstance(s, ir.If):
        c = _expr(s.cond, name)
        if c is not None:
            return c
        t, o = _stmt(s.then, name), _stmt(s.other, name)
        if USE in (t, o):
            return USE
        return DEF if t == DEF and o == DEF else None
    if isinstance(s, ir.For):
        r = _stmt(s.init, name)
        if r is not None:
            return r
        c = _expr(s.cond, name)
        if c is not None:
            return c
        return USE if USE in (_stmt(s.body, name), _expr(s.step, name)) else None
    if isinstance(s, ir.While):
        if s.do_while:
            b = _stmt(s.body, name)
            return b if b is not None else _expr(s.cond, name)
        c = _expr(s.cond, name)
        if c is not None:
            return c
        return USE if _stmt(s.body, name) == USE else None
    if isinstance(s, ir.Switch):
        c = _expr(s.cond, name)
        if c is not None:
            return c
        return USE if any(_seq(body, name) == USE for _labels, body in s.cases) else None
    if isinstance(s, ir.Return):
        return USE if _expr(s.value, name) == USE else None
    if isinstance(s, (ir.Break, ir.Continue)):
        return USE  # it skips what follows to a place this scan does not follow (conservative)
    return USE  # OpaqueStmt and anything not modelled


def _seq(stmts: tuple[object, ...], name: str) -> str | None:
    for s in stmts:
        r = _stmt(s, name)
        if r is not None:
            return r
    return None


def _path(node: object, target: object) -> list[tuple[object, int]] | None:
    """The (statement list owner, index) pairs from `node` down to `target`, by identity."""
    if isinstance(node, ir.Block):
        for i, s in enumerate(node.body):
            if s is target:
                return [(node, i)]
            sub = _path(s, target)
            if sub is not None:
                return [(node, i)] + sub
        return None
    if isinstance(node, ir.If):
        for child in (node.then, node.other):
            if child is target:
                return [(node, -1)]
            sub = _path(child, target) if child is not None else None
            if sub is not None:
                return [(node, -1)] + sub
        return None
    if isinstance(node, (ir.For, ir.While)):
        if node.body is target:
            return [(node, -1)]
        sub = _path(node.body, target)
        return [(node, -1)] + sub if sub is not None else None
    if isinstance(node, ir.Switch):
        for _labels, body in node.cases:
            for i, s in enumerate(body):
                if s is target:
                    return [(body, i)]
                sub = _path(s, target)
                if sub is not None:
                    return [(body, i)] + sub
        return None
    return None


def names_read_after(body: ir.Block | None, s: ir.Stmt, names: set[str] | frozenset[str]) -> set[str]:
    """The names among `names` whose value after statement `s` (in the kernel's `body`) may be read
    before every path assigns them again (all of `names` when `s` is not found or sits in a `switch`
    case). Inside a loop both continuations count: the loop's next iteration (its step, condition and
    whole body) and what follows the loop."""
    if body is None:
        return set(names)
    path = _path(body, s)
    if path is None or any(isinstance(owner, tuple) for owner, _i in path):
        return set(names)  # in a `switch` case (which may fall through to the next): not followed
    live = set()
    for name in names:
        verdict = None
        for owner, i in reversed(path):
            if isinstance(owner, (ir.For, ir.While)):
                again = _loop_again(owner, name)
                if again == USE:
                    verdict = USE
                    break
                continue  # assigned (or untouched) on the next iteration: the exit path decides
            if i < 0:
                continue  # an `if` branch: what follows the `if` is read at the level above
            verdict = _seq(owner.body[i + 1:], name)  # type: ignore[attr-defined]
            if verdict is not None:
                break
        if verdict == USE:
            live.add(name)
    return live


def _loop_again(loop: ir.For | ir.While, name: str) -> str | None:
    """What the next iteration of `loop` does first with `name`: its step, its condition, its body."""
    if isinstance(loop, ir.For):
        for r in (_expr(loop.step, name), _expr(loop.cond, name), _stmt(loop.body, name)):
            if r is not None:
                return r
        return None
    for r in (_expr(loop.cond, name), _stmt(loop.body, name)):
        if r is not None:
            return r
    return None
