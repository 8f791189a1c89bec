"""kernlint: a static access-pattern linter for CUDA kernels."""
import os as _os

# Single-threaded BLAS, set before anything imports NumPy: the evaluator's vectors are one warp wide,
# and OpenBLAS/OpenMP worker threads only spin on the other cores (measured: 29 % more CPU per run on
# 2 cores). `setdefault`, so a user's explicit setting wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
del _var

__version__ = "0.1.0"
