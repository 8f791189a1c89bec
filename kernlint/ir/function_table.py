"""A translation unit's functions by key, where the front end may leave some to be lowered on first use.

Most device functions a file's parse sees are defined in included headers (helper_math.h alone has hundreds),
and many of the file's own are never called by a kernel it evaluates; lowering them all was the largest part
of the front end's time. The front end lowers the file's kernels up front and records every other device
function by key with what it needs to lower it later; the table lowers it the first time it is asked for
(`table[key]`, `get`, `named`, `in_file`), once. The keys are all known up front, in the
order the parse met the functions; iterating over the values lowers everything, so the evaluator asks by
key or by name instead.

Lowering needs the parse (libclang's translation unit, which the pending entries keep alive): `release`
ends it when the file is done. After that, and in a pickled copy, the table holds the functions lowered
so far; asking for one that never was is an error (`Released`), never a silent absence.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Protocol, TypeVar


class _Function(Protocol):
    """What the table reads of a function (an `ir.Function`): its name and the calls in its body."""

    name: str

    def calls(self) -> Iterator[Any]: ...


# A function of the IR (`ir.Function`, which holds this table: the table reads only `_Function` of it).
Function = TypeVar("Function", bound=_Function)


class Released(LookupError):
    """A function the table was to lower on demand was asked for after its parse was released."""


class _Pending:
    """A function not lowered yet: its cursor-level spelling (the last part of its name) and what the
    table's loader takes to lower it."""

    __slots__ = ("spelling", "payload")

    def __init__(self, spelling: str, payload: Any) -> None:
        self.spelling = spelling
        self.payload = payload


