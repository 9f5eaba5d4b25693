"""Spark sources for ``tfront wcc`` (issue 31): datasets that the executors read -- a Spark-written
directory with an empty part, a ``partitionBy`` dataset, a table, a DataFrame, a ``file://``
URI --, epochs from slices computed on the executors or from a column (values, windows), bad
rows named, and ``hdfs:///`` refused where no HDFS is configured. Every epoch's labels are
compared with scipy's."""

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.main import main as tfront
from spark_plugin.sources import EdgeInputError, even_cuts
from spark_plugin.jobs.wcc.job import run_wcc
from spark_plugin.sources import EpochPlan, SparkEdges, SparkSourceError
from spark_plugin.sources.epochs import EpochPlanError, slice_of_row

from wcc_cases import expected_labels, written

pytestmark = pytest.mark.spark


def _graph(n=300, m=400, seed=7):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m)


def _check_epochs(out, src, dst, bounds):
    """Each epoch ``e`` of ``out`` equals scipy on the rows ``[0, bounds[e + 1])``."""
    got = written(out)
    assert sorted(got) == list(range(len(bounds) - 1))
    for e in range(len(bounds) - 1):
        want = expected_labels(src[:bounds[e + 1]], dst[:bounds[e + 1]])
        assert dict(got[e]) == want, f"epoch {e}"


def _labels(res):
    """A Spark source's labels: a DataFrame (never collected by the job), collected here."""
    assert not isinstance(res.labels, pa.Table)
    t = res.labels.toArrow()
    return dict(zip(*(t.column(c).to_pylist() for c in ("vertex", "component"))))


@pytest.fixture(params=["driver", "spark"])
def where(request, monkeypatch):
    """Each epoch finished on the driver (the default budget), or every round on Spark."""
    if request.param == "spark":
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    return request.param


def test_gh31_a_spark_written_directory_is_one_dataset_split_on_the_executors(
        spark, tmp_path, where):
    src, dst = _graph()
    ds = str(tmp_path / "edges")
    os.makedirs(ds)
    # three part files in order, and an empty one as Spark writes for an empty partition
    for k, (a, b) in enumerate(((0, 133), (133, 266), (266, 400))):
        pq.write_table(pa.table({"src": src[a:b], "dst": dst[a:b]}),
                       f"{ds}/part-{k:05d}-a.snappy.parquet")
    pq.write_table(pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())}),
                   f"{ds}/part-00003-a.snappy.parquet")
    open(f"{ds}/_SUCCESS", "w").close()
    out = str(tmp_path / "out")
    res = run_wcc(spark, ds, epochs=3, out=out, partitions=3, progress=False)
    cuts = [0, 133, 266, 400]
    assert [s.new_edges for s in res.epochs] == [133, 133, 134]
    assert [s.source for s in res.epochs] == [f"{ds} rows 1-133", f"{ds} rows 134-266",
                                              f"{ds} rows 267-400"]
    _check_epochs(out, src, dst, cuts)
    # a rerun finds every epoch final (same listing, same plan): nothing recomputed
    again = run_wcc(spark, ds, epochs=3, out=out, partitions=3, progress=False)
    assert again.epochs == [] and again.resumed_at == 3


@pytest.mark.parametrize(("graph", "how"), [("random", "contracted where they were read"),
                                           ("grid", "range partition")])
