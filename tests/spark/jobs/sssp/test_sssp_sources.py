"""Spark sources for ``tfront sssp`` (issue 31 item 6): datasets the executors read -- a
Spark-written directory with an empty part, a ``partitionBy`` dataset, a table, a DataFrame,
a ``file://`` URI --, string ids with the source given by name, ``--changes``, and a killed
run resumed; past the driver's budget the distances stay in Spark
(:mod:`spark_plugin.jobs.sssp.spark`). Every epoch's distances are compared with scipy's."""

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.main import main as tfront
from spark_plugin.sources import EdgeInputError
from spark_plugin.jobs.recovery import MANIFEST
from spark_plugin.jobs.sssp.job import run_sssp
from spark_plugin.sources import SparkSourceError

from graph_cases import scipy_distances
from test_sssp import Killed, crash_at, written

pytestmark = pytest.mark.spark


def _graph(n=40, m=120, seed=7):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, n, m), rng.integers(0, n, m),
            rng.choice([0.0, 0.5, 1.0, 2.5, 4.0], m))


def _want(src, dst, w, source, undirected=False) -> dict:
    """scipy's distances from ``source`` over the edges given: ``{vertex: distance}``,
    reached vertices only."""
    if undirected:
        src, dst, w = np.r_[src, dst], np.r_[dst, src], np.r_[w, w]
    verts = np.unique(np.r_[src, dst, [source]])
    got = scipy_distances(src, dst, w, verts, source)
    return {int(v): float(d) for v, d in zip(verts, got) if np.isfinite(d)}


def _check(out, src, dst, w, source, cuts, undirected=False):
    """Each epoch ``e`` of ``out`` equals scipy on the rows ``[0, cuts[e + 1])``."""
    got = written(out)
    assert sorted(got) == list(range(len(cuts) - 1))
    for e in range(len(cuts) - 1):
        k = cuts[e + 1]
        want = _want(src[:k], dst[:k], w[:k], source, undirected)
        assert set(got[e]) == set(want), f"epoch {e}: reached vertices differ"
        for v, d in want.items():
            assert got[e][v] == pytest.approx(d), f"epoch {e} vertex {v}"


def _frame(res) -> dict:
    """A Spark source's distances: a DataFrame (never collected by the job), collected here."""
    assert not isinstance(res.distances, pa.Table)
    assert res.distances.columns == ["vertex", "distance"]
    t = res.distances.toArrow()
    return dict(zip(*(t.column(c).to_pylist() for c in ("vertex", "distance"))))


@pytest.fixture(params=["driver", "spark"])
def where(request, monkeypatch):
    """Each epoch finished on the driver (the default budget), or kept in Spark."""
    if request.param == "spark":
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    else:
        monkeypatch.delenv("TFRONT_SSSP_DRIVER_ROWS", raising=False)
    return request.param


def test_gh31_sssp_a_spark_written_directory_weighted_split_on_the_executors(
        spark, tmp_path, where):
    """Three part files and Spark's empty one, weighted, in 3 read-order slices; a rerun
    finds every epoch final."""
    src, dst, w = _graph(n=30, m=90)
    ds = tmp_path / "edges"
    ds.mkdir()
    for k, (a, b) in enumerate(((0, 30), (30, 60), (60, 90))):
        pq.write_table(pa.table({"src": src[a:b], "dst": dst[a:b], "weight": w[a:b]}),
                       ds / f"part-{k:05d}-a.snappy.parquet")
    pq.write_table(pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64()),
                             "weight": pa.array([], pa.float64())}),
                   ds / "part-00003-a.snappy.parquet")
    (ds / "_SUCCESS").touch()
    out = str(tmp_path / "out")
    source = int(src[0])
    res = run_sssp(spark, str(ds), source, epochs=3, out=out, weighted=True, partitions=2,
                   progress=False)
    assert [s.where for s in res.epochs] == [where] * 3
    assert [s.source for s in res.epochs] == [f"{ds} rows 1-30", f"{ds} rows 31-60",
                                              f"{ds} rows 61-90"]
    _check(out, src, dst, w, source, [0, 30, 60, 90])
    assert res.service.counts().num_rows == 0
    again = run_sssp(spark, str(ds), source, epochs=3, out=out, weighted=True, partitions=2,
                     progress=False)
    assert again.epochs == [] and again.resumed_at == 3


