"""The command line: options, config, reporter choice, exit code. No analysis lives here.

Exit codes are documented once, in `kernlint.base.exitcodes`.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import click

from kernlint import __version__
from kernlint.base.diagnostics import Diagnostic
from kernlint.settings.flags import _parse_block, _parse_defines
from kernlint.base.inputs import InputProblem, display_path
from kernlint.cli.usage import Command
from kernlint.base.exitcodes import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    TRACEBACK_ENV,
    exit_code,
    format_traceback,
    internal_error_line,
    tracebacks_wanted,
)

CUDA_SUFFIXES = (".cu", ".cuh")
EPILOG = """\b
Examples:
  kernlint kernel.cu                      lint one file
  kernlint src/ --format sarif > k.sarif  lint a tree, SARIF for code scanning
  kernlint k.cu --block 32,8 --define width=4096
  kernlint --explain KL101                what a rule checks and how to fix it
  kernlint compare base.json head.json    what got worse between two --format json reports
Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage or input errors,
130 interrupted (^C).
"""


HEADER_SUFFIXES = (".h", ".hpp", ".inl", ".cpp", ".cc", ".cxx")
"""C/C++ files a directory walk lints only when their text holds CUDA device code."""
_DEVICE_MARKERS = (b"__global__", b"__device__", b"<<<")


def has_device_code(path: Path) -> bool:
    """Cheap text check: does the file mention `__global__`, `__device__` or a `<<<` launch?"""
    from kernlint.base.inputs import head

    data = head(path, 4 << 20)  # b"" for a FIFO, a device or an unreadable file: never blocks
    return any(m in data for m in _DEVICE_MARKERS)


def collect_paths(args: tuple[str, ...], exclude: tuple[str, ...] = (), *, resolver: Any = None,
                  respect_gitignore: bool = True, force_exclude: bool = False
                  ) -> tuple[list[str], list[InputProblem]]:
    """Expand directories to their CUDA sources; report missing paths and empty directories.

    A directory yields its .cu/.cuh files, and the C/C++ headers and sources (HEADER_SUFFIXES) that
    contain device code, so kernels defined in a `.h`/`.hpp` are found while a tree of plain C++
    stays quiet. The walk skips hidden directories, virtual environments, build outputs, what git
    ignores (unless `respect_gitignore` is false) and what the governing config excludes (see
    `kernlint.settings.discover`). Files named explicitly are always linted unless `force_exclude`; named
    files that are not C/C++/CUDA by their suffix get a note and are skipped.
    `exclude` (globs relative to the working directory) is used when no `resolver` is given.
    """
    from kernlint.settings.discover import LINTABLE_SUFFIXES, excluded_by, path_matches, walk

    if resolver is not None:
        excluded = excluded_by(resolver)
    else:
        cwd = Path.cwd()
        excluded = lambda path: any(path_matches(path, pat, cwd) for pat in exclude)  # noqa: E731

    def keep_file(f: str) -> bool:
        suffix = os.path.splitext(f)[1]
        if suffix not in CUDA_SUFFIXES and suffix not in HEADER_SUFFIXES:
            return False
        return not excluded(f) and (suffix in CUDA_SUFFIXES or has_device_code(Path(f)))

    files: list[str] = []
    problems: list[InputProblem] = []
    for arg in args:
        if arg == "-":
            files.append("-")
            continue
        if not arg:
            problems.append(InputProblem("''", "empty path argument"))
            continue
        p = Path(arg)
        try:
            mode = os.stat(arg).st_mode
        except FileNotFoundError:
            mode = None
        except (OSError, ValueError) as exc:  # name too long, permission denied on a parent, NUL byte
            problems.append(InputProblem(arg, f"cannot access: {getattr(exc, 'strerror', None) or exc}"))
            continue
        if mode is not None and stat.S_ISDIR(mode):
            unreadable: list[tuple[str, str]] = []
            found = walk(arg, lambda d: not excluded(d), keep_file, respect_gitignore, unreadable)
            problems.extend(InputProblem(d, f"cannot read directory: {why}") for d, why in unreadable)
            if not found:
                problems.append(InputProblem(arg, "directory contains no .cu or .cuh files "
                                                  "(nor C/C++ files with device code)"))
            files.extend(found)
        elif mode is not None:
            if force_exclude and excluded(arg):
                continue
            if p.suffix.lower() not in LINTABLE_SUFFIXES:
                click.echo(f"{arg}: note: not a CUDA or C/C++ source (by its suffix {p.suffix or '(none)'}); "
                           "skipped", err=True)
                continue
            files.append(arg)
        else:
            problems.append(InputProblem(arg, "no such file or directory"))
    return files, problems


CURRENT_PATH = "kernlint.current_path"  # ctx.meta key: the input being processed, for internal errors


class _Command(Command):
    """The command, with the policy for the unexpected (`kernlint.base.exitcodes`): a bug in kernlint is
    one line naming the file being processed and the error (the traceback with --verbose), exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        saved = os.environ.get(TRACEBACK_ENV)
        if ctx.params.get("verbose"):
            os.environ[TRACEBACK_ENV] = "1"  # read by the engine too (KL905 notes), restored below
        # Every cache (results, project index, ptxas figures) follows --cache-dir and --no-cache.
        cache_env = {"KERNLINT_CACHE_DIR": ctx.params.get("cache_dir") or None,
                     "KERNLINT_NO_CACHE": "1" if ctx.params.get("no_cache") else None}
        saved_cache = {k: os.environ.get(k) for k in cache_env}
        for k, v in cache_env.items():
            if v is not None:
                os.environ[k] = v
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise  # a reader of our output went away: click ends the run quietly (not an internal error)
        except KeyboardInterrupt:
            # Interrupted is neither "clean" nor "findings" (click would say "Aborted!" and exit 1).
            _say_on_stderr("kernlint: interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - never a traceback by default, never exit 1
            click.echo(internal_error_line(exc, ctx.meta.get(CURRENT_PATH)), err=True)
            if tracebacks_wanted():
                click.echo(format_traceback(exc), err=True)
            sys.exit(EXIT_USAGE)
        finally:
            if saved is None:
                os.environ.pop(TRACEBACK_ENV, None)
            else:
                os.environ[TRACEBACK_ENV] = saved
            for k, v in saved_cache.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@click.command(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG)
@click.argument("paths", nargs=-1, type=str)
@click.option("--format", "fmt", type=click.Choice(["text", "concise", "json", "sarif", "github"]), default=None,
              help="Output format.  [default: text]")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default=None,
              help="Lowest severity that makes the exit status 1.  [default: warning]")
