"""Inline PTX read from an asm statement's tokens (frontend/inline_asm.py): which cp.async spellings are copies,
which ld/st spellings are one access per lane, and what the evaluator makes of them (eval/asm_memory.py)."""
from __future__ import annotations

import numpy as np
import pytest

from kernlint.engine.lint import LintOptions, analyse_kernel, lint_source
from kernlint.eval.events import MemoryAccess
from kernlint.frontend import inline_asm, parse_source
from kernlint.frontend.inline_asm import CpAsync, LdSt, Opcode, opcode, parse_cp_async, parse_ld_st


@pytest.mark.parametrize("template, expected", [
    ("cp.async.cg.shared.global [%0], [%1], 16;\n", CpAsync(0, 1, "16", None)),
    ("cp.async.ca.shared.global [%1], [%0], 4;", CpAsync(1, 0, "4", None)),
    ("cp.async.ca.shared.global [%0], [%1], 8;\n", CpAsync(0, 1, "8", None)),
    ("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n", CpAsync(0, 1, "16", None)),
    ("cp.async.ca.shared::cta.global.L2::64B [%0], [%1], %2, %3;", CpAsync(0, 1, "%2", "%3")),
    ("cp.async.cg.shared.global [%0], [%1], 16, %2;\n", CpAsync(0, 1, "16", "%2")),
    # .L2::cache_hint takes a cache-policy operand, last: not a src-size
    ("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n", CpAsync(0, 1, "16", None)),
    ("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n", CpAsync(0, 1, "16", "%2")),
    # the copy with the instructions that move no data around it
    ("cp.async.cg.shared.global [%0], [%1], 16;\ncp.async.commit_group;\n", CpAsync(0, 1, "16", None)),
    ("cp.async.ca.shared.global [ %0 ] , [ %1 ] , 16 ; // stage\n", CpAsync(0, 1, "16", None)),
])
def test_cp_async_spellings_are_read(template: str, expected: CpAsync) -> None:
    assert parse_cp_async(template) == expected


@pytest.mark.parametrize("template", [
    "cp.async.cg.shared.global [%0], [%1], 8;",          # .cg copies 16 bytes only
    "cp.async.ca.shared.global [%0], [%1], 32;",         # cp-size is 4, 8 or 16
    "cp.async.ca.shared.global [%0+16], [%1], 16;",      # an offset in the address: not read
    "cp.async.ca.shared.global [%[dst]], [%1], 16;",     # a named operand: not read
    "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16;",  # its cache-policy operand missing
    "cp.async.cg.shared.global.L2::64B.L2::128B [%0], [%1], 16;",  # two prefetch sizes
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];",
    "cp.async.commit_group;",                            # no copy
    "cp.async.cg.shared.global [%0], [%1], 16;\ncp.async.cg.shared.global [%2], [%3], 16;",  # two copies
    "{ .reg .pred p; setp.ne.b32 p, %2, 0; @p cp.async.cg.shared.global [%0], [%1], 16; }",  # predicated
    "ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];",
    "cp.async.ca.shared.global [%0], [%1], 16, p;",      # ignore-src: a predicate register
    "",
])
def test_other_templates_are_not_copies(template: str) -> None:
    assert parse_cp_async(template) is None


def test_memory_instruction_names_the_first_that_addresses_memory() -> None:
    assert inline_asm.memory_instruction("mov.u32 %0, %%laneid;") == ""
    assert inline_asm.memory_instruction("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n") \
        == "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    assert inline_asm.memory_instruction("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p st.global.u32 [%0], %1; }") \
        == "st.global.u32"