def test_gh31_sampled_locality_and_labels_from_the_stars_equal_scipy(
        spark, tmp_path, monkeypatch, caplog, graph, how):
    """Every round on Spark, a Spark source's epochs partitioned by a sample's verdict
    (``CUT_SAMPLE_ROWS`` made small): random ids cut as many edges in ranges as a random
    partition, so the rows are contracted where the executors read them (no shuffle); a
    grid's ranges cut few, so they are range-partitioned. The labels come from the stars,
    the earlier labels and the self-loops: vertices seen only in a self-loop, in an earlier
    epoch or in this one, and a self-loop vertex that joins a component later."""
    import logging

    import spark_plugin.jobs.wcc.job as wcc_job

    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    monkeypatch.setattr(wcc_job, "CUT_SAMPLE_ROWS", 60)
    if graph == "random":
        src, dst = _graph(n=200, m=360, seed=11)
    else:   # a 40 x 5 grid, its edges in the order of their smaller id: bands of rows
        ids = np.arange(200).reshape(40, 5)
        src = np.r_[ids[:, :-1].ravel(), ids[:-1, :].ravel()]
        dst = np.r_[ids[:, 1:].ravel(), ids[1:, :].ravel()]
        order = np.argsort(np.minimum(src, dst), kind="stable")
        src, dst = src[order], dst[order]
    # rows 120, 121: self-loops of 1000 (epoch 0) and 1001 (epoch 1); rows 242, 243: 1000
    # joins 3's component, a self-loop of 1002 (epoch 2)
    src = np.r_[src[:120], [1000, 1001], src[120:240], [1000, 1002], src[240:]]
    dst = np.r_[dst[:120], [1000, 1001], dst[120:240], [3, 1002], dst[240:]]
    bounds = [0, *[int(c) for c in even_cuts(src.size, 3)[1:]]]
    ds = tmp_path / "d"
    ds.mkdir()
    pq.write_table(pa.table({"src": src, "dst": dst}), ds / "part-00000.parquet")
    out = str(tmp_path / "out")
    with caplog.at_level(logging.INFO, logger="spark_plugin.jobs.wcc.job"):
        res = run_wcc(spark, ds.as_uri(), epochs=3, out=out, partitions=3, progress=False)
    assert [s.new_edges for s in res.epochs] == np.diff(bounds).tolist()
    assert sum(how in r.getMessage() for r in caplog.records) == 3
    _check_epochs(out, src, dst, bounds)


def test_gh31_slices_follow_the_read_order_whatever_the_partitioning(spark, tmp_path):
    # files by name, rows in order: the same epochs with one row group per file or many
    src, dst = _graph(m=1000)
    ds = tmp_path / "d"
    ds.mkdir()
    for k in range(2):
        pq.write_table(pa.table({"src": src[k * 500:(k + 1) * 500],
                                 "dst": dst[k * 500:(k + 1) * 500]}),
                       ds / f"part-{k:05d}.parquet", row_group_size=37)
    got = []
    for maxbytes in ("1m", "2k"):
        spark.conf.set("spark.sql.files.maxPartitionBytes", maxbytes)
        try:
            eps = SparkEdges(str(ds), plan=EpochPlan(4)).epochs(spark)
            got.append([sorted(map(tuple, e.frame.collect())) for e in eps])
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert got[0] == got[1]
    assert got[0] == [sorted(zip(src[a:b].tolist(), dst[a:b].tolist()))
                      for a, b in ((0, 250), (250, 500), (500, 750), (750, 1000))]
    cuts = even_cuts(10, 3)   # the expression cuts where the driver's splits do
    assert [slice_of_row(r, 10, 3) for r in range(10)] == [
        next(e for e in range(3) if cuts[e] <= r < cuts[e + 1]) for r in range(10)]


def test_gh31_partition_by_dataset_epochs_by_its_column(spark, tmp_path):
    src, dst = _graph(m=300)
    day = np.repeat([3, 1, 2], 100)   # days in another order than the rows
    ds = str(tmp_path / "bydays")
    spark.createDataFrame(pa.table({"src": src, "dst": dst, "day": day}).to_pandas()) \
        .write.partitionBy("day").parquet(ds)
    out = str(tmp_path / "out")
    res = run_wcc(spark, ds, epoch_column="day", out=out, partitions=2, progress=False)
    assert [s.source for s in res.epochs] == ["day=1", "day=2", "day=3"]
    order = np.argsort(day, kind="stable")
    _check_epochs(out, src[order], dst[order], [0, 100, 200, 300])


