"""Device functions other than the file's kernels are lowered the first time something asks for them
(kernlint/ir/function_table.py): what a lint reports must not depend on it, and what was never asked for
is never lowered."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kernlint.ir import nodes as ir
from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend import parse_source, release_parses
from kernlint.ir.function_table import FunctionTable, Released

OPTS = LintOptions(resources=False)

HEADER = """\
#pragma once
__device__ float unused_a(float a, float b) { return a * b + 1.0f; }
__device__ float scale(float v, float s) { return v * s; }
struct Acc {
    float total;
    __device__ void add(float v) { total += v; }
};
__device__ float unused_b(const float* a, int i) { return a[i] + a[i + 1]; }
template <class T> __device__ T twice(const T x) { return x + x; }
"""

MAIN = """\
#include "helpers.cuh"
__device__ float local_helper(float v) { return scale(v, 2.0f); }
__device__ float local_unused(float v) { return v + 1.0f; }
// kernlint: block=(128,1,1) grid=(4,1,1)
__global__ void k(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    Acc acc;
    acc.total = 0.0f;
    acc.add(in[i * 2]);
    if (i < n) out[i] = local_helper(acc.total);
}
"""


def _write(tmp_path: Path) -> Path:
    (tmp_path / "helpers.cuh").write_text(HEADER)
    main = tmp_path / "k.cu"
    main.write_text(MAIN)
    return main


def _pending(table: FunctionTable) -> set[str]:
    return {k.split("@")[0] for k, v in table._entries.items() if not isinstance(v, ir.Function)}


def test_header_functions_are_known_by_key_and_lowered_on_demand(tmp_path: Path) -> None:
    main = _write(tmp_path)
    tu = parse_source(MAIN, str(main))
    names = [k.split("@")[0] for k in tu.functions]
    # Every device function of the parse is there, in the order of the source, header first.
    assert names == ["unused_a", "scale", "add", "unused_b", "twice", "local_helper", "local_unused", "k"]
    assert _pending(tu.functions) == {"unused_a", "scale", "add", "unused_b", "twice", "local_helper",
                                      "local_unused"}
    # The file's own functions, by name (lowering those only), or all of them.
    assert [f.name for f in tu.functions.in_file({"local_helper", "scale"})] == ["local_helper"]
    assert [f.name for f in tu.functions.in_file(lowered=True)] == ["local_helper", "k"]
    assert [f.name for f in tu.functions.in_file()] == ["local_helper", "local_unused", "k"]
    # Asking by name lowers the candidates only, and gives the same as a scan of every function.
    (scale,) = tu.functions.named("scale")
    assert scale.params[1].name == "s" and scale.body is not None
    assert _pending(tu.functions) == {"unused_a", "add", "unused_b", "twice"}
    (add,) = tu.functions.named("Acc::add")
    assert add.name == "Acc::add" and tu.functions.named("add") == ()
    # A key asks for one function; lowering twice gives the same object.
    key = next(k for k in tu.functions if k.startswith("unused_b@"))
    assert tu.functions[key] is tu.functions.get(key)
    assert _pending(tu.functions) == {"unused_a", "twice"}
    # Iterating over the values lowers everything (what a scan of every function needs).
    everything = list(tu.functions.values())
    assert len(everything) == 8 and not _pending(tu.functions)
    assert [f.name for f in everything if f.name in ("scale", "Acc::add")] == ["scale", "Acc::add"]


def test_what_the_kernel_calls_is_lowered_and_the_rest_never(tmp_path: Path) -> None:
    main = _write(tmp_path)
    tu = parse_source(MAIN, str(main))
    (kernel,) = tu.kernels
    reach = tu.functions.reachable([kernel])
    assert {f.name for f in reach} == {"k", "Acc::add", "local_helper", "scale"}
    assert _pending(tu.functions) == {"unused_a", "unused_b", "twice", "local_unused"}


def test_the_lint_is_the_same_however_many_functions_are_lowered_first(tmp_path: Path) -> None:
    main = _write(tmp_path)
    lazy = lint_source(MAIN, str(main), OPTS)
    from kernlint.frontend import clang_frontend, parse_cache

    real = clang_frontend._lower

    def eager(*args, **kwargs):  # every function lowered up front, in the parse's order (as before)
        unit = real(*args, **kwargs)
        list(unit.functions.values())
        return unit

    clang_frontend._lower = eager
    try:
        forced = lint_source(MAIN, str(main), OPTS)
    finally:
        clang_frontend._lower = real
    assert [(d.line, d.code, d.message) for d in lazy.diagnostics] == \
        [(d.line, d.code, d.message) for d in forced.diagnostics]
    assert [(d.line, d.code) for d in lazy.diagnostics] == [(9, "KL101")]  # in[i * 2]: strided loads


def test_a_type_spelled_alike_in_a_header_template_and_the_file(tmp_path: Path) -> None:
    """`const T` is a template parameter in the header's `twice` and `const float` in the file (a typedef):
    each keeps its own type whichever is lowered first."""
    (tmp_path / "helpers.cuh").write_text(HEADER)
    text = '#include "helpers.cuh"\ntypedef float T;\n__global__ void k(const T x, float* out) { out[0] = x; }\n'
    for header_first in (True, False):
        tu = parse_source(text, str(tmp_path / "k.cu"))
        if header_first:
            (twice,) = tu.functions.named("twice")
        (k,) = tu.kernels
        (twice,) = tu.functions.named("twice")
        assert k.params[0].ctype.kind == "float", header_first
        assert twice.params[0].ctype.kind == "template", header_first


def test_released_and_pickled_tables_keep_what_was_lowered(tmp_path: Path) -> None:
    main = _write(tmp_path)
    tu = parse_source(MAIN, str(main))
    tu.functions.named("scale")
    tu.functions.named("local_helper")
    copy = pickle.loads(pickle.dumps(tu))
    release_parses()
    for table in (tu.functions, copy.functions):
        assert table.released
        assert len(table) == 8 and [f.name for f in table.in_file(lowered=True)] == ["local_helper", "k"]
        assert table.named("scale")[0].body is not None
        key = next(k for k in table if k.startswith("unused_a@"))
        with pytest.raises(Released):
            table[key]


def test_a_released_template_instance_is_parsed_again(tmp_path: Path) -> None:
    """A template kernel's instance is cached across lints of the same text; its parse, released when a
    lint ended, could not lower what a later lint asks for: the later one parses it again."""
    from kernlint.project.units import Unit

    (tmp_path / "helpers.cuh").write_text(HEADER)
    text = ('#include "helpers.cuh"\n'
            'template <int S> __global__ void k(float* out) { out[threadIdx.x * S] = twice(1.0f); }\n')
    unit = Unit(str(tmp_path / "k.cu"), text, OPTS)
    (template,) = parse_source(text, unit.path).kernels
    first = unit.instance(template, (("S", "4"),))
    assert first is not None and not first[0].functions.released
    assert unit.instance(template, (("S", "4"),)) is first  # reused while its parse is open
    release_parses()
    again = unit.instance(template, (("S", "4"),))
    assert again is not None and again is not first and not again[0].functions.released
    assert again[1].params == first[1].params and again[0].functions.named("twice")[0].body is not None
    # What a lint reports is the same when its instance was parsed in an earlier lint.
    path = str(tmp_path / "k2.cu")
    host = text + 'void host(float* p) { k<4><<<1, 128>>>(p); }\n'
    once, twice = (lint_source(host, path, OPTS) for _ in range(2))
    assert [(d.line, d.code) for d in once.diagnostics] == [(d.line, d.code) for d in twice.diagnostics]
    assert {(d.line, d.code) for d in once.diagnostics} >= {(2, "KL102")}  # out[threadIdx.x * 4]: strided


def test_releasing_frees_the_parse(tmp_path: Path) -> None:
    """No cursor outlives `release_parses`: libclang's translation unit is freed with the last of them
    (and with the parse cache's reference, kept for a parse of the same inputs)."""
    import gc
    import weakref

    from kernlint.frontend import clang_frontend, parse_cache

    main = _write(tmp_path)
    parses: list[weakref.ref] = []
    real = clang_frontend._lower

    def spy(tu, *args, **kwargs):
        parses.append(weakref.ref(tu))
        return real(tu, *args, **kwargs)

    clang_frontend._lower = spy
    try:
        unit = parse_source(MAIN, str(main))
    finally:
        clang_frontend._lower = real
    gc.collect()
    assert parses[0]() is not None  # kept alive by the pending functions' cursors
    release_parses()
    gc.collect()
    # Only the few units kept for a parse of the same inputs (frontend/parse_cache.py) outlive it.
    assert parses[0]() in [tu for tu, _stamp in parse_cache._UNITS.values()]
    parse_cache.clear()
    gc.collect()
    assert parses[0]() is None and len(unit.functions) == 8
