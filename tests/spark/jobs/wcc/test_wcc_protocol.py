"""Frontier-driven completion of the WCC job, task retries, lost delta batches, bad input."""

import gzip
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.main import _parser
from engine.operate.progress_view import read_progress
from spark_plugin.errors import MissingBatchError
from spark_plugin.jobs.wcc.job import EdgeInputError, WccProtocolError, read_edges, run_wcc
from wcc_cases import EDGES, expected, write_text, written

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("driver_rows", [None, "0"], ids=["driver-finish", "spark-loop"])
def test_epochs_are_written_after_the_output_frontier_passes_them_exactly_once(
        spark, tmp_path, monkeypatch, driver_rows):
    if driver_rows is not None:
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", driver_rows)
    """Every task fails on its first attempt; Spark retries; each epoch is still written once,
    after the frontier at output.in0 passed it, with the right labels."""
    src = write_text(tmp_path / "g.txt", EDGES)
    out = str(tmp_path / "out")
    failures = tmp_path / "failures"
    failures.mkdir()
    fdir = str(failures)

    def fail_first_attempt(run):
        def wrapped(batches):
            from pyspark import TaskContext

            ctx = TaskContext.get()
            if ctx.attemptNumber() == 0:
                open(os.path.join(fdir, f"{ctx.stageId()}-{ctx.partitionId()}"), "w").close()
                raise RuntimeError("injected failure on the first attempt")
            yield from run(batches)
        return wrapped

    seen = []

    def on_epoch(s):
        now = written(out)
        seen.append((s.epoch, sorted(now), len(now.get(s.epoch, [])), s.vertices,
                     s.output_frontier))

    log = tmp_path / "progress.jsonl"
    res = run_wcc(spark, src, epochs=2, out=out, partitions=2, progress=False,
                  on_epoch=on_epoch, task_wrapper=fail_first_attempt, progress_log=log)
    assert len(os.listdir(failures)) > 0
    assert [x[0] for x in seen] == [0, 1]
    for e, epochs_on_disk, rows, vertices, frontier in seen:
        assert epochs_on_disk == list(range(e + 1))      # nothing of a later epoch yet
        assert rows == vertices                           # this epoch written exactly once
        assert all(t[0] > e for t in frontier)            # output frontier passed e
    final = written(out)
    n = len(EDGES)
    for e in range(2):
        edges = EDGES[:(e + 1) * n // 2]
        assert dict(final[e]) == expected(edges)
        assert len(final[e]) == len(expected(edges))
    assert res.service.counts().num_rows == 0
    st = res.service.status()
    assert st.next_seq[f"wcc-0"] == res.stages and st.next_seq["wcc-1"] == res.stages
    # the driver's union-find is the driver's batch: the rows leave star.in0 as wcc-driver's
    # report, and no task producer is credited with a step that no task ran
    fr = read_progress(log).of("frontier")
    on_driver = [ev for ev in fr if ev["step"] == "driver union-find"]
    if driver_rows is None:
        assert {ev["producer"] for ev in on_driver} == {"wcc-driver"}
        assert {(ev["input"], ev["epoch"]) for ev in on_driver if [ev["epoch"], 0]
                in ev["removed"]} >= {("star.in0", 0), ("star.in0", 1)}
    else:
        assert on_driver == []


def test_a_lost_delta_batch_stops_the_epoch_before_it_is_written(spark, tmp_path):
    """Partition 0's progress deltas of epoch 1 never arrive: the frontier cannot pass, the
    job fails with a named error, and only epoch 0 is on disk."""
    src = write_text(tmp_path / "g.txt", EDGES)
    out = str(tmp_path / "out")

    class DropDeltas:
        def __init__(self, run):
            self.run = run
            self.epoch = run.__self__.epoch

        def __call__(self, batches):
            from pyspark import TaskContext

            part = TaskContext.get().partitionId()
            for b in self.run(batches):
                if self.epoch == 1 and part == 0 and b.column("kind").null_count == 0:
                    continue
                yield b

    with pytest.raises((MissingBatchError, WccProtocolError), match="wcc-0"):
        run_wcc(spark, src, epochs=2, out=out, partitions=2, progress=False,
                task_wrapper=DropDeltas)
    assert sorted(written(out)) == [0]


def _pointstamps(kind, cols, part=0, more=True, it=0):
    """Stage ``kind``'s report for epoch 1 iteration ``it``, as the WCC dataflow translates
    it: ``{(loc, ts): diff}``, and the task's output columns."""
    from spark_plugin.jobs.wcc.job import _Stage, wcc_graph

    out, report, _ = _Stage(kind, 1, it, 0, False, None, "cpu", more).work(cols, part)
    loc, ts, diff = wcc_graph().dataflow.pointstamps(report)
    return {(int(l), tuple(t)): int(d) for l, t, d in zip(loc, ts.tolist(), diff)}, out


def test_stage_reports_are_the_loop_pointstamps():
    """Issue 13: a task reports in the operators' words (consumed, produced, capabilities);
    the WCC dataflow turns that into the pointstamp changes of the loop: the messages a
    stage takes from its input and sends on, around the feedback (+1 iteration), and the
    label operator's capability for its state, moved on by task 0 of the contract stage."""
    from spark_plugin.jobs.wcc.job import wcc_graph

    wg = wcc_graph()
    b_out0 = wg.dataflow.source("label", 0)
    a = np.array([1, 2, 5, 3, 9, 9], np.int64)
    b = np.array([2, 3, 6, 1, 2, 8], np.int64)
    f = np.array([True, True, False, True, True, False])
    got, out = _pointstamps("contract", {"a": a, "b": b, "f": f}, part=0)
    assert got == {(wg.b_in1, (1, 0)): -4, (wg.s_in0, (1, 0)): len(out["a"]),
                   (b_out0, (1, 0)): -1, (b_out0, (2, 0)): 1}
    got, _ = _pointstamps("contract", {"a": a, "b": b, "f": f}, part=1, more=False)
    assert set(got) == {(wg.b_in1, (1, 0)), (wg.s_in0, (1, 0))}   # only task 0 moves it
    got, _ = _pointstamps("contract", {"a": a, "b": b, "f": f}, part=0, more=False)
    assert got[(b_out0, (1, 0))] == -1 and (b_out0, (2, 0)) not in got
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    got, out = _pointstamps("small", {"a": lo, "b": hi, "f": f}, it=2)
    new = int(out["f"].sum())
    assert new > 0 and got == {(wg.s_in0, (1, 2)): -len(lo), (wg.b_in0, (1, 3)): new}
    both = {"a": np.r_[lo, hi], "b": np.r_[hi, lo], "f": np.r_[f, f]}
    got, out = _pointstamps("large", both, it=3)
    assert got == {(wg.b_in0, (1, 3)): -int(f.sum()), (wg.s_in0, (1, 3)): len(out["a"])}


def test_a_report_that_breaks_a_guard_is_refused_before_anything_is_applied(spark, tmp_path):
    """Issue 13: the driver guards every stage's reports against the capabilities held. A
    contract task that drops the label operator's capability twice (it holds one) stops the
    job with UnheldCapabilityError naming the operator and the time; nothing of the stage
    is applied (its sequence number never arrives) and nothing is written."""
    from engine.errors import UnheldCapabilityError

    src = write_text(tmp_path / "g.txt", EDGES)
    out = str(tmp_path / "out")

    def drop_twice(run):
        def wrapped(batches):
            for b in run(batches):
                kinds, counts = b.column("kind").to_pylist(), b.column("count").to_pylist()
                if 0 in kinds:   # ReportKind.CAPABILITY
                    counts = [c * 2 if k == 0 and c < 0 else c for k, c in zip(kinds, counts)]
                    b = b.set_column(b.schema.get_field_index("count"), "count",
                                     pa.array(counts, pa.int64()))
                yield b
        return wrapped

    svc = []
    with pytest.raises(UnheldCapabilityError,
                       match=r"'label' output 0 drops 2 capabilities at \(0, 0\) but holds 1"):
        run_wcc(spark, src, epochs=1, out=out, partitions=2, progress=False,
                task_wrapper=drop_twice, on_epoch=svc.append)
    assert svc == [] and not [p for p in os.listdir(out) if p.endswith(".parquet")]


def test_bad_epoch_file_raises_named_error_and_writes_nothing_for_it(spark, tmp_path):
    d = tmp_path / "epochs"
    d.mkdir()
    write_text(d / "e0.txt", EDGES[:4])
    with open(d / "e1.txt", "w") as f:
        f.write("1 2\n3 x\n")
    out = str(tmp_path / "out")
    with pytest.raises(EdgeInputError, match=r"e1\.txt:2: vertex id 'x' is not an integer"):
        run_wcc(spark, d, out=out, partitions=2, progress=False)
    assert sorted(written(out)) == [0]


@pytest.mark.parametrize(("text", "line", "what"), [
    ("1 2\n3\n", 2, "malformed line"),
    ("1 2\n# c\n\n3 4 5\n", 4, "malformed line"),
    ("1 2\n1.5 3\n", 2, "is not an integer"),
    ("1 2\n2 -3\n", 2, "is negative"),
    ("1 2\n99999999999999999999 1\n", 2, "does not fit int64"),
])
def test_bad_text_input_names_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(EdgeInputError, match=rf"bad\.txt:{line}: .*{what}") as ei:
        read_edges(p)
    assert ei.value.line == line and ei.value.path == str(p)


def test_input_formats(tmp_path):
    want = [(1, 2), (3, 4), (5, 6)]
    (tmp_path / "a.txt").write_text("# SNAP\n1\t2\n3,4 # trailing comment\n\n5  6\n")
    with gzip.open(tmp_path / "a.txt.gz", "wt") as f:
        f.write("1 2\n3 4\n5 6\n")
    (tmp_path / "a.csv").write_text("w,dst,src\n9,2,1\n9,4,3\n9,6,5\n")
    pq.write_table(pa.table({"src": pa.array([1, 3, 5], pa.int32()), "dst": [2, 4, 6]}),
                   tmp_path / "a.parquet")
    for name in ("a.txt", "a.txt.gz", "a.csv", "a.parquet"):
        t = read_edges(tmp_path / name)
        assert t.schema.names == ["src", "dst"] and t.schema.field("src").type == pa.int64()
        assert list(zip(t.column("src").to_pylist(), t.column("dst").to_pylist())) == want, name
    (tmp_path / "bad.csv").write_text("src,dst\n1,2\n3\n")
    with pytest.raises(EdgeInputError, match=r"bad\.csv:3: malformed line"):
        read_edges(tmp_path / "bad.csv")
    pq.write_table(pa.table({"src": [1, -3], "dst": [2, 4]}), tmp_path / "neg.parquet")
    with pytest.raises(EdgeInputError, match=r"neg\.parquet: row 2: vertex id -3"):
        read_edges(tmp_path / "neg.parquet")
    assert read_edges(tmp_path / "a.txt").num_rows == 3
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    assert read_edges(empty).num_rows == 0


def test_cli_parses_wcc():
    args = _parser().parse_args(["wcc", "g.txt", "--epochs", "4", "--out", "o", "--master",
                                 "local[2]", "--partitions", "3", "--backend", "cpu"])
    assert (args.edges, args.epochs, args.out, args.master, args.partitions, args.backend) == \
        ("g.txt", 4, "o", "local[2]", 3, "cpu")
    assert args.follow is None
    assert _parser().parse_args(["wcc", "d", "--follow"]).follow == math.inf
    assert _parser().parse_args(["wcc", "d", "--follow", "30"]).follow == 30.0


def test_parquet_slices_read_only_their_rows_across_row_groups(tmp_path):
    from spark_plugin.sources import ParquetSlice, epoch_sources

    n = 1000
    src = np.arange(n, dtype=np.int64)
    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"w": src * 0, "src": src, "dst": src + 7}), path, row_group_size=64)
    total, sources = epoch_sources(path, 3)
    sources = list(sources)
    assert total == 3 and [s.scan.rows for s in sources] == [333, 333, 334]
    got = []
    for s in sources:
        for p in range(4):
            part = s.scan.part(p, 4)
            t = part.read()
            assert t.schema.names == ["src", "dst"]
            assert t.column("src").to_pylist() == list(range(part.start, part.stop))
            got += t.column("dst").to_pylist()
        assert s.read().num_rows == s.scan.rows
    assert got == (src + 7).tolist()
    assert ParquetSlice(path, 5, 5).read().num_rows == 0


