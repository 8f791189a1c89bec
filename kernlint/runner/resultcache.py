"""The result cache: one file's lint outcome, reused while everything it was computed from is unchanged.

Like ruff's cache, a second run over an unchanged tree reads results instead of linting. An entry is
found by a key over what is known before linting: the file's bytes, its settings and options, the
architecture, kernlint's own code (version and the stamps of its files), libclang, nvcc (when ptxas
is used) and the `KERNLINT_*` environment. The entry then lists what the lint turned out to depend
on, and is used only if all of it is unchanged:

- every file the file includes, transitively, as the front end resolves them (quoted: the
  includer's directory, then each `-I`), with each candidate that was tried and not there (a header
  created later would shadow or replace a stub), and the includer a fragment was parsed through;
- every question the lint asked the project index (`launches_of`, `includer_of`, `flags_for`, ...),
  asked again of the current index, with the same answer.

A file whose includes cannot all be resolved by text (`#include MACRO`) is not cached; neither is
an internal error, a crashed worker or an nvcc timeout (these may not happen again). A file clang
cannot parse is cached like any other result: its inputs are all in the key.

Location: `--cache-dir`, else `$KERNLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/kernlint`, else
`~/.cache/kernlint`, in `results-v<FORMAT>/`. Each entry is one file written atomically (temporary
file + os.replace), so concurrent runs never read half an entry; the last writer of a key wins and
both wrote the same thing. After a run that wrote entries, the directory is pruned to
`KERNLINT_CACHE_MAX_BYTES` (default 256 MiB), least recently used first, by one process at a time
(an advisory lock). `--no-cache` (or `KERNLINT_NO_CACHE=1`) reads and writes no cache;
`kernlint --clear-cache` deletes kernlint's caches.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from kernlint.base.lazy_re import lazy_compile

FORMAT = 1
SUBDIR = f"results-v{FORMAT}"
DEFAULT_MAX_BYTES = 256 << 20
ENTRY_MAX_BYTES = 64 << 20  # a larger entry is not written, and a larger file in its place not read
MAX_HEADERS = 4096  # more included files than this: the file is not cached
_ENV_NOT_KEYED = frozenset({"KERNLINT_CACHE_DIR", "KERNLINT_NO_CACHE", "KERNLINT_CACHE_MAX_BYTES"})
_ANY_INCLUDE_RE = lazy_compile(r"^[ \t]*#[ \t]*include", re.M)
_HAS_INCLUDE_RE = lazy_compile(r"__has_include(?:_next)?\s*\(\s*([<\"])([^>\"\n]+)[>\"]")


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _answer(value: Any) -> str:
    return _digest(repr(value).encode("utf-8", "surrogatepass"))


def cache_root(explicit: str | None = None) -> Path | None:
    """The cache directory: `explicit`, else the one every kernlint cache uses (None: caching is off)."""
    if os.environ.get("KERNLINT_NO_CACHE", "") not in ("", "0"):
        return None
    if explicit:
        return Path(explicit)
    from kernlint.system.cachedir import cache_dir

    return cache_dir()


def clear(root: Path) -> list[str]:
    """Delete kernlint's caches under `root` (results, project index, ptxas figures); what was removed."""
    removed = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return removed
    import shutil

    from kernlint.system.leftovers import CACHE_TEMP_DIR

    for e in entries:
        ours = ((e.name.startswith(("results-v", "index-v")) or e.name == CACHE_TEMP_DIR)
                and e.is_dir(follow_symlinks=False)) or (e.name.startswith("resources-") and e.name.endswith(".json"))
        if not ours:
            continue  # never delete what kernlint did not write (the directory may be shared)
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed.append(e.name)
        except OSError:
            pass
    return removed


# ---------------------------------------------------------------------------------------------
# The key: what is known before linting

_FINGERPRINT: str | None = None


