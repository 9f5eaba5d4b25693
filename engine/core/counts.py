"""Signed pointstamp counts, and the validation of delta batches before they touch them.

A batch is three columns of equal length: ``loc`` (location ids), ``ts`` (one timestamp per
row, ``m + depth(loc)`` coordinates or the padded ``m + K``), ``diff`` (signed count changes).
:meth:`PointstampCounts.stage` validates a whole batch and consolidates it into a delta
without changing anything; :meth:`PointstampCounts.commit` applies a staged delta. So a
rejected batch leaves every count exactly as it was.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> counts = PointstampCounts(g, strict=True)
>>> delta = counts.stage([0, 0, 3], [(0, 0), (0, 0), (1, 2)], [1, 2, -0])
>>> sorted(delta.items())
[((0, (0, 0)), 3)]
>>> counts.commit(delta)   # the locations whose active set changed
[0]
>>> counts.count(0, (0, 0))
3
"""

from __future__ import annotations

from numbers import Integral
from typing import Iterator, NamedTuple, Sequence

from engine.errors import BatchError, CountOverflowError, NegativeCountError, UnknownLocationError
from engine.core.graph import Graph
from engine.core.timestamp import Timestamp, check_timestamp

__all__ = ["Pointstamp", "FrontierChange", "PointstampCounts", "batch_length",
           "sum_overflow_error"]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

#: A location and a timestamp.
Pointstamp = tuple[int, Timestamp]


def batch_length(loc, ts, diff) -> int:
    """The number of rows of a batch ``(loc, ts, diff)``; :class:`BatchError` if the columns
    are not sequences or differ in length."""
    try:
        n = len(loc)
        if len(ts) != n or len(diff) != n:
            raise BatchError(f"batch columns differ in length: loc has {n} rows, ts "
                             f"{len(ts)}, diff {len(diff)}")
    except TypeError:
        raise BatchError("batch columns loc, ts and diff must be sequences or arrays") from None
    return n


def sum_overflow_error(graph: Graph, loc: int, ts: Timestamp, total: int) -> CountOverflowError:
    """The error for a batch whose changes to ``(loc, ts)`` sum to ``total``, outside int64:
    one message for every backend (a consolidated change must fit int64, whatever the count
    it is added to)."""
    return CountOverflowError(
        f"pointstamp ({loc}, {tuple(ts)}) at {graph.describe(loc)}: the batch's changes to it "
        f"sum to {total}, which would overflow 64 bits; batch rejected, nothing applied")


class FrontierChange(NamedTuple):
    """One change of a location's frontier: ``ts`` entered (``diff=+1``) or left (``-1``)."""

    loc: int
    ts: Timestamp
    diff: int


class PointstampCounts:
    """Signed counts of pointstamps ``(loc, ts)``; only positive counts are *active*.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) any batch that would leave a count negative.
    """

    def __init__(self, graph: Graph, *, strict: bool = False):
        self.graph = graph
        self.strict = bool(strict)
        self._by_loc: list[dict[Timestamp, int]] = [{} for _ in range(graph.num_locations)]

    def count(self, loc: int, ts: Timestamp) -> int:
        """The accumulated count of ``(loc, ts)`` (0 when never seen)."""
        return self._by_loc[loc].get(tuple(ts), 0)

    def at(self, loc: int) -> dict[Timestamp, int]:
        """The non-zero counts at ``loc`` (read-only view; do not mutate)."""
        return self._by_loc[loc]

    def items(self) -> Iterator[tuple[Pointstamp, int]]:
        """Every non-zero count, by location."""
        for loc, counts in enumerate(self._by_loc):
            for t, c in counts.items():
                yield (loc, t), c

    def active(self) -> list[Pointstamp]:
        """Pointstamps with a positive count, sorted."""
        return sorted(p for p, c in self.items() if c > 0)

    def stage(self, loc: Sequence[int], ts: Sequence[Sequence[int]], diff: Sequence[int]) -> dict[Pointstamp, int]:
        """Validate a batch and consolidate it to ``{(loc, ts): net diff}`` (zeros dropped).

        Changes nothing. Raises a :class:`~engine.errors.BatchError` subclass naming the row
        (0-based) for an unknown location, a timestamp of the wrong width or range, a
        non-integer diff, columns of unequal length, or, in strict mode, a pointstamp whose
        count would become negative; :class:`~engine.errors.CountOverflowError` when the
        batch's changes to one pointstamp sum outside int64 (the first in ``(loc, ts)``
        order, as the batched engine reports it), or a count would leave int64.
        """
        graph = self.graph
        n = batch_length(loc, ts, diff)
        L, padded = graph.num_locations, graph.m + graph.max_depth
        delta: dict[Pointstamp, int] = {}
        for row in range(n):
            l, d = loc[row], diff[row]
            if isinstance(l, bool) or not isinstance(l, Integral) or not 0 <= l < L:
                raise UnknownLocationError(f"row {row}: location {l!r} does not exist (the graph "
                                           f"has locations 0..{L - 1})")
            l = int(l)
            t = check_timestamp(ts[row], graph.m, graph.depth(l), padded,
                                where=f"row {row} ({graph.describe(l)})")
            if isinstance(d, bool) or not isinstance(d, Integral) or not INT64_MIN <= d <= INT64_MAX:
                raise BatchError(f"row {row}: diff {d!r} is not a signed 64-bit integer")
            key = (l, t)
            delta[key] = delta.get(key, 0) + int(d)
        delta = {k: v for k, v in delta.items() if v != 0}
        wide = [k for k, v in delta.items() if not INT64_MIN <= v <= INT64_MAX]
        if wide:
            l, t = min(wide)
            raise sum_overflow_error(graph, l, t, delta[(l, t)])
        for (l, t), d in delta.items():
            new = self._by_loc[l].get(t, 0) + d
            if not INT64_MIN <= new <= INT64_MAX:
                raise CountOverflowError(f"pointstamp ({l}, {t}) at {graph.describe(l)}: count "
                                         f"would overflow 64 bits ({new}); batch rejected, "
                                         f"nothing applied")
            if self.strict and new < 0:
                raise NegativeCountError(
                    f"strict mode: pointstamp ({l}, {t}) at {graph.describe(l)} would have count "
                    f"{new} (now {new - d}, batch changes it by {d}); batch rejected, nothing applied")
        return delta

    def commit(self, delta: dict[Pointstamp, int]) -> list[int]:
        """Apply a delta from :meth:`stage`; return the locations whose active set changed."""
        changed = set()
        for (l, t), d in delta.items():
            counts = self._by_loc[l]
            old = counts.get(t, 0)
            new = old + d
            if new:
                counts[t] = new
            else:
                del counts[t]
            if (old > 0) != (new > 0):
                changed.add(l)
        return sorted(changed)
