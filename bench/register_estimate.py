"""How far the source register estimate is from ptxas's count (needs nvcc on PATH).

    python bench/register_estimate.py [-I DIR ...] PATH...

For every kernel whose file ptxas compiles, prints the estimate (kernlint.checks.occupancy's
`estimated_resources`, as a run without nvcc uses it) beside ptxas's exact count, then the distribution
of exact / estimate. KL401's margin (`occupancy_rules.ESTIMATE_MARGIN`, a factor either way) should
cover nearly all of them: a kernel outside it can get a different KL401 severity with and without nvcc.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernlint.checks import occupancy as occ  # noqa: E402
from kernlint.checks.occupancy_rules import ESTIMATE_MARGIN  # noqa: E402
from kernlint.engine.lint import lint_source  # noqa: E402
from kernlint.base.options import LintOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            files += sorted(str(f) for f in Path(p).rglob("*.cu"))
        else:
            files.append(p)
    pairs: list[tuple[str, str, int, int]] = []
    original = occ.occupancy_diagnostics

    def capture(**kw: object) -> object:
        res, est = kw.get("resources"), kw.get("register_estimate")
        if res is not None and est is not None and res.source == "exact":  # type: ignore[attr-defined]
            pairs.append((str(kw["path"]), str(kw["kernel"]), est.registers, res.registers))  # type: ignore[attr-defined]
        return original(**kw)

    occ.occupancy_diagnostics = capture  # type: ignore[assignment]
    options = LintOptions(include_dirs=tuple(args.includes), resources=True)
    for f in files:
        try:
            lint_source(Path(f).read_text(encoding="utf-8", errors="replace"), f, options)
        except Exception as exc:  # noqa: BLE001 - a bench: report and go on
            print(f"{f}: {type(exc).__name__}: {exc}", file=sys.stderr)
    if not pairs:
        print("no kernel with an exact count (is nvcc on PATH?)")
        return 1
    ratios = sorted(exact / est for _p, _k, est, exact in pairs)
    for path, kernel, est, exact in pairs:
        print(f"{path}: {kernel}: estimate {est}, ptxas {exact} ({exact / est:.2f}x)")
    inside = sum(1 for r in ratios if 1 / ESTIMATE_MARGIN <= r <= ESTIMATE_MARGIN)
    q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]  # noqa: E731
    print(f"{len(ratios)} kernels: exact/estimate min {ratios[0]:.2f}, 10% {q(0.1):.2f}, median {q(0.5):.2f}, "
          f"90% {q(0.9):.2f}, max {ratios[-1]:.2f}; {inside} within a factor of {ESTIMATE_MARGIN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