class FunctionTable(Mapping[str, Function]):
    """Functions by key (`Function.key`), in the order the parse met them; see the module's docstring.

    `loader(payload)` lowers a pending function; it is dropped by `release`."""

    def __init__(self, functions: Mapping[str, Function] | None = None,
                 loader: Callable[[Any], Function] | None = None) -> None:
        self._entries: dict[str, Function | _Pending] = dict(functions or {})
        self._in_file: list[str] = list(self._entries)  # keys of the functions defined in the parsed file
        self._loader = loader
        self._released = False
        # Keys by the name a lookup by name can match without lowering: a lowered function's full name, a
        # pending one's spelling (its name is that spelling, or `Class::` and that spelling).
        self._by_name: dict[str, list[str]] = {}
        for key, fn in self._entries.items():
            self._by_name.setdefault(fn.name, []).append(key)  # type: ignore[union-attr]
        self._named: dict[str, tuple[Function, ...]] = {}

    # --- building (the front end) -------------------------------------------------------------

    def add(self, key: str, fn: Function) -> None:
        """`fn`, lowered now (a function of the parsed file itself)."""
        self._put(key, fn, fn.name)
        self._in_file.append(key)

    def defer(self, key: str, spelling: str, payload: Any, in_file: bool = False) -> None:
        """A function to lower the first time it is asked for: `loader(payload)` gives it. `spelling`: the
        declaration's own name, which is its Function.name or the part after the last `Class::`;
        `in_file`: it is defined in the parsed file itself."""
        self._put(key, _Pending(spelling, payload), spelling)
        if in_file:
            self._in_file.append(key)

    def _put(self, key: str, value: Function | _Pending, name: str) -> None:
        if key in self._entries:  # a later definition under the same key replaces the earlier (same place)
            old = self._entries[key]
            old_name = old.spelling if isinstance(old, _Pending) else old.name
            self._by_name[old_name].remove(key)
            if key in self._in_file:
                self._in_file.remove(key)
        self._entries[key] = value
        self._by_name.setdefault(name, []).append(key)
        self._named.clear()

    # --- the Mapping --------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Function:
        value = self._entries[key]
        if isinstance(value, _Pending):
            value = self._lower(key, value)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        pending = sum(isinstance(v, _Pending) for v in self._entries.values())
        return f"FunctionTable({len(self._entries) - pending} lowered, {pending} pending)"

    def _lower(self, key: str, pending: _Pending) -> Function:
        if self._loader is None:
            raise Released(f"{key}: not lowered before its parse was released")
        fn = self._loader(pending.payload)
        self._entries[key] = fn
        if fn.name != pending.spelling:
            self._by_name[pending.spelling].remove(key)
            self._by_name.setdefault(fn.name, []).append(key)
        return fn

    # --- questions that lower only what they need ---------------------------------------------

    def in_file(self, names: Collection[str] | None = None, lowered: bool = False) -> tuple[Function, ...]:
        """The functions defined in the parsed file itself, in order: all (lowering them), those whose name is
        one of `names` (lowering only those whose spelling could make one), or with `lowered` only those
        lowered so far (lowering none)."""
        keys: Iterable[str] = self._in_file
        if names is not None:
            wanted = {k for name in names for cand in _suffixes(name) for k in self._by_name.get(cand, ())}
            keys = [k for k in self._in_file if k in wanted]
        if lowered:
            keys = [k for k in keys if not isinstance(self._entries[k], _Pending)]
        out = (self[k] for k in keys)
        return tuple(out) if names is None else tuple(f for f in out if f.name in names)  # type: ignore[operator]

    def named(self, name: str) -> tuple[Function, ...]:
        """The functions whose `name` is `name` (`Class::method` for a method), in the table's order;
        lowers only those whose own spelling could make that name."""
        hit = self._named.get(name)
        if hit is not None:
            return hit
        keys: list[str] = []
        for cand in _suffixes(name):
            keys.extend(self._by_name.get(cand, ()))
        if len(keys) > 1:
            position = {k: i for i, k in enumerate(self._entries)}
            keys.sort(key=position.__getitem__)
        out = tuple(fn for fn in (self[k] for k in dict.fromkeys(keys)) if fn.name == name)
        self._named[name] = out
        return out

    def methods_spelled(self, spelling: str) -> tuple[Function, ...]:
        """The methods (`Class::spelling`) whose own name is `spelling`, in the table's order: the
        candidates of a call `spelling(...)` made inside a method without `this->` (clang leaves it
        unresolved in a class template)."""
        tail = "::" + spelling
        keys = [*self._by_name.get(spelling, ()),  # not lowered yet: filed under their spelling
                *(k for name, ks in self._by_name.items() if name.endswith(tail) for k in ks)]
        position = {k: i for i, k in enumerate(self._entries)}
        keys = sorted(dict.fromkeys(keys), key=position.__getitem__)
        return tuple(fn for fn in (self[k] for k in keys) if fn.name.endswith(tail))

    def at_place(self, target: str) -> Iterator[Function]:
        """The functions whose key names the same place as `target` (`...@file:line:column`), in the table's
        order, lowered as they are yielded: a class template's member, which clang names by its
        specialization while the file holds the pattern."""
        where = target[target.rfind("@"):]
        return (self[k] for k in tuple(self._entries) if k.endswith(where))

    def reachable(self, roots: Iterable[Function]) -> list[Function]:
        """`roots` and every function a call in them can reach, transitively: by the call's target key, by
        a key at the same place (a class template's member, which clang names by its specialization), and
        by the call's name (the evaluator's fallbacks, eval/coverage.py and eval/interp_calls.py). A superset
        of what evaluating `roots` can inline, in a deterministic order; lowers only those."""
        seen: dict[int, Function] = {}
        placed: set[str] = set()  # targets already looked up by place (a scan of every key)
        queue = [f for f in roots]
        while queue:
            f = queue.pop()
            if id(f) in seen:
                continue
            seen[id(f)] = f
            for n in f.calls():
                if n.target:
                    if n.target in self._entries:
                        queue.append(self[n.target])
                    elif n.target not in placed:
                        placed.add(n.target)
                        queue.extend(self.at_place(n.target))
                for cand in _suffixes(n.name):
                    for k in tuple(self._by_name.get(cand, ())):
                        queue.append(self[k])
        return list(seen.values())

    # --- the end of the parse -------------------------------------------------------------------

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        """Drop the loader (and with it the parse it keeps alive); what is still pending can no longer be
        lowered."""
        self._loader = None
        self._released = True
        for value in self._entries.values():
            if isinstance(value, _Pending):
                value.payload = None  # (a cursor: it keeps its translation unit alive)

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy holds what was lowered (no cursor crosses a pickle); the rest stays pending, unloadable.
        return (_rebuild, ({k: (v.spelling if isinstance(v, _Pending) else v) for k, v in self._entries.items()},
                           tuple(self._in_file)))


def key_file(key: str) -> str:
    """The file a function's key (`name@file:line`, frontend/lowering.py `_function_key`) names."""
    return key[key.rfind("@") + 1:].rpartition(":")[0]


def _rebuild(entries: dict[str, Any], in_file: tuple[str, ...]) -> FunctionTable:
    table = FunctionTable()
    own = frozenset(in_file)
    for key, value in entries.items():
        if isinstance(value, str):
            table.defer(key, value, None, key in own)
        elif key in own:
            table.add(key, value)
        else:
            table._put(key, value, value.name)
    table.release()
    return table


def _suffixes(name: str) -> list[str]:
    """`name` and each part of it after a `::` (`A::B::m` -> `A::B::m`, `B::m`, `m`): the spellings a
    function named `name` can have (a method's name is `Class::` and its spelling)."""
    out = [name]
    i = name.find("::")
    while i >= 0:
        out.append(name[i + 2:])
        i = name.find("::", i + 2)
    return out
