"""Issue 31: the functions after a template kernel made concrete are lowered once for all of its bindings
(frontend/clang_frontend._deferring_table's `masked`), never shared with the template's own parse or
across what the binding can change."""
from __future__ import annotations

from kernlint.frontend import parse_source
from kernlint.frontend.instantiate import instantiate_region, instantiate_text

SOURCE = """\
template <int S>
__global__ void k(const float* a, float* o) {
  o[threadIdx.x] = a[threadIdx.x * S];
}

__device__ float late(const float* a, int i) { return a[i + 1]; }

template <int T>
__global__ void k2(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * T]; } __device__ float same_line(const float* a) { return a[2]; }

void run(const float* a, float* o) { k<4><<<1, 32>>>(a, o); }
"""

PATH = "/tmp/kl_instance_sharing.cu"


def _instance(name: str, value: str, param: str):
    tu = parse_source(SOURCE, PATH)
    fn = next(f for f in tu.kernels if f.name == name)
    made = instantiate_region(SOURCE, fn.span.line, name, {param: value})
    assert made is not None and made[0] == instantiate_text(SOURCE, fn.span.line, name, {param: value})
    return tu, parse_source(made[0], PATH, kernel=fn.key, instance_region=made[1])


def test_region_is_the_concrete_kernel() -> None:
    tu = parse_source(SOURCE, PATH)
    fn = next(f for f in tu.kernels if f.name == "k")
    text, (start, end) = instantiate_region(SOURCE, fn.span.line, "k", {"S": "4"})  # type: ignore[misc]
    assert text[start:end].startswith("namespace __kl_inst_0 {") and text[start:end].endswith("} }")
    assert text[:start] == SOURCE[:start] and text[end:] == SOURCE[SOURCE.index("}\n\n__device__") + 1:]


def test_a_function_after_the_kernel_is_shared_by_its_bindings_only() -> None:
    tu, four = _instance("k", "4", "S")
    _, eight = _instance("k", "8", "S")
    late4, late8 = four.functions.named("late")[0], eight.functions.named("late")[0]
    assert late4 is late8  # one lowering for both bindings
    assert late4 == tu.functions.named("late")[0] and late4 is not tu.functions.named("late")[0]
    k4, k8 = four.kernels[0], eight.kernels[0]
    assert k4 is not k8 and k4 != k8  # the kernel itself is the binding's own
    _, other = _instance("k2", "4", "T")
    assert other.functions.named("late")[0] is not late4  # another kernel's instance: another text before it


def test_a_function_on_the_kernels_last_line_is_not_shared() -> None:
    # Its columns move with the binding's length when the whole kernel is on one line.
    _, four = _instance("k2", "4", "T")
    _, eight = _instance("k2", "128", "T")
    assert four.functions.named("same_line")[0] is not eight.functions.named("same_line")[0]
