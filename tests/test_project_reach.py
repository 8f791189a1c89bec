"""Kernels reached across files: a file lints the kernels it launches or instantiates wherever the
project defines them, and the project index reads launches with clang's view of constants."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernlint.cli.command import main
from kernlint.project import clang_scan
from kernlint.project.index import ProjectIndex
from kernlint.project.reach import called_names, host_calls
from kernlint.project.scan import blank

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))


def _run(*args: str) -> tuple[dict, str]:
    res = CliRunner().invoke(main, [*args, "--format", "json", "--no-ptxas"], catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout), res.output


def _findings(doc: dict) -> set[tuple[str, int, str, str]]:
    return {(Path(d["path"]).name, d["line"], d["code"], d["message"]) for d in doc["diagnostics"]}


def test_header_kernel_linted_alike_through_its_instantiating_file_and_alone() -> None:
    project = PROJECTS / "header_instantiated"
    via_cu, _ = _run(str(project / "inst.cu"))
    via_header, _ = _run(str(project / "transpose.cuh"))
    assert _findings(via_cu) == _findings(via_header)
    assert any(f[:3] == ("transpose.cuh", 15, "KL201") for f in _findings(via_cu))
    kernels = [k["name"] for k in via_cu["kernels"]]
    assert kernels == ["transpose_tile"]  # reached, not "no kernels found"


def test_traits_kernel_evaluated_through_its_instantiating_file_and_alone() -> None:
    """A kernel templated on a traits class (`Ktraits::kPitch` computed from the traits' arguments, one
    member type from a header kernlint lacks), bound through a host template in a switch macro's
    lambda: the .cu alone and the header alone both evaluate it and find the 4-way conflict."""
    project = PROJECTS / "traits_kernel"
    via_cu, _ = _run(str(project / "stage_fp32.cu"))
    via_header, _ = _run(str(project / "stage.cuh"))
    assert _findings(via_cu) == _findings(via_header)
    hits = [d for d in via_cu["diagnostics"] if d["code"] == "KL201"]
    assert [(Path(d["path"]).name, d["line"], d["metrics"]["ways"]) for d in hits] == [("stage.cuh", 35, 4), ("stage.cuh", 42, 4)]
    assert any("Traits < 32 , 4" in a and "float >" in a for a in hits[0]["assumptions"])
    assert not [d for d in via_cu["diagnostics"] if d["code"] == "KL904"]  # fully evaluated


def test_whole_project_reports_a_reached_kernel_once() -> None:
    doc, _ = _run(str(PROJECTS / "header_instantiated"))
    sites = [(Path(d["path"]).name, d["line"], d["code"]) for d in doc["diagnostics"]]
    assert sites.count(("transpose.cuh", 15, "KL201")) == 1
    assert [k["name"] for k in doc["kernels"]] == ["transpose_tile"]


def test_tile_sizes_in_both_branches_worse_binding_named() -> None:
    doc, _ = _run(str(PROJECTS / "tile_branches" / "runner.cu"))
    hits = [d for d in doc["diagnostics"] if d["code"] == "KL201" and Path(d["path"]).name == "gemm.cuh"]
    assert len(hits) == 1
    d = hits[0]
    assert d["line"] == 16 and d["metrics"]["ways"] == 32  # BK = 32 (the else branch), not 8
    worst = [n for n in d["notes"] if n.startswith("the worst of")]
    assert worst and "runner.cu:15" in worst[0].split(";")[0] and "8-way with the launch at runner.cu:11" in worst[0]


def test_index_folds_constants_as_clang_sees_them() -> None:
    root = (PROJECTS / "constant_kinds").resolve()
    idx = ProjectIndex.build(root)
    header = str(root / "kernels.cuh")
    for kernel in ("by_constexpr", "by_enumerator", "by_traits"):
        launches = idx.launches_of(kernel, header)
        assert [(pl.template_args, pl.block) for pl in launches] == [(("16",), (32, 1, 1))], kernel
    branches = (PROJECTS / "tile_branches").resolve()
    idx = ProjectIndex.build(branches)
    got = sorted((pl.template_args, pl.block) for pl in idx.launches_of("tile_rows", str(branches / "gemm.cuh")))
    assert got == [(("128", "32"), (128, 1, 1)), (("64", "8"), (64, 1, 1))]


def test_instantiation_arguments_folded_by_clang() -> None:
    root = (PROJECTS / "header_instantiated").resolve()
    idx = ProjectIndex.build(root)
    got = idx.instantiations_of("transpose_tile", str(root / "transpose.cuh"))
    assert [args for args, _p, _l in got] == [("32",)]  # `kTile`, an enumerator


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "kernlint.toml").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


KERNEL_HEADER = """#pragma once
template <typename T>
__global__ void scale(T* p) { p[threadIdx.x * 2] *= 2; }
template <typename T>
void launch_scale(T* p) {
    auto kernel = &scale<T>;
    kernel<<<1, 32>>>(p);
}
template <typename T>
void run(T* p) { launch_scale<T>(p); }
"""


def test_reached_through_host_templates(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "k.cuh": KERNEL_HEADER,
        "inst.cu": '#include "k.cuh"\ntemplate void run<float>(float*);\n',
        "only_includes.cu": '#include "k.cuh"\nint helper() { return 1; }\n',
        "unrelated.cu": "int nothing() { return 0; }\n",
    })
    idx = ProjectIndex.build(root)
    assert idx.reached_kernels(str(root / "inst.cu")) == ((str(root / "k.cuh"), ("scale",)),)
    assert idx.reached_kernels(str(root / "only_includes.cu")) == ()
    # clang names the kernel the variable holds
    assert [ln.kernel for ln in idx.facts[str(root / "k.cuh")].launches] == ["scale"]
    doc, _ = _run(str(root / "inst.cu"))
    assert [k["name"] for k in doc["kernels"]] == ["scale"]
    res = CliRunner().invoke(main, [str(root / "only_includes.cu"), "--no-ptxas"], catch_exceptions=False)
    assert "no kernels found" not in res.output
    assert "1 kernel included from the project" in res.output
    res = CliRunner().invoke(main, [str(root / "unrelated.cu"), "--no-ptxas"], catch_exceptions=False)
    assert "no kernels found" in res.output


def test_only_prefiltered_files_are_read_by_clang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {
        "k.cuh": "template <int N> __global__ void k(float* p) { p[threadIdx.x * N] = 0; }\n",
        "launch.cu": '#include "k.cuh"\nvoid f(float* p) { k<2><<<1, 32>>>(p); }\n',
        "inst.cu": '#include "k.cuh"\ntemplate __global__ void k<4>(float*);\n',
        "host.cpp": "template <int N> int g() { return N; }\nint h() { return g<3>(); }\n",
    })
    read: list[str] = []
    real = clang_scan.read_with_clang

    def spy(facts, path, text, where):  # type: ignore[no-untyped-def]
        read.append(Path(path).name)
        return real(facts, path, text, where)

    monkeypatch.setattr(clang_scan, "read_with_clang", spy)
    idx = ProjectIndex.build(root)
    assert sorted(read) == ["inst.cu", "launch.cu"]
    assert idx.facts[str(root / "launch.cu")].read_by_clang
    assert not idx.facts[str(root / "host.cpp")].read_by_clang


def test_prefilter() -> None:
    from kernlint.project.scan import scan_text

    def wanted(text: str) -> bool:
        return clang_scan.wanted(scan_text(text), text)

    assert wanted("void f(float* p) { k<<<1, 2>>>(p); }")
    assert wanted("#define LAUNCH(k) k<<<1, 32>>>()\n")
    assert wanted("template __global__ void k<4>(float*);")
    assert wanted("extern template void run<float>(float*);")
    assert not wanted("template <int N> __global__ void k(float* p) {}")
    assert not wanted("// its template argument gives the stride; k<<<1, 2>>> in a comment\nint x = a < b;")


def test_host_calls_by_function() -> None:
    code = blank("""
