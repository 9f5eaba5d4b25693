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

CUDA kernels (foot of the file): :func:`gather_closure_cuda` (one thread per affected
target), :func:`edgewise_cuda` (Jacobi rounds level by level over the components' DAG) and
:func:`frontier_changes_cuda`, with the twins' contracts and scalar cores (``relax_into``,
``walk_changes``, and ``gather_target`` from the twin's loops).
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit

from . import _cuda
from .pareto import antichain_insert, segments_equal, sort_rows_inplace, sort_rows_with
from .segments import gather_segments_cuda
from .summary_rows import apply_into, ts_cmp

__all__ = ["edgewise", "gather_closure", "frontier_changes", "walk_changes", "relax_into",
           "gather_target", "scc_levels", "edgewise_levels", "edgewise_cuda",
           "gather_closure_cuda", "frontier_changes_cuda"]


@njit(cache=True, nogil=True)
def _grow(buf, need):
    if need <= buf.shape[0]:
        return buf
    cap = max(need, 2 * buf.shape[0])
    out = np.empty((cap, buf.shape[1]), dtype=buf.dtype)
    out[:buf.shape[0]] = buf
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


# -- CUDA ---------------------------------------------------------------------------------------
#
# The CPU twins walk locations one at a time (a worklist in rank order; targets in a loop).
# On the device:
#
# * closure strategy: one thread per affected target gathers through Psi (``gather_target``,
#   the scalar core) into a fixed-capacity slot; a target that needs more room is retried
#   with four times the capacity (rare: frontiers are small). Targets are independent, so
#   this is one launch per capacity round, and the work is O(pairs reached) spread over
#   threads.
# * edge-wise strategy: Jacobi rounds, level by level. ``edgewise_levels`` numbers the
#   strongly connected components by longest path in their DAG; all inputs of a level come
#   from lower levels or from its own cycles. For each level holding pending locations,
#   lowest first, every pending location of the level recomputes *in parallel* from its
#   predecessors' current values (``relax_into``, the twin's scalar core); changed locations
#   wake their successors. A level without cycles is done after one round; a cycle reached
#   for the first time restarts from empty (as in the twin, so the iteration from empty
#   reaches the least fixed point) and iterates until no member changes. Round bound: one
#   round per level with pending work, plus, per cycle, at most (number of members + 1)
#   rounds: every minimal element comes from a simple path inside the cycle, and a round
#   extends paths by one arc. Each round costs three launches and two host synchronisations
#   (the work list's size and the slots' total), so the device edge-wise strategy is
#   latency-bound on deep graphs: it is the fallback for graphs whose Psi does not fit.
#
# Kernels are Numba ``@cuda.jit`` throughout: each is a thin shell that indexes and calls the
# scalar core shared with the CPU twins, and each runs under the simulator.

#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


@njit(cache=True, nogil=True, inline="always")
def gather_target(l2, m, W, srcs, t_ptr, t_src, t_pair, sum_ptr, count, sums, dense_A, F_ptr,
                  F_ts, slot, C, cand):
    """The closure strategy for one target ``l2``: ``frontier( s(t) : l1 reaches l2, t in
    F(l1), s in Psi[l1, l2] )`` into ``slot[:n]``, sorted; returns ``n``, or -1 when the
    antichain would need more than ``C`` rows (the caller retries with more room). ``srcs``
    lists the locations with a non-empty ``F`` (dense layout). Scalar core of the device
    gather; the CPU twin runs the same loops with a growing buffer."""
    K = W - m
    L = F_ptr.shape[0] - 1
    n = 0
    if dense_A > 0:
        for i in range(srcs.shape[0]):
            l1 = srcs[i]
            k = count[l1, l2]
            base = (l1 * L + l2) * dense_A
            for j in range(base, base + k):
                for f in range(F_ptr[l1], F_ptr[l1 + 1]):
                    if n == C:
                        return -1
                    apply_into(sums[j], F_ts[f], cand, m, K)
                    n = antichain_insert(slot, n, cand, m, W)
    else:
        for q in range(t_ptr[l2], t_ptr[l2 + 1]):
            l1 = t_src[q]
            p = t_pair[q]
            for j in range(sum_ptr[p], sum_ptr[p + 1]):
                for f in range(F_ptr[l1], F_ptr[l1 + 1]):
                    if n == C:
                        return -1
                    apply_into(sums[j], F_ts[f], cand, m, K)
                    n = antichain_insert(slot, n, cand, m, W)
    sort_rows_with(slot, n, W, cand)
    return n


@njit(cache=True, nogil=True)
def scc_levels(order, scc, in_ptr, in_src, n_scc):
    """``int64[n_scc]``: the longest-path depth of every strongly connected component in the
    DAG of components (0 for a component without inputs from others). Locations are visited
    in ``order``, where every member of an upstream component comes before every member of a
    downstream one, so a component's inputs are final when it is reached. O(L + A)."""
    level = np.zeros(n_scc, np.int64)
    for l in order:
        c = scc[l]
        for a in range(in_ptr[l], in_ptr[l + 1]):
            cu = scc[in_src[a]]
            if cu != c and level[cu] + 1 > level[c]:
                level[c] = level[cu] + 1
    return level


def edgewise_levels(order, scc, scc_ptr, in_ptr, in_src):
    """Host-side preparation of the device edge-wise strategy, once per graph: a dict with
    ``loc_level int64[L]``, ``level_ptr``/``level_members`` (locations grouped by level,
    CSR), ``cyclic uint8[C]`` (component has more than one member), and the host lists
    ``level_ptr_host`` and ``level_cyclic`` (per level: does it hold a cycle). NumPy arrays;
    the backend copies them to its device."""
    n_scc = len(scc_ptr) - 1
    sizes = np.diff(np.asarray(scc_ptr))
    level = scc_levels(np.asarray(order), np.asarray(scc), np.asarray(in_ptr),
                       np.asarray(in_src), n_scc)
    loc_level = level[np.asarray(scc)] if len(scc) else np.zeros(0, np.int64)
    n_levels = int(loc_level.max()) + 1 if len(loc_level) else 0
    members = np.argsort(loc_level, kind="stable").astype(np.int64)
    level_ptr = np.searchsorted(loc_level[members], np.arange(n_levels + 1)).astype(np.int64)
    cyclic = (sizes > 1).astype(np.uint8)
    loc_cyclic = cyclic[np.asarray(scc)] if len(scc) else np.zeros(0, np.uint8)
    level_cyclic = [bool(loc_cyclic[members[level_ptr[v]:level_ptr[v + 1]]].any())
                    for v in range(n_levels)]
    return {"loc_level": loc_level.astype(np.int64), "level_ptr": level_ptr,
            "level_members": members, "cyclic": cyclic, "n_levels": n_levels,
            "level_ptr_host": level_ptr.tolist(), "level_cyclic": level_cyclic}


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    walk = _cuda.device(walk_changes)
    relax_one = _cuda.device(relax_into)
    gather_one = _cuda.device(gather_target)
    equal = _cuda.device(segments_equal)

    @cuda.jit
    def changes_count(locs, old_ptr, old_ts, new_ptr, new_ts, cnt, no_loc, no_ts, no_diff):
        """cnt[i] <- number of frontier changes of locs[i]; thread per location (the walk
        does not write: ``no_*`` are empty arrays standing in for its outputs)."""
        i = cuda.grid(1)
        if i < locs.shape[0]:
            cnt[i] = walk(locs[i], old_ptr, old_ts, new_ptr, new_ts, old_ts.shape[1], no_loc,
                          no_ts, no_diff, 0, False)

    @cuda.jit
    def changes_fill(locs, old_ptr, old_ts, new_ptr, new_ts, off, c_loc, c_ts, c_diff):
        """Rows off[i]: of the output <- the changes of locs[i]; thread per location."""
        i = cuda.grid(1)
        if i < locs.shape[0]:
            walk(locs[i], old_ptr, old_ts, new_ptr, new_ts, old_ts.shape[1], c_loc, c_ts, c_diff,
                 off[i], True)

    @cuda.jit
    def relax_bound(work, F_ptr, in_ptr, in_src, cur_len, size):
        """size[i] <- rows the slot of work[i] needs: |F| + sum over in-arcs of |I(u)|, + 1
        row of work space; thread per location."""
        i = cuda.grid(1)
        if i < work.shape[0]:
            l = work[i]
            need = F_ptr[l + 1] - F_ptr[l] + 1
            for a in range(in_ptr[l], in_ptr[l + 1]):
                need += cur_len[in_src[a]]
            size[i] = need

    @cuda.jit
    def relax(work, m, F_ptr, F_ts, in_ptr, in_src, in_sum, cur_start, cur_len, pool, base, off,
              n_out, changed):
        """One Jacobi round: work[i] recomputes into its slot pool[base + off[i]:...] from the
        current values (read only: they change in ``commit``); thread per location."""
        i = cuda.grid(1)
        if i < work.shape[0]:
            l = work[i]
            W = pool.shape[1]
            a = base + off[i]
            b = base + off[i + 1] - 1
            n = relax_one(l, m, W, F_ptr, F_ts, in_ptr, in_src, in_sum, cur_start, cur_len, pool,
                          pool[a:b], pool[b])
            n_out[i] = n
            c = cur_start[l]
            changed[i] = 0 if equal(pool, a, a + n, pool, c, c + cur_len[l], W) else 1

    @cuda.jit
    def commit(work, base, off, n_out, changed, cur_start, cur_len, pending, out_ptr, out_dst):
        """A changed location takes its slot as current value and wakes its successors."""
        i = cuda.grid(1)
        if i < work.shape[0] and changed[i] != 0:
            l = work[i]
            cur_start[l] = base + off[i]
            cur_len[l] = n_out[i]
            for e in range(out_ptr[l], out_ptr[l + 1]):
                pending[out_dst[e]] = 1

    @cuda.jit
    def cycle_hits(members, pending, scc, cyclic, was_reset, hit):
        """hit[c] <- cycle c of this level has a pending member and was not restarted yet."""
        i = cuda.grid(1)
        if i < members.shape[0]:
            l = members[i]
            c = scc[l]
            if pending[l] != 0 and cyclic[c] != 0 and was_reset[c] == 0:
                hit[c] = 1

    @cuda.jit
    def cycle_reset(members, scc, hit, cur_len, pending, touched, out_ptr, out_dst):
        """Members of a hit cycle restart from empty; an old non-empty value wakes the
        member's successors (its withdrawal must reach them)."""
        i = cuda.grid(1)
        if i < members.shape[0]:
            l = members[i]
            if hit[scc[l]] != 0:
                if cur_len[l] > 0:
                    for e in range(out_ptr[l], out_ptr[l + 1]):
                        pending[out_dst[e]] = 1
                cur_len[l] = 0
                pending[l] = 1
                touched[l] = 1

    @cuda.jit
    def mark_reached(seeds, pair_ptr, pair_dst, hit):
        """hit[l2] <- 1 for every target of a seed's Psi row (ragged); thread per seed."""
        i = cuda.grid(1)
        if i < seeds.shape[0]:
            s = seeds[i]
            for p in range(pair_ptr[s], pair_ptr[s + 1]):
                hit[pair_dst[p]] = 1

    @cuda.jit
    def gather(targets, m, srcs, t_ptr, t_src, t_pair, sum_ptr, count, sums, dense_A, F_ptr,
               F_ts, slots, C, cnt):
        """Thread per target: gather_target into slot rows [i (C + 1), i (C + 1) + C), the
        last row of the slot being work space; cnt[i] = rows, or -1 on overflow."""
        i = cuda.grid(1)
        if i < targets.shape[0]:
            a = i * (C + 1)
            cnt[i] = gather_one(targets[i], m, slots.shape[1], srcs, t_ptr, t_src, t_pair, sum_ptr,
                                count, sums, dense_A, F_ptr, F_ts, slots[a:a + C], C,
                                slots[a + C])

    return types.SimpleNamespace(
        changes_count=changes_count, changes_fill=changes_fill, relax_bound=relax_bound,
        relax=relax, commit=commit, cycle_hits=cycle_hits, cycle_reset=cycle_reset,
        mark_reached=mark_reached, gather=gather)


def frontier_changes_cuda(locs, old_ptr, old_ts, new_ptr, new_ts, W, *, tpb=None):
    """CUDA version of :func:`frontier_changes`: two passes over ``locs`` (thread per
    location), ``changes_count`` then, after an exclusive scan and one **sync** for the
    output size, ``changes_fill``; both run :func:`walk_changes`, the twin's scalar core
    (Numba ``@cuda.jit``; the scan is CuPy's). Bytes: each old and new
    frontier row of ``locs`` is read twice (``16 W`` per row, once per pass, the second
    mostly from L2), each change written once (``12 + 8 W``)."""
    xp = _cuda.namespace(old_ts, new_ts)
    k = _kernels()
    q = int(locs.shape[0])
    off = xp.zeros(q + 1, xp.int64)
    _cuda.launch(k.changes_count, q, locs, old_ptr, old_ts, new_ptr, new_ts, off[1:],
                 xp.empty(0, xp.int32), xp.empty((0, W), xp.int64), xp.empty(0, xp.int64), tpb=tpb)
    off[1:] = xp.cumsum(off[1:])
    size = int(off[q])
    c_loc = xp.empty(size, xp.int32)
    c_ts = xp.empty((size, W), xp.int64)
    c_diff = xp.empty(size, xp.int64)
    _cuda.launch(k.changes_fill, q, locs, old_ptr, old_ts, new_ptr, new_ts, off, c_loc, c_ts,
                 c_diff, tpb=tpb)
    return c_loc, c_ts, c_diff


class _Pool:
    """Rows ``int64[cap, W]`` of current values and round slots; grows by doubling, so that
    appending a round's slots is amortised O(rows), and indices stay valid."""

    def __init__(self, xp, rows):
        self.xp = xp
        n, W = rows.shape
        self.rows = xp.empty((max(64, 2 * n), W), xp.int64)
        self.rows[:n] = rows
        self.used = n

    def reserve(self, k: int) -> int:
        """Room for ``k`` more rows; returns the first of them."""
        cap = self.rows.shape[0]
        if self.used + k > cap:
            grown = self.xp.empty((max(2 * cap, self.used + k), self.rows.shape[1]), self.xp.int64)
            grown[:self.used] = self.rows[:self.used]
            self.rows = grown
        return self.used


def edgewise_cuda(m, in_ptr, in_src, in_sum, out_ptr, out_dst, order, rank, scc, scc_ptr,
                  scc_members, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps, *, levels=None,
                  tpb=None):
    """CUDA version of :func:`edgewise`: same arguments and results (``steps`` a Python int).

    ``levels`` is :func:`edgewise_levels` of the graph with its arrays on the device
    (computed here if omitted). Jacobi rounds level by level (see the notes above
    :func:`gather_target`): per round, ``relax_bound`` (thread per working location), a scan
    and a **sync** for the slots' total, ``relax`` (thread per working location, writing its
    new value into a fresh slot of a growing pool), ``commit`` (thread per working location);
    per level a **sync** to find the next level with pending work, and for a level with
    cycles ``cycle_hits``/``cycle_reset`` and a **sync** per round for the work list.

    Kernel types: Numba ``@cuda.jit`` throughout (``relax`` runs :func:`relax_into`, the
    twin's scalar core); CuPy for the scans, the level minimum and the work lists.

    Bytes per recomputation: per in-arc 12 bytes of arc data and its summary row
    (``8 (1 + W)``), the predecessor's current frontier (``8 W`` per row), the new slot
    written (``8 W`` per row) and the old value compared (``8 W`` per row). Rounds: see the
    notes above :func:`gather_target`; ``rank`` and ``scc_members`` are unused (the levels
    replace the rank order). ``steps`` counts recomputations, more than the twin's (Jacobi
    rounds recompute a cycle member once per round), so ``max_steps`` binds differently.
    """
    xp = _cuda.namespace(F_ts, I_ts)
    k = _kernels()
    if levels is None:
        lv = edgewise_levels(_cuda.to_host(order), _cuda.to_host(scc), _cuda.to_host(scc_ptr),
                             _cuda.to_host(in_ptr), _cuda.to_host(in_src))
        levels = {key: (xp.asarray(v) if isinstance(v, np.ndarray) else v) for key, v in lv.items()}
    L = in_ptr.shape[0] - 1
    C = scc_ptr.shape[0] - 1
    cur_start = I_ptr[:-1].copy()
    cur_len = I_ptr[1:] - I_ptr[:-1]
    pool = _Pool(xp, I_ts)
    pending = xp.zeros(L, xp.uint8)
    pending[seeds] = 1
    touched = xp.zeros(L, xp.uint8)
    was_reset = xp.zeros(C, xp.uint8)
    loc_level, members_all = levels["loc_level"], levels["level_members"]
    level_ptr, level_cyclic = levels["level_ptr_host"], levels["level_cyclic"]
    none = levels["n_levels"]
    steps = 0
    while L:
        lv = int(xp.where(pending != 0, loc_level, none).min())
        if lv >= none:
            break
        members = members_all[level_ptr[lv]:level_ptr[lv + 1]]
        cyclic = level_cyclic[lv]
        if cyclic:
            hit = xp.zeros(C, xp.uint8)
            _cuda.launch(k.cycle_hits, members.shape[0], members, pending, scc, levels["cyclic"],
                         was_reset, hit, tpb=tpb)
            _cuda.launch(k.cycle_reset, members.shape[0], members, scc, hit, cur_len, pending,
                         touched, out_ptr, out_dst, tpb=tpb)
            was_reset |= hit
        while True:
            work = members[pending[members] != 0]
            nw = int(work.shape[0])
            if nw == 0:
                break
            steps += nw
            if steps > max_steps:
                return I_ptr, I_ts, xp.zeros(0, xp.int64), -1
            pending[work] = 0
            touched[work] = 1
            off = xp.zeros(nw + 1, xp.int64)
            _cuda.launch(k.relax_bound, nw, work, F_ptr, in_ptr, in_src, cur_len, off[1:], tpb=tpb)
            off[1:] = xp.cumsum(off[1:])
            total = int(off[nw])
            base = pool.reserve(total)
            n_out = xp.empty(nw, xp.int64)
            changed = xp.empty(nw, xp.uint8)
            _cuda.launch(k.relax, nw, work, int(m), F_ptr, F_ts, in_ptr, in_src, in_sum, cur_start,
                         cur_len, pool.rows, base, off, n_out, changed, tpb=tpb)
            _cuda.launch(k.commit, nw, work, base, off, n_out, changed, cur_start, cur_len,
                         pending, out_ptr, out_dst, tpb=tpb)
            pool.used += total
            if not cyclic:
                break
    new_ptr = xp.zeros(L + 1, xp.int64)
    new_ptr[1:] = xp.cumsum(cur_len)
    new_ts = gather_segments_cuda(new_ptr, xp.zeros(L, xp.uint8), cur_start, pool.rows,
                                  pool.rows, tpb=tpb)
    return new_ptr, new_ts, xp.flatnonzero(touched).astype(xp.int64), steps


def gather_closure_cuda(m, pair_ptr, pair_dst, sum_ptr, t_ptr, t_src, t_pair, count, sums,
                        dense_A, F_ptr, F_ts, I_ptr, I_ts, seeds, *, capacity=8, tpb=None):
    """CUDA version of :func:`gather_closure`: same arguments and results.

    Kernel type: Numba ``@cuda.jit`` (``gather`` runs :func:`gather_target`, built from the
    twin's ``apply_into``/``antichain_insert``); CuPy for the reductions and compactions.

    Launch shape: one thread per affected target (``gather``), each writing its antichain
    into a slot of ``capacity`` rows; targets that overflow are re-launched with four times
    the room until none does (a **sync** per round, for the overflow count). The affected
    targets come from ``count[seeds] > 0`` (dense; a CuPy reduction) or ``mark_reached``
    (ragged; thread per seed); their compaction is a **sync**. The new ``I`` is spliced by
    the segmented gather (one more **sync**, the output size).

    Bytes per affected target: for every source reaching it with a non-empty ``F``, its
    ``Psi`` entry (``itemsize x W`` per summary, packed) and ``F`` rows (``8 W`` each,
    shared by all targets of that source, so L2-resident), plus the dense ``count`` column
    (``L`` bytes) or the ragged pair list (``12`` bytes per pair); the output
    ``8 W`` per row. Work: O(|F(l1)| x |Psi[l1, l2]| x |I(l2)| x W) per pair, as the twin.
    """
    xp = _cuda.namespace(F_ts, I_ts)
    k = _kernels()
    L = I_ptr.shape[0] - 1
    W = F_ts.shape[1]
    dense = dense_A > 0
    if dense:
        hit = (count[seeds] > 0).any(axis=0)
    else:
        hit = xp.zeros(L, xp.uint8)
        _cuda.launch(k.mark_reached, seeds.shape[0], seeds, pair_ptr, pair_dst, hit, tpb=tpb)
    targets = xp.flatnonzero(hit).astype(xp.int64)
    nt = int(targets.shape[0])
    srcs = xp.flatnonzero(F_ptr[1:] - F_ptr[:-1]).astype(xp.int64)
    t_start = xp.zeros(nt, xp.int64)
    t_len = xp.zeros(nt, xp.int64)
    pend = xp.arange(nt, dtype=xp.int64)
    slot_rows, bufs, C = 0, [], int(capacity)
    while pend.shape[0]:
        np_ = int(pend.shape[0])
        slots = xp.empty((np_ * (C + 1), W), xp.int64)
        cnt = xp.empty(np_, xp.int64)
        _cuda.launch(k.gather, np_, targets[pend], int(m), srcs, t_ptr, t_src, t_pair, sum_ptr,
                     count, sums, int(dense_A), F_ptr, F_ts, slots, C, cnt, tpb=tpb)
        ok = xp.flatnonzero(cnt >= 0)
        t_start[pend[ok]] = slot_rows + ok * (C + 1)
        t_len[pend[ok]] = cnt[ok]
        bufs.append(slots)
        slot_rows += slots.shape[0]
        pend = pend[cnt < 0]
        C *= 4
    src1 = bufs[0] if len(bufs) == 1 else (xp.concatenate(bufs) if bufs else
                                            xp.empty((0, W), xp.int64))
    lens = I_ptr[1:] - I_ptr[:-1]
    lens[targets] = t_len
    new_ptr = xp.zeros(L + 1, xp.int64)
    new_ptr[1:] = xp.cumsum(lens)
    which = xp.zeros(L, xp.uint8)
    which[targets] = 1
    start = I_ptr[:-1].copy()
    start[targets] = t_start
    new_ts = gather_segments_cuda(new_ptr, which, start, I_ts, src1, tpb=tpb)
    return new_ptr, new_ts, targets
