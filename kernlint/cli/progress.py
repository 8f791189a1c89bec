"""Progress on stderr (files done / total) for long runs on a terminal; nothing otherwise."""
from __future__ import annotations

import time
from typing import IO


class Progress:
    """`update(done)` rewrites one status line on `stream` once the run has taken `delay` seconds, at most
    every `interval` seconds; `clear()` erases it before anything else is written to the stream."""

    def __init__(self, stream: IO[str], total: int, delay: float = 2.0, interval: float = 0.2) -> None:
        self.stream = stream
        self.total = total
        self.start = time.monotonic()
        self.delay = delay
        self.interval = interval
        self.shown = False
        self._last = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.start < self.delay or (now - self._last < self.interval and done < self.total):
            return
        self._last = now
        self.stream.write(f"\r\x1b[2Kkernlint: {done}/{self.total} files")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def wanted(stream: IO[str], fmt: str) -> bool:
    """Only for people: a terminal, and a format meant to be read (never json, sarif or github)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty and fmt in ("text", "concise")
