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

from kernlint.base.diagnostics import Diagnostic

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


@dataclasses.dataclass
class SourceTable:
    """One profiled launch on the source page: per (file, line), the line's sums and its SASS rows."""

    kernel: str
    lines: dict[tuple[str, int], dict[str, float]]
    # (opcode, counters, address space, access operation) in address order; the last two are ncu's own
    # "Address Space"/"Access Operation" columns (lower case), "" when the page has none
    sass: dict[tuple[str, int], list[tuple[str, dict[str, float], str, str]]]


def parse_source_tables(text: str) -> list[SourceTable]:
    """The source page split per launch ("Kernel Name" rows) and per file ("File Name" rows).

    Counters are never summed across files (a header's line 87 is not the .cu file's line 87) nor
    across launches; the SASS rows under a CUDA line are kept one by one with their opcode, so a
    finding can take the instructions of its own access (load vs store, global vs shared).
    """
    tables: list[SourceTable] = []
    cur: SourceTable | None = None
    path = ""
    line_col = -1
    sass_col = -1
    addr_col = -1
    space_col = op_col = -1
    cols: dict[int, str] = {}
    current_line = -1
    seen_addresses: dict[tuple[int, str, int], set[str]] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        head = row[0].strip().lower()
        if head in ("kernel name", "function name") and len(row) > 1:
            # ncu prints one section per source file of a launch ("File Path", then "Function Name"):
            # the same function continuing with a file it has not shown yet is the same launch.
            if cur is None or cur.kernel != row[1].strip() or any(k[0] == path for k in cur.lines):
                cur = SourceTable(row[1].strip(), {}, defaultdict(list))
                tables.append(cur)
            continue
        if head in ("file name", "file path") and len(row) > 1:
            path = os.path.realpath(row[1].strip()) if row[1].strip() else ""
            continue
        lowered = [re.sub(r"\s+", " ", c.strip().lower()) for c in row]
        if "source" in lowered and any(c in _LINE_TITLES for c in lowered):
            line_col = next(i for i, c in enumerate(lowered) if c in _LINE_TITLES)
            sources = [i for i, c in enumerate(lowered) if c == "source"]
            sass_col = sources[-1] if len(sources) > 1 else -1
            addr_col = next((i for i, c in enumerate(lowered) if c == "address"), -1)
            space_col = next((i for i, c in enumerate(lowered) if c == "address space"), -1)
            op_col = next((i for i, c in enumerate(lowered) if c == "access operation"), -1)
            cols = {i: COLUMNS[c] for i, c in enumerate(lowered) if c in COLUMNS}
            continue
        if cur is None or line_col < 0 or line_col >= len(row):
            continue
        counters = {}
        for i, key in cols.items():
            if i < len(row):
                v = _number(row[i])
                if v is not None:
                    counters[key] = counters.get(key, 0.0) + v
        ln = _number(row[line_col])
        if ln is not None:
            current_line = int(ln)
            cur.lines[(path, current_line)] = counters
            continue
        if current_line >= 0 and 0 <= sass_col < len(row) and 0 <= addr_col < len(row) \
                and row[addr_col].strip() not in ("", "-"):
            # ncu lists an instruction under its line once per inlining context it maps to (a user line
            # through the instrumentation's inlined guard, say): one address is one instruction.
            seen = seen_addresses.setdefault((id(cur), path, current_line), set())
            if row[addr_col].strip() in seen:
                continue
            seen.add(row[addr_col].strip())
            space = row[space_col].strip().lower() if 0 <= space_col < len(row) else ""
            op = row[op_col].strip().lower() if 0 <= op_col < len(row) else ""
            cur.sass[(path, current_line)].append((sass_opcode(row[sass_col]), counters,
                                                   "" if space == "-" else space, "" if op == "-" else op))
    return tables


