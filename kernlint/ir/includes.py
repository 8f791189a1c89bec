"""Which `#include`s of a source cannot be resolved: the text pre-scan shared by the front end and nvcc."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from kernlint.base.frozen import frozen

# `[ \t]*`, not `\s*`: with re.M, `^\s*` rescans a whole run of blank lines from each of its line
# starts (quadratic: 200,000 blank lines took minutes).
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)

SCAN_HEADERS = 256
SCAN_BYTES = 1 << 20
"""How many found local headers the pre-scan reads (and how much of each) for nested includes."""


@frozen
class Unresolved:
    """`names`: includes found nowhere (as written). `paths`: absolute paths that must not be opened:
    absolute includes that do not exist, and includes that resolve to a FIFO, a device or a directory."""

    names: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()


def scan_includes(text: str, path: str, include_dirs: tuple[str, ...]) -> Unresolved:
    """Includes of `text`, and of the local headers it reaches, that the include path does not resolve.

    Resolution is the compiler's: a quoted include in the includer's directory first, then each
    include directory in order (system directories are not known here: a caller that has them must
    look there itself, or search its stubs after them). Found regular headers are read, up to
    SCAN_HEADERS of them, for their own includes, so a single parse usually meets every missing one.
    Includes under `#if` are scanned too; a stub that is never included costs nothing.
    """
    names: set[str] = set()
    paths: set[str] = set()
    here = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    for step in walk_includes(text, here, include_dirs):
        if step.kind == "missing":
            (paths if os.path.isabs(step.name) else names).add(step.name)
        elif step.kind == "special":
            paths.add(os.path.abspath(step.found))
    return Unresolved(frozenset(names), frozenset(paths))


@frozen
class IncludeStep:
    """One `#include` met by `walk_includes`. `kind`: "missing" (found nowhere), "special" (a FIFO, device or
    directory: never opened), "seen" (a header already met), "limit" (past SCAN_HEADERS), "unreadable",
    or "read" (a regular header, its first SCAN_BYTES in `text`, `cut` when it was longer)."""

    name: str
    kind: str
    found: str = ""
    text: str = ""
    cut: bool = False


def walk_includes(text: str, here: str, include_dirs: Sequence[str]) -> Iterator[IncludeStep]:
    """Each `#include` of `text` (whose quoted includes are searched from `here` first) and of the regular
    headers it reaches, read once each up to SCAN_HEADERS of them, resolved as `scan_includes` says."""
    seen: set[str] = set()
    dirs = [os.path.abspath(d) for d in include_dirs]
    queue = [(text, here)]
    while queue:
        body, at = queue.pop()
        for m in INCLUDE_RE.finditer(body):
            name = m.group(2).strip()
            if not name:
                continue
            if os.path.isabs(name):
                candidates = [name]
            else:
                candidates = [os.path.join(d, name) for d in ([at] if m.group(1) == '"' else []) + dirs]
            found = next((c for c in candidates if _exists(c)), None)
            if found is None:
                yield IncludeStep(name, "missing")
            elif not os.path.isfile(found):
                yield IncludeStep(name, "special", found)
            else:
                real = os.path.realpath(found)
                if real in seen:
                    yield IncludeStep(name, "seen", found)
                    continue
                if len(seen) >= SCAN_HEADERS:
                    yield IncludeStep(name, "limit", found)
                    continue
                seen.add(real)
                got = read_header(real)
                if got is None:
                    yield IncludeStep(name, "unreadable", found)
                    continue
                yield IncludeStep(name, "read", found, got[0], got[1])
                queue.append((got[0], os.path.dirname(found)))


_HEADERS: dict[str, tuple[tuple[int, int], str, bool]] = {}
"""Per header (its real path): (mtime in ns, size) when read, its first SCAN_BYTES decoded, and whether it
was longer (cut)."""


def read_header(path: str) -> tuple[str, bool] | None:
    """A header's text (its first SCAN_BYTES, decoded as UTF-8 with replacement) and whether it was cut
    there; read once per process while its mtime and size stay the same. None when it cannot be read."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
        hit = _HEADERS.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1], hit[2]
        with open(path, "rb") as fh:
            data = fh.read(SCAN_BYTES + 1)
    except (OSError, ValueError):
        return None
    text, cut = data[:SCAN_BYTES].decode("utf-8", "replace"), len(data) > SCAN_BYTES
    if len(_HEADERS) > 4096:
        _HEADERS.clear()
    _HEADERS[path] = (stamp, text, cut)
    return text, cut


def _exists(candidate: str) -> bool:
    try:
        return os.path.exists(candidate)
    except (OSError, ValueError):  # a name with a NUL byte, a path too long
        return False
