"""Which template parameters of a kernel can change what an evaluation of it finds (issue 31, item 2).

A kernel template launched with many bindings asks, per binding, the questions the evaluator answers:
which addresses each lane touches, which lanes take each branch, how often each loop runs, how big
each array and type is. A non-type parameter that reaches none of these (`template <int S, int U>`
where `U` only scales the value a lane stores: `o[i] = a[i * S] * U`) gives every binding that differs
only in it the same answers, so those bindings are evaluated once (`same_questions`, called by engine/lint.py)
and the finding says which bindings it stands for.

`deciding_params` follows how the kernel *uses* each parameter, never its name: a value is tainted by
the parameter where it is computed from it (through locals, struct members, memory, calls into helpers
and the helpers' template arguments), and the parameter decides when a tainted value reaches an
address (an index, a pointer, a dereference), a branch or loop condition, a `?:`, `&&` or `||`, a
`switch`, a type or array size, `__launch_bounds__`, or anything kernlint cannot follow (a call
without a body, an expression it did not lower, a line of the source where the parameter is written
but the lowered code does not show it). Everything unknown counts as deciding: a parameter is set
aside only when every use of it is seen to be a value.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.ir.includes import read_header
from kernlint.eval.coverage import find_callee

if TYPE_CHECKING:
    from kernlint.project.launch import LaunchShape

# Helpers followed below a kernel (a deeper chain makes its parameters deciding).
MAX_DEPTH = 8
# Passes over a function until its tainted names stop growing (loops carry taint backwards).
MAX_PASSES = 8

_ASSIGN_OPS = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="))
_VAR_KINDS = frozenset(("local", "param"))


class _Decides(Exception):
    """A tainted value reached something that can change the evaluation."""


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


def _function_lines(fn: ir.Function, tu: ir.TranslationUnit, main_lines: tuple[str, ...]) -> list[str] | None:
    """The source lines `fn.span` covers (blanked comments and strings, its `template <...>` header
    blanked too), or None when the file cannot be read."""
    from kernlint.frontend.instantiate import matching_close
    from kernlint.project.scan import blank

    path = fn.key.rpartition("@")[2].rsplit(":", 1)[0] if "@" in fn.key else tu.path
    if path == tu.path and main_lines:
        lines = list(main_lines)
    else:
        got = read_header(path)
        if got is None:
            return None
        lines = got[0].split("\n")
    first, last = fn.span.line, fn.span.end_line or fn.span.line
    if not 1 <= first <= last <= len(lines):
        return None
    text = blank("\n".join(lines[first - 1:last]))
    m = re.search(r"\btemplate\s*<", text)
    if m is not None:
        end = matching_close(text, m.end() - 1, "<", ">")
        if end < 0:
            return None
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():end + 1]) + text[end + 1:]
    return text.split("\n")


def _type_mentions(t: ir.CType | None, word: re.Pattern[str], seen: set[int]) -> bool:
    while t is not None and id(t) not in seen:
        seen.add(id(t))
        if t.name and word.search(t.name):
            return True
        if any(_type_mentions(f.ctype, word, seen) for f in t.fields):
            return True
        t = t.pointee
    return False


_STMT_TYPES = (ir.VarDecl, ir.ExprStmt, ir.Block, ir.If, ir.For, ir.While, ir.Switch, ir.Return, ir.Break,
               ir.Continue, ir.OpaqueStmt)


def _own_mentions(s: object, name: str, word: re.Pattern[str]) -> int:
    """Mentions of the template parameter `name` in the expressions of statement `s` (not in the
    statements nested in it): references, and words of a callee's template arguments."""
    count = 0
    stack = [c for c in ir.children(s) if not isinstance(c, _STMT_TYPES)]
    while stack:
        n = stack.pop()
        if type(n) is ir.Ref and n.kind == "template" and n.name == name:
            count += 1
        elif type(n) is ir.Call:
            count += sum(len(word.findall(a)) for a in n.template_args)
        stack.extend(c for c in ir.children(n) if not isinstance(c, _STMT_TYPES))
    return count


