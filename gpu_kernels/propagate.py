"""Propagation: bring implied frontiers up to date after some locations' frontiers changed.

CPU twin (Numba) of the *edge-wise* strategy (docs/batched-engine.md): no ``Psi``. The implied frontier
is the least solution of

    I(l) = frontier( F(l)  ∪  ⋃ over arcs u -> l with summary a:  a(I(u)) )

where ``F(l)`` is the frontier of the positive counts at ``l``. Summaries are monotone, so
frontiers of frontiers suffice, and every path's contribution arrives edge by edge. After a
batch the locations whose ``F`` changed are recomputed in DFS reverse postorder; a location
whose value changes queues its successors, and one whose value stays the same stops the
wave there. A location outside any cycle is a function of its inputs, so recomputing it
from the current inputs is exact. A cycle (strongly connected component) could support its
own stale values -- a retracted time coming back round the loop one iteration later -- so
the first time a wave reaches a cycle, the whole cycle restarts from empty and iterates up
(a successor earlier in the order, a loop head, restarts the sweep there). Every component
upstream of a cycle ranks below all its members, so its inputs are final by then, and the
iteration from empty reaches the *least* fixed point, which is what ``Psi`` defines: a
zero-advance cycle cannot keep itself alive, unlike timely's incremental propagation.

Inputs: the graph's arcs grouped by destination (``in_ptr``, ``in_src``, ``in_sum`` summary
rows) and by source (``out_ptr``, ``out_dst``), the DFS ``order`` and ``rank``, the new
``F`` and the old ``I`` as CSR (``*_ptr int64[L+1]``, ``*_ts int64[., W]``) and the changed
locations ``seeds``. Outputs: the new ``I`` as CSR and the frontier changes
``(loc int32, ts int64[., W], diff ±1)`` sorted by ``(loc, ts)``.

Cost: O(arcs into recomputed locations * |I(u)| * |I(l)| * W): proportional to the part of
the graph whose frontiers actually change, plus whole cycles the wave enters; a few extra
passes where loops re-queue their heads. Memory O(total frontier size).

CUDA kernels (foot of the file): the closure strategy as one device step,
:func:`closure_step_cuda` (a block per target over a target-major ``Psi``, incremental unless
an old frontier row lost its every producer, :func:`closure_vote`; the frontier changes folded
in), and :func:`frontier_changes_cuda`, with the twins' contracts and scalar cores
(``apply_into``, ``antichain_insert``, ``walk_changes``, ``count_changes``, ``gather_target``,
``witness_row``, ``cover_hits``). Edge-wise
propagation has no device form: on the GPU backend it runs here, on the host, from the few
``F`` rows that changed (a device version was a host loop of thousands of tiny rounds, as
measured on an H100).
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit

from . import _cuda
from .pareto import antichain_insert, copy_rows, sort_rows_inplace, sort_rows_with
from .summary_rows import apply_into, ts_cmp, ts_le

__all__ = ["edgewise", "gather_closure", "frontier_changes", "walk_changes", "relax_into",
           "target_major", "count_changes", "gather_target", "witness_row", "witness_hit",
           "cover_hits", "uncovered", "closure_vote", "HIT_ROWS",
           "closure_step_cuda", "frontier_changes_cuda", "coop_threads", "coop_shape"]


@njit(cache=True, nogil=True)
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    cap = max(need, 2 * buf.shape[0])
    out = np.empty((cap, buf.shape[1]), dtype=buf.dtype)
    copy_rows(out, 0, buf, 0, buf.shape[0])
    return out


@njit(cache=True, nogil=True, inline="always")
def walk_changes(l, old_ptr, old_ts, new_ptr, new_ts, W, c_loc, c_ts, c_diff, k, write):
    """Merge-walk the old and the new frontier of ``l`` (both sorted): every row in only one
    of them is a change, -1 for old rows and +1 for new ones. With ``write``, the changes go
    to rows ``k, k+1, ...`` of ``c_loc``/``c_ts``/``c_diff``; returns ``k`` plus their number
    (scalar core of :func:`frontier_changes` and its CUDA kernels, which count then fill)."""
    i, i_end = old_ptr[l], old_ptr[l + 1]
    j, j_end = new_ptr[l], new_ptr[l + 1]
    while i < i_end or j < j_end:
        if j >= j_end:
            c = -1
        elif i >= i_end:
            c = 1
        else:
            c = ts_cmp(old_ts[i], new_ts[j], W)
        if c == 0:
            i += 1
            j += 1
            continue
        if write:
            c_loc[k] = l
            if c < 0:
                for p in range(W):
                    c_ts[k, p] = old_ts[i, p]
                c_diff[k] = -1
            else:
                for p in range(W):
                    c_ts[k, p] = new_ts[j, p]
                c_diff[k] = 1
        if c < 0:
            i += 1
        else:
            j += 1
        k += 1
    return k


@njit(cache=True, nogil=True)
def frontier_changes(locs, old_ptr, old_ts, new_ptr, new_ts, W):
    """Rows ``(loc, ts, ±1)`` that turn each ``old`` frontier of ``locs`` (sorted) into the new one.

    ``old_ptr``/``new_ptr`` index by location; each frontier is sorted lexicographically.
    """
    cap = 0
    for l in locs:
        cap += old_ptr[l + 1] - old_ptr[l] + new_ptr[l + 1] - new_ptr[l]
    c_loc = np.empty(cap, dtype=np.int32)
    c_ts = np.empty((cap, W), dtype=np.int64)
    c_diff = np.empty(cap, dtype=np.int64)
    k = 0
    for l in locs:
        k = walk_changes(l, old_ptr, old_ts, new_ptr, new_ts, W, c_loc, c_ts, c_diff, k, True)
    return c_loc[:k], c_ts[:k], c_diff[:k]


@njit(cache=True, nogil=True, inline="always")
def relax_into(l, m, W, F_ptr, F_ts, in_ptr, in_src, in_sum, cur_start, cur_len, pool, slot,
               cand):
    """Recompute ``l`` from its inputs: the frontier of ``F(l)`` and ``a(I(u))`` for every
    in-arc ``u -> l`` with summary ``a``, the current ``I(u)`` being
    ``pool[cur_start[u]:cur_start[u] + cur_len[u]]``. Writes the result, sorted, to
    ``slot[:n]`` and returns ``n``. ``slot`` needs room for ``|F(l)| + sum |I(u)|`` rows;
    ``cand`` (``W`` entries, outside ``slot``) is work space. Scalar core of the edge-wise
    strategy, on the CPU and on the device."""
    K = W - m
    n = 0
    for f in range(F_ptr[l], F_ptr[l + 1]):
        n = antichain_insert(slot, n, F_ts[f], m, W)
    for a in range(in_ptr[l], in_ptr[l + 1]):
        u = in_src[a]
        for x in range(cur_start[u], cur_start[u] + cur_len[u]):
            apply_into(in_sum[a], pool[x], cand, m, K)
            n = antichain_insert(slot, n, cand, m, W)
    sort_rows_with(slot, n, W, cand)
    return n


@njit(cache=True, nogil=True)
def edgewise(m, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, scc, scc_ptr,
             scc_members, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps):
    """Re-derive the implied frontiers affected by the locations ``seeds`` whose ``F`` changed.

    Returns ``(I_ptr, I_ts, touched, steps)``: the new frontiers as CSR, the sorted locations
    that were recomputed (only they can have changed), and the number of recomputations;
    ``steps == -1`` when ``max_steps`` recomputations did not reach the fixed point.
    """
    L = in_ptr.shape[0] - 1
    W = F_ts.shape[1]
    C = scc_ptr.shape[0] - 1
    # current values start as the old ones, in a growable pool
    pool = np.empty((max(16, 2 * I_ts.shape[0]), W), dtype=np.int64)
    copy_rows(pool, 0, I_ts, 0, I_ts.shape[0])
    used = I_ts.shape[0]
    cur_start = I_ptr[:-1].copy()
    cur_len = I_ptr[1:] - I_ptr[:-1]
    pending = np.zeros(L, dtype=np.bool_)
    touched = np.zeros(L, dtype=np.bool_)
    was_reset = np.zeros(C, dtype=np.bool_)
    pos = L
    for s in seeds:
        pending[s] = True
        if rank[s] < pos:
            pos = rank[s]
    scratch = np.empty((64, W), dtype=np.int64)
    cand = np.empty(W, dtype=np.int64)
    steps = 0
    while pos < L:
        l = order[pos]
        if not pending[l]:
            pos += 1
            continue
        c = scc[l]
        if scc_ptr[c + 1] - scc_ptr[c] > 1 and not was_reset[c]:
            # first visit of a cycle: restart it from empty so it cannot keep itself alive;
            # its upstream is final already (upstream components rank below all members)
            was_reset[c] = True
            lowest = pos
            for i in range(scc_ptr[c], scc_ptr[c + 1]):
                v = scc_members[i]
                if cur_len[v] > 0:
                    # the old value may vanish without any recomputation noticing a change:
                    # everything downstream must look again (members are re-queued anyway)
                    for a in range(out_ptr[v], out_ptr[v + 1]):
                        pending[out_dst[a]] = True
                cur_len[v] = 0
                pending[v] = True
                touched[v] = True
                if rank[v] < lowest:
                    lowest = rank[v]
            if lowest < pos:
                pos = lowest
                continue
        nxt = pos + 1
        pending[l] = False
        touched[l] = True
        steps += 1
        if steps > max_steps:
            return I_ptr, I_ts, np.empty(0, dtype=np.int64), -1
        need = F_ptr[l + 1] - F_ptr[l] + 1
        for a in range(in_ptr[l], in_ptr[l + 1]):
            need += cur_len[in_src[a]]
        scratch = _grow(scratch, need)
        n = relax_into(l, m, W, F_ptr, F_ts, in_ptr, in_src, in_sum, cur_start, cur_len, pool,
                       scratch, cand)
        same = n == cur_len[l]
        if same:
            for i in range(n):
                if ts_cmp(scratch[i], pool[cur_start[l] + i], W) != 0:
                    same = False
                    break
        if not same:
            pool = _grow(pool, used + n)
            copy_rows(pool, used, scratch, 0, n)
            cur_start[l] = used
            cur_len[l] = n
            used += n
            for a in range(out_ptr[l], out_ptr[l + 1]):
                v = out_dst[a]
                pending[v] = True
                if rank[v] < nxt:
                    nxt = rank[v]
        pos = nxt
    new_ptr = np.zeros(L + 1, dtype=np.int64)
    for l in range(L):
        new_ptr[l + 1] = new_ptr[l] + cur_len[l]
    new_ts = np.empty((new_ptr[L], W), dtype=np.int64)
    for l in range(L):
        copy_rows(new_ts, new_ptr[l], pool, cur_start[l], cur_len[l])
    return new_ptr, new_ts, np.nonzero(touched)[0], steps


@njit(cache=True, nogil=True)
def _affected(L, seeds, pair_ptr, pair_dst, count, dense):
    """``bool[L]``: every location some seed reaches (``Psi`` rows say which)."""
    hit = np.zeros(L, dtype=np.bool_)
    for s in seeds:
        if dense:
            for l2 in range(L):
                if count[s, l2] > 0:
                    hit[l2] = True
        else:
            for p in range(pair_ptr[s], pair_ptr[s + 1]):
                hit[pair_dst[p]] = True
    return hit


@njit(cache=True, nogil=True)
def gather_closure(m, pair_ptr, pair_dst, sum_ptr, t_ptr, t_src, t_pair, count, sums, dense_A,
                   F_ptr, F_ts, I_ptr, I_ts, seeds):
    """The *closure* strategy: recompute the implied frontier of every location a changed
    ``F`` reaches, gathering through ``Psi``:

        I(l2) = frontier( s(t) : l1 reaches l2, t in F(l1), s in Psi[l1, l2] )

    ``Psi`` is ragged (``pair_*``/``sum_ptr`` rows by source and ``t_*`` pairs by target, with
    ``sums[S, W]``) or, when ``dense_A > 0``, dense (``count[L, L]`` and the dense
    ``[L, L, A, W]`` rows flattened to ``sums[L * L * A, W]``). Every
    target is independent of the others: one thread (block) per target on the GPU.

    Returns ``(I_ptr, I_ts, touched)`` like :func:`edgewise`. Cost: for each affected target,
    O(sum over its sources of |F(l1)| * |Psi[l1, l2]| * |I(l2)| * W).
    """
    L = I_ptr.shape[0] - 1
    W = F_ts.shape[1]
    K = W - m
    dense = dense_A > 0
    hit = _affected(L, seeds, pair_ptr, pair_dst, count, dense)
    new_len = I_ptr[1:] - I_ptr[:-1]
    pool = np.empty((16, W), dtype=np.int64)
    start = np.zeros(L, dtype=np.int64)
    used = 0
    scratch = np.empty((64, W), dtype=np.int64)
    cand = np.empty(W, dtype=np.int64)
    for l2 in range(L):
        if not hit[l2]:
            continue
        n = 0
        if dense:
            for l1 in range(L):
                k = count[l1, l2]
                if k == 0 or F_ptr[l1 + 1] == F_ptr[l1]:
                    continue
                base = (l1 * L + l2) * dense_A
                for j in range(base, base + k):
                    for f in range(F_ptr[l1], F_ptr[l1 + 1]):
                        apply_into(sums[j], F_ts[f], cand, m, K)
                        scratch = _grow(scratch, n + 1)
                        n = antichain_insert(scratch, n, cand, m, W)
        else:
            for q in range(t_ptr[l2], t_ptr[l2 + 1]):
                l1 = t_src[q]
                if F_ptr[l1 + 1] == F_ptr[l1]:
                    continue
                p = t_pair[q]
                for j in range(sum_ptr[p], sum_ptr[p + 1]):
                    for f in range(F_ptr[l1], F_ptr[l1 + 1]):
                        apply_into(sums[j], F_ts[f], cand, m, K)
                        scratch = _grow(scratch, n + 1)
                        n = antichain_insert(scratch, n, cand, m, W)
        sort_rows_inplace(scratch, n, W)
        pool = _grow(pool, used + n)
        copy_rows(pool, used, scratch, 0, n)
        start[l2] = used
        new_len[l2] = n
        used += n
    new_ptr = np.zeros(L + 1, dtype=np.int64)
    for l in range(L):
        new_ptr[l + 1] = new_ptr[l] + new_len[l]
    new_ts = np.empty((new_ptr[L], W), dtype=np.int64)
    for l in range(L):
        if hit[l]:
            copy_rows(new_ts, new_ptr[l], pool, start[l], new_len[l])
        else:
            copy_rows(new_ts, new_ptr[l], I_ts, I_ptr[l], I_ptr[l + 1] - I_ptr[l])
    return new_ptr, new_ts, np.nonzero(hit)[0]


# -- the closure strategy's device form: target-major Psi, seed modes, change counts -----------


@njit(cache=True, nogil=True)
def target_major(L, dense_A, count, t_ptr, t_src, t_pair, sum_ptr, sums):
    """``Psi`` laid out in the order the device gather reads it: for every target ``l2``, one
    entry per ``(l1, s)`` with ``s in Psi[l1, l2]``, sources ascending.

    Inputs are :class:`~engine.batched.psi.PsiArrays` fields: ``dense_A > 0`` with ``count[L, L]``
    and ``sums`` the dense ``[L, L, A, SW]`` rows flattened to ``[L * L * A, SW]``, or the
    ragged ``t_ptr``/``t_src``/``t_pair``/``sum_ptr``/``sums`` (``count`` unused).

    Returns ``(tm_ptr int64[L + 1], tm_src int32[E], tm_sum dtype[E, SW])``: the entries of
    target ``l2`` are ``tm_ptr[l2]:tm_ptr[l2 + 1]``. Built once per ``Psi``: O(E x SW) bytes,
    the size of ``Psi`` itself, read contiguously by the block that owns a target.
    """
    SW = sums.shape[1]
    tm_ptr = np.zeros(L + 1, dtype=np.int64)
    for l2 in range(L):
        e = 0
        if dense_A > 0:
            for l1 in range(L):
                e += count[l1, l2]
        else:
            for q in range(t_ptr[l2], t_ptr[l2 + 1]):
                p = t_pair[q]
                e += sum_ptr[p + 1] - sum_ptr[p]
        tm_ptr[l2 + 1] = tm_ptr[l2] + e
    E = tm_ptr[L]
    tm_src = np.empty(E, dtype=np.int32)
    tm_sum = np.empty((E, SW), dtype=sums.dtype)
    for l2 in range(L):
        e = tm_ptr[l2]
        if dense_A > 0:
            for l1 in range(L):
                base = (l1 * L + l2) * dense_A
                for j in range(base, base + count[l1, l2]):
                    tm_src[e] = l1
                    tm_sum[e] = sums[j]
                    e += 1
        else:
            for q in range(t_ptr[l2], t_ptr[l2 + 1]):
                p = t_pair[q]
                for j in range(sum_ptr[p], sum_ptr[p + 1]):
                    tm_src[e] = t_src[q]
                    tm_sum[e] = sums[j]
                    e += 1
    return tm_ptr, tm_src, tm_sum


@njit(cache=True, nogil=True, inline="always")
def count_changes(x, a, b, y, c, d, W):
    """Rows in exactly one of the sorted row sets ``x[a:b]`` and ``y[c:d]``: the number of
    frontier changes :func:`walk_changes` emits for them."""
    n = 0
    i = a
    j = c
    while i < b or j < d:
        if j >= d:
            i += 1
            n += 1
        elif i >= b:
            j += 1
            n += 1
        else:
            k = ts_cmp(x[i], y[j], W)
            if k == 0:
                i += 1
                j += 1
            elif k < 0:
                i += 1
                n += 1
            else:
                j += 1
                n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def gather_target(l2, m, W, tm_ptr, tm_src, tm_sum, F_ptr, F_ts, slot, C, cand):
    """One target's implied frontier ``frontier( s(t) : (l1, s) an entry of l2, t in F(l1) )``
    into ``slot[:n]``, sorted; returns ``n``, or -1 when it would need more than ``C`` rows.
    ``slot`` has ``C + 1`` rows (an insertion needs one spare). Scalar core of the device
    gather's overflow path (one thread per target, global-memory slots)."""
    K = W - m
    n = 0
    for e in range(tm_ptr[l2], tm_ptr[l2 + 1]):
        l1 = tm_src[e]
        for f in range(F_ptr[l1], F_ptr[l1 + 1]):
            apply_into(tm_sum[e], F_ts[f], cand, m, K)
            n = antichain_insert(slot, n, cand, m, W)
            if n > C:
                return -1
    sort_rows_with(slot, n, W, cand)
    return n


