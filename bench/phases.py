"""Where a kernlint run's CPU goes, by phase (issue 17): start-up, libclang, lowering, evaluation, rules.

    python bench/phases.py FILE.cu ... [--json]
    python bench/phases.py --template-scaling 1,10,100 [--json]

The files are linted in this process, one run, the way `kernlint -j 1 --no-cache --no-ptxas` lints
them (no worker process, no cache). Each phase's CPU (process time) is measured by wrapping the
function that does it; a phase nested in another (the evaluator runs inside the KL201 fix search,
libclang inside the front end) is counted once, in the innermost:

- start-up: the interpreter, NumPy and kernlint's modules, before the first file (measured in
  separate processes: the interpreter alone, `import numpy`, `import kernlint.engine.lint`);
- libclang: clang parsing each file (C++ code, no Python; its share is the floor kernlint cannot
  lower by tuning);
- lowering: turning libclang's cursors into kernlint's IR (kernels up front, other functions when asked);
- host launches: reading each `<<<...>>>` launch of the host code (its shape, template and scalar
  arguments, the host loops around it): it grows with the launches the code spells, not with the
  kernel's instantiations;
- evaluation: the per-warp interpreter (every evaluation: launch shapes, re-sampled regions, KL201's
  padded re-runs);
- rules: the checks over the evaluations, less the evaluations they start;
- project index: scanning each file's project for launches and instantiations;
- garbage collection: Python's collector, which runs inside whichever phase allocates when its
  threshold is crossed (taken out of that phase);
- other: reading, decoding, suppressions, reporting.

`--template-scaling`: the phases of a generated file whose one kernel template a host function launches
with n bindings, two of them distinct in what decides the addresses (issue 31: lowering should not grow
with n, evaluation at most with the distinct address functions).

The phases are a breakdown, not a benchmark: wrapping adds a few microseconds per call (the evaluator's
runs are few, so it is not measurable there). bench/speed.py runs this script and prints its figures
beside the CPU ratio against nvcc.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

# What every kernlint process sets before NumPy loads (kernlint/__init__.py): measured the same way.
_ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

# (module, attribute path, phase): the functions whose CPU is each phase's.
_WRAPPED = (
    ("clang.cindex", "TranslationUnit.from_source", "libclang"),
    ("kernlint.frontend.clang_frontend", "_lower", "lowering"),
    ("kernlint.frontend.clang_frontend", "_launches", "host launches"),
    ("kernlint.ir.function_table", "FunctionTable._lower", "lowering"),
    ("kernlint.eval.interp", "Interpreter.run", "evaluation"),
    ("kernlint.engine.lint", "combine", "rules"),
    ("kernlint.project.index", "ProjectIndex.build", "project index"),
)


def _cpu_of(code: str) -> float:
    """Median CPU seconds (user + system) of `python -c code` over five runs."""
    times = []
    for _ in range(5):
        t0 = os.times()
        subprocess.run([sys.executable, "-c", code], env=_ENV, check=True, stdout=subprocess.DEVNULL)
        t1 = os.times()
        times.append(t1.children_user + t1.children_system - t0.children_user - t0.children_system)
    return sorted(times)[len(times) // 2]


def startup() -> dict[str, float]:
    """CPU of the interpreter alone, of it with NumPy, and of it with every module a lint run loads."""
    return {"python_s": round(_cpu_of("pass"), 3), "python_numpy_s": round(_cpu_of("import numpy"), 3),
            "python_kernlint_s": round(_cpu_of("import kernlint.cli.command, kernlint.engine.lint, kernlint.checks.coalescing"), 3)}


def _wrap(totals: dict[str, float], stack: list[float], module: str, attr: str, phase: str) -> None:
    owner: Any = importlib.import_module(module)
    *outer, name = attr.split(".")
    for part in outer:
        owner = getattr(owner, part)
    inner_fn: Callable[..., Any] = getattr(owner, name)
    if isinstance(inner_fn, classmethod):  # pragma: no cover - (getattr on the class unwraps it)
        inner_fn = inner_fn.__func__

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        stack.append(0.0)
        try:
            return inner_fn(*args, **kwargs)
        finally:
            spent = time.process_time() - start
            nested = stack.pop()
            totals[phase] = totals.get(phase, 0.0) + spent - nested
            if stack:
                stack[-1] += spent

    setattr(owner, name, timed)


def phases(files: list[str]) -> dict[str, float]:
    """CPU seconds of each phase of one in-process run over `files` (and the run's total)."""
    import kernlint.checks.coalescing  # noqa: F401 - loaded before the clock starts (start-up's, above)
    import kernlint.cli.command as cli
    import kernlint.engine.lint  # noqa: F401

    totals: dict[str, float] = {}
    stack: list[float] = []
    for module, attr, phase in _WRAPPED:
        try:
            _wrap(totals, stack, module, attr, phase)
        except (ImportError, AttributeError):
            totals.setdefault(f"{phase} (not measured: {module}.{attr} not found)", 0.0)
    cli._POOL_BY_DEFAULT = False  # in this process, as `-j 1` without isolation  # type: ignore[attr-defined]
    # Garbage collection runs when allocations cross a threshold, inside whichever phase allocates then:
    # its own phase, taken out of the phase it interrupted (as a nested phase is).
    gc_started: list[float] = []

    def collecting(event: str, _info: dict[str, int]) -> None:
        if event == "start":
            gc_started.append(time.process_time())
        elif gc_started:
            spent = time.process_time() - gc_started.pop()
            totals["garbage collection"] = totals.get("garbage collection", 0.0) + spent
            if stack:
                stack[-1] += spent

    gc.callbacks.append(collecting)
    argv = sys.argv
    sys.argv = ["kernlint", "--no-ptxas", "--no-cache", "--format", "concise", *files]
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main()
            except SystemExit:
                pass
    finally:
        sys.argv = argv
        gc.callbacks.remove(collecting)
    total = time.process_time() - start
    out = {k: round(v, 3) for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}
    out["other"] = round(total - sum(totals.values()), 3)
    out["total"] = round(total, 3)
    return out


def template_source(n: int) -> str:
    """One kernel template instantiated `n` times by a host function (issue 31): `S` (1 or 2) decides the
    addresses, `U` (1..n) only scales a value, so the `n` instances ask two distinct address questions."""
    launches = "".join(f"  k<{1 + i % 2}, {i + 1}><<<64, 256>>>(a, o, n);\n" for i in range(n))
    return ("template <int W>\n__device__ float scaled(const float* a, int i) { return a[i] * W; }\n\n"
            "template <int S, int U>\n__global__ void k(const float* a, float* o, int n) {\n"
            "  __shared__ float s[256];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  s[threadIdx.x] = i < n ? scaled<U>(a, i * S) : 0.0f;\n  __syncthreads();\n"
            "  for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
            "    if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];\n    __syncthreads();\n  }\n"
            "  if (threadIdx.x == 0) o[blockIdx.x * S] = s[0];\n}\n\n"
            f"void run(const float* a, float* o, int n) {{\n{launches}}}\n")


def template_scaling(counts: list[int]) -> dict[int, dict[str, float]]:
    """Phases of one run over `template_source(n)` for each n, each in a fresh process."""
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            f = os.path.join(tmp, f"k{n}.cu")
            with open(f, "w") as fh:
                fh.write(template_source(n))
            res = subprocess.run([sys.executable, __file__, "--json", "--no-startup", f], capture_output=True,
                                 text=True, check=True)
            out[n] = json.loads(res.stdout)["phases"]
    return out


def main() -> None:
    if "--template-scaling" in sys.argv:
        at = sys.argv.index("--template-scaling")
        counts = [int(x) for x in sys.argv[at + 1].split(",")]
        table = template_scaling(counts)
        if "--json" in sys.argv:
            print(json.dumps(table))
            return
        names = ["libclang", "lowering", "host launches", "evaluation", "rules", "garbage collection", "other", "total"]
        print("one kernel template instantiated n times (two distinct address functions), CPU seconds:")
        print(f"  {'n':>5} " + " ".join(f"{k:>10}" for k in names))
        for n, ph in table.items():
            print(f"  {n:>5} " + " ".join(f"{ph.get(k, 0.0):10.3f}" for k in names))
        return
    files = [a for a in sys.argv[1:] if a not in ("--json", "--no-startup")]
    if not files:
        sys.exit(__doc__)
    if "--no-startup" in sys.argv:
        print(json.dumps({"files": len(files), "phases": phases(files)}))
        return
    report = {"startup": startup(), "files": len(files), "phases": phases(files)}
    if "--json" in sys.argv:
        print(json.dumps(report))
        return
    s = report["startup"]
    print(f"start-up CPU: python {s['python_s']:.3f} s, + NumPy {s['python_numpy_s']:.3f} s, "
          f"+ kernlint's modules {s['python_kernlint_s']:.3f} s")
    print(f"{len(files)} files in one process, by phase (CPU seconds):")
    for k, v in report["phases"].items():
        print(f"  {k:<16} {v:7.3f}")


if __name__ == "__main__":
    main()
