"""Hardware cost models shared by the static rules and `--confirm` (same code, same numbers).

Global memory (sm_70+): a warp request is served in 32-byte sectors; cost = distinct sectors the
active lanes touch, ideal = the sectors the same distinct bytes would need if packed and aligned.
Source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; Nsight Compute's
`l1tex__t_sectors_pipe_lsu_mem_global_op_ld` / `..._requests` ratio measures the same thing.
"""
from __future__ import annotations

import numpy as np

SECTOR_BYTES = 32


_NONE = np.iinfo(np.int64).max  # stands for an inactive lane: sorts after every address


def global_sectors(address: np.ndarray, mask: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Sectors touched and ideal sectors for each request (rows of 32 lanes).

    `address` and `mask` have shape (..., 32); returns two int arrays of shape (...).
    The distinct addresses (and sectors) of a row are counted on the row's active addresses sorted
    (a value that differs from its left neighbour is new). One sort serves both counts when no active
    lane's access crosses a sector boundary (the usual case): the sectors `address // 32` of sorted
    addresses are sorted too. Else the first and last sectors of all lanes are sorted together.
    """
    if address.size == 0:
        return np.zeros(address.shape[:-1], dtype=np.int64), np.zeros(address.shape[:-1], dtype=np.int64)
    v = np.where(mask, address, _NONE)
    v.sort(axis=-1)
    valid = v != _NONE
    later = valid[..., 1:]
    distinct_addr = valid[..., 0] + (later & (v[..., 1:] != v[..., :-1])).sum(axis=-1)
    first = v // SECTOR_BYTES
    if not np.any(valid & (v % SECTOR_BYTES + width > SECTOR_BYTES)):
        sectors = valid[..., 0] + (later & (first[..., 1:] != first[..., :-1])).sum(axis=-1)
    else:
        last = (v + (width - 1)) // SECTOR_BYTES
        both = np.where(np.concatenate([valid, valid], axis=-1), np.concatenate([first, last], axis=-1), _NONE)
        both.sort(axis=-1)
        some = both != _NONE
        sectors = some[..., 0] + (some[..., 1:] & (both[..., 1:] != both[..., :-1])).sum(axis=-1)
    ideal = (distinct_addr * width + SECTOR_BYTES - 1) // SECTOR_BYTES
    return sectors, ideal


def active_lanes(mask: np.ndarray) -> np.ndarray:
    return np.sum(mask, axis=-1)


# --- shared memory ------------------------------------------------------------------------------
#
# Shared memory (sm_70+): 32 banks of 4-byte words; bank = (byte address / 4) mod 32. Lanes that
# touch the same word are served together (multicast); distinct words in one bank are serialised.
# A warp request of 8-byte accesses is served in two half-warp phases (lanes 0-15, 16-31) and of
# 16-byte accesses in four quarter-warp phases (8 lanes each): each phase moves at most 128 bytes,
# so a conflict-free 8-byte request costs 2 wavefronts and a 16-byte one 4. Nsight Compute counts
# the same thing: `l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum` (wavefronts) against
# `..._ideal` (sm_70+). Source: CUDA C++ Programming Guide, "Shared Memory" (compute capability 5.x+).

SHARED_BANKS = 32
BANK_BYTES = 4
_WORD_SHIFT = 2  # log2(BANK_BYTES)


def shared_phases(width: int) -> int:
    """Phases a warp request of `width`-byte accesses is split into (1, 2 or 4)."""
    if width >= 16:
        return 4
    if width >= 8:
        return 2
    return 1


def shared_wavefronts(address: np.ndarray, mask: np.ndarray, width: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bank-conflict cost of each shared-memory warp request (rows of 32 lanes).

    `address` (byte addresses; only differences and residues mod 128 matter) and `mask` (active
    lanes) have shape (..., 32); `width` is the bytes each lane moves. Returns three int arrays of
    shape (...):

    - ways: the conflict degree, max over phases and banks of the distinct 32-bit words active lanes
      touch in that bank (1 = conflict-free; 0 = no active lane);
    - wavefronts: the sum over phases of each phase's degree (what the hardware serialises);
    - ideal: the wavefronts the same request needs without conflicts (one per phase with an
      active lane: 1 for a full warp of 4-byte accesses, 2 for 8-byte, 4 for 16-byte).
    """
    address = np.asarray(address, dtype=np.int64)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), address.shape)
    lead = address.shape[:-1]
    lanes = address.shape[-1]
    phases = shared_phases(width)
    if lanes % phases:
        raise ValueError(f"{lanes} lanes do not split into {phases} phases")
    # Words each lane touches: first .. last, at most `span` of them; accesses of whole words at
    # word-aligned addresses (the usual case) touch exactly width / 4, so no column is always empty.
    # (Shifts and masks: BANK_BYTES and SHARED_BANKS are powers of two, and on int64 `>> 2` is `// 4`
    # and `& 31` is `% 32`, negative values included.)
    width = max(width, 1)
    first = address >> _WORD_SHIFT
    last = (address + (width - 1)) >> _WORD_SHIFT
    span = (width + BANK_BYTES - 1) // BANK_BYTES + 1
    if width % BANK_BYTES == 0 and not np.any(mask & ((address & (BANK_BYTES - 1)) != 0)):
        span = width // BANK_BYTES
    words = first[..., None] + np.arange(span, dtype=np.int64)  # (..., 32, span)
    valid = mask[..., None] & (words <= last[..., None])
    # One row per (request, phase), each phase's lanes laid end to end.
    rows, n = int(np.prod(lead, dtype=np.int64)) * phases, lanes // phases * span
    degree = _max_words_per_bank(words.reshape(rows, n), valid.reshape(rows, n)).reshape(*lead, phases)
    ways = degree.max(axis=-1)
    wavefronts = degree.sum(axis=-1)
    ideal = (degree > 0).sum(axis=-1)
    return ways, wavefronts, ideal


def _max_words_per_bank(words: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Max over banks of the distinct valid words in each row of `words` (shape (rows, n) -> (rows,))."""
    rows = words.shape[0]
    if words.size == 0:
        return np.zeros(rows, dtype=np.int64)
    big = np.iinfo(np.int64).max
    w = np.sort(np.where(valid, words, big), axis=-1)
    fresh = w != big
    fresh[:, 1:] &= w[:, 1:] != w[:, :-1]  # first occurrence of each distinct valid word
    # Count the fresh words of each (row, bank) pair in one bincount over row * 32 + bank.
    flat = np.arange(rows, dtype=np.int64)[:, None] * SHARED_BANKS + (w & (SHARED_BANKS - 1))
    counts = np.bincount(flat[fresh], minlength=rows * SHARED_BANKS)
    degree: np.ndarray = counts.reshape(rows, SHARED_BANKS).max(axis=-1).astype(np.int64, copy=False)
    return degree
