"""Temporary files named by the process that makes them, and their removal after that process is killed.

A worker killed at its timeout (kernlint/system/isolation.py) runs no `finally`: a `TemporaryDirectory` it was
compiling in, or the temporary file of a cache write it was making, would stay behind. So each such name
carries the maker's pid (`kernlint-nvcc-<pid>-…` in the temporary directory, `.tmp-<pid>-…` in the cache
directory's CACHE_TEMP_DIR, renamed into place from there), and the parent removes what a worker it killed
left (`remove_for`). nvcc's own temporary files go inside kernlint's directory (TMPDIR), so they go with it.
Cache writes are made in one directory of their own so that finding what a dead process left costs a
listing of that directory, not of the whole cache (listing every cache directory cost each run ~50 ms of
CPU with a cache of ~22,000 files, issue 31).

A process killed outright (SIGKILL of the main process, a machine reboot aside) removes nothing of its
own; the next run removes what processes no longer running left (`remove_dead`), judged by the pid in
each name: a pid that is running again (reused) keeps its files, which costs only disk space.
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

from kernlint.system import cachenotes
from kernlint.system.cachedir import cache_dir

NVCC_DIR = "kernlint-nvcc-"
PCH_DIR = "kernlint-pch-"  # the precompiled shim of a process (kernlint/frontend/shim_pch.py)


def nvcc_dir_prefix() -> str:
    """The prefix of this process's nvcc working directories (in the temporary directory)."""
    return f"{NVCC_DIR}{os.getpid()}-"


def temp_file_prefix() -> str:
    """The prefix of this process's temporary files of cache writes (renamed into place when complete)."""
    return f".tmp-{os.getpid()}-"


CACHE_TEMP_DIR = ".kernlint-writes"  # in the cache directory: cache writes are made here, then renamed into place


def _cache_temp_dir() -> Path | None:
    root = cache_dir()
    return None if root is None else root / CACHE_TEMP_DIR


def remove_for(pid: int) -> list[str]:
    """Remove what process `pid` (dead) left: its nvcc and PCH directories and its cache-write temporary files.
    What was removed."""
    removed: list[str] = []
    try:
        tmp = Path(tempfile.gettempdir())
        for p in [*tmp.glob(f"{NVCC_DIR}{pid}-*"), *tmp.glob(f"{PCH_DIR}{pid}-*")]:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
                removed.append(str(p))
    except OSError:
        pass

    temps = _cache_temp_dir()
    if temps is None:
        return removed
    try:
        candidates = list(temps.glob(f".tmp-{pid}-*"))
    except OSError:
        return removed
    for p in candidates:
        try:
            if p.is_file() and not p.is_symlink():
                p.unlink()
                removed.append(str(p))
        except OSError:
            pass
    return removed


def process_tree(pid: int) -> list[int]:
    """The descendants of `pid` (children first), from /proc; [] where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as fh:
                data = fh.read()
            ppid = int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(e))
    out: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        c = todo.pop(0)
        out.append(c)
        todo.extend(children.get(c, ()))
    return out


_OWNED_TMP = re.compile(r"(?:kernlint-nvcc-|kernlint-pch-)(\d+)-")  # in the temporary directory
_OWNED_CACHE = re.compile(r"\.tmp-(\d+)-")  # in CACHE_TEMP_DIR


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process, running
        return True
    return True


def remove_dead() -> list[str]:
    """Remove the nvcc and PCH directories in the temporary directory, and the cache-write temporary files
    in the cache directory, of processes that are not running (killed before they could); what was
    removed. Only this user's, and never this process's."""
    pids: set[int] = set()
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    places = [(Path(tempfile.gettempdir()), _OWNED_TMP)]
    temps = _cache_temp_dir()
    if temps is not None:
        places.append((temps, _OWNED_CACHE))
    for place, owned in places:
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for e in entries:
            m = owned.match(e.name)
            if m is None:
                continue
            try:
                if uid is not None and e.stat(follow_symlinks=False).st_uid != uid:
                    continue
            except OSError:
                continue
            pids.add(int(m.group(1)))
    removed: list[str] = []
    for pid in sorted(pids):
        if pid != os.getpid() and not _running(pid):
            removed += remove_for(pid)
    return removed


def atomic_write(path: Path, data: bytes) -> bool:
    """Write `data` to `path` atomically (a temporary file, then os.replace), so a concurrent reader sees the
    old file or the new one, never half of one. The temporary file is made in CACHE_TEMP_DIR
    when `path` is in the cache directory, else (or where the rename would cross file systems: a directory
    of the cache linked elsewhere) in `path`'s own directory. False if it could not be written (a read-only
    or full cache directory: the run goes on without the speed-up)."""
    temps = _cache_temp_dir()
    places = [path.parent]
    if temps is not None and temps.parent in path.parents:
        places.insert(0, temps)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for k, place in enumerate(places):
            place.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=place, prefix=temp_file_prefix(), suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, path)
                break
            except BaseException as exc:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                if not (isinstance(exc, OSError) and exc.errno == errno.EXDEV and k + 1 < len(places)):
                    raise
    except OSError as exc:
        cachenotes.record(cache_dir() or path.parent, exc)  # a read-only or full cache directory: said once
        return False
    return True
