"""The `kernlint compare BASE.json HEAD.json` command: reads two reports, prints what got worse, sets the exit status."""
from __future__ import annotations

import json
import sys

import click

from kernlint.base.exitcodes import EXIT_OK, EXIT_USAGE
from kernlint.cli.usage import Command

EXIT_REGRESSED = 1


@click.command(name="compare", cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("base", type=str)
@click.argument("head", type=str)
@click.option("--max-regression", default="5%", metavar="PERCENT", show_default=True,
              help="Exit 1 when a kernel's modelled cost rises by more than this.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
              help="markdown: a table for a pull-request comment.")
def compare_command(base: str, head: str, max_regression: str, fmt: str) -> None:
    """Compare two `kernlint --format json` reports (the base and the head of a change), kernel by kernel.

    Kernels are matched by file, name and template arguments, not by line. Lists the figures that got
    worse (global bytes per thread, shared-memory wavefronts per warp, active lanes, occupancy) and the
    findings a kernel gained. Exit status: 0 nothing rose by more than --max-regression, 1 something did,
    2 a report could not be read.
    """
    from kernlint.cli.compare import ReportError, compare, parse_threshold, render

    try:
        threshold = parse_threshold(max_regression)
    except ValueError:
        _fail(f"--max-regression: expected a percentage like 5%, got {max_regression!r}")
    docs = []
    for path in (base, head):
        try:
            with open(path, encoding="utf-8") as fh:
                docs.append(json.load(fh))
        except OSError as exc:
            _fail(f"{path}: cannot read: {exc.strerror or exc}")
        except (ValueError, UnicodeDecodeError) as exc:
            _fail(f"{path}: not a JSON document: {exc}")
    try:
        result = compare(docs[0], docs[1])
    except ReportError as exc:
        _fail(f"{base if _bad(docs[0]) else head}: {exc}")
    click.echo(render(result, threshold, markdown=fmt == "markdown"), nl=False)
    sys.exit(EXIT_REGRESSED if any(d.regressed(threshold) for d in result.diffs) else EXIT_OK)


def _bad(doc: object) -> bool:
    from kernlint.cli.compare import ReportError, kernel_figures

    try:
        kernel_figures(doc)
    except ReportError:
        return True
    return False


def _fail(message: str) -> None:
    click.echo(f"kernlint: error: {message}", err=True)
    sys.exit(EXIT_USAGE)
