"""Planning: which kernels of a file --confirm runs, in which launch shapes, with which synthesized arguments
and buffers, and which findings cannot be run (and why).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections import defaultdict
from typing import Any, Callable, Collection, Mapping

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.frontend import device_source
from kernlint.confirm import seeding
from kernlint.confirm.instrument import Instrumented, Site, walk
from kernlint.confirm.instrument import instrument as instrument_source
from kernlint.confirm.model import (
    MAXSEQ,
    FilePlan,
    KernelRun,
)
from kernlint.eval import events as ev
from kernlint.eval.result import KernelResult
from kernlint.ir.function_table import key_file

MAXSEQ_MAX = 256  # at most: an unrolled loop of 136 requests is then recorded whole (totals comparable with ncu)


TRACE_BUDGET = 256 << 20  # bytes of trace arrays per launch that decide how many records fit


def _maxseq(nsites: int, wpb: int) -> int:
    """Records per (site, warp) for a kernel: as many as the trace budget allows, between the bounds."""
    per_record = max(1, nsites) * 2 * max(1, wpb) * (32 * 8 + 8)
    return int(max(MAXSEQ, min(MAXSEQ_MAX, TRACE_BUDGET // per_record // 64 * 64)))


GUARD_BYTES = 1 << 16  # zeroed bytes before and after every synthesized buffer


MAX_BUFFER_BYTES = 1 << 30


MAX_SHAPES_PER_KERNEL = 3


_DTYPES_BY_NAME = {
    "float": "float32", "double": "float64", "int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
    "long": "int64", "long long": "int64", "unsigned long": "uint64", "unsigned long long": "uint64",
    "short": "int16", "unsigned short": "uint16", "char": "int8", "signed char": "int8",
    "unsigned char": "uint8", "bool": "bool", "size_t": "uint64", "int64_t": "int64", "int32_t": "int32",
    "uint32_t": "uint32", "uint64_t": "uint64", "half": "float16", "__half": "float16",
}


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
    another function (`__global__ void remainder(...)` beside the math API's `remainder(double, double)`,
    another kernel or a `__device__` function of the file or its headers) is ambiguous as a bare name
    ("cannot determine which instance of overloaded function"); a cast to its own pointer type picks it
    (NVRTC takes any constant expression denoting the kernel's address)."""
    if "<" in name_expr or not all(p.spelling for p in fn.params):
        return name_expr
    same = len(tu.functions.named(fn.name))  # (the kernels among them; lowers only functions of that name)
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
                    spec = _buffer(extents.get(root))
                    if spec["bytes"] + spec["front"] > MAX_BUFFER_BYTES:
                        return None, _size_message(root, extents.get(root), spec, kr), {}
                    fields.append({"offset": f.offset, "dtype": "uint64", "ptr": spec})
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


def _data_dependent(fn: ir.Function, kr: KernelResult, functions: Mapping[str, ir.Function],
                    lines_of: Callable[[ir.Function], list[str]], own: Collection[str]) -> str:
    """Why running `fn` on zeroed inputs would not measure what it does, or "" when it is safe.

    Addresses computed from loaded values (gathers through index arrays, pointer chasing) read
    whatever the zeroed buffers hold, so the measured pattern is not the real one. An access the
    evaluation reached is judged by its events; those are at lines of this file, so only a function of
    this file (its key in `own`) has accesses they can name.
    """
    seen_spans = {(e.span.line, e.span.column) for e in kr.events if isinstance(e, ev.MemoryAccess)}
    for f in _callees(fn, functions):
        tainted = _tainted_locals(f)
        here = f.key in own
        for n in walk(f.body):
            if not _is_access(n):
                continue
            line, column = n.span.line, n.span.column  # type: ignore[attr-defined]
            if here and (line, column) in seen_spans:
                continue
            inner = n.index if isinstance(n, ir.Index) else (n.base if isinstance(n, ir.Member) else n.operand)  # type: ignore[attr-defined]
            if any(_is_access(m) for m in walk(inner)) or any(
                    isinstance(m, ir.Ref) and m.name in tainted for m in walk(inner)):
                lines = lines_of(f)
                code = lines[line - 1].strip()[:60] if 0 < line <= len(lines) else ""
                where = f"line {line}" if here else f"{f.name}() at line {line} of {os.path.basename(key_file(f.key))}"
                return (f"addresses depend on loaded data ({where}: {code}); "
                        "zeroed inputs would not measure the real pattern")
    return ""


_TEXTURE_REF = re.compile(r"\b(?:texture|surface)\s*<[^;{}()]*>\s*([A-Za-z_]\w*)\s*[;,=]")


