"""Issue 31, item 2: a template parameter that only scales values does not make another evaluation.

`deciding_params` follows each non-type parameter's uses; a use it cannot see, or one that reaches an
address, a branch, a size or code it cannot follow, makes the parameter deciding. Each case below has a
twin where the parameter reaches something that matters, so that a walk that set aside too much fails.
"""
from __future__ import annotations

import os
import tempfile

import pytest

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.eval import interp
from kernlint.eval.binding_questions import deciding_params
from kernlint.frontend import parse_source


def _deciding(src: str) -> frozenset[str]:
    tu = parse_source(src, "/tmp/kl_binding_questions.cu")
    fn = next(k for k in tu.kernels if k.name == "k")
    return deciding_params(fn, tu, tuple(src.split("\n")))


HEAD = "template <int S, int U>\n__global__ void k(const float* a, float* o, int n) {\n  int i = threadIdx.x;\n"


@pytest.mark.parametrize("body, deciding", [
    # A value a lane stores: only S reaches an address.
    ("  o[i] = a[i * S] * U;\n", {"S"}),
    # Through a local, then an index.
    ("  int j = i * U;\n  o[j] = a[i * S];\n", {"S", "U"}),
    # A branch and a loop bound.
    ("  if (i < U) o[i] = a[i * S];\n", {"S", "U"}),
    ("  for (int t = 0; t < U; ++t) o[i] += a[i * S];\n", {"S", "U"}),
    # A value carried round a loop: tainted on the second pass only.
    ("  int x = 0;\n  for (int t = 0; t < n; ++t) { o[x] = a[i * S]; x = U; }\n", {"S", "U"}),
    # Stored to shared memory and loaded back as an index.
    ("  __shared__ int s[32];\n  s[i] = U;\n  __syncthreads();\n  o[s[i ^ 1]] = a[i * S];\n", {"S", "U"}),
    # Stored to shared memory and only summed: still a value.
    ("  __shared__ float s[32];\n  s[i] = a[i * S] * U;\n  __syncthreads();\n  o[i] = s[i] + s[i ^ 1];\n", {"S"}),
    # A local array sized by it.
    ("  float r[U];\n  r[0] = a[i * S];\n  o[i] = r[0];\n", {"S", "U"}),
    # `?:` and `&&` choose lanes.
    ("  o[i] = i < U ? a[i * S] : 0.0f;\n", {"S", "U"}),
    ("  if (i < n && U > 1) o[i] = a[i * S];\n", {"S", "U"}),
    # A `#pragma` the lowering does not keep: a use it cannot see.
    ("  #pragma unroll U\n  for (int t = 0; t < 4; ++t) o[i] += a[i * S];\n", {"S", "U"}),
    # A call without a body given the value.
    ("  o[i] = __shfl_sync(0xffffffffu, a[i * S], U);\n", {"S", "U"}),
])
def test_which_parameters_decide(body: str, deciding: set[str]) -> None:
    assert _deciding(HEAD + body + "}\n") == deciding


def test_a_helper_follows_its_template_argument_and_its_arguments() -> None:
    helpers = ("template <int W>\n__device__ float scaled(const float* a, int i) { return a[i] * W; }\n"
               "template <int W>\n__device__ float strided(const float* a, int i) { return a[i * W]; }\n"
               "__device__ float at(const float* a, int i) { return a[i]; }\n")
    value = helpers + HEAD + "  o[i] = scaled<U>(a, i * S);\n}\n"
    assert _deciding(value) == {"S"}
    assert _deciding(helpers + HEAD + "  o[i] = strided<U>(a, i);\n}\n") == {"U"}
    assert _deciding(helpers + HEAD + "  o[i] = at(a, i + U);\n}\n") == {"U"}


