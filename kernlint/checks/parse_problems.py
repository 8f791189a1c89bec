"""KL900 parse-error, KL903 unresolved-names, KL904 analysis-incomplete, KL905 internal-error.

What kernlint could not read or could not finish: silence must never look like a clean bill.

A kernel with a syntax error is still analysed as far as clang recovered it, and gets one KL900
naming the first error; names clang could not resolve (usually declared by a header that is not
on this machine) make the expressions that use them unknown, reported once per kernel as KL903.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.coverage import KernelCoverage, show_lines

KL900 = Rule("KL900", "parse-error", "a kernel (or the file) has a syntax error kernlint could not parse",
             Severity.ERROR, None, "meta")
KL903 = Rule("KL903", "unresolved-names", "a kernel uses names kernlint could not resolve (a missing header?)",
             Severity.INFO, None, "meta")


KL904 = Rule("KL904", "analysis-incomplete",
             "part of a kernel was not evaluated (what, why, and how to supply what is missing)",
             Severity.INFO, None, "meta")
KL905 = Rule("KL905", "internal-error", "kernlint failed while analysing a kernel (a bug: please report it)",
             Severity.ERROR, None, "meta")

MAX_REASONS = 6  # reasons listed in one KL904; the rest are counted


def incomplete(path: str, fn: ir.Function, record: KernelCoverage) -> Diagnostic:
    """KL904 for a kernel that was not fully evaluated: what was not (lines, or the whole kernel),
    why, grouped by reason, and how to supply what is missing. One per kernel, at its line."""
    acc_missing = record.accesses_seen - record.accesses_evaluated
    br_missing = record.branches_seen - record.branches_evaluated
    if record.status == "none":
        what = "the whole kernel"
    else:
        parts = []
        if acc_missing:
            parts.append(f"{acc_missing} of {record.accesses_seen} memory accesses")
        # The rest of a block past the statement limit counts as one branch site: it is named apart.
        too_large = sum(g.branches for g in record.gaps if g.kind == "large")
        if br_missing - too_large > 0:
            parts.append(f"{br_missing - too_large} of {record.branches_seen - too_large} branches")
        if too_large:
            parts.append(f"the statements past its first {ir.MAX_STATEMENTS:,}")
        if record.unresolved_uses:
            parts.append("the code using unresolved names")
        what = " and ".join(parts)
    gaps = record.gaps
    first = gaps[0].text() if gaps else "unknown"
    if record.status == "none":
        message = f"kernel '{fn.name}' was not analysed: {first}"
    else:
        message = f"kernel '{fn.name}' was only partly analysed: {what} not evaluated ({first})"
    notes = []
    for g in gaps[:MAX_REASONS]:
        notes.append(f"{show_lines(g.lines)}: {g.text()}")
    if len(gaps) > MAX_REASONS:
        rest = gaps[MAX_REASONS:]
        n_lines = len({ln for g in rest for ln in g.lines})
        notes.append(f"and {len(rest)} more reason{'s' if len(rest) > 1 else ''} ({n_lines} more lines)")
    hints = list(dict.fromkeys(g.hint() for g in gaps[:MAX_REASONS] if g.hint()))
    notes.extend(f"to supply it: {h}" for h in hints)
    notes.append("what was not evaluated yields no finding: silence there is not a clean bill" if record.status != "none"
                 else "no finding can be made for this kernel: silence is not a clean bill")
    metrics = {"accesses_seen": record.accesses_seen, "accesses_evaluated": record.accesses_evaluated,
               "branches_seen": record.branches_seen, "branches_evaluated": record.branches_evaluated,
               "status": record.status}
    return Diagnostic(path=path, line=fn.span.line, column=fn.span.column, code=KL904.code, name=KL904.name,
                      severity=KL904.severity, message=message, kernel=fn.name, notes=tuple(notes),
                      metrics=metrics)


def out_of_time(path: str, fn: ir.Function, what: str) -> Diagnostic:
    """KL904 for what the file's work budget (kernlint/base/deadline.py) left unchecked in kernel `fn`:
    `what` is "the whole kernel" or the rules that did not run."""
    from kernlint.base import deadline

    return Diagnostic(path=path, line=fn.span.line, column=fn.span.column, code=KL904.code, name=KL904.name,
                      severity=KL904.severity, kernel=fn.name,
                      message=f"kernel '{fn.name}': {what} not analysed: {deadline.describe()} ran out",
                      notes=("to supply it: raise --timeout (or the config key `timeout`), or lint this file with "
                             "real sizes (--define) so that its loops are shorter",
                             "what was not analysed yields no finding: silence there is not a clean bill"),
                      metrics={"status": "none" if what == "the whole kernel" else "partial", "reason": "time"})


def internal_error(path: str, fn: ir.Function, exc: BaseException) -> Diagnostic:
    """KL905 for a kernel whose analysis raised: the other kernels are still reported.

    The notes say where it was raised; the whole traceback only with --verbose or
    KERNLINT_TRACEBACK=1 (`kernlint.base.exitcodes`).
    """
    from kernlint.base.exitcodes import TRACEBACK_ENV, format_traceback, raised_at, tracebacks_wanted

    at = raised_at(exc)
    notes = ["this is a bug in kernlint; the other kernels were analysed"]
    if tracebacks_wanted():
        notes.append(format_traceback(exc))
    else:
        notes.append(f"raised at {at}" if at else "")
        notes.append(f"rerun with --verbose or {TRACEBACK_ENV}=1 for the traceback")
    return Diagnostic(path=path, line=fn.span.line, column=fn.span.column, code=KL905.code, name=KL905.name,
                      severity=KL905.severity,
                      message=f"kernlint failed while analysing kernel '{fn.name}': {type(exc).__name__}: {exc}",
                      kernel=fn.name, notes=tuple(n for n in notes if n))


def _called_names(node: object) -> set[str]:
    """Names of the functions a body calls (any depth of expression)."""
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Call)}


def unresolved_uses(fn: ir.Function, tu: ir.TranslationUnit) -> tuple[tuple[int, int, str], ...]:
    """The unresolved names a kernel uses, in its body and in the file's helpers it calls: (line, column, message)."""
    return fn.unresolved + _helpers_unresolved(fn, tu)


