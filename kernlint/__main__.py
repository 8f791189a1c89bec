"""`python -m kernlint`: the same command line as the `kernlint` script."""
from kernlint.cli.console import run

if __name__ == "__main__":
    run()
