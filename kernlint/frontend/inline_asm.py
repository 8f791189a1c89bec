"""Inline PTX read from an asm statement's tokens: `cp.async` copies lowered as calls, other memory uses counted.

`asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(s), "l"(g))` becomes a call the evaluator
models (eval/async_copy.py).

libclang gives a GCC asm statement (CursorKind.ASM_STMT) its operand expressions as children (the outputs,
then the inputs) and nothing else: the template string and the constraints are read here from its tokens.
Only a template spelled as string literals is read (a macro in its place leaves the statement as it was:
not lowered, not counted).

`cp.async` (PTX ISA, "Data Movement and Conversion Instructions: cp.async"):

    cp.async.ca.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size} [dst], [src], cp-size{, src-size}{, cache-policy};
    cp.async.cg.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size} [dst], [src], 16{, src-size}{, cache-policy};

with cp-size 4, 8 or 16, `.level::cache_hint` = `.L2::cache_hint` (which requires the cache-policy
operand) and `.level::prefetch_size` one of `.L2::64B`, `.L2::128B`, `.L2::256B`. A template holding one
such copy with `[%N]` operands, and besides it at most `cp.async.commit_group`, `cp.async.wait_group N`
or `cp.async.wait_all` (which move no data), is lowered to `__kernlint_cp_async(dst, src, size[, src-size])`
(eval/async_copy.py). The ignore-src form (a predicate operand) and anything else are not read as copies.

Any other template that addresses memory (`[%N]`: `ld.global`, `st.global`, `ldmatrix`, ...) is lowered to
`__kernlint_asm(inputs...)` with the instruction's name as its one template argument: an access seen and
not evaluated (KL904 names the instruction), instead of silence.
"""
from __future__ import annotations

import re

from kernlint.base.frozen import frozen
from kernlint.ir import nodes as ir

CP_ASYNC = "__kernlint_cp_async"
OTHER_ASM = "__kernlint_asm"

_COPY_RE = re.compile(
    r"cp\.async\.(?P<cache>ca|cg)\.shared(?:::cta)?\.global(?P<mods>(?:\.L2::(?:cache_hint|64B|128B|256B))*)"
    r"\s+\[\s*%(?P<dst>\d+)\s*\]\s*,\s*\[\s*%(?P<src>\d+)\s*\]\s*,\s*(?P<size>\d+|%\d+)"
    r"(?P<rest>(?:\s*,\s*(?:\d+|%\d+))*)\s*$")
_NO_DATA_RE = re.compile(r"cp\.async\.(?:commit_group|wait_all|wait_group\s+\d+)\s*$")
_MEMORY_RE = re.compile(r"\[\s*%\d+")


@frozen
class CpAsync:
    """One `cp.async` copy: the operand numbers of its addresses; its size and src-size as written, an
    immediate ("16") or an operand ("%2") (src-size None when absent)."""

    dst: int
    src: int
    size: str
    src_size: str | None


def instructions(template: str) -> list[str]:
    """The template's instructions, without `;`, comments or blank ones."""
    text = re.sub(r"//[^\n]*", "", template)
    return [s.strip() for s in re.split(r"[;\n]", text) if s.strip()]


def parse_cp_async(template: str) -> CpAsync | None:
    """The one `cp.async` copy the asm template makes, or None when it is not exactly that (see the module
    docstring). `size` and `src_size` are an immediate ("16") or an operand ("%2")."""
    copies: list[CpAsync] = []
    for ins in instructions(template):
        if _NO_DATA_RE.match(ins):
            continue
        m = _COPY_RE.match(ins)
        if m is None:
            return None
        mods = re.findall(r"\.L2::(\w+)", m.group("mods"))
        if len(set(mods)) != len(mods) or sum(1 for x in mods if x != "cache_hint") > 1:
            return None
        size = m.group("size")
        if not size.startswith("%") and int(size) not in (4, 8, 16):
            return None
        if m.group("cache") == "cg" and not size.startswith("%") and int(size) != 16:
            return None  # (.cg copies 16 bytes only)
        rest = [x.strip() for x in m.group("rest").split(",") if x.strip()]
        if "cache_hint" in mods:
            if not rest:
                return None  # (.L2::cache_hint takes a cache-policy operand, last)
            rest = rest[:-1]
        if len(rest) > 1:
            return None
        copies.append(CpAsync(int(m.group("dst")), int(m.group("src")), size, rest[0] if rest else None))
    return copies[0] if len(copies) == 1 else None


