"""Delta consolidation and the merge of consolidated deltas into the resident count table.

CPU twins (NumPy + Numba). Inputs are the columnar batch ``loc: int32[n]``,
``ts: int64[n, W]`` (``W = m + K``, unused counters 0), ``diff: int64[n]``.

* :func:`consolidate` sorts rows by ``(loc, ts)`` lexicographically, sums ``diff`` over equal
  rows and drops zero sums. When ``loc`` and every coordinate column fit together in 63 bits
  (the usual case: a few thousand locations, epochs and iterations below millions) the rows
  are packed into one integer key and sorted by an LSD radix sort (11-bit digits, only as
  many passes as the key has bits): O(n * passes), no comparisons. Otherwise a lexicographic
  ``np.lexsort`` (O(n log n)) is used. Either way a Numba pass does the segmented sum.
  A sum that leaves int64 raises :class:`SumOverflow` (never a wrapped count): when every
  ``|diff| <= INT64_MAX // n`` (:func:`may_overflow`, two reductions) no sum of the batch
  can leave int64 and the sums are plain; otherwise each run of two or more rows is summed
  again exactly (:func:`sum_overflows`, in 32-bit halves).
* :func:`merge_counts` merges a consolidated batch into the table (sorted the same way) in one
  linear two-pointer pass: O(r + n) for a table of ``r`` rows. It reports every location
  whose set of positive-count timestamps changed, the first pointstamp whose count would
  leave int64 (an overflow, in any mode) and, in strict mode, the first whose count would
  go negative -- without touching the old table, so a rejected batch leaves it intact.

Bytes moved per element: consolidation reads ``4 + 8 W + 8`` bytes per row and writes the
same; the merge reads the table and the batch once and writes the new table once.

CUDA kernels (:func:`consolidate_sorting_cuda`, :func:`merge_counts_cuda`, at the foot of the file;
the packed-key consolidation is :func:`gpu_kernels.intake.consolidate_cuda`, the intake without
its validation):
sort + segmented reduce, and a merge by binary search and scatter; same contracts, sharing
the scalar core ``pack_key``/``unpack_key``/``row_cmp``.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit

from . import _cuda
from .summary_rows import ts_cmp

__all__ = ["consolidate", "merge_counts", "overflow_row", "add_overflows", "pack_plan",
           "pack_key", "unpack_key", "row_cmp", "consolidate_sorting_cuda",
           "merge_counts_cuda", "SumOverflow", "may_overflow", "sum_overflows",
           "overflow_on_host"]

RADIX_BITS = 11

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class SumOverflow(ArithmeticError):
    """The ``diff`` of equal ``(loc, ts)`` rows sum outside int64: raised by every
    consolidation (CPU twins and CUDA kernels alike) for the first such run in ``(loc, ts)``
    order, instead of a wrapped sum. ``loc`` (int), ``ts`` (the row's ``W`` coordinates, a
    tuple), ``total`` (the exact sum, a Python int)."""

    def __init__(self, loc, ts, total):
        self.loc, self.ts, self.total = int(loc), tuple(int(x) for x in ts), int(total)
        super().__init__(f"the diffs of location {self.loc}, timestamp {self.ts} sum to "
                         f"{self.total}, outside int64")


def may_overflow(diff: np.ndarray) -> bool:
    """Whether some sum of entries of ``diff`` (``int64[n]``, host) could leave int64: False
    when every ``|d| <= INT64_MAX // n``, since then no sum of at most ``n`` of them can. The
    cheap test (two reductions) that keeps exact summing off the common path."""
    n = diff.shape[0]
    if n < 2:
        return False
    lim = INT64_MAX // n
    return int(diff.max()) > lim or int(diff.min()) < -lim


@njit(cache=True, inline="always")
def sum_overflows(vals, a, b):
    """Whether ``vals[a:b]`` (int64) sums outside int64, exactly: the sum is kept as
    ``hi * 2**32 + lo`` with ``0 <= lo < 2**32``, so nothing wraps however long the run
    (scalar core shared with the CUDA kernels)."""
    hi = 0
    lo = 0
    for j in range(a, b):
        d = vals[j]
        lo += d & 0xFFFFFFFF
        hi += (d >> 32) + (lo >> 32)
        lo &= 0xFFFFFFFF
    return hi < -(1 << 31) or hi >= (1 << 31)


def _overflow(loc, ts_row, diffs) -> SumOverflow:
    return SumOverflow(loc, ts_row, sum(int(x) for x in diffs))


def overflow_on_host(loc, ts, diff, W: int) -> SumOverflow:
    """The :class:`SumOverflow` the CPU twin finds in these columns (device arrays are copied
    back: one sync each), for a CUDA kernel that flagged an overflow: so every backend names
    the same pointstamp and exact sum. ``ts`` may be narrower than ``W`` (zero padded) and
    the columns of any integer dtype. A ``RuntimeError`` if the twin finds none."""
    h_loc, h_ts, h_diff = (np.asarray(_cuda.read(a)) for a in (loc, ts, diff))
    t = np.zeros((h_ts.shape[0], W), np.int64)
    t[:, :h_ts.shape[1]] = h_ts
    try:
        consolidate(h_loc.astype(np.int32), t, h_diff.astype(np.int64))
    except SumOverflow as e:
        return e
    raise RuntimeError("the device flagged a sum outside int64 that the CPU twin does not find")


def overflow_row(bad: int) -> int:
    """The batch row of a merge's ``bad`` result that flags an overflow (``bad <= -2``), else
    -1: the merge returns ``-2 - row`` for an overflow, ``row`` for a negative count."""
    return -2 - int(bad) if int(bad) <= -2 else -1


@njit(cache=True, inline="always")
def add_overflows(old, d):
    """Whether ``old + d`` leaves int64 (tested without computing it; scalar core shared with
    the CUDA kernel)."""
    if d > 0:
        return old > INT64_MAX - d
    return old < INT64_MIN - d


def pack_plan(loc_max: int, col_max: np.ndarray) -> tuple[np.ndarray, int] | None:
    """Bit widths ``[loc, col0, col1, ...]`` for packing rows into one key, and the total; None
    if they do not fit 63 bits."""
    widths = [max(int(loc_max), 0).bit_length()] + [max(int(v), 0).bit_length() for v in col_max]
    total = sum(widths)
    if total > 63:
        return None
    return np.asarray(widths, dtype=np.int64), total


@njit(cache=True, inline="always")
def pack_key(l, row, widths, W):
    """The packed key of ``(l, row)``: ``l`` then each column, ``widths[c + 1]`` bits each,
    most significant first, so keys order like the rows (scalar core, shared with the CUDA
    kernel)."""
    k = np.uint64(l)
    for c in range(W):
        k = (k << np.uint64(widths[c + 1])) | np.uint64(row[c])
    return k


@njit(cache=True, inline="always")
def unpack_key(key, widths, out_row, W):
    """Inverse of :func:`pack_key`: write the columns into ``out_row``, return the location."""
    for c in range(W - 1, -1, -1):
        w = np.uint64(widths[c + 1])
        out_row[c] = np.int64(key & ((np.uint64(1) << w) - np.uint64(1)))
        key = key >> w
    return np.int32(key)


@njit(cache=True, inline="always")
def row_cmp(la, a, lb, b, W):
    """Lexicographic comparison of ``(la, a)`` and ``(lb, b)``: -1, 0 or 1 (the table order)."""
    if la != lb:
        return -1 if la < lb else 1
    return ts_cmp(a, b, W)


@njit(cache=True, nogil=True)
def _pack(loc, ts, widths):
    n, W = ts.shape
    keys = np.empty(n, dtype=np.uint64)
    for i in range(n):
        keys[i] = pack_key(loc[i], ts[i], widths, W)
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
def _segment_sum_keys(sorted_keys, sorted_diff, widths, exact):
    """Sum diffs over runs of equal packed keys (equal keys are equal rows), drop zero sums,
    and unpack the surviving keys back into ``(loc, ts)``. With ``exact``, stop at the first
    run whose sum leaves int64: it is the last output row, and ``(a, b)`` its sorted rows
    (``(-1, -1)`` when none)."""
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
        if exact and j - i > 1 and sum_overflows(sorted_diff, i, j):
            out_loc[k] = unpack_key(key, widths, out_ts[k], W)
            return out_loc[:k + 1], out_ts[:k + 1], out_diff[:k + 1], i, j
        if total != 0:
            out_loc[k] = unpack_key(key, widths, out_ts[k], W)
            out_diff[k] = total
            k += 1
        i = j
    return out_loc[:k], out_ts[:k], out_diff[:k], -1, -1


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
def _segment_sum(loc, ts, diff, perm, sorted_diff, exact):
    """Sum diffs over runs of equal ``(loc, ts)`` in ``perm`` order; drop zero sums. With
    ``exact`` (``sorted_diff = diff[perm]``), stop at the first run whose sum leaves int64,
    as :func:`_segment_sum_keys` does."""
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
        if exact and j - i > 1 and sum_overflows(sorted_diff, i, j):
            out_loc[k] = loc[a]
            for c in range(W):
                out_ts[k, c] = ts[a, c]
            return out_loc[:k + 1], out_ts[:k + 1], out_diff[:k + 1], i, j
        if total != 0:
            out_loc[k] = loc[a]
            for c in range(W):
                out_ts[k, c] = ts[a, c]
            out_diff[k] = total
            k += 1
        i = j
    return out_loc[:k], out_ts[:k], out_diff[:k], -1, -1


def consolidate(loc: np.ndarray, ts: np.ndarray, diff: np.ndarray, maxima=None):
    """Sort by ``(loc, ts)``, sum equal rows, drop zeros.

    Parameters
    ----------
    loc : int32[n]
    ts : int64[n, W], non-negative
    diff : int64[n]
    maxima : (int, int64[W]), optional
        The largest ``loc`` and the largest entry of each column, when the caller has them
        (the host intake's validation does): saves the pass that finds them.

    Returns
    -------
    (loc int32[k], ts int64[k, W], diff int64[k]) sorted lexicographically by ``(loc, ts)``.

    Raises
    ------
    SumOverflow
        The diffs of some ``(loc, ts)`` sum outside int64 (the first such in that order).

    Examples
    --------
    >>> big = 1 << 62
    >>> loc, ts = np.zeros(3, np.int32), np.zeros((3, 1), np.int64)
    >>> consolidate(loc, ts, np.array([big, big, -big]))[2]
    array([4611686018427387904])
    >>> consolidate(loc[:2], ts[:2], np.array([big, big]))
    Traceback (most recent call last):
    ...
    gpu_kernels.consolidate.SumOverflow: the diffs of location 0, timestamp (0,) sum to 9223372036854775808, outside int64
    """
    n, W = ts.shape
    if n == 0:
        return loc[:0].astype(np.int32), ts[:0], diff[:0]
    exact = may_overflow(diff)
    lmax, cmax = _column_max(loc, ts) if maxima is None else maxima
    plan = pack_plan(lmax, cmax)
    if plan is not None:
        widths, total = plan
        keys, vals = _radix_sort_pairs(_pack(loc, ts, widths), diff, total)
        *out, a, b = _segment_sum_keys(keys, vals, widths, exact)
        if a >= 0:
            raise _overflow(out[0][-1], out[1][-1], vals[a:b])
        return tuple(out)
    keys = [ts[:, c] for c in range(W - 1, -1, -1)] + [loc]
    perm = np.lexsort(keys)
    sorted_diff = diff[perm] if exact else diff[:0]
    *out, a, b = _segment_sum(loc, ts, diff, perm, sorted_diff, exact)
    if a >= 0:
        raise _overflow(out[0][-1], out[1][-1], sorted_diff[a:b])
    return tuple(out)


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
    (loc, ts, cnt, bad): the new table, and ``bad``: -1 when the merge succeeded; ``j >= 0``
    when batch row ``j`` is the first that would leave a count negative (strict mode);
    ``-2 - j`` (:func:`overflow_row`) when batch row ``j`` is the first whose count would
    leave int64 (an overflow is reported before any negative count). Unless ``bad`` is -1
    the returned table is meaningless and the old one must be kept.
    """
    r, W = t_ts.shape
    n = b_ts.shape[0]
    o_loc = np.empty(r + n, dtype=np.int32)
    o_ts = np.empty((r + n, W), dtype=np.int64)
    o_cnt = np.empty(r + n, dtype=np.int64)
    i = 0
    j = 0
    k = 0
    neg = -1
    while i < r or j < n:
        if j >= n:
            c = -1
        elif i >= r:
            c = 1
        else:
            c = row_cmp(t_loc[i], t_ts[i], b_loc[j], b_ts[j], W)
        if c < 0:           # table row untouched
            o_loc[k] = t_loc[i]
            for w in range(W):
                o_ts[k, w] = t_ts[i, w]
            o_cnt[k] = t_cnt[i]
            k += 1
            i += 1
            continue
        if c == 0:
            old = t_cnt[i]
            i += 1
        else:
            old = 0
        if add_overflows(old, b_diff[j]):  # before any negative count, as on the device
            return o_loc[:0], o_ts[:0], o_cnt[:0], -2 - j
        new = old + b_diff[j]
        if strict and new < 0 and neg < 0:
            neg = j
        if (old > 0) != (new > 0):
            flip[b_loc[j]] = True
        if new != 0:
            o_loc[k] = b_loc[j]
            for w in range(W):
                o_ts[k, w] = b_ts[j, w]
            o_cnt[k] = new
            k += 1
        j += 1
    if neg >= 0:
        return o_loc[:0], o_ts[:0], o_cnt[:0], neg
    return o_loc[:k], o_ts[:k], o_cnt[:k], -1


# -- CUDA ---------------------------------------------------------------------------------------
#
# Consolidation on the device is sort + segmented reduce: pack each row into one uint64 key
# (the CPU twin's plan and scalar ``pack_key``), sort the keys (CuPy's ``argsort``: CUB's
# radix sort), flag the first row of every run of equal keys, scan the diffs in sorted order
# and take each run's sum as the difference of two scan entries (int64 wrap-around cancels in
# the difference, so the sum is exact whenever it fits int64), then keep the non-zero runs.
# Rows that do not pack into 63 bits are sorted by ``lexsort`` and compared column by column.
#
# The merge into the resident table does not re-sort the table: every batch row finds its
# place by a binary search (``row_cmp``), and the new table is scattered from the old one and
# the batch with positions from two scans -- O(r + n log r) work, one read and one write of
# the table, where sorting the concatenation would cost ``passes x (r + n)``.
#
# Kernels are Numba ``@cuda.jit``: they reuse ``pack_key``/``unpack_key``/``row_cmp``/
# ``ts_cmp`` through ``_cuda.device`` and run under the simulator. Sorting, scans and stream
# compaction are CuPy primitives (CUB), which no hand-written kernel would beat.

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    pack = _cuda.device(pack_key)
    unpack = _cuda.device(unpack_key)
    cmp_rows = _cuda.device(row_cmp)
    upper_bound_n = _cuda.device(_cuda.upper_bound_n)
    overflows = _cuda.device(add_overflows)
    sum_over = _cuda.device(sum_overflows)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def pack_rows(loc, ts, widths, keys):
        """keys[i] <- pack_key(loc[i], ts[i]) (uint32 or uint64 keys); thread per row; reads
        4 + 8W bytes, writes 4 or 8."""
        i = cuda.grid(1)
        if i < keys.shape[0]:
            keys[i] = pack(loc[i], ts[i], widths, ts.shape[1])

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def key_heads(keys, head, vals, lim, ovf):
        """head[i] <- row i starts a run of equal sorted keys; ovf[0] <- the first row whose
        sorted diff ``vals[i]`` lies outside ``[-lim, lim]`` (atomic min); thread per row;
        24 -> 1 bytes."""
        i = cuda.grid(1)
        if i < keys.shape[0]:
            head[i] = 1 if i == 0 or keys[i] != keys[i - 1] else 0
            if vals[i] > lim or vals[i] < -lim:
                cuda.atomic.min(ovf, 0, np.int64(i))

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def row_heads(loc, ts, perm, head, vals, lim, ovf):
        """head[i] <- sorted row perm[i] differs from perm[i - 1]; ovf[0] as ``key_heads``;
        thread per row (the unpackable path, rows gathered through perm)."""
        i = cuda.grid(1)
        if i < perm.shape[0]:
            if i == 0:
                head[i] = 1
            else:
                a = perm[i - 1]
                b = perm[i]
                head[i] = 1 if cmp_rows(loc[a], ts[a], loc[b], ts[b], ts.shape[1]) != 0 else 0
            if vals[i] > lim or vals[i] < -lim:
                cuda.atomic.min(ovf, 0, np.int64(i))

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def run_sums(starts, csum, vals, ovf, total):
        """total[s] <- sum of diffs of run s = csum[end - 1] - csum[start - 1]; thread per run.
        When some diff is large (ovf[0] < n), a run of two or more rows is also summed
        exactly (``sum_overflows``) and ovf[1] <- the first run outside int64 (atomic min)."""
        s = cuda.grid(1)
        if s < starts.shape[0]:
            n = csum.shape[0]
            a = starts[s]
            b = starts[s + 1] if s + 1 < starts.shape[0] else n
            t = csum[b - 1]
            if a > 0:
                t = t - csum[a - 1]
            total[s] = t
            if ovf[0] < n and b - a > 1:
                if sum_over(vals, a, b):
                    cuda.atomic.min(ovf, 1, np.int64(s))

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def emit_keys(keys, starts, keep, total, widths, out_loc, out_ts, out_diff):
        """Output row k <- unpacked key of kept run keep[k]; thread per output row."""
        k = cuda.grid(1)
        if k < keep.shape[0]:
            s = keep[k]
            out_loc[k] = unpack(np.uint64(keys[starts[s]]), widths, out_ts[k], out_ts.shape[1])
            out_diff[k] = total[s]

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def emit_rows(loc, ts, perm, starts, keep, total, out_loc, out_ts, out_diff):
        """Output row k <- first row of kept run keep[k] (unpackable path)."""
        k = cuda.grid(1)
        if k < keep.shape[0]:
            s = keep[k]
            r = perm[starts[s]]
            out_loc[k] = loc[r]
            for c in range(ts.shape[1]):
                out_ts[k, c] = ts[r, c]
            out_diff[k] = total[s]

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def merge_probe(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, nb, strict, flip, pos, newcnt,
                    ins, keep, upd, bad, ovf):
        """Per batch row j < nb[0] (the batch's rows: the arrays may hold spare rows): its
        place in the table (binary search), old and new count, the location flip,
        strict-mode violation (atomic min of j into bad), an int64 overflow (atomic min of j
        into ovf; the row's count is then left unchanged), and whether it is inserted (new row,
        ins[j] = 1), updates table row pos[j] (upd) or deletes it (keep[pos[j]] = 0; keep
        starts as ones). A spare row, or a row whose location is out of range, is neither:
        ins[j] = 0 and pos[j] = 0, nothing else written. An out-of-range row is always
        flagged by the intake's deferred checks, so such a batch is always rejected before
        anything is committed and its pos/ins are never used."""
        j = cuda.grid(1)
        if j < b_loc.shape[0]:
            if j >= nb[0] or b_loc[j] < 0 or b_loc[j] >= flip.shape[0]:
                ins[j] = 0
                pos[j] = 0
                return
            W = b_ts.shape[1]
            r = t_loc.shape[0]
            lo = 0
            hi = r
            while lo < hi:
                mid = (lo + hi) // 2
                if cmp_rows(t_loc[mid], t_ts[mid], b_loc[j], b_ts[j], W) < 0:
                    lo = mid + 1
                else:
                    hi = mid
            hit = False
            if lo < r:
                hit = cmp_rows(t_loc[lo], t_ts[lo], b_loc[j], b_ts[j], W) == 0
            old = 0
            if hit:
                old = t_cnt[lo]
            new = old
            if overflows(old, b_diff[j]):
                cuda.atomic.min(ovf, 0, j)
            else:
                new = old + b_diff[j]
            pos[j] = lo
            newcnt[j] = new
            if strict and new < 0:
                cuda.atomic.min(bad, 0, j)
            if (old > 0) != (new > 0):
                flip[b_loc[j]] = True
            if hit:
                upd[lo] = j
                keep[lo] = 0 if new == 0 else 1
                ins[j] = 0
            else:
                ins[j] = 1 if new != 0 else 0

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def merge_scatter(t_loc, t_ts, t_cnt, keep, upd, b_loc, b_ts, ins, newcnt, scan, pos, nb,
                      carry, status, o_loc, o_ts, o_cnt):
        """The new table, thread per table row (i < r) and per batch row (j = i - r).
        ``scan`` is the exclusive scan of the ``r`` table rows' kept flags followed by the
        batch rows' inserted flags. Table row i, if kept, goes to (kept rows before it:
        scan[i]) + (inserted batch rows placed at or before it: among the first c batch rows,
        scan[r + c] - scan[r], c found by a binary search in their table places ``pos``,
        ascending over the nb[0] valid rows of a sorted batch; in a batch still to be
        rejected any c keeps the row in range), its count updated if a batch row matched it.
        Batch row j, if inserted, goes after the kept table rows before its place
        (scan[pos[j]]) and the inserted batch rows before it (scan[r + j] - scan[r]). Thread
        0 copies the ``P`` words of ``carry`` to status[:P] and writes the new table's row
        count, scan[r + n], to status[P + 1]."""
        i = cuda.grid(1)
        r = t_loc.shape[0]
        n = ins.shape[0]
        W = t_ts.shape[1]
        if i == 0:
            P = carry.shape[0]
            for q in range(P):
                status[q] = carry[q]
            status[P + 1] = scan[r + n]
        if i < r:
            if keep[i] != 0:
                c = upper_bound_n(pos, nb[0], i)
                o = scan[i] + scan[r + c] - scan[r]
                o_loc[o] = t_loc[i]
                for q in range(W):
                    o_ts[o, q] = t_ts[i, q]
                o_cnt[o] = newcnt[upd[i]] if upd[i] >= 0 else t_cnt[i]
        elif i < r + n:
            j = i - r
            if ins[j] != 0:
                o = scan[pos[j]] + scan[i] - scan[r]
                o_loc[o] = b_loc[j]
                for q in range(W):
                    o_ts[o, q] = b_ts[j, q]
                o_cnt[o] = newcnt[j]

    return types.SimpleNamespace(pack_rows=pack_rows, key_heads=key_heads, row_heads=row_heads,
                                 run_sums=run_sums, emit_keys=emit_keys, emit_rows=emit_rows,
                                 merge_probe=merge_probe, merge_scatter=merge_scatter)


def consolidate_sorting_cuda(loc, ts, diff, plan, *, tpb=None):
    """Consolidation of rows whose packed key has no room for a row index: an argsort of the
    packed keys (``plan`` from :func:`pack_plan`), or a ``lexsort`` of the columns when
    ``plan`` is None; then run heads, a scan of the sorted diffs, run sums and compaction.

    Parameters
    ----------
    loc : int32[n], ts : int64[n, W] (non-negative), diff : int64[n], ``n > 0``
    plan : (int64[W + 1] widths, total bits) or None

    Returns
    -------
    (loc int32[k], ts int64[k, W], diff int64[k]) as :func:`consolidate`.

    Raises
    ------
    SumOverflow
        As :func:`consolidate` (the pointstamp and its exact sum found again by the CPU twin
        on a copy of the columns).

    Notes
    -----
    Steps: ``pack_rows`` (thread per row) into uint32 keys when the packing needs at most 32
    bits, else uint64; ``argsort`` (CUB radix sort carrying an 8-byte index) and a gather of
    the keys; a gather of the diffs; ``key_heads`` (or ``row_heads`` after ``lexsort``), which
    also flag a diff large enough that a sum could leave int64 (:func:`may_overflow`'s
    bound); ``cumsum`` of the gathered diffs; ``flatnonzero`` of the heads -- **sync** for the
    number of runs; ``run_sums`` (exact sums of the runs only when a diff was flagged);
    **sync** reading the overflow words (16 bytes); ``flatnonzero`` of the non-zero sums --
    **sync**; ``emit_keys``/``emit_rows``. 3 or 4 launches, 6 or 7 primitives, 3 syncs.
    """
    xp = _cuda.namespace(loc, ts, diff)
    n, W = ts.shape
    k = _kernels()
    head = _cuda.alloc(xp, n, xp.uint8)
    # [first row with a large diff, first run whose sum leaves int64], n when none
    ovf = _cuda.alloc(xp, 2, xp.int64, n)
    lim = INT64_MAX // n
    if plan is not None:
        widths = xp.asarray(plan[0])
        # keys of at most 32 bits sort as uint32: half the radix passes and bytes per pass
        keys = _cuda.alloc(xp, n, xp.uint32 if plan[1] <= 32 else xp.uint64)
        _cuda.launch(k.pack_rows, n, loc, ts, widths, keys, tpb=tpb)
        perm = _cuda.op(xp.argsort(keys))
        keys = _cuda.op(keys[perm])
        vals = _cuda.op(diff[perm])
        _cuda.launch(k.key_heads, n, keys, head, vals, lim, ovf, tpb=tpb)
    else:
        perm = _cuda.op(xp.lexsort(xp.concatenate([ts.T[::-1],
                                                   loc[None, :].astype(xp.int64)])), 3)
        vals = _cuda.op(diff[perm])
        _cuda.launch(k.row_heads, n, loc, ts, perm, head, vals, lim, ovf, tpb=tpb)
    csum = _cuda.op(xp.cumsum(vals))
    starts = _cuda.op(xp.flatnonzero(head))
    _cuda.COUNTS.syncs += 1  # flatnonzero reads the number of runs back
    total = _cuda.alloc(xp, starts.shape[0], xp.int64)
    _cuda.launch(k.run_sums, starts.shape[0], starts, csum, vals, ovf, total, tpb=tpb)
    if int(_cuda.read(ovf)[1]) < n:
        raise overflow_on_host(loc, ts, diff, W)
    keep = _cuda.op(xp.flatnonzero(total))
    _cuda.COUNTS.syncs += 1
    c = keep.shape[0]
    out_loc = _cuda.alloc(xp, c, xp.int32)
    out_ts = _cuda.alloc(xp, (c, W), xp.int64)
    out_diff = _cuda.alloc(xp, c, xp.int64)
    if plan is not None:
        _cuda.launch(k.emit_keys, c, keys, starts, keep, total, widths, out_loc, out_ts,
                     out_diff, tpb=tpb)
    else:
        _cuda.launch(k.emit_rows, c, loc, ts, perm, starts, keep, total, out_loc, out_ts,
                     out_diff, tpb=tpb)
    return out_loc, out_ts, out_diff


def merge_counts_cuda(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip, *, b_count=None,
                      defer=False, carry=None, tpb=None):
    """CUDA version of :func:`merge_counts`: same arguments and results (``bad`` a Python int).

    ``flip`` (bool[L], on the device) receives the locations whose positive set changed. In
    strict mode a violation returns empty arrays and the first offending batch row; a count
    that would leave int64 returns empty arrays and ``-2 - row`` (the first such row), in
    any mode; either way the old table is untouched (it is never written).

    ``b_count`` (a device ``int64[1]``) is the number of batch rows when the batch arrays hold
    spare rows past it (a deferred intake). With ``defer`` nothing is read back: the new
    table comes in arrays of ``r + n`` rows and the fourth result is a device ``int64[3]``,
    the strict-mode violation (``n`` when none), the new table's row count and the first
    overflowing row (``n`` when none), for the caller to read with a later transfer (and to
    slice the table by). ``carry`` (a device ``int64[P]``, with ``defer``): words of earlier
    stages that the status then starts with (``int64[P + 3]``), copied by the scatter
    kernel, so that one array holds every deferred word of the batch without a
    concatenation.

    Notes
    -----
    Kernel types: Numba ``@cuda.jit`` for the probe and the scatters (the probe runs the
    twin's ``row_cmp``); CuPy for the scans and the compaction.

    Kernels: ``merge_probe`` (thread per batch row: binary search, ``O(log r)`` row
    comparisons) writes the kept flags of the table rows and the inserted flags of the
    batch rows into one array; one scan of it gives every kept row's and every inserted
    row's place and the new size; one **sync** reads the strict-mode violation, the overflow
    and the size (24 bytes) -- none with ``defer``; ``merge_scatter`` (thread per table row:
    a binary search in the batch rows' table places counts the inserted rows before it;
    and thread per batch row; thread 0 also writes the size to the status) writes the new
    table: 2 launches and 1 primitive, 1 sync (0 deferred). Bytes: the table is read once and
    written once (``(12 + 8W)`` bytes per row each way, plus 9 bytes of drop/update flags),
    the batch likewise; the probes add ``O(n log r)`` mostly cached reads.
    """
    xp = _cuda.namespace(t_ts, b_ts)
    r, W = t_ts.shape
    n = b_ts.shape[0]
    P = 0 if carry is None else int(carry.shape[0])
    if n == 0:
        if defer:
            status = _cuda.alloc(xp, P + 3, xp.int64, r)
            if P:
                status[:P] = carry
                _cuda.op()
            return t_loc, t_ts, t_cnt, status
        return t_loc, t_ts, t_cnt, -1
    k = _kernels()
    pos = _cuda.alloc(xp, n, xp.int64)
    newcnt = _cuda.alloc(xp, n, xp.int64)
    # the kept flags of the table rows, then the inserted flags of the batch rows: one scan
    flags = _cuda.alloc(xp, r + n, xp.uint8, 1)
    upd = _cuda.alloc(xp, r, xp.int64, -1)
    # [carried words..., first negative row, new table rows, first overflowing row]
    status = _cuda.alloc(xp, P + 3, xp.int64, n)
    own = status[P:]
    nb = b_count if b_count is not None else own[1:2]
    _cuda.launch(k.merge_probe, n, t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, nb, bool(strict),
                 flip, pos, newcnt, flags[r:], flags[:r], upd, own[:1], own[2:], tpb=tpb)
    scan = _cuda.alloc(xp, r + n + 1, xp.int64, 0)
    _cuda.op(xp.cumsum(flags, dtype=xp.int64, out=scan[1:]))
    if defer:
        size = r + n
    else:
        # one read: the strict-mode violation, the overflow and the new table's rows
        first, over, size = (int(v) for v in _cuda.read(
            _cuda.op(xp.concatenate([own[:1], own[2:], scan[r + n:]]))))
        if over < n:
            return t_loc[:0], t_ts[:0], t_cnt[:0], -2 - over
        if strict and first < n:
            return t_loc[:0], t_ts[:0], t_cnt[:0], first
    if b_count is None:  # nb was status[P + 1], which merge_scatter overwrites
        nb = _cuda.alloc(xp, 1, xp.int64, n)
    o_loc = _cuda.alloc(xp, size, xp.int32)
    o_ts = _cuda.alloc(xp, (size, W), xp.int64)
    o_cnt = _cuda.alloc(xp, size, xp.int64)
    _cuda.launch(k.merge_scatter, r + n, t_loc, t_ts, t_cnt, flags[:r], upd, b_loc, b_ts,
                 flags[r:], newcnt, scan, pos, nb, carry if P else status[:0], status, o_loc,
                 o_ts, o_cnt, tpb=tpb)
    return o_loc, o_ts, o_cnt, status if defer else -1
