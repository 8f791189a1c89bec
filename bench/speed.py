"""Speed and scale of kernlint on real code (issue 17): CPU against nvcc, cores used, the result cache, memory.

    python bench/speed.py /work/shared/corpus [--nvcc-files 40] [--skip-nvcc] [--skip-tree] [--timeout 120]
    python bench/speed.py /work/shared/corpus --per-file -I DIR ... [--runs 3] [--against OTHER_CHECKOUT] [--only PART]

The corpus is read where it is (never copied). Every figure is CPU time (user + system of the
process and all its children, from resource.getrusage) unless it says wall; on a shared machine the
wall figures depend on the load. kernlint runs with --no-ptxas (it would otherwise run nvcc itself
for register counts, cached per file) and, unless said, with an empty cache directory. kernlint's
modules are byte-compiled first (as an installed wheel is; with PYTHONDONTWRITEBYTECODE set nothing
would be cached and every process would compile the sources again). `--timeout` is kernlint's
per-file limit: on a loaded machine the default (20 s wall) gives up on large files, and a file
that timed out is linted again by the warm run (timeouts are not cached).

Reported, with the targets of issue 17:
- nvcc: `nvcc -cubin -arch=sm_80` of each of the first N .cu files (sorted); the files it compiles
  standalone are then linted by one kernlint process: CPU ratio (target: kernlint <= 1/20 of nvcc);
- a cold run over the whole tree with the default -j: files/s, CPU/wall (target >= 1.8 on 2 cores),
  peak RSS of any process (target < 250 MB);
- the warm re-run of the unchanged tree (target < 1 s) and its peak RSS;
- a generated 300-line file, cold (target < 0.2 s CPU), and `kernlint --version` (target < 60 ms);
- `--per-file` (issue 31): per .cu file nvcc compiles, kernlint's CPU beside nvcc's (kernlint lints the
  file and the project files it includes with quotes, where its kernels may be), the total ratio
  (target <= 0.25) and the files above 1.0x (target: none); `--against` times a second checkout too;
  each file's CPU is also taken inside one process that lints them all in turn (start-up paid once:
  `*_in_process_*`, `files_*_above_nvcc_in_one_process`);
- for both CPU targets, the floor no change to kernlint's Python can lower (the interpreter with NumPy,
  libclang's own parsing) and how many times less the rest must cost to meet the target (bench/phases.py).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_MEASURE = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(json.loads(sys.argv[1]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=sys.argv[2] or None)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                  "rss_mb": ru.ru_maxrss / 1024, "out": len(p.stdout), "err": p.stderr.decode(errors="replace")[-2000:]}))
"""