#: Distinct rows of a target's old frontier whose witness a changed source withdrew that the
#: closure gather's vote looks for another producer of (``coop_gather``'s shared table): a
#: target with more such rows is recomputed in full.
HIT_ROWS = 8


@njit(cache=True, nogil=True, inline="always")
def witness_row(summ, g, m, W, G_ts, I_ts, ia, ib, cand):
    """The row of a target's old frontier ``I_ts[ia:ib]`` (sorted) that equals the candidate
    ``summ(G_ts[g])`` of the old ``F`` row ``g``, or -1: one summary application and a binary
    search. ``cand`` (``W`` entries) is work space. Scalar core of :func:`witness_hit` and
    of the vote's first pass (:func:`closure_vote`, ``coop_gather``)."""
    apply_into(summ, G_ts[g], cand, m, W - m)
    lo = ia
    hi = ib
    while lo < hi:  # I rows are sorted lexicographically: binary search for cand
        mid = (lo + hi) // 2
        c = ts_cmp(I_ts[mid], cand, W)
        if c == 0:
            return mid
        if c < 0:
            lo = mid + 1
        else:
            hi = mid
    return -1


@njit(cache=True, nogil=True, inline="always")
def witness_hit(summ, l1, m, W, G_ptr, G_ts, gone, I_ts, ia, ib, cand):
    """Whether the entry ``(l1, summ)`` of a target withdrew a *witness* of one of the
    target's old frontier rows ``I_ts[ia:ib]`` (sorted): some row ``t`` of ``l1``'s old
    ``F`` (``G_ts[G_ptr[l1]:G_ptr[l1 + 1]]``) is *withdrawn* (``gone[t] == 1``: no row of
    its new ``F`` is ``<=`` it, marked once per location by
    :func:`gpu_kernels.pareto.segment_withdrawn`) and ``summ(t)`` equals an old frontier row
    (:func:`witness_row`). ``cand`` (``W`` entries) is work space.

    A row hit this way is only a *suspect*: the vote (:func:`closure_vote`) then looks for
    another producer of it (:func:`cover_hits`); the rule it implements, and why it is exact,
    are in :func:`closure_vote`. O(|G(l1)| + withdrawn x W log |I|) per entry (one mark read
    per old row; per withdrawn row, one summary application and one binary search).
    """
    for g in range(G_ptr[l1], G_ptr[l1 + 1]):
        if gone[g] != 0 and witness_row(summ, g, m, W, G_ts, I_ts, ia, ib, cand) >= 0:
            return True
    return False