@pytest.mark.parametrize("executor_input", [True, False], ids=["tasks-read", "driver-reads"])
def test_parquet_epochs_read_by_tasks_or_driver(spark, tmp_path, executor_input):
    """A single Parquet file in 3 epochs: the tasks read their own row groups (or the driver
    reads and ships the rows); a negative id in epoch 2 stops that epoch with the file row,
    epochs 0 and 1 are written with the right labels."""
    edges = EDGES * 3 + [(30, 31), (31, 30), (40, 40)]
    src = [s for s, _ in edges]
    dst = [d for _, d in edges]
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst}), good, row_group_size=4)
    out = str(tmp_path / "out")
    res = run_wcc(spark, good, epochs=3, out=out, partitions=2, progress=False,
                  executor_input=executor_input)
    final = written(out)
    n = len(edges)
    for e in range(3):
        assert dict(final[e]) == expected(edges[:(e + 1) * n // 3]), e
    assert res.epochs[-1].edges == n and res.service.counts().num_rows == 0
    # the dataset is one part file per epoch, readable by Spark as well
    assert spark.read.parquet(out).count() == sum(len(v) for v in final.values())
    bad_dst = list(dst)
    bad_dst[n - 2] = -5
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"src": src, "dst": bad_dst}), bad, row_group_size=4)
    out2 = str(tmp_path / "out2")
    with pytest.raises(EdgeInputError, match=rf"bad\.parquet: row {n - 1}: vertex id -5") as ei:
        run_wcc(spark, bad, epochs=3, out=out2, partitions=2, progress=False,
                executor_input=executor_input)
    assert ei.value.line == n - 1
    assert sorted(written(out2)) == [0, 1]


