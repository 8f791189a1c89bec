"""Kernels that call the CUDA device runtime: access and divergence findings weighed against the calls.

A kernel may allocate (`cudaMalloc`, `malloc`, `new`), free (`cudaFree`, `free`, `delete`), create
streams or launch child grids (`child<<<g, b>>>(...)`, dynamic parallelism) from device code. Each such
call costs microseconds (a heap lock, a launch through the device runtime), thousands of times what an
uncoalesced request or an idle lane-slot costs. So:

- where the lanes of a warp make the calls themselves (more than one lane per warp reaches the call:
  `if (i < n) { cudaMalloc(...); child<<<...>>>(...); }`), the runtime calls are where the kernel's
  time goes: its access and divergence warnings (KL101/KL102/KL201/KL301/KL302/KL305) become info,
  with a note naming the call;
- where one lane per warp (or per block) makes them (`if (lane == 0) { ... child<<<...>>>(...); }`),
  only the branch or loop whose region holds the call is info: what the region costs is the call's
  latency, which no remapping of lanes removes; the rest of the kernel is weighed as usual.

The calls are found in the kernel's source text (a device-side launch is not in the IR: clang rejects
it without separate compilation) and the lanes that reach them from the evaluator's branch events
around them (`Branch`: the side the call is on; `DataBranch`: every lane that reaches the condition,
since the data decides).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval.events import Branch, DataBranch
from kernlint.eval.result import KernelResult
from kernlint.base.frozen import frozen

DEMOTED = frozenset({"KL101", "KL102", "KL201", "KL301", "KL302", "KL305"})
REGION_CODES = frozenset({"KL301", "KL302", "KL305"})

# Device-runtime entry points callable from device code (CUDA C++ Programming Guide, "CUDA Dynamic
# Parallelism", device runtime API; "Dynamic Global Memory Allocation and Operations" for malloc/free).
_CALL = re.compile(  # not a member (`pool.free(p)`, `heap->malloc(n)`): a user's allocator is no runtime call
    r"(?<![.\w])(?<!->)(cudaMalloc\w*|cudaFree\w*|cudaMemcpy\w*Async|cudaMemset\w*Async|cudaStreamCreate\w*|cudaStreamDestroy"
    r"|cudaEventCreate\w*|cudaDeviceSynchronize|cudaLaunchDevice\w*|cudaGetParameterBuffer\w*|cudaGraphLaunch"
    r"|malloc|free)\s*\(")
_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;]*>)?\s*<<<")
_NEW = re.compile(r"\bnew\s+[A-Za-z_:]")  # `new T(...)` allocates; placement `new (buf) T` does not
_DELETE = re.compile(r"\bdelete\b")


@frozen
class RuntimeCall:
    line: int
    name: str  # "cudaMalloc", "a child launch of computeBezierLinePositions", "new"


def _strip_comments(lines: Sequence[str]) -> list[str]:
    """The lines with comments and string literals blanked (line numbers kept)."""
    out = []
    in_block = False
    for text in lines:
        if not in_block and not any(c in text for c in "/\"'"):
            out.append(text)  # the common line: nothing to blank (keeps a 40,000-line kernel cheap)
            continue
        buf = []
        i = 0
        while i < len(text):
            if in_block:
                j = text.find("*/", i)
                if j < 0:
                    i = len(text)
                    continue
                in_block, i = False, j + 2
                continue
            c = text[i]
            if text.startswith("//", i):
                break
            if text.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            if c in "\"'":
                j = i + 1
                while j < len(text) and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                buf.append(" ")
                i = j + 1
                continue
            buf.append(c)
            i += 1
        out.append("".join(buf))
    return out


def runtime_calls(fn: ir.Function, source_lines: Sequence[str]) -> list[RuntimeCall]:
    """Device-runtime calls in the body of `fn` (lines of the linted file)."""
    sp = fn.span
    last = sp.end_line or sp.line
    if sp.line < 1 or last > len(source_lines) or fn.name not in " ".join(source_lines[sp.line - 1:sp.line + 2]):
        return []  # the kernel is not in this file's text (a header): nothing to read
    out = []
    for k, text in enumerate(_strip_comments(source_lines[sp.line - 1:last]), start=sp.line):
        if k == sp.line:
            text = text[text.find("{") + 1:] if "{" in text else ""  # the signature is not a call
        for m in _CALL.finditer(text):
            out.append(RuntimeCall(k, m.group(1)))
        for m in _LAUNCH.finditer(text):
            out.append(RuntimeCall(k, f"a child launch of {m.group(1)}"))
        if _NEW.search(text):
            out.append(RuntimeCall(k, "new"))
        if _DELETE.search(text):
            out.append(RuntimeCall(k, "delete"))
    return out


def _inside(line: int, span: ir.Span) -> bool:
    return span.line <= line <= (span.end_line or span.line)


def _ifs(fn: ir.Function) -> dict[tuple[int, int], ir.If]:
    return {(n.span.line, n.span.column): n for n in ir.walk(fn.body) if isinstance(n, ir.If)} if fn.body else {}


def lanes_reaching(result: KernelResult, line: int) -> np.ndarray | None:
    """Most lanes of one warp that reach `line`, per (sample, warp), from the innermost evaluated branch
    around it; None when no evaluation reached it or it is under no branch (every live lane)."""
    ifs = _ifs(result.kernel)
    best: tuple[int, np.ndarray] | None = None
    for e in result.events:
        if not isinstance(e, (Branch, DataBranch)) or getattr(e, "via", ()) or not _inside(line, e.span):
            continue
        size = (e.span.end_line or e.span.line) - e.span.line
        if isinstance(e, DataBranch):
            lanes = np.asarray(e.mask).sum(axis=-1)
        else:
            node = ifs.get((e.span.line, e.span.column))
            if node is None or e.arms is not None:
                continue
            cond = np.broadcast_to(np.asarray(e.cond, dtype=bool), e.mask.shape)
            on_else = node.other is not None and _inside(line, node.other.span)  # type: ignore[attr-defined]
            lanes = (e.mask & (~cond if on_else else cond)).sum(axis=-1)
        if best is None or size < best[0]:
            best = (size, lanes)
        elif size == best[0]:
            best = (size, np.maximum(best[1], lanes))
    return None if best is None else best[1]


def _per_thread(result: KernelResult, call: RuntimeCall) -> bool | None:
    """True: several lanes of a warp make the call; False: at most one lane per warp (an election);
    None: no evaluation reached it."""
    lanes = lanes_reaching(result, call.line)
    if lanes is None:
        return True  # under no branch: every live lane of the evaluated kernel makes it
    if not lanes.any():
        return None
    return bool((lanes >= 2).any())


def _note_per_thread(call: RuntimeCall) -> str:
    return (f"severity info: each thread of the kernel makes a device-runtime call ({call.name} at line {call.line}); "
            f"such a call takes microseconds (a heap lock or a launch through the device runtime), far more than "
            f"this finding costs, so the calls are where the kernel's time goes")


def _note_region(call: RuntimeCall) -> str:
    return (f"severity info: the region holds a device-runtime call ({call.name} at line {call.line}) made by one "
            f"lane: its cost is the call's latency, which no remapping of the lanes removes")


def weigh(diags: Iterable[Diagnostic], results: Sequence[KernelResult]) -> list[Diagnostic]:
    """Demote the warnings of kernels dominated by device-runtime calls (see the module docstring)."""
    diags = list(diags)
    main = [r for r in results if not r.regions and r.odd_offset is None and r.events]
    if not main:
        return diags
    calls = runtime_calls(main[0].kernel, main[0].source_lines)
    if not calls:
        return diags
    per_thread: RuntimeCall | None = None
    elected: list[RuntimeCall] = []
    for c in calls:
        verdicts = {_per_thread(r, c) for r in main} - {None}
        if True in verdicts:
            per_thread = per_thread or c
        elif False in verdicts:
            elected.append(c)
    out = []
    for d in diags:
        if d.severity is not Severity.WARNING or d.code not in DEMOTED:
            out.append(d)
            continue
        note = None
        if per_thread is not None:
            note = _note_per_thread(per_thread)
        elif d.code in REGION_CODES:
            end = d.end_line or d.line
            inside = [c for c in elected if d.line <= c.line <= _region_end(main[0].kernel, d.line, end)]
            if inside:
                note = _note_region(inside[0])
        if note is None:
            out.append(d)
            continue
        notes = list(d.notes)
        at = next((i for i, n in enumerate(notes) if n.startswith("fix:")), len(notes))
        notes.insert(at, note)
        metrics = dict(d.metrics)
        metrics["device_runtime_call"] = {"line": (per_thread or inside[0]).line,  # type: ignore[possibly-undefined]
                                          "call": (per_thread or inside[0]).name}  # type: ignore[possibly-undefined]
        out.append(replace(d, severity=Severity.INFO, notes=tuple(notes), metrics=metrics))
    return out


def _region_end(fn: ir.Function, line: int, end: int) -> int:
    """The last line of the statement (an `if`, a loop) that starts at `line`: a finding's span covers
    only its condition."""
    last = end
    if fn.body is None:
        return last
    for n in ir.walk(fn.body):
        sp = getattr(n, "span", None)
        if isinstance(n, (ir.If, ir.For, ir.While)) and sp is not None and sp.line == line:
            last = max(last, sp.end_line or sp.line)
    return last
