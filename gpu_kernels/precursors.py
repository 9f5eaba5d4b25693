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

CUDA kernels (foot of the file): :func:`could_result_in_cuda`, :func:`precursor_counts_cuda`,
one thread per query over the same scalar core.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit, prange

from . import _cuda
from .summary_rows import apply_into, ts_equal, ts_le

__all__ = ["could_result_in", "precursor_counts", "precursor_counts_serial", "count_precursors",
           "could_result_in_cuda", "precursor_counts_cuda"]


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


@njit(cache=True, nogil=True, inline="always")
def count_precursors(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, act_locs, seg_ptr, t_ts,
                     t_cnt, lq, q_row, buf):
    """Active pointstamps other than ``(lq, q_row)`` that could-result-in it (scalar core of
    :func:`precursor_counts` and its CUDA kernel); ``buf`` is ``W`` entries of work space."""
    W = m + K
    count = 0
    for ia in range(act_locs.shape[0]):
        la = act_locs[ia]
        r = row_of[la]
        p = _find_pair(pair_ptr, pair_dst, r, lq)
        if p < 0:
            continue
        for j in range(seg_ptr[la], seg_ptr[la + 1]):
            if t_cnt[j] <= 0:
                continue
            if la == lq and ts_equal(t_ts[j], q_row, W):
                continue        # the pointstamp itself
            for k in range(sum_ptr[p], sum_ptr[p + 1]):
                apply_into(sums[k], t_ts[j], buf, m, K)
                if ts_le(buf, q_row, m, W):
                    count += 1
                    break
    return count


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
        out[i] = count_precursors(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, act_locs,
                                  seg_ptr, t_ts, t_cnt, q_loc[i], q_ts[i], buf)
    return out


@njit(cache=True, nogil=True)
def precursor_counts_serial(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, act_locs, seg_ptr,
                            t_ts, t_cnt, q_loc, q_ts):
    """:func:`precursor_counts` on one thread: for the many small queries of the exchange
    protocol's guards (``engine.exchange.multisets``), where starting the thread pool costs more
    than the queries."""
    q, W = q_ts.shape
    K = W - m
    out = np.zeros(q, dtype=np.int64)
    buf = np.empty(W, dtype=np.int64)
    for i in range(q):
        out[i] = count_precursors(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, act_locs,
                                  seg_ptr, t_ts, t_cnt, q_loc[i], q_ts[i], buf)
    return out


# -- CUDA ---------------------------------------------------------------------------------------
#
# Both queries are embarrassingly parallel: one thread per query row, running the twins'
# scalar core (``_cri``, ``count_precursors``). Numba ``@cuda.jit`` so that the core is shared
# and the kernels run under the simulator. Each thread's ``W``-entry work row is a row of a
# ``[n, W]`` scratch array (device code cannot allocate).

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    cri = _cuda.device(_cri)
    precursors = _cuda.device(count_precursors)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def cri_rows(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, l1, t1, l2, t2, buf, out):
        """out[i] <- (l1[i], t1[i]) could-result-in (l2[i], t2[i]); thread per query."""
        i = cuda.grid(1)
        if i < out.shape[0]:
            K = t1.shape[1] - m
            out[i] = cri(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, l1[i], t1[i], l2[i],
                         t2[i], buf[i])

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def precursor_rows(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, act_locs, seg_ptr, t_ts,
                       t_cnt, q_loc, q_ts, buf, out):
        """out[i] <- precursor count of query i; thread per query."""
        i = cuda.grid(1)
        if i < out.shape[0]:
            K = q_ts.shape[1] - m
            out[i] = precursors(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, K, act_locs,
                                seg_ptr, t_ts, t_cnt, q_loc[i], q_ts[i], buf[i])

    return types.SimpleNamespace(cri_rows=cri_rows, precursor_rows=precursor_rows)


def could_result_in_cuda(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, l1, t1, l2, t2, *,
                         tpb=None):
    """CUDA version of :func:`could_result_in` (Numba ``@cuda.jit`` over the twin's
    ``_cri``): thread per query, ``O(log P + A W)`` each.
    Bytes per query: its two timestamps (``16 W``), the binary search over the source's
    pairs (``O(log P)`` 4-byte reads) and the pair's summaries. No sync inside."""
    xp = _cuda.namespace(t1, t2)
    n, W = t1.shape
    out = xp.zeros(n, xp.bool_)
    buf = xp.empty((n, W), xp.int64)
    _cuda.launch(_kernels().cri_rows, n, row_of, pair_ptr, pair_dst, sum_ptr, sums, int(m), l1,
                 t1, l2, t2, buf, out, tpb=tpb)
    return out


def precursor_counts_cuda(row_of, pair_ptr, pair_dst, sum_ptr, sums, m, act_locs, seg_ptr,
                          t_ts, t_cnt, q_loc, q_ts, *, tpb=None):
    """CUDA version of :func:`precursor_counts` (Numba ``@cuda.jit`` over
    :func:`count_precursors`, the twin's core): thread per query, each scanning the active
    locations' table rows (shared by all threads, so L2-resident): ``O(active locations x
    log P + active pointstamps x A x W)`` per query, as the twin. No sync inside."""
    xp = _cuda.namespace(t_ts, q_ts)
    q, W = q_ts.shape
    out = xp.zeros(q, xp.int64)
    buf = xp.empty((q, W), xp.int64)
    _cuda.launch(_kernels().precursor_rows, q, row_of, pair_ptr, pair_dst, sum_ptr, sums, int(m),
                 act_locs, seg_ptr, t_ts, t_cnt, q_loc, q_ts, buf, out, tpb=tpb)
    return out
