"""Signed multisets of pointstamps as consolidated columns, ordered by could-result-in: what the
exchange protocol's guards and checks compute on (``docs/exchange.md``).

Pointstamps are ordered by could-result-in (``(l, t) <= (l', t')`` iff some summary ``s`` in
``Psi[l, l']`` has ``s(t) <= t'``), a partial order on graphs without zero-advance cycles
(:class:`PointstampOrder`). Every multiset is columnar and consolidated, as in the batched
engine: ``loc int32[n]``, ``ts int64[n, m+K]`` (padded), ``cnt int64[n]`` sorted by
``(loc, ts)``, no zero rows (a :data:`Table`). :func:`justified` is the paper's predicate on
them that ``send_upd`` must keep.
"""

from __future__ import annotations

import numpy as np

from engine.core.graph import Graph
from engine.errors import ExchangeError

__all__ = ["Table", "PointstampOrder", "justified"]

#: A signed multiset of pointstamps: ``(loc int32[n], ts int64[n, W], cnt int64[n])``, sorted by
#: ``(loc, ts)``, consolidated (no zero rows).
Table = tuple


def _empty(W: int) -> Table:
    return np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64)


def _zsum(*parts: Table, signs=None) -> Table:
    """The sum of signed multisets (each optionally negated): consolidated."""
    from gpu_kernels.consolidate import consolidate
    signs = signs or (1,) * len(parts)
    loc = np.concatenate([p[0] for p in parts]).astype(np.int32)
    ts = np.ascontiguousarray(np.concatenate([p[1] for p in parts]), dtype=np.int64)
    cnt = np.concatenate([p[2] * s for p, s in zip(parts, signs)]).astype(np.int64)
    return consolidate(loc, ts, cnt)


def _take(t: Table, mask) -> Table:
    return t[0][mask], t[1][mask], t[2][mask]


def _lookup(t: Table, q_loc, q_ts) -> np.ndarray:
    """``int64[q]``: the count of each query pointstamp in the table (0 where absent)."""
    n, q = len(t[0]), len(q_loc)
    if n == 0 or q == 0:
        return np.zeros(q, np.int64)
    keys = np.concatenate([np.column_stack([t[0], t[1]]),
                           np.column_stack([np.asarray(q_loc, np.int64), q_ts])])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    vals = np.zeros(int(inv.max()) + 1, np.int64)
    vals[inv[:n]] = t[2]
    return vals[inv[n:]]


def _positive(t: Table) -> Table:
    return _take(t, t[2] > 0)


def _magnitude(t: Table) -> Table:
    return t[0], t[1], np.abs(t[2])


class PointstampOrder:
    """Could-result-in between the pointstamps of one graph, for whole arrays of them.

    ``Psi`` rows are computed on first use and kept (:class:`engine.batched.queries.PsiRowCache`);
    one instance can serve every worker of a system.

    Parameters
    ----------
    graph : Graph
        Without zero-advance cycles (else could-result-in is not a partial order and the
        protocol's guarantees do not hold): :class:`~engine.errors.ExchangeError`.
    """

    #: Up to this many queries run on one thread (starting the thread pool costs more).
    SERIAL = 1 << 16

    def __init__(self, graph: Graph):
        from engine.batched.graph_arrays import GraphArrays
        from engine.batched.queries import PsiRowCache
        cycle = graph.find_zero_advance_cycle()
        if cycle is not None:
            raise ExchangeError(
                "the exchange protocol needs could-result-in to be a partial order, but the "
                "graph has a cycle that does not advance time: "
                + " -> ".join(graph.describe(l) for l in cycle))
        self.graph = graph
        self.ga = GraphArrays.from_graph(graph)
        self.width = graph.m + graph.max_depth
        self._rows = PsiRowCache(self.ga)

    def below(self, t: Table, q_loc, q_ts) -> np.ndarray:
        """``int64[q]``: how many *other* pointstamps with a positive count in ``t`` are
        ``<=`` (so, being other, ``<``) each query pointstamp."""
        from gpu_kernels.precursors import precursor_counts, precursor_counts_serial
        q = len(q_loc)
        act = t[2] > 0
        if q == 0 or not act.any():
            return np.zeros(q, np.int64)
        act_locs = np.unique(t[0][act]).astype(np.int64)
        row_of, pair_ptr, pair_dst, sum_ptr, sums = self._rows.csr(act_locs)
        seg_ptr = np.searchsorted(t[0], np.arange(self.ga.L + 1)).astype(np.int64)
        t_ts, q_loc, q_ts = np.ascontiguousarray(t[1]), np.asarray(q_loc, np.int32), \
            np.ascontiguousarray(q_ts)
        kernel = precursor_counts if q > self.SERIAL else precursor_counts_serial
        return kernel(row_of, pair_ptr, pair_dst, sum_ptr, sums, self.ga.m, act_locs, seg_ptr,
                      t_ts, t[2], q_loc, q_ts)

    def name(self, loc: int, row) -> str:
        """``'(target b[2].in1 (depth 1), (0, 0))'``: a pointstamp for messages."""
        w = self.graph.width(int(loc))
        return f"({self.graph.describe(int(loc))}, {tuple(int(x) for x in row[:w])})"


def justified(order: PointstampOrder, caps: Table, m: Table) -> int:
    """The paper's ``justified C M``, with ``C`` = ``caps``: every positive count of ``M`` at
    ``p`` is justified by a negative count of ``M`` strictly before ``p`` (``supp``), or by a
    positive count of ``C`` strictly before ``p``, or by ``M(p) < C(p)``.

    Returns the index (into ``m``) of the first positive row that is not justified, or -1
    when ``M`` is justified.
    """
    pos = np.flatnonzero(m[2] > 0)
    if not len(pos):
        return -1
    q_loc, q_ts = m[0][pos], m[1][pos]
    neg = m[0], m[1], -m[2]                  # M's negative entries, as positive counts
    ok = order.below(neg, q_loc, q_ts) > 0
    ok |= order.below(caps, q_loc, q_ts) > 0
    ok |= m[2][pos] < _lookup(caps, q_loc, q_ts)
    bad = pos[~ok]
    return int(bad[0]) if len(bad) else -1


def _rows(graph: Graph, order: PointstampOrder, rows) -> Table:
    """``rows = (loc, ts, diff)`` as checked, padded columns (not yet consolidated)."""
    from engine.batched.batch_arrays import batch_arrays
    loc, ts, diff = rows
    return batch_arrays(graph, order.ga.depth, loc, ts, diff)
