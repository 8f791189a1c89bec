"""Methods of classes defined inside a function, and lambdas, are lowered and inlined like any helper
(frontend/clang_frontend._defer_local_methods); what is still not read is said (KL904), never silent."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source

_LAUNCH = "int main() { float* a; k<<<64, 256>>>(a, 1 << 20); }\n"
_INDEX = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"


def _lint(src: str):
    res = lint_source(src + _LAUNCH, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    return res, rec


def _findings(res) -> list[tuple[str, str]]:
    return sorted((d.code, d.message) for d in res.diagnostics)


# The same stride-32 store (lanes 128 bytes apart: 32 sectors per request where 4 would do, 8.0x): KL102.
FREE = ("__device__ void f(float* p, int i) { p[i * 32] = 0.0f; }\n"
        "__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) f(a, i);\n}\n")


def test_the_free_helper_gets_kl102() -> None:
    res, rec = _lint(FREE)
    assert [c for c, _ in _findings(res)] == ["KL102"] and rec.status == "full"


def test_a_static_method_of_a_class_local_to_the_kernel_gets_what_the_free_helper_gets() -> None:
    src = ("__global__ void k(float* a, int n) {\n"
           "    struct L { __device__ static void f(float* p, int i) { p[i * 32] = 0.0f; } };\n"
           + _INDEX + "    if (i < n) L::f(a, i);\n}\n")
    res, rec = _lint(src)
    assert _findings(res) == _findings(_lint(FREE)[0]) and rec.status == "full", _findings(res)
    [d] = res.diagnostics
    assert (d.line, d.column) == (2, 60)  # the store inside the local class


def test_a_local_functor_a_constructor_and_a_local_class_of_a_helper_are_lowered() -> None:
    functor = ("__global__ void k(float* a, int n) {\n"
               "    struct Op { __device__ void operator()(float* p, int i) const { p[i * 32] = 0.0f; } };\n"
               + _INDEX + "    Op op;\n    if (i < n) op(a, i);\n}\n")
    ctor = ("__global__ void k(float* a, int n) {\n    struct L {\n        float* p;\n"
            "        __device__ L(float* q) : p(q) {}\n"
            "        __device__ void f(int i) { p[i * 32] = 0.0f; }\n    };\n"
            + _INDEX + "    L l(a);\n    if (i < n) l.f(i);\n}\n")
    helper = ("__device__ void h(float* a, int i) {\n"
              "    struct L { __device__ static void f(float* p, int i) { p[i * 32] = 0.0f; } };\n"
              "    L::f(a, i);\n}\n__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) h(a, i);\n}\n")
    for src in (functor, ctor, helper):
        res, rec = _lint(src)
        assert _findings(res) == _findings(_lint(FREE)[0]) and rec.status == "full", (src, _findings(res))


def test_a_class_nested_in_a_local_class_of_a_template_kernel() -> None:
    """`In::ld` (nested in `Outer`, local to a template kernel bound to S = 4 by its launch): lanes 16 bytes
    apart, 4 bytes each: 16 sectors per request for 128 bytes where 4 would do (4.0x): KL101."""
    src = ("template <int S>\n__global__ void k(float* a, int n) {\n    struct Outer {\n"
           "        struct In { __device__ static float ld(const float* p, int i) { return p[i * S]; } };\n"
           "        __device__ static void st(float* p, int i) { p[i] = In::ld(p, i); }\n    };\n"
           + _INDEX + "    if (i < n) Outer::st(a, i);\n}\n")
    res = lint_source(src + "int main() { float* a; k<4><<<64, 256>>>(a, 1 << 20); }\n", "k.cu",
                      LintOptions(resources=False))
    assert [(d.code, d.line) for d in res.diagnostics] == [("KL101", 4)], res.diagnostics
    assert "16 32-byte sectors" in res.diagnostics[0].message


def test_a_lambda_is_lowered_one_whose_captures_are_not_followed_is_said_not_read() -> None:
    """A lambda that captures nothing, and one that captures by reference (tests/test_capturing_lambdas.py has
    the semantics), get what the free helper gets; one that captures an array (not followed: frontend/lambdas.py)
    is a call not read, said so (KL904), never silent."""
    plain = ("__global__ void k(float* a, int n) {\n    auto f = [](float* p, int i) { p[i * 32] = 0.0f; };\n"
             + _INDEX + "    if (i < n) f(a, i);\n}\n")
    capturing = ("__global__ void k(float* a, int n) {\n" + _INDEX
                 + "    auto f = [&]() { a[i * 32] = 0.0f; };\n    if (i < n) f();\n}\n")
    for src in (plain, capturing):
        res, rec = _lint(src)
        assert [c for c, _ in _findings(res)] == ["KL102"] and rec.status == "full", _findings(res)
    array = ("__global__ void k(float* a, int n) {\n" + _INDEX + "    float t[2] = {0.0f, 1.0f};\n"
             + "    auto f = [&]() { a[i * 32] = t[1]; };\n    if (i < n) f();\n}\n")
    res, rec = _lint(array)
    assert [d.code for d in res.diagnostics] == ["KL904"] and rec.status == "partial"
    assert [(g.kind, g.detail) for g in rec.gaps] == [
        ("unread_body", "the lambda at k.cu:4 (what it captures is not followed: an array, a local reference, an "
                        "init-capture, a pack, or a variable by reference whose name is declared again after it)")]


def test_a_pointer_field_of_a_local_object_points_to_memory() -> None:
    """`this->p[i * 32]` with `p` set by an initializer list (not modelled): the store is memory whose address
    is unknown, not the object's registers: not evaluated, where it was counted as no access at all."""
    src = ("struct L { float* p; __device__ void f(int i) { p[i * 32] = 0.0f; } };\n"
           "__global__ void k(float* a, int n) {\n" + _INDEX + "    L l{a};\n    if (i < n) l.f(i);\n}\n")
    res, rec = _lint(src)
    assert (rec.status, rec.accesses_seen, rec.accesses_evaluated) == ("partial", 1, 0), rec


