"""`loading`: the imports of a short-lived process (the command line) kept out of the cyclic garbage collector."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator

_short_lived = False


def short_lived() -> None:
    """Say that this process is the command line's: it lints and ends (set by its entry point only)."""
    global _short_lived
    _short_lived = True


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Around imports of the modules a short-lived process needs: what they create lives as long as the
    process, so no collection runs while they load (each would find nothing to free: two collections of
    ~20,000 young objects cost a run's start-up ~8 ms of CPU, issue 31), and it is then frozen out of later
    collections (`gc.freeze`: never traversed again, here or in the workers forked from here, whose
    copy-on-write pages it then leaves alone). Collections go on as before for everything made later. In any
    other process (tests, the language server) nothing changes: a freeze there would keep its garbage
    forever."""
    if not _short_lived or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
