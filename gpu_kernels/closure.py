"""The path-summary closure ``Psi`` as arrays: CPU twin of the closure kernel.

``Psi[l1, l2]`` is the antichain of minimal summaries over all paths from ``l1`` to ``l2``
(docs/semantics.md 2.4). The rows ``Psi[s, :]`` of a contiguous range of sources ``s in [lo, hi)``
are computed one source at a time by a semi-naive fixed point over the locations in DFS
reverse postorder (``order``/``rank`` of ``engine.batched.graph_arrays.GraphArrays``):

* a location is (re)computed when the row of an in-neighbour changed: its row is the minimal
  elements of ``{identity if l == s} u {row(u) ; arc  for every in-arc u -> l, row(u) != {}}``;
* if the row changed, the arc targets leaving it become pending; the pending location of
  smallest ``rank`` comes next, so acyclic parts settle in one sweep and a back edge restarts
  the sweep at the lower rank it made pending;
* *translation fast path*: a location other than ``s`` with exactly one in-arc whose summary
  keeps every counter (``keep == depth(src) == depth(dst)``, :func:`translation_mask`) has as
  its row the in-neighbour's row with the arc added, and no minimisation: adding a fixed
  vector is an order embedding, so an antichain stays an antichain (and stays sorted), and
  the row changed exactly when the in-neighbour's did. Such a row is not materialised: it is
  kept as ``(anchor, delta)``, the nearest location up the chain whose row is materialised
  and the composition of the arcs since, and costs O(W) per visit;
* other locations insert their candidates one by one into an antichain (skipped if an
  element present is ``<=`` it; elements it is ``<=`` to are dropped), then sort the rows
  lexicographically, so "changed" is a row-by-row comparison.

The fixed point is the reference worklist's (``engine.core.closure``): rows only ever grow in
upward closure, and the iteration stops exactly when no candidate adds a non-dominated
summary. Composition, order and equality are the scalar core of ``summary_rows``.

Both the CPU and the CUDA kernels run one scalar core: per source :func:`settle_source` (the
fixed point, in a work space of fixed capacity), then :func:`source_counts` (its size); per
pair :func:`pair_fill`/:func:`pair_fill_dense` (one antichain, written ``anchor rows ;
delta`` straight into the final arrays), which :func:`source_fill`/:func:`source_fill_dense`
run for every target of a source. The output is produced in two passes, the usual GPU pattern:
:func:`closure_counts` settles each source and reports its pairs, summaries, largest entry and
largest antichain (so the host can size the output exactly, choose the narrowest dtype and the
layout), then :func:`closure_fill` (ragged CSR) settles it again and writes its rows (the host's
``compute_psi`` keeps the settled rows instead where they fit: :func:`closure_fill_cached`,
:func:`closure_fill_dense_cached`). :func:`closure_rows` runs both for one range.

Inputs (the arrays of ``GraphArrays``, ``A`` arcs, ``W = 1 + m + K``)
    ``depth int64[L]``, ``in_ptr int64[L+1]``, ``in_src int32[A]``, ``in_sum int64[A, W]``,
    ``out_ptr int64[L+1]``, ``out_dst int32[A]``, ``order int32[L]``, ``rank int32[L]``, and
    ``fast uint8[L]`` from :func:`translation_mask`.
Outputs (CSR over the sources ``lo..hi-1``)
    ``pair_ptr int64[n+1]`` (pairs of each source, ``n = hi - lo``), ``pair_dst int32[P]``
    (reachable targets, ascending), ``sum_ptr int64[P+1]`` and ``sums dtype[S, W]`` (each
    pair's antichain sorted lexicographically by row).
Cost
    Per source: O(L) for the sweep, O(W) per visit of a translation location, O(candidates x
    antichain x W) per visit of any other location; the fill pass adds O(W) per summary
    written (per pair: O(antichain x W)). Work space O(L * W + rows materialised for one
    source); no allocation per location (the CPU kernels double a source's pool and settle it
    again when it overflows).
    On the synthetic workload graphs (chains, loops, diamonds) a source visits each location
    it reaches about once, plus loop heads twice, and materialises at most about ``L / 7``
    rows.
Launch shape
    CPU: one source per task, sources independent, each pass settling it. CUDA
    (:func:`closure_settle_cuda`, then :func:`closure_fill_cuda` or
    :func:`closure_fill_dense_cuda`, foot of the file): the count pass runs one thread per
    source (the semi-naive sweep is sequential), the fill pass one thread per (source,
    target) pair, ``L^2`` threads, the target fastest within a warp, each writing one
    antichain; the settled work spaces stay on the device between the count and the fill, so
    each source settles once; one launch of each kernel and one sync in all unless a source
    overflows its work space. See the notes there.

Errors are status codes, never exceptions inside Numba: :data:`OK` or
:data:`ANTICHAIN_OVERFLOW`, with the ``(source, target)`` pair whose final antichain exceeds
``max_antichain`` and its size.

Examples
--------
A chain ``0 -> 1 -> 2`` at depth 0 with ``m = 1`` where the arc ``1 -> 2`` delays by one epoch:

>>> import numpy as np
>>> depth = np.zeros(3, np.int64)
>>> in_ptr = np.array([0, 0, 1, 2]); in_src = np.array([0, 1], np.int32)
>>> in_sum = np.array([[0, 0], [0, 1]]); out_ptr = np.array([0, 1, 2, 2])
>>> out_dst = np.array([1, 2], np.int32); order = np.arange(3, dtype=np.int32)
>>> fast = translation_mask(depth, in_ptr, in_src, in_sum)
>>> pair_ptr, pair_dst, sum_ptr, sums = closure_rows(
...     0, 3, 1, 0, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, order, fast)
>>> pair_ptr.tolist(), pair_dst.tolist(), sum_ptr.tolist(), sums[:, 1].tolist(), sums.dtype
([0, 3, 5, 6], [0, 1, 2, 1, 2, 2], [0, 1, 2, 3, 4, 5, 6], [0, 0, 1, 0, 1, 0], dtype('int8'))
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass

import numpy as np
from numba import njit

from . import _cuda
from .summary_rows import compose_into, smallest_dtype, summary_equal, summary_le

__all__ = ["OK", "ANTICHAIN_OVERFLOW", "WORK_SPACE_OVERFLOW", "AntichainOverflow",
           "WorkSpaceOverflow", "translation_mask", "settle_source", "source_counts",
           "source_fill", "source_fill_dense", "pair_fill", "pair_fill_dense",
           "closure_counts", "closure_fill", "closure_rows",
           "closure_counts_cached", "closure_fill_cached", "closure_fill_dense_cached",
           "uniform_translations",
           "transpose_pairs", "reach_counts",
           "merge_excess", "SOURCE_THREADS_PER_BLOCK", "ClosureSettle", "closure_settle_cuda",
           "closure_fill_cuda", "closure_fill_dense_cuda", "target_major_cuda"]

#: Status codes of :func:`closure_counts` and :func:`source_counts` (and
#: :data:`WORK_SPACE_OVERFLOW`, of the CUDA kernel, at the foot of the file).
OK, ANTICHAIN_OVERFLOW = 0, 1


class AntichainOverflow(Exception):
    """Raised by the host helper :func:`closure_rows`: ``(source, target, size)`` in ``args``."""


def translation_mask(depth: np.ndarray, in_ptr: np.ndarray, in_src: np.ndarray,
                     in_sum: np.ndarray) -> np.ndarray:
    """``uint8[L]``: 1 where a location has exactly one in-arc and that arc keeps every
    counter (``keep == depth(src) == depth(dst)``), so that its row is a translation of the
    in-neighbour's. Cost O(L)."""
    L = len(depth)
    fast = np.zeros(L, np.uint8)
    cand = np.flatnonzero(np.diff(in_ptr) == 1)
    if len(cand):
        arc = in_ptr[cand]
        src_depth = depth[in_src[arc]]
        ok = (in_sum[arc, 0] == src_depth) & (src_depth == depth[cand])
        fast[cand[ok]] = 1
    return fast


# -- work space -------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _copy_row(dst, src, W):
    for p in range(W):
        dst[p] = src[p]


@njit(cache=True, inline="always")
def _row_less(a, b, W):
    for p in range(W):
        if a[p] != b[p]:
            return a[p] < b[p]
    return False


@njit(cache=True, inline="always")
def _identity_into(out, d, W):
    out[0] = d
    for i in range(1, W):
        out[i] = 0


@njit(cache=True, inline="always")
def _mark_out(l, out_ptr, out_dst, rank, pending, block, n_pending, cur):
    """Make the arc targets leaving ``l`` pending; returns the new ``(n_pending, cur)``."""
    for e in range(out_ptr[l], out_ptr[l + 1]):
        r = rank[out_dst[e]]
        if pending[r] == 0:
            pending[r] = 1
            block[r >> 6] += 1
            n_pending += 1
            if r < cur:
                cur = r
    return n_pending, cur


