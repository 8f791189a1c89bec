"""Linting many files: the per-file work (a picklable top-level function) and the worker pool behind `-j`.

Each file's outcome (findings, coverage, source text, input problems, and whatever the file's lint
wrote to stderr) is returned to the CLI, which prints it in input order, so `-j N` output is
byte-identical to `-j 1`. A file that raises, or whose worker process dies (a libclang crash), is
reported as that file's problem; the other files are still linted.

Worker processes, their limits and what their death means live in kernlint/system/isolation.py.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from kernlint.base.frozen import frozen


@frozen
class FileJob:
    """One input: `path` to read (or `data` already read, for standard input), shown as `name`."""

    path: str
    name: str
    data: bytes | None = None
    settings: Any = None  # config.Settings of this file
    options: Any = None  # engine.LintOptions of this file, without the project index
    build_dir: str | None = None
    no_project: bool = False
    # The directory argument the file was found under: the project when no ancestor holds a marker.
    project_hint: str | None = None


@frozen
class LintSetup:
    """What every file's lint needs, the same for all files of a run."""

    project_dir: str | None = None
    keep_results: bool = False  # keep KernelResults (evaluations) for --confirm
    tracebacks: bool = False
    fix: bool = False  # apply fixes to the file
    diff: bool = False  # only compute the fixes' diff
    arch: str | None = None  # the run's architecture, for the roofline rows
    roofline_peak: Any = None  # config roofline-peak, for the roofline rows
    work_budget: int | None = None  # evaluation steps per file before the rest is skipped (KL904; deadline.py)
    scan_limit_s: float | None = None  # CPU seconds the project index may spend scanning one file (a guard)
    record: bool = False  # record what each lint depended on, for the result cache (kernlint.runner.resultcache)
    # Absolute paths of every file this run lints: a kernel another file reaches in one of them is
    # linted by that file's own job, not again for each file that reaches it (parallel._lint_reached).
    run_paths: frozenset[str] = frozenset()


@frozen
class FileOutcome:
    """One file's contribution to the report. `problems` are (path, message, line) for `InputProblem`."""

    name: str
    text: str | None = None
    diagnostics: tuple = ()
    coverage: tuple = ()
    problems: tuple[tuple[str, str, int], ...] = ()
    notes: tuple[str, ...] = ()  # project-index notes: printed once per run by the caller
    stderr: str = ""
    linted: bool = False  # the file was analysed (it counts in files_checked)
    fixed: int = 0  # findings fixed (--fix) or fixable (--diff)
    diff: str = ""
    rooflines: tuple = ()  # roofline.Roofline rows of the file's kernels (--statistics, reporters)
    result: Any = field(default=None, compare=False)  # the LintResult, only with `keep_results`
    deps: Any = field(default=None, compare=False)  # resultcache.Deps, only with `record`
    # (path, text) of the other project files whose kernels this file reaches (their findings are here too)
    sources: tuple[tuple[str, str], ...] = ()
    included_kernels: int = 0  # kernels defined in the project files it includes (the summary names them)


def project_options(options: Any, path: str, project_dir: str | None, build_dir: str | None,
                    no_project: bool, recording: Any = None, hint: str | None = None,
                    scan_limit_s: float | None = None) -> tuple[Any, tuple[str, ...]]:
    """`options` with the index of `path`'s project and its compile_commands.json flags, and the index's notes.

    With `recording` (a resultcache.Recording), the index is wrapped so that every question asked of it is recorded.
    The project is the one `project.index.project_root_for` finds (a tree without a marker: `hint`);
    `scan_limit_s`: the CPU seconds the index may spend scanning one file (ProjectIndex.build)."""
    from kernlint.project import load_index
    from kernlint.project.index import project_root_for

    if no_project or path == "-":
        return options, ()
    root, shallow = project_root_for(path, project_dir, hint)
    if root is None:
        return options, ()
    try:
        index = load_index(root, options.include_dirs, build_dir, shallow=shallow, scan_limit_s=scan_limit_s)
    except Exception as exc:  # noqa: BLE001 - the index only adds context: never lose the lint for it
        if recording is not None:
            recording.index_failed()
        return options, (f"project index of {root} not built ({type(exc).__name__}: {exc}); "
                         "files are linted alone",)
    if recording is not None:
        index = recording.wrap(index)
    flags = index.flags_for(path)
    return dataclasses.replace(options, project=index,
                               include_dirs=tuple(dict.fromkeys(options.include_dirs + flags.include_dirs)),
                               macros=tuple(dict.fromkeys(options.macros + flags.macros))), tuple(index.notes)


