"""Which kernels defined elsewhere in the project one file's translation unit launches or instantiates."""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernlint.project.facts import FileFacts

# An identifier followed by `(` or `<` (a call, a template's arguments, or a comparison: a superset), or
# after `&` (a kernel's address, `auto k = &kernel<Traits>;`). Linear: each try starts at a word's start.
_CALLED_RE = re.compile(r"(?<![\w.])(?:&\s*)?([A-Za-z_]\w*)[ \t]*[(<]")
_NOT_CALLS = frozenset("if for while switch return sizeof alignof decltype static_cast reinterpret_cast const_cast "
                       "dynamic_cast template typename class struct union operator defined".split())
MAX_CALLED = 5000
MAX_REACHED = 64  # kernels reached from one file (each is linted with it)


def called_names(code: str) -> tuple[str, ...]:
    """The names `code` (comments and strings blanked) may call, instantiate or take the address of,
    sorted; at most MAX_CALLED."""
    out: set[str] = set()
    for m in _CALLED_RE.finditer(code):
        name = m.group(1)
        if name not in _NOT_CALLS:
            out.add(name)
            if len(out) >= MAX_CALLED:
                break
    return tuple(sorted(out))


_STRUCTURE_RE = re.compile(r"[{};]")
_AFTER_PARAMS_RE = re.compile(r"[\s\w:<>,*&\->]*")  # qualifiers and a trailing return type after `)`
MAX_CALLS_PER_FUNCTION = 200


def host_calls(code: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(name, the names its body calls) of each function `code` (comments and strings blanked) defines,
    found by braces: a `{` outside any function whose text since the last `;`, `{` or `}` ends in a
    parameter list (`... name(...) const {`) opens one. One pass; each function's text is read once."""
    out: dict[str, set[str]] = {}
    stack: list[tuple[str, int] | None] = []  # an open function (name, body start), else None
    in_function = 0
    boundary = 0
    for m in _STRUCTURE_RE.finditer(code):
        i = m.start()
        ch = m.group()
        if ch == "{":
            name = None if in_function else _function_name(code, boundary, i)
            stack.append((name, i) if name else None)
            in_function += name is not None or in_function > 0
        elif ch == "}" and stack:
            top = stack.pop()
            if in_function:
                in_function -= 1
            if top is not None:
                names = called_names(code[top[1]:i])
                out.setdefault(top[0], set()).update(names[:MAX_CALLS_PER_FUNCTION])
        boundary = i + 1
    return tuple((n, tuple(sorted(c))) for n, c in sorted(out.items()) if c)


def _function_name(code: str, start: int, end: int) -> str | None:
    """The name of the function whose header is code[start:end] (`template <...> void run(int n) const`),
    or None when it is not one (a namespace, a class, an initializer)."""
    close = code.rfind(")", start, end)
    if close < 0 or not _AFTER_PARAMS_RE.fullmatch(code, close + 1, end) or "=" in code[close + 1:end].replace("->", ""):
        return None
    depth = 0
    j = close
    while j >= start:
        c = code[j]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                break
        j -= 1
    if j < start:
        return None
    k = j - 1
    while k >= start and code[k].isspace():
        k -= 1
    stop = k + 1
    while k >= start and (code[k].isalnum() or code[k] == "_"):
        k -= 1
    name = code[k + 1:stop]
    if not name or not (name[0].isalpha() or name[0] == "_") or name in _NOT_CALLS:
        return None
    return name


def reached_kernels(facts_of: "Mapping[str, FileFacts]", closure: Callable[[str], list[str]],
                    kernel_files: Mapping[str, list[str]], path: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(defining file, kernel names) of the kernels `path`'s translation unit launches or instantiates and
    another project file defines, by file in index order.

    Reached: a kernel `path` launches, explicitly instantiates or names (`&k<T>`), and a kernel that a host
    function reached so launches or names, transitively, where that host function is defined in a file
    `path` includes (a template or inline function there is compiled into `path`'s unit: `template void
    run<float>(...)` in a .cu instantiates `run`, whose launch instantiates the kernel). A kernel defined in
    a file `path` includes is that definition; one defined only in another translation unit counts when
    its name is unique in the project (as `ProjectIndex.visible` decides). The index's facts by path, its
    include closure and its kernels' defining files are given (ProjectIndex.reached_kernels)."""
    ap = os.path.abspath(path)
    facts = facts_of.get(ap)
    if facts is None:
        return ()
    included = closure(ap)[1:]
    own = {k.name for k in facts.kernels}
    names: set[str] = set(_called_in(ap))
    names.update(ln.kernel for ln in facts.launches)
    names.update(n for n, _a, _l in facts.instantiations)
    # Host functions of the included files: name -> what each launches and calls.
    edges: dict[str, set[str]] = {}
    for q in included:
        f = facts_of.get(q)
        if f is None:
            continue
        for ln in f.launches:
            if ln.host:
                edges.setdefault(ln.host, set()).add(ln.kernel)
        for host, callees in f.host_calls:
            edges.setdefault(host, set()).update(callees)
    frontier = list(names)
    while frontier:
        n = frontier.pop()
        for m in edges.get(n, ()):
            if m not in names:
                names.add(m)
                frontier.append(m)
    in_closure = set(included)
    by_file: dict[str, list[str]] = {}
    for name in sorted(names - own):
        defs = kernel_files.get(name)
        if not defs:
            continue
        here = [d for d in defs if d in in_closure]
        if not here and len(set(defs)) == 1 and defs[0] != ap and _launched_or_instantiated(facts, name):
            here = [defs[0]]  # compiled apart: a unique name is unambiguous
        for d in dict.fromkeys(here):
            by_file.setdefault(d, []).append(name)
    order = {p: i for i, p in enumerate(facts_of)}
    out = []
    total = 0
    for d in sorted(by_file, key=lambda p: order.get(p, 0)):
        kept = tuple(by_file[d][:max(0, MAX_REACHED - total)])
        total += len(kept)
        if kept:
            out.append((d, kept))
    return tuple(out)


def _called_in(path: str) -> tuple[str, ...]:
    """The names the file at `path` calls or takes the address of (read now: the linted file itself)."""
    from kernlint.project.scan import blank

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return called_names(blank(fh.read()))
    except OSError:
        return ()


def _launched_or_instantiated(facts: object, name: str) -> bool:
    """Whether `facts` launch or explicitly instantiate `name` itself (a kernel of another translation
    unit is reached only so; merely calling a name proves nothing across units)."""
    return any(ln.kernel == name for ln in facts.launches) or any(  # type: ignore[attr-defined]
        n == name for n, _a, _l in facts.instantiations)  # type: ignore[attr-defined]


def included_kernels(facts_of: "Mapping[str, FileFacts]", closure: Callable[[str], list[str]],
                     path: str) -> tuple[str, ...]:
    """Names of the kernels defined in the project files `path` includes, transitively (sorted)."""
    ap = os.path.abspath(path)
    out: set[str] = set()
    for q in closure(ap)[1:]:
        f = facts_of.get(q)
        if f is not None:
            out.update(k.name for k in f.kernels)
    return tuple(sorted(out))
