"""Hardware cost models: sectors and wavefronts per warp request, occupancy. May import kernlint.system and
below (the layers: tests/test_layers.py)."""
