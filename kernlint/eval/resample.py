"""Re-sampling for regions that the sampled values make dead.

Runtime parameters are sampled as sizes (thousands). A guard such as `if (i > k && i < n)`, with
`k` a host loop variable (`for (k = 0; k < n; k++) step<<<...>>>(a, n, k)`), then holds for no
thread of the sampled blocks, and the accesses under it are never evaluated: silence that does
not mean "clean". When an `if` whose condition depends on sampled parameters never runs under
any sample, the kernel is evaluated once more with those parameters sampled small (as a loop
counter starting from 0 is early on), and the findings inside such regions are taken from that
evaluation, which says so in its assumptions.

blockIdx is sampled as two blocks only (eval/interp.py BLOCK_SAMPLES), so a guard that picks out
other blocks (`if (bx == 1)`, `if (by == gridDim.y - 1)`, border tiles) is dead the same way. Its
region is evaluated once more with blockIdx taken from the constants the guard compares it with
(`block_targets`): `bx == 1` -> 1, `bx > 0` -> 1, `bx == gridDim.x - 1` -> the last block of the
known or sampled grid, clamped to the grid.

Two more shapes of dead code come from the same sampling (`dead_loop_key`, `rest_key`): a loop over
sampled bounds that runs no iteration (`for (d = minDisparity; d <= maxDisparity; d++)`: sizes are
sampled decreasing in declaration order, so min > max), and the rest of a kernel after an early
`return` that every sampled thread takes (`if (depth >= max_depth) return;`). Both are regions
like a dead `if`'s body. A region that the small samples still leave dead is evaluated once more
with the sampled parameters of its guard in reversed order (`reversed_overrides`), which flips
every comparison between two of them. Before that, a parameter whose name says it is a position
rather than a size (`is_position_name`: `deviceRank`, `part_id`) is sampled as the first positions
(`FIRST_SAMPLES`, 0 and 1) with the others as sampled: a grid-stride loop that starts at this
device's share, `for (i = rank * gridSize + tid; i < n; ...)`, runs from rank 0. A guard that a
re-sampled evaluation finds dead inside a region it opened (`if (x >= 0)` with `x = j - sn / 2 + b`,
nested in a row guard over other parameters) is re-sampled once more on top of its samples
(engine.py `_resample_dead`, at most `MAX_NESTED_RESAMPLES` levels).

Those further samples are tried one evaluation each, and an evaluation that reaches none of the regions
still dead is passed over. So each one is run with those regions as its goal: it stops as soon as every
one of them was found dead where nothing left to evaluate can run its guard again (`may_note_again`), the
verdict the whole evaluation would give (a `for (y = r + 1; y < h - r; y++)` found dead before two more
loops over `r`: those are not evaluated).
"""
from __future__ import annotations


from collections.abc import Iterable, Sequence

from kernlint.base.lazy_re import lazy_compile
from kernlint.base.memo import by_identity
from kernlint.ir import nodes as ir
from kernlint.eval.limits import CALL_KEY_OFFSET
from kernlint.eval.uniform_data import short

# Small values for a re-sampled parameter: near a host loop's start, one per sample.
SMALL_SAMPLES = (1, 32)
# The first values of a parameter that names a position rather than a size (`deviceRank`, `part_id`):
# the first device, rank or part (eval/resample.py `other_overrides`).
FIRST_SAMPLES = (0, 1)
# Names of such parameters (the last component of a struct member): a rank, an id or an index of a
# device, a shard or a part, alone, after `_` or as the last camelCase word (`deviceRank`, `part_id`,
# `gpuID`; not `grid`, `valid`). Sampled as a size (thousands), `i = rank * gridSize + tid` starts
# beyond every sampled bound and a grid-stride loop over it runs no iteration.
_POSITION_WORDS = ("rank", "id", "idx", "index", "device", "dev", "gpu", "shard")
_POSITION_NAME = lazy_compile(r"(?:^|_)(?:%s)$|[a-z0-9](?:%s)$" % (
    "|".join(_POSITION_WORDS), "|".join(w.capitalize() + "|" + w.upper() for w in _POSITION_WORDS)))


def is_position_name(name: str) -> bool:
    """Whether a parameter's name says it is a position (rank, id, index), not a size."""
    last = name.rsplit(".", 1)[-1]
    return bool(_POSITION_NAME.search(last))


