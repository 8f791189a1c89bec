"""The engine: source text to findings (`lint`), then suppressions and fixes. May import kernlint.settings and
below (the layers: tests/test_layers.py)."""
