"""kernlint.base.startup: a short-lived process's imports are loaded without collections and frozen out of later
ones; in any other process `loading` changes nothing. Each case runs in a fresh interpreter (a freeze is for
the life of the process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import gc, json, sys
from kernlint.base import startup
if sys.argv[1] == "cli":
    startup.short_lived()
runs = []
gc.callbacks.append(lambda phase, info: phase == "stop" and runs.append(info["generation"]))
before = gc.get_freeze_count()
with startup.loading():
    during = gc.isenabled()
    keep = [[i] for i in range(3 * gc.get_threshold()[0])]  # enough new objects for collections
    loading_runs = len(runs)
print(json.dumps({"during": during, "after": gc.isenabled(), "loading_runs": loading_runs,
                  "frozen": gc.get_freeze_count() - before, "kept": len(keep)}))
"""


def _probe(kind: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _PROBE, kind], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_short_lived_process_loads_without_collections_and_freezes() -> None:
    got = _probe("cli")
    assert got["during"] is False and got["after"] is True
    assert got["loading_runs"] == 0
    assert got["frozen"] >= got["kept"]  # what was loaded is out of later collections


def test_other_processes_unchanged() -> None:
    got = _probe("library")
    assert got["during"] is True and got["after"] is True
    assert got["loading_runs"] >= 2  # the collector ran as usual
    assert got["frozen"] == 0
