"""The path-summary closure ``Psi`` as arrays: CPU twin of the closure kernel.

``Psi[l1, l2]`` is the antichain of minimal summaries over all paths from ``l1`` to ``l2``
(DESIGN.md 2.4). The rows ``Psi[s, :]`` of a contiguous range of sources ``s in [lo, hi)``
are computed one source at a time by a semi-naive fixed point over the locations in DFS
reverse postorder (``order``/``rank`` of ``engine.graph_arrays.GraphArrays``):

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

The fixed point is the reference worklist's (``engine.closure``): rows only ever grow in
upward closure, and the iteration stops exactly when no candidate adds a non-dominated
summary. Composition, order and equality are the scalar core of ``summary_rows``.

The output is produced in two passes, the usual GPU pattern: :func:`closure_counts` settles
each source and reports its pairs, summaries, largest entry and largest antichain (so the host
can size the output exactly, choose the narrowest dtype and the layout), then
:func:`closure_fill` (ragged CSR) or :func:`closure_fill_dense` settles it again and writes
the rows ``anchor rows ; delta`` straight into the final arrays.
:func:`closure_rows` runs both for one range.

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
    written. Work space O(L * W + rows materialised for one source); no allocation per
    location. On the synthetic workload graphs (chains, loops, diamonds) a source visits
    each location it reaches about once, plus loop heads twice.
Launch shape
    This two-pass sweep is the CPU kernel: one source per task, sources independent. The
    CUDA kernel (:func:`closure_dense_cuda`, foot of the file) computes the dense layout by
    Jacobi closure rounds instead, one thread per pair; see the notes there.

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

import numpy as np
from numba import njit

from . import _cuda
from .pareto import segments_equal, sort_rows_with
from .summary_rows import compose_into, smallest_dtype, summary_equal, summary_le

__all__ = ["OK", "ANTICHAIN_OVERFLOW", "AntichainOverflow", "translation_mask", "closure_counts",
           "closure_fill", "closure_fill_dense", "closure_rows", "transpose_pairs", "reach_counts",
           "merge_excess", "summary_insert", "closure_relax", "closure_dense_cuda"]

#: Status codes of :func:`closure_counts`.
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
def _grow_rows(a, need):
    """``a`` (2-D, C order) with room for ``need`` rows, doubling; the first rows kept."""
    if need <= a.shape[0]:
        return a
    cap = max(2 * a.shape[0], need, 16)
    b = np.empty((cap, a.shape[1]), a.dtype)
    src = a.reshape(a.size)
    dst = b.reshape(b.size)
    for i in range(a.size):
        dst[i] = src[i]
    return b


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


@njit(cache=True, nogil=True)
def _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, fast,
            anchor, delta, row_off, row_len, colmax, pending, block, pool, arcd, tmp):
    """The fixed point for one source. On return, location ``l`` is reached iff
    ``anchor[l] >= 0``, and ``Psi[source, l] = {x ; delta[l] : x in rows(anchor[l])}`` where
    ``rows(a) = pool[row_off[a] : row_off[a] + row_len[a]]`` (sorted; ``colmax[a]`` their
    column maxima). ``anchor`` must be all -1 and ``pending``/``block`` all 0 on entry; the
    caller resets ``anchor``. Returns the (possibly regrown) ``pool``."""
    L = depth.shape[0]
    W = 1 + m + K
    # Step 1: the source holds the identity.
    pool = _grow_rows(pool, 1)
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
            pool = _grow_rows(pool, base + 1)
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
                pool = _grow_rows(pool, base + cnt + 1)
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
                            pool[base + k, :] = pool[base + j, :]
                        k += 1
                if k != cnt:
                    pool[base + k, :] = pool[base + cnt, :]
                cnt = k + 1
        # sort lexicographically (insertion sort; antichains are small)
        for i in range(1, cnt):
            if _row_less(pool[base + i], pool[base + i - 1], W):
                tmp[:] = pool[base + i, :]
                j = i
                while j > 0 and _row_less(tmp, pool[base + j - 1], W):
                    pool[base + j, :] = pool[base + j - 1, :]
                    j -= 1
                pool[base + j, :] = tmp
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
    return pool


@njit(cache=True, inline="always")
def _work_space(L, W):
    anchor = np.full(L, -1, np.int64)
    delta = np.empty((L, W), np.int64)
    row_off = np.zeros(L, np.int64)
    row_len = np.zeros(L, np.int64)
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
        pairs = 0
        rows = 0
        for l in range(L):
            a = anchor[l]
            if a < 0:
                continue
            cnt = row_len[a]
            if max_antichain > 0 and cnt > max_antichain:
                return ANTICHAIN_OVERFLOW, source, l, cnt, n_pairs, n_rows, vmax, largest
            if cnt > largest:
                largest = cnt
            # each column of ``x ; delta`` depends on that column of x alone, monotonically
            compose_into(colmax[a], delta[l], tmp, m, K)
            for p in range(W):
                if tmp[p] > vmax:
                    vmax = tmp[p]
            pairs += 1
            rows += cnt
            anchor[l] = -1
        n_pairs[source - lo] = pairs
        n_rows[source - lo] = rows
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
        P = pair_ptr[source]
        S = row_ptr[source]
        for l in range(L):
            a = anchor[l]
            if a < 0:
                continue
            pair_dst[P] = l
            sum_ptr[P] = S
            P += 1
            off = row_off[a]
            d = delta[l]
            for i in range(row_len[a]):
                compose_into(pool[off + i], d, sums[S], m, K)
                S += 1
            anchor[l] = -1


@njit(cache=True, nogil=True)
def closure_fill_dense(lo, hi, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, dense, count):
    """Second pass, dense layout: ``dense[s, l, :c]`` (``dtype[L, L, A, W]``, zero
    beforehand) receives ``Psi[s, l]`` and ``count[s, l] = c`` for ``s in [lo, hi)``. Ranges
    of sources write disjoint slices, so they can run concurrently."""
    L = depth.shape[0]
    W = 1 + m + K
    anchor, delta, row_off, row_len, colmax, pending, block, pool = _work_space(L, W)
    arcd = np.empty(W, np.int64)
    tmp = np.empty(W, np.int64)
    for source in range(lo, hi):
        pool = _settle(source, m, K, depth, in_ptr, in_src, in_sum, out_ptr, out_dst, order,
                       rank, fast, anchor, delta, row_off, row_len, colmax, pending, block, pool,
                       arcd, tmp)
        for l in range(L):
            a = anchor[l]
            if a < 0:
                continue
            off = row_off[a]
            d = delta[l]
            cnt = row_len[a]
            for i in range(cnt):
                compose_into(pool[off + i], d, dense[source, l, i], m, K)
            count[source, l] = cnt
            anchor[l] = -1


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
def reach_counts(out_ptr, out_dst, weight):
    """For every location ``s``: how many locations it reaches (itself included) and the sum of
    ``weight`` over them. A breadth-first search per location: O(L * (L + A)), O(L) space.

    Returns ``(reach int64[L], weight_sum int64[L])``.
    """
    L = out_ptr.shape[0] - 1
    reach = np.zeros(L, np.int64)
    wsum = np.zeros(L, np.int64)
    mark = np.full(L, -1, np.int64)
    queue = np.empty(max(L, 1), np.int64)
    for s in range(L):
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
    return reach, wsum


@njit(cache=True, nogil=True)
def merge_excess(comp, rank, depth, in_ptr, in_src, in_sum):
    """For every location, the in-arcs beyond the first that can carry a minimal summary:
    ``int64[L]``, the antichain growth the size estimate charges to it. ``comp`` numbers
    the strongly connected components (``GraphArrays.scc``).

    A component all of whose cycles strictly advance (DESIGN.md 2.4: then ``Psi`` is the
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
# ``Psi`` on the device: Jacobi closure rounds over all pairs at once, in the dense layout.
# Round ``r + 1`` recomputes every pair in parallel from round ``r``:
#
#     Psi'[s, l] = min( {identity if l == s}  u  { x ; a : u -a-> l, x in Psi[s, u] } )
#
# (``closure_relax``, built from the twin's scalar core ``compose_into``/``summary_le`` and the
# shared row sort), starting from all-empty; a round extends the paths considered by one arc,
# and the rounds stop when a round changes nothing: the least fixed point, which is
# ``closure_counts``/``closure_fill``'s result. The twin's semi-naive sweep per source with its
# translation fast path is sequential by nature; rounds trade extra work (every pair, every
# round) for L^2-way parallelism, and suit the dense layout, which bounds L anyway. Rounds:
# one more than the longest path (in arcs) that carries a minimal summary -- at most L for
# graphs whose cycles all advance time (minimal summaries come from simple paths); a cycle
# whose summary is incomparable with the identity can add a traversal.

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


@njit(cache=True, inline="always")
def summary_insert(buf, n, cand, m, K):
    """Insert the summary row ``cand`` into the antichain ``buf[:n]`` (exact summary order):
    skipped if an element is ``<=`` it, else the elements it is ``<=`` to are dropped.
    Returns the new size; ``buf`` needs room for ``n + 1`` rows. The insertion step of
    :func:`_settle` as a scalar function."""
    W = 1 + m + K
    for j in range(n):
        if summary_le(buf[j], cand, m, K):
            return n
    k = 0
    for j in range(n):
        if not summary_le(cand, buf[j], m, K):
            if k != j:
                for p in range(W):
                    buf[k, p] = buf[j, p]
            k += 1
    for p in range(W):
        buf[k, p] = cand[p]
    return k + 1


@njit(cache=True, inline="always")
def closure_relax(s, l, m, K, depth, in_ptr, in_src, in_sum, cur, cur_cnt, A, slot, cand):
    """One closure round for the pair ``(s, l)``: the minimal elements of the identity (if
    ``l == s``) and ``x ; a`` for every in-arc ``u -a-> l`` and ``x`` in the current
    ``Psi[s, u]`` (rows ``cur[(s L + u) A:][:cur_cnt[s L + u]]``), sorted, into ``slot[:n]``.
    Returns ``n``, or -1 if the antichain would need more than ``A`` rows."""
    L = depth.shape[0]
    W = 1 + m + K
    n = 0
    if l == s:
        _identity_into(slot[0], depth[s], W)
        n = 1
    for e in range(in_ptr[l], in_ptr[l + 1]):
        pu = s * L + in_src[e]
        for i in range(cur_cnt[pu]):
            if n == A:
                return -1
            compose_into(cur[pu * A + i], in_sum[e], cand, m, K)
            n = summary_insert(slot, n, cand, m, K)
    sort_rows_with(slot, n, W, cand)
    return n


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    relax = _cuda.device(closure_relax)
    equal = _cuda.device(segments_equal)

    @cuda.jit
    def closure_round(m, K, depth, in_ptr, in_src, in_sum, cur, cur_cnt, nxt, nxt_cnt, cand, A,
                      flags):
        """Thread per pair p = s L + l: nxt pair p <- closure_relax from cur; flags[0] <- 1 if
        any pair changed, flags[1] <- 1 if any overflowed A."""
        p = cuda.grid(1)
        L = depth.shape[0]
        if p < L * L:
            s = p // L
            l = p - s * L
            n = relax(s, l, m, K, depth, in_ptr, in_src, in_sum, cur, cur_cnt, A,
                      nxt[p * A:(p + 1) * A], cand[p])
            if n < 0:
                flags[1] = 1
                nxt_cnt[p] = 0
            else:
                nxt_cnt[p] = n
                if not equal(nxt, p * A, p * A + n, cur, p * A, p * A + cur_cnt[p], cur.shape[1]):
                    flags[0] = 1

    return types.SimpleNamespace(closure_round=closure_round)


def closure_dense_cuda(m, K, depth, in_ptr, in_src, in_sum, *, capacity=4, max_rounds=None,
                       tpb=None):
    """``Psi`` of all pairs by closure rounds on the device, dense.

    Parameters
    ----------
    m, K, depth, in_ptr, in_src, in_sum
        As for :func:`closure_counts` (device arrays: CuPy, or NumPy under the simulator).
    capacity : int
        Antichain room per pair to start with; doubled (and the rounds restarted) whenever a
        pair overflows it.
    max_rounds : int, optional
        Guard against non-termination (default ``4 L^2 + 16``); exceeding it raises
        ``RuntimeError``.

    Returns
    -------
    (sums int64[L, L, A, W], count int64[L, L], rounds): ``sums[s, l, :count[s, l]]`` is
    ``Psi[s, l]`` sorted lexicographically by row (``A`` the final capacity, at least the
    largest antichain), as ``compute_psi(..., layout="dense")`` stores it.

    Notes
    -----
    Kernel type: Numba ``@cuda.jit`` (``closure_round`` runs :func:`closure_relax`, built
    from the twin's ``compose_into``/``summary_le``), so it shares the scalar core and runs
    under the simulator.

    Launch shape: ``L^2`` threads per round (``closure_round``), one **sync** per round for
    the changed/overflow flags (8 bytes). Bytes per round: every pair reads its
    in-neighbours' antichains (``8 W`` per summary) and writes its own: about
    ``L^2 x (in-degree + 1) x A x 8 W``; memory ``2 L^2 A W x 8`` bytes, so for graphs that
    the dense layout suits.
    """
    xp = _cuda.namespace(depth, in_sum)
    L = int(depth.shape[0])
    W = 1 + int(m) + int(K)
    P = L * L
    limit = int(max_rounds) if max_rounds is not None else 4 * P + 16
    k = _kernels()
    A = max(1, int(capacity))
    while True:
        cur = xp.zeros((P * A, W), xp.int64)
        nxt = xp.zeros((P * A, W), xp.int64)
        cur_cnt = xp.zeros(P, xp.int64)
        nxt_cnt = xp.zeros(P, xp.int64)
        cand = xp.empty((max(P, 1), W), xp.int64)
        rounds = 0
        overflow = False
        while P:
            flags = xp.zeros(2, xp.int64)
            _cuda.launch(k.closure_round, P, int(m), int(K), depth, in_ptr, in_src, in_sum, cur,
                         cur_cnt, nxt, nxt_cnt, cand, A, flags, tpb=tpb)
            rounds += 1
            changed, overflow = (bool(v) for v in _cuda.to_host(flags))
            if overflow:
                break
            cur, nxt, cur_cnt, nxt_cnt = nxt, cur, nxt_cnt, cur_cnt
            if not changed:
                break
            if rounds >= limit:
                raise RuntimeError(f"closure rounds did not converge within {limit} rounds")
        if not overflow:
            sums = cur.reshape(L, L, A, W)
            count = cur_cnt.reshape(L, L)
            # slots past an antichain's end may hold rows of earlier rounds: zero them, as
            # the dense layout of compute_psi has them
            sums[xp.arange(A)[None, None, :] >= count[:, :, None]] = 0
            return sums, count, rounds
        A *= 2