def memory_instruction(template: str) -> str:
    """The name of the template's first instruction that addresses memory (`ld.global.ca.v4.u32`), or ""."""
    for ins in instructions(template):
        if _MEMORY_RE.search(ins):
            words = re.sub(r"^[{\s]*(?:@!?%?\w+\s+)?", "", ins).split()  # (without a `@p` guard)
            return words[0] if words else ""
    return ""


def _decode(literal: str) -> str | None:
    """The text of one C string literal token (plain or u8), escapes read; None for anything else."""
    if literal.startswith("u8"):
        literal = literal[2:]
    if len(literal) < 2 or literal[0] != '"' or literal[-1] != '"':
        return None
    body = literal[1:-1]
    simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "%": "\\%"}
    return re.sub(r"\\(.)", lambda m: simple.get(m.group(1), "\\" + m.group(1)), body)


def operand_counts(tokens: list[str]) -> tuple[str, int, int] | None:
    """(template, outputs, inputs) from an asm statement's tokens; None when the template is not string
    literals or the statement does not read."""
    if not tokens or tokens[0] not in ("asm", "__asm__", "__asm"):
        return None
    i = 1
    while i < len(tokens) and tokens[i] in ("volatile", "__volatile__", "__volatile", "inline", "goto"):
        i += 1
    if i >= len(tokens) or tokens[i] != "(":
        return None
    i += 1
    parts = []
    while i < len(tokens) and tokens[i].endswith('"'):
        text = _decode(tokens[i])
        if text is None:
            return None
        parts.append(text)
        i += 1
    if not parts:
        return None
    # The operand sections (outputs, inputs, clobbers, labels): `:` opens each (`::` is two in one
    # token), commas at depth 0 separate the operands of one, `)` at depth 0 ends the statement.
    sections: list[int] = []
    count, item, depth, opened = 0, False, 0, False
    for tok in tokens[i:]:
        if depth == 0 and tok in (":", "::", ")"):
            for _ in range(1 if tok == ")" else len(tok)):
                if opened:
                    sections.append(count + int(item))
                count, item, opened = 0, False, tok != ")"
            if tok == ")":
                break
            continue
        if tok in ("(", "[", "{"):
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        if tok == "," and depth == 0:
            count += 1
            item = False
        else:
            item = True
    else:
        return None
    return "".join(parts), (sections[0] if sections else 0), (sections[1] if len(sections) > 1 else 0)


def lower_asm(template: str, outputs: int, operands: list[ir.Expr], span: ir.Span) -> ir.Stmt | None:
    """The statement an asm of this template and these operand expressions (outputs first) stands for:
    a `__kernlint_cp_async` call, a `__kernlint_asm` call (another memory instruction), or None."""
    copy = parse_cp_async(template)
    void = ir.CType("void")
    if copy is not None:
        def operand(text: str) -> ir.Expr | None:
            if text.startswith("%"):
                k = int(text[1:])
                return operands[k] if k < len(operands) else None
            return ir.Lit(int(text), ir.INT, span)
        parts = [operand(f"%{copy.dst}"), operand(f"%{copy.src}"), operand(copy.size)]
        if copy.src_size is not None:
            parts.append(operand(copy.src_size))
        if all(p is not None for p in parts):
            return ir.ExprStmt(ir.Call(CP_ASYNC, tuple(parts), void, span), span)  # type: ignore[arg-type]
    name = memory_instruction(template)
    if name:
        return ir.ExprStmt(ir.Call(OTHER_ASM, tuple(operands[outputs:]), void, span, template_args=(name,)), span)
    return None