@njit(cache=True, nogil=True, inline="always")
def cover_hits(summ, l1, m, W, F_ptr, F_ts, I_ts, hits, nh, covered, cand):
    """Mark the hit rows that the entry ``(l1, summ)`` still produces: ``covered[k] <- 1``
    for every ``k < nh`` with ``summ(t') <= I_ts[hits[k]]`` for a row ``t'`` of ``l1``'s
    *new* ``F`` (``F_ts[F_ptr[l1]:F_ptr[l1 + 1]]``). Rows already marked are skipped, and
    the entry stops once all are; marks are only ever set to 1, so threads sharing
    ``covered`` race benignly. ``cand`` (``W`` entries) is work space. Scalar core of the
    vote's second pass (:func:`closure_vote`, ``coop_gather``): O(|F(l1)| x (W + nh W))."""
    K = W - m
    for f in range(F_ptr[l1], F_ptr[l1 + 1]):
        apply_into(summ, F_ts[f], cand, m, K)
        left = 0
        for k in range(nh):
            if covered[k] == 0:
                if ts_le(cand, I_ts[hits[k]], m, W):
                    covered[k] = 1
                else:
                    left += 1
        if left == 0:
            return


@njit(cache=True, nogil=True, inline="always")
def uncovered(covered, nh):
    """How many of the ``nh`` hit rows no candidate covers yet (:func:`cover_hits`)."""
    n = 0
    for k in range(nh):
        if covered[k] == 0:
            n += 1
    return n