def _texture_references(fn: ir.Function, functions: Mapping[str, ir.Function], text: str,
                        lines_of: Callable[[ir.Function], list[str]]) -> list[str]:
    """Texture/surface references (`texture<float, 1> t;`) the kernel or its callees name.

    CUDA 12 removed texture and surface references; NVRTC rejects every use, so such a kernel can
    only be reported as not run (one reason), and its body is left out of the module the others use.
    """
    declared = set(_TEXTURE_REF.findall(text))
    if not declared:
        return []
    names: set[str] = set()
    for f in _callees(fn, functions):
        names.update(n.name for n in walk(f.body) if isinstance(n, ir.Ref))
        # (a texture reference is no declaration the front end types: it may be no Ref in the IR)
        names.update(re.findall(r"[A-Za-z_]\w*", _function_text(f, lines_of(f))))
    return sorted(declared & names)


def _callees(fn: ir.Function, functions: Mapping[str, ir.Function]) -> list[ir.Function]:
    """`fn` and the functions it calls, transitively (at most 16), asked of `functions` by key."""
    bodies: list[ir.Function] = [fn]
    keys = {fn.key}
    queue_: list[ir.Function] = [fn]
    while queue_ and len(bodies) <= 16:
        f = queue_.pop()
        for n in walk(f.body):
            if isinstance(n, ir.Call) and n.target not in keys and n.target in functions:
                keys.add(n.target)
                bodies.append(functions[n.target])
                queue_.append(bodies[-1])
    return bodies


def _file_lines(f: ir.Function, own: Collection[str], src_lines: list[str], read: dict[str, list[str]]) -> list[str]:
    """The lines of the file `f` is defined in: `src_lines` for one of this file's functions (its key in
    `own`), else the file its key names, read once into `read` (no lines when it cannot be read)."""
    if f.key in own:
        return src_lines
    name = key_file(f.key)
    if name not in read:
        try:
            with open(name, encoding="utf-8", errors="replace") as fh:
                read[name] = fh.read().splitlines()
        except OSError:
            read[name] = []
    return read[name]


def _function_text(f: ir.Function, lines: list[str]) -> str:
    """`f`'s source from its first line to its body's last, out of `lines` (its file's)."""
    end = (f.body.span.end_line or f.body.span.line) if f.body is not None else f.span.line
    return "\n".join(lines[max(0, f.span.line - 1):end])


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


def _sites_in_helpers(sites: list[Site], own: tuple[ir.Function, ...]) -> list[Site]:
    """Move access sites that the evaluator reports at a helper's call into the helper's body.

    An access inside an inlined `__device__` function is reported at the call (`col(a, t, ld)`),
    which is not an lvalue. When the helper is one of this file's functions `own` (a header's is
    inlined after the file is instrumented: its lines are no lines of the file), has exactly one
    memory access and is called from one place in the file, that access is traced under the call's
    site id; otherwise the site stays where it is and is reported as not traced.
    """
    by_key = {f.key: f for f in own}
    calls: dict[tuple[int, int], str] = {}
    call_count: dict[str, int] = defaultdict(int)
    for f in own:
        for n in walk(f.body):
            if isinstance(n, ir.Call) and n.target in by_key:
                calls[(n.span.line, n.span.column)] = n.target
                call_count[n.target] += 1
    out = []
    for site in sites:
        target = calls.get((site.span.line, site.span.column)) if site.kind == "access" else None
        if target is not None and call_count[target] == 1:
            accesses = [n for n in walk(by_key[target].body) if _is_access(n)]
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
    """Whether `f`, one of this file's functions, has its name on one of its lines up to its body's `{`:
    not so for a function a macro makes (its spans are the macro's use). The declaration may start lines
    before the name: `template <uint dir>` / `__global__ void` on lines of their own."""
    last = f.body.span.line if f.body is not None else f.span.line
    if not 0 < f.span.line <= last <= len(src_lines) or last - f.span.line > 20:
        return False
    return any(f.name in src_lines[k - 1] for k in range(f.span.line, last + 1))


