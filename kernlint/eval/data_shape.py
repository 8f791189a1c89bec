"""Static shape of a data-dependent condition (KL305): search loops and index-validity tests.

Two source properties decide whether the divergence a data-dependent condition causes is one a
developer can act on, and both are read from the IR alone:

- A *search* loop decides its trip count inside the loop: its exit condition reads a variable the
  body assigns other than by a constant step (`while (succ != next) { succ = next; next = s[next]; }`,
  an escape-time `z = z*z + c`), or loads through a variable the loop advances
  (`for (x = 0; ...; x++) if (CDF[x] >= u) break;`). Its trip count is only known by running it,
  so the items cannot be sorted or binned by it beforehand, and its iterations depend on each other,
  so the lanes of a warp cannot split them. A *counted* loop (`for (e = rowPtr[r]; e < rowPtr[r+1];
  ++e)`) knows its trip count on entry: sorting rows by length or CSR-vector applies.
- An *index-validity test* compares a loaded value with a constant sentinel and uses that value as
  an index on one side only (`if (nb >= 0) { ... v[nb] ... } else { boundary }`): the side that
  indexes with it is the common case (padding, boundaries and empty slots are the exceptions), so
  the warp usually runs it with every lane, and divergence costs the exceptional side.
"""
from __future__ import annotations

from kernlint.ir import nodes as ir
from kernlint.base.memo import by_identities, by_identity

_COMPARE = ("<", "<=", ">", ">=", "==", "!=")
_STEP_OPS = ("+=", "-=")
_INCDEC = ("pre++", "pre--", "post++", "post--")


_strip = ir.strip_casts  # casts around an expression, implicit and explicit


def _target(e: object) -> str:
    e = _strip(e)
    return e.name if isinstance(e, ir.Ref) else ""


def _names(e: object) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Ref)}


def assignments(s: object) -> tuple[set[str], set[str]]:
    """(names assigned in `s`, those assigned only by a constant-free step: `x++`, `x += k`)."""
    stepped: set[str] = set()
    other: set[str] = set()
    for n in ir.walk(s):
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            t = _target(n.lhs)
            if t:
                (stepped if n.op in _STEP_OPS else other).add(t)
        elif isinstance(n, ir.Unary) and n.op in _INCDEC:
            t = _target(n.operand)
            if t:
                stepped.add(t)
        elif isinstance(n, ir.VarDecl):
            other.add(n.name)  # declared in the body: a fresh value each iteration
    return stepped | other, stepped - other


@by_identities(max_entries=1024)  # asked at every evaluation of a data-dependent loop or `break`
def is_search(loop: object, cond: object) -> bool:
    """Whether `cond` (a loop's condition, or a `break`'s inside `loop`) is decided inside the loop."""
    if not isinstance(loop, (ir.For, ir.While)) or cond is None:
        return False
    parts: list[object] = [loop.body]
    if isinstance(loop, ir.For) and loop.step is not None:
        parts.append(loop.step)
    written: set[str] = set()
    stepped: set[str] = set()
    for p in parts:
        w, st = assignments(p)
        written |= w
        stepped |= st
    stepped -= written - stepped
    carried = written - stepped
    if _names(cond) & carried:
        return True
    for n in ir.walk(cond):
        # A load whose address the loop advances (`CDF[x]`, `*p` with `p++`) reads new data each iteration.
        if isinstance(n, ir.Index) and _names(n.index) & written:
            return True
        if isinstance(n, ir.Unary) and n.op == "*" and _names(n.operand) & written:
            return True
    return False


def validity_test(s: ir.If) -> str:
    """'then' or 'else': the side of `if (v CMP constant)` that uses `v` as an index (the common case
    of an index-validity test); '' when the condition is not such a test or both or neither side do."""
    c = _strip(s.cond)
    if not isinstance(c, ir.Binary) or c.op not in _COMPARE:
        return ""
    lhs, rhs = _strip(c.lhs), _strip(c.rhs)
    if _constant(rhs) and isinstance(lhs, ir.Ref):
        name = lhs.name
    elif _constant(lhs) and isinstance(rhs, ir.Ref):
        name = rhs.name
    else:
        return ""
    then_idx = _indexes_with(s.then, name)
    else_idx = s.other is not None and _indexes_with(s.other, name)
    if then_idx and not else_idx:
        return "then"
    if else_idx and not then_idx:
        return "else"
    return ""


def _constant(e: object) -> bool:
    e = _strip(e)
    if isinstance(e, ir.Lit):
        return True
    return isinstance(e, ir.Unary) and e.op in ("-", "+") and isinstance(_strip(e.operand), ir.Lit)


def _indexes_with(s: object, name: str) -> bool:
    for n in ir.walk(s):
        if isinstance(n, ir.Index) and name in _names(n.index):
            return True
        if isinstance(n, ir.Unary) and n.op == "*" and name in _names(n.operand):
            return True
    return False


_DIAGNOSTIC_CALLS = ("printf", "__trap", "assert", "__assert_fail", "__brkpt", "abort")


