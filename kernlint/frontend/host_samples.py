"""Values the host code gives a launch's scalar arguments through the loops and conditions around it.

`for (size = 2 * L; size <= N; size <<= 1) for (stride = size / 2; stride > 0; stride >>= 1)
    if (stride >= L) merge<<<g, b>>>(d, size, stride);` passes pairs (size, stride) with
stride < size; sampling the two kernel parameters independently as large sizes breaks that
relation. Here the enclosing `for` loops are enumerated (bounded), enclosing `if` conditions filter
the combinations (or bound a variable the code leaves unknown: `if (arrayLength <= 1024)`), locals
computed from them are folded, and two combinations become joint samples of the arguments that
depend on them: value k of every argument comes from the same host iteration, so relations between
parameters hold (launch.py evaluates one shape per picked iteration, and the worst is reported).
Arguments that depend on values nothing bounds get none (None).
"""
from __future__ import annotations

from collections.abc import Callable

from clang import cindex as ci

K = ci.CursorKind
MAX_COMBINATIONS = 4096
DEFAULT_SIZE = 4096  # the interpreter's first size sample, for variables only an `if` bounds
UNBOUNDED_ITERATIONS = 2  # iterations taken from a host loop whose bound is unknown


class _Unknown(Exception):
    pass


def _exprs(c: ci.Cursor) -> list[ci.Cursor]:
    return [k for k in c.get_children() if k.kind.is_expression()]


class _Folder:
    """Integer folding of host expressions under an environment of loop-variable values."""

    def __init__(self, inits: dict[str, ci.Cursor], binop: Callable[[ci.Cursor], str | None],
                 unop: Callable[[ci.Cursor], str | None], evaluate: Callable[[ci.Cursor], object]) -> None:
        self.inits = inits
        self.binop = binop
        self.unop = unop
        self.evaluate = evaluate
        self.bounded: dict[str, int] = {}  # unknown variables an enclosing `if` bounds: the value to use
        # Per cursor (by identity, the cursor kept alive with its entry): its expression children and its
        # constant value. A host loop is enumerated up to MAX_COMBINATIONS times, and each pass folds the
        # same condition and step: read through libclang once, not once per iteration.
        self._kids: dict[int, tuple[ci.Cursor, list[ci.Cursor]]] = {}
        self._values: dict[int, tuple[ci.Cursor, object]] = {}
        self._ops: dict[int, tuple[ci.Cursor, str | None]] = {}
        self._spellings: dict[int, tuple[ci.Cursor, str]] = {}
        self._compiled: dict[tuple[int, int], tuple[ci.Cursor, Callable[[dict[str, int]], int]]] = {}

    def exprs(self, c: ci.Cursor) -> list[ci.Cursor]:
        """`_exprs(c)`, memoized."""
        hit = self._kids.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        kids = _exprs(c)
        self._kids[id(c)] = (c, kids)
        return kids

    def op(self, c: ci.Cursor, unary: bool = False) -> str | None:
        """`binop(c)` (or `unop(c)`), memoized."""
        hit = self._ops.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        o = self.unop(c) if unary else self.binop(c)
        self._ops[id(c)] = (c, o)
        return o

    def value(self, c: ci.Cursor) -> object:
        """`evaluate(c)`, memoized."""
        hit = self._values.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        v = self.evaluate(c)
        self._values[id(c)] = (c, v)
        return v

    def spelling(self, c: ci.Cursor) -> str:
        """`c.spelling`, memoized (asked once per host iteration by `_step`)."""
        hit = self._spellings.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        sp = c.spelling
        self._spellings[id(c)] = (c, sp)
        return sp

    def fold(self, c: ci.Cursor, env: dict[str, int], depth: int = 0) -> int:
        """The integer value of `c` under `env`; raises _Unknown. `c` is read through libclang once
        (`compiled`): each host iteration runs the closure it became."""
        return self.compiled(c, depth)(env)

    def compiled(self, c: ci.Cursor, depth: int) -> Callable[[dict[str, int]], int]:
        """`c` at nesting `depth` as a function of the environment (memoized per cursor and depth)."""
        key = (id(c), depth)
        hit = self._compiled.get(key)
        if hit is not None and hit[0] is c:
            return hit[1]
        f = self._compile(c, depth)
        self._compiled[key] = (c, f)
        return f

    def _compile(self, c: ci.Cursor, depth: int) -> Callable[[dict[str, int]], int]:
        if depth > 24:
            return _raise
        kind = c.kind
        if kind == K.DECL_REF_EXPR:
            name = c.spelling
            inits, bounded = self.inits, self.bounded

            def ref(env: dict[str, int]) -> int:
                if name in env:
                    return env[name]
                if name in inits:
                    return self.compiled(inits[name], depth + 1)(env)
                v = self.value(c)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return int(v)
                if name in bounded:
                    return bounded[name]
                raise _Unknown
            return ref
        if kind in (K.INTEGER_LITERAL, K.CHARACTER_LITERAL):
            v = self.value(c)
            if isinstance(v, (int, float)):
                n = int(v)
                return lambda env: n
            return _raise
        kids = self.exprs(c)
        if kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
                    K.CXX_FUNCTIONAL_CAST_EXPR) and kids:
            return self.compiled(kids[-1], depth + 1)
        if kind == K.CONDITIONAL_OPERATOR and len(kids) == 3:  # MIN/MAX macros
            test, yes, no = (self.compiled(k, depth + 1) for k in kids)
            return lambda env: yes(env) if test(env) else no(env)
        if kind == K.UNARY_OPERATOR and len(kids) == 1:
            op = self.op(c, unary=True)
            inner = self.compiled(kids[0], depth + 1)
            if op == "-":
                return lambda env: -inner(env)
            if op == "!":
                return lambda env: int(not inner(env))
            if op == "+":
                return inner
            return _raise  # (another operator: unknown whatever its operand)
        if kind == K.CALL_EXPR and c.spelling in ("min", "max", "std::min", "std::max") and len(kids) >= 3:
            a, b = self.compiled(kids[-2], depth + 1), self.compiled(kids[-1], depth + 1)
            pick = min if c.spelling.endswith("min") else max
            return lambda env: pick(a(env), b(env))
        if kind == K.BINARY_OPERATOR and len(kids) == 2:
            fn = _BINARY.get(self.op(c) or "")
            if fn is None:
                return _raise  # (an operator not folded: unknown whatever its operands)
            a, b = self.compiled(kids[0], depth + 1), self.compiled(kids[1], depth + 1)

            def binary(env: dict[str, int]) -> int:
                x, y = a(env), b(env)
                try:
                    return fn(x, y)
                except (ZeroDivisionError, ValueError, OverflowError):
                    raise _Unknown from None
            return binary
        v = self.value(c)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            n = int(v)
            return lambda env: n
        return _raise


