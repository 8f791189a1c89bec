"""Text scan of one source file for the project index: launches, instantiations, includes, macros.

No parser: comments and strings are blanked (offsets and newlines kept), braces are tracked to know
the host function (and its `template <...>` header) around each launch. Everything found is kept as
written; folding to numbers happens in `index`, where the project's macros are known.
"""
from __future__ import annotations

import functools
import re
from typing import Iterator

from kernlint.base.lazy_re import LazyPattern, lazy_compile
from kernlint.project.facts import SCAN_VERSION, FileFacts, KernelDef, RawLaunch  # noqa: F401
from kernlint.project.host_body import HostBody
from kernlint.project.host_text import (
    _Block,
    _DECL_KEYWORDS,
    _IDENTIFIER,
    _KEYWORDS,
    _declarations,
    _match_forward,
    _type_before,
)
from kernlint.project.one_pass import angle_closes, class_member, parameter_name
from kernlint.frontend.pointer_offsets import arg_offsets

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# Preprocessor lines: `#` first on its line but for spaces and tabs. The patterns start at the `#` (a literal
# `re` finds quickly) and `_directives` checks what comes before it on the line.
_INCLUDE = re.compile(r'#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')
_DEFINE = re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.M)
_PP_LINE = re.compile(r"#(?:[^\n]*\\\n)*[^\n]*")
_CONST = lazy_compile(r"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+)?(?:int|long|size_t|"
                      r"unsigned|short|u?int\d+_t|auto)\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);")
_GLOBAL_KW = re.compile(r"\b__global__\b")
_TYPEDEF = lazy_compile(r"typedef ([^;{}()\[\]]+) ([A-Za-z_]\w*) ?;")  # on whitespace-normalised text
_USING = lazy_compile(r"using ([A-Za-z_]\w*) ?= ?([^;{}()\[\]]+?) ?;")
_MAX_ALIAS_TEXT = 300
# The characters the brace walk stops at (a `<` only as the start of `<<<`: scan_text checks). A pattern
# that is one character set is searched much faster than `<<<|[{};]`.
_STRUCTURE = re.compile(r"[<{};]")
_INNER_STRUCTURE = re.compile(r"[<{}]")
_CLASS_KW = lazy_compile(r"\b(struct|class|union)\b")
# Explicit instantiations: `template` (after a line start, `;`, `}` or white space; `extern template` too)
# not opening a parameter list; the scan checks what precedes (a literal first is a fast search).
_INSTANTIATION = lazy_compile(r"template\s+(?!<)[^;{}]*?\b([A-Za-z_]\w*)\s*<")
_MAX_CALLS = 4000
_CLASS_INSTANTIATION = lazy_compile(r"template\s+(?:class|struct)\s+([A-Za-z_]\w*)\s*<")


def blank(text: str) -> str:
    """`text` with comments, string and character literals replaced by spaces (newlines kept)."""
    def spaces(s: str) -> str:
        return " " * len(s) if "\n" not in s else "\n".join(" " * len(x) for x in s.split("\n"))

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith('"') or s.startswith("'"):
            return s[0] + spaces(s[1:-1]) + s[-1] if len(s) >= 2 else s
        return spaces(s)
    # `_COMMENT_OR_STRING.sub(repl, text)`, less its cost at each `/*` no `*/` follows (the regex scans to the
    # end from every one: quadratic, issue 30): such a `/*` matches nothing, so it is stepped over.
    if "/*" not in text:
        return _COMMENT_OR_STRING.sub(repl, text)
    last_close = text.rfind("*/")
    parts = []
    done = pos = 0
    while True:
        c = _LEXEME_START.search(text, pos)
        if c is None:
            break
        at = c.start()
        if text.startswith("/*", at) and at + 2 > last_close:
            pos = at + 1  # no `*/` after it: no comment starts here (a `//` or quote may, later)
            continue
        m = _COMMENT_OR_STRING.match(text, at)
        if m is None:
            pos = at + 1
            continue
        parts.append(text[done:at])
        parts.append(repl(m))
        done = pos = m.end() if m.end() > at else at + 1
    parts.append(text[done:])
    return "".join(parts)


_LEXEME_START = re.compile(r"//|/\*|[\"']")  # where a match of _COMMENT_OR_STRING can start