def _write_epoch(d, name, edges):
    """Write an epoch file the way a stream writer should: a hidden name, then a rename."""
    tmp = d / f".{name}.tmp"
    write_text(tmp, edges)
    os.replace(tmp, d / name)


def test_a_followed_directory_is_a_stream_of_epochs(spark, tmp_path):
    """Files that appear while the job runs become the next epochs, each exactly once; the
    edge input holds its capability for the next epoch until ``_DONE``, so every epoch is
    final from its frontier and, at the end, every count is zero."""
    from spark_plugin.sources import DONE_MARKER

    d = tmp_path / "stream"
    d.mkdir()
    chunks = [EDGES[:3], EDGES[3:6], [], EDGES[6:]]
    _write_epoch(d, "e00.txt", chunks[0])
    out = str(tmp_path / "out")
    seen = []

    def on_epoch(s):
        seen.append(s)
        nxt = s.epoch + 1
        if nxt < len(chunks):          # the producer writes the next file only now
            _write_epoch(d, f"e{nxt:02d}.txt", chunks[nxt])
        else:
            (d / DONE_MARKER).touch()

    res = run_wcc(spark, d, out=out, partitions=2, progress=False, on_epoch=on_epoch,
                  follow=60.0)   # the marker ends it; the idle time is only a safety net
    assert [s.epoch for s in seen] == [0, 1, 2, 3]
    final = written(out)
    for e in range(4):
        edges = [x for c in chunks[:e + 1] for x in c]
        assert dict(final[e]) == expected(edges), e
        assert all(t[0] > e for t in seen[e].output_frontier) and seen[e].output_frontier
    assert res.service.counts().num_rows == 0


