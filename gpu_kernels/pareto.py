"""Per-location Pareto minimum: the frontier of each location's positive-count timestamps.

CPU twins (Numba). Rows of one location are sorted lexicographically (outer coordinates,
then counters) -- the order the count table keeps. In that order only an *earlier* row can be
``<=`` a later one (a later row is lexicographically larger, so it could only be ``<=`` if
equal), hence one forward scan suffices:

* fast path, one outer coordinate (``m == 1``): the counters are compared lexicographically,
  a total order, so a row is minimal iff its counters are strictly smaller than the smallest
  counters of every earlier row -- a prefix-minimum scan, O(rows * W);
* general path (``m > 1``): a row is minimal iff no minimal row found so far is ``<=`` it,
  O(rows * frontier * W).

:func:`antichain_insert` is the building block for unsorted candidates (propagation): keep a
small antichain, skip a candidate that something present is ``<=`` to, drop what it is
``<=`` to. Bytes moved: each table row is read once; frontier rows are written once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .summary_rows import ts_cmp, ts_le

__all__ = ["segment_frontiers", "antichain_insert", "sort_rows_inplace", "replace_segments"]


@njit(cache=True, nogil=True, inline="always")
def _counters_lt(a, b, m, W):
    for p in range(m, W):
        if a[p] < b[p]:
            return True
        if a[p] > b[p]:
            return False
    return False


@njit(cache=True, nogil=True)
def segment_frontiers(t_ts, t_cnt, seg_ptr, locs, m):
    """Frontiers of the positive rows of the selected locations.

    Parameters
    ----------
    t_ts : int64[r, W], t_cnt : int64[r]
        The count table, rows of each location contiguous and sorted lexicographically.
    seg_ptr : int64[L + 1]
        Rows of location ``l`` are ``seg_ptr[l]:seg_ptr[l + 1]``.
    locs : int64[q]
        The locations to compute.
    m : int
        Outer width (``m == 1`` takes the prefix-minimum fast path).

    Returns
    -------
    (ptr int64[q + 1], rows int64[f, W]): frontier rows of ``locs[i]`` are ``ptr[i]:ptr[i+1]``,
    sorted lexicographically.
    """
    W = t_ts.shape[1]
    q = locs.shape[0]
    ptr = np.zeros(q + 1, dtype=np.int64)
    cap = 16 + q * 4
    out = np.empty((cap, W), dtype=np.int64)
    k = 0
    best = np.empty(W, dtype=np.int64)
    for i in range(q):
        l = locs[i]
        start = k
        have = False
        for r in range(seg_ptr[l], seg_ptr[l + 1]):
            if t_cnt[r] <= 0:
                continue
            row = t_ts[r]
            if m == 1:
                if have and not _counters_lt(row, best, m, W):
                    continue
                for c in range(W):
                    best[c] = row[c]
                have = True
            else:
                dominated = False
                for f in range(start, k):
                    if ts_le(out[f], row, m, W):
                        dominated = True
                        break
                if dominated:
                    continue
            if k == cap:
                cap *= 2
                grown = np.empty((cap, W), dtype=np.int64)
                grown[:k] = out[:k]
                out = grown
            for c in range(W):
                out[k, c] = row[c]
            k += 1
        ptr[i + 1] = k
    return ptr, out[:k]


@njit(cache=True, nogil=True)
def antichain_insert(buf, n, cand, m, W):
    """Insert ``cand`` into the antichain ``buf[:n]`` (timestamp rows of one location).

    Returns the new size. ``buf`` must have room for ``n + 1`` rows.
    """
    for f in range(n):
        if ts_le(buf[f], cand, m, W):
            return n
    k = 0
    for f in range(n):
        if not ts_le(cand, buf[f], m, W):
            if k != f:
                for c in range(W):
                    buf[k, c] = buf[f, c]
            k += 1
    for c in range(W):
        buf[k, c] = cand[c]
    return k + 1


@njit(cache=True, nogil=True)
def sort_rows_inplace(buf, n, W):
    """Insertion sort of ``buf[:n]`` lexicographically (antichains are small)."""
    tmp = np.empty(W, dtype=np.int64)
    for i in range(1, n):
        for c in range(W):
            tmp[c] = buf[i, c]
        j = i - 1
        while j >= 0 and ts_cmp(buf[j], tmp, W) > 0:
            for c in range(W):
                buf[j + 1, c] = buf[j, c]
            j -= 1
        for c in range(W):
            buf[j + 1, c] = tmp[c]


@njit(cache=True, nogil=True)
def replace_segments(ptr, rows, locs, sel_ptr, sel_rows):
    """Splice new segments for ``locs`` (sorted) into a CSR ``(ptr, rows)`` indexed by location.

    Returns ``(new_ptr, new_rows, changed)`` where ``changed`` lists the locations of ``locs``
    whose segment differs from the old one.
    """
    L = ptr.shape[0] - 1
    W = rows.shape[1]
    new_len = ptr[1:] - ptr[:-1]
    changed = np.empty(locs.shape[0], dtype=np.int64)
    nc = 0
    for i in range(locs.shape[0]):
        l = locs[i]
        a, b = ptr[l], ptr[l + 1]
        c, d = sel_ptr[i], sel_ptr[i + 1]
        same = (b - a) == (d - c)
        if same:
            for k in range(b - a):
                if ts_cmp(rows[a + k], sel_rows[c + k], W) != 0:
                    same = False
                    break
        if not same:
            changed[nc] = l
            nc += 1
        new_len[l] = d - c
    new_ptr = np.zeros(L + 1, dtype=np.int64)
    for l in range(L):
        new_ptr[l + 1] = new_ptr[l] + new_len[l]
    new_rows = np.empty((new_ptr[L], W), dtype=np.int64)
    j = 0
    for l in range(L):
        if j < locs.shape[0] and locs[j] == l:
            c, d = sel_ptr[j], sel_ptr[j + 1]
            new_rows[new_ptr[l]:new_ptr[l + 1]] = sel_rows[c:d]
            j += 1
        else:
            new_rows[new_ptr[l]:new_ptr[l + 1]] = rows[ptr[l]:ptr[l + 1]]
    return new_ptr, new_rows, changed[:nc]
