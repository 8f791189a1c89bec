"""bench/fuzz.py runs from a bare checkout and, with --parallel, the same batches as one after another."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_parallel_batches_keep_every_record_and_the_determinism_checks(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    # No PYTHONPATH and another working directory: the harness must find this checkout's kernlint itself.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "fuzz.py"), "--inputs", "6", "--batch", "2",
                           "--parallel", "2", "--no-hostile", "--det-every", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["runs"] == 3 and summary["parallel"] == 2 and summary["kernlint_jobs"] >= 2
    assert summary["determinism_checks"] >= 1 and summary["failures"] == {}
    records = summary["run_records"]
    assert [r["label"] for r in records] == ["mutants 0-1", "mutants 2-3", "mutants 4-5"]  # in batch order
    for r in records:
        assert r["rc"] in (0, 1, 2) and r["wall_s"] > 0 and r["cpu_s"] > 0 and r["rss_mib"] > 0
        assert r["load_1min"] >= 0 and r["missed"] == []
