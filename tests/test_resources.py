"""Per-kernel resources from ptxas: exact when nvcc is present, a note (never an exception) when not."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernlint.ir import demangle
from kernlint.frontend import resources
from kernlint.ir.demangle import demangle_minimal, split_demangled
from kernlint.frontend.resources import KernelResources, estimate_registers, exact_resources, parse_ptxas_output

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

# 96 values loaded up front and all read again at the end: far more live values than a normal kernel.
REGISTER_HEAVY = """
__global__ void heavy(const float* __restrict__ in, float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[96];
#pragma unroll
    for (int i = 0; i < 96; ++i) v[i] = in[t + i * 4096];
#pragma unroll
    for (int i = 0; i < 96; ++i) v[i] = fmaf(v[i], v[(i + 1) % 96], v[(i + 5) % 96]);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 96; ++i) s += v[i] * (float)(i + 1);
    out[t] = s;
}

// The same work squeezed under __launch_bounds__(1024, 2): 65536 / 2048 = 32 registers at most.
__global__ void __launch_bounds__(1024, 2) squeezed(const float* __restrict__ in, float* __restrict__ out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float v[96];
#pragma unroll
    for (int i = 0; i < 96; ++i) v[i] = in[t + i * 4096];
#pragma unroll
    for (int i = 0; i < 96; ++i) v[i] = fmaf(v[i], v[(i + 1) % 96], v[(i + 5) % 96]);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 96; ++i) s += v[i] * (float)(i + 1);
    out[t] = s;
}

template <typename T, int N>
__global__ void tiled(const T* in, T* out) {
    __shared__ T tile[N];
    tile[threadIdx.x % N] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % N];
}
template __global__ void tiled<float, 256>(const float*, float*);
template __global__ void tiled<double, 1024>(const double*, double*);

namespace ns { extern "C" __global__ void plain_c(int* p) { p[threadIdx.x] = 1; } }
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own cache directory, so no result leaks between tests or from ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    return tmp_path / "cache" / "kernlint"


# --- with nvcc -----------------------------------------------------------------------------------

@needs_nvcc
def test_register_heavy_kernel_gets_exact_registers(tmp_path: Path) -> None:
    kernels, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert note is None
    (heavy,) = kernels["heavy"]
    assert heavy.source == "exact"
    assert heavy.registers > 64  # ptxas interleaves loads and math, but cannot go far below 96
    assert heavy.arch == "sm_80"
    assert not heavy.spills


@needs_nvcc
def test_launch_bounds_squeeze_is_reported_as_spills(tmp_path: Path) -> None:
    kernels, _ = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    (squeezed,) = kernels["squeezed"]
    assert squeezed.registers <= 32
    assert squeezed.spills and squeezed.spill_stores > 0 and squeezed.spill_loads > 0
    assert squeezed.stack_bytes > 0  # spilled values live in the stack frame


@needs_nvcc
def test_each_template_instantiation_is_an_entry(tmp_path: Path) -> None:
    kernels, _ = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    by_args = {k.template_args: k for k in kernels["tiled"]}
    assert set(by_args) == {"float, 256", "double, 1024"}
    assert by_args["float, 256"].static_shared_bytes == 1024
    assert by_args["double, 1024"].static_shared_bytes == 8192
    assert by_args["float, 256"].barriers == 1
    assert by_args["double, 1024"].display_name == "tiled<double, 1024>"
    assert kernels["plain_c"][0].mangled == "plain_c"


