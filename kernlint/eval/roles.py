"""The role of each integer runtime parameter, read from how the kernel uses it: extent, row pitch or stride.

A runtime value kernlint does not know is sampled as a size (thousands, eval/interp.py). That is right
for some values and wrong for others, and a warning must hold for every *plausible* value (issue 28),
where plausible follows from the value's use, never from its name:

- an **extent** is compared with something that varies (`i < n`, a loop bound) or divides an index
  (`i / n`, `i % n`): a size, sampled large as before;
- a **row pitch** multiplies a row index in an address beside a plain column index (`y * width + x`,
  `a[i * ld + k]`): it is at least as long as the rows it separates, so sampled large it is still a
  plausible value, and a verdict of "lanes a row apart" holds for every plausible value;
- a **stride** only scales a thread index inside addresses (`src[i * s00]`, `(char*)p + i * nb0`) and
  is never compared, never a loop bound: tensor code passes 1 (one element) for contiguous data, so
  1 is plausible and a verdict must hold there too (checks/coalescing.py re-evaluates at that value).

Extent wins over row pitch, row pitch over stride. Values set by the host (grid size, allocation) are
not read here: only the kernel body and the helpers it passes the value to (`roles`: an extent or a row
pitch there is one here). A value used only where this does not reach (a field of a method's receiver,
`m(0, i)` of an accessor returning `p[c * ld + r]`) has no role, and checks/coalescing.py treats it as it
treats a stride: 1 is plausible.

`fallback_regions` uses the roles for the second question of the issue: a branch whose condition pins a
stride or layout value (`s == 1`, `ld == n`, a flag parameter) is the code's own fast path, and the
other side is its deliberate slow path.
"""
from __future__ import annotations

from collections.abc import Iterator

from kernlint.ir import nodes as ir
from kernlint.base.frozen import frozen
from kernlint.base.memo import by_identities, by_identity

EXTENT = "extent"
PITCH = "row pitch"
STRIDE = "stride"
_RANK = {EXTENT: 3, PITCH: 2, STRIDE: 1}

_ORDER = ("<", "<=", ">", ">=")
_ASSIGN = ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=")
_EXPAND_DEPTH = 4  # locals expanded into their initialisers when an address is split into terms


@frozen
class Role:
    """What one parameter's use says it is, and the use that says so (for the finding's assumptions)."""

    name: str
    role: str  # EXTENT, PITCH or STRIDE
    line: int
    why: str  # "bounds `i`", "multiplies the row index `y` beside the column `x`", "scales `i`"

    def describe(self) -> str:
        """"`n` is an extent: bounds `i` at line 5"."""
        return f"`{self.name}` is {'an' if self.role == EXTENT else 'a'} {self.role}: {self.why} at line {self.line}"


_strip = ir.strip_casts


_SAMPLED_KINDS = ("param", "global", "constant")  # names the evaluator samples (a `__constant__` struct too)


def param_name(e: object) -> str | None:
    """The sampled name of a parameter or a field of a struct parameter (`n`, `args.s00`; a global
    `__constant__ Params d_common` the same way), else None."""
    e = _strip(e)
    if isinstance(e, ir.Ref) and e.kind in _SAMPLED_KINDS and e.ctype.kind in ("int", "bool"):
        return e.name
    if isinstance(e, ir.Member):
        base = _strip(e.base)
        if isinstance(base, ir.Ref) and base.kind in _SAMPLED_KINDS and e.ctype.kind in ("int", "bool"):
            return f"{base.name}.{e.field}"
    return None


def _text(e: object) -> str:
    """A short spelling of an expression for messages: names only (`y`, `i`, `blockIdx.x`)."""
    e = _strip(e)
    if isinstance(e, ir.Ref):
        return e.name
    if isinstance(e, ir.Member):
        return f"{_text(e.base)}.{e.field}"
    if isinstance(e, ir.Lit):
        return str(e.value)
    if isinstance(e, ir.Binary) and e.op in ("+", "-", "*", "/", "%"):
        return f"{_text(e.lhs)} {e.op} {_text(e.rhs)}"
    if isinstance(e, ir.Index):
        return f"{_text(e.base)}[{_text(e.index)}]"
    if isinstance(e, ir.Call):
        return f"{e.name}(...)"
    if isinstance(e, ir.Unary) and e.op == "*":
        return "a loaded value"
    return "..."


