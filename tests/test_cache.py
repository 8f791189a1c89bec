"""The result cache: hits print exactly what a cold run prints, and any changed input is a miss."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernlint.runner import parallel
from kernlint.cli.command import main

ROOT = Path(__file__).resolve().parent.parent
STRIDED = '#include "tile.h"\n__global__ void k(float* x) { x[threadIdx.x * STRIDE] = 0; }\n'


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("KERNLINT_CACHE_DIR", raising=False)


class _Counter:
    """Counts the files actually linted (not served from the cache)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        real = parallel.lint_file

        def counting(job: Any, setup: Any) -> Any:
            self.names.append(os.path.basename(job.name))
            return real(job, setup)

        monkeypatch.setattr(parallel, "lint_file", counting)


def _lint(cache: Path, *args: str) -> tuple[str, str, int]:
    from kernlint.project import index

    index._INDEXES.clear()  # each run builds its project index afresh, as a new process would
    res = CliRunner().invoke(main, ["--no-ptxas", "--cache-dir", str(cache), *args], catch_exceptions=False)
    return res.stdout, res.stderr, res.exit_code


@pytest.mark.parametrize("fmt", ["text", pytest.param("json", marks=pytest.mark.slow),
                                 pytest.param("sarif", marks=pytest.mark.slow)])
def test_hits_print_exactly_what_a_cold_run_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    counter = _Counter(monkeypatch)
    files = [str(ROOT / "fixtures" / n) for n in ("KL101_mapping.cu", "KL201_padding.cu", "KL900_syntax_error.cu",
                                                   "KL901_suppressions.cu", "KL305_data_dependent.cu")]
    files = [f for f in files if os.path.exists(f)]
    assert len(files) >= 4
    counter.names.clear()
    cold = _lint(tmp_path / "c", "--format", fmt, *files)
    assert len(counter.names) == len(files)
    warm = _lint(tmp_path / "c", "--format", fmt, *files)
    assert len(counter.names) == len(files), "the second run linted again"
    assert warm == cold
    assert cold[0].count("\n") > 10  # there are findings: the comparison is not vacuous
    fresh = _lint(tmp_path / "fresh", "--format", fmt, *files)
    assert fresh == cold


def test_no_cache_and_clear_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    f = tmp_path / "k.cu"
    f.write_text("__global__ void k(float* x) { x[threadIdx.x * 32] = 0; }\n")
    cache = tmp_path / "c"
    _lint(cache, str(f))
    _lint(cache, str(f))
    assert counter.names == ["k.cu"]
    _lint(cache, "--no-cache", str(f))
    assert counter.names == ["k.cu"] * 2
    assert any(p.name.startswith("results-v") for p in cache.iterdir())
    (cache / "mine.txt").write_text("not kernlint's")
    res = CliRunner().invoke(main, ["--cache-dir", str(cache), "--clear-cache"])
    assert res.exit_code == 0 and "removed" in res.stderr
    assert [p.name for p in cache.iterdir()] == ["mine.txt"]  # only kernlint's own entries go
    _lint(cache, str(f))
    assert counter.names == ["k.cu"] * 3


def test_a_changed_included_header_invalidates_the_includer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    src = tmp_path / "src"
    (src / "inc").mkdir(parents=True)
    k = src / "k.cu"
    k.write_text(STRIDED)
    header = src / "inc" / "tile.h"
    header.write_text('#include "stride.h"\n')  # the header that matters is two includes away
    (src / "inc" / "stride.h").write_text("#define STRIDE 32\n")
    cache = tmp_path / "c"
    args = ("--format", "concise", "-I", str(src / "inc"), str(k))
    out, _err, code = _lint(cache, *args)
    assert "KL102" in out and code == 1
    assert _lint(cache, *args)[0] == out and counter.names == ["k.cu"]
    (src / "inc" / "stride.h").write_text("#define STRIDE 1\n")
    out2, _err, code2 = _lint(cache, *args)
    assert counter.names == ["k.cu"] * 2
    assert "KL102" not in out2 and code2 == 0
    # A header created where the include is looked up first (the includer's directory) shadows the
    # one found before: also a miss.
    (src / "tile.h").write_text("#define STRIDE 16\n")
    out3, _err, _code = _lint(cache, *args)
    assert counter.names == ["k.cu"] * 3 and "KL102" in out3


def test_a_missing_header_that_appears_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    k = tmp_path / "k.cu"
    k.write_text('#include "tile.h"\n#ifndef STRIDE\n#define STRIDE 1\n#endif\n'
                 "__global__ void k(float* x) { x[threadIdx.x * STRIDE] = 0; }\n")
    cache = tmp_path / "c"
    assert "KL102" not in _lint(cache, "--format", "concise", str(k))[0]
    (tmp_path / "tile.h").write_text("#define STRIDE 32\n")
    assert "KL102" in _lint(cache, "--format", "concise", str(k))[0]
    assert counter.names == ["k.cu"] * 2


KERNEL = """template <int BM, int BK, typename T>
__global__ void tile(const T* A, T* C) {
    __shared__ T As[BM * BK];
    As[threadIdx.x * BK] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = As[threadIdx.x * BK] * sizeof(T);
}
"""


