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
* :func:`local_csr` and :func:`local_fixpoint` -- the *local fixpoint* of one partition (or
  of the whole graph, on the driver): the partition's edges by local source index, then
  Dijkstra from the active vertices over the edges whose target the partition owns, the
  candidates for every other target sent out. Every vertex is settled once and every edge
  scanned once: ``O((E + A) log E)`` with weights or without (no Bellman-Ford rounds), one
  task however long the paths inside the partition are. Each settled vertex is given the
  number of local edges on its shortest path from an active vertex (its *local round*), so
  the task can report its work as rounds of a nested loop.
* :func:`grow_csr` -- the driver's CSR over the whole graph (every vertex owned), kept from
  epoch to epoch: the previous epoch's CSR with its vertices renumbered (new vertices
  inserted in id order) and the epoch's edges added, in one linear pass (a counting sort,
  no comparison sort): ``O(E + V)``. Equal, array for array, to :func:`local_csr` of every
  edge so far in arrival order (the driver's Dijkstra then visits edges in the same order).

All functions take and return NumPy arrays (the loop is a Numba ``@njit(cache=True)``
function); nothing here imports ``engine`` or ``spark_plugin``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["UNREACHED_INT", "unreached", "csr_by_source", "merge_csr", "relax", "min_per_vertex",
           "improve", "local_csr", "local_fixpoint", "LocalResult", "sorted_distinct",
           "grow_csr", "unit_weights"]

#: The distance of an unreached vertex when distances are hop counts (``int64``).
UNREACHED_INT = np.iinfo(np.int64).max


def unreached(dtype) -> np.generic:
    """The distance an unreached vertex holds: ``inf`` (float) or :data:`UNREACHED_INT`."""
    dtype = np.dtype(dtype)
    return dtype.type(np.inf) if dtype.kind == "f" else dtype.type(UNREACHED_INT)


def sorted_distinct(*arrays) -> np.ndarray:
    """The distinct values of ``arrays`` (int64), sorted: a sort and a mask. (``np.unique``
    without ``return_*`` is hash-based since NumPy 2.3 and, on int64 ids, about 40 times
    slower than this: 1 s against 25 ms for 360,000 ids.)"""
    x = np.sort(np.concatenate([np.asarray(a, np.int64).ravel() for a in arrays]))
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


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


def local_csr(owned: np.ndarray, src: np.ndarray, dst: np.ndarray, w: np.ndarray):
    """The edges ``src -> dst`` (every ``src`` one of ``owned``) by local source index.

    Parameters
    ----------
    owned : int64[n]
        The vertices the partition owns, sorted and distinct: local index ``i`` is
        ``owned[i]``.
    src, dst, w : arrays of one length
        The partition's edges; every source is owned, a target may be anyone's.

    Returns
    -------
    (indptr, tloc, tglob, weights)
        The edges of local vertex ``i`` are ``indptr[i]:indptr[i + 1]`` (int64[n + 1]); per
        edge the target's local index (``-1``: not owned here), its vertex id, its weight.

    Raises
    ------
    ValueError
        A source is not owned.
    """
    owned = np.asarray(owned, np.int64)
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    n = len(owned)
    si = np.searchsorted(owned, src)
    if len(src) and (si.max() >= n or not np.array_equal(owned[si], src)):
        raise ValueError("an edge's source is not among the partition's vertices")
    order = np.argsort(si, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(si, minlength=n), out=indptr[1:])
    tglob = dst[order]
    ti = np.minimum(np.searchsorted(owned, tglob), max(n - 1, 0))
    tloc = np.where((n > 0) & (owned[ti] == tglob) if n else np.zeros(len(tglob), bool),
                    ti, -1).astype(np.int64)
    return indptr, tloc, tglob, np.asarray(w)[order]


@njit(cache=True, nogil=True)
def _grow_csr(indptr, targets, weights, at, si, di, w, out_indptr, out_t, out_w, unit):
    """Fill ``out_*`` (``out_indptr`` zeroed, of length ``n + 1``): old vertex ``v``'s edges
    become new vertex ``at[v]``'s, targets renumbered by ``at``, followed by the new edges
    ``si -> di`` in their order. ``unit``: no weights (``weights``, ``w``, ``out_w`` are
    not read or written)."""
    n_old = indptr.shape[0] - 1
    n = out_indptr.shape[0] - 1
    for v in range(n_old):
        out_indptr[at[v] + 1] += indptr[v + 1] - indptr[v]
    for j in range(si.shape[0]):
        out_indptr[si[j] + 1] += 1
    for v in range(n):
        out_indptr[v + 1] += out_indptr[v]
    cur = out_indptr[:n].copy()
    for v in range(n_old):
        a = at[v]
        p = cur[a]
        for e in range(indptr[v], indptr[v + 1]):
            out_t[p] = at[targets[e]]
            if not unit:
                out_w[p] = weights[e]
            p += 1
        cur[a] = p
    for j in range(si.shape[0]):
        p = cur[si[j]]
        out_t[p] = di[j]
        if not unit:
            out_w[p] = w[j]
        cur[si[j]] = p + 1


def grow_csr(csr, n: int, si: np.ndarray, di: np.ndarray, w: np.ndarray | None,
             at: np.ndarray | None = None):
    """The driver's CSR of the whole graph (vertex ``i``: the ``i``-th smallest id) with the
    edges ``si[j] -> di[j]`` of weight ``w[j]`` added.

    Parameters
    ----------
    csr : tuple or None
        ``(indptr, targets, weights)`` of the edges so far over the previous vertices (``None``:
        no edges yet; ``weights`` ``None``: every edge weighs 1).
    n : int
        Vertices now (``si`` and ``di`` index them).
    si, di, w : arrays of one length
        The new edges by vertex index, in arrival order; ``w`` ``None``: every edge weighs 1
        (hop counts: no weight array is written, :func:`unit_weights` stands for it).
    at : int64[n_old], optional
        The index now of each previous vertex (increasing: vertices are numbered in id
        order, new ones inserted between); ``None``: the vertices did not change.

    Returns
    -------
    (indptr, targets, weights)
        ``indptr`` int64[n + 1], ``targets`` int64 (vertex indices), ``weights`` of the
        previous weights' dtype (``w``'s when ``csr`` is ``None``; ``None`` with ``w``):
        per vertex its previous
        edges in their order, then its new ones in theirs -- the arrays :func:`local_csr`
        gives for every edge so far in arrival order, with every vertex owned (its
        ``tloc`` and ``tglob`` both ``targets``).

    Raises
    ------
    ValueError
        A vertex index outside ``[0, n)``, ``at`` not of the previous vertices' length, or
        weights given for a CSR without them (or none for one with them).
    """
    si = np.ascontiguousarray(si, np.int64)
    di = np.ascontiguousarray(di, np.int64)
    unit = w is None
    if csr is None:
        indptr = np.zeros(1, np.int64)
        targets = np.zeros(0, np.int64)
        weights = None if unit else np.zeros(0, np.asarray(w).dtype)
    else:
        indptr, targets, weights = csr
        if (weights is None) != unit:
            raise ValueError("weights must be given for a weighted CSR, and only for one")
    n_old = len(indptr) - 1
    at = (np.arange(n_old, dtype=np.int64) if at is None
          else np.ascontiguousarray(at, np.int64))
    if len(at) != n_old:
        raise ValueError(f"at has {len(at)} entries for {n_old} previous vertices")
    if n_old and (at[0] < 0 or at[-1] >= n):
        raise ValueError("a previous vertex's new index is outside [0, n)")
    for x in (si, di):
        if len(x) and (x.min() < 0 or x.max() >= n):
            raise ValueError("an edge's vertex index is outside [0, n)")
    if len(si) != len(di) or (not unit and len(w) != len(si)):
        raise ValueError("si, di and w must have one length")
    m = len(targets) + len(si)
    if unit:   # placeholders, never read or written
        weights = w = out_w = np.zeros(0, np.int64)
    else:
        weights = np.ascontiguousarray(weights)
        w = np.ascontiguousarray(w, weights.dtype)
        out_w = np.empty(m, weights.dtype)
    out_indptr = np.zeros(n + 1, np.int64)
    out_t = np.empty(m, np.int64)
    _grow_csr(np.ascontiguousarray(indptr, np.int64), np.ascontiguousarray(targets, np.int64),
              weights, at, si, di, w, out_indptr, out_t, out_w, unit)
    return out_indptr, out_t, None if unit else out_w


def unit_weights(m: int) -> np.ndarray:
    """``m`` weights of 1 (``int64``) without ``m`` of them in memory: a read-only view of
    one value (stride 0), what :func:`local_fixpoint` takes for a CSR of hop counts."""
    return np.broadcast_to(np.ones(1, np.int64), (int(m),))


@njit(cache=True)
def _sift_up(hk, hv, i):
    while i > 0:
        parent = (i - 1) >> 1
        if hk[parent] <= hk[i]:
            break
        hk[parent], hk[i] = hk[i], hk[parent]
        hv[parent], hv[i] = hv[i], hv[parent]
        i = parent


@njit(cache=True)
def _sift_down(hk, hv, n):
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and hk[c + 1] < hk[c]:
            c += 1
        if hk[i] <= hk[c]:
            break
        hk[c], hk[i] = hk[i], hk[c]
        hv[c], hv[i] = hv[i], hv[c]
        i = c


@njit(cache=True, nogil=True)
def _dijkstra(indptr, tloc, tglob, weights, dist, hop, active, active_d, out_v, out_d, out_h):
    """Dijkstra from ``active`` (local indices, distances) over the local edges; ``dist`` and
    ``hop`` (``-1``: not settled this call) updated in place; one candidate per edge to a
    target not owned, written to ``out_*``. Returns how many candidates."""
    cap = active.shape[0] + tloc.shape[0] + 1
    hk = np.empty(cap, dist.dtype)
    hv = np.empty(cap, np.int64)
    n = 0
    for j in range(active.shape[0]):
        a, d = active[j], active_d[j]
        if d <= dist[a]:
            dist[a] = d
            hop[a] = 0
            hk[n], hv[n] = d, a
            _sift_up(hk, hv, n)
            n += 1
    k = 0
    while n > 0:
        d, v = hk[0], hv[0]
        n -= 1
        hk[0], hv[0] = hk[n], hv[n]
        _sift_down(hk, hv, n)
        if d > dist[v]:
            continue            # superseded by a shorter way found since
        if hop[v] < -1:
            continue            # settled already (an equal-distance duplicate)
        h = hop[v]
        hop[v] = -2 - h         # settled: -2 - hop until the end of the call
        for e in range(indptr[v], indptr[v + 1]):
            nd = d + weights[e]
            u = tloc[e]
            if u < 0:
                out_v[k], out_d[k], out_h[k] = tglob[e], nd, h
                k += 1
            elif nd < dist[u]:
                dist[u] = nd
                hop[u] = h + 1
                hk[n], hv[n] = nd, u
                _sift_up(hk, hv, n)
                n += 1
    for i in range(hop.shape[0]):
        if hop[i] < -1:
            hop[i] = -2 - hop[i]
    return k


class LocalResult(NamedTuple):
    """What :func:`local_fixpoint` found: the owned vertices whose distance went down
    (``updated``, local indices, with ``distances`` and their local round ``rounds``), the
    candidates for vertices owned elsewhere (``out_v`` sorted, ``out_d`` the smallest per
    vertex, ``out_rounds`` the local round that produced it), and ``settled_rounds``: per
    local round ``l``, how many vertices were settled at it (``l = 0``: the active ones)."""

    updated: np.ndarray
    distances: np.ndarray
    rounds: np.ndarray
    out_v: np.ndarray
    out_d: np.ndarray
    out_rounds: np.ndarray
    settled_rounds: np.ndarray


def local_fixpoint(csr, dist: np.ndarray, active: np.ndarray, active_d: np.ndarray) -> LocalResult:
    """The local fixpoint of one partition from its active vertices.

    Parameters
    ----------
    csr : tuple
        :func:`local_csr` of the partition's edges.
    dist : int64[n] or float64[n]
        The current distances of the owned vertices (:func:`unreached` where none); not
        changed (a copy is lowered).
    active : int64[A]
        Local indices of the vertices whose distance changed (each once).
    active_d : array[A]
        Their distances (at most ``dist`` there).

    Returns
    -------
    LocalResult
        The distances that went down inside the partition and the candidates that leave it:
        every vertex reachable from ``active`` through owned vertices, at its shortest
        distance by those paths (Dijkstra: each vertex settled once, each edge scanned once).
    """
    indptr, tloc, tglob, weights = csr
    dist0 = np.asarray(dist)
    d = dist0.copy()
    active = np.asarray(active, np.int64)
    active_d = np.asarray(active_d, d.dtype)
    hop = np.full(len(d), -1, np.int64)
    m = len(tloc)
    out_v = np.empty(m, np.int64)
    out_d = np.empty(m, d.dtype)
    out_h = np.empty(m, np.int64)
    k = _dijkstra(indptr, tloc, tglob, weights.astype(d.dtype, copy=False), d, hop, active,
                  active_d, out_v, out_d, out_h) if len(active) else 0
    settled = hop >= 0
    upd = np.flatnonzero(settled & (d < dist0))
    levels = np.bincount(hop[settled], minlength=1) if settled.any() else np.zeros(0, np.int64)
    out_v, out_d, out_h = out_v[:k], out_d[:k], out_h[:k]
    if k:
        order = np.lexsort((out_d, out_v))
        out_v, out_d, out_h = out_v[order], out_d[order], out_h[order]
        first = np.r_[True, out_v[1:] != out_v[:-1]]
        out_v, out_d, out_h = out_v[first], out_d[first], out_h[first]
    return LocalResult(upd, d[upd], hop[upd], out_v, out_d, out_h, levels.astype(np.int64))
