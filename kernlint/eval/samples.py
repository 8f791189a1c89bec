"""Which runtime parameters are sampled how: additive offsets (an odd value exposes misalignment) and
iteration counts (small values, as host loops pass them).

Runtime sizes are sampled large and 1024-aligned (eval/interp.py), which keeps tail guards quiet but
hides two things:
- `a[i + s]` with `s` a runtime parameter is misaligned unless `s` is a multiple of the elements in a
  32-byte sector; aligned samples never show it. checks/odd_offsets.py evaluates the kernel once more
  with each such offset set to a small odd value (a result of its own, so `--confirm` runs it with
  that value), and reports what becomes misaligned as a conditional KL103 ("misaligned unless `s` is
  a multiple of 8"), stating the value it used.
- a parameter that only bounds a loop whose variable never reaches an address (`for (i = 0; i <
  iteration; i++)`, a time-step count) is an iteration count: sampled as thousands, the loop runs
  to the evaluator's cap and conditions on its variable (`i + 1 < BLOCK - i - 2`) turn uniformly
  false. Such parameters are sampled small (`ITERATION_SAMPLES`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from kernlint.ir import nodes as ir
from kernlint.base.memo import by_identity

# The odd value an additive offset takes in the extra evaluation: one element past alignment.
ODD_OFFSET = 1
# Samples of an iteration-count parameter (one per sample of the block).
ITERATION_SAMPLES = (3, 5)
# Samples of a `bool` parameter (a flag such as `contiguous`): true in the first sample, false in the
# second, so both sides of `if (flag)` are evaluated. Sampled as a size it was true in both, and the
# other side was never evaluated (checks/fallback.py needs both sides to tell the fast one).
FLAG_SAMPLES = (1, 0)
# Samples of a shift-amount parameter (`1 << log2N`): sizes of 1024 and 2048 elements. Sampled as a
# size (thousands) the shift would be undefined (C++ [expr.shift]/1) and every value it builds unknown.
SHIFT_SAMPLES = (10, 11)
SECTOR = 32
# Samples of a parameter that divides another size (`ngroups = k / group_size`, `hs = C / NH`): small,
# so that the quotient, which the code then uses as a size (a loop bound, a row pitch), is one. Both
# sampled as sizes (thousands, a few hundred apart) the quotient was 1 in every sample: a scale row of
# one group made a 16x access look coalesced, a head size of one made attention rows one float long.
DIVISOR_SAMPLES = (32, 64)


_strip = ir.strip_casts  # casts around an expression, implicit and explicit


def _addends(e: object) -> Iterator[object]:
    """The terms of a sum (`i + s - 1` -> i, s, 1), casts removed."""
    e = _strip(e)
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        yield from _addends(e.lhs)
        yield from _addends(e.rhs)
    else:
        yield e


def _int_params(fn: ir.Function) -> set[str]:
    return {p.name for p in fn.params if p.ctype.kind in ("int",)}


def _pointer_sum(n: object) -> bool:
    return isinstance(n, ir.Binary) and n.op in ("+", "-") and (
        n.lhs.ctype.kind == "pointer" or n.rhs.ctype.kind == "pointer")


@dataclasses.dataclass
class _Nodes:
    """The nodes of a kernel body the parameter questions below look at, from one walk of it."""

    indexes: list[ir.Index]
    pointer_sums: list[ir.Binary]
    shifts: list[ir.Binary]
    loops: list[ir.For]  # `for` loops with a condition
    refs: dict[str, list[ir.Ref]]  # every Ref by name


@by_identity
def _nodes(fn: ir.Function) -> _Nodes:
    out = _Nodes([], [], [], [], {})
    for n in ir.walk(fn.body):
        if isinstance(n, ir.Index):
            out.indexes.append(n)
        elif isinstance(n, ir.Binary):
            if _pointer_sum(n):
                out.pointer_sums.append(n)
            elif n.op in ("<<", ">>", "<<=", ">>="):
                out.shifts.append(n)
        elif isinstance(n, ir.Ref):
            out.refs.setdefault(n.name, []).append(n)
        elif isinstance(n, ir.For) and n.cond is not None:
            out.loops.append(n)
    return out


@by_identity
def offset_parameters(fn: ir.Function) -> frozenset[str]:
    """Integer parameters added as a plain term to an array index or a pointer (`a[i + s]`, `p + s`)."""
    params = _int_params(fn)
    if not params or fn.body is None:
        return frozenset()
    out: set[str] = set()
    nodes = _nodes(fn)
    for n in nodes.indexes:
        terms = list(_addends(n.index))
        if len(terms) < 2:
            continue  # `a[s]` alone is a uniform address, not an offset
        for t in terms:
            if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params:
                out.add(t.name)
    for b in nodes.pointer_sums:
        t = _strip(b.rhs if b.lhs.ctype.kind == "pointer" else b.lhs)
        if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params:
            out.add(t.name)
    return frozenset(out)


@by_identity
def shift_parameters(fn: ir.Function) -> frozenset[str]:
    """Integer parameters used as the amount of a shift (`1 << log2N`, `x >>= shift`)."""
    params = _int_params(fn)
    if not params or fn.body is None:
        return frozenset()
    out: set[str] = set()
    for n in _nodes(fn).shifts:
        t = _strip(n.rhs)
        if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params:
            out.add(t.name)
    return frozenset(out)


def _loop_bound_params(cond: object, params: set[str]) -> set[str]:
    c = _strip(cond)
    if isinstance(c, ir.Binary) and c.op in ("<", "<=", ">", ">=", "!="):
        return {t.name for t in (_strip(c.lhs), _strip(c.rhs))
                if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params}
    return set()


@by_identity
def iteration_parameters(fn: ir.Function) -> frozenset[str]:
    """Parameters used only as the bound of loops whose variables never reach an index or pointer sum."""
    params = _int_params(fn)
    if not params or fn.body is None:
        return frozenset()
    bounds: set[str] = set()
    bound_refs: set[int] = set()  # id() of the Ref nodes that are loop bounds
    nodes = _nodes(fn)
    address_vars = _address_names(nodes)
    loop_vars: dict[str, set[str]] = {}
    for n in nodes.loops:
        found = _loop_bound_params(n.cond, params)
        if found:
            var = _for_var(n)
            if var is None:
                continue
            if _assigned(n.body) & address_vars:
                continue  # the loop accumulates into something an address uses: more than a count
            bounds |= found
            for t in (_strip(n.cond.lhs), _strip(n.cond.rhs)):  # type: ignore[attr-defined]
                if isinstance(t, ir.Ref) and t.name in found:
                    bound_refs.add(id(t))
            for p in found:
                loop_vars.setdefault(p, set()).add(var)
    out = set()
    for p in bounds:
        if p in address_vars or loop_vars.get(p, set()) & address_vars:
            continue
        # Any other use (a size, a comparison with a thread index) makes it more than a count.
        other = [r for r in nodes.refs.get(p, ()) if id(r) not in bound_refs]
        if not other:
            out.add(p)
    return frozenset(out)


def _assigned(s: object) -> set[str]:
    out: set[str] = set()
    for n in ir.walk(s):
        t = None
        if isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
            t = _strip(n.lhs)
        elif isinstance(n, ir.Unary) and n.op in ("pre++", "pre--", "post++", "post--"):
            t = _strip(n.operand)
        if isinstance(t, ir.Ref):
            out.add(t.name)
    return out


def _address_names(nodes: _Nodes) -> set[str]:
    """Names that appear in an index or a pointer sum anywhere in the kernel body."""
    out: set[str] = set()
    for n in nodes.indexes:
        out |= {r.name for r in ir.walk(n.index) if isinstance(r, ir.Ref)}
    for b in nodes.pointer_sums:
        out |= {r.name for r in ir.walk(b) if isinstance(r, ir.Ref)}
    return out


def _for_var(s: ir.For) -> str | None:
    if isinstance(s.init, ir.VarDecl):
        return s.init.name
    if isinstance(s.init, ir.ExprStmt) and isinstance(s.init.expr, ir.Binary) and s.init.expr.op == "=":
        t = _strip(s.init.expr.lhs)
        return t.name if isinstance(t, ir.Ref) else None
    return None


_COMPARE = ("<", "<=", ">", ">=", "==", "!=")


@by_identity
def divisor_parameters(fn: ir.Function) -> frozenset[str]:
    """Integer parameters that divide another integer parameter (`k / group_size`, `C / NH`) and are never
    compared with anything (a compared one bounds or guards, a size in its own right): the quotient is the
    size the code uses, and sampling both as sizes would make it 1 (DIVISOR_SAMPLES)."""
    params = _int_params(fn)
    if len(params) < 2 or fn.body is None:
        return frozenset()
    divisors: set[str] = set()
    compared: set[str] = set()
    for n in ir.walk(fn.body):
        if not isinstance(n, ir.Binary):
            continue
        lhs, rhs = _strip(n.lhs), _strip(n.rhs)
        if n.op in ("/", "/=") and isinstance(rhs, ir.Ref) and rhs.kind == "param" and rhs.name in params:
            if isinstance(lhs, ir.Ref) and lhs.kind == "param" and lhs.name in params and lhs.name != rhs.name:
                divisors.add(rhs.name)
        elif n.op in _COMPARE:
            compared |= {r.name for r in ir.walk(n) if isinstance(r, ir.Ref) and r.kind == "param"}
    return frozenset(divisors - compared - shift_parameters(fn) - iteration_parameters(fn))
