"""Partitions that keep neighbours together: a cheap vertex order cut into ranges, and a
one-pass streaming placement of later vertices.

A job that iterates to a *partition-local* fixpoint crosses partitions only along cut edges,
so its global rounds follow the number of times a shortest path crosses from one partition
to another, not the path's length. Hash partitioning cuts a path's edges half the time (all
of them with ``v % 2`` and consecutive ids); these functions cut few. ``tfront wcc``'s
locality partition (``spark_plugin.jobs.wcc.partition``) cuts its orders with
:func:`range_parts` and counts with :func:`cut_edges`; :func:`bfs_order` and :func:`ldg_parts`
placed ``tfront sssp``'s vertices on the driver until its Spark path kept them in Spark
(``spark_plugin.jobs.sssp.spark``: owners by ranges of sampled ids), and no job calls them now:

* :func:`bfs_order` -- the vertices in breadth-first order of the undirected graph, one
  component after another (each started at its smallest vertex). Neighbours land close in
  the order: a path is laid out end to end, a grid in diagonal bands. ``O(V + E)``.
* :func:`range_parts` -- that order cut into ``P`` contiguous ranges of equal weight (the
  weight of a vertex: its out-degree plus one, so each partition holds about as many edges).
* :func:`ldg_parts` -- the *linear deterministic greedy* streaming placement (Stanton and
  Kliot, KDD 2012) of vertices that arrive later: each goes to the partition holding most of
  its already placed neighbours, discounted by how full that partition is. ``O(E)``.
* :func:`cut_edges` -- how many edges join two partitions.

Arrays in, arrays out (NumPy; the loops are Numba ``@njit(cache=True)``); vertices are
indices ``0..n-1``. Nothing here imports ``engine`` or ``spark_plugin``.

>>> import numpy as np
>>> s, d = np.arange(7), np.arange(1, 8)        # a path 0 - 1 - ... - 7
>>> order = bfs_order(8, s, d)
>>> order.tolist()
[0, 1, 2, 3, 4, 5, 6, 7]
>>> parts = range_parts(order, np.ones(8), 2)
>>> parts.tolist(), cut_edges(s, d, parts)
([0, 0, 0, 0, 1, 1, 1, 1], 1)
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bfs_order", "range_parts", "ldg_parts", "cut_edges", "undirected_csr"]


def undirected_csr(n: int, src: np.ndarray, dst: np.ndarray):
    """The neighbours of each vertex ``0..n-1`` over the edges both ways: ``(indptr,
    neighbours)`` (neighbours of ``v``: ``neighbours[indptr[v]:indptr[v + 1]]``, ascending)."""
    a = np.concatenate([np.asarray(src, np.int64), np.asarray(dst, np.int64)])
    b = np.concatenate([np.asarray(dst, np.int64), np.asarray(src, np.int64)])
    order = np.lexsort((b, a))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
    return indptr, b[order]


@njit(cache=True)
def _bfs_order(indptr, nbrs, n):
    order = np.empty(n, np.int64)
    seen = np.zeros(n, np.bool_)
    head = tail = 0
    for start in range(n):
        if seen[start]:
            continue
        seen[start] = True
        order[tail] = start
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            for e in range(indptr[v], indptr[v + 1]):
                u = nbrs[e]
                if not seen[u]:
                    seen[u] = True
                    order[tail] = u
                    tail += 1
    return order


def bfs_order(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The vertices ``0..n-1`` in breadth-first order of the undirected graph ``src - dst``,
    each component from its smallest vertex, neighbours in ascending order."""
    indptr, nbrs = undirected_csr(n, src, dst)
    return _bfs_order(indptr, nbrs, n)


def range_parts(order: np.ndarray, weight: np.ndarray, P: int) -> np.ndarray:
    """Partition of each vertex (``int32[n]``, indexed by vertex): ``order`` cut into ``P``
    contiguous ranges of about equal total ``weight`` (indexed by vertex)."""
    order = np.asarray(order, np.int64)
    w = np.asarray(weight, np.float64)[order]
    parts = np.empty(len(order), np.int32)
    if not len(order):
        return parts
    before = np.cumsum(w) - w                      # weight placed before each vertex
    parts[order] = np.minimum((before * P // max(w.sum(), 1e-300)).astype(np.int64), P - 1)
    return parts


@njit(cache=True)
def _ldg(indptr, nbrs, parts, load, new, weight, capacity):
    P = load.shape[0]
    score = np.zeros(P, np.float64)
    for j in range(new.shape[0]):
        v = new[j]
        score[:] = 0.0
        for e in range(indptr[v], indptr[v + 1]):
            p = parts[nbrs[e]]
            if p >= 0:
                score[p] += 1.0
        best, best_s = 0, -1.0
        for p in range(P):
            s = score[p] * (1.0 - load[p] / capacity)
            # ties (no placed neighbour, or equal): the least loaded partition
            if s > best_s or (s == best_s and load[p] < load[best]):
                best, best_s = p, s
        parts[v] = best
        load[best] += weight[v]


def ldg_parts(parts: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray,
              P: int, slack: float = 1.1) -> np.ndarray:
    """Place the vertices whose ``parts`` is ``-1`` (in ascending order), each on the
    partition with most of its placed neighbours over ``src - dst`` (either way), weighed by
    ``1 - load / capacity`` (``capacity``: the total ``weight`` over ``P``, times
    ``slack``). Returns the completed copy of ``parts``."""
    parts = np.asarray(parts, np.int32).copy()
    n = len(parts)
    weight = np.asarray(weight, np.float64)
    indptr, nbrs = undirected_csr(n, src, dst)
    placed = parts >= 0
    load = np.bincount(parts[placed], weights=weight[placed], minlength=P)[:P].astype(np.float64)
    capacity = max(weight.sum() / P * slack, 1.0)
    _ldg(indptr, nbrs, parts, load, np.flatnonzero(~placed).astype(np.int64), weight, capacity)
    return parts


def cut_edges(src: np.ndarray, dst: np.ndarray, parts: np.ndarray) -> int:
    """How many of the edges ``src -> dst`` join vertices of two partitions."""
    parts = np.asarray(parts)
    return int(np.count_nonzero(parts[np.asarray(src, np.int64)]
                                != parts[np.asarray(dst, np.int64)]))
