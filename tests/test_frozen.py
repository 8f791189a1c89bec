"""kernlint.base.frozen makes the same class as `dataclass(frozen=True, slots=True)`: checked side by side on
classes with every field feature kernlint uses (defaults, factories, compare/hash/repr/init off, a field
named `self`, an explicit __hash__, __eq__ or __init__ of the class's own, __post_init__, no docstring, no
fields)."""
from __future__ import annotations

import copy
import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from kernlint.base.frozen import frozen

STD = dataclass(frozen=True, slots=True)


def make(deco):  # noqa: ANN001, ANN201 - the same class bodies, decorated by `deco`
    @deco
    class Plain:
        """A class."""

        a: int
        b: str = "x"
        c: tuple = ()

    @deco
    class Features:
        a: int
        b: tuple = field(default_factory=tuple)
        c: dict = field(default_factory=dict, compare=False, hash=False)
        d: object = field(default=None, compare=False, repr=False)
        e: float = field(default=1.5, init=False)
        f: tuple = field(default_factory=lambda: (1,), init=False)
        g: int = field(default=3, hash=True, compare=False)

    @deco
    class Selfish:
        """A field named self."""

        self: int
        other: int = 2

    @deco
    class Empty:
        """No fields."""

    @deco
    class OwnHash:
        """Its own __hash__."""

        a: int

        def __hash__(self) -> int:
            return 7

    @deco
    class OwnEq:
        """Its own __eq__ (the generated hash stays)."""

        a: int

        def __eq__(self, other: object) -> bool:
            return True

    @deco
    class Bare:
        pass

    @deco
    class OwnInit:
        a: int
        b: str = "x"

        def __init__(self, a: int, b: str = "y", *rest: int) -> None:
            object.__setattr__(self, "a", a + len(rest))
            object.__setattr__(self, "b", b)

    seen = []

    @deco
    class Post:
        """__post_init__ runs."""

        a: int

        def __post_init__(self) -> None:
            seen.append(self.a)

    return {"Plain": Plain, "Features": Features, "Selfish": Selfish, "Empty": Empty, "OwnHash": OwnHash,
            "OwnEq": OwnEq, "Post": Post, "Bare": Bare, "OwnInit": OwnInit}, seen


ARGS = {"Plain": [(1,), (1, "y"), (2, "x", (3,))], "Features": [(1,), (1, (2,), {"k": 1}, "d", 4)],
        "Selfish": [(1,), (1, 3)], "Empty": [()], "OwnHash": [(1,), (2,)], "OwnEq": [(1,)], "Post": [(5,)],
        "Bare": [()], "OwnInit": [(1,), (1, "z", 4, 5)]}


def _field_facts(cls: type) -> list:
    return [(f.name, f.type, f.default, f.default_factory is dataclasses.MISSING, f.init, f.repr, f.hash, f.compare,
             f.kw_only, f._field_type) for f in dataclasses.fields(cls)]


@pytest.mark.parametrize("name", sorted(ARGS))
def test_same_class_as_the_standard_decorator(name: str) -> None:
    mine, mine_seen = make(frozen)
    std, std_seen = make(STD)
    m, s = mine[name], std[name]
    assert _field_facts(m) == _field_facts(s)
    assert m.__doc__ == s.__doc__
    assert m.__match_args__ == s.__match_args__
    assert m.__slots__ == s.__slots__
    assert repr(m.__dataclass_params__) == repr(s.__dataclass_params__)
    assert str(inspect.signature(m)) == str(inspect.signature(s))
    assert m.__init__.__annotations__ == s.__init__.__annotations__
    for attr in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        fm, fs = getattr(m, attr), getattr(s, attr)
        assert (fm is None) == (fs is None), attr
        assert getattr(fm, "__qualname__", None) == getattr(fs, "__qualname__", None), attr
    for args in ARGS[name]:
        a, b = m(*args), s(*args)
        assert repr(a) == repr(b)
        assert hash(a) == hash(b)
        assert a == m(*args) and (a != m(*args)) is False
        assert (a == b) is (b == a)  # the same answer to "equal to an instance of another class?"
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert m.__getstate__ is s.__getstate__ and m.__setstate__ is s.__setstate__  # how pickle sees them
        assert copy.copy(a) == a
        assert copy.deepcopy(a) == a
        if dataclasses.fields(m):
            first = dataclasses.fields(m)[0].name
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
                setattr(a, first, 0)
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field"):
                delattr(a, first)
            if dataclasses.fields(m)[0].init:
                assert repr(dataclasses.replace(a, **{first: 9})) == repr(dataclasses.replace(b, **{first: 9}))
    mine_seen.clear()
    std_seen.clear()
    m(*ARGS[name][0]), s(*ARGS[name][0])
    assert mine_seen == std_seen


def test_rejects_what_the_standard_decorator_rejects() -> None:
    for deco in (frozen, STD):
        with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
            @deco
            class Bad:
                a: int = 1
                b: int  # type: ignore[misc]


def test_subclass_of_a_dataclass_gets_the_standard_decorator() -> None:
    @STD
    class Base:
        a: int

    @frozen
    class Sub(Base):
        b: int = 0

    assert Sub(1, 2) == Sub(1, 2) and repr(Sub(1)) == "test_subclass_of_a_dataclass_gets_the_standard_decorator." \
        "<locals>.Sub(a=1, b=0)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Sub(1).a = 2  # type: ignore[misc]
