"""The `kernlint` console script: answers `--version` before loading the command line, dispatches the
subcommands (`kernlint compare ...`), else runs `kernlint.cli.run` (linting: `kernlint [OPTIONS] PATHS...`)."""
from __future__ import annotations

import sys


def run() -> None:
    if sys.argv[1:] == ["--version"]:
        # Without click and the option table (about 40 ms): the same line click's version option prints.
        from kernlint import __version__

        sys.stdout.write(f"kernlint, version {__version__}\n")
        sys.stdout.flush()
        return
    if sys.argv[1:2] == ["compare"]:  # a file named `compare` is still linted as `kernlint ./compare`
        from kernlint.compare_cli import compare_command

        compare_command.main(sys.argv[2:], prog_name="kernlint compare")
        return
    from kernlint.cli import run as cli_run

    cli_run()


if __name__ == "__main__":  # pragma: no cover
    run()