def test_operand_counts_reads_sections_from_tokens() -> None:
    toks = ['asm', 'volatile', '(', '"cp.async.ca.shared.global [%0], [%1], %2, %3;\\n"', '::', '"r"', '(', 'smem',
            ')', ',', '"l"', '(', 'g', ')', ',', '"n"', '(', '16', ')', ',', '"r"', '(', '0', ')', ':', '"memory"', ')']
    assert inline_asm.operand_counts(toks) == ("cp.async.ca.shared.global [%0], [%1], %2, %3;\n", 0, 4)
    # an output, then an input whose expression holds commas and brackets at depth > 0
    toks = ['asm', '(', '"ld %0, [%1];"', ':', '"=r"', '(', 'x', '[', 'i', ']', ')', ':', '"l"', '(', 'f', '(', 'a',
            ',', 'b', ')', ')', ')']
    assert inline_asm.operand_counts(toks) == ("ld %0, [%1];", 1, 1)
    # adjacent literals are one template; no operands at all
    assert inline_asm.operand_counts(['asm', 'volatile', '(', '"a;"', '"b;"', ')']) == ("a;b;", 0, 0)
    # a comment between the template's literals (the front end's tokens keep comments) is not part of it
    toks = ['asm', 'volatile', '(', '"ld.global.u32 %0, [%1];\\n"', '// expect: KL101', '"// done\\n"', ':', '"=r"',
            '(', 'v', ')', ':', '"l"', '(', 'p', ')', ')']
    assert inline_asm.operand_counts(toks) == ("ld.global.u32 %0, [%1];\n// done\n", 1, 1)
    # a template that is a macro, not string literals: not read
    assert inline_asm.operand_counts(['asm', 'volatile', '(', 'CP_ASYNC', '::', ')']) is None


def _op(kind: str, space: str, size: int, lanes: int = 1, hint: bool = False) -> Opcode:
    return Opcode(kind, space, size, lanes, hint)


@pytest.mark.parametrize("name, expected", [
    ("ld.global.nc.v4.u32", _op("load", "global", 16, 4)),
    ("ld.global.v2.f64", _op("load", "global", 16, 2)),
    ("ld.shared.v8.b16", _op("load", "shared", 16, 8)),
    ("ld.shared::cta.v4.u8", _op("load", "shared", 4, 4)),
    ("ld.global.b128", _op("load", "global", 16)),
    ("ld.shared.b32", _op("load", "shared", 4)),
    ("ld.global.L1::no_allocate.v4.b32", _op("load", "global", 16, 4)),
    ("ld.global.nc.L1::no_allocate.L2::256B.v4.s32", _op("load", "global", 16, 4)),
    ("ld.global.L1::evict_last.L2::cache_hint.v2.u32", _op("load", "global", 8, 2, True)),
    ("ld.volatile.global.u16", _op("load", "global", 2)),
    ("ld.relaxed.gpu.global.u64", _op("load", "global", 8)),
    ("ld.acquire.sys.global.b32", _op("load", "global", 4)),
    ("ld.global.cg.nc.f32", _op("load", "global", 4)),
    ("st.global.v4.f32", _op("store", "global", 16, 4)),
    ("st.global.cs.v2.f32", _op("store", "global", 8, 2)),
    ("st.release.gpu.global.u32", _op("store", "global", 4)),
    ("st.shared.v2.bf16", _op("store", "shared", 4, 2)),
    ("st.global.L1::no_allocate.s8", _op("store", "global", 1)),
])
def test_ld_st_opcodes_give_the_bytes_each_lane_moves(name: str, expected: Opcode) -> None:
    assert opcode(name) == expected


@pytest.mark.parametrize("name", [
    "ld.global.v8.f32",          # 32 bytes a lane (256-bit loads): not one access kernlint models
    "ld.global.v4.b64",          # 32 bytes
    "ld.global.v2.b128",         # a .b128 is no vector element
    "ld.global.v8.u8",           # .v8 takes 16-bit elements only
    "ld.global.u32.v4",          # the type last
    "ld.global.v4",              # no type
    "ld.global.v4.u32.u32",      # two types
    "ld.global.f8",              # no such type
    "ld.global.s128",            # 128 bits as .b128 only
    "ld.local.u32", "ld.const.u32", "ld.param.u32", "ld.u32",  # other or generic state spaces
    "ld.shared::cluster.u32",    # distributed shared memory
    "ld.relaxed.global.u32",     # a memory order without its scope
    "ld.acquire.gpu.global.cg.u32",  # a cache operator with a memory order
    "ld.volatile.global.nc.u32",  # .nc with .volatile
    "ld.shared.nc.u32",          # .nc is global only
    "ld.global.wb.u32",          # a store's cache operator
    "st.global.ca.u32",          # a load's cache operator
    "st.acquire.gpu.global.u32",  # acquire is for loads
    "st.global.L2::128B.u32",    # a prefetch size is for loads
    "ld.mmio.relaxed.sys.global.u32",
    "ldu.global.u32", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "red.global.add.f32", "atom.global.add.u32",
    "ld.global.nc.v4.u32.L2::256B",  # qualifiers out of order
])
def test_other_opcodes_are_not_read(name: str) -> None:
    assert opcode(name) is None


