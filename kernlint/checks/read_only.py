"""KL104 read-only-not-restrict: a read-only pointer parameter with reused loads that is not `const T* __restrict__`.

User documentation: rules/KL104-read-only-not-restrict.md.

Evidence comes from the evaluated global loads through the parameter: the bytes the lanes request
over all its load sites against the distinct bytes they touch. A stencil (`in[i-1] + in[i] +
in[i+1]`) requests each byte about three times; a streaming copy once. Writes are found
statically in the IR, so a store in code the evaluator did not reach still silences the hint.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.events import MemoryAccess
from kernlint.eval.result import KernelResult
from kernlint.base.memo import by_identity

MIN_REUSE = 1.5  # requested bytes / distinct bytes: at 1.5x half the loaded bytes are read again
MAX_BYTES = 1 << 22  # cap on the byte expansion used to count distinct bytes (per sample)

READ_ONLY_NOT_RESTRICT = Rule(
    "KL104", "read-only-not-restrict",
    "a read-only pointer whose loads are reused is not `const T* __restrict__`", Severity.INFO)

RULES = (READ_ONLY_NOT_RESTRICT,)

_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_MUTATE_UNARY = frozenset({"pre++", "pre--", "post++", "post--", "&"})


_strip = ir.strip_casts  # casts around an expression, implicit and explicit


def _is_param_index(e: object, name: str) -> bool:
    e = _strip(e)
    if isinstance(e, ir.Index):
        base = _strip(e.base)
        return isinstance(base, ir.Ref) and base.name == name
    return False


@by_identity
def only_indexed_reads(fn: ir.Function, name: str) -> bool:
    """True when every use of parameter `name` in `fn` is a plain read `name[i]`.

    Any other use (a store `name[i] = ...`, `&name[i]`, `name + k`, passing it to a call, copying
    it to a local) makes it not provably read-only here, and the hint is withheld.
    """
    if fn.body is None:
        return False
    read_refs: set[int] = set()
    for n in ir.walk(fn.body):
        if isinstance(n, (ir.OpaqueStmt, ir.Opaque)) and n.reason in ir.UNREAD:
            return False  # code the front end did not lower (too deep, past the statement limit) may write it
        if isinstance(n, ir.Binary) and n.op in _ASSIGN_OPS and _is_param_index(n.lhs, name):
            return False
        if isinstance(n, ir.Unary) and n.op in _MUTATE_UNARY and _is_param_index(n.operand, name):
            return False
        if isinstance(n, ir.Unary) and n.op == "*":
            inner = _strip(n.operand)
            if isinstance(inner, ir.Ref) and inner.name == name:
                return False
        if isinstance(n, ir.Index):
            base = _strip(n.base)
            if isinstance(base, ir.Ref) and base.name == name:
                read_refs.add(id(base))
    for n in ir.walk(fn.body):
        if isinstance(n, ir.Ref) and n.name == name and id(n) not in read_refs:
            return False
        if isinstance(n, ir.VarDecl) and n.name == name:
            return False  # shadowed: uses of the name may not be the parameter
    return True


def _qualifiers(p: ir.Param) -> tuple[bool, bool]:
    """(pointee is const, pointer is restrict) for a pointer parameter."""
    t = p.ctype
    const = bool(t.pointee is not None and t.pointee.const)
    return const, "restrict" in t.name


def _reuse(loads: list[MemoryAccess]) -> tuple[float, int, int] | None:
    """(requested / distinct, requested bytes, distinct bytes) for the least-reusing sample.

    `requested` sums, over the load sites through the pointer, the distinct bytes each site reads;
    `distinct` is the bytes all sites read together. Their ratio is the overlap *between* sites (a
    stencil's neighbours, a value re-read after a store): what one site re-reads by itself (a lane
    in later iterations, a broadcast, lanes duplicating work under a 2-D block) is left out, since
    L1 keeps it without any hint.
    """
    samples = loads[0].mask.shape[0]
    best: tuple[float, int, int] | None = None
    for s in range(samples):
        per_site: dict[tuple[int, int, int, int], list[np.ndarray]] = {}
        total = 0
        for e in loads:
            m = e.mask[s]
            if not m.any():
                continue
            # A warp-uniform request (every lane one address) is a broadcast: one request served
            # by the uniform path whatever the qualifiers, so it is not evidence for the hint.
            uniform = np.array([not mw.any() or bool(np.all(aw[mw] == aw[mw][0]))
                                for aw, mw in zip(e.address[s], m)])
            m = m & ~uniform[:, None]
            if not m.any():
                continue
            addr = e.address[s][m].astype(np.int64)
            total += addr.size * e.width
            if total > MAX_BYTES:
                break
            sp = e.span
            per_site.setdefault((sp.line, sp.column, sp.end_line, sp.end_column), []).append(
                (addr[:, None] + np.arange(e.width, dtype=np.int64)).ravel())
        if len(per_site) < 2:
            continue
        sites = [np.unique(np.concatenate(parts), return_index=True)[0] for parts in per_site.values()]
        requested = int(sum(x.size for x in sites))
        distinct = int(np.unique(np.concatenate(sites), return_index=True)[0].size)
        ratio = requested / distinct
        if best is None or ratio < best[0]:  # the least reuse over samples: true for every sample
            best = (ratio, requested, distinct)
    return best


def _source(result: KernelResult, span: ir.Span) -> str:
    if span.end_line != span.line or not 0 < span.line <= len(result.source_lines):
        return ""
    return result.source_lines[span.line - 1][span.column - 1:span.end_column - 1]


def check_read_only(result: KernelResult) -> Iterator[Diagnostic]:
    fn = result.kernel
    by_root: dict[str, list[MemoryAccess]] = {}
    written: set[str] = set()
    for e in result.events:
        if isinstance(e, MemoryAccess) and e.space == "global":
            if e.kind == "load":
                by_root.setdefault(e.root, []).append(e)
            else:
                written.add(e.root)
    for p in fn.params:
        if p.ctype.kind != "pointer" or p.name not in by_root or p.name in written:
            continue
        const, restrict = _qualifiers(p)
        if const and restrict:
            continue
        if not only_indexed_reads(fn, p.name):
            continue
        loads = by_root[p.name]
        measured = _reuse(loads)
        if measured is None or measured[0] < MIN_REUSE:
            continue
        ratio, requested, distinct = measured
        pointee = p.ctype.pointee.name if p.ctype.pointee is not None and p.ctype.pointee.name else "T"
        pointee = pointee.replace("const ", "").strip()
        missing = " and ".join(x for x, have in (("`const`", const), ("`__restrict__`", restrict)) if not have)
        sites = sorted({(e.span.line, e.span.column, e.text or _source(result, e.span)) for e in loads})
        shown = ", ".join(f"`{t or p.name + '[...]'}` (line {ln})" for ln, _c, t in sites[:6])
        if len(sites) > 6:
            shown += f" and {len(sites) - 6} more"
        msg = (f"`{p.name}` is only read and its {len(sites)} load sites overlap: together they read each byte "
               f"{ratio:.1f}x on average; declare it `const {pointee}* __restrict__` (it lacks {missing}) so the compiler "
               f"may use the read-only data cache")
        notes = (
            f"loads through `{p.name}`: {shown}; {requested} bytes read by the sites one by one, {distinct} distinct bytes "
            "together, in the evaluated warps",
            "where the compiler cannot prove the data read-only (the pointer reaches the kernel through a "
            "struct or is cast), load with `__ldg(&" + p.name + "[i])` instead",
            "only safe when no other pointer writes the same memory during the kernel",
        )
        span = fn.span
        deps: frozenset[str] = frozenset().union(*(e.deps for e in loads))
        yield Diagnostic(
            result.path, span.line, span.column, READ_ONLY_NOT_RESTRICT.code, READ_ONLY_NOT_RESTRICT.name,
            READ_ONLY_NOT_RESTRICT.severity, msg, kernel=fn.name, notes=notes,
            assumptions=result.assumptions(deps),
            metrics={"parameter": p.name, "reuse": round(ratio, 3), "requested_bytes": requested,
                     "distinct_bytes": distinct, "load_sites": len(sites)},
        )


READ_ONLY_NOT_RESTRICT = Rule(READ_ONLY_NOT_RESTRICT.code, READ_ONLY_NOT_RESTRICT.name,
                              READ_ONLY_NOT_RESTRICT.summary, READ_ONLY_NOT_RESTRICT.severity,
                              check=check_read_only)
RULES = (READ_ONLY_NOT_RESTRICT,)
