"""Issue 12 item 6: crash recovery of the WCC job.

The recovery records (``OUT/_tfront_manifest.json``) become a rollback problem that
:func:`engine.rollback.problem.solve` answers; ``tfront wcc`` killed with ``SIGKILL`` at named points
and at a random time resumes from the output's final epochs: every epoch once in ``--out``,
each with scipy's components.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from spark_plugin.sources import local as wcc_io
from spark_plugin.errors import OutputStateError
from spark_plugin.jobs.wcc.job import run_wcc
from spark_plugin.jobs.out_store import HadoopStore, checksum
from spark_plugin.sources import read_edges
from spark_plugin.jobs.recovery import (CRASH_ENV, MANIFEST, OutputLog, job_fingerprint,
                                       kept_epochs, recovery_problem)

ROOT = Path(__file__).resolve().parents[4]


def _manifest(inputs, loop, outputs):
    return {"input": [{"epoch": e, "source": f"e{e}", "stamp": None} for e in inputs],
            "loop": list(loop),
            "output": [{"epoch": e, "files": [], "rows": 0, "edges": 0} for e in outputs]}


@pytest.mark.parametrize("inputs, loop, outputs, expect", [
    # killed after epoch 2 started: the input keeps its record of the epoch in flight
    (range(4), range(3), range(3), {"input": 4, "loop": 3, "output": 3, "iteration": None}),
    # the loop's record of the last final epoch is missing: the output's epoch 2 is final
    # (C2 keeps it) and its labels rebuild the loop's state, so the loop keeps 2 as well
    (range(3), range(2), range(3), {"input": 3, "loop": 3, "output": 3, "iteration": None}),
    # killed after the data of epoch 1 was renamed, before the manifest named it
    (range(2), range(1), range(1), {"input": 2, "loop": 1, "output": 1, "iteration": None}),
    # killed during epoch 0: nothing is kept but the input's record
    (range(1), [], [], {"input": 1, "loop": 0, "output": 0, "iteration": None}),
    ([], [], [], {"input": 0, "loop": 0, "output": 0, "iteration": None}),
])
def test_the_solver_keeps_exactly_the_epochs_the_output_made_final(inputs, loop, outputs,
                                                                   expect):
    m = _manifest(inputs, loop, outputs)
    assert kept_epochs(m) == expect
    problem = recovery_problem(m)
    assert problem.buffer == [False, False, True]   # the output: a buffer to the outside


def _ckpt(e, it):
    return {"epoch": e, "iteration": it, "dir": f"e{e}-i{it}", "files": [], "rows": 1,
            "new": 1, "pointstamps": []}


@pytest.mark.parametrize("inputs, loop, outputs, expect, frontier", [
    # killed in epoch 2 after the loop checkpoint of iteration 4: epochs 0-1 whole, and the
    # loop keeps epoch 2 up to iteration 4 (down{(1, NI-1), (2, 4)}, NI - 1 = 5)
    (range(3), [0, 1, _ckpt(2, 4)], range(2), {"input": 3, "loop": 2, "output": 2,
                                               "iteration": 4}, ((1, 5), (2, 4))),
    (range(1), [_ckpt(0, 0)], [], {"input": 1, "loop": 0, "output": 0, "iteration": 0},
     ((0, 0),)),
    # the input's record of epoch 2 is missing: the loop consumed epoch 2's edges (C3 needs
    # the input to keep them), so the checkpoint cannot be kept; the epoch restarts
    (range(2), [0, 1, _ckpt(2, 4)], range(2), {"input": 2, "loop": 2, "output": 2,
                                               "iteration": None}, ((1, 5),)),
    # a stale checkpoint of an epoch since made final, or of an epoch after one that is not
    # final yet: not available (its state lacks the labels the output would need); times
    # are then (epoch, 0) only, as without checkpoints
    (range(3), [0, 1, _ckpt(1, 3)], range(2), {"input": 3, "loop": 2, "output": 2,
                                               "iteration": None}, ((1, 0),)),
    (range(3), [0, _ckpt(2, 3)], range(1), {"input": 3, "loop": 1, "output": 1,
                                            "iteration": None}, ((0, 0),)),
])
def test_loop_checkpoints_give_the_loop_a_frontier_inside_the_epoch_in_flight(
        inputs, loop, outputs, expect, frontier):
    """Item 6, per iteration: a loop checkpoint ``(E, I)`` offers the loop the frontier
    "epochs < E complete, plus epoch E up to iteration I", and the solver keeps it exactly
    when that is consistent."""
    from engine.rollback.problem import solve

    m = _manifest(inputs, [], outputs)
    m["loop"] = list(loop)
    assert kept_epochs(m) == expect
    problem = recovery_problem(m)
    answer = solve(problem)
    assert answer.result == "ok" and answer.choice[1] == frontier


def _edges(seed=3, n=2000, m=2400):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, m), rng.integers(0, n, m)


def _write_epochs(d: Path, src, dst, k: int) -> list[int]:
    d.mkdir()
    cuts = [len(src) * e // k for e in range(k + 1)]
    for e in range(k):
        with open(d / f"e{e}.txt", "w") as h:
            h.writelines(f"{a} {b}\n" for a, b in zip(src[cuts[e]:cuts[e + 1]],
                                                     dst[cuts[e]:cuts[e + 1]]))
    return cuts


def _components(src, dst) -> dict:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    verts = np.unique(np.concatenate([src, dst]))
    ia, ib = np.searchsorted(verts, src), np.searchsorted(verts, dst)
    g = coo_matrix((np.ones(len(ia)), (ia, ib)), shape=(len(verts), len(verts)))
    _, lab = connected_components(g, directed=False)
    smallest = {}
    for v, c in zip(verts.tolist(), lab.tolist()):
        smallest.setdefault(c, v)        # verts sorted: the first is the smallest id
    return {v: smallest[c] for v, c in zip(verts.tolist(), lab.tolist())}


def _manifest_name(out: Path) -> str:
    """The manifest's file: ``_tfront_manifest.json`` of a local --out, the one version
    ``_tfront_manifest.<n>.json`` of one written through Hadoop (the older are deleted)."""
    names = [f for f in os.listdir(out) if f.startswith("_tfront_manifest")]
    assert len(names) == 1, names
    return names[0]


def _manifest_of(out: Path) -> dict:
    return json.loads((out / _manifest_name(out)).read_text())


def _listed(out: Path) -> set:
    """What --out holds, without the checksum files Hadoop's local file system keeps beside
    each file it writes (``.NAME.crc``: it lists, renames and deletes them with NAME)."""
    return {f for f in os.listdir(out) if not (f.startswith(".") and f.endswith(".crc"))}


def _check_out(out: Path, src, dst, cuts) -> None:
    """Every epoch exactly once, with scipy's components; nothing but the named files."""
    t = pq.read_table(out)
    rows: dict = {}
    for e, v, c in zip(*(t.column(n).to_pylist() for n in ("epoch", "vertex", "component"))):
        assert v not in rows.setdefault(e, {}), f"vertex {v} written twice for epoch {e}"
        rows[e][v] = c
    assert sorted(rows) == list(range(len(cuts) - 1))
    for e in rows:
        assert rows[e] == _components(src[:cuts[e + 1]], dst[:cuts[e + 1]]), f"epoch {e}"
    m = _manifest_of(out)
    named = {f for r in m["output"] for f in r["files"]}
    assert _listed(out) == named | {_manifest_name(out)}
    assert m["complete"] and [r["epoch"] for r in m["output"]] == sorted(rows)


