"""The source edits of KL201's XOR swizzle: every `tile[r][c]` of one shared array becomes `tile[r][c ^ r]`.

A swizzle changes where each element lives, so it is only correct when *every* use of the array is
rewritten the same way. The edits are therefore computed from the source text, conservatively: every
occurrence of the array's name outside comments and strings (besides its declaration) must be a
plain two-subscript access `name[row][col]` on one line, with no side effects in either index, and,
for an array declared in a kernel, inside that kernel. Anything else (the array passed to a function,
`sizeof`, a pointer taken, an index spread over lines) means no edit: the fix stays a sentence.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from kernlint.base.diagnostics import Edit
from kernlint.base.lazy_re import lazy_compile

_SIDE_EFFECT = lazy_compile(r"\+\+|--|(?<![=!<>])=(?!=)")
_SIMPLE = lazy_compile(r"\s*[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*|\s*\d+\s*")


def mask_comments_and_strings(lines: Sequence[str]) -> list[str]:
    """`lines` with comments, string and character literals replaced by spaces (same line lengths)."""
    out: list[str] = []
    in_block = False
    for line in lines:
        chars = list(line)
        i, n = 0, len(line)
        while i < n:
            if in_block:
                end = line.find("*/", i)
                stop = n if end < 0 else end + 2
                chars[i:stop] = " " * (stop - i)
                in_block = end < 0
                i = stop
                continue
            two = line[i:i + 2]
            if two == "//":
                chars[i:] = " " * (n - i)
                break
            if two == "/*":
                in_block = True
                continue
            if line[i] in "\"'":
                quote, j = line[i], i + 1
                while j < n and line[j] != quote:
                    j += 2 if line[j] == "\\" else 1
                stop = min(j + 1, n)
                chars[i:stop] = " " * (stop - i)
                i = stop
                continue
            i += 1
        out.append("".join(chars))
    return out


def _bracket(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of the inside of the `[...]` group opening at or after `pos` (spaces skipped)."""
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text) or text[pos] != "[":
        return None
    depth = 0
    for j in range(pos, len(text)):
        if text[j] == "[":
            depth += 1
        elif text[j] == "]":
            depth -= 1
            if depth == 0:
                return pos + 1, j
    return None


def _wrap(expr: str) -> str:
    s = expr.strip()
    return s if _SIMPLE.fullmatch(expr) else f"({s})"


def swizzle_edits(lines: Sequence[str], root: str, decl_line: int, scope: tuple[int, int] | None,
                  rows: int, cols: int) -> tuple[Edit, ...]:
    """Edits turning every `root[r][c]` of the file into `root[r][c ^ r]` (or `c ^ (r % cols)`), or ().

    `lines` is the file; `decl_line` the line of the declaration; `scope` the (first, last) line of the
    kernel for an array declared in a kernel (None for a file-scope array: the whole file).
    """
    if cols < 2 or cols & (cols - 1):
        return ()
    masked = mask_comments_and_strings(lines)
    name = re.compile(r"(?<![\w.>])" + re.escape(root) + r"\b")
    edits: list[Edit] = []
    declared = False
    for no, text in enumerate(masked, start=1):
        for m in name.finditer(text):
            if no >= decl_line and not declared:
                declared = True  # the declaration itself (its first occurrence from its first line on)
                continue
            if scope is not None and not scope[0] <= no <= scope[1]:
                return ()  # the kernel-local array's name used elsewhere: not the same array, or a macro
            if text[:m.start()].rstrip().endswith("&"):
                return ()  # an element's address taken: later uses go through the pointer
            first = _bracket(text, m.end())
            second = _bracket(text, first[1] + 1) if first is not None else None
            if first is None or second is None or _bracket(text, second[1] + 1) is not None:
                return ()
            row = lines[no - 1][first[0]:first[1]]
            col = lines[no - 1][second[0]:second[1]]
            if not row.strip() or not col.strip() or _SIDE_EFFECT.search(row) or _SIDE_EFFECT.search(col):
                return ()
            xor = _wrap(row) if rows <= cols else f"({_wrap(row)} % {cols})"
            edits.append(Edit(no, second[0] + 1, no, second[1] + 1, f"{_wrap(col)} ^ {xor}",
                              f"swizzle the column of {root}"))
    return tuple(edits) if declared and edits else ()
