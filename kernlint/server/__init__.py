"""`kernlint server`: a Language Server over stdio (needs the `server` extra: pygls and lsprotocol).

May import kernlint.runner, kernlint.reporters and below (the layers: tests/test_layers.py).

`main` checks the extra is installed, keeps standard output for the protocol alone (anything else
written to it, by kernlint or a library, goes to standard error) and serves until the client exits.
"""
from __future__ import annotations

import sys

INSTALL_HINT = "kernlint server needs pygls and lsprotocol: pip install 'kernlint[server]'"
USAGE = """\
usage: kernlint server [--cache-dir DIR] [--no-cache]

Serve the Language Server Protocol over standard input and output (for an editor to start).
  --cache-dir DIR  directory of kernlint's caches  [default: $KERNLINT_CACHE_DIR, else ~/.cache/kernlint]
  --no-cache       read and write no result cache
"""


def main(argv: list[str]) -> int:
    """Run the server with the arguments after `server`; the exit status (2: usage error or missing extra)."""
    cache_dir, use_cache = None, True
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if arg == "--no-cache":
            use_cache = False
        elif arg == "--cache-dir" and args:
            cache_dir = args.pop(0)
        elif arg.startswith("--cache-dir="):
            cache_dir = arg.split("=", 1)[1]
        elif arg == "--stdio":
            pass  # what editors' LSP clients often pass; stdio is the only transport
        else:
            sys.stderr.write(f"kernlint server: error: unexpected argument {arg!r}\n{USAGE}")
            return 2
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        sys.stderr.write(f"kernlint: error: {INSTALL_HINT}\n")
        return 2
    import os

    from kernlint.server.protocol import build

    # Every cache (results, project index, ptxas figures) follows these, as with the CLI's flags.
    if cache_dir:
        os.environ["KERNLINT_CACHE_DIR"] = cache_dir
    if not use_cache:
        os.environ["KERNLINT_NO_CACHE"] = "1"

    # The protocol's stream is a duplicate of the real standard output; file descriptor 1 and sys.stdout
    # then point at standard error, so a stray print (or a subprocess's output) cannot corrupt a message.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    from kernlint.project.clang_scan import read_in_process

    read_in_process()  # the server lints in a thread: its project index reads files here, not in forked workers
    server = build(cache_dir, use_cache)
    server.start_io(sys.stdin.buffer, protocol_out)
    return 0