def _tile_project(tmp_path: Path) -> Path:
    """A project of k.cuh (KERNEL) and run.cu, which launches it with BK = 16; its root."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "kernlint.toml").write_text("")
    (root / "k.cuh").write_text(KERNEL)
    run = root / "run.cu"
    run.write_text('#include "k.cuh"\nvoid go() { tile<128, 16, float><<<8, 128>>>(0, 0); }\n')
    return root


def test_a_changed_launch_elsewhere_in_the_project_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """k.cuh's findings depend on the launch in run.cu (the project index): editing run.cu is a miss for k.cuh."""
    counter = _Counter(monkeypatch)
    root = _tile_project(tmp_path)
    run = root / "run.cu"
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "c"))  # the project index's cache too
    cache = tmp_path / "c"
    header = str(root / "k.cuh")
    out, _e, _c = _lint(cache, "--format", "concise", header)
    assert "KL201" in out
    assert _lint(cache, "--format", "concise", header)[0] == out and counter.names == ["k.cuh"]
    run.write_text('#include "k.cuh"\nvoid go() { tile<128, 1, float><<<8, 128>>>(0, 0); }\n')
    out2, _e, _c = _lint(cache, "--format", "concise", header)
    assert counter.names == ["k.cuh"] * 2
    assert "KL201" not in out2
    # An unrelated edit elsewhere (no launch, no include) keeps the hit.
    (root / "other.cu").write_text("__global__ void other(float* x) { x[threadIdx.x] = 1; }\n")
    _lint(cache, "--format", "concise", header)
    _lint(cache, "--format", "concise", header)
    assert counter.names == ["k.cuh"] * 2


def test_an_unchanged_project_index_is_not_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hit whose project index was built from the same files (ProjectIndex.state) needs no question
    asked again; an index built from other files has another state and is asked (the test above)."""
    from kernlint.project.index import ProjectIndex, load_index

    root = _tile_project(tmp_path)
    monkeypatch.setenv("KERNLINT_CACHE_DIR", str(tmp_path / "c"))
    cache = tmp_path / "c"
    header = str(root / "k.cuh")
    out, _e, _c = _lint(cache, "--format", "concise", header)
    assert "KL201" in out
    asked: list[str] = []
    real = ProjectIndex.launches_of

    def counting(self: ProjectIndex, kernel: str, defined_in: str) -> Any:
        asked.append(kernel)
        return real(self, kernel, defined_in)

    monkeypatch.setattr(ProjectIndex, "launches_of", counting)
    counter = _Counter(monkeypatch)
    assert _lint(cache, "--format", "concise", header)[0] == out
    assert counter.names == [] and asked == []
    from kernlint.project import index

    index._INDEXES.clear()
    before = load_index(root).state
    index._INDEXES.clear()
    assert load_index(root).state == before and len(before) == 32
    (root / "other.cu").write_text("__global__ void other(float* x) { x[threadIdx.x] = 1; }\n")
    index._INDEXES.clear()
    assert load_index(root).state != before


def test_changed_settings_and_a_damaged_entry_are_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    f = tmp_path / "k.cu"
    f.write_text("__global__ void k(float* x) { x[threadIdx.x * 32] = 0; }\n")
    cache = tmp_path / "c"
    _lint(cache, str(f))
    _lint(cache, "--block", "64", str(f))
    _lint(cache, "--arch", "sm_90", str(f))
    assert len(counter.names) == 3
    for entry in (cache / "results-v1").glob("*.pkl"):
        entry.write_bytes(b"garbage")
    out = _lint(cache, str(f))
    assert len(counter.names) == 4 and "KL102" in out[0]


def test_pruning_keeps_the_directory_under_its_size(tmp_path: Path) -> None:
    from kernlint.runner.resultcache import ResultCache

    cache = ResultCache(tmp_path, max_bytes=4000)
    cache.dir.mkdir(parents=True)
    for i in range(10):
        p = cache.dir / f"{i:02d}.pkl"
        p.write_bytes(b"x" * 1000)
        os.utime(p, ns=(i * 10**9, i * 10**9))
    cache.wrote = 1
    cache.prune()
    left = sorted(p.name for p in cache.dir.glob("*.pkl"))
    assert left == ["07.pkl", "08.pkl", "09.pkl"]  # the most recently used, under 3/4 of the limit


def test_two_concurrent_runs_share_a_cache(tmp_path: Path) -> None:
    for i in range(4):
        (tmp_path / f"k{i}.cu").write_text(f"__global__ void k{i}(float* x) {{ x[threadIdx.x * {i + 2}] = 0; }}\n")
    env = dict(os.environ, KERNLINT_CACHE_DIR=str(tmp_path / "c"))
    cmd = [sys.executable, "-m", "kernlint", "--no-ptxas", "-j", "1", "--format", "concise", str(tmp_path)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    nocache = subprocess.run(cmd + ["--no-cache"], env=env, capture_output=True, text=True, timeout=600)
    warm = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert outs[0] == outs[1] == (nocache.stdout, nocache.stderr) == (warm.stdout, warm.stderr)
    assert not list((tmp_path / "c" / "results-v1").glob("*.tmp"))


def test_a_fragment_answered_without_clang_is_linted_again_when_an_includer_makes_it_a_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fragment whose text spells no kernel is answered from text (project/kernel_text.py) after reading its
    includers' #defines: those includers are inputs of the cached result, so an includer that turns the
    fragment's macro into a kernel makes the next run lint the fragment again."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "kernlint.toml").write_text("")
    (proj / "main.cu").write_text('#define KERNEL static void\n#include "frag.cuh"\n')
    frag = proj / "frag.cuh"
    frag.write_text("KERNEL scale(float* a) { a[threadIdx.x * 32] = 0.f; }\n")
    out, _err, code = _lint(tmp_path / "c", str(frag))
    assert code == 0 and "uncoalesced" not in out
    (proj / "main.cu").write_text('#define KERNEL __global__ void\n#include "frag.cuh"\n')
    out, _err, code = _lint(tmp_path / "c", str(frag))
    assert code == 1 and "uncoalesced global store" in out
