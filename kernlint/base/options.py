"""`LintOptions`: what the engine needs from settings and flags, importable without the engine (no NumPy)."""
from __future__ import annotations

from dataclasses import field

from kernlint.base.frozen import frozen


@frozen
class LintOptions:
    """What the engine needs from settings and flags (the CLI builds it from `config.Settings`)."""

    block: tuple[int, int, int] | None = None
    config_block: tuple[int, int, int] | None = None
    defines: tuple[tuple[str, int], ...] = ()
    include_dirs: tuple[str, ...] = ()
    macros: tuple[str, ...] = ()  # -D for the preprocessor (runtime sizes go in `defines`)
    arch: str | None = None
    occupancy_threshold: float = 0.5
    resources: bool = True  # ask nvcc/ptxas for exact register counts when present
    # Lint only these kernels of the file (those another file reaches: parallel._lint_file); None: all.
    only_kernels: tuple[str, ...] | None = None
    project: object = field(default=None, compare=False)  # kernlint.project.ProjectIndex of the file's project