@njit(cache=True, inline="always")
def _abandon(anchor, pending, block):
    """Put the work space back in its entry state after an overflow of the pool."""
    for l in range(anchor.shape[0]):
        anchor[l] = -1
        pending[l] = 0
    for b in range(block.shape[0]):
        block[b] = 0


@njit(cache=True, nogil=True)
def settle_source(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                  fast, anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd, tmp):
    """The fixed point for one source in a fixed-capacity work space: the scalar core of the
    CPU kernels and of the CUDA kernel ``closure_settle``.

    On success, location ``l`` is reached iff ``anchor[l] >= 0``, and ``Psi[source, l] =
    {x ; delta[l] : x in rows(anchor[l])}`` where ``rows(a) = pool[row_off[a] : row_off[a] +
    row_len[a]]`` (sorted; ``colmax[a]`` their column maxima).

    Parameters
    ----------
    source : int
    m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, fast
        The graph (as for :func:`closure_counts`).
    anchor, row_off, row_len : int[L]
        ``anchor`` all -1 on entry.
    delta, colmax : int64[L, W]
    pending : uint8[L]
        Indexed by rank; all 0 on entry.
    block : int32[L // 64 + 1]
        Pending count per 64 ranks; all 0 on entry.
    pool : int64[C, W]
        Room for ``C`` materialised summary rows.
    arcd, tmp : int64[W]
        Scratch rows.

    Any of these may be strided views (the CUDA kernel interleaves its threads' work spaces).

    Returns
    -------
    int
        The pool rows used, or -1 if ``C`` rows were not enough: the work space is then back
        in its entry state, and the caller may retry with a larger pool. On success
        ``pending``/``block`` are all 0 again; the caller resets ``anchor``.
    """
    L = depth.shape[0]
    W = 1 + m + K
    cap = pool.shape[0]
    # Step 1: the source holds the identity.
    if cap < 1:
        return -1
    _identity_into(pool[0], depth[source], W)
    anchor[source] = source
    _identity_into(delta[source], depth[source], W)
    row_off[source] = 0
    row_len[source] = 1
    for p in range(W):
        colmax[source, p] = pool[0, p]
    top = 1
    n_pending, cur = _mark_out(source, out_ptr, out_dst, rank, pending, block, 0, L)
    # Step 2: visit pending locations, smallest rank first.
    while n_pending > 0:
        if block[cur >> 6] == 0:
            b = (cur >> 6) + 1
            while block[b] == 0:
                b += 1
            cur = b << 6
        while pending[cur] == 0:
            cur += 1
        pending[cur] = 0
        block[cur >> 6] -= 1
        n_pending -= 1
        l = order[cur]
        if fast[l] == 1 and l != source:
            # Step 2a: a translation of the single in-neighbour's row; it changed since the
            # in-neighbour's did (that is what made it pending).
            e = in_ptr[l]
            u = in_src[e]
            anchor[l] = anchor[u]
            compose_into(delta[u], in_sum[e], delta[l], m, K)
            n_pending, cur = _mark_out(l, out_ptr, out_dst, rank, pending, block, n_pending, cur)
            continue
        # Step 2b: minimal elements of the candidates, inserted one by one.
        base = top
        cnt = 0
        if l == source:
            if base + 1 > cap:
                _abandon(anchor, pending, block)
                return -1
            _identity_into(pool[base], depth[source], W)
            cnt = 1
        for e in range(in_ptr[l], in_ptr[l + 1]):
            u = in_src[e]
            a = anchor[u]
            if a < 0:
                continue
            compose_into(delta[u], in_sum[e], arcd, m, K)
            off = row_off[a]
            for i in range(row_len[a]):
                if base + cnt + 1 > cap:
                    _abandon(anchor, pending, block)
                    return -1
                c = pool[base + cnt]
                compose_into(pool[off + i], arcd, c, m, K)
                dominated = False
                for j in range(cnt):
                    if summary_le(pool[base + j], c, m, K):
                        dominated = True
                        break
                if dominated:
                    continue
                k = 0
                for j in range(cnt):
                    if not summary_le(c, pool[base + j], m, K):
                        if k != j:
                            _copy_row(pool[base + k], pool[base + j], W)
                        k += 1
                if k != cnt:
                    _copy_row(pool[base + k], pool[base + cnt], W)
                cnt = k + 1
        # sort lexicographically (insertion sort; antichains are small)
        for i in range(1, cnt):
            if _row_less(pool[base + i], pool[base + i - 1], W):
                _copy_row(tmp, pool[base + i], W)
                j = i
                while j > 0 and _row_less(tmp, pool[base + j - 1], W):
                    _copy_row(pool[base + j], pool[base + j - 1], W)
                    j -= 1
                _copy_row(pool[base + j], tmp, W)
        # Step 2c: keep it, and wake the out-neighbours, only if it changed.
        changed = anchor[l] != l or cnt != row_len[l]
        if not changed:
            old = row_off[l]
            for i in range(cnt):
                if not summary_equal(pool[base + i], pool[old + i], W):
                    changed = True
                    break
        if not changed:
            continue
        anchor[l] = l
        _identity_into(delta[l], depth[l], W)
        row_off[l] = base
        row_len[l] = cnt
        for p in range(W):
            mx = pool[base, p]
            for i in range(1, cnt):
                if pool[base + i, p] > mx:
                    mx = pool[base + i, p]
            colmax[l, p] = mx
        top = base + cnt
        n_pending, cur = _mark_out(l, out_ptr, out_dst, rank, pending, block, n_pending, cur)
    return top


@njit(cache=True, inline="always")
def source_counts(m, K, anchor, delta, row_len, colmax, tmp, max_antichain):
    """The size of one settled source's row (:func:`settle_source`'s work space): scalar
    core of :func:`closure_counts` and of the CUDA kernel ``closure_settle``.

    Returns ``(status, err_dst, err_size, pairs, rows, vmax, largest)``: :data:`OK`, or
    :data:`ANTICHAIN_OVERFLOW` with the first target (by id) whose antichain has more than
    ``max_antichain`` (0: no cap) summaries and its size (-1, -1 otherwise); the reached
    locations, the summaries over them, the largest entry of any row (at least 0) and the
    largest antichain (the counts stop at an overflow)."""
    W = 1 + m + K
    pairs = 0
    rows = 0
    vmax = 0
    largest = 0
    for l in range(anchor.shape[0]):
        a = anchor[l]
        if a < 0:
            continue
        cnt = row_len[a]
        if max_antichain > 0 and cnt > max_antichain:
            return ANTICHAIN_OVERFLOW, l, cnt, pairs, rows, vmax, largest
        if cnt > largest:
            largest = cnt
        # each column of ``x ; delta`` depends on that column of x alone, monotonically
        compose_into(colmax[a], delta[l], tmp, m, K)
        for p in range(W):
            if tmp[p] > vmax:
                vmax = tmp[p]
        pairs += 1
        rows += cnt
    return OK, -1, -1, pairs, rows, vmax, largest


@njit(cache=True, inline="always")
def pair_fill(m, K, l, anchor, delta, row_off, row_len, pool, P, S, pair_dst, sum_ptr, sums):
    """Write the pair of one settled source's row into a target ``l`` it reaches (``anchor[l]
    >= 0``, the caller checks) in the ragged layout, as pair ``P`` with its summaries from
    ``S`` on: ``pair_dst[P] = l``, ``sum_ptr[P] = S`` and ``sums[S : S + c]``; returns ``c``.
    Scalar core of :func:`source_fill` (its loop) and of the CUDA kernel
    ``closure_fill_rows`` (one thread per pair); pairs write disjoint slices.

    No early return (in this and :func:`pair_fill_dense`): inlined into the CPU loop, one
    made :func:`closure_fill` and the dense fill 1.4 to 1.8 times slower at N = 1000."""
    a = anchor[l]
    pair_dst[P] = l
    sum_ptr[P] = S
    off = row_off[a]
    d = delta[l]
    cnt = row_len[a]
    for i in range(cnt):
        compose_into(pool[off + i], d, sums[S + i], m, K)
    return cnt


@njit(cache=True, inline="always")
def source_fill(m, K, anchor, delta, row_off, row_len, pool, P, S, pair_dst, sum_ptr, sums):
    """Write one settled source's row in the ragged layout, its first pair at ``P`` and its
    first summary at ``S``: ``pair_dst``/``sum_ptr`` from ``P`` on, ``sums`` from ``S`` on.
    Scalar core of :func:`closure_fill`: :func:`pair_fill` for every target it reaches, in
    turn."""
    for l in range(anchor.shape[0]):
        if anchor[l] >= 0:
            S += pair_fill(m, K, l, anchor, delta, row_off, row_len, pool, P, S, pair_dst,
                           sum_ptr, sums)
            P += 1


