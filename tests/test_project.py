"""The project index (scan, folding, cache, compile_commands.json) and what the engine does with it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernlint.engine.lint import LintOptions, lint_source
from kernlint.frontend.instantiate import instantiate_text
from kernlint.project.compile_db import FileFlags, load_compile_db, parse_flags
from kernlint.project.index import ProjectIndex, find_project_root
from kernlint.project.scan import scan_text


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)


def make(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "kernlint.toml").write_text("")
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


KERNEL = """template <int BM, int BK, typename T>
__global__ void tile(const T* A, T* C) {
    __shared__ T As[BM * BK];
    As[threadIdx.x * BK] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = As[threadIdx.x * BK] * sizeof(T);
}
"""


def test_scan_finds_launches_host_templates_and_instantiations() -> None:
    facts = scan_text("""#include "k.cuh"
#define BS 128
constexpr int TILE = 32;
template <class T, int N = 4>
void run(T* x, int n) {
    dim3 block(BS, 2);
    k<T, 256><<<n / 256, block, 0, s>>>(x, n, 4);  // a <<<comment>>> is not a launch
}
int main() { run<float>(0, 3); }
template __global__ void k2<64, float>(float*);
""")
    assert facts.includes == (("k.cuh", True, 1),)
    assert ("BS", "128") in facts.defines and ("TILE", "32") in facts.constants
    [ln] = facts.launches
    assert (ln.kernel, ln.template_args, ln.config, ln.line, ln.host) == (
        "k", ("T", "256"), ("n / 256", "block", "0", "s"), 7, "run")
    assert ln.host_params == (("T", True, ""), ("N", False, "4"))
    assert ("block", "dim3(BS, 2)") in ln.locals
    assert ("run", ("float",), 9) in facts.template_calls
    assert facts.instantiations == (("k2", ("64", "float"), 10),)


def test_host_template_launch_is_bound_from_its_calls(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"k.cuh": KERNEL, "run.cu": """#include "k.cuh"
template <class T, int B>
void run(const T* a, T* c) { tile<B, 8, T><<<4, B>>>(a, c); }
void go() { run<double, 64>(0, 0); }
"""})
    idx = ProjectIndex.build(root)
    [pl] = idx.launches_of("tile", str(root / "k.cuh"))
    assert pl.template_args == ("64", "8", "double") and pl.block == (64, 1, 1)
    assert pl.via.startswith("run<double, 64> at run.cu:4")


def test_unbound_host_template_parameter_stays_unknown(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"k.cuh": KERNEL, "run.cu": """#include "k.cuh"
template <class T>
void run(const T* a, T* c) { tile<256, 8, T><<<4, 256>>>(a, c); }
"""})
    [pl] = ProjectIndex.build(root).launches_of("tile", str(root / "k.cuh"))
    assert pl.template_args == ("256", "8", None)


def test_same_kernel_name_in_unrelated_files_is_not_bound(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {
        "a/k.cu": "__global__ void kernel(float* x) { x[threadIdx.x] = 0; }\nvoid a() { kernel<<<1, 64>>>(0); }\n",
        "b/k.cu": "__global__ void kernel(float* x) { x[threadIdx.x] = 1; }\nvoid b() { kernel<<<1, 128>>>(0); }\n",
    })
    idx = ProjectIndex.build(root)
    assert [pl.block for pl in idx.launches_of("kernel", str(root / "a/k.cu"))] == [(64, 1, 1)]


def test_includer_and_flags_from_compile_commands(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"main.cu": '#include "kern.cu"\n', "kern.cu": "__global__ void k() {}\n"})
    (root / "build").mkdir()
    (root / "build" / "compile_commands.json").write_text(json.dumps([{
        "directory": str(root / "build"), "file": "../kern.cu",
        "command": "nvcc -I../include -isystem /opt/x -DTILE=32 --use_fast_math -gencode arch=compute_80,code=sm_80 "
                   "-Xcompiler -fPIC -c ../kern.cu"}]))
    idx = ProjectIndex.build(root)
    assert idx.includer_of(str(root / "kern.cu")) == str(root / "main.cu")
    flags = idx.flags_for(str(root / "kern.cu"))
    assert flags.include_dirs == (str(root / "include"), "/opt/x")
    assert flags.macros == ("TILE=32",)


def test_compile_db_arguments_form_and_bad_file(tmp_path: Path) -> None:
    assert parse_flags(["nvcc", "-I", "inc", "-D", "A=1", "-O3", "--ptxas-options=-v"], "/w").include_dirs == ("/w/inc",)
    bad = tmp_path / "compile_commands.json"
    bad.write_text("{not json")
    flags, note = load_compile_db(bad)
    assert flags == {} and note and "cannot read" in note
    bad.write_text("[" * 100_000 + "]" * 100_000)  # too deep for the JSON decoder: the same note, no exception
    flags, note = load_compile_db(bad)
    assert flags == {} and note and "cannot read" in note


def test_compile_db_joined_flags() -> None:
    flags = parse_flags(["nvcc", "-isystem/opt/x", "-iquoteq", "-idirafter/late", "-Iinc", "-isystem-after", "/no",
                         "-DN=4", "--include-path=p", "-c", "k.cu"], "/w")
    assert flags.include_dirs == ("/opt/x", "/w/q", "/late", "/w/inc", "/w/p")
    assert flags.macros == ("N=4",)


def test_compile_db_relative_directories_give_absolute_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A database read through a relative path, its entry's directory relative: the files are looked up
    # by absolute path (ProjectIndex.flags_for), so the keys are absolute, under the database's folder.
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": "obj", "file": "../../k.cu", "arguments": ["nvcc", "-I../inc", "-c", "../../k.cu"]}]))
    monkeypatch.chdir(tmp_path)
    db, note = load_compile_db(Path("build") / "compile_commands.json")
    assert note is None
    assert db == {str(tmp_path / "k.cu"): FileFlags((str(tmp_path / "build" / "inc"),), ())}


def test_unreadable_and_binary_files_are_skipped_with_one_note(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"ok.cu": "__global__ void k() {}\n"})
    (root / "blob.cu").write_bytes(b"\x00\x01\x02binary")
    os.symlink(root / "missing.cuh", root / "dangling.cuh")
    idx = ProjectIndex.build(root)
    assert str(root / "ok.cu") in idx.facts
    [note] = idx.notes
    assert "skipped 2 file(s)" in note and "blob.cu" in note and "dangling.cuh" in note


def test_cache_second_build_scans_nothing_and_survives_corruption(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = make(tmp_path / "p", {"a.cu": KERNEL, "b.cu": '#include "a.cu"\n'})
    assert ProjectIndex.build(root).scanned == 2
    assert ProjectIndex.build(root).scanned == 0
    (root / "b.cu").write_text('#include "a.cu"\nvoid f() { tile<1, 2, float><<<1, 32>>>(0, 0); }\n')
    again = ProjectIndex.build(root)
    assert again.scanned == 1 and again.launches_of("tile", str(root / "a.cu"))
    [cache_file] = list((tmp_path / "cache").rglob("*.json"))
    cache_file.write_text("{corrupt")
    assert ProjectIndex.build(root).scanned == 2  # ignored, rebuilt
    assert ProjectIndex.build(root).scanned == 0  # and rewritten
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(root / "a.cu"))  # not a directory: writes fail quietly
    assert ProjectIndex.build(root).scanned == 2
    monkeypatch.setenv("KERNLINT_NO_CACHE", "1")
    assert ProjectIndex.build(root).scanned == 2


def test_facts_cached_by_other_scanning_code_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache written by other code (another kernlint, a branch, an edit that forgot SCAN_VERSION) is
    rebuilt, not read: its facts would be what that code found (on this machine a branch's cache of the
    same SCAN_VERSION once gave another file's kernels wrong bindings)."""
    from kernlint.project import cache as cache_mod

    root = make(tmp_path / "p", {"a.cu": KERNEL, "b.cu": '#include "a.cu"\n'})
    assert ProjectIndex.build(root).scanned == 2
    assert ProjectIndex.build(root).scanned == 0
    monkeypatch.setattr(cache_mod, "_SCANNER_STAMP", "other-code")
    assert ProjectIndex.build(root).scanned == 2  # not read: rebuilt under this code's stamp
    assert ProjectIndex.build(root).scanned == 0  # and rewritten for it


