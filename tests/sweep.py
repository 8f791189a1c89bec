"""Sweeps over many inputs split for speed: one representative of each group runs by default, the rest under `-m slow`."""
from __future__ import annotations

from typing import Any, Callable, Iterable

import pytest


def first_of_each(items: Iterable[Any], group: Callable[[Any], object],
                  ids: Callable[[Any], str] | None = None) -> list[Any]:
    """`items` as pytest parameters: the first item of each group (in the given order) runs in the default
    run, every other one is marked `slow` (run with `python -m pytest -m slow`). No item is dropped."""
    seen: set[object] = set()
    out = []
    for item in items:
        key = group(item)
        marks = (pytest.mark.slow,) if key in seen else ()
        seen.add(key)
        out.append(pytest.param(item, marks=marks, id=ids(item) if ids else None))
    return out
