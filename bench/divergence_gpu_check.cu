// GPU check of the divergence model behind KL301 (not part of the test suite; needs nvcc and a GPU).
//   nvcc -O3 -o /tmp/divcheck bench/divergence_gpu_check.cu && /tmp/divcheck
// 1. Which warps split on `threadIdx.y < k` for 2-D blocks (ballot per warp, measured on the GPU).
// 2. Reduction ladder timings: interleaved (`tid % (2*s) == 0`, KL301 warning), strided index
//    (`2*s*tid < blockDim.x`, info) and sequential addressing (`tid < s`, info).
// Measured on an NVIDIA H200 (nvcc -O3 -arch=sm_90), 2026-11-22:
//   block (16,16) threadIdx.y < 8: split warps: none
//   block (16,16) threadIdx.y < 7: split warps: 3
//   block (8,32) threadIdx.y < 8: split warps: none
//   reduce 67108864 floats, block 256: interleaved 0.622 ms, strided index 0.391 ms, sequential 0.300 ms
// (the same warps kernlint computes; the KL301 warning marks the kernel 2.1x slower than sequential).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void split_warps(int ylimit, int* split) {
    int lin = threadIdx.x + threadIdx.y * blockDim.x;
    unsigned b = __ballot_sync(0xffffffff, threadIdx.y < ylimit);
    if (lin % 32 == 0) split[lin / 32] = (b != 0u && b != 0xffffffffu);
}

__global__ void reduce_interleaved(const float* in, float* out) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce_strided_index(const float* in, float* out) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x) sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

__global__ void reduce_sequential(const float* in, float* out) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    sdata[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

static void check_split(int bx, int by, int ylimit) {
    int warps = bx * by / 32;
    int* d;
    int h[64];
    cudaMalloc(&d, warps * sizeof(int));
    split_warps<<<1, dim3(bx, by)>>>(ylimit, d);
    cudaMemcpy(h, d, warps * sizeof(int), cudaMemcpyDeviceToHost);
    printf("block (%d,%d) threadIdx.y < %d: split warps:", bx, by, ylimit);
    int n = 0;
    for (int w = 0; w < warps; ++w)
        if (h[w]) { printf(" %d", w); ++n; }
    printf("%s\n", n ? "" : " none");
    cudaFree(d);
}

template <typename K>
static float time_kernel(K kernel, const float* in, float* out, int blocks) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 5; ++i) kernel<<<blocks, 256>>>(in, out);
    cudaEventRecord(a);
    const int reps = 50;
    for (int i = 0; i < reps; ++i) kernel<<<blocks, 256>>>(in, out);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms / reps;
}

int main() {
    check_split(16, 16, 8);
    check_split(16, 16, 7);
    check_split(8, 32, 8);
    const int n = 1 << 26;
    const int blocks = n / 256;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, blocks * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    float t1 = time_kernel(reduce_interleaved, in, out, blocks);
    float t2 = time_kernel(reduce_strided_index, in, out, blocks);
    float t3 = time_kernel(reduce_sequential, in, out, blocks);
    printf("reduce %d floats, block 256: interleaved %.3f ms, strided index %.3f ms, sequential %.3f ms\n",
           n, t1, t2, t3);
    printf("status: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
