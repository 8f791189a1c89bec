"""`--confirm`: run the kernels on a GPU and mark each finding confirmed, refuted or not-run.

Flow for one file (DESIGN.md, "Confirmation on a GPU"):

1. Sites: every global/shared memory access and every `if` the warp evaluator saw, in every kernel
   of the file, becomes a traced site (`instrument.py` rewrites the source text; host code goes).
2. Launch: each kernel runs in the launch shape it was analysed under, over the smallest grid that
   contains the two blocks the evaluator sampled, with synthesized arguments: zeroed device buffers
   sized from the largest offset the evaluator saw per pointer (times two, plus guard bytes in front
   and behind), and scalars from `--define`, the launch in the file, or the first sampled value.
   The GPU work happens in a child process (`cupy_probe.py`) so a fault or a hang cannot take
   kernlint down; the child is restarted after a fault for the kernels that remain.
3. Measure: the trace becomes the same events the evaluator produces (`MemoryAccess`, `Branch`),
   one per warp request, and the *same rule functions* run on them. A finding is `confirmed` when
   the rule fires on the measured events at its site, `refuted` when it does not; a measured
   finding at a traced site that the static analysis did not report is added as `found-by-confirm`.
   The measured numbers go into `metrics` under `measured_*` keys.

Kernels whose addresses depend on loaded data (gathers, pointer chasing) are not run: with zeroed
inputs they would measure something else than what they do on real data. Occupancy findings
(KL4xx) are checked against the compiled kernel's attributes and the runtime occupancy query.
`--confirm=ncu` additionally profiles the uninstrumented kernels with Nsight Compute (`ncu.py`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernlint import ir
from kernlint.confirm import instrument as instrument_module
from kernlint.confirm.instrument import SHARED_FLAG, Instrumented, Site, walk
from kernlint.confirm import seeding
from kernlint.confirm.instrument import instrument as instrument_source
from kernlint.diagnostics import Diagnostic
from kernlint.eval import events as ev
from kernlint.eval import resample
from kernlint.eval.result import KernelResult

MAXSEQ = 64  # records per (site, warp) at least; the evaluator itself stops at 48 events per site
MAXSEQ_MAX = 256  # at most: an unrolled loop of 136 requests is then recorded whole (totals comparable with ncu)
TRACE_BUDGET = 256 << 20  # bytes of trace arrays per launch that decide how many records fit


def _maxseq(nsites: int, wpb: int) -> int:
    """Records per (site, warp) for a kernel: as many as the trace budget allows, between the bounds."""
    per_record = max(1, nsites) * 2 * max(1, wpb) * (32 * 8 + 8)
    return int(max(MAXSEQ, min(MAXSEQ_MAX, TRACE_BUDGET // per_record // 64 * 64)))
GUARD_BYTES = 1 << 16  # zeroed bytes before and after every synthesized buffer
MAX_BUFFER_BYTES = 1 << 30
CHILD_TIMEOUT_S = float(os.environ.get("KERNLINT_CONFIRM_TIMEOUT", "120"))  # per kernel, compile included
MAX_SHAPES_PER_KERNEL = 3

_DTYPES_BY_NAME = {
    "float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
    "long": "int64", "long long": "int64", "unsigned long": "uint64", "unsigned long long": "uint64",
    "short": "int16", "unsigned short": "uint16", "char": "int8", "signed char": "int8",
    "unsigned char": "uint8", "bool": "bool", "size_t": "uint64", "int64_t": "int64", "int32_t": "int32",
    "uint32_t": "uint32", "uint64_t": "uint64", "half": "float16", "__half": "float16",
}


# --- data ----------------------------------------------------------------------------------------

# Why a finding was not run: one of a small fixed set, in `metrics["confirm_not_run"]` (the note says
# the details). The coverage bench (bench/confirm_coverage.py) counts findings by these.
NOT_RUN_REASONS = {
    "no-device": "no usable GPU, driver, CuPy or NVRTC",
    "compiler": "the GPU compiler rejected the device code (a construct NVRTC does not support)",
    "data-dependent": "addresses depend on loaded data: zeroed inputs would not measure the real pattern",
    "arguments": "a kernel or template argument could not be synthesized",
    "size": "the synthesized buffers would exceed the size cap",
    "fault": "the kernel faulted or hung under the synthesized values",
    "not-traced": "no probe could be placed at the site, it never ran in the traced blocks, or its trace was cut "
                  "short without showing the pattern",
    "no-launch": "the kernel was not analysed or has no launch shape",
}


def _run_category(run: "KernelRun") -> str:
    """The NOT_RUN_REASONS key for a run that produced no measurement."""
    if run.category:
        return run.category
    return {"compile-error": "compiler", "fault": "fault", "timeout": "fault", "pending": "no-launch"}.get(
        run.status, "fault" if run.status == "error" else "no-launch")


@dataclass
class KernelRun:
    """One kernel under one launch shape: what was launched and what came back."""

    id: int
    result: KernelResult
    name_expr: str
    spec: dict[str, Any] | None = None  # the launch sent to the probe; None when not runnable
    reason: str = ""  # why it was not run / what went wrong
    status: str = "pending"  # pending | ok | not-run | fault | error | compile-error | timeout
    device: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    measured: KernelResult | None = None
    measured_diags: list[Diagnostic] = field(default_factory=list)
    static_keys: set[tuple[int, int, str]] = field(default_factory=set)
    traced_spans: set[tuple[int, int]] = field(default_factory=set)
    rule_errors: dict[str, str] = field(default_factory=dict)
    redirected: int = 0  # global accesses outside the synthesized buffers, sent to scratch
    category: str = ""  # for a run that did not happen: one of NOT_RUN_REASONS
    refit: str = ""  # how the sampled sizes were made smaller to fit the buffers ("" when they were not)
    data_dependent: str = ""  # why some addresses depend on loaded data (then only some findings are judged)
    truncated_spans: set[tuple[int, int]] = field(default_factory=set)  # sites reached more than maxseq times
    hung: bool = False  # the kernel hung: the trace holds what it recorded until then
    seeded: bool = False  # every sampled load and global of the evaluation got its value (confirm/seeding.py)
    unseeded: str = ""  # what could not be seeded, when not


@dataclass
class FilePlan:
    path: str
    text: str
    instrumented: Instrumented | None
    runs: list[KernelRun]
    problem: str = ""
    options: tuple[str, ...] = ()
    site_of_span: dict[tuple[int, int, str], Site] = field(default_factory=dict)
    switch_arms: dict[tuple[int, int, str], tuple[dict[int, int], int]] = field(default_factory=dict)
    sites: list[Site] = field(default_factory=list)
    keep_lines: frozenset[int] = frozenset()
    kernel_fns: tuple[ir.Function, ...] = ()
    lint_options: Any = None
    guards: tuple[ir.Span, ...] = ()
    entries: tuple[ir.Span, ...] = ()
    includer: tuple[str, str] | None = None  # (path, text up to the #include) when the file is a fragment
    seeds: tuple[Site, ...] = ()  # load sites whose sampled values the GPU run returns (confirm/seeding.py)


# --- entry point ---------------------------------------------------------------------------------


def confirm_findings(diagnostics: list[Diagnostic], results: Iterable[Any], sources: dict[str, str], *,
                     mode: str = "trace", options: Any = None) -> tuple[list[Diagnostic], list[str]]:
    """Run the flagged kernels on a GPU; return the diagnostics with `confirmation` set, and notes.

    `results` are `kernlint.engine.LintResult`s, `sources` maps each path to its text. Never raises
    for GPU trouble: without CuPy or a device every finding is `not-run` and one note says why.
    """
    results = list(results)
    notes: list[str] = []
    if mode not in ("trace", "ncu"):
        notes.append(f"--confirm={mode}: unknown mode (expected trace or ncu); confirmation not run")
        return _all_not_run(diagnostics, f"unknown --confirm mode {mode!r}"), notes
    usable, why = probe_device()
    if not usable:
        notes.append(no_device_note(why))
        return _all_not_run(diagnostics, why), notes
    plans = [plan_file(r, sources.get(r.path, ""), options) for r in results if r.path in sources]
    workdir = tempfile.mkdtemp(prefix="kernlint-confirm-")
    try:
        for plan in plans:
            if plan.instrumented is not None:
                execute(plan, workdir, notes)
                if notes and notes[-1].startswith(NO_DEVICE_PREFIX):
                    return _all_not_run(diagnostics, notes[-1]), notes[-1:]
        out = apply_results(diagnostics, plans, results, notes)
        if mode == "ncu":
            from kernlint.confirm.ncu import profile_with_ncu

            out = profile_with_ncu(out, plans, workdir, notes)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out, notes


NO_DEVICE_PREFIX = "--confirm: no usable CUDA device/driver: confirmation not run"


def no_device_note(why: str) -> str:
    """The run's one note when nothing can run on a GPU (the findings stay static, marked not-run)."""
    return f"{NO_DEVICE_PREFIX}: {why} (the findings are static only; the exit status is unchanged)"


