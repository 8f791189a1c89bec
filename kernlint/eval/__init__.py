"""The warp evaluator: runs a kernel's IR for each lane of sampled warps and records what they did
(accesses, branches, loops) and what it could not evaluate (coverage).

May import kernlint.project and below (the layers: tests/test_layers.py).
"""
