"""The records --confirm keeps per file and kernel (plans, runs) and the small vocabulary its planning,
measuring and verdicts share.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernlint.ir import nodes as ir
from kernlint.confirm.instrument import Instrumented, Site
from kernlint.base.diagnostics import Diagnostic
from kernlint.eval.result import KernelResult

MAXSEQ = 64  # records per (site, warp) at least; the evaluator itself stops at 48 events per site


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
    "library-model": "the access is inside kernlint's model of a library whose header was not found (CUB): the GPU "
                     "build compiles the real library, whose accesses are not traced",
    "async-copy": "the access is an asynchronous copy (cp.async, __pipeline_memcpy_async, cuda::memcpy_async): the "
                  "instrumentation traces a load or a store it can wrap in the source, and a copy is both at once, "
                  "made by a call or an asm statement it does not rewrite",
    "inline-asm": "the access is an inline-PTX load or store (an asm statement): the instrumentation traces a load "
                  "or a store it can wrap in the source, and it does not rewrite asm statements",
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


def _bits(words: np.ndarray) -> np.ndarray:
    """(..., ) uint32 -> (..., 32) bool."""
    return ((words[..., None].astype(np.uint64) >> np.arange(32, dtype=np.uint64)) & 1).astype(bool)


_SHOWN = ("measured_sectors", "measured_ideal_sectors", "measured_ratio", "measured_ways", "measured_wavefronts",
          "measured_ideal_wavefronts", "measured_bank_conflict_degree", "measured_warps_split",
          "measured_divergent_requests", "measured_min_trips", "measured_max_trips", "measured_idle_fraction")


# "`n = sizes[b]`, loaded at line 12 ..." / "a pointer loaded at line 71 ...": eval/uniform_data.py's phrases.
_LOADED = re.compile(r"\bloaded at line \d+")
