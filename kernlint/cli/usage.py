"""One style for command-line errors, click's own included: `kernlint: error: MESSAGE`, exit status 2."""
from __future__ import annotations

from typing import IO, Any

import click

from kernlint.base.exitcodes import EXIT_USAGE


class CommandLineError(click.ClickException):
    """A bad command line, printed as `kernlint: error: ...` (as every other error of kernlint is)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, command: str = "kernlint") -> None:
        super().__init__(message)
        self.command = command

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"kernlint: error: {self.format_message()} (see `{self.command} --help`)", err=True)


class Command(click.Command):
    """A click command whose usage errors (unknown option, bad choice, missing argument) read as
    kernlint's other errors instead of click's `Usage: ... Error: ...` block."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise CommandLineError(exc.format_message(), info_name or "kernlint") from None
