"""Pure CUDA math functions and integer intrinsics folded per lane when their arguments are known."""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from kernlint.eval.values import Val, unknown

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def _bits(f: Callable[[int], int]) -> Callable[[np.ndarray], np.ndarray]:
    """Apply an integer bit function lane by lane (the arrays are at most samples x warps x 32)."""
    def apply(x: np.ndarray) -> np.ndarray:
        flat = [f(int(v)) for v in np.asarray(x, dtype=np.int64).ravel()]
        return np.array(flat, dtype=np.int64).reshape(np.shape(x))
    return apply


def _clz(bits: int) -> Callable[[int], int]:
    m = (1 << bits) - 1
    return lambda v: bits - (v & m).bit_length()


def _ffs(bits: int) -> Callable[[int], int]:
    m = (1 << bits) - 1
    return lambda v: ((v & m) & -(v & m)).bit_length()


def _brev(bits: int) -> Callable[[int], int]:
    m = (1 << bits) - 1
    return lambda v: int(format(v & m, f"0{bits}b")[::-1], 2)


def _popc(mask: int) -> Callable[[int], int]:
    return lambda v: bin(v & mask).count("1")


def _to_signed32(x: np.ndarray) -> np.ndarray:
    x = x & _M32
    return np.where(x >= 1 << 31, x - (1 << 32), x)


def _rint(x: np.ndarray) -> np.ndarray:
    return np.rint(x)  # round half to even, as cvt.rni


# name -> (function of float64 arrays, result is float). Float functions see float64 values: the
# folded numbers are loop bounds and sizes (`__powf(2, i)`), where single precision agrees.
_FLOAT1: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt, "exp": np.exp, "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "fabs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "rint": _rint,
    "nearbyint": _rint, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
}
_FLOAT2: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power, "fmin": np.fmin, "fmax": np.fmax, "hypot": np.hypot, "copysign": np.copysign,
    "fdim": lambda a, b: np.maximum(a - b, 0.0), "atan2": np.arctan2,
}
_FAST = {"__powf": "pow", "__expf": "exp", "__exp10f": "exp10", "__logf": "log", "__log2f": "log2",
         "__log10f": "log10", "__fsqrt_rn": "sqrt", "__fsqrt_rz": "sqrt", "__dsqrt_rn": "sqrt",
         "__frsqrt_rn": "rsqrt", "__sinf": "sin", "__cosf": "cos", "__tanf": "tan", "__tanhf": "tanh"}
_ARITH2 = {"__fadd_rn": np.add, "__fadd_rz": np.add, "__dadd_rn": np.add, "__fsub_rn": np.subtract,
           "__dsub_rn": np.subtract, "__fmul_rn": np.multiply, "__fmul_rz": np.multiply,
           "__dmul_rn": np.multiply, "__fdividef": np.divide, "__fdiv_rn": np.divide, "__ddiv_rn": np.divide}
# float -> int conversions with their rounding
_TO_INT = {"rn": _rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_INT_BITS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "__popc": _bits(_popc(_M32)), "__popcll": _bits(_popc(_M64)), "__clz": _bits(_clz(32)),
    "__clzll": _bits(_clz(64)), "__ffs": _bits(_ffs(32)), "__ffsll": _bits(_ffs(64)),
    "__brev": _bits(_brev(32)), "__brevll": _bits(_brev(64)),
}


@functools.lru_cache(maxsize=4096)
def _float_name(name: str) -> str | None:
    """`powf`/`pow` -> "pow"; None when `name` is not a float function folded here."""
    name = _FAST.get(name, name)
    for table in (_FLOAT1, _FLOAT2):
        if name in table:
            return name
        if name.endswith("f") and name[:-1] in table:
            return name[:-1]
    return None


@functools.lru_cache(maxsize=4096)  # a pure function of the name, asked at every call the evaluator meets
def is_pure(name: str) -> bool:
    """Whether `name` is a math function this module folds (its call has no side effects)."""
    return (_float_name(name) is not None or name in _ARITH2 or name in _INT_BITS
            or _conversion(name) is not None or name in ("fmaf", "fma", "__fmaf_rn", "__fma_rn", "__saturatef"))


@functools.lru_cache(maxsize=4096)
def _conversion(name: str) -> tuple[str, str] | None:
    """`__float2int_rn` -> ("int", "rn"); `__int2float_rn` -> ("float", "rn")."""
    for src in ("float", "double"):
        for dst in ("int", "uint", "ll", "ull"):
            prefix = f"__{src}2{dst}_"
            if name.startswith(prefix) and name[len(prefix):] in _TO_INT:
                return (dst, name[len(prefix):])
    for src in ("int", "uint", "ll", "ull"):
        for dst in ("float", "double"):
            prefix = f"__{src}2{dst}_"
            if name.startswith(prefix) and name[len(prefix):] in _TO_INT:
                return ("float", name[len(prefix):])
    if name in ("__double2float_rn", "__double2float_rz"):
        return ("float", name[-2:])
    return None


def fold(name: str, args: list[Val]) -> Val | None:
    """The value of `name(args...)` lane by lane, unknown when an argument is; None: not a math function."""
    if not is_pure(name):
        return None
    if any(a.data is None for a in args):
        return unknown(*args)
    deps = frozenset().union(*[a.deps for a in args]) if args else frozenset()
    x = [np.asarray(a.data, dtype=np.float64) for a in args]
    with np.errstate(all="ignore"):
        out: np.ndarray | None = None
        is_float = True
        fname = _float_name(name)
        if fname in _FLOAT1 and len(x) == 1:
            out = _FLOAT1[fname](x[0])
        elif fname in _FLOAT2 and len(x) == 2:
            out = _FLOAT2[fname](x[0], x[1])
        elif name in _ARITH2 and len(x) == 2:
            if name in ("__fdividef", "__fdiv_rn", "__ddiv_rn") and np.any(x[1] == 0):
                return unknown(*args)
            out = _ARITH2[name](x[0], x[1])
        elif name in ("fmaf", "fma", "__fmaf_rn", "__fma_rn") and len(x) == 3:
            out = x[0] * x[1] + x[2]
        elif name == "__saturatef" and len(x) == 1:
            out = np.clip(x[0], 0.0, 1.0)
        elif name in _INT_BITS and len(args) == 1:
            out = _INT_BITS[name](np.asarray(args[0].data).astype(np.int64))
            is_float = False
        else:
            conv = _conversion(name)
            if conv is not None and len(x) == 1:
                dst, mode = conv
                if dst == "float":
                    out = x[0]
                else:
                    if not np.all(np.isfinite(x[0])):
                        return unknown(*args)
                    r = _TO_INT[mode](x[0]).astype(np.int64)
                    out = _to_signed32(r) if dst == "int" else (r & _M32 if dst == "uint" else r)
                    is_float = False
    if out is None:
        return unknown(*args)
    if is_float:
        if not np.all(np.isfinite(out)):
            return unknown(*args)
        return Val(np.asarray(out, dtype=np.float64), deps, is_float=True)
    return Val(np.asarray(out, dtype=np.int64), deps)
