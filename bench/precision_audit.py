"""Draw warnings and errors at random from a kernlint run over real code and print them for reading.

    python bench/precision_audit.py ../shared/corpus -I ../shared/corpus/cuda-samples/Common \
        -I ../shared/corpus/llm.c -n 50 [--seed 13] [--json-in run.json] [--save run.json]

Runs the kernlint command line (`--format json --no-ptxas --timeout 600`; ptxas with `--ptxas`) over the given paths,
keeps findings of severity warning or error, draws N of them with a fixed seed (the same run and
seed always give the same draw), and prints each with ±5 lines of code, the message, notes and
assumptions, so a reader can judge it true and worth acting on / true but not worth it / false.
The counts per code of the whole run are printed first. Third-party code is only read, never copied.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import subprocess
import sys
from pathlib import Path

CONTEXT = 5


def run_kernlint(paths: list[str], includes: list[str], ptxas: bool) -> list[dict]:
    # A generous per-file time limit: the audit judges findings, and on a loaded machine the default
    # limit would turn slow files into KL900 "gave up" errors that say nothing about the code.
    cmd = [sys.executable, "-m", "kernlint.cli", *paths, "--format", "json", "--timeout", "600"]
    if not ptxas:
        cmd.append("--no-ptxas")
    for inc in includes:
        cmd += ["-I", inc]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1, 2) or not proc.stdout.strip():
        sys.exit(f"kernlint failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)["diagnostics"]


def context(path: str, line: int) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"    (cannot read {path}: {exc})"
    lo, hi = max(1, line - CONTEXT), min(len(lines), line + CONTEXT)
    return "\n".join(f"{'>' if n == line else ' '}{n:5d}| {lines[n - 1]}" for n in range(lo, hi + 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json-in", help="read a saved `kernlint --format json` run instead of running kernlint")
    ap.add_argument("--save", help="write the run's JSON here")
    ap.add_argument("--ptxas", action="store_true", help="let kernlint run nvcc/ptxas (slower)")
    ap.add_argument("--codes", help="comma-separated codes to draw from (default: all)")
    args = ap.parse_args(argv)
    if args.json_in:
        diags = json.loads(Path(args.json_in).read_text())["diagnostics"]
    else:
        if not args.paths:
            ap.error("give paths to lint or --json-in")
        diags = run_kernlint(args.paths, args.includes, args.ptxas)
        if args.save:
            Path(args.save).write_text(json.dumps({"diagnostics": diags}))
    counts = collections.Counter((d["code"], d["severity"]) for d in diags)
    print("findings in the run:", ", ".join(f"{c} {s} {n}" for (c, s), n in sorted(counts.items())))
    pool = [d for d in diags if d["severity"] in ("warning", "error")]
    if args.codes:
        wanted = set(args.codes.split(","))
        pool = [d for d in pool if d["code"] in wanted]
    pool.sort(key=lambda d: (d["path"], d["line"], d["column"], d["code"], d["message"]))
    draw = random.Random(args.seed).sample(pool, min(args.n, len(pool)))
    print(f"drew {len(draw)} of {len(pool)} warnings/errors (seed {args.seed})\n")
    for k, d in enumerate(draw, 1):
        print("=" * 100)
        print(f"[{k}] {d['path']}:{d['line']}:{d['column']} {d['code']} {d['severity']} "
              f"kernel {d.get('kernel') or '-'}")
        print(f"    {d['message']}")
        for note in d.get("notes", []):
            print(f"    note: {note}")
        for a in d.get("assumptions", []):
            print(f"    assumed: {a}")
        if d.get("metrics"):
            print(f"    metrics: {d['metrics']}")
        print(context(d["path"], d["line"]))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