@njit(cache=True, nogil=True)
def closure_vote(m, tm_ptr, tm_src, tm_sum, mode, gone, G_ptr, G_ts, F_ptr, F_ts, I_ptr, I_ts,
                 hit_rows):
    """``uint8[L]``: what the device gather does with each target -- 0 nothing (no source's
    ``F`` changed), 1 an incremental update (its old frontier and the candidates of its
    changed sources' new ``F``), 2 a full recomputation (an *orphan*, below). CPU twin of
    ``coop_gather``'s vote, over target-major ``Psi`` (:func:`target_major`); ``G`` is
    ``F`` before the batch, ``F`` after it; ``mode`` and ``gone`` (the withdrawn marks of
    ``G``'s rows) as :func:`gpu_kernels.pareto.seed_withdrawn` gives them; ``hit_rows``
    the size of the vote's table (:data:`HIT_ROWS` on the device; 0 gives the rule before
    the only-producer refinement: every hit is an orphan).

    The rule, per target with a changed source:

    1. *hits*: the rows ``x`` of the old frontier ``I`` that equal the candidate ``s(t)``
       of a withdrawn row ``t`` of a changed source's old ``F`` (:func:`witness_row`); more
       than ``hit_rows`` distinct hits: full;
    2. *cover*: a hit ``x`` is covered if some entry ``(l1', s')`` has a row ``t'`` of its
       new ``F`` with ``s'(t') <= x`` (:func:`cover_hits`): (a) for an unchanged source this
       means ``s'(t') == x`` (``x`` is minimal among the old candidates, which include the
       unchanged source's), (b) for a changed one the incremental update adds ``s'(t')``;
    3. full iff some hit is covered by no entry (an *orphan*), else incremental.

    Exactness. Let ``C`` and ``C'`` be the target's candidates before and after the batch,
    ``I = min C`` and the true new frontier ``min C'``; the incremental update computes
    ``min(I + D)``, ``D`` the changed sources' new candidates. ``C'`` is the unchanged
    sources' candidates (in ``C``, so above ``I``) plus ``D``, so the up-set of ``C'`` always
    lies in that of ``I + D``, and the two are equal (then so are their antichains of
    minimal elements) iff every ``x`` in ``I`` is above some new candidate. A row ``x`` that
    is no hit was produced by an unchanged source (still a candidate) or by a row ``t`` of a
    changed source that a new row ``t' <= t`` covers (``t`` itself if kept), and then
    ``s(t') <= s(t) = x``, summaries being monotone; a hit is above a new candidate exactly
    when it is covered. So without an orphan the incremental update is exact, and with one
    it is wrong (the orphan stays in ``min(I + D)``: nothing in the antichain ``I`` nor in
    ``D`` is below it, yet it is no new candidate): within ``hit_rows`` the vote recomputes
    exactly the targets that need it. A source that only grew (mode 1) withdraws nothing.

    Cost: the first pass reads one mark per old ``F`` row of each retreated source's entry,
    and per withdrawn row applies the summary and searches ``I``; the second pass runs only
    on targets with hits, applies each entry's summary to its source's new ``F`` rows,
    compares each candidate with the uncovered hits, and stops once all are covered.
    """
    L = tm_ptr.shape[0] - 1
    W = G_ts.shape[1]
    out = np.zeros(L, dtype=np.uint8)
    cand = np.empty(W, dtype=np.int64)
    cap = 0
    for l2 in range(L):
        cap = max(cap, I_ptr[l2 + 1] - I_ptr[l2])
    cap = max(1, min(cap, hit_rows))
    hits = np.empty(cap, dtype=np.int64)
    covered = np.zeros(cap, dtype=np.uint8)
    for l2 in range(L):
        ia = I_ptr[l2]
        ib = I_ptr[l2 + 1]
        nh = 0
        over = False
        # 1. the hits: distinct old frontier rows whose witness was withdrawn
        for e in range(tm_ptr[l2], tm_ptr[l2 + 1]):
            l1 = tm_src[e]
            if mode[l1] == 0:
                continue
            out[l2] = 1
            if mode[l1] != 2:
                continue
            for g in range(G_ptr[l1], G_ptr[l1 + 1]):
                if gone[g] == 0:
                    continue
                r = witness_row(tm_sum[e], g, m, W, G_ts, I_ts, ia, ib, cand)
                if r < 0:
                    continue
                seen = False
                for k in range(nh):
                    if hits[k] == r:
                        seen = True
                        break
                if seen:
                    continue
                if nh == hit_rows:
                    over = True
                    break
                hits[nh] = r
                nh += 1
            if over:
                break
        if over:
            out[l2] = 2
            continue
        if nh == 0:
            continue
        # 2. the cover: another producer of each hit, among all entries' new candidates
        for k in range(nh):
            covered[k] = 0
        for e in range(tm_ptr[l2], tm_ptr[l2 + 1]):
            if uncovered(covered, nh) == 0:
                break
            cover_hits(tm_sum[e], tm_src[e], m, W, F_ptr, F_ts, I_ts, hits, nh, covered, cand)
        # 3. an orphan: full
        if uncovered(covered, nh) > 0:
            out[l2] = 2
    return out


