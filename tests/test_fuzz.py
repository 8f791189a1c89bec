"""A small seeded fuzz run: mutants of the fixtures and hostile generators, in one kernlint process."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fuzzgen import generated, hostile, mutate, seeds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOOD = "__global__ void good(const float* a, float* o) { o[threadIdx.x] = a[threadIdx.x * 32]; }\n"


@pytest.mark.slow
def test_seeded_mutants_never_crash_and_the_good_file_is_reported(tmp_path: Path) -> None:
    rng = random.Random(15)
    pool = seeds(ROOT / "fixtures")[:20]
    assert pool
    for n in range(300):
        (tmp_path / f"m{n:03d}.cu").write_bytes(mutate(rng.choice(pool), rng))
    for name, data in generated(400).items():
        (tmp_path / name).write_bytes(data)
    for name, data in hostile(0.03).items():  # the hostile inputs, small
        (tmp_path / name).write_bytes(data)
    crash = hostile(1.0)["h_unary_minus.cu"]  # full size: libclang's parse thread overflows its stack
    (tmp_path / "h_crash.cu").write_bytes(crash)
    (tmp_path / "zz_good.cu").write_text(GOOD)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernlint", "--no-ptxas", "--format", "concise",
                           str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONHASHSEED": "0"}, cwd=tmp_path)
    elapsed = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1, 2), out[-3000:]
    assert "Traceback" not in out and "internal error" not in out, out[-3000:]
    assert "zz_good.cu:1:" in proc.stdout and "KL101" in proc.stdout
    assert "h_crash.cu:1:1: KL900 [error] the C++ front end crashed" in proc.stdout  # the crash costs its file only
    assert elapsed < 300, elapsed  # generous: a loaded CI machine; about 30 s alone here