def _seen_everywhere(fn: ir.Function, name: str, lines: list[str]) -> bool:
    """Whether the lowered code of `fn` shows every place its source spells `name`: each statement
    (its own text, less the statements nested in it) has at least as many mentions of it in its
    lowered expressions as its text has words `name`. A use the lowering dropped (a `#pragma`, an
    attribute, a construct kernlint does not lower) would otherwise go unseen."""
    word = _word(name)
    first = fn.span.line
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)

    def offset(line: int, column: int) -> int:
        i = line - first
        return starts[i] + max(column - 1, 0) if 0 <= i < len(lines) else -1

    text = "\n".join(lines)
    places = [m.start() for m in word.finditer(text)]
    if not places:
        return True
    # Each statement's character range; a place belongs to the innermost statement holding it.
    ranges: list[tuple[int, int, object]] = []
    for st in ir.iter_statements(fn.body):
        sp = st.span  # type: ignore[union-attr]
        a, b = offset(sp.line, sp.column), offset(sp.end_line or sp.line, sp.end_column or 10**6)
        if a < 0 or b < 0:
            return False
        ranges.append((a, b, st))
    owner: dict[int, int] = {}
    for pos in places:
        inner = [(b - a, i) for i, (a, b, _st) in enumerate(ranges) if a <= pos < b]
        if not inner:
            return False  # (the signature, a default argument, an attribute: not lowered as a use)
        i = min(inner)[1]
        owner[i] = owner.get(i, 0) + 1
    return all(_own_mentions(ranges[i][2], name, word) >= k for i, k in owner.items())