@frozen
class _Facts:
    """Per local name: the parameters its value depends on, whether it varies across the lanes of a
    warp (threadIdx.x), whether it varies at all (thread, block or loop), and its single initialiser."""

    params: dict[str, frozenset[str]]
    lane: frozenset[str]
    varying: frozenset[str]
    inits: dict[str, object]


def _assignments(body: ir.Stmt) -> Iterator[tuple[str, object | None]]:
    """(local, value) for every declaration and assignment; value None for `++`/`--`."""
    for n in ir.walk(body):
        if isinstance(n, ir.VarDecl) and n.init is not None:
            yield n.name, n.init
        elif isinstance(n, ir.Binary) and n.op in _ASSIGN:
            t = _strip(n.lhs)
            if isinstance(t, ir.Ref):
                yield t.name, n.rhs if n.op == "=" else ir.Binary(n.op[:-1], n.lhs, n.rhs, n.ctype, n.span)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = _strip(n.operand)
            if isinstance(t, ir.Ref):
                yield t.name, None


def _is_thread(e: object, axis: str | None) -> bool:
    if isinstance(e, ir.Member) and (axis is None or e.field == axis):
        base = _strip(e.base)
        return isinstance(base, ir.Ref) and base.name == "threadIdx"
    return False


def _is_block(e: object) -> bool:
    if isinstance(e, ir.Member):
        base = _strip(e.base)
        return isinstance(base, ir.Ref) and base.name in ("blockIdx", "threadIdx")
    return False


@by_identity
def _facts(fn: ir.Function) -> _Facts:
    assigns: dict[str, list[object | None]] = {}
    for name, value in _assignments(fn.body):  # type: ignore[arg-type]
        assigns.setdefault(name, []).append(value)
    params: dict[str, set[str]] = {k: set() for k in assigns}
    lane: set[str] = set()
    varying: set[str] = set()
    for _ in range(4):  # a fixed point over chains of locals (x = ...; i = x * 2; j = i + 1)
        changed = False
        for name, values in assigns.items():
            if len(values) > 1 or None in values:
                if name not in varying:
                    varying.add(name)  # a loop variable or a local updated in place
                    changed = True
            for v in values:
                if v is None:
                    continue
                for n in _value_nodes(v):
                    p = param_name(n)
                    if p is not None and p not in params[name]:
                        params[name].add(p)
                        changed = True
                    if isinstance(n, ir.Ref) and n.kind == "local" and n.name in params and n.name != name:
                        extra = params[n.name] - params[name]
                        if extra:
                            params[name] |= extra
                            changed = True
                        if n.name in lane and name not in lane:
                            lane.add(name)
                            changed = True
                        if n.name in varying and name not in varying:
                            varying.add(name)
                            changed = True
                    if _is_thread(n, "x") and name not in lane:
                        lane.add(name)
                        changed = True
                    if _is_block(n) and name not in varying:
                        varying.add(name)
                        changed = True
        if not changed:
            break
    # A local's declared value: the relation it states (`c = i + j * nx`) holds where it is declared,
    # even when a loop advances it later (`c += xy`); a name declared twice (two scopes) has none.
    decls: dict[str, list[object]] = {}
    for n in ir.walk(fn.body):
        if isinstance(n, ir.VarDecl) and n.init is not None:
            decls.setdefault(n.name, []).append(n.init)
    inits = {k: v[0] for k, v in decls.items() if len(v) == 1}
    return _Facts({k: frozenset(v) for k, v in params.items()}, frozenset(lane), frozenset(varying | lane), inits)


