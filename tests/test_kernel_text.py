"""A file that cannot define a kernel is answered "no kernels" from its text, without clang; any text that
could make one keeps the parse (project/kernel_text.py, engine/lint._may_define_kernels)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.ir import includes
from kernlint.project.kernel_text import may_define_kernels

KERNEL = "__global__ void k(float* a) { a[threadIdx.x * 32] = 0.f; }\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_keyword_anywhere_in_the_include_closure_keeps_the_parse(tmp_path: Path) -> None:
    write(tmp_path, {"a.h": '#include "sub/b.h"\n', "sub/b.h": "#include <c.h>\n", "inc/c.h": "// host only\n"})
    main = '#include "a.h"\nint main() { return 0; }\n'
    assert not may_define_kernels(main, str(tmp_path / "m.cu"), [str(tmp_path / "inc")], [], [])
    (tmp_path / "inc" / "c.h").write_text("#define K __global__\n")  # an angle include found through -I
    assert may_define_kernels(main, str(tmp_path / "m.cu"), [str(tmp_path / "inc")], [], [])
    # Not found through the include path: clang reads it as an empty stub, so it defines nothing.
    assert not may_define_kernels(main, str(tmp_path / "m.cu"), [], [], [])


@pytest.mark.parametrize("spelled", ["__global__", "__attribute__ (( global ))", "__location__(global)"])
def test_every_spelling_of_the_kernel_attribute_counts(tmp_path: Path, spelled: str) -> None:
    assert may_define_kernels(f"{spelled} void k() {{}}\n", str(tmp_path / "m.cu"), [], [], [])


def test_a_command_line_macro_counts(tmp_path: Path) -> None:
    text = "KERNEL void k(float* a) { a[0] = 0; }\n"
    assert not may_define_kernels(text, str(tmp_path / "m.cu"), [], ["N=4"], [])
    assert may_define_kernels(text, str(tmp_path / "m.cu"), [], ["KERNEL=__global__"], [])


def test_an_includer_counts_only_through_its_defines(tmp_path: Path) -> None:
    write(tmp_path, {"runner.cu": '#include "frag.cuh"\n' + KERNEL, "macro.h": "#define KERNEL \\\n  __global__ void\n",
                     "uses_macro.cu": '#include "macro.h"\n#include "frag.cuh"\n'})
    frag = "KERNEL k(float* a) { a[0] = 0; }\n"
    where = str(tmp_path / "frag.cuh")
    # A kernel of the includer itself is no kernel of the fragment...
    assert not may_define_kernels(frag, where, [], [], [str(tmp_path / "runner.cu")])
    # ...but a #define (here a continued one, in a header the includer reaches) may make one of its text.
    assert may_define_kernels(frag, where, [], [], [str(tmp_path / "uses_macro.cu")])
    assert may_define_kernels(frag, where, [], [], [str(tmp_path / "missing.cu")])  # unreadable: may


def test_a_header_the_scan_cannot_read_whole_keeps_the_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"big.h": "// " + "x" * 200 + "\n__global__ void k() {}\n"})
    monkeypatch.setattr(includes, "SCAN_BYTES", 64)
    monkeypatch.setattr(includes, "_HEADERS", {})
    assert may_define_kernels('#include "big.h"\n', str(tmp_path / "m.cu"), [], [], [])


def test_a_host_file_is_linted_without_clang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernlint.project import units

    def no_parse(*_a: object, **_k: object) -> None:
        raise AssertionError("clang was asked to parse a file that cannot define a kernel")

    write(tmp_path, {"util.h": "static int twice(int x) { return 2 * x; }\n"})
    monkeypatch.setattr(units.Unit, "parse", no_parse)
    host = '#include "util.h"\nint main() { return twice(3); }\n'
    res = lint_source(host, str(tmp_path / "host.cu"), LintOptions())
    assert res.kernels == () and res.diagnostics == ()
    with pytest.raises(AssertionError, match="clang was asked"):
        lint_source(host + KERNEL, str(tmp_path / "host.cu"), LintOptions())


def test_an_include_the_scan_cannot_follow_keeps_the_parse(tmp_path: Path) -> None:
    """`#include KERNELS` (a macro naming the file), `#include_next`, `#import`: what they read is not known
    from the text, so the file may define a kernel there."""
    for directive in ("#include KERNELS", "#include_next <k.h>", "#import <k.h>"):
        assert may_define_kernels(f"#define KERNELS \"k.cuh\"\n{directive}\n", str(tmp_path / "m.cu"), [], [], [])
    assert not may_define_kernels('#include "k.cuh"\n', str(tmp_path / "m.cu"), [], [], [])  # not there: a stub


def test_angle_includes_are_also_searched_beside_the_main_file(tmp_path: Path) -> None:
    """The parse searches the linted file's directory after the -I directories, for `<name>` too."""
    write(tmp_path, {"sub/kern.h": KERNEL, "sub/host.h": "#include <kern.h>\n"})
    assert may_define_kernels("#include <kern.h>\n", str(tmp_path / "sub" / "m.cu"), [], [], [])
    # A header's own quoted include is found beside the header, an angle one beside the linted file.
    assert may_define_kernels('#include "sub/host.h"\n', str(tmp_path / "sub" / "m.cu"), [str(tmp_path)], [], [])


def test_headers_resolve_as_the_parse_resolves_them(tmp_path: Path) -> None:
    """The include walk is the parse's pre-scan (ir/includes.walk_includes): the first existing candidate wins,
    and one that is not a regular file (a directory here) is read by the parse as an empty stub, so a header of
    that name further along the include path is never reached."""
    write(tmp_path, {"inc/k.h": KERNEL})
    (tmp_path / "src" / "k.h").mkdir(parents=True)
    main = '#include "k.h"\n'
    assert not may_define_kernels(main, str(tmp_path / "src" / "m.cu"), [str(tmp_path / "inc")], [], [])
    (tmp_path / "src" / "k.h").rmdir()
    assert may_define_kernels(main, str(tmp_path / "src" / "m.cu"), [str(tmp_path / "inc")], [], [])