# -- CUDA ---------------------------------------------------------------------------------------
#
# The closure strategy on the device is one cooperative launch over *all* targets, a scan, one
# small read, and one fill launch (``closure_step_cuda``):
#
# * the modes: how each location's ``F`` changed (``segment_mode``), and which rows of a
#   retreated location's old ``F`` were withdrawn (``segment_withdrawn``, 1 byte per row),
#   computed where the new ``F`` is made (:func:`gpu_kernels.pareto.frontier_update_cuda`):
#   the coverage test runs once per location, the gather's vote only reads the marks.
# * ``coop_gather`` (block of ``T`` threads per target, ``Psi`` target-major so the block
#   reads its entries contiguously): the threads stride over the target's entries and vote
#   (``syncthreads_or``) whether a source changed -- no: the block is done, its frontier is
#   the old one -- and collect the old frontier rows whose witness a changed source
#   withdrew (``witness_row``; *hits*, deduplicated by compare-and-swap into a shared table
#   of ``H`` rows, more: full). Only if there are hits, a second pass over the entries marks
#   each hit still produced by some entry's new candidate (``cover_hits``: an unchanged
#   source producing it, or a changed source's new candidate below it; 1s written to shared
#   flags, benign races; a thread stops once all are marked), then one ``syncthreads``. An
#   unmarked hit (an *orphan*) means full recomputation; otherwise the update is
#   incremental: the threads start from the old frontier and apply only the changed
#   sources' new ``F`` (the rule and its exactness: ``closure_vote``, the CPU twin). Each
#   thread keeps its own antichain of at most ``C`` rows in registers/local memory (the
#   CPU's ``antichain_insert``); the block merges them in shared memory: a row survives
#   unless another row is strictly below it (or equal, earlier), and its rank among the
#   survivors (rows below it) is its place in the sorted frontier -- ``O(C x T C)``
#   comparisons per thread, no serial sort. Thread 0 then counts the frontier changes
#   against the old frontier (``count_changes``). Totals go to ``stats`` by atomics. A
#   target whose antichain outgrows ``C`` rows in a thread (a rare, large frontier) is
#   flagged and recomputed by ``gather_rows`` (thread per such target, ``gather_target``,
#   retried with four times the room).
# * one scan of the sizes (new frontier lengths and change counts) and one **sync** reading
#   ``stats`` (5 integers: overflows, rows, changes, targets in full and incremental; the
#   batch's deferred words behind them, copied there by block 0) to size the outputs;
# * ``coop_fill`` (thread per location): the new ``I`` segment (the block's slot or the old
#   segment) and, for a touched target, its changes (``walk_changes``) into one
#   ``int64[c, 2 + W]`` array, so that one copy (the second **sync**) brings them to the host.
#
# A warp-shuffle merge is a shared-memory merge here: Numba's
# CUDA simulator, which runs these kernels in every test run, has no shuffles.

#: ``numba.cuda``, bound by the kernel factories on first use. A module global, not a local
#: of the factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake.
cuda = None

#: Threads per target block of ``coop_gather`` on a device (one warp), and on the simulator
#: (two, so the merge across threads runs in every test).
COOP_THREADS, SIM_COOP_THREADS = 32, 2
#: Rows of each thread's own antichain in ``coop_gather`` (registers / local memory).
COOP_ROWS = 8
#: Statistics words of ``coop_gather``: overflows, rows, changes, targets recomputed in full,
#: targets updated incrementally (the pending words of earlier stages follow them).
STATS = 5
#: Static shared memory ``coop_gather`` may use per block (the merge's ``T x C`` rows of ``W``
#: int64): below the 48 KiB every CUDA device gives a block without opting in.
COOP_SHARED_BYTES = 40 << 10


