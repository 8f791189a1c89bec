"""Asynchronous copies (eval/async_copy.py, ir/known_pipeline.py): which headers get the model, what a copy reads."""
from __future__ import annotations

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.ir.known_headers import stub_text
from kernlint.ir.known_pipeline import is_async_stub


def test_the_async_headers_get_the_model_and_nothing_else_does() -> None:
    for name in ("cuda/pipeline", "cuda/barrier", "include/cuda/pipeline"):
        assert "__kernlint_memcpy_async(dst, src, size)" in stub_text(name), name
    assert "memcpy_async(const Group &group" in stub_text("cooperative_groups/memcpy_async.h")
    # the primitives are the shim's; a header of the same file name elsewhere is not libcu++'s
    assert stub_text("cuda_pipeline.h") == "" and stub_text("mylib/pipeline") == "" and stub_text("pipeline") == ""
    assert is_async_stub("/__kernlint_stub__/cuda/pipeline") and not is_async_stub("/__kernlint_stub__/cuda/pipe")


def _lint(code: str):
    return lint_source(code, "k.cu", LintOptions(block=(128, 1, 1), resources=False))


def test_a_copy_is_a_global_read_and_a_shared_write_of_its_size() -> None:
    """Lanes 64 bytes apart copying 8 bytes each: the read is KL101 (each lane's 8 bytes in a sector of
    its own: 32 sectors for 256 bytes, 8 would do), the shared write conflict-free (tile[2 t]); with a
    copy of 4 bytes from the same addresses the read is still one sector a lane, 32 for 128 bytes."""
    code = """
#include <cuda/pipeline>
__global__ void k(const float* in, float* out) {
    __shared__ alignas(16) float tile[256];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    cuda::memcpy_async(&tile[threadIdx.x * 2], &in[threadIdx.x * 16], cuda::aligned_size_t<8>(8), pipe);
    pipe.consumer_wait();
    out[threadIdx.x] = tile[threadIdx.x];
}
"""
    result = _lint(code)
    (d,) = [d for d in result.diagnostics if d.code == "KL101"]
    assert d.line == 6 and "32 32-byte sectors for 256 bytes; 8 would suffice" in d.message, d.message
    assert any("asynchronous copy `cuda::memcpy_async`" in n for n in d.notes)
    assert not [d for d in result.diagnostics if d.code in ("KL201", "KL904")]
    four = _lint(code.replace("cuda::aligned_size_t<8>(8)", "sizeof(float)"))
    (d,) = [d for d in four.diagnostics if d.code == "KL101"]
    assert "32 32-byte sectors for 128 bytes; 4 would suffice" in d.message, d.message
