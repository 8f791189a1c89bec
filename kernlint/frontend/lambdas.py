"""What a lambda expression captures (each variable, by copy or by reference), read from its clang cursor."""
from __future__ import annotations

from typing import NamedTuple

from kernlint.frontend.clang_base import K, ci

COPY, REF = "copy", "ref"


class Capture(NamedTuple):
    """One variable a lambda captures: its name (`this` for the enclosing method's object), how (COPY or
    REF) and its declaration (None for `this`)."""

    name: str
    mode: str
    decl: ci.Cursor | None


class Captures(NamedTuple):
    names: tuple[Capture, ...]
    mutable: bool  # `[=](...) mutable {...}`: its call may write its copies (the closure object's own members)


def call_key(c: ci.Cursor) -> str:
    """The key of lambda `c`'s call operator, as a call of it names it (clang places the operator at the lambda)."""
    return f"operator()@{c.location.file.name if c.location.file else ''}:{c.location.line}"


def captures(c: ci.Cursor) -> Captures | None:
    """What lambda `c` captures, or None when kernlint does not follow it: a capture list it cannot read (spelled
    by a macro, an init-capture `[q = p + 1]`, a pack `[args...]`), a captured array (a copy is the whole array;
    a reference aliases an array the evaluator tracks per frame: eval/local_arrays.py), a captured local
    reference (`float &r = a[i]`, lowered as a pointer: frontend/memory_refs.py), a variable captured by reference
    that another variable of its name may hide where the lambda is called (`_redeclared`), or a reading of the
    list that disagrees with the members clang gives the closure type (one per capture, a reference for one by
    reference).

    The captured variables are the variables of the enclosing function(s) its body names (the lambda's own
    parameters and locals, and variables of static storage, `__shared__` ones included, are not captured). A
    variable named in the list is captured as the list says; any other by the default (`=` or `&`). A constant
    named without a default is not captured at all ([expr.prim.lambda.capture]/7: not odr-used): it is listed
    as a copy, the value being the same."""
    intro = _introducer(c)
    if intro is None:
        return None
    default, explicit, mutable = intro
    body = next((k for k in c.get_children() if k.kind == K.COMPOUND_STMT), None)
    if body is None:
        return None
    start, end = c.extent.start.offset, c.extent.end.offset
    where = c.extent.start.file.name if c.extent.start.file else None
    found: dict[str, Capture] = {}
    uses_this = False
    for n in body.walk_preorder():
        kind = n.kind
        if kind == K.CXX_THIS_EXPR:
            uses_this = True
        elif kind == K.MEMBER_REF_EXPR and n.referenced is not None \
                and n.referenced.kind in (K.FIELD_DECL, K.CXX_METHOD) and not _is_static(n.referenced) \
                and not any(k.kind.is_expression() for k in n.get_children()):
            uses_this = True  # `m` or `f()` of the enclosing method's object: `this->m`
        elif kind == K.DECL_REF_EXPR:
            d = n.referenced
            if d is None or d.kind not in (K.VAR_DECL, K.PARM_DECL) or d.spelling in found:
                continue
            loc = d.extent.start
            if loc.file is not None and loc.file.name == where and start <= loc.offset <= end:
                continue  # the lambda's own parameter or variable
            if d.kind == K.VAR_DECL and _static_storage(d):
                continue
            t = d.type.get_canonical()
            if t.kind in _ARRAYS or t.kind in _REFERENCES and d.kind == K.VAR_DECL:
                return None
            mode = explicit.get(d.spelling, default or COPY)
            found[d.spelling] = Capture(d.spelling, mode, d)
    if set(explicit) - set(found) - {"this"}:
        return None  # (a name the list captures that the body does not use: the reading went wrong)
    names = list(found.values())
    if uses_this or "this" in explicit:
        mode = explicit.get("this", REF)
        names.append(Capture("this", mode, None))
    if not _agrees(c, names) or _redeclared(c, [n for n in names if n.mode == REF and n.decl is not None]):
        return None
    return Captures(tuple(names), mutable)


def _in_template(d: ci.Cursor | None) -> bool:
    """Whether variable `d` belongs to a function template or a method of a class template (the pattern, where
    clang leaves captures undetermined)."""
    f = d.semantic_parent if d is not None else None
    if f is None:
        return False
    if f.kind == K.FUNCTION_TEMPLATE:
        return True
    owner = f.semantic_parent if f.kind in (K.CXX_METHOD, K.CONSTRUCTOR) else None
    return owner is not None and owner.kind in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)