@by_identity(max_entries=1024)  # asked at every evaluation of a data-dependent `if`
def side_role(s: object, deciding: tuple[tuple[int, int, int, int, str], ...] = ()) -> str:
    """What the code under a data-dependent condition is for, when that makes its divergence moot:
    'diagnostic' (it reports an error: printf, assert, __trap), 'compaction' (it appends to an output
    through a slot an atomic hands out: `dst[atomicAdd(&n, 1)] = v`, the stream compaction KL305
    would recommend), or ''."""
    for n in ir.walk(s):
        if isinstance(n, ir.Call) and n.name.split("::")[-1] in _DIAGNOSTIC_CALLS:
            return "diagnostic"
    for n in ir.walk(s):
        if isinstance(n, ir.Index) and any(isinstance(c, ir.Call) and "atomic" in c.name.lower()
                                           for c in ir.walk(n.index)):
            return "compaction"
    # Adaptive refinement: the condition compares several neighbours in an array that the guarded
    # code rewrites in place (`if (dst[p-1] != dst[p] || dst[p+1] != dst[p]) dst[p] = refine(...)`).
    roots: dict[str, int] = {}
    for load in deciding:
        roots[load[4]] = roots.get(load[4], 0) + 1
    rewritten = {_base_name(n.lhs) for n in ir.walk(s)
                 if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">=")}
    if any(r and roots.get(r, 0) >= 2 for r in rewritten):
        return "refinement"
    return ""


def _base_name(e: object) -> str:
    """`dst` of `dst[p].x`, `dst[p]`, `*(dst + p)`: the array a store writes."""
    e = _strip(e)
    while isinstance(e, (ir.Member, ir.Index)) or (isinstance(e, ir.Unary) and e.op == "*"):
        e = _strip(e.base if isinstance(e, (ir.Member, ir.Index)) else e.operand)
        if isinstance(e, ir.Binary) and e.op in ("+", "-"):
            e = _strip(e.lhs)
    return e.name if isinstance(e, ir.Ref) else ""


class _BodyScan:
    """What recurrence_in_address needs of one kernel body, found in one walk and then reused for
    each access asked about (a kernel with 20,000 accesses must not be walked 20,000 times): the
    first Index node at each span, the loops in walk order, and per loop (when first asked) the
    Index nodes of its body and the names it carries."""

    def __init__(self, body: object) -> None:
        self.body = body
        self.first: dict[object, object] = {}
        self.loops: list[object] = []
        for n in ir.walk(body):
            if isinstance(n, ir.Index):
                self.first.setdefault(getattr(n, "span", None), n)
            elif isinstance(n, (ir.For, ir.While)):
                self.loops.append(n)
        self._inside: dict[int, set[int]] = {}
        self._carried: dict[int, set[str]] = {}
        self._self: dict[tuple[int, str], bool] = {}

    def inside(self, k: int) -> set[int]:
        """ids of the Index nodes in the body of loop `k`."""
        if k not in self._inside:
            self._inside[k] = {id(n) for n in ir.walk(self.loops[k].body) if isinstance(n, ir.Index)}  # type: ignore[attr-defined]
        return self._inside[k]

    def carried(self, k: int) -> set[str]:
        """The names loop `k` assigns other than by a constant step (`x++`, `x += k`) and does not
        declare in its body: candidates for a value carried from one iteration to the next."""
        if k not in self._carried:
            loop = self.loops[k]
            written, stepped = assignments(loop.body)  # type: ignore[attr-defined]
            if isinstance(loop, ir.For) and loop.step is not None:
                w, st = assignments(loop.step)
                written |= w
                stepped |= st
            self._carried[k] = written - stepped
        return self._carried[k]

    def self_update(self, k: int, name: str) -> bool:
        if (k, name) not in self._self:
            self._self[k, name] = _self_update(self.loops[k].body, name)  # type: ignore[attr-defined]
        return self._self[k, name]


_last_scan: list[_BodyScan] = []  # the body asked about last (the rules ask about one kernel at a time)


def recurrence_in_address(body: object, span: object) -> str:
    """The variable, if any, through which the address of the access at `span` follows a recurrence
    that its loop advances other than by a constant step (`psRand ^= psRand << 13`, `h = h * 31 + c`):
    the addresses of the evaluated iteration say nothing about the next ones (a pseudo-random or
    hashed sequence). '' when there is none."""
    if not (_last_scan and _last_scan[0].body is body):
        _last_scan[:] = [_BodyScan(body)]
    scan = _last_scan[0]
    target = scan.first.get(span)
    if target is None:
        return ""
    names = _names(target.index)  # type: ignore[attr-defined]
    for k in range(len(scan.loops)):
        if id(target) not in scan.inside(k):
            continue
        # Only names that carry their own previous value (x ^= x << 13, h = h * 31 + c): a value
        # recomputed from scratch each iteration (int idx = tid - r) is not a recurrence.
        for name in sorted(names & scan.carried(k)):
            if scan.self_update(k, name):
                return name
    return ""


def _self_update(s: object, name: str) -> bool:
    for n in ir.walk(s):
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">=") \
                and _target(n.lhs) == name:
            if n.op not in ("=", "+=", "-="):
                return True  # x ^= ..., x *= ...
            if n.op == "=" and name in _names(n.rhs) and not _affine_step(n.rhs, name):
                return True
    return False


def _affine_step(e: object, name: str) -> bool:
    """`name + c`, `c + name` or `name - c` with `c` free of `name`: a step written as an assignment."""
    e = _strip(e)
    if not isinstance(e, ir.Binary) or e.op not in ("+", "-"):
        return False
    lhs, rhs = _strip(e.lhs), _strip(e.rhs)
    if isinstance(lhs, ir.Ref) and lhs.name == name and name not in _names(rhs):
        return True
    return e.op == "+" and isinstance(rhs, ir.Ref) and rhs.name == name and name not in _names(lhs)
