"""Naiad's scheduler view: occurrence counts, precursor counts, deliverable notifications.

Every pointstamp with a positive occurrence count is *active*. The *precursor count* of an
active pointstamp is the number of other active pointstamps that could-result-in it; the
*frontier of active pointstamps* is those whose precursor count is 0, and a notification
``(v, t)`` may be delivered when no other active pointstamp could-result-in it (docs/semantics.md 2.5;
Naiad, Murray et al., SOSP 2013). Precursor counts are maintained incrementally as
pointstamps become active or inactive, as in Naiad.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> nv = NaiadTracker(g)
>>> nv.update([g.source(1, 0), g.target(3, 0)], [(0, 0), (0, 5)], [1, 1])
>>> nv.active_frontier()
[(1, (0, 0))]
>>> nv.precursor_count(g.target(3, 0), (0, 5)), nv.may_deliver(g.target(3, 0), (0, 5))
(1, False)
"""

from __future__ import annotations

from numbers import Integral
from typing import Sequence

from engine.core.closure import Closure, closure, could_result_in
from engine.core.counts import Pointstamp, PointstampCounts
from engine.errors import BatchError, UnknownLocationError
from engine.core.graph import Graph
from engine.core.timestamp import check_timestamp

__all__ = ["NaiadTracker"]


class NaiadTracker:
    """Occurrence and precursor counts over a graph's pointstamps.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) a batch that would leave any count negative.
    psi : Closure, optional
        A precomputed reference closure of ``graph``.
    """

    def __init__(self, graph: Graph, *, strict: bool = False, psi: Closure | None = None):
        self.graph = graph
        self.psi = psi if psi is not None else closure(graph)
        self.counts = PointstampCounts(graph, strict=strict)
        self._precursors: dict[Pointstamp, int] = {}

    def update(self, loc: Sequence[int], ts: Sequence[Sequence[int]], diff: Sequence[int]) -> None:
        """Apply a batch of occurrence-count changes (validated whole; rejected batches change nothing)."""
        delta = self.counts.stage(loc, ts, diff)
        was_active = {p: self.counts.count(*p) > 0 for p in delta}
        self.counts.commit(delta)
        for p in sorted(delta):
            now = self.counts.count(*p) > 0
            if now and not was_active[p]:
                self._activate(p)
            elif was_active[p] and not now:
                self._deactivate(p)

    def _cri(self, p: Pointstamp, q: Pointstamp) -> bool:
        return could_result_in(self.psi, self.graph, p[0], p[1], q[0], q[1])

    def _activate(self, p: Pointstamp) -> None:
        self._precursors[p] = sum(1 for q in self._precursors if self._cri(q, p))
        for q in self._precursors:
            if q != p and self._cri(p, q):
                self._precursors[q] += 1

    def _deactivate(self, p: Pointstamp) -> None:
        del self._precursors[p]
        for q in self._precursors:
            if self._cri(p, q):
                self._precursors[q] -= 1

    def _pointstamp(self, loc: int, ts: Sequence[int]) -> Pointstamp:
        g = self.graph
        if isinstance(loc, bool) or not isinstance(loc, Integral) or not 0 <= loc < g.num_locations:
            raise UnknownLocationError(f"location {loc!r} does not exist (the graph has locations "
                                       f"0..{g.num_locations - 1})")
        loc = int(loc)
        return loc, check_timestamp(ts, g.m, g.depth(loc), g.m + g.max_depth,
                                    where=g.describe(loc))

    def occurrence_count(self, loc: int, ts: Sequence[int]) -> int:
        """The accumulated occurrence count of ``(loc, ts)``."""
        return self.counts.count(*self._pointstamp(loc, ts))

    def precursor_count(self, loc: int, ts: Sequence[int]) -> int:
        """Number of *other* active pointstamps that could-result-in ``(loc, ts)``."""
        p = self._pointstamp(loc, ts)
        if p in self._precursors:
            return self._precursors[p]
        return sum(1 for q in self._precursors if self._cri(q, p))

    def active_frontier(self) -> list[Pointstamp]:
        """The active pointstamps with precursor count 0, sorted."""
        return sorted(p for p, c in self._precursors.items() if c == 0)

    def may_deliver(self, loc: int, ts: Sequence[int]) -> bool:
        """Whether a notification at ``(loc, ts)`` may be delivered now: no other active
        pointstamp could-result-in it."""
        return self.precursor_count(loc, ts) == 0

    def could_result_in(self, loc1: Sequence[int], ts1: Sequence[Sequence[int]],
                        loc2: Sequence[int], ts2: Sequence[Sequence[int]]) -> list[bool]:
        """Batched could-result-in: row ``i`` is ``(loc1[i], ts1[i]) <=cri (loc2[i], ts2[i])``."""
        n = len(loc1)
        if not len(ts1) == len(loc2) == len(ts2) == n:
            raise BatchError(f"query columns differ in length: {n}, {len(ts1)}, {len(loc2)}, {len(ts2)}")
        out = []
        for i in range(n):
            p = self._pointstamp(loc1[i], ts1[i])
            q = self._pointstamp(loc2[i], ts2[i])
            out.append(self._cri(p, q))
        return out
