"""Could-result-in queries and Naiad precursor counts through ``Psi`` rows.

CPU twins (Numba). ``Psi`` rows come in the CSR form of :mod:`gpu_kernels.closure` for a set
of source locations: ``row_of[l]`` is the row index of source ``l`` (-1 if its row was not
computed), ``pair_ptr[r]:pair_ptr[r+1]`` its pairs with ascending targets ``pair_dst``, and
``sum_ptr``/``sums`` each pair's summary rows.

* :func:`could_result_in` -- row ``i`` is ``(l1[i], t1[i]) <=cri (l2[i], t2[i])``: some ``s``
  in ``Psi[l1, l2]`` has ``s(t1) <= t2``. O(log P + A * W) per query.
* :func:`precursor_counts` -- for each query pointstamp, the number of *other* active
  pointstamps (positive rows of the count table) that could-result-in it. O(active locations
  * log P + active pointstamps * A * W) per query; queries run in parallel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .summary_rows import apply_into, ts_equal, ts_le

__all__ = ["could_result_in", "precursor_counts"]


@njit(cache=True, nogil=True, inline="always")
def _find_pair(pair_ptr, pair_dst, r, target):
    lo, hi = pair_ptr[r], pair_ptr[r + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if pair_dst[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    if lo < pair_ptr[r + 1] and pair_dst[lo] == target:
        return lo
    return -1


@njit(cache=True, nogil=True, inline="always")
def _cri(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, l1, t1, l2, t2, buf):
    r = row_of[l1]
    p = _find_pair(pair_ptr, pair_dst, r, l2)
    if p < 0:
        return False
    for k in range(sum_ptr[p], sum_ptr[p + 1]):
        apply_into(sums[k], t1, buf, m, K)
        if ts_le(buf, t2, m, m + K):
            return True
    return False


@njit(cache=True, nogil=True)
def could_result_in(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, l1, t1, l2, t2):
    """``bool[n]``: could-result-in for each query row (``t1``, ``t2`` are ``int64[n, m+K]``)."""
    n, W = t1.shape
    K = W - m
    out = np.zeros(n, dtype=np.bool_)
    buf = np.empty(W, dtype=np.int64)
    for i in range(n):
        out[i] = _cri(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, l1[i], t1[i], l2[i], t2[i], buf)
    return out


@njit(cache=True, nogil=True, parallel=True)
def precursor_counts(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, act_locs, seg_ptr,
                     t_ts, t_cnt, q_loc, q_ts):
    """``int64[q]``: active pointstamps other than the query that could-result-in it.

    ``act_locs`` lists the locations with an active pointstamp; the table rows of location
    ``l`` are ``seg_ptr[l]:seg_ptr[l+1]`` of ``t_ts``/``t_cnt`` (positive counts are active).
    """
    q, W = q_ts.shape
    K = W - m
    out = np.zeros(q, dtype=np.int64)
    for i in prange(q):
        buf = np.empty(W, dtype=np.int64)
        lq = q_loc[i]
        count = 0
        for la in act_locs:
            r = row_of[la]
            p = _find_pair(pair_ptr, pair_dst, r, lq)
            if p < 0:
                continue
            for j in range(seg_ptr[la], seg_ptr[la + 1]):
                if t_cnt[j] <= 0:
                    continue
                if la == lq and ts_equal(t_ts[j], q_ts[i], W):
                    continue        # the pointstamp itself
                for k in range(sum_ptr[p], sum_ptr[p + 1]):
                    apply_into(sums[k], t_ts[j], buf, m, K)
                    if ts_le(buf, q_ts[i], m, W):
                        count += 1
                        break
        out[i] = count
    return out
