"""Preprocessor directives read from text alone: whether a `#define` (with its continuation lines) spells
something. Shared by the front end (macros that launch) and the project's text checks (macros that make
kernels)."""
from __future__ import annotations

import re

_DEFINE_RE = re.compile(r"[ \t]*#[ \t]*define\b")


def define_spells(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether a match of `pattern` in `text` lies in a `#define`: the logical line holding it (back past
    the `\\`-continued lines before it) starts with `#define`."""
    for m in pattern.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        while start > 1 and text[start - 2] == "\\" or start > 2 and text[start - 3:start - 1] == "\\\r":
            start = text.rfind("\n", 0, start - 1) + 1
        if _DEFINE_RE.match(text, start):
            return True
    return False
