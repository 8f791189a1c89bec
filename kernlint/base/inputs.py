"""Reading input safely: regular files only, a size cap, never blocking on FIFOs or devices."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

import click

# Largest source file kernlint reads (bytes); KERNLINT_MAX_FILE_BYTES overrides it. A real CUDA
# source is far below this; a larger "file" is generated data or a device, not code to lint.
DEFAULT_MAX_FILE_BYTES = 8 << 20


class ReadProblem(Exception):
    """A path that cannot be read as a source file: `message` says why (no path, no line)."""


def max_file_bytes() -> int:
    """The size cap in force (KERNLINT_MAX_FILE_BYTES, else DEFAULT_MAX_FILE_BYTES)."""
    raw = os.environ.get("KERNLINT_MAX_FILE_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_FILE_BYTES


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _too_big(cap: int) -> ReadProblem:
    return ReadProblem(f"larger than the size limit of {cap} bytes (set KERNLINT_MAX_FILE_BYTES to raise it)")


def read_regular(path: str | os.PathLike[str], cap: int | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `cap` bytes, else ReadProblem.

    Opened non-blocking (a FIFO never blocks the open) and checked with fstat on the open descriptor
    (no race between the check and the read); at most cap + 1 bytes are ever read."""
    cap = max_file_bytes() if cap is None else cap
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise ReadProblem("is a directory") from None
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL in the name
        raise ReadProblem(f"cannot read file: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadProblem(f"is {_kind(st.st_mode)}; only regular files are read")
        if st.st_size > cap:
            raise _too_big(cap)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return read_capped(fh, cap)
    except OSError as exc:
        raise ReadProblem(f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_capped(fh: BinaryIO, cap: int | None = None) -> bytes:
    """At most `cap` bytes of a stream (standard input): ReadProblem if it holds more (reads cap + 1)."""
    cap = max_file_bytes() if cap is None else cap
    chunks: list[bytes] = []
    left = cap + 1
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > cap:
        raise _too_big(cap)
    return data


def head(path: str | os.PathLike[str], n: int) -> bytes:
    """The first `n` bytes of a regular file, b"" for anything else or any error (never blocks)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError):
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)


def display_path(path: str) -> str:
    """`path` for one line of output: control characters (a newline in a file name would forge a
    diagnostic line) and undecodable bytes (surrogate escapes) are written as `\\xNN`."""
    if path.isprintable() and not any("\udc80" <= ch <= "\udcff" for ch in path):
        return path
    out = []
    for ch in path:
        if "\udc80" <= ch <= "\udcff":
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif not ch.isprintable() and ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


class InputProblem(Exception):
    """A path that cannot be linted: reported as `path:line: error: ...`, exit status 2."""

    def __init__(self, path: str, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message

    def render(self) -> str:
        path = display_path(self.path)
        where = f"{path}:{self.line}" if self.line else path
        return f"{where}: error: {self.message}"


def read_cuda_file(path: Path) -> str:
    """Read a source file as UTF-8 text, rejecting binaries with a clear message."""
    try:
        data = read_regular(path)  # regular files only, size-capped, never blocks (kernlint/base/inputs.py)
    except ReadProblem as exc:
        raise InputProblem(str(path), str(exc)) from None
    return decode_source(str(path), data)


def decode_source(name: str, data: bytes) -> str:
    """Source text of `data`: UTF-8, or leniently decoded text with one note; binary data is an InputProblem.

    nvcc compiles a file with a Latin-1 byte in a comment or string, so kernlint reads it too:
    bytes that are not UTF-8 become U+FFFD (only the columns of those lines shift for clang).
    """
    if b"\x00" in data[:65536]:
        raise InputProblem(name, "binary file (contains NUL bytes); expected CUDA source text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        sample = data[:65536]
        control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13))
        if control > len(sample) // 100:
            raise InputProblem(name, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}) "
                                     "and not text; expected CUDA source text", line) from None
        click.echo(f"{name}:{line}: note: not valid UTF-8 (byte 0x{data[exc.start]:02x}); such bytes were read "
                   "as U+FFFD (save the file as UTF-8 to silence this)", err=True)
        return data.decode("utf-8", errors="replace")
