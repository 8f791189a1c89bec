"""Every module imports on its own, first, in a clean interpreter (no hidden import-order cycles)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "kernlint" or m.startswith("kernlint.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - report every module that fails, not only the first
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


def _modules() -> list[str]:
    out = []
    for p in sorted((ROOT / "kernlint").rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


@pytest.mark.slow
def test_every_module_imports_first() -> None:
    mods = _modules()
    assert "kernlint.engine.suppress" in mods and "kernlint.settings.config" in mods
    proc = subprocess.run([sys.executable, "-c", _PROBE, *mods], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", proc.stdout
