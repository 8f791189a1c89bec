"""Types kernlint used to leave unknown: library types of missing headers, headers found in the main
file's directory, ... Each test checks the numbers a profiler would give, worked out by hand."""
from __future__ import annotations

from pathlib import Path

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.ir.known_headers import stub_text

OPTS = LintOptions(resources=False)


def findings(text: str, path: str = "k.cu", options: LintOptions = OPTS) -> list:
    return list(lint_source(text, path, options).diagnostics)


def sectors(d) -> int:
    """The worst sectors a coalescing finding reports ('touches N 32-byte sectors')."""
    return int(d.message.split("touches ")[1].split(" ")[0])


def test_stub_text_only_for_known_library_headers() -> None:
    assert "cufftComplex" in stub_text("cufft.h")
    assert "cufftComplex" in stub_text("cufftXt.h")
    assert "XMFLOAT3" in stub_text("DirectXMath.h") and "XMFLOAT3" in stub_text("sub\\DirectXMath.h")
    assert stub_text("cufft_helpers.h") == "" and stub_text("my_cufft.h") == ""


CUFFT = """\
// kernlint: block=(128,1,1)
#include <cufftXt.h>
__global__ void k(cufftComplex* a, cufftDoubleComplex* d, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i].y = s;
    if (i < n) d[i].x = s;
}
"""


def test_cufft_complex_is_float2_and_double_complex_double2() -> None:
    ds = findings(CUFFT)
    assert not [d for d in ds if d.code in ("KL904", "KL903")]
    by_line = {d.line: d for d in ds if d.code == "KL102"}
    # float2: lanes 8 bytes apart, 4 bytes each: 256 bytes span 8 sectors (ideal 4).
    assert sectors(by_line[5]) == 8
    # double2: lanes 16 bytes apart, 8 bytes each: 512 bytes span 16 sectors (ideal 8).
    assert sectors(by_line[6]) == 16


# A type chosen with <type_traits> (as gemm kernels pick their pair type): with the header missing
# and its templates not declared (the shim declares them now), `Pair` was unknown and so was every access through it (KL904, KL903 `is_same_v`).
TRAITS = """\
// kernlint: block=(64,1,1)
#include <type_traits>
struct half2_t { unsigned short x, y; };
template <typename T> __global__ void k(T* out, int n) {
    using Pair = std::conditional_t<std::is_same_v<T, float>, float2, half2_t>;
    using E = std::remove_cv_t<std::remove_reference_t<const T&>>;
    static_assert(std::is_same<E, T>::value, "");
    Pair* p = reinterpret_cast<Pair*>(out);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i * 2].x = E(1);
}
template __global__ void k<float>(float*, int);
"""


def test_type_traits_stub_picks_the_type_the_standard_defines() -> None:
    from kernlint.frontend.clang_base import shim_path

    assert "conditional_t" in open(shim_path()).read() and stub_text("type_traits") == ""
    ds = findings(TRAITS)
    assert not [d for d in ds if d.code in ("KL904", "KL903")], [d.message for d in ds]
    (d,) = [d for d in ds if d.code == "KL102"]
    # Pair is float2 (T = float): lanes 2 float2 = 16 bytes apart, 4 bytes each: 32 lanes span
    # 512 bytes = 16 sectors for 128 bytes (ideal 4).
    assert sectors(d) == 16


DIRECTX = """\
// kernlint: block=(64,1,1)
#include <DirectXMath.h>
struct V { DirectX::XMFLOAT3 p; DirectX::XMFLOAT2 uv; };  // 20 bytes
__global__ void k(V* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i].uv.y = 0.0f;
}
"""


def test_directxmath_float_structs_have_their_layout() -> None:
    (d,) = [d for d in findings(DIRECTX) if d.code == "KL102"]
    # 20-byte stride, lane 0 at byte 16: bytes 16..639 span sectors 0..19.
    assert sectors(d) == 20
    assert "+20 B" in " ".join(d.notes)


