"""Check KL201's bank model against Nsight Compute's shared-memory counters on a GPU.

Three steps, so that only the middle one needs the GPU (and no kernlint install there):

    python bench/kl201_ncu_check.py prepare OUTDIR   # harness .cu per fixture + kernlint's predictions
    bash OUTDIR/run.sh RESULTS                       # on the GPU machine: nvcc + ncu, CSV per fixture
    python bench/kl201_ncu_check.py compare OUTDIR RESULTS [--debug]   # --debug: the -G build

Each KL201 fixture kernel is launched as ONE block of the shape kernlint analysed (blockIdx = 0,
integer parameters = 32), so ncu's per-kernel sums of shared wavefronts and bank conflicts are
comparable with kernlint's sums over the same block (its first sample). Counts can differ where
the compiler merges, vectorises or removes shared accesses; the report shows both.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from kernlint.eval.events import MemoryAccess
from kernlint.eval.interp import Interpreter
from kernlint.frontend import parse_source
from kernlint.project.launch import launch_shapes
from kernlint.model.metrics import shared_wavefronts

ROOT = Path(__file__).resolve().parent.parent
INT_VALUE = 32
METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)


def predict(path: Path) -> tuple[dict[str, dict[str, int]], str]:
    """kernlint's totals per kernel (one block, sample 0) and the host code that launches each kernel."""
    text = path.read_text()
    tu = parse_source(text, str(path))
    out: dict[str, dict[str, int]] = {}
    launches = []
    for fn in tu.kernels:
        shapes, _defines = launch_shapes(fn, tu)
        shape = shapes[0]
        defines = {p.name: INT_VALUE for p in fn.params if p.ctype.kind in ("int", "bool")}
        res = Interpreter(tu, fn, shape, defines).run()
        tot = {"ld_wavefronts": 0, "st_wavefronts": 0, "ld_ideal": 0, "st_ideal": 0, "ld_requests": 0,
               "st_requests": 0}
        for e in res.events:
            if not (isinstance(e, MemoryAccess) and e.space == "shared"):
                continue
            _ways, wf, ideal = shared_wavefronts(e.address[0], e.mask[0], e.width)
            live = e.mask[0].any(axis=-1)
            k = "ld" if e.kind == "load" else "st"
            tot[f"{k}_wavefronts"] += int(wf[live].sum())
            tot[f"{k}_ideal"] += int(ideal[live].sum())
            tot[f"{k}_requests"] += int(live.sum())
        if res.truncated:
            tot["truncated"] = 1
        out[fn.name] = tot
        targs = ", ".join(v for _k, v in shape.bindings)
        name = f"{fn.name}<{targs}>" if fn.template_params else fn.name
        args = []
        for p in fn.params:
            k = p.ctype.kind
            if k == "pointer":
                args.append("(void*)buf" if p.ctype.pointee is None else f"({_spell(p.ctype)})buf")
            elif k in ("int", "bool"):
                args.append(str(INT_VALUE))
            elif k == "float":
                args.append("1.0f")
            else:
                args.append("{}")
        dyn = 48 * 1024 if "extern __shared__" in text else 0
        b = shape.block
        launches.append(f"    {name}<<<dim3(1, 1, 1), dim3({b[0]}, {b[1]}, {b[2]}), {dyn}>>>({', '.join(args)});\n"
                        f"    check(\"{fn.name}\");\n")
    host = ("\n#include <cstdio>\n#include <cstdlib>\n"
            "static void check(const char* k) {\n"
            "    cudaError_t e = cudaDeviceSynchronize();\n"
            "    if (e != cudaSuccess) { std::printf(\"%s: %s\\n\", k, cudaGetErrorString(e)); std::exit(1); }\n}\n"
            "int main() {\n    char* buf;\n    cudaMalloc(&buf, 64 << 20);\n    cudaMemset(buf, 0, 64 << 20);\n"
            + "".join(launches) + "    std::printf(\"ok\\n\");\n    return 0;\n}\n")
    return out, host


def _spell(t: object) -> str:
    name = getattr(t, "name", "")
    return name.replace("type-parameter-0-0", "float") if name else "void*"


def prepare(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    predictions = {}
    names = []
    for path in sorted((ROOT / "fixtures").glob("KL201_*.cu")):
        pred, host = predict(path)
        predictions[path.stem] = pred
        (outdir / f"{path.stem}.cu").write_text(path.read_text() + host)
        names.append(path.stem)
    (outdir / "predictions.json").write_text(json.dumps(predictions, indent=1))
    metrics = ",".join(METRICS)
    script = ["#!/bin/bash", "set -u", 'RES="$1"; mkdir -p "$RES"', 'cd "$(dirname "$0")"',
              "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > \"$RES/gpu.txt\""]
    for n in names:
        # -O3 is what users ship; -G (no device optimisation) keeps one shared instruction per
        # source access, which makes the per-access model directly comparable.
        for tag, flags in (("", "-O3"), (".G", "-G")):
            script.append(f"nvcc {flags} -arch=sm_90 -w -o {n}{tag}.bin {n}.cu > \"$RES/{n}{tag}.build.txt\" 2>&1 && "
                          f"ncu --metrics {metrics} --csv --print-units base --kernel-name-base function "
                          f"./{n}{tag}.bin > \"$RES/{n}{tag}.csv\" 2> \"$RES/{n}{tag}.err.txt\"")
    (outdir / "run.sh").write_text("\n".join(script) + "\n")


def _ncu(csv_text: str) -> dict[str, dict[str, float]]:
    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row.get("Kernel Name", "").removeprefix("void ").split("<")[0].split("(")[0].strip()
        metric = row.get("Metric Name", "")
        try:
            value = float(row.get("Metric Value", "nan").replace(",", ""))
        except ValueError:
            continue
        out.setdefault(name, {})[metric] = value
    return out


def compare(outdir: Path, results: Path, tag: str = "") -> None:
    predictions = json.loads((outdir / "predictions.json").read_text())
    print(f"GPU: {(results / 'gpu.txt').read_text().strip() if (results / 'gpu.txt').exists() else '?'}")
    print(f"{'fixture/kernel':44} {'op':2} {'kernlint wf/ideal/req':>22} {'ncu wf/conflicts/inst':>24}  match")
    for fixture, kernels in predictions.items():
        path = results / f"{fixture}{tag}.csv"
        measured = _ncu(path.read_text()) if path.exists() else {}
        for kernel, p in kernels.items():
            m = measured.get(kernel, {})
            for op in ("ld", "st"):
                wf = m.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
                bc = m.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
                inst = m.get(f"smsp__sass_inst_executed_op_shared_{op}.sum")
                ours = f"{p[f'{op}_wavefronts']}/{p[f'{op}_ideal']}/{p[f'{op}_requests']}"
                theirs = "n/a" if wf is None else f"{wf:.0f}/{bc:.0f}/{inst:.0f}"
                match = "" if wf is None else ("yes" if int(wf) == p[f"{op}_wavefronts"] else "NO")
                print(f"{fixture + '/' + kernel:44} {op:2} {ours:>22} {theirs:>24}  {match}")


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(Path(sys.argv[2]))
    elif sys.argv[1] == "compare":
        compare(Path(sys.argv[2]), Path(sys.argv[3]), ".G" if "--debug" in sys.argv else "")
    else:
        raise SystemExit(__doc__)