def _tfront(edges, out, *extra, env=None, kill_after=None, seed=0, delay=1.5):
    """Run ``tfront wcc`` in a subprocess (its own process group: a kill takes the JVM too).
    ``kill_after``: SIGKILL the group at a random time after that many epoch lines."""
    cmd = [sys.executable, "-m", "engine.cli.main", "wcc", str(edges), "--out", str(out),
           "--master", "local[1]", "--partitions", "2", "--backend", "cpu", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env={**os.environ, **(env or {})}, start_new_session=True)
    if kill_after is None:
        out_text, err = proc.communicate(timeout=300)
        try:            # a JVM left by a killed driver (it exits when its stdin closes)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.returncode, out_text, err
    lines, deadline = [], time.monotonic() + 300
    while sum(x.startswith("epoch") for x in lines) < kill_after and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 5)[0]:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
    time.sleep(random.Random(seed).uniform(0.0, delay))   # somewhere in the next epoch(s)
    os.killpg(proc.pid, signal.SIGKILL)
    out_text, err = proc.communicate(timeout=60)
    return proc.returncode, "".join(lines) + out_text, err


@pytest.mark.spark
@pytest.mark.slow
def test_killed_runs_resume_every_epoch_once_with_scipys_labels(tmp_path):
    """SIGKILL after epoch 1's data was renamed into place (before the manifest named it),
    then at a random time of the resumed run, then a run to the end, then a rerun that does
    nothing: each epoch exactly once in --out, every one with scipy's components."""
    src, dst = _edges()
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 5)
    out = tmp_path / "out"
    rc, stdout, err = _tfront(d, out, env={CRASH_ENV: "epoch:1:after-data"})
    assert rc == -signal.SIGKILL, (stdout, err)
    m = json.loads((out / MANIFEST).read_text())
    assert [r["epoch"] for r in m["output"]] == [0] and not m["complete"]
    assert [r["epoch"] for r in m["input"]] == [0, 1]
    # the lock file stays (issue 32): the kernel dropped the killed run's lock with it
    leftovers = set(os.listdir(out)) - {MANIFEST, "_tfront_lock"} - set(m["output"][0]["files"])
    assert leftovers and all(f.startswith("part-epoch-000001") for f in leftovers)

    rc, stdout, err = _tfront(d, out, kill_after=1, seed=12, delay=0.4)
    assert rc == -signal.SIGKILL, (stdout, err)
    assert "resuming" in err and "epoch 0 is final" in err and "removed 1 leftover" in err
    assert stdout.startswith("epoch 1: "), stdout     # epoch 0 neither recomputed nor printed

    rc, stdout, err = _tfront(d, out)
    assert rc == 0, err
    if "nothing to do" in stdout:
        # the random kill came after the resumed run had made every epoch final (a quiet,
        # fast machine): this run found nothing left, which is the right answer too
        assert "all 5 epochs" in stdout and "Spark master" not in err, (stdout, err)
    else:
        first = int(stdout.split(":")[0].split()[1])
        assert first >= 1 and "(resumed: epoch" in stdout and f"labels in {out}" in stdout, \
            stdout
        assert [int(x.split(":")[0].split()[1]) for x in stdout.splitlines()
                if x.startswith("epoch ")] == list(range(first, 5))
    _check_out(out, src, dst, cuts)

    before = {f: (out / f).stat().st_mtime_ns for f in os.listdir(out)}
    rc, stdout, err = _tfront(d, out)
    assert rc == 0 and "all 5 epochs" in stdout and "nothing to do" in stdout, (stdout, err)
    assert "Spark master" not in err          # no Spark session was started
    assert {f: (out / f).stat().st_mtime_ns for f in os.listdir(out)} == before


