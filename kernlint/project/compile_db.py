"""`compile_commands.json`: each file's include directories and macros (nvcc-only flags dropped)."""
from __future__ import annotations

import os
from pathlib import Path

from kernlint.base.frozen import frozen


@frozen
class FileFlags:
    include_dirs: tuple[str, ...] = ()
    macros: tuple[str, ...] = ()


def find_compile_db(root: Path | None, build_dir: str | None = None) -> Path | None:
    """`-p BUILD_DIR` (a directory holding compile_commands.json, or the file), else the root or root/build."""
    if build_dir:
        p = Path(build_dir)
        p = p if p.name == "compile_commands.json" else p / "compile_commands.json"
        return p if p.is_file() else None
    if root is None:
        return None
    for cand in (root / "compile_commands.json", root / "build" / "compile_commands.json"):
        if cand.is_file():
            return cand
    return None


_INCLUDE_FLAGS = ("-I", "-isystem", "-iquote", "--include-path", "-idirafter")
_MACRO_FLAGS = ("-D", "--define-macro")


def parse_flags(args: list[str], directory: str) -> FileFlags:
    """-I/-isystem/-iquote/-idirafter/--include-path (made absolute against `directory`) and -D/--define-macro,
    each with its value as the next argument, after `=`, or (a single-dash flag) joined to it as
    compilers take it (`-Iinc`, `-isystem/opt/x`, `-DN=4`); every other flag is dropped."""
    incs: list[str] = []
    macros: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        value = None
        kind = ""
        for flag in _INCLUDE_FLAGS + _MACRO_FLAGS:
            if a == flag and i + 1 < len(args):
                value, kind = args[i + 1], flag
                i += 1
                break
            if a.startswith(flag + "="):
                value, kind = a[len(flag) + 1:], flag
                break
            if a.startswith(flag) and not flag.startswith("--") and len(a) > len(flag) and a[len(flag)] != "-":
                value, kind = a[len(flag):], flag  # (not `-isystem-after`, another flag)
                break
        i += 1
        if value is None:
            continue
        if kind in _INCLUDE_FLAGS:
            incs.append(os.path.normpath(os.path.join(directory, value)))
        else:
            macros.append(value)
    return FileFlags(tuple(dict.fromkeys(incs)), tuple(dict.fromkeys(macros)))


def load_compile_db(path: Path) -> tuple[dict[str, FileFlags], str | None]:
    """abs file path -> flags; and a note when the database cannot be read."""
    import json
    import shlex

    try:
        entries = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:  # (RecursionError: arrays nested thousands deep)
        return {}, f"{path}: cannot read the compilation database ({exc}); ignored"
    if not isinstance(entries, list):
        return {}, f"{path}: not a JSON list of compile commands; ignored"
    out: dict[str, FileFlags] = {}
    base = os.path.abspath(path.parent)
    for e in entries:
        if not isinstance(e, dict) or "file" not in e:
            continue
        # Absolute, as the files are looked up: a relative (or missing) directory is the database's folder's.
        directory = os.path.join(base, str(e.get("directory", "")))
        if isinstance(e.get("arguments"), list):
            args = [str(a) for a in e["arguments"]]
        else:
            try:
                args = shlex.split(str(e.get("command", "")))
            except ValueError:
                continue
        out[os.path.normpath(os.path.join(directory, str(e["file"])))] = parse_flags(args, directory)
    return out, None