def sampled_parameters(deps: frozenset[str], assumed: dict[str, tuple[int, ...]]) -> frozenset[str]:
    """The runtime parameters (not blockIdx/gridDim) among `deps` that were sampled."""
    return frozenset(d for d in deps if d in assumed and not d.startswith(("blockIdx", "gridDim")))


def has_memory_access(s: ir.Stmt | None) -> bool:
    """Whether `s` may touch memory: a subscript, member, dereference, or a call (a helper's body)."""
    return s is not None and any(isinstance(n, (ir.Index, ir.Member, ir.Call))
                                 or (isinstance(n, ir.Unary) and n.op == "*") for n in ir.walk(s))


# Comparison `blockIdx op r` -> the block index that makes it hold (None: no single one).
_REACH = {"==": 0, ">=": 0, "<=": 0, ">": 1, "<": -1}
_FLIP = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


def block_target(op: str, value: int, swapped: bool) -> int | None:
    """The blockIdx component that satisfies `blockIdx op value` (`value op blockIdx` when swapped)."""
    if swapped:
        op = _FLIP.get(op, op)
    step = _REACH.get(op)
    return None if step is None else value + step


def block_names(deps: frozenset[str]) -> frozenset[str]:
    """The blockIdx components among `deps`."""
    return frozenset(d for d in deps if d.startswith("blockIdx."))


def overrides_for(dead: dict[tuple[int, int, int, int], frozenset[str]],
                  targets: dict[tuple[int, int, int, int], dict[str, int]] | None = None,
                  samples: int = len(SMALL_SAMPLES)) -> dict[str, tuple[int, ...]]:
    """Sample overrides for the parameters that the dead regions' conditions depend on.

    Sizes are sampled small; a blockIdx component is sampled as the blocks the regions' guards pick
    out (at most one per sample, the first ones in line order; a region not reached stays unevaluated).
    """
    names: set[str] = set()
    for deps in dead.values():
        names |= {d for d in deps if not d.startswith(("blockIdx", "gridDim"))}
    out: dict[str, tuple[int, ...]] = {name: SMALL_SAMPLES for name in sorted(names)}
    wanted: dict[str, list[int]] = {}
    for key in sorted(targets or {}):
        if key not in dead:
            continue
        for name, v in sorted((targets or {})[key].items()):
            if v not in wanted.setdefault(name, []):
                wanted[name].append(v)
    for name, vals in sorted(wanted.items()):
        vals = vals[:samples]
        out[name] = tuple(vals + [vals[-1]] * (samples - len(vals)))
    return out


def describe(dead: dict[tuple[int, int, int, int], frozenset[str]],
             assumed: dict[str, tuple[int, ...]],
             overrides: dict[str, tuple[int, ...]] | None = None,
             targets: dict[tuple[int, int, int, int], dict[str, int]] | None = None) -> str:
    """The assumption line a finding from the re-sampled evaluation carries."""
    targets = targets or {}
    overrides = overrides or {}
    parts = []
    targeted = {n for k in dead for n in targets.get(k, {})}
    sized = {k: v for k, v in dead.items()
             if any(not n.startswith(("blockIdx", "gridDim")) and n not in targeted for n in v)}
    names = sorted({n for v in sized.values() for n in v
                    if not n.startswith(("blockIdx", "gridDim")) and n not in targeted})
    if names:
        lines = sorted({span[0] for span in sized})
        shown = ", ".join(f"{short(n)} = {' and '.join(str(v) for v in assumed.get(n, ()))}" for n in names)
        small = " and ".join(str(v) for v in SMALL_SAMPLES)
        at = ", ".join(str(ln) for ln in lines)
        parts.append(f"re-sampled {', '.join(map(short, names))} as {small}: with {shown} the guard at line {at} never "
                     f"holds, so the code under it was evaluated with small values (a host loop's early iterations)")
    blocks = sorted({n for k in dead for n in targets.get(k, {})})
    if blocks:
        lines = sorted({k[0] for k in dead if targets.get(k)})
        shown = ", ".join(f"{n} = {' and '.join(str(v) for v in dict.fromkeys(overrides.get(n, ())))}"
                          for n in blocks)
        at = ", ".join(str(ln) for ln in lines)
        which = "blocks" if all(n.startswith("blockIdx") for n in blocks) else "values"
        parts.append(f"{shown} (to reach the guarded code at line {at}, which the sampled {which} "
                     f"{', '.join(f'{n} = ' + ' and '.join(str(v) for v in assumed.get(n, ())) for n in blocks)} "
                     f"never enter)")
    return "; ".join(parts)