@pytest.mark.spark
def test_resume_in_process_overwrite_and_another_jobs_out(spark, tmp_path, monkeypatch):
    """A run killed before epoch 2's manifest write (the records cut back to epochs 0-1, epoch
    2's data file and a temporary file left over) resumes at epoch 2 from epoch 1's labels,
    without re-reading epochs 0-1; another job's --out is refused naming what differs,
    changing nothing; overwrite starts over."""
    src, dst = _edges(seed=5, n=600, m=900)
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 3)
    out = tmp_path / "out"
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=False)
    assert res.resumed_at == 0 and len(res.epochs) == 3
    _check_out(out, src, dst, cuts)
    # roll the records back to epochs 0-1, as a kill before epoch 2's manifest would leave them
    m = json.loads((out / MANIFEST).read_text())
    m["output"], m["loop"], m["input"] = m["output"][:2], [0], m["input"][:3]
    m["complete"], m["total"] = False, None
    (out / MANIFEST).write_text(json.dumps(m))
    (out / ".part-epoch-000002-00000-0123456789ab.parquet.tmp").write_bytes(b"partial")
    read = []

    def reading(path, columns=None):   # records which files the job reads, then reads them
        read.append(Path(path).name)
        return read_edges(path, columns)
    monkeypatch.setattr(wcc_io, "read_edges", reading)
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=False)
    monkeypatch.undo()
    assert read == ["e2.txt"]          # the kept epochs' input is not read again
    assert res.resumed_at == 2 and [s.epoch for s in res.epochs] == [2]
    assert res.epochs[0].edges == cuts[3]          # counts the kept epochs' edges
    _check_out(out, src, dst, cuts)
    snapshot = {f: (out / f).read_bytes() for f in os.listdir(out)}
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=False)   # all final
    assert res.resumed_at == 3 and res.epochs == [] and res.service.counts().num_rows == 0
    assert {f: (out / f).read_bytes() for f in os.listdir(out)} == snapshot

    with pytest.raises(OutputStateError, match=r"another job \(epochs: 1 there, 2 now; input: "):
        run_wcc(spark, d / "e0.txt", epochs=2, out=str(out), partitions=2, progress=False)
    with pytest.raises(OutputStateError, match=r"input: '.*in' there, '.*e0\.txt' now"):
        run_wcc(spark, d / "e0.txt", out=str(out), partitions=2, progress=False)
    assert {f: (out / f).read_bytes() for f in os.listdir(out)} == snapshot

    res = run_wcc(spark, d / "e0.txt", epochs=2, out=str(out), partitions=2, progress=False,
                  overwrite=True)
    assert res.resumed_at == 0 and len(res.epochs) == 2
    assert json.loads((out / MANIFEST).read_text())["job"] == job_fingerprint(
        d / "e0.txt", 2, None)
    assert sorted(set(pq.read_table(out).column("epoch").to_pylist())) == [0, 1]


def test_an_out_that_is_not_a_resumable_job_is_refused(tmp_path):
    """Also with overwrite (issue 23 item 1): it removes only what a job wrote."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-0.parquet").write_bytes(b"x")
    job = {"input": "x", "epochs": 1}
    for overwrite in (False, True):
        with pytest.raises(OutputStateError, match=f"no {MANIFEST}.*--overwrite"):
            OutputLog.open(out, job, overwrite=overwrite)
        assert os.listdir(out) == ["part-0.parquet"]


@pytest.mark.spark
def test_labels_spark_writes_are_renamed_into_out_and_read_back_on_resume(spark, tmp_path):
    """An epoch whose labels are a DataFrame (large epochs): Spark writes a hidden directory,
    its part files are renamed into --out and named by the manifest; a restart reads them
    back (sorted by vertex) as the loop's state, and removes a half-written Spark directory."""
    job = {"input": "x", "epochs": 1}
    log, resume = OutputLog.open(tmp_path / "out", job)
    assert resume.labels is None
    df = spark.createDataFrame([(9, 1), (1, 1), (5, 5), (3, 1)], "vertex bigint, component bigint")
    files = log.write_df(0, df.repartition(2))
    assert files and all(f.startswith("part-epoch-000000-") for f in files)
    log.record_final(0, files, 4, 7)
    log.close()
    (tmp_path / "out" / ".epoch-000001.tmp").mkdir()        # killed while Spark wrote epoch 1
    (tmp_path / "out" / ".epoch-000001.tmp" / "part-0.parquet").write_bytes(b"x")
    log, resume = OutputLog.open(tmp_path / "out", job)
    assert (resume.epoch, resume.edges, resume.removed) == (1, 7, (".epoch-000001.tmp",))
    assert resume.labels.to_pydict() == {"vertex": [1, 3, 5, 9], "component": [1, 1, 5, 1]}
    log.close()   # its lock (issue 32) goes with it
    assert sorted(os.listdir(tmp_path / "out")) == sorted([MANIFEST, *files])


@pytest.mark.spark
def test_a_uri_out_goes_through_hadoop_and_resumes_a_killed_run(tmp_path):
    """``--out file:///...`` (any URI) goes through Hadoop's FileSystem: killed (SIGKILL)
    after epoch 1's data was renamed in, before the manifest named it; the rerun removes the
    leftover and resumes at epoch 1 (each epoch once, scipy's labels). The manifest is
    versioned, each version checksummed."""
    src, dst = _edges(seed=7, n=400, m=600)
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 3)
    out = tmp_path / "out"
    uri = out.as_uri()
    rc, stdout, err = _tfront(d, uri, env={CRASH_ENV: "epoch:1:after-data"})
    assert rc == -signal.SIGKILL, (stdout, err)
    assert not (out / MANIFEST).exists()
    raw = _manifest_of(out)
    assert re.fullmatch(r"_tfront_manifest\.\d{8}\.json", _manifest_name(out))
    assert raw["checksum"] == checksum(raw)
    assert [r["epoch"] for r in raw["output"]] == [0] and [r["epoch"] for r in raw["input"]] == [0, 1]
    leftovers = _listed(out) - {_manifest_name(out), "_tfront_lock"} - set(raw["output"][0]["files"])
    assert leftovers and all(f.startswith("part-epoch-000001") for f in leftovers)

    rc, stdout, err = _tfront(d, uri)
    assert rc == 0, err
    assert "epoch 0 is final" in err and "removed 1 leftover" in err, err
    assert stdout.startswith("epoch 1: "), stdout     # epoch 0 neither recomputed nor printed
    _check_out(out, src, dst, cuts)
    # a rerun after success: test_a_uri_out_refuses_what_it_cannot_resume_and_overwrite_...


