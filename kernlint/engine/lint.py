"""The engine: source text -> diagnostics. Pure: no printing, no exit codes, no file system writes.

    lint_source(text, path, options) -> LintResult

parse (frontend) -> per kernel: launch shapes (launch) -> warp evaluation (eval.interp) -> rules
(checks) -> suppressions (suppress) -> selection (config). Only the CLI prints.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kernlint.base import deadline
from kernlint.ir import nodes as ir
from kernlint.checks import ALL_RULES, KERNEL_RULES, device_runtime, fallback, grouping, parse_problems
from kernlint.checks.base import Rule
from kernlint.base.diagnostics import Diagnostic, Severity
from kernlint.eval import coverage as evcov
from kernlint.eval import asserted_shape, resample, trip_counts, unread_calls
from kernlint.checks import odd_offsets
from kernlint.eval.interp import Interpreter
from kernlint.eval.result import KernelResult
from kernlint.frontend import FrontendError, parse_source  # noqa: F401 - re-exported
from kernlint.base.frozen import frozen
from kernlint.project.launch import launch_shapes
from kernlint.base.options import LintOptions  # noqa: F401 - defined apart so the CLI need not import the engine

if TYPE_CHECKING:
    from kernlint.project.launch import LaunchShape
    from kernlint.project.units import Unit


@frozen
class LintResult:
    path: str
    diagnostics: tuple[Diagnostic, ...]
    kernels: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    results: tuple[KernelResult, ...] = field(default=(), compare=False)
    # One record per kernel: how much of it was evaluated (KL904 names the rest).
    coverage: tuple[evcov.KernelCoverage, ...] = field(default=(), compare=False)


def analyse_kernel(tu: ir.TranslationUnit, fn: ir.Function, options: LintOptions,
                   source_lines: tuple[str, ...], unit: "Unit | None" = None) -> list[KernelResult]:
    """Evaluate `fn` under each of its launch shapes.

    A template kernel with a binding from a launch or instantiation (in this file or, with a project
    index, anywhere in the project) is evaluated as that instance (`Unit.instance`: the text made
    concrete and parsed again), so dependent sizes, types and `sizeof` are exact.
    """
    index = options.project
    plaunches = pinsts = ()
    if index is not None and fn.is_kernel:
        from kernlint.project.units import project_instantiations, project_launches

        try:
            plaunches = project_launches(index, fn, tu.path)  # type: ignore[arg-type]
            pinsts = project_instantiations(index, fn, tu.path)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - the index only adds launches: evaluate without them
            plaunches = pinsts = ()
            if unit is not None:
                unit.notes.append(f"{fn.name}: launches elsewhere in the project not used ({type(exc).__name__}: {exc})")
    shapes, ann_defines = launch_shapes(fn, tu, cli_block=options.block, config_block=options.config_block,
                                        project_launches=plaunches, project_instantiations=pinsts,
                                        cli_defines=dict(options.defines))
    out = []
    asserted_done: set[tuple[int, int, int]] = set()
    stands: dict[tuple[tuple[str, str], ...], int] = {}
    if fn.template_params and len({s.bindings for s in shapes}) > 1:
        # Bindings that differ only in parameters deciding nothing are evaluated once.
        from kernlint.eval.binding_questions import same_questions

        shapes, stands = same_questions(fn, tu, shapes, source_lines)
    shapes, instances = _usable_bindings(fn, shapes, unit, stands)
    for shape in shapes:
        # Strongest last: values from the launch's arguments, the annotation, then --define/config.
        defines = dict(shape.arg_values)
        defines.update(ann_defines)
        defines.update(dict(options.defines))
        run_tu, run_fn = tu, fn
        inst = instances.get(shape.bindings)
        if inst is not None:
            run_tu, run_fn = inst
        res = Interpreter(run_tu, run_fn, shape, defines).run()
        if res.contradiction and shape.guess:
            # The kernel's asserts say which block it wants: evaluate that one instead (once).
            alt = _asserted(run_tu, run_fn, shape, defines, res, asserted_done)
            if alt is None and asserted_done:
                continue  # another guess already became the asserted shape
            if alt is not None:
                shape, res = alt
        if res.contradiction and shape.guess:
            # The kernel asserts a launch shape this guess breaks: nothing it showed is real.
            why = ("shape", f"blockDim = {shape.block}: {res.contradiction}")
            res = dataclasses.replace(res, events=[], dead_regions={}, coverage=tuple(
                evcov.SiteStatus(st.key, False, why) for st in res.coverage))
        events = tuple(res.events)
        out.append(KernelResult(
            path=tu.path, kernel=run_fn, shape=shape, events=events,
            assumed=tuple(sorted(res.assumed.items())), load_sites=tuple(sorted(res.load_sites.items())), defines=tuple(sorted(defines.items())),
            notes=tuple(res.notes), source_lines=source_lines,
            shared_layout=tuple((k, b, t) for k, (b, t) in res.shared_layout.items()), unit=run_tu,
            coverage=res.coverage,
            template=fn if run_fn is not fn else None,
            in_row=(events, frozenset(res.shared_layout) - res.out_of_row),
        ))
        if res.truncated and not res.contradiction:
            out.extend(_frugal(run_tu, run_fn, fn, shape, defines, res, source_lines))
        if not res.truncated and not res.contradiction:
            # (Before the dead regions' re-sampling: where both report a site, the trip counts speak.)
            out.extend(_trip_count_run(run_tu, run_fn, fn, shape, defines, res, source_lines))
        if res.dead_regions and not res.truncated:
            out.extend(_resample_dead(run_tu, run_fn, fn, shape, defines, res, source_lines))
    main = [r for r in out if not r.regions and r.events]
    # What `combine` compares the odd-offset runs with: the results left once a runtime block's shapes
    # are merged into the first (`_agree_on_runtime_blocks`); a run with nothing to compare with is not made.
    plain = [r for r in out if not r.regions]
    merged = {i for group in _runtime_groups(plain) for i in group[1:]}
    return out + odd_offsets.odd_offset_results(main, [r for i, r in enumerate(plain) if i not in merged])


def _instantiable(shape: "LaunchShape") -> bool:
    return bool(shape.bindings) and "assumed" not in shape.binding_source and "unknown" not in shape.binding_source


def _usable_bindings(fn: ir.Function, shapes: list["LaunchShape"], unit: "Unit | None",
                     stands: dict[tuple[tuple[str, str], ...], int] | None = None) -> tuple[list["LaunchShape"], dict[tuple[tuple[str, str], ...], tuple[ir.TranslationUnit, ir.Function]]]:
    """The shapes to evaluate a template kernel under, and the instance of each binding that has one.

    The launches offer up to MAX_BINDING_TRIES bindings in order; the first MAX_BINDINGS whose instance
    parses (`Unit.instance`) are evaluated: a binding that names a type of a header kernlint does not
    have (`Traits<32, at::BFloat16>` without c10) is passed over for the next one (`Traits<32, float>`).
    When none parses, the first MAX_BINDINGS are evaluated as the template. Identical bindings are
    evaluated once whatever the number of launches that give them (the launch shapes are distinct).
    Every shape says how many of the bindings were evaluated when that is not all of them (counting those
    an evaluated one stands for: `stands`, eval/binding_questions.py)."""
    from kernlint.project.launch import MAX_BINDINGS

    order = list(dict.fromkeys(s.bindings for s in shapes))
    instances: dict[tuple[tuple[str, str], ...], tuple[ir.TranslationUnit, ir.Function]] = {}
    broken: list[tuple[tuple[str, str], ...]] = []  # instances whose bound class itself did not instantiate
    if unit is not None and fn.template_params:
        for b in order:
            if len(instances) - len(broken) >= MAX_BINDINGS:
                break
            shape = next(s for s in shapes if s.bindings == b)
            named = {w for _p, v in b for w in re.findall(r"[A-Za-z_]\w*", v)}
            if _instantiable(shape) and not deadline.expired() and not named & unit.unknown_names:
                inst = unit.instance(fn, b)
                if inst is not None:
                    instances[b] = inst
                    if _bound_class_broken(b, inst):
                        broken.append(b)
    # (a binding whose traits class does not instantiate here, `kNElts = constexpr_min(8, kNItems)` through a
    # std::min kernlint does not have, loses every member the kernel reads of it: evaluated only when no
    # binding instantiates whole)
    whole = [b for b in order if b in instances and b not in broken]
    keep = (whole[:MAX_BINDINGS] or [b for b in order if b in instances][:MAX_BINDINGS]) or order[:MAX_BINDINGS]
    total = max([len(order)] + [s.distinct_bindings for s in shapes])
    out = [s for s in shapes if s.bindings in keep]
    stood = sum((stands or {}).get(b, 0) for b in keep)
    if fn.template_params and total > len(keep) + stood:
        how = " or stood for" if stood else ""
        out = [dataclasses.replace(s, binding_source=f"{s.binding_source}; {len(keep) + stood} of the {total} bindings "
                                   f"the launches give evaluated{how}") for s in out]
    return out, instances


def _bound_class_broken(binding: tuple[tuple[str, str], ...], inst: tuple[ir.TranslationUnit, ir.Function]) -> bool:
    """Whether clang says a class template the binding names has no member the kernel reads (`no member named
    'kIsVariableB' in 'Traits<32, 4, c10::Half>'`): the class's own instantiation failed in this file."""
    classes = {m.group(1) for _p, v in binding for m in re.finditer(r"([A-Za-z_]\w*)\s*<", v)}
    if not classes:
        return False
    tu, fn = inst
    messages = [p.message for p in tu.problems] + [m for _l, _c, m in fn.unresolved]
    return any(m.startswith("no member named") and re.search(r"in '(?:\w+::)*(\w+)<", m)
               and re.search(r"in '(?:\w+::)*(\w+)<", m).group(1) in classes for m in messages)  # type: ignore[union-attr]


