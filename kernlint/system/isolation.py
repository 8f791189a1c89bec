"""Worker isolation: each file is linted in a reused worker process under a CPU-time limit and a memory limit.

libclang cannot be trusted with hostile input: deeply nested code overflows the stack of its parse
thread (SIGSEGV), and a few bytes of unbalanced `<` take minutes and gigabytes. So files are linted
in worker processes, each with `RLIMIT_AS` (address space) set in the worker and no core dumps; the
parent waits on each worker with a deadline. A worker that dies (signal, exit) or runs past the
timeout is killed and replaced, and its file gets one error-severity KL900 ("the C++ front end
crashed / gave up on this file"); the other files are still linted. Outcomes are yielded in input
order, so the output does not depend on the number of workers.

A worker that had linted other files before it died may have died of their garbage (memory limit)
rather than of this file, so its file is tried once more in a fresh worker before it is blamed.
Workers are forked from the parent while the parent has not loaded libclang (cheap: the imports are
inherited), else started from a forkserver (libclang's state is not fork-safe).
"""
from __future__ import annotations

import os
import signal
import time
from collections import deque
from typing import Any, Callable, Iterator, Sequence

from kernlint.base.frozen import frozen

DEFAULT_TIMEOUT_S = 20.0  # per file, CPU seconds of the worker (config `timeout`)
WALL_FACTOR = 4.0  # the wall-clock backstop, in timeouts: a worker blocked without computing
POLL_S = 0.25  # how often the workers' CPU time is read while they work
DEFAULT_MEMORY_MB = 1024  # address space of one worker (config `memory-limit`); ~0.3 GB is used before any file


@frozen
class Limits:
    """Per-file timeout (CPU seconds) and per-worker address-space limit (MiB); None: no limit."""

    timeout_s: float | None = DEFAULT_TIMEOUT_S
    memory_mb: int | None = DEFAULT_MEMORY_MB


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far (its threads included), None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        fields = data[data.rindex(b")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _apply_limits(limits: Limits) -> None:
    """In the worker: no core files (a crash must not write into the user's directory), the memory cap."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass
    if limits.memory_mb:
        want = int(limits.memory_mb) * 1024 * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))
        except (ValueError, OSError):
            pass


def _die_with_parent(parent: int | None) -> None:
    """In a worker: be killed when the process that started it ends, however it ends (SIGKILL included:
    a worker blocked in `recv` would outlive it, holding its stdout and temporary files: issue 30).
    Linux's parent-death signal (prctl PR_SET_PDEATHSIG, prctl(2)); where there is none, the pipe to the
    parent still ends the worker once no other process holds its far end. `parent`: the pid the worker
    was forked from, to catch a parent that died before the signal was set."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's prctl among them
        pr_set_pdeathsig = 1  # <linux/prctl.h>
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent ended before the signal was set: nothing will send it


def _serve(conn: Any, limits: Limits, quiet: bool, parent: int | None = None) -> None:
    """A worker's loop: receive (index, task), send (index, outcome, retire) until told to stop."""
    import gc

    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends its workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the CLI's handler, inherited by a fork, is the parent's)
    try:
        # The report is the parent's to print: a worker's standard output is not it (and a worker holding the
        # parent's stdout open would keep a reader of it waiting).
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.close(fd)
    except OSError:
        pass
    gc.enable()  # the CLI pauses the collector for its own short life; a worker lints many files
    if quiet:
        import faulthandler

        faulthandler.disable()  # inherited from a parent (pytest) that enabled it: no dumps on our crashes
        # What native code prints on its way down (libclang's "terminate called ...") would interleave
        # with the parent's output differently with each -j; Python-level stderr is captured per file.
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 2)
            os.close(fd)
        except OSError:
            pass
    _apply_limits(limits)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        index, fn, task = msg
        try:
            out = fn(task)
            retire = False
        except MemoryError:
            out, retire = None, True
        try:
            conn.send((index, out, retire))
        except MemoryError:
            return  # the parent sees the worker gone and retries the file in a fresh one
        except Exception as exc:  # noqa: BLE001 - e.g. an outcome that does not pickle
            conn.send((index, ("unpicklable", f"{type(exc).__name__}: {exc}"), False))
        if retire:
            return


