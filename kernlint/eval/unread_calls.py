"""Statements clang dropped because a call's namespace was not declared (a library header not found):
each counted from the source text as an access seen and not evaluated (see eval/library_calls.py)."""
from __future__ import annotations


from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir
from kernlint.eval import coverage as cov

# `ns::name(` or `ns::inner::name<...>(` at the unresolved name's column.
_QUALIFIED_CALL = lazy_compile(r"([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)\s*(?:<[^;(){}]*>)?\s*\(")


def unread_calls(fn: ir.Function, lines: tuple[str, ...]) -> tuple[cov.SiteStatus, ...]:
    """Statements of kernel `fn` that clang dropped because a call's namespace was not declared (its
    header not found), each an access site not evaluated: ("unread_call", the qualified name)."""
    if fn.body is None or not fn.unresolved:
        return ()
    lowered = {s.span.line for s in ir.iter_statements(fn.body) if not isinstance(s, ir.Block)}
    first, last = fn.span.line, fn.span.end_line or fn.span.line
    out: dict[cov.SiteKey, cov.SiteStatus] = {}
    for line, col, msg in fn.unresolved:
        if "undeclared identifier" not in msg or msg.count("'") < 2 or line in lowered or not first < line <= last:
            continue
        name = msg.split("'")[1]
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        m = _QUALIFIED_CALL.match(text, max(0, col - 1))
        if m is None or not m.group(1).startswith(name + "::") or _arguments(text, m.end()) < 2:
            continue  # (as above: data moves between two things at least; `make_pipeline()` moves none)
        key = (line, col, line, col, line, col + len(m.group(1)), cov.ACCESS)
        out.setdefault(key, cov.SiteStatus(key, False, ("unread_call", m.group(1))))
    return tuple(out.values())


def _arguments(text: str, start: int) -> int:
    """Top-level arguments of the call whose `(` ends at `start` (2 when the line ends first: a call
    that goes on past its line is taken to have several)."""
    depth, count, seen = 1, 1, False
    for ch in text[start:]:
        if ch in "([{<":
            depth += 1 if ch != "<" else 0
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return count if seen else 0
        elif ch == "," and depth == 1:
            count += 1
        if not ch.isspace() and depth >= 1:
            seen = True
    return 2
