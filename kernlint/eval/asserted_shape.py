"""Launch shapes a kernel's own asserts pin down (`assert(blockDim.x == 4)`), for guessed shapes they rule out.

A kernel evaluated under a guessed block (no launch found, or its block did not fold) that asserts
`blockDim.x == bdx` fails that assert for every thread when the guess disagrees, and nothing it
evaluates is real (eval/interp.py `contradiction`). The evaluator records the value each such
assert asks for (`pins`); `asserted_shape` builds the block they describe: the pinned dimensions as
asserted, the first unpinned one filled so the block has the default 256 threads (a multiple of
32 when the pinned ones allow), the rest 1. The shape is still partly a guess and says which parts.
"""
from __future__ import annotations

from kernlint.ir import nodes as ir

DEFAULT_THREADS = 256


def dim_member(e: ir.Expr, builtin: str) -> str | None:
    """'x' for `blockDim.x` (through casts) when `builtin` is "blockDim", else None."""
    while isinstance(e, ir.Cast):
        e = e.operand
    if isinstance(e, ir.Member) and e.field in ("x", "y", "z"):
        base = e.base
        while isinstance(base, ir.Cast):
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind == "builtin" and base.name == builtin:
            return e.field
    return None


def pinned_sides(cond: ir.Expr) -> list[tuple[str, str, ir.Expr]]:
    """(builtin, dim, other side) for each `blockDim.d == e` / `gridDim.d == e` conjunct of an assert."""
    out: list[tuple[str, str, ir.Expr]] = []
    stack = [cond]
    while stack:
        c = stack.pop()
        while isinstance(c, ir.Cast) or (isinstance(c, ir.Unary) and c.op == "!" and isinstance(c.operand, ir.Unary)
                                         and c.operand.op == "!"):
            c = c.operand.operand if isinstance(c, ir.Unary) else c.operand  # `!!(cond)` of the assert macro
        if isinstance(c, ir.Binary) and c.op == "&&":
            stack.extend((c.lhs, c.rhs))
            continue
        if isinstance(c, ir.Binary) and c.op == "==":
            for a, b in ((c.lhs, c.rhs), (c.rhs, c.lhs)):
                for builtin in ("blockDim", "gridDim"):
                    d = dim_member(a, builtin)
                    if d is not None and dim_member(b, builtin) is None:
                        out.append((builtin, d, b))
    return out


def asserted_shape(pins: dict[tuple[str, str], tuple[int, int]],
                   guessed: tuple[int, int, int]) -> tuple[tuple[int, int, int], tuple[int, int, int] | None, str] | None:
    """(block, grid or None, description) from the asserts' pins ((builtin, dim) -> (value, line)),
    or None when they pin no block dimension or ask for an impossible block."""
    block_pins = {d: v for (b, d), (v, _ln) in pins.items() if b == "blockDim"}
    if not block_pins or any(v <= 0 for v in block_pins.values()):
        return None
    dims = [block_pins.get(d) for d in "xyz"]
    product = 1
    for v in dims:
        product *= v or 1
    if product > 1024:
        return None
    free = [i for i, v in enumerate(dims) if v is None]
    filled = ""
    for k, i in enumerate(free):
        if k == 0 and DEFAULT_THREADS % product == 0 and DEFAULT_THREADS // product > 1:
            dims[i] = DEFAULT_THREADS // product
            filled = f"blockDim.{'xyz'[i]} = {dims[i]} assumed ({DEFAULT_THREADS} threads)"
        else:
            dims[i] = 1
    block = (int(dims[0] or 1), int(dims[1] or 1), int(dims[2] or 1))
    grid_pins = {d: v for (b, d), (v, _ln) in pins.items() if b == "gridDim"}
    grid = None
    if grid_pins and all(v > 0 for v in grid_pins.values()):
        grid = tuple(int(grid_pins.get(d, 1)) for d in "xyz")  # type: ignore[assignment]
    lines = sorted({ln for (_v, ln) in pins.values()})
    pinned = ", ".join(f"{b}.{d} = {v}" for (b, d), (v, _ln) in sorted(pins.items()))
    text = (f"{pinned} from the kernel's assert{'s' if len(lines) > 1 else ''} at line "
            f"{', '.join(str(ln) for ln in lines)} (the guessed blockDim = {guessed} fails them)")
    if filled:
        text += f"; {filled}"
    return block, grid, text  # type: ignore[return-value]