@njit(cache=True, inline="always")
def pair_fill_dense(m, K, l, anchor, delta, row_off, row_len, pool, dense, count):
    """Write the pair of one settled source's row into a target ``l`` it reaches
    (``anchor[l] >= 0``, the caller checks) in the dense layout: ``dense[l, :c]`` (``[L, A,
    W]``, zero beforehand) and ``count[l] = c``. Scalar core of :func:`source_fill_dense`
    (its loop) and of the CUDA kernel ``closure_fill_dense_rows`` (one thread per pair)."""
    a = anchor[l]
    off = row_off[a]
    d = delta[l]
    cnt = row_len[a]
    for i in range(cnt):
        compose_into(pool[off + i], d, dense[l, i], m, K)
    count[l] = cnt


@njit(cache=True, inline="always")
def source_fill_dense(m, K, anchor, delta, row_off, row_len, pool, dense, count):
    """Write one settled source's row in the dense layout: ``dense[l, :c]`` (``[L, A, W]``,
    zero beforehand) and ``count[l] = c``. Scalar core of :func:`closure_fill_dense_cached`:
    :func:`pair_fill_dense` for every target it reaches."""
    for l in range(anchor.shape[0]):
        if anchor[l] >= 0:
            pair_fill_dense(m, K, l, anchor, delta, row_off, row_len, pool, dense, count)


@njit(cache=True, inline="always")
def _release(anchor):
    for l in range(anchor.shape[0]):
        anchor[l] = -1


@njit(cache=True, nogil=True)
def _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, fast,
            anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd, tmp):
    """:func:`settle_source` with a pool that grows: on an overflow, doubled and the source
    settled again. Returns the (possibly regrown) ``pool``."""
    while True:
        top = settle_source(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst,
                            order, rank, fast, anchor, delta, row_off, row_len, colmax, pending,
                            block, pool, arcd, tmp)
        if top >= 0:
            return pool
        pool = np.empty((2 * pool.shape[0], pool.shape[1]), np.int64)


@njit(cache=True, inline="always")
def _work_space(L, W):
    anchor = np.full(L, -1, np.int32)
    delta = np.empty((L, W), np.int64)
    row_off = np.zeros(L, np.int32)
    row_len = np.zeros(L, np.int32)
    colmax = np.empty((L, W), np.int64)
    pending = np.zeros(L, np.uint8)            # indexed by rank
    block = np.zeros((L >> 6) + 1, np.int32)   # pending count per 64 ranks: skips empty runs
    pool = np.empty((max(64, L), W), np.int64)
    return anchor, delta, row_off, row_len, colmax, pending, block, pool


@njit(cache=True, nogil=True)
def closure_counts(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                   fast, max_antichain):
    """First pass: the size of ``Psi[s, :]`` for ``s in [lo, hi)``.

    Parameters
    ----------
    lo, hi : int
        The sources ``[lo, hi)``.
    m, K : int
        Outer width and largest depth; summary rows have ``W = 1 + m + K`` entries.
    depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank
        The graph's arrays (``GraphArrays``).
    fast : uint8[L]
        :func:`translation_mask`.
    max_antichain : int
        Largest antichain allowed in the result; 0 for no cap.

    Returns
    -------
    status : int
        :data:`OK` or :data:`ANTICHAIN_OVERFLOW` (the first source, then the first target in
        id order, whose antichain is larger than ``max_antichain``).
    err_src, err_dst, err_size : int
        The overflowing pair and its antichain size; -1 when ``status`` is :data:`OK`.
    n_pairs, n_rows : int64[hi - lo]
        Locations each source reaches, and summaries in its row.
    vmax : int
        The largest entry of any summary row (at least 0).
    largest : int
        The largest antichain.
    """
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    n_pairs = np.zeros(hi - lo, np.int64)
    n_rows = np.zeros(hi - lo, np.int64)
    vmax = 0
    largest = 0
    for source in range(lo, hi):
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        status, err_dst, err_size, pairs, rows, vm, lg = source_counts(
            m, K, anchor, delta, row_len, colmax, tmp, max_antichain)
        if status != OK:
            return status, source, err_dst, err_size, n_pairs, n_rows, vmax, largest
        vmax = max(vmax, vm)
        largest = max(largest, lg)
        n_pairs[source - lo] = pairs
        n_rows[source - lo] = rows
        _release(anchor)
    return OK, -1, -1, -1, n_pairs, n_rows, vmax, largest


@njit(cache=True, nogil=True)
def closure_fill(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                 fast, pair_ptr, row_ptr, pair_dst, sum_ptr, sums):
    """Second pass: write ``Psi[s, :]`` for ``s in [lo, hi)`` into the final CSR arrays.

    ``pair_ptr`` and ``row_ptr`` (``int64``, indexed by source) hold the first pair and the
    first summary row of every source, the prefix sums of :func:`closure_counts`' counts.
    This fills ``pair_dst[pair_ptr[lo]:pair_ptr[hi]]``, ``sum_ptr`` over the same indices,
    and ``sums[row_ptr[lo]:row_ptr[hi]]``; the caller sets ``sum_ptr[P] = S``. ``sums`` may
    have any integer dtype that holds the counted ``vmax``. Ranges of sources write disjoint
    slices and read nothing the others write, so they can run concurrently.
    """
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    for source in range(lo, hi):
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        source_fill(m, K, anchor, delta, row_off, row_len, pool, pair_ptr[source],
                    row_ptr[source], pair_dst, sum_ptr, sums)
        _release(anchor)


def closure_rows(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                 fast, max_antichain=0):
    """Both passes for the sources ``[lo, hi)``, single-threaded: ``(pair_ptr int64[n+1],
    pair_dst int32[P], sum_ptr int64[P+1], sums[S, W])`` with ``sums`` in the narrowest
    integer dtype that holds every entry.

    Raises
    ------
    AntichainOverflow
        With ``args == (source, target, size)``, if an antichain exceeds ``max_antichain``.
    """
    graph = (m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, fast)
    status, s, t, size, n_pairs, n_rows, vmax, _ = closure_counts(lo, hi, *graph, max_antichain)
    if status != OK:
        raise AntichainOverflow(s, t, size)
    # closure_fill indexes the offsets by source: entries before ``lo`` are unused
    pair_ptr = np.zeros(hi + 1, np.int64)
    row_ptr = np.zeros(hi + 1, np.int64)
    np.cumsum(n_pairs, out=pair_ptr[lo + 1:])
    np.cumsum(n_rows, out=row_ptr[lo + 1:])
    P, S = int(pair_ptr[-1]), int(row_ptr[-1])
    pair_dst = np.empty(P, np.int32)
    sum_ptr = np.empty(P + 1, np.int64)
    sum_ptr[P] = S
    sums = np.empty((S, 1 + m + K), smallest_dtype(int(vmax)))
    closure_fill(lo, hi, *graph, pair_ptr, row_ptr, pair_dst, sum_ptr, sums)
    return pair_ptr[lo:], pair_dst, sum_ptr, sums



# -- one settle per source: the count pass keeps the settled rows (CPU) ------------------------
#
# The two passes above settle every source twice: the host sizes the output from the first and
# the second writes it. Settling is half the work of ``compute_psi`` (issue 33), so
# :func:`closure_counts_cached` keeps what a settled source's row is made of, in a cache of the
# chunk: the materialised rows of the anchors it uses (a few dozen per source on the synthetic
# workloads) and, per target reached, the target, its anchor and its ``delta`` -- the row of
# the pair being ``anchor rows ; delta`` (:func:`pair_fill`). Entries are kept in a narrow
# dtype guessed from the graph: a source whose largest entry (which bounds every anchor row
# and every ``delta``, as each is, or composes into, a summary of the row) does not fit it,
# or that does not fit the chunk's room, is not cached. :func:`closure_fill_cached` and
# :func:`closure_fill_dense_cached` then write a cached source's rows from the cache and
# settle only the others again. Same rows, same bytes: the same composition of the same
# values.

@njit(cache=True, inline="always")
def _compose_rows(src, off, cnt, d, j, out, o, m, K):
    """``out[o + i] = src[off + i] ; d[j]`` for ``i < cnt`` (``compose_into`` row by row, any
    integer dtypes holding the values): the scalar core of the cached fills, with the
    one-counter case (``W = 3``) unrolled."""
    kr = d[j, 0]
    if m == 1 and K == 1:
        d1 = d[j, 1]
        d2 = d[j, 2]
        keep = kr > 0
        for i in range(cnt):
            s0 = src[off + i, 0]
            v1 = src[off + i, 1] + d1
            v2 = src[off + i, 2] + d2 if keep else d2
            out[o + i, 0] = s0 if s0 < kr else kr
            out[o + i, 1] = v1
            out[o + i, 2] = v2
        return
    for i in range(cnt):
        compose_into(src[off + i], d[j], out[o + i], m, K)


@njit(cache=True, inline="always")
def _column_max_into(rows, off, cnt, out, W):
    """``out[p] = max(rows[off:off + cnt, p])`` (``cnt >= 1``), in int64."""
    for p in range(W):
        mx = np.int64(rows[off, p])
        for i in range(1, cnt):
            v = np.int64(rows[off + i, p])
            if v > mx:
                mx = v
        out[p] = mx