def _asserted(run_tu: ir.TranslationUnit, run_fn: ir.Function, shape: "LaunchShape", defines: dict[str, int],
              res: object, done: set[tuple[int, int, int]]) -> "tuple[LaunchShape, object] | None":
    """The shape the kernel's asserts pin (eval/asserted_shape.py) and its evaluation, when a guess
    contradicted them and that shape was not evaluated yet and holds."""
    alt = asserted_shape.asserted_shape(res.pins, shape.block)  # type: ignore[attr-defined]
    if alt is None or alt[0] in done:
        return None
    block, grid, text = alt
    new = dataclasses.replace(shape, block=block, grid=grid or shape.grid, source=text, guess="asserted")
    again = Interpreter(run_tu, run_fn, new, defines).run()
    if again.contradiction:
        return None
    done.add(block)
    return new, again


# Re-evaluations at most for dead regions whose guards ask for values of different names.
MAX_EXACT_GROUPS = 3
# Levels of re-sampling for guards found dead inside regions a re-sampled evaluation opened.
MAX_NESTED_RESAMPLES = 2


def _resample_dead(run_tu: ir.TranslationUnit, run_fn: ir.Function, fn: ir.Function, shape: "LaunchShape",
                   defines: dict[str, int], res: object, source_lines: tuple[str, ...],
                   loop_cap: int | None = None, said: str = "", base: dict[str, tuple[int, ...]] | None = None,
                   only: frozenset | None = None, depth: int = 0) -> list[KernelResult]:
    """Guards the sampled sizes made dead in the evaluation `res`: evaluate again with those
    parameters small (eval/resample.py), then with other samples for what that leaves dead.
    Guards that the re-evaluation itself finds dead inside the regions it opened (`x = j - c + e;
    if (x >= 0)` nested in `if (y >= 0)`, each over its own parameters) are re-sampled once more on
    top of its samples (`base`, `only`: those regions), up to MAX_NESTED_RESAMPLES levels.
    Regions whose guards ask for exact values (`if (P.frame == 0)`, `if (bx == 1)`) are evaluated
    apart from the ones sampled small when both kinds occur, so that one region's small sizes do not
    change the addresses in the other (a template's row count sampled as 1 because some other loop
    over it ran no iteration). `loop_cap` and `said` carry over from a frugal evaluation (`_frugal`)
    that found the regions."""
    dead, targets = res.dead_regions, res.block_targets  # type: ignore[attr-defined]
    if only is not None:
        dead = {k: v for k, v in dead.items() if k in only}
    exact = {k: v for k, v in dead.items() if targets.get(k) and set(v) <= set(targets[k])}
    small = {k: v for k, v in dead.items() if k not in exact}
    # Exact regions that ask for values of different names are evaluated apart too (`nf == 512`
    # wants n = 32768, the last block's `else` wants another n), at most MAX_EXACT_GROUPS runs.
    by_names: dict[frozenset[str], dict] = {}
    for k, v in sorted(exact.items()):
        by_names.setdefault(frozenset(targets[k]), {})[k] = v
    groups = ([small] if small else []) + list(by_names.values())[:MAX_EXACT_GROUPS]
    if len(groups) == 1 and not small and len(by_names) == 1:
        groups = [dead]
    out: list[KernelResult] = []
    for group in groups:
        overrides = dict(base or {})
        for name, vals in resample.overrides_for(group, targets).items():
            overrides.setdefault(name, vals)
        again = Interpreter(run_tu, run_fn, shape, defines, sample_overrides=overrides, loop_cap=loop_cap).run()
        if again.truncated and loop_cap is not None:
            continue
        # (Names `base` already samples keep those samples: only the others were re-sampled here.)
        shown = {k: frozenset(n for n in v if n not in (base or {})) for k, v in group.items()}
        how = resample.describe(shown, res.assumed, overrides, targets)  # type: ignore[attr-defined]
        out.append(KernelResult(
            path=run_tu.path, kernel=run_fn, shape=shape, events=tuple(again.events),
            assumed=tuple(sorted(again.assumed.items())), load_sites=tuple(sorted(again.load_sites.items())),
            defines=tuple(sorted(defines.items())), notes=(), source_lines=source_lines,
            shared_layout=tuple((k, b, t) for k, (b, t) in again.shared_layout.items()), unit=run_tu,
            regions=tuple(group), resampled="; ".join(x for x in (how, said) if x),
            coverage=again.coverage,
            template=fn if run_fn is not fn else None,
        ))
        out.extend(_reversed_resample(run_tu, run_fn, fn, shape, defines, res, again, source_lines, loop_cap, said,
                                      dead=group))
        nested = frozenset(k for k in again.dead_regions if k not in res.dead_regions  # type: ignore[attr-defined]
                           and any(g[2] <= k[2] and k[3] <= g[3] for g in group))
        if nested and depth < MAX_NESTED_RESAMPLES and not again.truncated:
            out.extend(_resample_dead(run_tu, run_fn, fn, shape, defines, again, source_lines, loop_cap,
                                      "; ".join(x for x in (how, said) if x), base=overrides, only=nested,
                                      depth=depth + 1))
    return out


