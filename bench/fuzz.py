"""Long fuzz run: batches of seeded mutants (fixtures and an optional corpus), each with a known-good file.

    python bench/fuzz.py [--corpus ../shared/corpus] [--inputs 10000] [--batch 100] [--seed 15] [--gen-size 1000]

Each batch runs in its own kernlint process; recorded per batch: exit status, signal, wall time, peak
memory (RSS of the child), tracebacks/internal errors (deduplicated by their last line) and whether
the good file was reported. Exits 1 when any batch failed.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fuzzgen import generated, mutate, seeds  # noqa: E402

GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


def run_batch(files: dict[str, bytes], timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as d:
        for name, data in files.items():
            Path(d, name).write_bytes(data)
        Path(d, "zz_good.cu").write_text(GOOD)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", "concise", d],
                               capture_output=True, text=True, timeout=timeout, cwd=d, errors="replace")
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out = "timeout", str(exc.stdout or "") + str(exc.stderr or "")
        wall = time.monotonic() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, max over all children so far
    causes = re.findall(r"^\w*Error: .*$|internal error in kernlint: ([^(]*)", out, re.M)
    return {"rc": rc, "wall": wall, "rss_kib": max(rss, before), "good": "zz_good.cu:1:" in out,
            "causes": [c for c in causes if c], "traceback": "Traceback" in out}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=None, help="directory of third-party CUDA sources to mutate too")
    ap.add_argument("--inputs", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--gen-size", type=int, default=1000, help="size for the hostile generators")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    pool = seeds(ROOT / "fixtures")
    if a.corpus:
        pool += [p.read_bytes() for p in sorted(Path(a.corpus).rglob("*.cu")) if p.stat().st_size < 200_000]
    rng = random.Random(a.seed)
    failures: Counter[str] = Counter()
    worst_wall = worst_rss = 0.0
    batches = [dict(generated(a.gen_size))]
    done = 0
    while done < a.inputs:
        n = min(a.batch, a.inputs - done)
        batches.append({f"m{done + i:05d}.cu": mutate(rng.choice(pool), rng) for i in range(n)})
        done += n
    for i, files in enumerate(batches):
        r = run_batch(files, a.timeout)
        worst_wall, worst_rss = max(worst_wall, r["wall"]), max(worst_rss, r["rss_kib"])  # type: ignore[type-var]
        bad = []
        if r["rc"] not in (0, 1, 2):
            bad.append(f"exit {r['rc']}")
        if r["traceback"]:
            bad.append("traceback")
        if not r["good"]:
            bad.append("good file not reported")
        bad += [f"cause: {c.strip()}" for c in r["causes"]]  # type: ignore[attr-defined]
        for b in bad:
            failures[b] += 1
        print(f"batch {i:4d}: {len(files):4d} files rc={r['rc']} {r['wall']:.1f}s "
              f"peak {r['rss_kib'] / 1024:.0f} MiB {'; '.join(bad) or 'ok'}", flush=True)
    print(f"\n{len(batches)} batches, {a.inputs} mutants + {len(batches[0])} generated; "
          f"slowest batch {worst_wall:.1f}s, peak RSS {worst_rss / 1024:.0f} MiB")
    for cause, n in failures.most_common():
        print(f"  {n:5d}  {cause}")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