@njit(cache=True, nogil=True)
def uniform_translations(depth, in_ptr, in_src, in_sum):
    """Whether every arc keeps every counter between locations of one depth and has no
    negative entry -- then every summary of ``Psi`` is such a translation, composing with one
    adds a fixed vector, and :func:`closure_counts_cached` may derive a source's row from its
    single successor's."""
    L = depth.shape[0]
    W = in_sum.shape[1]
    for v in range(L):
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            if in_sum[e, 0] != depth[u] or depth[u] != depth[v]:
                return False
            for p in range(1, W):
                if in_sum[e, p] < 0:
                    return False
    return True


@njit(cache=True, nogil=True)
def closure_counts_cached(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                          rank, fast, max_antichain, c_dst, c_anc, c_delta, a_off, a_cnt,
                          a_rows, c_vmax, perm, derive):
    """:func:`closure_counts`, keeping the settled rows of the sources it can in a cache.

    The cache (capacities: ``Pc`` pairs, ``Ac`` anchors, ``Rc`` rows; ``dtype`` any signed
    integer type): ``c_dst int32[Pc]``, ``c_anc int32[Pc]``, ``c_delta dtype[Pc, W]`` per
    pair, ``a_off int64[Ac]``, ``a_cnt int32[Ac]`` per anchor and ``a_rows dtype[Rc, W]``;
    ``c_vmax`` the largest entry ``dtype`` holds. The sources ``[lo, hi)`` are taken in the
    order ``perm`` (a permutation of them); a source is cached when its anchors' rows and
    deltas fit ``dtype`` and its pairs, anchors and their rows fit what is left: its pairs are
    then ``p`` to ``p + n_pairs - 1``, pair ``i`` being target ``c_dst[i]`` (ascending) with
    the rows ``a_rows[a_off[a] + k] ; c_delta[i]``, ``k < a_cnt[a]``, ``a = c_anc[i]``.

    With ``derive`` (:func:`uniform_translations`), a source ``s`` whose one out-arc ``a``
    leads to a source ``t`` of the range already cached is not settled: every non-empty path
    from ``s`` is ``a`` then a path from ``t``, and composing with a translation keeps an
    antichain an antichain, sorted, so ``Psi[s, l] = {a ; x : x in Psi[t, l]}`` for ``l !=
    s`` -- ``t``'s pairs, with its anchors' rows composed after ``a`` -- and ``Psi[s, s]`` is
    the identity alone (below every summary: none resets a counter or steps back). Taking
    the sources in decreasing DFS rank puts ``t`` before ``s`` along chains. The counts are
    the exact ones, as settling gives them.

    Returns :func:`closure_counts`' tuple followed by ``c_first int64[hi - lo]``: the first
    cached pair of each source, -1 for a source not cached. The status and the overflowing
    pair are those of the first source in ``perm`` order that overflows.
    """
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    amap = np.full(L, -1, np.int32)
    n = hi - lo
    n_pairs = np.zeros(n, np.int64)
    n_rows = np.zeros(n, np.int64)
    c_first = np.full(n, -1, np.int64)
    a_first = np.zeros(n, np.int64)
    a_num = np.zeros(n, np.int64)
    cap_pairs = c_dst.shape[0]
    cap_anchors = a_off.shape[0]
    cap_rows = a_rows.shape[0]
    acol = np.empty((cap_anchors, W), np.int64)   # column maxima of every cached anchor
    cp = 0
    ca = 0
    cr = 0
    vmax = 0
    largest = 0
    for q in range(n):
        source = perm[q]
        if derive and out_ptr[source + 1] - out_ptr[source] == 1:
            t = out_dst[out_ptr[source]]
            if lo <= t < hi and c_first[t - lo] >= 0:
                ti = t - lo
                e = in_ptr[t]
                while in_src[e] != source:
                    e += 1
                pt, npt = c_first[ti], n_pairs[ti]
                at, nat = a_first[ti], a_num[ti]
                rows_t = a_off[at + nat - 1] + a_cnt[at + nat - 1] - a_off[at]
                if (cp + npt + 1 <= cap_pairs and ca + nat + 1 <= cap_anchors
                        and cr + rows_t + 1 <= cap_rows):
                    p0, a0, r0 = cp, ca, cr
                    ok = True
                    # t's anchors, composed after the arc
                    for k in range(at, at + nat):
                        cnt = a_cnt[k]
                        a_off[ca] = cr
                        a_cnt[ca] = cnt
                        for i in range(cnt):
                            compose_into(in_sum[e], a_rows[a_off[k] + i], tmp, m, K)
                            for p in range(W):
                                if tmp[p] > c_vmax:
                                    ok = False
                                a_rows[cr + i, p] = tmp[p]
                        _column_max_into(a_rows, cr, cnt, acol[ca], W)
                        cr += cnt
                        ca += 1
                    if ok:
                        # the identity, Psi[s, s]
                        ident = ca
                        a_off[ca] = cr
                        a_cnt[ca] = 1
                        _identity_into(tmp, depth[source], W)
                        for p in range(W):
                            a_rows[cr, p] = tmp[p]
                            acol[ca, p] = tmp[p]
                        cr += 1
                        ca += 1
                        # t's pairs, the identity in its place (replacing t's pair into s),
                        # and their counts as source_counts gives them: every summary keeps
                        # all counters, so a pair's column maxima are its anchor's plus its
                        # delta (the keep column: the depth)
                        shift = a0 - at
                        rows = 1
                        vm = depth[source]
                        lg = 1
                        placed = False
                        for j in range(pt, pt + npt):
                            l = c_dst[j]
                            if not placed and l >= source:
                                placed = True
                                c_dst[cp] = source
                                c_anc[cp] = ident
                                for p in range(W):
                                    c_delta[cp, p] = tmp[p]
                                cp += 1
                                if l == source:
                                    continue
                            k = c_anc[j] + shift
                            c_dst[cp] = l
                            c_anc[cp] = k
                            c_delta[cp, 0] = c_delta[j, 0]
                            for p in range(1, W):
                                d = c_delta[j, p]
                                c_delta[cp, p] = d
                                v = acol[k, p] + d
                                if v > vm:
                                    vm = v
                            cnt = a_cnt[k]
                            if cnt > lg:
                                lg = cnt
                            rows += cnt
                            cp += 1
                        if not placed:
                            c_dst[cp] = source
                            c_anc[cp] = ident
                            for p in range(W):
                                c_delta[cp, p] = tmp[p]
                            cp += 1
                        pairs = cp - p0
                        c_first[source - lo] = p0
                        n_pairs[source - lo] = pairs
                        n_rows[source - lo] = rows
                        a_first[source - lo] = a0
                        a_num[source - lo] = ca - a0
                        vmax = max(vmax, vm)
                        largest = max(largest, lg)
                        continue
                    cp, ca, cr = p0, a0, r0
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        status, err_dst, err_size, pairs, rows, vm, lg = source_counts(
            m, K, anchor, delta, row_len, colmax, tmp, max_antichain)
        if status != OK:
            return status, source, err_dst, err_size, n_pairs, n_rows, vmax, largest, c_first
        vmax = max(vmax, vm)
        largest = max(largest, lg)
        n_pairs[source - lo] = pairs
        n_rows[source - lo] = rows
        if vm <= c_vmax and cp + pairs <= cap_pairs:
            p0, a0, r0 = cp, ca, cr
            fits = True
            for l in range(L):
                a = anchor[l]
                if a < 0:
                    continue
                k = amap[a]
                if k < 0:
                    cnt = row_len[a]
                    if ca + 1 > cap_anchors or cr + cnt > cap_rows:
                        fits = False
                        break
                    k = ca
                    amap[a] = k
                    a_off[k] = cr
                    a_cnt[k] = cnt
                    off = row_off[a]
                    for i in range(cnt):
                        for p in range(W):
                            a_rows[cr + i, p] = pool[off + i, p]
                    for p in range(W):   # settle_source's column maxima of these rows
                        acol[k, p] = colmax[a, p]
                    cr += cnt
                    ca += 1
                c_dst[cp] = l
                c_anc[cp] = k
                for p in range(W):
                    c_delta[cp, p] = delta[l, p]
                cp += 1
            for l in range(L):
                a = anchor[l]
                if a >= 0:
                    amap[a] = -1
            if fits:
                c_first[source - lo] = p0
                a_first[source - lo] = a0
                a_num[source - lo] = ca - a0
            else:
                cp, ca, cr = p0, a0, r0
        _release(anchor)
    return OK, -1, -1, -1, n_pairs, n_rows, vmax, largest, c_first