def test_cached_facts_are_decoded_when_first_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index built from the on-disk cache decodes no file's facts until a question needs them (a warm
    re-run may need none); its answers are those of a fresh scan, also when an entry's facts are damaged."""
    import json

    from kernlint.project import cache as cache_mod

    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = make(tmp_path / "p", {"a.cu": KERNEL,
                                 "b.cu": '#include "a.cu"\nvoid f() { tile<1, 2, float><<<1, 32>>>(0, 0); }\n'})
    first = ProjectIndex.build(root)
    want = first.launches_of("tile", str(root / "a.cu"))
    assert want and first.includer_of(str(root / "a.cu")) == str(root / "b.cu")
    decoded: list[object] = []
    real = cache_mod.facts_from_json
    monkeypatch.setattr(cache_mod, "facts_from_json", lambda d: decoded.append(d) or real(d))
    warm = ProjectIndex.build(root)
    assert warm.scanned == 0 and warm.state == first.state and decoded == []
    assert warm.launches_of("tile", str(root / "a.cu")) == want and len(decoded) == 2
    assert warm.includer_of(str(root / "a.cu")) == str(root / "b.cu")
    [cache_file] = list((tmp_path / "cache").rglob("*.json"))
    data = json.loads(cache_file.read_text())
    data["files"][str(root / "b.cu")]["facts"]["launches"] = [{"bogus": 1}]  # hash and stamp intact
    cache_file.write_text(json.dumps(data))
    damaged = ProjectIndex.build(root)
    assert damaged.scanned == 0 and damaged.launches_of("tile", str(root / "a.cu")) == want


