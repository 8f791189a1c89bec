"""A ~300-line CUDA file for the server latency bench: twelve kernels (transposes, stencils, reductions,
divergent branches) and the host code that allocates, launches and checks them. Each kernel's shape
differs (tile, stride, block), so the analysis is not one kernel repeated; the launch shapes come from
the host code. `source(edit)` puts `edit` (a float) into one line of the fifth kernel, so every edit is
new text (no result-cache hit)."""
from __future__ import annotations

TRANSPOSE = """\
// kernlint: block=({tile},{rows})
__global__ void transpose_{n}(float* out, const float* in, int w, int h) {{
    __shared__ float tile[{tile}][{tile}{pad}];
    int x = blockIdx.x * {tile} + threadIdx.x;
    int y = blockIdx.y * {tile} + threadIdx.y;
    for (int j = 0; j < {tile}; j += {rows})
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * {tile} + threadIdx.x;
    y = blockIdx.x * {tile} + threadIdx.y;
    for (int j = 0; j < {tile}; j += {rows})
        out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}}

"""
STENCIL = """\
// kernlint: block=({bx},1,1)
__global__ void stencil_{n}(const float* in, float* out, int n, float c0, float c1) {{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * {stride};
    if (i < 1 || i >= n - 1)
        return;
    float scale = {scale}f;
    float left = in[i - 1];
    float mid = in[i];
    float right = in[i + 1];
    float v = c0 * mid + c1 * (left + right);
    for (int k = 0; k < 4; ++k)
        v = v * scale + c0;
    out[i] = v;
}}

"""
REDUCE = """\
// kernlint: block=({bx},1,1)
__global__ void reduce_{n}(const float* in, float* out, int n) {{
    __shared__ float s[{bx}];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[tid] = v;
    __syncthreads();
    for (int step = 1; step < blockDim.x; step *= 2) {{
        if (tid % (2 * step) == 0)
            s[tid] += s[tid + step];
        __syncthreads();
    }}
    if (tid == 0) out[blockIdx.x] = s[0];
}}

"""
BRANCHY = """\
// kernlint: block=({bx},1,1)
__global__ void branchy_{n}(const float* a, float* b, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i];
    if (threadIdx.x % {mod} == 0) {{
        for (int k = 0; k < 16; ++k)
            x = x * 1.5f + 0.25f;
    }} else {{
        x = x - 1.0f;
    }}
    b[i] = x;
}}

"""

HOST = """\
#include <cstdio>
#include <cstdlib>

static void check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) {
        fprintf(stderr, "%s: %s\\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

static float* device_buffer(size_t count, float value) {
    float* host = (float*)malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i)
        host[i] = value + (float)(i % 17);
    float* dev = nullptr;
    check(cudaMalloc(&dev, count * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(dev, host, count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    free(host);
    return dev;
}

static double checksum(const float* dev, size_t count) {
    float* host = (float*)malloc(count * sizeof(float));
    check(cudaMemcpy(host, dev, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy back");
    double sum = 0.0;
    for (size_t i = 0; i < count; ++i)
        sum += host[i];
    free(host);
    return sum;
}

static void run_transposes(int w, int h) {
    float* in = device_buffer((size_t)w * h, 1.0f);
    float* out = device_buffer((size_t)w * h, 0.0f);
    transpose_0<<<dim3(w / 32, h / 32), dim3(32, 8)>>>(out, in, w, h);
    transpose_1<<<dim3(w / 16, h / 16), dim3(16, 16)>>>(out, in, w, h);
    transpose_2<<<dim3(w / 32, h / 32), dim3(32, 32)>>>(out, in, w, h);
    check(cudaDeviceSynchronize(), "transposes");
    printf("transposes: %f\\n", checksum(out, (size_t)w * h));
    cudaFree(in);
    cudaFree(out);
}

static void run_stencils(int n) {
    float* in = device_buffer(n, 2.0f);
    float* out = device_buffer(n, 0.0f);
    stencil_3<<<(n + 255) / 256, 256>>>(in, out, n, 0.5f, 0.25f);
    stencil_4<<<(n / 2 + 127) / 128, 128>>>(in, out, n, 0.5f, 0.25f);
    stencil_5<<<(n / 4 + 255) / 256, 256>>>(in, out, n, 0.5f, 0.25f);
    check(cudaDeviceSynchronize(), "stencils");
    printf("stencils: %f\\n", checksum(out, n));
    cudaFree(in);
    cudaFree(out);
}

static void run_reductions(int n) {
    float* in = device_buffer(n, 1.0f);
    float* out = device_buffer(n / 128, 0.0f);
    reduce_6<<<n / 512, 256>>>(in, out, n);
    reduce_7<<<n / 256, 128>>>(in, out, n);
    reduce_8<<<n / 1024, 512>>>(in, out, n);
    check(cudaDeviceSynchronize(), "reductions");
    printf("reductions: %f\\n", checksum(out, n / 1024));
    cudaFree(in);
    cudaFree(out);
}

static void run_branches(int n) {
    float* a = device_buffer(n, 3.0f);
    float* b = device_buffer(n, 0.0f);
    branchy_9<<<(n + 255) / 256, 256>>>(a, b, n);
    branchy_10<<<(n + 127) / 128, 128>>>(a, b, n);
    branchy_11<<<(n + 255) / 256, 256>>>(a, b, n);
    check(cudaDeviceSynchronize(), "branches");
    printf("branches: %f\\n", checksum(b, n));
    cudaFree(a);
    cudaFree(b);
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : (1 << 20);
    int w = 2048, h = 2048;
    run_transposes(w, h);
    run_stencils(n);
    run_reductions(n);
    run_branches(n);
    return 0;
}
"""


def source(edit: float = 0.5) -> str:
    parts = []
    n = 0
    for tile, rows, pad in ((32, 8, ""), (16, 16, ""), (32, 32, " + 1")):
        parts.append(TRANSPOSE.format(n=n, tile=tile, rows=rows, pad=pad))
        n += 1
    for bx, stride in ((256, 1), (128, 2), (256, 4)):
        parts.append(STENCIL.format(n=n, bx=bx, stride=stride, scale=edit if n == 4 else 0.5))
        n += 1
    for bx in (256, 128, 512):
        parts.append(REDUCE.format(n=n, bx=bx))
        n += 1
    for bx, mod in ((256, 2), (128, 4), (256, 32)):
        parts.append(BRANCHY.format(n=n, bx=bx, mod=mod))
        n += 1
    return "".join(parts) + HOST
