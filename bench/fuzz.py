"""Long fuzz run: batches of seeded mutants and the issue's hostile inputs, each batch with a known-good file.

    nice -n 15 python bench/fuzz.py [--corpus ../shared/corpus] [--inputs 10000] [--batch 25] [--seed 15]
                                    [--scale 1.0] [--det-every 10] [--parallel N] [--jobs J] [--json out.json]
    nice -n 15 python bench/fuzz.py --mutator tokens --corpus ../shared/corpus/mamba \
                                    --corpus ../shared/corpus/bitsandbytes --no-hostile --inputs 2000

`--mutator tokens` (tests/fuzzgen.token_mutate): every mutant is a corpus source (.cu or .cuh) with one to
four token-level edits (tokens replaced, numbers made extreme, spans deleted, duplicated, moved or spliced
in from another corpus file), instead of the byte flips and keyword insertions of the default mutator.

Needs only this checkout (it runs its own `kernlint`, by PYTHONPATH, whatever is installed) with
kernlint's dependencies, and a corpus path if wanted. `--parallel N` runs N batches at once (each
kernlint with `-j J`, by default the cores divided by N, at least 2): the mutants, the batches and
the per-run records are the same as in a sequential run; only the timings and the order of the
progress lines change.

Each batch is one kernlint process (default `-j`, i.e. isolated workers, one per core) over a
temporary directory; recorded per run, from wait4 of that process: exit status or signal, wall
time, CPU time (kernlint and its workers), the load average at its start, peak RSS (the
largest of kernlint and its worker processes), tracebacks and internal errors
(deduplicated by their message), and whether the good file was reported. Every `--det-every`-th
batch is run again with `-j 1`, no cache and another hash seed, and once more on the warm cache the
first run filled (each batch has an empty cache directory of its own), and the outputs must be
byte-identical.
Hostile batches: each generator of tests/fuzzgen.hostile alone with the good file, and the special
inputs (a FIFO and a device on the command line, `#include` of a FIFO, stdin from /dev/zero, a file
name with a newline, a non-UTF-8 file name, a file name that is too long, an empty argument).

Targets (issue 15): 0 tracebacks, 0 deaths by signal, 0 runs over 30 s, 0 over 1 GiB, the good file
reported every time, deterministic output. Exits 1 when any is missed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fuzzgen import hostile, mutate, seeds, token_mutate  # noqa: E402

GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"
WALL_LIMIT_S = 30.0
RSS_LIMIT_KIB = 1 << 20


def run_kernlint(args: list[str], cwd: str, timeout: float, env: dict[str, str],
                 stdin: int | None = None) -> dict[str, object]:
    """One kernlint process: rc (negative: the signal), wall, CPU (user + system, of it and the workers
    it reaped: wait4 reports a child's usage with its waited-for children), peak RSS of it and its
    workers, the 1-minute load average at its start, output."""
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", "concise", *args],
                                cwd=cwd, stdout=out, stderr=err, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                env=env, start_new_session=True)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return {"rc": proc.returncode, "hung": hung, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_kib": usage.ru_maxrss, "load": load, "stdout": stdout, "stderr": stderr}


def judge(r: dict[str, object], good_name: str) -> list[str]:
    """The targets this run missed."""
    out = str(r["stdout"]) + str(r["stderr"])
    bad = []
    if r["hung"]:
        bad.append("hang (killed by the harness)")
    elif int(r["rc"]) < 0:  # type: ignore[call-overload]
        bad.append(f"died by signal {signal.Signals(-int(r['rc'])).name}")  # type: ignore[call-overload]
    elif r["rc"] not in (0, 1, 2):
        bad.append(f"exit {r['rc']}")
    if "Traceback" in out:
        bad.append("traceback: " + (re.findall(r"^\w+(?:Error|Exception)\b.*$", out, re.M) or ["?"])[-1][:120])
    for m in re.findall(r"internal error in kernlint: ([^(;]*)", out):
        bad.append(f"internal error: {m.strip()[:120]}")
    if float(r["wall"]) > WALL_LIMIT_S:  # type: ignore[arg-type]
        bad.append(f"over {WALL_LIMIT_S:g} s")
    if int(r["rss_kib"]) > RSS_LIMIT_KIB:  # type: ignore[call-overload]
        bad.append("over 1 GiB")
    if f"{good_name}:1:" not in str(r["stdout"]):
        bad.append("good file not reported")
    return bad


def _spread(xs: list[float]) -> dict[str, float]:
    """min / median / 95th percentile / max / total of a list of figures."""
    if not xs:
        return {}
    ys = sorted(xs)
    return {"min": round(ys[0], 2), "median": round(ys[len(ys) // 2], 2),
            "p95": round(ys[min(len(ys) - 1, int(0.95 * len(ys)))], 2), "max": round(ys[-1], 2),
            "total": round(sum(ys), 1)}


def special_batches() -> list[tuple[str, list[str], dict[str, bytes], str | None]]:
    """(label, extra args, files, stdin path) for the special inputs; @DIR@ is the batch's directory,
    which holds a FIFO named pipe.cu."""
    body = "__global__ void k(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 2]; }\n"
    return [
        ("fifo on the command line", ["@DIR@/pipe.cu"], {}, None),
        ("device on the command line", ["/dev/zero"], {}, None),
        ("#include of a FIFO", [], {"inc_fifo.cu": f'#include "@DIR@/pipe.cu"\n{body}'.encode()}, None),
        ("stdin from /dev/zero", ["-"], {}, "/dev/zero"),
        ("newline in a file name", [], {"a\nb.cu:9:9: KL999 [error] forged.cu": body.encode()}, None),
        ("non-UTF-8 file name", [], {"caf\udce9.cu": body.encode()}, None),
        ("file name too long", ["x" * 5000 + ".cu"], {}, None),
        ("empty argument", [""], {}, None),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", default=None,
                    help="directory of third-party CUDA sources to mutate too (repeatable)")
    ap.add_argument("--mutator", choices=("mixed", "tokens"), default="mixed",
                    help="mixed: byte flips, truncation, token edits (fuzzgen.mutate); tokens: token-level "
                         "edits of the corpus sources only (fuzzgen.token_mutate)")
    ap.add_argument("--corpus-share", type=float, default=0.2, help="fraction of mutants seeded from the corpus")
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--scale", type=float, default=1.0, help="size of the hostile generators (1: the issue's)")
    ap.add_argument("--det-every", type=int, default=10, help="check determinism on every N-th batch (0: never)")
    ap.add_argument("--run-timeout", type=float, default=300, help="the harness kills a run after this long")
    ap.add_argument("--no-hostile", action="store_true")
    ap.add_argument("--json", default=None, help="write the summary here")
    ap.add_argument("--verbose", action="store_true", help="print every run (else failures and every 20th)")
    ap.add_argument("--parallel", type=int, default=1, help="batches run at once (1: one after another)")
    ap.add_argument("--jobs", type=int, default=0,
                    help="kernlint -j for each run (0: kernlint's default alone, the cores divided by --parallel, "
                         "at least 2, with --parallel)")
    a = ap.parse_args()
    if a.parallel < 1 or a.jobs < 0:
        ap.error("--parallel must be at least 1 and --jobs at least 0")
    jobs = a.jobs or (max(2, (os.cpu_count() or 2) // a.parallel) if a.parallel > 1 else 0)
    jobs_args = ["-j", str(jobs)] if jobs else []
    fixtures = seeds(ROOT / "fixtures")
    suffixes = (".cu", ".cuh") if a.mutator == "tokens" else (".cu",)
    corpus = [p.read_bytes() for c in (a.corpus or []) for p in sorted(Path(c).rglob("*"))
              if p.suffix in suffixes and p.is_file() and p.stat().st_size < 200_000]
    if a.mutator == "tokens" and not corpus:
        ap.error("--mutator tokens needs --corpus with .cu or .cuh sources")
    rng = random.Random(a.seed)
    # This checkout's kernlint, whatever is installed (the runs' working directory is a batch's own).
    path = os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH", "")) if x)
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": path}
    check = subprocess.run([sys.executable, "-m", "kernlint", "--version"], capture_output=True, text=True,
                           env=env, cwd=tempfile.gettempdir())
    if check.returncode != 0:
        print(f"fuzz: cannot run kernlint from {ROOT}: {(check.stderr or check.stdout).strip()[-2000:]}",
              file=sys.stderr)
        return 2
    lock = threading.Lock()  # guards the tallies below: batches may run in threads (--parallel)
    records: list[tuple[int, dict[str, object]]] = []  # (batch number, the run's record), for --json
    failures: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    worst = {"wall": 0.0, "rss_kib": 0, "cpu": 0.0, "wall_label": "", "rss_label": "", "cpu_label": ""}
    walls: list[float] = []
    cpus: list[float] = []
    loads: list[float] = []
    over_wall: list[str] = []  # runs over the wall-clock limit, with their CPU time and the load
    runs = det_checks = files = 0
    t_start = time.monotonic()

    def record(number: int, label: str, r: dict[str, object], bad: list[str]) -> None:
        with lock:
            _record(number, label, r, bad)

    def _record(number: int, label: str, r: dict[str, object], bad: list[str]) -> None:
        nonlocal runs
        runs += 1
        records.append((number, {"batch": number, "label": label, "rc": r["rc"], "wall_s": round(float(r["wall"]), 2),  # type: ignore[arg-type]
                                 "cpu_s": round(float(r["cpu"]), 2), "rss_mib": int(r["rss_kib"]) // 1024,  # type: ignore[arg-type, call-overload]
                                 "load_1min": round(float(r["load"]), 2), "missed": bad}))  # type: ignore[arg-type]
        walls.append(float(r["wall"]))  # type: ignore[arg-type]
        cpus.append(float(r["cpu"]))  # type: ignore[arg-type]
        loads.append(float(r["load"]))  # type: ignore[arg-type]
        if float(r["wall"]) > WALL_LIMIT_S:  # type: ignore[arg-type]
            over_wall.append(f"{label}: {float(r['wall']):.1f} s wall, {float(r['cpu']):.1f} s CPU, "  # type: ignore[arg-type]
                             f"load {float(r['load']):.1f}")  # type: ignore[arg-type]
        for key in ("wall", "rss_kib", "cpu"):
            if r[key] > worst[key]:  # type: ignore[operator]
                worst[key], worst[key.split("_")[0] + "_label"] = r[key], label  # type: ignore[assignment]
        for b in bad:
            failures[b] += 1
        for m in re.findall(r"KL900 \[error\] (the C\+\+ front end[^:;]*)", str(r["stdout"])):
            outcomes[m] += 1
        outcomes["KL904 time budget"] += str(r["stdout"]).count("time budget")
        if bad or runs % 20 == 0 or a.verbose:
            print(f"{label:40s} rc={r['rc']} {float(r['wall']):6.1f}s wall {float(r['cpu']):5.1f}s cpu "  # type: ignore[arg-type]
                  f"load {float(r['load']):4.1f} {int(r['rss_kib']) // 1024:5d} MiB "  # type: ignore[arg-type]
                  f"{'; '.join(bad) or 'ok'}", flush=True)

    def batch(number: int, label: str, named: dict[str, bytes], args: list[str] | None = None,
              stdin: str | None = None, check_det: bool = False, fifo: bool = False) -> None:
        nonlocal det_checks, files
        # Each batch has a cache directory of its own, empty at the start: the first run is cold, and
        # the determinism checks compare it with a run that lints again (--no-cache, -j 1, another
        # hash seed) and with a warm run that reads what the first one cached.
        with tempfile.TemporaryDirectory(prefix="kl-fuzz-") as d, \
                tempfile.TemporaryDirectory(prefix="kl-fuzz-cache-") as cache:
            if fifo:
                os.mkfifo(Path(d, "pipe.cu"))
            for name, data in named.items():
                Path(d, name).write_bytes(data.replace(b"@DIR@", d.encode()))
            Path(d, "zz_good.cu").write_text(GOOD)
            with lock:
                files += len(named) + 1
            targets = [x.replace("@DIR@", d) for x in (args or [])] + [d]
            benv = {**env, "KERNLINT_CACHE_DIR": cache}

            def once(extra: list[str], run_env: dict[str, str]) -> dict[str, object]:
                fd = os.open(stdin, os.O_RDONLY) if stdin else None
                try:
                    return run_kernlint([*(extra or jobs_args), *targets], d, a.run_timeout, run_env, stdin=fd)
                finally:
                    if fd is not None:
                        os.close(fd)

            r = once([], benv)
            record(number, label, r, judge(r, "zz_good.cu"))
            # A run the time budget or the timeout cut short depends on the machine's load: not compared.
            timed = "time budget" in str(r["stdout"]) or "gave up on this file: no result within" in str(r["stdout"])
            if check_det and not r["hung"] and not timed:
                with lock:
                    det_checks += 1
                for why, extra, run_env in (
                        ("-j 1, no cache, another hash seed", ["-j", "1", "--no-cache"],
                         {**benv, "PYTHONHASHSEED": "12345"}),
                        ("warm cache", [], benv)):
                    again = once(extra, run_env)
                    if (again["stdout"], again["stderr"], again["rc"]) != (r["stdout"], r["stderr"], r["rc"]):
                        with lock:
                            failures[f"nondeterministic output ({why})"] += 1
                            print(f"{label:40s} NONDETERMINISTIC ({why})", flush=True)

    def batches() -> Iterator[tuple[str, dict[str, bytes], dict[str, object]]]:
        """Every batch, in order, generated lazily (a long run's mutants need not be in memory at once)
        and only here, in one thread: the random stream and the batches do not depend on --parallel."""
        if not a.no_hostile:
            for name, data in hostile(a.scale).items():
                # The unbalanced `<` files end at the timeout, whose timing is the machine's: not compared.
                yield f"hostile {name}", {name: data}, {"check_det": not name.startswith("h_less")}
            for label, args, named, stdin in special_batches():
                yield f"special: {label}", named, {"args": args, "stdin": stdin, "fifo": True, "check_det": True}
        done = 0
        k = 0
        while done < a.inputs:
            n = min(a.batch, a.inputs - done)
            named = {}
            for i in range(n):
                if a.mutator == "tokens":
                    named[f"m{done + i:05d}.cu"] = token_mutate(rng.choice(corpus), rng, corpus)
                    continue
                pool = corpus if corpus and rng.random() < a.corpus_share else fixtures
                named[f"m{done + i:05d}.cu"] = mutate(rng.choice(pool), rng)
            yield f"mutants {done}-{done + n - 1}", named, {"check_det": a.det_every > 0 and k % a.det_every == 0}
            done += n
            k += 1

    if a.parallel == 1:
        for number, (label, named, kw) in enumerate(batches()):
            batch(number, label, named, **kw)  # type: ignore[arg-type]
    else:
        with cf.ThreadPoolExecutor(max_workers=a.parallel) as pool:
            pending: set[cf.Future[None]] = set()
            for number, (label, named, kw) in enumerate(batches()):
                if len(pending) >= 2 * a.parallel:  # a bounded queue: at most 2N batches' files in memory
                    finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                    for f in finished:
                        f.result()
                pending.add(pool.submit(batch, number, label, named, **kw))  # type: ignore[arg-type]
            for f in cf.as_completed(pending):
                f.result()
    records.sort(key=lambda x: x[0])
    over_wall.sort()
    elapsed = time.monotonic() - t_start
    summary = {
        "runs": runs, "files": files, "mutants": a.inputs, "determinism_checks": det_checks,
        "elapsed_s": round(elapsed, 1), "slowest_run_s": round(float(worst["wall"]), 1),
        "slowest_run": worst["wall_label"], "peak_rss_mib": int(worst["rss_kib"]) // 1024,
        "peak_rss_run": worst["rss_label"], "slowest_cpu_s": round(float(worst["cpu"]), 1),
        "slowest_cpu_run": worst["cpu_label"], "batch": a.batch, "parallel": a.parallel,
        "kernlint_jobs": jobs or "default", "mutator": a.mutator,
        "wall_s": _spread(walls), "cpu_s": _spread(cpus), "load_1min": _spread(loads),
        "runs_over_30s_cpu": sum(c > WALL_LIMIT_S for c in cpus), "runs_over_30s_wall": over_wall,
        "failures": dict(failures.most_common()),
        "isolation_outcomes": dict(outcomes.most_common()),
    }
    print(json.dumps(summary, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps({**summary, "run_records": [r for _n, r in records]}, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