def fingerprint() -> str:
    """kernlint's code and the libraries its results depend on: version, and every file's stamp."""
    global _FINGERPRINT
    if _FINGERPRINT is not None:
        return _FINGERPRINT
    import importlib.util

    import kernlint

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}\0{kernlint.__version__}\0{sys.version}\0{sys.implementation.cache_tag}".encode())
    pkg = Path(kernlint.__file__).resolve().parent
    dirs = [pkg]
    for name in ("clang", "numpy"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            dirs.append(Path(spec.origin).parent)
    for base in dirs:
        deep = base == pkg  # kernlint: every source file; a library: its top level and libclang
        for dirpath, dirnames, files in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and (deep or d == "native"))
            for f in sorted(files):
                if f.endswith((".pyc", ".tmp")):
                    continue
                p = os.path.join(dirpath, f)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                h.update(f"{p}\0{st.st_mtime_ns}\0{st.st_size}\n".encode("utf-8", "surrogateescape"))
    _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


_NVCC: dict[str, Any] = {}


def _nvcc_stamp() -> Any:
    if "stamp" not in _NVCC:
        import shutil

        exe = shutil.which("nvcc")
        stamp: Any = None
        if exe is not None:
            try:
                st = os.stat(exe)
                stamp = (os.path.realpath(exe), st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = exe
        _NVCC["stamp"] = stamp
    return _NVCC["stamp"]


def keyed_environment() -> list[tuple[str, str]]:
    """The `KERNLINT_*` variables a result depends on (all but the cache's own settings), sorted."""
    return sorted((k, v) for k, v in os.environ.items() if k.startswith("KERNLINT_") and k not in _ENV_NOT_KEYED)


def job_key(job: Any, setup: Any, data: bytes, env: list[tuple[str, str]] | None = None) -> str:
    """The key of `job` (a parallel.FileJob) whose file holds `data` (`env`: `keyed_environment()`, read
    once per run by the caller)."""
    env = keyed_environment() if env is None else env
    options = job.options
    material = (
        FORMAT, fingerprint(), _digest(data), job.path, job.name, os.path.abspath(job.path), os.getcwd(),
        repr(job.settings), repr(options), job.build_dir, job.no_project,
        setup.project_dir, setup.tracebacks, setup.arch, repr(setup.roofline_peak), env,
        _nvcc_stamp() if getattr(options, "resources", False) else None,
    )
    return _answer(material)


# ---------------------------------------------------------------------------------------------
# What a lint depended on (recorded in the worker)


@dataclass
class Deps:
    """What one lint read besides its own file: files (path -> state) and index questions (-> answer)."""

    root: str | None = None  # the project index's root (None: no index)
    index_state: str = ""  # the index's ProjectIndex.state: the same state gives the same answers
    files: dict[str, str | None] = field(default_factory=dict)
    questions: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    volatile: str = ""  # why this outcome must not be cached ("" if it may)


def file_state(path: str) -> str | None:
    """None: no such file; 'special' for a directory, FIFO or device (never opened); else the content digest."""
    import stat

    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as exc:
        return f"error:{getattr(exc, 'errno', exc)}"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    try:
        with open(path, "rb") as fh:
            return _digest(fh.read())
    except OSError as exc:
        return f"error:{exc.errno}"


class _Recorder:
    """Stands in for a ProjectIndex and records every question asked of it, with its answer."""

    def __init__(self, index: Any, deps: Deps) -> None:
        self._index = index
        self._deps = deps

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._index, name)
        if not callable(value):
            self._deps.questions.append((("attr", name), _answer(value)))
            return value

        def ask(*args: Any, **kwargs: Any) -> Any:
            answer = value(*args, **kwargs)
            self._deps.questions.append(((name, args, tuple(sorted(kwargs.items()))), _answer(answer)))
            if name in ("includer_of", "includers_of", "includer_set"):
                for inc in [answer] if isinstance(answer, str) else answer if isinstance(answer, list) else []:
                    self._deps.files[inc] = file_state(inc)  # parse_in_project (or kernel_text) may read it
            elif name == "reached_kernels":
                for where, _names in answer:
                    self._deps.files[where] = file_state(where)  # linted with the file (parallel._lint_file)
            return answer

        return ask


