"""Inline PTX read from an asm statement's tokens (frontend/inline_asm.py): which cp.async spellings are copies."""
from __future__ import annotations

import pytest

from kernlint.frontend import inline_asm
from kernlint.frontend.inline_asm import CpAsync, parse_cp_async


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
    # a template that is a macro, not string literals: not read
    assert inline_asm.operand_counts(['asm', 'volatile', '(', 'CP_ASYNC', '::', ')']) is None
