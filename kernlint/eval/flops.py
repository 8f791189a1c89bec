"""Floating-point operations a statement issues itself, split FP32 / FP64, for the roofline.

Each `+ - * /` (and compound assignment `+= -= *= /=`) whose result type is `float` or `double`
counts one FLOP, so `a * b + c` (one FMA on the GPU) counts two, the usual convention (an FMA is
two FLOPs in every vendor peak figure). Integer arithmetic (index computations) is not counted,
nor comparisons, conversions or math-library calls (`sqrtf`, `expf`: several instructions each,
not modelled). Nested statements are counted when they run; the interpreter multiplies by the
lanes that execute each statement (`Interpreter.exec`).
"""
from __future__ import annotations

from kernlint.ir import nodes as ir

_ARITH = frozenset({"+", "-", "*", "/", "+=", "-=", "*=", "/="})
_CACHE: dict[int, tuple[object, tuple[int, int]]] = {}


def _float_size(t: ir.CType) -> int:
    return t.size if t.kind == "float" else 0


def expr_flops(e: object) -> tuple[int, int]:
    """(FP32, FP64) operations in expression `e`."""
    f32 = f64 = 0
    if e is None:
        return 0, 0
    for n in ir.walk(e):
        if isinstance(n, ir.Binary) and n.op in _ARITH:
            size = _float_size(n.ctype)
            if n.op.endswith("=") and size == 0:
                size = _float_size(getattr(n.lhs, "ctype", ir.UNKNOWN_TYPE))
            if size == 8:
                f64 += 1
            elif size in (2, 4):
                f32 += 1
    return f32, f64


def statement_flops(s: object) -> tuple[int, int]:
    """(FP32, FP64) operations a statement issues itself (its own expressions, not nested statements)."""
    hit = _CACHE.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    if isinstance(s, ir.ExprStmt):
        out = expr_flops(s.expr)
    elif isinstance(s, ir.VarDecl):
        out = expr_flops(s.init)
    elif isinstance(s, ir.Return):
        out = expr_flops(s.value)
    else:
        out = (0, 0)
    if len(_CACHE) > 100_000:
        _CACHE.clear()
    _CACHE[id(s)] = (s, out)
    return out