def _redeclared(c: ci.Cursor, refs: list[Capture]) -> bool:
    """Whether a variable of the function declaring one of `refs` (captured by reference) is declared again by
    that name after the lambda starts, outside it: a call made where it hides the captured one would find it
    under the name the evaluator binds by (eval/closures.py)."""
    start, end = c.extent.start.offset, c.extent.end.offset
    for cap in refs:
        assert cap.decl is not None
        scope = cap.decl.semantic_parent
        if scope is None:
            return True
        for n in scope.walk_preorder():
            if n.kind == K.VAR_DECL and n.spelling == cap.name and n != cap.decl \
                    and n.extent.start.offset > start and not n.extent.start.offset <= end:
                return True
    return False


_ARRAYS = (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY, ci.TypeKind.VARIABLEARRAY,
           ci.TypeKind.DEPENDENTSIZEDARRAY)
_REFERENCES = (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE)


def _is_static(d: ci.Cursor) -> bool:
    return d.kind == K.CXX_METHOD and d.is_static_method()


def _static_storage(d: ci.Cursor) -> bool:
    """A variable of static storage duration (namespace scope, class member, `static`, `__shared__`,
    `__constant__`): named by a lambda without being captured."""
    parent = d.semantic_parent
    if parent is not None and parent.kind in (K.TRANSLATION_UNIT, K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL,
                                              K.CLASS_TEMPLATE):
        return True
    if d.storage_class in (ci.StorageClass.STATIC, ci.StorageClass.EXTERN):
        return True
    return any(k.kind in (K.CUDASHARED_ATTR, K.CUDACONSTANT_ATTR) for k in d.get_children())


def _introducer(c: ci.Cursor) -> tuple[str, dict[str, str], bool] | None:
    """The capture default ("" none, COPY for `=`, REF for `&`), the explicitly captured names with their mode,
    and whether the lambda is `mutable`; None for a list this reading does not follow."""
    toks = c.get_tokens()
    first = next(toks, None)
    if first is None or first.spelling != "[":
        return None
    entries: list[list[str]] = [[]]
    for t in toks:
        s = t.spelling
        if s == "]":
            break
        if s == ",":
            entries.append([])
        else:
            entries[-1].append(s)
    else:
        return None
    default, explicit = "", {}
    for entry in entries:
        if entry == ["="] or entry == ["&"]:
            default = COPY if entry == ["="] else REF
        elif entry == ["this"]:
            explicit["this"] = REF
        elif entry == ["*", "this"]:
            explicit["this"] = COPY
        elif len(entry) == 1 and entry[0].isidentifier():
            explicit[entry[0]] = COPY
        elif len(entry) == 2 and entry[0] == "&" and entry[1].isidentifier():
            explicit[entry[1]] = REF
        elif entry:
            return None  # an init-capture, a pack
    mutable, depth = False, 0
    for t in toks:  # (the declarator, up to the body's brace)
        s = t.spelling
        if s in ("(", "[", "<"):
            depth += 1
        elif s in (")", "]", ">"):
            depth -= 1
        elif s == "{" and depth <= 0:
            break
        elif s == "mutable" and depth == 0:
            mutable = True
    return default, explicit, mutable


def _agrees(c: ci.Cursor, names: list[Capture]) -> bool:
    """Whether `names` agrees with the closure type's members (one per capture, in no order clang's cursors
    tell: a reference for one by reference, `this` by reference a pointer): as many references as by-reference
    captures and as many other members as copies, a constant kernlint listed but clang did not capture aside."""
    fields = list(c.type.get_fields())
    if not fields and any(_in_template(n.decl) for n in names):
        return True  # (a lambda in a template's pattern: clang gives its closure type no members to compare)
    refs = sum(1 for f in fields if f.type.get_canonical().kind in _REFERENCES)
    copies = len(fields) - refs
    mine_refs = [n for n in names if n.mode == REF and n.name != "this"]
    mine_copies = [n for n in names if n.mode == COPY or n.name == "this"]

    def constant(n: Capture) -> bool:
        return n.decl is not None and n.decl.type.is_const_qualified()

    return (sum(1 for n in mine_refs if not constant(n)) <= refs <= len(mine_refs)
            and sum(1 for n in mine_copies if not constant(n)) <= copies <= len(mine_copies))
