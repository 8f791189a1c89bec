"""Textual instantiation of a template kernel: rewrite its source so it is no longer a template.

libclang never exposes instantiated template bodies, so dependent types stay dependent
(`__shared__ float As[BM * BK]` has no size, `sizeof(T)` no value). For a kernel and a concrete
binding, the `template <int BM, class T>` header is replaced, on the same line(s), by
`namespace __kl_inst_N { constexpr int BM = 128; using T = float;` and ` }` is appended after the
kernel's closing brace. Every newline is kept, so every line of the body keeps its number; only the
columns on the header's own lines move. The front end then parses that text and lowers the now
non-dependent kernel: types, array sizes, `sizeof` and `if constexpr` are exact.
"""
from __future__ import annotations

import re

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir.dependent_types import split_args

_COMMENT_OR_STRING = lazy_compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _blank(text: str) -> str:
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _split_params(text: str) -> list[str]:
    return split_args(text)


def matching_close(code: str, pos: int, open_ch: str, close_ch: str) -> int:
    """The index of the `close_ch` that closes the `open_ch` at `pos` (brackets of that kind nest), -1 if none."""
    depth = 0
    for i in range(pos, len(code)):
        ch = code[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _declarations(params_text: str, binding: dict[str, str]) -> str | None:
    """`using T = float; constexpr int BM = 128;` for each parameter, or None if one cannot be bound."""
    decls = []
    for p in _split_params(params_text):
        decl, eq, default = p.partition("=")
        words = decl.split()
        if not words or "..." in decl or words[0] == "template":
            return None
        name = words[-1]
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None
        value = binding.get(name)
        if value is None or value == "":
            value = default.strip() if eq else None
        if value is None:
            return None
        if words[0] in ("typename", "class") and len(words) == 2:
            decls.append(f"using {name} = {value};")
        else:
            ptype = " ".join(words[:-1]) or "int"
            decls.append(f"constexpr {ptype} {name} = ({value});")
    return " ".join(decls)


def instantiate_text(text: str, line: int, name: str, binding: dict[str, str], tag: int = 0) -> str | None:
    """`text` with the template kernel `name` whose declaration starts on `line` (1-based) made concrete.

    None when the header or body cannot be found, or a parameter has neither a binding nor a default.
    """
    made = instantiate_region(text, line, name, binding, tag)
    return None if made is None else made[0]


def instantiate_region(text: str, line: int, name: str, binding: dict[str, str],
                       tag: int = 0) -> tuple[str, tuple[int, int]] | None:
    """As `instantiate_text`, with the (start, end) character offsets in the new text of what the binding
    made of the kernel (the namespace opened where its template header was, to its closing ` }`): the text
    before start is `text`'s, the text after end is `text`'s after the kernel's closing brace."""
    code = _blank(text)
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    if not 1 <= line <= len(starts):
        return None
    # The `template <` opening this kernel: the last one at or before the kernel's name line.
    name_re = re.compile(rf"\b{re.escape(name)}\s*\(")
    window_start = starts[max(0, line - 30)]
    window_end = starts[line] if line < len(starts) else len(code)
    header = None
    for m in re.finditer(r"\btemplate\s*<", code[window_start:window_end + 2000]):
        pos = window_start + m.start()
        if pos >= window_end:
            break
        lt = window_start + m.end() - 1
        gt = matching_close(code, lt, "<", ">")
        if gt < 0:
            continue
        after = code[gt + 1:]
        nm = name_re.search(after)
        brace = after.find("{")
        semi = after.find(";")
        if nm is None or (brace >= 0 and nm.start() > brace) or (0 <= semi < nm.start()):
            continue
        if "__global__" not in after[:nm.start()] and "__global__" not in code[starts[line - 1]:gt]:
            continue
        header = (pos, lt, gt, gt + 1 + nm.end() - 1)
    if header is None:
        return None
    pos, lt, gt, paren = header
    pclose = matching_close(code, paren, "(", ")")
    if pclose < 0:
        return None
    body = code.find("{", pclose)
    if body < 0 or code[pclose + 1:body].strip(" \t\n\r").count(";"):
        return None
    end = matching_close(code, body, "{", "}")
    if end < 0:
        return None
    decls = _declarations(text[lt + 1:gt], binding)
    if decls is None:
        return None
    newlines = text[pos:gt + 1].count("\n")
    opening = f"namespace __kl_inst_{tag} {{ {decls}" + "\n" * newlines
    made = text[:pos] + opening + text[gt + 1:end + 1] + " }"
    return made + text[end + 1:], (pos, len(made))


_WORD = lazy_compile(r"[A-Za-z_]\w*")
# The name a declaration introduces: `using NAME =`, `typedef ... NAME;`, else the last word before
# `=`, `[`, `(`, `{` or `;` of a statement that starts with a type (`weight_t A_val[kNRows];`).
_USING = lazy_compile(r"\busing\s+([A-Za-z_]\w*)\s*=")
_DECLARED = lazy_compile(r"^\s*(?:[\w:<>,]+\s+|[\w:<>,]+\s*[*&]+\s*)+([A-Za-z_]\w*)\s*(?:\[[^;]*?\])*\s*(?:=|\{|\(|;)")
_KEYWORDS = frozenset(("if", "for", "while", "return", "switch", "constexpr", "else", "do", "case"))
_CONTROL = _KEYWORDS - {"constexpr"}
_BRACKETED = lazy_compile(r"\[[^\[\]]*\]|\([^()]*\)|\{[^{}]*\}|<[^<>;]*>")
_MORE_DECLARATORS = lazy_compile(r",\s*[*&]*\s*([A-Za-z_]\w*)\s*(?=[=;,{(]|$)")


def dependent_lines(text: str, first: int, last: int, params: tuple[str, ...]) -> set[int]:
    """Lines `first`..`last` (1-based) of `text` (a template kernel) whose code depends on the template
    parameters `params`: they name a parameter, or a name declared from one (`using scan_t = typename
    Ktraits::scan_t;`, `constexpr int kN = Ktraits::kN;`, `weight_t A_val[kN];`), transitively.

    What clang reports at such a line of an instance comes from the binding (a member its class lacks
    because a header is missing): the template itself could not evaluate that line either."""
    lines = _blank(text).split("\n")[first - 1:last]
    names = set(params)
    # Statements, each with the lines it spans; a name declared by one that mentions a dependent name
    # is dependent in turn (two passes reach the usual chains: alias -> variable -> use).
    stmts: list[tuple[str, range]] = []
    buf, start = "", first
    for i, ln in enumerate(lines, first):
        for ch in ln + "\n":
            buf += ch
            if ch in ";{}":
                stmts.append((buf, range(start, i + 1)))
                buf, start = "", i
        if not buf.strip():
            start = i + 1
    for _ in range(3):
        grown = False
        for s, _rng in stmts:
            if not names & set(_WORD.findall(s)):
                continue
            head = s.strip().lstrip("{}").split("=")[0]
            m = _USING.search(s) or _DECLARED.search(head + ("=" if "=" in s else ";"))
            if m and m.group(1) not in _KEYWORDS and head.split()[0] not in _CONTROL:
                # Every declarator of it: `weight_t dB_vals[kN], dC_vals[kN];`
                flat = _BRACKETED.sub("", s) if _USING.search(s) is None else ""
                for n in (m.group(1), *_MORE_DECLARATORS.findall(flat)):
                    if n not in names:
                        names.add(n)
                        grown = True
        if not grown:
            break
    return {i for i, ln in enumerate(lines, first) if names & set(_WORD.findall(ln))}
