"""Which runtime parameters are sampled how: additive offsets (an odd value exposes misalignment) and
iteration counts (small values, as host loops pass them).

Runtime sizes are sampled large and 1024-aligned (eval/interp.py), which keeps tail guards quiet but
hides two things:
- `a[i + s]` with `s` a runtime parameter is misaligned unless `s` is a multiple of the elements in a
  32-byte sector; aligned samples never show it. `misaligned_unless` evaluates the kernel once more
  with each such offset set to a small odd value and reports what becomes misaligned as a
  conditional KL103 ("misaligned unless `s` is a multiple of 8"), stating the value it used.
- a parameter that only bounds a loop whose variable never reaches an address (`for (i = 0; i <
  iteration; i++)`, a time-step count) is an iteration count: sampled as thousands, the loop runs
  to the evaluator's cap and conditions on its variable (`i + 1 < BLOCK - i - 2`) turn uniformly
  false. Such parameters are sampled small (`ITERATION_SAMPLES`).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from kernlint import ir

# The odd value an additive offset takes in the extra evaluation: one element past alignment.
ODD_OFFSET = 1
# Samples of an iteration-count parameter (one per sample of the block).
ITERATION_SAMPLES = (3, 5)
SECTOR = 32


def _strip(e: object) -> object:
    while isinstance(e, ir.Cast):
        e = e.operand
    return e


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


def offset_parameters(fn: ir.Function) -> frozenset[str]:
    """Integer parameters added as a plain term to an array index or a pointer (`a[i + s]`, `p + s`)."""
    params = _int_params(fn)
    if not params or fn.body is None:
        return frozenset()
    out: set[str] = set()
    for n in ir.walk(fn.body):
        terms: Iterable[object] = ()
        if isinstance(n, ir.Index):
            terms = _addends(n.index)
        elif isinstance(n, ir.Binary) and n.op in ("+", "-") and (
                n.lhs.ctype.kind == "pointer" or n.rhs.ctype.kind == "pointer"):
            terms = [_strip(n.rhs if n.lhs.ctype.kind == "pointer" else n.lhs)]
        terms = list(terms)
        if len(terms) < 2 and not isinstance(n, ir.Binary):
            continue  # `a[s]` alone is a uniform address, not an offset
        for t in terms:
            if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params:
                out.add(t.name)
    return frozenset(out)


def _loop_bound_params(cond: object, params: set[str]) -> set[str]:
    c = _strip(cond)
    if isinstance(c, ir.Binary) and c.op in ("<", "<=", ">", ">=", "!="):
        return {t.name for t in (_strip(c.lhs), _strip(c.rhs))
                if isinstance(t, ir.Ref) and t.kind == "param" and t.name in params}
    return set()


def iteration_parameters(fn: ir.Function) -> frozenset[str]:
    """Parameters used only as the bound of loops whose variables never reach an index or pointer sum."""
    params = _int_params(fn)
    if not params or fn.body is None:
        return frozenset()
    bounds: set[str] = set()
    bound_refs: set[int] = set()  # id() of the Ref nodes that are loop bounds
    address_vars = _address_names(fn.body)
    loop_vars: dict[str, set[str]] = {}
    for n in ir.walk(fn.body):
        if isinstance(n, ir.For) and n.cond is not None:
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
        other = [r for r in ir.walk(fn.body) if isinstance(r, ir.Ref) and r.name == p and id(r) not in bound_refs]
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


def _address_names(body: object) -> set[str]:
    """Names that appear in an index or a pointer sum anywhere in `body`."""
    out: set[str] = set()
    for n in ir.walk(body):
        if isinstance(n, ir.Index):
            out |= {r.name for r in ir.walk(n.index) if isinstance(r, ir.Ref)}
        elif isinstance(n, ir.Binary) and n.op in ("+", "-") and (
                n.lhs.ctype.kind == "pointer" or n.rhs.ctype.kind == "pointer"):
            out |= {r.name for r in ir.walk(n) if isinstance(r, ir.Ref)}
    return out


def _for_var(s: ir.For) -> str | None:
    if isinstance(s.init, ir.VarDecl):
        return s.init.name
    if isinstance(s.init, ir.ExprStmt) and isinstance(s.init.expr, ir.Binary) and s.init.expr.op == "=":
        t = _strip(s.init.expr.lhs)
        return t.name if isinstance(t, ir.Ref) else None
    return None


Diagnose = Callable[..., Iterable["object"]]


def misaligned_unless(result: "object", diagnose: Diagnose) -> Iterator["object"]:
    """Conditional KL103 findings: accesses that an odd value of an additive offset parameter misaligns.

    `diagnose(result, kind, code, name)` is KL103's own measurement (checks/coalescing.py), run on the
    kernel evaluated again with the offset set to `ODD_OFFSET`; sites already misaligned with the
    large aligned samples are left to it.
    """
    from kernlint.eval.events import MemoryAccess
    from kernlint.eval.interp import Interpreter
    from kernlint.eval.result import KernelResult

    assert isinstance(result, KernelResult)
    if result.unit is None:
        return
    defined = {k for k, _v in result.defines}
    params = sorted(offset_parameters(result.kernel) - defined)
    if not params:
        return
    kinds = ("load", "store")
    name = "misaligned-global-access"
    already = {(d.line, d.column) for k in kinds for d in diagnose(result, k, "KL103", name)}  # type: ignore[attr-defined]
    main_sites: dict[tuple[int, int, str], MemoryAccess] = {}
    for e in result.events:
        if isinstance(e, MemoryAccess) and e.space == "global":
            main_sites.setdefault((e.span.line, e.span.column, e.kind), e)
    seen: set[tuple[int, int]] = set()
    for p in params:
        defines = dict(result.defines)
        defines[p] = ODD_OFFSET
        run = Interpreter(result.unit, result.kernel, result.shape, defines).run()
        again = dataclasses.replace(result, events=tuple(run.events), assumed=tuple(sorted(run.assumed.items())),
                                    defines=tuple(sorted(defines.items())))
        odd_sites: dict[tuple[int, int, str], MemoryAccess] = {}
        for e in again.events:
            if isinstance(e, MemoryAccess) and e.space == "global":
                odd_sites.setdefault((e.span.line, e.span.column, e.kind), e)
        for kind in kinds:
            for d in diagnose(again, kind, "KL103", name):
                key = (d.line, d.column)  # type: ignore[attr-defined]
                if key in already or key in seen:
                    continue
                main = main_sites.get((key[0], key[1], kind))
                odd = odd_sites.get((key[0], key[1], kind))
                if main is None or odd is None or p not in main.deps:
                    continue
                multiple = _aligning_multiple(main, odd, dict(result.assumed).get(p, ()), p)
                if multiple is None or multiple <= 1:
                    continue
                seen.add(key)
                yield _conditional(d, p, multiple, result)


def _aligning_multiple(main: "object", odd: "object", samples: tuple[int, ...], p: str) -> int | None:
    """The multiple of `p` that keeps the access aligned: 32 / gcd(bytes per unit of p, 32)."""
    if not samples:
        return None
    m = main.mask[0] & odd.mask[0]  # type: ignore[attr-defined]
    if not m.any():
        return None
    w, lane = (int(x[0]) for x in np.nonzero(m))
    a_main = int(np.broadcast_to(main.address, main.mask.shape)[0, w, lane])  # type: ignore[attr-defined]
    a_odd = int(np.broadcast_to(odd.address, odd.mask.shape)[0, w, lane])  # type: ignore[attr-defined]
    diff = samples[0] - ODD_OFFSET
    if diff == 0 or (a_main - a_odd) % diff:
        return None
    per_unit = abs((a_main - a_odd) // diff)
    if per_unit == 0:
        return None
    return SECTOR // math.gcd(per_unit, SECTOR)


def _conditional(d: "object", p: str, multiple: int, result: "object") -> "object":
    msg = d.message  # type: ignore[attr-defined]
    head, _, rest = msg.partition(":")
    message = f"{head} unless `{p}` is a multiple of {multiple}: with {p} = {ODD_OFFSET},{rest}"
    notes = (f"`{p}` is added to the index: with the sampled sizes (multiples of 1024) the access is aligned, "
             f"with {p} = {ODD_OFFSET} (an odd offset) each warp's request straddles a 32-byte sector; "
             f"set --define {p}=VALUE to decide",) + tuple(d.notes)  # type: ignore[attr-defined]
    metrics = dict(d.metrics)  # type: ignore[attr-defined]
    metrics["aligned_if"] = f"{p} % {multiple} == 0"
    metrics["sampled_offset"] = {p: ODD_OFFSET}
    assumptions = tuple(a for a in d.assumptions if f"{p} = {ODD_OFFSET}" not in a)  # type: ignore[attr-defined]
    assumptions += (f"{p} = {ODD_OFFSET} (an odd sample of an additive offset; aligned for multiples of {multiple})",)
    return dataclasses.replace(d, message=message, notes=notes, metrics=metrics,  # type: ignore[type-var]
                               assumptions=assumptions)
