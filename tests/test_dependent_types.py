"""Dependent types of template code made concrete once the template is bound, and values reached
through members of struct values: member types (`typename vec4<T>::Type`), `sizeof(E)` in a class
template, `data.deviceRank` through a class's reference member."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kernlint.ir import nodes as ir
from kernlint.cli.command import main
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.ir.dependent_types import PARTIAL, member_type
from kernlint.frontend import parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OPTS = LintOptions(resources=False)

FLOAT = ir.CType("float", 4, name="float")
DOUBLE = ir.CType("float", 8, name="double")
FLOAT4 = ir.CType("struct", 16, name="float4", align=16)
T = ir.CType("template", 0, name="T")


def _bound(**args: ir.CType | str):
    return lambda text: args.get(text)


def test_member_type_prefers_the_explicit_specialization() -> None:
    table = {"vec4::Type": (("T",), FLOAT), "vec4<float>::Type": ((), FLOAT4)}
    assert member_type("typename vec4<T>::Type", table, _bound(T=FLOAT)) == FLOAT4
    # No specialization for double: the primary template's member (a concrete placeholder here).
    assert member_type("typename vec4<T>::Type", table, _bound(T=DOUBLE)) == FLOAT


def test_member_type_alias_of_a_parameter_is_the_bound_argument() -> None:
    table = {"Traits::Acc": (("T", "N"), T)}
    assert member_type("typename Traits<T, 4>::Acc", table, _bound(T=DOUBLE, **{"4": "4"})) == DOUBLE


def test_member_type_stays_unknown_when_unbound_or_partially_specialized() -> None:
    table = {"vec4::Type": (("T",), FLOAT)}
    assert member_type("typename vec4<T>::Type", table, _bound()) is None  # T not bound
    partial = dict(table, **{"vec4" + PARTIAL: ((), ir.UNKNOWN_TYPE)})
    assert member_type("typename vec4<T>::Type", partial, _bound(T=DOUBLE)) is None
    # An alias that names the class's own parameter inside a pointer is not a concrete type.
    ptr = ir.CType("pointer", 8, False, pointee=ir.CType("template", 0, name="U"), name="const U *")
    assert member_type("typename P<T>::type", {"P::type": (("U",), ptr)}, _bound(T=FLOAT)) is None
    assert member_type("float", table, _bound(T=FLOAT)) is None  # not a member type at all


SPECIALIZED = """\
template <typename T> struct vec4 { typedef float Type; };
template <> struct vec4<double> { typedef double2 Type; };
template <typename T> struct Traits { using Acc = T; };
template <typename T> struct Box<T*>;
template <typename T> struct Box { };
template <typename T> struct Box<T*> { using Elem = T; };
__global__ void k(float* p) { p[threadIdx.x] = 0.f; }
"""


def test_front_end_records_member_types_and_partial_specializations() -> None:
    tu = parse_source(SPECIALIZED, "t.cu")
    params, t = tu.member_types["vec4::Type"]
    assert params == ("T",) and t.name == "float"
    params, t = tu.member_types["vec4<double>::Type"]
    assert params == () and t.size == 16
    params, t = tu.member_types["Traits::Acc"]
    assert params == ("T",) and t.kind == "template" and t.name == "T"
    assert "Box" + PARTIAL in tu.member_types


def _metrics(path: Path) -> dict[int, dict]:
    text = path.read_text()
    res = lint_source(text, str(path), OPTS)
    assert all(c.status == "full" for c in res.coverage), [(c.kernel, c.status) for c in res.coverage]
    return {d.line: d.metrics for d in res.diagnostics if d.code in ("KL101", "KL102")}


def test_member_type_in_a_helper_template_gives_the_specialization_sizes() -> None:
    found = _metrics(FIXTURES / "KL101_dependent_member_type.cu")
    # float2 at every other element: 8 bytes per lane, 16 apart: 16 sectors for 8 ideal.
    assert found[13]["bytes_per_lane"] == 8 and found[13]["sectors"] == 16 and found[13]["ideal_sectors"] == 8
    assert set(found) == {13}  # double2 read consecutively is ideal


def test_dependent_sizeof_is_folded_with_the_class_arguments() -> None:
    found = _metrics(FIXTURES / "KL101_dependent_sizeof.cu")
    # Packed<float>::size = 16 / 4 = 4 floats per lane: 16 bytes apart, 16 sectors vs 4.
    assert (found[23]["sectors"], found[23]["ideal_sectors"], found[23]["lane_stride_bytes"]) == (16, 4, 16)
    # Packed<double>::size = 16 / 8 = 2: 8 bytes apart, 8 sectors vs 4.
    assert (found[25]["sectors"], found[25]["ideal_sectors"], found[25]["lane_stride_bytes"]) == (8, 4, 8)


def test_dependent_sizeof_is_lowered_as_sizeof_and_folds_under_the_binding() -> None:
    src = """\