@needs_nvcc
def test_second_run_is_served_from_the_cache(tmp_path: Path, private_cache: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert any(private_cache.glob("resources-*.json"))

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("nvcc ran although the result was cached")

    monkeypatch.setattr(resources, "_run", no_compile)
    monkeypatch.setattr(demangle, "_demangle_tool", no_compile)
    second, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert note is None and second == first


@needs_nvcc
def test_cache_key_includes_arch_and_defines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = "#ifndef N\n#define N 4\n#endif\n__global__ void k(float* p) { __shared__ float s[N]; s[threadIdx.x % N] = 1; __syncthreads(); p[threadIdx.x] = s[0]; }\n"
    small, _ = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    big, _ = exact_resources(src, str(tmp_path / "k.cu"), "sm_80", defines=("N=1024",))
    assert small["k"][0].static_shared_bytes == 16
    assert big["k"][0].static_shared_bytes == 4096


@needs_nvcc
def test_unwritable_cache_does_not_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    kernels, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert note is None and kernels["heavy"][0].registers > 64


@needs_nvcc
def test_local_includes_resolve_next_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "tile.h").write_text("#define TILE 64\n")
    src = '#include "tile.h"\n__global__ void k(float* p) { __shared__ float s[TILE]; s[threadIdx.x % TILE] = 1; __syncthreads(); p[threadIdx.x] = s[1]; }\n'
    kernels, note = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    assert note is None and kernels["k"][0].static_shared_bytes == 256


@needs_nvcc
def test_missing_header_is_compiled_as_an_empty_stub(tmp_path: Path) -> None:
    src = '#include "not_there.cuh"\n#include <also/not_there.h>\n__global__ void k(float* p) { p[threadIdx.x] = 1; }\n'
    kernels, note = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    assert note is None and kernels["k"][0].source == "exact"


@needs_nvcc
def test_missing_header_whose_names_are_used_gives_a_note_not_an_exception(tmp_path: Path) -> None:
    src = '#include "not_there.cuh"\n__global__ void k(float* p) { p[threadIdx.x] = TILE; }\n'
    kernels, note = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    assert kernels == {}
    assert note is not None and "not_there.cuh" in note and "estimated" in note and "TILE" in note
    assert "kernlint-nvcc-" not in note  # the user's path, not our temporary copy


@needs_nvcc
def test_relative_include_dirs_work_from_the_temporary_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.h").write_text("#define TILE 64\n")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    src = '#include "tile.h"\n__global__ void k(float* p) { __shared__ float s[TILE]; s[threadIdx.x % TILE] = 1; __syncthreads(); p[threadIdx.x] = s[1]; }\n'
    kernels, note = exact_resources(src, "src/k.cu", "sm_80", ("inc",))
    assert note is None and kernels["k"][0].static_shared_bytes == 256


@needs_nvcc
def test_timeout_gives_a_note(tmp_path: Path) -> None:
    kernels, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "slow.cu"), "sm_80", timeout=0.01)
    assert kernels == {}
    assert note is not None and "timed out" in note


# --- without nvcc --------------------------------------------------------------------------------

