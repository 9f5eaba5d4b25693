"""A graph's location structure as flat arrays: the form every batched kernel reads.

Each element of an edge's summary antichain becomes one *arc* ``src -> dst`` carrying one
summary row (see ``gpu_kernels.summary_rows``). Arcs are kept twice in CSR form, grouped by
destination (``in_*``, for gathering into a location) and by source (``out_*``, for pushing
downstream). ``order`` is a reverse postorder of a depth-first search: along every arc that is
not a back edge of that search, the source comes first, so processing locations in this order
settles acyclic parts in one sweep and only cycles need repeating.

>>> from engine.core.workload import example_graph
>>> ga = GraphArrays.from_graph(example_graph())
>>> ga.L, ga.m, ga.K, int(ga.in_ptr[-1])
(8, 1, 1, 9)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_kernels.summary_rows import pack_summaries, unpack_summary_row

from engine.core.graph import Graph, _strongly_connected
from engine.core.summary import Summary

__all__ = ["GraphArrays"]


@dataclass(frozen=True)
class GraphArrays:
    """Flat arrays of a :class:`~engine.core.graph.Graph`.

    Attributes
    ----------
    L, m, K : int
        Locations, outer width, largest depth; timestamps are ``int64[n, m + K]``.
    depth : int64[L]
    in_ptr : int64[L + 1]
        Arcs into location ``l`` are ``in_ptr[l]:in_ptr[l + 1]``.
    in_src : int32[A]
        Source location of each incoming arc.
    in_sum : int64[A, 1 + m + K]
        Summary row of each incoming arc.
    out_ptr, out_dst, out_sum
        The same arcs grouped by source.
    order : int32[L]
        Locations in reverse postorder (sources of non-back arcs first).
    rank : int32[L]
        Position of each location in ``order``. Every arc between different strongly
        connected components goes from a lower to a higher rank, and all members of an
        upstream component rank below all members of a downstream one.
    scc : int64[L]
        Strongly connected component of each location.
    scc_ptr, scc_members : int64[C + 1], int64[L]
        Members of component ``c`` are ``scc_members[scc_ptr[c]:scc_ptr[c + 1]]``; a component
        with more than one member is a cycle (locations have no self-arcs).
    """

    L: int
    m: int
    K: int
    depth: np.ndarray
    in_ptr: np.ndarray
    in_src: np.ndarray
    in_sum: np.ndarray
    out_ptr: np.ndarray
    out_dst: np.ndarray
    out_sum: np.ndarray
    order: np.ndarray
    rank: np.ndarray
    scc: np.ndarray
    scc_ptr: np.ndarray
    scc_members: np.ndarray

    @property
    def width(self) -> int:
        """Timestamp row width ``m + K``."""
        return self.m + self.K

    @classmethod
    def from_graph(cls, graph: Graph) -> "GraphArrays":
        m, K, L = graph.m, graph.max_depth, graph.num_locations
        src, dst, sums = [], [], []
        for e in graph.edges:
            for s in e.summaries:
                src.append(e.src)
                dst.append(e.dst)
                sums.append(s)
        src = np.asarray(src, dtype=np.int32)
        dst = np.asarray(dst, dtype=np.int32)
        rows = pack_summaries(sums, m, K)
        by_dst = np.argsort(dst, kind="stable")
        by_src = np.argsort(src, kind="stable")
        in_ptr = np.zeros(L + 1, dtype=np.int64)
        np.add.at(in_ptr, dst.astype(np.int64) + 1, 1)
        out_ptr = np.zeros(L + 1, dtype=np.int64)
        np.add.at(out_ptr, src.astype(np.int64) + 1, 1)
        order = _reverse_postorder(L, np.cumsum(out_ptr), dst[by_src])
        rank = np.empty(L, dtype=np.int32)
        rank[order] = np.arange(L, dtype=np.int32)
        adj = [[] for _ in range(L)]
        for a, b in zip(src.tolist(), dst.tolist()):
            adj[a].append(b)
        scc = np.asarray(_strongly_connected(adj), dtype=np.int64).reshape(-1)
        members = np.argsort(scc, kind="stable").astype(np.int64)
        scc_ptr = np.zeros(int(scc.max(initial=-1)) + 2, dtype=np.int64)
        np.add.at(scc_ptr, scc + 1, 1)
        return cls(L, m, K, np.array([l.depth for l in graph.locations], dtype=np.int64),
                   np.cumsum(in_ptr), src[by_dst], rows[by_dst].reshape(-1, 1 + m + K),
                   np.cumsum(out_ptr), dst[by_src], rows[by_src].reshape(-1, 1 + m + K),
                   order, rank, scc, np.cumsum(scc_ptr), members)

    def summary(self, row, src: int, dst: int) -> Summary:
        """The :class:`Summary` of a summary row on a path from ``src`` to ``dst``."""
        return Summary(*unpack_summary_row(row, self.m, int(self.depth[src]), int(self.depth[dst])))


def _reverse_postorder(L: int, out_ptr: np.ndarray, out_dst: np.ndarray) -> np.ndarray:
    """Reverse postorder of an iterative DFS over all locations, roots in id order."""
    seen = np.zeros(L, dtype=bool)
    post = []
    for root in range(L):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, int(out_ptr[root]))]
        while stack:
            v, i = stack[-1]
            if i < out_ptr[v + 1]:
                stack[-1] = (v, i + 1)
                w = int(out_dst[i])
                if not seen[w]:
                    seen[w] = True
                    stack.append((w, int(out_ptr[w])))
            else:
                stack.pop()
                post.append(v)
    return np.asarray(post[::-1], dtype=np.int32)
