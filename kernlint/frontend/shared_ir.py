"""IR of device functions shared between parses that see the same text up to the function's end.

A template kernel is evaluated per binding as its own parse (`frontend.instantiate`: the kernel's text made
concrete, the rest of the file unchanged), and each such parse lowered the helpers the kernel calls again.
C++ is read top down: a free function's lowering depends only on the options of the parse and on the text
up to its end (the declarations it may use come before it), plus the problems clang reports inside it
(a helper template instantiated by the concrete kernel may get some). With all of those the same, the IR
is the same: it is lowered once per file's lint and shared (frozen data). In an instance parse, the text
of a function after the concrete kernel is read with the binding's part left out, so the kernel's
bindings share it too (clang_frontend._deferring_table's `masked`). Methods (their class may be
completed later in the text) and functions of other files (their include point is not tracked) are not
shared. The store is emptied when the file is done (`clear`, from `release_parses`): a header the text
includes may change on disk before the next lint (a long-running editor server), and its content is
not part of the key.
"""
from __future__ import annotations

import hashlib
from typing import Callable

from kernlint.ir import nodes as ir

_SHARED: dict[tuple, ir.Function] = {}
MAX_SHARED = 2048  # functions kept; emptied when full (memory stays bounded over many files)


def clear() -> None:
    """Forget every shared function (the file whose parses shared them is done)."""
    _SHARED.clear()


def parse_identity(*parts: object) -> str:
    """A digest of what a parse's IR depends on besides the main file's text (clang's arguments, the
    includer's text, the stubbed headers)."""
    return hashlib.sha1(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()


def lowered(identity: str, key: str, prefix: bytes, problems: tuple[ir.ParseProblem, ...],
            lower: Callable[[], ir.Function]) -> ir.Function:
    """The function `key` lowered by `lower()`, or the same function lowered by an earlier parse with the
    same `identity`, the same main-file text up to the function's end (`prefix`) and the same `problems`
    inside it."""
    k = (identity, key, hashlib.sha1(prefix).digest(), problems)
    hit = _SHARED.get(k)
    if hit is not None:
        return hit
    fn = lower()
    if len(_SHARED) >= MAX_SHARED:
        _SHARED.clear()
    _SHARED[k] = fn
    return fn