def measure(argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> dict:
    """Run `argv` in a fresh measuring process: its wall time, the CPU and the peak RSS of it and its children."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(argv), cwd or ""], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout)


TIMEOUT: list[str] = []


def kernlint(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernlint", "--no-ptxas", *TIMEOUT, *args]


def cuda_files(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*.cu") if p.is_file())


def nvcc_part(tree: Path, n: int) -> dict:
    nvcc = subprocess.run(["which", "nvcc"], capture_output=True, text=True).stdout.strip()
    if not nvcc:
        return {"note": "nvcc not on PATH: CPU ratio not measured"}
    ok, nvcc_cpu = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for f in cuda_files(tree)[:n]:
            m = measure([nvcc, "-cubin", "-arch=sm_80", f"-I{f.parent}", "-o", os.path.join(tmp, "out.cubin"), str(f)])
            if m["rc"] == 0:
                ok.append(str(f))
                nvcc_cpu += m["cpu"]
    if not ok:
        return {"note": "nvcc compiled none of the files"}
    with tempfile.TemporaryDirectory() as cache:
        one = measure(kernlint("--cache-dir", cache, "--no-cache", "-j", "1", "--format", "concise", *ok))
    return {"files_tried": n, "files_compiled": len(ok), "compiled": [os.path.relpath(f, tree) for f in ok], "nvcc_cpu_s": round(nvcc_cpu, 2),
            "kernlint_cpu_s": round(one["cpu"], 2), "kernlint_over_nvcc": round(one["cpu"] / nvcc_cpu, 3),
            "times_cheaper": round(nvcc_cpu / one["cpu"], 1), "kernlint_rss_mb": round(one["rss_mb"]),
            **budget(nvcc_cpu / 20, ok)}


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def local_includes(f: Path, tree: Path, include_dirs: list[Path]) -> list[Path]:
    """The files of `tree` that `f` includes with quotes, directly or through each other (the kernels nvcc
    compiles with `f` may live there: kernlint reports them on the file that holds them, so a fair per-file
    comparison lints them too). Resolved as the preprocessor does: the includer's directory, then `-I`."""
    out: list[Path] = []
    todo, seen = [f], {f.resolve()}
    root = tree.resolve()
    while todo:
        cur = todo.pop()
        try:
            text = cur.read_text(errors="replace")
        except OSError:
            continue
        for name in _QUOTED_INCLUDE.findall(text):
            for d in (cur.parent, *include_dirs):
                cand = (d / name).resolve()
                if cand.is_file():
                    if cand not in seen and cand.is_relative_to(root):
                        seen.add(cand)
                        out.append(cand)
                        todo.append(cand)
                    break
    return out


# One process, the files linted one after the other as the per-file runs lint them (the same arguments, each
# file with the project files it includes), each file's CPU taken from the process's own clock: start-up
# (the interpreter, NumPy, kernlint's modules) paid once, as a run over a project or `kernlint server` pays
# it. A warm-up lint of a one-line kernel (not counted) makes the imports kernlint makes on first use.
_IN_PROCESS = r"""
import contextlib, io, json, os, sys, tempfile, time
import kernlint.cli.command as cli
jobs = json.loads(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    warm = os.path.join(tmp, "warm.cu")
    with open(warm, "w") as fh:
        fh.write("__global__ void k(float* a) { a[threadIdx.x] = 0.0f; }\n")
    jobs.insert(0, ["--no-ptxas", "--no-cache", "--format", "concise", warm])
    out = []
    for argv in jobs:
        t0 = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main.main(argv, prog_name="kernlint")
            except SystemExit:
                pass
        out.append(time.process_time() - t0)
print(json.dumps(out[1:]))
"""


def in_process(jobs: list[list[str]], env: dict[str, str], cwd: str) -> list[float]:
    """Each job's CPU (seconds) when `jobs` (kernlint argument lists) run one after the other in one process."""
    got = subprocess.run([sys.executable, "-c", _IN_PROCESS, json.dumps(jobs)], capture_output=True, text=True,
                         check=True, env=env, cwd=cwd)
    return json.loads(got.stdout)


def per_file_part(tree: Path, n: int | None, include_dirs: list[Path], runs: int, against: str | None,
                  only: list[str]) -> dict:
    """Per .cu file that `nvcc -cubin` compiles: nvcc's CPU beside kernlint's (the file and the project
    files it includes, one `-j 1 --no-cache` process each, start-up included) and the ratio; the total
    ratio over all of them. `runs` > 1: the median of that many runs of each, interleaved (nvcc, then
    kernlint, then the `against` checkout's kernlint), so a change of the machine's load hits all alike."""
    nvcc = subprocess.run(["which", "nvcc"], capture_output=True, text=True).stdout.strip()
    if not nvcc:
        return {"note": "nvcc not on PATH: CPU ratio not measured"}
    files = cuda_files(tree)
    if only:
        files = [f for f in files if any(o in str(f) for o in only)]
    files = files[:n] if n else files
    incs = [f"-I{d}" for d in include_dirs]
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    envs = {"kernlint": dict(os.environ, PYTHONPATH=str(ROOT))}
    if against:
        envs["against"] = dict(os.environ, PYTHONPATH=str(Path(against).resolve()))
    rows, totals = [], {"nvcc": 0.0, **{k: 0.0 for k in envs}}
    # kernlint runs from a directory holding no checkout: `python -m` puts the working directory first on
    # sys.path, which would win over PYTHONPATH (run from a checkout, --against timed that checkout twice).
    neutral = tempfile.mkdtemp(prefix="kernlint-speed-")
    tree, include_dirs = tree.resolve(), [d.resolve() for d in include_dirs]
    jobs: list[list[str]] = []  # each file's lint arguments, for the one-process figures (`in_process`)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cache:
        for f in files:
            first = measure([nvcc, "-cubin", "-arch=sm_80", f"-I{f.parent}", *incs, "-o", os.path.join(tmp, "out.cubin"), str(f)])
            if first["rc"] != 0:
                continue
            lint = [str(f), *map(str, local_includes(f, tree, include_dirs))]
            argv = kernlint("--cache-dir", cache, "--no-cache", "-j", "1", "--format", "concise", *incs, *lint)
            cpu: dict[str, list[float]] = {"nvcc": [first["cpu"]], **{k: [] for k in envs}}
            for i in range(runs):
                if i:
                    cpu["nvcc"].append(measure([nvcc, "-cubin", "-arch=sm_80", f"-I{f.parent}", *incs, "-o",
                                                os.path.join(tmp, "out.cubin"), str(f)])["cpu"])
                for k, env in envs.items():
                    cpu[k].append(measure(argv, cwd=neutral, env=env)["cpu"])
            jobs.append([*incs, *lint])
            row = {"file": os.path.relpath(f, tree), "linted": len(lint)}
            for k, xs in cpu.items():
                row[f"{k}_cpu_s"] = round(med(xs), 3)
                totals[k] += med(xs)
            for k in envs:
                row[f"{k}_over_nvcc"] = round(med(cpu[k]) / med(cpu["nvcc"]), 3)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    out: dict = {"files_compiled": len(rows), "runs_each": runs, "files": rows,
                 "total_cpu_s": {k: round(v, 2) for k, v in totals.items()}}
    for k in envs:
        if totals["nvcc"]:
            out[f"total_{k}_over_nvcc"] = round(totals[k] / totals["nvcc"], 3)
        out[f"files_{k}_above_nvcc"] = [r["file"] for r in rows if r[f"{k}_over_nvcc"] > 1.0]
    # Each file's CPU with start-up paid once (`in_process`), against nvcc's for it.
    if rows:
        with tempfile.TemporaryDirectory() as cache:
            for k, env in envs.items():
                one = in_process([["--no-ptxas", *TIMEOUT, "--cache-dir", cache, "--no-cache", "--format", "concise",
                                   *j] for j in jobs], env, neutral)
                for r, cpu_s in zip(rows, one):
                    r[f"{k}_in_process_cpu_s"] = round(cpu_s, 3)
                    r[f"{k}_in_process_over_nvcc"] = round(cpu_s / r["nvcc_cpu_s"], 3)
                out_rows = [r["file"] for r in rows if r[f"{k}_in_process_over_nvcc"] > 1.0]
                out[f"files_{k}_above_nvcc_in_one_process"] = out_rows
    # The same files in one kernlint process (start-up paid once, as a run over a project pays it),
    # against the sum of nvcc's per-file CPU: issue 17's and 31's total ratio.
    every: list[str] = []
    for r in rows:
        f = tree / r["file"]
        every += [x for x in [str(f), *map(str, local_includes(f, tree, include_dirs))] if x not in every]
    if every and totals["nvcc"]:
        with tempfile.TemporaryDirectory() as cache:
            argv = kernlint("--cache-dir", cache, "--no-cache", "-j", "1", "--format", "concise", *incs, *every)
            for k, env in envs.items():
                one = med([measure(argv, cwd=neutral, env=env)["cpu"] for _ in range(runs)])
                out[f"one_process_{k}_cpu_s"] = round(one, 2)
                out[f"one_process_{k}_over_nvcc"] = round(one / totals["nvcc"], 3)
    return out


def budget(target_s: float, files: list[str]) -> dict:
    """A CPU target (`target_s` for `files` in one process) beside what no change to kernlint's own Python can lower.

    The floor is the interpreter with NumPy (start-up) plus libclang's own parsing of the files; the
    rest of the budget is what kernlint's modules, lowering, evaluation and rules may spend
    (bench/phases.py measures each phase, in one process over the same files)."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "phases.py"), "--json", *files],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"phases_note": f"bench/phases.py failed: {out.stderr.strip()[-500:]}"}
    report = json.loads(out.stdout)
    start, by_phase = report["startup"], report["phases"]
    floor = start["python_numpy_s"] + by_phase.get("libclang", 0.0)
    ours = start["python_kernlint_s"] - start["python_numpy_s"] + by_phase["total"] - by_phase.get("libclang", 0.0)
    return {"target_s": round(target_s, 3), "floor_s(python+numpy+libclang parse)": round(floor, 3),
            "ours_s(kernlint modules+lowering+evaluation+rules+other)": round(ours, 3),
            # How many times less kernlint's own part must cost for the total to meet the target.
            "ours_must_shrink_by": round(ours / (target_s - floor), 1) if target_s > floor else "floor above target",
            "startup_cpu_s": start, "phases_cpu_s": by_phase}


def tree_part(tree: Path) -> dict:
    n = len([p for p in tree.rglob("*") if p.suffix in (".cu", ".cuh")])
    with tempfile.TemporaryDirectory() as cache:
        cold = measure(kernlint("--cache-dir", cache, "--format", "concise", str(tree)))
        warm = measure(kernlint("--cache-dir", cache, "--format", "concise", str(tree)))
    return {"cuda_files": n, "cold_wall_s": round(cold["wall"], 2), "cold_cpu_s": round(cold["cpu"], 2),
            "cold_files_per_s_wall": round(n / cold["wall"], 1), "cold_cpu_over_wall": round(cold["cpu"] / cold["wall"], 2),
            "cold_peak_rss_mb": round(cold["rss_mb"]), "warm_wall_s": round(warm["wall"], 3),
            "warm_cpu_s": round(warm["cpu"], 3), "warm_peak_rss_mb": round(warm["rss_mb"]),
            "same_output_size": cold["out"] == warm["out"]}


def small_part() -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_lint import generated_source

    src = generated_source(20)
    lines = src.count("\n")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "k300.cu"
        f.write_text(src)
        runs = [measure(kernlint("--no-cache", "--format", "concise", str(f))) for _ in range(3)]
        parts = budget(0.2, [str(f)])
    versions = [measure([sys.executable, "-m", "kernlint", "--version"]) for _ in range(5)]
    script = [os.path.join(os.path.dirname(sys.executable), "kernlint"), "--version"]
    scripts = [measure(script) for _ in range(5)] if os.path.exists(script[0]) else []
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    out = {"file_lines": lines, "file_cpu_s": round(med([r["cpu"] for r in runs]), 3),
           "file_wall_s": round(med([r["wall"] for r in runs]), 3),
           "version_cpu_s(python -m)": round(med([r["cpu"] for r in versions]), 3),
           "version_wall_s(python -m)": round(med([r["wall"] for r in versions]), 3), **parts}
    if scripts:
        out["version_cpu_s(kernlint script)"] = round(med([r["cpu"] for r in scripts]), 3)
        out["version_wall_s(kernlint script)"] = round(med([r["wall"] for r in scripts]), 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path, help="a directory of real CUDA code (read in place)")
    ap.add_argument("--nvcc-files", type=int, default=40, help="how many .cu files to try with nvcc")
    ap.add_argument("--skip-nvcc", action="store_true")
    ap.add_argument("--skip-tree", action="store_true")
    ap.add_argument("--timeout", default=None, help="kernlint --timeout (seconds per file)")
    ap.add_argument("--per-file", action="store_true",
                    help="only the per-file comparison with nvcc (every .cu it compiles, or --nvcc-files of them)")
    ap.add_argument("-I", dest="include_dirs", action="append", type=Path, default=[],
                    help="include directory for nvcc and kernlint (per-file comparison), repeatable")
    ap.add_argument("--runs", type=int, default=1, help="per-file: runs of each command, the median is kept")
    ap.add_argument("--against", default=None, help="per-file: also time kernlint from this checkout, interleaved")
    ap.add_argument("--only", action="append", default=[], help="per-file: only files whose path contains this")
    a = ap.parse_args()
    if a.timeout:
        TIMEOUT.extend(["--timeout", a.timeout])
    import compileall

    compileall.compile_dir(str(ROOT / "kernlint"), quiet=1)
    if a.against:  # (byte-compiled alike: the comparison is of the code, not of compiling it)
        compileall.compile_dir(str(Path(a.against) / "kernlint"), quiet=1)
    report: dict = {"cores": len(os.sched_getaffinity(0)), "load_before": os.getloadavg()[0]}
    t0 = time.time()
    if a.per_file:
        report["per_file"] = per_file_part(a.tree, a.nvcc_files if a.nvcc_files != 40 else None,
                                           [d.resolve() for d in a.include_dirs], a.runs, a.against, a.only)
        report["load_after"] = os.getloadavg()[0]
        report["bench_wall_s"] = round(time.time() - t0, 1)
        print(json.dumps(report, indent=2))
        return
    report["small"] = small_part()
    if not a.skip_nvcc:
        report["nvcc"] = nvcc_part(a.tree, a.nvcc_files)
    if not a.skip_tree:
        report["tree"] = tree_part(a.tree)
    report["load_after"] = os.getloadavg()[0]
    report["bench_wall_s"] = round(time.time() - t0, 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
