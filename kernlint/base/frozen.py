"""`frozen`: `@dataclass(frozen=True, slots=True)` built without `dataclasses`' per-class code generation.

kernlint defines ~90 frozen dataclasses at import time, and every process (each `-j` worker too) pays for
them: on Python 3.11 the standard decorator compiles each generated method (__init__, __repr__, __eq__,
__hash__, __setattr__, __delattr__) with its own `exec`, ~0.6 ms per class (issue 17: ~60 ms of a run's
start-up). `frozen` collects the fields as `dataclasses` does (`_fields`), builds __init__ from the text
CPython 3.11's `_init_fn` writes, compiled once per shape of class (`_init`), computes __eq__, __hash__,
__repr__ and the frozen __setattr__/__delattr__ with closures (the values `_cmp_fn`, `_hash_fn`, `_repr_fn`
and `_frozen_get_del_attr`'s texts compute), adds the slots with the same `_add_slots`, and writes the
standard __doc__ of a class without a docstring when it is first read. The class is the same: frozen, same
__init__ signature, equality, hash, repr, __doc__, __match_args__, `dataclasses.fields`/`replace`/`asdict`,
pickling (tests/test_frozen.py compares them side by side).

On any other Python version, for a class that inherits from a dataclass, one that defines its own
__setattr__/__delattr__, or one with a keyword-only field or a ClassVar/InitVar/KW_ONLY annotation, it is
exactly `dataclass(frozen=True, slots=True)`.
"""
from __future__ import annotations

import abc
import dataclasses
import inspect
import operator
import sys
import types
import typing
from typing import Any, Callable, TypeVar

T = TypeVar("T")

# What follows is CPython 3.11's dataclasses; other versions generate other code (3.12 compares field by field).
_FAST = sys.version_info[:2] == (3, 11) and all(
    hasattr(dataclasses, n) for n in ("_recursive_repr", "_add_slots", "_DataclassParams", "_HAS_DEFAULT_FACTORY",
                                      "_FIELD", "_MODULE_IDENTIFIER_RE"))


def frozen(cls: type[T]) -> type[T]:
    """The class as `@dataclasses.dataclass(frozen=True, slots=True)` makes it."""
    module = sys.modules.get(cls.__module__)
    if not _FAST or module is None or "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__ or any(
            hasattr(b, "__dataclass_fields__") for b in cls.__mro__[1:]):
        return dataclasses.dataclass(cls, frozen=True, slots=True)
    all_init = _fields(cls, module.__dict__)
    if all_init is None:
        return dataclasses.dataclass(cls, frozen=True, slots=True)
    had_doc = bool(cls.__dict__.get("__doc__"))
    class_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    has_explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    std_init = [f for f in all_init if f.init]
    seen_default = False
    for f in std_init:
        if not (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING):
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    cls.__dataclass_fields__ = {f.name: f for f in all_init}  # type: ignore[attr-defined]
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in std_init)  # type: ignore[attr-defined]
    methods = {"__repr__": dataclasses._recursive_repr(_repr([f.name for f in all_init if f.repr])),  # type: ignore[attr-defined]
               "__eq__": _eq([f.name for f in all_init if f.compare])}
    methods.update(_frozen_attrs(cls, tuple(f.name for f in all_init)))
    own_init = "__init__" in cls.__dict__
    for name, fn in methods.items():
        if name not in cls.__dict__:
            fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
            setattr(cls, name, fn)
    if not has_explicit_hash:
        hash_ = _hash([f.name for f in all_init if (f.compare if f.hash is None else f.hash)])
        hash_.__qualname__ = f"{cls.__qualname__}.__hash__"
        cls.__hash__ = hash_  # type: ignore[method-assign]
    cls.__dataclass_params__ = dataclasses._DataclassParams(True, True, True, False, False, True)  # type: ignore[attr-defined]
    if not had_doc:
        cls.__doc__ = _StandardDoc()  # type: ignore[assignment]
    cls = dataclasses._add_slots(cls, True, False)  # type: ignore[attr-defined]
    if not own_init:
        # Made once the slots exist: neither `_add_slots` nor anything before it calls or reads __init__.
        cls.__init__ = _init(cls, all_init, module.__dict__)  # type: ignore[misc]
    abc.update_abstractmethods(cls)
    return cls