_APPLY = "template <class F> __device__ void apply(F f, float* p, int i) { f(p, i); }\n"


def test_a_function_object_called_in_a_template_helper_is_followed() -> None:
    """`f(p, i)` with `f` of a template parameter's type, bound by the call to an object of a class (free or
    local) with an `operator()` of that arity, or to a lambda that captures nothing: that operator, inlined."""
    free = (_APPLY + "struct Op { __device__ void operator()(float* p, int i) const { p[i * 32] = 0.0f; } };\n"
            "__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) apply(Op(), a, i);\n}\n")
    local = (_APPLY + "__global__ void k(float* a, int n) {\n"
             "    struct Op { __device__ void operator()(float* p, int i) const { p[i * 32] = 0.0f; } };\n"
             + _INDEX + "    if (i < n) apply(Op(), a, i);\n}\n")
    lam = (_APPLY + "__global__ void k(float* a, int n) {\n" + _INDEX
           + "    if (i < n) apply([](float* p, int j) { p[j * 32] = 0.0f; }, a, i);\n}\n")
    for src in (free, local, lam):
        res, rec = _lint(src)
        assert _findings(res) == _findings(_lint(FREE)[0]) and rec.status == "full", (src, _findings(res))


def test_a_function_object_kernlint_cannot_follow_given_a_pointer_is_an_access_not_evaluated() -> None:
    """A lambda whose captures kernlint does not follow (an array), and an object whose class overloads
    `operator()` at that arity (which one the binding picks is not told by arity)."""
    capturing = (_APPLY + "__global__ void k(float* a, int n) {\n" + _INDEX + "    float v[2] = {2.0f, 3.0f};\n"
                 "    if (i < n) apply([=](float* p, int j) { p[j * 32] = v[1]; }, a, i);\n}\n")
    overloaded = (_APPLY + "struct Op { __device__ void operator()(float* p, int i) const { p[i * 32] = 0.0f; }\n"
                   "  __device__ void operator()(double* p, int i) const { p[i] = 0.0; } };\n"
                   "__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) apply(Op(), a, i);\n}\n")
    for src in (capturing, overloaded):
        res, rec = _lint(src)
        assert [(g.kind, g.detail) for g in rec.gaps] == [("indirect_call", "f")], (src, rec.gaps)
        assert [d.code for d in res.diagnostics] == ["KL904"]


def test_a_function_object_call_is_not_a_function_of_the_variable_s_name() -> None:
    """`f(p, i)` calls what `f` holds, never a method spelled `f` (`S::f`, unused here): its strided store is
    no site of this kernel, whose function object stores coalesced: fully analysed, no finding."""
    src = (_APPLY + "struct S { __device__ static void f(float* p, int i) { p[i * 32] = 0.0f; } };\n"
           "struct Op { __device__ void operator()(float* p, int i) const { p[i] = 0.0f; } };\n"
           "__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) apply(Op(), a, i);\n}\n")
    res, rec = _lint(src)
    assert (rec.status, rec.accesses_seen, rec.accesses_evaluated) == ("full", 1, 1) and not res.diagnostics, rec


def test_a_helper_shared_between_the_parses_of_a_template_s_bindings_keeps_its_local_class() -> None:
    """Each binding of `k` is its own parse, and the helper `h` lowered by the first is shared with the second
    (frontend/shared_ir.py) without being lowered there: its local class is then found from its cursors. Both
    bindings evaluated: fully analysed, and S = 32's store (lanes 128 bytes apart, 8.0x) is KL102."""
    src = ("__device__ void h(float* a, int i, int s) {\n"
           "    struct L { __device__ static void f(float* p, int i, int s) { p[i * s] = 0.0f; } };\n"
           "    L::f(a, i, s);\n}\n"
           "template <int S>\n__global__ void k(float* a, int n) {\n" + _INDEX + "    if (i < n) h(a, i, S);\n}\n")
    res = lint_source(src + "int main() { float* a; k<16><<<64, 256>>>(a, 1 << 20); "
                      "k<32><<<64, 256>>>(a, 1 << 20); }\n", "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert rec.status == "full", rec
    assert [(d.code, d.line) for d in res.diagnostics] == [("KL102", 2)], res.diagnostics