def _ldst(name: str, address: int, values: tuple[int, ...], offset: int = 0, guard: int | None = None,
          zero: bool = False) -> LdSt:
    op = opcode(name)
    assert op is not None
    return LdSt(name, op, address, offset, values, guard, zero)


@pytest.mark.parametrize("template, outputs, expected", [
    ("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];", 4, _ldst("ld.global.nc.v4.u32", 4, (0, 1, 2, 3))),
    ("ld.global.nc.v4.u32 { %0, %1, %2, %3 }, [ %4 ] ;\n", 4, _ldst("ld.global.nc.v4.u32", 4, (0, 1, 2, 3))),
    ("st.global.v4.f32 [%0], {%1, %2, %3, %4};", 0, _ldst("st.global.v4.f32", 0, (1, 2, 3, 4))),
    ("ld.shared.b32 %0, [%1+8];", 1, _ldst("ld.shared.b32", 1, (0,), 8)),
    ("ld.shared.b32 %0, [%1 + 0x10];", 1, _ldst("ld.shared.b32", 1, (0,), 16)),
    ("ld.shared.b32 %0, [%1+-4];", 1, _ldst("ld.shared.b32", 1, (0,), -4)),
    ("ld.shared.b32 %0, [%1+010];", 1, _ldst("ld.shared.b32", 1, (0,), 8)),  # (octal, as PTX reads it)
    ("ld.shared.b32 %0, [%1+0];", 1, _ldst("ld.shared.b32", 1, (0,), 0)),
    ("{ ld.global.u32 %0, [%1]; }", 1, _ldst("ld.global.u32", 1, (0,))),
    ("ld.global.L2::cache_hint.b32 %0, [%1], %2;", 1, _ldst("ld.global.L2::cache_hint.b32", 1, (0,))),
    ("st.global.u32 [%1], %0; // write back\n", 0, _ldst("st.global.u32", 1, (0,))),
    # the guard read exactly: setp.ne with @p (lane takes it iff the operand is not zero), setp.eq with @!p;
    # the opposite pairings: iff the operand is zero. `mov`s to the destinations give the other lanes a value.
    ("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p ld.global.v2.u32 {%0,%1}, [%3]; }", 2,
     _ldst("ld.global.v2.u32", 3, (0, 1), guard=2)),
    ("{\n .reg .pred q;\n setp.eq.u32 q, %4, 0;\n mov.b32 %0, 0;\n mov.b32 %1, %5;\n"
     " @!q ld.global.v4.u32 {%0,%1,%2,%3}, [%6];\n}\n", 4, _ldst("ld.global.v4.u32", 6, (0, 1, 2, 3), guard=4)),
    ("{ .reg .pred p; setp.eq.s32 p, %1, 0; @p ld.shared.b32 %0, [%2]; }", 1,
     _ldst("ld.shared.b32", 2, (0,), guard=1, zero=True)),
    ("{ .reg .pred p; setp.ne.b32 p, %1, 0; @!p ld.shared.b32 %0, [%2]; }", 1,
     _ldst("ld.shared.b32", 2, (0,), guard=1, zero=True)),
    ("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p st.global.u32 [%0], %1; }", 0,
     _ldst("st.global.u32", 0, (1,), guard=2)),
])
def test_ld_st_spellings_are_read(template: str, outputs: int, expected: LdSt) -> None:
    assert parse_ld_st(template, outputs) == (expected,)