# Iterations a loop over sampled values runs in the re-evaluation after the budget ran out.
FRUGAL_LOOP_CAP = 2


def _frugal(run_tu: ir.TranslationUnit, run_fn: ir.Function, fn: ir.Function, shape: "LaunchShape",
            defines: dict[str, int], res: object, source_lines: tuple[str, ...]) -> list[KernelResult]:
    """The code the step budget kept the evaluation from, evaluated again with loops over sampled
    values cut short (their later iterations repeat the access patterns of the first ones), so the
    budget is spent on every region of the kernel rather than on the first loops; [] if that too
    runs out. Its findings count only on the lines the first evaluation did not reach."""
    lines = sorted({st.key[0] for st in res.coverage if not st.evaluated and st.why == ("budget", "")})  # type: ignore[attr-defined]
    if not lines:
        return []
    again = Interpreter(run_tu, run_fn, shape, defines, loop_cap=FRUGAL_LOOP_CAP).run()
    if again.truncated or again.contradiction:
        return []
    said = (f"the step budget ran out before {evcov.show_lines(lines)}: "
            f"they were evaluated again with loops over sampled sizes stopped after {FRUGAL_LOOP_CAP} iterations "
            f"(what those loops write is unknown after them)")
    out = [KernelResult(
        path=run_tu.path, kernel=run_fn, shape=shape, events=tuple(again.events),
        assumed=tuple(sorted(again.assumed.items())), load_sites=tuple(sorted(again.load_sites.items())), defines=tuple(sorted(defines.items())),
        notes=(), source_lines=source_lines,
        shared_layout=tuple((k, b, t) for k, (b, t) in again.shared_layout.items()), unit=run_tu,
        regions=tuple((0, 0, ln, ln) for ln in lines), resampled=said, coverage=again.coverage,
        template=fn if run_fn is not fn else None,
    )]
    if again.dead_regions:
        # Regions the frugal evaluation finds dead under the samples (the first one never got to
        # them): re-sampled as after a complete evaluation, with the same loop cap.
        out.extend(_resample_dead(run_tu, run_fn, fn, shape, defines, again, source_lines,
                                  loop_cap=FRUGAL_LOOP_CAP, said=said))
    return out


