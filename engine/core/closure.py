"""The path-summary closure ``Psi`` and could-result-in, computed as the definition reads.

``Psi[l1][l2]`` is the antichain of minimal summaries over all paths from ``l1`` to ``l2``
(docs/semantics.md 2.4), the empty path giving the identity in ``Psi[l][l]``. It is the all-pairs
shortest-path problem in the semiring (antichain union then minimize, composition), solved
here one source at a time by a worklist fixed point: a summary newly found at ``u`` is
extended along every edge out of ``u``; the fixed point is reached when no extension adds a
non-dominated summary. Paths may repeat locations, so cycles that reset a counter while
advancing the epoch contribute; the set stays finite because summaries form a
well-quasi-order under this order.

This is the reference implementation: plain Python, slow by design, the oracle of the tests.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> psi = closure(g)
>>> sorted((s.d_out, s.d_cnt) for s in psi[g.target(2, 0)][g.target(2, 0)])
[((0,), (0,))]
"""

from __future__ import annotations

from collections import deque

from engine.core.antichain import SummaryAntichain
from engine.errors import AntichainOverflowError, UnknownLocationError
from engine.core.graph import Graph
from engine.core.summary import Summary
from engine.core.timestamp import Timestamp, le

__all__ = ["Closure", "closure", "closure_row", "could_result_in"]

#: ``Psi`` as nested dicts: ``psi[l1][l2]`` is a sorted tuple of minimal summaries; pairs
#: without a path are absent.
Closure = dict[int, dict[int, tuple[Summary, ...]]]


def closure_row(graph: Graph, source: int, max_antichain: int | None = None) -> dict[int, tuple[Summary, ...]]:
    """``Psi[source][l]`` for every ``l`` reachable from ``source``.

    Raises
    ------
    AntichainOverflowError
        If some antichain grows past ``max_antichain``.
    """
    row: dict[int, SummaryAntichain] = {
        source: SummaryAntichain([Summary.identity(graph.depth(source), graph.m)])}
    queue = deque([(source, next(iter(row[source])))])
    while queue:
        u, s = queue.popleft()
        if s not in row[u]:
            continue  # dominated since it was queued; its extensions are dominated too
        for edge in graph.out_edges[u]:
            for label in edge.summaries:
                ext = s.then(label)
                chain = row.setdefault(edge.dst, SummaryAntichain())
                if chain.insert(ext):
                    if max_antichain is not None and len(chain) > max_antichain:
                        raise AntichainOverflowError(
                            f"Psi[{source}][{edge.dst}] ({graph.describe(source)} to "
                            f"{graph.describe(edge.dst)}) has more than max_antichain="
                            f"{max_antichain} minimal summaries; raise the cap")
                    queue.append((edge.dst, ext))
    return {l: chain.sorted() for l, chain in row.items() if len(chain)}


def closure(graph: Graph, max_antichain: int | None = None) -> Closure:
    """``Psi`` for all pairs of locations. Cost: O(L * paths explored * antichain size)."""
    return {l: closure_row(graph, l, max_antichain) for l in range(graph.num_locations)}


def could_result_in(psi: Closure, graph: Graph, l1: int, t1: Timestamp, l2: int, t2: Timestamp) -> bool:
    """``(l1, t1) <=cri (l2, t2)``: some ``s`` in ``Psi[l1][l2]`` has ``s(t1) <= t2``."""
    for loc in (l1, l2):
        if not 0 <= loc < graph.num_locations:
            raise UnknownLocationError(f"location {loc} does not exist (the graph has "
                                       f"{graph.num_locations} locations)")
    return any(le(s.apply(t1), t2, graph.m) for s in psi[l1].get(l2, ()))