def _raise(env: dict[str, int]) -> int:
    raise _Unknown


# The host operators folded, on Python ints (`/` truncates as C does).
_BINARY: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: int(a / b), "%": lambda a, b: a % b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a and b)), "||": lambda a, b: int(bool(a or b)),
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


def _contains(outer: ci.Cursor, inner: ci.Cursor) -> bool:
    return outer.extent.start.offset <= inner.extent.start.offset and inner.extent.end.offset <= outer.extent.end.offset


def _loop_parts(loop: ci.Cursor, binop: Callable[[ci.Cursor], str | None]
                ) -> tuple[str, ci.Cursor, ci.Cursor, ci.Cursor] | None:
    """(variable, initial value, condition, step) of `for (v = a; cond; step)`; None for other shapes."""
    kids = list(loop.get_children())
    if len(kids) != 4:
        return None
    init, cond, step = kids[0], kids[1], kids[2]
    var = start = None
    if init.kind == K.DECL_STMT:
        decls = [k for k in init.get_children() if k.kind == K.VAR_DECL]
        if len(decls) == 1:
            ex = _exprs(decls[0])
            if ex:
                var, start = decls[0].spelling, ex[-1]
    elif init.kind == K.BINARY_OPERATOR and binop(init) == "=":
        ex = _exprs(init)
        if len(ex) == 2 and ex[0].kind == K.DECL_REF_EXPR:
            var, start = ex[0].spelling, ex[1]
    if var is None or start is None:
        return None
    return var, start, cond, step


def _step(v: int, step: ci.Cursor, var: str, folder: _Folder, env: dict[str, int],
          binop: Callable[[ci.Cursor], str | None], unop: Callable[[ci.Cursor], str | None]) -> int:
    kids = folder.exprs(step)
    if step.kind == K.UNARY_OPERATOR and kids and folder.spelling(kids[0]) == var:
        op = folder.op(step, unary=True)
        if op in ("pre++", "post++"):
            return v + 1
        if op in ("pre--", "post--"):
            return v - 1
    if step.kind == K.COMPOUND_ASSIGNMENT_OPERATOR and len(kids) == 2 and folder.spelling(kids[0]) == var:
        op = folder.op(step)
        d = folder.fold(kids[1], env)
        table = {"+=": v + d, "-=": v - d, "*=": v * d, "<<=": v << d if 0 <= d < 62 else None,
                 ">>=": v >> d if 0 <= d < 62 else None, "/=": int(v / d) if d else None}
        r = table.get(op or "")
        if r is not None:
            return r
    if step.kind == K.BINARY_OPERATOR and folder.op(step) == "=" and len(kids) == 2 and folder.spelling(kids[0]) == var:
        return folder.fold(kids[1], dict(env, **{var: v}))
    raise _Unknown