class Recording:
    """Collects a lint's dependencies; `wrap` is given the project index, `finish` the final inputs."""

    def __init__(self) -> None:
        self.deps = Deps()
        self.include_dirs: tuple[str, ...] = ()  # the lint's final -I (with compile_commands.json's)
        self._transient = _transient_count()

    def wrap(self, index: Any) -> Any:
        self.deps.root = str(index.root)
        self.deps.index_state = getattr(index, "state", "")
        return _Recorder(index, self.deps)

    def index_failed(self) -> None:
        self.deps.volatile = "the project index failed"

    def finish(self, text: str | None, path: str, include_dirs: Sequence[str]) -> Deps:
        deps = self.deps
        if _transient_count() != self._transient:
            deps.volatile = "nvcc timed out or could not run"
        if text is not None and not deps.volatile:
            sources = [(text, path)]
            sources += [(None, p) for p, st in list(deps.files.items()) if st not in (None, "special")]
            why = _include_deps(sources, include_dirs, deps.files)
            if why:
                deps.volatile = why
        return deps


def _transient_count() -> int:
    mod = sys.modules.get("kernlint.frontend.resources")
    return int(getattr(mod, "TRANSIENT_FAILURES", 0)) if mod is not None else 0


def _include_deps(sources: list[tuple[str | None, str]], include_dirs: Sequence[str],
                  files: dict[str, str | None]) -> str:
    """Record in `files` every file the sources include, transitively, and every candidate tried before
    it (the resolution of the front end: quoted includes in the includer's directory first, then
    each include directory). Returns why the includes cannot be known by text, or ""."""
    from kernlint.ir.includes import INCLUDE_RE

    dirs = [os.path.abspath(d) for d in include_dirs]
    queue = list(sources)
    seen: set[str] = set()
    while queue:
        body, where = queue.pop()
        if body is None:
            try:
                with open(where, "rb") as fh:
                    body = fh.read().decode("utf-8", "replace")
            except OSError:
                continue
        directives = INCLUDE_RE.findall(body)
        if len(directives) != len(_ANY_INCLUDE_RE.findall(body)):
            return f"{where}: an #include the text does not name (a macro, #include_next)"
        here = os.path.dirname(os.path.abspath(where))
        for kind, name in directives + _HAS_INCLUDE_RE.findall(body):
            name = name.strip()
            if not name:
                continue
            if os.path.isabs(name):
                candidates = [name]
            else:
                candidates = [os.path.join(d, name) for d in ([here] if kind == '"' else []) + dirs]
            for cand in candidates:
                cand = os.path.normpath(cand)
                state = files.get(cand, "?")
                if state == "?":
                    state = files[cand] = file_state(cand)
                if state is None:
                    continue
                if state != "special" and cand not in seen:
                    seen.add(cand)
                    if len(seen) > MAX_HEADERS:
                        return f"more than {MAX_HEADERS} included files"
                    queue.append((None, cand))
                break
    return ""


# ---------------------------------------------------------------------------------------------
# The store (in the parent process)


