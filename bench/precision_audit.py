"""Draw warnings and errors at random from a kernlint run over real code, for judging by hand.

    # over the six corpus projects (each linted from the corpus root, as a user would):
    python bench/precision_audit.py --corpus ../shared/corpus -n 40 --seed 28 --sheet audit.md --save run/
    # over given paths:
    python bench/precision_audit.py PATH... -I INC -n 50 [--seed 13] [--json-in run.json] [--save run.json]
    # score a sheet once its verdicts are filled in:
    python bench/precision_audit.py --score audit.md

Runs the kernlint command line (`--format json --no-ptxas --no-cache`; ptxas with `--ptxas`), keeps findings of
severity warning or error, draws N of them with a fixed seed (the same run and seed always give the
same draw), and prints each with ±5 lines of code, the message, notes and assumptions, so a reader
can judge it true and worth acting on / true but minor / false. With `--corpus DIR` each project
directory of DIR (rodinia, polybench-gpu, llm.c, cuda-samples, mamba, bitsandbytes; `--projects` to
choose) is linted on its own from DIR with `-I cuda-samples/Common -I llm.c`; `--json-dir` reads such a
run back (one `<project>.json` per project). `--sheet` writes the draw as a Markdown sheet with a
verdict line per warning to fill in (`verdict: worth | minor | false`, `sampled: yes` when a false
warning's cause is a sampled value, and a one-line reason); `--score` reads it back and prints the
figures. The counts per code of the whole run are printed first. Third-party code is only read,
never copied: the sheet quotes the lines around each finding for the reader, and lives outside the
repository.
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import re
import subprocess
import sys
from pathlib import Path

CONTEXT = 5
PROJECTS = ("rodinia", "polybench-gpu", "llm.c", "cuda-samples", "mamba", "bitsandbytes")
VERDICTS = ("worth", "minor", "false")


def run_kernlint(paths: list[str], includes: list[str], ptxas: bool, cwd: str | None = None,
                 jobs: int | None = None) -> list[dict]:
    # A generous per-file time limit: the audit judges findings, and on a loaded machine the default
    # limit would turn slow files into KL900 "gave up" errors that say nothing about the code.
    here = str(Path(__file__).resolve().parent.parent)
    cmd = [sys.executable, "-m", "kernlint.cli.command", *paths, "--format", "json", "--timeout", "600", "--no-cache"]
    if not ptxas:
        cmd.append("--no-ptxas")
    if jobs:
        cmd += ["-j", str(jobs)]
    for inc in includes:
        cmd += ["-I", inc]
    env = {**__import__("os").environ, "PYTHONPATH": here}
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd, env=env)
    if proc.returncode not in (0, 1, 2) or not proc.stdout.strip():
        sys.exit(f"kernlint failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)["diagnostics"]


def run_corpus(corpus: Path, projects: list[str], ptxas: bool, save: Path | None) -> list[dict]:
    """Lint each project on its own from the corpus root; paths in the findings are relative to it."""
    out: list[dict] = []
    for p in projects:
        print(f"linting {p} ...", file=sys.stderr)
        diags = run_kernlint([p], ["cuda-samples/Common", "llm.c"], ptxas, cwd=str(corpus), jobs=1)
        for d in diags:
            d["path"] = str(corpus / d["path"]) if not Path(d["path"]).is_absolute() else d["path"]
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{p}.json").write_text(json.dumps({"diagnostics": diags}))
        out.extend(diags)
    return out


def read_json_dir(folder: Path, projects: list[str], corpus: Path | None) -> list[dict]:
    out: list[dict] = []
    for p in projects:
        f = folder / f"{p}.json"
        if not f.is_file():
            print(f"(no {f})", file=sys.stderr)
            continue
        for d in json.loads(f.read_text())["diagnostics"]:
            if corpus is not None and not Path(d["path"]).is_absolute():
                d["path"] = str(corpus / d["path"])
            out.append(d)
    return out


def context(path: str, line: int) -> str:
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"    (cannot read {path}: {exc})"
    lo, hi = max(1, line - CONTEXT), min(len(lines), line + CONTEXT)
    return "\n".join(f"{'>' if n == line else ' '}{n:5d}| {lines[n - 1]}" for n in range(lo, hi + 1))


def draw(diags: list[dict], n: int, seed: int, codes: str | None) -> tuple[list[dict], int]:
    pool = [d for d in diags if d["severity"] in ("warning", "error")]
    if codes:
        wanted = set(codes.split(","))
        pool = [d for d in pool if d["code"] in wanted]
    pool.sort(key=lambda d: (d["path"], d["line"], d["column"], d["code"], d["message"]))
    return random.Random(seed).sample(pool, min(n, len(pool))), len(pool)


def _short(path: str, corpus: Path | None) -> str:
    if corpus is not None:
        try:
            return str(Path(path).relative_to(corpus))
        except ValueError:
            pass
    return path


def sheet(picked: list[dict], total: int, seed: int, corpus: Path | None) -> str:
    """A Markdown sheet: one section per drawn finding, with a verdict line to fill in."""
    out = [f"# Precision audit: {len(picked)} of {total} warnings/errors drawn (seed {seed})", "",
           "Fill in each `verdict:` with worth (true and worth acting on), minor (true, not worth acting on) "
           "or false; `sampled: yes` when a false warning's cause is a value kernlint sampled; then a one-line "
           "reason. Score with `python bench/precision_audit.py --score THIS_FILE`.", ""]
    for k, d in enumerate(picked, 1):
        out.append(f"## [{k}] {_short(d['path'], corpus)}:{d['line']} {d['code']} {d['severity']} "
                   f"(kernel {d.get('kernel') or '-'})")
        out.append("")
        out.append(f"- message: {d['message']}")
        for note in d.get("notes", []):
            out.append(f"- note: {note}")
        for a in d.get("assumptions", []):
            out.append(f"- assumed: {a}")
        out.append("")
        out.append("```")
        out.append(context(d["path"], d["line"]))
        out.append("```")
        out.append("")
        out.append("verdict: ")
        out.append("sampled: no")
        out.append("reason: ")
        out.append("")
    return "\n".join(out) + "\n"


_ENTRY = re.compile(r"^## \[(\d+)\] (.*)$", re.M)


def score(text: str) -> dict[str, object]:
    """Figures of a filled sheet: % true, % worth acting, false warnings caused by a sampled value."""
    entries = []
    for m in _ENTRY.finditer(text):
        body = text[m.end():text.find("\n## [", m.end()) if "\n## [" in text[m.end():] else len(text)]
        v = re.search(r"^verdict:\s*(\w*)", body, re.M)
        s = re.search(r"^sampled:\s*(\w*)", body, re.M)
        r = re.search(r"^reason:\s*(.*)$", body, re.M)
        entries.append((int(m.group(1)), m.group(2), v.group(1).lower() if v else "",
                        (s.group(1).lower() if s else "") == "yes", r.group(1).strip() if r else ""))
    judged = [e for e in entries if e[2] in VERDICTS]
    n = len(judged)
    counts = collections.Counter(e[2] for e in judged)
    return {
        "drawn": len(entries), "judged": n,
        "worth": counts["worth"], "minor": counts["minor"], "false": counts["false"],
        "pct_true": round(100 * (counts["worth"] + counts["minor"]) / n, 1) if n else None,
        "pct_worth": round(100 * counts["worth"] / n, 1) if n else None,
        "false_from_sampled_value": [f"[{e[0]}] {e[1]}: {e[4]}" for e in judged if e[2] == "false" and e[3]],
        "false_warnings": [f"[{e[0]}] {e[1]}: {e[4]}" for e in judged if e[2] == "false"],
        "unjudged": [e[0] for e in entries if e[2] not in VERDICTS],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--corpus", help="lint each project directory of this corpus on its own")
    ap.add_argument("--projects", default=",".join(PROJECTS), help="projects of --corpus (comma-separated)")
    ap.add_argument("--json-in", help="read a saved `kernlint --format json` run instead of running kernlint")
    ap.add_argument("--json-dir", help="read a saved corpus run (<project>.json per project)")
    ap.add_argument("--save", help="write the run's JSON here (a folder with --corpus)")
    ap.add_argument("--sheet", help="write the draw as a Markdown sheet to judge by hand")
    ap.add_argument("--score", help="print the figures of a judged sheet and exit")
    ap.add_argument("--ptxas", action="store_true", help="let kernlint run nvcc/ptxas (slower)")
    ap.add_argument("--codes", help="comma-separated codes to draw from (default: all)")
    args = ap.parse_args(argv)
    if args.score:
        print(json.dumps(score(Path(args.score).read_text()), indent=2))
        return 0
    corpus = Path(args.corpus).resolve() if args.corpus else None
    projects = [p for p in args.projects.split(",") if p]
    if args.json_in:
        diags = json.loads(Path(args.json_in).read_text())["diagnostics"]
    elif args.json_dir:
        diags = read_json_dir(Path(args.json_dir), projects, corpus)
    elif corpus is not None:
        diags = run_corpus(corpus, projects, args.ptxas, Path(args.save) if args.save else None)
    else:
        if not args.paths:
            ap.error("give paths to lint, --corpus, --json-in or --json-dir")
        diags = run_kernlint(args.paths, args.includes, args.ptxas)
        if args.save:
            Path(args.save).write_text(json.dumps({"diagnostics": diags}))
    counts = collections.Counter((d["code"], d["severity"]) for d in diags)
    print("findings in the run:", ", ".join(f"{c} {s} {n}" for (c, s), n in sorted(counts.items())))
    picked, total = draw(diags, args.n, args.seed, args.codes)
    print(f"drew {len(picked)} of {total} warnings/errors (seed {args.seed})\n")
    if args.sheet:
        Path(args.sheet).write_text(sheet(picked, total, args.seed, corpus))
        print(f"sheet written to {args.sheet}")
        return 0
    for k, d in enumerate(picked, 1):
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
