"""The job framework's report shipping without Spark: a task's :class:`engine.Report` as
progress rows (``StageTask._progress_batch``) and back per producer (``reports_of``), as
the driver receives a stage's rows from many tasks -- some with real rows, some only their
marker -- and the framework's own capability reports (``_move_initial``, ``end_report``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from engine import Backend, BatchError, Report
from spark_plugin.service.device import KernelPlacement
from spark_plugin.jobs.arrow import arrow_ragged, arrow_take, list_matrix
from spark_plugin.jobs.framework import REPORT_COLUMNS, EpochJob, StageTask, reports_of
from spark_plugin.jobs.sssp.job import sssp_dataflow
from spark_plugin.jobs.wcc.job import WccJob, wcc_graph
from strategies import examples

PLACEMENT = KernelPlacement(Backend.CPU, None, "no GPU in this test")
WCC = wcc_graph().dataflow      # m = 1, every operator in the loop: timestamps (e, i)
SSSP = sssp_dataflow()          # operators at depth 0 (e,) and depth 1 (e, i)


class Task(StageTask):
    """A stage whose shipping is tested; its work passes its rows through, reporting nothing."""
    data_schema = pa.schema([("a", pa.int64())])

    def work(self, cols, part):
        return cols, Report(), PLACEMENT


def ship(reports: dict, large: bool = False, seq: int = 7) -> pa.Table:
    """The progress rows the driver collects from tasks ``producer -> Report``."""
    task = Task(seq, "job", large)
    batches = [task._progress_batch(r, p, PLACEMENT) for p, r in reports.items()]
    return pa.Table.from_batches(batches).select(REPORT_COLUMNS + ["producer"])


def rows(report: Report) -> list:
    """A report's rows in its own words: (kind, operator path, port, ts, count)."""
    c = report.to_arrays()
    return [(int(k), c["ops"][o], int(p), tuple(t[:w].tolist()), int(n))
            for k, o, p, t, w, n in zip(c["kind"], c["op"], c["port"], c["ts"], c["width"],
                                        c["count"])]


def same_pointstamps(df, a: Report, b: Report) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(df.pointstamps(a), df.pointstamps(b)))


#: valid against the initial capabilities (edges out0, label out0, star out1 at (0, 0)):
#: the edge input sends, the label operator takes some and acquires a capability
REAL = (Report().produced("edges", 0, [[0, 0], [0, 1]], [5, 1]).consumed("label", 1, (0, 0), 5)
        .capabilities("label", 0, (0, 1), 1))


@pytest.mark.parametrize("large", [False, True], ids=["list", "large_list"])
@pytest.mark.parametrize("kinds", [("marker",), ("real",), ("real", "marker"),
                                   ("marker", "real", "marker", "real")])
def test_reports_round_trip_from_real_and_marker_producers(kinds, large):
    """Every producer gets back exactly its report; a marker gives an empty one, and a
    marker beside real rows is no operator (``''`` used to reach ``Ports`` and fail)."""
    sent = {f"job-{i}": (REAL if k == "real" else Report()) for i, k in enumerate(kinds)}
    got = reports_of(ship(sent, large))
    assert list(got) == list(sent)
    for p, r in sent.items():
        assert rows(got[p]) == rows(r)
        assert same_pointstamps(WCC, got[p], r)
        assert "" not in got[p].to_arrays()["ops"]
    # the driver guards the stage's reports together (the check that raised on '')
    WCC.check(Report.concat(got.values()), WCC.tracker(backend="reference"))


@st.composite
def stage_reports(draw, df):
    """1-4 producers, each a marker or random rows at the dataflow's operators' ports,
    timestamps as wide as each operator's depth."""
    p = df.ports
    leaves = [i for i in range(len(p.names)) if p.inputs[i] or p.outputs[i]]
    out = {}
    for t in range(draw(st.integers(1, 4))):
        r = Report()
        for _ in range(draw(st.integers(0, 4))):
            leaf = draw(st.sampled_from(leaves))
            kinds = (["consumed"] if p.inputs[leaf] else []) + \
                    (["produced", "capabilities"] if p.outputs[leaf] else [])
            kind = draw(st.sampled_from(kinds))
            ports = p.inputs[leaf] if kind == "consumed" else p.outputs[leaf]
            port = draw(st.integers(0, int(ports) - 1))
            n = draw(st.integers(1, 3))
            w = p.m + int(p.depth[leaf])
            ts = draw(st.lists(st.lists(st.integers(0, 5), min_size=w, max_size=w),
                               min_size=n, max_size=n))
            lo = -3 if kind == "capabilities" else 0
            counts = draw(st.lists(st.integers(lo, 9), min_size=n, max_size=n))
            getattr(r, kind)(p.names[leaf], port, np.array(ts, np.int64), counts)
        out[f"job-{t}"] = r
    return out


@examples(25)
@given(data=st.data(), large=st.booleans())
def test_reports_round_trip_random_stages(data, large):
    """Random stages on both jobs' dataflows (one timestamp width, or two mixed): the rows,
    their widths and their pointstamps come back per producer as sent."""
    df = data.draw(st.sampled_from([WCC, SSSP]))
    sent = data.draw(stage_reports(df))
    got = reports_of(ship(sent, large))
    assert list(got) == list(sent)
    for p, r in sent.items():
        assert rows(got[p]) == rows(r)
        assert same_pointstamps(df, got[p], r)


