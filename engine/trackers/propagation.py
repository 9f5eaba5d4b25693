"""Timely-style local propagation (pts / imp / worklists), no ``Psi`` needed.

The algorithm of the verified paper, section 5 (Figure 6). Per location the tracker keeps
the pointstamp counts ``pts``, the implications ``imp`` and a worklist ``work``, all signed
multisets. A change to ``pts[l]`` that moves its frontier adds that frontier change to
``work[l]``. ``propagate`` takes a timestamp ``t`` from some worklist such that no worklist
holds anything earlier, moves its count into ``imp[l]``, and pushes the change of
``frontier(imp[l])``, mapped through each out-edge's summaries, into the successors'
worklists. When all worklists are empty, ``frontier(imp[l])`` is the implied frontier at
every ``l`` (the paper's theorem; tested) -- provided every cycle advances time: on a
zero-advance cycle allowed with ``allow_zero_cycles=True`` implications can keep each other
alive after the pointstamps are gone, which the ``Psi``-based trackers do not do.

"Earliest first" across locations of different loop depths uses the lexicographic order of
the timestamp tuples (outer coordinates, then counters), a linear extension of the order
that compares the outer coordinates and the common prefix of the counters. Every pending
retraction on a cycle is thus processed before the additions it would otherwise chase
around the loop forever.
"""

from __future__ import annotations

import heapq

from engine.core.antichain import frontier, frontier_delta
from engine.errors import ConvergenceError
from engine.core.graph import Graph
from engine.core.timestamp import Timestamp
from engine.trackers.base import FrontierTracker

__all__ = ["PropagationTracker"]


class PropagationTracker(FrontierTracker):
    """Incremental frontiers by local propagation along the location graph's edges.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) a batch that would leave any count negative.
    max_steps : int
        Budget of ``propagate`` steps per batch; exceeding it raises
        :class:`~engine.errors.ConvergenceError` (a bug guard, never hit on valid graphs).

    Attributes
    ----------
    imp : list[dict[Timestamp, int]]
        Implications per location (positive counts only, an invariant of the algorithm).
    """

    def __init__(self, graph: Graph, *, strict: bool = False, max_steps: int = 10_000_000):
        super().__init__(graph, strict=strict)
        self.max_steps = max_steps
        L = graph.num_locations
        self.imp: list[dict[Timestamp, int]] = [{} for _ in range(L)]
        self._work: list[dict[Timestamp, int]] = [{} for _ in range(L)]
        self._heap: list[tuple[Timestamp, int]] = []

    def _refresh(self, delta: dict) -> list[int]:
        # change_multiplicity: the pts frontier's change at each touched location enters work.
        # The counts were already committed; recover each touched location's old frontier.
        m = self.graph.m
        by_loc: dict[int, dict[Timestamp, int]] = {}
        for (l, t), d in delta.items():
            by_loc.setdefault(l, {})[t] = d
        for l, changes in by_loc.items():
            now = self.counts.at(l)
            before = dict(now)
            for t, d in changes.items():
                old = before.get(t, 0) - d
                if old:
                    before[t] = old
                else:
                    before.pop(t, None)
            self._push(l, frontier_delta(frontier(before, m), frontier(now, m)))
        return self._propagate()

    def _push(self, loc: int, delta: dict[Timestamp, int]) -> None:
        work = self._work[loc]
        for t, d in delta.items():
            n = work.get(t, 0) + d
            if n:
                if t not in work:
                    heapq.heappush(self._heap, (t, loc))
                work[t] = n
            else:
                work.pop(t, None)

    def _propagate(self) -> list[int]:
        m, out_edges = self.graph.m, self.graph.out_edges
        touched = set()
        steps = 0
        while self._heap:
            t, l = heapq.heappop(self._heap)
            n = self._work[l].pop(t, 0)
            if n == 0:
                continue  # stale heap entry: that work cancelled out
            steps += 1
            if steps > self.max_steps:
                raise ConvergenceError(f"local propagation exceeded {self.max_steps} steps")
            imp = self.imp[l]
            old = frontier(imp, m)
            c = imp.get(t, 0) + n
            if c:
                imp[t] = c
            else:
                del imp[t]
            change = frontier_delta(old, frontier(imp, m))
            if not change:
                continue
            touched.add(l)
            for edge in out_edges[l]:
                mapped: dict[Timestamp, int] = {}
                for s in edge.summaries:
                    for u, d in change.items():
                        v = s.apply(u)
                        mapped[v] = mapped.get(v, 0) + d
                self._push(edge.dst, mapped)
        return sorted(touched)

    def _recompute_frontier(self, loc: int) -> list[Timestamp]:
        return frontier(self.imp[loc], self.graph.m)