@pytest.mark.spark
def test_a_uri_out_refuses_what_it_cannot_resume_and_overwrite_starts_over(spark, tmp_path):
    """Through Hadoop's FileSystem as locally: a rerun after success does nothing and says
    so; another job's --out is refused naming what differs, changing nothing; a directory
    without a manifest is refused, with overwrite too (issue 23: it removes only what a job
    wrote); overwrite starts over; a manifest version that does not verify is passed over for the
    one before; a local run's single-file manifest is read and replaced by a version."""
    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n3 4\n")
    out = tmp_path / "remote-out"
    uri = out.as_uri()
    run_wcc(spark, str(edges), epochs=1, out=uri, progress=False)
    data = {f: (out / f).read_bytes() for f in _listed(out) if f.startswith("part-")}
    res = run_wcc(spark, str(edges), epochs=1, out=uri, progress=False)   # a rerun
    assert res.resumed_at == 1 and res.epochs == []
    assert "nothing to do: epoch 0 was already final in " + uri in res.total_line(uri)
    assert {f: (out / f).read_bytes() for f in _listed(out) if f.startswith("part-")} == data
    before = (_listed(out), _manifest_of(out))
    with pytest.raises(OutputStateError, match=r"another job \(epochs: 1 there, 2 now\)"):
        run_wcc(spark, str(edges), epochs=2, out=uri, progress=False)
    assert (_listed(out), _manifest_of(out)) == before
    res = run_wcc(spark, str(edges), epochs=2, out=uri, progress=False, overwrite=True)
    assert res.resumed_at == 0 and len(res.epochs) == 2
    assert sorted(pq.read_table(out).column("epoch").to_pylist()) == [0] * 2 + [1] * 5

    # a newer version whose content does not match its checksum (a torn copy): skipped
    good = _manifest_of(out)
    n = int(_manifest_name(out).split(".")[1])
    torn = {**good, "complete": False}
    (out / f"_tfront_manifest.{n + 1:08d}.json").write_text(json.dumps(torn))
    store = HadoopStore(spark, uri)
    assert store.load_manifest() == {k: v for k, v in good.items() if k != "checksum"}
    store.save_manifest(store.load_manifest())     # version n + 2; n and n + 1 deleted
    assert _manifest_name(out) == f"_tfront_manifest.{n + 2:08d}.json"

    job = {"input": "x", "epochs": 1}
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "part-0.parquet").write_bytes(b"x")
    for overwrite in (False, True):
        with pytest.raises(OutputStateError, match=f"no {MANIFEST}.*--overwrite"):
            OutputLog.open(foreign.as_uri(), job, spark=spark, overwrite=overwrite)
        assert os.listdir(foreign) == ["part-0.parquet"]

    local = tmp_path / "local-out"         # written by a bare path: one manifest file
    run_wcc(spark, str(edges), epochs=2, out=str(local), progress=False)
    assert _manifest_name(local) == MANIFEST
    res = run_wcc(spark, str(edges), epochs=2, out=local.as_uri(), progress=False)
    assert res.resumed_at == 2 and res.epochs == []
    assert re.fullmatch(r"_tfront_manifest\.\d{8}\.json", _manifest_name(local))


def _frontier_events(log: Path, epoch: int, after: int) -> list:
    """The ``frontier`` events of a progress log for ``epoch`` at iterations after ``after``:
    ``(step, iteration, input, frontier)`` in order (stage numbers and producers differ
    between runs with different histories, the frontiers must not)."""
    out = []
    for line in log.read_text().splitlines():
        ev = json.loads(line)
        if ev["event"] == "frontier" and ev["epoch"] == epoch and ev["iteration"] > after:
            out.append((ev["step"], ev["iteration"], ev["input"], ev["frontier"]))
    return out



@pytest.mark.spark
def test_a_killed_epoch_resumes_after_its_last_loop_checkpoint(spark, tmp_path, monkeypatch,
                                                               capfd):
    """Item 6, per iteration: one epoch that takes several Spark rounds (a path with shuffled
    ids; every round on Spark, in the star loop: ``TFRONT_WCC_DRIVER_ROWS=0``,
    ``TFRONT_WCC_TASK_ROWS=0``, hash partitioning), a loop checkpoint after every
    round (``--loop-checkpoint 0``), ``tfront wcc`` killed with SIGKILL after iteration 1's
    checkpoint data is renamed into place but before the manifest records it. The restart
    keeps iteration 0's checkpoint (the solver's choice), removes iteration 1's unrecorded
    data, says it resumes at iteration 1, and ends with scipy's labels, the epoch once, no
    loop files left; its frontiers from iteration 1 on are those of an uninterrupted run."""
    n = 12
    perm = np.random.default_rng(7).permutation(n)
    src, dst = perm[:-1], perm[1:]
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 1)
    out = tmp_path / "out"
    env = {"TFRONT_WCC_DRIVER_ROWS": "0", "TFRONT_WCC_TASK_ROWS": "0", CRASH_ENV: "epoch:0:iteration:1:after-loop-data"}
    rc, stdout, err = _tfront(d, out, "--loop-checkpoint", "0", "--partitioner", "hash", env=env)
    assert rc == -signal.SIGKILL, (stdout, err)
    m = json.loads((out / MANIFEST).read_text())
    assert m["output"] == [] and [(r["epoch"], r["iteration"]) for r in m["loop"]] == [(0, 0)]
    loop_dirs = sorted(os.listdir(out / "_tfront_loop"))
    assert loop_dirs == [m["loop"][0]["dir"], "epoch-000000-iteration-000001"], loop_dirs

    damaged = tmp_path / "damaged"    # the same killed state, for the last check below
    shutil.copytree(out, damaged)
    # an uninterrupted run (the witness)
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    monkeypatch.setenv("TFRONT_WCC_TASK_ROWS", "0")
    whole = tmp_path / "whole.jsonl"
    full = run_wcc(spark, d, out=str(tmp_path / "whole"), partitions=2, partitioner="hash", progress=False,
                   backend="cpu", progress_log=whole, loop_checkpoint=None)
    # the restart (in this process: the kill was the real one)
    log = tmp_path / "resumed.jsonl"
    capfd.readouterr()
    res = run_wcc(spark, d, out=str(out), partitions=2, partitioner="hash", progress=True, backend="cpu",
                  progress_log=log, loop_checkpoint=0)
    err = capfd.readouterr().err
    assert "resuming epoch 0 at iteration 1 from the loop checkpoint of iteration 0" in err, err
    assert "removed 1 leftover file" in err, err
    _check_out(out, src, dst, cuts)       # once, scipy's labels, no _tfront_loop left
    # only the stages after the checkpoint ran: no contract stage, no iteration-0 stage
    steps = [json.loads(x) for x in log.read_text().splitlines()]
    ran = {(s["step"], s["iteration"]) for s in steps if s["event"] == "step"}
    assert ("contract", 0) not in ran and ("small-star", 0) not in ran
    assert ("large-star", 1) in ran

    rounds = full.epochs[0].rounds
    assert rounds >= 3 and res.epochs[0].rounds == rounds, rounds   # several Spark rounds
    # from iteration 1 on, the resumed run's frontiers at every input are the witness's
    resumed = _frontier_events(log, 0, 0)
    assert resumed and resumed == _frontier_events(whole, 0, 0)
    assert not (tmp_path / "whole" / "_tfront_loop").exists()

    # a kept checkpoint whose part file is damaged is not fatal: dropping it is always
    # consistent, so the epoch restarts from its first iteration, with scipy's labels
    ck = damaged / "_tfront_loop" / m["loop"][0]["dir"]
    (ck / m["loop"][0]["files"][0]).write_bytes(b"not a parquet file")
    capfd.readouterr()
    run_wcc(spark, d, out=str(damaged), partitions=2, partitioner="hash", progress=True, backend="cpu",
            loop_checkpoint=None)
    err = capfd.readouterr().err
    assert "the loop checkpoint of iteration 0" in err and "is not used" in err, err
    assert "resuming epoch 0 at iteration" not in err, err
    _check_out(damaged, src, dst, cuts)


