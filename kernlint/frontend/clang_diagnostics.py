"""clang's diagnostics of a parse as kernlint's parse problems: syntax errors apart from the names a missing
header would declare, each read once (frontend/clang_frontend.parse_source asks them three questions)."""
from __future__ import annotations

import ctypes
import re

from kernlint.ir import nodes as ir
from kernlint.frontend.clang_base import _LOC_COL, _LOC_FILE, _LOC_LINE, _LOC_OUT, ci

_NOT_FOUND_RE = re.compile(r"'([^']+)' file not found")


def _classify(diag: ci.Diagnostic, spelling: str) -> bool:
    """True for a real syntax error; False for a semantic one (an unknown name from a missing header).
    `spelling`: the diagnostic's message."""
    cat = (diag.category_name or "").lower()
    if _NOT_FOUND_RE.match(spelling):
        return False  # an include still missing (only past clang_frontend._MAX_PARSE_ROUNDS): a missing header, not syntax
    return "parse" in cat or "lexical" in cat


def _diagnostics(tu: ci.TranslationUnit) -> list[tuple[int, str, ci.Diagnostic]]:
    """(severity, message, the diagnostic) of each of clang's diagnostics of `tu`, read once for the parse's
    questions (include still missing, PCH refused, problems): each read through the bindings costs a few ctypes
    calls (the diagnostic, its severity, its message and the message's string), and they were asked up to
    three times each."""
    return [(d.severity, d.spelling, d) for d in tu.diagnostics]


def _problems(tu: ci.TranslationUnit, parse_path: str, context: str = "",
              diagnostics: list[tuple[int, str, ci.Diagnostic]] | None = None) -> list[ir.ParseProblem]:
    """clang's errors as ParseProblems: syntax errors apart from names a missing header would declare.
    `diagnostics`: `_diagnostics(tu)`, when already read.

    A parse error that follows an unresolved name on the same line is its consequence, not a
    syntax error of its own: `(Foo*)p` with `Foo` undeclared reads as `(Foo) * ) p`, so clang adds
    "expected expression" after "use of undeclared identifier 'Foo'".
    """
    problems: list[ir.ParseProblem] = []
    unresolved_at: dict[int, int] = {}  # line -> column of the first unresolved name on it
    where = ci.conf.lib.clang_getInstantiationLocation
    handle = ctypes.c_void_p.from_buffer(_LOC_FILE)  # (the file of a location, as an address: see _file_namer)
    names: dict[int, str] = {}  # file handle -> its name
    for severity, spelling, d in _diagnostics(tu) if diagnostics is None else diagnostics:
        if severity < ci.Diagnostic.Error:
            continue
        loc = d.location
        where(loc, *_LOC_OUT)  # (what loc.file, loc.line and loc.column read, in one call)
        key, line, column = handle.value, _LOC_LINE.value, _LOC_COL.value
        fname = None
        if key:
            fname = names.get(key)
            if fname is None:
                f = loc.file
                fname = names[key] = f.name if f is not None else None
        if fname is None or fname != parse_path:
            if _NOT_FOUND_RE.match(spelling) or (context and fname is not None and fname == context):
                continue
            # An error inside a real header the user pointed at: report it on line 1.
            problems.append(ir.ParseProblem(1, 1, f"{fname if fname is not None else '?'}:{line}: {spelling}", False))
            continue
        syntax = _classify(d, spelling)
        if not syntax:
            unresolved_at.setdefault(line, column)
        elif unresolved_at.get(line, column + 1) < column:
            syntax = False
        problems.append(ir.ParseProblem(line, column, spelling, syntax))
    return problems
