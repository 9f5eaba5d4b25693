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

The orders tried (:func:`locality_partition`), each ``O(m log m)`` over the epoch's new edges
on the driver (which holds them already: it reads and ships them), the one with the fewer
cut edges taken:

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
('id', 3, [24, 25, 25, 25])
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
    """The partition of each edge (``part``, int64 in ``[0, P)``), the order that gave it
    (``"id"`` or ``"first"``) and its number of cut edges (endpoints in different ranges;
    self-loops are never cut) among ``edges``."""

    part: np.ndarray
    order: str
    cut_edges: int
    edges: int

    @property
    def cut(self) -> float:
        """The share of cut edges (0 for no edges)."""
        return self.cut_edges / self.edges if self.edges else 0.0


def _ranges(ka: np.ndarray, kb: np.ndarray, P: int) -> tuple[np.ndarray, int]:
    """Partition of each edge whose endpoints have order keys ``ka``, ``kb``: ``P`` ranges of
    the key holding equal numbers of edges (by the smaller key; edges with equal keys stay
    in one range), each edge in the range of its smaller key. Returns the partitions and the
    number of edges whose endpoints fall into different ranges."""
    lo = np.minimum(ka, kb)
    m = lo.shape[0]
    srt = np.sort(lo)
    bounds = srt[(np.arange(1, P) * m) // P] if m else np.zeros(0, lo.dtype)
    part = np.searchsorted(bounds, lo, side="right")
    cut = int(np.count_nonzero(part != np.searchsorted(bounds, np.maximum(ka, kb),
                                                       side="right")))
    return part.astype(np.int64), cut


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
        edges (``id`` on a tie).

    Notes
    -----
    ``O(m log m)``: a sort of the keys per order, and ``np.unique`` of the endpoints for
    ``first``; about 60 bytes per edge of temporary memory.
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    if P < 1:
        raise ValueError(f"P must be positive, got {P}")
    m = a.shape[0]
    part, cut = _ranges(a, b, P)
    best = LocalityPartition(part, "id", cut, m)
    if m and cut:
        # first appearance in the stream a[0], b[0], a[1], b[1], ...
        ends = np.empty(2 * m, np.int64)
        ends[0::2], ends[1::2] = a, b
        _, first, inv = np.unique(ends, return_index=True, return_inverse=True)
        pos = first[inv.reshape(-1)]
        part, cut = _ranges(pos[0::2], pos[1::2], P)
        if cut < best.cut_edges:
            best = LocalityPartition(part, "first", cut, m)
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
