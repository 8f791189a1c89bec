"""Where a parse's kernel launches can be spelled: in a host function's own text, or through a macro of
the file, of a header the parse read, or of the command line (frontend/clang_frontend._lower walks only the
host functions that may launch)."""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable

from kernlint.frontend.clang_base import STUB_DIR, shim_path
from kernlint.ir.directives import define_spells

LAUNCH_MARKS = ("<<<", "cudaLaunchKernel", "cudaLaunchCooperativeKernel")
"""Text every kernel launch spells: `<<<`, or a runtime-API launch's name (`cudaLaunchKernelEx` included)."""

LAUNCH_BYTES = tuple(m.encode() for m in LAUNCH_MARKS)
_LAUNCH_RE = re.compile("|".join(re.escape(m) for m in LAUNCH_MARKS))


def _marked(text: str) -> bool:
    return any(m in text for m in LAUNCH_MARKS)


def _marked_define(text: str) -> bool:
    """Whether a `#define` of `text` (with its continuation lines) spells a launch."""
    return define_spells(text, _LAUNCH_RE)


def launches_outside(included: list[str], text: str, defines: Iterable[str], parse_path: str,
                      shadowed: set[str]) -> bool:
    """Whether a launch can reach the main file's host code through a macro: a command-line define, or a
    `#define` of the main file or of any file the parse read (a header, the shim), that spells one. When
    none does, a host function whose own text spells no launch launches nothing (see `_lower`)."""
    if any(_marked(d) for d in defines) or _marked_define(text):
        return True
    for name in included:
        if name == parse_path or name.startswith(STUB_DIR + "/") or name in shadowed:
            continue  # the main file, or read as an empty stub
        try:
            st = os.stat(name)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue  # (never open a FIFO or a device)
        try:
            if _file_marked(name, st):
                return True
        except OSError:
            return True  # unreadable: assume it may
    try:
        return _file_marked(shim_path(), os.stat(shim_path()))
    except OSError:
        return True


_MARKED_FILES: dict[tuple[str, int, int], bool] = {}
"""(a header's name, modification time, size) -> whether a `#define` of it spells a launch: each parse asks it
of every header it read (cuda-samples' helper headers are read by most of its files)."""


def _file_marked(name: str, st: os.stat_result) -> bool:
    """`_marked_define` of the file `name` (whose `os.stat` is `st`); raises OSError when it cannot be read."""
    key = (name, st.st_mtime_ns, st.st_size)
    hit = _MARKED_FILES.get(key)
    if hit is None:
        with open(name, "rb") as fh:
            hit = _marked_define(fh.read().decode("utf-8", "replace"))
        if len(_MARKED_FILES) >= 4096:
            _MARKED_FILES.clear()
        _MARKED_FILES[key] = hit
    return hit
