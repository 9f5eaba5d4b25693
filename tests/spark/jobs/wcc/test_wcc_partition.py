"""The WCC Spark loop's rounds (issue 22, item 5): the locality partitioner, the links stage
after the contract stage, and the driver finishing the loop once its rows fit.

Labels equal scipy's on Hypothesis graphs with both partitioners, forced onto the Spark loop
(``TFRONT_WCC_DRIVER_ROWS=0``); a path and a grid numbered or listed in order converge in a
number of rounds that does not grow with their length.
"""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_kernels.unionfind import root_links, root_links_xp, uf_stars
from spark_plugin.jobs.wcc.partition import (Partitioner, hash_preimages, locality_partition,
                                             spark_hash_long)
from wcc_cases import expected_labels


# -- the partitioner, without Spark --------------------------------------------------------------

def test_a_path_in_order_is_cut_only_between_ranges():
    n, P = 1000, 4
    lp = locality_partition(np.arange(n - 1), np.arange(1, n), P)
    assert (lp.order, lp.cut_edges, lp.edges) == ("id", P - 1, n - 1)
    assert np.all(np.diff(lp.part) >= 0) and sorted(set(lp.part.tolist())) == list(range(P))
    perm = np.random.default_rng(3).permutation(n)
    lp = locality_partition(perm[:-1], perm[1:], P)     # ids shuffled, edges along the path
    assert (lp.order, lp.cut_edges) == ("first", P - 1)
    assert np.all(np.diff(lp.part) >= 0)
    order = np.random.default_rng(4).permutation(n - 1)  # and the edges shuffled too: hashing
    lp = locality_partition(perm[:-1][order], perm[1:][order], P)
    assert lp.cut > 0.2   # first appearance still pairs each edge's ends: < 1 - 1/P
    assert locality_partition(np.arange(5), np.arange(1, 6), 1).cut_edges == 0
    assert locality_partition(np.zeros(0, np.int64), np.zeros(0, np.int64), 3).cut == 0.0


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=120),
       st.integers(1, 9))
def test_every_edge_lies_in_the_range_of_its_leader_and_cuts_are_counted(edges, P):
    """The vertices' partitions are ranges of the order the result names (ids, or first
    appearance in the stream a0, b0, a1, b1, ...); each edge is in its leader's (the endpoint
    first in that order); the cut edges are those whose endpoints' partitions differ."""
    a = np.array([e[0] for e in edges], np.int64)
    b = np.array([e[1] for e in edges], np.int64)
    lp = locality_partition(a, b, P)
    assert lp.part.shape == a.shape and lp.edges == len(edges)
    assert ((lp.part >= 0) & (lp.part < P)).all()
    if not len(edges):
        return
    first = {}
    for i, v in enumerate(np.column_stack([a, b]).ravel().tolist()):
        first.setdefault(v, i)
    assert lp.vertices.tolist() == sorted(first)
    vpart = dict(zip(lp.vertices.tolist(), lp.vertex_part.tolist()))
    key = (lambda v: v) if lp.order == "id" else first.__getitem__
    by_key = [vpart[v] for v in sorted(vpart, key=key)]
    assert by_key == sorted(by_key)                      # ranges of the order
    lead = [x if key(x) <= key(y) else y for x, y in zip(a.tolist(), b.tolist())]
    assert lp.part.tolist() == [vpart[v] for v in lead]
    assert lp.cut_edges == sum(vpart[x] != vpart[y] for x, y in zip(a.tolist(), b.tolist()))


def test_range_cuts_of_a_sample_tell_structured_ids_from_random_ones():
    """A Spark source's locality verdict (``range_cuts``): a grid numbered row by row cuts
    few edges into ``P`` ranges of its ids; random ids cut about what a random partition
    cuts (``1 - 1/P``; a little less, the ranges being of the smaller ids); each range holds
    about ``1/P`` of the edges' smaller ids."""
    from spark_plugin.jobs.wcc.job import RANGE_MAX_CUT, range_cuts

    n, P = 200, 4
    ids = np.arange(n * n).reshape(n, n)
    a = np.r_[ids[:, :-1].ravel(), ids[:-1, :].ravel()]
    b = np.r_[ids[:, 1:].ravel(), ids[1:, :].ravel()]
    cuts, cut = range_cuts(a, b, P)
    assert len(cuts) == P - 1 and cut < 0.01 < RANGE_MAX_CUT * (1 - 1 / P)
    share = np.bincount(np.searchsorted(cuts, np.minimum(a, b), side="right"), minlength=P)
    assert np.all(np.abs(share / a.size - 1 / P) < 0.01)
    rng = np.random.default_rng(5)
    ra, rb = rng.integers(0, 10 ** 6, 50_000), rng.integers(0, 10 ** 6, 50_000)
    _, cut = range_cuts(ra, rb, P)
    assert 0.6 < cut <= 1 - 1 / P and cut > RANGE_MAX_CUT * (1 - 1 / P)
    assert range_cuts(np.array([5, 5]), np.array([5, 5]), 3) == ([5, 5], 0.0)   # self-loops
    assert range_cuts(np.zeros(0, np.int64), np.zeros(0, np.int64), 3) == ([], 0.0)


