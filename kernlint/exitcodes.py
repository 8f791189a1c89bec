"""The exit-code policy, in one place (as black's `Report.return_code`).

    0  EXIT_OK        nothing at or above --fail-on was found (findings below it may be printed)
    1  EXIT_FINDINGS  at least one finding at or above --fail-on (default: warning)
    2  EXIT_USAGE     the run itself went wrong: bad flags or config, a missing path, a directory
                      with no CUDA files, unreadable or binary input. The other paths
                      are still linted and reported, but a gate must not pass on a partial run,
                      so 2 wins over 1.

A kernel that fails to parse gets an error-severity KL900 finding and the rest of the file is still analysed
and reported; the CLI then also counts the run as an error (2), since part of the input was not
checked (STYLE.md: "2 usage/config/parse error").
"""
from __future__ import annotations

from collections.abc import Iterable

from kernlint.diagnostics import Diagnostic, Severity

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def exit_code(diagnostics: Iterable[Diagnostic], fail_on: Severity, had_errors: bool) -> int:
    """Return the process exit status for a run that reported `diagnostics`.

    `had_errors` is true when any usage or input error was reported during the run.
    """
    if had_errors:
        return EXIT_USAGE
    if any(d.severity >= fail_on for d in diagnostics):
        return EXIT_FINDINGS
    return EXIT_OK
