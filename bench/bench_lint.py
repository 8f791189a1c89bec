"""Time kernlint: per fixture file (whole process, interpreter start included) and on generated files.

    python bench/bench_lint.py [--repeat 3]

Prints seconds per file and kernels per second. The target (issue 2): a 300-line file in under
0.3 s including interpreter start. Speed targets live here, not in timed tests.
"""
from __future__ import annotations

import argparse
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
        subprocess.run([sys.executable, "-c", "from kernlint.cli import run; run()", str(path), "--format", "concise",
                        "--no-ptxas"],
                       capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_engine(text: str, path: str, repeat: int) -> tuple[float, int]:
    from kernlint.engine import LintOptions, lint_source

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
    args = ap.parse_args()
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