def test_spark_hash_of_a_long_in_numpy():
    # Spark 4's SELECT hash(x) for these bigints (Murmur3_x86_32.hashLong, seed 42)
    x = np.array([0, 1, -1, 42, 2 ** 40 + 7, -(2 ** 63)], np.int64)
    got = spark_hash_long(x)
    assert got.dtype == np.int32 and got[:3].tolist() == [-1670924195, -1712319331, -939490007]
    for P in (1, 2, 3, 7, 64):
        keys = hash_preimages(P)
        assert (spark_hash_long(keys).astype(np.int64) % P).tolist() == list(range(P))


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=80),
       st.integers(1, 6), st.randoms(use_true_random=False))
def test_links_and_pointers_of_any_contraction_give_the_components(edges, P, rnd):
    """Iteration 0 of the Spark loop without Spark, on any split of the edges: a union-find per
    part with each root's row, ``root_links`` over all rows; the links' components (scipy)
    with every pointer re-pointed at its root's component are the graph's components."""
    a = np.array([e[0] for e in edges], np.int64)
    b = np.array([e[1] for e in edges], np.int64)
    part = np.array([rnd.randrange(P) for _ in edges], np.int64)
    r, v = [], []
    for p in range(P):
        ra, rb = uf_stars(a[part == p], b[part == p])
        roots = np.unique(ra)
        r += [ra, roots]
        v += [rb, roots]
    r = np.concatenate(r) if r else np.zeros(0, np.int64)
    v = np.concatenate(v) if v else np.zeros(0, np.int64)
    la, lb, new = root_links(r, v)
    xa, xb, xnew = root_links_xp(np, r, v)
    assert sorted(zip(la.tolist(), lb.tolist(), new.tolist())) == \
        sorted(zip(xa.tolist(), xb.tolist(), xnew.tolist()))
    assert (la < lb).all()
    links = new
    comp = expected_labels(la[links], lb[links])   # the roots' components
    got = {}
    for x, y in zip(la[links].tolist(), lb[links].tolist()):
        got[x], got[y] = comp[x], comp[y]
    for root, x in zip(la[~links].tolist(), lb[~links].tolist()):
        assert x not in got, f"vertex {x} is both linked and pointed"
        got[x] = comp.get(root, root)
    exp = expected_labels(a, b)
    for x in exp:
        got.setdefault(x, x)   # a root of its own piece only: its component's smallest id
    assert got == exp


def test_partitioner_names_are_parsed_in_one_place():
    assert Partitioner.parse(" Locality") is Partitioner.LOCALITY
    with pytest.raises(ValueError, match="unknown partitioner 'range'; choose one of: "
                                         "locality, hash"):
        Partitioner.parse("range")


# -- the job ---------------------------------------------------------------------------------------

@pytest.mark.spark
def test_spark_sends_each_range_to_its_partition(spark):
    from pyspark.sql import functions as F

    rng = np.random.default_rng(5)
    x = np.r_[rng.integers(-2 ** 62, 2 ** 62, 200), [0, 1, -1, 2 ** 63 - 1]].astype(np.int64)
    df = spark.createDataFrame(pa.table({"x": x}))
    got = np.array([r[0] for r in df.select(F.hash("x")).collect()], np.int64)
    assert got.tolist() == spark_hash_long(x).astype(np.int64).tolist()
    P = 5
    keys = hash_preimages(P)
    df = spark.createDataFrame(pa.table({"p": np.arange(P), "key": keys}))
    placed = df.repartition(P, "key").select("p", F.spark_partition_id().alias("q")).collect()
    assert sorted((r.p, r.q) for r in placed) == [(p, p) for p in range(P)]


