"""Sealed cache entries: each carries a checksum of its content and of the key it answers, and is read
only if it is a regular file of sane size; anything else is a miss (issue 30).

A flipped bit in a stored result, or an entry copied under another key, must never be served as a
result: `seal` prefixes the payload with a digest of (key, payload), `unseal` gives the payload back only
when that digest matches. `read_entry` opens without following a link (kernlint never writes one) and
without blocking (a FIFO), and reads only a regular file of this user's (if asked) no larger than a cap,
so a link to /dev/zero or a sparse file of gigabytes costs nothing.
"""
from __future__ import annotations

import hashlib
import os
import stat

_MAGIC = b"kernlint-entry-1 "
_DIGEST_HEX = 32


def _digest(key: str, payload: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST_HEX // 2)
    h.update(key.encode("utf-8", "surrogateescape"))
    h.update(b"\0")
    h.update(payload)
    return h.hexdigest().encode("ascii")


def seal(key: str, payload: bytes) -> bytes:
    """The bytes to store for `payload` under `key`."""
    return _MAGIC + _digest(key, payload) + b"\n" + payload


def unseal(key: str, data: bytes) -> bytes | None:
    """The payload `seal(key, payload)` stored in `data`, or None: not sealed, or damaged, or another key's."""
    head = len(_MAGIC) + _DIGEST_HEX + 1
    if len(data) < head or not data.startswith(_MAGIC) or data[head - 1:head] != b"\n":
        return None
    payload = data[head:]
    if data[len(_MAGIC):head - 1] != _digest(key, payload):
        return None
    return payload


def read_entry(path: str | os.PathLike[str], cap: int, owner: int | None = None) -> bytes | None:
    """The bytes of the entry at `path`, or None (a miss): missing, a link, not a regular file, larger than
    `cap`, not owned by `owner` (when given), or unreadable. Never blocks, never reads more than cap + 1."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap or (owner is not None and st.st_uid != owner):
            return None
        chunks = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= cap else None
    except OSError:
        return None
    finally:
        os.close(fd)