@njit(cache=True, nogil=True)
def closure_fill_cached(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                        rank, fast, c_first, c_dst, c_anc, c_delta, a_off, a_cnt, a_rows,
                        n_pairs, pair_ptr, row_ptr, pair_dst, sum_ptr, sums):
    """:func:`closure_fill` for ``[lo, hi)`` after :func:`closure_counts_cached` (its cache
    and ``c_first``, ``n_pairs``): a cached source's rows are composed from the cache, the
    others settled again."""
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    for source in range(lo, hi):
        first = c_first[source - lo]
        P = pair_ptr[source]
        S = row_ptr[source]
        if first >= 0:
            for j in range(first, first + n_pairs[source - lo]):
                a = c_anc[j]
                cnt = a_cnt[a]
                pair_dst[P] = c_dst[j]
                sum_ptr[P] = S
                _compose_rows(a_rows, a_off[a], cnt, c_delta, j, sums, S, m, K)
                S += cnt
                P += 1
            continue
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        source_fill(m, K, anchor, delta, row_off, row_len, pool, P, S, pair_dst, sum_ptr, sums)
        _release(anchor)


@njit(cache=True, nogil=True)
def closure_fill_dense_cached(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst,
                              order, rank, fast, c_first, c_dst, c_anc, c_delta, a_off, a_cnt,
                              a_rows, n_pairs, dense, count):
    """:func:`closure_fill_dense` for ``[lo, hi)`` after :func:`closure_counts_cached`: a
    cached source's antichains are composed from the cache, the others settled again."""
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    for source in range(lo, hi):
        first = c_first[source - lo]
        if first >= 0:
            out = dense[source]
            cnt = count[source]
            for j in range(first, first + n_pairs[source - lo]):
                a = c_anc[j]
                l = c_dst[j]
                c = a_cnt[a]
                _compose_rows(a_rows, a_off[a], c, c_delta, j, out[l], 0, m, K)
                cnt[l] = c
            continue
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        source_fill_dense(m, K, anchor, delta, row_off, row_len, pool, dense[source],
                          count[source])
        _release(anchor)

@njit(cache=True, nogil=True)
def transpose_pairs(pair_ptr, pair_dst, L):
    """The pairs grouped by target: a counting sort. Cost O(L + P).

    Returns
    -------
    t_ptr : int64[L+1]
        Pairs into target ``l`` are ``t_ptr[l]:t_ptr[l+1]``.
    t_src : int32[P]
        Their sources, ascending within a target.
    t_pair : int64[P]
        Their index in ``pair_dst`` (the summaries are ``sums[sum_ptr[i]:sum_ptr[i+1]]``).
    """
    P = pair_dst.shape[0]
    t_ptr = np.zeros(L + 1, np.int64)
    for i in range(P):
        t_ptr[pair_dst[i] + 1] += 1
    for l in range(L):
        t_ptr[l + 1] += t_ptr[l]
    fill = t_ptr[:L].copy()
    t_src = np.empty(P, np.int32)
    t_pair = np.empty(P, np.int64)
    for s in range(pair_ptr.shape[0] - 1):
        for i in range(pair_ptr[s], pair_ptr[s + 1]):
            d = pair_dst[i]
            k = fill[d]
            fill[d] = k + 1
            t_src[k] = s
            t_pair[k] = i
    return t_ptr, t_src, t_pair


@njit(cache=True, nogil=True)
def reach_counts(out_ptr, out_dst, weight, stop):
    """For every location ``s``: how many locations it reaches (itself included) and the sum of
    ``weight`` over them. A breadth-first search per location: O(L * (L + A)), O(L) space.
    With ``stop >= 0`` the searches end once the reach summed over the locations searched
    exceeds ``stop`` (the later locations' entries stay 0): O(stop * out-degree) then.

    Returns ``(reach int64[L], weight_sum int64[L])``.
    """
    L = out_ptr.shape[0] - 1
    reach = np.zeros(L, np.int64)
    wsum = np.zeros(L, np.int64)
    mark = np.full(L, -1, np.int64)
    queue = np.empty(max(L, 1), np.int64)
    total = 0
    for s in range(L):
        if stop >= 0 and total > stop:
            break
        head = 0
        tail = 1
        queue[0] = s
        mark[s] = s
        acc = weight[s]
        while head < tail:
            v = queue[head]
            head += 1
            for e in range(out_ptr[v], out_ptr[v + 1]):
                w = out_dst[e]
                if mark[w] != s:
                    mark[w] = s
                    queue[tail] = w
                    tail += 1
                    acc += weight[w]
        reach[s] = tail
        wsum[s] = acc
        total += tail
    return reach, wsum


@njit(cache=True, nogil=True)
def merge_excess(comp, rank, depth, in_ptr, in_src, in_sum):
    """For every location, the in-arcs beyond the first that can carry a minimal summary:
    ``int64[L]``, the antichain growth the size estimate charges to it. ``comp`` numbers
    the strongly connected components (``GraphArrays.scc``).

    A component all of whose cycles strictly advance (docs/semantics.md 2.4: then ``Psi`` is the
    minimum over simple paths) is recognised by a sufficient test: its internal arcs keep
    every counter, and without the arcs that advance something (a non-zero entry) it has no
    cycle. In such a component the back arcs of the DFS order (``rank[src] >= rank[dst]``)
    only close cycles and are not charged. Cost O(L + A).
    """
    L = depth.shape[0]
    n = 0
    for l in range(L):
        if comp[l] + 1 > n:
            n = comp[l] + 1
    strict = np.ones(n, np.uint8)
    size = np.zeros(n, np.int64)
    for l in range(L):
        size[comp[l]] += 1
    # internal arcs that keep every counter and advance nothing: Kahn's algorithm on them
    indeg = np.zeros(L, np.int64)
    W = in_sum.shape[1]
    for v in range(L):
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            if comp[u] != comp[v]:
                continue
            if in_sum[e, 0] != depth[u] or depth[u] != depth[v]:
                strict[comp[v]] = 0
            zero = True
            for p in range(1, W):
                if in_sum[e, p] != 0:
                    zero = False
            if zero:
                indeg[v] += 1
    # out-arcs of the zero subgraph, from the in-arcs
    out_cnt = np.zeros(L + 1, np.int64)
    for v in range(L):
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            if comp[u] == comp[v] and _is_zero(in_sum[e], W):
                out_cnt[u + 1] += 1
    for l in range(L):
        out_cnt[l + 1] += out_cnt[l]
    fill = out_cnt[:L].copy()
    zdst = np.empty(out_cnt[L], np.int64)
    for v in range(L):
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            if comp[u] == comp[v] and _is_zero(in_sum[e], W):
                zdst[fill[u]] = v
                fill[u] += 1
    queue = np.empty(max(L, 1), np.int64)
    head = 0
    tail = 0
    for l in range(L):
        if indeg[l] == 0:
            queue[tail] = l
            tail += 1
    removed = np.zeros(n, np.int64)
    while head < tail:
        v = queue[head]
        head += 1
        removed[comp[v]] += 1
        for i in range(out_cnt[v], out_cnt[v + 1]):
            w = zdst[i]
            indeg[w] -= 1
            if indeg[w] == 0:
                queue[tail] = w
                tail += 1
    for c in range(n):
        if removed[c] != size[c]:
            strict[c] = 0
    excess = np.zeros(L, np.int64)
    for v in range(L):
        k = 0
        for e in range(in_ptr[v], in_ptr[v + 1]):
            u = in_src[e]
            if comp[u] == comp[v] and strict[comp[v]] == 1 and rank[u] >= rank[v]:
                continue
            k += 1
        if k > 1:
            excess[v] = k - 1
    return excess


@njit(cache=True, inline="always")
def _is_zero(row, W):
    for p in range(1, W):
        if row[p] != 0:
            return False
    return True


# -- CUDA ---------------------------------------------------------------------------------------
#
# ``Psi`` on the device: one thread per source runs the twin's scalar core, ``settle_source``
# then ``source_counts`` (kernel ``closure_settle``) and, once the host has sized the output,
# one thread per (source, target) pair runs ``pair_fill``/``pair_fill_dense`` (kernels
# ``closure_fill_rows``/``closure_fill_dense_rows``: the body of the CPU's ``source_fill``
# loops), from the same Python source as the CPU kernels above. Every
# source walks the locations in the one schedule all sources share (``order``: the reverse
# postorder, pending locations smallest rank first, a back edge restarting the sweep at the
# rank it woke), so the number of launches does not depend on the longest path; thread ``i``
# takes source ``order[i]``, so neighbouring threads settle neighbouring sources and walk much
# the same locations in the same order.
#
# A device thread cannot allocate, so each gets a fixed work space, interleaved across the
# threads (the thread index is the last axis: when neighbouring threads touch the same
# location, their accesses coalesce); its pool has room for ``rows`` summary rows. A source
# whose rows do not fit reports it (``WORK_SPACE_OVERFLOW``) and is settled again, alone with
# the other such sources, in a work space ``growth`` times larger: at most ``attempts``
# launches of ``closure_settle`` in all. The settled work spaces stay on the device until the
# fill, which reads them (no second settle, unlike the CPU's two passes).

#: Status of a source whose rows did not fit its device work space (``closure_settle_cuda``).
WORK_SPACE_OVERFLOW = 2