def coop_shape(W: int, T: int, rows: int = COOP_ROWS) -> tuple[int, int]:
    """Threads and rows per thread of ``coop_gather`` for rows of ``W`` entries: ``(T,
    rows)``, or fewer rows (then fewer threads, for very wide rows) so that the block's merge
    of ``T x rows`` rows fits :data:`COOP_SHARED_BYTES` of shared memory.

    >>> coop_shape(2, 32), coop_shape(59, 32), coop_shape(200, 32)
    ((32, 8), (32, 2), (25, 1))
    """
    fit = COOP_SHARED_BYTES // (8 * int(W))
    T = max(1, min(int(T), fit))
    return T, max(1, min(int(rows), fit // T))


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    walk = _cuda.device(walk_changes)
    gather_one = _cuda.device(gather_target)
    n_changes = _cuda.device(count_changes)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def gather_rows(targets, m, tm_ptr, tm_src, tm_sum, F_ptr, F_ts, slots, C, cnt):
        """Thread per target: gather_target into slot rows [i (C + 2), i (C + 2) + C + 1),
        the last row being work space; cnt[i] = rows, or -1 on overflow."""
        i = cuda.grid(1)
        if i < targets.shape[0]:
            a = i * (C + 2)
            cnt[i] = gather_one(targets[i], m, slots.shape[1], tm_ptr, tm_src, tm_sum, F_ptr,
                                F_ts, slots[a:a + C + 1], C, slots[a + C + 1])

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def recount(I_ptr, I_ts, start, over, touched, sizes):
        """Thread per location: a target finished by the overflow path (touched == 3, its
        rows in ``over`` from start[l]) gets its change count, sizes[1, l + 1], and becomes
        an ordinary recomputed target."""
        l = cuda.grid(1)
        if l < touched.shape[0] and touched[l] == 3:
            s = start[l]
            sizes[1, l + 1] = n_changes(I_ts, I_ptr[l], I_ptr[l + 1], over, s, s + sizes[0, l + 1],
                                        I_ts.shape[1])
            touched[l] = 4

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def coop_fill(I_ptr, I_ts, new_ptr, new_ts, R, start, slots, over, touched, ch_off, changes):
        """Thread per location: its new I segment -- from its slot in ``slots`` (touched 1:
        rows l R ...), in ``over`` (touched 4: finished by the overflow path, from start[l])
        or the old segment (0) -- and, if recomputed, its changes (loc, diff, ts...) from
        row ch_off[l] of ``changes``."""
        l = cuda.grid(1)
        if l < touched.shape[0]:
            W = new_ts.shape[1]
            tl = touched[l]
            if tl == 1:
                s = l * R
            elif tl == 4:
                s = start[l]
            else:
                s = I_ptr[l]
            for o in range(new_ptr[l], new_ptr[l + 1]):
                for c in range(W):
                    if tl == 1:
                        new_ts[o, c] = slots[s, c]
                    elif tl == 4:
                        new_ts[o, c] = over[s, c]
                    else:
                        new_ts[o, c] = I_ts[s, c]
                s += 1
            if tl != 0:
                walk(l, I_ptr, I_ts, new_ptr, new_ts, W, changes[:, 0], changes[:, 2:],
                     changes[:, 1], ch_off[l], True)

    return types.SimpleNamespace(gather_rows=gather_rows, recount=recount,
                                 coop_fill=coop_fill)


@functools.cache
def _coop_kernel(W: int, C: int, T: int, H: int = HIT_ROWS):
    """``coop_gather`` for rows of ``W`` entries, ``C`` rows per thread, ``T`` threads per
    block and a table of ``H`` hit rows: the sizes of its local and shared arrays are
    compile-time constants, so there is one compiled kernel per ``(W, C, T, H)`` (a graph
    has one ``W``)."""
    global cuda
    cuda = _cuda.cuda()
    apply = _cuda.device(apply_into)
    insert = _cuda.device(antichain_insert)
    le = _cuda.device(ts_le)
    cmp = _cuda.device(ts_cmp)
    n_changes = _cuda.device(count_changes)
    witness = _cuda.device(witness_row)
    cover = _cuda.device(cover_hits)
    n_uncovered = _cuda.device(uncovered)
    R = T * C
    C1 = C + 1
    H1 = max(H, 1)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def coop_gather(m, tm_ptr, tm_src, tm_sum, F_ptr, F_ts, G_ptr, G_ts, gone, mode, I_ptr,
                    I_ts, slots, sizes, touched, stats, pending):
        """Block per target ``l2``: its new implied frontier into slots[l2 R : l2 R + R]
        (sorted), sizes[0, l2 + 1] <- its length (the old one if no source changed),
        sizes[1, l2 + 1] <- its number of frontier changes, touched[l2] <- 1 if recomputed,
        2 if it overflowed (then sizes are left for the overflow path); stats[0] +=
        overflows, stats[1] += rows, stats[2] += changes, stats[3] += targets recomputed
        from all their sources (overflows included), stats[4] += targets updated
        incrementally (atomics). ``G_ptr``/``G_ts``: ``F`` before the batch, ``gone`` its
        rows' withdrawn marks. Block 0 copies
        ``pending`` (earlier stages' words) to stats[STATS:], so one read brings all."""
        l2 = cuda.blockIdx.x
        t = cuda.threadIdx.x
        if l2 == 0:
            for i in range(t, pending.shape[0], T):
                stats[STATS + i] = pending[i]
        K = W - m
        buf = cuda.local.array((C1, W), np.int64)
        cand = cuda.local.array(W, np.int64)
        sh = cuda.shared.array((R, W), np.int64)
        sh_n = cuda.shared.array(T, np.int64)
        sh_keep = cuda.shared.array(R, np.uint8)
        sh_tot = cuda.shared.array(2, np.int64)
        sh_hit = cuda.shared.array(H1, np.int64)
        sh_cov = cuda.shared.array(H1, np.uint8)
        a = tm_ptr[l2]
        b = tm_ptr[l2 + 1]
        old_a = I_ptr[l2]
        old_b = I_ptr[l2 + 1]
        for k in range(t, H1, T):
            sh_hit[k] = -1
            sh_cov[k] = 0
        cuda.syncthreads()
        # 1. vote: did a source of l2 change; which old frontier rows lost a witness (hits,
        # deduplicated into the table by compare-and-swap: the filled slots are a prefix)?
        changed = 0
        over = 0
        for e in range(a + t, b, T):
            l1 = tm_src[e]
            md = mode[l1]
            if md != 0:
                changed = 1
            if md == 2 and over == 0:
                for g in range(G_ptr[l1], G_ptr[l1 + 1]):
                    if gone[g] == 0:
                        continue
                    r = witness(tm_sum[e], g, m, W, G_ts, I_ts, old_a, old_b, cand)
                    if r < 0:
                        continue
                    placed = 0
                    for k in range(H):
                        prev = cuda.atomic.cas(sh_hit, k, -1, r)
                        if prev == -1 or prev == r:
                            placed = 1
                            break
                    if placed == 0:  # more than H distinct hits
                        over = 1
                        break
        if cuda.syncthreads_or(changed) == 0:
            if t == 0:
                sizes[0, l2 + 1] = old_b - old_a
                sizes[1, l2 + 1] = 0
                touched[l2] = 0
                cuda.atomic.add(stats, 1, old_b - old_a)
            return
        full = cuda.syncthreads_or(over)
        nh = 0
        while nh < H and sh_hit[nh] != -1:
            nh += 1
        if full == 0 and nh > 0:
            # the second pass: is each hit still produced, by any entry's new candidates?
            for e in range(a + t, b, T):
                if n_uncovered(sh_cov, nh) == 0:
                    break
                cover(tm_sum[e], tm_src[e], m, W, F_ptr, F_ts, I_ts, sh_hit, nh, sh_cov, cand)
            cuda.syncthreads()
            if n_uncovered(sh_cov, nh) > 0:  # an orphan: recompute in full
                full = 1
        if t == 0:
            sh_tot[0] = 0
            sh_tot[1] = 0
        # 2. each thread's own antichain: the old frontier (incremental), then candidates
        n = 0
        over = 0
        if full == 0:
            for x in range(old_a + t, old_b, T):
                if over == 0:
                    n = insert(buf, n, I_ts[x], m, W)
                    if n > C:
                        over = 1
        for e in range(a + t, b, T):
            if over != 0:
                break
            l1 = tm_src[e]
            if full == 0 and mode[l1] == 0:
                continue
            for f in range(F_ptr[l1], F_ptr[l1 + 1]):
                apply(tm_sum[e], F_ts[f], cand, m, K)
                n = insert(buf, n, cand, m, W)
                if n > C:
                    over = 1
                    break
        if cuda.syncthreads_or(over) != 0:
            if t == 0:
                touched[l2] = 2
                cuda.atomic.add(stats, 0, 1)
                cuda.atomic.add(stats, 3, 1)
            return
        for i in range(n):
            for c in range(W):
                sh[t * C + i, c] = buf[i, c]
        sh_n[t] = n
        cuda.syncthreads()
        # 3. merge: a row survives unless another is below it (or equal and earlier)
        kept = 0
        for i in range(n):
            p = t * C + i
            keep = 1
            for s2 in range(T):
                for j in range(sh_n[s2]):
                    q = s2 * C + j
                    if q != p and le(sh[q], sh[p], m, W):
                        if q < p or cmp(sh[q], sh[p], W) != 0:
                            keep = 0
                            break
                if keep == 0:
                    break
            sh_keep[p] = keep
            kept += keep
        cuda.atomic.add(sh_tot, 0, kept)
        cuda.syncthreads()
        total = sh_tot[0]
        # 4. each survivor's rank among the survivors is its row in the sorted frontier
        base = l2 * R
        for i in range(n):
            p = t * C + i
            if sh_keep[p] != 0:
                rank = 0
                for s2 in range(T):
                    for j in range(sh_n[s2]):
                        q = s2 * C + j
                        if sh_keep[q] != 0 and cmp(sh[q], sh[p], W) < 0:
                            rank += 1
                for c in range(W):
                    slots[base + rank, c] = sh[p, c]
        cuda.syncthreads()
        # 5. the frontier changes against the old frontier
        if t == 0:
            ch = n_changes(I_ts, old_a, old_b, slots, base, base + total, W)
            sizes[0, l2 + 1] = total
            sizes[1, l2 + 1] = ch
            touched[l2] = 1
            cuda.atomic.add(stats, 1, total)
            cuda.atomic.add(stats, 2, ch)
            cuda.atomic.add(stats, 3 if full != 0 else 4, 1)

    return coop_gather


def coop_threads() -> int:
    """Threads per target block of ``coop_gather``: :data:`COOP_THREADS` on a device,
    :data:`SIM_COOP_THREADS` on the simulator."""
    return SIM_COOP_THREADS if _cuda.simulator() else COOP_THREADS


def closure_step_cuda(m, tm_ptr, tm_src, tm_sum, mode, F_ptr, F_ts, I_ptr, I_ts, *, old_ptr,
                      old_ts, gone, pending=None, settle=None, rows=COOP_ROWS, threads=None,
                      capacity=8, hit_rows=HIT_ROWS, tpb=None):
    """The closure strategy's whole step on the device: the new implied frontiers of every
    target a changed ``F`` reaches, and their changes.

    Equal to :func:`gather_closure` followed by :func:`frontier_changes` over the targets it
    recomputed (the CPU twins), with ``Psi`` given target-major (:func:`target_major`).

    Parameters
    ----------
    m : int
    tm_ptr, tm_src, tm_sum : target-major ``Psi`` (device arrays)
    mode : uint8[L], how each location's ``F`` changed in the batch
        (:func:`gpu_kernels.pareto.segment_mode`: 0 unchanged, 1 grown, 2 retreated)
    F_ptr, F_ts : ``F`` after the batch (CSR by location)
    I_ptr, I_ts : the implied frontiers before the batch
    old_ptr, old_ts, gone : ``F`` before the batch and its rows' withdrawn marks
        (keyword-only; :func:`gpu_kernels.pareto.frontier_update_cuda` makes the marks with
        the modes): a target none of whose old frontier rows lost every producer (an
        *orphan*, :func:`closure_vote`) is updated incrementally, from its old frontier and
        the changed sources' candidates
    rows, threads : each thread's antichain rows and threads per target block, at most
        (defaults :data:`COOP_ROWS`, :func:`coop_threads`; :func:`coop_shape` lowers them for
        wide rows)
    capacity : first slot size of the overflow path (rows per target, grown x4)
    hit_rows : distinct suspect rows (old frontier rows that lost a witness) per target whose
        other producers the vote looks for (default :data:`HIT_ROWS`); a target with more is
        recomputed in full, and 0 recomputes every target with a suspect (the rule before)
    pending, settle : device ``int64`` words of earlier stages to read with the first
        transfer (no sync of their own), and the host function that judges them (it may
        raise, before anything else is done)

    Returns
    -------
    (I_ptr, I_ts, changes) : the new ``I`` (device CSR; the old arrays themselves when no
    frontier changed) and the changes as one host array ``int64[c, 2 + W]``, columns
    ``loc, diff, ts...``, sorted by ``(loc, ts)``.

    Notes
    -----
    Launches without overflow: ``coop_gather`` (``L`` blocks of ``threads``; block 0 also
    copies the ``pending`` words behind the statistics, so that one read brings both), one
    scan (CuPy), ``coop_fill`` (thread per location): 2 kernels + 1 primitive. Syncs: 2
    (``stats``, 40 bytes plus the pending words; the changes, ``8 (2 + W)`` bytes each), 1
    when no frontier changed (then nothing more runs). Allocations: 6. With ``o``
    overflowing targets add, per capacity round, one ``gather_rows`` launch, 2 primitives
    and one sync. The targets recomputed from all their sources and those updated
    incrementally are added to ``gpu_kernels._cuda.COUNTS`` (``targets_full``,
    ``targets_incremental``). Work per target: its ``E`` entries
    read once by ``T`` threads (``E / T`` each, plus ``|F(l1)|`` candidates per entry of a
    changed source), read again, only where a changed source withdrew a witness of the old
    frontier, by the vote's second pass (one summary application per entry and new ``F``
    row, compared with at most ``hit_rows`` rows, until all are covered; one more
    ``syncthreads``), ``O(C x T C x W)`` merge comparisons per thread; bytes: ``E (4 +
    itemsize x SW)`` of ``Psi``, the ``F`` rows of its sources (shared by all targets, L2
    resident), the slot and the output ``8 W`` per row.
    """
    xp = _cuda.namespace(F_ts, I_ts)
    k = _kernels()
    L = I_ptr.shape[0] - 1
    W = F_ts.shape[1]
    T, C = coop_shape(W, int(threads) if threads is not None else coop_threads(), rows)
    R = T * C
    slots = _cuda.alloc(xp, (max(L * R, 1), W), xp.int64)
    sizes = _cuda.alloc(xp, (2, L + 1), xp.int64, 0)
    touched = _cuda.alloc(xp, L, xp.uint8)
    P = 0 if pending is None else int(pending.shape[0])
    stats = _cuda.alloc(xp, STATS + P, xp.int64, 0)
    if L == 0 and P:  # no block to copy the pending words
        stats[STATS:] = pending
        _cuda.op()
    _cuda.launch_blocks(_coop_kernel(W, C, T, int(hit_rows)), L, T, int(m), tm_ptr, tm_src,
                        tm_sum, F_ptr, F_ts, old_ptr, old_ts, gone, mode, I_ptr, I_ts, slots,
                        sizes, touched, stats, pending if P else stats[:0])
    got = _cuda.read(stats)
    if P:
        settle(got[STATS:])
    n_over, n_rows, n_ch, n_full, n_inc = (int(v) for v in got[:STATS])
    _cuda.COUNTS.targets_full += n_full
    _cuda.COUNTS.targets_incremental += n_inc
    _cuda.COUNTS.targets_overflowed += n_over
    if n_over == 0 and n_ch == 0:  # every recomputed frontier came out as it was
        return I_ptr, I_ts, np.zeros((0, 2 + W), np.int64)
    start = slots[:0, 0]  # a slot's start is l * R; only the overflow path needs a table
    over_rows = slots[:0]
    if n_over:
        start = _cuda.alloc(xp, L, xp.int64)
        # targets whose antichain outgrew a thread: thread per target, growing global slots
        # (their own buffers: ``slots`` is neither copied nor grown)
        over = _cuda.op(xp.flatnonzero(touched == 2).astype(xp.int64), 3)
        bufs, cap, base = [], int(capacity), 0
        while True:
            q = int(over.shape[0])  # known on the host: the compaction above synchronised
            _cuda.COUNTS.syncs += 1
            if q == 0:
                break
            buf = _cuda.alloc(xp, (q * (cap + 2), W), xp.int64)
            cnt = _cuda.alloc(xp, q, xp.int64)
            _cuda.launch(k.gather_rows, q, over, int(m), tm_ptr, tm_src, tm_sum, F_ptr, F_ts, buf,
                         cap, cnt, tpb=tpb)
            ok = _cuda.op(xp.flatnonzero(cnt >= 0), 2)
            done = over[ok]
            start[done] = base + ok * (cap + 2)
            sizes[0, done + 1] = cnt[ok]
            touched[done] = 3
            _cuda.op(k=5)
            bufs.append(buf)
            base += buf.shape[0]
            over = _cuda.op(over[cnt < 0], 2)
            cap *= 4
        over_rows = bufs[0] if len(bufs) == 1 else _cuda.op(xp.concatenate(bufs))
        _cuda.launch(k.recount, L, I_ptr, I_ts, start, over_rows, touched, sizes, tpb=tpb)
        _cuda.op(xp.cumsum(sizes, axis=1, out=sizes))
        n_rows, n_ch = (int(v) for v in _cuda.read(sizes[:, L]))
    else:
        _cuda.op(xp.cumsum(sizes, axis=1, out=sizes))
    # one scan gave both offsets; fill I and the changes; one copy brings the changes out
    new_ts = _cuda.alloc(xp, (n_rows, W), xp.int64)
    changes = _cuda.alloc(xp, (n_ch, 2 + W), xp.int64)
    _cuda.launch(k.coop_fill, L, I_ptr, I_ts, sizes[0], new_ts, R, start, slots, over_rows,
                 touched, sizes[1], changes, tpb=tpb)
    return sizes[0], new_ts, _cuda.read(changes)


def frontier_changes_cuda(locs, old_ptr, old_ts, new_ptr, new_ts, W, *, tpb=None):
    """CUDA version of :func:`frontier_changes`: two passes over ``locs`` (thread per
    location), ``changes_count`` then, after an exclusive scan and one **sync** for the
    output size, ``changes_fill``; both run :func:`walk_changes`, the twin's scalar core."""
    xp = _cuda.namespace(old_ts, new_ts)
    k = _changes_kernels()
    q = int(locs.shape[0])
    off = _cuda.alloc(xp, q + 1, xp.int64, 0)
    _cuda.launch(k.changes_count, q, locs, old_ptr, old_ts, new_ptr, new_ts, off[1:],
                 xp.empty(0, xp.int32), xp.empty((0, W), xp.int64), xp.empty(0, xp.int64), tpb=tpb)
    off[1:] = _cuda.op(xp.cumsum(off[1:]))
    size = int(_cuda.read(off[q:])[0])
    c_loc = _cuda.alloc(xp, size, xp.int32)
    c_ts = _cuda.alloc(xp, (size, W), xp.int64)
    c_diff = _cuda.alloc(xp, size, xp.int64)
    _cuda.launch(k.changes_fill, q, locs, old_ptr, old_ts, new_ptr, new_ts, off, c_loc, c_ts,
                 c_diff, tpb=tpb)
    return c_loc, c_ts, c_diff


@functools.cache
def _changes_kernels():
    global cuda
    cuda = _cuda.cuda()
    walk = _cuda.device(walk_changes)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def changes_count(locs, old_ptr, old_ts, new_ptr, new_ts, cnt, no_loc, no_ts, no_diff):
        """cnt[i] <- number of frontier changes of locs[i]; thread per location."""
        i = cuda.grid(1)
        if i < locs.shape[0]:
            cnt[i] = walk(locs[i], old_ptr, old_ts, new_ptr, new_ts, old_ts.shape[1], no_loc,
                          no_ts, no_diff, 0, False)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def changes_fill(locs, old_ptr, old_ts, new_ptr, new_ts, off, c_loc, c_ts, c_diff):
        """Rows off[i]: of the output <- the changes of locs[i]; thread per location."""
        i = cuda.grid(1)
        if i < locs.shape[0]:
            walk(locs[i], old_ptr, old_ts, new_ptr, new_ts, old_ts.shape[1], c_loc, c_ts, c_diff,
                 off[i], True)

    return types.SimpleNamespace(changes_count=changes_count, changes_fill=changes_fill)
