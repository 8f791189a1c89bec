"""Measure how much of real CUDA code kernlint evaluates (issue 11, "honest coverage").

    python bench/coverage.py PATH [PATH...] [--include-dir DIR ...] [--reasons N] [-- extra kernlint args]
    python bench/coverage.py --each-file PATH [PATH...] [--include-dir DIR ...]

`--each-file` (issue 29) lints every file of each PATH alone, as pre-commit does (only the changed
files are passed, each with its project index): in one process, each file through the same per-file
work the CLI runs (`parallel.lint_file`, with the kernels it reaches in other files). It prints per
PATH: the kernels reached per file (mean, and the files reaching none), the files whose summary says
"no kernels found" although the file defines a kernel, includes one from the project or instantiates
one (target 0; each is listed), and the access-line coverage of the kernels reached (each kernel once,
however many files reach it; target >= 90 % per project).

Each PATH (a project directory or a file, taken where it lies: never copied) is linted by the real
entry point (`kernlint --format json --no-ptxas`), and the per-kernel coverage records of the JSON
document are summed. Prints, per file: kernels fully / partly / not analysed and the access lines
evaluated vs seen; then totals per PATH and overall, the most common reasons for unevaluated
accesses, and every kernel that is not fully analysed but has no KL904 (the target is none).

Include directories a project needs (`-I corpus/cuda-samples/Common`) go after `--` or in
`--include-dir`; they are passed to every PATH.
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path


def run_kernlint(path: str, extra: list[str]) -> tuple[dict, float, str]:
    """Lint `path` with the console entry point; the JSON document, seconds, and stderr."""
    cmd = [sys.executable, "-c", "from kernlint.cli.command import run; run()", path, "--format", "json", "--no-ptxas",
           "--fail-on", "error", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else {"diagnostics": [], "kernels": []}
    except json.JSONDecodeError:
        doc = {"diagnostics": [], "kernels": []}
    return doc, seconds, proc.stderr


class Tally:
    """Kernels by status, access lines and accesses evaluated vs seen."""

    def __init__(self) -> None:
        self.status: collections.Counter[str] = collections.Counter()
        self.lines_seen = self.lines_evaluated = 0
        self.acc_seen = self.acc_evaluated = 0
        self.br_seen = self.br_evaluated = 0

    def add(self, record: dict) -> None:
        cov = record["coverage"]
        self.status[cov["status"]] += 1
        self.lines_seen += cov["access_lines"]["seen"]
        self.lines_evaluated += cov["access_lines"]["evaluated"]
        self.acc_seen += cov["accesses"]["seen"]
        self.acc_evaluated += cov["accesses"]["evaluated"]
        self.br_seen += cov["branches"]["seen"]
        self.br_evaluated += cov["branches"]["evaluated"]

    def merge(self, other: "Tally") -> None:
        self.status.update(other.status)
        for name in ("lines_seen", "lines_evaluated", "acc_seen", "acc_evaluated", "br_seen", "br_evaluated"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @staticmethod
    def pct(a: int, b: int) -> str:
        return f"{100.0 * a / b:5.1f} %" if b else "    - "

    def line(self) -> str:
        n = sum(self.status.values())
        return (f"{n:4d} kernels: {self.status['full']:4d} full {self.status['partial']:4d} partly "
                f"{self.status['none']:4d} not | access lines {self.lines_evaluated:5d}/{self.lines_seen:<5d} "
                f"{self.pct(self.lines_evaluated, self.lines_seen)} | accesses "
                f"{self.acc_evaluated:5d}/{self.acc_seen:<5d} {self.pct(self.acc_evaluated, self.acc_seen)} | "
                f"branches {self.br_evaluated:5d}/{self.br_seen:<5d} {self.pct(self.br_evaluated, self.br_seen)}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="project directories or files (read where they lie)")
    ap.add_argument("--include-dir", "-I", action="append", default=[], help="passed to kernlint as -I")
    ap.add_argument("--reasons", type=int, default=12, help="how many top reasons to list")
    ap.add_argument("--quiet", "-q", action="store_true", help="totals only, no per-file lines")
    ap.add_argument("--each-file", action="store_true", help="lint each file alone, as pre-commit does")
    args = ap.parse_args(argv)
    if args.each_file:
        return each_file(args.paths, args.include_dir, args.quiet)
    for d in args.include_dir:
        extra += ["-I", d]

    overall = Tally()
    reasons: collections.Counter[str] = collections.Counter()  # accesses per reason
    reason_lines: collections.Counter[str] = collections.Counter()  # access lines per reason
    branch_reasons: collections.Counter[str] = collections.Counter()
    violations: list[str] = []
    total_seconds = 0.0
    for path in args.paths:
        doc, seconds, stderr = run_kernlint(path, extra)
        total_seconds += seconds
        kl904 = {(d["path"], d["line"]) for d in doc.get("diagnostics", []) if d.get("code") == "KL904"}
        per_file: dict[str, Tally] = collections.defaultdict(Tally)
        project = Tally()
        for rec in doc.get("kernels", []):
            per_file[rec["path"]].add(rec)
            project.add(rec)
            cov = rec["coverage"]
            for r in cov["reasons"]:
                if r["accesses"]:
                    reasons[r["reason"] + ": " + _generic(r)] += r["accesses"]
                    reason_lines[r["reason"] + ": " + _generic(r)] += len(r["lines"])
                if r["branches"]:
                    branch_reasons[r["reason"] + ": " + _generic(r)] += r["branches"]
            if cov["status"] != "full" and (rec["path"], rec["line"]) not in kl904:
                violations.append(f"{rec['path']}:{rec['line']}: kernel '{rec['name']}' is {cov['status']} "
                                  "but has no KL904")
        print(f"== {path}  ({seconds:.1f} s)")
        if not args.quiet:
            for f in sorted(per_file):
                print(f"  {per_file[f].line()}  {_short(f, path)}")
        problems = [ln for ln in stderr.splitlines() if ln.strip()]
        if problems:
            print(f"  ({len(problems)} input problems reported on stderr, e.g. {problems[0][:140]})")
        print(f"  TOTAL {project.line()}")
        overall.merge(project)
    print(f"== overall ({total_seconds:.1f} s)")
    print(f"  TOTAL {overall.line()}")
    print("\ntop reasons for unevaluated accesses (accesses, access lines):")
    for reason, n in reasons.most_common(args.reasons):
        print(f"  {n:6d} {reason_lines[reason]:6d}  {reason}")
    if branch_reasons:
        print("top reasons for unevaluated branches (branches):")
        for reason, n in branch_reasons.most_common(args.reasons):
            print(f"  {n:6d}  {reason}")
    print(f"\nkernels not fully analysed without a KL904: {len(violations)}")
    for v in violations:
        print("  " + v)
    return 1 if violations else 0


def each_file(paths: list[str], include_dirs: list[str], quiet: bool) -> int:
    """Lint each file of each path alone (see the module docstring); 1 if a file says "no kernels found"
    while it defines, includes or instantiates one."""
    from kernlint.checks import ALL_RULES
    from kernlint.cli.command import collect_paths
    from kernlint.settings.config import load_settings
    from kernlint.eval.coverage import summary
    from kernlint.base.options import LintOptions
    from kernlint.runner.parallel import FileJob, LintSetup, lint_file, project_options

    settings = load_settings(None, ALL_RULES)
    options = LintOptions(include_dirs=tuple(str(Path(d).resolve()) for d in include_dirs), resources=False)
    setup = LintSetup(scan_limit_s=settings.timeout / 2 if settings.timeout else None)
    overall = Tally()
    silent_total = 0
    for path in paths:
        files, _problems = collect_paths((path,))
        t0 = time.perf_counter()
        seen: set[tuple[str, str, int]] = set()
        project = Tally()
        reached: list[int] = []
        silent: list[str] = []
        for f in files:
            job = FileJob(f, f, settings=settings, options=options, project_hint=path)
            out = lint_file(job, setup)
            reached.append(len(out.coverage))
            for rec in out.coverage:
                key = (str(Path(rec.path).resolve()), rec.name, rec.line)
                if key not in seen:
                    seen.add(key)
                    project.add(rec.to_dict())
            if summary(out.coverage, out.included_kernels) == "no kernels found":
                why = _has_kernels(f, options, path, project_options)
                if why:
                    silent.append(f"{_short(f, path)} ({why})")
        seconds = time.perf_counter() - t0
        mean = sum(reached) / len(reached) if reached else 0.0
        print(f"== {path}  ({seconds:.1f} s, {len(files)} files linted alone)")
        print(f"  kernels reached per file: mean {mean:.2f}, max {max(reached, default=0)}; "
              f"{sum(1 for n in reached if n == 0)} files reach none")
        print(f"  files printing 'no kernels found' while defining, including or instantiating one: {len(silent)}")
        if not quiet:
            for s in silent:
                print(f"    {s}")
        print(f"  TOTAL {project.line()}")
        overall.merge(project)
        silent_total += len(silent)
    print(f"== overall: {overall.line()}")
    print(f"files printing 'no kernels found' while defining, including or instantiating one: {silent_total}")
    return 1 if silent_total else 0


def _has_kernels(f: str, options: object, hint: str, project_options: object) -> str:
    """Why the index says file `f` has kernels to lint (defines, includes or instantiates one), or ""."""
    opts, _notes = project_options(options, f, None, None, False, None, hint)  # type: ignore[operator]
    index = opts.project
    if index is None:
        return ""
    facts = index.facts.get(str(Path(f).resolve()))
    if facts is None:
        return ""
    if facts.kernels:
        return "defines " + ", ".join(k.name for k in facts.kernels[:3])
    if index.included_kernels(f):
        return "includes " + ", ".join(index.included_kernels(f)[:3])
    inst = [n for n, _a, _l in facts.instantiations if n in index.kernel_files]
    if inst:
        return "instantiates " + ", ".join(inst[:3])
    return ""


def _generic(reason: dict) -> str:
    """A reason with its detail folded where the detail is a name (one row per kind of cause)."""
    kind, detail = reason["reason"], reason["detail"]
    if kind in ("template", "unresolved", "param", "global", "call", "depth", "loop"):
        return {"template": "unbound template parameter", "unresolved": "unresolved name",
                "param": "unknown parameter value", "global": "unknown global variable",
                "call": f"call not modelled ({detail})", "depth": "helper not inlined (depth)",
                "loop": "value changed by a loop not run to its end"}[kind]
    if kind == "loaded":
        return "depends on loaded data"
    return reason["text"]


def _short(f: str, root: str) -> str:
    try:
        return str(Path(f).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return f


if __name__ == "__main__":
    sys.exit(main())
