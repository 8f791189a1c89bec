"""The front end: CUDA source text -> `kernlint.ir.TranslationUnit`.

libclang is reached only from `clang_frontend`; the rest of kernlint sees the IR alone.
"""
from __future__ import annotations

from kernlint.frontend.clang_frontend import FrontendError, parse_source, release_parses

__all__ = ["FrontendError", "parse_source", "release_parses"]
