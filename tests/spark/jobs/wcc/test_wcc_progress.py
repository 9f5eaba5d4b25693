"""``run_wcc(progress_log=...)`` / ``tfront wcc --progress-log`` on real Spark (issue 11, item
16): the log follows the job's frontiers round by round, and the Spark UI names every job."""

import collections
import os
import subprocess
import sys

import pytest

from engine.cli.main import main
from engine.operate.progress_view import read_progress
from spark_plugin.jobs.wcc.job import EdgeInputError, run_wcc

pytestmark = pytest.mark.spark

INPUTS = {"output.in0", "label.in0", "label.in1", "star.in0", "feedback.in0"}


def write_path_graph(path, n=12):
    """A path 0-1-...-n-1 with its ids shuffled: several loop iterations per epoch."""
    ids = [(i * 37) % n for i in range(n)]
    with open(path, "w") as f:
        for a, b in zip(ids, ids[1:]):
            f.write(f"{a} {b}\n")
    return path


def spark_job_descriptions(spark, after: int = -1) -> dict:
    """The descriptions of the session's jobs with an id above ``after``, by job id, as the
    Spark UI shows them (its status store). Other tests share the session and run the same
    job, so jobs are told apart by id, not by description."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    out = {}
    for k in range(jobs.size()):
        job = jobs.apply(k)
        d = job.description()
        if job.jobId() > after and d.isDefined():
            out[job.jobId()] = d.get()
    return out


def test_the_log_follows_every_round_and_spark_jobs_are_named(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")   # every round on Spark
    monkeypatch.setenv("TFRONT_WCC_TASK_ROWS", "0")     # and in the star loop, on all tasks
    log = tmp_path / "progress.jsonl"
    before = max(spark_job_descriptions(spark), default=-1)
    res = run_wcc(spark, write_path_graph(tmp_path / "path.txt"), epochs=2, progress=False,
                  progress_log=log)
    run = read_progress(log)
    assert run.finished and run.end["ok"] and run.start["partitions"] == 2
    assert set(run.inputs) == INPUTS
    fr = run.of("frontier")
    assert {ev["input"] for ev in fr} == INPUTS
    # every input's frontier replays from its changes and ends empty
    for name in INPUTS:
        now = set()
        for ev in (ev for ev in fr if ev["input"] == name):
            now = (now - {tuple(t) for t in ev["removed"]}) | {tuple(t) for t in ev["added"]}
            assert sorted(now) == [tuple(t) for t in ev["frontier"]]
        assert now == set()
    # label.in0 passes through (e, i + 1) after each iteration i of each epoch
    for s in res.epochs:
        seen = {tuple(t) for ev in fr if ev["input"] == "label.in0" for t in ev["frontier"]}
        assert {(s.epoch, i) for i in range(1, s.rounds)} <= seen, s
        assert s.rounds >= 2
    assert [(ev["epoch"], ev["rounds"]) for ev in run.of("epoch")] == [
        (s.epoch, s.rounds) for s in res.epochs]
    # frontier events name the round and step the Spark UI shows for that stage's job
    small = [ev for ev in fr if ev["step"] == "small-star"]
    assert small and all(ev["job"] == f"wcc epoch {ev['epoch']} round {ev['iteration'] + 1}: "
                                      f"small-star" for ev in small)
    # the first messages in flight are epoch 0's edges, sent to label.in1 at (0, 0)
    assert run.of("messages")[0]["in_flight"] == [[0, 0, res.epochs[0].edges]]
    assert run.of("messages")[-1]["in_flight"] == []
    jobs = set(spark_job_descriptions(spark, after=before).values())
    for s in res.epochs:
        # rounds counted from 1, as in the epoch line; the first links the contracted roots
        assert f"wcc epoch {s.epoch} round 1: root-links" in jobs, sorted(jobs)
        for r in range(2, s.rounds + 1):
            assert f"wcc epoch {s.epoch} round {r}: small-star" in jobs, sorted(jobs)
        assert f"wcc epoch {s.epoch} round 1: contract" in jobs
        assert f"wcc epoch {s.epoch} round 2: large-star" in jobs
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None   # cleared


def test_a_failed_job_ends_its_log_with_the_error(spark, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n2 3\n3 x\n")
    log = tmp_path / "progress.jsonl"
    with pytest.raises(EdgeInputError, match="bad.txt:3:"):
        run_wcc(spark, bad, progress=False, progress_log=log)
    end = read_progress(log).end
    assert end["ok"] is False and "EdgeInputError" in end["error"] and "bad.txt:3:" in end["error"]


def test_tfront_wcc_progress_log_then_tfront_progress(tmp_path):
    """The CLI end to end (one subprocess: its own Spark session)."""
    edges = write_path_graph(tmp_path / "e.txt")
    log, html = tmp_path / "p.jsonl", tmp_path / "p.html"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run([sys.executable, "-m", "engine.cli.main", "wcc", str(edges), "--epochs",
                           "2", "--partitions", "2", "--master", "local[2]", "--progress-log",
                           str(log)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = read_progress(log)
    assert run.finished and len(run.of("epoch")) == 2
    assert main(["progress", str(log), "--html", str(html)]) == 0
    assert 'data-live="false"' in html.read_text()


def test_a_progress_log_in_a_missing_directory_is_refused_before_spark_starts(tmp_path, capsys):
    edges = write_path_graph(tmp_path / "e.txt")
    assert main(["wcc", str(edges), "--progress-log", str(tmp_path / "no" / "p.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--progress-log" in err and "does not exist" in err and "no" in err


def test_gh31_a_stage_is_one_spark_job_and_the_session_keeps_its_settings(spark, tmp_path,
                                                                           monkeypatch):
    """Issue 31, item 5: on the Spark path each stage of the loop is one Spark job (adaptive
    execution would submit each shuffle's map side as a job of its own, and a broadcast join
    one more), so an epoch costs its stages plus the labels, their count and the write; the
    caller's session gets its own settings back when the job ends."""
    from perf.graphs import grid
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")   # every round on Spark
    conf = spark.conf
    conf.set("spark.sql.adaptive.enabled", "true")
    conf.set("spark.sql.autoBroadcastJoinThreshold", "10485760")
    src, dst = grid(12)
    path = tmp_path / "grid.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in zip(src.tolist(), dst.tolist())))
    before = max(spark_job_descriptions(spark), default=-1)
    jobs_before = spark.sparkContext._jsc.sc().statusStore().jobsList(None).size()
    res = run_wcc(spark, str(path), out=str(tmp_path / "labels"), progress=False)
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    ran = spark.sparkContext._jsc.sc().statusStore().jobsList(None).size() - jobs_before
    named = spark_job_descriptions(spark, after=before)
    steps = collections.Counter(named.values())
    # every job named but one per run: the Python workers' warm-up when Spark starts
    assert res.epochs[0].rounds == 2 and ran - len(named) <= 1, (ran, named)
    # contract, root-links, large-star and the last round in one task: a job each (the last
    # one's re-pointing join one more); the labels and their count; the write
    assert steps.pop("wcc epoch 0 round 2: labels") == 2, named
    assert steps.pop("wcc epoch 0 round 2: output") == 1, named
    assert len(steps) >= 4 and sum(steps.values()) <= len(steps) + 1, named
    assert len(named) <= 8, named   # 17 with adaptive execution and broadcast joins
    assert conf.get("spark.sql.adaptive.enabled") == "true"
    assert conf.get("spark.sql.autoBroadcastJoinThreshold") == "10485760"
    assert conf.get("spark.sql.shuffle.partitions") == "2"