def _guards_and_entries(own: tuple[ir.Function, ...], src_lines: list[str],
                        traced: set[tuple[int, int]]) -> tuple[tuple[ir.Span, ...], tuple[ir.Span, ...]]:
    """Spans of every other memory access in this file's device functions `own` (to guard), and the
    bodies of this file's kernels (to start with the block filter)."""
    guards: list[ir.Span] = []
    entries: list[ir.Span] = []
    seen: set[tuple[int, int]] = set(traced)
    for f in own:
        if f.body is None or not _declared_here(f, src_lines):
            continue  # (a function a macro makes: its spans are the macro's use)
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
        from kernlint.model.occupancy import DEFAULT_ARCH

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
    # By key, lowered when first asked for (function_table.py): the kernels' callees. The file's own
    # functions (its kernels among them) are the only ones whose spans are lines of `text`: the events,
    # sites and guards are all in this file's lines, so a header's `if`, call or access at the same
    # line and column must not be taken for the file's.
    functions = tu.functions
    own = functions.in_file()
    src_lines = text.splitlines()
    own_keys = frozenset(f.key for f in own)
    lines_of = functools.partial(_file_lines, own=own_keys, src_lines=src_lines, read={})  # a callee's own file
    ifs: dict[tuple[int, int], ir.If] = {}
    switches: dict[tuple[int, int], ir.Switch] = {}
    keep_lines: set[int] = set()
    for f in own:
        if f.body is None:
            continue
        # (a function a macro makes, its name on none of its lines, protects none)
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
    sites = _sites_in_helpers(sites, own)
    guards, entries = _guards_and_entries(own, src_lines, {(s.span.line, s.span.column) for s in sites})
    seeds = seeding.seed_sites(krs)
    inst = _with_headers(instrument_source(text, sites, frozenset(keep_lines), filename=os.path.abspath(path),
                                           include_dirs=_include_dirs(options), guards=guards, entries=entries,
                                           seeds=seeds),
                         path, options, includer)
    traced = {s.id for s in inst.sites}
    site_of_span = {k: s for k, s in site_of_span.items() if s.id in traced}
    nvrtc = ["-std=c++17", f"-I{os.path.dirname(os.path.abspath(path)) or '.'}"]
    nvrtc += [f"-I{d}" for d in _include_dirs(options)]
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
        textures = _texture_references(fn, functions, text, lines_of)
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
        run.data_dependent = _data_dependent(fn, kr, functions, lines_of, own_keys)
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
        only_sampled = not any(_GRID_WIDE.search(_function_text(f, lines_of(f))) for f in _callees(fn, functions))
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


def _emptied(plan: FilePlan, empty: Any) -> Instrumented:
    """The plan's instrumented source with the bodies of the kernels `empty(fn)` picks emptied."""
    chars = list(plan.text)
    offs = device_source._line_offsets(plan.text)
    for fn in plan.kernel_fns:
        if not empty(fn) or fn.body is None or fn.template_params:
            continue
        sp = fn.body.span
        a = device_source.offset_of(plan.text, offs, sp.line, sp.column)
        b = device_source.offset_of(plan.text, offs, sp.end_line or sp.line, sp.end_column or sp.column)
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
    head = f'#line 1 "{device_source._escape(name)}"\n'
    block = f'#line 1 "{device_source._escape(includer)}"\n{prefix}\n'
    at = code.find(head)
    return code[:at] + block + code[at:] if at >= 0 else block + head + code


_INCLUDE = re.compile(r'\s*#\s*include\s*["<]([^">]+)[">]')


def _with_headers(inst: Instrumented, path: str, options: Any,
                  includer: tuple[str, str] | None = None) -> Instrumented:
    """Inline the file's own headers, host code removed (see `instrument.inline_user_headers`); a
    fragment gets its includer's text before the `#include` (device code only) in front of it."""
    dirs = _include_dirs(options)
    base = os.path.dirname(os.path.abspath(path))
    name = os.path.abspath(path)
    if includer is not None:
        inc_path, inc_text = includer
        lines = inc_text.splitlines(keepends=True)
        own = os.path.basename(path)
        k = next((i for i, ln in enumerate(lines) if (m := _INCLUDE.match(ln)) and os.path.basename(m.group(1)) == own),
                 len(lines))
        before = "".join(lines[:k])
        used = frozenset(device_source.device_names(inst.device_code))
        pre, _ = device_source.device_only(before, used_elsewhere=used, include_dirs=dirs, roots=False)
        pre = device_source.inline_user_headers(pre, os.path.dirname(inc_path), dirs, inc_path)
        inst = dataclasses.replace(
            inst, code=_with_context(inst.code, pre, inc_path, name),
            device_code=_with_context(inst.device_code, pre, inc_path, name),
            profiled=_with_context(inst.profiled, pre, inc_path, name) if inst.profiled else "")
    code = device_source.inline_user_headers(inst.code, base, dirs, name)
    plain = device_source.inline_user_headers(inst.device_code, base, dirs, name)
    profiled = device_source.inline_user_headers(inst.profiled, base, dirs, name) if inst.profiled else ""
    return dataclasses.replace(inst, code=device_source.with_half_headers(code, name),
                               device_code=device_source.with_half_headers(plain, name),
                               profiled=device_source.with_half_headers(profiled, name) if profiled else "")
