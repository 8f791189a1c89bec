"""Table reads at an unknown but bounded index (eval/bounded_index.py): which ranges an unknown integer
keeps, which reads are evaluated with stand-in addresses, and which stay gathers."""
from __future__ import annotations

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.engine.lint import LintOptions, analyse_kernel
from kernlint.eval import bounded_index as bi
from kernlint.eval import uniform_data
from kernlint.eval.events import MemoryAccess
from kernlint.eval.values import Val, const
from kernlint.frontend import parse_source


def evaluate(src: str, block: tuple[int, int, int] = (64, 1, 1)):
    tu = parse_source(src, "t.cu")
    assert tu.kernels, tu.problems
    return analyse_kernel(tu, tu.kernels[0], LintOptions(block=block), tuple(src.splitlines()))[0]


def sites(result, root: str, kind: str = "load") -> list[MemoryAccess]:
    return [e for e in result.events if isinstance(e, MemoryAccess) and e.root == root and e.kind == kind]


def unevaluated_lines(result) -> set[int]:
    return {s.key[0] for s in result.coverage if s.key[-1] == "access" and not s.evaluated}


def test_type_ranges() -> None:
    assert bi.type_bound(ir.CType("int", 1, signed=False)) == (0, 255)
    assert bi.type_bound(ir.CType("int", 1, signed=True)) == (-128, 127)
    assert bi.type_bound(ir.CType("int", 2, signed=False)) == (0, 65535)
    assert bi.type_bound(ir.CType("bool", 1)) == (0, 1)
    assert bi.type_bound(ir.CType("int", 4)) is None  # too wide to bound a window


def test_arithmetic_ranges() -> None:
    x = Val(None)  # unknown, no range
    byte = Val(None, bound=(0, 255))
    assert bi.arith("&", x, const(7)) == (0, 7)  # any x: only the bits of 7 survive
    assert bi.arith("&", const(0x0F), byte) == (0, 15)
    assert bi.arith("&", x, const(-8)) is None  # a negative mask keeps the sign bit
    assert bi.arith(">>", byte, const(4)) == (0, 15)
    assert bi.arith(">>", const(4), byte) is None  # shifting a constant by data
    assert bi.arith("%", byte, const(10)) == (0, 9)
    assert bi.arith("%", Val(None, bound=(-5, 5)), const(10)) is None  # C's % keeps the sign
    assert bi.arith("+", byte, const(16)) == (16, 271)
    assert bi.arith("-", const(300), byte) is None
    assert bi.arith("*", byte, const(2)) == (0, 510)
    assert bi.arith(">>", x, const(4)) is None  # an unbounded value stays unbounded
    lane = Val(np.arange(32, dtype=np.int64).reshape(1, 1, 32))
    assert bi.arith("&", x, lane) is None  # a mask that differs per lane is no constant


def test_converting_keeps_or_narrows_the_range() -> None:
    byte = Val(None, bound=(0, 255))
    assert bi.converted(byte, ir.CType("int", 4)) == (0, 255)
    assert bi.converted(byte, ir.CType("int", 1, signed=True)) == (-128, 127)  # wraps: only the type's range
    assert bi.converted(Val(None, bound=(0, 1 << 40)), ir.CType("int", 4)) is None


def test_shared_table_read_at_nibbles_is_evaluated_within_the_table() -> None:
    r = evaluate("""
    __global__ void k(const unsigned char* q, float* out) {
        __shared__ float table[16];
        if (threadIdx.x < 16) table[threadIdx.x] = threadIdx.x;
        __syncthreads();
        unsigned char c = q[threadIdx.x];
        out[threadIdx.x] = table[c >> 4] + table[c & 0x0F];
    }""")
    reads = sites(r, "table")
    assert len(reads) == 2
    stores = sites(r, "table", "store")
    base = int(stores[0].address[0, 0, 0])  # table[0], written by lane 0
    for e in reads:
        a = e.address[e.mask]
        assert a.min() >= base and a.max() <= base + 15 * 4  # inside table[0..15]
    assert 7 not in unevaluated_lines(r)