def test_several_loads_at_one_address_operand_are_read_in_order() -> None:
    template = ("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%8];\n"
                "ld.global.cs.v4.u32 {%4,%5,%6,%7}, [%8+16];\n")
    assert parse_ld_st(template, 8) == (_ldst("ld.global.cs.v4.u32", 8, (0, 1, 2, 3)),
                                        _ldst("ld.global.cs.v4.u32", 8, (4, 5, 6, 7), 16))
    stores = "st.shared.u32 [%0], %1;\nst.shared.u32 [%0+128], %2;"
    assert parse_ld_st(stores, 0) == (_ldst("st.shared.u32", 0, (1,)), _ldst("st.shared.u32", 0, (2,), 128))


@pytest.mark.parametrize("template, outputs", [
    ("ld.global.v4.u32 {%0,%1,%2}, [%3];", 3),            # three values for a .v4
    ("ld.global.u32 {%0}, [%1];", 1),                     # braces around a scalar
    ("ld.global.v2.u32 {%0,%1}, [%2];", 1),               # a destination that is an input
    ("ld.global.u32 %0, [%1];", 2),                       # an output the load does not write
    ("ld.global.u32 %0, [%0];", 1),                       # the address an output
    ("st.global.u32 [%0], %1;", 1),                       # a store with an output
    ("ld.global.u32 %0, [%1+%2];", 1),                    # a register offset
    ("ld.global.u32 %0, [%1+09];", 1),                    # no PTX integer
    ("ld.global.u32 %0, [%1-4];", 1),                     # (kernlint reads [a+imm] only, imm signed)
    ("ld.global.u32 %0, [%[p]];", 1),                     # a named operand
    ("ld.global.u32 %0, [%1], %2;", 1),                   # a cache policy without .L2::cache_hint
    ("ld.global.L2::cache_hint.u32 %0, [%1];", 1),        # .L2::cache_hint without its policy
    ("ld.global.u32 %0, [%2];\nld.global.u32 %1, [%3];", 2),  # two loads at two address operands
    ("ld.global.u32 %0, [%2];\nst.global.u32 [%2+4], %1;", 1),  # a load and a store
    ("ld.global.u32 %0, [%1];\nld.global.u32 %0, [%1+4];", 1),  # one output written twice
    ("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p ld.global.u32 %0, [%3]; @p ld.global.u32 %1, [%3+4]; }", 2),
    ("ld.global.u32 %0, [%1];\nadd.u32 %0, %0, 1;", 1),  # a load and arithmetic
    ("@%2 ld.global.u32 %0, [%1];", 1),                   # a guard that is no predicate register
    ("{ .reg .pred p; setp.lt.u32 p, %2, %3; @p ld.global.u32 %0, [%1]; }", 1),  # a comparison of two operands
    ("{ .reg .pred p; setp.ne.b16 p, %2, 0; @p ld.global.u32 %0, [%1]; }", 1),  # 16 bits of the operand
    ("{ .reg .pred p; setp.ne.b32 p, %2, 1; @p ld.global.u32 %0, [%1]; }", 1),  # not a test against zero
    ("{ .reg .pred p, q; setp.ne.b32 p, %2, 0; @q ld.global.u32 %0, [%1]; }", 1),  # another predicate
    ("{ .reg .pred p; setp.ne.b32 p, %2, 0; mov.b32 %1, 0; @p st.global.u32 [%0], %1; }", 0),  # a store's mov
    ("{ .reg .pred p; setp.ne.b32 p, %2, 0; add.u32 %0, %0, 1; @p ld.global.u32 %0, [%1]; }", 1),
    ("{ .reg .pred p; setp.ne.b32 p, %3, 0; mov.b32 %1, 0; @p ld.global.u32 %0, [%2]; }", 2),  # mov elsewhere
    ("ld.global.v8.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8];", 8),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];", 4),
    ("cp.async.cg.shared.global [%0], [%1], 16;", 0),
    ("", 0),
])
def test_other_templates_are_not_plain_loads_or_stores(template: str, outputs: int) -> None:
    assert parse_ld_st(template, outputs) is None