def _value_nodes(e: object) -> Iterator[object]:
    """The nodes under `e` whose values make up its value: not the subscripts of what it loads (a
    value read at `a[i / n]` does not scale with `n`)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, ir.Index) and not (isinstance(n, ir.Unary) and n.op == "*"):
            stack.extend(ir.children(n))


def _deps(e: object, f: _Facts) -> set[str]:
    """The parameters `e` depends on, through locals."""
    out: set[str] = set()
    for n in _value_nodes(e):
        p = param_name(n)
        if p is not None:
            out.add(p)
        elif isinstance(n, ir.Ref) and n.kind == "local":
            out |= f.params.get(n.name, frozenset())
    return out


def _lane_indexed(e: object, f: _Facts) -> bool:
    return any(_is_thread(n, "x") or (isinstance(n, ir.Ref) and n.kind == "local" and n.name in f.lane)
               for n in ir.walk(e))


def _varies(e: object, f: _Facts) -> bool:
    return any(_is_block(n) or (isinstance(n, ir.Ref) and n.kind == "local" and n.name in f.varying)
               for n in ir.walk(e))


def _terms(e: object, f: _Facts, depth: int = 0) -> list[object]:
    """The additive terms of an index, single-assignment locals expanded (`off = i * s; a[off + 1]`)."""
    e = _strip(e)
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        return _terms(e.lhs, f, depth) + _terms(e.rhs, f, depth)
    if isinstance(e, ir.Ref) and e.kind == "local" and depth < _EXPAND_DEPTH and e.name in f.inits \
            and f.params.get(e.name):
        # Only a local that holds a parameter can hide a pitch or a stride (`idx = y * width + x`);
        # others stay whole, so a message names `x`, not its initialiser.
        return _terms(f.inits[e.name], f, depth + 1)
    return [e]


def _factors(e: object, f: _Facts, depth: int = 0) -> list[object]:
    """The multiplicative factors of a term, single-assignment locals expanded."""
    e = _strip(e)
    if isinstance(e, ir.Binary) and e.op == "*":
        return _factors(e.lhs, f, depth) + _factors(e.rhs, f, depth)
    if isinstance(e, ir.Ref) and e.kind == "local" and depth < _EXPAND_DEPTH and e.name in f.inits:
        init = _strip(f.inits[e.name])
        if isinstance(init, ir.Binary) and init.op == "*" or param_name(init) is not None:
            return _factors(init, f, depth + 1)
    return [e]


def _lined(node: object) -> Iterator[tuple[object, int]]:
    """Every node under `node` with its line: its own, else that of the nearest enclosing node with one
    (the front end gives some expressions no span)."""
    stack: list[tuple[object, int]] = [(node, 0)]
    while stack:
        n, line = stack.pop()
        sp = getattr(n, "span", None)
        if isinstance(sp, ir.Span) and sp.line:
            line = sp.line
        yield n, line
        for ch in ir.children(n):
            stack.append((ch, line))


def _addresses(fn: ir.Function) -> Iterator[tuple[list[object], int]]:
    """The non-pointer terms of every global address the body spells: subscripts and pointer sums."""
    for n, line in _lined(fn.body):
        if isinstance(n, ir.Index):
            yield [n.index], line
        elif isinstance(n, ir.Binary) and n.op in ("+", "-") and (
                n.lhs.ctype.kind == "pointer" or n.rhs.ctype.kind == "pointer"):
            # `(char*)src + i0 * nb0 + i1 * nb1`: the offsets added to the pointer, at every level.
            yield [x for x in (n.lhs, n.rhs) if x.ctype.kind != "pointer"], line


def roles(fn: ir.Function, tu: ir.TranslationUnit | None = None) -> dict[str, Role]:
    """Each parameter (or field of a struct parameter) whose use gives it a role, with that use. With
    `tu`, the device functions the kernel calls are read too (to `HELPER_DEPTH` levels): a value passed
    to a helper that bounds a loop with it (`d_boxfilter_x(&id[y * w], ..., w, ...)`) is an extent."""
    return _roles(fn, tu, 0)


HELPER_DEPTH = 2  # levels of called helpers whose use of a passed value gives it a role


@by_identities
def _roles(fn: ir.Function, tu: ir.TranslationUnit | None, depth: int) -> dict[str, Role]:
    if fn.body is None:
        return {}
    f = _facts(fn)
    found: dict[str, Role] = {}

    direct: dict[str, bool] = {}

    def note(name: str, role: str, line: int, why: str, spelled: bool = True) -> None:
        # The strongest role; among uses of one role, one that spells the name (not through a local,
        # whose name may be reused in another scope), then the earliest.
        old = found.get(name)
        if old is None or _RANK[role] > _RANK[old.role] or (role == old.role and (
                (spelled, -line) > (direct[name], -old.line))):
            found[name] = Role(name, role, line, why)
            direct[name] = spelled

    for n, line in _lined(fn.body):
        if isinstance(n, ir.Binary) and n.op in _ORDER:
            for side, other in ((n.lhs, n.rhs), (n.rhs, n.lhs)):
                if not (_varies(other, f) or param_name(other) is not None or _deps(other, f)):
                    continue  # compared with a constant (`s > 1`): a pin, not a size
                spelled = {param_name(x) for x in _value_nodes(side)} - {None}
                there = {param_name(x) for x in _value_nodes(other)}
                # Through locals, a name reused in another scope can carry a parameter to both sides.
                for p in sorted((_deps(side, f) - _deps(other, f)) | (spelled - there)):
                    note(p, EXTENT, line, f"bounds `{_text(other)}`", p in spelled)
        elif isinstance(n, ir.Binary) and n.op in ("/", "%", "/=", "%="):
            if _varies(n.lhs, f):
                spelled = {param_name(x) for x in _value_nodes(n.rhs)}
                for p in sorted(_deps(n.rhs, f)):
                    note(p, EXTENT, line, f"divides `{_text(n.lhs)}`", p in spelled)
    for roots, line in _addresses(fn):
        terms = [t for r in roots for t in _terms(r, f)]
        plain = [t for t in terms if _varies(t, f) and not _deps(t, f)]
        for t in terms:
            factors = _factors(t, f)
            names = [param_name(x) for x in factors]
            for i, p in enumerate(names):
                if p is None:
                    continue
                rest = [x for j, x in enumerate(factors) if j != i]
                row = [x for x in rest if _varies(x, f)]
                if not row:
                    continue
                columns = sorted((c for c in plain if c is not t), key=lambda c: not _lane_indexed(c, f))
                if columns:
                    note(p, PITCH, line, f"multiplies the row index `{_text(row[0])}` beside the column "
                                         f"`{_text(columns[0])}`")
                elif any(_lane_indexed(x, f) for x in row):
                    note(p, STRIDE, line, f"only scales the thread index `{_text(row[0])}` in addresses")
    if tu is not None and depth < HELPER_DEPTH:
        from kernlint.eval.coverage import find_callee

        for n, line in _lined(fn.body):
            if not isinstance(n, ir.Call):
                continue
            callee = find_callee(tu, n)
            if callee is None or callee is fn:
                continue
            inner = _roles(callee, tu, depth + 1)
            for param, arg in zip(callee.params, n.args):
                r = inner.get(param.name)
                if r is None or r.role == STRIDE:
                    continue  # a helper's own parameters are not thread indexes: no stride evidence
                spelled = {param_name(x) for x in _value_nodes(arg)}
                for p in sorted(_deps(arg, f)):
                    note(p, r.role, line, f"is passed to `{callee.name}` as `{param.name}`, which "
                                          f"{r.why.replace('only ', '')} (line {r.line})", p in spelled)
    return found


def role_of(fn: ir.Function, name: str, tu: ir.TranslationUnit | None = None) -> Role | None:
    return roles(fn, tu).get(name)


def sampled_as(fn: ir.Function, name: str, tu: ir.TranslationUnit | None = None) -> str:
    """How a sampled parameter's values were chosen, for a finding's assumptions: "sampled as a size;
    `n` is an extent: bounds `i` at line 5"."""
    from kernlint.eval import samples

    if name in samples.iteration_parameters(fn):
        return "sampled small: an iteration count, it only bounds loops whose variables reach no address"
    if name in samples.shift_parameters(fn):
        return "sampled as the log2 of a size: it is a shift amount"
    if name in samples.divisor_parameters(fn):
        return ("sampled small: it divides another size parameter, and the quotient is the size the code uses "
                "(a quotient of two sampled sizes would be 1)")
    if any(p.name == name and p.ctype.kind == "bool" for p in fn.params):
        return "a flag, sampled true and false"
    role = role_of(fn, name, tu)
    if role is None:
        return "sampled as a size; no use in the kernel body shows its role (extent, row pitch or stride)"
    return f"sampled as a size; {role.describe()}"