def test_value_read_from_the_table_is_never_sampled() -> None:
    # The stand-in address is not the element the lanes read: the value stays unknown (warp-uniform
    # here, but never sampled as a runtime value), so the access through it stays unevaluated.
    r = evaluate("""
    __global__ void k(const unsigned char* q, const float* src, float* out) {
        __shared__ int table[8];
        if (threadIdx.x < 8) table[threadIdx.x] = threadIdx.x * 64;
        __syncthreads();
        int off = table[q[blockIdx.x] & 7];
        out[threadIdx.x] = src[off + threadIdx.x];
    }""")
    assert not any(uniform_data.is_load_symbol(k) for k, _ in r.assumed)
    assert 7 in unevaluated_lines(r)
    assert 6 not in unevaluated_lines(r)


def test_global_table_within_one_sector_is_evaluated_and_both_reads_kept() -> None:
    r = evaluate("""
    __device__ float lut[8];
    __global__ void k(const unsigned char* q, float* out) {
        unsigned char c = q[threadIdx.x];
        float a = lut[c & 7];
        float b = lut[(c >> 4) & 7];
        out[threadIdx.x] = a + b;
    }""")
    reads = sites(r, "lut")
    assert len(reads) == 2  # two reads at different data: not one load reused
    for e in reads:
        a = e.address[e.mask]
        assert a.max() // 32 == a.min() // 32
    assert not {5, 6} & unevaluated_lines(r)


def test_windows_whose_verdict_depends_on_the_data_stay_unevaluated() -> None:
    r = evaluate("""
    __device__ float lut16[16];
    __global__ void k(const unsigned char* q, const int* codes, float* out) {
        __shared__ float big[64];
        __shared__ double wide[8];
        if (threadIdx.x < 64) big[threadIdx.x] = 0.f;
        if (threadIdx.x < 8) wide[threadIdx.x] = 0.0;
        __syncthreads();
        unsigned char c = q[threadIdx.x];
        float a = lut16[c & 15];
        float b = big[c & 63];
        double w = wide[c & 7];
        float d = big[codes[threadIdx.x]];
        big[c & 15] = a;
        out[threadIdx.x] = a + b + (float)w + d;
    }""")
    # line 10: a 64-byte global table spans two sectors (1 or 2 sectors against an ideal of 1, by
    # data); 11: 256 bytes of shared memory, two words per bank; 12: 8-byte elements; 13: an int
    # index, unbounded; 14: a write (which element it changes matters to later reads).
    assert {10, 11, 12, 13, 14} <= unevaluated_lines(r)


def test_uniform_index_reads_one_element_and_its_value_stays_warp_uniform() -> None:
    # `mode[blockIdx.x] & 3` is the same in every lane of a warp: every lane reads one element of
    # lim (a broadcast), and a branch on the value read cannot split a warp (evaluated, no KL305);
    # `q[tid] & 3` differs per lane: the value is per-lane data and the branch on it stays unknown.
    src = """
    __global__ void k(const unsigned char* mode, const unsigned char* q, const float* src, float* out) {
        __shared__ int lim[4];
        if (threadIdx.x < 4) lim[threadIdx.x] = threadIdx.x * 16;
        __syncthreads();
        int n = lim[mode[blockIdx.x] & 3];
        int m = lim[q[blockIdx.x * blockDim.x + threadIdx.x] & 3];
        float v = 0.f;
        if (n > 3) v = src[threadIdx.x];
        if (m > 3) v += src[threadIdx.x + 64];
        out[threadIdx.x] = v;
    }"""
    r = evaluate(src)
    (uni,) = [e for e in sites(r, "lim") if e.span.line == 6]
    a = uni.address[uni.mask]
    assert (a == a[0]).all()  # one element for the whole warp
    (per,) = [e for e in sites(r, "lim") if e.span.line == 7]
    assert len(set(per.address[per.mask].tolist())) > 1
    branches = {s.key[0]: s.evaluated for s in r.coverage if s.key[-1] == "branch"}
    assert branches[9] and not branches[10]
