"""The front end: CUDA source text -> `kernlint.ir.nodes.TranslationUnit`.

May import kernlint.ir and below (the layers: tests/test_layers.py).

libclang is reached only from `clang_frontend`; the rest of kernlint sees the IR alone.
"""
from __future__ import annotations

from kernlint.frontend.clang_frontend import FrontendError, parse_source, release_parses

__all__ = ["FrontendError", "parse_source", "release_parses"]
