"""gpu_kernels.consolidate and the intake's CPU twin: sums of a batch outside int64.

Issue 23, item 2: the consolidations summed each pointstamp's diffs in wrapping int64
arithmetic, so two rows of 2**62 became a count of -2**63. Every consolidation now raises
``SumOverflow`` (the pointstamp and its exact sum) instead; sums that fit are exact even where
a partial sum does not. The CUDA kernels run the same check on the simulator
(``tests/cuda_sim/test_sim_kernels.py``).
"""

import numpy as np
import pytest

import cuda_cases as cc
from gpu_kernels.consolidate import SumOverflow, consolidate, may_overflow


@pytest.mark.parametrize("seed", range(2))
def test_gh23_sums_outside_int64_raise_on_every_cpu_path(seed):
    cc.check_sum_overflow(np.random.default_rng(seed))


def test_gh23_two_rows_of_2_62_do_not_wrap():
    loc, ts = np.zeros(2, np.int32), np.zeros((2, 2), np.int64)
    with pytest.raises(SumOverflow) as info:
        consolidate(loc, ts, np.array([1 << 62, 1 << 62], np.int64))
    assert (info.value.loc, info.value.ts, info.value.total) == (0, (0, 0), 1 << 63)


def test_may_overflow_is_false_for_ordinary_diffs_and_true_near_the_bound():
    n = 1000
    assert not may_overflow(np.ones(n, np.int64))
    assert not may_overflow(np.full(n, np.iinfo(np.int64).max // n))
    assert may_overflow(np.r_[np.ones(n - 1), np.iinfo(np.int64).max // n + 1].astype(np.int64))
    assert may_overflow(np.r_[np.ones(n - 1), -(np.iinfo(np.int64).max // n) - 1].astype(np.int64))
    assert not may_overflow(np.array([np.iinfo(np.int64).min]))   # one row: nothing to add