def _helpers_unresolved(fn: ir.Function, tu: ir.TranslationUnit) -> tuple[tuple[int, int, str], ...]:
    """Unresolved names inside the `__device__` helpers a kernel calls (they are inlined into it). Only the
    file's own functions have any (a header's errors are reported once, on line 1: `_problems`), and only
    where the file has some (a function's are the file's problems on its lines)."""
    if all(p.syntax for p in tu.problems):
        return ()  # nothing to find: no walk of the kernel's body (a long body is a long walk)
    called = _called_names(fn.body)
    out: list[tuple[int, int, str]] = []
    for helper in tu.functions.in_file(called):  # (only those named in `called`)
        if not helper.is_kernel:
            out.extend(helper.unresolved)
    return tuple(out)


def _helpers_syntax(fn: ir.Function, tu: ir.TranslationUnit) -> tuple[tuple[int, int, str], ...]:
    """Syntax errors inside the `__device__` helpers a kernel calls (their bodies are inlined into it)."""
    if not any(p.syntax for p in tu.problems):
        return ()
    called = _called_names(fn.body)
    out: list[tuple[int, int, str]] = []
    for helper in tu.functions.in_file(called):  # (only those named in `called`)
        if not helper.is_kernel:
            out.extend(helper.parse_errors)
    return tuple(sorted(out))


# clang's diagnostics for text that hides everything after it (Lex/LiteralSupport and PPDirectives).
_SWALLOWING = ("unterminated /* comment", "unterminated conditional directive")
_COMMENT_RE = lazy_compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _mentions_kernel(text: str) -> bool:
    """Whether `text` declares a `__global__` function outside comments (clang may have lost it)."""
    return "__global__" in text and "__global__" in _COMMENT_RE.sub("", text)


_LAUNCH_BOUNDS_RE = lazy_compile(r"__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)")
_KERNEL_DECL_RE = lazy_compile(r"\b__global__\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")
_IF0_RE = lazy_compile(r"^[ \t]*#[ \t]*if[ \t]+0\b.*?^[ \t]*#[ \t]*endif\b", re.S | re.M)


def _blank(m: re.Match[str]) -> str:
    """The match with everything but its line breaks blanked (line numbers are kept)."""
    return re.sub(r"[^\n]", " ", m.group(0))