def lint_file(job: FileJob, setup: LintSetup, memory_error_raises: bool = False) -> FileOutcome:
    """Lint one file completely (read, lint, suppressions, selection); never raises (but MemoryError
    with `memory_error_raises`)."""
    from kernlint.system import cachenotes
    from kernlint.base import deadline

    cachenotes.take()  # what earlier work in this process recorded is not this file's to say
    err = io.StringIO()
    recording = None
    if setup.record:
        from kernlint.runner.resultcache import Recording

        recording = Recording()
    try:
        with contextlib.redirect_stderr(err), deadline.running(setup.work_budget):
            out = _lint_file(job, setup, recording)
            if recording is not None:
                if deadline.expired():  # what was cut short depends on --timeout, which the key does not hold
                    recording.deps.volatile = "the file's work budget ran out"
                out = dataclasses.replace(out, deps=recording.finish(out.text, job.path, recording.include_dirs))
    except MemoryError:
        if memory_error_raises:
            raise
        from kernlint.base.exitcodes import internal_error_message

        out = FileOutcome(job.name, problems=((job.name, internal_error_message(MemoryError("out of memory"),
                                                                                job.name), 0),))
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the others
        from kernlint.base.exitcodes import format_traceback, internal_error_message

        if setup.tracebacks:
            err.write(format_traceback(exc) + "\n")
        out = FileOutcome(job.name, problems=((job.name, internal_error_message(exc, job.name), 0),))
    return dataclasses.replace(out, stderr=err.getvalue(), notes=out.notes + cachenotes.take())


def _lint_file(job: FileJob, setup: LintSetup, recording: Any = None) -> FileOutcome:
    from kernlint.checks import ALL_RULES
    from kernlint.base.inputs import InputProblem, decode_source, read_cuda_file
    from kernlint.settings.config import is_selected
    from kernlint.engine.lint import lint_source, unanalysed_lines
    from kernlint.frontend import FrontendError
    from kernlint.engine.suppress import apply_suppressions, parse_suppressions

    name, settings = job.name, job.settings
    try:
        text = decode_source(name, job.data) if job.data is not None else read_cuda_file(Path(job.path))
    except InputProblem as exc:
        return FileOutcome(name, problems=((exc.path, exc.message, exc.line),))
    notes: tuple[str, ...] = ()
    try:
        options, notes = project_options(job.options, job.path, setup.project_dir, job.build_dir, job.no_project,
                                         recording, job.project_hint, setup.scan_limit_s)
        if recording is not None:
            recording.include_dirs = options.include_dirs
        result = lint_source(text, name, options)
    except FrontendError as exc:
        return FileOutcome(name, text=text, problems=((name, str(exc), 0),), notes=notes)
    active = {r.code for r in ALL_RULES if is_selected(r.code, r.name, name, settings, ALL_RULES)}
    from kernlint.base import deadline

    def selected(res: Any, src: str) -> list:
        # Out of time, part of the file was not analysed (KL904 says what): a suppression that silenced
        # nothing may have had a finding there, so none is called unused (an empty active set).
        kept = apply_suppressions(name, res.diagnostics, parse_suppressions(src), ALL_RULES,
                                  set() if deadline.expired() else active, unanalysed_lines(res))
        return [d for d in kept if is_selected(d.code, d.name, name, settings, ALL_RULES) or _unchecked_kept(d, settings)]

    diags = selected(result, text)
    reached = _lint_reached(job, setup, options, settings)
    if reached.left_to_run and recording is not None:
        # What this outcome holds depends on the other files of the run: a later run of this file
        # alone must lint the kernels it reaches.
        recording.deps.volatile = "kernels it reaches were linted by their own files' jobs in this run"
    fixed, diff = 0, ""
    if (setup.fix or setup.diff) and job.path != "-" and any(d.fixes for d in diags):
        from kernlint.engine.fix import fix_file

        fo = fix_file(name, text, diags, lambda new: selected(lint_source(new, name, options), new))
        if fo.changed:
            fixed = len(fo.fixed)
            if setup.diff:
                diff = fo.diff()
            else:
                try:
                    write_fixed(job.path, fo.text)
                except OSError as exc:  # a read-only file or directory, a full device: the file is as it was
                    why = f"cannot write the fixes: {exc.strerror or exc}; the file was left as it was"
                    return FileOutcome(name, text=text, diagnostics=tuple(diags), coverage=result.coverage,
                                       notes=notes, linted=True, problems=((name, why, 0),))
                text, diags = fo.text, list(fo.remaining)
    from kernlint.checks.roofline import rooflines
    from kernlint.checks.roofline_gain import with_gains

    rows = tuple(rooflines(result.results, setup.arch, setup.roofline_peak))
    return FileOutcome(name, text=text, diagnostics=tuple(with_gains(diags, rows)) + reached.diagnostics,
                       coverage=result.coverage + reached.coverage,
                       notes=notes, result=result if setup.keep_results else None, linted=True, fixed=fixed,
                       diff=diff, rooflines=rows + reached.rooflines, sources=reached.sources,
                       included_kernels=reached.included)