def test_gh31_a_table_and_a_dataframe(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    src, dst = _graph(m=200)
    df = spark.createDataFrame(pa.table({"from": src.astype(np.int32),
                                         "to": dst.astype(np.float64)}).to_pandas())
    res = run_wcc(spark, df, columns="from,to", partitions=2, progress=False)
    assert _labels(res) == expected_labels(src, dst)
    df.createOrReplaceTempView("gh31_edges")
    out = str(tmp_path / "out")
    res = run_wcc(spark, None, table="gh31_edges", columns="from,to", epochs=2, out=out,
                  partitions=2, progress=False)
    assert [s.source for s in res.epochs] == ["table gh31_edges rows 1-100",
                                              "table gh31_edges rows 101-200"]
    _check_epochs(out, src, dst, [0, 100, 200])


def test_gh31_timestamp_windows_are_epochs(spark, tmp_path):
    src, dst = _graph(m=120)
    t0 = dt.datetime(2026, 11, 1, 0, 0, tzinfo=dt.timezone.utc)
    at = [t0 + dt.timedelta(minutes=int(k)) for k in np.sort(
        np.random.default_rng(3).integers(0, 180, 120))]   # three hours
    path = tmp_path / "events.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst, "at": pa.array(at, pa.timestamp("us",
                                                                                 "UTC"))}), path)
    res = run_wcc(spark, str(path), epoch_column="at", epoch_every="1h", partitions=2,
                  progress=False)
    hours = np.array([(t - t0).seconds // 3600 for t in at])
    assert [s.new_edges for s in res.epochs] == [int((hours == h).sum()) for h in range(3)]
    assert res.epochs[1].source == "at in [2026-11-01 01:00:00 UTC, +1h)"
    assert _labels(res) == expected_labels(src, dst)
    with pytest.raises(EpochPlanError, match="is an integer: give a whole number"):
        run_wcc(spark, str(path), epoch_column="src", epoch_every="1h", progress=False)
    with pytest.raises(EpochPlanError, match="needs --epoch-column"):
        run_wcc(spark, str(path), epoch_every="1h", progress=False)


@pytest.mark.parametrize(("rows", "match"), [
    ("1 2\n3 x\n", r"row '3 x': vertex id 'x' is not an integer"),
    ("1 2\n3\n", r"row '3': has fewer than two fields"),
    ("1 2\n-3 4\n", r"vertex id '-3' is negative"),
])
def test_gh31_a_row_that_is_no_edge_is_named_with_its_file(spark, tmp_path, rows, match):
    d = tmp_path / "txt"
    d.mkdir()
    (d / "part-00000.txt").write_text("5 6\n")
    (d / "part-00001.txt").write_text(rows)
    with pytest.raises(EdgeInputError, match=match) as err:
        run_wcc(spark, str(d), progress=False)
    assert "part-00001.txt" in str(err.value)
    df = spark.createDataFrame([(1.0, 2.0), (2.5, 3.0)], "src double, dst double")
    with pytest.raises(EdgeInputError, match=r"vertex id '2.5' is not a whole number"):
        run_wcc(spark, df, progress=False)


def test_gh31_csv_header_positions_is_said_and_header_no_reads_it(spark, tmp_path):
    d = tmp_path / "csv"
    d.mkdir()
    (d / "part-00000.csv").write_text("0,1\n0,5\n1,7\n2,9\n")   # pandas' default header
    se = SparkEdges(str(d))
    assert [e.rows for e in se.epochs(spark)] == [3]
    assert "the column positions" in se.notes[0]
    assert [e.rows for e in SparkEdges(str(d), header="no").epochs(spark)] == [4]


def test_gh31_hdfs_without_hdfs_is_refused_saying_so(spark, capsys):
    with pytest.raises(SparkSourceError, match=r"no HDFS is configured here"):
        SparkEdges("hdfs:///data/edges").open(spark)
    assert tfront(["wcc", "hdfs:///data/edges", "--out", "hdfs:///data/labels", "-q"]) == 2
    err = capsys.readouterr().err
    assert "no HDFS is configured here" in err and "does not exist" not in err
    with pytest.raises(EdgeInputError, match="does not exist"):
        SparkEdges("file:///nonexistent/edges").open(spark)


#: A driver process that records every opening of a file under DS -- Python's ``open`` (an
#: audit hook) and pyarrow's Parquet readers, which open files in C++ (wrapped, calling
#: through) -- then runs ``tfront`` with the arguments given, and prints what it opened.
PROBE = textwrap.dedent("""
    import json, os, sys
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq
    DS, argv = sys.argv[1], sys.argv[2:]
    opened = []
    def note(p):
        if isinstance(p, (str, os.PathLike)) and DS in os.fspath(p):
            opened.append(os.fspath(p))
    sys.addaudithook(lambda event, args: note(args[0]) if event == "open" else None)
    def probe(fn):
        def wrapped(*a, **k):
            note(a[0] if a else k.get("source"))
            return fn(*a, **k)
        return wrapped
    pq.read_table, pq.read_metadata, pads.dataset = map(probe, (pq.read_table,
                                                                pq.read_metadata, pads.dataset))
    init = pq.ParquetFile.__init__
    def parquet_file(self, source, *a, **k):
        note(source)
        init(self, source, *a, **k)
    pq.ParquetFile.__init__ = parquet_file
    from engine.cli.main import main
    rc = main(argv)
    print(json.dumps({"rc": rc, "opened": sorted(set(opened))}))
""")


@pytest.mark.slow
def test_gh31_on_a_cluster_the_driver_never_opens_the_edge_files(tmp_path):
    """``local-cluster[2,1,1024]``: executors in JVMs of their own; the edges on ``file://``
    are read by them only -- the driver's Python process opens none of the dataset's files
    (:data:`PROBE`; a control run on one of its files as a local path, which the driver
    reads, shows the probe sees it) --, a run killed (SIGKILL) after epoch 1's labels were
    written but before its manifest named them is resumed by a rerun, and every epoch is
    then in ``--out`` once, equal to scipy."""
    import json

    src, dst = _graph(n=6_000, m=12_000, seed=11)
    ds = tmp_path / "ds"
    ds.mkdir()
    for k in range(4):
        pq.write_table(pa.table({"src": src[k * 3_000:(k + 1) * 3_000],
                                 "dst": dst[k * 3_000:(k + 1) * 3_000]}),
                       ds / f"part-{k:05d}.parquet")
    (ds / "_SUCCESS").touch()
    out = tmp_path / "out"

    def probe(*argv, **env):
        r = subprocess.run([sys.executable, "-c", PROBE, str(ds), *argv],
                           env=dict(os.environ, **env), capture_output=True, text=True,
                           timeout=900)
        return r, (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None)

    # control: a local file is the driver's to read (no Spark starts for it)
    r, info = probe("wcc", str(ds / "part-00000.parquet"), "-q")
    assert r.returncode == 0, r.stderr[-3000:]
    assert info["rc"] == 0 and info["opened"] == [str(ds / "part-00000.parquet")]

    cmd = ("wcc", ds.as_uri(), "--epochs", "3", "--out", str(out), "--master",
           "local-cluster[2,1,1024]", "--partitions", "2", "-q")
    r, _ = probe(*cmd, TFRONT_WCC_DRIVER_ROWS="0", TFRONT_WCC_CRASH_AT="epoch:1:after-data")
    assert r.returncode == -signal.SIGKILL, r.stderr[-3000:]
    r, info = probe(*cmd, TFRONT_WCC_DRIVER_ROWS="0")
    assert r.returncode == 0, r.stderr[-3000:]
    assert info["rc"] == 0 and info["opened"] == []
    _check_epochs(str(out), src, dst, [0, 4_000, 8_000, 12_000])
    parts = [n for n in os.listdir(out) if n.startswith("part-epoch-")]
    assert sorted({n[:17] for n in parts}) == [f"part-epoch-{e:06d}" for e in range(3)]
    assert len(parts) == len({p for r in json.loads(
        (out / "_tfront_manifest.json").read_text())["output"] for p in r["files"]})


def test_gh31_string_ids_through_a_dictionary_written_back_as_names(spark, tmp_path,
                                                                    monkeypatch):
    """``ids="string"``: names numbered on the executors; labels written as names, a
    component named by its alphabetically first name; a resume maps the names back."""
    import json

    from spark_plugin.jobs.recovery import MANIFEST

    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    rng = np.random.default_rng(5)
    names = [f"user{k:03d}" if k % 3 else f"https://x.org/{k}" for k in range(60)]
    pairs = [(names[a], names[b]) for a, b in rng.integers(0, 60, (70, 2))]
    d = tmp_path / "csv"
    d.mkdir()
    (d / "part-00000.csv").write_text("user,friend\n" + "".join(f"{a},{b}\n" for a, b in pairs))
    out = tmp_path / "out"
    with pytest.raises(EdgeInputError, match="--ids string reads them"):
        run_wcc(spark, str(d), epochs=2, out=str(out), progress=False)

    def want(k):
        parent = {}

        def find(x):
            while parent.setdefault(x, x) != x:
                x = parent[x]
            return x
        for a, b in pairs[:k]:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        return {v: find(v) for v in parent}

    res = run_wcc(spark, str(d), epochs=2, ids="string", out=str(out), overwrite=True,
                  partitions=2, progress=False)
    assert [s.new_edges for s in res.epochs] == [35, 35]
    got = written(str(out))
    assert dict(got[0]) == want(35) and dict(got[1]) == want(70)
    m = json.loads((out / MANIFEST).read_text())
    assert m["job"]["ids"] == "string"
    m["output"], m["loop"], m["input"] = m["output"][:1], [0], m["input"][:1]
    m["complete"], m["total"] = False, None
    (out / MANIFEST).write_text(json.dumps(m))
    for f in os.listdir(out):   # epoch 1's files: as after a kill before its manifest write
        if f.startswith("part-epoch-000001"):
            os.remove(out / f)
    res = run_wcc(spark, str(d), epochs=2, ids="string", out=str(out), partitions=2,
                  progress=False)
    assert res.resumed_at == 1 and [s.epoch for s in res.epochs] == [1]
    assert dict(written(str(out))[1]) == want(70)


@pytest.mark.parametrize("source", ["file", "spark"])
def test_gh31_changes_writes_only_what_changed_and_a_resume_rebuilds_the_labels(
        spark, tmp_path, monkeypatch, source):
    """``changes=True``: epoch ``e``'s files hold the vertices new or relabelled in it; the
    labels after ``e`` (latest row per vertex) equal scipy's; a resume after epoch 1 rebuilds
    them from the files of epochs 0-1 (on the driver for a file, by Spark for a Spark
    source)."""
    import json

    from spark_plugin.jobs.recovery import MANIFEST

    src, dst = _graph(n=200, m=300, seed=13)
    cuts = [0, 100, 200, 300]
    if source == "spark":
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
        edges = tmp_path / "ds"
        edges.mkdir()
        pq.write_table(pa.table({"src": src, "dst": dst}), edges / "part-00000.parquet")
        edges = edges.as_uri()
    else:
        edges = str(tmp_path / "e.parquet")
        pq.write_table(pa.table({"src": src, "dst": dst}), edges)
    out = tmp_path / "out"

    def check():
        got, now = written(str(out)), {}
        for e in range(3):
            want = expected_labels(src[:cuts[e + 1]], dst[:cuts[e + 1]])
            rows = dict(got[e])
            assert rows == {v: c for v, c in want.items() if now.get(v) != c}, f"epoch {e}"
            now.update(rows)
            assert now == want
    with pytest.raises(ValueError, match="needs out"):
        run_wcc(spark, edges, epochs=3, changes=True, progress=False)
    run_wcc(spark, edges, epochs=3, out=str(out), changes=True, partitions=2, progress=False)
    check()
    m = json.loads((out / MANIFEST).read_text())
    assert m["job"]["changes"] is True
    with pytest.raises(Exception, match="changes"):   # another job: without --changes
        run_wcc(spark, edges, epochs=3, out=str(out), partitions=2, progress=False)
    m["output"], m["loop"], m["input"] = m["output"][:2], [0, 1], m["input"][:2]
    m["complete"], m["total"] = False, None
    (out / MANIFEST).write_text(json.dumps(m))
    for f in os.listdir(out):
        if f.startswith("part-epoch-000002"):
            os.remove(out / f)
    res = run_wcc(spark, edges, epochs=3, out=str(out), changes=True, partitions=2,
                  progress=False)
    assert res.resumed_at == 2 and [s.epoch for s in res.epochs] == [2]
    check()


def test_gh32_a_pandas_csv_header_0_1_is_a_header_and_said(spark, tmp_path):
    """Issue 32 item 5: ``0,1`` first in a CSV file read by the driver is pandas' header."""
    from spark_plugin.sources import check_input

    p = tmp_path / "pandas.csv"
    p.write_text("0,1\n0,5\n1,7\n2,9\n")
    notes = check_input(str(p))
    assert len(notes) == 1 and "read as a header (the column positions" in notes[0]
    res = run_wcc(spark, str(p), progress=False)
    got = dict(zip(*(res.labels.column(c).to_pylist() for c in ("vertex", "component"))))
    assert got == {0: 0, 5: 0, 1: 1, 7: 1, 2: 2, 9: 2}


def test_gh31_sssp_reads_uris_as_wcc_does(spark, capsys):
    """``tfront sssp`` takes a URI as ``tfront wcc`` does (it said it read local files only):
    ``hdfs:///`` without HDFS is refused for that reason, not as a missing file
    (tests/spark/jobs/sssp/test_sssp_sources.py runs it on Spark sources)."""
    assert tfront(["sssp", "hdfs:///data/edges", "--source", "1"]) == 2
    err = capsys.readouterr().err
    assert "no HDFS is configured here" in err and "does not exist" not in err
    assert "reads local edge files" not in err


def test_gh31_a_local_parquet_file_past_the_drivers_budget_is_read_by_the_executors(
        spark, tmp_path, monkeypatch):
    """A local Parquet file whose epochs are larger than the driver's budget (the sizing
    rule's, here made 50 rows) becomes the Spark source ``file://PATH`` with the same slices,
    named and recorded as the driver's reading would be: a rerun that the driver reads
    finds every epoch final."""
    import spark_plugin.jobs.wcc.job as wcc_job

    monkeypatch.delenv("TFRONT_WCC_DRIVER_ROWS", raising=False)
    src, dst = _graph(n=200, m=300, seed=17)
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst}), path)
    out = tmp_path / "out"
    job = {}
    real = wcc_job.WccJob.too_big_for_driver

    def seen(self, edges):
        job["switched"] = real(self, edges)
        return job["switched"]
    monkeypatch.setattr(wcc_job.WccJob, "too_big_for_driver", seen)
    monkeypatch.setattr(wcc_job, "driver_finish_rows", lambda spark: (50, "test budget"))
    res = run_wcc(spark, str(path), epochs=3, out=str(out), partitions=2, progress=False)
    assert job["switched"] is True
    assert [s.source for s in res.epochs] == [f"{path} rows 1-100", f"{path} rows 101-200",
                                              f"{path} rows 201-300"]
    _check_epochs(str(out), src, dst, [0, 100, 200, 300])
    monkeypatch.undo()   # the real budget: the driver reads the file; same job, all final
    again = run_wcc(spark, str(path), epochs=3, out=str(out), partitions=2, progress=False)
    assert again.resumed_at == 3 and again.epochs == []
    # without out, a local input's labels are a table, as when the driver reads it
    monkeypatch.setattr(wcc_job, "driver_finish_rows", lambda spark: (50, "test budget"))
    res = run_wcc(spark, str(path), partitions=2, progress=False)
    assert isinstance(res.labels, pa.Table)
    assert dict(zip(*(res.labels.column(c).to_pylist() for c in ("vertex", "component")))) \
        == expected_labels(src, dst)