def merge_tables(tables: list[SourceTable]) -> SourceTable:
    """The launches of one run (the same code) as one table: counters summed line by line and
    instruction by instruction."""
    out = SourceTable(tables[0].kernel, {}, defaultdict(list))
    for t in tables:
        for key, c in t.lines.items():
            acc = out.lines.setdefault(key, {})
            for m, v in c.items():
                acc[m] = acc.get(m, 0.0) + v
        for key, rows in t.sass.items():
            have = out.sass[key]
            for i, (opcode, c, where, op) in enumerate(rows):
                if i < len(have) and have[i][0] == opcode:
                    merged = dict(have[i][1])
                    for m, v in c.items():
                        merged[m] = merged.get(m, 0.0) + v
                    have[i] = (opcode, merged, where, op)
                else:
                    have.append((opcode, dict(c), where, op))
    return out


def sass_opcode(text: str) -> str:
    """`@!P0 LDG.E.128 R4, desc[UR4][R2.64]` -> `LDG.E.128`."""
    parts = text.strip().split()
    while parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


_LOADS = re.compile(r"^(LDG|LDS|LDSM|LD|LDGSTS)(\.|$)")
_STORES = re.compile(r"^(STG|STS|ST)(\.|$)")
_ATOMICS = re.compile(r"^(ATOMG|ATOMS|ATOM|RED|REDG)(\.|$)")


def instruction_kind(opcode: str) -> str:
    """load | store | atomic | "" for the SASS opcodes that access memory."""
    if _ATOMICS.match(opcode):
        return "atomic"
    if _LOADS.match(opcode):
        return "load"
    if _STORES.match(opcode):
        return "store"
    return ""


def access_instructions(table: SourceTable, path: str, line: int, kind: str, space: str) -> list[dict[str, float]]:
    """Counters of each SASS instruction of `kind` (load/store) in `space` (global/shared) on (path, line).

    ncu's own "Address Space"/"Access Operation" columns decide where the page has them; otherwise
    the opcode (LDG/STS ...) does, and a generic LD/ST is told by which counter it moved.
    """
    key = "ncu_shared_wavefronts" if space == "shared" else "ncu_global_sectors"
    other = "ncu_global_sectors" if space == "shared" else "ncu_shared_wavefronts"
    out = []
    for opcode, c, where, op in table.sass.get((os.path.realpath(path), line), []):
        k = instruction_kind(opcode)
        if op:
            k = "atomic" if "atom" in op or "red" in op else ("store" if "store" in op else
                                                              ("load" if "load" in op else k))
        if not k or (k != kind and not (kind == "store" and k == "atomic")):
            continue
        if where:
            if space not in where:
                continue
        else:
            mnemonic = opcode.split(".")[0]
            w = "shared" if mnemonic in ("LDS", "STS", "LDSM", "ATOMS") else \
                "global" if mnemonic in ("LDG", "STG", "ATOMG", "RED", "REDG") else "generic"
            if w not in ("generic", space) or (w == "generic" and c.get(other) and not c.get(key)):
                continue
        out.append(c)
    return out


def access_counters(table: SourceTable, path: str, line: int, kind: str, space: str
                    ) -> tuple[dict[str, float], int]:
    """The instructions of `access_instructions` summed (an unrolled loop repeats one access), and how many."""
    rows = access_instructions(table, path, line, kind, space)
    total: dict[str, float] = defaultdict(float)
    for c in rows:
        for m, v in c.items():
            total[m] += v
    return dict(total), len(rows)