#: Threads per block of the per-source kernels on a device: one. Each thread's work is long,
#: serial and follows its own branches, so threads sharing a warp wait for one another, and
#: 2,095 sources in blocks of 32 fill only 66 of an H200's 132 SMs. Measured on an H200
#: (``perf/results/h200-4214b17/``, the count pass at N = 1000 by threads per block): 1: 8.7 ms,
#: 2: 8.9, 4: 10.7, 8: 14.0, 16: 16.6, 32: 23.8, 64: 24.1; one thread alone settling the
#: heaviest source takes 5.8 ms, the floor of this design. The whole device build of ``Psi``
#: with 1 against 32: 10.8 against 26.1 ms at N = 1000, 30.4 against 106.7 ms at N = 2000.
SOURCE_THREADS_PER_BLOCK = 1

#: How the per-source work spaces lie in device memory: ``"interleaved"`` (thread index last:
#: the threads of a warp read neighbouring words when they touch the same entry) or
#: ``"by_thread"`` (each thread's work space contiguous: one thread's walk through its own
#: rows reads whole cache lines). The kernels take either on a device, where the views are
#: CuPy arrays with strides; the simulator copies NumPy arguments and wants them contiguous,
#: so ``"by_thread"`` is a device-only experiment (``perf.device_check profile`` times it).
SOURCE_WORK_SPACE = "interleaved"

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


class WorkSpaceOverflow(RuntimeError):
    """Raised by :func:`closure_settle_cuda` when some sources still overflow their work
    space after the last attempt; ``sources`` (their ids) and ``rows`` (the last room)."""


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    settle = _cuda.device(settle_source)
    counts = _cuda.device(source_counts)
    fill = _cuda.device(pair_fill)
    fill_dense = _cuda.device(pair_fill_dense)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def closure_settle(srcs, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                       fast, anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd,
                       tmp, max_antichain, settled, status, n_pairs, n_rows, vmax, largest,
                       err_dst, err_size):
        """Thread per source ``s = srcs[i]``: settle it in work space ``i`` (the last axis),
        then count its row; ``settled[i]`` says whether it fit."""
        i = cuda.grid(1)
        if i < srcs.shape[0]:
            s = srcs[i]
            top = settle(s, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                         fast, anchor[:, i], delta[:, :, i], row_off[:, i], row_len[:, i],
                         colmax[:, :, i], pending[:, i], block[:, i], pool[:, :, i], arcd[:, i],
                         tmp[:, i])
            if top < 0:
                settled[i] = 0
                status[s] = WORK_SPACE_OVERFLOW
                n_pairs[s] = 0
                n_rows[s] = 0
                vmax[s] = 0
                largest[s] = 0
                err_dst[s] = -1
                err_size[s] = -1
                return
            settled[i] = 1
            st, ed, es, pairs, rows, vm, lg = counts(m, K, anchor[:, i], delta[:, :, i],
                                                     row_len[:, i], colmax[:, :, i], tmp[:, i],
                                                     max_antichain)
            status[s] = st
            n_pairs[s] = pairs
            n_rows[s] = rows
            vmax[s] = vm
            largest[s] = lg
            err_dst[s] = ed
            err_size[s] = es

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def closure_fill_rows(srcs, settled, m, K, anchor, delta, row_off, row_len, pool, pair_ptr,
                          row_ptr, pair_inc, sum_inc, pair_dst, sum_ptr, sums):
        """Thread per (work-space slot ``i``, target ``l``), ``l`` fastest: the pair
        ``(srcs[i], l)`` if ``srcs[i]`` settled in this work space and reaches ``l``, at the
        pair and summary offsets ``pair_inc``/``sum_inc`` (inclusive scans over the targets of
        slot ``i``, ``[n, L]``) give inside the source's row."""
        L = anchor.shape[0]
        k = cuda.grid(1)
        if k < srcs.shape[0] * L:
            i = k // L
            l = k - i * L
            a = anchor[l, i]
            if settled[i] == 1 and a >= 0:
                s = srcs[i]
                fill(m, K, l, anchor[:, i], delta[:, :, i], row_off[:, i], row_len[:, i],
                     pool[:, :, i], pair_ptr[s] + pair_inc[i, l] - 1,
                     row_ptr[s] + sum_inc[i, l] - row_len[a, i], pair_dst, sum_ptr, sums)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def closure_fill_dense_rows(srcs, settled, m, K, anchor, delta, row_off, row_len, pool,
                                dense, count):
        """Thread per (work-space slot ``i``, target ``l``), ``l`` fastest: the pair
        ``(srcs[i], l)`` if ``srcs[i]`` settled in this work space and reaches ``l``."""
        L = anchor.shape[0]
        k = cuda.grid(1)
        if k < srcs.shape[0] * L:
            i = k // L
            l = k - i * L
            if settled[i] == 1 and anchor[l, i] >= 0:
                s = srcs[i]
                fill_dense(m, K, l, anchor[:, i], delta[:, :, i], row_off[:, i],
                           row_len[:, i], pool[:, :, i], dense[s], count[s])

    return types.SimpleNamespace(closure_settle=closure_settle,
                                 closure_fill_rows=closure_fill_rows,
                                 closure_fill_dense_rows=closure_fill_dense_rows)


@dataclass
class ClosureSettle:
    """Every source settled on the device (:func:`closure_settle_cuda`), ready to fill.

    Attributes
    ----------
    L, m, K : int
    status : int
        :data:`OK` or :data:`ANTICHAIN_OVERFLOW`.
    err_src, err_dst, err_size : int
        With :data:`ANTICHAIN_OVERFLOW`: the first source (by id), its first target (by id)
        whose antichain exceeds ``max_antichain``, and its size; -1 otherwise.
    num_pairs, num_summaries, vmax, largest : int
        ``P``, ``S``, the largest entry and the largest antichain (as
        :func:`closure_counts`).
    pair_ptr, row_ptr : int64[L + 1] (device)
        Exclusive prefix sums of the pairs and summaries per source.
    spaces : list of tuple
        Per attempt ``(srcs, settled, anchor, delta, row_off, row_len, pool)``: the sources
        of that launch and whether each settled there, and the work space holding them.
    launches : int
        Launches of ``closure_settle`` (1 unless some source overflowed).
    rows : int
        Pool rows per source in the last attempt.
    """

    L: int
    m: int
    K: int
    status: int
    err_src: int
    err_dst: int
    err_size: int
    num_pairs: int
    num_summaries: int
    vmax: int
    largest: int
    pair_ptr: object
    row_ptr: object
    spaces: list
    launches: int
    rows: int


def _source_tpb(tpb):
    """``tpb`` if given, else :data:`SOURCE_THREADS_PER_BLOCK` on a device (the simulator's
    own default under the simulator)."""
    if tpb is not None or _cuda.simulator():
        return tpb
    return SOURCE_THREADS_PER_BLOCK


def _device_work_space(xp, n, L, W, rows, layout=None):
    """The work spaces of ``n`` threads, thread index last: three allocations (int64, int32,
    uint8 buffers) and one fill. Bytes per thread: ``8 W (2 L + rows + 2) + 4 (3 L + L / 64
    + 1) + L``. ``layout`` (default :data:`SOURCE_WORK_SPACE`): ``"interleaved"`` stores the
    thread index fastest, ``"by_thread"`` slowest (the same views, other strides)."""
    nb = (L >> 6) + 1
    layout = SOURCE_WORK_SPACE if layout is None else layout
    if layout == "by_thread":
        per = (2 * L + rows + 2) * W
        w64 = _cuda.alloc(xp, (n, per), xp.int64)
        w32 = _cuda.alloc(xp, (n, 3 * L + nb), xp.int32, 0)
        pending = _cuda.alloc(xp, (n, L), xp.uint8, 0).T
        a = L * W
        delta = w64[:, :a].reshape(n, L, W).transpose(1, 2, 0)
        colmax = w64[:, a:2 * a].reshape(n, L, W).transpose(1, 2, 0)
        pool = w64[:, 2 * a:2 * a + rows * W].reshape(n, rows, W).transpose(1, 2, 0)
        arcd = w64[:, 2 * a + rows * W:2 * a + rows * W + W].T
        tmp = w64[:, 2 * a + rows * W + W:].T
        anchor, row_off, row_len = w32[:, :L].T, w32[:, L:2 * L].T, w32[:, 2 * L:3 * L].T
        block = w32[:, 3 * L:].T
        _cuda.op(anchor.fill(-1))
        return anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd, tmp
    if layout != "interleaved":
        raise ValueError(f"work-space layout must be 'interleaved' or 'by_thread', got {layout!r}")
    w64 = _cuda.alloc(xp, ((2 * L + rows + 2) * W, n), xp.int64)
    w32 = _cuda.alloc(xp, (3 * L + nb, n), xp.int32, 0)
    pending = _cuda.alloc(xp, (L, n), xp.uint8, 0)
    a = L * W
    delta = w64[:a].reshape(L, W, n)
    colmax = w64[a:2 * a].reshape(L, W, n)
    pool = w64[2 * a:2 * a + rows * W].reshape(rows, W, n)
    arcd = w64[2 * a + rows * W:2 * a + rows * W + W]
    tmp = w64[2 * a + rows * W + W:]
    anchor, row_off, row_len, block = w32[:L], w32[L:2 * L], w32[2 * L:3 * L], w32[3 * L:]
    _cuda.op(anchor.fill(-1))
    return anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd, tmp


