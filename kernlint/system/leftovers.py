"""Temporary files named by the process that makes them, and their removal after that process is killed.

A worker killed at its timeout (kernlint/system/isolation.py) runs no `finally`: a `TemporaryDirectory` it was
compiling in, or the temporary file of a cache write it was making, would stay behind. So each such name
carries the maker's pid (`kernlint-nvcc-<pid>-…` in the temporary directory, `.tmp-<pid>-…` next to a cache
entry), and the parent removes what a worker it killed left (`remove_for`). nvcc's own temporary files go
inside kernlint's directory (TMPDIR), so they go with it.

A process killed outright (SIGKILL of the main process, a machine reboot aside) removes nothing of its
own; the next run removes what processes no longer running left (`remove_dead`), judged by the pid in
each name: a pid that is running again (reused) keeps its files, which costs only disk space.
"""
from __future__ import annotations

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
    """The prefix of this process's temporary files beside a cache entry (renamed into place when complete)."""
    return f".tmp-{os.getpid()}-"


def remove_for(pid: int) -> list[str]:
    """Remove what process `pid` (dead) left: its nvcc and PCH directories and its cache-write temporary files
    (in the cache directory and the directories one level below it). What was removed."""
    removed: list[str] = []
    try:
        tmp = Path(tempfile.gettempdir())
        for p in [*tmp.glob(f"{NVCC_DIR}{pid}-*"), *tmp.glob(f"{PCH_DIR}{pid}-*")]:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
                removed.append(str(p))
    except OSError:
        pass

    root = cache_dir()
    if root is None:
        return removed
    pattern = f".tmp-{pid}-*"
    try:
        candidates = [*root.glob(pattern), *root.glob(f"*/{pattern}")]
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
_OWNED_CACHE = re.compile(r"\.tmp-(\d+)-")  # in the cache directory and the directories in it


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

    root = cache_dir()
    if root is not None:
        places += [(root, _OWNED_CACHE)]
        try:
            places += [(p, _OWNED_CACHE) for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
        except OSError:
            pass
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
    """Write `data` to `path` atomically (temporary file in the same directory + os.replace), so a
    concurrent reader sees the old file or the new one, never half of one. False if it could not
    be written (a read-only or full cache directory: the run goes on without the speed-up)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_file_prefix(), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        cachenotes.record(cache_dir() or path.parent, exc)  # a read-only or full cache directory: said once
        return False
    return True