def _fields(cls: type, namespace: dict[str, Any]) -> list[dataclasses.Field] | None:
    """The class's fields as `dataclasses` collects them (its `_process_class` and `_get_field`, for a class
    without dataclass bases), with the class attributes that held `field(...)` replaced by the default or
    removed; None where the standard decorator must do it: an annotation that `dataclasses` takes for a
    ClassVar, an InitVar or KW_ONLY, or a keyword-only field."""
    annotations = cls.__dict__.get("__annotations__", {})
    for name in annotations:
        if _pseudo_field(annotations[name], namespace):
            return None
    fields = []
    for name, type_ in annotations.items():
        default = getattr(cls, name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
            if f.kw_only is True:
                return None
        else:
            if isinstance(default, types.MemberDescriptorType):
                default = dataclasses.MISSING  # a field in the class's own __slots__: no default
            f = dataclasses.Field(default, dataclasses.MISSING, True, True, None, True, None,  # type: ignore[call-arg]
                                  dataclasses.MISSING)  # what `field(default=default)` makes
        f.name = name
        f.type = type_
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        f.kw_only = False
        if f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        fields.append(f)
    for f in fields:
        if isinstance(getattr(cls, f.name, None), dataclasses.Field):
            if f.default is dataclasses.MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return fields


def _pseudo_field(annotation: Any, namespace: dict[str, Any]) -> bool:
    """Whether `dataclasses` takes this annotation (of a class whose module's namespace is `namespace`) for a
    ClassVar, an InitVar or KW_ONLY: its `_is_classvar`, `_is_initvar`, `_is_kw_only` and, for a string
    annotation, `_is_type` (the leading `name` or `module.name`, looked up in the class's module, or in
    `typing`/`dataclasses` when `module` names one of them), with one match for the three."""
    if isinstance(annotation, str):
        match = dataclasses._MODULE_IDENTIFIER_RE.match(annotation)  # type: ignore[attr-defined]
        if not match:
            return False
        module_name, name = match.groups()
        if module_name:
            module = namespace.get(module_name)
            if module is typing:
                return _is_classvar(typing.__dict__.get(name))
            if module is dataclasses:
                value = dataclasses.__dict__.get(name)
                return _is_initvar(value) or value is dataclasses.KW_ONLY
            return False
        annotation = namespace.get(name)
    return _is_classvar(annotation) or _is_initvar(annotation) or annotation is dataclasses.KW_ONLY


def _is_classvar(value: Any) -> bool:
    return value is typing.ClassVar or (type(value) is typing._GenericAlias  # type: ignore[attr-defined]
                                        and value.__origin__ is typing.ClassVar)


def _is_initvar(value: Any) -> bool:
    return value is dataclasses.InitVar or type(value) is dataclasses.InitVar


class _StandardDoc:
    """The __doc__ the standard decorator gives a class without a docstring, its name and __init__ signature,
    computed when first read (kernlint reads none): `inspect.signature` costs ~40 us a class."""

    def __get__(self, obj: Any, owner: type) -> str:
        try:
            text_sig = str(inspect.signature(owner)).replace(" -> None", "")
        except (TypeError, ValueError):
            text_sig = ""
        owner.__doc__ = doc = owner.__name__ + text_sig
        return doc


_INIT_CODE: dict[tuple[str, bool], types.CodeType] = {}
"""The code of the standard __init__ per shape (`_init`): the kinds of its fields, whether it calls __post_init__."""


def _init(cls: type, all_init: list[dataclasses.Field], namespace: dict[str, Any]) -> Callable[..., None]:
    """The __init__ CPython 3.11's `_init_fn` writes for a frozen class, with each field stored through its
    slot's member descriptor (what `object.__setattr__(self, name, value)` ends in, without looking the
    attribute up by name: a frozen value is built per evaluated expression node, ~0.45 us less for a
    ten-field class). Classes of one shape share one compiled code object, renamed to their field names
    (`code.replace`): compiling costs ~25 us + 8 us a field, ~12 ms for kernlint's classes otherwise."""
    kinds = []  # per field: "p" a parameter, "F" a parameter with a default factory, "d"/"f" not a parameter
    stored = []  # the fields __init__ stores, in order
    for f in all_init:
        factory = f.default_factory is not dataclasses.MISSING
        if f.init or factory or f.default is not dataclasses.MISSING:
            kinds.append(("F" if factory else "p") if f.init else ("f" if factory else "d"))
            stored.append(f)
    shape = ("".join(kinds), hasattr(cls, "__post_init__"))
    code = _INIT_CODE.get(shape)
    if code is None:
        code = _INIT_CODE[shape] = _init_code(*shape)
    self_name = "__dataclass_self__" if "self" in cls.__dataclass_fields__ else "self"  # type: ignore[attr-defined]
    # The template's names: `self`, `a<i>` for the i-th stored field, `_set_<i>`/`_dflt_<i>` for its closure
    # cells, and `_HAS_DEFAULT_FACTORY`.
    renamed = {"self": self_name, "_HAS_DEFAULT_FACTORY": "_HAS_DEFAULT_FACTORY"}
    cells = {"_HAS_DEFAULT_FACTORY": dataclasses._HAS_DEFAULT_FACTORY}  # type: ignore[attr-defined]
    for i, f in enumerate(stored):
        renamed[f"a{i}"] = f.name
        renamed[f"_set_{i}"] = f"_set_{f.name}"
        renamed[f"_dflt_{i}"] = f"_dflt_{f.name}"
        cells[f"_set_{i}"] = getattr(cls, f.name).__set__
        cells[f"_dflt_{i}"] = f.default if f.default_factory is dataclasses.MISSING else f.default_factory
    closure = tuple(types.CellType(cells[n]) for n in code.co_freevars)
    code = code.replace(co_varnames=tuple(renamed[n] for n in code.co_varnames),
                        co_freevars=tuple(renamed[n] for n in code.co_freevars))
    defaults = tuple(f.default if f.default_factory is dataclasses.MISSING else dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
                     for f in stored if f.init and not (f.default is dataclasses.MISSING
                                                        and f.default_factory is dataclasses.MISSING))
    init = types.FunctionType(code, namespace, "__init__", defaults or None, closure)
    init.__annotations__ = {**{f.name: f.type for f in stored if f.init}, "return": None}
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _init_code(kinds: str, post_init: bool) -> types.CodeType:
    """The code of `_init_fn`'s __init__ for fields of these kinds (`_init`), with the template's names."""
    body = []
    for i, kind in enumerate(kinds):
        value = {"p": f"a{i}", "F": f"_dflt_{i}() if a{i} is _HAS_DEFAULT_FACTORY else a{i}", "d": f"_dflt_{i}",
                 "f": f"_dflt_{i}()"}[kind]
        body.append(f"_set_{i}(self,{value})")
    if post_init:
        body.append("self.__post_init__()")
    # The outer function's parameters become the closure's cells: only those the body reads (each costs
    # compile time).
    cells = [*(["_HAS_DEFAULT_FACTORY"] if "F" in kinds else []), *(f"_set_{i}" for i in range(len(kinds))),
             *(f"_dflt_{i}" for i, kind in enumerate(kinds) if kind != "p")]
    text = "\n".join([f"def __create_fn__({', '.join(cells)}):",
                      f" def __init__({','.join(['self'] + [f'a{i}' for i, k in enumerate(kinds) if k in 'pF'])}):",
                      *(f"  {b}" for b in body or ["pass"]),
                      " return __init__"])
    # dont_inherit: this module's `from __future__ import annotations` must not apply to the text.
    outer = compile(text, "<string>", "exec", dont_inherit=True).co_consts[0]
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType))


# The other methods need no code of their own: closures over the field names compute what CPython 3.11's
# generated texts compute (`(self.a,self.b,)==(other.a,other.b,)`, `hash((self.a,self.b,))`, the repr
# f-string, the frozen __setattr__/__delattr__), with `operator.attrgetter` building the same tuples.

def _fields_tuple(names: list[str]) -> Callable[[Any], tuple]:
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq(names: list[str]) -> Callable[[Any, Any], Any]:
    values = _fields_tuple(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    return __eq__


def _hash(names: list[str]) -> Callable[[Any], int]:
    values = _fields_tuple(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))
    return __hash__


def _repr(names: list[str]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        return self.__class__.__qualname__ + "(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"
    return __repr__


def _frozen_attrs(cls: type, names: tuple[str, ...]) -> dict[str, Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return {"__setattr__": __setattr__, "__delattr__": __delattr__}
