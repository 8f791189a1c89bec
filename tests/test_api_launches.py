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


def test_launches_spelled_only_in_a_macro_are_found(tmp_path) -> None:
    """A host function whose own text spells no launch still launches through a macro: of the main file, of a
    header it includes, or of the command line; and through a macro around a runtime-API launch."""
    (tmp_path / "launch.h").write_text("#define GO(kern, a) kern<<<dim3(2), dim3(64)>>>(a)\n"
                                       "#define API(kern, args) cudaLaunchKernel((void*)kern, dim3(4), dim3(96), args)\n")
    src = KERNELS + """
#include "launch.h"
#define HERE(a) plain<<<1, 32>>>(a, 3)
void by_header(float* a) { GO(k<2>, a); }
void by_api_macro(float* a, void** args) { API(plain, args); }
void by_main_define(float* a) { HERE(a); }
void by_command_line(float* a) { CLI(a); }
"""
    path = tmp_path / "m.cu"
    path.write_text(src)
    tu = parse_source(src, str(path), defines=["CLI(a)=k<3><<<5, 128>>>(a)"])
    got = sorted((l.kernel, l.template_args, l.block) for l in tu.launches)
    assert got == [("k", ("2",), (64, 1, 1)), ("k", ("3",), (128, 1, 1)),
                   ("plain", (), (32, 1, 1)), ("plain", (), (96, 1, 1))]
