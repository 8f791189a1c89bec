"""`--confirm` coverage: run `kernlint --confirm` over files and print, per rule, how many findings
were confirmed, refuted, not run (by reason) and found by confirmation.

    python bench/confirm_coverage.py [--mode trace|ncu] [--compile-only] [-I DIR]... [--json OUT] PATH...

Each file is checked in its own `kernlint --confirm --format json` process (where it lies: third-party
code is never copied into the repository), so one file's trouble cannot hide the others'.
`--compile-only` needs no GPU: it plans every file as `--confirm` does and compiles the
instrumented and the plain device code with NVRTC alone (CuPy's NVRTC binding; no driver needed),
reporting the kernels the GPU compiler would reject, which is where most not-run findings came from.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXTS = (".cu", ".cuh")


def files_under(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, _dirs, names in os.walk(p):
                out.extend(os.path.join(dirpath, n) for n in sorted(names) if n.endswith(EXTS))
        else:
            out.append(p)
    return sorted(dict.fromkeys(out))


def run_file(path: str, args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str], float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--mode", args.mode]
    if args.compile_only:
        cmd.append("--compile-only")
    for d in args.include:
        cmd += ["-I", d]
    cmd.append(path)
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=False)
    except subprocess.TimeoutExpired:
        return [], [f"{path}: timed out after {args.timeout} s"], time.time() - t0
    notes = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return [], [f"{path}: no JSON (exit {proc.returncode})", *notes[-5:]], time.time() - t0
    return data.get("diagnostics", []), notes, time.time() - t0


def child(args: argparse.Namespace) -> int:
    """One file through the real CLI; with --compile-only the GPU steps are replaced by NVRTC alone."""
    from kernlint.cli import command as cli

    if args.compile_only:
        _patch_compile_only()
    argv = [f"--confirm={args.mode}", "--format", "json", "--no-ptxas", "-j", "1"]
    for d in args.include:
        argv += ["-I", d]
    argv += args.paths
    try:
        cli.main.main(argv, standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _patch_compile_only() -> None:
    """Plan and compile as `--confirm` does; each kernel that compiles is reported not-run ("dry")."""
    from kernlint import confirm
    from kernlint.confirm.cupy_probe import nvrtc_compile

    def probe() -> tuple[bool, str]:
        return True, ""

    def run_batch(plan: Any, source: Any, pending: list[Any], workdir: str, notes: list[str]) -> None:
        names = [(r.spec or {}).get("name_expr", r.name_expr) for r in pending]
        for code, what in ((source.code, "instrumented"), (source.device_code, "plain"), (source.profiled, "profiled")):
            ok, log = nvrtc_compile(code, plan.options, names)
            if not ok:
                for r in pending:
                    r.status, r.reason = "compile-error", confirm._first_error(log)
                notes.append(f"{plan.path}: {what} device code rejected by NVRTC: {log[:1500]}")
                return
        for r in pending:
            r.status, r.reason, r.category = "not-run", "compile-only check: the device code compiles", "dry-run"

    confirm.probe_device = probe  # type: ignore[assignment]
    confirm._run_batch = run_batch  # type: ignore[assignment]


def table(diags: list[dict[str, Any]]) -> str:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: set[str] = set()
    for d in diags:
        status = d.get("confirmation")
        if not status:
            continue
        code = d["code"]
        if status == "not-run":
            r = str(d.get("metrics", {}).get("confirm_not_run", "other"))
            reasons.add(r)
            per[code][f"not-run:{r}"] += 1
        per[code][status] += 1
    cols = ["confirmed", "refuted", "found-by-confirm", "not-run"] + [f"not-run:{r}" for r in sorted(reasons)]
    head = ["rule"] + [c.replace("not-run:", "nr:") for c in cols]
    rows = [head]
    total: Counter[str] = Counter()
    for code in sorted(per):
        rows.append([code] + [str(per[code][c]) for c in cols])
        total.update(per[code])
    rows.append(["total"] + [str(total[c]) for c in cols])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    judged = total["confirmed"] + total["refuted"]
    static = judged + total["not-run"]
    if static:
        lines.append(f"confirmed or refuted: {judged}/{static} = {judged / static:.0%}; "
                     f"not run: {total['not-run']} ({total['not-run'] / static:.0%})")
    return "\n".join(lines)


def ncu_table(diags: list[dict[str, Any]]) -> str:
    """Per finding with Nsight Compute counters: the trace's total for its access and ncu's."""
    lines = ["finding                                   access        trace      ncu  equal"]
    equal = compared = 0
    for d in diags:
        m = d.get("metrics", {})
        for kind in ("load", "store"):
            for what in ("sectors", "wavefronts"):
                if f"ncu_{kind}_{what}" not in m:
                    continue
                traced = m.get(f"measured_{kind}_{what}_total")
                eq = m.get(f"ncu_{kind}_equals_trace")
                if eq is not None:
                    compared += 1
                    equal += bool(eq)
                where = f"{os.path.basename(d['path'])}:{d['line']}:{d['column']} {d['code']}"
                scope = " (line)" if m.get(f"ncu_{kind}_{what}_line_total") else ""
                per = ""
                if f"ncu_{kind}_{what}_per_launch" in m:
                    per = (f"  per block/launch: trace {m.get(f'measured_{kind}_{what}_per_block')} "
                           f"ncu {m[f'ncu_{kind}_{what}_per_launch']}")
                lines.append(f"{where:41s} {kind} {what:10s} {traced!s:>6} {m[f'ncu_{kind}_{what}']:>8}  "
                             f"{'-' if eq is None else eq}{scope}{per}")
    lines.append(f"per-finding counters equal to Nsight Compute's: {equal}/{compared}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-I", dest="include", action="append", default=[])
    ap.add_argument("--mode", default="trace", choices=("trace", "ncu"))
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--json", help="write every finding (with its confirmation) here")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("-j", "--jobs", type=int, default=1, help="files checked at the same time")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    everything: list[dict[str, Any]] = []
    from concurrent.futures import ThreadPoolExecutor

    paths = files_under(args.paths)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda p: run_file(p, args), paths))
    for path, (diags, notes, secs) in zip(paths, outcomes):
        everything.extend(diags)
        statuses = Counter(d.get("confirmation", "static") for d in diags)
        print(f"{path}: {dict(statuses)} ({secs:.1f} s)", flush=True)
        for n in notes:
            if "--confirm" in n or "GPU" in n or "NVRTC" in n or "not traced" in n or "ncu" in n:
                print(f"    {n[:600]}")
    print()
    print(table(everything))
    if args.mode == "ncu":
        print()
        print(ncu_table(everything))
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