def in_regions(line: int, dead: dict[tuple[int, int, int, int], frozenset[str]]) -> bool:
    return any(lo <= line <= hi for (_l, _c, lo, hi) in dead)


def dead_loop_key(loop: ir.Stmt, body: ir.Stmt) -> tuple[int, int, int, int]:
    """The region key of a loop's body (its loop line and column, the body's lines)."""
    span = getattr(body, "span", loop.span)  # type: ignore[attr-defined]
    return (loop.span.line, loop.span.column, span.line, max(span.end_line, span.line))  # type: ignore[attr-defined]


def rest_after(body: ir.Block | None, s: ir.Stmt) -> ir.Block | None:
    """The statements after `s` when `s` is a direct statement of `body` (the kernel's), else None."""
    if body is None:
        return None
    for i, st in enumerate(body.body):
        if st is s:
            rest = body.body[i + 1:]
            if not rest:
                return None
            first = rest[0].span  # type: ignore[attr-defined]
            last = rest[-1].span  # type: ignore[attr-defined]
            return ir.Block(rest, ir.Span(first.line, first.column, max(last.end_line, last.line), last.end_column))
    return None


def rest_key(s: ir.Stmt, rest: ir.Block) -> tuple[int, int, int, int]:
    """The region key of the code after an early exit: the `if`'s line and column (negated, so it
    never collides with the key of its own body), the rest's lines."""
    return (s.span.line, -s.span.column, rest.span.line, rest.span.end_line)  # type: ignore[attr-defined]


def key_position(key: tuple[int, int, int, int]) -> tuple[tuple[int, int], bool]:
    """The (line, column) of the statement that notes the region `key`, and whether `key` is the key of a
    kernel call line for a region of an inlined helper (interp.py `_call_key`: its column is -(column +
    CALL_KEY_OFFSET)); a `rest_key` negates the column of its `if`."""
    line, col = key[0], key[1]
    if col <= -CALL_KEY_OFFSET:
        return (line, -col - CALL_KEY_OFFSET), True
    return (line, abs(col)), False


@by_identity(max_entries=4096)
def _reach(s: ir.Stmt) -> tuple[frozenset[tuple[int, int]], int]:
    """The (line, column) of every node under `s`, and the number of calls under it."""
    places: set[tuple[int, int]] = set()
    calls = 0
    for n in ir.walk(s):
        if isinstance(n, ir.Call):
            calls += 1
        span = getattr(n, "span", None)
        if isinstance(span, ir.Span):
            places.add((span.line, span.column))
    return frozenset(places), calls


@by_identity
def call_statements(body: ir.Block) -> dict[int, int]:
    """id() of a call -> the index of the statement of `body` that is that call and nothing else (`f(a, b);`,
    its arguments calling nothing): evaluated once, it enters the callee once. (The IR is immutable and the
    cache holds `body`, so the ids stay its calls'.)"""
    out: dict[int, int] = {}
    for i, s in enumerate(body.body):
        if isinstance(s, ir.ExprStmt) and _reach(s)[1] == 1:
            e = s.expr
            while isinstance(e, ir.Cast):
                e = e.operand
            if isinstance(e, ir.Call):
                out[id(e)] = i
    return out


def may_note_again(keys: Iterable[tuple[int, int, int, int]], rest: Sequence[ir.Stmt], body: ir.Span,
                   entered: ir.Stmt | None = None) -> bool:
    """Whether evaluating `rest`, the statements left to run after the one that just ran in a kernel's body
    (so under no loop), may note any region of `keys` again, taken where it was found dead. With
    `entered`, the statement just ran is one of a helper's body, and `rest` is what is left of it and then
    of the kernel's body: `entered` is the kernel's statement running now, a call of that helper and nothing
    else (`call_statements`).

    A region is noted by the statement at its `key_position`, each time that statement runs: by one at that
    place in `rest` or `entered` (a macro expands to several statements at one place), or by a helper a call
    in `rest` inlines. A helper's statements lie in its own body, outside the kernel's (`body`), but for a lambda's
    or a local class's method, which lie inside it: those run only when called, so each region of theirs has a
    call line's key too, which any call left keeps (a launch of the kernel from device code is no call). So a
    region of the kernel's own body that nothing left sits at cannot be noted again; a region of a helper, or of
    a call line, can be whenever a call is left.
    Conservative: True when unsure."""
    places: set[tuple[int, int]] = set()
    calls = 0
    for s in rest:
        p, c = _reach(s)
        places |= p
        calls += c
    if entered is not None:
        places |= _reach(entered)[0]  # (its one call is running: no call of it is left)
    inside = ((body.line, body.column), (body.end_line, body.end_column))
    for key in keys:
        pos, call_line = key_position(key)
        if pos in places or (calls and (call_line or not inside[0] <= pos <= inside[1])):
            return True
    return False


