"""libclang translation units kept for parses whose inputs are the same (same file text, arguments and files).

One lint parses the same inputs more than once: a fragment (a file another project file `#include`s, that
does not parse alone) is parsed through its includer, and the includer's text is the same for every
fragment it includes, with each fragment's own text equal to its disk copy (rodinia's srad_v1 main.cu,
through which its six kernel files are parsed); a kernel wanted alone (`kernel=`) reparses the file that
was just parsed whole. Over the corpus's 299 speed-bench files, 46 of 448 clang parses repeat an earlier
one (0.65 s of 3.5 s of clang in one process; interval.cu parses two inputs five times each).

A parse's result depends only on what clang reads: the arguments, the unsaved files (the text handed to
it), and the files it opens on disk. So the key is the arguments, the options and the unsaved files, an
unsaved file whose text is its disk copy's left out (it reads the same bytes); a kept unit is used again
only while every file it read from disk, and every directory it searched or read from, still has the size
and modification time it had: an edited header (`kernlint server`, a long-lived process) or a header
created where it would shadow the one found before is parsed again. The few most recent units are kept.
"""
from __future__ import annotations

import atexit
import hashlib
import os
from collections import OrderedDict
from typing import Any, Callable

MAX_UNITS = 4  # units kept (each holds libclang's AST of a file and its headers: a few MB)

_UNITS: "OrderedDict[str, tuple[Any, tuple[tuple[str, int, int], ...]]]" = OrderedDict()


def _disk_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return fh.read()
    except (OSError, ValueError):
        return None


def key(path: str, args: list[str], unsaved: list[tuple[str, str]], options: int) -> tuple[str, frozenset[str]]:
    """What a parse of `path` with these inputs depends on, besides the files clang opens on disk; and the
    unsaved files handed over with their disk copy's text (left out of the key, checked like disk files)."""
    h = hashlib.sha256()
    h.update(repr((path, tuple(args), options)).encode())
    handed = set()
    for name, text in sorted(unsaved):
        if text and text == _disk_text(name):
            continue  # (the same bytes as on disk: as if it were not handed over)
        handed.add(name)
        h.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"\0")
        h.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return h.hexdigest(), frozenset(handed)


def _stamp(paths: list[str], unsaved: set[str]) -> tuple[tuple[str, int, int], ...] | None:
    """(path, size, mtime) of each file read from disk; None when one cannot be looked at."""
    out = []
    for p in paths:
        if p in unsaved:
            continue
        try:
            st = os.stat(p)
        except OSError:
            return None
        out.append((p, st.st_size, st.st_mtime_ns))
    return tuple(out)


def kept(k: str, handed: frozenset[str]) -> bool:
    """Whether a unit is kept under `k` (`key`), its files unchanged (what `parse` would take)."""
    hit = _UNITS.get(k)
    return hit is not None and _stamp([p for p, _s, _m in hit[1]], handed) == hit[1]


def parse(k: str, handed: frozenset[str], disk_copies: list[str], run: Callable[[], Any],
          search_dirs: tuple[str, ...] = ()) -> Any:
    """The unit kept under `k` (`key`) if the files it read are unchanged, else `run()` (kept when it
    succeeds). `handed`: the unsaved files in the key; `disk_copies`: the others (checked as read from disk);
    `search_dirs`: the include directories, checked with the directories of the files read (a header
    created in one, which would shadow a header found later in the search, changes its mtime)."""
    hit = _UNITS.get(k)
    if hit is not None:
        tu, stamp = hit
        if _stamp([p for p, _s, _m in stamp], handed) == stamp:
            _UNITS.move_to_end(k)
            return tu
        del _UNITS[k]
    tu = run()
    if tu is not None:
        read = {inc.include.name for inc in tu.get_includes()} | {tu.spelling, *disk_copies}
        dirs = {os.path.dirname(p) for p in read} | set(search_dirs)
        stamp = _stamp(sorted(read | {d for d in dirs if d and os.path.isdir(d)}), handed)
        if stamp is not None:
            _UNITS[k] = (tu, stamp)
            while len(_UNITS) > MAX_UNITS:
                _UNITS.popitem(last=False)
    return tu


def clear() -> None:
    _UNITS.clear()


# Freed before the interpreter's shutdown tears down clang.cindex: a unit freed after it would print
# "Exception ignored in TranslationUnit.__del__" on the user's terminal.
atexit.register(clear)
