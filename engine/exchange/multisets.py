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

__all__ = ["Table", "PointstampOrder", "justified", "covered"]

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


def _keys(loc, ts) -> np.ndarray:
    """One opaque key per row ``(loc, ts)``: the row's big-endian bytes, whose byte order is
    the numeric lexicographic order of ``(loc, ts)`` (every entry is non-negative)."""
    ts = np.asarray(ts)
    a = np.empty((len(loc), ts.shape[1] + 1), ">i8")
    a[:, 0] = loc
    a[:, 1:] = ts
    return a.view(np.dtype((np.void, 8 * a.shape[1]))).reshape(-1)


def _sorted_rows(loc, ts) -> bool:
    """Whether rows ``(loc, ts)`` are in strictly increasing lexicographic order."""
    if len(loc) < 2:
        return True
    k = np.column_stack([np.asarray(loc, np.int64), ts])
    d = k[1:] - k[:-1]
    nz = d != 0
    first = nz.argmax(axis=1)
    return bool(nz.any(axis=1).all() and (d[np.arange(len(d)), first] > 0).all())


def _lookup(t: Table, q_loc, q_ts) -> np.ndarray:
    """``int64[q]``: the count of each query pointstamp in the table (0 where absent).
    Binary search of the queries' keys among the table's (a consolidated table is sorted
    already)."""
    n, q = len(t[0]), len(q_loc)
    if n == 0 or q == 0:
        return np.zeros(q, np.int64)
    tk, cnt = _keys(t[0], t[1]), t[2]
    if not _sorted_rows(t[0], t[1]):
        order = np.argsort(tk, kind="stable")
        tk, cnt = tk[order], cnt[order]
    qk = _keys(q_loc, q_ts)
    i = np.minimum(np.searchsorted(tk, qk), n - 1)
    return np.where(tk[i] == qk, cnt[i], 0).astype(np.int64)


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
        self._tracker = None     # the scratch tracker of reaches(), made on first use
        self._implied: dict = {}  # id(arrays) -> (table, frontier table): implied()

    def make_tracker(self, backend):
        """:func:`engine.make_tracker` for this graph; a batched one (``cpu``, ``cuda``)
        shares this order's :class:`~engine.batched.graph_arrays.GraphArrays` instead of
        building its own (a system of ``K`` workers makes ``2 K + 2`` trackers)."""
        from engine.batched.backend import Backend, make_tracker, resolve_backend
        chosen, _why = resolve_backend(backend)
        if chosen in (Backend.CPU, Backend.CUDA):
            return make_tracker(self.graph, backend, arrays=self.ga)
        return make_tracker(self.graph, backend)

    #: Up to this many active pointstamps (whose ``Psi`` rows it needs) and this many
    #: (query, active pointstamp) pairs, :meth:`reaches` asks :meth:`below`.
    DIRECT_ACTIVE, DIRECT_PAIRS = 64, 1 << 14

    def reaches(self, t: Table, q_loc, q_ts, *, strict: bool, implied=None) -> np.ndarray:
        """``bool[q]``: whether some pointstamp with a positive count in ``t`` is at or before
        each query pointstamp (``strict``: strictly before, so not the query itself).

        The same answer as ``below(t, ...) > 0`` (``strict``), or that or the query being in
        ``t`` (not ``strict``), computed through frontiers when there are many pairs: a
        scratch batched tracker takes ``t``'s positive part, its implied frontiers are read
        (:func:`covered`: a pointstamp has one at or before it exactly when the implied
        frontier at its location has an element at or before its time), and it gives the
        counts back. Cost: two tracker batches and ``O(q * antichain)``, instead of a
        could-result-in scan of every active location per query. A query that is itself in
        ``t`` is ambiguous for ``strict`` (the frontier element may be itself) and asks
        :meth:`below`. ``implied``, if given, is a function returning ``t``'s implied
        frontier table, kept by the caller (a worker's tracker of its ``caps``).
        """
        q = len(q_loc)
        act = t[2] > 0
        n = int(act.sum())
        if q == 0 or n == 0:
            return np.zeros(q, bool)
        q_loc, q_ts = np.asarray(q_loc, np.int32), np.ascontiguousarray(q_ts, dtype=np.int64)
        if n <= self.DIRECT_ACTIVE and q * n <= self.DIRECT_PAIRS:
            ok = self.below(t, q_loc, q_ts) > 0
            return ok if strict else ok | (_lookup(_positive(t), q_loc, q_ts) > 0)
        pos = _positive(t)
        f_loc, f_ts = implied() if implied is not None else self.implied(t)
        ok = covered(f_loc, f_ts, q_loc, q_ts, self.graph.m)
        if strict:
            amb = np.flatnonzero(ok & (_lookup(pos, q_loc, q_ts) > 0))
            if len(amb):
                # q is in t, so q's own time is in the frontier at its location: a frontier
                # element strictly before it comes from another pointstamp (no cycle maps a
                # time below itself); one equal to it may be q's alone -- ask the kernel
                hit = covered(f_loc, f_ts, q_loc[amb], q_ts[amb], self.graph.m, strict=True)
                if not hit.all():
                    more = amb[~hit]
                    hit[~hit] = self.below(t, q_loc[more], q_ts[more]) > 0
                ok[amb] = hit
        return ok

    #: How many tables' implied frontiers :meth:`implied` remembers.
    CACHE = 8

    def implied(self, t: Table) -> tuple[np.ndarray, np.ndarray]:
        """The implied frontiers of ``t``'s positive part at every location, as a frontier
        table ``(loc int32[n], ts int64[n, W])``: through the scratch tracker (it takes the
        counts and gives them back). The last :attr:`CACHE` tables' answers are kept, by
        identity of their arrays (tables are never changed in place: a worker's ``caps`` is a
        new table after every change), so the guards and the policy of one worker's step
        share one computation."""
        key = tuple(id(a) for a in t)
        hit = self._implied.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], t)):
            return hit[1]
        pos = _positive(t)
        if self._tracker is None:
            self._tracker = self.make_tracker("cpu")
        tr = self._tracker
        tr.update_arrays(*pos)
        try:
            out = tr.frontier_table()
        finally:
            tr.update_arrays(pos[0], pos[1], -pos[2])
        if len(self._implied) >= self.CACHE:
            self._implied.pop(next(iter(self._implied)))
        self._implied[key] = (t, out)
        return out

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


