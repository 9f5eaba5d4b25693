"""Implied frontiers straight from the definition: the oracle every other tracker is tested against.

``implied(P, l) = frontier({ s(t) : (l', t) has P-count > 0, s in Psi[l', l] })``
(docs/semantics.md 2.5). After each batch the tracker recomputes this set for every location that a
location with a changed active set can reach.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> tr = ImpliedFrontierTracker(g)
>>> changes = tr.update([g.source(1, 0)], [(0, 0)], [1])
>>> tr.frontier(g.target(2, 1)), tr.frontier(g.target(2, 0))
([(0, 0)], [(0, 1)])
"""

from __future__ import annotations

from engine.core.closure import Closure, closure
from engine.core.counts import PointstampCounts
from engine.core.graph import Graph
from engine.core.timestamp import Timestamp, minimal
from engine.trackers.base import FrontierTracker

__all__ = ["implied_frontier", "ImpliedFrontierTracker"]


def implied_frontier(graph: Graph, psi: Closure, counts: PointstampCounts, loc: int) -> list[Timestamp]:
    """The implied frontier at ``loc`` for the counts, sorted."""
    candidates = []
    for l1 in range(graph.num_locations):
        summaries = psi[l1].get(loc, ())
        if not summaries:
            continue
        for t, c in counts.at(l1).items():
            if c > 0:
                candidates.extend(s.apply(t) for s in summaries)
    return minimal(candidates, graph.m)


class ImpliedFrontierTracker(FrontierTracker):
    """Reference tracker: implied frontiers recomputed from ``Psi`` by the definition.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) a batch that would leave any count negative.
    psi : Closure, optional
        A precomputed reference closure of ``graph``.
    max_antichain : int, optional
        Cap on the size of each ``Psi`` antichain (exceeding it is an error).
    """

    def __init__(self, graph: Graph, *, strict: bool = False, psi: Closure | None = None,
                 max_antichain: int | None = None):
        super().__init__(graph, strict=strict)
        self.psi = psi if psi is not None else closure(graph, max_antichain)

    def _refresh(self, delta: dict) -> list[int]:
        touched = {l for (l, _t) in delta}
        reach = set()
        for l in touched:
            reach.update(self.psi[l])
        return sorted(reach)

    def _recompute_frontier(self, loc: int) -> list[Timestamp]:
        return implied_frontier(self.graph, self.psi, self.counts, loc)
