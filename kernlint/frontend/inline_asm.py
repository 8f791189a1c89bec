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

A template of plain `ld`s or `st`s of global or shared memory (`parse_ld_st`; PTX ISA, "Data Movement and
Conversion Instructions: ld" and ": st"):

    ld{.weak|.volatile|.relaxed.scope|.acquire.scope}.ss{.cop}{.nc}{.L1::evict}{.L2::evict}{.L2::cache_hint}{.L2::prefetch}{.vec}.type d, [a]{, cache-policy};
    st{.weak|.volatile|.relaxed.scope|.release.scope}.ss{.cop}{.L1::evict}{.L2::evict}{.L2::cache_hint}{.vec}.type [a], b{, cache-policy};

with `.ss` `.global`, `.shared` or `.shared::cta`, makes one access per lane and instruction of (vector
width x type size) bytes, 16 at most, at `[%N]` or `[%N+imm]`. Several instructions are read when they are
all loads or all stores at one address operand (`[%4]`, `[%4+16]`). The template is lowered to one
expression: for each instruction `__kernlint_asm_ldst(address, offset, guard, other inputs...)` (the
access; the instruction, the guard's rule and whether the address is the previous instruction's as
template arguments), then for a load each of its outputs assigned `__kernlint_asm_loaded()`, the value the
access loaded from memory. A load or store under a predicate is read only alone and in the form
`{ .reg .pred P; setp.ne.b32 P, %N, 0; [mov.b32 %out, x; ...] @P ld... }` (or `setp.eq` with `@!P`, and the
two opposite pairings; `@P st...` without `mov`s): the lanes take it exactly when operand N is not zero (is
zero); the `mov`s give a load's outputs their value on the other lanes. Any other guard is not read.

Any other template that addresses memory (`[%N]`: `ldmatrix`, `red`, `ld.global.v8.f32`, a predicate set
otherwise, ...) is lowered to `__kernlint_asm(inputs...)` with the instruction's name as its one template
argument: an access seen and not evaluated (KL904 names the instruction), instead of silence.
"""
from __future__ import annotations

import re

from kernlint.base.frozen import frozen
from kernlint.base.lazy_re import lazy_compile
from kernlint.ir import nodes as ir

CP_ASYNC = "__kernlint_cp_async"
OTHER_ASM = "__kernlint_asm"
LD_ST = "__kernlint_asm_ldst"
LOADED = "__kernlint_asm_loaded"
OUTPUT = "an inline-asm output"  # the reason of the unknown value an output of asm kernlint does not run gets

_COPY_RE = lazy_compile(
    r"cp\.async\.(?P<cache>ca|cg)\.shared(?:::cta)?\.global(?P<mods>(?:\.L2::(?:cache_hint|64B|128B|256B))*)"
    r"\s+\[\s*%(?P<dst>\d+)\s*\]\s*,\s*\[\s*%(?P<src>\d+)\s*\]\s*,\s*(?P<size>\d+|%\d+)"
    r"(?P<rest>(?:\s*,\s*(?:\d+|%\d+))*)\s*$")
_NO_DATA_RE = lazy_compile(r"cp\.async\.(?:commit_group|wait_all|wait_group\s+\d+)\s*$")
_MEMORY_RE = lazy_compile(r"\[\s*%\d+")


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


@frozen
class Opcode:
    """What a plain `ld`/`st` instruction name says: "load" or "store", the state space ("global" or
    "shared") and the bytes each lane moves (vector width x type size)."""

    kind: str
    space: str
    size: int
    lanes: int  # the vector width (1 for a scalar)
    cache_hint: bool  # `.L2::cache_hint`: the instruction takes a cache-policy operand, last


@frozen
class LdSt:
    """One plain `ld` or `st` (see the module docstring): the instruction's name and opcode, the operand
    numbers of its address and of its values (a load's destinations, a store's sources), the bytes added to
    the address; `guard` the operand whose being non-zero (`guard_zero`: zero) makes a lane take it, or None."""

    name: str
    opcode: Opcode
    address: int
    offset: int
    values: tuple[int, ...]
    guard: int | None = None
    guard_zero: bool = False


_SCOPES = ("cta", "cluster", "gpu", "sys")
_COP = {"ld": ("ca", "cg", "cs", "lu", "cv"), "st": ("wb", "cg", "cs", "wt")}
_L1_EVICT = ("L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate")
_L2_EVICT = ("L2::evict_normal", "L2::evict_first", "L2::evict_last")
_PREFETCH = ("L2::64B", "L2::128B", "L2::256B")
_TYPE_RE = lazy_compile(r"(?P<kind>bf|[bsuf])(?P<bits>8|16|32|64|128)")


def _type_bytes(word: str) -> int | None:
    """The size of a PTX fundamental type of `ld`/`st` (`.u32` 4, `.b128` 16), None for anything else."""
    m = _TYPE_RE.fullmatch(word)
    if m is None:
        return None
    kind, bits = m.group("kind"), int(m.group("bits"))
    if (bits == 128 and kind != "b") or (kind == "f" and bits == 8) or (kind == "bf" and bits != 16):
        return None
    return bits // 8


def opcode(name: str) -> Opcode | None:
    """The opcode of a plain `ld`/`st` of global or shared memory named `name` (`ld.global.nc.v4.u32`), or
    None when the name is anything else or its bytes per lane are not one access kernlint models (more than
    16, a `.v8` of other than 16-bit elements). Qualifiers are read in the PTX ISA's order."""
    words = name.split(".")
    op = words.pop(0)
    if op not in ("ld", "st"):
        return None

    def take(options: tuple[str, ...]) -> str:
        if words and words[0] in options:
            return words.pop(0)
        return ""
    sem = take(("weak", "volatile", "relaxed", "acquire" if op == "ld" else "release"))
    if sem in ("relaxed", "acquire", "release") and not take(_SCOPES):
        return None  # (a memory-order qualifier needs its scope)
    space = take(("global", "shared", "shared::cta"))
    if not space:
        return None  # (generic, local, const, param and distributed shared memory are not read)
    cop = take(_COP[op])
    # (.nc and the prefetch size change where the bytes are cached, not which bytes a lane reads)
    if op == "ld" and space == "global" and sem in ("", "weak"):
        take(("nc",))
    evict = [take(_L1_EVICT), take(_L2_EVICT)]
    hint = take(("L2::cache_hint",))
    if op == "ld":
        take(_PREFETCH)
    vec = take(("v2", "v4", "v8"))
    size = _type_bytes(words.pop(0)) if len(words) == 1 else None
    if size is None:
        return None
    if sem == "volatile" and (cop or any(evict) or hint):
        return None  # (ld.volatile takes a prefetch size only)
    if cop and sem in ("relaxed", "acquire", "release"):
        return None
    lanes = int(vec[1:]) if vec else 1
    if lanes == 8 and size != 2:
        return None
    if vec and size == 16:
        return None  # (a .b128 is not a vector element)
    if lanes * size > 16:
        return None  # (32-byte accesses of recent PTX: not one access kernlint models)
    return Opcode("load" if op == "ld" else "store", "shared" if space.startswith("shared") else "global",
                  lanes * size, lanes, bool(hint))


_VALUES = r"(?P<values>%\d+|\{\s*%\d+(?:\s*,\s*%\d+)*\s*\})"
_ADDRESS = r"\[\s*%(?P<address>\d+)\s*(?:\+\s*(?P<offset>-?(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*))\s*)?\]"
_POLICY = r"(?:\s*,\s*%(?P<policy>\d+))?"
_LOAD_RE = lazy_compile(rf"(?P<name>ld\.\S+)\s+{_VALUES}\s*,\s*{_ADDRESS}{_POLICY}")
_STORE_RE = lazy_compile(rf"(?P<name>st\.\S+)\s+{_ADDRESS}\s*,\s*{_VALUES}{_POLICY}")
_PRED_DECL_RE = lazy_compile(r"\.reg\s+\.pred\s+(\w+)")
_SETP_RE = lazy_compile(r"setp\.(ne|eq)\.[bsu]32\s+(\w+)\s*,\s*%(\d+)\s*,\s*0")
_MOV_RE = lazy_compile(r"mov\.[bsuf](?:16|32|64)\s+%(\d+)\s*,\s*(?:%\d+|-?\d+|0[xX][0-9a-fA-F]+|0[fFdD][0-9a-fA-F]+)")
_GUARD_RE = lazy_compile(r"@(!?)(\w+)\s+(.*)")


def _read_ldst(ins: str) -> tuple[str, Opcode, int, int, tuple[int, ...]] | None:
    """(name, opcode, address, offset, values) of one plain `ld`/`st` instruction, or None."""
    m = _LOAD_RE.fullmatch(ins) or _STORE_RE.fullmatch(ins)
    if m is None:
        return None
    op = opcode(m.group("name"))
    if op is None:
        return None
    values = tuple(int(v) for v in re.findall(r"%(\d+)", m.group("values")))
    if len(values) != op.lanes or m.group("values").startswith("{") != (op.lanes > 1):
        return None  # (one value per vector element, in braces for a vector only)
    if op.cache_hint != (m.group("policy") is not None):
        return None  # (`.L2::cache_hint` takes a cache-policy operand, and only it)
    return m.group("name"), op, int(m.group("address")), _integer(m.group("offset") or "0"), values


def _integer(text: str) -> int:
    """A PTX integer literal (PTX ISA, "Constants"): decimal, hexadecimal `0x..` or octal `0..`, signed."""
    digits = text.lstrip("-")
    value = int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits, 8) if digits.startswith("0") else int(digits)
    return -value if text.startswith("-") else value