@pytest.mark.spark
def test_a_loop_checkpoint_of_the_last_epoch_resumes_when_a_new_epoch_file_arrives(
        spark, tmp_path, monkeypatch, capfd):
    """The killed epoch (1, killed after iteration 1's checkpoint is recorded: the
    ``after-loop`` point) was the directory's last file, so no epoch could follow it then;
    before the restart a third file arrives, so one can now. What stands beyond epoch 1 in
    the tracker (the capabilities for epoch 2) differs from what the checkpoint recorded;
    the resume compares the pointstamps up to epoch 1 only, resumes at iteration 2, and
    then runs the new epoch: every epoch once, with scipy's labels."""
    n = 30
    perm = np.random.default_rng(11).permutation(n)
    src, dst = perm[:-1], perm[1:]
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 3)
    third = (d / "e2.txt").read_text()
    (d / "e2.txt").unlink()
    out = tmp_path / "out"
    env = {"TFRONT_WCC_DRIVER_ROWS": "0", "TFRONT_WCC_TASK_ROWS": "0", CRASH_ENV: "epoch:1:iteration:1:after-loop"}
    rc, stdout, err = _tfront(d, out, "--loop-checkpoint", "0", "--partitioner", "hash", env=env)
    assert rc == -signal.SIGKILL, (stdout, err)
    m = json.loads((out / MANIFEST).read_text())
    assert [r["epoch"] for r in m["output"]] == [0]
    assert [(r["epoch"], r["iteration"]) for r in m["loop"] if isinstance(r, dict)] == [(1, 1)]
    (d / "e2.txt").write_text(third)

    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    monkeypatch.setenv("TFRONT_WCC_TASK_ROWS", "0")
    capfd.readouterr()
    res = run_wcc(spark, d, out=str(out), partitions=2, partitioner="hash", progress=True, backend="cpu",
                  loop_checkpoint=0)
    err = capfd.readouterr().err
    assert "resuming epoch 1 at iteration 2 from the loop checkpoint of iteration 1" in err, err
    assert [s.epoch for s in res.epochs] == [1, 2]
    _check_out(out, src, dst, cuts)


@pytest.mark.spark
def test_a_loop_checkpoint_with_the_pointers_set_aside_resumes(spark, tmp_path, monkeypatch,
                                                               capfd):
    """Issue 22: with the locality partitioner the root-links stage of iteration 0 sets the
    pointers aside and sends only the links round the loop; its loop checkpoint holds both
    (the pointers flagged not new). Killed after that checkpoint is recorded, the epoch
    resumes at iteration 1 with every row back in the star loop: scipy's labels, written
    once, two epochs (the second on top of Spark-held stars)."""
    n = 40
    src, dst = np.arange(n - 1), np.arange(1, n)    # a path in order: a link per range cut
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 2)
    out = tmp_path / "out"
    env = {"TFRONT_WCC_DRIVER_ROWS": "0", "TFRONT_WCC_TASK_ROWS": "0",
           CRASH_ENV: "epoch:0:iteration:0:after-loop"}
    rc, stdout, err = _tfront(d, out, "--loop-checkpoint", "0", env=env)
    assert rc == -signal.SIGKILL, (stdout, err)
    m = json.loads((out / MANIFEST).read_text())
    (rec,) = [r for r in m["loop"] if isinstance(r, dict)]
    assert (rec["epoch"], rec["iteration"], rec["new"]) == (0, 0, 1), rec   # one link
    assert rec["rows"] > rec["new"]                                          # and pointers

    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    monkeypatch.setenv("TFRONT_WCC_TASK_ROWS", "0")
    whole = tmp_path / "whole.jsonl"   # the witness: an uninterrupted run
    full = run_wcc(spark, d, out=str(tmp_path / "whole"), partitions=2, progress=False,
                   backend="cpu", progress_log=whole, loop_checkpoint=None)
    log = tmp_path / "resumed.jsonl"
    capfd.readouterr()
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=True, backend="cpu",
                  progress_log=log, loop_checkpoint=0)
    err = capfd.readouterr().err
    assert "resuming epoch 0 at iteration 1 from the loop checkpoint of iteration 0" in err, err
    assert [s.epoch for s in res.epochs] == [0, 1] and res.epochs[0].cut is None
    assert res.service.counts().num_rows == 0
    _check_out(out, src, dst, cuts)
    # the pointers were set aside again: the same rounds and frontiers as the witness's
    assert [s.rounds for s in res.epochs] == [s.rounds for s in full.epochs]
    resumed = _frontier_events(log, 0, 0)
    assert resumed and resumed == _frontier_events(whole, 0, 0)


