"""Where the WCC contract stage sends each edge: partitioning that keeps neighbours together.

The contract stage runs a union-find per Spark task (:func:`gpu_kernels.unionfind.uf_stars`):
whatever one task holds of a component is contracted to one star before anything is
shuffled, and the rounds that follow only have to join what the partitioning cut apart.
Hash partitioning (:attr:`Partitioner.HASH`, by ``least(a, b)``) puts two edges of a path
that share a vertex into different tasks ``1 - 1/P`` of the time, so a task contracts
almost nothing and the large-star / small-star loop does all the work: ``~log n`` rounds.
:attr:`Partitioner.LOCALITY` (the default) orders the vertices cheaply, cuts the order into
``P`` ranges holding equal numbers of edges, and sends every edge to the range of its
endpoint that comes first: a task gets a connected stretch of the graph wherever the order
follows the graph, and only the *cut edges* -- whose endpoints fall into different ranges
-- are left for the loop.

The ranges and the cut are :mod:`gpu_kernels.locality`'s; its breadth-first order would,
for WCC, be solving the problem on the driver. The orders tried here
(:func:`locality_partition`) are sorts, ``O(m log m)`` over the epoch's new edges on the
driver (which holds them already: it reads and ships them), the one with the fewer cut
edges taken:

* ``id`` -- the vertex ids themselves: graphs whose ids follow their structure (a path or a
  grid numbered in order, ids assigned by a crawl);
* ``first`` -- the position at which a vertex first appears in the epoch's input: graphs
  whose *edges* arrive in an order that follows the structure (a path or a grid listed edge
  by edge, an edge list sorted by source), whatever the ids.

Where neither follows the structure (random ids in random order: R-MAT) the cut is that of
hashing, ``~1 - 1/P``, and nothing is lost. The tasks are addressed exactly: Spark's
``repartition(P, key)`` sends a row to ``pmod(murmur3(key, 42), P)``, so each range's rows
carry a key that hashes to the range's partition (:func:`hash_preimages`, Spark's
``Murmur3_x86_32.hashLong`` in NumPy).

>>> import numpy as np
>>> a, b = np.arange(99), np.arange(1, 100)          # a path, ids in order
>>> lp = locality_partition(a, b, 4)
>>> lp.order, lp.cut_edges, np.bincount(lp.part).tolist()
('id', 3, [25, 25, 25, 24])
>>> perm = np.random.default_rng(1).permutation(100)  # the same path, ids shuffled
>>> lp = locality_partition(perm[:-1], perm[1:], 4)
>>> lp.order, lp.cut_edges
('first', 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.choices import Choice

__all__ = ["Partitioner", "LocalityPartition", "locality_partition", "spark_hash_long",
           "hash_preimages"]


class Partitioner(Choice):
    """How the contract stage partitions the loop's input (``run_wcc(partitioner=)``,
    ``tfront wcc --partitioner``)."""

    LOCALITY = "locality"
    HASH = "hash"


@dataclass(frozen=True)
class LocalityPartition:
    """The partition of each edge (``part``, int64 in ``[0, P)``: its leading endpoint's),
    the order that gave it (``"id"`` or ``"first"``), its number of cut edges (endpoints in
    different partitions; a self-loop is never cut) among ``edges``, and the partition of
    each vertex (``vertex_part``, int32, indexed like ``vertices``, the sorted distinct ids).
    """

    part: np.ndarray
    order: str
    cut_edges: int
    edges: int
    vertices: np.ndarray
    vertex_part: np.ndarray

    @property
    def cut(self) -> float:
        """The share of cut edges (0 for no edges)."""
        return self.cut_edges / self.edges if self.edges else 0.0


def locality_partition(a: np.ndarray, b: np.ndarray, P: int) -> LocalityPartition:
    """Partition the edges ``(a[j], b[j])`` into ``P`` ranges of a cheap vertex order.

    Parameters
    ----------
    a, b : int64[m]
        The edges, in input order (the ``first`` order reads it).
    P : int
        The number of partitions (``>= 1``).

    Returns
    -------
    LocalityPartition
        Of the orders ``id`` and ``first`` (module docstring), the one with the fewer cut
        edges (``id`` on a tie). Each order is cut into ``P`` contiguous ranges of about
        equal numbers of edges (:func:`gpu_kernels.locality.range_parts`, each vertex
        weighing the edges it leads), and each edge goes to the range of its endpoint that
        comes first in the order (its *leader*).

    Notes
    -----
    ``O(m log m)``: one stable sort of the ``2 m`` endpoints (``np.unique`` with the first
    positions and the inverse), then ``O(m)`` per order; about 60 bytes per edge of
    temporary memory.
    """
    from gpu_kernels.locality import cut_edges, range_parts

    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    if P < 1:
        raise ValueError(f"P must be positive, got {P}")
    m = a.shape[0]
    if m == 0:
        z = np.zeros(0, np.int64)
        return LocalityPartition(z, "id", 0, 0, z, np.zeros(0, np.int32))
    ends = np.empty(2 * m, np.int64)   # the stream a[0], b[0], a[1], b[1], ...
    ends[0::2], ends[1::2] = a, b
    vertices, first, inv = np.unique(ends, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    ia, ib = inv[0::2], inv[1::2]      # vertex indices: their order is the ids'
    n = vertices.shape[0]
    best = None
    for name in ("id", "first"):
        if best is not None and best.cut_edges == 0:
            break
        order = np.arange(n) if name == "id" else np.argsort(first)
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
        lead = np.where(rank[ia] <= rank[ib], ia, ib)
        vpart = range_parts(order, np.bincount(lead, minlength=n), P)
        lp = LocalityPartition(vpart[lead].astype(np.int64), name, cut_edges(ia, ib, vpart), m,
                               vertices, vpart)
        if best is None or lp.cut_edges < best.cut_edges:
            best = lp
    return best


# -- Spark's hash partitioning, addressed exactly ---------------------------------------------

_C1, _C2, _M32 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593), np.uint64(0xFFFFFFFF)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    h = _rotl(h ^ k, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def spark_hash_long(x: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``hash(x)`` of a ``bigint`` column (``Murmur3_x86_32.hashLong``, seed 42) as
    int32, vectorised: what ``repartition(P, x)`` takes ``pmod(., P)`` of.

    >>> spark_hash_long(np.array([0, 1, -1])).tolist()   # SELECT hash(0L), hash(1L), hash(-1L)
    [-1670924195, -1712319331, -939490007]
    """
    u = np.asarray(x, np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        low = (u & _M32).astype(np.uint32)
        high = (u >> np.uint64(32)).astype(np.uint32)
        h = _mix(np.full(u.shape, seed, np.uint32), low)
        h = _mix(h, high)
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def hash_preimages(P: int) -> np.ndarray:
    """``keys[p]``: the smallest non-negative int64 that Spark's ``repartition(P, key)`` sends
    to partition ``p``, for every ``p < P`` (int64[P]).

    >>> keys = hash_preimages(4)
    >>> (spark_hash_long(keys) % 4).tolist()
    [0, 1, 2, 3]
    """
    keys = np.full(P, -1, np.int64)
    start, width = 0, 16 * P + 64
    while (keys < 0).any():
        cand = np.arange(start, start + width, dtype=np.int64)
        part = spark_hash_long(cand).astype(np.int64) % P   # Python's % is pmod
        for p in np.flatnonzero(keys < 0):
            hit = np.flatnonzero(part == p)
            if hit.size:
                keys[p] = cand[hit[0]]
        start += width
    return keys
