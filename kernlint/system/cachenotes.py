"""Cache writes that failed, said once per run: recorded where a write fails, handed to the CLI as notes.

A cache that cannot be written (a read-only home, a full disk) costs only the speed-up, but the user
should know once why runs stay slow. Each cache records its failure here; the per-file lint
(kernlint/runner/parallel.py) moves the records into the file's notes, and the CLI prints each distinct
note once per run, whichever worker process met it first.
"""
from __future__ import annotations

import os

_failed: dict[str, str] = {}  # cache directory -> the note


def record(directory: str | os.PathLike[str], exc: BaseException) -> None:
    """A write under `directory` failed with `exc` (an OSError, usually)."""
    where = os.fspath(directory)
    if where in _failed:
        return
    why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    _failed[where] = (f"could not write the cache in {where} ({why}); results are not cached "
                      "(set KERNLINT_CACHE_DIR or XDG_CACHE_HOME to a writable directory, or KERNLINT_NO_CACHE=1)")


def take() -> tuple[str, ...]:
    """The notes recorded since the last call, forgotten here (the CLI says each distinct one once)."""
    out = tuple(_failed.values())
    _failed.clear()
    return out