def test_pointstamps_beyond_the_resumed_epoch_are_not_compared():
    """The rows the resume compares: those of epochs up to the one resumed."""
    from spark_plugin.jobs.wcc.job import _up_to_epoch

    rows = [[2, [1, 2], 4], [5, [2, 0], 1], [7, [1, 0], 1], [9, [3, 0], 1]]
    assert _up_to_epoch(rows, 1) == [[2, [1, 2], 4], [7, [1, 0], 1]]
    assert _up_to_epoch(rows, 0) == []

@pytest.mark.spark
def test_table_and_dataframe_inputs_resume_only_with_the_same_content(spark, tmp_path):
    """An Arrow table is fingerprinted by a digest of its (src, dst) content, a DataFrame by
    an order-independent digest Spark computes: the same content resumes (another chunking,
    int columns), other content is refused naming it, changing nothing; a DataFrame whose
    rows come in another order is refused by the epoch whose slice differs."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from spark_plugin.jobs.recovery import dataframe_digest

    src, dst = _edges(seed=9, n=300, m=400)
    cuts = [0, 200, 400]
    t = pa.table({"src": src, "dst": dst})
    out = tmp_path / "t-out"
    run_wcc(spark, t, epochs=2, out=str(out), partitions=2, progress=False)
    _check_out(out, src, dst, cuts)
    assert _manifest_of(out)["job"]["content"].startswith("sha256:")
    snapshot = {f: (out / f).read_bytes() for f in os.listdir(out)}
    again = pa.concat_tables([t.slice(0, 150), t.slice(150)]).cast(
        pa.schema([("src", pa.int32()), ("dst", pa.int32())]))
    res = run_wcc(spark, again, epochs=2, out=str(out), partitions=2, progress=False)
    assert res.resumed_at == 2 and res.epochs == []
    other = pa.table({"src": src, "dst": np.concatenate([[dst[0] + 1], dst[1:]])})
    with pytest.raises(OutputStateError, match=r"another job \(content: 'sha256:\w+' there, "
                                               r"'sha256:\w+' now\)"):
        run_wcc(spark, other, epochs=2, out=str(out), partitions=2, progress=False)
    assert {f: (out / f).read_bytes() for f in os.listdir(out)} == snapshot

    df = spark.createDataFrame(t)
    out = tmp_path / "df-out"
    run_wcc(spark, df, epochs=2, out=str(out), partitions=2, progress=False)
    _check_out(out, src, dst, cuts)
    m = _manifest_of(out)
    assert m["job"]["content"].startswith("xxhash64-sums:") and m["job"]["rows"] == 400
    shuffled = df.orderBy(F.desc("dst"), "src").select(F.col("src").cast("int"), "dst")
    assert dataframe_digest(shuffled) == dataframe_digest(df)
    # a kill after epoch 0 (records cut back): the same DataFrame resumes at epoch 1
    m["output"], m["loop"], m["input"] = m["output"][:1], [0], m["input"][:1]
    m["complete"], m["total"] = False, None
    (out / MANIFEST).write_text(json.dumps(m))
    res = run_wcc(spark, df, epochs=2, out=str(out), partitions=2, progress=False)
    assert res.resumed_at == 1 and [s.epoch for s in res.epochs] == [1]
    _check_out(out, src, dst, cuts)
    snapshot = {f: (out / f).read_bytes() for f in os.listdir(out)}
    with pytest.raises(OutputStateError, match=r"another job \(content: 'xxhash64-sums:"):
        run_wcc(spark, spark.createDataFrame(other), epochs=2, out=str(out), progress=False)
    with pytest.raises(OutputStateError,
                       match=r"epoch 0's input edge DataFrame rows 1-200 changed"):
        run_wcc(spark, shuffled, epochs=2, out=str(out), partitions=2, progress=False)
    assert {f: (out / f).read_bytes() for f in os.listdir(out)} == snapshot


class _Stop(Exception):
    """The fault injected at a crash point of an in-process run (the state a kill leaves)."""


def _rewrite_one_row(path: Path, column: str, value: int) -> None:
    """Rewrite the Parquet file ``path`` with the same rows but ``column`` of the first one set
    to ``value``: the row count its record names still holds."""
    import pyarrow as pa

    t = pq.read_table(path)
    col = t.column(column).to_numpy().copy()
    assert col[0] != value
    col[0] = value
    pq.write_table(t.set_column(t.column_names.index(column), column, pa.array(col)), path)


@pytest.mark.spark
def test_gh23_a_loop_checkpoint_changed_with_the_same_row_count_is_not_used(
        spark, tmp_path, monkeypatch, capfd):
    """Issue 23 item 3: a loop checkpoint's part file rewritten with the same row count and
    one edge changed was used on resume (wrong labels). Its digest, recorded in the
    manifest, no longer matches: the checkpoint is dropped with a line saying why, and the
    epoch restarts: scipy's labels."""
    from spark_plugin.jobs import recovery

    n = 12
    perm = np.random.default_rng(7).permutation(n)
    src, dst = perm[:-1], perm[1:]
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 1)
    out = tmp_path / "out"
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    monkeypatch.setenv("TFRONT_WCC_TASK_ROWS", "0")

    def stop(point, epoch):   # the run ends where a kill after the record would end it
        if (point, epoch) == ("iteration:0:after-loop", 0):
            raise _Stop(point)

    with monkeypatch.context() as mp:
        mp.setattr(recovery, "crash_point", stop)
        with pytest.raises(_Stop):
            run_wcc(spark, d, out=str(out), partitions=2, partitioner="hash", progress=False,
                    backend="cpu", loop_checkpoint=0)
    (rec,) = [r for r in _manifest_of(out)["loop"] if isinstance(r, dict)]
    assert rec["rows"] > 0 and len(rec.get("digests", ())) in (0, len(rec["files"]))
    part = next(out / "_tfront_loop" / rec["dir"] / f for f in rec["files"]
                if pq.read_metadata(out / "_tfront_loop" / rec["dir"] / f).num_rows)
    _rewrite_one_row(part, "b", 10 ** 6)   # one edge now reaches a vertex not in the graph
    capfd.readouterr()
    res = run_wcc(spark, d, out=str(out), partitions=2, partitioner="hash", progress=True,
                  backend="cpu", loop_checkpoint=None)
    err = capfd.readouterr().err
    assert "the loop checkpoint of iteration 0 is not used" in err, err
    assert "does not match the digest" in err and part.name in err, err
    assert "resuming epoch 0 at iteration" not in err, err
    assert [s.epoch for s in res.epochs] == [0]
    _check_out(out, src, dst, cuts)
    assert "digests" in rec   # what the check compares


