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

CUDA kernels (foot of the file): :func:`frontier_update_cuda`, the twin of
:func:`frontier_update` -- one thread block per location, whose threads split its segment
(the same scans, chunk by chunk, then a filter across chunks), and a thread per location
that writes the new ``F``, how it changed (:func:`segment_mode`) and which old rows were
withdrawn (:func:`segment_withdrawn`, for the closure gather's vote); no synchronisation.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit

from . import _cuda
from .summary_rows import ts_cmp, ts_le

__all__ = ["segment_frontiers", "segment_starts", "antichain_insert", "sort_rows_inplace",
           "sort_rows_with", "replace_segments", "segments_equal", "segment_mode", "seed_modes",
           "segment_withdrawn", "seed_withdrawn",
           "frontier_update", "frontier_update_cuda"]


@njit(cache=True, nogil=True)
def copy_rows(dst, d0, src, s0, n):
    """``dst[d0:d0 + n] = src[s0:s0 + n]`` for row arrays ``int64[:, W]``, as a loop. A
    slice assignment compiles NumPy's shape-mismatch error path (an f-string: Numba's
    unicode formatting, 1 to 2 s of compile time for each kernel's first one), although
    here the shapes always match."""
    for i in range(n):
        for c in range(src.shape[1]):
            dst[d0 + i, c] = src[s0 + i, c]


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
    if m == 1:
        return _prefix_min_frontiers(t_ts, t_cnt, seg_ptr, locs)
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
                copy_rows(grown, 0, out, 0, k)
                out = grown
            for c in range(W):
                out[k, c] = row[c]
            k += 1
        ptr[i + 1] = k
    return ptr, out[:k]


@njit(cache=True, nogil=True)
def segment_starts(t_loc, L):
    """``int64[L + 1]``: the rows of location ``l`` in the sorted ``t_loc`` are
    ``ptr[l]:ptr[l + 1]`` -- ``np.searchsorted(t_loc, np.arange(L + 1))`` in one linear
    pass (a third of the time at N = 5000: 10,449 searches in a 1e5-row table)."""
    ptr = np.zeros(L + 1, dtype=np.int64)
    for i in range(t_loc.shape[0]):
        ptr[t_loc[i] + 1] += 1
    for l in range(L):
        ptr[l + 1] += ptr[l]
    return ptr


@njit(cache=True, nogil=True)
def _prefix_min_frontiers(t_ts, t_cnt, seg_ptr, locs):
    """:func:`segment_frontiers` for ``m == 1``, the prefix-minimum scan with the row entries
    read in place (no row views, the running minimum's counters in the output row last
    written): the same rows, in a third of the time (issue 33, a 1e5-row churn batch flips
    every location of N = 1000). The output holds at most one row per positive table row."""
    W = t_ts.shape[1]
    q = locs.shape[0]
    ptr = np.zeros(q + 1, dtype=np.int64)
    n = 0
    for i in range(q):
        l = locs[i]
        n += seg_ptr[l + 1] - seg_ptr[l]
    out = np.empty((n, W), dtype=np.int64)
    k = 0
    for i in range(q):
        l = locs[i]
        start = k
        for r in range(seg_ptr[l], seg_ptr[l + 1]):
            if t_cnt[r] <= 0:
                continue
            if k > start:  # minimal iff its counters are below the last minimal row's
                lt = False
                for c in range(1, W):
                    a = t_ts[r, c]
                    b = out[k - 1, c]
                    if a != b:
                        lt = a < b
                        break
                if not lt:
                    continue
            for c in range(W):
                out[k, c] = t_ts[r, c]
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
    sort_rows_with(buf, n, W, np.empty(W, dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def sort_rows_with(buf, n, W, tmp):
    """:func:`sort_rows_inplace` with caller-provided work space ``tmp`` (``W`` entries, not a
    row of ``buf[:n]``): the form device code calls, where nothing may be allocated."""
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


@njit(cache=True, nogil=True, inline="always")
def segments_equal(x, a, b, y, c, d, W):
    """Rows ``x[a:b]`` equal rows ``y[c:d]`` (scalar core of the segment comparison)."""
    if b - a != d - c:
        return False
    for k in range(b - a):
        if ts_cmp(x[a + k], y[c + k], W) != 0:
            return False
    return True


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
        if not segments_equal(rows, a, b, sel_rows, c, d, W):
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
            copy_rows(new_rows, new_ptr[l], sel_rows, c, d - c)
            j += 1
        else:
            copy_rows(new_rows, new_ptr[l], rows, ptr[l], ptr[l + 1] - ptr[l])
    return new_ptr, new_rows, changed[:nc]


@njit(cache=True, nogil=True, inline="always")
def segment_mode(x, a, b, y, c, d, m, W):
    """How the frontier ``x[a:b]`` (old) became ``y[c:d]`` (new): 0 unchanged, 1 *grown*
    (every old row is ``>=`` some new row: the down-set only gained, so every implied frontier
    downstream can only gain candidates), 2 *retreated* (some old row is covered by no new
    row: candidates were withdrawn). Scalar core of :func:`seed_modes` and its kernel."""
    if b - a == d - c:
        same = True
        for k in range(b - a):
            if ts_cmp(x[a + k], y[c + k], W) != 0:
                same = False
                break
        if same:
            return 0
    for i in range(a, b):
        covered = False
        for j in range(c, d):
            if ts_le(y[j], x[i], m, W):
                covered = True
                break
        if not covered:
            return 2
    return 1


@njit(cache=True, nogil=True, inline="always")
def segment_withdrawn(x, a, b, y, c, d, m, W, gone):
    """:func:`segment_mode` of ``x[a:b]`` (old) and ``y[c:d]`` (new), also marking which old
    rows were *withdrawn*: ``gone[i] <- 1`` for every ``i`` in ``[a, b)`` that no new row is
    ``<=`` (only when the mode is 2), 0 otherwise. The closure gather's vote reads the marks
    (:func:`gpu_kernels.propagate.witness_row`), so the coverage test runs once per location,
    here, not once per ``Psi`` entry. O(|x| |y| W) when the mode is 2 (every old row is
    tested), as :func:`segment_mode` at worst otherwise."""
    md = segment_mode(x, a, b, y, c, d, m, W)
    for i in range(a, b):
        gone[i] = 0
    if md == 2:
        for i in range(a, b):
            covered = False
            for j in range(c, d):
                if ts_le(y[j], x[i], m, W):
                    covered = True
                    break
            if not covered:
                gone[i] = 1
    return md


@njit(cache=True, nogil=True)
def seed_withdrawn(L, seeds, old_ptr, old_ts, new_ptr, new_ts, m):
    """``(mode uint8[L], gone uint8[old_ptr[L]])``: :func:`segment_withdrawn` of every seed's
    ``F`` (0 elsewhere). CPU twin of the modes and withdrawn marks
    :func:`frontier_update_cuda` computes."""
    W = new_ts.shape[1]
    mode = np.zeros(L, dtype=np.uint8)
    gone = np.zeros(old_ptr[L], dtype=np.uint8)
    for s in seeds:
        mode[s] = segment_withdrawn(old_ts, old_ptr[s], old_ptr[s + 1], new_ts, new_ptr[s],
                                    new_ptr[s + 1], m, W, gone)
    return mode, gone


@njit(cache=True, nogil=True)
def seed_modes(L, seeds, old_ptr, old_ts, new_ptr, new_ts, m):
    """``uint8[L]``: :func:`segment_mode` of every seed's ``F`` (0 elsewhere). CPU twin of the
    modes :func:`frontier_update_cuda` computes."""
    W = new_ts.shape[1]
    mode = np.zeros(L, dtype=np.uint8)
    for s in seeds:
        mode[s] = segment_mode(old_ts, old_ptr[s], old_ptr[s + 1], new_ts, new_ptr[s],
                               new_ptr[s + 1], m, W)
    return mode


def frontier_update(t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m):
    """Every location's new ``F`` after a merge, and how it changed.

    Parameters
    ----------
    t_loc, t_ts, t_cnt : the new count table (sorted by ``(loc, ts)``)
    flip : bool[L], the locations whose set of positive timestamps changed
    F_ptr, F_ts : the old ``F`` (CSR by location)
    m : int

    Returns
    -------
    (F_ptr, F_ts, mode, gone) : the new ``F``, ``mode uint8[L]`` (:func:`segment_mode`: 0
    unchanged, 1 grown, 2 retreated) and ``gone uint8[old F_ptr[L]]``, 1 on each row of the
    old ``F`` that the batch withdrew (:func:`segment_withdrawn`). The CPU twin of
    :func:`frontier_update_cuda`: the flipped locations' frontiers
    (:func:`segment_frontiers`) spliced in (:func:`replace_segments`).
    """
    L = F_ptr.shape[0] - 1
    locs = np.flatnonzero(flip).astype(np.int64)
    if not len(locs):
        return F_ptr, F_ts, np.zeros(L, np.uint8), np.zeros(int(F_ptr[L]), np.uint8)
    seg_ptr = segment_starts(t_loc, L)
    sel_ptr, sel_ts = segment_frontiers(t_ts, t_cnt, seg_ptr, locs, m)
    new_ptr, new_ts, changed = replace_segments(F_ptr, F_ts, locs, sel_ptr, sel_ts)
    return (new_ptr, new_ts) + seed_withdrawn(L, changed, F_ptr, F_ts, new_ptr, new_ts, m)


# -- CUDA ---------------------------------------------------------------------------------------

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None

@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    lt = _cuda.device(_counters_lt)
    le = _cuda.device(ts_le)
    mode_of = _cuda.device(segment_withdrawn)
    upper_bound_n = _cuda.device(_cuda.upper_bound_n)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def frontier_block(t_loc, t_len, t_ts, t_cnt, flip, F_ptr, m, lst, nloc, keep, start, lens,
                       scratch):
        """Block per location ``l`` (every location: no list of flipped ones to compact).
        Unflipped: lens[l] <- |old F(l)|. Flipped: its table segment (two binary searches in
        the table's first t_len[0] rows: the arrays may hold spare rows) is split into ``T`` contiguous chunks, one per thread, and its minimal
        positive rows are marked in ``keep``. Phase 1: each chunk's own minimal rows, by the
        CPU twin's scan (prefix minimum of the counters when ``m == 1``; otherwise no
        earlier minimal row of the chunk ``<=`` it), listed in ``lst``. Barrier. Phase 2: a
        chunk-minimal row is minimal iff no minimal row of an earlier chunk is ``<=`` it
        (every earlier positive row is such a row or above one); when ``m == 1`` that is one
        comparison with the smallest counters of all earlier chunks, the last listed row of
        each. Barrier. Then each thread copies its chunk's marked rows, in order, to scratch
        rows start[l] + (marked rows of earlier chunks) ...; lens[l] <- the number marked."""
        l = cuda.blockIdx.x
        t = cuda.threadIdx.x
        T = cuda.blockDim.x
        W = t_ts.shape[1]
        a = upper_bound_n(t_loc, t_len[0], l - 1)
        n = upper_bound_n(t_loc, t_len[0], l) - a
        if flip[l] == 0:
            if t == 0:
                lens[l] = F_ptr[l + 1] - F_ptr[l]
                start[l] = a
            return
        chunk = (n + T - 1) // T
        lo = t * chunk
        hi = lo + chunk
        if hi > n:
            hi = n
        c = 0
        for rr in range(lo, hi):
            r = a + rr
            if t_cnt[r] <= 0:
                continue
            if m == 1:
                if c > 0 and not lt(t_ts[r], t_ts[lst[a + lo + c - 1]], m, W):
                    continue
            else:
                dominated = False
                for j in range(c):
                    if le(t_ts[lst[a + lo + j]], t_ts[r], m, W):
                        dominated = True
                        break
                if dominated:
                    continue
            lst[a + lo + c] = r
            c += 1
        nloc[l * T + t] = c
        cuda.syncthreads()
        if m == 1:
            best = -1
            for s in range(t):
                cs = nloc[l * T + s]
                if cs > 0:
                    cand = lst[a + s * chunk + cs - 1]
                    if best < 0 or lt(t_ts[cand], t_ts[best], m, W):
                        best = cand
            for k in range(c):
                r = lst[a + lo + k]
                if best < 0 or lt(t_ts[r], t_ts[best], m, W):
                    keep[r] = 1
        else:
            for k in range(c):
                r = lst[a + lo + k]
                ok = True
                for s in range(t):
                    for j in range(nloc[l * T + s]):
                        if le(t_ts[lst[a + s * chunk + j]], t_ts[r], m, W):
                            ok = False
                            break
                    if not ok:
                        break
                if ok:
                    keep[r] = 1
        cuda.syncthreads()
        kept = 0
        for rr in range(lo, hi):
            kept += keep[a + rr]
        nloc[l * T + t] = kept
        cuda.syncthreads()
        o = a
        for s in range(t):
            o += nloc[l * T + s]
        for rr in range(lo, hi):
            if keep[a + rr] != 0:
                for q in range(W):
                    scratch[o, q] = t_ts[a + rr, q]
                o += 1
        if t == T - 1:
            lens[l] = o - a
            start[l] = a

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def frontier_fill(flip, start, scratch, F_ptr, F_ts, new_ptr, new_ts, m, mode, gone):
        """Thread per location: its new F segment (from ``scratch`` if flipped, else the old
        one), mode[l] <- segment_mode(old F(l), new F(l)) and gone[F_ptr[l]:F_ptr[l + 1]] <-
        the withdrawn marks of its old rows (segment_withdrawn)."""
        l = cuda.grid(1)
        if l < flip.shape[0]:
            W = new_ts.shape[1]
            o = new_ptr[l]
            e = new_ptr[l + 1]
            if flip[l] != 0:
                s = start[l]
                for i in range(e - o):
                    for q in range(W):
                        new_ts[o + i, q] = scratch[s + i, q]
                mode[l] = mode_of(F_ts, F_ptr[l], F_ptr[l + 1], new_ts, o, e, m, W, gone)
            else:
                s = F_ptr[l]
                for i in range(e - o):
                    for q in range(W):
                        new_ts[o + i, q] = F_ts[s + i, q]
                mode[l] = 0
                for i in range(s, F_ptr[l + 1]):
                    gone[i] = 0

    return types.SimpleNamespace(frontier_block=frontier_block, frontier_fill=frontier_fill)


#: Threads per location block of :func:`frontier_update_cuda` on a device (two warps).
UPDATE_THREADS = 64


def frontier_update_cuda(t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m, *, t_len=None, threads=None,
                         tpb=None):
    """CUDA version of :func:`frontier_update`: same arguments and results, except that the
    new ``F_ts`` has as many rows as the table (an upper bound: every row of ``F`` is a
    positive table row) and ``F_ptr[L]`` says how many are used, and ``gone`` has a mark for
    every row of the old ``F_ts`` (those past the old ``F_ptr[L]`` are unset). No host synchronisation.
    ``t_len`` (device ``int64[1]``) is the table's row count when its arrays hold spare rows
    (a deferred merge); by default all of them.

    Launch shape: ``frontier_block``, one block of ``threads`` threads per location
    (:data:`UPDATE_THREADS` on a device, 1 on the simulator) -- a location whose positive set
    did not flip exits at once; a flipped one is split into chunks, one per thread, and its
    frontier rows compacted in order into a scratch array at the segment's own offset (so
    no sizes are needed yet); one scan of the lengths
    (CuPy); ``frontier_fill``, thread per location: the new ``F`` and each location's
    :func:`segment_mode` and withdrawn marks (:func:`segment_withdrawn`, written by the same
    thread: no launch of their own). 2 launches, 1 primitive, 0 syncs; allocations: 8.

    Bytes: the table's rows of flipped locations read once or twice (phase 2 rereads
    chunk minima, cached); the old and new ``F`` rows once each (``8 W``; a retreated location's
    new rows once per old row, for its withdrawn marks, 1 byte per old row); the marks 1 byte
    and the scratch list 8 bytes per row of flipped locations.
    """
    xp = _cuda.namespace(t_ts, F_ts)
    L = F_ptr.shape[0] - 1
    r, W = t_ts.shape
    T = int(threads) if threads is not None else (1 if _cuda.simulator() else UPDATE_THREADS)
    k = _kernels()
    rows = max(r, 1)
    lst = _cuda.alloc(xp, rows, xp.int64)
    nloc = _cuda.alloc(xp, max(L * T, 1), xp.int64)
    keep = _cuda.alloc(xp, rows, xp.uint8, 0)
    start = _cuda.alloc(xp, max(L, 1), xp.int64)
    lens = _cuda.alloc(xp, L + 1, xp.int64, 0)
    scratch = _cuda.alloc(xp, (rows, W), xp.int64)
    if t_len is None:
        t_len = _cuda.alloc(xp, 1, xp.int64, r)
    _cuda.launch_blocks(k.frontier_block, L, T, t_loc, t_len, t_ts, t_cnt, flip, F_ptr, int(m),
                        lst, nloc, keep, start, lens[1:], scratch)
    _cuda.op(xp.cumsum(lens, out=lens))
    new_ts = _cuda.alloc(xp, (r, W), xp.int64)
    mode = _cuda.alloc(xp, L, xp.uint8)
    gone = _cuda.alloc(xp, max(int(F_ts.shape[0]), 1), xp.uint8)
    _cuda.launch(k.frontier_fill, L, flip, start, scratch, F_ptr, F_ts, lens, new_ts, int(m), mode,
                 gone, tpb=tpb)
    return lens, new_ts, mode, gone[:F_ts.shape[0]]
