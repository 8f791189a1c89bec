"""The lint of a project file's reached kernels, done once per run and reused by every file that reaches them.

A kernel template defined in a header and instantiated by many files (one `.cu` per type, each
instantiating the same kernels of one `_kernel.cuh`) is linted with each of those files
(parallel._lint_reached): the same text, path, options and project index, so the same lint, once per
including file. It is done once here and reused, with everything the lint did besides returning its
result played again where the reuse happens, so that the reusing file's outcome is the one it would have
computed:

- the work budget (kernlint/base/deadline.py): the steps the lint charged are charged again, and the lint is
  reused only where it ran to its end within its budget and the reusing file has those steps left (then
  no `expired()` it asked could have answered otherwise); else it is done again;
- what it wrote on standard error, and the cache-failure notes it recorded (kernlint/system/cachenotes.py);
- the questions it asked of the project index and the files they named, into the reusing file's
  result-cache recording (resultcache._Recorder), so its cache entry depends on them as before.

A lint during which nvcc failed transiently (resources.TRANSIENT_FAILURES: the outcome must not be
cached) or that raised is not kept. Keys hold the file's text, the path it is shown under, every
LintOptions field (their equality leaves the index out), the identity of the project index (the entry
holds it, so the id stays its own) and whether a recording asked; the store is emptied when full and
whenever files on disk may have changed (`clear`: the server's forget_disk_state).
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import sys
from typing import Any, Callable

MAX_KEPT = 64  # reached files' lints kept; emptied when full

_KEPT: dict[tuple, "_Entry"] = {}
STATS = {"computed": 0, "reused": 0}  # for tests and bench/phases.py


class _Entry:
    __slots__ = ("index", "value", "steps", "stderr", "notes", "questions", "files")

    def __init__(self, index: Any, value: Any, steps: int, stderr: str, notes: dict[str, str],
                 questions: list, files: dict[str, Any]) -> None:
        self.index, self.value, self.steps, self.stderr = index, value, steps, stderr
        self.notes, self.questions, self.files = notes, questions, files


def clear() -> None:
    """Forget every kept lint (files on disk may have changed)."""
    _KEPT.clear()


def _recorder_of(project: Any) -> Any:
    from kernlint.runner.resultcache import _Recorder

    return project if isinstance(project, _Recorder) else None


def lint_once(text: str, shown: str, options: Any, extra_key: tuple, lint: Callable[[], Any]) -> Any:
    """`lint()` (the lint of `text`, shown as `shown`, under `options`, made into a value by the caller, which
    `extra_key` completes), or the value an earlier identical call returned, with its side effects replayed."""
    from kernlint.system import cachenotes
    from kernlint.base import deadline
    from kernlint.runner.resultcache import _transient_count

    rec = _recorder_of(options.project)
    index = rec._index if rec is not None else options.project
    key = (hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest(), shown, options, id(index),
           rec is not None, extra_key)
    hit = _KEPT.get(key)
    limit = deadline.limit()
    if hit is not None and hit.index is index and (limit is None or deadline.spent() + hit.steps <= limit):
        STATS["reused"] += 1
        deadline.charge(hit.steps)
        if hit.stderr:
            sys.stderr.write(hit.stderr)
        for where, note in hit.notes.items():
            cachenotes._failed.setdefault(where, note)
        if rec is not None:
            rec._deps.questions.extend(hit.questions)
            rec._deps.files.update(hit.files)
        return hit.value
    STATS["computed"] += 1
    spent0 = deadline.spent()
    notes0 = dict(cachenotes._failed)
    transient0 = _transient_count()
    q0 = len(rec._deps.questions) if rec is not None else 0
    files0 = dict(rec._deps.files) if rec is not None else {}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            value = lint()
    finally:
        said = err.getvalue()
        if said:
            sys.stderr.write(said)
    if deadline.expired() or _transient_count() != transient0:
        return value
    files = {}
    if rec is not None:
        files = {p: st for p, st in rec._deps.files.items() if p not in files0 or files0[p] != st}
    if len(_KEPT) >= MAX_KEPT:
        _KEPT.clear()
    _KEPT[key] = _Entry(index, value, deadline.spent() - spent0, said,
                        {w: n for w, n in cachenotes._failed.items() if w not in notes0},
                        list(rec._deps.questions[q0:]) if rec is not None else [], files)
    return value