class _Worker:
    def __init__(self, ctx: Any, limits: Limits, quiet: bool) -> None:
        parent, child = ctx.Pipe(duplex=True)
        # A forked worker's parent is this process; one from a forkserver has the server as its parent.
        creator = os.getpid() if ctx.get_start_method() == "fork" else None
        self.proc = ctx.Process(target=_serve, args=(child, limits, quiet, creator), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        self.index: int | None = None  # the task in flight
        self.started = 0.0
        self.cpu0: float | None = None  # the worker's CPU seconds when its file was handed over
        self.served = 0  # tasks completed

    def submit(self, index: int, fn: Callable[[Any], Any], task: Any) -> bool:
        try:
            self.conn.send((index, fn, task))
        except (OSError, EOFError, ValueError):
            return False
        self.index, self.started = index, time.monotonic()
        self.cpu0 = cpu_seconds(self.proc.pid)
        return True

    def over_time(self, timeout_s: float, now: float) -> str:
        """Why the file in flight is past the timeout ("" while it is not)."""
        used = cpu_seconds(self.proc.pid)
        if used is not None and self.cpu0 is not None:
            if used - self.cpu0 >= timeout_s:
                return f"no result within {timeout_s:g} s of CPU time"
            if now - self.started >= WALL_FACTOR * timeout_s:
                return f"no result within {WALL_FACTOR * timeout_s:g} s (blocked, not computing)"
            return ""
        return f"no result within {timeout_s:g} s" if now - self.started >= timeout_s else ""

    def stop(self, kill: bool = False) -> None:
        if kill and self.proc.is_alive():
            # What the worker started (nvcc in its own session, and nvcc's cicc/ptxas) dies with it: found
            # before the worker is gone (then they are reparented and no longer its descendants).
            from kernlint.system.leftovers import process_tree

            tree = process_tree(self.proc.pid) if self.proc.pid else []
            try:
                self.proc.kill()
            except OSError:
                pass
            _kill_all(tree)
        elif self.proc.is_alive():
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
        try:
            self.conn.close()
        except OSError:
            pass
        self.proc.join(timeout=None if kill else 5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        if kill or self.proc.exitcode:
            # Killed, or dead of a signal or an error: no `finally` of its ran. Its temporary files go.
            from kernlint.system.leftovers import remove_for

            remove_for(self.proc.pid)


def _kill_all(pids: list[int]) -> None:
    """SIGKILL each of `pids` and, for one that leads a process group of its own (nvcc started with a
    new session), that whole group; never this process's own group."""
    own = os.getpgrp()
    for pid in pids:
        try:
            group = os.getpgid(pid)
        except OSError:
            group = None
        try:
            if group is not None and group == pid and group != own:
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _context() -> Any:
    import multiprocessing as mp

    methods = mp.get_all_start_methods()
    try:
        import clang.cindex as ci

        clang_loaded = bool(ci.Config.loaded)
    except Exception:  # noqa: BLE001 - no bindings: nothing native to protect from fork
        clang_loaded = False
    if "fork" in methods and not clang_loaded:
        return mp.get_context("fork")
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["kernlint.engine.lint", "kernlint.runner.parallel"])
        return ctx
    return mp.get_context("spawn")


@frozen
class Failure:
    """Why a task produced no outcome: `kind` is "crash", "timeout", "memory" or "unpicklable"."""

    kind: str
    detail: str


def _death_detail(code: int | None) -> tuple[str, str]:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return "memory", f"killed by {name} (out of memory?)"
        return "crash", f"killed by {name}"
    return "crash", f"exited with status {code}"


def run_isolated(fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int, limits: Limits,
                 quiet: bool = True) -> Iterator[tuple[int, Any]]:
    """Yield (index, fn(task) or Failure) for each task, in input order, from `workers` isolated processes."""
    ctx = _context()
    workers = max(1, min(workers, len(tasks)))
    pending: deque[tuple[int, bool]] = deque((i, False) for i in range(len(tasks)))  # (index, retried)
    retried: set[int] = set()
    done: dict[int, Any] = {}
    pool: list[_Worker] = []
    next_out = 0
    from multiprocessing.connection import wait

    def fail(w: _Worker, kind: str, detail: str) -> None:
        i = w.index
        assert i is not None
        w.index = None
        if kind != "timeout" and w.served > 0 and i not in retried:
            retried.add(i)  # maybe the garbage of earlier files: once more, alone in a fresh worker
            pending.appendleft((i, True))
            return
        done[i] = Failure(kind, detail)

    try:
        while next_out < len(tasks):
            # Replace dead idle workers, then hand out work (a retried task gets a fresh worker).
            for k, w in enumerate(pool):
                if w.index is None and not w.proc.is_alive():
                    w.stop()
                    pool[k] = _Worker(ctx, limits, quiet)
            while pending:
                i, fresh = pending[0]
                idle = [w for w in pool if w.index is None and (not fresh or w.served == 0)]
                if not idle and fresh:
                    spare = [k for k, w in enumerate(pool) if w.index is None]
                    if spare:
                        pool[spare[0]].stop()
                        pool[spare[0]] = _Worker(ctx, limits, quiet)
                        idle = [pool[spare[0]]]
                if not idle and len(pool) < workers:
                    pool.append(_Worker(ctx, limits, quiet))
                    idle = [pool[-1]]
                if not idle:
                    break
                w = idle[0]
                if not w.submit(i, fn, tasks[i]):
                    w.stop(kill=True)
                    pool[pool.index(w)] = _Worker(ctx, limits, quiet)
                    continue
                pending.popleft()
            while next_out in done:
                yield next_out, done.pop(next_out)
                next_out += 1
            if next_out >= len(tasks):
                break
            busy = [w for w in pool if w.index is not None]
            if not busy:
                continue
            now = time.monotonic()
            wait_s = None
            if limits.timeout_s:
                wait_s = max(0.0, min(w.started + limits.timeout_s for w in busy) - now)
                if any(w.cpu0 is not None for w in busy):
                    wait_s = min(POLL_S, max(0.0, min(w.started + WALL_FACTOR * limits.timeout_s
                                                      for w in busy) - now))
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=wait_s))
            now = time.monotonic()
            for k, w in enumerate(pool):
                if w.index is None:
                    continue
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if not w.conn.poll():
                            raise EOFError
                        i, out, retire = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(timeout=5)
                        kind, detail = _death_detail(w.proc.exitcode)
                        fail(w, kind, detail)
                        w.stop(kill=True)
                        pool[k] = _Worker(ctx, limits, quiet)
                        continue
                    except Exception as exc:  # noqa: BLE001 - a garbled message: the worker is suspect
                        fail(w, "crash", f"sent an unreadable result ({type(exc).__name__})")
                        w.stop(kill=True)
                        pool[k] = _Worker(ctx, limits, quiet)
                        continue
                    if out is None and retire:
                        fail(w, "memory", "ran out of memory")
                        w.stop()  # it exits after a MemoryError: never hand it another file
                        pool[k] = _Worker(ctx, limits, quiet)
                        continue
                    w.index = None
                    w.served += 1
                    if isinstance(out, tuple) and len(out) == 2 and out[0] == "unpicklable":
                        done[i] = Failure("unpicklable", out[1])
                    else:
                        done[i] = out
                elif limits.timeout_s and (why := w.over_time(limits.timeout_s, now)):
                    w.stop(kill=True)
                    fail(w, "timeout", why)
                    pool[k] = _Worker(ctx, limits, quiet)
    finally:
        for w in pool:
            w.stop(kill=w.index is not None)


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