def _directives(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """(start of line, match) of each match of `pattern` at a `#` preceded on its line by nothing but spaces
    and tabs, left to right without overlapping: what `finditer` of `^[ \\t]*` + pattern (re.M) finds."""
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return
        at = m.start()
        line = text.rfind("\n", 0, at) + 1
        if at == line or not text[line:at].strip(" \t"):
            yield line, m
            pos = m.end()
        else:
            pos = at + 1


def _blank_directives(clean: str) -> str:
    """`clean` with each preprocessor line (and its continuation lines) replaced by spaces, newlines kept."""
    parts = []
    last = 0
    for line, m in _directives(_PP_LINE, clean):
        parts.append(clean[last:line])
        parts.append("\n".join(" " * len(x) for x in clean[line:m.end()].split("\n")))
        last = m.end()
    if not parts:
        return clean
    parts.append(clean[last:])
    return "".join(parts)


_WORD_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _named(text: str, opener: str) -> Iterator[tuple[str, int, int]]:
    """(name, its position, position of `opener`) of each `opener` character that follows an identifier and
    optional white space: what `finditer` of `\\b([A-Za-z_]\\w*)\\s*` + opener finds, found from the `opener`
    characters (far fewer than the identifiers such a regex tries). `\\w` and `\\s` of `re` are
    `str.isalnum()` (or `_`) and `str.isspace()`; the whole run of word characters must start as an identifier."""
    at = text.find(opener)
    while at >= 0:
        j = at - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        stop = j + 1
        while j >= 0 and (text[j].isalnum() or text[j] == "_"):
            j -= 1
        if j + 1 < stop and text[j + 1] in _WORD_START:
            yield text[j + 1:stop], j + 1, at
        at = text.find(opener, at + 1)


def _line_of(starts: list[int], pos: int) -> int:
    import bisect
    return bisect.bisect_right(starts, pos)


_NESTING_CHARS = frozenset("()[]{}<")  # without any of these, nothing in a text nests (a lone `>` closes nothing)


@functools.lru_cache(maxsize=8)
def _marks(sep: str) -> re.Pattern[str]:
    """The characters split_top looks at: brackets and `sep`."""
    return re.compile(r"[()\[\]{}<>" + re.escape(sep) + "]")


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split `text` at top-level `sep` (outside (), [], {} and template <>), each part with its
    whitespace normalised."""
    if _NESTING_CHARS.isdisjoint(text):
        return [" ".join(p.split()) for p in text.split(sep)]
    cuts = []  # positions of the top-level separators
    depth = 0
    angle = 0
    for m in _marks(sep).finditer(text):
        i = m.start()
        ch = m.group()
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "<" and depth == 0 and text[i + 1:i + 2] != "<" and text[i - 1:i] != "<":
            angle += 1
        elif ch == ">" and depth == 0 and angle > 0 and text[i + 1:i + 2] != ">" and text[i - 1:i] != ">":
            angle -= 1
        if ch == sep and depth == 0 and angle == 0:
            cuts.append(i)
    bounds = [-1, *cuts, len(text)]
    return [" ".join(text[a + 1:b].split()) for a, b in zip(bounds, bounds[1:])]


def _angle_forward(text: str, pos: int) -> int:
    """Index of the `>` closing the template argument list opened at `pos` (a `<`), or -1."""
    depth = 0
    paren = 0
    i = pos
    end = min(len(text), pos + 4000)
    while i < end:
        ch = text[i]
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
            if paren < 0:
                return -1
        elif ch in ";{}":
            return -1
        elif paren == 0 and ch == "<":
            if text.startswith("<<<", i):
                return -1
            depth += 1
        elif paren == 0 and ch == ">":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _angle_backward(text: str, pos: int) -> int:
    """Index of the `<` opening the template argument list closed at `pos` (a `>`), or -1."""
    depth = 0
    paren = 0
    for i in range(pos, max(-1, pos - 4000), -1):
        ch = text[i]
        if ch == ")":
            paren += 1
        elif ch == "(":
            paren -= 1
        elif ch in ";{}":
            return -1
        elif paren == 0 and ch == ">":
            depth += 1
        elif paren == 0 and ch == "<":
            depth -= 1
            if depth == 0:
                return i
    return -1


def template_params(header: str) -> tuple[tuple[str, bool, str], ...]:
    """(name, is_type, default) of each parameter of a `template <...>` parameter list text."""
    out = []
    for p in split_top(header):
        if not p:
            continue
        decl, _, default = p.partition("=")
        words = re.findall(r"[A-Za-z_]\w*|\.\.\.", decl)
        if not words:
            return ()
        name = words[-1]
        is_type = words[0] in ("typename", "class") and len(words) <= 2
        if words[0] == "template" or "..." in decl:
            return ()  # template template parameters and packs: not bound by the index
        out.append((name, is_type, default.strip()))
    return tuple(out)


_SCOPE_HEAD = re.compile(r"\b(namespace|struct|class|union|enum)\b|extern\s*\"C\"\s*$")


_ATTRIBUTE = lazy_compile(r"\b(?:__launch_bounds__|__attribute__)\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")


def _classify_header(head: str) -> _Block:
    h = " ".join(head.split())
    tparams: tuple[tuple[str, bool, str], ...] = ()
    m = re.match(r"template\s*<", h)
    if m:
        close = _angle_forward(h, m.end() - 1)
        if close > 0:
            tparams = template_params(h[m.end():close])
            h = h[close + 1:].strip()
    if "__launch_bounds__" in h or "__attribute__" in h:
        # `__global__ __launch_bounds__(Ktraits::kN) void k(...)`: the name is before the parameters.
        h = _ATTRIBUTE.sub(" ", h)
    if "(" not in h or h.startswith("=") or h.endswith("="):
        if _SCOPE_HEAD.search(h) or h.startswith("extern"):
            return _Block("scope")
        return _Block("other")
    if _SCOPE_HEAD.match(h) and h.find("(") > h.find(" "):
        return _Block("scope")
    open_at = h.find("(")
    member = class_member(h[:open_at]) if tparams else None
    if member is not None and h[:open_at].rstrip().endswith("operator"):
        # `R C<T>::operator()(...)`: the parameters follow the operator's own `()`.
        open_at = h.find("(", h.find(")", open_at) + 1)
    pre = h[:open_at]
    names = re.findall(r"[A-Za-z_]\w*", pre)
    if open_at < 0 or not names or (names[-1] in _KEYWORDS and member is None) or names[-1] in ("dim3",) \
            or "=" in pre:
        return _Block("other")
    inner = h[open_at + 1:h.rfind(")")] if ")" in h else ""
    args = tuple(name for name in map(parameter_name, split_top(inner)) if name)
    # A member of a class template defined outside its class (`template <class Real> void
    # Engine<Real>::run()`): the template parameters are the class's, bound where the class is
    # instantiated (`template class Engine<float>;`), so the host is named after the class.
    name = member if member is not None else names[-1]
    return _Block("function", name, tparams, args, params_text=inner)


class ScanCutShort(Exception):
    """The scan of one file ran past its CPU-time limit (`scan_text`'s `cpu_limit_s`)."""


class _Clock:
    """The CPU-time limit of one scan, read every few hundred steps of its loops."""

    def __init__(self, limit_s: float | None) -> None:
        import time

        self._now = time.process_time
        self._deadline = self._now() + limit_s if limit_s else None
        self._steps = 0

    def tick(self) -> None:
        if self._deadline is None:
            return
        self._steps += 1
        if self._steps & 31 == 0 and self._now() > self._deadline:
            raise ScanCutShort()


def scan_text(text: str, cpu_limit_s: float | None = None) -> FileFacts:
    """Everything the index needs from one file's text. With `cpu_limit_s`, ScanCutShort once the scan has
    used that much CPU time (the file's share of `--timeout`: issue 30)."""
    clock = _Clock(cpu_limit_s)
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    clean = blank(text)
    # Names come from the original text (blanking empties quoted names); a `#` inside a comment is blank.
    includes = tuple((m.group(2).strip(), m.group(1) == '"', _line_of(starts, line))
                     for line, m in _directives(_INCLUDE, text) if clean[m.start()] == "#")
    defines = []
    for _line, m in _directives(_DEFINE, clean):
        body = m.group(2).strip()
        if body.endswith("\\"):
            continue
        defines.append((m.group(1), body))
    code = _blank_directives(clean)
    cuda = ("__global__" in code and bool(_GLOBAL_KW.search(code))) or "<<<" in code or "__device__" in code

    # Brace structure: each `{` opens a block whose header is the text since the previous ; { or }.
    stack: list[_Block] = []
    launches: list[RawLaunch] = []
    kernels: list[KernelDef] = []
    constants: list[tuple[str, str]] = []
    aliases: list[tuple[str, str]] = []
    boundary = 0
    hosts: dict[int, HostBody] = {}  # body start -> what the launches in that host function read of it
    functions: list[tuple[int, int, str]] = []  # (body start, body end, parameter list) of each function
    templates: list[tuple[str, tuple[tuple[str, bool, str], ...], int, int]] = []  # FileFacts.function_templates
    inside = 0  # open blocks that are functions or other non-scope blocks
    pos = 0
    while True:
        clock.tick()
        # Inside a function a `;` only moves `boundary`, which the next `{` inside reads not: skipped.
        m = (_INNER_STRUCTURE if inside else _STRUCTURE).search(code, pos)
        if m is None:
            break
        i = m.start()
        ch = m.group(0)
        pos = m.end()
        if ch == "<":
            if not code.startswith("<<<", i):
                continue
            pos = i + 3
        if ch == "{":
            if inside:
                blk = _Block("other", start=i)
                inside += 1
                stack.append(blk)
                boundary = i + 1
                continue
            head = code[boundary:i]
            blk = _classify_header(head)
            blk.start = i
            if blk.kind == "scope" and _CLASS_KW.search(head):
                blk.name = "class"  # (a class's member typedefs are not file-scope aliases)
            if blk.kind == "function" and "__global__" in head and _GLOBAL_KW.search(head):
                kernels.append(KernelDef(blk.name, _line_of(starts, boundary + len(head) - len(head.lstrip())),
                                         blk.tparams))
            if blk.kind != "scope":
                inside += 1
            stack.append(blk)
            boundary = i + 1
        elif ch == "}":
            if stack:
                closed = stack.pop()
                if closed.kind != "scope":
                    inside -= 1
                if closed.kind == "function" and not any(b.kind == "function" for b in stack):
                    functions.append((closed.start, i, closed.params_text))
                    if closed.tparams and closed.name:
                        templates.append((closed.name, closed.tparams, _line_of(starts, closed.start),
                                          _line_of(starts, i)))
            boundary = i + 1
        elif ch == ";":
            if not inside and "=" in code[boundary:i]:
                for c in _CONST.finditer(code[boundary:i + 1]):
                    constants.append((c.group(1), " ".join(c.group(2).split())))
            if not inside and not any(b.kind != "scope" or b.name == "class" for b in stack):
                alias = _type_alias(code[boundary:i + 1])
                if alias is not None:
                    aliases.append(alias)
            boundary = i + 1
        else:  # <<<
            fn = next((b for b in stack if b.kind == "function"), None)
            ln = _launch_at(code, i, starts, fn, hosts)
            if ln is not None:
                launches.append(ln)

    # `template void k<...>(...)`: explicit instantiations of functions; `template class Engine<float>;`
    # binds the members of Engine defined outside the class (they go with the calls).
    instantiations = _explicit_instantiations(code, starts, _INSTANTIATION, _PAREN_NEXT, clock)
    calls = _explicit_instantiations(code, starts, _CLASS_INSTANTIATION, _SEMICOLON_NEXT, clock)
    closes = angle_closes(code) if "<" in code else {}
    for name, at, lt in _named(code, "<"):
        clock.tick()
        if len(calls) >= _MAX_CALLS:
            break
        if name in _KEYWORDS:
            continue
        if code.startswith("<<", lt):
            continue
        close = closes.get(lt, -1)
        if close < 0:
            continue
        after = code[close + 1:close + 8]
        if not re.match(r"\s*\(", after):
            continue
        calls.append((name, tuple(split_top(code[lt + 1:close])), _line_of(starts, at)))
    return FileFacts(tuple(includes), tuple(defines), tuple(constants), tuple(kernels), tuple(launches),
                     tuple(instantiations), tuple(calls), cuda, tuple(aliases),
                     _typed_calls(code, starts, functions, clock), function_templates=tuple(templates))


_PAREN_NEXT = lazy_compile(r"\s*\(")
_SEMICOLON_NEXT = lazy_compile(r"\s*;")


def _explicit_instantiations(code: str, starts: list[int], pattern: LazyPattern, follows: LazyPattern,
                             clock: _Clock | None = None
                             ) -> list[tuple[str, tuple[str, ...], int]]:
    """(name, template arguments, line) of each `template ... name<...>` match of `pattern` (from its
    `template` to its `<`) after a line start, `;`, `}` or white space, whose closing `>` is followed by
    `follows`. (Matches are taken left to right without overlapping, as `finditer` would.)"""
    out: list[tuple[str, tuple[str, ...], int]] = []
    if "template" not in code:
        return out
    pos = 0
    while True:
        if clock is not None:
            clock.tick()
        m = pattern.search(code, pos)
        if m is None:
            return out
        at = m.start()
        if at and code[at - 1] not in ";}" and not code[at - 1].isspace():
            pos = at + 1  # `mytemplate ...`, `>template`: not this one
            continue
        pos = m.end()
        lt = m.end() - 1
        close = _angle_forward(code, lt)
        if close > 0 and follows.match(code, close + 1):
            out.append((m.group(1), tuple(split_top(code[lt + 1:close])), _line_of(starts, at)))


_MAX_TYPED_CALLS = 2000


def _typed_calls(code: str, starts: list[int], functions: list[tuple[int, int, str]], clock: _Clock | None = None
                 ) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """Calls `name(a, b, ...)` inside functions with at least one argument naming a variable whose
    declared pointer type the function shows (`adamw_update(param_ptr, ...)` with `floatX* param_ptr`):
    (name, declared type per argument ("" unknown), line). A host function template called so is
    bound by deduction (index._host_bindings)."""
    out: list[tuple[str, tuple[str, ...], int]] = []
    for start, end, params in functions:
        if len(out) >= _MAX_TYPED_CALLS:
            break
        body = code[start:end]
        if "*" not in body and "*" not in params:
            continue
        decls = _declarations(params, body)
        pointers = {name for names in decls.values() for _at, name, t in names if "*" in t}
        if not pointers:
            continue  # no argument can have a pointer type
        for name, at, paren in _named(body, "("):
            if clock is not None:
                clock.tick()
            if name in _DECL_KEYWORDS:
                continue
            close = _match_forward(body, paren, "(", ")")
            if close < 0:
                continue
            inner = body[paren + 1:close]
            if pointers.isdisjoint(_IDENTIFIER.findall(inner)):
                continue  # no argument names a pointer
            types = tuple(_type_before(decls, a, at) for a in split_top(inner))
            if any("*" in t for t in types):
                out.append((name, types, _line_of(starts, start + at)))
                if len(out) >= _MAX_TYPED_CALLS:
                    break
    return tuple(out)


def _type_alias(stmt: str) -> tuple[str, str] | None:
    """(NAME, type) of a `typedef TYPE NAME;` or `using NAME = TYPE;` statement, else None (function
    pointer and array typedefs, `using namespace`, anything else)."""
    text = " ".join(stmt.split())
    if len(text) > _MAX_ALIAS_TEXT or not text.startswith(("typedef ", "using ")):
        return None
    m = _USING.fullmatch(text)
    if m is not None and m.group(1) != "namespace" and not text.startswith("using namespace"):
        return m.group(1), " ".join(m.group(2).split())
    m = _TYPEDEF.fullmatch(text)
    if m is not None and m.group(1).strip() not in ("struct", "class", "union", "enum"):
        target = " ".join(m.group(1).split())
        if not re.match(r"(struct|class|union|enum)\s*$", target):
            return m.group(2), target
    return None


def _launch_at(code: str, pos: int, starts: list[int], fn: _Block | None,
               hosts: dict[int, "HostBody"]) -> RawLaunch | None:
    """The launch whose `<<<` is at `pos`."""
    j = pos - 1
    while j >= 0 and code[j].isspace():
        j -= 1
    targs: tuple[str, ...] = ()
    if j >= 0 and code[j] == ">":
        lt = _angle_backward(code, j)
        if lt < 0:
            return None
        targs = tuple(split_top(code[lt + 1:j]))
        j = lt - 1
        while j >= 0 and code[j].isspace():
            j -= 1
    end = j + 1
    while j >= 0 and (code[j].isalnum() or code[j] in "_:"):
        j -= 1
    name = code[j + 1:end].split("::")[-1]
    if not name or not (name[0].isalpha() or name[0] == "_"):
        return None
    close = code.find(">>>", pos + 3, pos + 2003)  # (bounded: unbounded, many `<<<` would be quadratic)
    if close < 0 or close - pos > 2000:
        return None
    config = tuple(split_top(code[pos + 3:close]))
    k = close + 3
    while k < len(code) and code[k].isspace():
        k += 1
    args: tuple[str, ...] = ()
    if k < len(code) and code[k] == "(":
        end_args = _match_forward(code, k, "(", ")")
        if end_args > 0:
            args = tuple(split_top(code[k + 1:end_args]))
    locals_: tuple[tuple[str, str], ...] = ()
    offsets: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    host_types: tuple[str, ...] = ()
    if fn is not None:
        host = hosts.get(fn.start)
        if host is None:
            host = hosts[fn.start] = HostBody(code, fn)
        offsets = arg_offsets(args, "", lambda name_: host.values(name_, pos))
        types = host.declared_types(args, pos)
        if not any(types):
            types = ()
        locals_ = host.locals_before(pos)
        host_types = host.host_types()
    return RawLaunch(name, targs, config, args, _line_of(starts, pos),
                     fn.name if fn else "", fn.tparams if fn else (), locals_, fn.args if fn else (), offsets,
                     types, host_types)