class ResultCache:
    """Entries under `root/results-v<FORMAT>/`: lookups before linting, stores after."""

    def __init__(self, root: Path, max_bytes: int | None = None) -> None:
        self.dir = root / SUBDIR
        env = os.environ.get("KERNLINT_CACHE_MAX_BYTES", "")
        self.max_bytes = max_bytes if max_bytes is not None else (int(env) if env.isdigit() else DEFAULT_MAX_BYTES)
        self.wrote = 0
        self.hits = 0
        self._states: dict[str, str | None] = {}
        self._uid = os.getuid() if hasattr(os, "getuid") else None

    def _path(self, key: str) -> Path:
        return self.dir / f"{key}.pkl"

    def lookup(self, key: str, index_for: Callable[[], tuple[bool, Any]]) -> Any:
        """The cached FileOutcome of `key` if its dependencies are unchanged, else None.

        `index_for()` gives (ok, the project index the file would use now, or None)."""
        import pickle

        from kernlint.system.cacheentry import read_entry, unseal

        p = self._path(key)
        # Only a regular file this user wrote, of sane size, is read; only one whose checksum (of its content
        # and of this key) matches is unpickled: a damaged or swapped entry is a miss, and is overwritten.
        data = read_entry(p, ENTRY_MAX_BYTES, self._uid)
        payload = unseal(key, data) if data is not None else None
        if payload is None:
            return None
        try:
            entry = pickle.loads(payload)
            deps, outcome = entry["deps"], entry["outcome"]
        except Exception:  # noqa: BLE001 - a damaged or foreign entry is a miss, and is overwritten
            return None
        if not isinstance(deps, Deps):
            return None
        for path, state in deps.files.items():
            now = self._states.get(path, "?")
            if now == "?":
                now = self._states[path] = file_state(path)
            if now != state:
                return None
        ok, index = index_for()
        if not ok or (str(index.root) if index is not None else None) != deps.root:
            return None
        # An index built from the same inputs answers alike: only another one is asked again.
        same_index = index is not None and bool(deps.index_state) and getattr(index, "state", "") == deps.index_state
        for question, answer in () if same_index else deps.questions:
            try:
                if question[0] == "attr":
                    value = getattr(index, question[1])
                else:
                    value = getattr(index, question[0])(*question[1], **dict(question[2]))
            except Exception:  # noqa: BLE001 - a question the index cannot answer now: lint again
                return None
            if _answer(value) != answer:
                return None
        try:
            os.utime(p)  # recently used: pruned last
        except OSError:
            pass
        self.hits += 1
        return outcome

    def store(self, key: str, outcome: Any) -> None:
        """Write `outcome` (whose `deps` say what it depended on) if it may be cached."""
        deps = outcome.deps
        if not isinstance(deps, Deps) or deps.volatile or not cacheable(outcome):
            return
        import pickle

        entry = {"deps": deps, "outcome": dataclasses.replace(outcome, deps=None, result=None)}
        try:
            data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something not picklable: not cached
            return
        from kernlint.system.cacheentry import seal
        from kernlint.system.leftovers import atomic_write

        if len(data) > ENTRY_MAX_BYTES:
            return  # never read back
        data = seal(key, data)
        if atomic_write(self._path(key), data):
            self.wrote += len(data)

    def prune(self) -> None:
        """Delete the least recently used entries while the directory is over `max_bytes` (one process
        at a time: a run that finds the lock taken leaves the pruning to the one holding it)."""
        if not self.wrote:
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: prune without the lock
            fcntl = None  # type: ignore[assignment]
        try:
            lock = open(self.dir / ".prune.lock", "a+b")
        except OSError:
            return
        with lock:
            if fcntl is not None:
                try:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return
            entries = []
            total = 0
            try:
                for e in os.scandir(self.dir):
                    if e.name.endswith(".pkl"):
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        entries.append((st.st_mtime_ns, st.st_size, e.path))
                        total += st.st_size
            except OSError:
                return
            if total <= self.max_bytes:
                return
            entries.sort()
            goal = self.max_bytes * 3 // 4  # some room, so the next runs do not prune again
            for _mtime, size, path in entries:
                if total <= goal:
                    break
                try:
                    os.unlink(path)
                    total -= size
                except OSError:
                    pass


def cacheable(outcome: Any) -> bool:
    """A result (linted, or a file clang rejected), not an internal error or a dead worker."""
    if outcome.fixed or outcome.diff:
        return False
    if outcome.linted:
        return not any(d.code == "KL905" for d in outcome.diagnostics)
    return outcome.text is not None and bool(outcome.problems)


def _index_for(job: Any, setup: Any, roots: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """(ok, the project index `job`'s lint uses, or None), as parallel.project_options finds it
    (`roots`: find_project_root's memo)."""
    if job.no_project or job.path == "-":
        return True, None
    from kernlint.project import load_index
    from kernlint.project.index import project_root_for

    root, shallow = project_root_for(job.path, setup.project_dir, getattr(job, "project_hint", None), roots)
    if root is None:
        return True, None
    try:
        return True, load_index(root, job.options.include_dirs, job.build_dir, shallow=shallow,
                                scan_limit_s=getattr(setup, "scan_limit_s", None))
    except Exception:  # noqa: BLE001 - the lint reports it; no hit
        return False, None


def prepare_indexes(jobs: Sequence[Any], setup: Any, roots: dict[str, Any] | None = None,
                    complete: bool = True) -> None:
    """Build each project index the jobs need once, here (ProjectIndex.ready), so the workers forked after
    inherit it and its on-disk cache is warm. `complete`: with every clang read done here too (several
    workers would each read what their own files ask for); else one worker reads what its files need."""
    for job in jobs:
        ok, index = _index_for(job, setup, roots)
        if ok and index is not None:
            index.complete() if complete else index.ready()
