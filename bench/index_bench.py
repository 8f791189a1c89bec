"""Time the project index on a generated 200-file project (in a temporary directory).

    python bench/index_bench.py [--files 200] [--repeat 5] [--corpus DIR ...]

Reports: the cold index build (empty cache), the warm build (every file's scan from the cache),
and the warm overhead of linting one file of the project as pre-commit would (`kernlint FILE`,
whole process) against the same run with `--no-project`. Target (issue 11): warm overhead < 50 ms.
The cold build reads with libclang only the files that spell a launch or an explicit instantiation
(project/clang_scan.py, issue 29): their count is printed. With `--corpus`, the cold and warm build of
each project directory given (read where it lies, never copied) are timed as well.

Linting a runner whole-process also lints the header kernel it launches (issue 29: the kernels a
file reaches are linted with it): that is analysis, not index overhead, and is printed apart.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = """#pragma once
// generated kernel header {i}
#define TILE_{i} 32
template <int BM, int BK, typename T>
__global__ void gemm_{i}(const T* __restrict__ A, T* __restrict__ C, int lda) {{
    __shared__ T As[BM * BK];
    for (int k = 0; k < BK; ++k)
        As[threadIdx.x * BK + k] = A[k * lda + blockIdx.x * BM + threadIdx.x];
    __syncthreads();
    T acc = 0;
    for (int k = 0; k < BK; ++k) acc += As[threadIdx.x * BK + k];
    C[blockIdx.x * BM + threadIdx.x] = acc;
}}
"""

RUNNER = """#include "kernels/gemm_{i}.cuh"
#include <cuda_runtime.h>
constexpr int BLOCK = 128;

template <class T>
void launch_{i}(const T* a, T* c, int n) {{
    dim3 block(BLOCK);
    gemm_{i}<BLOCK, 8, T><<<n / BLOCK, block>>>(a, c, n);
}}

__global__ void plain_{i}(const float* in, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f;
}}

void run_{i}(const float* a, float* c, int n) {{
    launch_{i}<float>(a, c, n);
    plain_{i}<<<n / 256, 256>>>(a, c, n);
}}
"""


def generate(root: Path, files: int) -> None:
    (root / "kernels").mkdir(parents=True)
    (root / "kernlint.toml").write_text("")
    for i in range(files // 2):
        (root / "kernels" / f"gemm_{i}.cuh").write_text(HEADER.format(i=i))
        (root / f"run_{i}.cu").write_text(RUNNER.format(i=i))


def time_build(root: Path) -> tuple[float, int, int]:
    """(seconds, files scanned, files read by clang) of a build; the facts are decoded (as a lint needs)."""
    from kernlint.project.index import ProjectIndex

    t = time.perf_counter()
    idx = ProjectIndex.build(root)
    idx.ready()
    seconds = time.perf_counter() - t
    return seconds, idx.scanned, sum(1 for f in idx.facts.values() if getattr(f, "read_by_clang", False))


def time_corpus(dirs: list[str], repeat: int) -> None:
    """Cold and warm index builds of each project directory in `dirs`, each cold build with an empty cache."""
    for d in dirs:
        root = Path(d).resolve()
        with tempfile.TemporaryDirectory() as cache:
            os.environ["KERNLINT_CACHE_DIR"] = cache
            cold, scanned, by_clang = time_build(root)
            warm = min(time_build(root)[0] for _ in range(repeat))
        print(f"corpus {root.name}: cold {cold * 1000:.0f} ms ({scanned} files scanned, {by_clang} read by clang), "
              f"warm {warm * 1000:.1f} ms")


def _once(args: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from kernlint.cli.command import run; run()", *args], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def time_pair(args: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall time of `kernlint ARGS` with and without the index, runs interleaved (load drifts)."""
    with_index, without = [], []
    for _ in range(repeat):
        with_index.append(_once(args, env))
        without.append(_once(["--no-project", *args], env))
    return statistics.median(with_index), statistics.median(without)


def time_in_process(root: Path, target: Path, repeat: int) -> tuple[float, float]:
    """Median in-process time of linting `target` with a freshly loaded (warm-cache) index, and without."""
    from kernlint.engine.lint import LintOptions, lint_source
    from kernlint.project import index as index_mod

    text = target.read_text()
    with_index, without = [], []
    for _ in range(repeat):
        index_mod._INDEXES.clear()
        t = time.perf_counter()
        idx = index_mod.load_index(root)
        lint_source(text, str(target), LintOptions(project=idx, resources=False))
        with_index.append(time.perf_counter() - t)
        t = time.perf_counter()
        lint_source(text, str(target), LintOptions(resources=False))
        without.append(time.perf_counter() - t)
    return statistics.median(with_index), statistics.median(without)


def time_reach(root: Path, target: Path, repeat: int) -> float:
    """Median time of asking a freshly loaded (warm-cache) index which kernels `target` reaches."""
    from kernlint.project import index as index_mod

    times = []
    for _ in range(repeat):
        index_mod._INDEXES.clear()
        idx = index_mod.load_index(root)
        idx.ready()
        t = time.perf_counter()
        idx.reached_kernels(str(target))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--corpus", nargs="*", default=[], help="project directories whose index builds are timed too")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        os.environ["KERNLINT_CACHE_DIR"] = str(Path(tmp) / "cache")
        generate(root, ns.files)
        cold, scanned, by_clang = time_build(root)
        warm = min(time_build(root)[0] for _ in range(ns.repeat))
        print(f"project: {ns.files} files in {root}")
        print(f"index build, cold (empty cache): {cold * 1000:.1f} ms ({scanned} files scanned, "
              f"{by_clang} read by clang: those that launch or instantiate)")
        print(f"index build, warm (from cache):  {warm * 1000:.1f} ms")
        env = dict(os.environ)
        target = root / "run_0.cu"  # a runner: one plain kernel, no header kernels reported here
        base = ["--no-ptxas", "--format", "concise", str(target)]
        _once(base, env)  # warm the OS file cache
        inp_with, inp_without = time_in_process(root, target, ns.repeat)
        reach = time_reach(root, target, ns.repeat)
        print(f"which kernels of other files it reaches (index.reached_kernels, warm index): {reach * 1000:.1f} ms")
        print(f"lint one file in process (index loaded from the cache + lint): {inp_with * 1000:.0f} ms, "
              f"without the index {inp_without * 1000:.0f} ms: overhead {(inp_with - inp_without) * 1000:+.0f} ms "
              "(target < 50 ms)")
        with_index, without = time_pair(base, ns.repeat, env)
        print(f"lint one file, whole process: {with_index * 1000:.0f} ms with the index (and the header kernel "
              f"it launches, gemm_0, linted with it), {without * 1000:.0f} ms without: "
              f"{(with_index - without) * 1000:+.0f} ms")
        header = ["--no-ptxas", "--format", "concise", str(root / "kernels" / "gemm_0.cuh")]
        hdr_with, hdr_without = time_pair(header, ns.repeat, env)
        print(f"lint the template header, whole process: {hdr_with * 1000:.0f} ms with the index (evaluated as "
              f"gemm_0<128, 8, float>), {hdr_without * 1000:.0f} ms without (template left unbound)")
    time_corpus(ns.corpus, ns.repeat)

if __name__ == "__main__":
    main()
