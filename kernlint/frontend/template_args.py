"""Template arguments as kernlint names them: split from tokens or a type's spelling, and resolved through clang's view of a specialization (canonical types, integer values)."""
from __future__ import annotations

import re

from kernlint.frontend.clang_base import MainText, ci, spellings, template_int_value


def _template_args_from_tokens(c: ci.Cursor, main: MainText | None = None) -> tuple[str, ...]:
    toks = spellings(c, main)
    if len(toks) >= 3 and toks[1] == "<":
        return _split_template_args(toks[2:])
    return ()


def _split_type_args(spelling: str) -> tuple[str, ...]:
    """Template arguments of a class type's spelling: `SharedMemory<float>` -> ("float",)."""
    if "<" not in spelling or not spelling.rstrip().endswith(">"):
        return ()
    return _split_template_args(re.findall(r"\w+|::|[^\s\w]", spelling[spelling.index("<") + 1:]))


def _split_template_args(toks: list[str]) -> tuple[str, ...]:
    depth = 0
    args: list[list[str]] = [[]]
    for t in toks:
        if t == "<":
            depth += 1
        elif t == ">":
            if depth == 0:
                break
            depth -= 1
        elif t == ">>":
            if depth == 0:
                break
            depth -= 1
            if depth == 0:
                args[-1].append(">")
                break
        if t == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    return tuple(" ".join(a) for a in args if a)


def _resolved_template_args(decl: ci.Cursor, written: tuple[str, ...]) -> tuple[str, ...]:
    """The written template arguments of a call to a function template specialization, each type
    replaced by its canonical spelling and each integer by its value where clang has them (a
    typedef or macro name means nothing inside the callee); `written` when they do not line up."""
    try:
        n = decl.get_num_template_arguments()
    except Exception:  # noqa: BLE001 - older libclang bindings
        return written
    if n < len(written) or n <= 0:
        return written
    out = list(written)
    for i in range(len(written)):
        kind = decl.get_template_argument_kind(i)
        if kind == ci.TemplateArgumentKind.TYPE:
            spelling = decl.get_template_argument_type(i).get_canonical().spelling
            if spelling and "type-parameter" not in spelling:
                out[i] = spelling.replace("struct ", "").replace("class ", "")
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out[i] = str(template_int_value(decl, i))
    return tuple(out)


def _specialization_args(decl: ci.Cursor | None, written: tuple[str, ...]) -> tuple[str, ...]:
    """The template arguments of a class template specialization a method is called on, from clang's
    declaration of it: each of them, the defaulted ones too (a spelling leaves those out:
    `BlockLoad<float, 128, 4>`), an integral or enumerator argument as its value
    (`cub::BLOCK_LOAD_WARP_TRANSPOSE` means nothing inside the method; 4 does). `written` when clang
    has no concrete specialization (a dependent type) or an argument is neither a type nor an integer."""
    try:
        n = decl.get_num_template_arguments() if decl is not None else -1
    except Exception:  # noqa: BLE001 - older libclang bindings
        return written
    if n <= 0 or n < len(written):
        return written
    out = []
    for i in range(n):
        kind = decl.get_template_argument_kind(i)  # type: ignore[union-attr]
        if kind == ci.TemplateArgumentKind.TYPE:
            spelling = decl.get_template_argument_type(i).get_canonical().spelling  # type: ignore[union-attr]
            if not spelling or "type-parameter" in spelling:
                return written
            out.append(spelling.replace("struct ", "").replace("class ", ""))
        elif kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append(str(template_int_value(decl, i)))  # type: ignore[arg-type]
        else:
            return written
    return tuple(out)