def test_gh31_sssp_partition_by_dataset_epochs_by_its_column_moving_to_spark(
        spark, tmp_path, monkeypatch):
    """A ``partitionBy("day")`` dataset, one epoch per day, undirected, hash partitioner; the
    driver's budget (100 directed edges) holds day 1 only: day 2 moves the driver's
    distances and edges into Spark, where they stay."""
    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "100")
    src, dst, _ = _graph(m=150, seed=3)
    day = np.repeat([3, 1, 2], 50)
    ds = str(tmp_path / "bydays")
    spark.createDataFrame(pa.table({"src": src, "dst": dst, "day": day}).to_pandas()) \
        .write.partitionBy("day").parquet(ds)
    out = str(tmp_path / "out")
    order = np.argsort(day, kind="stable")
    source = int(src[order][0])
    res = run_sssp(spark, ds, source, epoch_column="day", out=out, undirected=True,
                   partitions=2, partitioner="hash", progress=False)
    assert [s.source for s in res.epochs] == ["day=1", "day=2", "day=3"]
    assert [s.where for s in res.epochs] == ["driver", "spark", "spark"]
    assert res.epochs[-1].edges == 300 and res.epochs[-1].vertices == len(
        np.unique(np.r_[src, dst]))
    _check(out, src[order], dst[order], np.ones(150), source, [0, 50, 100, 150],
           undirected=True)


def test_gh31_sssp_a_dataframe_and_a_table_give_a_dataframe(spark, tmp_path, where):
    """A DataFrame (other column names and types) through the API: the distances come back
    as a Spark DataFrame ``vertex, distance``; a table the same, in 2 slices to ``out``."""
    src, dst, w = _graph(m=80, seed=5)
    df = spark.createDataFrame(pa.table({"a": src.astype(np.int32), "b": dst.astype(np.float64),
                                         "cost": w}).to_pandas())
    source = int(src[0])
    res = run_sssp(spark, df, source, columns="a,b,cost", weighted=True, partitions=2,
                   progress=False)
    got, want = _frame(res), _want(src, dst, w, source)
    assert set(got) == set(want) and all(got[v] == pytest.approx(want[v]) for v in want)
    df.createOrReplaceTempView("gh31_sssp_edges")
    out = str(tmp_path / "out")
    res = run_sssp(spark, None, source, table="gh31_sssp_edges", columns="a,b", epochs=2,
                   out=out, partitions=2, progress=False)
    assert [s.source for s in res.epochs] == ["table gh31_sssp_edges rows 1-40",
                                              "table gh31_sssp_edges rows 41-80"]
    _check(out, src, dst, np.ones(80), source, [0, 40, 80])


def test_gh31_sssp_string_ids_source_by_name_and_a_killed_run_resumed(
        spark, tmp_path, monkeypatch):
    """``ids="string"``, a weighted CSV dataset: the source is a name, the distances are
    written by name; a run killed (the framework's crash hook) once epoch 2's input is
    recorded resumes at epoch 2 -- on Spark from the distances read by Spark and the final
    epochs' rows, or on the driver, collecting them when they fit --, each epoch once and
    equal to scipy. A source that is no vertex is named."""
    rng = np.random.default_rng(11)
    names = [f"user{k:02d}" if k % 3 else f"https://x.org/{k}" for k in range(30)]
    ia, ib = rng.integers(0, 30, 90), rng.integers(0, 30, 90)
    w = rng.choice([0.5, 1.0, 3.0], 90)
    d = tmp_path / "csv"
    d.mkdir()
    (d / "part-00000.csv").write_text("who,whom,cost\n" + "".join(
        f"{names[a]},{names[b]},{x}\n" for a, b, x in zip(ia, ib, w)))
    source = names[int(ia[0])]
    order = sorted(names)   # the dictionary: names sorted, numbered

    def want_names(k):
        idx = {n: i for i, n in enumerate(order)}
        s = np.array([idx[names[a]] for a in ia[:k]])
        t = np.array([idx[names[b]] for b in ib[:k]])
        got = _want(s, t, w[:k], idx[source])
        return {order[v]: x for v, x in got.items()}

    with pytest.raises(EdgeInputError, match="is no vertex of any edge"):
        run_sssp(spark, str(d), "nobody", ids="string", weighted=True, progress=False)
    for budget in ("0", "200"):   # the resume on Spark, then collected on the driver
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
        out = tmp_path / f"out{budget}"

        def run(**kw):
            return run_sssp(spark, str(d), source, epochs=3, ids="string", weighted=True,
                            out=str(out), partitions=2, progress=False, **kw)
        with crash_at(monkeypatch, "epoch:2:after-input"), pytest.raises(Killed):
            run()
        m = json.loads((out / MANIFEST).read_text())
        assert [r["epoch"] for r in m["output"]] == [0, 1] and m["job"]["source"] == source
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", budget)
        res = run()
        assert res.resumed_at == 2 and [s.epoch for s in res.epochs] == [2]
        assert res.epochs[0].where == ("spark" if budget == "0" else "driver")
        assert res.epochs[0].edges == 90
        got = written(str(out))
        for e, k in enumerate((30, 60, 90)):
            want = want_names(k)
            assert set(got[e]) == set(want), f"epoch {e}"
            assert all(got[e][v] == pytest.approx(x) for v, x in want.items())


