"""`by_identity`: memoise a pure function of an (immutable) IR node by the node's identity, for facts asked once per evaluation."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

MAX_ENTRIES = 256  # per function; the cache is emptied when full (memory stays bounded over many files)


def by_identity(fn: F) -> F:
    """`fn(node, *args)` computed once per (node, args): IR nodes are immutable, and the cache holds a
    reference to each node it keys, so an id is never reused while cached. For facts about a kernel that
    every evaluation of it asks again (re-evaluations for KL201's padding, dead regions, odd offsets)."""
    cache: dict[tuple, tuple[object, object]] = {}

    @functools.wraps(fn)
    def wrapper(node: object, *args: object) -> object:
        key = (id(node), *args)
        hit = cache.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        value = fn(node, *args)
        if len(cache) >= MAX_ENTRIES:
            cache.clear()
        cache[key] = (node, value)
        return value

    return wrapper  # type: ignore[return-value]
