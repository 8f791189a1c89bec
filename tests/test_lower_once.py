"""Issue 31: a template kernel's instance parse lowers only that kernel, and helpers are lowered once per run."""
from __future__ import annotations

from kernlint.frontend import parse_source
from kernlint.frontend.instantiate import instantiate_text

SOURCE = """\
template <int W>
__device__ float before(const float* a, int i) { return a[i * W]; }

template <int S>
__global__ void k(const float* a, float* o) {
  int i = threadIdx.x;
  o[i] = before<S>(a, i);
}

__device__ float late(const float* a, int i) { return a[i + 1]; }

__global__ void other(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 2]; }

void run(const float* a, float* o) {
  k<4><<<1, 32>>>(a, o);
  other<<<1, 32>>>(a, o);
}
"""


def _parse(text: str, kernel: str | None = None):
    return parse_source(text, "/tmp/kl_lower_once.cu", kernel=kernel)


def test_an_instance_parse_lowers_only_its_kernel_and_reads_no_launches() -> None:
    tu = _parse(SOURCE)
    k = next(f for f in tu.kernels if f.name == "k")
    assert {f.name for f in tu.kernels} == {"k", "other"}
    assert {ln.kernel for ln in tu.launches} == {"k", "other"}
    text = instantiate_text(SOURCE, k.span.line, "k", {"S": "4"})
    assert text is not None
    inst = _parse(text, kernel=k.key)
    assert [f.name for f in inst.kernels] == ["k"] and not inst.kernels[0].template_params
    assert inst.launches == ()
    # The file's other kernel is still there, lowered when asked for (a call could name it).
    other = inst.functions.named("other")
    assert len(other) == 1 and other[0].is_kernel and other[0].body is not None


def test_a_helper_before_the_instantiated_kernel_is_lowered_once_for_every_parse() -> None:
    tu = _parse(SOURCE)
    k = next(f for f in tu.kernels if f.name == "k")
    first = tu.functions.named("before")
    assert len(first) == 1
    for value in ("4", "8"):
        inst = _parse(instantiate_text(SOURCE, k.span.line, "k", {"S": value}) or "", kernel=k.key)
        again = inst.functions.named("before")
        assert again == first and again[0] is first[0]  # the same IR object: not lowered again


def test_a_function_after_the_changed_text_is_lowered_again() -> None:
    tu = _parse(SOURCE)
    k = next(f for f in tu.kernels if f.name == "k")
    inst = _parse(instantiate_text(SOURCE, k.span.line, "k", {"S": "4"}) or "", kernel=k.key)
    # `late` comes after the kernel whose text the instance changed: its parse is not assumed the same.
    mine, theirs = tu.functions.named("late"), inst.functions.named("late")
    assert mine == theirs and mine[0] is not theirs[0]


def test_an_edit_before_a_helper_is_not_hidden_by_the_shared_ir() -> None:
    tu = _parse(SOURCE)
    edited = _parse(SOURCE.replace("a[i * W]", "a[i * W + 1]"))
    old, new = tu.functions.named("before")[0], edited.functions.named("before")[0]
    assert old != new


def test_nothing_is_shared_with_the_next_file_lint() -> None:
    """Between lints a header may change on disk (an editor server lints again): the store is emptied
    when a file is done."""
    from kernlint.frontend import release_parses

    first = _parse(SOURCE).functions.named("before")[0]
    release_parses()
    again = _parse(SOURCE).functions.named("before")[0]
    assert again == first and again is not first