def _trip_count_run(run_tu: ir.TranslationUnit, run_fn: ir.Function, fn: ir.Function, shape: "LaunchShape",
                    defines: dict[str, int], res: object, source_lines: tuple[str, ...]) -> list[KernelResult]:
    """Loops bounded by a sampled parameter that the evaluation cut at its iteration cap, with a branch
    on their own variable (a pyramid of shrinking guards, a wavefront): the kernel evaluated again with
    those parameters sampled as trip counts (eval/trip_counts.py). Its findings count on the whole body,
    where the first evaluation made none, and say what they assumed; regions it finds dead are
    re-sampled on top of it."""
    params = trip_counts.capped_trip_loops(run_fn, res)  # type: ignore[arg-type]
    params = {p: ln for p, ln in params.items() if p not in defines}
    if not params or run_fn.body is None:
        return []
    overrides = trip_counts.overrides(params, shape.block)
    again = Interpreter(run_tu, run_fn, shape, defines, sample_overrides=overrides).run()
    if again.truncated or again.contradiction:
        return []
    said = trip_counts.describe(params, shape.block, res.assumed)  # type: ignore[attr-defined]
    body = run_fn.body.span
    out = [KernelResult(
        path=run_tu.path, kernel=run_fn, shape=shape, events=tuple(again.events),
        assumed=tuple(sorted(again.assumed.items())), load_sites=tuple(sorted(again.load_sites.items())),
        defines=tuple(sorted(defines.items())), notes=(), source_lines=source_lines,
        shared_layout=tuple((k, b, t) for k, (b, t) in again.shared_layout.items()), unit=run_tu,
        regions=((0, 0, body.line, max(body.end_line, body.line)),), resampled=said, coverage=again.coverage,
        template=fn if run_fn is not fn else None,
    )]
    if again.dead_regions:
        out.extend(_resample_dead(run_tu, run_fn, fn, shape, defines, again, source_lines, said=said,
                                  base=overrides))
    return out


def _region_ran(run: object, key: tuple[int, int, int, int]) -> bool:
    """Whether an evaluation ran a region: its guard let some sample in, or (a guard that became
    data-dependent under other samples is not noted) some site on its lines was evaluated."""
    if key in run.regions_taken:  # type: ignore[attr-defined]
        return True
    if key in run.dead_regions:  # type: ignore[attr-defined]
        return False
    first, last = key[2], key[3]
    return any(st.evaluated and first <= st.key[0] <= last for st in run.coverage)  # type: ignore[attr-defined]


# Extra evaluations at most for regions that neither the first nor the small samples reach.
MAX_EXTRA_RESAMPLES = 3


def _reversed_resample(run_tu: ir.TranslationUnit, run_fn: ir.Function, fn: ir.Function, shape: object,
                       defines: dict[str, int], res: object, again: object,
                       source_lines: tuple[str, ...], loop_cap: int | None = None,
                       said: str = "", dead: dict | None = None) -> list[KernelResult]:
    """Regions that neither the first samples nor the small ones reach, evaluated again with other
    samples of their guards' parameters (eval/resample.py `other_overrides`: their order reversed,
    then one of them small with the others as sampled), each region by the first that reaches it;
    [] when there is nothing to do."""
    dead = res.dead_regions if dead is None else dead  # type: ignore[attr-defined]
    # A region that the small samples did not run, whether they found it dead or never got to it
    # (it lies inside other code they made dead).
    still = {k: v for k, v in dead.items()
             if not _region_ran(again, k) and not res.block_targets.get(k)}  # type: ignore[attr-defined]
    if not still or again.truncated:  # type: ignore[attr-defined]
        return []
    out: list[KernelResult] = []
    for overrides, why in resample.other_overrides(still, res.assumed)[:MAX_EXTRA_RESAMPLES]:  # type: ignore[attr-defined]
        if not still:
            break
        # (Run to reach `still`: it stops once none of them can be reached, a run this loop passes over.)
        run = Interpreter(run_tu, run_fn, shape, defines, sample_overrides=overrides,  # type: ignore[arg-type]
                          loop_cap=loop_cap, goal=frozenset(still)).run()
        if run.truncated or run.contradiction or run.goal_unreachable:
            continue
        reached = {k: v for k, v in still.items() if _region_ran(run, k)}
        if not reached:
            continue
        still = {k: v for k, v in still.items() if k not in reached}
        out.append(KernelResult(
            path=run_tu.path, kernel=run_fn, shape=shape, events=tuple(run.events),  # type: ignore[arg-type]
            assumed=tuple(sorted(run.assumed.items())), load_sites=tuple(sorted(run.load_sites.items())), defines=tuple(sorted(defines.items())),
            notes=(), source_lines=source_lines,
            shared_layout=tuple((k, b, t) for k, (b, t) in run.shared_layout.items()), unit=run_tu,
            regions=tuple(reached), resampled="; ".join(x for x in (resample.describe_other(reached, overrides, why), said) if x),
            coverage=run.coverage, template=fn if run_fn is not fn else None,
        ))
    return out