@click.option("--block", "block", default=None, metavar="X[,Y[,Z]]", help="Block shape to assume for every kernel.")
@click.option("--define", "defines", multiple=True, metavar="NAME=VALUE",
              help="Value of a runtime size (kernel parameter or template argument). Repeatable.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add an include directory for parsing.")
@click.option("-D", "macros", multiple=True, metavar="MACRO[=VALUE]", help="Define a preprocessor macro.")
@click.option("--arch", default=None, metavar="sm_XX",
              help="Target architecture: device code is preprocessed for it and occupancy uses it.  [default: sm_80]")
@click.option("--select", default=None, metavar="CODES", help="Comma-separated codes, names or prefixes to enable.")
@click.option("--ignore", default=None, metavar="CODES", help="Comma-separated codes, names or prefixes to disable.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB when searching directories.")
@click.option("--fix", is_flag=True,
              help="Apply the suggested edits that re-linting proves (the finding goes, nothing new appears).")
@click.option("--diff", is_flag=True, help="Show the edits --fix would make, as a unified diff; write nothing.")
@click.option("--force-exclude", is_flag=True,
              help="Apply exclude also to files named on the command line (as ruff --force-exclude).")
@click.option("--no-respect-gitignore", is_flag=True,
              help="Walk into what .gitignore ignores too.  [default: git-ignored files are skipped]")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Read settings from this pyproject.toml or kernlint.toml.")
