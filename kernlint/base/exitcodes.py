"""The exit-code policy, in one place (as black's `Report.return_code`).

    0  EXIT_OK        nothing at or above --fail-on was found (findings below it may be printed)
    1  EXIT_FINDINGS  at least one finding at or above --fail-on (default: warning)
    2  EXIT_USAGE     the run itself went wrong: bad flags or config, a missing path, a directory
                      with no CUDA files, unreadable or binary input. The other paths
                      are still linted and reported, but a gate must not pass on a partial run,
                      so 2 wins over 1.

130 EXIT_INTERRUPTED the run was interrupted (SIGINT, ^C; 143 for SIGTERM): 128 + the signal's number, as
                      a shell reports a process the signal ended, so an interrupted CI run is neither "clean"
                      nor "findings". Workers and temporary files go with the run.

A kernel that fails to parse gets an error-severity KL900 finding and the rest of the file is still
analysed and reported; the run then also counts as an error (2), since part of the input was not
checked (STYLE.md: "2 usage/config/parse error"). A KL900 below error severity is host code that
did not parse: no kernel was left unread, so it does not change the status.

The unexpected (a bug in kernlint) follows the same rule: part of the input went unchecked, so 2,
never 1, which a CI gate would read as "findings". A crash while analysing one kernel is a KL905
finding (the other kernels and files are still reported); a crash anywhere else ends the run with
one line naming the file being processed and the error (`internal_error_line`), exit status 2. The
traceback is printed only with `--verbose` or the environment variable `KERNLINT_TRACEBACK=1`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from kernlint.base.diagnostics import Diagnostic, Severity

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


# Findings that say part of the input was not checked: a parse error, an internal error.
UNCHECKED_CODES = frozenset({"KL900", "KL905"})
TRACEBACK_ENV = "KERNLINT_TRACEBACK"


def exit_code(diagnostics: Iterable[Diagnostic], fail_on: Severity, had_errors: bool) -> int:
    """Return the process exit status for a run that reported `diagnostics`.

    `had_errors` is true when any usage or input error was reported during the run; an
    error-severity KL900 or KL905 among `diagnostics` counts as one too.
    """
    diagnostics = list(diagnostics)
    if had_errors or any(d.code in UNCHECKED_CODES and d.severity >= Severity.ERROR for d in diagnostics):
        return EXIT_USAGE
    if any(d.severity >= fail_on for d in diagnostics):
        return EXIT_FINDINGS
    return EXIT_OK


def tracebacks_wanted() -> bool:
    """Whether internal errors should come with their traceback (`KERNLINT_TRACEBACK=1`, or `--verbose`)."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in ("", "0", "no", "false", "off")


def raised_at(exc: BaseException) -> str:
    """`module.py:LINE in function` of the innermost frame of `exc`'s traceback ("" without one)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}"


def internal_error_message(exc: BaseException, path: str | None = None) -> str:
    """What follows `PATH: error: ` for an internal error (`path`: the input being processed, if any)."""
    at = raised_at(exc)
    hint = "" if tracebacks_wanted() else f"; rerun with --verbose or {TRACEBACK_ENV}=1 for the traceback"
    report = "please report it with this file" if path else "please report it"
    text = " ".join(str(exc).split())  # one line, whatever the exception says
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"internal error in kernlint: {type(exc).__name__}: {text}{f' (at {at})' if at else ''}; {report}{hint}"


def internal_error_line(exc: BaseException, path: str | None = None) -> str:
    """The one line printed for an internal error, naming the input being processed when there is one."""
    from kernlint.base.inputs import display_path

    return f"{display_path(path) if path else 'kernlint'}: error: {internal_error_message(exc, path)}"


def format_traceback(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n")
