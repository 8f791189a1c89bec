"""Compare kernlint's roofline figures with Nsight Compute's counters (issue 19), on the GPU machine.

    python bench/roofline_ncu.py [--ncu PATH] [--arch sm_90]

Lints `fixtures/roofline_kernels.cu` and `fixtures/roofline_gemm.cu`, launches every kernel of
them once with CuPy under `ncu`, and prints per kernel, per thread: FP32/FP64 FLOPs predicted vs
measured (`smsp__sass_thread_inst_executed_op_{f,d}{add,mul,fma}_pred_on.sum`, an FMA counted 2),
global bytes predicted (sectors x 32) vs L1 global sectors x 32
(`l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`), and DRAM bytes
(`dram__bytes_{read,write}.sum`), which the model does not predict (caches are not modelled; see
rules/roofline.md). Needs CuPy, a CUDA device and `ncu`; without them it says so and exits 2.
The launch shapes and sizes are those of `LAUNCHES` below (the block of each kernel's annotation).
"""
from __future__ import annotations

import argparse
import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = [ROOT / "fixtures" / "roofline_kernels.cu", ROOT / "fixtures" / "roofline_gemm.cu"]
N1 = 1 << 22  # elements of the 1-D kernels
ROWS_THREADS, ROWS_LD = 1 << 16, 4096

# kernel -> (grid, block, arguments as (kind, value)): "f32"/"f64"/"i32" scalars, "buf:<dtype>:<elements>".
LAUNCHES = {
    "saxpy": ((N1 // 256, 1, 1), (256, 1, 1), [("i32", N1), ("f32", 2.0), ("buf:f32", N1), ("buf:f32", N1)]),
    "polynomial": ((N1 // 256, 1, 1), (256, 1, 1), [("buf:f32", N1), ("buf:f32", N1), ("i32", N1)]),
    "rows": ((ROWS_THREADS // 256, 1, 1), (256, 1, 1),
             [("buf:f32", ROWS_THREADS * ROWS_LD), ("buf:f32", ROWS_THREADS), ("i32", ROWS_LD)]),
    "daxpy": ((N1 // 256, 1, 1), (256, 1, 1), [("i32", N1), ("f64", 2.0), ("buf:f64", N1), ("buf:f64", N1)]),
    "gemm_naive": ((2, 2, 1), (16, 16, 1), [("buf:f32", 1024)] * 3),
    "gemm_tiled16": ((2, 2, 1), (16, 16, 1), [("buf:f32", 1024)] * 3),
    "gemm_tiled32": ((1, 1, 1), (32, 32, 1), [("buf:f32", 1024)] * 3),
}

METRICS = [f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in "fd" for op in ("add", "mul", "fma")]
METRICS += ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "dram__bytes_read.sum", "dram__bytes_write.sum"]


def launch() -> None:
    """The process ncu profiles: every kernel of LAUNCHES once, in order."""
    import cupy as cp
    import numpy as np

    kinds = {"i32": np.int32, "f32": np.float32, "f64": np.float64}
    source = "\n".join(p.read_text() for p in FIXTURES)
    module = cp.RawModule(code=source, options=("-std=c++17",), name_expressions=list(LAUNCHES))
    for name, (grid, block, args) in LAUNCHES.items():
        values = []
        for kind, value in args:
            if kind.startswith("buf:"):
                values.append(cp.ones(int(value), dtype=kinds[kind[4:]]))
            else:
                values.append(kinds[kind](value))
        module.get_function(name)(grid, block, tuple(values))
        cp.cuda.Device().synchronize()


def measured(ncu: str) -> dict[str, dict[str, float]]:
    cmd = [ncu, "--csv", "--metrics", ",".join(METRICS), sys.executable, str(Path(__file__).resolve()), "--launch"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=900)
    lines = proc.stdout.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"ncu printed no metrics (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    # Rows of other kernels (CuPy's own fill kernels for the buffers) are skipped by name: "saxpy(int, ...)".
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        name = row["Kernel Name"].split("(")[0].strip().removeprefix("void ")
        if name not in LAUNCHES:
            continue
        try:
            value = float(row["Metric Value"].replace(",", "") or 0)
        except ValueError:
            continue
        out.setdefault(name, {})[row["Metric Name"]] = value
    return out


def predicted(arch: str) -> dict[str, object]:
    from kernlint.engine.lint import LintOptions, lint_with_suppressions
    from kernlint.checks.roofline import rooflines

    out: dict[str, object] = {}
    for path in FIXTURES:
        result = lint_with_suppressions(path.read_text(), str(path), LintOptions())
        for r in rooflines(result.results, arch):
            out.setdefault(r.kernel, r)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launch", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    if args.launch:
        launch()
        return 0
    if shutil.which(args.ncu) is None:
        print(f"roofline_ncu: Nsight Compute ({args.ncu}) not found: nothing measured", file=sys.stderr)
        return 2
    pred = predicted(args.arch)
    meas = measured(args.ncu)
    head = ("kernel", "FP32 FLOP/thr pred", "meas", "FP64 FLOP/thr pred", "meas", "B/thr pred", "L1 B/thr meas",
            "DRAM B/thr meas (rd+wr)")
    rows = [head]
    for name, (grid, block, _a) in LAUNCHES.items():
        m = meas.get(name, {})
        r = pred.get(name)
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]

        def flops(p: str) -> float:
            return (m.get(f"smsp__sass_thread_inst_executed_op_{p}add_pred_on.sum", 0)
                    + m.get(f"smsp__sass_thread_inst_executed_op_{p}mul_pred_on.sum", 0)
                    + 2 * m.get(f"smsp__sass_thread_inst_executed_op_{p}fma_pred_on.sum", 0)) / threads
        l1 = 32 * (m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0)
                   + m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 0)) / threads
        dram = (m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)) / threads
        rows.append((name, "-" if r is None else f"{r.fp32_flops:g}", f"{flops('f'):g}",
                     "-" if r is None else f"{r.fp64_flops:g}", f"{flops('d'):g}",
                     "-" if r is None else f"{r.bytes:g}", f"{l1:g}", f"{dram:.3g}"))
    widths = [max(len(x[c]) for x in rows) for c in range(len(head))]
    for x in rows:
        print("  ".join(x[c].ljust(widths[c]) for c in range(len(head))).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