@click.option("--show-settings", is_flag=True, help="Print the resolved settings and exit.")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None, help="Report only findings not in FILE.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Record the current findings in FILE and exit 0.")
@click.option("--stdin-filename", default=None, help="Name to use for '-' (standard input) in messages.")
@click.option("--color/--no-color", default=None, help="Colour the text output.  [default: when a terminal]")
@click.option("--explain", default=None, metavar="RULE", help="Print the documentation of a rule and exit.")
@click.option("--list-rules", is_flag=True, help="Print the table of rules and exit.")
@click.option("--timeout", "timeout", default=None, metavar="SECONDS",
              help="Give up on a file after this many CPU seconds (KL900 for it; the other files are still linted), "
                   "the last guard against a hang; the analysis's own budget counts work, not time (config "
                   "`work-budget`, by default from this); 0: no limit.  [default: 20]")
@click.option("--memory-limit", "memory_limit", default=None, metavar="MIB",
              help="Give up on a file whose worker process needs more address space than this (KL900); "
                   "0: no limit.  [default: 1024]")
@click.option("--no-ptxas", is_flag=True, help="Do not run nvcc/ptxas for exact register counts.")
@click.option("--confirm", "confirm", is_flag=False, flag_value="trace", default=None, metavar="[trace|ncu]",
              help="Run flagged kernels on a GPU (needs kernlint[gpu]) and mark findings confirmed/refuted.")
@click.option("--project", "project_dir", default=None, metavar="DIR",
              help="Project root for the index of launches and includes.  [default: nearest ancestor with "
                   "pyproject.toml, kernlint.toml or .git]")
@click.option("--no-project", is_flag=True, help="Lint each file alone, without the project index.")
@click.option("-p", "build_dir", default=None, metavar="BUILD_DIR",
              help="Directory holding compile_commands.json (per-file -I/-D), as clang-tidy -p.")
@click.option("-j", "--jobs", "jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Lint files in N worker processes; output is the same as with -j 1 (one process). "
                   "--confirm always runs in one process.  [default: the number of cores]")
@click.option("--no-cache", is_flag=True, help="Read and write no cache (results, project index, ptxas figures).")
@click.option("--cache-dir", default=None, metavar="DIR",
              help="Directory of kernlint's caches.  [default: $KERNLINT_CACHE_DIR, else $XDG_CACHE_HOME/kernlint, "
                   "else ~/.cache/kernlint]")
@click.option("--clear-cache", is_flag=True, help="Delete kernlint's caches (in --cache-dir or the default) and exit.")
@click.option("--statistics", is_flag=True,
              help="After the findings, print a roofline table per kernel (FLOPs, bytes, intensity, bound).")
@click.option("-v", "--verbose", is_flag=True,
              help=f"Print the traceback of internal errors (as {TRACEBACK_ENV}=1 does).")
