"""Hardware cost models shared by the static rules and `--confirm` (same code, same numbers).

Global memory (sm_70+): a warp request is served in 32-byte sectors; cost = distinct sectors the
active lanes touch, ideal = the sectors the same distinct bytes would need if packed and aligned.
Source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; Nsight Compute's
`l1tex__t_sectors_pipe_lsu_mem_global_op_ld` / `..._requests` ratio measures the same thing.
"""
from __future__ import annotations

import numpy as np

SECTOR_BYTES = 32


def _distinct_per_row(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Count distinct entries of each row of `values`, considering only `valid` entries."""
    if values.size == 0:
        return np.zeros(values.shape[:-1], dtype=np.int64)
    big = np.iinfo(np.int64).max
    v = np.where(valid, values, big)
    v = np.sort(v, axis=-1)
    changes = np.diff(v, axis=-1) != 0
    first_valid = v[..., :1] != big
    distinct = first_valid[..., 0].astype(np.int64) + np.sum(changes & (v[..., 1:] != big), axis=-1)
    return distinct


def global_sectors(address: np.ndarray, mask: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sectors touched and ideal sectors for each request (rows of 32 lanes).

    `address` and `mask` have shape (..., 32); returns two int arrays of shape (...).
    """
    first = address // SECTOR_BYTES
    last = (address + width - 1) // SECTOR_BYTES
    both = np.concatenate([first, last], axis=-1)
    valid = np.concatenate([mask, mask], axis=-1)
    sectors = _distinct_per_row(both, valid)
    distinct_addr = _distinct_per_row(address, mask)
    ideal = (distinct_addr * width + SECTOR_BYTES - 1) // SECTOR_BYTES
    return sectors, ideal


def active_lanes(mask: np.ndarray) -> np.ndarray:
    return np.sum(mask, axis=-1)