@pytest.mark.parametrize("source_kind", ["file", "spark"])
def test_gh31_sssp_changes_writes_only_what_changed(spark, tmp_path, monkeypatch,
                                                    source_kind):
    """``changes=True``: epoch ``e``'s files hold the vertices reached anew or nearer in it;
    the latest row per vertex equals scipy's distances after ``e`` (a local file on the
    driver; a ``file://`` dataset kept in Spark)."""
    src, dst, w = _graph(n=30, m=60, seed=13)
    if source_kind == "spark":
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
        edges = tmp_path / "ds"
        edges.mkdir()
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": w}),
                       edges / "part-00000.parquet")
        edges = edges.as_uri()
    else:
        edges = str(tmp_path / "e.parquet")
        pq.write_table(pa.table({"src": src, "dst": dst, "weight": w}), edges)
    out = tmp_path / "out"
    source = int(src[0])
    res = run_sssp(spark, edges, source, epochs=3, out=str(out), weighted=True, changes=True,
                   partitions=2, progress=False)
    assert {s.where for s in res.epochs} == {"spark" if source_kind == "spark" else "driver"}
    got, now = written(str(out)), {}
    for e, k in enumerate((20, 40, 60)):
        want = _want(src[:k], dst[:k], w[:k], source)
        rows = got.get(e, {})
        assert rows == {v: x for v, x in want.items() if now.get(v) != x}, f"epoch {e}"
        now.update(rows)
        assert now == pytest.approx(want)
    assert json.loads((out / MANIFEST).read_text())["job"]["changes"] is True


def test_gh31_sssp_reads_uris_and_names_bad_weights(spark, tmp_path, monkeypatch):
    """``tfront sssp file://...`` runs (it said it read local files only); a weight that is
    no number is named with its row; a table and EDGES together are refused."""
    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    src, dst, _ = _graph(m=60, seed=2)
    d = tmp_path / "txt"
    d.mkdir()
    (d / "part-00000.txt").write_text("".join(f"{a} {b}\n" for a, b in zip(src, dst)))
    out = tmp_path / "out"
    assert tfront(["sssp", d.as_uri(), "--source", str(src[0]), "--epochs", "2", "--out",
                   str(out), "--partitions", "2", "-q"]) == 0
    _check(str(out), src, dst, np.ones(60), int(src[0]), [0, 30, 60])
    (d / "part-00000.txt").write_text("1 2 0.5\n2 3 -1\n")
    with pytest.raises(EdgeInputError, match=r"row '2 3 -1': weight '-1' is not a finite "):
        run_sssp(spark, str(d), 1, weighted=True, progress=False)
    with pytest.raises(SparkSourceError, match="give either an edge input or a table"):
        run_sssp(spark, str(d), 1, table="t", progress=False)


@pytest.mark.slow
def test_gh31_sssp_on_a_cluster_the_driver_never_opens_the_edge_files(tmp_path):
    """``local-cluster[2,1,1024]`` (executors in JVMs of their own), a weighted ``file://``
    dataset, every epoch kept in Spark: the driver's Python process opens none of the
    dataset's files (the WCC test's probe: an audit hook and pyarrow's readers); a run
    killed (SIGKILL) after epoch 1's distances were written but before its manifest named
    them is resumed by a rerun, and every epoch is then in ``--out`` once, equal to
    scipy."""
    import signal
    import subprocess
    import sys

    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(   # the WCC test's probe, as it is
        "gh31_wcc_probe", Path(__file__).parents[1] / "wcc" / "test_wcc_sources.py")
    wcc_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wcc_test)
    PROBE = wcc_test.PROBE

    rng = np.random.default_rng(11)   # short hops along the ids: few partition crossings
    src = rng.integers(0, 300, 600)
    dst, w = src + rng.integers(1, 6, 600), rng.choice([0.5, 1.0, 2.0], 600)
    ds = tmp_path / "ds"
    ds.mkdir()
    for k in range(3):
        pq.write_table(pa.table({"src": src[k * 200:(k + 1) * 200],
                                 "dst": dst[k * 200:(k + 1) * 200],
                                 "weight": w[k * 200:(k + 1) * 200]}), ds / f"part-{k:05d}.parquet")
    (ds / "_SUCCESS").touch()
    out = tmp_path / "out"
    cmd = ("sssp", ds.as_uri(), "--source", str(src[0]), "--weighted", "--epochs", "3",
           "--out", str(out), "--master", "local-cluster[2,1,1024]", "--partitions", "2", "-q")

    # the executors' Python workers import this checkout, not another install of it
    root = str(Path(__file__).parents[4])
    path = os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])

    def probe(**env):
        r = subprocess.run([sys.executable, "-c", PROBE, str(ds), *cmd],
                           env=dict(os.environ, TFRONT_SSSP_DRIVER_ROWS="0",
                                    PYTHONPATH=path, **env),
                           capture_output=True, text=True, timeout=900)
        return r, (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None)

    r, _ = probe(TFRONT_WCC_CRASH_AT="epoch:1:after-data")
    assert r.returncode == -signal.SIGKILL, r.stderr[-3000:]
    r, info = probe()
    assert r.returncode == 0, r.stderr[-3000:]
    assert info["rc"] == 0 and info["opened"] == []
    _check(str(out), src, dst, w, int(src[0]), [0, 200, 400, 600])
    parts = [n for n in os.listdir(out) if n.startswith("part-epoch-")]
    assert sorted({n[:17] for n in parts}) == [f"part-epoch-{e:06d}" for e in range(3)]
    assert len(parts) == len({p for r in json.loads((out / MANIFEST).read_text())["output"]
                              for p in r["files"]})