def test_without_nvcc_on_path_there_is_no_data_and_a_note(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a directory with no nvcc in it
    kernels, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert kernels == {}
    assert note is not None and "nvcc not found" in note and "estimated" in note


def test_nvcc_that_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    kernels, note = exact_resources(REGISTER_HEAVY, str(tmp_path / "heavy.cu"), "sm_80")
    assert kernels == {} and note is not None and "--version failed" in note


# --- parsing and demangling (no compiler needed) --------------------------------------------------

PTXAS_OUTPUT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z6helperi
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z2tkIdLi64EEvPKT_PS0_' for 'sm_80'
ptxas info    : Function properties for _Z2tkIdLi64EEvPKT_PS0_
    512 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 512 bytes cumulative stack size, 512 bytes smem, 368 bytes cmem[0]
ptxas info    : Compile time = 6.742 ms
ptxas info    : Compiling entry function 'old_style' for 'sm_75'
ptxas info    : Function properties for old_style
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 352 bytes cmem[0], 4 bytes cmem[2]
"""


def test_parse_ptxas_output() -> None:
    first, second = parse_ptxas_output(PTXAS_OUTPUT)
    assert first == {
        "mangled": "_Z2tkIdLi64EEvPKT_PS0_", "arch": "sm_80", "registers": 32, "barriers": 1,
        "static_shared_bytes": 512, "constant_bytes": 368, "stack_bytes": 512,
        "spill_stores": 8, "spill_loads": 12,
    }
    assert (second["mangled"], second["registers"], second["constant_bytes"],
            second["static_shared_bytes"]) == ("old_style", 10, 356, 0)


@pytest.mark.parametrize("mangled, expected", [
    ("_Z2tkIdLi64EEvPKT_PS0_", ("tk", "tk", "double, 64")),
    ("_ZN2ns5plainEPi", ("plain", "ns::plain", "")),
    ("_ZN12_GLOBAL__N_16kernelEv", ("kernel", "(anonymous namespace)::kernel", "")),
    ("_Z6reduceILj256ELb1EEvPfS0_", ("reduce", "reduce", "256u, true")),
    ("_ZN4cuda3foo3barIN2ns4PairIfiEELi3EEEvv", ("bar", "cuda::foo::bar", "ns::Pair<float, int>, 3")),
    ("_Z4gemmIfLin4EEvv", ("gemm", "gemm", "float, -4")),
    ("cfun", ("cfun", "cfun", "")),
])
def test_minimal_demangler(mangled: str, expected: tuple[str, str, str]) -> None:
    assert demangle_minimal(mangled) == expected


def test_minimal_demangler_gives_up_cleanly() -> None:
    assert demangle_minimal("_ZZ3fooE3bar") is None  # local names: outside the subset


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt not on PATH")
@pytest.mark.parametrize("mangled", [
    "_Z2tkIdLi64EEvPKT_PS0_", "_ZN2ns5plainEPi", "_Z6reduceILj256ELb1EEvPfS0_",
    "_ZN4cuda3foo3barIN2ns4PairIfiEELi3EEEvv",
])
def test_minimal_demangler_agrees_with_cxxfilt(mangled: str) -> None:
    text = subprocess.run(["c++filt", mangled], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert split_demangled(text) == demangle_minimal(mangled)


def test_split_demangled() -> None:
    assert split_demangled("void ns::k<float, std::pair<int, int> >(float const*, int)") == (
        "k", "ns::k", "float, std::pair<int, int>")
    assert split_demangled("(anonymous namespace)::k(int*)") == (
        "k", "(anonymous namespace)::k", "")
    assert split_demangled("plain") == ("plain", "plain", "")


# --- the estimate ----------------------------------------------------------------------------------

def test_estimate_registers() -> None:
    assert estimate_registers(0, 0, 0) == resources.BASE_REGISTERS
    assert estimate_registers(20, 8, 16) == resources.BASE_REGISTERS + 44
    assert estimate_registers(400, 0, 0) == 255
    with pytest.raises(ValueError):
        estimate_registers(-1, 0, 0)


def test_kernel_resources_is_frozen() -> None:
    k = KernelResources("k", 32, 0, 0, 0, 0, "estimated")
    with pytest.raises(AttributeError):
        k.registers = 40  # type: ignore[misc]
    assert k.display_name == "k" and not k.spills


@needs_nvcc
def test_host_code_nvcc_rejects_does_not_cost_the_exact_registers(tmp_path: Path) -> None:
    # `cudaThreadSynchronize` is gone from recent toolkits and `Handle` comes from a missing
    # header: host code only. The kernel is compiled without it.
    src = ('#include "vendor_api.h"\n#include <cstdio>\n'
           "__global__ void k(float* p) { p[threadIdx.x] = 1; }\n"
           "void host(float* p) { Handle h = open_handle(); k<<<1, 32>>>(p); cudaThreadSynchronize(); }\n")
    kernels, note = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    assert note is None and kernels["k"][0].source == "exact"


@needs_nvcc
def test_dynamic_parallelism_compiles_as_relocatable_code(tmp_path: Path) -> None:
    src = ("__global__ void child(float* p) { p[threadIdx.x] = 1; }\n"
           "__global__ void parent(float* p) { if (threadIdx.x == 0) child<<<1, 32>>>(p); }\n")
    kernels, note = exact_resources(src, str(tmp_path / "k.cu"), "sm_80")
    assert note is None and set(kernels) == {"child", "parent"}
