"""`by_identity`: memoise a pure function of an (immutable) IR node by the node's identity, for facts asked once per evaluation."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

MAX_ENTRIES = 256  # per function unless given; the cache is emptied when full (memory stays bounded over many files)


def by_identity(fn: F | None = None, *, max_entries: int = MAX_ENTRIES) -> Any:
    """`fn(node, *args)` computed once per (node, args): IR nodes are immutable, and the cache holds a
    reference to each node it keys, so an id is never reused while cached. For facts about a kernel that
    every evaluation of it asks again (re-evaluations for KL201's padding, dead regions, odd offsets), and
    (with a larger `max_entries`) the static questions the evaluator asks at every branch and loop
    iteration (eval/stmt_facts.py). `@by_identity` or `@by_identity(max_entries=N)`."""
    if fn is None:
        return lambda f: by_identity(f, max_entries=max_entries)
    cache: dict[tuple, tuple[object, object]] = {}

    @functools.wraps(fn)
    def wrapper(node: object, *args: object) -> object:
        key = (id(node), *args)
        hit = cache.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        value = fn(node, *args)
        if len(cache) >= max_entries:
            cache.clear()
        cache[key] = (node, value)
        return value

    return wrapper


def by_identities(fn: F | None = None, *, max_entries: int = MAX_ENTRIES) -> Any:
    """`fn(*objects)` computed once per tuple of argument identities: as `by_identity`, for facts of
    several immutable objects (a node and the translation unit it is looked up in, a loop and its
    condition). The cache holds a reference to every argument it keys. `@by_identities` or
    `@by_identities(max_entries=N)`."""
    if fn is None:
        return lambda f: by_identities(f, max_entries=max_entries)
    cache: dict[tuple, tuple[tuple, object]] = {}

    @functools.wraps(fn)
    def wrapper(*objects: object) -> object:
        key = tuple(map(id, objects))
        hit = cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objects)):
            return hit[1]
        value = fn(*objects)
        if len(cache) >= max_entries:
            cache.clear()
        cache[key] = (objects, value)
        return value

    return wrapper