def test_a_followed_directory_ends_after_the_idle_time(spark, tmp_path):
    d = tmp_path / "stream"
    d.mkdir()
    _write_epoch(d, "e00.txt", EDGES)
    res = run_wcc(spark, d, partitions=2, progress=False, follow=0.5)
    assert len(res.epochs) == 1 and dict(zip(*(res.labels.column(c).to_pylist()
                                               for c in ("vertex", "component")))) == expected(EDGES)
    assert res.service.counts().num_rows == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run_wcc(spark, empty, partitions=2, progress=False, follow=0.2)
    assert res.epochs == [] and res.service.counts().num_rows == 0
    with pytest.raises(EdgeInputError, match="needs a directory"):
        run_wcc(spark, tmp_path / "stream" / "e00.txt", partitions=2, progress=False,
                follow=1.0)


def test_spark_loop_with_a_reliable_checkpoint_directory(spark, tmp_path, monkeypatch):
    """With checkpoint_dir the Spark loop's stages are checkpointed to files there (not
    localCheckpoint); the labels are the same."""
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    src = write_text(tmp_path / "g.txt", EDGES)
    ck = tmp_path / "ck"
    res = run_wcc(spark, src, epochs=2, partitions=2, progress=False, checkpoint_dir=str(ck))
    got = dict(zip(*(res.labels.column(c).to_pylist() for c in ("vertex", "component"))))
    assert got == expected(EDGES)
    files = [p for p in ck.rglob("*") if p.is_file() and p.name.startswith("part-")]
    assert files, "no checkpoint files written"
    assert res.service.counts().num_rows == 0
