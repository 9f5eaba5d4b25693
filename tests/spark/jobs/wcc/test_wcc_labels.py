"""The WCC job's labels equal scipy's connected components on every epoch.

Graph families are relabelled into disjoint id ranges and run as one graph (components are
independent), so a handful of Spark jobs cover them all.
"""

import math

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_kernels.unionfind import (large_star, large_star_xp, small_star, small_star_xp, uf_stars,
                                   uf_stars_xp)
from spark_plugin.jobs.wcc.job import run_wcc, wcc_graph
from wcc_cases import Families, expected_labels

pytestmark = pytest.mark.spark


def all_families(rng):
    f = Families()
    for g in (nx.karate_club_graph(), nx.les_miserables_graph(), nx.florentine_families_graph(),
              nx.davis_southern_women_graph()):
        f.add_nx(g)
    for g in nx.graph_atlas_g():          # all 1253 graphs of up to 7 nodes
        if g.number_of_edges():
            f.add_nx(g)
    # random graphs with many small components
    n = 3000
    f.add(rng.integers(0, n, (1200, 2)))
    f.add_nx(nx.gnm_random_graph(500, 300, seed=3))
    # a long path (vertex ids shuffled), a grid, a star
    perm = rng.permutation(1000)
    f.add(np.column_stack([perm[:-1], perm[1:]]))
    f.add_nx(nx.grid_2d_graph(100, 100))
    f.add([(0, k) for k in range(1, 300)])
    # self-loops, duplicate edges, isolated vertices that only appear in a self-loop
    f.add([(0, 0), (1, 1), (1, 2), (2, 1), (1, 2), (1, 2), (5, 5)])
    f.add([(7, 7)])
    return f.arrays()


def read_out(path) -> dict:
    t = pq.read_table(path)
    out = {}
    for e, v, c in zip(t.column("epoch").to_pylist(), t.column("vertex").to_pylist(),
                       t.column("component").to_pylist()):
        out.setdefault(e, {})
        assert v not in out[e], f"vertex {v} written twice for epoch {e}"
        out[e][v] = c
    return out


def test_kernels_agree_with_scipy():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 200, 300), rng.integers(0, 200, 300)
    exp = expected_labels(a, b)
    root, leaf = uf_stars(a, b)
    assert (root < leaf).all()
    got = {v: v for v in exp}
    got.update(dict(zip(leaf.tolist(), root.tolist())))
    assert got == exp
    # large-star / small-star to a fixed point on one partition
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    lo, hi, new = lo[keep], hi[keep], np.ones(keep.sum(), bool)
    for _ in range(40):
        lo, hi, new = small_star(lo, hi, new)
        if not new.any():
            break
        lo, hi, new = large_star(np.r_[lo, hi], np.r_[hi, lo])
    got = {v: v for v in exp}
    got.update(dict(zip(hi.tolist(), lo.tolist())))
    assert got == exp


