"""The engine: source text -> diagnostics. Pure: no printing, no exit codes, no file system writes.

    lint_source(text, path, options) -> LintResult

parse (frontend) -> per kernel: launch shapes (launch) -> warp evaluation (eval.interp) -> rules
(checks) -> suppressions (suppress) -> selection (config). Only the CLI prints.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kernlint import ir
from kernlint.checks import ALL_RULES, KERNEL_RULES, parse_problems
from kernlint.checks.base import Rule
from kernlint.diagnostics import Diagnostic
from kernlint.eval import coverage as evcov
from kernlint.eval.interp import Interpreter
from kernlint.eval.result import KernelResult
from kernlint.frontend import FrontendError, parse_source
from kernlint.launch import launch_shapes
from kernlint.occupancy import DEFAULT_ARCH


@dataclass(frozen=True, slots=True)
class LintOptions:
    """What the engine needs from settings and flags (the CLI builds it from `config.Settings`)."""

    block: tuple[int, int, int] | None = None
    config_block: tuple[int, int, int] | None = None
    defines: tuple[tuple[str, int], ...] = ()
    include_dirs: tuple[str, ...] = ()
    macros: tuple[str, ...] = ()  # -D for the preprocessor (runtime sizes go in `defines`)
    arch: str | None = None
    occupancy_threshold: float = 0.5
    resources: bool = True  # ask nvcc/ptxas for exact register counts when present


@dataclass(frozen=True, slots=True)
class LintResult:
    path: str
    diagnostics: tuple[Diagnostic, ...]
    kernels: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    results: tuple[KernelResult, ...] = field(default=(), compare=False)
    # One record per kernel: how much of it was evaluated (KL904 names the rest).
    coverage: tuple[evcov.KernelCoverage, ...] = field(default=(), compare=False)


def analyse_kernel(tu: ir.TranslationUnit, fn: ir.Function, options: LintOptions,
                   source_lines: tuple[str, ...]) -> list[KernelResult]:
    """Evaluate `fn` under each of its launch shapes."""
    shapes, ann_defines = launch_shapes(fn, tu, cli_block=options.block, config_block=options.config_block)
    out = []
    for shape in shapes:
        # Strongest last: values from the launch's arguments, the annotation, then --define/config.
        defines = dict(shape.arg_values)
        defines.update(ann_defines)
        defines.update(dict(options.defines))
        res = Interpreter(tu, fn, shape, defines).run()
        out.append(KernelResult(
            path=tu.path, kernel=fn, shape=shape, events=tuple(res.events),
            assumed=tuple(sorted(res.assumed.items())), defines=tuple(sorted(defines.items())),
            notes=tuple(res.notes), source_lines=source_lines,
            shared_layout=tuple((k, b, t) for k, (b, t) in res.shared_layout.items()), unit=tu,
            coverage=res.coverage,
        ))
    return out


def combine(results: list[KernelResult], rules: tuple[Rule, ...]) -> list[Diagnostic]:
    """Run `rules` on each shape's result and merge.

    Shapes that are real (launches in the file, flags) each report their findings (deduplicated by
    site and code). Shapes that are guesses (the default 2-D shapes) must agree: a finding is kept
    only when every guessed shape produces it, so a guess can never be the only reason to warn.
    """
    per_shape: list[list[Diagnostic]] = []
    for r in results:
        diags: list[Diagnostic] = []
        for rule in rules:
            if rule.check is None:
                continue
            diags.extend(rule.check(r))
        per_shape.append(diags)
    if not per_shape:
        return []
    if len(per_shape) > 1 and all(r.shape.guess for r in results):
        keys = [{(d.line, d.column, d.code) for d in ds} for ds in per_shape]
        common = set.intersection(*keys)
        others = ", ".join(str(r.shape.block) for r in results[1:])
        also = f"the same finding holds with blockDim = {others} (every guessed shape must agree)"
        return [dataclasses.replace(d, assumptions=d.assumptions + (also,))
                for d in per_shape[0] if (d.line, d.column, d.code) in common]
    seen: set[tuple[int, int, str]] = set()
    merged = []
    for ds in per_shape:
        for d in ds:
            k = (d.line, d.column, d.code)
            if k not in seen:
                seen.add(k)
                merged.append(d)
    return merged


def lint_source(text: str, path: str, options: LintOptions | None = None,
                rules: tuple[Rule, ...] = KERNEL_RULES) -> LintResult:
    """Lint CUDA source `text`; `path` is used in messages. Raises FrontendError if clang fails outright."""
    options = options or LintOptions()
    tu = parse_source(text, path, include_dirs=options.include_dirs,
                      defines=options.macros, arch=options.arch or DEFAULT_ARCH)
    lines = tuple(text.splitlines())
    diags: list[Diagnostic] = list(parse_problems.check_parse(tu, text))
    all_results: list[KernelResult] = []
    notes: list[str] = []
    records: list[evcov.KernelCoverage] = []
    for fn in tu.kernels:
        try:
            results = analyse_kernel(tu, fn, options, lines)
            diags.extend(combine(results, rules))
        except Exception as exc:  # noqa: BLE001 - one kernel's bug must not hide the others' findings
            diags.append(parse_problems.internal_error(tu.path, fn, exc))
            records.append(evcov.failed(fn, tu.path, f"{type(exc).__name__}: {exc}"))
            continue
        all_results.extend(results)
        for r in results:
            notes.extend(f"{fn.name}: {n}" for n in r.notes)
        # A kernel not fully evaluated is never silent: one KL904 names what was not, and why.
        record = evcov.merge(fn, tu.path, [r.coverage for r in results],
                                all_guessed=len(results) > 1 and all(r.shape.guess for r in results))
        records.append(record)
        if record.status != "full":
            diags.append(parse_problems.incomplete(tu.path, fn, record))
    diags.extend(_occupancy(tu, text, options, all_results))
    diags.sort(key=lambda d: d.sort_key())
    return LintResult(path, tuple(diags), tuple(k.name for k in tu.kernels), tuple(dict.fromkeys(notes)),
                      tuple(all_results), tuple(records))


def _occupancy(tu: ir.TranslationUnit, text: str, options: LintOptions,
               results: list[KernelResult]) -> list[Diagnostic]:
    """Occupancy findings (KL4xx) per kernel: registers, shared memory, block sizes."""
    from kernlint.checks import occupancy as occ

    try:
        return list(occ.check_translation_unit(tu, text, options, results))
    except Exception as exc:  # noqa: BLE001 - occupancy trouble must not hide the access findings
        return [parse_problems.internal_error(tu.path, fn, exc) for fn in tu.kernels[:1]]


__all__ = ["ALL_RULES", "FrontendError", "LintOptions", "LintResult", "lint_source"]


def lint_with_suppressions(text: str, path: str, options: LintOptions | None = None) -> LintResult:
    """`lint_source` followed by the inline suppressions of the file (KL901/KL902 included)."""
    from kernlint.suppress import apply_suppressions, parse_suppressions

    result = lint_source(text, path, options)
    kept = apply_suppressions(path, result.diagnostics, parse_suppressions(text), ALL_RULES)
    kept.sort(key=lambda d: d.sort_key())
    return LintResult(result.path, tuple(kept), result.kernels, result.notes, result.results, result.coverage)