def probe_device() -> tuple[bool, str]:
    """Whether a CUDA device, its driver and NVRTC are usable through CuPy; the reason when not.

    Asked once per run, before anything is planned, in a child process like every other GPU call
    (`cupy_probe.gpu_available`): importing CuPy or initialising CUDA must not be able to take
    kernlint down. Without this, a machine with CuPy but no driver reported every kernel as
    "rejected by the GPU compiler: cudaErrorInsufficientDriver".
    """
    if importlib.util.find_spec("cupy") is None:
        return False, "CuPy is not installed: pip install 'kernlint[gpu]'"
    try:
        proc = subprocess.run([sys.executable, "-m", "kernlint.confirm.cupy_probe"], input=json.dumps({"check": True}),
                              capture_output=True, text=True, env=_child_env(), timeout=CHILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, f"the CUDA probe did not answer within {CHILD_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return False, f"the CUDA probe could not start: {exc}"
    for line in reversed(proc.stdout.splitlines()):
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(msg, dict) and "ok" in msg:
            return bool(msg["ok"]), str(msg.get("message", ""))
    tail = " | ".join(proc.stderr.strip().splitlines()[-2:])
    return False, f"the CUDA probe exited with status {proc.returncode}" + (f": {tail[-300:]}" if tail else "")


def _child_env() -> dict[str, str]:
    """The environment of a `cupy_probe` child: this kernlint first on its path."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _all_not_run(diagnostics: list[Diagnostic], why: str) -> list[Diagnostic]:
    del why  # said once, in the run's note; the reporters already print "not run" per finding
    return [_mark(d, "not-run", {"confirm_not_run": "no-device"}) if _confirmable(d) else d for d in diagnostics]


# Findings decided by the input data (KL305): a run on synthesized zeroed buffers cannot confirm or
# refute them, so they keep their static verdict.
_DATA_DEPENDENT = frozenset({"KL305"})
# Advice rather than a measured claim (KL104: declare the pointer const __restrict__): a trace of
# addresses has nothing to confirm, so these keep their static verdict too.
_ADVICE = frozenset({"KL104"})


def _confirmable(d: Diagnostic) -> bool:
    from kernlint.checks import BY_CODE

    rule = BY_CODE.get(d.code)
    return rule is not None and d.code not in _DATA_DEPENDENT and d.code not in _ADVICE and (rule.check is not None or d.code.startswith("KL4"))


def _mark(d: Diagnostic, status: str, measured: dict[str, Any], note: str = "") -> Diagnostic:
    metrics = dict(d.metrics)
    metrics.update(measured)
    notes = d.notes + ((note,) if note else ())
    return dataclasses.replace(d, confirmation=status, metrics=metrics, notes=notes)


# --- planning --------------------------------------------------------------------------------------


def _sample_blocks(kr: KernelResult) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The two blocks to trace: the ones the evaluation sampled (a re-evaluation of a region guarded
    by blockIdx samples the blocks the guard picks out, eval/resample.py), else the default samples."""
    from kernlint.eval.interp import BLOCK_SAMPLES, GRID_SAMPLE

    g = kr.shape.grid or GRID_SAMPLE
    blocks = [[min(s[i], g[i] - 1) for i in range(3)] for s in BLOCK_SAMPLES]
    assumed = dict(kr.assumed)
    for i, d in enumerate("xyz"):
        vals = assumed.get(f"blockIdx.{d}")
        if vals:
            for k, b in enumerate(blocks):
                b[i] = max(0, min(int(vals[min(k, len(vals) - 1)]), g[i] - 1))
    return tuple(blocks[0]), tuple(blocks[1])  # type: ignore[return-value]


def _name_expr(fn: ir.Function, shape: Any) -> str | None:
    if not fn.template_params:
        return fn.name
    binds = dict(shape.bindings)
    args = []
    for tp in fn.template_params:
        v = binds.get(tp.name) or tp.default
        if not v:
            return None
        args.append(v)
    return f"{fn.name}<{', '.join(args)}>"


_SHIM_NAMES: frozenset[str] | None = None


def _shim_function_names() -> frozenset[str]:
    """The functions the CUDA headers declare, as kernlint's shim lists them (the math API, intrinsics)."""
    global _SHIM_NAMES
    if _SHIM_NAMES is None:
        from kernlint.frontend.clang_frontend import shim_path

        with open(shim_path(), encoding="utf-8") as fh:
            text = fh.read()
        names = set(re.findall(r"\b(\w+)\s*\([^()]*\)\s*;", text))  # `__device__ float __expf(float);`
        for n in re.findall(r"\bKL_F[12]\((\w+)\)", text):  # KL_F1(sin): sin and sinf
            names.update((n, n + "f"))
        _SHIM_NAMES = frozenset(names)
    return _SHIM_NAMES


def _nvrtc_name(fn: ir.Function, name_expr: str, tu: ir.TranslationUnit) -> str:
    """The name expression NVRTC compiles and looks the kernel up by. A kernel that shares its name with
    another function (`__global__ void remainder(...)` beside the math API's `remainder(double, double)`)
    is ambiguous as a bare name ("cannot determine which instance of overloaded function"); a cast to
    its own pointer type picks it (NVRTC takes any constant expression denoting the kernel's address)."""
    if "<" in name_expr or not all(p.spelling for p in fn.params):
        return name_expr
    same = sum(1 for f in tu.kernels if f.name == fn.name)
    if same < 2 and fn.name not in _shim_function_names():
        return name_expr
    return f"static_cast<void (*)({', '.join(p.spelling for p in fn.params)})>({name_expr})"


def _resolve(t: ir.CType, bindings: dict[str, str]) -> ir.CType:
    if t.kind == "template":
        name = bindings.get(t.name, "")
        dt = _DTYPES_BY_NAME.get(name.replace("const ", "").strip())
        if dt is None:
            return t
        size = np.dtype(dt).itemsize
        kind = "float" if dt.startswith("float") else ("bool" if dt == "bool" else "int")
        return ir.CType(kind, size, not dt.startswith("u"), name=name)
    return t


def _scalar_dtype(t: ir.CType) -> str | None:
    if t.kind == "float":
        return {2: "float16", 4: "float32", 8: "float64"}.get(t.size)
    if t.kind == "bool":
        return "bool"
    if t.kind == "int":
        sizes = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
        d = sizes.get(t.size)
        return None if d is None else (d if t.signed else "u" + d)
    return None


def _pointer_extents(kr: KernelResult) -> dict[str, tuple[int, int]]:
    """Per root (parameter or struct field), the lowest and highest byte offsets the evaluator saw."""
    from kernlint.eval.interp import POINTER_SPACING

    out: dict[str, tuple[int, int]] = {}
    for e in kr.events:
        if not isinstance(e, ev.MemoryAccess) or e.space != "global" or not e.mask.any():
            continue
        a = e.address[e.mask]
        base = np.round(a / POINTER_SPACING).astype(np.int64) * POINTER_SPACING
        off = a - base
        lo, hi = int(off.min()), int(off.max()) + e.width
        old = out.get(e.root)
        out[e.root] = (min(lo, old[0]), max(hi, old[1])) if old else (lo, hi)
    return out


def _buffer(extent: tuple[int, int] | None) -> dict[str, Any]:
    if extent is None:
        return {"t": "ptr", "bytes": 4 << 20, "front": GUARD_BYTES}
    lo, hi = extent
    front = GUARD_BYTES + 2 * max(0, -lo)
    front = (front + 255) // 256 * 256
    return {"t": "ptr", "bytes": 2 * max(hi, 0) + GUARD_BYTES, "front": front}


def _size_message(name: str, extent: tuple[int, int] | None, spec: dict[str, Any], kr: KernelResult) -> str:
    """Why a buffer is over the cap: its byte offsets, which side (below or above the pointer) grew it,
    and the sampled values it was evaluated with (`--define` them to run it)."""
    lo, hi = extent or (0, 0)
    total = spec["bytes"] + spec["front"]
    side = (f"offsets reach {-lo} bytes below the pointer (the guard in front of it is sized 2x that)"
            if spec["front"] > spec["bytes"] else f"offsets reach {hi} bytes past the pointer (sized 2x)")
    sampled = ", ".join(f"{k} = {v[0]}" for k, v in kr.assumed if not k.startswith(("blockIdx", "gridDim")))
    return (f"parameter {name} would need {_mib(total)} MiB (cap {MAX_BUFFER_BYTES >> 20} MiB): {side}"
            + (f", with the sampled {sampled}; --define the real sizes" if sampled else ""))


def _sampled_text(kr: KernelResult) -> str:
    """The sampled (not launch-given) scalar values a run used, for fault and size messages."""
    vals = [f"{k} = {v[0]}" for k, v in kr.assumed if not k.startswith(("blockIdx", "gridDim")) and v]
    return ("the sampled " + ", ".join(vals)) if vals else "the launch's own values"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f}" if n < (10 << 20) else str(n >> 20)


def _refit(kr: KernelResult, ladder: tuple[tuple[int, int], ...] = ((1024, 1536), (256, 384), (64, 96)),
           why: str = "to fit the buffers") -> tuple[KernelResult, str] | None:
    """`kr` evaluated again with its sampled sizes smaller, so that the buffers fit under the cap.

    The static verdict came from sizes such as 4096 x 6144; a launch with those needs gigabytes for a
    3-D stencil. The same kernel is evaluated again with the size parameters sampled smaller (other
    sampled values, blockIdx included, stay) and run with those: the rule decides on the measured
    events of that launch, and the note says which values it used. None when nothing helps.
    """
    from kernlint.eval.interp import Interpreter

    if kr.unit is None:
        return None
    sizes = [k for k, v in kr.assumed if not k.startswith(("blockIdx", "gridDim")) and v and min(v) >= 256]
    if not sizes:
        return None
    keep = {k: tuple(v) for k, v in kr.assumed if k not in sizes}
    for small in ladder:
        over = dict(keep)
        over.update({k: small for k in sizes})
        try:
            res = Interpreter(kr.unit, kr.kernel, kr.shape, dict(kr.defines), sample_overrides=over).run()
        except Exception:  # noqa: BLE001 (the first evaluation worked; a failure here only means no refit)
            return None
        new = dataclasses.replace(kr, events=tuple(res.events), assumed=tuple(sorted(res.assumed.items())),
                                  load_sites=tuple(sorted(res.load_sites.items())))
        args, _why, _values = _launch_args(new)
        if args is not None:
            before = dict(kr.assumed)
            text = ", ".join(f"{k} = {small[0]} (not {before[k][0]})" for k in sizes)
            return new, f"sizes sampled smaller {why}: {text}"
    return None


def _scalar_value(name: str, dtype: str, kr: KernelResult, sample: int = 0) -> Any:
    """The value a scalar gets: defined, or the sampled value of evaluation sample `sample`."""
    defines = dict(kr.defines)
    if name in defines:
        return defines[name]
    assumed = dict(kr.assumed)
    if assumed.get(name):
        vals = assumed[name]
        return vals[min(sample, len(vals) - 1)]
    if dtype.startswith("float"):
        return 1.0
    return 1 if dtype == "bool" else 0


