"""The CUDA shim precompiled (a clang PCH), for processes that parse several files: faster parses.

Every parse includes kernlint_cuda_shim.h, and parsing it costs about 10 ms per file (issue 17: the
front end is most of the CPU time of a small file). A process's third parse and those after it include
the shim as a PCH built once in the process (about 30 ms; a run of one or two files never pays for it).
The shim's declarations are the same ones, read from the PCH, so what the file's code means does not
change: the IR is the same (tests/test_shim_pch.py; every corpus file and fixture was compared).

`EXCLUDE` (on): the index leaves out the PCH's declarations (`clang_createIndex(excludeDeclarationsFromPCH=1)`,
clang-c/Index.h), which spares the lowering the ~1,400 shim cursors and ~850 builtin macros it would
otherwise skip through ctypes (about 7 % of a run over the corpus's 42 nvcc-compilable files). Such an
index lists the parse's top-level declarations instead of the translation unit's, which adds one kind
of cursor: the specializations clang makes for an explicit instantiation (`template __global__ void
k<float>(float*);`, `template class C<double>;`), each a definition at its template's place with
concrete types. The lowering skips those (clang_frontend._instantiated_at_template); every corpus file
and fixture gives the same IR with this index as with the shim as text (tests/test_shim_pch.py).

A PCH holds the predefined macros and language options it was built with: one is built per set of
parse arguments (architecture, command-line defines). Anything unexpected (the build fails, clang
reports a problem with the PCH) switches the PCH off for the rest of the process: parses then include
the shim as text, as before. The PCH lives in a private temporary directory of the process, removed
at exit; one left by a worker that was killed is removed by its parent (kernlint/system/leftovers.py), or
else by the next process that makes one. `KERNLINT_NO_PCH=1` always includes the shim as text.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

from kernlint.system.leftovers import PCH_DIR as _PREFIX

EXCLUDE = True  # see above (False: the index lists the PCH's declarations too)
WARM_PARSES = 2  # parses of a process before it builds a PCH (it costs about three parses of the shim)

_parses = 0
_disabled = False
_dir: str | None = None
_built: dict[tuple[str, ...], str | None] = {}  # parse arguments -> PCH path (None: building it failed)


def disable() -> None:
    """Include the shim as text from now on (clang had a problem with a PCH)."""
    global _disabled
    _disabled = True


def pch_for(ci: Any, shim: str, args: list[str]) -> str | None:
    """The PCH of `shim` for a parse with `args` (the arguments without the shim's `-include`), or None:
    include the shim as text. Counts the parse; the PCH is built on the process's third."""
    global _parses
    _parses += 1
    if _disabled or _parses <= WARM_PARSES or os.environ.get("KERNLINT_NO_PCH", "") not in ("", "0"):
        return None
    key = tuple(args)
    if key not in _built:
        _built[key] = _build(ci, shim, args, len(_built))
    return _built[key]


def _build(ci: Any, shim: str, args: list[str], n: int) -> str | None:
    global _dir
    try:
        if _dir is None:
            _sweep()
            _dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
            atexit.register(_remove, _dir)
            try:  # a forked worker process ends with os._exit: its finalizers run, its atexit handlers do not
                from multiprocessing import util

                util.Finalize(None, _remove, args=(_dir,), exitpriority=0)
            except Exception:  # noqa: BLE001 - atexit still covers an ordinary process
                pass
        path = os.path.join(_dir, f"shim-{n}.pch")
        tu = ci.Index.create().parse(shim, args=args, options=ci.TranslationUnit.PARSE_INCOMPLETE)
        if any(d.severity >= 3 for d in tu.diagnostics):  # an error in the shim itself: never expected
            return None
        tu.save(path)
        return path
    except Exception:  # noqa: BLE001 - the PCH only saves time: parse as before
        return None


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _sweep() -> None:
    """Remove the PCH directories of processes that no longer run (killed before their exit handlers)."""
    tmp = tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        pid_text = name[len(_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue  # still running (or not ours to signal): keep it
        except ProcessLookupError:
            pass
        except OSError:
            continue
        path = os.path.join(tmp, name)
        if os.path.isdir(path) and not os.path.islink(path):
            _remove(path)