template <class E>
__global__ void k(float* out) {
    out[threadIdx.x * (sizeof(E) / 4)] = 0.f;
}
"""
    tu = parse_source(src, "t.cu")
    (fn,) = tu.kernels
    (node,) = [n for n in ir.walk(fn.body) if isinstance(n, ir.SizeOf)]
    assert node.of.kind == "template" and node.of.name == "E" and not node.align
    # No launch: E is assumed float (and the finding would say so); sizeof(E) / 4 = 1, consecutive.
    res = lint_source(src, "t.cu", OPTS)
    (cov,) = res.coverage
    assert cov.status == "full", cov
    assert [d.code for d in res.diagnostics] == []


def test_member_of_a_member_of_a_struct_parameter() -> None:
    found = _metrics(FIXTURES / "KL101_member_of_member.cu")
    # `lay.ld` (ld sampled 4096 floats): lanes 16384 bytes apart, one sector each.
    assert (found[31]["sectors"], found[31]["ideal_sectors"], found[31]["lane_stride_bytes"]) == (32, 4, 16384)
    # `o.in.k = threadIdx.x` then `out[o.in.k * 32]`: 128 bytes apart.
    assert (found[37]["sectors"], found[37]["lane_stride_bytes"]) == (32, 128)
    assert set(found) == {31, 37}  # `o.in.k = 0` afterwards: the nested store replaced the value


def test_nested_member_store_replaces_the_old_value() -> None:
    src = """\
struct In { int k; };
struct Out { In in; int pad; };
__global__ void k(float* out) {
    Out o;
    o.in.k = threadIdx.x * 32;
    o.in.k = threadIdx.x;
    out[o.in.k] = 1.f;
}
"""
    res = lint_source(src, "t.cu", OPTS)
    assert [d.code for d in res.diagnostics] == []  # coalesced, and fully evaluated (no KL904)


def test_struct_values_merge_field_by_field_in_a_loop() -> None:
    # The method's write-back of `v` happens under the loop's partial mask (lanes leave the loop at
    # different times); the object must keep its fields, so the access after the loop is evaluated.
    src = """\
struct L { int ld; };
class V {
    const L &lay;
public:
    __device__ V(const L &l) : lay(l) {}
    __device__ int ld() const { return lay.ld; }
};
__global__ void k(float* out, L layout, int n) {
    V v(layout);
    for (int i = threadIdx.x; i < 40; i += v.ld() / 1024) { }
    out[blockIdx.x * v.ld() + threadIdx.x] = 0.f;
}
"""
    res = lint_source(src, "t.cu", LintOptions(resources=False, block=(64, 1, 1)))
    (cov,) = res.coverage
    assert cov.status == "full", cov
    assert not [d for d in res.diagnostics if d.code != "KL301" and d.code != "KL302"]


def test_define_accepts_a_struct_parameter_field(tmp_path: Path) -> None:
    f = tmp_path / "k.cu"
    f.write_text("struct L { int ld; };\n__global__ void k(float* a, L l) { a[threadIdx.x * l.ld] = 0.f; }\n")
    runner = CliRunner()
    ok = runner.invoke(main, [str(f), "--no-cache", "--no-ptxas", "--block", "32", "--define", "l.ld=1"])
    assert ok.exit_code == 0, ok.output
    assert "KL102" not in ok.output  # ld = 1: consecutive
    bad = runner.invoke(main, [str(f), "--no-cache", "--no-ptxas", "--define", "l..ld=1"])
    assert bad.exit_code == 2


def test_unresolved_operator_on_a_dependent_operand_is_the_builtin_operator() -> None:
    found = _metrics(FIXTURES / "KL102_dependent_operator.cu")
    # strided<2>(threadIdx.x) + threadIdx.y: lanes 8 bytes apart, 8 sectors vs 4.
    assert (found[14]["sectors"], found[14]["ideal_sectors"], found[14]["lane_stride_bytes"]) == (8, 4, 8)
    assert set(found) == {14}  # strided<S - 1>: S - 1 folded with the caller's S = 2, consecutive
    tu = parse_source((FIXTURES / "KL102_dependent_operator.cu").read_text(), "t.cu")
    put = next(f for f in tu.functions.values() if f.name == "put")
    names = [n.name for n in ir.walk(put.body) if isinstance(n, ir.Ref)]
    assert "" not in names  # no unnamed reference to an overload set is left in the IR
    ops = {n.op for n in ir.walk(put.body) if isinstance(n, (ir.Binary, ir.Unary))}
    assert {"+", "-"} <= ops


def test_helper_binds_a_deduced_scalar_type_and_a_shared_reference_has_its_address() -> None:
    path = FIXTURES / "KL201_helper_deduced_type.cu"
    res = lint_source(path.read_text(), str(path), OPTS)
    (cov,) = res.coverage
    assert cov.status == "full", cov  # `atomicExch(&all_done, 0)` on the shared scalar is evaluated
    (d,) = [d for d in res.diagnostics if d.code == "KL201"]
    assert d.line == 9 and d.metrics["ways"] == 16  # unsigned short: 64 bytes apart, banks 0 and 16


def test_typedef_and_macro_template_arguments_bind_what_clang_resolved() -> None:
    path = FIXTURES / "KL201_typedef_template_argument.cu"
    tu = parse_source(path.read_text(), str(path))
    (call,) = [n for n in ir.walk(tu.kernels[0].body) if isinstance(n, ir.Call) and n.name == "store"]
    assert call.template_args == ("double", "64")
    res = lint_source(path.read_text(), str(path), OPTS)
    (cov,) = res.coverage
    assert cov.status == "full"
    (d,) = [d for d in res.diagnostics if d.code == "KL201"]
    assert (d.line, d.metrics["ways"], d.metrics["wavefronts"]) == (12, 2, 4)


def test_parameter_of_a_missing_header_type_is_unknown_and_names_the_type() -> None:
    src = """\
