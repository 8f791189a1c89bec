"""The stub for missing PyTorch headers (kernlint/ir/known_torch.py): launches inside ATen's dispatch macros
bind the kernel once per dispatched type."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend import parse_source
from kernlint.ir.known_headers import stub_text
from kernlint.ir.known_torch import binding_headers, is_torch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE = FIXTURES / "KL101_torch_dispatch.cu"
PROJECT = FIXTURES / "projects" / "torch_dispatch"

# What kernlint said of a kernel launched in a dispatch macro before the stub: the launch was lost.
LOST = ("no instantiation in the file", "no launch found")


def _lint(text: str, path: str, **kw: object) -> list:
    return list(lint_source(text, path, LintOptions(resources=False, **kw)).diagnostics)  # type: ignore[arg-type]


def test_pytorch_headers_get_the_stub_by_path() -> None:
    for name in ("torch/all.h", "torch/extension.h", "ATen/Dispatch.h", "ATen/cuda/CUDAContext.h",
                 "c10/cuda/CUDAGuard.h", "c10/util/Half.h"):
        assert is_torch(name), name
        assert "#define AT_DISPATCH_SWITCH" in stub_text(name)
    assert not is_torch("mytorch/all.h") and "AT_DISPATCH" not in stub_text("dispatch.h")
    assert binding_headers((("scalar_t", "c10::Half"),)) == ("ATen/ATen.h",)
    assert binding_headers((("scalar_t", "float"), ("N", "128"))) == ()
    assert binding_headers((("T", "my_c10::Half"),)) == ()  # (another namespace that ends the same way)


def test_scalar_types_follow_c10() -> None:
    # c10/core/ScalarType.h numbers the types in its list's order; extension code compares and stores them.
    text = stub_text("torch/all.h") + """