namespace ns {
struct Runner {
    void go() const { helper(1); if (x) { other<int>(2); } }
};
template <typename T> auto launch(T* p) -> void { auto k = &kern<T>; k<<<1, 1>>>(p); }
}  // a comment with call(
int table[] = {1, 2};
""")
    calls = dict(host_calls(code))
    assert set(calls) == {"go", "launch"}
    assert {"helper", "other"} <= set(calls["go"]) and "if" not in calls["go"]
    assert "kern" in calls["launch"]
    assert "call" not in called_names(code)


def test_cached_result_follows_a_reached_kernel_in_another_unit(tmp_path: Path) -> None:
    """b.cu launches k, defined in a.cu (compiled apart, not included): b.cu's cached result depends on a.cu."""
    from kernlint.project import index as index_mod

    root = _project(tmp_path, {
        "a.cu": "__global__ void k(float* x) { x[threadIdx.x] = 1; }\n",
        "b.cu": "__global__ void k(float* x);\nvoid go(float* x) { k<<<1, 32>>>(x); }\n",
    })
    cache = tmp_path / "results"

    def lint() -> str:
        index_mod._INDEXES.clear()  # a new process builds its index afresh
        res = CliRunner().invoke(main, ["--no-ptxas", "--cache-dir", str(cache), "--format", "concise",
                                        str(root / "b.cu")], catch_exceptions=False)
        return res.stdout

    assert "KL102" not in lint() and (cache / "results-v1").is_dir()
    (root / "a.cu").write_text("__global__ void k(float* x) { x[threadIdx.x * 32] = 1; }\n")
    out = lint()
    assert "a.cu:1" in out and "KL102" in out


