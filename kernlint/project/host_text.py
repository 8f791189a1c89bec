"""Declarations in host C++ text, read by patterns: blocks and their braces, the locals and declared types
before a launch, and whether a name may be reassigned (shared by the project scan and `HostBody`)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterator

from kernlint.base.lazy_re import lazy_compile


_LOCAL = re.compile(r"\b(?:(?:static|const|constexpr)\s+)*(?:unsigned\s+)?(?:int|long|size_t|unsigned|"
                    r"u?int\d+_t|auto|dim3)\s+([A-Za-z_]\w*)\s*(?:=\s*([^;{}]+)|\(([^;{}]*)\)|\{([^;{}]*)\})\s*;")


_PLAIN_DIM3 = lazy_compile(r"\bdim3\s+([A-Za-z_]\w*)\s*;")


_KEYWORDS = frozenset("if for while switch return sizeof static_cast reinterpret_cast const_cast dynamic_cast "
                      "template typename class struct union namespace operator decltype alignof".split())


_DECL_KEYWORDS = _KEYWORDS | frozenset("return else case goto delete throw new typedef using default do".split())


_PARENS = re.compile(r"[()]")


_BRACES = re.compile(r"[{}]")


def _match_forward(text: str, pos: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one at `pos`, or -1 (within 20,000 characters)."""
    end = min(len(text), pos + 20000)
    if (open_ch, close_ch) in (("(", ")"), ("{", "}")):
        depth = 0
        for m in (_PARENS if open_ch == "(" else _BRACES).finditer(text, pos, end):
            if m.group() == open_ch:
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return m.start()
        return -1
    depth = 0
    for i in range(pos, end):
        ch = text[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i
        elif ch in ";{}":
            return -1
    return -1


@dataclass
class _Block:
    kind: str  # "scope" (namespace/struct), "function", "other"
    name: str = ""
    tparams: tuple[tuple[str, bool, str], ...] = ()
    args: tuple[str, ...] = ()
    start: int = 0
    params_text: str = ""  # the parameter list as written (for the declared types of launch arguments)


def _declarations(params: str, body: str, names: set[str] | None = None) -> dict[str, list[tuple[int, str, str]]]:
    """name -> (position in `body`, name, type as written) of each of its declarations, in order;
    parameters at position -1. With `names`, only theirs (a text naming none of them is not searched)."""
    out: dict[str, list[tuple[int, str, str]]] = {}
    for text, base in ((params, -1), (body, 0)):
        if names is not None and not any(a in text for a in names):
            continue
        for m in _declarations_in(text):
            if names is not None and m.group(2) not in names:
                continue
            t = " ".join(m.group(1).split())
            if t.split(" ")[0] in _DECL_KEYWORDS or t.split("<")[0].split(" ")[-1] in _DECL_KEYWORDS:
                continue
            out.setdefault(m.group(2), []).append((m.start() if base == 0 else -1, m.group(2), t))
    return out


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _type_before(decls: dict[str, list[tuple[int, str, str]]], arg: str, pos: int) -> str:
    """The normalised type of the last declaration of `arg` before `pos`, or ""."""
    arg = arg.strip()
    if not _IDENTIFIER.fullmatch(arg):
        return ""
    found = ""
    for at, _name, t in decls.get(arg, ()):
        if at < pos:
            found = t
    return _normal_type(found) if found else ""


@functools.lru_cache(maxsize=1024)
def _normal_type(found: str) -> str:
    t = re.sub(r"\b(?:static|__restrict__|volatile)\b", " ", found)
    t = re.sub(r"\s*\*\s*", " *", t)
    return " ".join(t.split()).replace(" *", "*").replace("*", " *").strip()


_TYPE_WORDS = r"(?:(?:const|volatile|static|unsigned|signed|struct)\s+)*[A-Za-z_][\w:]*(?:\s*<[^;{}()]*?>)?"


def _declaration_of(name: str) -> str:
    """A declaration of `name` after the text's start or a `;{}(,` (the regex text without that start)."""
    return (rf"\s*({_TYPE_WORDS}(?:\s*(?:\*|&|\bconst\b|\b__restrict__\b))*)\s*"
            rf"(?:\b__restrict__\s*)?\b{name}\s*(?=[=;,)\[]|$)")


# A declaration of any name: at the text's start, or after one of `;{}(,`. (Two patterns instead of one
# starting `(?:^|[;{}(,])`: a pattern that starts with a character set is searched for much faster.)
_DECLARATION_FIRST = re.compile(_declaration_of(r"([A-Za-z_]\w*)"))


_DECLARATION = re.compile(r"[;{}(,]" + _declaration_of(r"([A-Za-z_]\w*)"))


def _declarations_in(text: str) -> Iterator[re.Match[str]]:
    """The declarations of `text`, as `finditer` of `(?:^|[;{}(,])` + the declaration pattern finds them."""
    m = _DECLARATION_FIRST.match(text)
    pos = 0
    if m is not None:
        yield m
        pos = m.end()
    while (m := _DECLARATION.search(text, pos)) is not None:
        yield m
        pos = m.end()


@functools.lru_cache(maxsize=1024)
def _named_pattern(text: str) -> re.Pattern[str]:
    """`re.compile(text)` for the patterns built around one name (a local, an argument): kept here, as
    there are more of them than `re`'s own cache holds."""
    return re.compile(text)


def _declared_types(args: tuple[str, ...], params: str, body: str) -> tuple[str, ...]:
    """Per argument, the declared type of a launch argument that names a variable of the host function
    (its last declaration before the launch: `floatX* param_ptr = ...;`, a parameter `const Float*
    values`), normalised (`floatX *`, `const Float *`); "" for anything else. (The declarations are
    read once for all arguments: a match of one declaration ends at its name, so the names found
    are those a search for each name alone finds.)"""
    decls = _declarations(params, body, {a.strip() for a in args})
    return tuple(_type_before(decls, a, len(body) + 1) for a in args)


# The types of the declarations `_strip_decls` removes.
_STRIPPED_TYPES = lazy_compile(r"int|long|size_t|unsigned|auto|dim3|u?int\d+_t")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _maybe_reassigned(body: str, name: str) -> bool:
    """False when the search of `_launch_at` for an assignment of `name` (`name = ...`, `name += ...`,
    `++name`, `name--`, not its declarations `int name = ...`, which `_strip_decls` removes) cannot
    match: no word occurrence of `name` is followed by an assignment operator or `++`/`--` or preceded
    by `++`/`--`, but for the `=` of a declaration. A text test, much cheaper than the regex it spares."""
    i = body.find(name)
    n = len(body)
    while i >= 0:
        j = i + len(name)
        if (i == 0 or not _is_word(body[i - 1])) and (j == n or not _is_word(body[j])):
            k = j
            while k < n and body[k].isspace():
                k += 1
            after = body[k:k + 4]
            if after.startswith(("++", "--")):
                return True
            if after[:1] and after[:1] in "-+*/%&|^" and after[1:2] == "=" and after[2:3] != "=":
                return True
            if after[:2] in ("<<", ">>") and after[2:3] == "=" and after[3:4] != "=":
                return True
            b = i  # the end of what precedes `name`, spaces skipped
            while b > 0 and body[b - 1].isspace():
                b -= 1
            if after[:1] == "=" and after[1:2] != "=":
                w = b
                while w > 0 and _is_word(body[w - 1]):
                    w -= 1
                if b == i or not _STRIPPED_TYPES.fullmatch(body[w:b]):
                    return True  # not a declaration `TYPE name =`
            if body[max(0, b - 2):b] in ("++", "--"):
                return True
        i = body.find(name, i + 1)
    return False


def _strip_decls(body: str, name: str) -> str:
    """`body` without the declarations of `name` (so `int n = 4;` is not read as an assignment)."""
    return _named_pattern(rf"\b(?:{_STRIPPED_TYPES.pattern})\s+{re.escape(name)}\s*=").sub(" ", body)