@pytest.mark.spark
def test_gh23_a_final_epoch_file_changed_with_the_same_row_count_is_computed_again(
        spark, tmp_path, capfd):
    """Issue 23 item 3: a final epoch's data file rewritten with the same rows and one label
    changed was taken as final. Its digest no longer matches: that epoch and the later ones
    are computed again, with a line saying why; scipy's labels, each epoch once."""
    src, dst = _edges(seed=5, n=200, m=240)
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 2)
    out = tmp_path / "out"
    run_wcc(spark, d, out=str(out), partitions=2, progress=False, backend="cpu")
    m = _manifest_of(out)
    (name,) = m["output"][0]["files"]
    _rewrite_one_row(out / name, "component", 10 ** 6)
    capfd.readouterr()
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=True, backend="cpu")
    err = capfd.readouterr().err
    assert f"epoch 0's data file {name}" in err and "epochs 0-1 are computed again" in err, err
    assert res.resumed_at == 0 and [s.epoch for s in res.epochs] == [0, 1]
    _check_out(out, src, dst, cuts)
    assert not (out / name).exists()
    assert all(len(r["digests"]) == len(r["files"]) for r in _manifest_of(out)["output"])


@pytest.mark.spark
def test_gh23_a_full_disk_under_out_names_the_file_and_a_rerun_resumes(
        spark, tmp_path, monkeypatch, capsys):
    """Issue 23 item 14: a full disk under ``--out`` said only ``[Errno 28] No space left on
    device``. The fault injected: the write of epoch 1's data file fails with ``ENOSPC`` (the
    operating system's error, from the Parquet writer) in a real ``tfront wcc`` run. The
    error names the file and says that a rerun resumes; the rerun does, from epoch 1."""
    import errno

    import pyarrow.parquet as parquet

    from engine.cli.main import main

    src, dst = _edges(seed=5, n=200, m=240)
    d = tmp_path / "in"
    cuts = _write_epochs(d, src, dst, 2)
    out = tmp_path / "out"
    real = parquet.write_table

    def full_disk(table, where, *args, **kwargs):
        if "part-epoch-000001" in str(where):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(where))
        return real(table, where, *args, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(parquet, "write_table", full_disk)
        capsys.readouterr()
        assert main(["wcc", str(d), "--out", str(out), "--backend", "cpu", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tfront wcc: error: --out {out}: writing epoch 1's result to "
                          f"{out}/.part-epoch-000001-"), err
    assert err.rstrip().endswith(
        ".parquet.tmp failed: no space left on device; epoch 0 is final there and kept: free "
        "some space, then rerun the same command to resume from epoch 1"), err
    assert "Errno" not in err and err.count("\n") == 1
    res = run_wcc(spark, d, out=str(out), partitions=2, progress=False, backend="cpu")
    assert res.resumed_at == 1 and [s.epoch for s in res.epochs] == [1]
    _check_out(out, src, dst, cuts)


# -- issue 32: one run per --out, nothing written outside it, only the job's own names ------

_HOLDER = ("import sys\n"
           "from spark_plugin.jobs.out_store import hold_out\n"
           "held = hold_out(sys.argv[1])\n"
           "print('held', flush=True)\n"
           "sys.stdin.read()\n")


def _four_edges(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    e = where / "e.txt"
    e.write_text("1 2\n2 3\n4 5\n6 7\n")
    return e


def _hold(out: Path) -> subprocess.Popen:
    """Another process holding ``out`` (until its stdin closes, or it is killed)."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "held\n"
    return proc


def test_gh32_a_second_run_on_a_held_out_is_refused_naming_the_holder(tmp_path, capsys):
    """Issue 32 item 1: two runs on one ``--out`` both wrote every epoch. Now the second is
    refused while the first holds ``OUT/_tfront_lock`` (flock) -- ``tfront wcc`` and the API
    alike, the message naming the holder's pid --, changing nothing; a killed holder leaves
    the lock file but not the lock, and the next run goes ahead and removes it when done."""
    from engine.cli.main import main
    from spark_plugin.errors import OutputInUseError

    e = _four_edges(tmp_path)
    out = tmp_path / "out"
    cmd = ["wcc", str(e), "--epochs", "2", "--out", str(out), "--backend", "cpu", "-q"]
    holder = _hold(out)
    try:
        capsys.readouterr()
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tfront wcc: error: --out {out} is in use by another tfront "
                              f"run (pid {holder.pid} on "), err
        assert err.count("\n") == 1
        with pytest.raises(OutputInUseError, match=f"pid {holder.pid} on "):
            OutputLog.open(out, job_fingerprint(e, 2, None))
        assert os.listdir(out) == ["_tfront_lock"]   # nothing of either refused run
    finally:
        holder.stdin.close()
        assert holder.wait() == 0
    holder = _hold(out)
    holder.kill()
    assert holder.wait() == -signal.SIGKILL
    assert os.listdir(out) == ["_tfront_lock"]   # the file stays; the kernel dropped the lock
    assert main(cmd) == 0
    m = json.loads((out / MANIFEST).read_text())
    assert [r["epoch"] for r in m["output"]] == [0, 1] and m["complete"]
    assert sorted(os.listdir(out)) == sorted([MANIFEST] + [f for r in m["output"]
                                                            for f in r["files"]])


def test_gh32_part_files_the_manifest_does_not_name_are_removed_by_a_rerun(tmp_path, capsys):
    """Issue 32 item 1: after two runs mixed their files, the rerun said "nothing to do" and
    kept part files the manifest does not name (each epoch twice in the dataset). A rerun
    now resumes instead, removes them and says so; the dataset holds each epoch once."""
    from engine.cli.main import main

    e = _four_edges(tmp_path)
    out = tmp_path / "out"
    cmd = ["wcc", str(e), "--epochs", "2", "--out", str(out), "--backend", "cpu"]
    assert main(cmd + ["-q"]) == 0
    named = json.loads((out / MANIFEST).read_text())["output"]
    stray = out / "part-epoch-000001-00000-0123456789ab.parquet"   # another run's epoch 1
    shutil.copyfile(out / named[1]["files"][0], stray)
    capsys.readouterr()
    assert main(cmd) == 0
    said = capsys.readouterr()
    assert f"(its {MANIFEST}); nothing to do" not in said.out, said   # not the early answer
    assert "removed 1 leftover file" in said.err, said
    assert not stray.exists()
    t = pq.read_table(out)
    assert t.num_rows == sum(r["rows"] for r in named)
    assert main(cmd) == 0 and f"(its {MANIFEST}); nothing to do" in capsys.readouterr().out


def test_gh32_a_tilde_in_out_and_edges_means_home_and_nothing_lands_elsewhere(
        tmp_path, monkeypatch, capsys):
    """Issue 32 item 7: ``--out=~/o`` (no shell expansion) put the manifest in ``./~/o`` and
    a data file in ``$HOME/o``. ``~`` now means ``$HOME`` for ``EDGES`` and ``--out`` of the
    command and for the API's ``out``: every file under ``$HOME/o``, none in ``./~``; an
    unknown ``~user`` is refused, writing nothing."""
    from engine.cli.main import main

    home, cwd = tmp_path / "home", tmp_path / "cwd"
    _four_edges(home)
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    assert main(["wcc", "~/e.txt", "--epochs", "2", "--out=~/o", "--backend", "cpu",
                 "-q"]) == 0
    m = json.loads((home / "o" / MANIFEST).read_text())
    assert m["job"]["input"] == str(home / "e.txt")
    assert sorted(os.listdir(home / "o")) == sorted(
        [MANIFEST] + [f for r in m["output"] for f in r["files"]])
    assert sorted(os.listdir(home)) == ["e.txt", "o"] and os.listdir(cwd) == []
    log, _ = OutputLog.open("~/api", {"input": "x", "epochs": 1})
    log.close()
    assert (home / "api" / MANIFEST).is_file() and os.listdir(cwd) == []
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["wcc", "~/e.txt", "--out", "~no-such-user-gh32/o"])
    assert exit_.value.code == 2
    assert "cannot expand '~no-such-user-gh32' (no such user)" in capsys.readouterr().err
    assert os.listdir(cwd) == []


@pytest.mark.parametrize("name, own", [
    ("_tfront_manifest.json", True), ("_tfront_manifest.00000003.json", True),
    ("._tfront_manifest.00000003.json.crc", True), ("_tfront_loop", True),
    ("_tfront_lock", True), ("part-epoch-000002-00000-0123456789ab.parquet", True),
    (".part-epoch-000002-00000-0123456789ab.parquet.tmp", True), (".epoch-000002.tmp", True),
    ("._tfront_manifest.json.0a1b2c3d.tmp", True),
    ("_tfront_notes", False), ("_tfront_manifest.json.bak", False), ("_tfront_loop2", False),
    ("._tfront_mine", False), (".part-epoch-notes", False), ("part-epoch-2.parquet", False),
])
def test_gh32_only_the_exact_names_the_job_writes_are_its_own(name, own):
    from spark_plugin.jobs.recovery import is_own_name

    assert is_own_name(name) is own


def test_gh32_overwrite_and_resume_keep_a_users_tfront_named_files(tmp_path):
    """Issue 32 item 8: ``--overwrite`` and a resume deleted a user's ``_tfront_notes/`` in
    ``--out`` (any ``_tfront_`` name counted as the job's). Now it is a file no job wrote:
    the open is refused, naming it, and it stays -- with a manifest or without one."""
    job = {"input": "x", "epochs": 1}
    out = tmp_path / "out"
    OutputLog.open(out, job)[0].close()
    notes = out / "_tfront_notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(OutputStateError, match=r"no tfront job wrote \(_tfront_notes\)"):
            OutputLog.open(out, job, overwrite=overwrite)
    (out / MANIFEST).unlink()
    for overwrite in (False, True):
        with pytest.raises(OutputStateError, match=rf"files \(_tfront_notes\) but no {MANIFEST}"):
            OutputLog.open(out, job, overwrite=overwrite)
    assert os.listdir(out) == ["_tfront_notes"] and (notes / "todo.txt").read_text() == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_gh32_an_out_that_cannot_be_created_is_named_before_the_run(tmp_path, capsys):
    """Issue 32 item 14: ``--out /proc/foo`` said ``error: /proc/foo: No such file or
    directory`` after the settings line. Now the error names ``--out`` and comes before the
    run (no settings line); the API's error names it too."""
    from engine.cli.main import main

    e = _four_edges(tmp_path)
    capsys.readouterr()
    assert main(["wcc", str(e), "--out", "/proc/gh32-out"]) == 2
    err = capsys.readouterr().err
    assert err == ("tfront wcc: error: --out /proc/gh32-out: cannot create the directory "
                   "(no such file or directory: /proc/gh32-out)\n"), err
    with pytest.raises(OutputStateError, match="^--out /proc/gh32-out: cannot create"):
        OutputLog.open("/proc/gh32-out", {"input": "x", "epochs": 1})
