"""Pointer arguments a launch passes offset into their allocation (`kernel<<<g, b>>>(buf + padding)`).

kernlint assumes that a pointer parameter points to the start of an allocation (256-byte aligned, as
cudaMalloc returns), which decides KL103's misalignment. A launch that passes `buf + padding` (or a
local assigned from it, `float* src = buf + padding;`, also through a swap of such locals) may realign
or misalign every access; the offset is usually a host value kernlint does not fold. This module reads
the launch's argument texts and the host function's text before the launch and names, per argument,
the offset expression it found ("" for none), so KL103 can say "unless" instead of claiming what it
cannot know. Text-based, as the project scan is: a type is not known here, so the caller keeps the
results for pointer parameters only.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence

from kernlint.base.lazy_re import lazy_compile

_CAST = re.compile(r"^\(\s*(?:const\s+)?[A-Za-z_][\w:<>\s]*\*+\s*\)\s*")
MAX_DEPTH = 4


def _strip(text: str) -> str:
    t = " ".join(text.split())
    while True:
        m = _CAST.match(t)
        if m:
            t = t[m.end():].strip()
            continue
        if t.startswith("(") and t.endswith(")") and _balanced(t[1:-1]):
            t = t[1:-1].strip()
            continue
        return t


def _balanced(t: str) -> bool:
    depth = 0
    for c in t:
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0


def _top_level_sum(t: str) -> bool:
    """A `+` or binary `-` outside brackets: pointer arithmetic when the expression is a pointer."""
    depth = 0
    prev = ""
    for i, c in enumerate(t):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in "+-" and i > 0:
            nxt = t[i + 1] if i + 1 < len(t) else ""
            if nxt in "+-=>" or prev in "+-":
                prev = c
                continue  # ++, --, +=, ->
            if prev:  # (the last character before `c` that is no space: a binary operator follows an operand)
                return True
        if not c.isspace():
            prev = c
    return False


def _is_offset(t: str) -> bool:
    if t.startswith("&") and "[" in t:
        return not _FIRST_ELEMENT.fullmatch(t)
    return _top_level_sum(t)


_FIRST_ELEMENT = lazy_compile(r"&[^\[]*(?:\[\s*0\s*\]\s*)+")  # `&a[0]`, `&a[0][0]`: every subscript 0


def _first_value(rhs: str) -> str:
    """`rhs` up to its first comma outside brackets: in `float *src = buf, *dst = buf + pad;` the value
    assigned to `src` is `buf`, the rest declares `dst`."""
    depth = 0
    for i, c in enumerate(rhs):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            return rhs[:i]
    return rhs


def offset_of(arg: str, host_text: str, depth: int = 0, seen: frozenset[str] = frozenset(),
              values: Callable[[str], Iterable[str]] | None = None) -> str:
    """The offset expression behind one launch argument ("" when none is visible). `values(name)`, when
    given, stands for the right-hand sides `_assignments_of(name)` finds in `host_text` (an index of a
    host function's assignments read once for all its launches: project/scan.py)."""
    t = _strip(arg)
    if not t or depth > MAX_DEPTH:
        return ""
    if _is_offset(t):
        return t
    if not re.fullmatch(r"[A-Za-z_]\w*", t) or t in seen:
        return ""
    if values is None and not _assigned_somewhere(t, host_text):
        return ""
    # Every assignment of the name before the launch: `T* name = rhs;`, `name = rhs;` (not `==`).
    for value in (values(t) if values is not None else (m.group(1) for m in _assignments_of(t).finditer(host_text))):
        rhs = _first_value(value)
        found = offset_of(rhs, host_text, depth + 1, seen | {t}, values)
        if found:
            return f"{t} = {_strip(rhs)}" if found == _strip(rhs) else found
    return ""


def offset_candidate(value: str) -> bool:
    """Whether `offset_of` can find anything behind an assignment of `value` (an offset itself, or a name
    assigned in turn): the others can be left out of an index of a function's assignments."""
    t = _strip(_first_value(value))
    return bool(t) and (_is_offset(t) or re.fullmatch(r"[A-Za-z_]\w*", t) is not None)


def _assigned_somewhere(name: str, text: str) -> bool:
    """Whether `name` occurs in `text` followed by `=` (not `==`): the cheap test before the regex of
    `_assignments_of`, whose matches all are such occurrences."""
    i = text.find(name)
    while i >= 0:
        j = i + len(name)
        while j < len(text) and text[j].isspace():
            j += 1
        if text.startswith("=", j) and not text.startswith("==", j):
            return True
        i = text.find(name, i + 1)
    return False


@functools.lru_cache(maxsize=512)
def _assignments_of(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.>])\b{re.escape(name)}\s*=(?!=)\s*([^;{{}}]+);")


def arg_offsets(args: Sequence[str], host_text: str, values: Callable[[str], Iterable[str]] | None = None
                ) -> tuple[str, ...]:
    """`offset_of` for every argument; () when none has an offset (the common case stays small)."""
    out = tuple(offset_of(a, host_text, values=values) for a in args)
    return out if any(out) else ()
