"""kernlint: a static access-pattern linter for CUDA kernels."""

__version__ = "0.1.0"