@frozen
class Fallback:
    """A side of a branch that the code takes when its fast path's condition does not hold."""

    first: int  # lines of the fallback side
    last: int
    fast_line: int  # the fast path's first statement
    fast_last: int  # the fast path's last line
    cond: str  # the pinning condition as the fast path sees it: "stride == 1"
    # A flag parameter (`if (contiguous)`): which side is fast is not in the condition, so each side is a
    # candidate, and only one whose other side holds no finding of the same rule counts (checks/fallback.py).
    flag: bool = False


def _pin(cond: object, fn: ir.Function, tu: ir.TranslationUnit | None) -> tuple[str, bool] | None:
    """(the pinning condition, whether the `then` side is the fast path) for a condition that pins a
    stride or layout value: `s == 1` / `s != 1` with `s` a stride or row pitch, `ld == n` with one of
    them a pitch or stride, a flag parameter (`if (contiguous)`, `if (!contiguous)`)."""
    c = _strip(cond)
    rs = roles(fn, tu)
    if isinstance(c, ir.Binary) and c.op in ("==", "!="):
        names = [param_name(x) for x in (c.lhs, c.rhs)]
        lits = [_constant(x) for x in (c.lhs, c.rhs)]  # `s == 1`, `nb0 == sizeof(float)`
        layout = [n for n in names if n is not None and n in rs and rs[n].role in (STRIDE, PITCH)]
        pinned = layout and (any(lits) or all(n is not None for n in names))
        if not pinned:
            return None
        text = f"{_text(c.lhs)} == {_text(c.rhs)}"
        return text, c.op == "=="
    flag = c.operand if isinstance(c, ir.Unary) and c.op == "!" else c
    name = param_name(flag)
    if name is not None and _strip(flag).ctype.kind == "bool":
        return name, True
    return None