def reversed_overrides(dead: dict[tuple[int, int, int, int], frozenset[str]],
                       assumed: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Sample overrides that reverse the order of the sampled parameters the dead regions' guards
    compare: each takes the samples of its mirror in declaration order (`min`/`max` swap), so a
    comparison between two of them flips. Empty when fewer than two such parameters."""
    names = [n for n in assumed if any(n in deps for deps in dead.values())
             and not n.startswith(("blockIdx", "gridDim"))]
    if len(names) < 2:
        return {}
    values = [assumed[n] for n in names]
    return {n: values[len(names) - 1 - i] for i, n in enumerate(names) if values[len(names) - 1 - i] != assumed[n]}


def other_overrides(dead: dict[tuple[int, int, int, int], frozenset[str]],
                    assumed: dict[str, tuple[int, ...]]) -> list[tuple[dict[str, tuple[int, ...]], str]]:
    """Further samples to try for regions neither the first nor the small samples reach, in order:
    the position-like ones (`is_position_name`) as the first positions (0 and 1) with the others as
    sampled (`for (i = rank * gridSize + tid; i < n; ...)` needs rank 0 and n large), the guards'
    parameters in reversed order, then each of them small with the others as sampled
    (`for (y = r + 1; y < h - r; y++)` needs a small r and a large h). (overrides, how) pairs."""
    out: list[tuple[dict[str, tuple[int, ...]], str]] = []
    names = [n for n in assumed if any(n in deps for deps in dead.values())
             and not n.startswith(("blockIdx", "gridDim"))]
    first = {n: FIRST_SAMPLES for n in names if is_position_name(n) and assumed.get(n) != FIRST_SAMPLES}
    if first:
        out.append((first, "with the position-like ones as the first positions (a rank or id, not a size)"))
    rev = reversed_overrides(dead, assumed)
    if rev:
        out.append((rev, "with their order reversed"))
    if len(names) >= 2:
        for n in names:
            out.append(({n: SMALL_SAMPLES}, "with only this one small"))
    return out


def describe_other(dead: dict[tuple[int, int, int, int], frozenset[str]],
                   overrides: dict[str, tuple[int, ...]], how: str) -> str:
    """The assumption line of a finding from one of the `other_overrides` evaluations."""
    shown = ", ".join(f"{n} = {' and '.join(str(v) for v in vals)}" for n, vals in sorted(overrides.items()))
    at = ", ".join(str(ln) for ln in sorted({k[2] for k in dead}))
    return (f"re-sampled {shown}: the code at line {at} is not reached when these parameters are sampled "
            f"in declaration order or small, so it was evaluated {how}")


_NEGATE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def negated(cond: ir.Expr) -> ir.Expr | None:
    """The comparison that holds where `cond` does not (`a != b` -> `a == b`), for the `else` of an
    `if` on one comparison; None for other conditions."""
    while isinstance(cond, ir.Cast):
        cond = cond.operand
    if isinstance(cond, ir.Binary) and cond.op in _NEGATE:
        return ir.Binary(_NEGATE[cond.op], cond.lhs, cond.rhs, cond.ctype, cond.span)
    if isinstance(cond, ir.Unary) and cond.op == "!":
        return cond.operand
    return None


def switched_parameter(cond: ir.Expr) -> str | None:
    """The parameter a `switch` selects on when its expression is just that parameter."""
    while isinstance(cond, ir.Cast):
        cond = cond.operand
    if isinstance(cond, ir.Ref) and cond.kind == "param":
        return cond.name
    return None
