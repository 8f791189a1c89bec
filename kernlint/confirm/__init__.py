"""`--confirm`: run the kernels on a GPU and mark each finding confirmed, refuted or not-run.

May import kernlint.engine and below (the layers: tests/test_layers.py).

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
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from kernlint.confirm.instrument import SHARED_FLAG, Instrumented
from kernlint.confirm.model import (
    MAXSEQ,
    FilePlan,
    KernelRun,
    _bits,
    _confirmable,
    _mark,
)
from kernlint.confirm.plan import (
    _emptied,
    _launch_args,
    _refit,
    _sampled_text,
    plan_file,
)
from kernlint.confirm.verdict import (
    _loop_entries,
    apply_results,
)
from kernlint.base.diagnostics import Diagnostic
from kernlint.eval import events as ev
from kernlint.eval import resample
from kernlint.eval.result import KernelResult

CHILD_TIMEOUT_S = float(os.environ.get("KERNLINT_CONFIRM_TIMEOUT", "120"))  # per kernel, compile included


# --- data ----------------------------------------------------------------------------------------


# --- entry point ---------------------------------------------------------------------------------


def confirm_findings(diagnostics: list[Diagnostic], results: Iterable[Any], sources: dict[str, str], *,
                     mode: str = "trace", options: Any = None) -> tuple[list[Diagnostic], list[str]]:
    """Run the flagged kernels on a GPU; return the diagnostics with `confirmation` set, and notes.

    `results` are `kernlint.engine.lint.LintResult`s, `sources` maps each path to its text. Never raises
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


# --- planning --------------------------------------------------------------------------------------


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


# --- verdicts ----------------------------------------------------------------------------------------


