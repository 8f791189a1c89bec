"""Start-up CPU of one kernlint process (issue 31): a lint of a tiny file, whole-process CPU, against another checkout.

    python bench/startup.py [FILE] [--runs 15] [--against ../main] [--cache]

Each run is `python -m kernlint --no-ptxas --no-cache -j 1 --format concise FILE` (`--cache`: without
`--no-cache`, a cache hit after the first run) in a fresh process from a directory holding no checkout;
its CPU is user + system time of it and its workers (os.wait4). With --against, the two checkouts' runs
alternate, so a change of the machine's load hits both alike. Both are byte-compiled first (the
environment may set PYTHONDONTWRITEBYTECODE). Prints the median, quartiles and range in ms, and where the
start-up of this checkout goes: importing the ~140 modules a lint loads (on top of NumPy, click and the
libclang bindings), and within that the frozen dataclasses and the regular expressions compiled at import.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = "__global__ void add(const float *a, const float *b, float *c, int n) {\n" \
       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] = a[i] + b[i];\n}\n"

_BREAKDOWN = r"""
import json, sys, time, gc
import numpy, click, clang.cindex, multiprocessing, hashlib, subprocess, tempfile, shutil, ctypes, pickle, glob
import re._compiler as rc
import kernlint.base.frozen as fz
spent = {"regex": 0.0, "frozen": 0.0}
def timed(key, fn):
    def run(*a, **k):
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[key] += time.process_time() - t
    return run
rc.compile = timed("regex", rc.compile)
fz.frozen = timed("frozen", fz.frozen)
gc.disable()  # as the command line loads them (kernlint/base/startup.py)
t = time.process_time()
for m in sys.argv[1:]:
    __import__(m)
print(json.dumps({"imports": time.process_time() - t, **spent}))
"""


def _cpu(argv: list[str], env: dict[str, str], cwd: str) -> float:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(cwd)
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execvpe(argv[0], argv, env)
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def _summary(xs: list[float]) -> dict:
    xs = sorted(x * 1000 for x in xs)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {"median_ms": round(statistics.median(xs), 1), "q1_ms": round(q[0], 1), "q3_ms": round(q[2], 1),
            "min_ms": round(xs[0], 1), "max_ms": round(xs[-1], 1)}


def _lint_modules(file: str, env: dict[str, str], cwd: str) -> list[str]:
    """The kernlint modules a lint of `file` loads (in this process and its worker)."""
    code = ("import os, sys\nsys.argv = ['kernlint', '--no-ptxas', '--no-cache', '-j', '1', '--format', 'concise', "
            f"{file!r}]\nimport kernlint.runner.parallel as par\ntask = par._lint_file_task\n"
            "def traced(*a, **k):  # in the worker, once the file is linted\n    out = task(*a, **k)\n"
            "    open(os.environ['MODS_OUT'], 'w').write('\\n'.join(m for m in sys.modules if m.startswith('kernlint')))\n"
            "    return out\npar._lint_file_task = traced\nfrom kernlint.cli.console import run\nrun()\n")
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        subprocess.run([sys.executable, "-c", code], env=dict(env, MODS_OUT=out.name), cwd=cwd, capture_output=True)
        return [m for m in out.read().split("\n") if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", nargs="?", help="the file to lint (default: a four-line vector add)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--against", help="another checkout, timed alternately")
    ap.add_argument("--cache", action="store_true", help="with the result cache (runs after the first hit it)")
    a = ap.parse_args()
    neutral = tempfile.mkdtemp(prefix="kernlint-startup-")
    file = a.file or os.path.join(neutral, "tiny.cu")
    if not a.file:
        Path(file).write_text(TINY)
    trees = {"this": ROOT, **({"against": Path(a.against).resolve()} if a.against else {})}
    argv = [sys.executable, "-m", "kernlint", "--no-ptxas", *([] if a.cache else ["--no-cache"]), "-j", "1",
            "--format", "concise", os.path.abspath(file)]
    envs = {k: dict(os.environ, PYTHONPATH=str(t)) for k, t in trees.items()}
    for t in trees.values():
        compileall.compile_dir(str(t / "kernlint"), quiet=1)
    for k in trees:  # a first run each: warms the page cache (and fills the result cache with --cache)
        _cpu(argv, envs[k], neutral)
    cpu: dict[str, list[float]] = {k: [] for k in trees}
    for _ in range(a.runs):
        for k in trees:
            cpu[k].append(_cpu(argv, envs[k], neutral))
    report: dict = {"command": " ".join(["python -m kernlint", *argv[3:-1], os.path.basename(file)]),
                    "runs": a.runs, "load": round(os.getloadavg()[0], 2)}
    for k, t in trees.items():
        report[f"{k} ({t})"] = _summary(cpu[k])
    mods = _lint_modules(os.path.abspath(file), envs["this"], neutral)
    parts = [json.loads(subprocess.run([sys.executable, "-c", _BREAKDOWN, *mods], env=envs["this"], cwd=neutral,
                                       capture_output=True, text=True).stdout) for _ in range(5)]
    report["this: importing the lint's kernlint modules"] = {
        "modules": len(mods), **{f"{k}_ms": round(1000 * min(p[k] for p in parts), 1) for k in parts[0]}}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