def _damage(cache_root: Path, path: Path, facts: object) -> None:
    """Overwrite the stored facts of `path`'s entry in the one index cache under `cache_root` (its hash
    and stamp kept: the entry still looks unchanged)."""
    [cache_file] = list(cache_root.rglob("index-v*/*.json"))
    data = json.loads(cache_file.read_text())
    data["files"][str(path)]["facts"] = facts
    cache_file.write_text(json.dumps(data))


def _counting_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from kernlint.project import scan as scan_mod

    calls: list[int] = []
    real = scan_mod.scan_text
    monkeypatch.setattr(scan_mod, "scan_text", lambda text, *limit: calls.append(1) or real(text, *limit))
    return calls


# Damaged facts that still look like an entry (a dict: decoded only when first asked for) and ones that
# do not (rescanned by the build itself).
@pytest.mark.parametrize("garbage", [{"launches": "garbage", "x": 1}, {}, "garbage"])
def test_a_damaged_entry_is_rescanned_once_and_stored_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            garbage: object) -> None:
    root = make(tmp_path / "p", {"a.cu": KERNEL,
                                 "b.cu": '#include "a.cu"\nvoid f() { tile<1, 2, float><<<1, 32>>>(0, 0); }\n'})
    fresh = ProjectIndex.build(root).facts
    _damage(tmp_path / "cache", root / "b.cu", garbage)
    scans = _counting_scans(monkeypatch)
    first = ProjectIndex.build(root)
    assert first.facts == fresh and len(scans) == 1
    second = ProjectIndex.build(root)
    assert second.facts == fresh and len(scans) == 1  # the entry was stored again: no second rescan
    assert (first.scanned, second.scanned) == (1, 0)
    assert second.launches_of("tile", str(root / "a.cu")) == first.launches_of("tile", str(root / "a.cu"))