class _Taint:
    """One parameter's taint over a kernel and the helpers it calls."""

    def __init__(self, tu: ir.TranslationUnit, main_lines: tuple[str, ...]) -> None:
        self.tu = tu
        self.main_lines = main_lines
        self.memory = False  # a tainted value was stored to memory: every later load may return it
        self.stack: list[str] = []
        self.memo: dict[tuple[object, ...], bool] = {}
        self.free: dict[str, set[str]] = {}

    # --- functions -------------------------------------------------------------------------------

    def function(self, fn: ir.Function, names: set[str], tparams: frozenset[str], depth: int) -> bool:
        """Walk `fn` with `names` (variables) and `tparams` (its template parameters) tainted until
        nothing grows; whether a value it returns is tainted. Raises _Decides."""
        if fn.body is None or depth > MAX_DEPTH or fn.key in self.stack:
            raise _Decides
        if fn.parse_errors or any(isinstance(n, (ir.Opaque, ir.OpaqueStmt)) for n in ir.walk(fn.body)):
            raise _Decides  # (code it did not lower may use a tainted value any way)
        words = {t: _word(t) for t in tparams}
        for p in fn.params:
            if any(_type_mentions(p.ctype, w, set()) for w in words.values()):
                raise _Decides
        if tparams:
            lines = _function_lines(fn, self.tu, self.main_lines)
            if lines is None:
                raise _Decides
            for t, w in words.items():
                if fn.launch_bounds and any(w.search(b) for b in fn.launch_bounds):
                    raise _Decides
                if not _seen_everywhere(fn, t, lines):
                    raise _Decides
                if any(_type_mentions(getattr(n, "ctype", None), w, set())
                       or (isinstance(n, ir.SizeOf) and _type_mentions(n.of, w, set()))
                       or (type(n) is ir.Ref and n.kind == "unknown" and w.search(n.name))
                       for n in ir.walk(fn.body)):
                    raise _Decides
        self.stack.append(fn.key)
        try:
            ctx = _Frame(set(names), tparams, depth)
            for _ in range(MAX_PASSES):
                before = (len(ctx.names), self.memory)
                self.stmt(fn.body, ctx)
                if (len(ctx.names), self.memory) == before:
                    return ctx.returns
            raise _Decides
        finally:
            self.stack.pop()

    # --- statements ------------------------------------------------------------------------------

    def stmt(self, s: object, ctx: "_Frame") -> None:
        if s is None:
            return
        t = type(s)
        if t is ir.Block:
            for x in s.body:  # type: ignore[attr-defined]
                self.stmt(x, ctx)
        elif t is ir.ExprStmt:
            self.expr(s.expr, ctx)  # type: ignore[attr-defined]
        elif t is ir.VarDecl:
            if s.init is not None and self.expr(s.init, ctx):  # type: ignore[attr-defined]
                ctx.names.add(s.name)  # type: ignore[attr-defined]
        elif t is ir.If:
            self.condition(s.cond, ctx)  # type: ignore[attr-defined]
            self.stmt(s.then, ctx)  # type: ignore[attr-defined]
            self.stmt(s.other, ctx)  # type: ignore[attr-defined]
        elif t is ir.For:
            self.stmt(s.init, ctx)  # type: ignore[attr-defined]
            if s.cond is not None:  # type: ignore[attr-defined]
                self.condition(s.cond, ctx)  # type: ignore[attr-defined]
            self.stmt(s.body, ctx)  # type: ignore[attr-defined]
            if s.step is not None:  # type: ignore[attr-defined]
                self.expr(s.step, ctx)  # type: ignore[attr-defined]
        elif t is ir.While:
            self.condition(s.cond, ctx)  # type: ignore[attr-defined]
            self.stmt(s.body, ctx)  # type: ignore[attr-defined]
        elif t is ir.Switch:
            self.condition(s.cond, ctx)  # type: ignore[attr-defined]
            for labels, body in s.cases:  # type: ignore[attr-defined]
                for lab in labels:
                    self.condition(lab, ctx)
                for x in body:
                    self.stmt(x, ctx)
        elif t is ir.Return:
            if s.value is not None and self.expr(s.value, ctx):  # type: ignore[attr-defined]
                ctx.returns = True
        elif t in (ir.Break, ir.Continue):
            return
        else:
            raise _Decides

    def condition(self, e: ir.Expr, ctx: "_Frame") -> None:
        if self.expr(e, ctx):
            raise _Decides

    # --- expressions -----------------------------------------------------------------------------

    def expr(self, e: object, ctx: "_Frame") -> bool:
        """Whether the value of `e` is tainted; raises _Decides where a tainted value decides."""
        t = type(e)
        if t is ir.Lit or t is ir.SizeOf:
            return False
        if t is ir.Ref:
            if e.kind == "template":  # type: ignore[attr-defined]
                return e.name in ctx.tparams  # type: ignore[attr-defined]
            if e.kind in _VAR_KINDS:  # type: ignore[attr-defined]
                return e.name in ctx.names  # type: ignore[attr-defined]
            if e.kind in ("builtin", "function"):  # type: ignore[attr-defined]
                return False
            return self.memory  # a global, shared or unknown name: memory
        if t is ir.Cast:
            return self.expr(e.operand, ctx)  # type: ignore[attr-defined]
        if t is ir.Index:
            if self.expr(e.base, ctx) or self.expr(e.index, ctx):  # type: ignore[attr-defined]
                raise _Decides
            return self.memory
        if t is ir.Member:
            if self.expr(e.base, ctx):  # type: ignore[attr-defined]
                if e.arrow:  # type: ignore[attr-defined]
                    raise _Decides
                return True
            return self.memory if e.arrow else False  # type: ignore[attr-defined]
        if t is ir.Unary:
            op = e.op  # type: ignore[attr-defined]
            if op == "*":
                if self.expr(e.operand, ctx):  # type: ignore[attr-defined]
                    raise _Decides
                return self.memory
            if op == "&":
                inner = e.operand  # type: ignore[attr-defined]
                if type(inner) is ir.Index or (type(inner) is ir.Member and inner.arrow):
                    self.expr(inner, ctx)  # (its address must not be tainted; the address itself is not)
                    return False
                raise _Decides  # a variable's address: written through a pointer this walk does not follow
            return self.expr(e.operand, ctx)  # type: ignore[attr-defined]
        if t is ir.Binary:
            op = e.op  # type: ignore[attr-defined]
            if op in _ASSIGN_OPS:
                value = self.expr(e.rhs, ctx)  # type: ignore[attr-defined]
                if op != "=":
                    value = self.expr(e.lhs, ctx) or value  # type: ignore[attr-defined]
                self.store(e.lhs, value, ctx)  # type: ignore[attr-defined]
                return value
            if op in ("&&", "||"):
                if self.expr(e.lhs, ctx) or self.expr(e.rhs, ctx):  # type: ignore[attr-defined]
                    raise _Decides  # (the right side runs for some lanes only)
                return False
            a = self.expr(e.lhs, ctx)  # type: ignore[attr-defined]
            b = self.expr(e.rhs, ctx)  # type: ignore[attr-defined]
            return a or b
        if t is ir.Cond:
            self.condition(e.cond, ctx)  # type: ignore[attr-defined]
            a = self.expr(e.then, ctx)  # type: ignore[attr-defined]
            b = self.expr(e.other, ctx)  # type: ignore[attr-defined]
            return a or b
        if t is ir.InitList:
            return any([self.expr(x, ctx) for x in e.items])  # type: ignore[attr-defined]
        if t is ir.Call:
            return self.call(e, ctx)  # type: ignore[arg-type]
        raise _Decides  # Opaque, or a node this walk does not know

    def store(self, lhs: ir.Expr, value: bool, ctx: "_Frame") -> None:
        """An assignment of a (tainted or not) value to `lhs`."""
        while type(lhs) is ir.Cast:
            lhs = lhs.operand  # type: ignore[attr-defined]
        t = type(lhs)
        if t is ir.Ref and lhs.kind in _VAR_KINDS:  # type: ignore[attr-defined]
            if value and lhs.kind == "param" and lhs.ctype.kind == "reference":  # type: ignore[attr-defined]
                raise _Decides  # (the caller's variable: written through the reference)
            if value and lhs.name not in ctx.names:  # type: ignore[attr-defined]
                ctx.names.add(lhs.name)  # type: ignore[attr-defined]
            return
        if t is ir.Member and not lhs.arrow:  # type: ignore[attr-defined]
            base = lhs.base  # type: ignore[attr-defined]
            while type(base) is ir.Cast:
                base = base.operand
            if type(base) is ir.Ref and base.kind in _VAR_KINDS:
                if value and base.kind == "param" and base.ctype.kind == "reference":
                    raise _Decides
                if value:
                    ctx.names.add(base.name)
                return
        # Memory (an element, a field through a pointer, a global, shared or unknown name): its address
        # must not be tainted, and a tainted value makes every load tainted.
        self.expr(lhs, ctx)
        if value:
            self.memory = True

    def call(self, e: ir.Call, ctx: "_Frame") -> bool:
        args = [self.expr(a, ctx) for a in e.args]
        receiver = self.expr(e.receiver, ctx) if e.receiver is not None else False
        words = [w for w in ctx.tparams | frozenset(ctx.names)
                 if any(_word(w).search(a) for a in e.template_args)]
        tainted_in = any(args) or receiver or bool(words)
        if e.receiver is not None or e.via:
            # A method (its object's fields) or a call through a pointer: followed only when nothing
            # tainted reaches it, memory included (its body may load what was stored).
            if tainted_in or self.memory:
                raise _Decides
            return False
        callee = find_callee(self.tu, e)
        if callee is None:
            if tainted_in:
                raise _Decides  # (no body: what it does with the value is unknown)
            if self.memory and (self.tu.functions.named(e.name) or self.tu.functions.methods_spelled(e.name)):
                # A function of the file this walk cannot pick (overloads of one arity): the evaluation of
                # an instance may inline one, which may load what was stored and use it as an address.
                raise _Decides
            return self.memory  # (an intrinsic without a body; a load such as `__ldg` returns what memory holds)
        if not tainted_in and not self.memory and not (ctx.names and self._free_names(callee) & ctx.names):
            return False
        tparams = set()
        for i, a in enumerate(e.template_args):
            if any(_word(w).search(a) for w in words):
                if i >= len(callee.template_params) or callee.template_params[i].is_type:
                    raise _Decides
                tparams.add(callee.template_params[i].name)
        names = {p.name for p, tainted in zip(callee.params, args) if tainted}
        # A helper's free names (a lambda's captures) are the caller's: tainted as there.
        names |= self._free_names(callee) & ctx.names
        key = (callee.key, frozenset(names), frozenset(tparams), self.memory)
        if key not in self.memo:
            self.memo[key] = self.function(callee, names, frozenset(tparams), ctx.depth + 1)
        return self.memo[key]

    def _free_names(self, fn: ir.Function) -> set[str]:
        """The variable names `fn` reads without declaring them (a lambda's captures)."""
        hit = self.free.get(fn.key)
        if hit is None:
            declared = {p.name for p in fn.params} | {n.name for n in ir.walk(fn.body) if type(n) is ir.VarDecl}
            hit = self.free[fn.key] = {n.name for n in ir.walk(fn.body)
                                       if type(n) is ir.Ref and n.kind in _VAR_KINDS and n.name not in declared}
        return hit