def test_a_real_header_wins_over_the_known_stub(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    # A project's own cufft.h with a different (12-byte) complex type.
    (tmp_path / "inc" / "cufft.h").write_text("struct cufftComplex { float x, y, z; };\n")
    src = tmp_path / "k.cu"
    src.write_text(CUFFT.replace("cufftXt.h", "cufft.h").replace("cufftDoubleComplex* d, ", "")
                   .replace("    if (i < n) d[i].x = s;\n", ""))
    opts = LintOptions(resources=False, include_dirs=(str(tmp_path / "inc"),))
    (d,) = [d for d in findings(src.read_text(), str(src), opts) if d.code == "KL102"]
    assert sectors(d) == 12  # 12-byte stride: bytes 4..379 span sectors 0..11


def test_angle_include_found_in_the_main_files_directory(tmp_path: Path) -> None:
    (tmp_path / "rec.h").write_text("struct R { unsigned int a, b, c; unsigned short d, e; };\n")  # 16 bytes
    text = ("// kernlint: block=(32,1,1)\n#include <rec.h>\n"
            "__global__ void k(const R* r, unsigned int* out) {\n"
            "    out[threadIdx.x] = r[threadIdx.x].b;\n}\n")
    src = tmp_path / "k.cu"
    src.write_text(text)
    ds = findings(text, str(src))
    assert not [d for d in ds if d.code in ("KL903", "KL904")]
    (d,) = [d for d in ds if d.code == "KL101"]
    assert sectors(d) == 16  # 16-byte stride, bytes 4..503: sectors 0..15


def test_struct_with_a_member_of_a_missing_type_asks_for_the_header() -> None:
    text = ("#include <nowhere/geometry.h>\n"
            "struct Vertex { Float3 position; float w; };\n"
            "__global__ void k(Vertex* v) { v[threadIdx.x].w = 1.0f; }\n")
    (d,) = [d for d in findings(text) if d.code == "KL904"]
    notes = " ".join(d.notes)
    assert "Vertex" in d.message and "could not resolve" in d.message
    assert "-I" in notes and "template" not in notes


FNPTR = """\
typedef float (*binary_t)(float, float);
__device__ float add(float a, float b) { return a + b; }
__device__ const binary_t kAdd = add;
__device__ binary_t table[2];
__global__ void k(binary_t op, float* out, int s) {
    binary_t local = &add;
    binary_t changed = add;
    if (s) changed = op;
    out[(int)(*kAdd)(threadIdx.x, 0.0f)] = 1.0f;
    out[(int)local(threadIdx.x, 1.0f)] = 2.0f;
    out[(int)changed(threadIdx.x, 1.0f)] = 3.0f;
    out[(int)(*table[s])(threadIdx.x, 1.0f)] = 4.0f;
}
"""


def test_function_pointer_calls_are_followed_only_when_the_target_is_certain() -> None:
    from kernlint.ir import nodes as ir
    from kernlint.frontend import parse_source

    tu = parse_source(FNPTR, "k.cu")
    (fn,) = [f for f in tu.functions.values() if f.is_kernel]
    calls = [n for n in ir.walk(fn.body) if isinstance(n, ir.Call) and n.span.line >= 9]
    got = {c.span.line: (c.name, bool(c.target), c.via) for c in calls}
    assert got[9] == ("add", True, "") and got[10] == ("add", True, "")
    assert got[11] == ("", False, "changed")  # reassigned: not certain
    assert got[12][0] == "" and got[12][2].startswith("table")
    # `*kAdd` names code: the accesses seen are the four stores and the read of `table[s]` (a
    # `__device__` array in global memory); `(*table[s])` reads no more than that.
    rec = lint_source(FNPTR, "k.cu", OPTS).coverage[0]
    assert (rec.accesses_seen, rec.accesses_evaluated) == (5, 3)
    gaps = {(g.kind, g.detail, g.lines) for g in rec.gaps}
    assert ("fnptr", "changed", (11,)) in gaps
    assert ("loaded", "", (12,)) in gaps  # the pointer loaded from the table: loaded data


def test_scan_names_class_template_members_after_their_class_and_records_argument_types() -> None:
    from kernlint.project.scan import scan_text

    facts = scan_text(
        "template <typename Real> void Engine<Real>::operator()(Real* out, const Params<Real>* p) {\n"
        "    Real* tmp = out;\n"
        "    k<<<1, 32>>>(tmp, p, out + 1, 4);\n"
        "}\n"
        "template class Engine<float>;\n")
    (ln,) = facts.launches
    assert ln.host == "Engine" and ln.host_params == (("Real", True, ""),)
    assert ln.arg_types == ("Real *", "const Params<Real> *", "", "")
    assert ("Engine", ("float",), 5) in facts.template_calls


def test_deduction_needs_every_type_parameter_and_agreeing_arguments() -> None:
    from kernlint.frontend import parse_source
    from kernlint.project.units import deduce_template_args

    tu = parse_source("template <typename A, typename B> __global__ void k(A* a, const B* b, A* c) {}\n", "k.cu")
    (fn,) = tu.functions.values()
    assert deduce_template_args(fn, (), ("float *", "__half *", "float *")) == ("float", "__half")
    assert deduce_template_args(fn, ("double",), ("", "int *", "")) == ("double", "int")
    assert deduce_template_args(fn, (), ("float *", "", "float *")) == ()  # B not deduced
    assert deduce_template_args(fn, (), ("float *", "int *", "double *")) == ()  # A = float and double
    assert deduce_template_args(fn, (), ("float **", "int *", "")) == ()  # A* given float**: not by the index


FIXTURE_PROJECT = Path(__file__).resolve().parent.parent / "fixtures" / "projects" / "deduced_types"


def test_launch_arguments_and_class_instantiations_bind_header_kernels(tmp_path: Path, monkeypatch) -> None:
    from kernlint.project.index import ProjectIndex

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    idx = ProjectIndex.build(FIXTURE_PROJECT)
    path = FIXTURE_PROJECT / "kernels.cuh"
    r = lint_source(path.read_text(), str(path), LintOptions(project=idx, resources=False))
    by_line = {d.line: d for d in r.diagnostics if d.code == "KL102"}
    # Td = double (8 bytes) at a 24-byte stride: bytes 0..751, 24 sectors (ideal 8).
    assert sectors(by_line[11]) == 24
    assert any("Td = double, Ts = __half" in a for a in by_line[11].assumptions)
    # Real = double through `template class Engine<double>`: 16-byte stride, 16 sectors (ideal 8).
    assert sectors(by_line[27]) == 16
    assert any("via Engine<double>" in a for a in by_line[27].assumptions)
    assert all(c.status == "full" for c in r.coverage)


def test_host_template_bound_by_deduction_from_a_call_without_template_arguments() -> None:
    from kernlint.project.index_fold import _deduce_from_types
    from kernlint.project.scan import scan_text

    facts = scan_text("void f(void* raw, float* out) {\n    floatX* p = (floatX*)raw;\n"
                      "    reduce(out, p, 4);\n    other(1, 2);\n}\n")
    assert facts.typed_calls == (("reduce", ("float *", "floatX *", ""), 3),)
    names = {"T", "U"}
    assert _deduce_from_types(names, ("float *", "const T *", "U *"), ("float *", "__half *", "int *")) \
        == {"T": "__half", "U": "int"}
    assert _deduce_from_types(names, ("T *", "T *"), ("float *", "int *")) is None  # disagree
    assert _deduce_from_types(names, ("T *",), ("float **",)) == {}  # not the same depth


def test_kernel_in_a_host_template_called_without_template_arguments(tmp_path: Path, monkeypatch) -> None:
    from kernlint.project.index import ProjectIndex

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    idx = ProjectIndex.build(FIXTURE_PROJECT)
    path = FIXTURE_PROJECT / "kernels.cuh"
    r = lint_source(path.read_text(), str(path), LintOptions(project=idx, resources=False))
    (d,) = [d for d in r.diagnostics if d.code == "KL101" and d.line == 36]
    # T = __half (2 bytes) 8 bytes apart: 256 bytes span 8 sectors; with T = float it would be 16.
    assert sectors(d) == 8
    assert any("T = __half" in a and "reduce(...) at runner.cu:13" in a for a in d.assumptions)


def test_member_of_an_uninstantiated_class_template_is_named_not_left_blank() -> None:
    text = ("template <typename Real> struct Opt { enum CallPut { Call, Put }; Real spot; int type; };\n"
            "template <typename Real>\n"
            "__global__ void k(Real* out, const Opt<Real>* o) {\n"
            "    if (o->type == Opt<Real>::Put) out[threadIdx.x] = 1;\n}\n")
    (d,) = [d for d in findings(text) if d.code == "KL904"]
    text_all = d.message + " ".join(d.notes)
    assert "`Opt<Real>::Put`" in text_all
    assert "``" not in text_all and "--define =VALUE" not in text_all
