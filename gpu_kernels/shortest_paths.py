"""Kernels of the shortest-paths job (``spark_plugin.jobs.sssp.job``): one partition's edges as a CSR by
source, one relaxation round over it, and the driver's merge of candidate distances.

Distances are ``int64`` hop counts (unweighted: every edge weighs 1, unreached vertices hold
:data:`UNREACHED_INT`) or ``float64`` (weighted, non-negative weights; unreached ``inf``).

* :func:`csr_by_source` -- a partition's edges ``(src, dst, w)`` sorted by source: the
  distinct sources, their offsets, and the targets and weights in that order. ``O(n log n)``
  (a stable sort); :func:`merge_csr` adds a later epoch's edges to it the same way.
* :func:`relax` -- for each active vertex ``v`` with distance ``d`` and each edge ``v -> u``
  of weight ``w`` in the CSR, the candidate ``(u, d + w)``; candidates are reduced to the
  smallest per target before they leave the task. Cost: a binary search per active vertex
  (``O(A log S)``), then linear in the edges it touches (the Numba loop), then a sort of the
  candidates (``O(C log C)``).
* :func:`improve` -- the driver's merge: the smallest candidate per vertex against its current
  distance (``dist`` updated in place); returns the vertices whose distance went down, with
  their new distances -- the next round's active set. ``O(C log V)``.

All functions take and return NumPy arrays (the loop is a Numba ``@njit(cache=True)``
function); nothing here imports ``engine`` or ``spark_plugin``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["UNREACHED_INT", "unreached", "csr_by_source", "merge_csr", "relax", "min_per_vertex",
           "improve"]

#: The distance of an unreached vertex when distances are hop counts (``int64``).
UNREACHED_INT = np.iinfo(np.int64).max


def unreached(dtype) -> np.generic:
    """The distance an unreached vertex holds: ``inf`` (float) or :data:`UNREACHED_INT`."""
    dtype = np.dtype(dtype)
    return dtype.type(np.inf) if dtype.kind == "f" else dtype.type(UNREACHED_INT)


def csr_by_source(src: np.ndarray, dst: np.ndarray, w: np.ndarray):
    """The edges ``src[j] -> dst[j]`` of weight ``w[j]`` grouped by source.

    Returns
    -------
    (sources, offsets, targets, weights)
        ``sources`` int64[S] sorted and distinct; the edges of ``sources[k]`` are
        ``targets[offsets[k]:offsets[k + 1]]`` (int64) with ``weights`` (``w``'s dtype) in
        the same order; ``offsets`` int64[S + 1].
    """
    src = np.asarray(src, np.int64)
    order = np.argsort(src, kind="stable")
    s = src[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if len(s) else np.zeros(0, np.int64)
    offsets = np.append(starts, len(s)).astype(np.int64)
    return (s[starts].astype(np.int64), offsets,
            np.asarray(dst, np.int64)[order], np.asarray(w)[order])


def merge_csr(csr, src: np.ndarray, dst: np.ndarray, w: np.ndarray):
    """``csr`` (:func:`csr_by_source`) with the edges ``(src, dst, w)`` added."""
    sources, offsets, targets, weights = csr
    old_src = np.repeat(sources, np.diff(offsets))
    return csr_by_source(np.concatenate([old_src, np.asarray(src, np.int64)]),
                         np.concatenate([targets, np.asarray(dst, np.int64)]),
                         np.concatenate([weights, np.asarray(w, weights.dtype)]))


@njit(cache=True)
def _expand(pos, active_d, offsets, targets, weights, out_v, out_d):
    """Write one candidate per edge of every found active vertex; returns how many."""
    k = 0
    for j in range(pos.shape[0]):
        p = pos[j]
        if p < 0:
            continue
        d = active_d[j]
        for e in range(offsets[p], offsets[p + 1]):
            out_v[k] = targets[e]
            out_d[k] = d + weights[e]
            k += 1
    return k


def min_per_vertex(v: np.ndarray, d: np.ndarray):
    """The smallest ``d`` per distinct ``v``: ``(vertices sorted, distances)``."""
    if len(v) == 0:
        return np.zeros(0, np.int64), np.zeros(0, d.dtype)
    order = np.lexsort((d, v))
    v, d = v[order], d[order]
    first = np.r_[True, v[1:] != v[:-1]]
    return v[first], d[first]


def relax(csr, active_v: np.ndarray, active_d: np.ndarray):
    """One relaxation round of the active vertices over one partition's edges.

    Parameters
    ----------
    csr : tuple
        :func:`csr_by_source` of the partition's edges.
    active_v : int64[A]
        Vertices whose distance changed (each at most once); those with no edge here are
        skipped.
    active_d : int64[A] or float64[A]
        Their (finite) distances, of the weights' dtype.

    Returns
    -------
    (vertices, distances)
        One candidate per target reached, its smallest ``d + w``, targets sorted.
    """
    sources, offsets, targets, weights = csr
    active_v = np.asarray(active_v, np.int64)
    active_d = np.asarray(active_d, weights.dtype)
    if len(sources) == 0 or len(active_v) == 0:
        return np.zeros(0, np.int64), np.zeros(0, weights.dtype)
    pos = np.minimum(np.searchsorted(sources, active_v), len(sources) - 1)
    pos = np.where(sources[pos] == active_v, pos, -1).astype(np.int64)
    found = pos >= 0
    total = int((offsets[pos[found] + 1] - offsets[pos[found]]).sum())
    out_v = np.empty(total, np.int64)
    out_d = np.empty(total, weights.dtype)
    _expand(pos, active_d, offsets, targets, weights, out_v, out_d)
    return min_per_vertex(out_v, out_d)


def improve(vertices: np.ndarray, dist: np.ndarray, cand_v: np.ndarray, cand_d: np.ndarray):
    """Lower ``dist`` (of the sorted ``vertices``) to the candidates where they are smaller.

    ``cand_v`` may repeat a vertex (candidates of several tasks); every candidate vertex must
    be one of ``vertices``. ``dist`` is updated in place. Returns ``(v, d)``: the vertices
    whose distance went down (sorted) and their new distances.
    """
    v, d = min_per_vertex(np.asarray(cand_v, np.int64), np.asarray(cand_d, dist.dtype))
    if len(v) == 0:
        return v, d
    idx = np.searchsorted(vertices, v)
    if idx.max(initial=0) >= len(vertices) or not np.array_equal(vertices[idx], v):
        raise ValueError("a candidate names a vertex that is not among the vertices")
    better = d < dist[idx]
    dist[idx[better]] = d[better]
    return v[better], d[better]
