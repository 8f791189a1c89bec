"""Dependent types of template code made concrete with the bound template arguments.

A device helper or class template keeps clang's dependent types (libclang exposes no instantiated
bodies): `typename vec4<T>::Type *p` (a member type of a class template, cuda-samples' nbody) and
`sizeof(E)` in `Packed128<E>::constant` (llm.c). Once the evaluator has bound `T`, the member type
is looked up among the member types the front end recorded (`TranslationUnit.member_types`): the
explicit specialization `vec4<float>::Type` first, else the primary template's member (`Traits<T>::Acc`
with `using Acc = T`). The primary template is not used when the class has partial specializations
(kernlint does not match them), and nothing is guessed: an argument that is not bound to a concrete
type leaves the type dependent (coverage then names it).
"""
from __future__ import annotations

from typing import Callable

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir

_MEMBER_RE = lazy_compile(r"^(?:typename\s+)?(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)\s*<(.*)>\s*::\s*([A-Za-z_]\w*)$")

PARTIAL = "<partial>"
"""Key suffix in `member_types` marking a class template that has partial specializations."""


def split_args(text: str) -> list[str]:
    """Top-level items of `a, B<c, d>, e` (template arguments or parameters; brackets of every kind nest)."""
    out = [""]
    depth = 0
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("")
            continue
        out[-1] += ch
    return [" ".join(a.split()) for a in out if a.strip()]


def member_type(name: str, member_types: dict[str, tuple[tuple[str, ...], ir.CType]],
                bound: Callable[[str], ir.CType | str | None]) -> ir.CType | None:
    """The concrete type `name` (`typename vec4<T>::Type`) denotes, or None.

    `bound(arg)` gives a template argument's concrete meaning in the current binding: a CType for a
    type (its `name` is the spelling clang uses for specializations), the text of an integer for a
    value, None when it is not bound.
    """
    m = _MEMBER_RE.match(" ".join(name.replace("const ", " ").split()))
    if m is None:
        return None
    cls, args_text, member = m.groups()
    values: list[ir.CType | str] = []
    for a in split_args(args_text):
        v = bound(a)
        if v is None:
            return None
        values.append(v)
    spelled = ", ".join(v if isinstance(v, str) else v.name for v in values)
    hit = member_types.get(f"{cls}<{spelled}>::{member}")
    if hit is not None:
        return hit[1] if _concrete(hit[1]) else None
    if f"{cls}{PARTIAL}" in member_types:
        return None  # a partial specialization may be the one that applies
    primary = member_types.get(f"{cls}::{member}")
    if primary is None:
        return None
    params, t = primary
    if _concrete(t):
        return t
    if t.kind == "template" and t.name in params:
        v = values[params.index(t.name)] if params.index(t.name) < len(values) else None
        return v if isinstance(v, ir.CType) else None
    return None


def _concrete(t: ir.CType, depth: int = 0) -> bool:
    """A type with no dependent part (a `const U*` alias names the class's own `U`: not usable as is)."""
    if t.kind in ("template", "unknown") or depth > 8:
        return False
    if t.kind in ("pointer", "reference", "array") and t.pointee is not None:
        return _concrete(t.pointee, depth + 1)
    return t.size > 0 or t.kind == "void"