def _evaluate(src: str, block: tuple[int, int, int] = (64, 1, 1)):
    tu = parse_source(src, "t.cu")
    assert tu.kernels, tu.problems
    (result,) = analyse_kernel(tu, tu.kernels[0], LintOptions(block=block), tuple(src.splitlines()))
    return result


def _accesses(result, line: int) -> list[MemoryAccess]:
    return [e for e in result.events if isinstance(e, MemoryAccess) and e.span.line == line]


def test_a_vector_load_is_the_access_its_cpp_spelling_makes() -> None:
    """`ld.global.nc.v4.u32 [%4+16]` and `*(const uint4 *)(p + 4)` on the same lanes: one 16-byte load each,
    at the same addresses (the immediate offset added in bytes, not scaled by the operand's type)."""
    src = """__global__ void k(const unsigned* in, unsigned* out) {
    const unsigned* p = in + threadIdx.x * 12;
    uint4 a, b;
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4+16];" : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w) : "l"(p));
    b = *(const uint4*)(p + 4);
    out[threadIdx.x] = a.x + b.x;
}
"""
    r = _evaluate(src)
    (asm,), (cpp,) = _accesses(r, 4), _accesses(r, 5)
    assert (asm.kind, asm.space, asm.width, asm.root) == (cpp.kind, cpp.space, cpp.width, cpp.root) == \
        ("load", "global", 16, "in")
    assert np.array_equal(asm.address, cpp.address) and np.array_equal(asm.mask, cpp.mask)
    assert list((asm.address[0, 0] - asm.address[0, 0, 0])[:3]) == [0, 48, 96]


def test_several_loads_of_one_template_are_each_an_access() -> None:
    """`[%8]` then `[%8+16]`: two 16-byte loads at one site, the second 16 bytes past the first on every lane;
    the address operand (a read of `ptrs[t]` here) is evaluated once: one pointer load, not two."""
    src = """__global__ void k(const uint4* const* ptrs, unsigned* out) {
    uint4 a, b;
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%8];\\n ld.global.v4.u32 {%4,%5,%6,%7}, [%8+16];"
                 : "=r"(a.x), "=r"(a.y), "=r"(a.z), "=r"(a.w), "=r"(b.x), "=r"(b.y), "=r"(b.z), "=r"(b.w)
                 : "l"(ptrs[0] + threadIdx.x * 2));
    out[threadIdx.x] = a.x + b.w;
}
"""
    r = _evaluate(src)
    pointer = [e for e in _accesses(r, 5) if e.width == 8]
    first, second = [e for e in _accesses(r, 3) if e.width == 16]
    assert len(pointer) == 1 and first.kind == second.kind == "load"
    assert np.array_equal(second.address - first.address, np.full_like(first.address, 16))


@pytest.mark.parametrize("setp, pred, loading", [
    ("setp.ne.b32", "@p", "low"), ("setp.eq.b32", "@!p", "low"), ("setp.eq.b32", "@p", "high"),
    ("setp.ne.b32", "@!p", "high"),
])
def test_a_guarded_load_is_made_by_the_lanes_its_guard_reads(setp: str, pred: str, loading: str) -> None:
    """The guard operand is t % 32 < 16: the lanes that load are the low half of each warp exactly when the
    predicate is 'operand != 0' (setp.ne with @p, setp.eq with @!p), the high half otherwise."""
    src = f"""__global__ void k(const unsigned* in, unsigned* out) {{
    unsigned v;
    asm volatile("{{ .reg .pred p; {setp} p, %2, 0; mov.b32 %0, 0; {pred} ld.global.u32 %0, [%1]; }}"
                 : "=r"(v) : "l"(in + threadIdx.x), "r"((int)(threadIdx.x % 32 < 16)));
    out[threadIdx.x] = v;
}}
"""
    (e,) = _accesses(_evaluate(src), 3)
    low = np.arange(32) < 16
    assert list(e.mask[0, 0]) == list(low if loading == "low" else ~low)