def closure_settle_cuda(m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
                        fast, max_antichain=0, *, rows=None, growth=8, attempts=4, tpb=None,
                        layout=None):
    """Count pass of ``Psi`` on the device: every source settled and its row counted, in a
    constant number of launches.

    Parameters
    ----------
    m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, fast
        As for :func:`closure_counts` (device arrays: CuPy, or NumPy under the simulator).
    max_antichain : int
        Largest antichain allowed; 0 for no cap.
    rows : int, optional
        Pool rows per source in the first launch (default ``max(64, L // 4)``; the synthetic
        workload graphs need at most about ``L / 7``).
    growth, attempts : int
        A source whose rows do not fit is settled again in a pool ``growth`` times larger, in
        at most ``attempts`` launches in all.
    tpb : int, optional
        Threads per block (default :data:`SOURCE_THREADS_PER_BLOCK`).
    layout : {"interleaved", "by_thread"}, optional
        The work spaces' layout (default :data:`SOURCE_WORK_SPACE`).

    Returns
    -------
    ClosureSettle
        The counts (as :func:`closure_counts`) and the settled work spaces.

    Raises
    ------
    WorkSpaceOverflow
        If some source still does not fit after ``attempts`` launches.

    Notes
    -----
    Kernel type: Numba ``@cuda.jit`` (``closure_settle`` runs :func:`settle_source` and
    :func:`source_counts`, the CPU kernels' scalar core); CuPy for the scans and reductions.

    Launch shape: one thread per source (``closure_settle``), one thread per block
    (:data:`SOURCE_THREADS_PER_BLOCK`): no thread waits on another's branches, and the
    sources spread over every SM. Without overflows:
    **one launch**, then the two exclusive scans and the reductions (14 CuPy operations,
    counted), and **one sync**, a read of nine integers (overflowing sources, ``P``, ``S``,
    the largest entry and antichain, the first ``max_antichain`` overflow). Each further
    attempt adds one launch, one sort (to list the overflowing sources, no sync) and the
    same operations and read. Allocations: four per attempt (work spaces, ``settled``),
    three for the counts and offsets.

    Cost per thread: the CPU's per source (``O(L)`` for the sweep plus the visits, see the
    module notes); memory ``L (16 W + 13) + 8 W (rows + 2)`` bytes per source, allocated at
    once for all sources (that is what lets the fill read the settled rows without settling
    again): for the synthetic workload graphs (``W = 3``) about 290 MB at ``L = 2,095`` and
    1.2 GB at ``L = 4,179``; the zero fill touches about a fifth of it.
    """
    xp = _cuda.namespace(depth, in_sum)
    L = int(depth.shape[0])
    m, K = int(m), int(K)
    W = 1 + m + K
    C = int(rows) if rows is not None else max(64, L // 4)
    cnt = _cuda.alloc(xp, (7, L), xp.int64)
    status, n_pairs, n_rows, vmax, largest, err_dst, err_size = cnt
    pair_ptr = _cuda.alloc(xp, L + 1, xp.int64, 0)
    row_ptr = _cuda.alloc(xp, L + 1, xp.int64, 0)
    if L == 0:
        return ClosureSettle(0, m, K, OK, -1, -1, -1, 0, 0, 0, 0, pair_ptr, row_ptr, [], 0, C)
    k = _kernels()
    tpb = _source_tpb(tpb)
    srcs = order
    spaces = []
    for attempt in range(int(attempts)):
        n = int(srcs.shape[0])
        ws = _device_work_space(xp, n, L, W, C, layout)
        settled = _cuda.alloc(xp, n, xp.uint8)
        _cuda.launch(k.closure_settle, n, srcs, m, K, depth, in_ptr, in_src, in_sum, out_ptr,
                     out_dst, order, rank, fast, *ws, int(max_antichain), settled, status,
                     n_pairs, n_rows, vmax, largest, err_dst, err_size, tpb=tpb)
        anchor, delta, row_off, row_len, _, _, _, pool, _, _ = ws
        spaces.append((srcs, settled, anchor, delta, row_off, row_len, pool))
        _cuda.op(xp.cumsum(n_pairs, out=pair_ptr[1:]))
        _cuda.op(xp.cumsum(n_rows, out=row_ptr[1:]))
        first = _cuda.op(xp.argmax(status == ANTICHAIN_OVERFLOW), 2)
        stats = _cuda.op(xp.stack([(status == WORK_SPACE_OVERFLOW).sum(), pair_ptr[L],
                                   row_ptr[L], vmax.max(), largest.max(), first,
                                   status[first], err_dst[first], err_size[first]]), 9)
        n_over, P, S, vm, lg, first, st, ed, es = (int(v) for v in _cuda.read(stats))
        if n_over == 0:
            if st != ANTICHAIN_OVERFLOW:
                first = ed = es = -1
            return ClosureSettle(L, m, K, int(st == ANTICHAIN_OVERFLOW), first, ed, es, P, S,
                                 vm, lg, pair_ptr, row_ptr, spaces, attempt + 1, C)
        if attempt + 1 == int(attempts):
            bad = _cuda.to_host(srcs)[_cuda.read(settled) == 0]
            err = WorkSpaceOverflow(
                f"{n_over} sources (first {sorted(bad.tolist())[:8]}) did not fit a work space "
                f"of {C} summary rows after {attempts} attempts")
            err.sources, err.rows = sorted(bad.tolist()), C
            raise err
        # the overflowing sources, without a sync: settled == 0 sorts first (their order
        # does not matter)
        srcs = _cuda.op(srcs[xp.argsort(settled)[:n_over]], 2)
        C *= int(growth)


def closure_fill_cuda(settle, dtype, *, tpb=None):
    """Fill pass of ``Psi`` on the device, ragged layout, with the pairs grouped by target.

    Parameters
    ----------
    settle : ClosureSettle
        From :func:`closure_settle_cuda`, with status :data:`OK`.
    dtype : numpy.dtype
        Of the summary rows (holds ``settle.vmax``).

    Returns
    -------
    pair_ptr int64[L+1], pair_dst int32[P], sum_ptr int64[P+1], sums dtype[S, W],
    t_ptr int64[L+1], t_src int32[P], t_pair int64[P]
        Exactly ``compute_psi(..., layout="ragged")``'s arrays, on the device.

    Notes
    -----
    Launch shape: one thread per (work-space slot ``i``, target ``l``), ``n L`` threads for
    the ``n`` slots of an attempt in blocks of ``_cuda.THREADS_PER_BLOCK``
    (``closure_fill_rows``: one launch per attempt of the settle, one without overflows),
    thread ``k`` taking ``i = k // L``, ``l = k % L`` so that the targets run fastest within
    a warp: a warp writes consecutive pairs and summaries of one source's row (with the
    slots fastest, each lane would write another source's row).
    Thread ``(i, l)`` writes pair ``(srcs[i], l)`` if reached, :func:`pair_fill`, at
    ``pair_ptr[s] + pair_inc[i, l] - 1`` and ``row_ptr[s] + sum_inc[i, l] - size``; the
    inclusive scans ``pair_inc``/``sum_inc`` over the targets of each slot come first
    (:func:`_pair_offsets`: six operations and two allocations per attempt). Its serial work
    is one antichain (``O(A W)``), no longer the source's whole row. The grouping by target is
    CuPy's: a count (``bincount``) and its scan for ``t_ptr``, the source of each pair
    (``searchsorted`` in ``pair_ptr``), a sort of the unique keys ``target L + source`` for
    ``t_pair`` and a gather for ``t_src``: about 10 operations. No sync; allocations: the
    four arrays of the rows, the two scans per attempt, and the transpose's.

    Bytes: every summary written once (``itemsize W``), ``12`` per pair; the pairs' places
    about ``60`` per slot (``L^2`` slots); the transpose reads and writes about ``60`` bytes
    per pair (the sort's passes included).
    """
    xp = _cuda.namespace(settle.pair_ptr)
    L, P, S, W = settle.L, settle.num_pairs, settle.num_summaries, 1 + settle.m + settle.K
    k = _kernels()
    pair_dst = _cuda.alloc(xp, P, xp.int32)
    sum_ptr = _cuda.alloc(xp, P + 1, xp.int64)
    sums = _cuda.alloc(xp, (S, W), np.dtype(dtype))
    _cuda.op(sum_ptr.fill(S))
    for srcs, settled, anchor, delta, row_off, row_len, pool in settle.spaces:
        n = int(srcs.shape[0])
        pair_inc, sum_inc = _pair_offsets(xp, anchor, row_len)
        _cuda.launch(k.closure_fill_rows, n * L, srcs, settled, settle.m, settle.K, anchor,
                     delta, row_off, row_len, pool, settle.pair_ptr, settle.row_ptr, pair_inc,
                     sum_inc, pair_dst, sum_ptr, sums, tpb=tpb)
    t_ptr = _cuda.alloc(xp, L + 1, xp.int64, 0)
    _cuda.op(xp.cumsum(xp.bincount(pair_dst, minlength=L), out=t_ptr[1:]), 2)
    src = _cuda.op(xp.searchsorted(settle.pair_ptr[1:], xp.arange(P), side="right"), 2)
    t_pair = _cuda.op(xp.argsort(pair_dst.astype(xp.int64) * L + src).astype(xp.int64), 4)
    t_src = _cuda.op(src[t_pair].astype(xp.int32), 2)
    return settle.pair_ptr, pair_dst, sum_ptr, sums, t_ptr, t_src, t_pair


def closure_fill_dense_cuda(settle, dtype, count_dtype, *, tpb=None):
    """Fill pass of ``Psi`` on the device, dense layout.

    Parameters
    ----------
    settle : ClosureSettle
        From :func:`closure_settle_cuda`, with status :data:`OK`.
    dtype, count_dtype : numpy.dtype
        Of the summary rows (holds ``settle.vmax``) and of the antichain sizes (holds
        ``settle.largest``).

    Returns
    -------
    sums dtype[L, L, A, W], count count_dtype[L, L]
        ``A = settle.largest``; exactly ``compute_psi(..., layout="dense")``'s arrays (slots
        past ``count`` zero), on the device.

    Notes
    -----
    Launch shape: one thread per (work-space slot ``i``, target ``l``), ``n L`` threads for
    the ``n`` slots of an attempt in blocks of ``_cuda.THREADS_PER_BLOCK``
    (``closure_fill_dense_rows``: one launch per attempt of the settle), thread ``k`` taking
    ``i = k // L``, ``l = k % L``: with the targets fastest a warp writes ``dense[s,
    l:l+32]`` and ``count[s, l:l+32]``, one contiguous span of a source's row, where a warp
    over slots would put every lane ``L A W`` entries from the next. The price is strided
    reads of the work space (thread index last: one anchor, delta and row length per
    thread); the pool rows are shared by the lanes whose targets share an anchor (the
    translation chains). Each thread writes one antichain (:func:`pair_fill_dense`,
    ``O(A W)`` serial work). Two zero-filled allocations; no sync.
    Bytes: the zero fill of ``L^2 (A W itemsize + count itemsize)`` and the summaries
    written once.
    """
    xp = _cuda.namespace(settle.pair_ptr)
    L, A, W = settle.L, settle.largest, 1 + settle.m + settle.K
    k = _kernels()
    dense = _cuda.alloc(xp, (L, L, A, W), np.dtype(dtype), 0)
    count = _cuda.alloc(xp, (L, L), np.dtype(count_dtype), 0)
    for srcs, settled, anchor, delta, row_off, row_len, pool in settle.spaces:
        _cuda.launch(k.closure_fill_dense_rows, int(srcs.shape[0]) * L, srcs, settled,
                     settle.m, settle.K, anchor, delta, row_off, row_len, pool, dense, count,
                     tpb=tpb)
    return dense, count


def _pair_offsets(xp, anchor, row_len):
    """Where each pair of a work space goes inside its source's row: ``pair_inc, sum_inc
    int64[n, L]``, for slot ``i`` the reached targets ``<= l`` and their summaries (inclusive
    scans along the targets; thread ``(i, l)`` subtracts its own). Six operations over the
    ``[L, n]`` work space (a comparison, the gather of the anchors' row lengths with its
    clamp and mask, two scans) and two allocations, laid out ``[n, L]`` so that the fill's
    threads, ``l`` fastest, read them coalesced."""
    L, n = anchor.shape
    reached = _cuda.op(anchor.T >= 0)
    size = _cuda.op(xp.take_along_axis(row_len, xp.maximum(anchor, 0), axis=0).T * reached, 3)
    pair_inc = _cuda.alloc(xp, (n, L), xp.int64)
    sum_inc = _cuda.alloc(xp, (n, L), xp.int64)
    _cuda.op(xp.cumsum(reached, axis=1, dtype=xp.int64, out=pair_inc))
    _cuda.op(xp.cumsum(size, axis=1, dtype=xp.int64, out=sum_inc))
    return pair_inc, sum_inc


def target_major_cuda(L, dense_A, count, t_ptr, t_src, t_pair, sum_ptr, sums, *,
                      num_summaries=None):
    """``Psi`` target-major on the device: the device twin of
    ``gpu_kernels.propagate.target_major`` (same arguments and results, device arrays), kept
    beside the kernels that build ``Psi`` on the device (``propagate`` reads it).

    Parameters
    ----------
    L : int
    dense_A : int
        ``> 0``: the dense layout, ``count[L, L]`` and ``sums[L * L * A, W]``; 0: the ragged
        layout, ``t_ptr``/``t_src``/``t_pair``/``sum_ptr``/``sums[S, W]`` (``count``
        unused).
    num_summaries : int, optional
        ``S``, when known: saves the dense layout a sync.

    Returns
    -------
    tm_ptr int64[L + 1], tm_src int32[S], tm_sum dtype[S, W]
        For every target ``l2``, the entries ``tm_ptr[l2]:tm_ptr[l2 + 1]``: one per ``(l1,
        s)`` with ``s in Psi[l1, l2]``, sources ascending, each antichain in its order.

    Notes
    -----
    CuPy operations only, no Numba kernel, and no sync (the dense layout reads ``S`` once
    when ``num_summaries`` is not given). Ragged, about 20 operations over the pairs and
    summaries: the pair sizes in target order and their scan give each pair's first entry,
    each summary finds its pair (``searchsorted``) and is scattered. Dense, about 20 over
    the ``L^2 A`` slots: a scan down every column of ``count`` gives each pair's first
    entry, and empty slots scatter into one spare row, dropped. Bytes: about ``60 + 2
    itemsize W`` per summary (ragged) or per slot (dense).
    """
    xp = _cuda.namespace(sums)
    W = int(sums.shape[1])
    tm_ptr = _cuda.alloc(xp, L + 1, xp.int64, 0)
    if L == 0:
        return tm_ptr, _cuda.alloc(xp, 0, xp.int32), _cuda.alloc(xp, (0, W), sums.dtype)
    if dense_A > 0:
        A = int(dense_A)
        col = _cuda.op(count.astype(xp.int64))
        _cuda.op(xp.cumsum(col.sum(axis=0), out=tm_ptr[1:]), 2)
        S = (int(num_summaries) if num_summaries is not None
             else int(_cuda.read(tm_ptr[L:])[0]))
        first = _cuda.op(xp.cumsum(col, axis=0) - col + tm_ptr[None, :L], 3)  # pair (l1, l2)
        i = _cuda.op(xp.arange(A, dtype=xp.int64))
        dest = _cuda.op(xp.where(i[None, None, :] < col[:, :, None],
                                 first[:, :, None] + i[None, None, :], S).reshape(-1), 4)
        src = _cuda.op((xp.arange(L * L * A, dtype=xp.int64) // (L * A)).astype(xp.int32), 3)
        tm_src = _cuda.alloc(xp, S + 1, xp.int32)
        tm_sum = _cuda.alloc(xp, (S + 1, W), sums.dtype)
        _cuda.op(tm_src.__setitem__(dest, src))
        _cuda.op(tm_sum.__setitem__(dest, sums))
        return tm_ptr, tm_src[:S], tm_sum[:S]
    P = int(t_pair.shape[0])
    S = int(sums.shape[0])
    size = _cuda.op(sum_ptr[1:] - sum_ptr[:-1])
    off = _cuda.alloc(xp, P + 1, xp.int64, 0)
    _cuda.op(xp.cumsum(size[t_pair], out=off[1:]), 2)
    _cuda.op(tm_ptr.__setitem__(slice(None), off[t_ptr]), 2)
    pos = _cuda.alloc(xp, P, xp.int64)
    _cuda.op(pos.__setitem__(t_pair, xp.arange(P, dtype=xp.int64)), 2)
    j = _cuda.op(xp.arange(S, dtype=xp.int64))
    pair = _cuda.op(xp.searchsorted(sum_ptr[1:], j, side="right"))
    q = _cuda.op(pos[pair])
    dest = _cuda.op(off[q] + (j - sum_ptr[pair]), 3)
    tm_src = _cuda.alloc(xp, S, xp.int32)
    tm_sum = _cuda.alloc(xp, (S, W), sums.dtype)
    _cuda.op(tm_src.__setitem__(dest, t_src[q]), 2)
    _cuda.op(tm_sum.__setitem__(dest, sums))
    return tm_ptr, tm_src, tm_sum