def test_a_helper_the_walk_cannot_pick_decides_once_memory_holds_a_tainted_value() -> None:
    # Two overloads of one arity called with a dependent argument: the template's call names no target,
    # and an instance inlines one of them, which loads the stored value and stores through it.
    helpers = ("__device__ void put(const int* s, const float* a, float* o, int i) { o[s[i]] = a[i]; }\n"
               "__device__ void put(const int* s, const double* a, float* o, int i) { o[i] = s[i] + a[i]; }\n")
    head = "template <typename T, int U>\n__global__ void k(const T* a, float* o) {\n  int i = threadIdx.x;\n"
    body = "  __shared__ int s[32];\n  s[i] = {};\n  __syncthreads();\n  put(s, a, o, i);\n}}\n"
    assert _deciding(helpers + head + body.format("U")) == {"T", "U"}
    assert _deciding(helpers + head + body.format("i") + "// U\n") == {"T"}


def test_a_type_parameter_always_decides() -> None:
    src = "template <typename T, int U>\n__global__ void k(const T* a, T* o) { o[threadIdx.x] = a[threadIdx.x] * U; }\n"
    assert _deciding(src) == {"T"}


def _source(n: int, index_uses_u: bool) -> str:
    load = "a[i * S + U]" if index_uses_u else "a[i * S] * U"
    launches = "".join(f"  k<{1 + i % 2}, {i + 1}><<<64, 256>>>(a, o, n);\n" for i in range(n))
    return (HEAD.replace("int i = threadIdx.x;", "int i = blockIdx.x * blockDim.x + threadIdx.x;")
            + f"  if (i < n) o[i] = {load};\n}}\n\nvoid run(const float* a, float* o, int n) {{\n{launches}}}\n")


@pytest.mark.parametrize("index_uses_u, runs", [(False, 2), (True, 6)])
def test_bindings_asking_the_same_questions_are_evaluated_once(monkeypatch: pytest.MonkeyPatch,
                                                               index_uses_u: bool, runs: int) -> None:
    counted = []
    real = interp.Interpreter.run

    def run(self: interp.Interpreter) -> object:
        counted.append(dict(self.bindings))
        return real(self)

    monkeypatch.setattr(interp.Interpreter, "run", run)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.cu")
        text = _source(10, index_uses_u)
        with open(path, "w") as fh:
            fh.write(text)
        res = lint_source(text, path, LintOptions(resources=False))
    # Two values of S, ten of U: U decides only when it reaches the index (then the usual cap of 6 bindings).
    assert len(counted) == runs
    findings = [d for d in res.diagnostics if d.code == "KL101"]
    assert findings
    said = " ".join(a for d in findings for a in d.assumptions)
    assert ("the same evaluation stands for" in said) is (not index_uses_u)
    if not index_uses_u:
        assert "no address, branch or size depends on U" in said


def test_a_binding_also_evaluated_under_another_shape_is_not_counted_as_stood_for() -> None:
    from kernlint.eval.binding_questions import same_questions
    from kernlint.project.launch import LaunchShape

    src = HEAD + "  o[i] = a[i * S] * U;\n}\n"
    tu = parse_source(src, "/tmp/kl_binding_questions.cu")
    fn = next(k for k in tu.kernels if k.name == "k")

    def shape(u: str, block: int, line: int) -> LaunchShape:
        return LaunchShape((block, 1, 1), f"launch at line {line}", bindings=(("S", "1"), ("U", u)),
                           binding_source=f"the launch at line {line}")

    shapes = [shape("1", 256, 10), shape("2", 256, 11), shape("2", 128, 12), shape("3", 256, 13)]
    kept, stands = same_questions(fn, tu, shapes, tuple(src.split("\n")))
    # U = 2 at block 256 and U = 3 are covered by U = 1; U = 2 at block 128 asks its own question.
    assert [(s.block[0], dict(s.bindings)["U"]) for s in kept] == [(256, "1"), (128, "2")]
    assert "U = 2 (line 11) and U = 3 (line 13)" in kept[0].binding_source
    # Only U = 3 is stood for: U = 2 is evaluated under its own shape.
    assert stands == {(("S", "1"), ("U", "1")): 1}