def _declared_kernels(text: str) -> list[tuple[int, str]]:
    """(line, name) of each `__global__` function the text declares outside comments, `#if 0` blocks
    and `__launch_bounds__(...)`: what clang should have found, to tell a kernel it lost."""
    t = _COMMENT_RE.sub(_blank, text)
    t = _IF0_RE.sub(_blank, t)
    t = _LAUNCH_BOUNDS_RE.sub(_blank, t)
    return [(t.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _KERNEL_DECL_RE.finditer(t)]


def _lost_kernels(tu: ir.TranslationUnit, text: str, after_line: int) -> list[tuple[int, str]]:
    """Kernels the text declares at or after `after_line` that clang did not parse (an error before them
    swallowed the declaration: `/ comment` on the line before `__global__ void k(...)`)."""
    if "__global__" not in text:
        return []
    parsed = {f.name.split("::")[-1] for f in tu.kernels}
    parsed |= {key.split("@")[0].split("::")[-1] for key in tu.functions}
    return [(line, name) for line, name in _declared_kernels(text) if line >= after_line and name not in parsed]


def _stub_note(tu: ir.TranslationUnit) -> tuple[str, ...]:
    if not tu.stubbed:
        return ()
    shown = ", ".join(tu.stubbed[:8]) + (f" and {len(tu.stubbed) - 8} more" if len(tu.stubbed) > 8 else "")
    return (f"includes not found and read as empty files: {shown}",)


def check_parse(tu: ir.TranslationUnit, text: str = "") -> Iterator[Diagnostic]:
    """KL900 for syntax errors that touch a kernel, KL903 for a kernel's unresolved names.

    A syntax error inside a kernel, or inside a `__device__` helper it calls, is an error: that
    kernel was not fully read. Errors elsewhere (host code, often C++ that needs headers not on
    this machine) do not stop any kernel from being analysed: one info KL900 when the file has
    kernels, nothing when it has none. A file with no kernel whose text declares a `__global__`
    function keeps an error KL900, since clang may have lost the kernel in the error.
    """
    inside: set[tuple[int, int]] = set()
    for fn in tu.kernels:
        errors = fn.parse_errors + tuple(e for e in _helpers_syntax(fn, tu) if e not in fn.parse_errors)
        inside.update((line, col) for line, col, _ in errors)
        if errors:
            line, col, msg = errors[0]
            more = len(errors) - 1
            extra = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
            yield Diagnostic(
                path=tu.path, line=line, column=col, code=KL900.code, name=KL900.name, severity=KL900.severity,
                message=f"kernel '{fn.name}' could not be fully parsed: {msg}{extra}",
                kernel=fn.name,
                notes=("the parts clang recovered were still analysed; findings inside this kernel may be missing",),
            )
        unresolved = unresolved_uses(fn, tu)
        if unresolved:
            names = []
            for _l, _c, msg in unresolved:
                if "'" in msg:
                    names.append(msg.split("'")[1])
            shown = ", ".join(sorted(set(names))[:5]) or unresolved[0][2]
            line, col, _ = unresolved[0]
            yield Diagnostic(
                path=tu.path, line=line, column=col, code=KL903.code, name=KL903.name, severity=KL903.severity,
                message=f"kernel '{fn.name}' uses names kernlint could not resolve: {shown}",
                kernel=fn.name,
                notes=("expressions that use them are treated as unknown and yield no finding",
                       *_stub_note(tu),
                       # -D, not --define: clang drops an expression with an undeclared name while parsing, so
                       # only the preprocessor can supply it (--define sets parameters the evaluator reads).
                       "pass the header's directory with -I, or define the name for the preprocessor with "
                       f"-D {sorted(set(names))[0] if names else 'NAME'}=VALUE"),
            )
    outside = [p for p in tu.problems if p.syntax and (p.line, p.column) not in inside]
    # An unterminated comment or conditional swallows the rest of the file: a kernel after it is
    # gone without a trace, so this is an error wherever it is (never the "outside" info below).
    swallow = next((q for q in outside if q.message.startswith(_SWALLOWING)), None)
    if swallow is not None and _mentions_kernel(text):
        yield Diagnostic(
            path=tu.path, line=swallow.line, column=swallow.column, code=KL900.code, name=KL900.name,
            severity=KL900.severity,
            message=f"syntax error: {swallow.message}; the code after it, kernels included, was not analysed",
            notes=_stub_note(tu),
        )
        outside = [q for q in outside if q is not swallow]
    if not outside:
        return
    p = outside[0]
    if not tu.kernels and _mentions_kernel(text):
        yield Diagnostic(
            path=tu.path, line=p.line, column=p.column, code=KL900.code, name=KL900.name,
            severity=KL900.severity, message=f"syntax error: {p.message}; no kernel could be analysed",
            notes=_stub_note(tu),
        )
    elif tu.kernels and (lost := _lost_kernels(tu, text, min(q.line for q in outside))):
        # A kernel declared after the error is not among those clang parsed: the error swallowed it.
        line, name = lost[0]
        q = max((q for q in outside if q.line <= line), key=lambda q: (q.line, q.column))
        others = f" (and {len(lost) - 1} more kernel{'s' if len(lost) > 2 else ''})" if len(lost) > 1 else ""
        yield Diagnostic(
            path=tu.path, line=q.line, column=q.column, code=KL900.code, name=KL900.name,
            severity=KL900.severity,
            message=f"syntax error: {q.message}; kernel '{name}' (line {line}) after it was lost and not "
                    f"analysed{others}",
            notes=_stub_note(tu),
        )
    elif tu.kernels:
        more = len(outside) - 1
        extra = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        yield Diagnostic(
            path=tu.path, line=p.line, column=p.column, code=KL900.code, name=KL900.name, severity=Severity.INFO,
            message=f"code outside the kernels could not be parsed: {p.message}{extra}",
            notes=("no kernel body is affected; a kernel that uses declarations from there may be partly analysed",
                   *_stub_note(tu)),
        )