@click.version_option(__version__, "--version", prog_name="kernlint")
def main(paths: tuple[str, ...], fmt: str | None, fail_on: str | None, block: str | None, defines: tuple[str, ...],
         include_dirs: tuple[str, ...], macros: tuple[str, ...], arch: str | None, select: str | None,
         ignore: str | None, exclude: tuple[str, ...], config_path: str | None, show_settings: bool,
         baseline: str | None, write_baseline: str | None, stdin_filename: str | None, color: bool | None,
         explain: str | None, list_rules: bool, no_ptxas: bool, confirm: str | None, project_dir: str | None = None,
         no_project: bool = False, build_dir: str | None = None, verbose: bool = False,
         force_exclude: bool = False, no_respect_gitignore: bool = False, fix: bool = False,
         diff: bool = False, statistics: bool = False, jobs: int | None = None, timeout: str | None = None,
         memory_limit: str | None = None, no_cache: bool = False, cache_dir: str | None = None,
         clear_cache: bool = False) -> None:
    """Lint CUDA kernels for uncoalesced access, bank conflicts, divergence and occupancy."""
    del verbose  # read by _Command.invoke
    from kernlint.checks.rule_table import RULES as ALL_RULES  # the catalogue without the checks (no NumPy)

    if confirm is not None and confirm not in ("trace", "ncu"):
        # `--confirm` takes an optional value, so click reads `kernlint --confirm k.cu` as mode "k.cu": a value
        # that names a path or a source file is one; anything else (`--confirm=bogus`) is a bad mode.
        from kernlint.settings.discover import LINTABLE_SUFFIXES

        if not (confirm == "-" or os.path.exists(confirm) or Path(confirm).suffix.lower() in LINTABLE_SUFFIXES):
            click.echo(f"kernlint: error: --confirm: expected trace or ncu, got {confirm!r}", err=True)
            sys.exit(EXIT_USAGE)
        paths, confirm = (confirm, *paths), "trace"

    if explain is not None:
        from kernlint.checks.docs import find_rule, rule_doc

        try:
            rule = find_rule(explain, ALL_RULES)
            text = rule_doc(rule.code, ALL_RULES)
        except KeyError:
            click.echo(f"kernlint: error: unknown rule {explain!r} (see kernlint --list-rules)", err=True)
            sys.exit(EXIT_USAGE)
        except OSError as exc:
            click.echo(f"kernlint: error: the documentation of {explain!r} is missing: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        _echo_out(text)
        sys.exit(EXIT_OK)
    if clear_cache:
        from kernlint.runner.resultcache import clear

        root = Path(cache_dir) if cache_dir else _default_cache_root()
        removed = clear(root)
        click.echo(f"kernlint: removed {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'} from {root}",
                   err=True)
        sys.exit(EXIT_OK)
    if list_rules:
        from kernlint.checks.docs import rules_table

        from kernlint.engine.fix import FIXABLE_CODES

        _echo_out(rules_table(ALL_RULES, fixable=FIXABLE_CODES), nl=False)
        sys.exit(EXIT_OK)

    resolver = _resolver(config_path, fmt, fail_on, block, defines, include_dirs, arch, select, ignore, exclude,
                         timeout=timeout, memory_limit=memory_limit)
    # Run-wide settings (format, fail-on) come from the config of the working directory, or else of
    # the first path (`kernlint /abs/project` from `/`); each file's rules come from its own config.
    settings = _resolve(resolver, "-" if not paths or resolver.config_for("-") else paths[0])
    if show_settings:
        from kernlint.settings.config import resolved_settings_text

        _echo_out(resolved_settings_text(_resolve(resolver, paths[0]) if paths else settings))
        sys.exit(EXIT_OK)
    if not paths:
        click.echo("kernlint: error: no paths given (try `kernlint file.cu`, or `kernlint --help`)", err=True)
        sys.exit(EXIT_USAGE)

    from kernlint.base.startup import loading

    with loading():  # (the command line's: see kernlint/base/startup.py)
        from kernlint.settings.config import is_selected
        from kernlint.base.options import LintOptions
        from kernlint.system.isolation import default_jobs
        from kernlint.runner.parallel import FileJob, LintSetup, lint_files_cached
        from kernlint.runner.resultcache import ResultCache, cache_root

    files, problems = _guarded(lambda: collect_paths(paths, resolver=resolver, force_exclude=force_exclude,
                                                     respect_gitignore=not no_respect_gitignore))

    def options_for(s: Any) -> Any:
        return LintOptions(
            block=s.block if block is not None else None,
            config_block=s.block if block is None else None,
            defines=s.define, include_dirs=tuple(str(d) for d in s.include_dirs),
            macros=tuple(macros), arch=s.arch, occupancy_threshold=s.occupancy_threshold,
            resources=not no_ptxas,
        )

    options = options_for(settings)
    sources: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    results = []  # LintResults, kept only for --confirm (which runs in this process)
    coverage = []
    roofline_rows = []
    files_checked = 0
    diffs: list[str] = []
    fixed_count = 0
    file_jobs = []
    included_kernels = 0
    reported = _Reported()
    for f in files:
        file_settings = _resolve(resolver, stdin_filename if f == "-" and stdin_filename else f)
        name = (stdin_filename or "<stdin>") if f == "-" else f
        data = None
        if f == "-":
            from kernlint.base.inputs import ReadProblem, read_capped

            try:
                data = read_capped(sys.stdin.buffer)  # at most the size cap + 1 bytes
            except ReadProblem as exc:
                problems.append(InputProblem(name, str(exc)))
                continue
        file_jobs.append(FileJob(
            f, name, data=data, settings=file_settings, options=options_for(file_settings),
            build_dir=build_dir or (str(file_settings.compile_commands) if file_settings.compile_commands else None),
            no_project=no_project or not file_settings.project, project_hint=_directory_argument(f, paths)))
    from kernlint.base import deadline

    setup = LintSetup(project_dir=project_dir, keep_results=bool(confirm), arch=settings.arch,
                      roofline_peak=settings.roofline_peak, tracebacks=tracebacks_wanted(), fix=fix, diff=diff,
                      # Work, not time (kernlint/base/deadline.py): a file that needs more ends with its findings so
                      # far and a KL904, the same on any machine, long before the timeout would kill it.
                      work_budget=(deadline.steps_for(settings.timeout) if settings.work_budget is None
                                   else settings.work_budget or None),
                      # The project index's scan of one file: half of --timeout in CPU time (a guard).
                      scan_limit_s=settings.timeout / 2 if settings.timeout else None)
    workers = 1 if confirm else (jobs if jobs is not None else (default_jobs() if _POOL_BY_DEFAULT else 1))
    # Files are linted in isolated worker processes (a crash or hang of libclang costs only its file),
    # except under --confirm (it needs the evaluations here) and for in-process callers without -j.
    limits = None
    if not confirm and (_POOL_BY_DEFAULT or jobs is not None):
        from kernlint.system.isolation import Limits

        limits = Limits(timeout_s=settings.timeout or None, memory_mb=settings.memory_limit or None)
    # The result cache is on for a real `kernlint` process (or with --cache-dir); in-process callers
    # (tests, which may monkeypatch the engine) lint every time unless they name a cache directory.
    root = cache_root(cache_dir) if (_CACHE_BY_DEFAULT or cache_dir) and not no_cache else None
    cache = ResultCache(root) if root is not None else None
    from kernlint.cli.progress import Progress, wanted

    progress = Progress(sys.stderr, len(file_jobs)) if wanted(sys.stderr, settings.format) else None
    for outcome in lint_files_cached(file_jobs, setup, workers, cache,
                                     progress.update if progress is not None else None, limits):
        click.get_current_context().meta[CURRENT_PATH] = outcome.name
        if progress is not None and (outcome.stderr or outcome.notes):
            progress.clear()
        for note in outcome.notes:
            if note not in _NOTED:
                _NOTED.add(note)
                click.echo(f"kernlint: note: {display_path(note)}", err=True)
        if outcome.stderr:
            click.echo(outcome.stderr, err=True, nl=False)
        problems.extend(InputProblem(path, message, line) for path, message, line in outcome.problems)
        if outcome.text is not None:
            sources[outcome.name] = outcome.text
        for where, text in outcome.sources:
            sources.setdefault(where, text)
        if outcome.result is not None:
            results.append(outcome.result)
        files_checked += outcome.linted
        included_kernels += outcome.included_kernels
        # A kernel reached from several files (a header kernel and the files that launch it) reports once.
        for rec in outcome.coverage:
            if reported.add_kernel(rec):
                coverage.append(rec)
        roofline_rows.extend(outcome.rooflines)
        diagnostics.extend(d for d in outcome.diagnostics if reported.add(d))
        fixed_count += outcome.fixed
        if outcome.diff:
            diffs.append(outcome.diff)
    click.get_current_context().meta.pop(CURRENT_PATH, None)  # later errors are not this file's
    if progress is not None:
        progress.clear()

    if confirm:
        from kernlint.confirm import confirm_findings

        diagnostics, confirm_notes = confirm_findings(diagnostics, results, sources, mode=confirm, options=options)
        for n in confirm_notes:
            click.echo(f"kernlint: note: {display_path(n)}", err=True)

    if write_baseline:
        from kernlint.reporters.baseline import write_baseline as dump

        try:
            Path(write_baseline).write_text(dump(diagnostics, sources), encoding="utf-8")
        except OSError as exc:
            click.echo(f"{display_path(write_baseline)}: error: cannot write the baseline: {exc.strerror or exc}",
                       err=True)
            sys.exit(EXIT_USAGE)
        click.echo(f"kernlint: wrote {len(diagnostics)} findings to {write_baseline}", err=True)
        for p in problems:
            click.echo(p.render(), err=True)
        sys.exit(EXIT_USAGE if problems else EXIT_OK)
    if baseline:
        from kernlint.reporters.baseline import filter_new, load_baseline

        try:
            known = load_baseline(Path(baseline).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            click.echo(f"{baseline}: error: cannot use baseline: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        diagnostics = filter_new(diagnostics, sources, known)

    if diff:
        for p in problems:
            click.echo(p.render(), err=True)
        if diffs:
            _echo_out("".join(diffs), nl=False)
        click.echo(f"kernlint: {fixed_count} finding{'s' if fixed_count != 1 else ''} can be fixed "
                   f"in {len(diffs)} file{'s' if len(diffs) != 1 else ''} (run with --fix)", err=True)
        sys.exit(EXIT_USAGE if problems else 1 if diffs else EXIT_OK)
    if fix:
        click.echo(f"kernlint: fixed {fixed_count} finding{'s' if fixed_count != 1 else ''}", err=True)
    for p in problems:
        click.echo(p.render(), err=True)
    run_notes = _skipped_checks(settings, no_ptxas, {r.code for r in ALL_RULES
                                                     if is_selected(r.code, r.name, "", settings, ALL_RULES)})
    if settings.format not in ("json", "sarif"):
        for n in run_notes:
            click.echo(f"kernlint: note: {display_path(n)}", err=True)
    diagnostics.sort(key=lambda d: d.sort_key())
    with loading():
        from kernlint.reporters import ReportContext, render

    use_color = color if color is not None else _color_from_env(sys.stdout is not None and sys.stdout.isatty())
    ctx = ReportContext(sources=sources, rules=ALL_RULES, color=bool(use_color) and settings.format == "text",
                        version=__version__, tool_uri="https://github.com/kernlint/kernlint", root=_run_root(paths),
                        notes=tuple(run_notes), problems=tuple((p.path, p.line, p.message) for p in problems),
                        files_checked=files_checked, kernels=coverage, roofline=roofline_rows,
                        included_kernels=included_kernels,
                        statistics=statistics)
    out = render(settings.format, diagnostics, ctx)
    if statistics and roofline_rows and settings.format not in ("text", "json"):
        # concise, github and sarif have no place for the table (json carries the figures in `kernels`).
        from kernlint.checks.roofline import table

        click.echo(table(roofline_rows), err=True)
    if out:
        # click strips ANSI codes from output that is not a terminal unless told otherwise.
        _echo_out(out, nl=False, color=bool(use_color) or None)
    sys.exit(exit_code(diagnostics, settings.fail_on, bool(problems)))


class _Reported:
    """The findings and kernel records of a run so far: one reached from several files is kept once."""

    def __init__(self) -> None:
        self._diags: set[tuple[object, ...]] = set()
        self._kernels: set[tuple[object, ...]] = set()

    def add(self, d: Diagnostic) -> bool:
        key = (os.path.abspath(d.path), d.line, d.column, d.code, d.message)
        new = key not in self._diags
        self._diags.add(key)
        return new

    def add_kernel(self, rec: Any) -> bool:
        key = (os.path.abspath(rec.path), rec.name, rec.line, rec.column)
        new = key not in self._kernels
        self._kernels.add(key)
        return new


def _echo_out(text: str, **kwargs: Any) -> None:
    """Write `text` to standard output. A reader that went away (`kernlint ... | head -1`) is not an error
    of the lint: the rest of the output is discarded and the exit status stays the one the findings give
    (whether the pipe closed before or after the last write is a matter of timing)."""
    if sys.stdout is None:  # started with standard output closed (`kernlint ... >&-`)
        _say_on_stderr("kernlint: error: cannot write the report: standard output is closed")
        sys.exit(EXIT_USAGE)
    try:
        click.echo(text, **kwargs)
    except BrokenPipeError:
        _discard_stdout()
    except OSError as exc:  # a full device (ENOSPC), an I/O error: the report did not get out
        _discard_stdout()
        _say_on_stderr(f"kernlint: error: cannot write the report to standard output: {exc.strerror or exc}")
        sys.exit(EXIT_USAGE)


def _discard_stdout() -> None:
    """Point standard output at /dev/null, so that what is still buffered for it flushes without error."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):  # no file descriptor (an in-process caller's stream)
        pass


def _color_from_env(tty: bool) -> bool:
    """Colour without --color/--no-color: NO_COLOR (no-color.org) turns it off, FORCE_COLOR
    (force-color.org) turns it on even when piped, else only on a terminal. Either counts only when
    set to a non-empty value; NO_COLOR wins when both are."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR") not in (None, "", "0"):
        return True
    return tty


def _directory_argument(f: str, paths: tuple[str, ...]) -> str | None:
    """The directory argument `f` was found under (the project of a tree without a marker), or None."""
    af = os.path.abspath(f)
    for p in paths:
        if p != "-" and os.path.isdir(p):
            ap = os.path.abspath(p)
            if af.startswith(ap.rstrip(os.sep) + os.sep):
                return p
    return None


def _run_root(paths: tuple[str, ...]) -> str:
    """The project root SARIF's %SRCROOT% stands for: that of the first path, else the working directory."""
    from kernlint.project import find_project_root

    first = next((p for p in paths if p != "-"), None)
    root = find_project_root(first) if first and os.path.exists(first) else find_project_root(os.getcwd())
    return str(root) if root is not None else os.getcwd()


def _skipped_checks(settings: Any, no_ptxas: bool, active: set[str]) -> list[str]:
    """Run-level notes naming the checks that could not run here, and why (said once per run)."""
    import shutil

    notes = []
    # --no-ptxas asks for this explicitly, so only a missing nvcc is worth saying.
    if "KL402" in active and not no_ptxas and shutil.which("nvcc") is None:
        notes.append("KL402 (register-spill) was skipped: nvcc was not found on PATH, and spills are known only "
                     "from ptxas; register counts for KL401/KL403 are estimated")
    return notes


def _default_cache_root() -> Path:
    from kernlint.system.cachedir import cache_location

    return cache_location()  # with KERNLINT_NO_CACHE set too: --clear-cache still clears the directory it would use


_NOTED: set[str] = set()
_CACHE_BY_DEFAULT = False  # set by `run`, like _POOL_BY_DEFAULT
_POOL_BY_DEFAULT = False  # set by `run`: a real `kernlint` process defaults to one worker per core; in-process
# callers of `main` (tests, which may monkeypatch the engine) lint in their own process unless given -j.


def _resolver(config_path: str | None, fmt: str | None, fail_on: str | None, block: str | None,
              defines: tuple[str, ...], include_dirs: tuple[str, ...], arch: str | None, select: str | None,
              ignore: str | None, exclude: tuple[str, ...], **limits: Any) -> Any:
    """The settings resolver for this run: `--config` for every file, else each file's nearest config."""
    from kernlint.checks.rule_table import RULES as ALL_RULES  # the catalogue without the checks (no NumPy)
    from kernlint.settings.config import ConfigError
    from kernlint.settings.discover import SettingsResolver

    def make() -> Any:
        if config_path and not Path(config_path).is_file():
            raise ConfigError(Path(config_path), None, "config file not found")
        overrides = dict(
            format=fmt, fail_on=fail_on, block=_parse_block(block), define=_parse_defines(defines),
            include_dirs=include_dirs, arch=arch,
            select=[s for s in select.split(",") if s.strip()] if select else None,
            ignore=[s for s in ignore.split(",") if s.strip()] if ignore else None,
            exclude=list(exclude) if exclude else None, **limits,
        )
        resolver = SettingsResolver(ALL_RULES, overrides, Path(config_path) if config_path else None)
        resolver.load(None)  # the command-line values alone: bad ones are reported before any file is read
        return resolver

    return _guarded(make)


def _resolve(resolver: Any, path: str) -> Any:
    """The settings for `path`; a bad config file is reported (file and line) with exit status 2."""
    return _guarded(lambda: resolver.settings_for(path))


def _guarded(step: Any) -> Any:
    """Run `step()`; a ConfigError or a bad option value is one message and exit status 2."""
    from kernlint.settings.config import ConfigError

    try:
        return step()
    except ConfigError as exc:
        click.echo(f"{exc}" if exc.path is not None else f"kernlint: error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except click.BadParameter as exc:
        click.echo(f"kernlint: error: {exc.format_message()}", err=True)
        sys.exit(EXIT_USAGE)


def run() -> None:
    """Console entry point (`kernlint`, `python -m kernlint`): `main` for a short-lived process.

    A lint run allocates many small objects, so the cyclic garbage collector runs less often than
    Python's default (never turned off: memory must not grow with the number of files), and the
    process ends through `exit_process`, without the interpreter's teardown. In-process callers
    (tests) use `main` itself.
    """
    import gc

    global _POOL_BY_DEFAULT, _CACHE_BY_DEFAULT
    _POOL_BY_DEFAULT = _CACHE_BY_DEFAULT = True
    gc.set_threshold(20_000, 20, 100)
    _exit_on_sigterm()
    try:
        main.main(prog_name="kernlint")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    exit_process(code)


def _exit_on_sigterm() -> None:
    """SIGTERM ends the run as an exit does (status 143), so its workers are stopped and its temporary files
    removed (by default the signal ends the process at once, leaving both behind: issue 30)."""
    import signal

    from kernlint.base.exitcodes import EXIT_TERMINATED

    def handler(_signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        sys.exit(EXIT_TERMINATED)

    try:
        signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # not the main thread
        pass


def _say_on_stderr(line: str) -> None:
    """One line on standard error, if there is one to write to (a closed or full one: said nowhere)."""
    try:
        click.echo(line, err=True)
    except (OSError, ValueError, AttributeError):
        pass


def exit_process(code: int) -> None:
    """End the process with status `code` the way the interpreter would, less its teardown.

    Freeing every module's objects (NumPy's, libclang's, the IR) at exit costs a short run about a
    tenth of its CPU and serves nothing. What an ordinary exit does that matters still happens: the
    `atexit` handlers run (multiprocessing's, which ends worker processes still running; the shim
    PCH's temporary directory; logging's flush), then standard output and error are flushed. A reader
    that has gone away (`kernlint ... | head -1`) loses what is left, silently, and changes nothing
    of the status. Files kernlint writes (cache entries, --fix, baselines) are closed where written.
    """
    import atexit

    try:
        atexit._run_exitfuncs()  # what Py_FinalizeEx runs; a handler's exception is printed, as at exit
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):  # a closed pipe or stream: nothing more to say
                pass
        os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