def combine(results: list[KernelResult], rules: tuple[Rule, ...],
            skipped: set[str] | None = None) -> list[Diagnostic]:
    """Run `rules` on each shape's result and merge.

    Shapes that are real (launches in the file, flags) each report their findings (deduplicated by
    site and code). Shapes that are guesses (the default 2-D shapes) must agree: a finding is kept
    only when every guessed shape produces it, so a guess can never be the only reason to warn.
    Once the file's work budget has run out no further rule runs; their codes go in `skipped`.
    """
    resampled = [r for r in results if r.regions]
    results = [r for r in results if not r.regions]
    odd = [r for r in results if r.odd_offset]  # eval/samples.py: only conditional KL103s come from these
    results = [r for r in results if not r.odd_offset]
    per_shape: list[list[Diagnostic]] = []
    # Drafts of findings still to finish (Rule.deferred), by identity: only the kept ones are finished
    # (`final`), so a costly part of a finding no shape's report uses is never computed.
    unfinished: dict[int, Callable[[], Diagnostic]] = {}
    for r in results:
        diags: list[Diagnostic] = []
        for rule in rules:
            if rule.check is None:
                continue
            if deadline.expired():
                if skipped is not None:
                    skipped.add(rule.code)
                continue
            if rule.deferred is None:
                diags.extend(rule.check(r))
                continue
            for d, finish in rule.deferred(r):
                diags.append(d)
                if finish is not None:
                    unfinished[id(d)] = finish
        per_shape.append(diags)

    def final(d: Diagnostic) -> Diagnostic:
        finish = unfinished.get(id(d))
        return d if finish is None else finish()

    if not per_shape:
        return []
    results, per_shape = _agree_on_runtime_blocks(results, per_shape, final)
    # (one launch with a runtime block, left with one result per template binding: a launch written once in
    # a dispatch macro, whose bindings are each real and share the block: merged below as real shapes. Several
    # launch sites keep the rule for guesses: a runtime block guessed at one site says nothing of which
    # binding another site pairs with it, `switch (threads) { case 16: k<16><<<g, threads>>>` tried at 256)
    by_binding = (len({r.shape.bindings for r in results}) > 1 and len({r.shape.guess for r in results}) == 1
                  and results[0].shape.guess.startswith("runtime:"))
    if len(per_shape) > 1 and all(r.shape.guess for r in results) and not by_binding:
        keys = [{_site_key(d) for d in ds} for ds in per_shape]
        common = set.intersection(*keys)
        others = ", ".join(str(r.shape.block) for r in results[1:])
        also = f"the same finding holds with blockDim = {others} (every guessed shape must agree)"
        kept = [dataclasses.replace(final(d), assumptions=d.assumptions + (also,))
                for d in per_shape[0] if _site_key(d) in common]
        kept += _reached_by_some(results, per_shape, keys, common, final)
        return kept + odd_offsets.conditional_findings(odd, results, rules, {k[:3] for ks in keys for k in ks})
    # Real shapes (launches, bindings) each report; at one site the worst finding is kept, and says
    # which shape produced it when the others disagree.
    found: dict[tuple[object, ...], list[tuple[int, Diagnostic]]] = {}
    for i, ds in enumerate(per_shape):
        for d in ds:
            found.setdefault(_site_key(d), []).append((i, d))
    merged = []
    for k, lst in found.items():
        best_i, best = lst[0]
        for i, d in lst[1:]:
            if _severity_score(d) > _severity_score(best):
                best_i, best = i, d
        best = final(best)
        if len(results) > 1:
            best = _name_worst(best, best_i, {i: d for i, d in lst}, results)
        merged.append(best)
    return (merged + odd_offsets.conditional_findings(odd, results, rules, {k[:3] for k in found})  # type: ignore[misc]
            + _resampled_findings(resampled, rules, {k[:3] for k in found}))  # type: ignore[misc]


