"""Build the project index and answer the engine's questions about one file.

    idx = load_index(root)                    # cached per (root, flags) within a run
    idx.launches_of(kernel, defined_in)       # launches from anywhere in the project, folded
    idx.instantiations_of(kernel, defined_in) # explicit instantiations
    idx.includer_of(path)                     # the project file that #includes `path` (fragments)
    idx.flags_for(path)                       # -I/-D from compile_commands.json
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kernlint.base.frozen import frozen
from kernlint.project.cache import FactsCache, content_hash
from kernlint.project.compile_db import FileFlags, find_compile_db, load_compile_db
from kernlint.project.facts import FileFacts
from kernlint.project.index_fold import Folding, ProjectLaunch, _fold_arg, _rel

MARKERS = ("pyproject.toml", "kernlint.toml", ".git")
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl", ".cuinc")
# (.c: benchmark suites keep the macros their kernels and launches use in C files they `#include`.)
MAX_FILES = 5000
MAX_BYTES = 2_000_000
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "build", "builds", "dist", "site-packages", "venv",
                        "CMakeFiles", "_build", "out"})


def find_project_root(path: str | os.PathLike[str], memo: dict[str, Path | None] | None = None) -> Path | None:
    """The nearest ancestor of `path` (a file or directory) holding pyproject.toml, kernlint.toml or .git.

    `memo` (directory -> its answer), shared by the lookups of one run, spares the walk up from a
    directory whose answer is already known."""
    p = os.path.abspath(path)
    d = p if os.path.isdir(p) else os.path.dirname(p)
    walked = []
    while True:
        if memo is not None and d in memo:
            found = memo[d]
            break
        walked.append(d)
        if any(os.path.exists(os.path.join(d, m)) for m in MARKERS):
            found = Path(d)
            break
        parent = os.path.dirname(d)
        if parent == d:
            found = None
            break
        d = parent
    if memo is not None:
        memo.update(dict.fromkeys(walked, found))
    return found


def project_root_for(path: str, project_dir: str | None = None, hint: str | None = None,
                     memo: dict[str, Path | None] | None = None) -> tuple[Path | None, bool]:
    """(root, shallow) of the project `path` is linted in: `--project`, else the nearest ancestor holding
    a marker, else (a tree without one: an unpacked archive, a benchmark suite) the directory argument
    `path` was found under (`hint`), else the files directly beside it (`shallow`: a lone file in a
    big directory must not walk it); a fragment's includer is usually beside it. `memo`: as for
    `find_project_root`."""
    if project_dir:
        return Path(project_dir).resolve(), False
    root = find_project_root(path, memo)
    if root is not None or not os.path.isfile(path):
        return root, False
    if hint and os.path.isdir(hint):
        return Path(hint).resolve(), False
    return Path(path).resolve().parent, True


@frozen
class FileContext:
    """What the engine needs about one file (see ProjectIndex.context_for)."""

    path: str
    includer: str | None = None
    flags: FileFlags = FileFlags()


@dataclass
class ProjectIndex(Folding):
    """The index of one project. `facts`, `includes`, `includers` and `kernel_files` are complete on
    first use: the facts of files unchanged since the on-disk cache are decoded then, and the include
    graph linked (a warm re-run whose cached results need no question asks for none of it)."""

    root: Path
    _facts: dict[str, FileFacts | None] = field(default_factory=dict, repr=False)  # None: not decoded yet
    _includes: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _includers: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _kernel_files: dict[str, list[str]] = field(default_factory=dict, repr=False)
    # (FactsCache, -I, the size cap, the scan's CPU-time limit per file) until ready()
    _pending: tuple[FactsCache, tuple[str, ...], int, float | None] | None = field(default=None, repr=False)
    flags: dict[str, FileFlags] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scanned: int = 0  # files scanned this run (the rest came from the cache)
    # A digest of everything the index's answers are computed from (root, include dirs, compile
    # database flags, notes, and each file's path and content digest in walk order): two indexes with
    # the same state answer every question alike (the result cache compares it before asking again).
    state: str = ""
    # name -> the files (in `facts` order) whose launches / template calls / typed calls /
    # instantiations name it: a question about one kernel reads only those files.
    _by_name: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    _env_memo: dict[str, dict[str, str | int]] = field(default_factory=dict)
    _launch_memo: dict[str, list[ProjectLaunch]] = field(default_factory=dict)
    # Files the pre-filter picks for clang (clang_scan.wanted) not read yet, without an on-disk cache only:
    # path -> (text, content digest, stamp). Each question reads those it may depend on (`_read_for`).
    _unread: dict[str, tuple[str, str, tuple[int, int]]] = field(default_factory=dict, repr=False)
    _unlinked: dict[str, bool] = field(default_factory=dict, repr=False)  # see _unlinked_include

    @property
    def facts(self) -> dict[str, FileFacts]:
        self.ready()
        return self._facts  # type: ignore[return-value]

    @property
    def includes(self) -> dict[str, tuple[str, ...]]:
        self.ready()
        return self._includes

    @property
    def includers(self) -> dict[str, list[str]]:
        self.ready()
        return self._includers

    @property
    def kernel_files(self) -> dict[str, list[str]]:
        self.ready()
        return self._kernel_files

    def ready(self) -> None:
        """Decode the facts left undecoded and link the include graph (once; forked workers inherit it)."""
        if self._pending is None:
            return
        cache, include_dirs, max_bytes, scan_limit = self._pending
        self._pending = None
        rescanned = False
        for p in [p for p, facts in self._facts.items() if facts is None]:
            facts = cache.decode(p)
            if facts is None:
                # A damaged entry: read, checked and scanned as build() does a changed file, and stored
                # again (the cache is saved below), so the next run decodes it.
                rescanned = True
                try:
                    _digest, facts, scanned = _index_file(p, cache.stamp(p), cache, max_bytes, str(self.root),
                                                          scan_limit_s=scan_limit)
                except _Skipped:
                    # Left out, as build() leaves it out; with the entry gone, the next run's build()
                    # says why in its note (the notes of this run may already have been read).
                    del self._facts[p]
                    cache.forget(p)
                    continue
                self.scanned += scanned
            self._facts[p] = facts
        if rescanned:
            cache.save(self.root)
        self._link(include_dirs)

    # --- building ------------------------------------------------------------------------------

    @classmethod
    def build(cls, root: Path, include_dirs: tuple[str, ...] = (), build_dir: str | None = None,
              max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES, shallow: bool = False,
              scan_limit_s: float | None = None) -> "ProjectIndex":
        """The index of the project at `root`. `scan_limit_s`: the CPU seconds one file's scan may take (a
        file's share of `--timeout`); a file whose scan runs past it is left out and named in a note."""
        idx = cls(root)
        db = find_compile_db(root, build_dir)
        if build_dir and db is None:
            idx.notes.append(f"-p {build_dir}: no compile_commands.json there; per-file flags not used")
        if db is not None:
            idx.flags, note = load_compile_db(db)
            if note:
                idx.notes.append(note)
        cache = FactsCache(root)
        paths = _walk(root, max_files, shallow)
        if len(paths) >= max_files:
            idx.notes.append(f"project index: stopped at {max_files} files under {root}")
        skipped: list[str] = []
        digests: list[tuple[str, str]] = []
        deferred: list[tuple[str, str, tuple[int, int], str, FileFacts]] = []  # clang reads, done together
        for p in paths:
            try:
                st = os.stat(p)
            except OSError as exc:
                skipped.append(f"{_rel(p, root)} ({exc.strerror or exc})")
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO or device named *.h: opening it could block
                skipped.append(f"{_rel(p, root)} (not a regular file)")
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            digest = cache.unchanged(p, stamp)
            if digest is not None:
                digests.append((p, digest))
                idx._facts[p] = None  # decoded by ready()
                continue
            try:
                digest, facts, scanned = _index_file(p, stamp, cache, max_bytes, str(root), deferred,
                                                     scan_limit_s=scan_limit_s)
            except _Skipped as why:
                skipped.append(f"{_rel(p, root)} ({why})")
                continue
            idx.scanned += scanned
            digests.append((p, digest))
            idx._facts[p] = facts
        if deferred and cache.file is None:
            # No cache to keep them in: each file is read by clang when a question needs its launches
            # (a lint of one file asks about its own kernels only), with the same answers.
            idx._unread = {p: (text, digest, stamp) for p, digest, stamp, text, _facts in deferred}
        elif deferred:
            from kernlint.project.clang_scan import read_all

            for (p, digest, stamp, _text, _facts), facts in zip(deferred, read_all(
                    [(p, text, facts) for p, _d, _s, text, facts in deferred], str(root))):
                cache.put(p, digest, facts, stamp)
                idx._facts[p] = facts
        if skipped:
            idx.notes.append(f"project index: skipped {len(skipped)} file(s): " + ", ".join(skipped[:5])
                             + (" ..." if len(skipped) > 5 else ""))
        cache.save(root)
        idx._pending = (cache, tuple(include_dirs), max_bytes, scan_limit_s)
        idx.state = _state_digest(root, include_dirs, build_dir, shallow, idx.flags, idx.notes, digests)
        return idx

    def complete(self) -> None:
        """`ready`, and every file the pre-filter picks read by clang (for workers forked after: each would
        otherwise read what its own files' questions need)."""
        self.ready()
        self._read(list(self._unread))

    def _read(self, paths: list[str]) -> None:
        """Read by clang the files of `paths` not read yet: their launches and instantiations take clang's values."""
        todo = [p for p in paths if p in self._unread]
        if not todo:
            return
        from kernlint.project.clang_scan import read_all

        self.ready()
        got = read_all([(p, self._unread[p][0], self._facts[p]) for p in todo], str(self.root))  # type: ignore[misc]
        for p, facts in zip(todo, got):
            del self._unread[p]
            self._facts[p] = facts
        self._by_name = {}  # (clang may name launches the text scan did not see)

    def _read_for(self, kernel: str) -> None:
        """Read the unread files in which clang may see a launch of `kernel` (`_may_launch`)."""
        if self._unread:
            self._read([p for p in list(self._unread) if self._may_launch(p, kernel)])

    def _may_launch(self, path: str, kernel: str) -> bool:
        """Whether clang's read of unread `path` may launch `kernel`: the kernel, or the macro or variable a
        launch names it through, must be declared in the file or in what it includes, so unless the name
        (or token pasting, `##`) is spelled in the file or a project file of its include closure, clang
        cannot see such a launch. Anything not known (an include the graph does not resolve to a project
        file but that exists, a closure past its limit, a file too large to read whole) is "may"."""
        from kernlint.ir.includes import read_header

        files = self.closure(path)
        if len(files) >= 200:
            return True
        for q in files:
            if q == path:
                text = self._unread[path][0]
            else:
                got = read_header(q)
                if got is None or got[1]:
                    return True
                text = got[0]
            if kernel in text or "##" in text or self._unlinked_include(q):
                return True
        return False

    def _unlinked_include(self, path: str) -> bool:
        """Whether one of `path`'s includes names an existing file beside it or under the project root (where
        the index's clang read looks) that the include graph did not link it to: a suffix the index does not
        scan (`.inc`, `.def`), or another file of that name. Remembered per file."""
        hit = self._unlinked.get(path)
        if hit is None:
            facts = self.facts.get(path)
            here, linked = os.path.dirname(path), set(self.includes.get(path, ()))
            hit = facts is None or any(
                cand not in linked and cand != path and os.path.isfile(cand)
                for name, _quoted, _line in facts.includes
                for cand in (os.path.normpath(os.path.join(d, name)) for d in (here, str(self.root))))
            self._unlinked[path] = hit
        return hit

    def _link(self, include_dirs: tuple[str, ...]) -> None:
        names: dict[str, list[str]] = {}
        for p in self._facts:
            names.setdefault(os.path.basename(p), []).append(p)
        for p, facts in self._facts.items():
            assert facts is not None
            here = os.path.dirname(p)
            dirs = [here] + list(self.flags.get(p, FileFlags()).include_dirs) + list(include_dirs) + [str(self.root)]
            resolved = []
            for name, quoted, _line in facts.includes:
                target = None
                for d in (dirs if quoted else dirs[1:] + [here]):
                    cand = os.path.normpath(os.path.join(d, name))
                    if cand in self._facts:
                        target = cand
                        break
                if target is None:
                    # `#include "kernels/gemm.cuh"` with an include dir the scan does not know: a
                    # unique project file with that path suffix.
                    cands = [c for c in names.get(os.path.basename(name), []) if c.endswith(os.sep + name)]
                    target = cands[0] if len(cands) == 1 else None
                if target is not None and target != p:
                    resolved.append(target)
                    self._includers.setdefault(target, []).append(p)
            self._includes[p] = tuple(dict.fromkeys(resolved))
            for k in facts.kernels:
                self._kernel_files.setdefault(k.name, []).append(p)

    # --- queries -------------------------------------------------------------------------------

    def closure(self, path: str, limit: int = 200) -> list[str]:
        """`path` and every project file it includes, transitively (includes first)."""
        out: list[str] = []
        seen = {path}
        stack = [path]
        while stack and len(out) < limit:
            p = stack.pop()
            out.append(p)
            for q in self.includes.get(p, ()):
                if q not in seen:
                    seen.add(q)
                    stack.append(q)
        return out

    def includer_of(self, path: str) -> str | None:
        """A project file that #includes `path` (the first by name), or None."""
        inc = self.includers_of(path)
        return inc[0] if inc else None

    def includers_of(self, path: str, limit: int = 50) -> list[str]:
        """The project files that #include `path`, directly or through other fragments (`main.cu`
        includes `work.cu` includes `solver.cu`): translation units first (files nothing includes,
        those that launch kernels before those that do not), then the nearer includers."""
        order = self.includer_set(path, limit)
        self._read(order)  # (the rank asks whether each launches a kernel)

        def rank(p: str) -> tuple[bool, bool]:
            facts = self.facts.get(p)
            return bool(self.includers.get(p)), not (facts is not None and facts.launches)

        return sorted(order, key=rank)

    def includer_set(self, path: str, limit: int = 50) -> list[str]:
        """The files `includers_of` ranks, nearer includers first, unranked (the include graph alone: no
        file is read by clang for it)."""
        start = os.path.abspath(path)
        order: list[str] = []
        seen = {start}
        frontier = [start]
        while frontier and len(order) < limit:
            nxt = []
            for f in frontier:
                for q in sorted(set(self.includers.get(f, ()))):
                    if q not in seen:
                        seen.add(q)
                        order.append(q)
                        nxt.append(q)
            frontier = nxt
        return order

    def flags_for(self, path: str) -> FileFlags:
        return self.flags.get(os.path.abspath(path), FileFlags())

    def context_for(self, path: str) -> FileContext:
        ap = os.path.abspath(path)
        return FileContext(ap, self.includer_of(ap), self.flags_for(ap))

    def env(self, path: str) -> dict[str, str | int]:
        """Macros and integer constants visible in `path`: its own, its includes', compile-db -D."""
        hit = self._env_memo.get(path)
        if hit is not None:
            return hit
        env: dict[str, str | int] = {}
        for q in reversed(self.closure(path)):
            f = self.facts.get(q)
            if f is None:
                continue
            for name, body in f.constants:
                env[name] = body
            for name, body in f.defines:
                env[name] = body
        for m in self.flags_for(path).macros:
            name, _, value = m.partition("=")
            env[name.strip()] = value or "1"
        self._env_memo[path] = env
        return env

    def type_aliases(self, path: str) -> dict[str, str]:
        """File-scope `typedef`/`using` type aliases visible in `path`: its own and its includes'."""
        out: dict[str, str] = {}
        for q in reversed(self.closure(path)):
            f = self.facts.get(q)
            if f is not None:
                out.update(f.type_aliases)
        return out

    def dealias(self, text: str, path: str, env: dict[str, str | int]) -> str:
        """A template argument naming a type alias (`T` after `typedef TYPE T;` and `#define TYPE
        double`) as the type it stands for (`double`); anything else unchanged."""
        aliases = self.type_aliases(path)
        t = text.strip()
        for _ in range(6):
            if t in aliases:
                t = aliases[t]
            elif t in env and isinstance(env[t], str) and re.fullmatch(r"[A-Za-z_][\w :<>,*]*", str(env[t])):
                t = " ".join(str(env[t]).split())
            else:
                break
        return t if t != text.strip() else text

    def visible(self, launch_file: str, kernel: str, defined_in: str) -> bool:
        """Whether a launch of `kernel` in `launch_file` can refer to the one defined in `defined_in`."""
        if launch_file == defined_in or defined_in in self.closure(launch_file):
            return True
        defs = set(self.kernel_files.get(kernel, ()))
        return len(defs) <= 1  # separately compiled: a unique name is unambiguous

    def _files_naming(self, kind: str, name: str) -> list[str]:
        """The files (in `facts` order) whose `kind` entries ("launches", "instantiations",
        "template_calls", "typed_calls") name `name`; the maps are built on the first question."""
        if not self._by_name:
            maps: dict[str, dict[str, list[str]]] = {k: {} for k in _NAMED_KINDS}
            for p, facts in self.facts.items():
                for ln in facts.launches:
                    files = maps["launches"].setdefault(ln.kernel, [])
                    if not files or files[-1] != p:
                        files.append(p)
                for k in _NAMED_KINDS[1:]:
                    for entry in getattr(facts, k):
                        files = maps[k].setdefault(entry[0], [])
                        if not files or files[-1] != p:
                            files.append(p)
            self._by_name = maps
        return self._by_name[kind].get(name, [])

    def launches_of(self, kernel: str, defined_in: str) -> list[ProjectLaunch]:
        """Every launch of `kernel` in the project that can refer to its definition in `defined_in`."""
        defined_in = os.path.abspath(defined_in)
        self._read_for(kernel)
        out = []
        for p in self._files_naming("launches", kernel):
            facts = self.facts[p]
            if not self.visible(p, kernel, defined_in):
                continue
            for ln in facts.launches:
                if ln.kernel == kernel:
                    out.extend(self._resolve(p, ln))
        return out

    def instantiations_of(self, kernel: str, defined_in: str) -> list[tuple[tuple[str, ...], str, int]]:
        defined_in = os.path.abspath(defined_in)
        self._read(self._files_naming("instantiations", kernel))  # (clang folds their arguments)
        out = []
        for p in self._files_naming("instantiations", kernel):
            for name, args, line in self.facts[p].instantiations:
                if name == kernel and self.visible(p, kernel, defined_in):
                    env = self.env(p)
                    folded = tuple(self.dealias(_fold_arg(a, env), p, env) for a in args)
                    out.append((folded, p, line))
        return out

    def reached_kernels(self, path: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(defining file, kernel names) of the kernels defined elsewhere in the project that `path`
        launches or instantiates (project/reach.py)."""
        from kernlint.project.reach import reached_kernels

        self._read(self.closure(os.path.abspath(path)))  # (the launches of the file and of what it includes)
        return reached_kernels(self.facts, self.closure, self.kernel_files, path)

    def included_kernels(self, path: str) -> tuple[str, ...]:
        """Names of the kernels defined in the project files `path` includes (project/reach.py)."""
        from kernlint.project.reach import included_kernels

        return included_kernels(self.facts, self.closure, path)

    def kernels_in(self, path: str) -> list[str]:
        f = self.facts.get(os.path.abspath(path))
        return [k.name for k in f.kernels] if f else []


_NAMED_KINDS = ("launches", "instantiations", "template_calls", "typed_calls")


class _Skipped(Exception):
    """A file the index leaves out, and why (the text the note puts after its name): over the size
    cap, unreadable, binary, or its scan failed."""


def _index_file(path: str, stamp: tuple[int, int], cache: FactsCache, max_bytes: int,
                root: str = "", deferred: list | None = None,
                scan_limit_s: float | None = None) -> tuple[str, FileFacts, bool]:
    """(content digest, facts, whether it was scanned) of the regular file `path`, whose stamp is
    (mtime_ns, size): its facts come from `cache` when an entry holds this content and decodes, else the
    file is scanned and stored there. Raises _Skipped for a file the index leaves out. The one path of a
    file the cache cannot answer by its stamp alone (build) or holds damaged facts for (ready).

    A file that clang reads (clang_scan.wanted) is read now, or, with `deferred`, listed there as (path,
    digest, stamp, text, the text scan's facts) and returned with the text scan's facts, not yet stored:
    the caller reads them all together (clang_scan.read_all) and stores them."""
    if stamp[1] > max_bytes:
        raise _Skipped(f"over {max_bytes // 1_000_000} MB")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise _Skipped(str(exc.strerror or exc)) from None
    digest = content_hash(data)
    facts = cache.get(path, digest, stamp)
    if facts is not None:
        return digest, facts, False
    if b"\x00" in data[:8192]:
        raise _Skipped("binary")
    from kernlint.project.scan import ScanCutShort, scan_text

    try:
        text = data.decode("utf-8", errors="replace")
        facts = scan_text(text, scan_limit_s)
        facts = _with_calls(facts, text)
        from kernlint.project import clang_scan

        if clang_scan.wanted(facts, text):
            if deferred is not None:
                deferred.append((path, digest, stamp, text, facts))
                return digest, facts, True
            facts = clang_scan.read_with_clang(facts, path, text, root)
    except ScanCutShort:
        # Not cached: on a less loaded machine, or with a larger --timeout, the scan may finish.
        raise _Skipped(f"its scan was cut short at {scan_limit_s:g} s of CPU time, its share of --timeout") from None
    except Exception as exc:  # noqa: BLE001 - one odd file must never abort the run
        raise _Skipped(type(exc).__name__) from None
    cache.put(path, digest, facts, stamp)
    return digest, facts, True


def _with_calls(facts: FileFacts, text: str) -> FileFacts:
    """`facts` with what each function of a file that launches calls (project/reach.py)."""
    if not facts.launches:
        return facts
    import dataclasses

    from kernlint.project.reach import host_calls
    from kernlint.project.scan import blank

    return dataclasses.replace(facts, host_calls=host_calls(blank(text)))


def _state_digest(root: Path, include_dirs: tuple[str, ...], build_dir: str | None, shallow: bool,
                  flags: dict[str, FileFlags], notes: list[str], digests: list[tuple[str, str]]) -> str:
    """ProjectIndex.state: a digest of everything an index is built from (a file's facts are a function
    of its content and SCAN_VERSION)."""
    import hashlib

    from kernlint.project.facts import SCAN_VERSION

    h = hashlib.blake2b(digest_size=16)
    h.update(repr((SCAN_VERSION, str(root), tuple(include_dirs), build_dir, shallow, sorted(flags.items()),
                   tuple(notes))).encode("utf-8", "surrogateescape"))
    for p, d in digests:
        h.update(f"\0{p}\0{d}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _walk(root: Path, max_files: int, shallow: bool = False) -> list[str]:
    """Source files under `root` (only those directly in it when `shallow`, and the files under `root`
    they `#include "..."`, transitively: a lone file's headers in a subdirectory, `llmc/gelu.cuh`)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [] if shallow else sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
                             and not d.startswith("cmake-build")
                             and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg")))
        for f in sorted(filenames):
            if f.endswith(SOURCE_SUFFIXES):
                out.append(os.path.join(dirpath, f))
                if len(out) >= max_files:
                    return out
    if shallow:
        _add_included(root, out, max_files)
    return out


def _add_included(root: Path, out: list[str], max_files: int) -> None:
    """Append to `out` the source files under `root` that files of `out` include with quotes, transitively
    (each file's own directory first, as the compiler looks; files over the size cap are not read)."""
    from kernlint.ir.includes import INCLUDE_RE

    base = os.path.join(str(root), "")
    seen = set(out)
    queue = list(out)
    while queue and len(out) < max_files:
        p = queue.pop()
        try:
            st = os.stat(p)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
                continue  # a FIFO or a device would block or never end: only regular files are read
            with open(p, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        for kind, name in INCLUDE_RE.findall(text):
            cand = os.path.normpath(os.path.join(os.path.dirname(p), name.strip()))
            if kind != '"' or cand in seen or not cand.startswith(base) or not cand.endswith(SOURCE_SUFFIXES) \
                    or not os.path.isfile(cand):
                continue
            seen.add(cand)
            out.append(cand)
            queue.append(cand)
            if len(out) >= max_files:
                return


_INDEXES: dict[tuple[str, tuple[str, ...], str | None], ProjectIndex] = {}


def load_index(root: Path, include_dirs: tuple[str, ...] = (), build_dir: str | None = None,
               shallow: bool = False, scan_limit_s: float | None = None) -> ProjectIndex:
    """The index of `root`, built once per run (and per include dirs / build dir / depth); `scan_limit_s`:
    as for `ProjectIndex.build` (the first build's limit holds for the run)."""
    key = (str(root), tuple(include_dirs), build_dir) + (("shallow",) if shallow else ())
    idx = _INDEXES.get(key)
    if idx is None:
        idx = ProjectIndex.build(root, include_dirs, build_dir, shallow=shallow, scan_limit_s=scan_limit_s)
        _INDEXES[key] = idx
    return idx


__all__ = ["FileContext", "ProjectIndex", "ProjectLaunch", "find_project_root", "load_index", "project_root_for"]
