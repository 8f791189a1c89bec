"""Linting many files: the per-file work (a picklable top-level function) and the worker pool behind `-j`.

Each file's outcome (findings, coverage, source text, input problems, and whatever the file's lint
wrote to stderr) is returned to the CLI, which prints it in input order, so `-j N` output is
byte-identical to `-j 1`. A file that raises, or whose worker process dies (a libclang crash), is
reported as that file's problem; the other files are still linted.

Workers come from a `forkserver` (or `spawn`) context, never plain `fork`: the parent may have used
libclang, whose state is not fork-safe. `-j 1` runs everything in the calling process.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class LintSetup:
    """What every file's lint needs, the same for all files of a run."""

    project_dir: str | None = None
    keep_results: bool = False  # keep KernelResults (evaluations) for --confirm
    tracebacks: bool = False
    fix: bool = False  # apply fixes to the file
    diff: bool = False  # only compute the fixes' diff
    arch: str | None = None  # the run's architecture, for the roofline rows
    roofline_peak: Any = None  # config roofline-peak, for the roofline rows


@dataclass(frozen=True)
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


def project_options(options: Any, path: str, project_dir: str | None, build_dir: str | None,
                    no_project: bool, hint: str | None = None) -> tuple[Any, tuple[str, ...]]:
    """`options` with the index of `path`'s project and its compile_commands.json flags, and the index's notes.

    The project is `--project`, else the nearest ancestor holding a marker, else (a tree without one: an
    unpacked archive, a benchmark suite) the directory argument `path` was found under (`hint`), else
    the files beside it (not below: a lone file in a big directory must not walk it): a fragment's
    includer is usually beside it."""
    from kernlint.project import find_project_root, load_index

    if no_project or path == "-":
        return options, ()
    root = Path(project_dir).resolve() if project_dir else find_project_root(path)
    shallow = False
    if root is None and os.path.isfile(path):
        if hint and os.path.isdir(hint):
            root = Path(hint).resolve()
        else:  # only the files beside it: a lone file in /tmp must not walk /tmp
            root, shallow = Path(path).resolve().parent, True
    if root is None:
        return options, ()
    try:
        index = load_index(root, options.include_dirs, build_dir, shallow=shallow)
    except Exception as exc:  # noqa: BLE001 - the index only adds context: never lose the lint for it
        return options, (f"project index of {root} not built ({type(exc).__name__}: {exc}); "
                         "files are linted alone",)
    flags = index.flags_for(path)
    return dataclasses.replace(options, project=index,
                               include_dirs=tuple(dict.fromkeys(options.include_dirs + flags.include_dirs)),
                               macros=tuple(dict.fromkeys(options.macros + flags.macros))), tuple(index.notes)


def lint_file(job: FileJob, setup: LintSetup) -> FileOutcome:
    """Lint one file completely (read, lint, suppressions, selection); never raises."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            out = _lint_file(job, setup)
    except Exception as exc:  # noqa: BLE001 - one bad file never stops the others
        from kernlint.exitcodes import format_traceback, internal_error_message

        if setup.tracebacks:
            err.write(format_traceback(exc) + "\n")
        out = FileOutcome(job.name, problems=((job.name, internal_error_message(exc, job.name), 0),))
    return dataclasses.replace(out, stderr=err.getvalue())


def _lint_file(job: FileJob, setup: LintSetup) -> FileOutcome:
    from kernlint.checks import ALL_RULES
    from kernlint.cli import InputProblem, decode_source, read_cuda_file
    from kernlint.config import is_selected
    from kernlint.engine import lint_source
    from kernlint.frontend import FrontendError
    from kernlint.suppress import apply_suppressions, parse_suppressions

    name, settings = job.name, job.settings
    try:
        text = decode_source(name, job.data) if job.data is not None else read_cuda_file(Path(job.path))
    except InputProblem as exc:
        return FileOutcome(name, problems=((exc.path, exc.message, exc.line),))
    notes: tuple[str, ...] = ()
    try:
        options, notes = project_options(job.options, job.path, setup.project_dir, job.build_dir, job.no_project,
                                         job.project_hint)
        result = lint_source(text, name, options)
    except FrontendError as exc:
        return FileOutcome(name, text=text, problems=((name, str(exc), 0),), notes=notes)
    active = {r.code for r in ALL_RULES if is_selected(r.code, r.name, name, settings, ALL_RULES)}

    def selected(res: Any, src: str) -> list:
        kept = apply_suppressions(name, res.diagnostics, parse_suppressions(src), ALL_RULES, active)
        return [d for d in kept if is_selected(d.code, d.name, name, settings, ALL_RULES)]

    diags = selected(result, text)
    fixed, diff = 0, ""
    if (setup.fix or setup.diff) and job.path != "-" and any(d.fixes for d in diags):
        from kernlint.fix import fix_file

        fo = fix_file(name, text, diags, lambda new: selected(lint_source(new, name, options), new))
        if fo.changed:
            fixed = len(fo.fixed)
            if setup.diff:
                diff = fo.diff()
            else:
                Path(job.path).write_text(fo.text, encoding="utf-8")
                text, diags = fo.text, list(fo.remaining)
    from kernlint.roofline import rooflines

    return FileOutcome(name, text=text, diagnostics=tuple(diags), coverage=result.coverage, notes=notes,
                       result=result if setup.keep_results else None, linted=True, fixed=fixed, diff=diff,
                       rooflines=tuple(rooflines(result.results, setup.arch, setup.roofline_peak)))


def _lint_file_task(args: tuple[FileJob, LintSetup]) -> FileOutcome:
    return lint_file(*args)


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _context() -> Any:
    import multiprocessing as mp

    methods = mp.get_all_start_methods()
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        # The server imports the engine once; each worker forks from it without having touched libclang.
        ctx.set_forkserver_preload(["kernlint.engine", "kernlint.parallel"])
        return ctx
    return mp.get_context("spawn")


def lint_files(jobs: Sequence[FileJob], setup: LintSetup, workers: int) -> Iterator[FileOutcome]:
    """Outcomes of `jobs`, in their order; with `workers` > 1 the files are linted in worker processes."""
    workers = min(workers, len(jobs))
    if workers <= 1:
        for job in jobs:
            yield lint_file(job, setup)
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    broken: list[int] = []
    results: dict[int, FileOutcome] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        futures = [pool.submit(_lint_file_task, (job, setup)) for job in jobs]
        for i, fut in enumerate(futures):
            if broken:
                # The pool died: results still come back for finished files; the rest run alone below.
                try:
                    results[i] = fut.result()
                except BrokenProcessPool:
                    broken.append(i)
                continue
            try:
                yield fut.result()
            except BrokenProcessPool:
                broken.append(i)
    # A worker died (e.g. a crash inside libclang): lint each unfinished file in its own process, so
    # the crash is pinned on its file and the others still get linted.
    for i in range(broken[0] if broken else len(jobs), len(jobs)):
        if i in results:
            yield results[i]
            continue
        with ProcessPoolExecutor(max_workers=1, mp_context=_context()) as solo:
            try:
                yield solo.submit(_lint_file_task, (jobs[i], setup)).result()
            except BrokenProcessPool:
                yield FileOutcome(jobs[i].name, problems=((jobs[i].name, "internal error: the worker process "
                                                           "linting this file died (a crash in libclang or "
                                                           "NumPy?); other files were linted", 0),))
