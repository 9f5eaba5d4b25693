"""Propagation: bring implied frontiers up to date after some locations' frontiers changed.

CPU twin (Numba) of the *edge-wise* strategy (DESIGN.md 3): no ``Psi``. The implied frontier
is the least solution of

    I(l) = frontier( F(l)  ∪  ⋃ over arcs u -> l with summary a:  a(I(u)) )

where ``F(l)`` is the frontier of the positive counts at ``l``. Summaries are monotone, so
frontiers of frontiers suffice, and every path's contribution arrives edge by edge. After a
batch only the *region* downstream of the locations whose ``F`` changed can change; its
frontiers are reset to empty and re-derived by a Kleene iteration in reverse-postorder
(acyclic parts settle in one sweep; a location whose value changes re-queues its
successors, and a successor earlier in the order -- a loop head -- restarts the sweep
there). Starting from empty yields the *least* fixed point, which is what ``Psi`` defines: a
zero-advance cycle cannot keep itself alive, unlike timely's incremental propagation.

Inputs: the graph's arcs grouped by destination (``in_ptr``, ``in_src``, ``in_sum`` summary
rows) and by source (``out_ptr``, ``out_dst``), the DFS ``order`` and ``rank``, the new
``F`` and the old ``I`` as CSR (``*_ptr int64[L+1]``, ``*_ts int64[., W]``) and the changed
locations ``seeds``. Outputs: the new ``I`` as CSR and the frontier changes
``(loc int32, ts int64[., W], diff ±1)`` sorted by ``(loc, ts)``.

Cost: O(region arcs * |I(u)| * |I(l)| * W) per sweep, a few sweeps where loops re-queue their
heads; memory O(total frontier size).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .pareto import antichain_insert, sort_rows_inplace
from .summary_rows import apply_into, ts_cmp

__all__ = ["edgewise", "frontier_changes"]


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
def edgewise(m, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank,
             F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps):
    """Re-derive the implied frontiers downstream of ``seeds``.

    Returns ``(I_ptr, I_ts, region_locs, steps)``; ``steps == -1`` when ``max_steps``
    recomputations did not reach the fixed point (a bug guard).
    """
    L = in_ptr.shape[0] - 1
    W = F_ts.shape[1]
    K = W - m
    # 1. the region: everything reachable from the seeds
    region = np.zeros(L, dtype=np.bool_)
    stack = np.empty(L, dtype=np.int64)
    top = 0
    for s in seeds:
        if not region[s]:
            region[s] = True
            stack[top] = s
            top += 1
    while top > 0:
        top -= 1
        v = stack[top]
        for a in range(out_ptr[v], out_ptr[v + 1]):
            w = out_dst[a]
            if not region[w]:
                region[w] = True
                stack[top] = w
                top += 1
    # 2. current values: old I outside the region, empty inside, in a growable pool
    pool = np.empty((max(16, 2 * I_ts.shape[0]), W), dtype=np.int64)
    pool[:I_ts.shape[0]] = I_ts
    used = I_ts.shape[0]
    cur_start = I_ptr[:-1].copy()
    cur_len = I_ptr[1:] - I_ptr[:-1]
    pending = np.zeros(L, dtype=np.bool_)
    for l in range(L):
        if region[l]:
            cur_len[l] = 0
            pending[l] = True
    scratch = np.empty((64, W), dtype=np.int64)
    cand = np.empty(W, dtype=np.int64)
    # 3. Kleene iteration in reverse postorder
    steps = 0
    pos = 0
    while pos < L:
        l = order[pos]
        if not pending[l]:
            pos += 1
            continue
        pending[l] = False
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
        nxt = pos + 1
        if not same:
            pool = _grow(pool, used + n)
            pool[used:used + n] = scratch[:n]
            cur_start[l] = used
            cur_len[l] = n
            used += n
            for a in range(out_ptr[l], out_ptr[l + 1]):
                v = out_dst[a]
                if region[v]:
                    pending[v] = True
                    if rank[v] < nxt:
                        nxt = rank[v]
        pos = nxt
    # 4. compact into CSR
    new_ptr = np.zeros(L + 1, dtype=np.int64)
    for l in range(L):
        new_ptr[l + 1] = new_ptr[l] + cur_len[l]
    new_ts = np.empty((new_ptr[L], W), dtype=np.int64)
    for l in range(L):
        new_ts[new_ptr[l]:new_ptr[l + 1]] = pool[cur_start[l]:cur_start[l] + cur_len[l]]
    return new_ptr, new_ts, np.nonzero(region)[0], steps
