"""Running many files: the per-file work, the worker pool behind -j, the result cache. May import
kernlint.confirm and below (the layers: tests/test_layers.py)."""