def test_a_million_rows_round_trip_exactly():
    """A task's report of a million messages ships and comes back columnar, exact."""
    n = 1_000_000
    ts = np.stack([np.full(n, 3, np.int64), np.arange(n, dtype=np.int64) % 977], 1)
    counts = np.arange(n, dtype=np.int64) % 5 + 1
    big = Report().consumed("star", 0, ts, counts)
    small = Report().produced("edges", 0, (3, 0), 11)
    got = reports_of(ship({"job-0": big, "job-1": Report(), "job-2": small}))
    assert list(got) == ["job-0", "job-1", "job-2"] and len(got["job-1"]) == 0
    c = got["job-0"].to_arrays()
    assert np.array_equal(c["ts"], ts) and np.array_equal(c["count"], counts)
    assert int(c["count"].sum()) == int(counts.sum())
    assert np.all(c["kind"] == 1) and np.all(c["port"] == 0)
    assert all(c["ops"][o] == "star" for o in np.unique(c["op"]))
    assert rows(got["job-2"]) == rows(small)


def test_reports_of_rejects_a_marker_that_carries_progress():
    """A row with an empty ``op`` is a marker: a count on it would be dropped, so it is an
    error naming the row and the producer."""
    t = ship({"job-0": REAL, "job-1": Report()})
    count = t.column("count").to_numpy().copy()
    count[-1] = 4
    bad = t.set_column(t.schema.get_field_index("count"), "count", pa.array(count))
    with pytest.raises(BatchError, match=r"row 4: a marker row .* 'job-1'.*count \(4\)"):
        reports_of(bad)
    nulls = t.set_column(t.schema.get_field_index("count"), "count",
                         pa.array([None] + count[1:].tolist(), pa.int64()))
    with pytest.raises(BatchError, match="'count' is null in 1 rows"):
        reports_of(nulls)


def test_list_and_string_columns_from_buffers():
    """The columnar builders and reader agree with Arrow's own conversions, on list,
    large_list and fixed_size_list, sliced and in several chunks."""
    vals, widths = np.arange(9, dtype=np.int64), np.array([2, 0, 3, 1, 3])
    for typ in (pa.list_(pa.int64()), pa.large_list(pa.int64())):
        a = arrow_ragged(typ, vals, widths)
        a.validate(full=True)
        assert a.to_pylist() == [[0, 1], [], [2, 3, 4], [5], [6, 7, 8]]
        for col in (a.slice(1, 3), pa.chunked_array([a.slice(0, 2), a.slice(2)])):
            m, w = list_matrix(col, "ts")
            expect = col.to_pylist()
            assert w.tolist() == [len(x) for x in expect]
            assert [m[i, :w[i]].tolist() for i in range(len(w))] == expect
    fixed = pa.FixedSizeListArray.from_arrays(pa.array(vals[:6]), 2).slice(1)
    assert list_matrix(fixed, "ts")[0].tolist() == [[2, 3], [4, 5]]
    with pytest.raises(BatchError, match="'ts': 1 null rows"):
        list_matrix(pa.array([[1], None], pa.list_(pa.int64())), "ts")
    with pytest.raises(ValueError, match="widths sum to 9, 8 values"):
        arrow_ragged(pa.list_(pa.int64()), vals[:8], widths)
    for typ in (pa.string(), pa.large_string()):
        s = arrow_take(typ, ["loop/relax", "", "ü"], np.array([2, 0, 1, 0]))
        s.validate(full=True)
        assert s.to_pylist() == ["ü", "loop/relax", "", "loop/relax"]


def test_move_initial_and_end_report_release_every_capability():
    """A resumed WCC job moves every initial capability on to its first epoch; when the
    input ends there, the job's ``end_report`` with the input's drop leaves nothing held:
    every frontier empty (checked by the reference tracker's guards as well)."""
    job = WccJob.__new__(WccJob)        # only the reports: no Spark session involved
    job.driver = SimpleNamespace(dataflow=WCC)
    rt = WCC.tracker(backend="reference")
    rt.apply(EpochJob._move_initial(job, 3))
    for op, port, t in WCC.initial_capabilities():
        assert rt.capabilities(op, port) == {(3,) + t[1:]: 1}
    op, port = job.input
    rt.apply(job.end_report(3).capabilities(op, port, job.time(op, 3), -1))
    for name, inputs in zip(WCC.ports.names, WCC.ports.inputs):
        assert all(rt.frontier(name, i) == [] for i in range(int(inputs)))


def test_gh32_the_bar_names_the_epoch_that_runs_from_its_start():
    """Issue 32 item 20: after epoch 0's last round the bar said ``epoch 0 round 1`` until
    epoch 1's first round ended, so a Ctrl-C then showed epoch 0; the framework now names
    each epoch when it starts (:meth:`Progress.start`)."""
    import io

    from tqdm import tqdm

    from spark_plugin.jobs.progress_bar import Progress

    p = Progress(0, 2, "sssp")
    p.bar = tqdm(total=2, file=io.StringIO())
    p.round(0, 1, [(1,)], "step.in3")
    assert p.bar.postfix.startswith("epoch 0 round 1")
    p.start(1)
    assert p.bar.postfix == "epoch 1 started"
    p.close()
