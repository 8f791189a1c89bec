"""On-disk cache of the index's per-file scan results, keyed by file content.

Location: `$KERNLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/kernlint`, else `~/.cache/kernlint`;
`KERNLINT_NO_CACHE=1` turns it off. One JSON file per project (entries keyed by path, each holding the
content hash it was scanned from, and a checksum of the entry: its path, hash, stamp and facts).
Writes are atomic (temporary file + os.replace); an unreadable or corrupt cache is ignored and
rewritten, and an entry whose checksum does not match is rescanned and stored again, never used
(issue 30); a cache directory that cannot be written costs nothing but the speed-up.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from kernlint.system.cachedir import cache_dir
from kernlint.system.leftovers import atomic_write
from kernlint.project.facts import SCAN_VERSION, FileFacts, KernelDef, RawLaunch


_SCANNER_STAMP: str | None = None


def scanner_stamp() -> str:
    """A digest of the code that decides a file's facts (the project, front-end and IR modules and the shim
    kernlint parses with), by each file's name, size and modification time: a cache written by other
    code (an upgrade, a branch, an edit that forgot to bump SCAN_VERSION) is not read, only rebuilt. Only
    stat calls, once per process: the warm index stays cheap."""
    global _SCANNER_STAMP
    if _SCANNER_STAMP is None:
        import kernlint

        pkg = Path(kernlint.__file__).resolve().parent
        h = hashlib.blake2b(digest_size=8)
        for sub in ("project", "frontend", "ir"):
            try:
                names = sorted(os.listdir(pkg / sub))
            except OSError:
                continue
            for name in names:
                if name.endswith((".py", ".h")):
                    try:
                        st = os.stat(pkg / sub / name)
                    except OSError:
                        continue
                    h.update(f"{sub}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
        _SCANNER_STAMP = h.hexdigest()
    return _SCANNER_STAMP


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def entry_sum(path: str, entry: dict[str, Any]) -> str:
    """The checksum of one entry (its key, the path, and everything it holds), as stored in its "sum"."""
    text = json.dumps([path, entry.get("hash"), entry.get("stamp"), entry.get("facts")], separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _sound(path: str, entry: Any) -> bool:
    """Whether `entry` is a dict whose checksum matches what it holds."""
    try:
        return isinstance(entry, dict) and entry.get("sum") == entry_sum(path, entry)
    except (TypeError, ValueError, RecursionError):
        return False


def _tuples(x: Any) -> Any:
    return tuple(_tuples(i) for i in x) if isinstance(x, list) else x


def _rows(x: list[list[Any]]) -> tuple[tuple[Any, ...], ...]:
    """A list of flat lists (`includes`, `defines`, template parameters, ...) as tuples."""
    return tuple(map(tuple, x))


def _name_args_rows(x: list[list[Any]]) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """[name, [args...], line] rows (instantiations, template calls, typed calls) as tuples."""
    return tuple((name, tuple(args), line) for name, args, line in x)


_NESTED_LAUNCH_FIELDS = frozenset({"host_params", "locals"})  # RawLaunch fields holding rows, not strings


def _launch(d: dict[str, Any]) -> RawLaunch:
    out = {k: (_rows(v) if k in _NESTED_LAUNCH_FIELDS else tuple(v)) if isinstance(v, list) else v
           for k, v in d.items()}
    if "dim_values" in d:  # [[name, [values...]], ...]
        out["dim_values"] = tuple((name, tuple(values)) for name, values in d["dim_values"])
    return RawLaunch(**out)


def facts_from_json(d: dict[str, Any]) -> FileFacts:
    """The FileFacts `dataclasses.asdict` wrote as `d` (every list read back as a tuple, as `_tuples` would,
    by the shape of each field: this runs for every file of a project on every run)."""
    return FileFacts(
        includes=_rows(d["includes"]), defines=_rows(d["defines"]), constants=_rows(d["constants"]),
        kernels=tuple(KernelDef(k["name"], k["line"], _rows(k["template_params"])) for k in d["kernels"]),
        launches=tuple(map(_launch, d["launches"])),
        instantiations=_name_args_rows(d["instantiations"]),
        template_calls=_name_args_rows(d["template_calls"]),
        cuda=bool(d["cuda"]), type_aliases=_rows(d.get("type_aliases", [])),
        typed_calls=_name_args_rows(d.get("typed_calls", [])),
        host_calls=tuple((h, tuple(c)) for h, c in d.get("host_calls", ())),
        function_templates=tuple((n, _rows(ps), a, b) for n, ps, a, b in d.get("function_templates", ())),
        read_by_clang=bool(d.get("read_by_clang", False)),
    )


class FactsCache:
    """path -> (content hash, FileFacts) for one project, loaded once and saved once per run.

    An entry also records the file's (mtime_ns, size) when it was hashed: a file whose stamp is
    unchanged is not read again (and its facts are decoded only when asked for); any other is read,
    hashed, and rescanned only if its content changed.
    """

    def __init__(self, root: Path) -> None:
        base = cache_dir()
        key = hashlib.blake2b(str(root).encode(), digest_size=12).hexdigest()
        self.file = base / f"index-v{SCAN_VERSION}" / f"{key}.json" if base is not None else None
        self.entries: dict[str, tuple[str, FileFacts | None, tuple[int, int]]] = {}  # None: not decoded yet
        self.raw: dict[str, Any] = {}
        self.dirty = False
        if self.file is None:
            return
        from kernlint.base.inputs import ReadProblem, read_regular

        try:
            # Only a regular file, size-capped: a FIFO or a link to /dev/zero in its place must not hang.
            data = json.loads(read_regular(self.file, 256 << 20).decode("utf-8"))
            if (isinstance(data, dict) and data.get("version") == SCAN_VERSION and data.get("root") == str(root)
                    and data.get("code") == scanner_stamp()):
                files = data.get("files", {})
                self.raw = files if isinstance(files, dict) else {}
        except (ReadProblem, OSError, ValueError, RecursionError):
            self.raw = {}  # missing or corrupt: rebuilt and rewritten

    def unchanged(self, path: str, stamp: tuple[int, int]) -> str | None:
        """The content digest of `path` if its (mtime_ns, size) are those it was hashed with (no need to
        re-read); its facts stay as read from the JSON until `decode` (a run may need none of them)."""
        hit = self.raw.get(path)
        if not isinstance(hit, dict) or hit.get("stamp") != list(stamp) or not isinstance(hit.get("facts"), dict):
            return None
        digest = str(hit.get("hash"))
        self.entries[path] = (digest, None, stamp)
        return digest

    def decode(self, path: str) -> FileFacts | None:
        """The facts of an entry `unchanged` kept undecoded; None if they do not decode (a damaged entry)."""
        digest, _none, stamp = self.entries[path]
        if not _sound(path, self.raw[path]):
            return None
        try:
            facts = facts_from_json(self.raw[path]["facts"])
        except (KeyError, TypeError, ValueError):
            return None
        self.entries[path] = (digest, facts, stamp)
        return facts

    def stamp(self, path: str) -> tuple[int, int]:
        """The (mtime_ns, size) `path`'s entry was made with this run."""
        return self.entries[path][2]

    def forget(self, path: str) -> None:
        """Drop `path`'s entry (a file no longer indexed): the next save leaves it out."""
        self.entries.pop(path, None)
        self.dirty = True

    def get(self, path: str, digest: str, stamp: tuple[int, int] = (0, 0)) -> FileFacts | None:
        hit = self.raw.get(path)
        if not isinstance(hit, dict) or hit.get("hash") != digest or not _sound(path, hit):
            return None
        try:
            facts = facts_from_json(hit["facts"])
        except (KeyError, TypeError, ValueError):
            return None
        if list(stamp) != hit.get("stamp"):
            self.dirty = True  # same content, new mtime: store the new stamp
        self.entries[path] = (digest, facts, stamp)
        return facts

    def put(self, path: str, digest: str, facts: FileFacts | None, stamp: tuple[int, int] = (0, 0)) -> None:
        self.entries[path] = (digest, facts, stamp)
        self.dirty = True

    def save(self, root: Path) -> None:
        if self.file is None or not (self.dirty or set(self.raw) - set(self.entries)):
            return
        files = {}
        for p, (h, f, st) in self.entries.items():
            if f is None:  # not decoded this run: kept as read, with its own checksum (right or not)
                files[p] = {"hash": h, "stamp": list(st), "facts": self.raw[p]["facts"], "sum": self.raw[p].get("sum")}
                continue
            entry: dict[str, Any] = {"hash": h, "stamp": list(st), "facts": dataclasses.asdict(f)}
            entry["sum"] = entry_sum(p, entry)
            files[p] = entry
        payload = json.dumps({"version": SCAN_VERSION, "code": scanner_stamp(), "root": str(root), "files": files},
                             separators=(",", ":"))
        atomic_write(self.file, payload.encode("utf-8"))
