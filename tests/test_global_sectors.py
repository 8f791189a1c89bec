"""`metrics.global_sectors` against a per-lane count: sectors touched and ideal sectors of each request."""
from __future__ import annotations

import numpy as np
import pytest

from kernlint.model.metrics import SECTOR_BYTES, global_sectors


def _reference(address: np.ndarray, mask: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    rows_a = address.reshape(-1, address.shape[-1])
    rows_m = mask.reshape(-1, mask.shape[-1])
    sectors, ideal = [], []
    for a, m in zip(rows_a.tolist(), rows_m.tolist()):
        active = [x for x, on in zip(a, m) if on]
        touched = {s for x in active for s in range(x // SECTOR_BYTES, (x + width - 1) // SECTOR_BYTES + 1)}
        sectors.append(len(touched))
        ideal.append((len(set(active)) * width + SECTOR_BYTES - 1) // SECTOR_BYTES)
    shape = address.shape[:-1]
    return np.array(sectors, dtype=np.int64).reshape(shape), np.array(ideal, dtype=np.int64).reshape(shape)


@pytest.mark.parametrize("shape", [(32,), (3, 32), (2, 8, 32), (4, 2, 8, 32), (0, 32)])
@pytest.mark.parametrize("width", [1, 2, 4, 8, 12, 16, 33])
def test_counts_match_a_lane_by_lane_count(shape: tuple[int, ...], width: int) -> None:
    rng = np.random.default_rng(sum(shape) * 100 + width)
    for trial in range(20):
        scale = int(rng.choice([1, 2, 4, 8, 16]))
        address = (rng.integers(-(1 << 10), 1 << 10, size=shape) * scale).astype(np.int64)
        if trial % 4 == 0:  # the common case: consecutive lanes, consecutive elements
            address = np.broadcast_to(np.arange(shape[-1], dtype=np.int64) * width, shape).copy() + 4096 * trial
        mask = rng.random(shape) < [1.0, 0.7, 0.2, 0.0][trial % 4]
        got = global_sectors(address, mask, width)
        want = _reference(address, mask, width)
        for g, w in zip(got, want):
            assert np.shape(g) == w.shape and np.array_equal(g, w), (address, mask, width)


def test_coalesced_and_strided_warps() -> None:
    lanes = np.arange(32, dtype=np.int64)
    full = np.ones(32, dtype=bool)
    assert [int(x) for x in global_sectors(lanes * 4, full, 4)] == [4, 4]
    assert [int(x) for x in global_sectors(lanes * 128, full, 4)] == [32, 4]
    assert [int(x) for x in global_sectors(lanes * 4 + 2, full, 4)] == [5, 4]  # misaligned: one more sector
