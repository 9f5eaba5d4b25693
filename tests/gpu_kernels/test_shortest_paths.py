"""gpu_kernels.shortest_paths: relaxation rounds over partitioned CSRs reach scipy's distances.

Edges are split over a few partitions by source (as the Spark job splits them) and some of them
arrive in a second batch (:func:`merge_csr`); Bellman-Ford rounds of :func:`relax` per partition
and :func:`improve` on the driver, from a source, must end at
``scipy.sparse.csgraph.shortest_path`` on every vertex (unreached ones included), and the
previous distances must be a valid start after new edges (insertions only). The same holds
for the job's partition-local fixpoints (:func:`local_fixpoint` per partition, vertices placed
by ``v % P`` or by :mod:`gpu_kernels.locality`).
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpu_kernels.locality import bfs_order, range_parts
from gpu_kernels.shortest_paths import (UNREACHED_INT, csr_by_source, improve, local_csr,
                                        local_fixpoint, merge_csr, relax, unreached)
from strategies import examples, weighted_edge_lists
from graph_cases import scipy_distances


def run_rounds(parts, vertices, dist, active_v, active_d):
    """Relax until no distance goes down; returns the number of rounds."""
    rounds = 0
    while len(active_v):
        cand = [relax(csr, active_v[active_v % len(parts) == p],
                      active_d[active_v % len(parts) == p]) for p, csr in enumerate(parts)]
        active_v, active_d = improve(vertices, dist, np.concatenate([c[0] for c in cand]),
                                     np.concatenate([c[1] for c in cand]))
        rounds += 1
    return rounds


def as_float(dist):
    out = dist.astype(np.float64)
    if dist.dtype.kind == "i":
        out[dist == UNREACHED_INT] = np.inf
    return out


@examples(60)
@given(weighted_edge_lists(), st.integers(1, 3), st.data())
def test_rounds_over_partitions_reach_scipys_distances_and_survive_insertions(g, P, data):
    src, dst, w = g
    cut = data.draw(st.integers(0, len(src)), label="edges of the first batch")
    vertices = np.unique(np.concatenate([src, dst, [0]]))
    source = int(data.draw(st.sampled_from(vertices.tolist()), label="source"))
    dist = np.full(len(vertices), unreached(w.dtype), w.dtype)
    dist[np.searchsorted(vertices, source)] = 0

    def split(s, d, x):
        return [(s[s % P == p], d[s % P == p], x[s % P == p]) for p in range(P)]
    parts = [csr_by_source(*e) for e in split(src[:cut], dst[:cut], w[:cut])]
    run_rounds(parts, vertices, dist, np.array([source], np.int64), np.zeros(1, w.dtype))
    first_v = np.unique(np.concatenate([src[:cut], dst[:cut], [source]]))
    expect = scipy_distances(src[:cut], dst[:cut], w[:cut], first_v, source)
    np.testing.assert_allclose(as_float(dist[np.searchsorted(vertices, first_v)]), expect)
    # the second batch: the sources of new edges that are reached start the next rounds
    parts = [merge_csr(c, *e) for c, e in zip(parts, split(src[cut:], dst[cut:], w[cut:]))]
    starts = np.unique(src[cut:])
    starts = starts[dist[np.searchsorted(vertices, starts)] != unreached(w.dtype)]
    run_rounds(parts, vertices, dist, starts, dist[np.searchsorted(vertices, starts)])
    np.testing.assert_allclose(as_float(dist),
                               scipy_distances(src, dst, w, vertices, source))


def test_merge_csr_equals_the_csr_of_all_edges():
    src = np.array([5, 1, 5, 3], np.int64)
    dst = np.array([1, 2, 3, 4], np.int64)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    whole = csr_by_source(src, dst, w)
    merged = merge_csr(csr_by_source(src[:2], dst[:2], w[:2]), src[2:], dst[2:], w[2:])
    assert whole[0].tolist() == merged[0].tolist() == [1, 3, 5]
    for x, y in zip(whole, merged):
        assert np.array_equal(x, y)


def test_relax_keeps_the_smallest_candidate_per_target_and_skips_unknown_vertices():
    csr = csr_by_source(np.array([1, 1, 2], np.int64), np.array([3, 4, 3], np.int64),
                        np.array([5, 1, 1], np.int64))
    v, d = relax(csr, np.array([1, 2, 9], np.int64), np.array([0, 2, 0], np.int64))
    assert v.tolist() == [3, 4] and d.tolist() == [3, 1]
    empty = relax(csr, np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(empty[0]) == 0 and empty[1].dtype == np.int64


def test_improve_rejects_an_unknown_vertex_and_lowers_only_where_smaller():
    vertices = np.array([1, 3, 4], np.int64)
    dist = np.array([0, 5, UNREACHED_INT], np.int64)
    v, d = improve(vertices, dist, np.array([3, 4, 3], np.int64), np.array([6, 2, 7], np.int64))
    assert v.tolist() == [4] and d.tolist() == [2] and dist.tolist() == [0, 5, 2]
    with pytest.raises(ValueError, match="not among the vertices"):
        improve(vertices, dist, np.array([2], np.int64), np.array([1], np.int64))
    assert dist.tolist() == [0, 5, 2]


def local_rounds(parts, vertices, owner, dist, active_v, active_d):
    """The Spark job's global rounds, without Spark: per partition :func:`local_fixpoint`
    from its share of the active vertices, then the driver's merge -- lowered distances
    first, then the candidates, whose lowered vertices are the next active set. Returns the
    number of rounds; checks the local-round counts each task reports."""
    rounds = 0
    while len(active_v):
        upd, cand = [], []
        for p, (owned, csr) in enumerate(parts):
            mine = owner[np.searchsorted(vertices, active_v)] == p
            oi = np.searchsorted(vertices, owned)
            res = local_fixpoint(csr, dist[oi], np.searchsorted(owned, active_v[mine]),
                                 active_d[mine])
            # every settled vertex but the active ones came round the local loop once
            assert res.settled_rounds[:1].sum() <= mine.sum()
            assert len(res.updated) <= res.settled_rounds.sum()
            upd.append((owned[res.updated], res.distances))
            cand.append((res.out_v, res.out_d))
        improve(vertices, dist, np.concatenate([u[0] for u in upd]),
                np.concatenate([u[1] for u in upd]))
        active_v, active_d = improve(vertices, dist, np.concatenate([c[0] for c in cand]),
                                     np.concatenate([c[1] for c in cand]))
        rounds += 1
    return rounds


@examples(60)
@given(weighted_edge_lists(), st.integers(1, 3), st.booleans(), st.data())
def test_local_fixpoints_over_partitions_reach_scipys_distances_and_survive_insertions(
        g, P, locality, data):
    """Partition-local Dijkstra plus global rounds (the Spark path of the job), vertices
    placed by ``v % P`` or by the locality partitioner, edges in two batches: every vertex
    at scipy's distance after each batch."""
    src, dst, w = g
    cut = data.draw(st.integers(0, len(src)), label="edges of the first batch")
    vertices = np.unique(np.concatenate([src, dst, [0]]))
    source = int(data.draw(st.sampled_from(vertices.tolist()), label="source"))
    dist = np.full(len(vertices), unreached(w.dtype), w.dtype)
    dist[np.searchsorted(vertices, source)] = 0
    si, di = np.searchsorted(vertices, src), np.searchsorted(vertices, dst)
    if locality:
        owner = range_parts(bfs_order(len(vertices), si[:cut], di[:cut]),
                            np.ones(len(vertices)), P)
    else:
        owner = (vertices % P).astype(np.int32)

    def build(k):
        parts = []
        for p in range(P):
            owned = vertices[owner == p]
            mine = owner[si[:k]] == p
            parts.append((owned, local_csr(owned, src[:k][mine], dst[:k][mine], w[:k][mine])))
        return parts
    local_rounds(build(cut), vertices, owner, dist, np.array([source], np.int64),
                 np.zeros(1, w.dtype))
    first_v = np.unique(np.concatenate([src[:cut], dst[:cut], [source]]))
    expect = scipy_distances(src[:cut], dst[:cut], w[:cut], first_v, source)
    np.testing.assert_allclose(as_float(dist[np.searchsorted(vertices, first_v)]), expect)
    starts = np.unique(src[cut:])
    starts = starts[dist[np.searchsorted(vertices, starts)] != unreached(w.dtype)]
    local_rounds(build(len(src)), vertices, owner, dist, starts,
                 dist[np.searchsorted(vertices, starts)])
    np.testing.assert_allclose(as_float(dist),
                               scipy_distances(src, dst, w, vertices, source))


def test_one_partition_finishes_a_long_path_in_one_round_and_counts_its_local_rounds():
    """Dijkstra settles each vertex once: a 10,000-vertex path owned by one partition is one
    global round; its local rounds are the path's hops (vertex k settled at local round k)."""
    n = 10_000
    owned = np.arange(n, dtype=np.int64)
    csr = local_csr(owned, owned[:-1], owned[1:], np.ones(n - 1, np.int64))
    dist = np.full(n, unreached(np.int64), np.int64)
    dist[0] = 0
    res = local_fixpoint(csr, dist, np.array([0]), np.array([0], np.int64))
    assert res.updated.tolist() == list(range(1, n)) and res.distances.tolist() == list(range(1, n))
    assert res.rounds.tolist() == list(range(1, n))
    assert res.settled_rounds.tolist() == [1] * n and len(res.out_v) == 0
    assert dist[1] == unreached(np.int64)                  # the caller's array is not changed


def test_local_csr_refuses_a_source_the_partition_does_not_own():
    with pytest.raises(ValueError, match="source is not among the partition's vertices"):
        local_csr(np.array([0, 2]), np.array([1]), np.array([2]), np.ones(1))
