"""kernlint.base.frozen makes the same class as `dataclass(frozen=True, slots=True)`: checked side by side on
classes with every field feature kernlint uses (defaults, factories, compare/hash/repr/init off, a field
named `self`, an explicit __hash__, __eq__ or __init__ of the class's own, __post_init__, no docstring, no
fields), on classes that share the shape of another's __init__ (one compiled code object, renamed), and on
what `frozen` hands to the standard decorator (ClassVar, InitVar, KW_ONLY, keyword-only fields)."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import typing
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import ClassVar

import pytest

from kernlint.base.frozen import frozen

STD = dataclass(frozen=True, slots=True)
CV = ClassVar  # `dataclasses` resolves a string annotation's leading name in the class's module: an alias counts


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

    @deco
    class SameShape:
        """Plain's shape (three parameters, no __post_init__) with other names: Plain's code, renamed."""

        z: int
        a: str = "x"
        b: tuple = ()

    @deco
    class Later:
        """A field left out of __init__ without a default, set by __post_init__; a factory outside __init__."""

        a: int
        b: int = field(init=False)
        c: list = field(default_factory=list, init=False, compare=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "b", 2 * self.a)

    # A ClassVar annotation spelled three ways (strings here: `from __future__ import annotations`), one a
    # class (one would make `frozen` hand the whole class to the standard decorator).
    @deco
    class Classy:
        a: int
        k: ClassVar[int] = 3
        b: int = 1

    @deco
    class ClassyQualified:
        a: int
        t: typing.ClassVar[str] = "t"
        b: int = 1

    @deco
    class ClassyAlias:
        a: int
        v: CV = 9
        b: int = 1

    @deco
    class WithInitVar:
        a: int
        scale: InitVar[int] = 2
        b: int = field(init=False, default=0)

        def __post_init__(self, scale: int) -> None:
            object.__setattr__(self, "b", self.a * scale)

    @deco
    class KwMarker:
        a: int
        _: KW_ONLY
        b: int = 0

    @deco
    class KwField:
        a: int
        b: int = field(default=0, kw_only=True)

    return {"Plain": Plain, "Features": Features, "Selfish": Selfish, "Empty": Empty, "OwnHash": OwnHash,
            "OwnEq": OwnEq, "Post": Post, "Bare": Bare, "OwnInit": OwnInit, "SameShape": SameShape, "Later": Later,
            "Classy": Classy, "ClassyQualified": ClassyQualified, "ClassyAlias": ClassyAlias,
            "WithInitVar": WithInitVar, "KwMarker": KwMarker, "KwField": KwField}, seen


ARGS = {"Plain": [(1,), (1, "y"), (2, "x", (3,))], "Features": [(1,), (1, (2,), {"k": 1}, "d", 4)],
        "Selfish": [(1,), (1, 3)], "Empty": [()], "OwnHash": [(1,), (2,)], "OwnEq": [(1,)], "Post": [(5,)],
        "Bare": [()], "OwnInit": [(1,), (1, "z", 4, 5)], "SameShape": [(1,), (2, "y", (3,))], "Later": [(4,)],
        "Classy": [(1,), (1, 5)], "ClassyQualified": [(1, 5)], "ClassyAlias": [(1, 5)],
        "WithInitVar": [(3,), (3, 5)], "KwMarker": [(1,)], "KwField": [(1,)]}


def _field_facts(cls: type) -> list:
    """Every field `dataclasses` records, pseudo-fields (ClassVar, InitVar) included."""
    return [(name, f.name, f.type, f.default, f.default_factory is dataclasses.MISSING, f.init, f.repr, f.hash,
             f.compare, f.kw_only, f._field_type, dict(f.metadata))
            for name, f in cls.__dataclass_fields__.items()]


def _class_attrs(cls: type) -> dict:
    """The class's own attributes (the generated methods aside, compared by behaviour), __doc__ as read."""
    skip = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__post_init__",
            "__dataclass_fields__", "__dataclass_params__", "__doc__"}
    attrs = {k: ("slot", v.__name__) if inspect.ismemberdescriptor(v)
             else v for k, v in vars(cls).items() if k not in skip and not callable(v)}
    return {**attrs, "__doc__": cls.__doc__, "own": sorted(vars(cls))}


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
    assert m.__init__.__defaults__ == s.__init__.__defaults__ and m.__init__.__kwdefaults__ == s.__init__.__kwdefaults__
    assert m.__init__.__module__ == s.__init__.__module__ and m.__init__.__name__ == s.__init__.__name__
    assert m.__init__.__code__.co_varnames[:m.__init__.__code__.co_argcount] == \
        s.__init__.__code__.co_varnames[:s.__init__.__code__.co_argcount]
    assert _class_attrs(m) == _class_attrs(s)
    assert m.__mro__[1:] == s.__mro__[1:] and type(m) is type(s)
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
        assert a.__doc__ == b.__doc__
        keywords = {f.name: getattr(a, f.name) for f in dataclasses.fields(m) if f.init}
        if name != "OwnInit":
            assert repr(m(**keywords)) == repr(s(**keywords))  # parameters by name
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


def _error(make_class):  # noqa: ANN001, ANN202
    try:
        make_class()
    except Exception as exc:  # noqa: BLE001 - the exception itself is compared
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("deco_pair", [(frozen, STD)])
def test_same_errors_as_the_standard_decorator(deco_pair: tuple) -> None:
    """A mutable default, a `field()` without an annotation, a ClassVar with a default factory."""
    def bodies(deco):  # noqa: ANN001, ANN202
        def mutable():  # noqa: ANN202
            @deco
            class M:
                a: list = []  # noqa: RUF012

        def unannotated():  # noqa: ANN202
            @deco
            class U:
                a: int
                b = field(default=1)

        def classvar_factory():  # noqa: ANN202
            @deco
            class C:
                a: ClassVar[list] = field(default_factory=list)
        return [mutable, unannotated, classvar_factory]

    mine, std = deco_pair
    for m, s in zip(bodies(mine), bodies(std)):
        assert _error(m) == _error(s) is not None


def test_one_shape_many_names() -> None:
    """Classes of one __init__ shape share its compiled code, renamed: each still takes its own parameter
    names, reports its own missing and unexpected arguments, and stores into its own slots."""
    made = {}
    for deco in (frozen, STD):
        @deco
        class P:
            a: int
            b: int = 2

        @deco
        class Q:
            x: int
            y: int = 5

        made[deco] = (P, Q)
    (p, q), (sp, sq) = made[frozen], made[STD]
    assert p.__init__.__code__.co_code == q.__init__.__code__.co_code  # the shared template
    assert (q(x=1).x, q(x=1).y, q(3, y=4).y, p(b=7, a=1).b) == (1, 5, 4, 7)
    for mine, std, call in ((q, sq, lambda c: c()), (q, sq, lambda c: c(1, z=2)), (p, sp, lambda c: c(1, 2, 3)),
                            (p, sp, lambda c: c(1, a=2))):
        assert _error(lambda: call(mine)) == _error(lambda: call(std)) is not None


def test_doc_is_written_when_first_read() -> None:
    """The standard __doc__ of a class without a docstring, computed on first read, then a plain string."""
    @frozen
    class NoDoc:
        a: int
        b: str = "x"

    @STD
    class NoDocStd:
        a: int
        b: str = "x"

    assert NoDoc(1).__doc__ == NoDocStd.__doc__.replace("NoDocStd", "NoDoc") == "NoDoc(a: 'int', b: 'str' = 'x')"
    assert isinstance(vars(NoDoc)["__doc__"], str)