def _agree_on_runtime_blocks(results: list[KernelResult], per_shape: list[list[Diagnostic]],
                             final: Callable[[Diagnostic], Diagnostic],
                             ) -> tuple[list[KernelResult], list[list[Diagnostic]]]:
    """Merge the shapes one launch with a runtime block was evaluated under (launch.runtime_blocks):
    a finding every shape gives stays as it is and lists the shapes; one that only some give depends on
    the runtime values and becomes an info that names the shapes with and without it. The group is
    then one result (its first), so the real launches beside it merge as before."""
    # (one group per launch and template binding: a launch inside a dispatch macro binds its kernel once per
    # dispatched type, and each binding's shapes agree among themselves; the bindings then merge as real
    # shapes do, the worst named)
    groups = _runtime_groups(results)
    if not groups:
        return results, per_shape
    drop: set[int] = set()
    for members in groups:
        by_key: dict[tuple[object, ...], list[tuple[int, Diagnostic]]] = {}
        for i in members:
            for d in per_shape[i]:
                by_key.setdefault(_site_key(d), []).append((i, d))
        labels = {i: _runtime_label(results[i]) for i in members}
        site = results[members[0]].shape.source.split(" with ")[0]
        merged: list[Diagnostic] = []
        for lst in by_key.values():
            have = {i for i, _d in lst}
            if len(have) == len(members):
                # Every shape gives it: at the severity every shape agrees on (the mildest), so a warning
                # never rests on one tried value (a share of traffic that only a small block makes large).
                mild_i, mild = min(lst, key=lambda x: _severity_score(x[1]))
                mild = final(mild)
                tried = "; ".join(labels[i] for i in members)
                extra = ()
                worse = [labels[i] for i, d in lst if d.severity > mild.severity]
                if worse:
                    extra = (f"a {max(d.severity for _i, d in lst).label} with {'; '.join(worse)} only: the "
                             f"severity is the one every tried shape agrees on",)
                merged.append(dataclasses.replace(mild, notes=tuple(mild.notes) + extra,
                                                  assumptions=mild.assumptions + (
                    f"the block of the {site} depends on runtime values; the finding holds under every shape "
                    f"tried: {tried}",)))
                continue
            best_i, best = max(lst, key=lambda x: _severity_score(x[1]))
            best = final(best)
            without = "; ".join(labels[i] for i in members if i not in have)
            with_ = "; ".join(labels[i] for i in members if i in have)
            cond = _runtime_condition([results[i] for i in members if i in have],
                                      [results[i] for i in members if i not in have])
            note = (f"severity {best.severity.label if best.severity is Severity.INFO else 'info'}: the block of "
                    f"the {site} depends on runtime values, and the finding holds only with some of the shapes "
                    f"tried: with {with_}; not with {without}")
            merged.append(dataclasses.replace(
                best, severity=Severity.INFO,
                message=(f"{best.message} (with the runtime block of the {site}: unless {cond})" if cond else
                         f"{best.message} (with some runtime block shapes of the {site} only: not with {without})"),
                notes=(note,) + tuple(best.notes)))
        per_shape[members[0]] = merged
        drop |= set(members[1:])
    keep = [i for i in range(len(results)) if i not in drop]
    return [results[i] for i in keep], [per_shape[i] for i in keep]