def profile_with_ncu(diagnostics: list[Diagnostic], plans: list[Any], workdir: str,
                     notes: list[str]) -> list[Diagnostic]:
    """Attach Nsight Compute's counters of each finding's own SASS instructions, from its own launch.

    The plain build (`Instrumented.profiled`: the same guard, gridDim and sampled blocks as the traced
    run, nothing recorded) runs under ncu with the same arguments. Each launch is one table of the
    source page; a finding takes the table of the run its verdict came from (`confirm_run`), and from
    it the instructions of its file and line whose kind (load/store) and space (global/shared) are its
    access's. The trace's totals over the same requests stand beside them (`measured_*_total`).
    """
    ncu = shutil.which("ncu")
    if ncu is None:
        notes.append("--confirm=ncu: Nsight Compute (ncu) is not on PATH; reported the trace confirmation only")
        return diagnostics
    tables: dict[tuple[str, int], tuple[SourceTable, Any]] = {}
    per_launch: dict[tuple[str, int], list[SourceTable]] = {}
    for i, plan in enumerate(plans):
        if plan.instrumented is None or not plan.instrumented.profiled:
            continue
        runs = [r for r in plan.runs if r.spec is not None and r.status == "ok"]
        if not runs:
            continue
        found, problem = _profile(ncu, plan, runs, workdir, i)
        if problem:
            notes.append(f"{plan.path}: --confirm=ncu: {problem}")
        pending = list(found)
        for r in runs:  # launches are profiled in the order they were made; pair them by name
            base = r.name_expr.split("<")[0]
            mine = []
            for _launch in range(2 if r.spec.get("args2") is not None else 1):  # one launch per sampled block when their values differ
                k = next((j for j, t in enumerate(pending) if t.kernel.split("(")[0].split("<")[0].strip()
                          .split(" ")[-1].split("::")[-1] == base), None)
                if k is not None:
                    mine.append(pending.pop(k))
            if mine:
                tables[(plan.path, r.id)] = (merge_tables(mine), r)
                if len(mine) == 2:  # each launch traced one sampled block: compared launch by launch too
                    per_launch[(plan.path, r.id)] = mine
    out = []
    for d in diagnostics:
        rid = d.metrics.get("confirm_run")
        hit = tables.get((d.path, rid)) if rid is not None else None
        if hit is None:
            out.append(d)
            continue
        table, run = hit
        d = _attach(d, table, run)
        launches = per_launch.get((d.path, rid))
        if launches:
            d = _per_launch(d, launches, run)
        out.append(d)
    return out


def _attach(d: Diagnostic, table: SourceTable, run: Any) -> Diagnostic:
    """Nsight Compute's counters of the finding's own instruction(s), beside the trace's.

    One access of its kind on the line: the instructions of that kind there are its own (several when
    a loop was unrolled), summed. Several (a stencil line with nine loads): the trace's total of each
    column is compared with the instructions one by one; when the two sets of numbers are the same,
    the finding's number is its instruction's, else the line's sums are compared and said so.
    """
    from kernlint.confirm.verdict import site_totals
    from kernlint.eval import events as ev

    accesses = [e for e in run.result.events if isinstance(e, ev.MemoryAccess) and e.span.line == d.line]
    mine = [e for e in accesses if e.span.column == d.column]
    metrics = dict(d.metrics)
    notes_ = list(d.notes)
    if mine and run.measured is not None:
        for kind in dict.fromkeys(e.kind for e in mine):
            space = mine[0].space
            what = "wavefronts" if space == "shared" else "sectors"
            key = "ncu_shared_wavefronts" if space == "shared" else "ncu_global_sectors"
            rows = access_instructions(table, d.path, d.line, kind, space)
            if not rows:
                continue
            cols = sorted({e.span.column for e in accesses if e.kind == kind and e.space == space})
            traced = {c: site_totals(run.measured, d.line, c).get(f"measured_{kind}_{what}_total") for c in cols}
            got = [int(r.get(key, 0)) for r in rows]
            ideal = [int(r.get(key + "_ideal", 0)) for r in rows]
            complete = bool(metrics.get("measured_trace_complete"))
            mine_traced = traced.get(d.column)
            if len(cols) == 1:
                value, value_ideal, how = sum(got), sum(ideal), f"{len(rows)} {kind} instruction" + \
                    ("s" if len(rows) > 1 else "") + " of this access"
                equal = mine_traced is not None and value == mine_traced
            elif len(rows) == len(cols) and None not in traced.values() and \
                    sorted(got) == sorted(int(v) for v in traced.values()):
                k = got.index(int(mine_traced)) if mine_traced is not None else 0
                value, value_ideal, how = got[k], ideal[k], (f"its {kind} instruction (matched by value among the "
                                                             f"line's {len(rows)}, whose numbers equal the trace's)")
                equal = True
            else:
                value, value_ideal = sum(got), sum(ideal)
                how = f"the line's {len(rows)} {kind} instructions for its {len(cols)} {space} {kind}s together"
                line_traced = sum(int(v or 0) for v in traced.values())
                equal = value == line_traced
                mine_traced = line_traced
                metrics[f"ncu_{kind}_{what}_line_total"] = True
            metrics[f"ncu_{kind}_{what}"] = value
            metrics[f"ncu_{kind}_{what}_ideal"] = value_ideal
            metrics[f"ncu_{kind}_instructions"] = len(rows)
            text = f"Nsight Compute, {how}: {value} {what} (ideal {value_ideal})"
            if mine_traced is not None:
                text += f"; the trace counted {mine_traced}"
                if complete:
                    metrics[f"ncu_{kind}_equals_trace"] = bool(equal)
                else:
                    text += " (the trace stopped recording before the last requests of a warp: not comparable)"
            notes_.append(text)
    else:
        c = table.lines.get((os.path.realpath(d.path), d.line))
        if c:
            metrics.update({k: int(v) if float(v).is_integer() else v for k, v in c.items()})
            summary = _summary(c)
            if summary:
                notes_.append(f"Nsight Compute on this line (the sampled blocks): {summary}")
    return dataclasses.replace(d, metrics=metrics, notes=tuple(notes_))