def _constant(e: object) -> bool:
    """Whether `e` names nothing that varies (literals, sizeof, casts and arithmetic of them)."""
    return not any(isinstance(n, (ir.Ref, ir.Member, ir.Index, ir.Call)) for n in ir.walk(e))


def _span(s: object) -> tuple[int, int]:
    sp = s.span  # type: ignore[attr-defined]
    return sp.line, max(sp.end_line, sp.line)


def _first_line(s: object) -> int:
    """The line of the first statement of `s` (a block's first statement, not its brace)."""
    while isinstance(s, ir.Block) and s.body:
        s = s.body[0]
    return _span(s)[0]


@by_identities
def fallback_regions(fn: ir.Function, tu: ir.TranslationUnit | None = None) -> tuple[Fallback, ...]:
    """The slow sides of branches that pin a stride or layout value (`if (s == 1) fast else slow`), and
    the rest of a block after `if (s == 1) { fast; return; }`. A flag parameter's fast side is not known
    from the condition alone: both sides are returned, each naming the other (`Fallback.flag`)."""
    if fn.body is None:
        return ()
    out: list[Fallback] = []
    for s in ir.iter_statements(fn.body):
        if isinstance(s, ir.Block):
            for i, st in enumerate(s.body):
                if isinstance(st, ir.If) and st.other is None and _ends_in_return(st.then):
                    pin = _pin(st.cond, fn, tu)
                    rest = s.body[i + 1:]
                    if pin is not None and pin[1] and rest and "=" in pin[0]:
                        out.append(Fallback(_span(rest[0])[0], _span(rest[-1])[1], _first_line(st.then), _span(st.then)[1], pin[0]))
        if not isinstance(s, ir.If) or s.other is None:
            continue
        pin = _pin(s.cond, fn, tu)
        if pin is None:
            continue
        text, then_fast = pin
        fast, slow = (s.then, s.other) if then_fast else (s.other, s.then)
        is_flag = "=" not in text
        lo, hi = _span(slow)
        out.append(Fallback(lo, hi, _first_line(fast), _span(fast)[1], text, is_flag))
        if is_flag:
            lo, hi = _span(fast)
            out.append(Fallback(lo, hi, _first_line(slow), _span(slow)[1], f"!{text}", True))
    return tuple(out)


def _ends_in_return(s: object) -> bool:
    if isinstance(s, ir.Return):
        return True
    return isinstance(s, ir.Block) and bool(s.body) and isinstance(s.body[-1], ir.Return)
