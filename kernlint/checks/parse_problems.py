"""KL900 parse-error and KL903 unresolved-names: what the front end could not read.

A kernel with a syntax error is still analysed as far as clang recovered it, and gets one KL900
naming the first error; names clang could not resolve (usually declared by a header that is not
on this machine) make the expressions that use them unknown, reported once per kernel as KL903.
"""
from __future__ import annotations

from collections.abc import Iterator

from kernlint import ir
from kernlint.checks.base import Rule
from kernlint.diagnostics import Diagnostic, Severity

KL900 = Rule("KL900", "parse-error", "a kernel (or the file) has a syntax error kernlint could not parse",
             Severity.ERROR, None, "meta")
KL903 = Rule("KL903", "unresolved-names", "a kernel uses names kernlint could not resolve (a missing header?)",
             Severity.INFO, None, "meta")


def check_parse(tu: ir.TranslationUnit) -> Iterator[Diagnostic]:
    """One KL900 per kernel with syntax errors; one for the file when it yielded no kernel at all."""
    for fn in tu.kernels:
        if fn.parse_errors:
            line, col, msg = fn.parse_errors[0]
            more = len(fn.parse_errors) - 1
            extra = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
            yield Diagnostic(
                path=tu.path, line=line, column=col, code=KL900.code, name=KL900.name, severity=KL900.severity,
                message=f"kernel '{fn.name}' could not be fully parsed: {msg}{extra}",
                kernel=fn.name,
                notes=("the parts clang recovered were still analysed; findings inside this kernel may be missing",),
            )
        if fn.unresolved:
            names = []
            for _l, _c, msg in fn.unresolved:
                if "'" in msg:
                    names.append(msg.split("'")[1])
            shown = ", ".join(sorted(set(names))[:5]) or fn.unresolved[0][2]
            line, col, _ = fn.unresolved[0]
            yield Diagnostic(
                path=tu.path, line=line, column=col, code=KL903.code, name=KL903.name, severity=KL903.severity,
                message=f"kernel '{fn.name}' uses names kernlint could not resolve: {shown}",
                kernel=fn.name,
                notes=("expressions that use them are treated as unknown and yield no finding",
                       "pass the header's directory with -I, or a value with --define NAME=VALUE"),
            )
    if not tu.kernels:
        syntax = [p for p in tu.problems if p.syntax]
        if syntax:
            p = syntax[0]
            yield Diagnostic(
                path=tu.path, line=p.line, column=p.column, code=KL900.code, name=KL900.name,
                severity=KL900.severity, message=f"syntax error: {p.message}; no kernel could be analysed",
            )