def _runtime_groups(results: list[KernelResult]) -> list[list[int]]:
    """The indexes of the results that `_agree_on_runtime_blocks` merges into the first of each list: the
    shapes of one launch with a runtime block and one template binding, where there are two or more."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
    for i, r in enumerate(results):
        if r.shape.guess.startswith("runtime:"):
            groups.setdefault((r.shape.guess, r.shape.bindings), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _runtime_values(r: KernelResult) -> dict[str, str]:
    """The runtime block values one shape took ({'ne13': '1', 'ne12': '32'}), from its source text."""
    if " with " not in r.shape.source:
        return {}
    text = r.shape.source.split(" with ", 1)[1].split(" (", 1)[0]
    return dict(part.split(" = ", 1) for part in text.split(", ") if " = " in part)


def _runtime_condition(have: list[KernelResult], without: list[KernelResult]) -> str:
    """'ne13 == 1' when one runtime value is the same in every shape without the finding and in none
    with it; '' otherwise."""
    if not have or not without:
        return ""
    for name, value in _runtime_values(without[0]).items():
        if all(_runtime_values(r).get(name) == value for r in without) and \
                all(_runtime_values(r).get(name) != value for r in have):
            return f"{name} == {value}"
    return ""


def _runtime_label(r: KernelResult) -> str:
    """'blockDim = (1, 32, 1) (ne13 = 1, ne12 = 32)': one shape of a runtime-block launch."""
    b = r.shape.block
    values = r.shape.source.split(" with ", 1)[1].split(" (", 1)[0] if " with " in r.shape.source else ""
    return f"blockDim = ({b[0]}, {b[1]}, {b[2]})" + (f" ({values})" if values else "")


def _reached_by_some(results: list[KernelResult], per_shape: list[list[Diagnostic]],
                     keys: list[set[tuple[object, ...]]], common: set[tuple[object, ...]],
                     final: Callable[[Diagnostic], Diagnostic]) -> list[Diagnostic]:
    """Findings on lines that some guessed shapes never reach (`if (ty == 15)` under a guessed
    blockDim.y of 8): kept when every guessed shape that reaches the line produces them, and they
    say which shapes do not reach it. `final` finishes a kept draft (combine)."""
    unreached = [{st.key[0] for st in r.coverage if not st.evaluated and st.why[0] == "unreached"}
                 for r in results]
    evaluated = [{st.key[0] for st in r.coverage if st.evaluated} for r in results]
    out: list[Diagnostic] = []
    done: set[tuple[object, ...]] = set()
    for i, ds in enumerate(per_shape):
        for d in ds:
            k = _site_key(d)
            if k in common or k in done:
                continue
            missing = [j for j in range(len(results)) if k not in keys[j]]
            if not missing or not all(d.line in unreached[j] and d.line not in evaluated[j] for j in missing):
                continue
            done.add(k)
            shapes = ", ".join(str(results[j].shape.block) for j in missing)
            reach = ", ".join(str(results[j].shape.block) for j in range(len(results)) if j not in missing)
            out.append(dataclasses.replace(final(d), assumptions=d.assumptions + (
                f"only the guessed blockDim = {reach} reaches line {d.line}: with blockDim = {shapes} no thread "
                f"runs it (every guessed shape that reaches it must agree)",)))
    return out


def _resampled_findings(results: list[KernelResult], rules: tuple[Rule, ...],
                        seen: set[tuple[int, int, str]]) -> list[Diagnostic]:
    """Findings inside regions the first samples made dead, from their re-sampled evaluation."""
    out = []
    for r in results:
        dead = {key: frozenset() for key in r.regions}
        guards = {(key[0], key[1]) for key in r.regions if key[0]}
        for rule in rules:
            if rule.check is None or deadline.expired():
                continue
            for d in rule.check(r):
                k = (d.line, d.column, d.code)
                # Inside a region, or at the guard of a region that was dead (its KL301: the guard never
                # ran, so only this evaluation can show how it splits).
                if k in seen or not (resample.in_regions(d.line, dead) or (d.line, d.column) in guards):  # type: ignore[arg-type]
                    continue
                seen.add(k)
                out.append(dataclasses.replace(d, assumptions=d.assumptions + (r.resampled,)))
    return out


def _severity_score(d: Diagnostic) -> tuple[int, float, float]:
    """How bad a finding is, to keep the worst of one site's findings under several shapes or bindings: its
    severity, then its ratio to the ideal, then (two shapes at one ratio: RGBA8 at 4 sectors where 1 would do,
    RGBA32 at 16 where 4 would) the sectors or wavefronts it wastes."""
    m = d.metrics or {}
    ratio = excess = 0.0
    try:
        if "ways" in m:
            ratio = float(m["ways"])
            if m.get("ideal_wavefronts") is not None and m.get("wavefronts") is not None:
                excess = float(m["wavefronts"]) - float(m["ideal_wavefronts"])
        elif m.get("ideal_sectors"):
            ratio = float(m["sectors"]) / float(m["ideal_sectors"])
            excess = float(m["sectors"]) - float(m["ideal_sectors"])
        elif m.get("ideal_wavefronts"):
            ratio = float(m["wavefronts"]) / float(m["ideal_wavefronts"])
            excess = float(m["wavefronts"]) - float(m["ideal_wavefronts"])
        elif "idle_fraction" in m:
            ratio = float(m["idle_fraction"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        ratio = excess = 0.0
    return (int(d.severity), ratio, excess)


def _shape_label(r: KernelResult) -> str:
    """'the launch at line 16 (blockDim = (64, 1, 1); j = 4)': what distinguishes one evaluated shape."""
    b = r.shape.block
    parts = [f"blockDim = ({b[0]}, {b[1]}, {b[2]})"]
    parts += [f"{k} = {v}" for k, v in r.shape.bindings]
    parts += [f"{k} = {v}" for k, v in r.shape.arg_values]
    source = r.shape.source
    return f"{'the ' if source.startswith('launch') else ''}{source} ({'; '.join(parts)})"


def _name_worst(d: Diagnostic, best_i: int, by_shape: dict[int, Diagnostic],
                results: list[KernelResult]) -> Diagnostic:
    """Say which of several shapes produced the kept (worst) finding, and what the others gave."""
    labels = [_shape_label(r) for r in results]
    if len(set(labels)) < 2:
        return d
    others = []
    for i, r in enumerate(results):
        if i == best_i or labels[i] == labels[best_i]:
            continue
        o = by_shape.get(i)
        if o is None:
            others.append(f"nothing with {labels[i]}")
        elif o.severity != d.severity:
            others.append(f"{o.severity.label} with {labels[i]}")
        elif _severity_score(o) < _severity_score(d):
            # The same severity, milder (`if (m <= 4096) { BK = 8 } else { BK = 32 }`: 8-way, then 32-way).
            others.append(f"{_measure(o)} with {labels[i]}")
    if not others:
        return d
    note = (f"the worst of {len(results)} evaluated launch shapes: this finding comes from {labels[best_i]}; "
            f"{'; '.join(others)}")
    return dataclasses.replace(d, notes=d.notes + (note,))


def _measure(d: Diagnostic) -> str:
    """How bad a finding is, in words: '8-way', '12 sectors where 4 would do', 'a milder finding'."""
    m = d.metrics or {}
    if "ways" in m:
        return f"{m['ways']}-way"
    if m.get("ideal_sectors"):
        return f"{m['sectors']} sectors where {m['ideal_sectors']} would do"
    if m.get("ideal_wavefronts"):
        return f"{m['wavefronts']} wavefronts where {m['ideal_wavefronts']} would do"
    if "idle_fraction" in m:
        return f"{float(m['idle_fraction']):.0%} of lanes idle"
    return "a milder finding"


def _site_key(d: Diagnostic) -> tuple[object, ...]:
    """A finding's site: its place and code, and the calls that inlined it (one site per call chain)."""
    return (d.line, d.column, d.code, tuple(d.metrics.get("called_from", ())))


def lint_source(text: str, path: str, options: LintOptions | None = None,
                rules: tuple[Rule, ...] = KERNEL_RULES) -> LintResult:
    """Lint CUDA source `text`; `path` is used in messages. Raises FrontendError if clang fails outright."""
    from kernlint.frontend import release_parses

    try:
        return _lint_source(text, path, options or LintOptions(), rules)
    finally:
        release_parses()  # the file is done, however it ended: header functions no kernel asked for are never lowered


