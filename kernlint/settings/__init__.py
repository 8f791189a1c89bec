"""Settings: the `[tool.kernlint]` config, its keys, values and rule selectors, which config applies to which
file, and the values of flags. May import kernlint.checks and below (the layers: tests/test_layers.py)."""
