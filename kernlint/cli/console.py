"""The `kernlint` console script: answers `--version` before loading the command line, runs a subcommand
(`kernlint compare ...`, `kernlint server`), else runs `kernlint.cli.command.run` (`kernlint [OPTIONS] PATHS...`)."""
from __future__ import annotations

import sys


def _server(argv: list[str]) -> int:
    from kernlint.server import main

    return main(argv)


def _compare(argv: list[str]) -> int:
    from kernlint.cli.compare_command import compare_command

    compare_command.main(argv, prog_name="kernlint compare")
    return 0


SUBCOMMANDS = {"server": _server, "compare": _compare}
"""Commands named by the first argument, each `fn(rest_of_argv) -> exit status`. A file of that name
is still linted when given as a path (`kernlint ./server`, `kernlint ./compare`)."""


def run() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        sys.exit(SUBCOMMANDS[sys.argv[1]](sys.argv[2:]))
    if sys.argv[1:] == ["--version"]:
        # Without click and the option table (about 40 ms): the same line click's version option prints.
        from kernlint import __version__

        sys.stdout.write(f"kernlint, version {__version__}\n")
        sys.stdout.flush()
        return
    from kernlint.base.startup import loading, short_lived

    short_lived()
    with loading():
        from kernlint.cli.command import run as cli_run
    cli_run()


if __name__ == "__main__":  # pragma: no cover
    run()
