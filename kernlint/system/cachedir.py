"""Where every kernlint cache lives (results, project index, ptxas figures) and whether caching is
turned off."""
from __future__ import annotations

import os
from pathlib import Path


def cache_location() -> Path:
    """The directory of every kernlint cache (results, project index, ptxas figures), one resolution
    for all: `$KERNLINT_CACHE_DIR` (the CLI sets it from `--cache-dir`), else `$XDG_CACHE_HOME/kernlint`,
    else `~/.cache/kernlint`. Whether caching is on is `cache_dir`'s question."""
    explicit = os.environ.get("KERNLINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "kernlint" if xdg else Path(os.path.expanduser("~")) / ".cache" / "kernlint"


def cache_dir() -> Path | None:
    """`cache_location()`, or None when caching is off (`KERNLINT_NO_CACHE` set to anything but 0)."""
    if os.environ.get("KERNLINT_NO_CACHE", "") not in ("", "0"):
        return None
    return cache_location()