def test_gh31_windows_are_exact_past_2_53_and_text_lines_may_start_with_a_tab(spark, tmp_path):
    """Integer windows by integer arithmetic (a double would put 1.7e18 + 999 in the next
    window of 1000); dates by their UTC day; a text line that starts with a tab, or holds
    only one, is what the driver's reader makes of it."""
    base = 1_700_000_000_000_000_000
    df = spark.createDataFrame([(1, 2, base + 999), (3, 4, base + 1000), (5, 6, base - 1)],
                               "src long, dst long, t long")
    eps = SparkEdges(df, plan=EpochPlan(column="t", every="1000")).epochs(spark)
    assert [(e.what, sorted(map(tuple, e.frame.collect()))) for e in eps] == [
        (f"t in [{base - 1000}, {base})", [(5, 6)]),
        (f"t in [{base}, {base + 1000})", [(1, 2)]),
        (f"t in [{base + 1000}, {base + 2000})", [(3, 4)])]
    days = spark.createDataFrame([(1, 2, dt.date(2026, 11, 1)), (3, 4, dt.date(2026, 11, 2)),
                                  (5, 6, dt.date(2026, 11, 3))], "src long, dst long, d date")
    eps = SparkEdges(days, plan=EpochPlan(column="d", every="2d")).epochs(spark)
    day = (dt.date(2026, 11, 1) - dt.date(1970, 1, 1)).days   # windows count from 1970
    assert [e.rows for e in eps] == ([2, 1] if day % 2 == 0 else [1, 2])
    d = tmp_path / "t"
    d.mkdir()
    (d / "part-00000.txt").write_text("\t1 2\n\t\n3\t4\n")
    eps = SparkEdges(str(d)).epochs(spark)
    assert sorted(map(tuple, eps[0].frame.collect())) == [(1, 2), (3, 4)]
