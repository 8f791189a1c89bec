"""`lazy_compile`: a module-level regular expression compiled at its first use instead of at import."""
from __future__ import annotations

import re
from typing import Any

_COMPILED_ATTRS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer", "scanner",
                   "flags", "groups", "groupindex")


class LazyPattern:
    """`re.compile(pattern, flags)`, compiled when one of its methods (`match`, `search`, `sub`, ...) or
    attributes other than `pattern` is first read; from then on the compiled pattern's bound methods are
    this object's own attributes, so a call costs what it costs on the compiled pattern. Use it only as
    `NAME.method(...)`: it is not an `re.Pattern` (not for `re.sub(NAME, ...)` or `isinstance`)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle probing special names: not the pattern's
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for attr in _COMPILED_ATTRS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r}, {self._flags!r})"


def lazy_compile(pattern: str | bytes, flags: int = 0) -> LazyPattern:
    """A module-level pattern that the common path of a lint does not use (a rule's rare case, a config
    file's syntax, compiler output, inline assembly): Python's `re` spends ~80 us compiling each pattern,
    and a process that never uses it should not pay at start-up (issue 31). A pattern every lint uses
    stays `re.compile`d."""
    return LazyPattern(pattern, flags)