def _local_values(data) -> int:
    """How many values of local data (NumPy arrays, Arrow tables, lists of them) ``data``
    carries into Spark from the driver; ``0`` for an RDD or DataFrame (already in Spark)."""
    if isinstance(data, np.ndarray):
        return int(data.size)
    if isinstance(data, pa.Table):
        return data.num_rows * data.num_columns
    if isinstance(data, (list, tuple)):
        return sum(_local_values(x) for x in data)
    return 0


def test_gh31_sssp_a_local_file_past_the_drivers_budget_stays_in_spark(
        spark, tmp_path, monkeypatch):
    """A local Parquet file whose edges are past the driver's budget (here 50 rows) is read
    by the executors, as ``run_wcc`` reads one (``file://PATH``, the same slices, named and
    recorded as the driver's reading would be), and its distances stay in Spark
    (:mod:`spark_plugin.jobs.sssp.spark`): the driver holds ``O(P)`` -- the source alone,
    no edge -- and ships nothing of the graph to Spark (no local data into ``parallelize``
    or ``createDataFrame``). Every epoch equals scipy; a run killed once epoch 2's input is
    recorded resumes there, on Spark; a rerun that the driver reads (the real budget) finds
    every epoch final; without ``out`` the distances come back as a table, as a local
    input's do."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    import spark_plugin.jobs.sssp.job as sssp_job
    from test_sssp import crash_at, Killed

    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "50")
    src, dst, w = _graph(n=60, m=240, seed=19)
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "weight": w}), path)
    shipped, held = [], []
    parallelize, create = SparkContext.parallelize, SparkSession.createDataFrame

    def shipping(self, data, *args, **kwargs):   # the real call, what it carries counted
        data = list(data) if isinstance(data, (list, tuple, range)) else data
        shipped.append(_local_values(data))
        return parallelize(self, data, *args, **kwargs)

    def creating(self, data, *args, **kwargs):
        shipped.append(_local_values(data))
        return create(self, data, *args, **kwargs)
    summary = sssp_job.SsspJob.summary

    def holding(self, e, *args, **kwargs):       # what the driver holds, each final epoch
        held.append((len(self.vertices), len(self.held)))
        return summary(self, e, *args, **kwargs)
    monkeypatch.setattr(SparkContext, "parallelize", shipping)
    monkeypatch.setattr(SparkSession, "createDataFrame", creating)
    monkeypatch.setattr(sssp_job.SsspJob, "summary", holding)
    out = tmp_path / "out"
    source = int(src[0])

    def run(**kw):
        return run_sssp(spark, str(path), source, epochs=3, weighted=True, partitions=2,
                        progress=False, **kw)
    with crash_at(monkeypatch, "epoch:2:after-input"), pytest.raises(Killed):
        run(out=str(out))
    res = run(out=str(out))
    assert res.resumed_at == 2 and [s.epoch for s in res.epochs] == [2]
    assert [s.where for s in res.epochs] == ["spark"]
    assert res.epochs[0].source == f"{path} rows 161-240"
    assert held == [(1, 0)] * 3 and set(shipped) <= {0}
    _check(str(out), src, dst, w, source, [0, 80, 160, 240])
    table = run()   # no out: a local input's distances are a table
    assert isinstance(table.distances, pa.Table)
    got, want = table.distances, _want(src, dst, w, source)
    assert dict(zip(*(got.column(c).to_pylist() for c in ("vertex", "distance")))) == \
        pytest.approx(want)
    assert [s.where for s in table.epochs] == ["spark"] * 3
    monkeypatch.undo()   # the real budget: the driver reads the file; same job, all final
    again = run_sssp(spark, str(path), source, epochs=3, weighted=True, out=str(out),
                     partitions=2, progress=False)
    assert again.resumed_at == 3 and again.epochs == []