def _launch_args(kr: KernelResult, sample: int = 0) -> tuple[list[dict[str, Any]] | None, str, dict[str, Any]]:
    """Arguments for the probe; (None, reason, {}) when a parameter cannot be synthesized."""
    binds = dict(kr.shape.bindings)
    extents = _pointer_extents(kr)
    args: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for p in kr.kernel.params:
        t = _resolve(p.ctype, binds)
        if t.kind == "reference" and t.pointee is not None:
            t = t.pointee
        if t.kind == "pointer" and t.pointee is not None and t.pointee.kind == "function":
            # A zeroed buffer called as code faults the kernel; a device function's address exists only
            # on the device (the host reads it from a `__device__` variable), so none is synthesized.
            return None, f"the function pointer parameter `{p.name}` cannot be synthesized (a device function's address)", {}
        if t.kind in ("pointer", "array"):
            spec = _buffer(extents.get(p.name))
            if spec["bytes"] + spec["front"] > MAX_BUFFER_BYTES:
                return None, _size_message(p.name, extents.get(p.name), spec, kr), {}
            args.append(spec)
            values[p.name] = f"{spec['bytes']} zeroed bytes"
            continue
        dt = _scalar_dtype(t)
        if dt is not None:
            v = _scalar_value(p.name, dt, kr, sample)
            args.append({"t": "scalar", "dtype": dt, "value": v})
            values[p.name] = v
            continue
        if t.kind == "struct" and t.size > 0 and t.fields and all(f.offset >= 0 for f in t.fields):
            fields = []
            for f in t.fields:
                ft = _resolve(f.ctype, binds)
                root = f"{p.name}.{f.name}"
                if ft.kind == "pointer":
                    fields.append({"offset": f.offset, "dtype": "uint64", "ptr": _buffer(extents.get(root))})
                    values[root] = "zeroed buffer"
                    continue
                fdt = _scalar_dtype(ft)
                if fdt is None:
                    return None, f"cannot synthesize field {root} of type {ft.name or ft.kind}", {}
                v = _scalar_value(root, fdt, kr, sample)
                fields.append({"offset": f.offset, "dtype": fdt, "value": v})
                values[root] = v
            args.append({"t": "struct", "size": t.size, "fields": fields})
            continue
        return None, f"cannot synthesize parameter {p.name} of type {t.name or t.kind}", {}
    return args, "", values


def _data_dependent(fn: ir.Function, kr: KernelResult, functions: dict[str, ir.Function]) -> str:
    """Why running `fn` on zeroed inputs would not measure what it does, or "" when it is safe.

    Addresses computed from loaded values (gathers through index arrays, pointer chasing) read
    whatever the zeroed buffers hold, so the measured pattern is not the real one.
    """
    seen_spans = {(e.span.line, e.span.column) for e in kr.events if isinstance(e, ev.MemoryAccess)}
    bodies: list[ir.Function] = [fn]
    queue_: list[ir.Function] = [fn]
    while queue_:
        f = queue_.pop()
        for n in walk(f.body):
            if isinstance(n, ir.Call) and n.target in functions and functions[n.target] not in bodies:
                bodies.append(functions[n.target])
                queue_.append(functions[n.target])
        if len(bodies) > 16:
            break
    for f in bodies:
        tainted = _tainted_locals(f)
        for n in walk(f.body):
            if not _is_access(n):
                continue
            if (n.span.line, n.span.column) in seen_spans:  # type: ignore[attr-defined]
                continue
            inner = n.index if isinstance(n, ir.Index) else (n.base if isinstance(n, ir.Member) else n.operand)  # type: ignore[attr-defined]
            if any(_is_access(m) for m in walk(inner)) or any(
                    isinstance(m, ir.Ref) and m.name in tainted for m in walk(inner)):
                return (f"addresses depend on loaded data (line {n.span.line}: "  # type: ignore[attr-defined]
                        f"{kr.line_text(n.span.line)[:60]}); zeroed inputs would not measure the real pattern")  # type: ignore[attr-defined]
    return ""


_TEXTURE_REF = re.compile(r"\b(?:texture|surface)\s*<[^;{}()]*>\s*([A-Za-z_]\w*)\s*[;,=]")


def _texture_references(fn: ir.Function, functions: dict[str, ir.Function], text: str) -> list[str]:
    """Texture/surface references (`texture<float, 1> t;`) the kernel or its callees name.

    CUDA 12 removed texture and surface references; NVRTC rejects every use, so such a kernel can
    only be reported as not run (one reason), and its body is left out of the module the others use.
    """
    declared = set(_TEXTURE_REF.findall(text))
    if not declared:
        return []
    names: set[str] = set()
    lines = text.splitlines()
    for f in _callees(fn, functions):
        names.update(n.name for n in walk(f.body) if isinstance(n, ir.Ref))
        end = f.body.span.end_line if f.body is not None else f.span.line
        if 0 < f.span.line <= len(lines) and f.name in lines[f.span.line - 1]:
            # (a texture reference is no declaration the front end types: it may be no Ref in the IR)
            names.update(re.findall(r"[A-Za-z_]\w*", "\n".join(lines[f.span.line - 1:end])))
    return sorted(declared & names)


def _callees(fn: ir.Function, functions: dict[str, ir.Function]) -> list[ir.Function]:
    """`fn` and the functions it calls, transitively (at most 16)."""
    bodies: list[ir.Function] = [fn]
    queue_: list[ir.Function] = [fn]
    while queue_ and len(bodies) <= 16:
        f = queue_.pop()
        for n in walk(f.body):
            if isinstance(n, ir.Call) and n.target in functions and functions[n.target] not in bodies:
                bodies.append(functions[n.target])
                queue_.append(functions[n.target])
    return bodies


def _is_access(n: object) -> bool:
    if isinstance(n, ir.Index):
        base = n.base
        while isinstance(base, ir.Cast) and not base.explicit:
            base = base.operand
        if isinstance(base, ir.Ref) and base.kind == "local" and base.ctype.kind == "array":
            return False  # a register/local array
        return base.ctype.kind in ("pointer", "array", "unknown", "template")
    if isinstance(n, ir.Unary) and n.op == "*":
        # `v[k]` on a value with `operator[]` (llm.c's Packed128) is lowered as `*operator[](k)`: the
        # reference a call returns is no access of its own; the callee's accesses are checked themselves.
        operand = n.operand
        while isinstance(operand, ir.Cast) and not operand.explicit:
            operand = operand.operand
        return not isinstance(operand, ir.Call)
    return isinstance(n, ir.Member) and n.arrow


def _tainted_locals(f: ir.Function) -> set[str]:
    """Locals assigned from memory reads (transitively, two rounds)."""
    tainted: set[str] = set()
    nodes = walk(f.body)
    for _ in range(3):
        for n in nodes:
            target, value = None, None
            if isinstance(n, ir.VarDecl) and n.init is not None:
                target, value = n.name, n.init
            elif isinstance(n, ir.Binary) and n.op.endswith("=") and n.op not in ("==", "!=", "<=", ">="):
                lhs = n.lhs
                while isinstance(lhs, ir.Cast) and not lhs.explicit:
                    lhs = lhs.operand
                if isinstance(lhs, ir.Ref):
                    target, value = lhs.name, n.rhs
            if target is None or value is None:
                continue
            for m in walk(value):
                if _is_access(m) or (isinstance(m, ir.Ref) and m.name in tainted):
                    tainted.add(target)
                    break
    return tainted


def _switch_arms(sw: ir.Switch) -> tuple[dict[int, int], int] | None:
    """Case value -> arm index (as the evaluator numbers arms) and the default arm (-1: none).

    None when a label is not an integer literal: the trace holds the switch value, and only
    literal labels can be mapped back to arms without evaluating expressions.
    """
    values: dict[int, int] = {}
    default = -1
    for arm, (labels, _body) in enumerate(sw.cases):
        for lab in labels:
            while isinstance(lab, ir.Cast):
                lab = lab.operand
            if isinstance(lab, ir.Opaque) and lab.reason == "default":
                default = arm
            elif isinstance(lab, ir.Lit) and isinstance(lab.value, int):
                values.setdefault(lab.value, arm)
            elif isinstance(lab, ir.Unary) and lab.op == "-" and isinstance(lab.operand, ir.Lit):
                values.setdefault(-int(lab.operand.value), arm)
            else:
                return None
    return values, default


def _sites_in_helpers(sites: list[Site], tu: ir.TranslationUnit, functions: dict[str, ir.Function]) -> list[Site]:
    """Move access sites that the evaluator reports at a helper's call into the helper's body.

    An access inside an inlined `__device__` function is reported at the call (`col(a, t, ld)`),
    which is not an lvalue. When the helper has exactly one memory access and is called from one
    place in the file, that access is traced under the call's site id; otherwise the site stays
    where it is and is reported as not traced.
    """
    calls: dict[tuple[int, int], str] = {}
    call_count: dict[str, int] = defaultdict(int)
    unique = {(f.name, f.span): f for f in list(tu.kernels) + list(functions.values())}
    for f in unique.values():
        for n in walk(f.body):
            if isinstance(n, ir.Call) and n.target in functions:
                calls[(n.span.line, n.span.column)] = n.target
                call_count[n.target] += 1
    out = []
    for site in sites:
        target = calls.get((site.span.line, site.span.column)) if site.kind == "access" else None
        if target is not None and call_count[target] == 1:
            accesses = [n for n in walk(functions[target].body) if _is_access(n)]
            if len(accesses) == 1:
                site = Site(site.id, site.kind, accesses[0].span)  # type: ignore[attr-defined]
        out.append(site)
    return out


DYNAMIC_SHARED_MIN = 16384
SHARED_NO_OPT_IN = 48 * 1024  # a block's shared memory without cudaFuncSetAttribute (CUDA C++ Programming Guide)


