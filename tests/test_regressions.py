"""Regressions from linting real third-party kernels: each case is a minimal kernel and the codes
kernlint must (and must not) report for it."""
from __future__ import annotations

import pytest

from kernlint.engine.lint import LintOptions, lint_source

CASES = [
    ("float4 store through operator= is a store", """
__global__ void k(float4* out, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(0, 0, 0, 0);
    out[r * C] = v;
}""", {"KL102"}, {"KL101"}),
    ("half store through operator= is a store", """
__global__ void k(__half* out, int C) { int r = blockIdx.x * blockDim.x + threadIdx.x; out[r * C] = __float2half(1.0f); }
""", {"KL102"}, {"KL101"}),
    ("#pragma unroll loops are evaluated", """
__global__ void k(float* out, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int i = 0; i < 4; i++) out[row * n + i] = 0.0f;
}""", {"KL102"}, set()),
    ("a data-dependent return keeps the other lanes", """
__global__ void k(const int* mask, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (mask[i] == 0) return;
    out[i * n] = 1.0f;
}""", {"KL102"}, set()),
    ("products of sampled sizes do not overflow to zero", """
__global__ void k(const float* in, float* out, int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T * C) out[i * 32] = in[i];
}""", {"KL102"}, set()),
    ("different parameters get different samples", """
__global__ void k(float* a, int Size, int t) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= Size - 1 - t) return;
    a[Size * (x + 1 + t) + t] = 0.0f;
}""", {"KL102"}, set()),
    ("template device helpers are inlined and reported at the call site", """
template <class T> __device__ T ld(const T* p, int i) { return p[i]; }
__global__ void k(const float* p, float* o) { o[threadIdx.x] = ld(p, threadIdx.x * 32); }
""", {"KL101"}, set()),
    ("template arguments from macros and explicit instantiations bind", """
#define UNIT 1
template <int STRIDE> __global__ void k(float* a) { a[threadIdx.x * STRIDE] = 0.0f; }
template <int S> __global__ void k2(float* a) { a[threadIdx.x * S] = 0.0f; }
template __global__ void k2<1>(float*);
void run(float* a) { k<UNIT><<<1, 256>>>(a); }
""", set(), {"KL102", "KL103"}),
    ("overloaded kernels keep their own launches", """
__global__ void k(float* a) { a[threadIdx.x] = 0.f; }
__global__ void k(double* a, int s) { a[threadIdx.x * s] = 0.0; }
void run(float* f, double* d) { k<<<1, 64>>>(f); k<<<1, 64>>>(d, 1); }
""", set(), {"KL102"}),
    ("a launch argument reassigned in a loop is not folded to its initial value", """
__global__ void k(float* a, int s) { a[threadIdx.x * s] = 0.0f; }
void run(float* a) { for (int s = 1; s <= 32; s *= 2) k<<<1, 256>>>(a, s); }
""", {"KL102"}, set()),
    ("divergence alone does not make a unit-stride access uncoalesced", """
__global__ void k(float* a, float* b) {
    if (threadIdx.x % 2 == 0) a[threadIdx.x] = 0.0f; else b[threadIdx.x] = 1.0f;
}""", set(), {"KL101", "KL102", "KL103"}),
    ("a template bound to a user struct has its layout", """
struct RGBA32 { unsigned char r, g, b, a; };
template <class P> __global__ void k(const P* in, unsigned char* out) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    out[p] = in[p * 4].r;
}
void go(const RGBA32* in, unsigned char* out) { k<RGBA32><<<10, 256>>>(in, out); }
""", {"KL101"}, set()),
    ("a near-broadcast over two rows is no worse than coalesced: quiet", """
__global__ void matmul(const float* A, const float* B, float* C, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
void go(const float* A, const float* B, float* C, int N) { matmul<<<dim3(N / 16, N / 16), dim3(16, 16)>>>(A, B, C, N, N); }
""", set(), {"KL101", "KL102", "KL103"}),
    ("eight strided lanes waste more than a line per request: flagged", """
__global__ void k(const float* a, float* out) {
    int lane = threadIdx.x % 32;
    if (lane < 8) out[threadIdx.x] = a[lane * 64 + (threadIdx.x / 32) * 4096];
}""", {"KL101"}, set()),
    ("a near-broadcast over four rows wastes less than a line per request: quiet", """
// kernlint: block=(8,32)
__global__ void k(const float* A, float* out, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += A[row * K + k];
    out[row * 8 + threadIdx.x] = s;
}""", set(), {"KL101"}),
    ("cooperative groups parse cleanly", """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float* a) {
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> t = cg::tiled_partition<32>(cta);
    a[threadIdx.x] = t.meta_group_size();
    cg::sync(cta);
}""", set(), {"KL903", "KL900"}),
    ("an impossible launch shape is ignored, not evaluated", """
__global__ void k(float* a) { a[threadIdx.x] = 0.f; }
void run(float* a) { k<<<1, dim3(1024, 1024, 64)>>>(a); }
""", set(), {"KL101", "KL102"}),
]


@pytest.mark.parametrize("title,src,must,must_not", CASES, ids=[c[0] for c in CASES])
def test_regression(title: str, src: str, must: set[str], must_not: set[str]) -> None:
    codes = {d.code for d in lint_source(src, "case.cu", LintOptions(resources=False)).diagnostics}
    assert must <= codes, f"{title}: expected {sorted(must)}, got {sorted(codes)}"
    assert not (must_not & codes), f"{title}: must not report {sorted(must_not & codes)}"


def test_struct_copies_are_one_access_per_field_unless_vector_aligned() -> None:
    src = """
struct Particle { float x, y, z, vx, vy, vz; };
struct __align__(8) P2 { float a, b; };
__global__ void copy_aos(const Particle* in, Particle* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
__global__ void copy_aligned(const P2* in, P2* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}"""
    diags = lint_source(src, "case.cu", LintOptions(resources=False)).diagnostics
    by_line = {(d.line, d.code): d for d in diags}
    assert by_line[(6, "KL101")].metrics["sectors"] == 24  # six 4-byte loads, lanes 24 bytes apart
    assert (6, "KL102") in by_line
    assert not any(d.line == 10 and d.code in ("KL101", "KL102") for d in diags)  # one 8-byte access each
