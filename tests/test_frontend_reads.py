"""The front end's cheaper reads of libclang give what the plain reads give: a subtree read in one visit
(clang_base.Prefetched), tokens spelled from the file's bytes (clang_base.MainText), and a parse's launches
taken from an earlier identical parse (clang_frontend._LAUNCH_READS)."""
from __future__ import annotations

import os

from kernlint.frontend import parse_source
from kernlint.frontend.clang_base import K, MainText, Prefetched, ci, shim_path

SOURCE = r"""
#include "defs.h"
enum Mode { A = 1, B = 2 };
template <int N> __device__ int pick(int m) {
  switch (m) { case A: return N; case B: return 2 * N; default: return 0; }
}
__global__ void k(float* a, int m) {
  constexpr int S = sizeof(float) * 2;
  int x\
y = threadIdx.x;
  const char* s = "a\\b\n";
  auto f = [&](int i) { return a[i + S] * 2; };
  for (int i = 0; i < 4; ++i) a[xy * pick<4>(m) + i] = f(i) + s[0] + WIDTH;
}
void run(float* a) { k<<<dim3(2), WIDTH>>>(a + 1, B); }
"""


def _parse(tmp_path, text: str = SOURCE):
    path = str(tmp_path / "reads.cu")
    with open(path, "w") as fh:
        fh.write(text)
    index = ci.Index.create()
    tu = index.parse(path, args=["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", "-std=c++17",
                                 "-include", shim_path(), f"-I{tmp_path}"], options=1)
    fns = [c for c in tu.cursor.get_children() if c.location.file is not None and c.location.file.name == path
           and c.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) and c.is_definition()]
    return path, tu, fns


def _tree(c: ci.Cursor) -> list:
    """Each cursor under `c` as (kind, start and end offset, spelling, its own tree)."""
    return [(k.kind, k.extent.start.offset, k.extent.end.offset, k.spelling, _tree(k)) for k in c.get_children()]


def test_prefetched_subtree_is_the_tree_listed_cursor_by_cursor(tmp_path) -> None:
    (tmp_path / "defs.h").write_text("#define WIDTH 64\n")
    _path, _tu, fns = _parse(tmp_path)
    assert len(fns) == 3
    for fn in fns:
        plain = _tree(fn)
        with Prefetched(fn) as read:
            assert read.read, "the subtree was read in one visit"
            fetched = _tree(fn)
        assert fetched == plain
        assert any(t[0] == K.SWITCH_STMT or t[4] for t in plain)


def test_main_text_tokens_are_the_bindings_tokens(tmp_path) -> None:
    (tmp_path / "defs.h").write_text("#define WIDTH 64\nstruct Pair { int a, b; };\n")
    path, tu, fns = _parse(tmp_path)
    with open(path, "rb") as fh:
        main = MainText(tu, path, fh.read())
    assert main.base >= 0
    body = list(fns[1].get_children())[-1]  # (the kernel's own extent starts in the `__global__` macro: no tokens)
    for c in fns + [body]:
        assert main.tokens(c) == [t.spelling for t in c.get_tokens()]
        assert main.tokens(c, offsets=True) == [(t.extent.start.offset, t.spelling) for t in c.get_tokens()]
    spelled = main.tokens(body)
    assert "xy" in spelled and '"a\\\\b\\n"' in spelled  # (a line splice in a name: spelled by libclang)
    header = next(c for c in tu.cursor.get_children() if c.spelling == "Pair")
    assert main.tokens(header) == [t.spelling for t in header.get_tokens()] == \
        ["struct", "Pair", "{", "int", "a", ",", "b", ";", "}"]
    assert main.tokens(header, offsets=True) is None  # (outside the file: the caller reads them itself)


def test_launches_are_read_once_per_parse_and_again_when_a_header_changes(tmp_path) -> None:
    header = tmp_path / "defs.h"
    header.write_text("#define WIDTH 64\n")
    path = str(tmp_path / "reads.cu")
    first = parse_source(SOURCE, path, launches_only=True)  # (as the project index reads it)
    second = parse_source(SOURCE, path)
    assert [(ln.kernel, ln.grid, ln.block, ln.arg_offsets) for ln in second.launches] == \
        [("k", (2, 1, 1), (64, 1, 1), ("a + 1", ""))]
    assert second.launches is first.launches  # the same parse: its host code was not walked again
    header.write_text("#define WIDTH 128\n")
    os.utime(header, ns=(1, 1))
    third = parse_source(SOURCE, path)
    assert [ln.block for ln in third.launches] == [(128, 1, 1)]
    other = parse_source(SOURCE, path, include_dirs=(str(tmp_path / "elsewhere"),))
    assert other.launches is not third.launches and other.launches == third.launches
