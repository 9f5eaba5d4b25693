"""Propagation: bring implied frontiers up to date after some locations' frontiers changed.

CPU twin (Numba) of the *edge-wise* strategy (DESIGN.md 3): no ``Psi``. The implied frontier
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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .pareto import antichain_insert, sort_rows_inplace
from .summary_rows import apply_into, ts_cmp

__all__ = ["edgewise", "gather_closure", "frontier_changes"]


@njit(cache=True, nogil=True)
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    cap = max(need, 2 * buf.shape[0])
    out = np.empty((cap, buf.shape[1]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


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
            c_loc[k] = l
            if c < 0:
                c_ts[k] = old_ts[i]
                c_diff[k] = -1
                i += 1
            else:
                c_ts[k] = new_ts[j]
                c_diff[k] = 1
                j += 1
            k += 1
    return c_loc[:k], c_ts[:k], c_diff[:k]


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
    K = W - m
    C = scc_ptr.shape[0] - 1
    # current values start as the old ones, in a growable pool
    pool = np.empty((max(16, 2 * I_ts.shape[0]), W), dtype=np.int64)
    pool[:I_ts.shape[0]] = I_ts
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
        n = 0
        for f in range(F_ptr[l], F_ptr[l + 1]):
            n = antichain_insert(scratch, n, F_ts[f], m, W)
        for a in range(in_ptr[l], in_ptr[l + 1]):
            u = in_src[a]
            for x in range(cur_start[u], cur_start[u] + cur_len[u]):
                apply_into(in_sum[a], pool[x], cand, m, K)
                n = antichain_insert(scratch, n, cand, m, W)
        sort_rows_inplace(scratch, n, W)
        same = n == cur_len[l]
        if same:
            for i in range(n):
                if ts_cmp(scratch[i], pool[cur_start[l] + i], W) != 0:
                    same = False
                    break
        if not same:
            pool = _grow(pool, used + n)
            pool[used:used + n] = scratch[:n]
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
        new_ts[new_ptr[l]:new_ptr[l + 1]] = pool[cur_start[l]:cur_start[l] + cur_len[l]]
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
        pool[used:used + n] = scratch[:n]
        start[l2] = used
        new_len[l2] = n
        used += n
    new_ptr = np.zeros(L + 1, dtype=np.int64)
    for l in range(L):
        new_ptr[l + 1] = new_ptr[l] + new_len[l]
    new_ts = np.empty((new_ptr[L], W), dtype=np.int64)
    for l in range(L):
        if hit[l]:
            new_ts[new_ptr[l]:new_ptr[l + 1]] = pool[start[l]:start[l] + new_len[l]]
        else:
            new_ts[new_ptr[l]:new_ptr[l + 1]] = I_ts[I_ptr[l]:I_ptr[l + 1]]
    return new_ptr, new_ts, np.nonzero(hit)[0]
