"""The per-file time budget of the analysis: one deadline per file, checked by the evaluator and the rules.

The step budget bounds the evaluator's work per kernel, but not the work around it (many kernels,
many launch shapes, rules such as KL201's padding search). The time budget bounds it all: the
file's lint sets a deadline (`running`), long loops ask `expired()`, and whatever is skipped once it
has passed is named in a KL904 ("not analysed: the file's time budget ran out"). It is smaller than
the worker timeout (kernlint/isolation.py), so a slow file ends with its findings so far and an honest
KL904 instead of being killed with nothing. Both count CPU time (`time.process_time`, the process's
threads included), not wall-clock time, so what is analysed does not depend on the machine's load.
"""
from __future__ import annotations

import contextlib
import time
from typing import Iterator

_deadline: float | None = None
_seconds: float | None = None


class OutOfTime(Exception):
    """The budget ran out where the work cannot stop part-way with a useful result (the front end)."""


def check() -> None:
    """Raise OutOfTime once the budget has run out."""
    if expired():
        raise OutOfTime(describe())


def expired() -> bool:
    """Whether the current file's budget has run out (never, outside a budgeted lint)."""
    return _deadline is not None and time.process_time() > _deadline


def seconds() -> float | None:
    """The current file's budget in seconds (None outside a budgeted lint)."""
    return _seconds


def describe() -> str:
    """'the file's time budget (10 s)', for messages."""
    return f"the file's time budget ({_seconds:g} s of CPU time; it is half of --timeout)" if _seconds else "the file's time budget"


@contextlib.contextmanager
def running(budget_s: float | None) -> Iterator[None]:
    """Set the budget for the lint inside the block (None or 0: no budget); nested blocks keep the outer one."""
    global _deadline, _seconds
    if not budget_s or _deadline is not None:
        yield
        return
    _deadline, _seconds = time.process_time() + budget_s, budget_s
    try:
        yield
    finally:
        _deadline = _seconds = None