def test_what_is_not_read_is_not_evaluated_and_says_why() -> None:
    """A guard that does not fold, an address into the other state space: each a KL904 naming the
    instruction; a load's output used as an index is a value loaded from memory (the index access is
    not evaluated, 'loaded'), the output of an asm kernlint does not run is unknown, never its old value."""
    src = """__global__ void k(const unsigned* in, const float* table, float* out, const int* flags) {
    __shared__ float tile[64];
    unsigned v = 0, w = 0, lane = 0;
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0; @p ld.global.u32 %0, [%1]; }"
                 : "+r"(v) : "l"(in + threadIdx.x), "r"(flags[threadIdx.x]));
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "l"(in + threadIdx.x));
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = table[v] + table[w] + table[lane] + tile[threadIdx.x];
}
"""
    r = lint_source(src, "k.cu", LintOptions(block=(64, 1, 1), resources=False))
    (d,) = [d for d in r.diagnostics if d.code == "KL904"]
    text = " ".join(d.notes)
    assert "`ld.global.u32` under a predicate that does not fold" in text
    assert "`ld.shared.u32` at an address kernlint follows into global memory" in text
    assert "line 8:" in text and "loaded data" in text and "an inline-asm output" in text, text


def test_a_finding_on_an_inline_asm_access_is_not_run_on_a_gpu() -> None:
    """--confirm cannot wrap an asm statement's access in its source rewrite: such a finding is not-run
    'inline-asm', whatever the run measured, with its reason."""
    from kernlint import confirm
    from kernlint.confirm.verdict import _verdict
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "fixtures" / "KL101_asm_ldst.cu"
    text = path.read_text()
    result = lint_source(text, str(path), LintOptions(resources=False))
    plan = confirm.plan_file(result, text, LintOptions(resources=False))
    for run in plan.runs:  # as if the GPU ran every kernel
        run.status, run.measured, run.traced_spans = "ok", object(), set()
    found = [d for d in result.diagnostics if d.code == "KL101"]
    assert len(found) == 3
    for d in found:
        out = _verdict(d, plan)
        assert out.confirmation == "not-run" and out.metrics["confirm_not_run"] == "inline-asm", d.line
        assert "does not rewrite asm statements" in out.notes[-1]


def test_the_instrumentation_never_rewrites_an_asm_statement() -> None:
    """Even a template without a `;` (which the statement check would not catch) is left as it is."""
    from kernlint.confirm.instrument import _check_site_text

    for text in ('asm volatile("ld.global.u32 %0, [%1]" : "=r"(v) : "l"(p))', '__asm__("st.global.u32 [%0], %1" :: "l"(p), "r"(v))'):
        assert "asm statement" in (_check_site_text("access", text) or "")
    assert _check_site_text("access", "asmtable[i]") is None  # (a name that starts with asm is no asm)


def test_the_kernel_level_fixture_names_what_it_did_not_evaluate() -> None:
    """fixtures/KL904_asm_ldst.cu: each kernel's KL904 says why, naming the instruction (or, for the index
    read from a loaded value, that the address depends on loaded data), never a guess."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "fixtures" / "KL904_asm_ldst.cu"
    result = lint_source(path.read_text(), str(path), LintOptions(resources=False))
    why = {d.kernel: d.message for d in result.diagnostics if d.code == "KL904"}
    assert "inline PTX `ld.global.u32`" in why["guard_compares"]
    assert "inline PTX `ldmatrix.sync.aligned.m8n8.x4.shared.b16`" in why["matrix_load"]
    assert "inline PTX `ld.global.v8.f32`" in why["wide_vector"]
    assert "`ld.global.f32` at an address kernlint follows into shared memory" in why["wrong_space"]
    assert "1 of 3 memory accesses" in why["loaded_index"] and "loaded data" in why["loaded_index"]
    assert not [d for d in result.diagnostics if d.code != "KL904"]