def _per_launch(d: Diagnostic, launches: list[SourceTable], run: Any) -> Diagnostic:
    """For a run of two launches (one per sampled block, each with its own values): ncu's count of
    the finding's instructions in each launch beside the trace's count for that block."""
    from kernlint.confirm.verdict import site_totals
    from kernlint.eval import events as ev

    mine = [e for e in run.result.events if isinstance(e, ev.MemoryAccess)
            and (e.span.line, e.span.column) == (d.line, d.column)]
    if not mine or run.measured is None:
        return d
    space = mine[0].space
    what = "wavefronts" if space == "shared" else "sectors"
    key = "ncu_shared_wavefronts" if space == "shared" else "ncu_global_sectors"
    metrics = dict(d.metrics)
    for kind in dict.fromkeys(e.kind for e in mine):
        pairs = []
        for s, table in enumerate(launches):
            rows = access_instructions(table, d.path, d.line, kind, space)
            traced = site_totals(run.measured, d.line, d.column, sample=s).get(f"measured_{kind}_{what}_total", 0)
            pairs.append((int(traced), int(sum(r.get(key, 0) for r in rows))))
        metrics[f"ncu_{kind}_{what}_per_launch"] = [p[1] for p in pairs]
        metrics[f"measured_{kind}_{what}_per_block"] = [p[0] for p in pairs]
    return dataclasses.replace(d, metrics=metrics)


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


def _profile(ncu: str, plan: Any, runs: list[Any], workdir: str, index: int) -> tuple[list[SourceTable], str]:
    job = {"plain_only": True, "guarded": True, "plain": plan.instrumented.profiled,
           "options": list(plan.options) + ["-lineinfo"], "kernels": [r.spec for r in runs], "out": workdir}
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
        return [], f"ncu did not finish within {NCU_TIMEOUT_S} s"
    failed = [ln for ln in prof.stdout.splitlines() if '"status": "fault"' in ln or '"compile-error"' in ln]
    if not os.path.exists(report + ".ncu-rep"):
        tail = (prof.stderr or prof.stdout).strip().splitlines()[-3:]
        return [], "ncu wrote no report: " + " | ".join(tail)
    try:
        page = subprocess.run(source_page_command(ncu, report + ".ncu-rep"), capture_output=True, text=True, check=False,
                              timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [], "ncu --import timed out"
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
    tables = parse_source_tables(page.stdout)
    problem = ""
    if failed:
        problem = "the plain launch failed under ncu: " + failed[0][:300]
    elif not tables:
        problem = "the source page had no per-line counters (" + (page.stderr.strip()[:200] or "empty") + ")"
    return tables, problem
