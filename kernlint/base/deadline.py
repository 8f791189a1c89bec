"""The per-file work budget of the analysis: work counted in evaluation steps, never in time.

The step budget bounds the evaluator's work per kernel, but not the work around it (many kernels,
many launch shapes, rules such as KL201's padding search, the lowering of a huge file). The file's
work budget bounds it all: the file's lint opens it (`running`), the evaluator `charge`s the steps it
takes (every CLOCK_EVERY steps, eval/limits.py) and the front end a fixed amount per statement it
lowers, long loops ask `expired()`, and whatever is skipped once it is spent is named in a KL904
("not analysed: the file's work budget ran out").

Work, not time: the same input spends the same steps on every machine and under any load, so what is
analysed, and so every verdict, does not depend on how busy the machine is (a CPU-time budget does:
on a loaded machine hyper-threads and caches are shared and the same work costs more CPU seconds).
The budget grows with `--timeout` at a fixed rate (`STEPS_PER_SECOND`, a conservative figure for this
code: measured at 170,000-400,000 steps per CPU second on the heaviest corpus files), so that it runs
out before the worker's CPU-time limit (kernlint/system/isolation.py), which remains only as the last guard
against a hang and says so when it fires (KL900).

Any cache that answers for work (a result reused instead of an evaluation) must charge the steps
recorded with it (`EvalResult.steps`), or the budget would depend on what ran before.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

# Steps of the file's work budget per second of --timeout. Half the timeout's seconds at this rate is
# the budget: 20 s (the default) gives 1,000,000 steps, about 2.5-6 s of CPU on the measured files.
STEPS_PER_SECOND = 100_000
# What lowering one statement is charged, in evaluation steps (the Python walk over libclang's cursors
# costs about as much CPU as this many steps of the evaluator).
LOWERING_STEPS = 20

_limit: int | None = None
_spent = 0


def steps_for(timeout_s: float | None) -> int | None:
    """The file's work budget for a --timeout of `timeout_s` seconds (None or 0: no budget)."""
    if not timeout_s:
        return None
    return max(1, int(timeout_s / 2 * STEPS_PER_SECOND))


def charge(steps: int) -> None:
    """Count `steps` of work against the current file's budget (nothing outside a budgeted lint)."""
    global _spent
    if _limit is not None:
        _spent += steps


def expired() -> bool:
    """Whether the current file's budget has run out (never, outside a budgeted lint)."""
    return _limit is not None and _spent > _limit


def limit() -> int | None:
    """The current file's budget in steps (None outside a budgeted lint)."""
    return _limit


def spent() -> int:
    """The steps charged to the current file so far (0 outside a budgeted lint)."""
    return _spent if _limit is not None else 0


def describe() -> str:
    """"the file's work budget (1,000,000 evaluation steps: ...)", for messages."""
    if not _limit:
        return "the file's work budget"
    return (f"the file's work budget ({_limit:,} evaluation steps: work, not time; the config key "
            f"`work-budget`, by default from --timeout)")


@contextlib.contextmanager
def running(steps: int | None) -> Iterator[None]:
    """Open a budget of `steps` for the lint inside the block (None or 0: no budget); nested blocks
    keep the outer one."""
    global _limit, _spent
    if not steps or _limit is not None:
        yield
        return
    _limit, _spent = int(steps), 0
    try:
        yield
    finally:
        _limit, _spent = None, 0
