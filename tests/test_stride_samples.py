"""The stride check (checks/coalescing._stride_parameter) reads the lane stride from the samples in which
lanes run the access: a sample that a guard (`tid < num`) leaves with no lane says nothing about it (as in
rodinia's streamcluster, where blockIdx (3, 2) puts every thread past num), and must not stop the check
so that the warning rests on the one sample as if no value could change it."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kernlint.checks.coalescing import _stride_parameter


def _access(strides: list[int | None], deps: set[str]) -> SimpleNamespace:
    samples = len(strides)
    mask = np.zeros((samples, 1, 32), dtype=bool)
    address = np.zeros((samples, 1, 32), dtype=np.int64)
    for s, st in enumerate(strides):
        if st is not None:
            mask[s, 0, :] = True
            address[s, 0, :] = np.arange(32) * st
    return SimpleNamespace(mask=mask, address=address, deps=deps)


ASSUMED = (("K", (3328, 5376)), ("stride", (3072, 5120)), ("num", (4096, 6144)))


def test_a_sample_without_lanes_leaves_the_other_to_name_the_stride() -> None:
    e = _access([4 * 3072, None], {"K", "stride"})
    assert _stride_parameter(e, SimpleNamespace(assumed=ASSUMED)) == (4, "stride")


def test_every_sample_with_lanes_must_agree() -> None:
    both = _access([4 * 3072, 4 * 5120], {"K", "stride"})
    assert _stride_parameter(both, SimpleNamespace(assumed=ASSUMED)) == (4, "stride")
    fixed = _access([128, 128], {"K", "stride"})  # the same stride in both samples: no parameter scales it
    assert _stride_parameter(fixed, SimpleNamespace(assumed=ASSUMED)) is None


def test_one_sample_names_a_parameter_only_when_no_other_dependency_fits() -> None:
    # 12288 is 4 * 3072 (stride) and 3 * 4096 (num): with both among the dependencies it is ambiguous
    e = _access([12288, None], {"stride", "num"})
    assert _stride_parameter(e, SimpleNamespace(assumed=ASSUMED)) is None
    assert _stride_parameter(_access([None, None], {"stride"}), SimpleNamespace(assumed=ASSUMED)) is None