def _dynamic_shared(kr: KernelResult) -> int:
    """Dynamic shared memory for a launch whose size kernlint could not fold: what the evaluated accesses
    of the `extern __shared__` array reach (a sampled pitch of 5888 bytes needs 29 KB), at least 16 KiB,
    within the 48 KiB a block gets without opting in. Too little would send the last rows' accesses to
    the guard's scratch buffer, which Nsight Compute then counts as global traffic."""
    ext = [base for _name, base, t in kr.shared_layout if t.size == 0]
    fixed = sum(t.size for _name, _base, t in kr.shared_layout if t.size > 0)
    if not ext:
        return DYNAMIC_SHARED_MIN
    end = 0
    for e in kr.events:
        if isinstance(e, ev.MemoryAccess) and e.space == "shared" and e.mask.any():
            end = max(end, int(np.broadcast_to(e.address + e.width, e.mask.shape)[e.mask].max()))
    need = -(-(end - min(ext)) // 1024) * 1024
    return int(max(DYNAMIC_SHARED_MIN, min(need, SHARED_NO_OPT_IN - fixed)))


def _declared_here(f: ir.Function, src_lines: list[str]) -> bool:
    """Whether `f` is declared in this file: its name on one of its lines up to its body's `{` (a function
    from an included header carries that header's line numbers). The declaration may start lines before
    the name: `template <uint dir>` / `__global__ void` on lines of their own."""
    last = f.body.span.line if f.body is not None else f.span.line
    if not 0 < f.span.line <= last <= len(src_lines) or last - f.span.line > 20:
        return False
    return any(f.name in src_lines[k - 1] for k in range(f.span.line, last + 1))


def _guards_and_entries(tu: ir.TranslationUnit, functions: dict[str, ir.Function], src_lines: list[str],
                        traced: set[tuple[int, int]]) -> tuple[tuple[ir.Span, ...], tuple[ir.Span, ...]]:
    """Spans of every other memory access in this file's device functions (to guard), and the bodies
    of this file's kernels (to start with the block filter)."""
    guards: list[ir.Span] = []
    entries: list[ir.Span] = []
    seen: set[tuple[int, int]] = set(traced)
    unique = {(f.name, f.span): f for f in list(tu.kernels) + list(functions.values())}
    for f in unique.values():
        if f.body is None or not _declared_here(f, src_lines):
            continue  # from a header: its lines are not this file's
        if f.is_kernel:
            entries.append(f.body.span)
        for n in walk(f.body):
            if _is_access(n):
                sp = n.span  # type: ignore[attr-defined]
                if sp.line > 0 and (sp.line, sp.column) not in seen:
                    seen.add((sp.line, sp.column))
                    guards.append(sp)
    return tuple(guards), tuple(entries)


_GRID_WIDE = re.compile(r"\b(this_grid|grid_group|grid\.sync|sync_grids|cudaLaunchCooperativeKernel)\b")


def plan_file(lint_result: Any, text: str, options: Any) -> FilePlan:
    """Choose the sites and launches for one file and build the instrumented source."""
    path = lint_result.path
    krs: list[KernelResult] = list(lint_result.results)
    if not krs:
        return FilePlan(path, text, None, [], "no kernels were analysed")
    try:
        from kernlint.frontend import parse_source
        from kernlint.occupancy import DEFAULT_ARCH

        includer = _includer(lint_result)
        if includer is not None:
            # A fragment: parsed, compiled and run after its includer's preceding definitions and macros.
            tu = parse_source(includer[1], includer[0], include_dirs=tuple(getattr(options, "include_dirs", ()) or ()),
                              defines=tuple(getattr(options, "macros", ()) or ()),
                              arch=getattr(options, "arch", None) or DEFAULT_ARCH, fragment=path, fragment_text=text)
        else:
            tu = parse_source(text, path, include_dirs=tuple(getattr(options, "include_dirs", ()) or ()),
                              defines=tuple(getattr(options, "macros", ()) or ()),
                              arch=getattr(options, "arch", None) or DEFAULT_ARCH)
    except Exception as exc:  # noqa: BLE001 (the file parsed once already; this is a safety net)
        return FilePlan(path, text, None, [], f"could not re-parse: {exc}")
    functions = dict(tu.functions)
    src_lines = text.splitlines()
    ifs: dict[tuple[int, int], ir.If] = {}
    switches: dict[tuple[int, int], ir.Switch] = {}
    keep_lines: set[int] = set()
    for f in list(tu.kernels) + list(functions.values()):
        if f.body is None:
            continue
        # Functions from included headers carry their header's line numbers: only a function whose
        # name is on its line in this file protects those lines from host-code removal.
        if _declared_here(f, src_lines):
            keep_lines.update({f.span.line, f.body.span.line, f.body.span.end_line or f.body.span.line})
        for n in walk(f.body):
            if isinstance(n, ir.If):
                ifs[(n.span.line, n.span.column)] = n
            elif isinstance(n, ir.Switch):
                switches[(n.span.line, n.span.column)] = n
    sites: list[Site] = []
    site_of_span: dict[tuple[int, int, str], Site] = {}
    switch_arms: dict[tuple[int, int, str], tuple[dict[int, int], int]] = {}
    for kr in krs:
        for e in kr.events:
            if isinstance(e, ev.MemoryAccess) and e.space in ("global", "shared"):
                key = (e.span.line, e.span.column, "access")
                if key not in site_of_span:
                    site_of_span[key] = Site(len(sites), "access", e.span)
                    sites.append(site_of_span[key])
            elif isinstance(e, ev.Barrier):
                key = (e.span.line, e.span.column, "collective")
                if key not in site_of_span:
                    site_of_span[key] = Site(len(sites), "collective", e.span)
                    sites.append(site_of_span[key])
            elif isinstance(e, ev.Loop):
                key = (e.span.line, e.span.column, "loop")
                if key not in site_of_span:
                    site_of_span[key] = Site(len(sites), "loop", e.span)
                    sites.append(site_of_span[key])
            elif isinstance(e, ev.Branch) and e.kind == "switch":
                key = (e.span.line, e.span.column, "switch")
                sw = switches.get((e.span.line, e.span.column))
                arm_map = _switch_arms(sw) if sw is not None else None
                if key not in site_of_span and arm_map is not None:
                    site_of_span[key] = Site(len(sites), "switch", e.span)
                    sites.append(site_of_span[key])
                    switch_arms[key] = arm_map
            elif isinstance(e, ev.Branch) and e.kind == "if":
                key = (e.span.line, e.span.column, "branch")
                stmt = ifs.get((e.span.line, e.span.column))
                if key not in site_of_span and stmt is not None:
                    site_of_span[key] = Site(len(sites), "branch", stmt.span)
                    sites.append(site_of_span[key])
    sites = _sites_in_helpers(sites, tu, functions)
    guards, entries = _guards_and_entries(tu, functions, src_lines, {(s.span.line, s.span.column) for s in sites})
    seeds = seeding.seed_sites(krs)
    inst = _with_headers(instrument_source(text, sites, frozenset(keep_lines), filename=os.path.abspath(path),
                                           include_dirs=_include_dirs(options), guards=guards, entries=entries,
                                           seeds=seeds),
                         path, options, includer)
    traced = {s.id for s in inst.sites}
    site_of_span = {k: s for k, s in site_of_span.items() if s.id in traced}
    nvrtc = ["-std=c++17", f"-I{os.path.dirname(os.path.abspath(path)) or '.'}"]
    nvrtc += [f"-I{d}" for d in (getattr(options, "include_dirs", ()) or ())]
    nvrtc += [f"-D{m}" for m in (getattr(options, "macros", ()) or ())]
    plan = FilePlan(path, text, inst, [], options=tuple(nvrtc), site_of_span=site_of_span,
                    switch_arms=switch_arms, sites=sites, keep_lines=frozenset(keep_lines),
                    kernel_fns=tuple(tu.kernels), lint_options=options, guards=guards, entries=entries,
                    includer=includer, seeds=seeds)
    per_kernel: dict[str, int] = defaultdict(int)
    for kr in krs:
        fn = kr.template or kr.kernel  # launch the real template with its arguments
        if kr.shape.guess and not kr.events:
            continue  # a guessed shape the kernel itself rules out (an assert on blockDim): never launched
        # The cap is on launch shapes; the extra evaluations of a shape (an odd additive offset, regions
        # re-evaluated with small samples) each predict findings no other run does, so each gets its run.
        extra = kr.odd_offset is not None or bool(kr.regions)
        if not extra and per_kernel[fn.name] >= MAX_SHAPES_PER_KERNEL:
            continue
        per_kernel[fn.name] += not extra
        run = KernelRun(len(plan.runs), kr, _name_expr(fn, kr.shape) or fn.name)
        plan.runs.append(run)
        if fn.body is None or fn.parse_errors:
            run.status, run.reason, run.category = "not-run", "the kernel did not parse cleanly", "no-launch"
            continue
        textures = _texture_references(fn, functions, text)
        if textures:
            run.status, run.category = "not-run", "compiler"
            run.reason = (f"uses the texture reference{'s' if len(textures) > 1 else ''} {', '.join(textures)}: "
                          "texture and surface references were removed in CUDA 12, NVRTC cannot compile them")
            continue
        if fn.template_params and _name_expr(fn, kr.shape) is None:
            run.status, run.reason = "not-run", "template arguments unknown (launch it in the file or --define them)"
            run.category = "arguments"
            continue
        # Addresses computed from loaded data (gathers) read zeroed buffers here: the kernel still runs
        # (the guard keeps it in bounds), but only findings that depend on no loaded value are judged.
        run.data_dependent = _data_dependent(fn, kr, functions)
        args, why, values = _launch_args(kr)
        if args is None and "would need" in why:
            refit = _refit(kr)
            if refit is not None:
                kr, run.refit = refit
                run.result = kr
                args, why, values = _launch_args(kr)
        if args is None:
            run.status, run.reason = "not-run", why
            run.category = "size" if "would need" in why else "arguments"
            continue
        s0, s1 = _sample_blocks(kr)
        grid = tuple(max(s0[i], s1[i]) + 1 for i in range(3))
        threads = kr.shape.threads
        shared = kr.shape.dynamic_shared
        if shared is None:
            shared = _dynamic_shared(kr) if "extern" in text and "__shared__" in text else 0
        from kernlint.eval.interp import GRID_SAMPLE

        # Only the two sampled blocks run (the others return at once) unless blocks wait for each other.
        only_sampled = not any(_GRID_WIDE.search("\n".join(src_lines[max(0, f.span.line - 1):
                                                                     (f.body.span.end_line if f.body else f.span.line)]))
                               for f in _callees(fn, functions))
        # The evaluator's two samples are (block, values) pairs: sampled block 1 ran with the second
        # sampled value of each size (n = 6144 where block 0 had 4096; iteration counts 3 and 5). When
        # they differ, block 1 is traced in a second launch with those values.
        args2, _why2, values2 = _launch_args(kr, 1)
        seed0 = seeding.launch_seeds(kr, inst.seeded, 0)
        seed1 = seeding.launch_seeds(kr, inst.seeded, 1)
        run.seeded, run.unseeded = seed0.complete, seed0.why
        if args2 == args and seed1.spec == seed0.spec:
            args2 = None
        elif args2 is None:
            args2, values2 = args, values  # the same arguments, other sampled loads
        run.spec = {"id": run.id, "name_expr": _nvrtc_name(fn, run.name_expr, tu), "block": list(kr.shape.block), "grid": list(grid),
                    "griddim": list(kr.shape.grid or GRID_SAMPLE), "only_sampled": only_sampled,
                    "samples": [list(s0), list(s1)], "wpb": (threads + 31) // 32, "nsites": len(sites),
                    "maxseq": _maxseq(len(sites), (threads + 31) // 32), "args": args, "shared": shared, "values": values}
        run.spec["seed"] = seed0.spec
        if args2 is not None:
            run.spec["args2"], run.spec["values2"], run.spec["seed2"] = args2, values2, seed1.spec
    textured = {r.result.kernel.name for r in plan.runs if r.category == "compiler"}
    if textured and any(r.spec is not None for r in plan.runs):
        # The other kernels compile in a module without the bodies NVRTC would reject.
        plan.instrumented = _emptied(plan, lambda fn: fn.name in textured)
        plan.site_of_span = {k: s for k, s in plan.site_of_span.items()
                             if s.id in {t.id for t in plan.instrumented.sites}}
    return plan


# --- execution -------------------------------------------------------------------------------------


def _reader(stream: Any, q: queue.Queue[str | None]) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def _drain(proc: subprocess.Popen[str], into: list[str]) -> None:
    into.append(proc.stderr.read() if proc.stderr else "")


def execute(plan: FilePlan, workdir: str, notes: list[str]) -> None:
    """Launch the plan's runnable kernels in child processes; fill in each run's status and trace.

    All kernels of a file share one module. When that module does not compile and the file has
    several kernels, each kernel is compiled again on its own (the bodies of the other kernels
    emptied), so one kernel that NVRTC or ptxas rejects (too much shared memory, a missing
    header used by one kernel) does not leave the others unconfirmed, and the rejection itself is
    attributed to the kernel that causes it.
    """
    assert plan.instrumented is not None
    pending = [r for r in plan.runs if r.spec is not None and r.status == "pending"]
    _run_batch(plan, plan.instrumented, pending, workdir, notes)
    # A fault under sampled sizes (a length a host guard would have limited) is retried once with the
    # sizes sampled small; the first fault's values stay in the note either way.
    retry = []
    for r in pending:
        if (r.status in ("fault", "timeout") or r.hung) and not r.refit:
            what = "hang" if r.hung else r.status
            refit = _refit(r.result, ((64, 96),), why=f"after a {what} with {_sampled_text(r.result)}")
            if refit is None:
                continue
            args, _why, values = _launch_args(refit[0])
            if args is None or r.spec is None:
                continue
            r.result, r.refit = refit
            r.spec = dict(r.spec, args=args, values=values)
            args2, _w, values2 = _launch_args(refit[0], 1)
            r.spec.pop("args2", None)
            r.spec.pop("values2", None)
            if args2 is not None and args2 != args:
                r.spec["args2"], r.spec["values2"] = args2, values2
            r.status, r.reason, r.hung = "pending", "", False
            r.measured, r.measured_diags, r.static_keys, r.traced_spans = None, [], set(), set()
            retry.append(r)
    if retry:
        _run_batch(plan, plan.instrumented, retry, workdir, notes)
    failed = [r for r in pending if r.status == "compile-error"]
    kernels = {r.result.kernel.name for r in plan.runs}
    if not failed or len(kernels) < 2 or len(failed) < len(pending):
        return
    for name in dict.fromkeys(r.result.kernel.name for r in failed):
        isolated = isolate_kernel(plan, name)
        runs = [r for r in failed if r.result.kernel.name == name]
        for r in runs:
            r.status = "pending"
        _run_batch(plan, isolated, runs, workdir, notes)


def isolate_kernel(plan: FilePlan, name: str) -> Instrumented:
    """The plan's instrumented source with the bodies of every other kernel emptied."""
    return _emptied(plan, lambda fn: fn.name != name)


def _emptied(plan: FilePlan, empty: Any) -> Instrumented:
    """The plan's instrumented source with the bodies of the kernels `empty(fn)` picks emptied."""
    chars = list(plan.text)
    offs = instrument_module._line_offsets(plan.text)
    for fn in plan.kernel_fns:
        if not empty(fn) or fn.body is None or fn.template_params:
            continue
        sp = fn.body.span
        a = instrument_module.offset_of(plan.text, offs, sp.line, sp.column)
        b = instrument_module.offset_of(plan.text, offs, sp.end_line or sp.line, sp.end_column or sp.column)
        if a is None or b is None or b - a < 2 or plan.text[a] != "{" or plan.text[b - 1] != "}":
            continue
        for k in range(a + 1, b - 1):
            if chars[k] != "\n":
                chars[k] = " "
    return _with_headers(instrument_source("".join(chars), plan.sites, plan.keep_lines,
                                           filename=os.path.abspath(plan.path),
                                           include_dirs=_include_dirs(plan.lint_options),
                                           guards=plan.guards, entries=plan.entries, seeds=plan.seeds),
                         plan.path, plan.lint_options, plan.includer)


def _include_dirs(options: Any) -> tuple[str, ...]:
    return tuple(str(d) for d in (getattr(options, "include_dirs", ()) or ()))


_INCLUDER_NOTE = re.compile(r"parsed through its includer (.+?) \(the definitions and macros before its #include\)")


def _includer(lint_result: Any) -> tuple[str, str] | None:
    """(includer path, its text before the line that includes this file) for a fragment, else None."""
    for note in getattr(lint_result, "notes", ()):
        m = _INCLUDER_NOTE.search(note)
        if not m:
            continue
        inc = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(lint_result.path)), m.group(1)))
        try:
            with open(inc, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            return None
        return inc, text
    return None


def _with_context(code: str, prefix: str, includer: str, name: str) -> str:
    """`code` (prelude, then `#line 1 "name"` and the fragment) with the includer's part before it."""
    head = f'#line 1 "{instrument_module._escape(name)}"\n'
    block = f'#line 1 "{instrument_module._escape(includer)}"\n{prefix}\n'
    at = code.find(head)
    return code[:at] + block + code[at:] if at >= 0 else block + head + code


def _with_headers(inst: Instrumented, path: str, options: Any,
                  includer: tuple[str, str] | None = None) -> Instrumented:
    """Inline the file's own headers, host code removed (see `instrument.inline_user_headers`); a
    fragment gets its includer's text before the `#include` (device code only) in front of it."""
    dirs = tuple(str(d) for d in (getattr(options, "include_dirs", ()) or ()))
    base = os.path.dirname(os.path.abspath(path))
    name = os.path.abspath(path)
    if includer is not None:
        inc_path, inc_text = includer
        lines = inc_text.splitlines(keepends=True)
        k = next((i for i, ln in enumerate(lines) if re.match(r'\s*#\s*include\s*["<]([^">]+)[">]', ln)
                  and os.path.basename(re.match(r'\s*#\s*include\s*["<]([^">]+)[">]', ln).group(1))
                  == os.path.basename(path)), len(lines))
        before = "".join(lines[:k])
        used = frozenset(instrument_module.device_names(inst.device_code))
        pre, _ = instrument_module.device_only(before, used_elsewhere=used, include_dirs=dirs, roots=False)
        pre = instrument_module.inline_user_headers(pre, os.path.dirname(inc_path), dirs, inc_path)
        inst = dataclasses.replace(
            inst, code=_with_context(inst.code, pre, inc_path, name),
            device_code=_with_context(inst.device_code, pre, inc_path, name),
            profiled=_with_context(inst.profiled, pre, inc_path, name) if inst.profiled else "")
    code = instrument_module.inline_user_headers(inst.code, base, dirs, name)
    plain = instrument_module.inline_user_headers(inst.device_code, base, dirs, name)
    profiled = instrument_module.inline_user_headers(inst.profiled, base, dirs, name) if inst.profiled else ""
    return dataclasses.replace(inst, code=instrument_module.with_half_headers(code, name),
                               device_code=instrument_module.with_half_headers(plain, name),
                               profiled=instrument_module.with_half_headers(profiled, name) if profiled else "")


def _run_batch(plan: FilePlan, source: Instrumented, pending: list[KernelRun], workdir: str,
               notes: list[str]) -> None:
    """Run `pending` from `source` in child processes, restarting after a fault or a hang."""
    restarts = 0
    while pending and restarts < 8:
        job = {"code": source.code, "plain": source.device_code, "hang_s": max(1.0, CHILD_TIMEOUT_S * 0.5),
               "options": list(plan.options), "kernels": [r.spec for r in pending], "out": workdir}
        proc = subprocess.Popen([sys.executable, "-m", "kernlint.confirm.cupy_probe"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
        q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
        err_chunks: list[str] = []
        threading.Thread(target=_drain, args=(proc, err_chunks), daemon=True).start()
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(job))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        by_id = {r.id: r for r in pending}
        done: set[int] = set()
        dead = False
        reported_fault = False  # the child said it faulted and exits on purpose
        while len(done) < len(pending):
            try:
                line = q.get(timeout=CHILD_TIMEOUT_S)
            except queue.Empty:
                proc.kill()
                stuck = next(r for r in pending if r.id not in done)
                stuck.status = "timeout"
                stuck.reason = f"no result within {CHILD_TIMEOUT_S:.0f} s (hang?); the process was killed"
                done.add(stuck.id)
                dead = True
                break
            if line is None:
                dead = True
                break
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if msg.get("status") == "no-gpu":
                notes.append(no_device_note(str(msg.get("message", ""))))
                proc.wait()
                return
            run = by_id.get(msg.get("id"))
            if run is None:
                continue
            done.add(run.id)
            reported_fault = msg["status"] in ("fault", "hang", "timeout")
            if msg["status"] == "hang":
                run.hung, msg["status"] = True, "ok"
                notes.append(f"{plan.path}: {run.name_expr}: kernel hang on the GPU: {msg.get('message', '')} "
                             f"(launched with {_sampled_text(run.result)})")
            run.status = msg["status"]
            run.device = msg.get("device", "")
            run.attributes = msg.get("attributes", {})
            run.redirected = int(msg.get("redirected", 0) or 0)
            if run.status == "ok":
                try:
                    _measure(plan, run, msg["trace"])
                except Exception as exc:  # noqa: BLE001 (a bug in measuring must not hide the other results)
                    run.status, run.reason = "error", f"could not evaluate the trace: {type(exc).__name__}: {exc}"
            else:
                run.reason = msg.get("message", "")
                if run.status == "compile-error":
                    run.reason = _first_error(run.reason)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if dead and not reported_fault and len(done) < len(pending):
            # The child died mid-kernel (a fault it could not report, a crash): blame the next one.
            culprit = next(r for r in pending if r.id not in done)
            if culprit.status == "pending":
                culprit.status = "fault"
                tail = "".join(err_chunks).strip().splitlines()[-3:]
                culprit.reason = "the process running it died" + (": " + " | ".join(tail) if tail else "")
                done.add(culprit.id)
        for r in pending:
            if r.id in done and r.status in ("fault", "timeout"):
                r.reason = f"{r.reason[:300]} (launched with {_sampled_text(r.result)})"
                notes.append(f"{plan.path}: {r.name_expr}: kernel {r.status} on the GPU: {r.reason}")
        pending = [r for r in pending if r.id not in done]
        restarts += 1


def _first_error(log: str) -> str:
    for ln in log.splitlines():
        if "error" in ln:
            return ln.strip()[:300]
    return log.strip()[-300:]


# --- measuring -------------------------------------------------------------------------------------


def _bits(words: np.ndarray) -> np.ndarray:
    """(..., ) uint32 -> (..., 32) bool."""
    return ((words[..., None].astype(np.uint64) >> np.arange(32, dtype=np.uint64)) & 1).astype(bool)


def _measure(plan: FilePlan, run: KernelRun, trace_path: str) -> None:
    """Turn the trace into evaluator events, then run the kernel rules on them."""
    from kernlint.checks import KERNEL_RULES

    data = np.load(trace_path)
    addr, mask, ballot, count = data["addr"], data["mask"], data["ballot"], data["count"]
    kr = run.result
    assert run.spec is not None
    s0, s1 = run.spec["samples"]
    maxseq = int(run.spec.get("maxseq", MAXSEQ))
    if s0 == s1 and "args2" not in run.spec:  # one block sampled twice: only row 0 recorded
        addr[:, 1], mask[:, 1], ballot[:, 1], count[:, 1] = addr[:, 0], mask[:, 0], ballot[:, 0], count[:, 0]
    static_access: dict[tuple[int, int], list[ev.MemoryAccess]] = defaultdict(list)
    static_branch: dict[tuple[int, int], list[ev.Branch]] = defaultdict(list)
    static_loop: dict[tuple[int, int], list[ev.Loop]] = defaultdict(list)
    # Events this trace does not measure (the per-warp work estimate, barriers) are kept as the
    # evaluator produced them, so rules that combine them with measured events still work; a
    # finding *at* such a site is never marked confirmed (its span is not traced).
    collective_sites = {(line, col) for (line, col, kind), site in plan.site_of_span.items() if kind == "collective"}
    static_barrier: dict[tuple[int, int], list[ev.Barrier]] = defaultdict(list)
    measured: list[Any] = []
    for e in kr.events:
        if isinstance(e, ev.Barrier) and (e.span.line, e.span.column) in collective_sites:
            static_barrier[(e.span.line, e.span.column)].append(e)
        elif not isinstance(e, (ev.MemoryAccess, ev.Branch, ev.Loop)):
            measured.append(e)
    for e in kr.events:
        if isinstance(e, ev.MemoryAccess) and e.space in ("global", "shared"):
            # (only what the probe records: a `__constant__` struct's pointer field loaded at the same
            # column, `d_unique[b].rows[i]`, is not the access the trace measured, nor its width)
            static_access[(e.span.line, e.span.column)].append(e)
        elif isinstance(e, ev.Branch) and e.kind in ("if", "switch"):
            static_branch[(e.span.line, e.span.column)].append(e)
        elif isinstance(e, ev.Loop):
            static_loop[(e.span.line, e.span.column)].append(e)
    traced: set[tuple[int, int]] = set()
    arrive = data["arrive"] if "arrive" in data.files else np.zeros(count.shape + (32,), dtype=np.uint64)
    if s0 == s1 and "args2" not in run.spec:
        arrive[:, 1] = arrive[:, 0]
    for (line, col, kind), site in plan.site_of_span.items():
        c = count[site.id]  # (2, W)
        if kind == "collective":
            c = arrive[site.id].max(axis=-1).astype(np.int64)  # per-lane arrival counts (mapped memory)
        n = int(min(c.max(initial=0), maxseq))
        if c.max(initial=0) > maxseq:
            run.truncated_spans.add((line, col))
        if n == 0:
            continue  # never executed in the sampled blocks: nothing measured, so not traced
        if kind == "access":
            statics = static_access.get((line, col))
            if not statics:
                continue
            traced.add((line, col))
            kinds = list(dict.fromkeys(e.kind for e in statics))
            first = statics[0]
            for q in range(n):
                m = _bits(mask[site.id, :, :, q]) & (q < c)[..., None]
                if not m.any():
                    continue
                raw = addr[site.id, :, :, q, :]
                shared = bool(np.any((raw[m] & np.uint64(SHARED_FLAG)) != 0))
                a = (raw & np.uint64(SHARED_FLAG - 1)).astype(np.int64)
                like = statics[min(q * len(kinds), len(statics) - 1)]
                for k in kinds:
                    measured.append(dataclasses.replace(
                        first, space="shared" if shared else "global", kind=k, address=a, mask=m,
                        loop_iter=like.loop_iter, loop_vars=like.loop_vars))
        elif kind == "branch":
            sbs = static_branch.get((line, col))
            if not sbs:
                continue
            traced.add((line, col))
            for q in range(n):
                m = _bits(mask[site.id, :, :, q]) & (q < c)[..., None]
                if not m.any():
                    continue
                cond = _bits(ballot[site.id, :, :, q]) & m
                br = sbs[min(q, len(sbs) - 1)]
                measured.append(dataclasses.replace(br, cond=cond, mask=m))
        elif kind == "collective":
            # The lanes that arrived, per warp and occurrence; which lanes are still live (not
            # returned) stays the evaluator's. A warp that never arrives records nothing: mask 0.
            bars = static_barrier.get((line, col))
            if not bars or len({b.via for b in bars}) > 1:
                measured.extend(bars or ())
                continue  # a helper called from several places: its records would mix the calls
            traced.add((line, col))
            arrivals = arrive[site.id].astype(np.int64)  # (2, W, 32): per-lane arrival counts
            for q in range(int(min(arrivals.max(initial=0), maxseq))):
                m = arrivals > q
                if not m.any():
                    continue
                like = bars[min(q, len(bars) - 1)]
                measured.append(dataclasses.replace(like, mask=m))
        elif kind == "switch":
            sbs = static_branch.get((line, col))
            if not sbs:
                continue
            traced.add((line, col))
            values, default = plan.switch_arms[(line, col, kind)]
            for q in range(n):
                m = _bits(mask[site.id, :, :, q]) & (q < c)[..., None]
                if not m.any():
                    continue
                v = addr[site.id, :, :, q, :].astype(np.int64)
                arms = np.full(v.shape, default, dtype=np.int64)
                for val, arm in values.items():
                    arms[v == val] = arm
                arms[~m] = -1
                sw = sbs[min(q, len(sbs) - 1)]
                measured.append(dataclasses.replace(sw, cond=(arms >= 0) & m, mask=m, arms=arms))
        else:
            sls = static_loop.get((line, col))
            if not sls:
                continue
            traced.add((line, col))
            for i, (trips, entry) in enumerate(_loop_entries(mask[site.id], ballot[site.id], c)):
                lp = sls[min(i, len(sls) - 1)]
                measured.append(dataclasses.replace(lp, trips=trips, mask=entry, truncated=False))
    values = run.spec.get("values", {})
    defines = tuple(sorted((k, int(v)) for k, v in values.items() if isinstance(v, (int, np.integer))))
    run.measured = dataclasses.replace(kr, events=tuple(measured), assumed=(), defines=defines, notes=())
    run.traced_spans = traced
    for rule in KERNEL_RULES:
        assert rule.check is not None
        try:
            run.static_keys.update((d.line, d.column, d.code) for d in rule.check(kr) if _reported_from(kr, d))
            run.measured_diags.extend(rule.check(run.measured))
        except Exception as exc:  # noqa: BLE001 (a rule that cannot digest measured events: its findings stay not-run)
            run.rule_errors[rule.code] = f"{type(exc).__name__}: {exc}"


def _reported_from(kr: KernelResult, d: Diagnostic) -> bool:
    """Whether the engine can report `d` from this evaluation (engine.combine): a re-evaluation of the
    regions the first samples made dead reports only findings inside those regions, and one at an odd
    offset only KL103s. Its other findings hold for samples (`in2_rows = 1`, chosen to reach a dead
    branch) that no reported finding was predicted under, so they neither predict nor judge anything."""
    if kr.regions:
        return resample.in_regions(d.line, {key: frozenset() for key in kr.regions})
    if kr.odd_offset is not None:
        return d.code == "KL103"
    return True


def _loop_entries(mask: np.ndarray, ballot: np.ndarray, count: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split each warp's condition records into loop entries: per entry (trips, entry mask), (2, W, 32).

    A record holds the lanes that evaluated the condition together and those for which it held.
    An entry ends when a lane that already left (its condition was false) evaluates it again: the
    loop was entered anew (an inner loop inside an outer one).
    """
    S, W = count.shape
    per_warp: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
    longest = 0
    for s in range(S):
        for w in range(W):
            n = int(min(count[s, w], mask.shape[-1]))
            entries: list[tuple[np.ndarray, np.ndarray]] = []
            state = np.zeros(32, dtype=np.int8)  # 0 outside, 1 iterating, 2 left
            trips = np.zeros(32, dtype=np.int64)
            entry = np.zeros(32, dtype=bool)
            for q in range(n):
                m = _bits(mask[s, w, q])
                b = _bits(ballot[s, w, q]) & m
                if entry.any() and np.any(m & (state == 2)):
                    entries.append((trips, entry))
                    state = np.zeros(32, dtype=np.int8)
                    trips = np.zeros(32, dtype=np.int64)
                    entry = np.zeros(32, dtype=bool)
                entry |= m & (state == 0)
                trips += b
                state = np.where(m, np.where(b, 1, 2), state).astype(np.int8)
            if entry.any():
                entries.append((trips, entry))
            per_warp[(s, w)] = entries
            longest = max(longest, len(entries))
    out = []
    for i in range(longest):
        trips_a = np.zeros((S, W, 32), dtype=np.int64)
        mask_a = np.zeros((S, W, 32), dtype=bool)
        for (s, w), entries in per_warp.items():
            if i < len(entries):
                trips_a[s, w], mask_a[s, w] = entries[i]
        out.append((trips_a, mask_a))
    return out


def site_summary(measured: KernelResult, line: int, column: int) -> dict[str, Any]:
    """Measured numbers for one site, whatever the rules said: sectors, banks, divergence."""
    from kernlint.checks.coalescing import site_costs

    out: dict[str, Any] = {}
    for kind in ("load", "store"):
        for cost in site_costs(measured, kind):
            if (cost.first.span.line, cost.first.span.column) == (line, column):
                out.update({"measured_sectors": cost.sectors, "measured_ideal_sectors": cost.ideal,
                            "measured_ratio": round(cost.ratio, 3), "measured_requests": cost.requests,
                            "measured_active_lanes": cost.active_lanes})
                return out
    accesses = [e for e in measured.events if isinstance(e, ev.MemoryAccess) and e.space == "shared"
                and (e.span.line, e.span.column) == (line, column)]
    if accesses:
        out.update(_shared_summary(accesses))
        return out
    branches = [e for e in measured.events if isinstance(e, ev.Branch)
                and (e.span.line, e.span.column) == (line, column)]
    if branches:
        div = 0
        total = 0
        for b in branches:
            m = b.mask
            live = m.any(axis=-1)
            if b.arms is not None:  # a switch: lanes of one warp in different cases
                big = np.iinfo(np.int64).max
                lo = np.where(m, b.arms, big).min(axis=-1)
                hi = np.where(m, b.arms, -big).max(axis=-1)
                div += int(((lo != hi) & live).sum())
            else:
                taken = (b.cond & m).any(axis=-1)
                not_taken = (~b.cond & m).any(axis=-1)
                div += int((taken & not_taken & live).sum())
            total += int(live.sum())
        out.update({"measured_divergent_requests": div, "measured_requests": total})
    return out


def site_totals(measured: KernelResult, line: int, column: int, sample: int | None = None) -> dict[str, Any]:
    """Totals over every traced request at a site, per access kind: global sectors (and ideal) or shared
    wavefronts (and ideal). These are what Nsight Compute counts per instruction (`--confirm=ncu`),
    when only the sampled blocks run and no site was reached more than MAXSEQ times per warp."""
    from kernlint.metrics import global_sectors, shared_wavefronts

    out: dict[str, Any] = {}
    for e in measured.events:
        if not isinstance(e, ev.MemoryAccess) or (e.span.line, e.span.column) != (line, column):
            continue
        live = e.mask.any(axis=-1)
        if sample is not None and live.ndim >= 1 and live.shape[0] > sample:
            keep = np.zeros(live.shape, dtype=bool)
            keep[sample] = True
            live = live & keep
        if e.space == "global":
            sec, ideal = global_sectors(e.address, e.mask, e.width)
            key = f"measured_{e.kind}_sectors_total"
            out[key] = out.get(key, 0) + int(sec[live].sum())
            out[key.replace("_total", "_ideal_total")] = out.get(key.replace("_total", "_ideal_total"), 0) + \
                int(ideal[live].sum())
        elif e.space == "shared":
            _ways, wf, idl = shared_wavefronts(e.address, e.mask, e.width)
            key = f"measured_{e.kind}_wavefronts_total"
            out[key] = out.get(key, 0) + int(wf[live].sum())
            out[key.replace("_total", "_ideal_total")] = out.get(key.replace("_total", "_ideal_total"), 0) + \
                int(idl[live].sum())
    return out


def _shared_summary(accesses: list[ev.MemoryAccess]) -> dict[str, Any]:
    """Worst bank-conflict degree and wavefronts over the measured requests.

    The same model as KL201 (`metrics.shared_wavefronts`: 8-byte accesses in two half-warp phases,
    16-byte in four quarter-warp phases), so measured and predicted numbers compare like for like.
    """
    from kernlint.metrics import shared_wavefronts

    worst = 0
    total = 0
    wavefronts = 0
    ideal = 0
    for e in accesses:
        ways, wf, idl = shared_wavefronts(e.address, e.mask, e.width)
        live = e.mask.any(axis=-1)
        total += int(live.sum())
        if live.any():
            worst = max(worst, int(ways[live].max()))
            wavefronts += int(wf[live].sum())
            ideal += int(idl[live].sum())
    return {"measured_bank_conflict_degree": worst, "measured_requests": total,
            "measured_wavefronts": wavefronts, "measured_ideal_wavefronts": ideal}


# --- verdicts ----------------------------------------------------------------------------------------


def apply_results(diagnostics: list[Diagnostic], plans: list[FilePlan], results: list[Any],
                  notes: list[str]) -> list[Diagnostic]:
    """Set `confirmation` and `measured_*` metrics on each finding; add found-by-confirm ones."""
    from kernlint.suppress import parse_suppressions

    by_path = {p.path: p for p in plans}
    out: list[Diagnostic] = []
    for d in diagnostics:
        plan = by_path.get(d.path)
        if not _confirmable(d):
            out.append(d)
            continue
        if plan is None or plan.instrumented is None:
            why = plan.problem if plan else "file not analysed"
            out.append(_mark(d, "not-run", {"confirm_not_run": "no-launch"}, f"not run on a GPU: {why}"))
            continue
        if d.code.startswith("KL4"):
            out.append(_occupancy_verdict(d, plan))
            continue
        out.append(_verdict(d, plan))
    # Found by confirmation: a rule fires on measured events at a traced site, statically silent.
    static_all: set[tuple[str, int, int, str]] = set()
    for r in results:
        static_all.update((r.path, d.line, d.column, d.code) for d in r.diagnostics)
    static_all.update((d.path, d.line, d.column, d.code) for d in diagnostics)
    # A finding grouped by root cause predicted its related sites too (kernlint/checks/grouping.py).
    for d in [*diagnostics, *(x for r in results for x in r.diagnostics)]:
        for rel in (d.metrics or {}).get("related_locations") or ():
            if isinstance(rel, dict) and "line" in rel and "column" in rel:
                static_all.add((d.path, int(rel["line"]), int(rel["column"]), d.code))
    added: set[tuple[str, int, int, str]] = set()
    for plan in plans:
        sup = parse_suppressions(plan.text) if plan.runs else ()
        for run in plan.runs:
            for md in run.measured_diags:
                key = (plan.path, md.line, md.column, md.code)
                if key in static_all or key in added or (md.line, md.column) not in run.traced_spans:
                    continue
                if (md.line, md.column, md.code) in run.static_keys:
                    continue  # the static rules predict it for this very evaluation (the engine left it out)
                if run.result.odd_offset is not None or run.result.regions:
                    continue  # a partial re-evaluation (an odd offset, re-sampled regions): run to judge the
                    # findings it adds, its other measurements are not comparable with what the engine reports
                if any(s.covers(md) for s in sup) or not _agrees_across_guesses(plan, run, md):
                    continue
                if run.data_dependent or run.refit or run.hung:
                    continue  # zeroed inputs decide some addresses or branches, the sizes are not the
                    # static ones, or the trace stops at a hang: no claim of its own
                added.add(key)
                summary = {f"measured_{k}": v for k, v in md.metrics.items() if _numeric(v)}
                if run.measured is not None:
                    summary.update(site_totals(run.measured, md.line, md.column))
                summary["measured_trace_complete"] = (md.line, md.column) not in run.truncated_spans
                summary["confirm_run"] = run.id
                out.append(dataclasses.replace(
                    md, confirmation="found-by-confirm", metrics=summary,
                    notes=(*md.notes, (f"measured on {run.device or 'the GPU'} with {_launch_text(run)}; "
                                       "the static analysis did not predict it"))))
    # One line per kernel that could not be run (so the user knows which findings stay unconfirmed).
    for plan in plans:
        if plan.problem:
            notes.append(f"{plan.path}: --confirm not run: {plan.problem}")
        if plan.instrumented is not None and plan.instrumented.skipped:
            for site, why in plan.instrumented.skipped[:5]:
                notes.append(f"{plan.path}:{site.span.line}:{site.span.column}: not traced: {why}")
        for run in plan.runs:
            if run.status == "compile-error":
                notes.append(f"{plan.path}: {run.name_expr}: rejected by the GPU compiler: {run.reason[:300]}")
            elif run.status in ("not-run", "error"):
                notes.append(f"{plan.path}: {run.name_expr}: not run on the GPU: {run.reason[:300]}")
    return out


def _agrees_across_guesses(plan: FilePlan, run: KernelRun, md: Diagnostic) -> bool:
    """The engine's rule for guessed launch shapes, applied to measurements.

    When every shape of a kernel is a guess (the default 2-D shapes), the static analysis keeps a
    finding only if all shapes produce it (`engine.combine`); a measured finding is held to the
    same standard, so a guess can never be the only reason for a found-by-confirm either.
    """

    runs = [r for r in plan.runs if r.result.kernel.name == run.result.kernel.name]
    if len(runs) < 2 or not all(r.result.shape.guess for r in runs):
        return True
    key = (md.line, md.column, md.code)
    return all(r.status == "ok" and any((m.line, m.column, m.code) == key for m in r.measured_diags)
               for r in runs)


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float, bool, np.integer, np.floating))


def _launch_text(run: KernelRun) -> str:
    assert run.spec is not None
    b, g = run.spec["block"], run.spec["grid"]
    vals = ", ".join(f"{k}={v}" for k, v in run.spec.get("values", {}).items() if not isinstance(v, str))
    text = f"block ({b[0]}, {b[1]}, {b[2]}), grid ({g[0]}, {g[1]}, {g[2]})"
    return text + (f", {vals}" if vals else "")


_SHOWN = ("measured_sectors", "measured_ideal_sectors", "measured_ratio", "measured_ways", "measured_wavefronts",
          "measured_ideal_wavefronts", "measured_bank_conflict_degree", "measured_warps_split",
          "measured_divergent_requests", "measured_min_trips", "measured_max_trips", "measured_idle_fraction")


# "`n = sizes[b]`, loaded at line 12 ..." / "a pointer loaded at line 71 ...": eval/uniform_data.py's phrases.
_LOADED = re.compile(r"\bloaded at line \d+")


def _verdict(d: Diagnostic, plan: FilePlan) -> Diagnostic:
    runs = [r for r in plan.runs if r.result.kernel.name == d.kernel]
    if not runs:
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"}, "not run on a GPU: no launch shape for this kernel")
    lane_data = any("data-dependent branch" in a for a in d.assumptions)
    loaded = any(_LOADED.search(a) for a in d.assumptions)
    if lane_data or (loaded and not all(r.seeded for r in runs)):
        # (the phrases of result.assumptions and eval/uniform_data.py: a branch decided by lane-varying
        # loaded data, an address computed from a value or a pointer loaded from memory.) A uniform
        # load is reproduced when the run seeded it (confirm/seeding.py); lane-varying data never is.
        why = next((r.unseeded for r in runs if r.unseeded), "") if not lane_data else ""
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     "not judged on a GPU: it depends on values loaded from memory (a branch or a stride), and "
                     "the synthesized inputs are zeros" + (f" ({why[:200]})" if why else ""))
    ok = [r for r in runs if r.status == "ok" and r.measured is not None]
    if not ok:
        failed = next((r for r in runs if r.reason), runs[0])
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed)},
                     f"not run on a GPU: {(failed.reason or 'not run')[:300]}")
    key = (d.line, d.column, d.code)
    relevant = [r for r in ok if key in r.static_keys]
    if not relevant and not any(r.refit for r in ok) and any((d.line, d.column) in r.traced_spans for r in ok):
        # No run was made under the shape and samples that predict it (a run at other values would
        # judge another pattern: an odd offset's misalignment against an aligned launch).
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"},
                     "not run on a GPU: no launch ran with the shape and sampled values this finding was "
                     "predicted under")
    # The engine reports a finding of the first evaluation over the same one from a re-evaluation
    # (engine.combine: regions and odd offsets add only what the first samples did not show).
    relevant = [r for r in relevant if not r.result.regions and r.result.odd_offset is None] or relevant or ok
    traced = [r for r in relevant if (d.line, d.column) in r.traced_spans]
    # A run at refit sizes judges a finding only where the static analysis at those sizes predicts it
    # too (a stride of 4096 floats and one of 64 are different patterns).
    refit = [r for r in traced if r.refit and key not in r.static_keys]
    traced = [r for r in traced if r not in refit]
    if not traced and refit:
        return _mark(d, "not-run", {"confirm_not_run": "size" if "fit the buffers" in refit[0].refit else "fault"},
                     f"not run on a GPU at the static sizes: {refit[0].refit}; at those sizes the static analysis "
                     "does not predict this finding, so the run cannot judge it")
    loaded_branches = sorted({st.key[0] for r in relevant for st in r.result.coverage
                              if not st.evaluated and st.why[0] == "loaded" and st.key[-1] == "branch"})
    if not traced and loaded_branches:
        # Control flow decided by loaded values: on zeroed inputs the site may never run.
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     f"not run on a GPU: the site did not execute on zeroed inputs, and branches of the kernel "
                     f"depend on loaded data (line {', '.join(map(str, loaded_branches[:3]))})")
    if not traced and any(r.data_dependent for r in relevant):
        why = next(r.data_dependent for r in relevant if r.data_dependent)
        return _mark(d, "not-run", {"confirm_not_run": "data-dependent"},
                     f"not run on a GPU: the site did not execute on zeroed inputs; {why[:200]}")
    if not traced and any(r.hung for r in relevant):
        return _mark(d, "not-run", {"confirm_not_run": "fault"}, "not run on a GPU: the kernel hung before this "
                     "site ran (the trace stops at the hang)")
    if not traced:
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"}, "not run on a GPU: this site was not traced "
                     "(the rewrite could not place a probe there, or it never executed)")
    errors = [r.rule_errors[d.code] for r in traced if d.code in r.rule_errors]
    if errors:
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"}, "not run on a GPU: the rule could not evaluate the measured events "
                     f"({errors[0][:200]})")
    verdicts = []
    measured: dict[str, Any] = {}
    for r in traced:
        hit = next((m for m in r.measured_diags if (m.line, m.column, m.code) == key), None)
        verdicts.append(hit is not None)
        assert r.measured is not None
        summary = site_summary(r.measured, d.line, d.column)
        if hit is not None:
            # The rule's own numbers on the measured events are the comparable ones; the generic
            # summary only adds what the rule does not report.
            ruled = {f"measured_{k}": v for k, v in hit.metrics.items() if _numeric(v)}
            if any(k in ruled for k in ("measured_ways", "measured_wavefronts")):
                summary.pop("measured_bank_conflict_degree", None)
            summary.update(ruled)
        if not measured:
            measured = summary
    run = traced[0]
    assert run.measured is not None
    if run.hung and d.code not in ("KL303", "KL304"):
        return _mark(d, "not-run", {"confirm_not_run": "fault"},
                     "not run on a GPU: the kernel hung; only its barriers and collectives were judged from the "
                     "trace recorded up to the hang")
    measured.update(site_totals(run.measured, d.line, d.column))
    measured["measured_trace_complete"] = (d.line, d.column) not in run.truncated_spans
    measured["confirm_run"] = run.id
    status = "confirmed" if all(verdicts) else "refuted"
    if status == "refuted" and any((d.line, d.column) in r.truncated_spans for r in traced):
        # The trace holds a warp's first requests at this site only (a loop whose early iterations are
        # aligned, `data[i * M + j2]` from j2 = j1): silence in a prefix is no evidence against it.
        return _mark(d, "not-run", {"confirm_not_run": "not-traced"},
                     f"not judged on a GPU: the trace kept only the first {run.spec.get('maxseq', MAXSEQ) if run.spec else MAXSEQ} "
                     "requests per warp at this site, and they do not show the pattern; the later ones were not "
                     "recorded")
    shown = ", ".join(f"{k.removeprefix('measured_')} {v}" for k, v in measured.items()
                      if k in _SHOWN)
    # The reporters list every measured_* number; this note says where and how it was measured.
    note = f"measured on {run.device or 'the GPU'} with {_launch_text(run)}" + (f": {shown}" if shown else "")
    if run.refit:
        note += f" ({run.refit})"
    if run.hung:
        note += " (the kernel hung there, as a barrier or collective that not all lanes reach may: measured up to the hang)"
    if run.redirected:
        note += (f" ({run.redirected} accesses fell outside the synthesized buffers and went to a scratch "
                 "buffer; their addresses were still traced)")
    return _mark(d, status, measured, note)


def _occupancy_verdict(d: Diagnostic, plan: FilePlan) -> Diagnostic:
    """KL4xx from the compiled kernel: attributes, the occupancy query, the launch itself."""
    runs = [r for r in plan.runs if r.result.kernel.name == d.kernel]
    if d.code == "KL405":
        # The static limit is enforced by ptxas/the launch: a rejection confirms, a clean run refutes.
        rejected = next((r for r in runs if r.status in ("compile-error", "error", "fault")
                         and "shared" in r.reason.lower()), None)
        if rejected is not None:
            return _mark(d, "confirmed", {"measured_rejected": True},
                         f"confirmed: the GPU toolchain rejects the kernel: {rejected.reason[:200]}")
        ran = next((r for r in runs if r.status == "ok"), None)
        if ran is not None:
            return _mark(d, "refuted", {"measured_shared_bytes": ran.attributes.get("shared_size_bytes")},
                         f"refuted: the kernel compiled and ran on {ran.device}")
        failed = next((r for r in runs if r.reason), None)
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed) if failed else "no-launch"},
                     "not run on a GPU: " + (failed.reason if failed else "no run"))
    if d.code == "KL404":
        block = d.metrics.get("block_size")
        for r in runs:
            if r.status != "ok" or r.measured is None or r.result.shape.threads != block:
                continue
            lanes = _last_warp_lanes(r.measured)
            if lanes is None:
                continue
            expected = int(block) % 32 if block else 0
            status = "confirmed" if lanes == expected else "refuted"
            return _mark(d, status, {"measured_last_warp_lanes": lanes},
                         f"{status} on {r.device}: the last warp of a {block}-thread block ran {lanes} active lanes")
        return _mark(d, "not-run", {"confirm_not_run": "no-launch"}, "not run on a GPU: no traced run with this block size")
    ok = [r for r in runs if r.status == "ok" and r.attributes.get("num_regs") is not None]
    if not ok:
        failed = next((r for r in runs if r.reason), None)
        why = failed.reason if failed else "no compiled kernel attributes"
        return _mark(d, "not-run", {"confirm_not_run": _run_category(failed) if failed else "no-launch"},
                     f"not run on a GPU: {why[:200]}")
    run = ok[0]
    a = run.attributes
    measured: dict[str, Any] = {"measured_registers": a["num_regs"], "measured_local_bytes": a.get("local_size_bytes"),
                                "measured_shared_bytes": a.get("shared_size_bytes")}
    threads = run.result.shape.threads
    occ = None
    if a.get("active_blocks") is not None and a.get("max_threads_per_sm"):
        occ = a["active_blocks"] * threads / a["max_threads_per_sm"]
        measured["measured_active_blocks"] = a["active_blocks"]
        measured["measured_occupancy"] = round(occ, 4)
    if d.code == "KL402":
        status = "confirmed" if (a.get("local_size_bytes") or 0) > 0 else "refuted"
    elif d.code == "KL401":
        threshold = float(d.metrics.get("threshold") or 0.5)
        status = "not-run" if occ is None else ("confirmed" if occ < threshold else "refuted")
    elif d.code == "KL403":
        # A cliff is a claim about the register count: confirmed when the compiled kernel has it.
        status = "confirmed" if d.metrics.get("registers") in (None, a["num_regs"]) else "refuted"
    else:
        status = "not-run"
    if status == "not-run":
        measured["confirm_not_run"] = "not-traced"  # compiled, but the occupancy query gave nothing
    arch_note = ""
    if d.metrics.get("arch") and run.device and f"({d.metrics['arch']})" not in run.device:
        arch_note = f" (predicted for {d.metrics['arch']}, measured on {run.device})"
    text = (f"{status} from the compiled kernel on {run.device or 'the GPU'}: {a['num_regs']} registers, "
            f"{a.get('local_size_bytes', 0)} B local" + (f", occupancy {occ:.0%}" if occ is not None else "")
            + arch_note)
    return _mark(d, status, measured, text)


def _last_warp_lanes(measured: KernelResult) -> int | None:
    """Most active lanes the last warp of a block showed at any traced site."""
    best: int | None = None
    for e in measured.events:
        if isinstance(e, (ev.MemoryAccess, ev.Branch)) and e.mask.ndim == 3:
            lanes = int(e.mask[:, -1, :].sum(axis=-1).max())
            best = lanes if best is None else max(best, lanes)
    return best
