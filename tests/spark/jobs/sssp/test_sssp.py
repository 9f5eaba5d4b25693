"""The shortest-paths job (spark_plugin.jobs.sssp.job): every epoch's distances equal scipy's, every
decision came from a frontier, a lost report stops the epoch before it is written."""

import contextlib
import json
import os
import signal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from perf import graphs as G
from spark_plugin.errors import OutputStateError
from spark_plugin.jobs.sssp.job import SsspProtocolError, run_sssp
from spark_plugin.sources import EdgeInputError, epoch_sources, read_weighted_edges
from spark_plugin.jobs.recovery import CRASH_ENV, MANIFEST
from strategies import SCALE, weighted_edge_lists
from graph_cases import scipy_distances

pytestmark = pytest.mark.spark


def written(out) -> dict:
    """``{epoch: {vertex: distance}}`` of the dataset ``out``."""
    if not os.path.exists(out):
        return {}
    t = pq.read_table(out)
    res: dict = {}
    for e, v, d in zip(*(t.column(c).to_pylist() for c in ("epoch", "vertex", "distance"))):
        assert v not in res.setdefault(e, {}), f"vertex {v} written twice in epoch {e}"
        res[e][v] = d
    return res


def check_epochs(out, src, dst, w, source, epochs, undirected=False):
    """Every epoch in ``out`` equals scipy's distances on the edges of epochs 0..e; vertices
    scipy cannot reach are absent."""
    got = written(out)
    assert sorted(got) == list(range(epochs))
    cuts = [(i * len(src)) // epochs for i in range(epochs + 1)]
    for e in range(epochs):
        s, d, x = src[:cuts[e + 1]], dst[:cuts[e + 1]], w[:cuts[e + 1]]
        if undirected:
            s, d, x = np.r_[s, d], np.r_[d, s], np.r_[x, x]
        verts = np.unique(np.r_[s, d, [source]])
        expect = scipy_distances(s, d, x, verts, source)
        reached = {int(v): float(t) for v, t in zip(verts, expect) if np.isfinite(t)}
        assert set(got[e]) == set(reached), f"epoch {e}: reached vertices differ"
        for v, t in reached.items():
            assert got[e][v] == pytest.approx(t), f"epoch {e} vertex {v}"


@settings(max_examples=3 * SCALE, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(weighted_edge_lists(max_vertices=8, max_edges=20), st.integers(1, 3),
       st.sampled_from(["driver", "spark", "both"]), st.sampled_from(["locality", "hash"]),
       st.data())
def test_every_epoch_equals_scipy_on_random_graphs(spark, tmp_path_factory, monkeypatch, g,
                                                    epochs, where, partitioner, data):
    """Every epoch equal to scipy's, whether the driver finishes every epoch, Spark runs every
    one (``$TFRONT_SSSP_DRIVER_ROWS=0``), or the edges outgrow the driver's budget after the
    first epoch; with either partitioner."""
    budget = {"driver": None, "spark": "0", "both": "6"}[where]
    if budget is None:
        monkeypatch.delenv("TFRONT_SSSP_DRIVER_ROWS", raising=False)
    else:
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", budget)
    src, dst, w = g
    if len(src) < epochs:
        src, dst, w = np.r_[src, [0] * epochs], np.r_[dst, [1] * epochs], np.r_[w, [1] * epochs]
        w = w.astype(g[2].dtype)
    weighted = w.dtype.kind == "f"
    source = int(data.draw(st.sampled_from(np.unique(np.r_[src, dst]).tolist()), label="source"))
    table = pa.table({"src": src, "dst": dst, "weight": w})
    out = str(tmp_path_factory.mktemp("sssp") / "out")
    res = run_sssp(spark, table, source, epochs=epochs, out=out, weighted=weighted,
                   partitions=2, partitioner=partitioner)
    check_epochs(out, src, dst, w, source, epochs)
    ran = [x.where for x in res.epochs]
    assert ran == {"driver": ["driver"] * epochs, "spark": ["spark"] * epochs}.get(where, ran)
    assert res.stages == sum(x.rounds for x in res.epochs if x.where == "spark")
    assert res.service.counts().num_rows == 0   # everything consumed, every capability dropped


def test_grid_and_rmat_of_the_benchmark_equal_scipy_every_epoch(spark, tmp_path):
    """Unweighted (BFS levels) on perf/graphs.py's grid (from a corner: a long chain of
    rounds) and R-MAT (skewed degrees, unreachable vertices), text and Parquet input."""
    s, d = G.grid(3)
    G.write_snap(tmp_path / "grid.txt", s, d)
    run_sssp(spark, str(tmp_path / "grid.txt"), 0, epochs=2, out=str(tmp_path / "g"))
    check_epochs(str(tmp_path / "g"), s, d, np.ones(len(s)), 0, 2)
    s, d = G.rmat(5, 100, seed=3)
    G.write_parquet(tmp_path / "rmat.parquet", s, d)
    source = int(s[0])
    res = run_sssp(spark, str(tmp_path / "rmat.parquet"), source, epochs=2,
                   out=str(tmp_path / "r"), undirected=True, partitions=2)
    check_epochs(str(tmp_path / "r"), s, d, np.ones(len(s)), source, 2, undirected=True)
    assert res.epochs[-1].edges == 2 * len(s)
    # issue 23 item 13: the line counted each edge twice without saying so
    assert f"edges {len(s)} (both ways: {2 * len(s)} directed)" in res.epochs[-1].line()


@pytest.mark.parametrize("where", ["driver", "spark"])
def test_every_decision_came_from_a_frontier_and_epochs_are_written_after_it(
        spark, tmp_path, monkeypatch, where):
    """Rounds complete only when the frontiers at step.in3 and min.in0 passed (e, i); an epoch
    converges when step.in3 has no element of epoch e; it is written only after output.in0
    passed e -- whether the driver finished the epoch (one round, no Spark job) or Spark ran
    it (``$TFRONT_SSSP_DRIVER_ROWS=0``, hash partitions: a round per crossing). The frontiers
    each decision recorded are checked against an independent record -- the progress log's
    frontier events, replayed up to the step the decision closed -- and against what is on
    disk when each epoch is announced."""
    if where == "spark":
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    src = np.array([0, 1, 2, 10, 0], np.int64)   # epoch 1 (rows 3-5) links 2 -> 10 -> 4
    dst = np.array([1, 2, 10, 4, 6], np.int64)
    out = str(tmp_path / "out")
    log = tmp_path / "progress.jsonl"
    seen = []
    res = run_sssp(spark, pa.table({"src": src, "dst": dst}), 0, epochs=2, out=out,
                   progress_log=str(log), partitions=2, partitioner="hash",
                   on_epoch=lambda s: seen.append(
                       (s.epoch, sorted(written(out)), s.output_frontier)))
    for e, on_disk, fo in seen:
        assert on_disk == list(range(e + 1))            # nothing of a later epoch yet
        assert all(t[0] > e for t in fo)                  # output frontier passed e
    kinds = [(e, what) for e, _, what, _ in res.decisions]
    rounds = {e: sum(1 for x in kinds if x == (e, "round")) for e in (0, 1)}
    # on the driver one round; on Spark (v % 2) a round per partition crossing: 0 -> 1 -> 2
    # crosses twice, epoch 1's 2 -> 10 -> 4 and 0 -> 6 stay in partition 0
    assert [r.rounds for r in res.epochs] == [rounds[0], rounds[1]] == (
        [1, 1] if where == "driver" else [3, 1])
    assert [r.where for r in res.epochs] == [where, where]
    assert res.stages == (0 if where == "driver" else 4)   # a Spark job per round
    assert kinds.index((0, "final")) < kinds.index((1, "round"))

    # the log: the frontier at each input after the batches of every step up to a given one
    events = [json.loads(x) for x in log.read_text().splitlines()]
    steps = [(ev["epoch"], ev["iteration"], ev["step"]) for ev in events if ev["event"] == "step"]
    at = {"step.in3": res.dataflow.target("loop/local/step", 3),
          "min.in0": res.dataflow.target("loop/min", 0),
          "output.in0": res.dataflow.target("output", 0)}

    width = {"step.in3": 3, "min.in0": 2, "output.in0": 1}

    def logged(name, step):
        """The frontier at ``name`` once every batch of the steps up to ``step`` is applied
        (batches are logged in the order they were applied; timestamps padded to the widest
        location's, cut back here)."""
        last = steps.index(step)
        front = []
        for ev in events:
            key = (ev.get("epoch"), ev.get("iteration"), ev.get("step"))
            # the operators' initial capabilities come before any step
            if ev["event"] == "frontier" and ev["loc"] == at[name] and (
                    steps.index(key) if key in steps else -1) <= last:
                front = ev["frontier"]
        return tuple(tuple(t[:width[name]]) for t in front)

    step = "driver dijkstra" if where == "driver" else "round"
    for e, it, what, frontier in res.decisions:
        if what == "round":
            fr, fm = frontier
            assert (fr, fm) == (logged("step.in3", (e, it, step)),
                                logged("min.in0", (e, it, step)))
            assert not any(all(x <= y for x, y in zip(t, (e, it))) for t in fr + fm)
        elif what == "converged":
            assert frontier == logged("step.in3", (e, it, step))
            assert not any(t[0] <= e for t in frontier)
        else:
            # output is outside the loop: its timestamps are (epoch,)
            assert what == "final" and frontier == logged("output.in0", (e, it, "output"))
            assert not any(t[0] <= e for t in frontier)
    assert written(out) == {0: {0: 0, 1: 1, 2: 2}, 1: {0: 0, 1: 1, 2: 2, 10: 3, 4: 4, 6: 1}}
    assert res.service.counts().num_rows == 0


def test_an_under_reported_count_stops_the_epoch_before_it_is_written(spark, tmp_path,
                                                                      monkeypatch):
    """On Spark (``$TFRONT_SSSP_DRIVER_ROWS=0``, hash partitions), every report arrives and
    passes the guards, but partition 1's step task of epoch 1 round 0 reports consuming one
    edge fewer at step.in1 than it did: that message stays in flight at (1, 0, 0), so the
    frontier at min.in0 cannot pass round 0 (nor step.in3 the round after) and the job stops
    with SsspProtocolError naming both frontiers -- epoch 1 is never written."""
    from engine.operate.report import ReportKind

    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    src = np.arange(0, 4, dtype=np.int64)   # epoch 0: 0 -> 1 -> 2; epoch 1: 2 -> 3 -> 4
    dst = src + 1
    out = str(tmp_path / "out")

    class UnderReport:   # wraps spark_plugin.jobs.sssp.spark._Step's task function
        def __init__(self, run):
            task = run.__self__
            self.run, self.at = run, (task.e, task.g)

        def __call__(self, p, rows):
            for state, cands, (cols, *counts) in self.run(p, rows):
                edges = ((cols["kind"] == ReportKind.CONSUMED) & (cols["port"] == 1)
                         & (np.array(cols["ops"], object)[cols["op"]] == "loop/local/step"))
                if self.at == (1, 0) and p == 1:
                    assert cols["count"][edges].tolist() == [1]   # the edge 3 -> 4
                    cols["count"][np.flatnonzero(edges)[0]] -= 1
                yield state, cands, (cols, *counts)

    with pytest.raises(SsspProtocolError, match=r"epoch 1 round 0: every task reported, but "
                       r"the frontier at step\.in3 \{\(1, 1, 0\)\} / min\.in0 "
                       r"\{\(1, 0\)\} has not passed \(1, 0\)"):
        run_sssp(spark, pa.table({"src": src, "dst": dst}), 0, epochs=2, out=out,
                 partitions=2, task_wrapper=UnderReport, partitioner="hash")
    assert written(out) == {0: {0: 0, 1: 1, 2: 2}}


def test_a_lost_report_stops_the_epoch_before_it_is_written(spark, tmp_path, monkeypatch):
    """On Spark, partition 1's output of epoch 1 never arrives: its report travels with its
    distances and candidates, so the round's Spark job fails (its partitions no longer line
    up) before any report is applied or frontier read, and only epoch 0 is on disk (a report
    that arrives but under-counts: the test above; a batch missing from a stage is
    MissingBatchError, the framework's guard: tests/spark/jobs/wcc/test_wcc_protocol.py)."""
    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    src = np.arange(0, 4, dtype=np.int64)
    dst = src + 1
    out = str(tmp_path / "out")

    class DropReport:   # wraps spark_plugin.jobs.sssp.spark._Step's task function
        def __init__(self, run):
            self.run, self.epoch = run, run.__self__.e

        def __call__(self, p, rows):
            for got in self.run(p, rows):
                if self.epoch == 1 and p == 1:
                    continue   # the distances, candidates and report are lost together
                yield got

    with pytest.raises(Exception, match="same number of elements"):
        run_sssp(spark, pa.table({"src": src, "dst": dst}), 0, epochs=2, out=out,
                 partitions=2, task_wrapper=DropReport)
    assert sorted(written(out)) == [0]


def test_a_step_task_reaches_its_local_fixpoint_and_reports_its_local_rounds():
    """The step task on one partition (the task level, no Spark): from its active vertex it
    settles the owned vertices of a local path 0 -> 1 -> 2 in local rounds 1 and 2, sends
    the distances it lowered and the candidates for vertices owned elsewhere (3 twice: only
    the smaller leaves), and reports each local round around local/feedback; every count it
    reports produced is consumed in the same report, except what leaves for min."""
    from engine import Report
    from gpu_kernels.shortest_paths import local_csr, unreached
    from spark_plugin.jobs.sssp.job import local_report, sssp_dataflow
    from spark_plugin.jobs.sssp.spark import Owner, _Step

    owned = np.array([0, 1, 2], np.int64)
    csr = local_csr(owned, np.array([0, 1, 2, 0]), np.array([1, 2, 3, 3]),
                    np.array([1, 1, 1, 9]))
    dist = np.array([0, unreached(np.int64), unreached(np.int64)], np.int64)
    owner = Owner(2, cuts=[3])   # partition 0 owns 0, 1, 2; partition 1 owns 3
    element = ((owned, csr, dist, np.array([0]), np.array([0], np.int64), 4), None)
    [((_, _, now), cands, (cols, sent, local))] = list(
        _Step(0, 0, owner, local_report)(0, [element]))
    assert local == 3 and sent == 3
    assert now.tolist() == [0, 1, 2]                         # vertices 1 and 2 lowered
    assert {q: (v.tolist(), d.tolist()) for q, (v, d) in cands.items()} == {
        1: ([3], [3])}                                       # 2 -> 3 beats 0 -> 3
    rep = Report.from_arrays(**cols).to_arrays()
    got: dict = {}
    for o, k, q, t, c in zip(rep["op"], rep["kind"], rep["port"], rep["ts"], rep["count"]):
        key = (rep["ops"][o].split("/")[-1], int(k), int(q), tuple(t[:3]))
        got[key] = got.get(key, 0) + int(c)
    assert got == {("step", 1, 2, (0, 0, 0)): 1,       # consumed: the seed at step.in2
                   ("step", 1, 1, (0, 0, 0)): 4,       # consumed: the new edges
                   ("step", 2, 0, (0, 0, 0)): 1,       # vertex 1 around local/feedback
                   ("feedback", 1, 0, (0, 0, 0)): 1, ("feedback", 2, 0, (0, 0, 1)): 1,
                   ("step", 1, 0, (0, 0, 1)): 1,
                   ("step", 2, 0, (0, 0, 1)): 1,       # vertex 2 around local/feedback
                   ("feedback", 1, 0, (0, 0, 1)): 1, ("feedback", 2, 0, (0, 0, 2)): 1,
                   ("step", 1, 0, (0, 0, 2)): 1,
                   ("step", 2, 1, (0, 0, 1)): 1,       # vertex 1's distance
                   ("step", 2, 1, (0, 0, 2)): 2}       # vertex 2's and the candidate 2 -> 3
    sssp_dataflow().pointstamps(Report.from_arrays(**cols))   # every path and port exists


def test_weighted_input_is_validated_naming_file_and_line(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text("# src dst weight\n1 2 0.5\n2 3 -1\n")
    with pytest.raises(EdgeInputError, match=r"w\.txt:3: weight -1\.0 is not a finite number"):
        read_weighted_edges(p)
    p.write_text("1 2 0.5\n2 3\n")
    with pytest.raises(EdgeInputError, match=r"w\.txt:2: malformed line"):
        read_weighted_edges(p)
    p.write_text("src,dst,weight\n1,2,0.5\n2,3,x\n")
    with pytest.raises(EdgeInputError, match=r"w\.txt:3: weight 'x' is not a number"):
        read_weighted_edges(p)
    p.write_text("1 2 0.5\n2 3 4\n")
    t = read_weighted_edges(p)
    assert t.column("weight").to_pylist() == [0.5, 4.0]


def test_weighted_epochs_come_from_a_split_file_or_a_directory_in_natural_order(tmp_path):
    def weighted_epoch_sources(edges, epochs=1, **options):
        return epoch_sources(edges, epochs, weighted=True, **options)

    f = tmp_path / "w.csv"
    f.write_text("src,dst,weight\n1,2,0.5\n2,3,1\n3,4,2\n")
    total, sources = weighted_epoch_sources(f, 2)
    got = [(s.what, s.read().column("weight").to_pylist()) for s in sources]
    assert total == 2 and got == [(f"{f} rows 1-1", [0.5]), (f"{f} rows 2-3", [1.0, 2.0])]
    d = tmp_path / "epochs"
    d.mkdir()
    (d / "e10.txt").write_text("5 6 1.5\n")
    (d / "e2.txt").write_text("# first\n1 5 0\n")
    total, sources = weighted_epoch_sources(d)
    assert total == 2
    assert [s.read().to_pylist() for s in sources] == [
        [{"src": 1, "dst": 5, "weight": 0.0}], [{"src": 5, "dst": 6, "weight": 1.5}]]
    with pytest.raises(EdgeInputError, match="splits a single file"):
        weighted_epoch_sources(d, 2)
    (d / "_DONE").write_text("")   # followed: the same files, read with weights, as a stream
    total, sources = weighted_epoch_sources(d, follow=float("inf"), sleep=lambda s: None)
    assert total is None
    assert [s.read().column("weight").to_pylist() for s in sources] == [[0.0], [1.5]]
    (d / "e3.txt").write_text("1 2 inf\n")
    with pytest.raises(EdgeInputError, match=r"e3\.txt:1: weight inf is not a finite number"):
        [s.read() for s in weighted_epoch_sources(d)[1]]
    p = tmp_path / "w.parquet"   # Parquet is read whole, its weight column checked
    pq.write_table(pa.table({"src": [1, 2], "dst": [2, 3], "weight": [0.5, -2.0]}), p)
    with pytest.raises(EdgeInputError, match="weight"):
        weighted_epoch_sources(p, 2)


def test_sssp_command_verbosity_and_overwrite_without_out_are_wccs(capsys):
    """tfront sssp and tfront wcc run through one runner: the same -q/-v/-vv levels, and
    --overwrite without --out refused the same way (exit status 2, before Spark)."""
    from engine.cli.main import _parser, main
    from spark_plugin.jobs.command import verbosity

    p = _parser()
    for cmd in (["wcc", "g"], ["sssp", "g", "--source", "0"]):
        assert [verbosity(p.parse_args(cmd + extra)) for extra in
                ([], ["-q"], ["-v"], ["-vv"], ["-vvvv"])] == [1, 0, 2, 3, 3]
        with pytest.raises(SystemExit) as exit_:
            main(cmd + ["--overwrite"])
        assert exit_.value.code == 2
        assert f"{cmd[0]} --overwrite needs --out" in capsys.readouterr().err


def test_bad_source_and_partitions_are_refused_before_anything_runs(spark, tmp_path):
    t = pa.table({"src": [1], "dst": [2]})
    with pytest.raises(ValueError, match="source must be a vertex id"):
        run_sssp(spark, t, -1)
    with pytest.raises(ValueError, match="partitions must be a positive integer"):
        run_sssp(spark, t, 1, partitions=0)
    with pytest.raises(EdgeInputError, match="no column 'weight'"):
        run_sssp(spark, t, 1, weighted=True)


def test_tfront_sssp_prints_epoch_lines_and_writes_distances(spark, tmp_path, capsys):
    """The command (in this process: it uses the session running here and leaves it
    running): one line per final epoch, a total line, every epoch's distances in --out; a
    missing input is refused with exit status 2."""
    from engine.cli.main import main

    edges = tmp_path / "roads.txt"
    edges.write_text("# src dst\n0 1\n0 2\n1 3\n2 3\n6 7\n3 5\n")
    out = tmp_path / "dist"
    assert main(["sssp", str(edges), "--source", "0", "--epochs", "2", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("epoch 0: vertices 4, reached 4, edges 3, rounds 1, max distance "
                               "2, on the driver, ")
    assert lines[0].endswith(f" s; input {edges} rows 1-3")
    assert lines[1].startswith("epoch 1: vertices 7, reached 5, edges 6, rounds 1, max distance 3")
    assert lines[2].startswith("total: 2 epochs, 2 rounds") and lines[2].endswith(f"distances in {out}")
    assert written(str(out)) == {0: {0: 0, 1: 1, 2: 1, 3: 2}, 1: {0: 0, 1: 1, 2: 1, 3: 2, 5: 3}}
    assert not spark.sparkContext._jsc.sc().isStopped()
    assert main(["sssp", str(tmp_path / "nope.txt"), "--source", "0"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_tfront_sssp_on_spark_says_so_with_its_cut_share(spark, tmp_path, capsys, monkeypatch):
    """Past the driver's budget (``$TFRONT_SSSP_DRIVER_ROWS=0``) the epoch line says the
    epoch ran on Spark and which share of the edges the partitioner cut: a path split in
    two by ``locality`` has one cut edge of 5, ``hash`` (``v % 2``) cuts every one; the
    distances are the same."""
    from engine.cli.main import main

    monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", "0")
    edges = tmp_path / "path.txt"
    edges.write_text("".join(f"{v} {v + 1}\n" for v in range(5)))
    lines = {}
    for partitioner in ("locality", "hash"):
        out = tmp_path / partitioner
        assert main(["sssp", str(edges), "--source", "0", "--partitions", "2", "--out",
                     str(out), "--partitioner", partitioner]) == 0
        lines[partitioner] = capsys.readouterr().out.splitlines()[0]
        assert written(str(out)) == {0: {v: v for v in range(6)}}
    assert ", rounds 2, max distance 5, on Spark, cut 20.0%, " in lines["locality"]
    assert ", rounds 6, max distance 5, on Spark, cut 100.0%, " in lines["hash"]
    with pytest.raises(SystemExit):
        main(["sssp", str(edges), "--source", "0", "--partitioner", "random"])
    assert "invalid choice: 'random'" in capsys.readouterr().err


def only_named_files(out) -> dict:
    """The manifest of ``out``, after checking that ``out`` holds nothing else than the files
    it names and that it lists every epoch once, in order."""
    m = json.loads((Path(out) / MANIFEST).read_text())
    named = {f for r in m["output"] for f in r["files"]}
    assert set(os.listdir(out)) == named | {MANIFEST}
    assert [r["epoch"] for r in m["output"]] == list(range(len(m["output"])))
    return m


class Killed(BaseException):
    """What the crash hook's SIGKILL becomes here: the process stops there, writing nothing
    more (the ``finally`` blocks that run touch no file of --out)."""


@contextlib.contextmanager
def crash_at(monkeypatch, point: str):
    """The framework's crash hook armed at ``point`` (``$TFRONT_WCC_CRASH_AT``), its SIGKILL
    of this process raising :class:`Killed` instead."""
    kill = os.kill

    def killing(pid, sig):
        if pid == os.getpid() and sig == signal.SIGKILL:
            raise Killed()
        kill(pid, sig)
    with monkeypatch.context() as m:
        m.setattr(os, "kill", killing)
        m.setenv(CRASH_ENV, point)
        yield


def test_a_killed_run_resumes_from_its_final_epochs_replaying_their_input(spark, tmp_path,
                                                                          monkeypatch):
    """Weighted, undirected, a file in 3 epochs: killed by the framework's crash hook once
    epoch 2's input is recorded (epochs 0-1 final in --out). A rerun resumes at epoch 2 --
    the distances from epoch 1's output, the edges of epochs 0-1 from their input read
    again -- and every epoch is in --out once, equal to scipy's. A rerun
    after that computes nothing and changes nothing; another source's job is refused naming
    it, changing nothing; overwrite starts over."""
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 12, 30), rng.integers(0, 12, 30)
    w = rng.choice([0.0, 0.5, 1.0, 2.5], 30)
    f = tmp_path / "w.csv"
    f.write_text("src,dst,weight\n" + "".join(f"{a},{b},{x}\n" for a, b, x in zip(src, dst, w)))
    out = tmp_path / "out"
    source = int(src[0])

    def run(**kw):
        return run_sssp(spark, str(f), source, epochs=3, out=str(out), weighted=True,
                        undirected=True, partitions=2, progress=False, **kw)

    with crash_at(monkeypatch, "epoch:2:after-input"), pytest.raises(Killed):
        run()
    m = json.loads((out / MANIFEST).read_text())
    assert [r["epoch"] for r in m["output"]] == [0, 1] and not m["complete"]
    assert [r["epoch"] for r in m["input"]] == [0, 1, 2]
    res = run()
    assert res.resumed_at == 2 and [s.epoch for s in res.epochs] == [2]
    assert res.epochs[0].edges == 2 * len(src)        # the replayed epochs' edges count
    assert res.service.counts().num_rows == 0
    check_epochs(str(out), src, dst, w, source, 3, undirected=True)
    m = only_named_files(out)
    assert m["complete"] and m["job"]["source"] == source and m["job"]["weighted"]

    snapshot = {p: (out / p).read_bytes() for p in os.listdir(out)}
    res = run()
    assert res.resumed_at == 3 and res.epochs == [] and res.service.counts().num_rows == 0
    with pytest.raises(OutputStateError, match=rf"another job \(source: {source} there, "):
        run_sssp(spark, str(f), source + 1, epochs=3, out=str(out), weighted=True,
                 undirected=True, partitions=2, progress=False)
    assert {p: (out / p).read_bytes() for p in os.listdir(out)} == snapshot
    res = run(overwrite=True)
    assert res.resumed_at == 0 and len(res.epochs) == 3
    check_epochs(str(out), src, dst, w, source, 3, undirected=True)
    only_named_files(out)


def test_tfront_sssp_killed_resumes_and_a_rerun_does_nothing(spark, tmp_path, capsys,
                                                              monkeypatch):
    """``tfront sssp`` on a directory of 3 epochs, killed by the framework's crash hook
    (``$TFRONT_WCC_CRASH_AT``; its SIGKILL of this process becomes an exception) after epoch
    1's data was renamed into --out but before the manifest named it; the rerun removes the
    leftover, resumes at epoch 1 and finishes (its progress log has the epochs it made
    final); a rerun after success says so and touches
    nothing. Every epoch once in --out, equal to scipy's BFS levels."""
    from engine.cli.main import main

    src, dst = G.grid(3)
    d = tmp_path / "in"
    d.mkdir()
    cuts = [(i * len(src)) // 3 for i in range(4)]
    for e in range(3):
        G.write_snap(d / f"e{e}.txt", src[cuts[e]:cuts[e + 1]], dst[cuts[e]:cuts[e + 1]])
    out = tmp_path / "out"
    args = ["sssp", str(d), "--source", "0", "--out", str(out), "--partitions", "2"]
    with crash_at(monkeypatch, "epoch:1:after-data"), pytest.raises(Killed):
        main(args)
    m = json.loads((out / MANIFEST).read_text())
    assert [r["epoch"] for r in m["output"]] == [0] and [r["epoch"] for r in m["input"]] == [0, 1]
    assert len(os.listdir(out)) == 3                     # the manifest, epochs 0 and 1
    capsys.readouterr()

    log = tmp_path / "progress.jsonl"
    assert main(args + ["--progress-log", str(log)]) == 0
    cap = capsys.readouterr()
    events = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(ev["epoch"], ev["reached"]) for ev in events if ev["event"] == "epoch"] == [
        (1, 6), (2, 9)]                                 # the 3 x 3 grid from a corner
    assert events[-1]["event"] == "end" and events[-1]["ok"]
    assert "resuming" in cap.err and "epoch 0 is final" in cap.err and "removed 1 leftover" in cap.err
    lines = cap.out.splitlines()
    assert [x.split(":")[0] for x in lines[:2]] == ["epoch 1", "epoch 2"], lines
    assert lines[2].startswith("total: 2 epochs") and "(resumed: epoch 0 was" in lines[2]
    check_epochs(str(out), src, dst, np.ones(len(src)), 0, 3)
    only_named_files(out)
    before = {p: (out / p).stat().st_mtime_ns for p in os.listdir(out)}
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "all 3 epochs" in said and "nothing to do" in said, said
    assert {p: (out / p).stat().st_mtime_ns for p in os.listdir(out)} == before


@pytest.mark.spark
def test_gh23_run_sssp_reads_other_columns(spark, tmp_path):
    """Issue 23 item 12: ``columns=`` picks ``src``, ``dst`` and ``weight`` by name in a
    DataFrame and by number in a text file; the picks are part of the fingerprint."""
    import pyarrow as pa

    from spark_plugin.jobs.sssp.job import run_sssp

    t = pa.table({"w": [2.0, 1.0, 5.0], "from": [1, 2, 1], "to": [2, 3, 3]})
    res = run_sssp(spark, spark.createDataFrame(t.to_pandas()), 1, weighted=True,
                   columns=("from", "to", "w"), partitions=2, progress=False)
    # a DataFrame is a Spark source (issue 31): read by the executors, the distances a
    # DataFrame too
    got = res.distances.orderBy("vertex").toArrow()
    assert got.to_pydict() == {"vertex": [1, 2, 3], "distance": [0.0, 2.0, 3.0]}
    (tmp_path / "g.txt").write_text("2.0 1 2\n1.0 2 3\n5.0 1 3\n")
    out = tmp_path / "out"
    run_sssp(spark, str(tmp_path / "g.txt"), 1, weighted=True, columns="2,3,1",
             out=str(out), partitions=2, progress=False)
    import json
    m = json.loads((out / "_tfront_manifest.json").read_text())
    assert m["job"]["columns"] == [2, 3, 1] and m["job"]["weighted"] is True


def test_gh32_weights_that_could_pass_the_largest_double_are_refused(spark, tmp_path):
    """Issue 32 item 6: 1 -> 2 -> 3 with weights 1e308 each made vertex 3's distance inf,
    reported unreachable; the weights' sum is now a bound checked before the epoch runs."""
    from spark_plugin.jobs.sssp.job import EdgeInputError, run_sssp

    p = tmp_path / "w.txt"
    p.write_text("1 2 1e308\n2 3 1e308\n")
    with pytest.raises(EdgeInputError, match=r"w.txt rows 1-2: the weights so far sum past the "
                                             r"largest double"):
        run_sssp(spark, str(p), 1, weighted=True, progress=False)
    p.write_text("1 2 1e307\n2 3 1e307\n")   # large, and fine: 2e307 is a double
    res = run_sssp(spark, str(p), 1, weighted=True, progress=False)
    got = dict(zip(*(res.distances.column(c).to_pylist() for c in ("vertex", "distance"))))
    assert got == {1: 0.0, 2: 1e307, 3: 2e307}