static_assert((int)c10::ScalarType::Byte == 0 && (int)at::ScalarType::Half == 5, "");
static_assert((int)at::ScalarType::Float == 6 && (int)at::ScalarType::Bool == 11, "");
static_assert((int)at::ScalarType::BFloat16 == 15 && at::kFloat32 == at::kFloat && torch::kHalf == at::ScalarType::Half, "");
static_assert(sizeof(c10::Half) == 2 && alignof(c10::Half) == 2 && sizeof(at::BFloat16) == 2, "");
static_assert(sizeof(c10::complex<float>) == 8 && alignof(c10::complex<double>) == 16, "");
static_assert(sizeof(c10::impl::ScalarTypeToCPPTypeT<at::ScalarType::Long>) == 8, "");
"""
    tu = parse_source(text, "/tmp/kernlint_scalar_types.cu")
    assert not [p for p in tu.problems], tu.problems


def test_each_dispatched_type_is_a_binding_and_the_worst_is_named() -> None:
    diags = _lint(FIXTURE.read_text(), str(FIXTURE))
    (d,) = [d for d in diags if d.code == "KL101"]
    assert d.line == 16
    # c10::Half: 2 bytes a lane, 64 bytes a warp in 2 sectors, 32 touched (worked in the fixture).
    assert "32 32-byte sectors for 64 bytes; 2 would suffice" in d.message
    said = " ".join(d.notes + d.assumptions)
    assert "scalar_t = c10::Half" in " ".join(d.assumptions)
    assert "32 sectors where 8 would do" in said and "scalar_t = double" in said  # 8 bytes a lane
    assert "32 sectors where 4 would do" in said and "scalar_t = float" in said  # 4 bytes a lane
    assert not any(x in said for x in LOST)
    assert not [d for d in diags if d.code in ("KL903", "KL904")]


def test_a_runtime_block_in_a_dispatch_keeps_each_binding_apart() -> None:
    # vLLM's activation kernels launch with `dim3 block(std::min(d, 1024))`: a runtime block, tried under
    # several values; the shapes of one binding agree among themselves, and the bindings merge as launches.
    text = FIXTURE.read_text().replace("dim3 block(threads);", "dim3 block(in.size(1) < 1024 ? 128 : 256);")
    diags = _lint(text, "/tmp/kernlint_torch_runtime_block.cu")
    (d,) = [d for d in diags if d.code == "KL101"]
    said = " ".join(d.notes + d.assumptions)
    assert "scalar_t = c10::Half" in " ".join(d.assumptions) and "scalar_t = float" in said
    assert "every guessed shape must agree" not in said  # (the bindings are not guesses)
    assert not any(x in said for x in LOST)


def test_without_the_stub_the_launch_was_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernlint.frontend import clang_frontend

    monkeypatch.setattr(clang_frontend, "stub_text", lambda name: "")
    text = FIXTURE.read_text() + "\n// (no stub)\n"
    diags = _lint(text, "/tmp/kernlint_torch_without_stub.cu")
    said = " ".join(a for d in diags for a in d.assumptions)
    assert "no launch found" in said and "scalar_t = float (assumed" in said


def test_host_code_beyond_the_stub_does_not_hide_the_launch() -> None:
    # Host code using PyTorch API the stub does not declare: host parse errors only; the launch is read.
    text = FIXTURE.read_text().replace(
        "    const int threads = 128;",
        "    auto opts = torch::nn::functional::GELUFuncOptions().approximate(\"tanh\");\n"
        "    std::vector<int64_t> shape = in.sizes().vec();\n"
        "    const int threads = 128;")
    diags = _lint(text, "/tmp/kernlint_torch_host_errors.cu")
    (d,) = [d for d in diags if d.code == "KL101"]
    assert d.line == 16 and "scalar_t = c10::Half" in " ".join(d.assumptions)
    assert not [x for x in diags if x.code in ("KL903", "KL904")]


def test_a_real_header_wins_over_the_stub(tmp_path: Path) -> None:
    # A PyTorch found with -I is used: its torch/all.h (a tiny fake here) defines what the stub does not.
    inc = tmp_path / "inc" / "torch"
    inc.mkdir(parents=True)
    (inc / "all.h").write_text("#pragma once\n#define KERNLINT_FAKE_TORCH_STRIDE 16\n")
    src = tmp_path / "k.cu"
    text = ("#include <torch/all.h>\n"
            "__global__ void k(float* out, const float* in) {\n"
            "    out[threadIdx.x] = in[threadIdx.x * KERNLINT_FAKE_TORCH_STRIDE];\n"
            "}\n")
    src.write_text(text)
    with_real = parse_source(text, str(src), include_dirs=(str(tmp_path / "inc"),))
    assert "torch/all.h" not in with_real.stubbed
    diags = _lint(text, str(src), include_dirs=(str(tmp_path / "inc"),))
    (d,) = [d for d in diags if d.code == "KL101"]
    assert "consecutive lanes are 64 bytes apart" in " ".join(d.notes)  # 16 floats
    # Without -I the stub is read, which has no such macro: the access is not evaluated.
    alone = parse_source(text, str(src))
    assert "torch/all.h" in alone.stubbed
    assert not [d for d in _lint(text, str(src)) if d.code == "KL101"]


def test_the_index_reads_one_launch_per_dispatched_type() -> None:
    from kernlint.project.clang_scan import read_with_clang
    from kernlint.project.scan import scan_text

    path = PROJECT / "ops.cu"
    text = path.read_text()
    facts = read_with_clang(scan_text(text), str(path), text, str(PROJECT))
    got = sorted(ln.template_args for ln in facts.launches if ln.kernel == "gather_stride8")
    assert got == [("c10::Half",), ("float",)]


def test_the_header_alone_names_the_worse_binding_through_the_index(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from kernlint.project.clang_scan import wanted
    from kernlint.project.scan import scan_text

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path))
    ops = (PROJECT / "ops.cu").read_text()
    assert wanted(scan_text(ops), ops)  # (the index's pre-filter picks the file that launches in the macro)
    import json

    from click.testing import CliRunner

    from kernlint.cli.command import main

    by_file = {}
    for name in ("kernels.cuh", "ops.cu"):
        res = CliRunner().invoke(main, [str(PROJECT / name), "--format", "json", "--no-ptxas"], catch_exceptions=False)
        (d,) = [d for d in json.loads(res.stdout)["diagnostics"] if d["code"] == "KL201"]
        by_file[name] = (Path(d["path"]).name, d["line"], d["message"], tuple(d["notes"]), tuple(d["assumptions"]))
    assert by_file["kernels.cuh"] == by_file["ops.cu"]
    where, line, message, notes, assumptions = by_file["kernels.cuh"]
    # float: lanes 32 bytes apart, 8-way; c10::Half: 16 bytes apart, 4-way (worked in kernels.cuh).
    assert (where, line) == ("kernels.cuh", 18) and "8-way bank conflict" in message
    assert "scalar_t = float" in " ".join(assumptions)
    assert "4-way with the launch at ops.cu:16 (blockDim = (256, 1, 1); scalar_t = c10::Half)" in " ".join(notes)
    assert not any(x in " ".join(notes + assumptions) for x in LOST)


def test_a_binding_whose_traits_class_breaks_is_passed_over() -> None:
    from types import SimpleNamespace

    from kernlint.engine.lint import _bound_class_broken

    def inst(*messages: str) -> tuple:
        return (SimpleNamespace(problems=[SimpleNamespace(message=m) for m in messages]),
                SimpleNamespace(unresolved=[]))

    half = (("Ktraits", "Traits < 32 , 4 , at::Half , float >"),)
    broken = inst("no member named 'kIsVariableB' in 'Traits<32, 4, c10::Half, float>'")
    assert _bound_class_broken(half, broken)
    # A missing member of another class (the kernel's own mistake, or a library type) is not the binding's.
    assert not _bound_class_broken(half, inst("no member named 'x' in 'cub::BlockLoad<float, 32, 4>'"))
    assert not _bound_class_broken(half, inst("use of undeclared identifier 'M_LOG2E'"))
    assert not _bound_class_broken((("T", "float"),), broken)  # (no class in the binding)


def test_atomics_conj_and_math_constants_of_pytorch_code_are_read() -> None:
    """`gpuAtomicAdd` (ATen/cuda/Atomic.cuh), `std::conj` of a c10::complex (c10/util/complex.h) and <math.h>'s
    `M_LOG2E` were unresolved names: the kernel was only partly analysed. Now the atomic's address is an
    access kernlint evaluates and the kernel is fully analysed."""
    src = """#include <ATen/cuda/Atomic.cuh>
#include <c10/util/complex.h>
// kernlint: block=(128,1,1)
__global__ void k(float* out, c10::complex<float>* acc, const c10::complex<float>* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c10::complex<float> z = std::conj(in[i]);
    gpuAtomicAdd(&acc[i], z);
    gpuAtomicAdd(&out[i], z.real_ * float(M_LOG2E));
}
"""
    res = lint_source(src, "k.cu", LintOptions(resources=False))
    [rec] = res.coverage
    assert rec.status == "full", rec
    assert not [d for d in res.diagnostics if d.code in ("KL903", "KL904")]
