"""The interface every frontier tracker offers: batches of count changes in, frontier changes out.

A tracker holds signed pointstamp counts for a :class:`~engine.core.graph.Graph` and, for every
location, the implied frontier those counts determine (docs/semantics.md 2.5). ``update`` takes a
batch ``(loc, ts, diff)``, validates it whole (a rejected batch changes nothing), applies it,
and returns the frontier changes as ``(loc, ts, +1/-1)`` rows, like timely's pushed changes.
"""

from __future__ import annotations

import abc
import time
from typing import Sequence

from engine.core.antichain import frontier_delta
from engine.core.counts import FrontierChange, PointstampCounts
from engine.core.graph import Graph
from engine.core.timestamp import Timestamp

__all__ = ["FrontierTracker"]


class FrontierTracker(abc.ABC):
    """Base class of the trackers that maintain implied frontiers.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) a batch that would leave any count negative.
    """

    def __init__(self, graph: Graph, *, strict: bool = False):
        self.graph = graph
        self.counts = PointstampCounts(graph, strict=strict)
        self._frontiers: list[list[Timestamp]] = [[] for _ in range(graph.num_locations)]
        #: Seconds the last ``update`` spent taking the changes in and bringing frontiers up to date.
        self.last_timing = {"apply_s": 0.0, "propagate_s": 0.0}

    @property
    def strict(self) -> bool:
        return self.counts.strict

    def update(self, loc: Sequence[int], ts: Sequence[Sequence[int]], diff: Sequence[int]) -> list[FrontierChange]:
        """Apply a batch of count changes; return the frontier changes, sorted.

        Raises a :class:`~engine.errors.BatchError` subclass (and changes nothing) when a row
        is malformed or, in strict mode, a count would become negative.
        """
        start = time.perf_counter()
        delta = self.counts.stage(loc, ts, diff)
        self.counts.commit(delta)
        applied = time.perf_counter()
        changed = self._refresh(delta)
        out = []
        for l in changed:
            new = self._recompute_frontier(l)
            for t, d in frontier_delta(self._frontiers[l], new).items():
                out.append(FrontierChange(l, t, d))
            self._frontiers[l] = new
        out.sort()
        self.last_timing = {"apply_s": applied - start, "propagate_s": time.perf_counter() - applied}
        return out

    def frontier(self, loc: int) -> list[Timestamp]:
        """The implied frontier at ``loc``, sorted."""
        return list(self._frontiers[loc])

    def frontiers(self) -> list[list[Timestamp]]:
        """The implied frontier of every location, indexed by location."""
        return [list(f) for f in self._frontiers]

    @abc.abstractmethod
    def _refresh(self, delta: dict) -> list[int]:
        """Bring internal state up to date after ``delta`` was committed to the counts;
        return the locations whose frontier may have changed."""

    @abc.abstractmethod
    def _recompute_frontier(self, loc: int) -> list[Timestamp]:
        """The current implied frontier at ``loc`` (after ``_refresh``), sorted."""