def _lint_source(text: str, path: str, options: LintOptions, rules: tuple[Rule, ...]) -> LintResult:
    from kernlint.project.units import parse_in_project

    if options.only_kernels is None and not _may_define_kernels(text, path, options):
        return LintResult(path, (), (), (), (), ())  # what the parse would give: no kernel (project/kernel_text.py)

    # Past the file's work budget the front end still reads every kernel (their bodies cut short), so
    # that each one is named in a KL904 below: never "no kernels found" for a file that has some.
    tu, unit = parse_in_project(text, path, options, options.project)  # type: ignore[arg-type]
    if options.only_kernels is not None:
        # Linted for another file that reaches these kernels: the others are that file's own business.
        tu = dataclasses.replace(tu, kernels=tuple(k for k in tu.kernels if k.name in options.only_kernels))
    lines = tuple(text.splitlines())
    diags: list[Diagnostic] = list(parse_problems.check_parse(tu, text))
    all_results: list[KernelResult] = []
    notes: list[str] = list(unit.notes)
    records: list[evcov.KernelCoverage] = []
    for fn in tu.kernels:
        if deadline.expired():
            diags.append(parse_problems.out_of_time(tu.path, fn, "the whole kernel"))
            records.append(evcov.failed(fn, tu.path, f"not analysed: {deadline.describe()} ran out"))
            continue
        skipped: set[str] = set()
        try:
            results = analyse_kernel(tu, fn, options, lines, unit)
            diags.extend(device_runtime.weigh(grouping.group(fallback.demote(combine(results, rules, skipped), fn, tu)),
                                              results))
        except Exception as exc:  # noqa: BLE001 - one kernel's bug must not hide the others' findings
            diags.append(parse_problems.internal_error(tu.path, fn, exc))
            records.append(evcov.failed(fn, tu.path, f"{type(exc).__name__}: {exc}"))
            continue
        all_results.extend(results)
        for r in results:
            notes.extend(f"{fn.name}: {n}" for n in r.notes)
        # A kernel not fully evaluated is never silent: one KL904 names what was not, and why.
        runs: list[tuple[evcov.SiteStatus, ...]] = []
        main_runs = [r for r in results if not r.regions and r.odd_offset is None]
        for r in results:
            if r.regions and runs:
                # Regions re-evaluated with other samples: only their findings count, so only their sites.
                inside = tuple(st for st in r.coverage
                               if any(first <= st.key[0] <= last for _l, _c, first, last in r.regions))
                # (Line ranges, not guards: a complete re-evaluation of those lines; see _frugal.)
                covered = {ln for g, c, first, last in r.regions if g == c == 0 for ln in range(first, last + 1)}
                runs[-1] = evcov.union(runs[-1], inside, covered)
            elif not r.regions and r.odd_offset is None:
                runs.append(r.coverage)
        unread = unread_calls.unread_calls(fn, lines)  # statements clang dropped (eval/unread_calls.py)
        if unread and runs:
            runs = [run + unread for run in runs]
        record = evcov.merge(fn, tu.path, runs,
                             all_guessed=len(main_runs) > 1 and all(r.shape.guess for r in main_runs))
        if tu.stubbed:  # includes not found: a name they would declare is missing code, not a clean kernel
            record = evcov.with_unresolved(record, parse_problems.unresolved_uses(fn, tu))
        records.append(record)
        if skipped:
            diags.append(parse_problems.out_of_time(tu.path, fn, "rule" + "s" * (len(skipped) > 1) + " "
                                                    + ", ".join(sorted(skipped))))
        if record.status != "full":
            diags.append(parse_problems.incomplete(tu.path, fn, record))
    diags.extend(_occupancy(tu, text, options, all_results))
    diags.sort(key=lambda d: d.sort_key())
    return LintResult(path, tuple(diags), tuple(k.name for k in tu.kernels), tuple(dict.fromkeys(notes)),
                      tuple(all_results), tuple(records))


def _may_define_kernels(text: str, path: str, options: LintOptions) -> bool:
    """Whether clang could find a kernel in the file: its text, the headers it reaches, the `-D` macros and
    the `#define`s of the includers it may be parsed through (project/kernel_text.py): all those
    `includers_of` ranks (parse_in_project tries the first MAX_INCLUDERS), so that no file is read by
    clang for the ranking."""
    from kernlint.project.kernel_text import may_define_kernels

    index: Any = options.project
    includers: list[str] = []
    if index is not None and path not in ("", "<stdin>", "-"):
        try:
            includers = index.includer_set(path)
        except Exception:  # noqa: BLE001 - the index only adds context: parse as without one
            return True
    return may_define_kernels(text, path, options.include_dirs, options.macros, includers)


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
    from kernlint.engine.suppress import apply_suppressions, parse_suppressions


    result = lint_source(text, path, options)
    kept = apply_suppressions(path, result.diagnostics, parse_suppressions(text), ALL_RULES,
                              unanalysed=unanalysed_lines(result))
    kept.sort(key=lambda d: d.sort_key())
    return LintResult(result.path, tuple(kept), result.kernels, result.notes, result.results, result.coverage)


def unanalysed_lines(res: Any) -> list[tuple[int, int]]:
    """The (first, last) line ranges that no analysis looked at: the rest of a function past the front
    end's statement limit or its work budget (an OpaqueStmt TOO_LARGE or OUT_OF_BUDGET), in the
    translation units the kernels ran in."""
    out: set[tuple[int, int]] = set()
    seen: set[int] = set()
    for r in res.results:
        tu = r.unit
        if tu is None or id(tu) in seen:
            continue
        seen.add(id(tu))
        # (a header's lines are not this file's; a function no kernel reached was not lowered, nor analysed)
        for fn in (*tu.kernels, *tu.functions.in_file(lowered=True)):
            for s in ir.iter_statements(fn.body):
                if isinstance(s, ir.OpaqueStmt) and s.reason in (ir.TOO_LARGE, ir.OUT_OF_BUDGET):
                    out.add((s.span.line, s.span.end_line))
    return sorted(out)