@frozen
class _Reached:
    """What linting a file adds for the kernels it reaches in other project files (project/reach.py)."""

    diagnostics: tuple = ()
    coverage: tuple = ()
    rooflines: tuple = ()
    sources: tuple[tuple[str, str], ...] = ()
    included: int = 0
    left_to_run: bool = False  # some reached kernels were left to their own files' jobs in this run


def _lint_reached(job: FileJob, setup: LintSetup, options: Any, settings: Any) -> _Reached:
    """Lint the kernels `job`'s file launches or instantiates that other project files define, each in its
    own file (as linting that file would: the same findings, at their own lines, under that file's
    suppressions), only those kernels. Also counts the kernels its project includes (for the summary)."""
    from kernlint.checks import ALL_RULES
    from kernlint.settings.config import is_selected
    from kernlint.frontend import FrontendError
    from kernlint.runner.reached_lints import lint_once
    from kernlint.checks.roofline_gain import with_gains

    index = options.project
    if index is None or job.path == "-":
        return _Reached()
    try:
        reached = index.reached_kernels(job.path)
        included = len(index.included_kernels(job.path))
    except Exception:  # noqa: BLE001 - the index only adds context: the file's own lint stands
        return _Reached()
    diags: list = []
    coverage: list = []
    rows: list = []
    sources = []
    # A defining file this run lints itself reports its kernels at their lines: linting them again here
    # would only repeat that work (the report shows a reached kernel once).
    left = [w for w, _n in reached if os.path.abspath(w) in setup.run_paths]
    reached = tuple((w, n) for w, n in reached if os.path.abspath(w) not in setup.run_paths)
    for where, names in reached:
        shown = where if os.path.isabs(job.name) else os.path.relpath(where)
        try:
            with open(where, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        flags = index.flags_for(where)
        opts = dataclasses.replace(
            options, only_kernels=tuple(names),
            include_dirs=tuple(dict.fromkeys(job.options.include_dirs + flags.include_dirs)),
            macros=tuple(dict.fromkeys(job.options.macros + flags.macros)))
        try:
            # Every file reaching these kernels asks the same lint: done once per run (runner/reached_lints.py).
            found, result_coverage, here = lint_once(text, shown, opts, (setup.arch, setup.roofline_peak),
                                                     functools.partial(_reached_lint, text, shown, opts, setup))
        except FrontendError:
            continue
        diags.extend(with_gains([d for d in found if d.kernel in names and (
            is_selected(d.code, d.name, shown, settings, ALL_RULES) or _unchecked_kept(d, settings))], here))
        coverage.extend(result_coverage)
        rows.extend(here)
        sources.append((shown, text))
    return _Reached(tuple(diags), tuple(coverage), tuple(rows), tuple(sources), included, bool(left))


def _reached_lint(text: str, shown: str, opts: Any, setup: LintSetup) -> tuple[tuple, tuple, tuple]:
    """The findings of a reached file's lint under its suppressions (unused ones not judged: only some kernels
    of the file were linted), its coverage and its rooflines."""
    from kernlint.checks import ALL_RULES
    from kernlint.engine.lint import lint_source, unanalysed_lines
    from kernlint.checks.roofline import rooflines
    from kernlint.engine.suppress import apply_suppressions, parse_suppressions

    result = lint_source(text, shown, opts)
    kept = apply_suppressions(shown, result.diagnostics, parse_suppressions(text), ALL_RULES, set(),
                              unanalysed_lines(result))
    return tuple(kept), tuple(result.coverage), tuple(rooflines(result.results, setup.arch, setup.roofline_peak))


def write_fixed(path: str, text: str) -> None:
    """Write the fixed `text` over `path` whole or not at all: a temporary file beside it (with its mode),
    renamed over it, so a full device or a kill mid-write leaves the original. OSError when it cannot."""
    import tempfile

    target = os.path.realpath(path)  # a link keeps pointing where it did
    data = text.encode("utf-8")
    mode = os.stat(target).st_mode
    if not os.access(target, os.W_OK):
        raise PermissionError(13, "Permission denied", path)  # (writing a new file would get round it)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".kernlint-fix-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _unchecked_kept(d: Any, settings: Any) -> bool:
    """An error KL900/KL905 (part of the input went unchecked) and a KL904 (part of a kernel was not
    analysed) are reported even when the selection leaves them out (`--select KL1`, `--ignore KL9`,
    a config's `select`/`ignore`/`per-file-ignores`), unless the code or name itself is ignored: else the
    run would say "no findings" about code it never analysed (silence must mean evaluated and clean)."""
    from kernlint.base.diagnostics import Severity
    from kernlint.base.exitcodes import UNCHECKED_CODES

    if d.code != "KL904" and (d.code not in UNCHECKED_CODES or d.severity < Severity.ERROR):
        return False
    named = {s.strip().lower() for s in settings.ignore}
    named |= {s.strip().lower() for _glob, sels in settings.per_file_ignores for s in sels}
    return d.code.lower() not in named and d.name.lower() not in named


def _lint_file_task(args: tuple[FileJob, LintSetup]) -> FileOutcome:
    """`lint_file` in an isolated worker: running out of memory is the worker's end, not a finding
    (isolation retires the worker and tries the file once more in a fresh one)."""
    return lint_file(*args, memory_error_raises=True)


def failed_outcome(job: FileJob, failure: Any, limits: Any) -> FileOutcome:
    """The outcome of a file whose worker crashed, timed out or ran out of memory: one error KL900."""
    from kernlint.checks.parse_problems import KL900
    from kernlint.base.diagnostics import Diagnostic

    if failure.kind == "timeout":
        # The analysis stops itself at its work budget (kernlint/base/deadline.py); this limit is only the last
        # guard against a hang (in libclang, say), and the message says so: it is the one verdict that a
        # loaded or slow machine can change.
        why = (f"the C++ front end or the analysis gave up on this file: {failure.detail}, the last guard "
               "against a hang (raise the limit with --timeout or the config key `timeout`)")
    elif failure.kind == "memory":
        cap = f" of {limits.memory_mb} MiB" if limits.memory_mb else ""
        why = (f"the C++ front end or the analysis gave up on this file: it needed more than the memory limit{cap}"
               f" ({failure.detail}; raise it with --memory-limit or the config key `memory-limit`)")
    elif failure.kind == "unpicklable":
        why = f"internal error in kernlint: the result for this file could not be passed back ({failure.detail})"
    else:
        why = (f"the C++ front end crashed on this file: the worker process linting it was {failure.detail} "
               "(libclang overflows its stack on very deeply nested code or macros)")
    diag = Diagnostic(path=job.name, line=1, column=1, code=KL900.code, name=KL900.name, severity=KL900.severity,
                      message=f"{why}; nothing in this file was analysed; the other files were linted")
    return FileOutcome(job.name, diagnostics=(diag,))


def with_run_paths(setup: LintSetup, jobs: Sequence[FileJob]) -> LintSetup:
    """`setup` knowing every file of the run (once: a caller that linted some from the cache set it)."""
    if setup.run_paths:
        return setup
    return dataclasses.replace(setup, run_paths=frozenset(os.path.abspath(j.path) for j in jobs if j.path != "-"))


def lint_files(jobs: Sequence[FileJob], setup: LintSetup, workers: int, limits: Any = None) -> Iterator[FileOutcome]:
    """Outcomes of `jobs`, in their order.

    With `limits` (an `isolation.Limits`) or `workers` > 1, each file is linted in an isolated worker
    process (see kernlint/system/isolation.py): a crash, timeout or memory exhaustion becomes a KL900 for that
    file. Without limits and with one worker, files are linted in this process (in-process callers,
    `--confirm`, which needs the evaluations).
    """
    if not jobs:
        return
    setup = with_run_paths(setup, jobs)
    if limits is None and workers <= 1:
        for job in jobs:
            yield lint_file(job, setup)
        return
    from kernlint.system.isolation import Failure, Limits, run_isolated

    # The analysis's modules (NumPy and all), loaded once here: forked workers inherit them instead of each
    # loading them again, and the report's modules (the IR, coverage) are then already loaded too. Loading
    # them does not load libclang, so the workers are still forked (isolation._context). The second line:
    # what every file's lint imports at its first use (function-level imports here and in engine.lint).
    from kernlint.base.startup import loading

    with loading():
        import kernlint.engine.lint  # noqa: F401
        import kernlint.checks.roofline_gain, kernlint.engine.suppress, kernlint.frontend.host_samples  # noqa: F401,E401
        import kernlint.project.kernel_text, kernlint.project.units, kernlint.runner.reached_lints  # noqa: F401,E401
        from kernlint.project.clang_scan import isolated_reads
        from kernlint.runner.resultcache import prepare_indexes

    # Each project index is built here, once, before the workers start (a forked worker inherits it): its
    # scans are then no file's time, and a slow one (bounded per file by the scan's own share of --timeout)
    # can never cost another file its result. Its clang reads run in isolated workers of their own, so
    # this process never loads libclang and the lint workers still fork cheaply.
    with isolated_reads():
        prepare_indexes([j for j in jobs if j.path != "-"], setup, complete=min(workers, len(jobs)) > 1)
    from kernlint.system.leftovers import remove_dead

    remove_dead()  # what earlier runs killed outright (SIGKILL) left in TMPDIR and the cache directory
    limits = limits or Limits()
    tasks = [(job, setup) for job in jobs]
    for i, out in run_isolated(_lint_file_task, tasks, workers, limits, quiet=not setup.tracebacks):
        yield failed_outcome(jobs[i], out, limits) if isinstance(out, Failure) else out


# ---------------------------------------------------------------------------------------------
# The run: hits from the cache, misses through the pool, outcomes in input order


def lint_files_cached(jobs: Sequence[Any], setup: Any, workers: int, cache: Any,
                      progress: Callable[[int], None] | None = None, limits: Any = None) -> Iterator[Any]:
    """Outcomes of `jobs` in their order, as `lint_files` gives them, with hits from `cache`
    (only the misses are linted, in `workers` processes under `limits`)."""
    from kernlint.runner.resultcache import _index_for, job_key, keyed_environment, prepare_indexes

    setup = with_run_paths(setup, jobs)  # every job of the run, hits included (their outcomes are reported)
    done = 0
    if cache is None or setup.fix or setup.diff or setup.keep_results:
        # (with workers, lint_files builds each project index once, before the pool)
        for outcome in lint_files(jobs, setup, workers, limits):
            done += 1
            if progress is not None:
                progress(done)
            yield outcome
        return
    from kernlint.base.inputs import ReadProblem, read_regular

    hits: dict[int, Any] = {}
    keys: dict[int, str] = {}
    roots: dict[str, Any] = {}  # directory -> its project root, for this run's lookups
    env = keyed_environment()
    misses = []
    for i, job in enumerate(jobs):
        if job.path == "-" or job.data is not None:
            misses.append(job)
            continue
        try:
            data = read_regular(Path(job.path))
        except (ReadProblem, OSError, ValueError):
            misses.append(job)  # the lint reports it
            continue
        key = keys[i] = job_key(job, setup, data, env)
        hit = cache.lookup(key, lambda job=job: _index_for(job, setup, roots))
        if hit is not None:
            hits[i] = hit
        else:
            # The bytes that were hashed are the bytes linted, even if the file changes meanwhile.
            misses.append(dataclasses.replace(job, data=data))
    if misses:
        from kernlint.project.clang_scan import isolated_reads

        with isolated_reads() if limits is not None or workers > 1 else contextlib.nullcontext():
            prepare_indexes(misses, setup, roots, complete=min(workers, len(misses)) > 1)
    record = dataclasses.replace(setup, record=True)
    it = iter(lint_files(misses, record, workers, limits)) if misses else iter(())
    try:
        for i in range(len(jobs)):
            outcome = hits.get(i)
            if outcome is None:
                outcome = next(it)
                if i in keys:
                    cache.store(keys[i], outcome)
                outcome = dataclasses.replace(outcome, deps=None)
            done += 1
            if progress is not None:
                progress(done)
            yield outcome
    finally:
        cache.prune()