def parse_ld_st(template: str, outputs: int) -> tuple[LdSt, ...] | None:
    """The plain `ld`s or `st`s the template makes (see the module docstring), in order, or None. `outputs`:
    the number of output operands: the loads' destinations must be exactly those, each once, and what they
    read inputs. Several instructions are read only unguarded, all loads or all stores, at one address
    operand (`[%4]`, `[%4+16]`, ...)."""
    body = instructions(template)
    if len(body) >= 2 and body[0].startswith("{") and body[-1] == "}":
        body = [body[0][1:].strip()] + body[1:-1] if body[0] != "{" else body[1:-1]
        body = [b for b in body if b]
    guard: tuple[int, bool] | None = None
    if len(body) > 1 and body[0].startswith(".reg"):
        # `.reg .pred P; setp.ne.b32 P, %N, 0; [mov.b32 %k, x; ...] @P ld...` (or `@P st...`): nothing else.
        decl = _PRED_DECL_RE.fullmatch(body[0])
        setp = _SETP_RE.fullmatch(body[1]) if len(body) > 2 else None
        guarded = _GUARD_RE.fullmatch(body[-1])
        if decl is None or setp is None or guarded is None or setp.group(2) != decl.group(1) \
                or guarded.group(2) != decl.group(1):
            return None
        movs = [_MOV_RE.fullmatch(b) for b in body[2:-1]]
        one = _read_ldst(guarded.group(3))
        if not all(movs) or one is None or (one[1].kind != "load" and movs) \
                or any(int(m.group(1)) not in one[4] for m in movs if m):
            return None
        guard = (int(setp.group(3)), (setp.group(1) == "eq") != (guarded.group(1) == "!"))
        reads = [one]
    else:
        found = [_read_ldst(b) for b in body]
        if not found or any(r is None for r in found):
            return None
        reads = [r for r in found if r is not None]
    kinds = {r[1].kind for r in reads}
    if len(kinds) != 1 or len({r[2] for r in reads}) != 1:
        return None  # (loads and stores mixed, or more than one address operand)
    values = [v for r in reads for v in r[4]]
    inputs = [reads[0][2]] + ([guard[0]] if guard else [])
    if kinds == {"load"}:
        if sorted(values) != list(range(outputs)):
            return None  # (each output a destination, once)
    else:
        inputs += values
        if outputs:
            return None
    if any(k < outputs for k in inputs):
        return None
    return tuple(LdSt(name, op, address, offset, vals, guard[0] if guard else None, guard[1] if guard else False)
                 for name, op, address, offset, vals in reads)


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
    tokens = [t for t in tokens if not t.startswith(("//", "/*"))]  # (the front end's tokens keep comments)
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
    a `__kernlint_cp_async` call, a plain load or store (`_lower_ld_st`), a `__kernlint_asm` call (another
    memory instruction), the asm left opaque with its outputs made unknown, or None (nothing to say)."""
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
    ldst = parse_ld_st(template, outputs)
    if ldst is not None and len(operands) > max(k for x in ldst for k in x.values + (x.address, x.guard or 0)):
        return _lower_ld_st(ldst, outputs, operands, span)
    name = memory_instruction(template)
    # What kernlint does not run leaves its outputs unknown (never the value they held before the asm).
    unknown = tuple(ir.ExprStmt(ir.Binary("=", out, ir.Opaque(OUTPUT, out.ctype, span), out.ctype,
                                          span), span) for out in operands[:outputs])
    if name:
        seen = ir.ExprStmt(ir.Call(OTHER_ASM, tuple(operands[outputs:]), void, span, template_args=(name,)), span)
        return ir.Block((seen,) + unknown, span) if unknown else seen
    return ir.Block((ir.OpaqueStmt("asm_stmt", span),) + unknown, span) if unknown else None


def _lower_ld_st(ldst: tuple[LdSt, ...], outputs: int, operands: list[ir.Expr], span: ir.Span) -> ir.Stmt:
    """The statement plain `ld`s/`st`s stand for (see the module docstring): one expression, for each
    instruction the access `__kernlint_asm_ldst(address, offset, guard, other inputs...)` (guard 1 when there
    is none; after the first, address 0 and no inputs: the first's address again), each load's outputs then
    assigned `__kernlint_asm_loaded()`, the value the access just loaded."""
    first = ldst[0]
    rest = tuple(x for k, x in enumerate(operands) if k >= outputs and k not in (first.address, first.guard))
    guard = operands[first.guard] if first.guard is not None else ir.Lit(1, ir.INT, span)
    rule = "zero" if first.guard_zero else "nonzero"
    expr: ir.Expr | None = None
    for i, one in enumerate(ldst):
        offset = ir.Lit(one.offset, ir.INT, span)
        args = (operands[one.address], offset, guard) + rest if i == 0 else \
            (ir.Lit(0, ir.INT, span), offset, ir.Lit(1, ir.INT, span))
        call = ir.Call(LD_ST, args, ir.CType("void"), span, template_args=(one.name, rule, "same" if i else ""))
        expr = call if expr is None else ir.Binary(",", expr, call, call.ctype, span)
        for k in one.values if one.opcode.kind == "load" else ():
            out = operands[k]
            loaded = ir.Binary("=", out, ir.Call(LOADED, (), out.ctype, span), out.ctype, span)
            expr = ir.Binary(",", expr, loaded, out.ctype, span)
    assert expr is not None
    return ir.ExprStmt(expr, span)
