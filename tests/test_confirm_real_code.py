"""`--confirm` on code as projects write it: device-code extraction, sizes, not-run reasons, Nsight
Compute tables. CPU only; NVRTC (CuPy's binding, no driver needed) compiles where it is importable."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernlint import confirm
from kernlint.frontend import device_source as ds
from kernlint.confirm import instrument as ins
from kernlint.confirm import plan as confirm_plan
from kernlint.confirm.ncu import (
    access_counters,
    instruction_kind,
    parse_source_tables,
    sass_opcode,
)
from kernlint.engine.lint import LintOptions, lint_with_suppressions

OPTIONS = LintOptions(resources=False)

HEADER = """#pragma once
#include <cublas_v2.h>
#include <vector>
cublasHandle_t cublas_handle;
#define cublasCheck(s) cublasCheck_((s), __FILE__, __LINE__)
void cublasCheck_(int s, const char* f, int l) { if (s) { printf("%s %d", f, l); exit(1); } }
template<class T>
[[nodiscard]] cudaError_t cudaMallocConditionallyManaged(T** out, size_t bytes, const char* file, int line) {
    cudaError_t err = cudaMalloc((void**)out, bytes);
    if (err == cudaErrorMemoryAllocation) { cudaGetLastError(); return cudaMallocManaged((void**)out, bytes); }
    return err;
}
void setup_handle() { cublasCheck(cublasCreate(&cublas_handle)); }
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif
#define WARP_REDUCE(v) warp_sum(v)
__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
__device__ inline float unused_helper(float v) { return host_only_global * v; }
template<class ElementType>
struct alignas(16) Packed128 {
    ElementType payload[16 / sizeof(ElementType)];
    __device__ ElementType& operator[](int i) { return payload[i]; }
};
typedef Packed128<floatX> x128;
"""

MAIN = """#include <cstdio>
#include "common.h"
#include <helpers.h>
__global__ void k(floatX* out, const floatX* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    x128 v;
    v[0] = in[i];
    float s = WARP_REDUCE((float)v[0]);
    if (i < n) out[i] = twice(s);
}
int main() {
    floatX* d;
    cudaCheck(cudaMallocConditionallyManaged(&d, 4, __FILE__, __LINE__));
    k<<<1, 32>>>(d, d, 32);
    setup_handle();
    return 0;
}
"""


def _project(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "common.h").write_text(HEADER)
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "helpers.h").write_text("#include <string>\ninline int host_len(const char* s) { return strlen(s); }\n"
                                   "__device__ inline float twice(float v) { return 2 * v; }\n")
    main = tmp_path / "main.cu"
    main.write_text(MAIN)
    return main, inc


def _device_source(main: Path, inc: Path) -> str:
    text = main.read_text()
    dev, _ = ds.device_only(text, include_dirs=(str(inc),))
    return ds.inline_user_headers(dev, str(main.parent), (str(inc),), str(main))


def test_only_the_device_code_the_kernel_names_reaches_the_gpu_compiler(tmp_path: Path) -> None:
    main, inc = _project(tmp_path)
    code = _device_source(main, inc)
    # host code of the header goes: the [[nodiscard]] template, the cuBLAS handle and what uses it
    for gone in ("cudaMallocConditionallyManaged(T**", "cublas_handle;", "void cublasCheck_", "setup_handle",
                 "unused_helper", "host_len", "int main"):
        assert gone not in code, gone
    # what the kernel names stays, through typedefs, templates, macros and <...> includes from -I
    for kept in ("typedef float floatX;", "struct alignas(16) Packed128", "typedef Packed128<floatX> x128;",
                 "__device__ inline float warp_sum", "__device__ inline float twice"):
        assert kept in code, kept
    # the #if / #else / #endif around the typedefs survive even where code around them is removed
    assert code.count("#if defined(ENABLE_BF16)") == 1 and "#endif" in code


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy (for its NVRTC binding) not installed")
def test_extracted_device_code_compiles_with_nvrtc(tmp_path: Path) -> None:
    from kernlint.confirm.cupy_probe import nvrtc_compile

    main, inc = _project(tmp_path)
    try:
        ok, log = nvrtc_compile(_device_source(main, inc), ("-std=c++17",), ["k"])
    except Exception as exc:  # noqa: BLE001 (no libnvrtc on this machine)
        pytest.skip(f"NVRTC not loadable: {exc}")
    assert ok, log


def test_template_function_headers_are_not_classes() -> None:
    text = ("template <class T>\ninline bool host_value(const char* s, T* v) { *v = (T)atoi(s); return true; }\n"
            "template <typename T> __device__ T dev_twice(T v) { return 2 * v; }\n"
            "__global__ void k(float* a) { a[threadIdx.x] = dev_twice(a[threadIdx.x]); }\n")
    out, _ = ds.device_only(text)
    assert "host_value" not in out and "dev_twice(T v)" in out


def test_a_blanked_declaration_keeps_its_conditional_directives() -> None:
    text = ("#ifdef FEATURE\nvoid host_a() { }\n#define LONG_MACRO(x) \\\n    ((x) + 1)\n#endif\n"
            "MACRO_WITHOUT_SEMICOLON(foo)\n#if 1\n#endif\n__global__ void k(int* a) { a[0] = 1; }\n")
    out, _ = ds.device_only(text)
    assert out.count("#endif") == 2 and out.count("#ifdef FEATURE") == 1 and "__global__ void k" in out


def _plan_text(tmp_path: Path, name: str, text: str, options: LintOptions = OPTIONS) -> confirm.FilePlan:
    path = tmp_path / name
    path.write_text(text)
    result = lint_with_suppressions(text, str(path), options)
    return confirm.plan_file(result, text, options)


def test_texture_references_are_one_clear_not_run_reason(tmp_path: Path) -> None:
    text = ("texture<float, 1, cudaReadModeElementType> t_img;\n"
            "__global__ void with_tex(float* out, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) out[i * 4] = tex1Dfetch(t_img, i);\n}\n"
            "__global__ void plain(float* out) { out[threadIdx.x * 8] = 1.0f; }\n")
    plan = _plan_text(tmp_path, "tex.cu", text)
    tex = next(r for r in plan.runs if r.name_expr == "with_tex")
    assert tex.spec is None and tex.category == "compiler" and "t_img" in tex.reason and "CUDA 12" in tex.reason
    plain = next(r for r in plan.runs if r.name_expr == "plain")
    assert plain.spec is not None
    assert plan.instrumented is not None and "tex1Dfetch" not in plan.instrumented.code  # emptied for the others
    out = confirm.apply_results(list(lint_with_suppressions(text, str(tmp_path / "tex.cu"), OPTIONS).diagnostics),
                                [plan], [], [])
    marked = [d for d in out if d.kernel == "with_tex" and d.confirmation == "not-run"]
    assert marked and all(d.metrics["confirm_not_run"] == "compiler" for d in marked)


STENCIL = """__global__ void stencil3d(const float* in, float* out, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    for (int k = 1; k < nz - 1; ++k) {
        int c = i + nx * (j + ny * k);
        out[c * 2] = in[c] + in[c + nx * ny] + in[c - nx * ny];
    }
}
"""


def test_buffers_over_the_cap_are_refit_with_smaller_sizes(tmp_path: Path) -> None:
    plan = _plan_text(tmp_path, "stencil.cu", STENCIL)
    run = plan.runs[0]
    assert run.spec is not None, run.reason
    assert run.refit.startswith("sizes sampled smaller to fit the buffers") and "nx = " in run.refit
    assert sum(a.get("bytes", 0) + a.get("front", 0) for a in run.spec["args"]) <= 3 * confirm_plan.MAX_BUFFER_BYTES


def test_size_message_names_the_side_and_the_sampled_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confirm_plan, "_refit", lambda kr, *a, **k: None)
    monkeypatch.setattr(confirm_plan, "MAX_BUFFER_BYTES", 1 << 20)
    plan = _plan_text(tmp_path, "stencil.cu", STENCIL)
    run = plan.runs[0]
    assert run.spec is None and run.category == "size"
    assert "MiB (cap 1 MiB)" in run.reason and "would need 0 MiB" not in run.reason
    assert "the sampled nx = " in run.reason and ("below the pointer" in run.reason or "past the pointer" in run.reason)


NCU_PAGE = '''"Kernel Name","k(float *, const float *, int)",
"File Name","/src/a.cu"
"Line No","Source","Address","Source","Instructions Executed","L2 Theoretical Sectors Global","L2 Theoretical Sectors Global Ideal","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"
"7","out[i * 8] = in[i] + s[t];","-","-","3","136","40","8","8"
"","","0x10","      LDG.E R5, desc[UR4][R2.64]","1","8","8","0","0"
"","","0x20","  @P0 LDS R6, [R3]","1","0","0","8","8"
"","","0x30","      STG.E desc[UR4][R8.64], R7","1","128","32","0","0"
"File Name","/src/a.h"
"Line No","Source","Address","Source","Instructions Executed","L2 Theoretical Sectors Global","L2 Theoretical Sectors Global Ideal","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"
"7","return p[0];","-","-","1","99","99","0","0"
"","","0x40","      LD.E R1, [R2.64]","1","99","99","0","0"
"Kernel Name","k(float *, const float *, int)",
"File Name","/src/a.cu"
"Line No","Source","Address","Source","Instructions Executed","L2 Theoretical Sectors Global","L2 Theoretical Sectors Global Ideal","L1 Wavefronts Shared","L1 Wavefronts Shared Ideal"
"7","out[i * 8] = in[i] + s[t];","-","-","3","34","10","2","2"
"","","0x10","      LDG.E R5, desc[UR4][R2.64]","1","2","2","0","0"
"","","0x30","      STG.E desc[UR4][R8.64], R7","1","32","8","0","0"
'''


def test_ncu_counters_per_launch_file_line_and_instruction() -> None:
    tables = parse_source_tables(NCU_PAGE)
    assert len(tables) == 2  # one per launch, never summed
    first = tables[0]
    assert first.lines[("/src/a.cu", 7)]["ncu_global_sectors"] == 136
    assert first.lines[("/src/a.h", 7)]["ncu_global_sectors"] == 99  # the header's line 7 is its own
    load, n = access_counters(first, "/src/a.cu", 7, "load", "global")
    assert n == 1 and load["ncu_global_sectors"] == 8  # the LDG alone, not the store nor the shared load
    store, n = access_counters(first, "/src/a.cu", 7, "store", "global")
    assert n == 1 and store["ncu_global_sectors"] == 128 and store["ncu_global_sectors_ideal"] == 32
    shared, n = access_counters(first, "/src/a.cu", 7, "load", "shared")
    assert n == 1 and shared["ncu_shared_wavefronts"] == 8
    second_store, _ = access_counters(tables[1], "/src/a.cu", 7, "store", "global")
    assert second_store["ncu_global_sectors"] == 32  # the other launch shape's numbers stay its own
    assert sass_opcode("  @!P0 LDG.E.128 R4, desc[UR4][R2.64]") == "LDG.E.128"
    assert [instruction_kind(o) for o in ("LDG.E", "STS.128", "ATOMG.ADD", "LDC", "IMAD")] == \
        ["load", "store", "atomic", "", ""]


def test_guarded_builds_guard_every_access_and_filter_blocks(tmp_path: Path) -> None:
    text = ("__device__ float get(const float* p, int i) { return p[i]; }\n"
            "__device__ float get2(const float* p, int i) { return p[i + 1]; }\n"
            "__global__ void k(const float* in, float* out) {\n"
            "    int i = threadIdx.x;\n"
            "    out[i] = get(in, i) + get(in, i + 32) + get2(in, i);\n}\n")
    plan = _plan_text(tmp_path, "g.cu", text)
    assert plan.instrumented is not None
    prof = plan.instrumented.profiled
    assert "__kl_rec" not in prof.split(ins.PRELUDE_END)[-1] and "__kl_br" not in prof.split(ins.PRELUDE_END)[-1]
    body = prof.split(ins.PRELUDE_END)[-1]
    assert "__kl_guard(&(p[i]))" in body and "__kl_guard(&(p[i + 1]))" in body  # helpers' accesses too
    assert "if (__kl_skip_block()) return;" in body and "#define gridDim (__kl_griddim())" in prof
    assert plan.instrumented.code.count("if (__kl_skip_block()) return;") == 1
    assert prof.count("\n") - prof.split(ins.PRELUDE_END)[0].count("\n") >= text.count("\n")


def test_each_sampled_block_runs_with_its_own_sampled_values() -> None:
    """The evaluator's sample 1 is block (3,2,1) with the second sampled values (n = 5 iterations where
    sample 0 had 3): that block is traced in a second launch with those values."""
    from kernlint.confirm.cupy_probe import NO_BLOCK, _launches

    path = Path(__file__).resolve().parent.parent / "fixtures" / "KL303_atomic_flag.cu"
    text = path.read_text()
    plan = confirm.plan_file(lint_with_suppressions(text, str(path), OPTIONS), text, OPTIONS)
    run = next(r for r in plan.runs if r.name_expr == "converge")
    assert run.spec is not None and run.spec["values"]["n"] != run.spec["values2"]["n"]
    launches = _launches(run.spec)
    assert len(launches) == 2
    (_k0, a0, b0, args0), (_k1, a1, b1, args1) = launches
    assert b0 == NO_BLOCK and a1 == NO_BLOCK and a0 == run.spec["samples"][0] and b1 == run.spec["samples"][1]
    assert args0 == run.spec["args"] and args1 == run.spec["args2"]


def test_a_kernel_without_parameters_runs_each_sampled_block_with_its_own_globals(tmp_path: Path) -> None:
    """Rodinia heartwall's `kernel()` takes no parameters: its sizes are fields of a `__constant__` struct
    that --confirm writes before each launch. Sample 1's block must run with sample 1's values (a second
    launch), although both launches have the same (empty) argument list."""
    from kernlint.confirm.cupy_probe import NO_BLOCK, _launches

    text = ("struct common_t { int rows; int pad; };\n__constant__ common_t d_c;\n"
            "__device__ float d_out[1 << 24];\n\n// kernlint: block=(256,1,1)\n"
            "__global__ void fill()\n{\n    int t = threadIdx.x;\n    d_out[t * d_c.rows] = 0.0f;\n}\n")
    plan = _plan_text(tmp_path, "noparam.cu", text)
    (run,) = plan.runs
    assert run.spec is not None and run.spec["args"] == [] == run.spec["args2"]
    rows = [{(g["offset"], g["value"]) for g in run.spec[key]["globals"]} for key in ("seed", "seed2")]
    assert (0, 4096) in rows[0] and (0, 6144) in rows[1]
    launches = _launches(run.spec)
    assert len(launches) == 2
    (k0, a0, b0, _), (k1, a1, b1, _) = launches
    assert b0 == NO_BLOCK == a1 and a0 == run.spec["samples"][0] and b1 == run.spec["samples"][1]
    assert k0["seed"] == run.spec["seed"] and k1["seed"] == run.spec["seed2"]


def test_a_kernel_named_like_a_math_function_is_named_to_nvrtc_by_its_pointer_type() -> None:
    """`__global__ void remainder(const float*, float*)` overloads the math API's `remainder(double,
    double)`: NVRTC rejects the bare name expression as ambiguous, so the kernel is named by a cast to
    its own pointer type (tested on the GPU by test_gpu_confirms_every_finding[KL302_remainder.cu])."""
    path = Path(__file__).resolve().parent.parent / "fixtures" / "KL302_remainder.cu"
    text = path.read_text()
    plan = confirm.plan_file(lint_with_suppressions(text, str(path), OPTIONS), text, OPTIONS)
    names = {r.name_expr: r.spec["name_expr"] for r in plan.runs if r.spec is not None}
    assert names == {"remainder": "static_cast<void (*)(const float *, float *)>(remainder)",
                     "triangle": "triangle"}


def test_a_sampled_value_given_to_a_narrow_parameter_wraps_as_in_c() -> None:
    import numpy as np

    from kernlint.confirm.cupy_probe import _make_args

    args = _make_args(None, np, [{"t": "scalar", "dtype": "uint8", "value": 3328},
                                 {"t": "scalar", "dtype": "int32", "value": 5},
                                 {"t": "scalar", "dtype": "float32", "value": 1.5}], [])
    assert [type(a) for a in args] == [np.uint8, np.int32, np.float32]
    assert [a.item() for a in args] == [3328 % 256, 5, 1.5]


def test_a_function_pointer_parameter_is_not_synthesized() -> None:
    """A zeroed buffer passed for `binary_t op` and called faults the kernel (H100: illegal address in
    KL101_function_pointer.cu's through_parameter): such a kernel is not run, with the reason named."""
    path = Path(__file__).resolve().parent.parent / "fixtures" / "KL101_function_pointer.cu"
    text = path.read_text()
    plan = confirm.plan_file(lint_with_suppressions(text, str(path), OPTIONS), text, OPTIONS)
    runs = {r.name_expr: r for r in plan.runs}
    bad = runs["through_parameter"]
    assert bad.spec is None and bad.status == "not-run" and bad.category == "arguments"
    assert "function pointer parameter `op`" in bad.reason
    assert runs["through_local_pointer"].spec is not None