def test_a_damaged_entry_is_checked_like_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged entry whose file is now binary (same size and mtime) is left out, as the build leaves
    out a binary file, and its entry dropped: the next build notes it."""
    root = make(tmp_path / "p", {"a.cu": KERNEL, "b.cu": "__global__ void k() {}\n"})
    assert set(ProjectIndex.build(root).facts) == {str(root / "a.cu"), str(root / "b.cu")}
    b = root / "b.cu"
    st = b.stat()
    b.write_bytes(b"\x00" * st.st_size)
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    _damage(tmp_path / "cache", b, {"kernels": 0})
    scans = _counting_scans(monkeypatch)
    damaged = ProjectIndex.build(root)
    assert damaged.notes == [] and set(damaged.facts) == {str(root / "a.cu")} and scans == []
    assert "k" not in damaged.kernel_files
    again = ProjectIndex.build(root)
    assert set(again.facts) == {str(root / "a.cu")} and scans == []
    [note] = again.notes
    assert "skipped 1 file(s)" in note and "b.cu (binary)" in note


def test_project_root_markers(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"src/deep/k.cu": ""})
    assert find_project_root(root / "src" / "deep" / "k.cu") == root


def test_instantiation_keeps_every_line() -> None:
    text = "// head\n" + KERNEL.replace("template <int BM, int BK, typename T>",
                                        "template <int BM,\n          int BK = 8, typename T = float>")
    out = instantiate_text(text, 2, "tile", {"BM": "128"})
    assert out is not None
    assert out.count("\n") == text.count("\n")
    assert out.splitlines()[3:] [:3] == text.splitlines()[3:][:3]
    assert "constexpr int BM = (128);" in out and "using T = float;" in out
    assert instantiate_text(text, 2, "tile", {}) is None  # BM has no binding and no default


def test_template_kernel_in_header_is_evaluated_as_its_instance(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"k.cuh": KERNEL, "run.cu": '#include "k.cuh"\n'
                                 "void go() { tile<128, 16, float><<<8, 128>>>(0, 0); }\n"})
    idx = ProjectIndex.build(root)
    text = (root / "k.cuh").read_text()
    alone = lint_source(text, str(root / "k.cuh"), LintOptions(resources=False))
    assert not [d for d in alone.diagnostics if d.code == "KL201"]
    r = lint_source(text, str(root / "k.cuh"), LintOptions(project=idx, resources=False))
    [d] = [d for d in r.diagnostics if d.code == "KL201" and d.line == 4]
    assert d.metrics["ways"] == 16  # 16 words apart: gcd(16, 32)
    assert any("BM = 128, BK = 16, T = float (the launch at run.cu:2)" in a for a in d.assumptions)
    assert r.results[0].kernel.template_params == ()  # the instance, not the template


HEAVY = """template <int N, int MIN_BLOCKS>
__global__ void __launch_bounds__(N, MIN_BLOCKS) heavy(const float* in, float* out, int steps) {
    float acc[96];
    for (int k = 0; k < 96; ++k) acc[k] = in[k * N + threadIdx.x];
    for (int s = 0; s < steps; ++s)
        for (int k = 0; k < 96; ++k) acc[k] = acc[k] * acc[(k + 1) % 96] + 1.0f;
    float sum = 0.0f;
    for (int k = 0; k < 96; ++k) sum += acc[k];
    out[threadIdx.x] = sum;
}
"""


@pytest.mark.parametrize(("min_blocks", "low"), [(1, True), (4, False)])
def test_launch_bounds_min_blocks_caps_the_register_estimate(tmp_path: Path, min_blocks: int, low: bool) -> None:
    root = make(tmp_path / "p", {"k.cuh": HEAVY, "run.cu": '#include "k.cuh"\n'
                                 f"void go(int t) {{ heavy<256, {min_blocks}><<<8, t>>>(0, 0, 4); }}\n"})
    idx = ProjectIndex.build(root)
    r = lint_source(HEAVY, str(root / "k.cuh"), LintOptions(project=idx, resources=False))
    assert r.results[0].shape.block == (256, 1, 1)  # folded from __launch_bounds__(N) with N = 256
    assert any(d.code == "KL401" for d in r.diagnostics) == low


def test_fragment_kernels_are_reported_once_at_their_own_file(tmp_path: Path) -> None:
    frag = ("__global__ void tr(float* out, const float* in) {\n"
            "    __shared__ float t[TILE][TILE];\n"
            "    t[threadIdx.y][threadIdx.x] = in[threadIdx.y * TILE + threadIdx.x];\n"
            "    __syncthreads();\n"
            "    out[threadIdx.y * TILE + threadIdx.x] = t[threadIdx.x][threadIdx.y];\n}\n")
    main = ('#define TILE 32\n#include "frag.cu"\n'
            "void go() { tr<<<1, dim3(TILE, TILE)>>>(0, 0); }\n")
    root = make(tmp_path / "p", {"frag.cu": frag, "main.cu": main})
    idx = ProjectIndex.build(root)
    r_frag = lint_source(frag, str(root / "frag.cu"), LintOptions(project=idx, resources=False))
    r_main = lint_source(main, str(root / "main.cu"), LintOptions(project=idx, resources=False))
    assert [(d.line, d.code, d.metrics.get("ways")) for d in r_frag.diagnostics] == [(5, "KL201", 32)]
    assert not r_main.diagnostics and not r_main.kernels
    assert any("parsed through its includer main.cu" in n for n in r_frag.notes)


def test_launch_bounds_fold_with_define() -> None:
    text = ("template <int NT>\n__global__ void __launch_bounds__(NT) k(float* x) {\n"
            "    x[threadIdx.x] = 0;\n}\n")
    r = lint_source(text, "k.cu", LintOptions(resources=False, defines=(("NT", 128),)))
    assert r.results[0].shape.block == (128, 1, 1)
    assert r.results[0].shape.source == "__launch_bounds__(128)"


def test_host_template_calls_bind_only_where_the_template_is_visible(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"k.cuh": KERNEL, "run.cuh": """#include "k.cuh"
template <class T>
void run(const T* a, T* c) { tile<64, 8, T><<<4, 64>>>(a, c); }
""", "main.cu": '#include "run.cuh"\nint main() { run<float>(0, 0); }\n',
        "other/unrelated.cu": "template <class T> void run(T x) {}\nvoid f() { run<double>(1.0); }\n"})
    [pl] = ProjectIndex.build(root).launches_of("tile", str(root / "k.cuh"))
    assert pl.template_args == ("64", "8", "float") and "main.cu:2" in pl.via


def test_config_turns_the_index_off_and_points_at_compile_commands(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kernlint.cli.command import main
    from kernlint.settings.config import load_settings

    root = make(tmp_path / "p", {"k.cuh": KERNEL, "run.cu": '#include "k.cuh"\n'
                                 "void go() { tile<128, 16, float><<<8, 128>>>(0, 0); }\n"})
    cfg = root / "kernlint.toml"
    cfg.write_text('project = false\ncompile-commands = "out"\n')
    settings = load_settings(cfg)
    assert settings.project is False and settings.compile_commands == root / "out"
    monkeypatch.chdir(root)
    off = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", "k.cuh"])
    assert "KL201" not in off.output
    cfg.write_text("project = true\n")
    on = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", "k.cuh"])
    assert "KL201" in on.output


def test_a_failing_index_never_loses_the_lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kernlint.cli.command import main
    from kernlint.project import index as index_mod

    root = make(tmp_path / "p", {"k.cu": "__global__ void k(float* x, int s) { x[threadIdx.x * s] = 0; }\n"
                                 "void go(float* x) { k<<<1, 256>>>(x, 32); }\n"})

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(index_mod.ProjectIndex, "build", classmethod(broken))
    monkeypatch.setattr(index_mod, "_INDEXES", {})
    res = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", str(root / "k.cu")])
    assert res.exit_code == 1 and "KL102" in res.stdout
    assert "project index of" in res.stderr and "disk on fire" in res.stderr


FRAG_N = ("__global__ void frag_k(float* out, const float* in) {\n"
          "    int i = blockIdx.x * NT + threadIdx.x;\n"
          "    out[i] = in[i * STRIDE];\n}\n")


def _tree_without_marker(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = base / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return base


@pytest.mark.parametrize("argument", ["dir", "file"])
def test_a_tree_without_a_marker_is_its_own_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    argument: str) -> None:
    """No pyproject.toml/kernlint.toml/.git above: the directory argument (or the file's directory) is the
    project, so a fragment is still parsed through the file that includes it."""
    from click.testing import CliRunner

    from kernlint.cli.command import main
    from kernlint.project import index as index_mod

    root = _tree_without_marker(tmp_path / "bench", {
        "frag.cu": FRAG_N,
        "main.cu": '#define NT 256\n#define STRIDE 32\n#include "frag.cu"\n'
                   "void go() { frag_k<<<64, NT>>>(0, 0); }\n"})
    assert find_project_root(root / "frag.cu") is None or find_project_root(root / "frag.cu") != root
    monkeypatch.setattr(index_mod, "_INDEXES", {})
    target = str(root) if argument == "dir" else str(root / "frag.cu")
    res = CliRunner().invoke(main, ["--no-ptxas", "--format", "concise", target])
    assert "KL903" not in res.output and "KL904" not in res.output
    assert "frag.cu:3:" in res.output and "KL101" in res.output


def test_a_fragment_of_a_fragment_is_parsed_through_the_translation_unit(tmp_path: Path) -> None:
    """main.cu defines the macros, includes work.cu, which includes the kernel's file."""
    root = make(tmp_path / "p", {
        "frag.cu": FRAG_N,
        "work.cu": '#include "frag.cu"\nvoid go() { frag_k<<<64, NT>>>(0, 0); }\n',
        "main.cu": '#define NT 256\n#define STRIDE 32\n#include "work.cu"\nint main() { go(); }\n'})
    idx = ProjectIndex.build(root)
    assert idx.includers_of(str(root / "frag.cu"))[0] == str(root / "main.cu")
    r = lint_source(FRAG_N, str(root / "frag.cu"), LintOptions(project=idx, resources=False))
    assert [(d.line, d.code) for d in r.diagnostics] == [(3, "KL101")]
    assert r.coverage and all(c.status == "full" for c in r.coverage)


def test_the_includer_leaving_the_fewest_problems_is_the_context(tmp_path: Path) -> None:
    """A leftover header that includes every kernel file but defines nothing sorts first by name; the
    runner that defines the macros is the context used."""
    root = make(tmp_path / "p", {
        "frag.cu": FRAG_N,
        "a_all.h": '#include "frag.cu"\n',
        "runner.cu": '#define NT 256\n#define STRIDE 1\n#include "frag.cu"\n'
                     "void go() { frag_k<<<64, NT>>>(0, 0); }\n"})
    idx = ProjectIndex.build(root)
    r = lint_source(FRAG_N, str(root / "frag.cu"), LintOptions(project=idx, resources=False))
    assert not r.diagnostics
    assert any("parsed through its includer runner.cu" in n for n in r.notes)
    assert r.coverage and all(c.status == "full" for c in r.coverage)


def test_scan_records_file_scope_type_aliases_only() -> None:
    facts = scan_text("""#define TYPE double
typedef TYPE T;
using U = unsigned int;
typedef struct { int a; } S;
typedef void (*fp)(int);
typedef float arr[4];
namespace n { typedef short H; }
struct X { typedef int Inner; };
void f() { typedef int Local; }
typedef interval_gpu<float> I;
""")
    assert facts.type_aliases == (("T", "TYPE"), ("U", "unsigned int"), ("H", "short"), ("I", "interval_gpu<float>"))


def test_scan_of_a_long_typedef_is_fast() -> None:
    import time

    t0 = time.perf_counter()
    scan_text("typedef " + " ".join(["a<b>"] * 5000) + " x;\n" + "typedef " + "a " * 200 + "(;\n")
    assert time.perf_counter() - t0 < 2.0  # no backtracking blow-up (a nested-quantifier regex took minutes)


def test_launch_template_argument_naming_a_typedef_binds_the_aliased_type(tmp_path: Path) -> None:
    root = make(tmp_path / "p", {"k.cuh": KERNEL, "types.h": "#define TYPE double\ntypedef TYPE T;\n",
                                 "run.cu": """#include "types.h"
#include "k.cuh"
void go(const T* a, T* c) { tile<64, 8, T><<<4, 64>>>(a, c); }
template __global__ void tile<32, 4, T>(const T*, T*);
"""})
    idx = ProjectIndex.build(root)
    [pl] = idx.launches_of("tile", str(root / "k.cuh"))
    assert pl.template_args == ("64", "8", "double")
    [(args, _p, _l)] = idx.instantiations_of("tile", str(root / "k.cuh"))
    assert args == ("32", "4", "double")


def test_cached_facts_read_back_equal_to_the_scan() -> None:
    """The index cache's JSON (dataclasses.asdict) read back by facts_from_json is the scanned FileFacts,
    for every fixture and fixture project file (every field: launches with host parameters, typed calls, ...)."""
    import dataclasses

    from kernlint.project.cache import facts_from_json

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    paths = sorted(p for p in fixtures.rglob("*") if p.suffix in (".cu", ".cuh", ".h", ".c", ".cpp"))
    assert len(paths) > 90
    seen_fields = set()
    for p in paths:
        facts = scan_text(p.read_text(encoding="utf-8", errors="replace"))
        back = facts_from_json(json.loads(json.dumps(dataclasses.asdict(facts))))
        assert back == facts and repr(back) == repr(facts), p
        seen_fields |= {f.name for f in dataclasses.fields(facts) if getattr(facts, f.name)}
        seen_fields |= {f.name for ln in facts.launches for f in dataclasses.fields(ln) if getattr(ln, f.name)}
    assert {"launches", "typed_calls", "template_calls", "host_params", "locals", "arg_types"} <= seen_fields


def test_scan_locals_reassigned_or_not() -> None:
    """A host local keeps its declared value at a launch only if nothing assigns it again (`n += 1`,
    `++n`, `n--`, `n = ...`); its own declaration, a comparison and another name's assignment do not count."""
    src = """
__global__ void k(float* a, int n) { a[threadIdx.x] = n; }
void host(float* d, int other) {
    int kept = 256;
    int bumped = 128;
    int pre = 64, post = 32, shifted = 8, plain = 4;
    unsigned keptu = 16;
    bumped += 1; ++pre; post--; shifted <<= 1; plain = 2;
    if (kept == 3 || kept <= 4 || keptu != 2) other = kept;
    float* p = d + kept;
    k<<<kept, bumped>>>(p, pre + post + shifted + plain + keptu);
}
"""
    (ln,) = scan_text(src).launches
    assert dict(ln.locals) == {"kept": "256", "keptu": "16"}
    assert ln.arg_types == ("float *", "")
    assert ln.arg_offsets == ("p = d + kept", "pre + post + shifted + plain + keptu")


def test_scan_split_and_instantiation_prefixes() -> None:
    """Template arguments split at top-level commas only; `template` counts as an explicit
    instantiation after a line start, `;`, `}` or white space (not inside a longer name)."""
    from kernlint.project.scan import split_top

    assert split_top("a<b, c>, d(e, f), g[h, i], x << 2, y > 1") == ["a<b, c>", "d(e, f)", "g[h, i]", "x << 2", "y > 1"]
    assert split_top(" x ,\n y ") == ["x", "y"]
    src = ("template <typename T> __global__ void k(T* a) { a[threadIdx.x] = 0; }\n"
           "template void k<float>(float*);\n"
           "extern template void k<double>(double*);\n"
           "int mytemplate k<int>(int*);\n"
           "}template void k<short>(short*);\n")
    facts = scan_text(src)
    assert [(name, args) for name, args, _line in facts.instantiations] == [
        ("k", ("float",)), ("k", ("double",)), ("k", ("short",))]
    assert [line for _n, _a, line in facts.instantiations] == [2, 3, 5]


def test_without_a_cache_clang_reads_only_what_a_question_needs(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With no on-disk cache, a file the pre-filter picks is read by clang when a question needs its launches:
    a kernel's launches read the files that spell its name (or that a project macro may launch it from), an
    includer ranking reads the includers, a file's reached kernels read its closure; every answer equals
    the eagerly read index's."""
    from kernlint.project import clang_scan

    root = make(tmp_path / "p", {
        "a.cu": KERNEL,
        "b.cu": '#include "a.cu"\nconst int BM = 64;\nvoid f() { tile<BM, 2, float><<<1, 32>>>(0, 0); }\n',
        "other.cu": "__global__ void gather(int* x) { x[0] = 1; }\nvoid h() { gather<<<1, 32>>>(0); }\n",
        "m.h": "#define GO(k) k<<<1, 64>>>(0, 0)\n",
        "c.cu": '#include "m.h"\n#include "a.cu"\nvoid e() { GO((tile<8, 8, float>)); zero<<<1, 1>>>(); }\n',
        # Its own text never names `tile`: the macro of a header it includes does.
        "n.h": "#define LAUNCH_TILE(g) tile<2, 2, float><<<g, 32>>>(0, 0)\n",
        "d.cu": '#include "n.h"\n#include "a.cu"\nvoid e() { LAUNCH_TILE(3); zero<<<1, 1>>>(); }\n'})
    eager = ProjectIndex.build(root)
    eager.complete()
    tile = eager.launches_of("tile", str(root / "a.cu"))
    assert {(pl.path, pl.template_args) for pl in tile} >= {(str(root / "b.cu"), ("64", "2", "float")),
                                                           (str(root / "d.cu"), ("2", "2", "float"))}
    read: list[str] = []
    real = clang_scan.read_with_clang
    monkeypatch.setattr(clang_scan, "read_with_clang", lambda facts, path, text, r: read.append(path) or real(
        facts, path, text, r))
    monkeypatch.setenv("KERNLINT_NO_CACHE", "1")
    lazy = ProjectIndex.build(root)
    assert read == []
    assert lazy.launches_of("gather", str(root / "other.cu")) == eager.launches_of("gather", str(root / "other.cu"))
    assert read == [str(root / "other.cu")]  # the only file spelling `gather` (no macro names it)
    assert lazy.launches_of("tile", str(root / "a.cu")) == tile
    assert set(read) == {str(root / p) for p in ("other.cu", "b.cu", "c.cu", "d.cu", "n.h")}
    lazy2 = ProjectIndex.build(root)
    read.clear()
    assert lazy2.includers_of(str(root / "a.cu")) == eager.includers_of(str(root / "a.cu"))
    assert set(read) == {str(root / "b.cu"), str(root / "c.cu"), str(root / "d.cu")}
    lazy3 = ProjectIndex.build(root)
    read.clear()
    assert lazy3.reached_kernels(str(root / "c.cu")) == eager.reached_kernels(str(root / "c.cu"))
    assert sorted(read) == [str(root / "c.cu"), str(root / "m.h")]  # the file and its (wanted) include