@pytest.mark.parametrize("seed", range(4))
def test_uf_stars_dense_and_sparse_ids_agree(seed):
    """Dense ids take the id-indexed union-find, spread-out ids the compacted one: the same
    stars (after scaling the ids), one per non-minimal vertex, in ascending leaf order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    a, b = rng.integers(0, n, n), rng.integers(0, n, n)
    exp = expected_labels(a, b)
    root, leaf = uf_stars(a, b)
    assert dict(zip(leaf.tolist(), root.tolist())) == {v: c for v, c in exp.items() if v != c}
    assert (np.diff(leaf) > 0).all()
    k = 10 ** 9 + 7
    r2, l2 = uf_stars(a * k + 5, b * k + 5)
    assert np.array_equal(r2, root * k + 5) and np.array_equal(l2, leaf * k + 5)


def test_array_twins_equal_the_numba_kernels():
    """The ``*_xp`` twins (CuPy on a GPU) with NumPy as the array module."""
    rng = np.random.default_rng(2)

    def rows(*cols):
        return sorted(zip(*(c.tolist() for c in cols)))

    for _ in range(100):
        n, m = int(rng.integers(1, 60)), int(rng.integers(0, 80))
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        assert rows(*uf_stars(a, b)) == rows(*uf_stars_xp(np, a, b))
        u, v = np.r_[a, b], np.r_[b, a]
        assert rows(*large_star(u, v)) == rows(*large_star_xp(np, u, v))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keep = lo != hi
        new = rng.random(keep.sum()) < 0.3
        assert rows(*small_star(lo[keep], hi[keep], new)) == \
            rows(*small_star_xp(np, lo[keep], hi[keep], new))


@pytest.mark.parametrize("driver_rows", [None, "0"], ids=["driver-finish", "spark-loop"])
def test_labels_equal_scipy_on_every_epoch(spark, tmp_path, monkeypatch, driver_rows):
    """Both ways an epoch can run: contract on Spark then finish on the driver (the default
    below ``DRIVER_FINISH_ROWS``), and the all-Spark large-star/small-star loop."""
    if driver_rows is not None:
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", driver_rows)
    rng = np.random.default_rng(7)
    src, dst = all_families(rng)
    order = rng.permutation(src.size)
    src, dst = src[order], dst[order]
    # a directory of epoch files: three slices with an empty epoch in between (named e00 ..:
    # part-* files alone would be one Spark dataset, issue 31)
    d = tmp_path / "epochs"
    d.mkdir()
    cuts = [0, src.size // 3, src.size // 3, 2 * src.size // 3, src.size]
    for e in range(4):
        s = slice(cuts[e], cuts[e + 1])
        pq.write_table(pa.table({"src": src[s], "dst": dst[s]}), d / f"e{e:02d}.parquet")
    out = tmp_path / "labels"
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=False)
    written = read_out(out)
    assert sorted(written) == [0, 1, 2, 3]
    n = len(expected_labels(src, dst))
    for e in range(4):
        exp = expected_labels(src[:cuts[e + 1]], dst[:cuts[e + 1]])
        assert written[e] == exp, f"epoch {e}"
        s = res.epochs[e]
        assert (s.epoch, s.vertices, s.edges) == (e, len(exp), cuts[e + 1])
        assert s.components == len(set(exp.values()))
        # rounds do not grow with the diameter (the grid's is 198, the path's 999)
        assert s.rounds <= math.log2(n) + 3, (e, s.rounds)
    assert res.epochs[1].rounds == 1          # the empty epoch: one iteration, nothing new
    assert res.service.counts().num_rows == 0  # every message consumed, every capability dropped


def test_path_and_grid_converge_in_logarithmic_rounds_and_labels_in_memory(spark, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")   # the rounds bound is about the Spark loop
    f = Families()
    f.add(np.column_stack([np.arange(999), np.arange(1, 1000)]))   # path, ids in order
    f.add_nx(nx.grid_2d_graph(100, 100))
    src, dst = f.arrays()
    path = tmp_path / "pg.csv"
    with open(path, "w") as fh:
        fh.write("dst,src\n")
        for s, t in zip(src.tolist(), dst.tolist()):
            fh.write(f"{t},{s}\n")
    res = run_wcc(spark, path, partitions=2, progress=False)
    exp = expected_labels(src, dst)
    lab = res.labels
    assert dict(zip(lab.column("vertex").to_pylist(), lab.column("component").to_pylist())) == exp
    assert res.epochs[0].rounds <= math.log2(len(exp)) + 2
    assert res.epochs[0].components == 2


def test_graph_is_figure_2():
    wg = wcc_graph()
    g = wg.graph
    assert g.m == 1 and g.max_depth == 1
    assert [g.describe(l) for l in (wg.b_in0, wg.b_in1, wg.d_in0)] == [
        "target label[2].in0 (depth 1)", "target label[2].in1 (depth 1)",
        "target output[0].in0 (depth 1)"]


def test_arrow_buffer_helpers_equal_pyarrow_conversions():
    """The tasks build and read Arrow arrays from their buffers (no pandas import); the
    results equal pyarrow's own conversions, also for sliced and chunked arrays."""
    from spark_plugin.jobs.arrow import arrow_bool as _arrow_bool
    from spark_plugin.jobs.arrow import arrow_fixed as _arrow_fixed
    from spark_plugin.jobs.arrow import arrow_lists as _arrow_lists
    from spark_plugin.jobs.arrow import arrow_numpy as _numpy
    from spark_plugin.jobs.arrow import arrow_strings as _arrow_strings

    rng = np.random.default_rng(5)
    x = rng.integers(-5, 10 ** 12, 1000)
    f = rng.random(1000) < 0.3
    assert _arrow_fixed(pa.int64(), x).equals(pa.array(x, pa.int64()))
    assert _arrow_fixed(pa.int32(), x[:9].astype(np.int32)).equals(pa.array(x[:9].astype(np.int32)))
    assert _arrow_bool(f).equals(pa.array(f))
    for lo, hi in [(0, 1000), (3, 17), (13, 13), (999, 1000)]:
        got = _numpy(pa.array(x).slice(lo, hi - lo))
        assert np.array_equal(got, x[lo:hi]) and got.flags.writeable
        assert np.array_equal(_numpy(pa.array(f).slice(lo, hi - lo)), f[lo:hi])
    chunked = pa.chunked_array([pa.array(x[:300]), pa.array(x[300:]).slice(5)])
    assert np.array_equal(_numpy(chunked), np.r_[x[:300], x[305:]])
    assert _numpy(pa.chunked_array([], pa.int64())).shape == (0,)
    assert _numpy(pa.array([1, None, 3], pa.float64())).tolist()[0] == 1.0   # nulls: to_numpy
    rows = [(0, 1), (), (5, 6, 7)]
    for typ in (pa.list_(pa.int64()), pa.large_list(pa.int64())):
        assert _arrow_lists(typ, rows).equals(pa.array([list(r) for r in rows], typ))
    for typ in (pa.string(), pa.large_string()):
        items = ["wcc-0", "", "wcc-ü"]
        assert _arrow_strings(typ, items).equals(pa.array(items, typ))