def _run(spark, src, dst, epochs=1, **kw):
    from spark_plugin.jobs.wcc.job import run_wcc

    res = run_wcc(spark, pa.table({"src": pa.array(src, pa.int64()),
                                   "dst": pa.array(dst, pa.int64())}),
                  epochs=epochs, partitions=2, progress=False, backend="cpu", **kw)
    lab = res.labels
    return res, dict(zip(lab.column("vertex").to_pylist(), lab.column("component").to_pylist()))


graphs = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=150)


@pytest.mark.spark
@pytest.mark.parametrize("partitioner", ["locality", "hash"])
@settings(max_examples=4)
@given(edges=graphs, chain=st.integers(0, 80), epochs=st.integers(1, 3),
       task_rows=st.sampled_from(["", "0"]), rnd=st.randoms(use_true_random=False))
def test_labels_equal_scipy_on_the_spark_loop(spark, partitioner, edges, chain, epochs,
                                              task_rows, rnd):
    """Random edges plus a path with shuffled ids (listed along the path), in 1-3 epochs, every
    round on Spark -- finished by one task's union-find, or (``TFRONT_WCC_TASK_ROWS=0``) by
    the star loop alone: the labels of the last epoch are scipy's, every count drops to zero."""
    ids = list(range(100, 100 + chain))
    rnd.shuffle(ids)
    edges = edges + list(zip(ids[:-1], ids[1:]))
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
        mp.setenv("TFRONT_WCC_TASK_ROWS", task_rows)
        res, got = _run(spark, src, dst, epochs=epochs, partitioner=partitioner)
    assert got == expected_labels(src, dst)
    assert res.service.counts().num_rows == 0
    for s in res.epochs:
        assert (s.cut is not None) == (partitioner == "locality" and s.new_edges > 0), s
        assert ("cut " in s.line()) == (s.cut is not None)


@pytest.mark.spark
def test_paths_and_grids_in_order_converge_in_rounds_that_do_not_grow_with_them(spark,
                                                                                monkeypatch):
    """With locality, the contract stage leaves only the links between the two partitions'
    pieces: a path numbered in order, a path with shuffled ids listed along it, and a grid
    converge in at most 3 rounds whatever their length (hash partitioning: ~log n)."""
    import networkx as nx

    from wcc_cases import Families

    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    n = 3000
    perm = np.random.default_rng(2).permutation(n)
    for src, dst in [(np.arange(n - 1), np.arange(1, n)), (perm[:-1], perm[1:])]:
        res, got = _run(spark, src, dst)
        assert got == expected_labels(src, dst)
        s = res.epochs[0]
        assert s.rounds <= 3 and s.cut == pytest.approx(1 / (n - 1)), s.line()
    f = Families()
    f.add_nx(nx.grid_2d_graph(40, 40))
    src, dst = f.arrays()
    res, got = _run(spark, src, dst)
    assert got == expected_labels(src, dst) and res.epochs[0].rounds <= 3, res.epochs[0].line()
    hashed, got = _run(spark, np.arange(n - 1), np.arange(1, n), partitioner="hash")
    assert got == expected_labels(np.arange(n - 1), np.arange(1, n))
    assert hashed.epochs[0].rounds >= 6 and hashed.epochs[0].cut is None


@pytest.mark.spark
@pytest.mark.parametrize("epochs", [1, 3])
def test_the_driver_finishes_the_loop_once_its_rows_fit(spark, monkeypatch, epochs):
    """The epoch's input is over the driver's limit, so it starts on Spark; the contract stage
    (a dense graph: many rows per vertex) or the links stage (a path: two pieces) shrinks what
    is left below it, and the driver's union-find finishes: scipy's labels, fewer stages."""
    rng = np.random.default_rng(8)
    k = 40   # dense: 40 vertices, 1600 edges contract to 39 stars and a root's row per task
    dense = (rng.integers(0, k, 1600), rng.integers(0, k, 1600))
    n = 2000
    path = (np.arange(10_000, 10_000 + n - 1), np.arange(10_001, 10_000 + n))
    for (src, dst), limit in [(dense, 200), (path, 200)]:
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", str(limit))
        res, got = _run(spark, src, dst, epochs=epochs)
        assert got == expected_labels(src, dst)
        assert res.service.counts().num_rows == 0
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
        spark_only, got = _run(spark, src, dst, epochs=epochs)
        assert got == expected_labels(src, dst)
        assert res.stages < spark_only.stages, (res.stages, spark_only.stages)
        assert res.kernels["cpu"] < spark_only.kernels["cpu"]
