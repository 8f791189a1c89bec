"""The extra evaluation with an odd additive offset (`a[i + s]`, `s` = 1), and the conditional KL103s
("misaligned unless `s` is a multiple of 8") that only it shows; eval/samples.py says which
parameters are offsets and why aligned samples hide this."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from kernlint.checks.coalescing import KL103
from kernlint.eval.events import MemoryAccess
from kernlint.eval.interp import Interpreter
from kernlint.eval.samples import ODD_OFFSET, SECTOR, offset_parameters

if TYPE_CHECKING:
    from kernlint.checks.base import Rule
    from kernlint.base.diagnostics import Diagnostic
    from kernlint.eval.result import KernelResult


def odd_offset_results(results: list["KernelResult"], bases: list["KernelResult"] | None = None
                       ) -> list["KernelResult"]:
    """Each result evaluated again with each additive-offset parameter set to `ODD_OFFSET` (marked
    `odd_offset`); `conditional_findings` turns what that misaligns into conditional KL103s.

    `bases` are the results `conditional_findings` will compare the runs with (the engine's, after it
    merges a runtime block's shapes; `results` when None). A run that cannot add a finding there is not
    made (`_adds_nothing`)."""
    bases = results if bases is None else bases
    out: list["KernelResult"] = []
    reported: set[tuple[int, int, str]] = set()  # what the runs made so far report, once `folded` is all of `out`
    folded = 0
    for r in results:
        if r.unit is None:
            continue
        known = {k for k, _v in r.defines} | {k for k, _v in r.shape.arg_samples}  # the host gives these
        # Only a global access whose address depends on `p` can give a conditional KL103
        # (conditional_findings): without one the evaluation again would find nothing.
        addressed = set().union(*(e.deps for e in r.events if isinstance(e, MemoryAccess) and e.space == "global"))
        base = next((m for m in bases if m.shape == r.shape), None)
        for p in sorted((offset_parameters(r.kernel) - known) & addressed):
            sites = _offset_sites(base, p) if base is not None else set()
            if sites and folded < len(out) and not sites <= reported:
                reported |= {(d.line, d.column, d.code) for d in conditional_findings(out[folded:], bases, (KL103,), set())}
                folded = len(out)
            if _adds_nothing(sites, reported):
                continue
            defines = dict(r.defines)
            defines[p] = ODD_OFFSET
            run = Interpreter(r.unit, r.kernel, r.shape, defines).run()
            if run.truncated:
                continue
            out.append(dataclasses.replace(r, events=tuple(run.events), assumed=tuple(sorted(run.assumed.items())), load_sites=tuple(sorted(run.load_sites.items())),
                                           defines=tuple(sorted(defines.items())), notes=(), odd_offset=(p, ODD_OFFSET)))
    return out


def _offset_sites(base: "KernelResult", p: str) -> set[tuple[int, int, str]]:
    """The KL103 keys of the global accesses of `base` whose address depends on `p`: the only sites where
    `conditional_findings` reports an odd run of `base`'s shape."""
    return {(e.span.line, e.span.column, "KL103") for e in base.events
            if isinstance(e, MemoryAccess) and e.space == "global" and p in e.deps}


def _adds_nothing(sites: set[tuple[int, int, str]], reported: set[tuple[int, int, str]]) -> bool:
    """Whether an odd run can add no finding: `conditional_findings` reports it only at `sites` (none when
    its shape has no result to compare with), and only where no earlier finding was reported. The runs
    made before it report `reported` at least: `conditional_findings` goes through them first, and each
    key it finds there with nothing reported before it finds with more reported too, or was reported
    already (a finding of a shape, the other odd runs' on a twin instantiation: `T` float, then double)."""
    return sites <= reported


def conditional_findings(odd: list["KernelResult"], main: list["KernelResult"], rules: Iterable["Rule"],
                         reported: set[tuple[int, int, str]]) -> list["Diagnostic"]:
    """KL103 findings that only the odd offset shows, worded "misaligned unless `s` is a multiple of 8"."""
    out = []
    kl103 = [rule for rule in rules if rule.code == "KL103" and rule.check is not None]
    for r in odd:
        p = r.odd_offset[0]
        base = next((m for m in main if m.shape == r.shape), None)
        if base is None:
            continue
        main_sites = {(e.span.line, e.span.column): e for e in base.events
                      if isinstance(e, MemoryAccess) and e.space == "global"}
        odd_sites = {(e.span.line, e.span.column): e for e in r.events
                     if isinstance(e, MemoryAccess) and e.space == "global"}
        for rule in kl103:
            for d in rule.check(r):  # type: ignore[misc]
                key = (d.line, d.column, d.code)
                if key in reported:
                    continue
                m, o = main_sites.get(key[:2]), odd_sites.get(key[:2])
                if m is None or o is None or p not in m.deps:
                    continue
                multiple = _aligning_multiple(m, o, dict(base.assumed).get(p, ()), p)
                if multiple is None or multiple <= 1:
                    continue
                reported.add(key)
                out.append(_conditional(d, p, multiple, r))
    return out


def _aligning_multiple(main: "object", odd: "object", samples: tuple[int, ...], p: str) -> int | None:
    """The multiple of `p` that keeps the access aligned: 32 / gcd(bytes per unit of p, 32)."""
    if not samples:
        return None
    m = main.mask[0] & odd.mask[0]  # type: ignore[attr-defined]
    if not m.any():
        return None
    w, lane = (int(x[0]) for x in np.nonzero(m))
    a_main = int(np.broadcast_to(main.address, main.mask.shape)[0, w, lane])  # type: ignore[attr-defined]
    a_odd = int(np.broadcast_to(odd.address, odd.mask.shape)[0, w, lane])  # type: ignore[attr-defined]
    diff = samples[0] - ODD_OFFSET
    if diff == 0 or (a_main - a_odd) % diff:
        return None
    per_unit = abs((a_main - a_odd) // diff)
    if per_unit == 0:
        return None
    return SECTOR // math.gcd(per_unit, SECTOR)


def _conditional(d: "object", p: str, multiple: int, result: "object") -> "object":
    msg = d.message  # type: ignore[attr-defined]
    head, _, rest = msg.partition(":")
    message = f"{head} unless `{p}` is a multiple of {multiple}: with {p} = {ODD_OFFSET},{rest}"
    notes = (f"`{p}` is added to the index: with the sampled sizes (multiples of 1024) the access is aligned, "
             f"with {p} = {ODD_OFFSET} (an odd offset) each warp's request straddles a 32-byte sector; "
             f"set --define {p}=VALUE to decide",) + tuple(d.notes)  # type: ignore[attr-defined]
    metrics = dict(d.metrics)  # type: ignore[attr-defined]
    metrics["aligned_if"] = f"{p} % {multiple} == 0"
    metrics["sampled_offset"] = {p: ODD_OFFSET}
    assumptions = tuple(a for a in d.assumptions if f"{p} = {ODD_OFFSET}" not in a)  # type: ignore[attr-defined]
    assumptions += (f"{p} = {ODD_OFFSET} (an odd sample of an additive offset; aligned for multiples of {multiple})",)
    return dataclasses.replace(d, message=message, notes=notes, metrics=metrics,  # type: ignore[type-var]
                               assumptions=assumptions)
