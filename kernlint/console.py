"""The `kernlint` console script: answers `--version` before loading the command line, else runs `kernlint.cli.run`."""
from __future__ import annotations

import sys


def run() -> None:
    if sys.argv[1:] == ["--version"]:
        # Without click and the option table (about 40 ms): the same line click's version option prints.
        from kernlint import __version__

        sys.stdout.write(f"kernlint, version {__version__}\n")
        sys.stdout.flush()
        return
    from kernlint.cli import run as cli_run

    cli_run()


if __name__ == "__main__":  # pragma: no cover
    run()
