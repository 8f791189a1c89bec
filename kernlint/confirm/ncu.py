"""`--confirm=ncu`: profile the original kernels with Nsight Compute and attach per-line counters.

The uninstrumented device code (host code blanked, same lines) is compiled with `-lineinfo` and a
`#line` directive naming the user's file, launched by the CuPy probe in the same shape and with the
same synthesized arguments as the trace run, under

    ncu --section SourceCounters --import-source yes --target-processes all -o REPORT \
        python -m kernlint.confirm.cupy_probe < job.json

and the report's source page (`ncu --import REPORT.ncu-rep --page source --csv --print-source cuda,sass`)
gives counters per CUDA source line (a row per line with the sums, then its SASS rows). For each finding kernlint attaches, from its line:
global sectors vs the ideal (`L2 Theoretical Sectors Global` / `... Ideal`), shared wavefronts vs
the ideal, and divergent branches, as `ncu_*` metrics. These are hardware counters for the whole
grid (every block, not only the sampled ones), so they are a cross-check, not the verdict: the
verdict stays the trace's.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from typing import Any

from kernlint.diagnostics import Diagnostic

NCU_TIMEOUT_S = 600

# Column titles of the source page (lower-cased, whitespace collapsed) -> our metric key.
COLUMNS = {
    "l2 theoretical sectors global": "ncu_global_sectors",
    "memory l2 theoretical sectors global": "ncu_global_sectors",
    "l2 theoretical sectors global ideal": "ncu_global_sectors_ideal",
    "memory ideal l2 theoretical sectors global": "ncu_global_sectors_ideal",
    "l2 theoretical sectors global excessive": "ncu_global_sectors_excessive",
    "l1 wavefronts shared": "ncu_shared_wavefronts",
    "memory l1 wavefronts shared": "ncu_shared_wavefronts",
    "l1 wavefronts shared ideal": "ncu_shared_wavefronts_ideal",
    "memory ideal l1 wavefronts shared": "ncu_shared_wavefronts_ideal",
    "l1 wavefronts shared excessive": "ncu_shared_wavefronts_excessive",
    "divergent branches": "ncu_divergent_branches",
    "branch instructions": "ncu_branch_instructions",
    "instructions executed": "ncu_instructions_executed",
    "thread instructions executed": "ncu_thread_instructions_executed",
    "predicated-on thread instructions executed": "ncu_predicated_on_thread_instructions",
}


_LINE_TITLES = ("line no", "#", "line", "# line", "line number")


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_source_page(text: str) -> dict[int, dict[str, float]]:
    """Per source line, the counters we know, summed over every kernel in the report.

    The CSV holds one table per profiled kernel, each starting with its own header row; a header is
    a row with a "#"/"Line" column and a "Source" column.
    """
    out: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    line_col = -1
    cols: dict[int, str] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        lowered = [re.sub(r"\s+", " ", c.strip().lower()) for c in row]
        if "source" in lowered and any(c in _LINE_TITLES for c in lowered):
            line_col = next(i for i, c in enumerate(lowered) if c in _LINE_TITLES)
            cols = {i: COLUMNS[c] for i, c in enumerate(lowered) if c in COLUMNS}
            continue
        if line_col < 0 or line_col >= len(row):
            continue
        ln = _number(row[line_col])
        if ln is None:
            continue
        for i, key in cols.items():
            if i < len(row):
                v = _number(row[i])
                if v is not None:
                    out[int(ln)][key] += v
    return {k: dict(v) for k, v in out.items()}


def profile_with_ncu(diagnostics: list[Diagnostic], plans: list[Any], workdir: str,
                     notes: list[str]) -> list[Diagnostic]:
    """Attach per-line Nsight Compute counters to the findings of every file that was run."""
    ncu = shutil.which("ncu")
    if ncu is None:
        notes.append("--confirm=ncu: Nsight Compute (ncu) is not on PATH; reported the trace confirmation only")
        return diagnostics
    per_file: dict[str, dict[int, dict[str, float]]] = {}
    for i, plan in enumerate(plans):
        if plan.instrumented is None:
            continue
        runs = [r for r in plan.runs if r.spec is not None and r.status == "ok"]
        if not runs:
            continue
        counters, problem = _profile(ncu, plan, runs, workdir, i)
        if problem:
            notes.append(f"{plan.path}: --confirm=ncu: {problem}")
        if counters:
            per_file[plan.path] = counters
    out = []
    for d in diagnostics:
        lines = per_file.get(d.path)
        if not lines or d.line not in lines:
            out.append(d)
            continue
        c = lines[d.line]
        metrics = dict(d.metrics)
        metrics.update({k: int(v) if float(v).is_integer() else v for k, v in c.items()})
        summary = _summary(c)
        notes_ = d.notes + ((f"Nsight Compute on this line (whole grid): {summary}",) if summary else ())
        out.append(dataclasses.replace(d, metrics=metrics, notes=notes_))
    return out


def _summary(c: dict[str, float]) -> str:
    parts = []
    if c.get("ncu_global_sectors"):
        ideal = c.get("ncu_global_sectors_ideal")
        parts.append(f"{c['ncu_global_sectors']:.0f} global sectors" + (f" vs {ideal:.0f} ideal" if ideal else ""))
    if c.get("ncu_shared_wavefronts"):
        ideal = c.get("ncu_shared_wavefronts_ideal")
        parts.append(f"{c['ncu_shared_wavefronts']:.0f} shared wavefronts" + (f" vs {ideal:.0f} ideal" if ideal else ""))
    if "ncu_divergent_branches" in c:
        parts.append(f"{c['ncu_divergent_branches']:.0f} divergent branches")
    inst, on = c.get("ncu_instructions_executed"), c.get("ncu_predicated_on_thread_instructions")
    if inst and on is not None:
        # A short `if` body is often predicated instead of branched: then the split shows as
        # lanes predicated off, not as divergent branches.
        parts.append(f"{on / (32 * inst):.0%} of lane slots active (predicated on)")
    return "; ".join(parts)


def ncu_command(ncu: str, report: str) -> list[str]:
    """The profiling command line (also printed in the README for reproducing by hand)."""
    return [ncu, "--section", "SourceCounters", "--import-source", "yes", "--target-processes", "all",
            "-f", "-o", report, sys.executable, "-m", "kernlint.confirm.cupy_probe"]


def source_page_command(ncu: str, report: str) -> list[str]:
    """Per-line counters: the `cuda` view alone prints no metric columns, `cuda,sass` does (ncu 2025.3)."""
    return [ncu, "--import", report, "--page", "source", "--csv", "--print-source", "cuda,sass"]


def _profile(ncu: str, plan: Any, runs: list[Any], workdir: str, index: int
             ) -> tuple[dict[int, dict[str, float]], str]:
    path = os.path.abspath(plan.path)
    plain = f'#line 1 "{path}"\n' + plan.instrumented.device_code
    job = {"plain_only": True, "plain": plain, "options": list(plan.options) + ["-lineinfo"],
           "kernels": [r.spec for r in runs], "out": workdir}
    job_path = os.path.join(workdir, f"ncu_job_{index}.json")
    with open(job_path, "w", encoding="utf-8") as fh:
        json.dump(job, fh)
    report = os.path.join(workdir, f"ncu_{index}")
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        with open(job_path, encoding="utf-8") as stdin:
            prof = subprocess.run(ncu_command(ncu, report), stdin=stdin, capture_output=True, text=True, check=False,
                                  timeout=NCU_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return {}, f"ncu did not finish within {NCU_TIMEOUT_S} s"
    if not os.path.exists(report + ".ncu-rep"):
        tail = (prof.stderr or prof.stdout).strip().splitlines()[-3:]
        return {}, "ncu wrote no report: " + " | ".join(tail)
    try:
        page = subprocess.run(source_page_command(ncu, report + ".ncu-rep"), capture_output=True, text=True, check=False,
                              timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {}, "ncu --import timed out"
    keep = os.environ.get("KERNLINT_NCU_KEEP")
    if keep:
        os.makedirs(keep, exist_ok=True)
        base = os.path.join(keep, os.path.basename(plan.path))
        shutil.copy(report + ".ncu-rep", base + ".ncu-rep")
        shutil.copy(job_path, base + ".job.json")
        with open(base + ".source.csv", "w", encoding="utf-8") as fh:
            fh.write(page.stdout)
        with open(base + ".profile.log", "w", encoding="utf-8") as fh:
            fh.write(prof.stdout + "\n----\n" + prof.stderr + "\n----\n" + page.stderr)
    counters = parse_source_page(page.stdout)
    if not counters:
        return {}, "the source page had no per-line counters (" + (page.stderr.strip()[:200] or "empty") + ")"
    return counters, ""
