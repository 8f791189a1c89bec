"""One line per finding, `path:line:col: KL101 [warning] message`: for editors, grep and hooks."""
from __future__ import annotations

from collections.abc import Sequence

from kernlint.base.diagnostics import Diagnostic
from kernlint.base.inputs import display_path
from kernlint.reporters import ReportContext


def format_diagnostic(diag: Diagnostic) -> str:
    """Return the single line for `diag`; newlines in the message are flattened to spaces."""
    message = display_path(" ".join(diag.message.split("\n")))  # other control characters escaped
    # `--confirm` results belong on the line too: "confirmed" / "refuted" / "not-run".
    status = f" ({diag.confirmation})" if diag.confirmation else ""
    return f"{display_path(diag.path)}:{diag.line}:{diag.column}: {diag.code} [{diag.severity.label}]{status} {message}"


def render(diagnostics: Sequence[Diagnostic], ctx: ReportContext) -> str:
    """Return one line per diagnostic, or an empty string when there are none."""
    return "".join(format_diagnostic(d) + "\n" for d in diagnostics)
