"""Launches through the runtime API (cudaLaunchKernel, cudaLaunchCooperativeKernel, cudaLaunchKernelEx) read
like `<<<>>>` ones: the kernel, its template arguments and the shape the call gives (frontend/clang_launches.py)."""
from __future__ import annotations

from kernlint.frontend import parse_source

KERNELS = """
template <int N> __global__ void k(float* a) { a[threadIdx.x * N] = 0.f; }
__global__ void plain(float* a, int n) { a[threadIdx.x] = n; }
"""


def launches(host: str) -> list[tuple]:
    tu = parse_source(KERNELS + host, "api.cu")
    return [(l.kernel, l.template_args, l.grid, l.block, l.shared_bytes) for l in tu.launches]


def test_cuda_launch_kernel_forms_give_kernel_and_shape() -> None:
    got = launches("""
void run(float* a, int n, cudaStream_t s) {
    void* args[] = {(void*)&a, (void*)&n};
    cudaLaunchKernel((void*)plain, dim3(8), dim3(64, 2), args, 256, s);
    cudaLaunchKernel(reinterpret_cast<const void*>(&k<4>), 16, 128, args);
    cudaLaunchCooperativeKernel((void*)k<2>, dim3(4), dim3(32), args, 0, s);
}
""")
    assert got == [("plain", (), (8, 1, 1), (64, 2, 1), 256),
                   ("k", ("4",), (16, 1, 1), (128, 1, 1), 0),
                   ("k", ("2",), (4, 1, 1), (32, 1, 1), 0)]


def test_cuda_launch_kernel_ex_reads_the_config() -> None:
    got = launches("""
void run(float* a, int n, cudaStream_t s) {
    cudaLaunchConfig_t agg = {dim3(2), dim3(96), 512, s, nullptr, 0};
    cudaLaunchKernelEx(&agg, plain, a, n);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(64);
    cfg.blockDim = dim3(16, 16);
    cfg.dynamicSmemBytes = 1024;
    cudaLaunchKernelEx(&cfg, k<8>, a);
}
""")
    assert got == [("plain", (), (2, 1, 1), (96, 1, 1), 512),
                   ("k", ("8",), (64, 1, 1), (16, 16, 1), 1024)]


def test_a_config_member_assigned_twice_is_unknown_not_guessed() -> None:
    got = launches("""
void run(float* a, bool big, cudaStream_t s) {
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(128);
    if (big) cfg.blockDim = dim3(512);
    cudaLaunchKernelEx(&cfg, k<1>, a);
}
""")
    assert got == [("k", ("1",), None, None, None)]


def test_a_function_that_is_no_kernel_name_is_not_a_launch() -> None:
    got = launches("""
void* pick();
void run(float* a, cudaStream_t s) {
    void* args[] = {(void*)&a};
    cudaLaunchKernel(pick(), dim3(1), dim3(32), args, 0, s);
}
""")
    assert got == []
