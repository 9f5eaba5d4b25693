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


# -- the driver's path (issue 33 item 4): vertices numbered once per epoch, the CSR grown ----

def scipy_dijkstra(src, dst, w, vertices, source):
    """``scipy.sparse.csgraph.dijkstra`` from ``source`` to each of ``vertices`` (inf:
    unreachable); of duplicate edges the lightest counts, a zero weight stays an edge."""
    from scipy.sparse.csgraph import csgraph_from_dense, dijkstra

    ids = np.unique(np.concatenate([vertices, [source], src, dst]))
    mat = np.full((len(ids), len(ids)), np.inf)
    np.minimum.at(mat, (np.searchsorted(ids, src), np.searchsorted(ids, dst)),
                  np.asarray(w, np.float64))
    out = dijkstra(csgraph_from_dense(mat, null_value=np.inf), directed=True,
                   indices=int(np.searchsorted(ids, source)))
    return out[np.searchsorted(ids, vertices)]


def batches_of(data, n_edges: int):
    """Cut points of ``n_edges`` edges into 1-4 consecutive batches."""
    k = data.draw(st.integers(1, 4), label="batches")
    cuts = sorted(data.draw(st.lists(st.integers(0, n_edges), min_size=k - 1,
                                     max_size=k - 1), label="cuts"))
    return [0, *cuts, n_edges]


@examples(80)
@given(weighted_edge_lists(), st.data())
def test_compact_ids_equals_numpys_unique_with_inverse(g, data):
    """Dense ids (a presence mask, two Numba passes) and sparse ones (a sort) alike."""
    from gpu_kernels.unionfind import compact_ids

    src, dst, _ = g
    extra = np.array(data.draw(st.lists(st.integers(0, 2 ** 62), max_size=3)), np.int64)
    ids, (a, b, c) = compact_ids(src, dst, extra)
    want, inv = np.unique(np.concatenate([src, dst, extra]), return_inverse=True)
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_array_equal(np.concatenate([a, b, c]), inv.reshape(-1))
    assert a.dtype == b.dtype == np.int64


@examples(80)
@given(weighted_edge_lists(), st.booleans(), st.data())
def test_grow_csr_over_batches_equals_local_csr_of_every_edge(g, unit, data):
    """Batches of edges whose new vertices are numbered in between the old ones; the CSR is
    grown after some batches only (the others wait, renumbered as vertices arrive, as a
    resumed job's replayed epochs do): each grown CSR is array for array ``local_csr`` of all
    the edges so far, in arrival order, with every vertex owned."""
    from gpu_kernels.shortest_paths import grow_csr
    from gpu_kernels.unionfind import compact_ids

    src, dst, w = g
    if unit:
        w = np.ones(len(src), np.int64)
    vertices, csr, at, pending = np.zeros(0, np.int64), None, None, []
    cuts = batches_of(data, len(src))
    for lo, hi in zip(cuts, cuts[1:]):
        grown, (at_now, si, di) = compact_ids(vertices, src[lo:hi], dst[lo:hi])
        if len(grown) != len(vertices):
            if csr is not None:
                at = at_now if at is None else at_now[at]
            pending = [(at_now[a], at_now[b], x) for a, b, x in pending]
        vertices = grown
        pending.append((si, di, w[lo:hi]))
        if hi < len(src) and data.draw(st.booleans(), label="wait"):
            continue
        si, di, x = (np.concatenate(c) for c in zip(*pending))
        csr = grow_csr(csr, len(vertices), si, di, None if unit else x, at=at)
        at, pending = None, []
        indptr, targets, weights = csr
        ref = local_csr(np.arange(len(vertices)), np.searchsorted(vertices, src[:hi]),
                        np.searchsorted(vertices, dst[:hi]), w[:hi])
        np.testing.assert_array_equal(indptr, ref[0])
        np.testing.assert_array_equal(targets, ref[1])
        np.testing.assert_array_equal(targets, ref[2])
        if unit:
            assert weights is None
        else:
            np.testing.assert_array_equal(weights, ref[3])
            assert weights.dtype == w.dtype


@examples(80)
@given(weighted_edge_lists(), st.data())
def test_driver_dijkstra_over_grown_csrs_equals_scipys_dijkstra(g, data):
    """The driver's epochs as the job runs them: per batch the vertices numbered, the CSR
    grown, then Dijkstra (``local_fixpoint``, every vertex owned, hop counts with
    :func:`unit_weights`) from the reached sources of the batch's edges, starting at the
    last distances: every vertex at scipy's Dijkstra distance after every batch."""
    from gpu_kernels.shortest_paths import grow_csr, unit_weights
    from gpu_kernels.unionfind import compact_ids

    src, dst, w = g
    unit = w.dtype.kind == "i"
    source = int(data.draw(st.sampled_from(np.concatenate([src, dst, [0]]).tolist()),
                           label="source"))
    vertices = np.array([source], np.int64)
    dist = np.zeros(1, w.dtype)
    csr = None
    cuts = batches_of(data, len(src))
    for e, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        grown, (at, si, di) = compact_ids(vertices, src[lo:hi], dst[lo:hi])
        d = np.full(len(grown), unreached(w.dtype), w.dtype)
        d[at] = dist
        vertices, dist = grown, d
        csr = grow_csr(csr, len(vertices), si, di, None if unit else w[lo:hi],
                       at=None if csr is None else at)
        indptr, targets, weights = csr
        weights = unit_weights(len(targets)) if weights is None else weights
        seeds = np.searchsorted(vertices, [source]) if e == 0 else np.unique(si)
        seeds = seeds[dist[seeds] != unreached(w.dtype)]
        res = local_fixpoint((indptr, targets, targets, weights), dist, seeds, dist[seeds])
        assert len(res.out_v) == 0   # every target is owned
        dist[res.updated] = res.distances
        expect = scipy_dijkstra(src[:hi], dst[:hi], w[:hi], vertices, source)
        np.testing.assert_allclose(as_float(dist), expect)


def test_unit_weights_give_the_same_local_fixpoint_as_ones():
    """Hop counts without a weight array: the same result, round for round."""
    from gpu_kernels.shortest_paths import unit_weights

    rng = np.random.default_rng(3)
    s, d = rng.integers(0, 200, 2000), rng.integers(0, 200, 2000)
    csr = local_csr(np.arange(200), s, d, np.ones(2000, np.int64))
    dist = np.full(200, unreached(np.int64), np.int64)
    dist[s[0]] = 0
    a = local_fixpoint(csr, dist, np.array([s[0]]), np.zeros(1, np.int64))
    b = local_fixpoint(csr[:3] + (unit_weights(len(csr[1])),), dist, np.array([s[0]]),
                       np.zeros(1, np.int64))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not unit_weights(5).flags.writeable and unit_weights(5).tolist() == [1] * 5


def test_grow_csr_refuses_bad_indices_and_mixed_weights():
    from gpu_kernels.shortest_paths import grow_csr

    one = np.array([0]), np.array([1])
    with pytest.raises(ValueError, match="outside"):
        grow_csr(None, 1, *one, None)
    csr = grow_csr(None, 2, *one, np.ones(1))
    with pytest.raises(ValueError, match="weights must be given"):
        grow_csr(csr, 2, *one, None)
    with pytest.raises(ValueError, match="entries for 2 previous"):
        grow_csr(csr, 3, *one, np.ones(1), at=np.array([0]))
    with pytest.raises(ValueError, match="one length"):
        grow_csr(csr, 2, np.array([0, 1]), np.array([1]), np.ones(2))