#include "missing_types.h"
__global__ void k(Cplx* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = a[2 * i].x;
}
"""
    tu = parse_source(src, "t.cu")
    a = tu.kernels[0].params[0]
    assert a.ctype.kind == "unknown" and a.ctype.name == "Cplx"  # not clang's recovery type, int*
    res = lint_source(src, "t.cu", LintOptions(resources=False, block=(32, 1, 1)))
    (cov,) = res.coverage
    (gap,) = [g for g in cov.gaps if g.lines == (4,)]
    assert (gap.kind, gap.detail) == ("missing_type", "Cplx")
    (kl904,) = [d for d in res.diagnostics if d.code == "KL904"]
    text = kl904.message + " ".join(kl904.notes)
    assert "Cplx" in text and "-I DIR" in text and "--define Cplx" not in text


def test_dereference_of_a_dependent_pointer_is_an_access_of_the_bound_element() -> None:
    # No launch: Real is assumed float and the template itself is evaluated; clang types `*px` as
    # dependent (and `*px * 2` as an unresolved operator call when any operator* is visible).
    src = """\
template <typename Real>
__global__ void count(const Real* points, unsigned* out, unsigned n) {
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    const Real* px = points + tid;
    unsigned inside = 0;
    for (unsigned i = tid; i < n; i += 64, px += 64) {
        Real x = *px * 2;
        float y = x + *px;
        inside += x < 1;
    }
    out[tid] = inside;
}
"""
    res = lint_source(src, "t.cu", LintOptions(resources=False, block=(64, 1, 1)))
    (cov,) = res.coverage
    assert (cov.status, cov.accesses_seen, cov.accesses_evaluated) == ("full", 3, 3)
    assert not [d for d in res.diagnostics if d.code in ("KL101", "KL102", "KL904")]  # consecutive floats


def test_construction_of_a_template_type_parameter_is_a_cast() -> None:
    src = """\
template <class T>
__device__ int pick(T x) { if (x > T(4.0)) return 1; return 0; }
template <class T>
__global__ void k(int* out, T* in) {
    T v = T(threadIdx.x) * T(2);
    out[(int)v] = pick(v);
}
template __global__ void k<float>(int*, float*);
"""
    res = lint_source(src, "t.cu", LintOptions(resources=False, block=(32, 1, 1)))
    (cov,) = res.coverage
    assert cov.status == "full", cov  # `x > T(4.0)` is known per lane (was an unnamed call)
    found = {d.code: d for d in res.diagnostics}
    # v = 2 * tid: int stores 8 bytes apart, 8 sectors vs 4; lanes 0-2 (v <= 4) skip the branch.
    assert (found["KL102"].metrics["sectors"], found["KL102"].metrics["ideal_sectors"]) == (8, 4)
    assert "29 of 32 active lanes take it" in found["KL301"].message
