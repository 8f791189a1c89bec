"""Bounded integer arithmetic over C expression tokens: no `eval`, capped bit length and nesting depth."""
from __future__ import annotations

from typing import Sequence

from kernlint.base.lazy_re import lazy_compile

MAX_BITS = 64  # values (and intermediates) outside (-2**64, 2**64) are "unknown"
MAX_DEPTH = 32  # parentheses / unary operators nested deeper than this are "unknown"
MAX_DIGITS = 24  # longer literals are beyond MAX_BITS anyway (and never reach int(), which caps digits)
_LIMIT = 1 << MAX_BITS
_LITERAL = lazy_compile(r"(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*")

# Binary operators by C precedence, lowest first (C11 6.5.5-6.5.12).
_LEVELS: tuple[tuple[str, ...], ...] = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "//", "%"))


class _Unknown(Exception):
    """The expression has no bounded integer value kernlint will compute."""


def literal(tok: str) -> int | None:
    """The value of an integer literal token (`0x1F`, `128u`), or None if it is not one or is too long."""
    if len(tok) > MAX_DIGITS + 4 or not _LITERAL.fullmatch(tok):
        return None
    v = int(tok.rstrip("uUlL"), 0)
    return v if v < _LIMIT else None


def _check(v: int) -> int:
    if -_LIMIT < v < _LIMIT:
        return v
    raise _Unknown


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "//", "%"):
        if b == 0:
            raise _Unknown
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C truncates toward zero
        return _check(q if op != "%" else a - q * b)
    if op in ("<<", ">>"):
        if not 0 <= b < MAX_BITS:
            raise _Unknown  # C: undefined for negative or too-large counts
        return _check(a << b if op == "<<" else a >> b)
    if op == "*":
        if a and b and abs(a).bit_length() + abs(b).bit_length() > MAX_BITS + 1:
            raise _Unknown
        return _check(a * b)
    return _check({"+": a + b, "-": a - b, "&": a & b, "|": a | b, "^": a ^ b}[op])


def evaluate(tokens: Sequence[str | int]) -> int | None:
    """The value of `tokens` (ints, integer literals, operators, parentheses), or None when not bounded."""
    if not tokens or len(tokens) > 4096:
        return None
    toks = list(tokens)
    pos = 0

    def peek() -> str | int | None:
        return toks[pos] if pos < len(toks) else None

    def unary(depth: int) -> int:
        nonlocal pos
        if depth > MAX_DEPTH:
            raise _Unknown
        t = peek()
        pos += 1
        if isinstance(t, int):
            return _check(t)
        if t in ("-", "+", "~", "!"):
            v = unary(depth + 1)
            return _check(-v if t == "-" else v if t == "+" else ~v if t == "~" else int(not v))
        if t == "(":
            v = binary(0, depth + 1)
            if peek() != ")":
                raise _Unknown
            pos += 1
            return v
        if isinstance(t, str):
            v2 = literal(t)
            if v2 is not None:
                return v2
        raise _Unknown

    def binary(level: int, depth: int) -> int:
        nonlocal pos
        if level == len(_LEVELS):
            return unary(depth)
        v = binary(level + 1, depth)
        while peek() in _LEVELS[level]:
            op = str(peek())
            pos += 1
            v = _apply(op, v, binary(level + 1, depth))
        return v

    try:
        v = binary(0, 0)
    except (_Unknown, RecursionError):
        return None
    return v if pos == len(toks) else None