def justified(order: PointstampOrder, caps: Table, m: Table, caps_implied=None) -> int:
    """The paper's ``justified C M``, with ``C`` = ``caps``: every positive count of ``M`` at
    ``p`` is justified by a negative count of ``M`` strictly before ``p`` (``supp``), or by a
    positive count of ``C`` strictly before ``p``, or by ``M(p) < C(p)``.

    Returns the index (into ``m``) of the first positive row that is not justified, or -1
    when ``M`` is justified. ``caps_implied``: a function returning ``caps``'s implied frontier
    table, if the caller keeps one (:meth:`PointstampOrder.reaches`).
    """
    pos = np.flatnonzero(m[2] > 0)
    if not len(pos):
        return -1
    q_loc, q_ts = m[0][pos], m[1][pos]
    neg = m[0], m[1], -m[2]                  # M's negative entries, as positive counts
    ok = order.reaches(neg, q_loc, q_ts, strict=True)
    rest = np.flatnonzero(~ok)
    ok[rest] = order.reaches(caps, q_loc[rest], q_ts[rest], strict=True, implied=caps_implied)
    ok |= m[2][pos] < _lookup(caps, q_loc, q_ts)
    bad = pos[~ok]
    return int(bad[0]) if len(bad) else -1


def covered(f_loc, f_ts, q_loc, q_ts, m: int, *, strict: bool = False) -> np.ndarray:
    """``bool[q]``: for each query pointstamp ``(q_loc[i], q_ts[i])``, whether some row of the
    frontier table ``(f_loc, f_ts)`` (sorted by location) at the *same* location is at or
    before it (``strict``: and not equal to it) in the timestamp order (outer coordinates
    componentwise, loop counters lexicographically; docs/semantics.md 2.2). Vectorised over all
    (query, element) pairs of a location, which antichains keep few.

    >>> f_loc, f_ts = np.array([0, 0, 1]), np.array([[0, 5], [1, 0], [2, 2]])
    >>> covered(f_loc, f_ts, np.array([0, 0, 1, 2]), np.array([[0, 6], [0, 4], [3, 2], [9, 9]]), 1)
    array([ True, False,  True, False])
    """
    q_loc = np.asarray(q_loc)
    q = len(q_loc)
    out = np.zeros(q, bool)
    if q == 0 or len(f_loc) == 0:
        return out
    lo = np.searchsorted(f_loc, q_loc, "left")
    cnt = np.searchsorted(f_loc, q_loc, "right") - lo
    total = int(cnt.sum())
    if total == 0:
        return out
    qi = np.repeat(np.arange(q), cnt)
    fi = lo[qi] + np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    a, b = np.asarray(f_ts)[fi], np.asarray(q_ts)[qi]
    ok = (a[:, :m] <= b[:, :m]).all(axis=1)
    if a.shape[1] > m:
        d = a[:, m:] - b[:, m:]
        nz = d != 0
        first = nz.argmax(axis=1)
        ok &= ~nz.any(axis=1) | (d[np.arange(total), first] < 0)
    if strict:
        ok &= (a != b).any(axis=1)
    out[qi[ok]] = True
    return out


def _rows(graph: Graph, order: PointstampOrder, rows) -> Table:
    """``rows = (loc, ts, diff)`` as checked, padded columns (not yet consolidated)."""
    from engine.batched.batch_arrays import batch_arrays
    loc, ts, diff = rows
    return batch_arrays(graph, order.ga.depth, loc, ts, diff)
