"""Antichains: sets of mutually incomparable elements, of summaries and of timestamps.

An antichain keeps only minimal elements: inserting an element that something present is
``<=`` to changes nothing; inserting a new minimal element removes those it is ``<=`` to.
``frontier`` is the antichain of a signed multiset of timestamps (docs/semantics.md 2.5).

>>> from engine.core.summary import Summary
>>> a = SummaryAntichain()
>>> a.insert(Summary.product(1, 0)), a.insert(Summary.product(0, 1)), a.insert(Summary.product(1, 1))
(True, True, False)
>>> sorted((s.d_out, s.d_cnt) for s in a)
[((0,), (1,)), ((1,), (0,))]
>>> frontier({(0, 3): 2, (1, 1): 1, (0, 1): -1, (2, 5): 4}, m=1)
[(0, 3), (1, 1)]
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping

from engine.core.summary import Summary
from engine.core.timestamp import Timestamp, minimal

__all__ = ["SummaryAntichain", "frontier", "frontier_delta"]


class SummaryAntichain:
    """A mutable antichain of summaries (all of one shape) under the summary order.

    Cost: ``insert`` is O(size) comparisons.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Summary] = ()):
        self._items: list[Summary] = []
        for s in items:
            self.insert(s)

    def insert(self, s: Summary) -> bool:
        """Add ``s`` unless an element ``<= s`` is present; return whether it was added."""
        for x in self._items:
            if x.le(s):
                return False
        self._items = [x for x in self._items if not s.le(x)]
        self._items.append(s)
        return True

    def __contains__(self, s: Summary) -> bool:
        return s in self._items

    def __iter__(self) -> Iterator[Summary]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def sorted(self) -> tuple[Summary, ...]:
        """The elements in the deterministic order of :meth:`Summary.sort_key`."""
        return tuple(sorted(self._items, key=Summary.sort_key))


def frontier(counts: Mapping[Timestamp, int], m: int) -> list[Timestamp]:
    """Minimal elements among the timestamps with a positive count, sorted."""
    return minimal((t for t, c in counts.items() if c > 0), m)


def frontier_delta(before: Iterable[Timestamp], after: Iterable[Timestamp]) -> dict[Timestamp, int]:
    """``after - before`` as a signed multiset of two antichains: ``+1`` new, ``-1`` gone."""
    before, after = set(before), set(after)
    delta = {t: 1 for t in after - before}
    delta.update({t: -1 for t in before - after})
    return delta
