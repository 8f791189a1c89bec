"""`pytest -m gpu` collects on a machine with only the runtime and `gpu` extras installed.

The dev-only dependencies (the `dev` extra, less pytest itself) are made unimportable in a child
pytest that collects the suite: a test module importing one at module level fails collection.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BLOCKER = """
import sys
BLOCKED = set(sys.argv[1].split(","))

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a dev-only dependency)")
        return None

sys.meta_path.insert(0, Blocker())
# A blocked package that is a pytest plugin (pytest-lsp, pytest-asyncio) would not be installed at all:
# its entry point is not loaded either.
from importlib.metadata import entry_points
plugins = [a for ep in entry_points(group="pytest11") if ep.value.split(":")[0].split(".")[0] in BLOCKED
           for a in ("-p", f"no:{ep.name}")]
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-m", "gpu", "-p", "no:cacheprovider", *plugins, "tests"]))
"""


def _dev_only_modules() -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in project["optional-dependencies"]["dev"]]
    mods = [n.replace("-", "_").lower() for n in names if n.lower() != "pytest"]
    assert "jsonschema" in mods  # the list really comes from pyproject
    return mods


@pytest.mark.slow
def test_gpu_tests_collect_without_the_dev_extra() -> None:
    blocked = _dev_only_modules()
    proc = subprocess.run([sys.executable, "-c", BLOCKER, ",".join(blocked)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert not re.search(r"\d+ errors?\b", out), out[-4000:]
    assert re.search(r"\b[1-9]\d*/\d+ tests collected", out), out[-2000:]  # some gpu tests, none lost
