"""A front end that does not give up: missing and odd includes, the arch, header kernels, host code, bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import collect_paths, main
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend import parse_source
from kernlint.ir.includes import scan_includes

STRIDED = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def run(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "--no-ptxas"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def codes(text: str, path: str = "t.cu", **kw: object) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in lint_source(text, path, LintOptions(resources=False, **kw)).diagnostics:  # type: ignore[arg-type]
        out.setdefault(d.code, []).append(d)
    return out


# --- 1. every missing include is stubbed ---------------------------------------------------------

def test_includes_named_through_macros_are_stubbed_until_none_is_missing() -> None:
    # Twelve includes that only clang's "file not found" reveals (one per parse): more than the
    # old bound of four parses. After a fatal error clang would stop: the template launched last
    # would keep its parameter unbound and KL101 would be missed.
    heads = "".join(f"#include HDR({i})\n" for i in range(12))
    src = ("#define HDR(n) <gen/part_##n.h>\n" + heads +
           "template <int S> __global__ void g(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * S]; }\n"
           "void run(const float* a, float* o) { g<32><<<1, 128>>>(a, o); }\n")
    tu = parse_source(src, "t.cu")
    assert tu.stubbed == tuple(sorted(f"gen/part_{i}.h" for i in range(12)))
    assert not any("file not found" in p.message for p in tu.problems)
    assert "KL101" in codes(src)


def test_prescan_follows_found_local_headers(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "a.h").write_text('#include "b.h"\n#include <deep/missing.h>\n')
    (tmp_path / "inc" / "b.h").write_text('#include "a.h"\n#include "also_missing.h"\n')  # a cycle
    found = scan_includes('#include "a.h"\n#include <top.h>\n', str(tmp_path / "k.cu"), (str(tmp_path / "inc"),))
    assert found.names == {"deep/missing.h", "also_missing.h", "top.h"}
    assert not found.paths


def test_stub_never_hides_a_real_header(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.h").write_text("#define TILE 32\n")
    # `tile.h` is missing next to the file but present on the include path: the real one is read.
    src = '#include "tile.h"\n__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * TILE]; }\n'
    tu = parse_source(src, str(tmp_path / "k.cu"), include_dirs=(str(tmp_path / "inc"),))
    assert tu.stubbed == ()
    assert "KL101" in codes(src, str(tmp_path / "k.cu"), include_dirs=(str(tmp_path / "inc"),))


def test_kl903_names_the_stubbed_headers() -> None:
    src = ('#include <cublas_v2.h>\n#include "mylib/types.h"\n'
           "__global__ void k(float* a, void* p) { a[threadIdx.x] = ((Foo*)p)->v; }\n")
    found = codes(src)
    assert "KL900" not in found  # `(Foo*)p` with Foo undeclared: an unresolved name, not a syntax error
    (d,) = found["KL903"]
    assert "Foo" in d.message
    assert any("cublas_v2.h" in n and "mylib/types.h" in n for n in d.notes)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_includes_of_non_regular_files_are_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.h")
    (tmp_path / "adir").mkdir()
    src = ('#include "/dev/zero"\n#include "pipe.h"\n#include "adir"\n#include "/no/such/abs.h"\n' + STRIDED)
    (tmp_path / "k.cu").write_text(src)
    # In a child process with a timeout: opening the FIFO or /dev/zero would hang or exhaust memory.
    proc = subprocess.run([sys.executable, "-c", "import sys; from kernlint.cli.command import main; main()",
                           str(tmp_path / "k.cu"), "--no-ptxas", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["KL101"]


# --- 2. one arch default ---------------------------------------------------------------------------

ARCH_GUARDED = """
#if __CUDA_ARCH__ >= 800
__global__ void new_only(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }
#endif
#if __CUDA_ARCH__ >= 1000
__global__ void blackwell_only(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }
#endif
"""


def test_device_code_is_preprocessed_for_the_run_arch() -> None:
    assert [k.name for k in parse_source(ARCH_GUARDED, "t.cu").kernels] == ["new_only"]  # default sm_80
    assert [k.name for k in parse_source(ARCH_GUARDED, "t.cu", arch="sm_70").kernels] == []
    assert [k.name for k in parse_source(ARCH_GUARDED, "t.cu", arch="sm_100").kernels] == ["new_only",
                                                                                           "blackwell_only"]
    assert lint_source(ARCH_GUARDED, "t.cu", LintOptions(resources=False)).kernels == ("new_only",)


def test_engine_parses_with_the_occupancy_default() -> None:
    from kernlint.model.occupancy import DEFAULT_ARCH

    src = f"__global__ void k(int* o) {{ o[threadIdx.x] = __CUDA_ARCH__; }}\n#if __CUDA_ARCH__ == {DEFAULT_ARCH[3:]}0\n" \
          "__global__ void same(int* o) { o[threadIdx.x] = 1; }\n#endif\n"
    assert "same" in lint_source(src, "t.cu", LintOptions(resources=False)).kernels


# --- 3. kernels in headers -------------------------------------------------------------------------

def test_directory_mode_finds_header_kernels_but_skips_plain_cpp(tmp_path: Path) -> None:
    (tmp_path / "kernels.h").write_text(STRIDED)
    (tmp_path / "ops.hpp").write_text("template <class T> __device__ T twice(T x) { return 2 * x; }\n")
    (tmp_path / "frag.inl").write_text(STRIDED)
    (tmp_path / "host.cpp").write_text("void f() { k<<<1, 32>>>(0, 0); }\n")
    (tmp_path / "plain.hpp").write_text("struct Host { int x; };\n")
    (tmp_path / "plain.cc").write_text("int main() { return 0; }\n")
    (tmp_path / "main.cu").write_text("int main() { return 0; }\n")
    files, problems = collect_paths((str(tmp_path),), ())
    assert not problems
    assert sorted(Path(f).name for f in files) == ["frag.inl", "host.cpp", "kernels.h", "main.cu", "ops.hpp"]
    code, out, _ = run([str(tmp_path), "--format", "concise"])
    assert code == 1 and "kernels.h:1" in out and "frag.inl:1" in out


def test_named_plain_cpp_files_are_linted(tmp_path: Path) -> None:
    (tmp_path / "plain.hpp").write_text("struct Host { int x; };\n")
    assert collect_paths((str(tmp_path / "plain.hpp"),), ())[0] == [str(tmp_path / "plain.hpp")]
    assert run([str(tmp_path / "plain.hpp")])[0] == 0


# --- 4. host code that does not parse ---------------------------------------------------------------

HOST_ONLY = """
#include "app/context.h"
void setup(void* p) {
    Context* ctx = (Context*)p;
    ctx->init(;
}
"""


def test_host_only_file_that_does_not_parse_exits_0(tmp_path: Path) -> None:
    (tmp_path / "host.cu").write_text(HOST_ONLY)
    code, out, err = run([str(tmp_path / "host.cu"), "--format", "json"])
    assert code == 0, out + err
    assert json.loads(out)["diagnostics"] == []


def test_host_error_beside_a_kernel_is_info_and_the_kernel_is_analysed(tmp_path: Path) -> None:
    host = 'void setup(void* p) {\n    Context* ctx = (Context*)p;\n    int n = 1 + ;\n}\n'
    (tmp_path / "mixed.cu").write_text(host + STRIDED)
    code, out, _ = run([str(tmp_path / "mixed.cu"), "--format", "json", "--fail-on", "error"])
    diags = json.loads(out)["diagnostics"]
    assert code == 0
    kl900 = [d for d in diags if d["code"] == "KL900"]
    assert len(kl900) == 1 and kl900[0]["severity"] == "info" and "outside the kernels" in kl900[0]["message"]
    assert any(d["code"] == "KL101" for d in diags)


def test_syntax_errors_that_touch_a_kernel_stay_errors(tmp_path: Path) -> None:
    in_helper = ("__device__ float helper(const float* a) { return a[threadIdx.x] + ; }\n"
                 "__global__ void k(const float* a, float* o) { o[threadIdx.x] = helper(a); }\n")
    (d,) = codes(in_helper)["KL900"]
    assert d.severity.name == "ERROR" and d.kernel == "k" and d.line == 1
    # A file whose only kernel was lost in an error: not silent.
    lost = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x] + ; \n"
    (tmp_path / "lost.cu").write_text(lost)
    assert run([str(tmp_path / "lost.cu")])[0] == 2


# --- 5. undecodable bytes -------------------------------------------------------------------------------

def test_latin1_comment_is_read_with_one_note(tmp_path: Path) -> None:
    (tmp_path / "latin.cu").write_bytes(b"// Copyright \xa9 2019 J\xfcrgen\n// caf\xe9\n" + STRIDED.encode())
    code, out, err = run([str(tmp_path / "latin.cu"), "--format", "concise"])
    assert code == 1 and "KL101" in out
    assert err.count("note: not valid UTF-8") == 1 and "latin.cu:1:" in err
    assert "latin.cu:3:" in out  # line numbers unchanged


def test_binary_files_still_exit_2(tmp_path: Path) -> None:
    (tmp_path / "nul.cu").write_bytes(b"\x7fELF\x00\x00\x01")
    (tmp_path / "noise.cu").write_bytes(bytes(range(1, 256)) * 4)
    code, _, err = run([str(tmp_path / "nul.cu"), str(tmp_path / "noise.cu")])
    assert code == 2 and "nul.cu: error: binary file" in err and "noise.cu:2: error: not valid UTF-8" in err
