"""A parse of inputs clang already parsed takes the earlier translation unit (frontend/parse_cache.py), and
only then: another text, an edited header, or a handed-over text that differs from the disk copy parse again."""
from __future__ import annotations

import os

import pytest

from kernlint.frontend import parse_cache, parse_source
from kernlint.frontend.clang_base import ci

HEADER = "#define WIDTH 64\n"
FRAGMENT = "__global__ void frag(float* a) { a[threadIdx.x * WIDTH] = 0.0f; }\n"
MAIN = '#include "defs.h"\n#include "frag.cu"\n__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n'


@pytest.fixture
def clang_parses(monkeypatch):
    """The number of times libclang parsed something, from an empty cache."""
    calls = []
    real = ci.Index.parse

    def counting(self, path, *args, **kwargs):
        calls.append(os.path.basename(path))
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(ci.Index, "parse", counting)
    # (the shim as text throughout: a PCH built on a process's third parse changes the arguments)
    monkeypatch.setenv("KERNLINT_NO_PCH", "1")
    parse_cache.clear()
    yield calls
    parse_cache.clear()


def _project(tmp_path):
    (tmp_path / "defs.h").write_text(HEADER)
    (tmp_path / "frag.cu").write_text(FRAGMENT)
    (tmp_path / "main.cu").write_text(MAIN)
    return str(tmp_path / "main.cu"), str(tmp_path / "frag.cu")


def _shape(tu):
    return [(k.name, k.span, repr(k.body)) for k in tu.kernels]


def test_the_same_inputs_are_parsed_once_and_give_the_same_unit(tmp_path, clang_parses) -> None:
    main, frag = _project(tmp_path)
    first = parse_source(MAIN, main)
    # The fragment through its includer, its text handed over as on disk: the includer's parse again.
    through = parse_source(MAIN, main, fragment=frag, fragment_text=FRAGMENT)
    again = parse_source(MAIN, main)
    assert clang_parses.count("main.cu") == 1
    assert _shape(again) == _shape(first)
    assert [k.name for k in through.kernels] == ["frag"]
    assert [k.name for k in first.kernels] == ["k"]


def test_other_text_an_edited_header_or_a_changed_fragment_parse_again(tmp_path, clang_parses) -> None:
    main, frag = _project(tmp_path)
    parse_source(MAIN, main)
    assert clang_parses.count("main.cu") == 1
    parse_source(MAIN + "\n", main)  # another text of the file itself
    assert clang_parses.count("main.cu") == 2
    # A fragment's text that is not its disk copy (an unsaved edit) is part of the inputs.
    edited = parse_source(MAIN, main, fragment=frag, fragment_text=FRAGMENT.replace("WIDTH", "2"))
    assert clang_parses.count("main.cu") == 3
    assert "2" in repr(edited.kernels[0].body) and "64" not in repr(edited.kernels[0].body)
    # A header edited on disk (a long-lived process: `kernlint server`): its unit is not used again.
    before = parse_source(MAIN, main, fragment=frag, fragment_text=FRAGMENT)
    assert clang_parses.count("main.cu") == 3  # (the first parse's unit)
    assert "64" in repr(before.kernels[0].body)
    header = tmp_path / "defs.h"
    header.write_text("#define WIDTH 128\n")
    st = os.stat(header)
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    after = parse_source(MAIN, main, fragment=frag, fragment_text=FRAGMENT)
    assert clang_parses.count("main.cu") == 4
    assert "128" in repr(after.kernels[0].body) and "64" not in repr(after.kernels[0].body)


def test_a_crlf_file_read_with_newlines_translated_is_not_taken_for_its_disk_copy(tmp_path, clang_parses) -> None:
    """kernlint reads files with newlines translated; clang reads the disk's bytes: a fragment whose disk
    copy has CRLF line ends is not the text handed over, so the parses through the includer differ."""
    main, frag = _project(tmp_path)
    with open(frag, "w", newline="") as fh:
        fh.write(FRAGMENT.replace("\n", "\r\n"))
    parse_source(MAIN, main, fragment=frag, fragment_text=FRAGMENT)
    parse_source(MAIN, main)
    assert clang_parses.count("main.cu") == 2


def test_only_a_few_units_are_kept(tmp_path, clang_parses) -> None:
    main, _frag = _project(tmp_path)
    for i in range(parse_cache.MAX_UNITS + 1):
        parse_source(MAIN + "\n" * (i + 1), main)
    assert len(parse_cache._UNITS) == parse_cache.MAX_UNITS
    parse_source(MAIN + "\n", main)  # the oldest was dropped
    assert clang_parses.count("main.cu") == parse_cache.MAX_UNITS + 2


def test_a_parse_after_the_pch_is_built_takes_the_unit_parsed_with_the_shim_as_text(tmp_path, clang_parses,
                                                                                   monkeypatch) -> None:
    """A process builds its shim PCH on its third parse (shim_pch.py): the index's read of a file, another
    file, then the file's lint. The lint takes the index's unit (the shim as text) rather than parsing again
    with the PCH: the IR is the same either way."""
    from kernlint.frontend import shim_pch

    monkeypatch.delenv("KERNLINT_NO_PCH", raising=False)
    monkeypatch.setattr(shim_pch, "_parses", 0)
    monkeypatch.setattr(shim_pch, "_disabled", False)
    monkeypatch.setattr(shim_pch, "_built", {})
    main, _frag = _project(tmp_path)
    other = tmp_path / "other.cu"
    other.write_text("__global__ void o(float* a) { a[threadIdx.x] = 2.0f; }\n")
    first = parse_source(MAIN, main)
    parse_source(other.read_text(), str(other))
    again = parse_source(MAIN, main)  # the process's third parse
    assert clang_parses.count("main.cu") == 1
    assert _shape(again) == _shape(first)
    parse_source(other.read_text() + "\n", str(other))  # not parsed before: the PCH is built for it
    assert any(shim_pch._built.values())


def test_a_header_created_where_it_shadows_the_one_read_parses_again(tmp_path, clang_parses) -> None:
    src, inc = tmp_path / "src", tmp_path / "inc"
    src.mkdir()
    inc.mkdir()
    (inc / "defs.h").write_text(HEADER)
    text = '#include "defs.h"\n__global__ void k(float* a) { a[threadIdx.x * WIDTH] = 1.0f; }\n'
    (src / "k.cu").write_text(text)
    before = parse_source(text, str(src / "k.cu"), include_dirs=(str(inc),))
    assert "64" in repr(before.kernels[0].body)
    # The includer's own directory is searched before -I (quoted include): a header created there wins.
    (src / "defs.h").write_text("#define WIDTH 16\n")
    after = parse_source(text, str(src / "k.cu"), include_dirs=(str(inc),))
    assert clang_parses.count("k.cu") == 2
    assert "16" in repr(after.kernels[0].body) and "64" not in repr(after.kernels[0].body)
