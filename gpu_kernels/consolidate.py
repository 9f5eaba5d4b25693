"""Delta consolidation and the merge of consolidated deltas into the resident count table.

CPU twins (NumPy + Numba). Inputs are the columnar batch ``loc: int32[n]``,
``ts: int64[n, W]`` (``W = m + K``, unused counters 0), ``diff: int64[n]``.

* :func:`consolidate` sorts rows by ``(loc, ts)`` lexicographically, sums ``diff`` over equal
  rows and drops zero sums. When ``loc`` and every coordinate column fit together in 63 bits
  (the usual case: a few thousand locations, epochs and iterations below millions) the rows
  are packed into one integer key and sorted by an LSD radix sort (11-bit digits, only as
  many passes as the key has bits): O(n * passes), no comparisons. Otherwise a lexicographic
  ``np.lexsort`` (O(n log n)) is used. Either way a Numba pass does the segmented sum.
* :func:`merge_counts` merges a consolidated batch into the table (sorted the same way) in one
  linear two-pointer pass: O(r + n) for a table of ``r`` rows. It reports every location
  whose set of positive-count timestamps changed and, in strict mode, the first pointstamp
  whose count would go negative -- without touching the old table, so a rejected batch
  leaves it intact.

Bytes moved per element: consolidation reads ``4 + 8 W + 8`` bytes per row and writes the
same; the merge reads the table and the batch once and writes the new table once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .summary_rows import ts_cmp

__all__ = ["consolidate", "merge_counts", "pack_plan"]

RADIX_BITS = 11


def pack_plan(loc_max: int, col_max: np.ndarray) -> tuple[np.ndarray, int] | None:
    """Bit widths ``[loc, col0, col1, ...]`` for packing rows into one key, and the total; None
    if they do not fit 63 bits."""
    widths = [max(int(loc_max), 0).bit_length()] + [max(int(v), 0).bit_length() for v in col_max]
    total = sum(widths)
    if total > 63:
        return None
    return np.asarray(widths, dtype=np.int64), total


@njit(cache=True, nogil=True)
def _pack(loc, ts, widths):
    n, W = ts.shape
    keys = np.empty(n, dtype=np.uint64)
    for i in range(n):
        k = np.uint64(loc[i])
        for c in range(W):
            k = (k << np.uint64(widths[c + 1])) | np.uint64(ts[i, c])
        keys[i] = k
    return keys


@njit(cache=True, nogil=True)
def _radix_sort_pairs(keys, vals, nbits):
    """Stable LSD radix sort of unsigned keys on their low ``nbits`` bits, carrying ``vals``
    along (so every pass reads sequentially); returns both, sorted."""
    n = keys.shape[0]
    k_a = keys.copy()
    p_a = vals.copy()
    k_b = np.empty_like(k_a)
    p_b = np.empty_like(p_a)
    buckets = 1 << RADIX_BITS
    mask = np.uint64(buckets - 1)
    shift = 0
    while shift < nbits:
        count = np.zeros(buckets + 1, dtype=np.int64)
        sh = np.uint64(shift)
        for i in range(n):
            count[((k_a[i] >> sh) & mask) + 1] += 1
        for b in range(buckets):
            count[b + 1] += count[b]
        for i in range(n):
            d = (k_a[i] >> sh) & mask
            pos = count[d]
            k_b[pos] = k_a[i]
            p_b[pos] = p_a[i]
            count[d] = pos + 1
        k_a, k_b = k_b, k_a
        p_a, p_b = p_b, p_a
        shift += RADIX_BITS
    return k_a, p_a


@njit(cache=True, nogil=True)
def _segment_sum_keys(sorted_keys, sorted_diff, widths):
    """Sum diffs over runs of equal packed keys (equal keys are equal rows), drop zero sums,
    and unpack the surviving keys back into ``(loc, ts)``."""
    n = sorted_keys.shape[0]
    W = widths.shape[0] - 1
    out_loc = np.empty(n, dtype=np.int32)
    out_ts = np.empty((n, W), dtype=np.int64)
    out_diff = np.empty(n, dtype=np.int64)
    k = 0
    i = 0
    while i < n:
        key = sorted_keys[i]
        total = sorted_diff[i]
        j = i + 1
        while j < n and sorted_keys[j] == key:
            total += sorted_diff[j]
            j += 1
        if total != 0:
            for c in range(W - 1, -1, -1):
                w = np.uint64(widths[c + 1])
                out_ts[k, c] = np.int64(key & ((np.uint64(1) << w) - np.uint64(1)))
                key = key >> w
            out_loc[k] = np.int32(key)
            out_diff[k] = total
            k += 1
        i = j
    return out_loc[:k], out_ts[:k], out_diff[:k]


@njit(cache=True, nogil=True)
def _column_max(loc, ts):
    n, W = ts.shape
    lmax = 0
    cmax = np.zeros(W, dtype=np.int64)
    for i in range(n):
        if loc[i] > lmax:
            lmax = loc[i]
        for c in range(W):
            if ts[i, c] > cmax[c]:
                cmax[c] = ts[i, c]
    return lmax, cmax


@njit(cache=True, nogil=True)
def _segment_sum(loc, ts, diff, perm):
    """Sum diffs over runs of equal ``(loc, ts)`` in ``perm`` order; drop zero sums."""
    n, W = ts.shape
    out_loc = np.empty(n, dtype=np.int32)
    out_ts = np.empty((n, W), dtype=np.int64)
    out_diff = np.empty(n, dtype=np.int64)
    k = 0
    i = 0
    while i < n:
        a = perm[i]
        total = diff[a]
        j = i + 1
        while j < n:
            b = perm[j]
            if loc[b] != loc[a] or ts_cmp(ts[a], ts[b], W) != 0:
                break
            total += diff[b]
            j += 1
        if total != 0:
            out_loc[k] = loc[a]
            for c in range(W):
                out_ts[k, c] = ts[a, c]
            out_diff[k] = total
            k += 1
        i = j
    return out_loc[:k], out_ts[:k], out_diff[:k]


def consolidate(loc: np.ndarray, ts: np.ndarray, diff: np.ndarray):
    """Sort by ``(loc, ts)``, sum equal rows, drop zeros.

    Parameters
    ----------
    loc : int32[n]
    ts : int64[n, W], non-negative
    diff : int64[n]

    Returns
    -------
    (loc int32[k], ts int64[k, W], diff int64[k]) sorted lexicographically by ``(loc, ts)``.
    """
    n, W = ts.shape
    if n == 0:
        return loc[:0].astype(np.int32), ts[:0], diff[:0]
    lmax, cmax = _column_max(loc, ts)
    plan = pack_plan(lmax, cmax)
    if plan is not None:
        widths, total = plan
        keys, vals = _radix_sort_pairs(_pack(loc, ts, widths), diff, total)
        return _segment_sum_keys(keys, vals, widths)
    else:
        keys = [ts[:, c] for c in range(W - 1, -1, -1)] + [loc]
        perm = np.lexsort(keys)
    return _segment_sum(loc, ts, diff, perm)


@njit(cache=True, nogil=True)
def merge_counts(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip):
    """Merge a consolidated batch into the count table.

    Parameters
    ----------
    t_loc, t_ts, t_cnt : the table (int32[r], int64[r, W], int64[r]), sorted, no zero counts
    b_loc, b_ts, b_diff : the consolidated batch, sorted the same way
    strict : bool, reject a negative resulting count
    flip : bool[L], output: set for every location whose positive set changed

    Returns
    -------
    (loc, ts, cnt, bad): the new table, and -1 or the batch row whose count would go negative
    (strict mode; then the returned table is meaningless and the old one must be kept).
    """
    r, W = t_ts.shape
    n = b_ts.shape[0]
    o_loc = np.empty(r + n, dtype=np.int32)
    o_ts = np.empty((r + n, W), dtype=np.int64)
    o_cnt = np.empty(r + n, dtype=np.int64)
    i = 0
    j = 0
    k = 0
    while i < r or j < n:
        if j >= n:
            c = -1
        elif i >= r:
            c = 1
        elif t_loc[i] != b_loc[j]:
            c = -1 if t_loc[i] < b_loc[j] else 1
        else:
            c = ts_cmp(t_ts[i], b_ts[j], W)
        if c < 0:           # table row untouched
            o_loc[k] = t_loc[i]
            o_ts[k] = t_ts[i]
            o_cnt[k] = t_cnt[i]
            k += 1
            i += 1
            continue
        if c == 0:
            old = t_cnt[i]
            i += 1
        else:
            old = 0
        new = old + b_diff[j]
        if strict and new < 0:
            return o_loc[:0], o_ts[:0], o_cnt[:0], j
        if (old > 0) != (new > 0):
            flip[b_loc[j]] = True
        if new != 0:
            o_loc[k] = b_loc[j]
            o_ts[k] = b_ts[j]
            o_cnt[k] = new
            k += 1
        j += 1
    return o_loc[:k], o_ts[:k], o_cnt[:k], -1
