"""Scaling of the project index's text scan (kernlint/project/scan.py) on the shapes issue 30 found quadratic.

    python bench/index_scaling.py [--start 25000] [--steps 4]

Each shape is scanned at sizes start, 2*start, 4*start, ... (characters, or launches for `launches`);
reported: CPU seconds per size and the ratio of each time to the one before (linear: about 2; the
quadratic scans of issue 30 gave about 4: a 20,000-character parameter list took 18 s, a host function
with 4,000 launches 35 s). Exits 1 when a shape's largest size takes over 2 s or a doubling more than
3 times as long (the slack is for a loaded machine; the time of the smallest sizes is noise).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kernlint.project.scan import scan_text  # noqa: E402


def shapes() -> dict[str, tuple[str, object]]:
    """name -> (unit, size -> source text)."""
    return {
        # a long identifier followed by another token in a parameter list (the header classification)
        "parameter list": ("chars", lambda n: "void host(int " + "a" * n + " b) { }\n"),
        "template member name": ("chars", lambda n: "template <class T> void " + "a" * n + " b(int x) { }\n"),
        # one host function with many launches, locals, reassignments, offsets and plain dim3s
        "launches": ("launches", lambda n: (
            "__global__ void k(float* p, int n) {}\nvoid host(float* buf, int n) {\n"
            "  dim3 grid; grid.x = 4;\n  int m = 8;\n  float* src = buf + 16;\n"
            + "".join(f"  k<<<grid, 32>>>(src, m);\n  m = {i};\n" for i in range(n)) + "}\n")),
        "unclosed comments": ("chars", lambda n: "/* " * (n // 3) + "\n"),
        "template-argument chain": ("chars", lambda n: "void f() { " + "a<" * (n // 2) + " }\n"),
        "unclosed launches": ("chars", lambda n: "void f() { " + "k<<<" * (n // 4) + " }\n"),
    }


def cpu_seconds(text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        scan_text(text)
        best = min(best, time.process_time() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=int, default=25_000, help="smallest size (launches: a tenth of it)")
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    failed = False
    for name, (unit, make) in shapes().items():
        start = a.start // 10 if unit == "launches" else a.start
        prev = None
        row = []
        for k in range(a.steps):
            n = start << k
            t = cpu_seconds(make(n))  # type: ignore[operator]
            ratio = f" (x{t / prev:.1f})" if prev and prev > 0.01 else ""
            row.append(f"{n} {unit}: {t:.3f} s{ratio}")
            if prev is not None and prev > 0.05 and t > 3 * prev:
                failed = True
                row[-1] += " NOT LINEAR"
            prev = t
        if prev is not None and prev > 2.0:
            failed = True
            row[-1] += " OVER 2 s"
        print(f"{name:26s} " + "; ".join(row))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