def test_reads_in_isolated_workers_equal_reads_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold index reads many files in worker processes (a libclang crash costs one file's values): the
    facts are those read in this process."""
    root = (PROJECTS / "constant_kinds").resolve()
    here = ProjectIndex.build(root)
    here.ready()
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "other"))
    monkeypatch.setattr(clang_scan, "ISOLATE_FROM", 1)
    used: list[int] = []
    real = clang_scan._read_isolated

    def spy(items, where):  # type: ignore[no-untyped-def]
        used.append(len(items))
        return real(items, where)

    monkeypatch.setattr(clang_scan, "_read_isolated", spy)
    isolated = ProjectIndex.build(root)
    isolated.ready()
    assert used == [1]
    assert isolated.facts == here.facts
    assert isolated.facts[str(root / "runner.cu")].read_by_clang


def test_isolated_reads_keep_libclang_out_of_the_process(tmp_path: Path) -> None:
    """The CLI builds the index before forking its lint workers: with `isolated_reads`, even one clang read
    goes to a worker, so the parent never loads libclang (which would make the lint workers start from a
    forkserver) and still gets clang's values."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kernlint.project.clang_scan import isolated_reads\n"
        "from kernlint.project.index import ProjectIndex\n"
        "with isolated_reads():\n"
        f"    idx = ProjectIndex.build(Path({str(PROJECTS / 'tile_branches')!r}).resolve())\n"
        "facts = [f for p, f in idx.facts.items() if p.endswith('runner.cu')][0]\n"
        "print(facts.read_by_clang, sorted(ln.template_args for ln in facts.launches))\n"
        "cindex = sys.modules.get('clang.cindex')\n"
        "print(bool(cindex is not None and cindex.Config.loaded))\n"
    )
    env = {**__import__("os").environ, "KERNLINT_CACHE_DIR": str(tmp_path / "c"),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.splitlines() == ["True [('128', '32'), ('64', '8')]", "False"]


def test_a_lone_file_without_a_project_reaches_its_included_headers(tmp_path: Path) -> None:
    """No project marker: the index holds the files beside the linted one and the headers they include
    from subdirectories, so the header kernels a lone file launches are linted with it."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "k.cuh").write_text(
        "#pragma once\n__global__ void strided(float* x) { x[threadIdx.x * 32] = 1; }\n")
    (tmp_path / "lib" / "unused.cuh").write_text("__global__ void other(float* x) { x[threadIdx.x * 32] = 1; }\n")
    (tmp_path / "main.cu").write_text('#include "lib/k.cuh"\nvoid go(float* x) { strided<<<1, 32>>>(x); }\n')
    doc, _ = _run(str(tmp_path / "main.cu"))
    assert [(Path(d["path"]).name, d["line"], d["code"]) for d in doc["diagnostics"]] == [("k.cuh", 2, "KL102")]
    idx = ProjectIndex.build(tmp_path.resolve(), shallow=True)
    assert sorted(Path(p).name for p in idx.facts) == ["k.cuh", "main.cu"]