def _bound_from_if(cond: ci.Cursor, taken: bool, folder: _Folder, binop: Callable[[ci.Cursor], str | None]) -> None:
    """`if (v <= C)` around the launch, with `v` otherwise unknown: use C (or a size above a lower bound)."""
    kids = _exprs(cond)
    while cond.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR) and len(kids) == 1:
        cond, kids = kids[0], _exprs(kids[0])
    if cond.kind != K.BINARY_OPERATOR or len(kids) != 2:
        return
    op = binop(cond)
    lhs = kids[0]
    while lhs.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR) and _exprs(lhs):
        lhs = _exprs(lhs)[-1]
    if lhs.kind != K.DECL_REF_EXPR:
        return
    try:
        folder.fold(lhs, {})
        return  # already known
    except _Unknown:
        pass
    try:
        c = folder.fold(kids[1], {})
    except _Unknown:
        return
    if not taken:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}.get(op or "")
    value = {"<": c - 1, "<=": c, "==": c, ">": max(DEFAULT_SIZE, c + 1), ">=": max(DEFAULT_SIZE, c)}.get(op or "")
    if value is not None and value > 0:
        folder.bounded[lhs.spelling] = value


def launch_arg_samples(launch: ci.Cursor, ancestors: list[ci.Cursor], args: list[ci.Cursor],
                       inits: dict[str, ci.Cursor], binop: Callable[[ci.Cursor], str | None],
                       unop: Callable[[ci.Cursor], str | None], evaluate: Callable[[ci.Cursor], object],
                       samples: int = 2) -> tuple[tuple[int, ...] | None, ...]:
    """Joint samples (one tuple of `samples` values per argument, or None) from the host code around a launch."""
    folder = _Folder(inits, binop, unop, evaluate)
    # Conditions first: they may bound variables the loops use.
    for anc in ancestors:
        if anc.kind == K.IF_STMT:
            kids = list(anc.get_children())
            if len(kids) >= 2:
                _bound_from_if(kids[0], _contains(kids[1], launch), folder, binop)
    combos: list[dict[str, int]] = [{}]
    try:
        for anc in ancestors:
            if anc.kind == K.FOR_STMT:
                parts = _loop_parts(anc, binop)
                if parts is None:
                    continue
                var, start, cond, step = parts
                nxt: list[dict[str, int]] = []
                for env in combos:
                    v = folder.fold(start, env)
                    for k in range(MAX_COMBINATIONS):
                        e = dict(env, **{var: v})
                        try:
                            go = folder.fold(cond, e)
                        except _Unknown:
                            # A bound the host code does not fix (`i < matrix_dim - 16`): its first
                            # iterations still show the values the loop gives (multiples of its step).
                            go = k < UNBOUNDED_ITERATIONS
                        if not go:
                            break
                        nxt.append(e)
                        if len(nxt) > MAX_COMBINATIONS:
                            raise _Unknown
                        v = _step(v, step, var, folder, e, binop, unop)
                combos = nxt
            elif anc.kind == K.IF_STMT:
                kids = list(anc.get_children())
                if len(kids) < 2:
                    continue
                taken = _contains(kids[1], launch)
                kept = []
                for env in combos:
                    try:
                        if bool(folder.fold(kids[0], env)) == taken:
                            kept.append(env)
                    except _Unknown:
                        kept.append(env)  # a condition on data: it does not narrow
                combos = kept
    except _Unknown:
        return tuple(None for _ in args)
    if not combos:
        return tuple(None for _ in args)
    picks = [combos[0], combos[-1]] if samples == 2 else [combos[i * (len(combos) - 1) // max(samples - 1, 1)]
                                                          for i in range(samples)]
    out: list[tuple[int, ...] | None] = []
    for a in args:
        try:
            vals = tuple(folder.fold(a, env) for env in picks)
        except _Unknown:
            out.append(None)
            continue
        out.append(vals)
    return tuple(out)
