"""Time kernlint: per fixture file (whole process, interpreter start included) and on generated files.

    python bench/bench_lint.py [--repeat 3] [--tree DIR] [--startup-only]

Prints seconds per file and kernels per second; first, the CPU time (user + system, children's
rusage, so worker processes count) and wall time of `kernlint --version` and of a generated 300-line
file; with `--tree DIR`, a cold run over DIR with `-j 1` and with the default `-j` (CPU/wall shows
how many cores were used). The target (issue 2): a 300-line file in under
0.3 s including interpreter start. Speed targets live here, not in timed tests.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KERNEL_TEMPLATE = """
__global__ void kernel_{i}(const float* __restrict__ in, float* __restrict__ out, int w, int h) {{
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x] * {i}.0f;
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
    if (threadIdx.x == 0) out[{i}] = in[x * h + y];
}}
"""


def generated_source(kernels: int) -> str:
    body = "".join(KERNEL_TEMPLATE.format(i=i) for i in range(kernels))
    launches = "".join(f"    kernel_{i}<<<grid, block>>>(in, out, 4096, 4096);\n" for i in range(kernels))
    return (f"#include <cuda_runtime.h>\n{body}\nvoid run(const float* in, float* out) {{\n"
            f"    dim3 block(32, 8);\n    dim3 grid(128, 128);\n{launches}}}\n")


def time_cli(path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from kernlint.cli.command import run; run()", str(path), "--format", "concise",
                        "--no-ptxas"],
                       capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cpu_wall(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median (CPU s, wall s) of running `kernlint argv` in a fresh process; CPU includes its workers."""
    cpus, walls = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kernlint", *argv], capture_output=True, check=False)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpus), statistics.median(walls)


def startup_and_tree(repeat: int, tree: str | None) -> None:
    print(f"{'command':52} {'CPU s':>7} {'wall s':>7} {'CPU/wall':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        three_hundred = Path(tmp) / "three_hundred_lines.cu"
        three_hundred.write_text(generated_source(22))  # 336 lines, 22 kernels
        runs = [["--version"], ["--list-rules"],
                ["--no-ptxas", "--no-project", "--format", "concise", str(three_hundred)]]
        if tree:
            runs += [["--no-ptxas", "--format", "concise", "-j", "1", tree],
                     ["--no-ptxas", "--format", "concise", tree]]
        for argv in runs:
            cpu, wall = cpu_wall(argv, 1 if tree and argv[-1] == tree else repeat)
            label = "kernlint " + " ".join(a if a != str(three_hundred) else "<300 lines>" for a in argv)
            print(f"{label[:52]:52} {cpu:7.3f} {wall:7.3f} {cpu / wall if wall else 0:8.2f}")
    print(f"(cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}: other work on the machine "
          "makes these figures noisy)")


def time_engine(text: str, path: str, repeat: int) -> tuple[float, int]:
    from kernlint.engine.lint import LintOptions, lint_source

    best = float("inf")
    kernels = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = lint_source(text, path, LintOptions(resources=False))
        best = min(best, time.perf_counter() - t0)
        kernels = len(res.kernels)
    return best, kernels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", default=None, help="also time a cold run over this directory, -j 1 vs default")
    ap.add_argument("--startup-only", action="store_true", help="only the start-up (and --tree) figures")
    args = ap.parse_args()
    startup_and_tree(args.repeat, args.tree)
    if args.startup_only:
        return
    print(f"{'file':40} {'lines':>6} {'kernels':>7} {'process s':>10} {'engine s':>9} {'kernels/s':>10}")
    rows = []
    for f in sorted((ROOT / "fixtures").glob("*.cu")) + [ROOT / "examples" / "transpose.cu"]:
        rows.append((f.name, f.read_text()))
    for n in (20, 200):
        rows.append((f"generated_{n}_kernels.cu", generated_source(n)))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in rows:
            path = Path(tmp) / name
            path.write_text(text)
            proc = time_cli(path, args.repeat)
            eng, kernels = time_engine(text, str(path), args.repeat)
            rate = kernels / eng if eng > 0 else 0.0
            print(f"{name:40} {text.count(chr(10)):6d} {kernels:7d} {proc:10.3f} {eng:9.3f} {rate:10.1f}")


if __name__ == "__main__":
    main()