class _Frame:
    __slots__ = ("names", "tparams", "depth", "returns")

    def __init__(self, names: set[str], tparams: frozenset[str], depth: int) -> None:
        self.names = names
        self.tparams = tparams
        self.depth = depth
        self.returns = False


def deciding_params(fn: ir.Function, tu: ir.TranslationUnit, source_lines: tuple[str, ...] = ()) -> frozenset[str]:
    """The template parameters of `fn` whose bound values can change what evaluating it finds: every
    type parameter, and each non-type one that reaches an address, a branch, a size or something
    kernlint cannot follow (the module's docstring). `source_lines`: the lines of `tu.path`."""
    out = set()
    for p in fn.template_params:
        if p.is_type:
            out.add(p.name)
            continue
        taint = _Taint(tu, source_lines)
        try:
            taint.function(fn, set(), frozenset([p.name]), 0)
        except (_Decides, RecursionError):
            out.add(p.name)
        except Exception:  # noqa: BLE001 - a question this walk cannot answer: the parameter decides
            out.add(p.name)
    return frozenset(out)


_INT_LITERAL = lazy_compile(r"[-+]?\s*(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*")
# Bindings a covering evaluation lists by value in its assumption line; the rest are counted.
MAX_LISTED = 3


def same_questions(fn: ir.Function, tu: ir.TranslationUnit, shapes: list["LaunchShape"],
                   source_lines: tuple[str, ...] = ()) -> tuple[list["LaunchShape"], dict[tuple[tuple[str, str], ...], int]]:
    """`shapes` less those that ask the same questions as an earlier one: same block, grid, arguments
    and every deciding parameter (`deciding_params`), differing only in non-type parameters that decide
    nothing, each bound to an integer literal in both. The earlier shape's `binding_source` says which
    bindings it stands for; also returned: per kept binding, how many other bindings it stands for."""
    if not fn.template_params or len({s.bindings for s in shapes}) < 2:
        return shapes, {}
    deciding = deciding_params(fn, tu, source_lines)
    if len(deciding) == len(fn.template_params):
        return shapes, {}
    kept: list["LaunchShape"] = []
    index: dict[tuple[object, ...], int] = {}
    covered: dict[int, list["LaunchShape"]] = {}
    for s in shapes:
        free = [(p, v) for p, v in s.bindings if p not in deciding]
        if not free or not all(_INT_LITERAL.fullmatch(v.strip()) for _p, v in free):
            kept.append(s)
            continue
        key = (s.block, s.grid, s.dynamic_shared, s.arg_values, s.guess, s.arg_samples, s.pointer_offsets,
               tuple((p, v) for p, v in s.bindings if p in deciding), tuple(p for p, _v in free))
        at = index.get(key)
        if at is None:
            index[key] = len(kept)
            kept.append(s)
        elif kept[at].bindings != s.bindings:
            covered.setdefault(at, []).append(s)
        else:
            kept.append(s)
    if not covered:
        return shapes, {}
    out = list(kept)
    evaluated = {k.bindings for k in kept}
    stands: dict[tuple[tuple[str, str], ...], set[tuple[tuple[str, str], ...]]] = {}
    for at, others in covered.items():
        s = kept[at]
        free = [p for p, _v in s.bindings if p not in deciding]
        bindings = list(dict.fromkeys(o.bindings for o in others))
        # (a binding whose other shapes are kept is evaluated itself: not counted as stood for)
        stands.setdefault(s.bindings, set()).update(b for b in bindings if b not in evaluated)
        shown = []
        for b in bindings[:MAX_LISTED]:
            where = next(o.source for o in others if o.bindings == b).removeprefix("launch at ")
            shown.append(", ".join(f"{p} = {v}" for p, v in b if p in free) + f" ({where})")
        more = len(bindings) - len(shown)
        if more:
            listed = ", ".join(shown) + f" and {more} more"
        else:
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
        names = ", ".join(free)
        out[at] = dataclasses.replace(s, binding_source=(
            f"{s.binding_source}; the same evaluation stands for {listed}: no address, branch or size depends on "
            f"{names}"))
    return out, {b: len(v) for b, v in stands.items()}
