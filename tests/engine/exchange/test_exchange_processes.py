"""engine.exchange.processes: the exchange protocol on real worker processes.

The wire format round-trips through a real Arrow IPC stream; K = 2 and 3 processes replay the
bundled example workload and every worker's frontiers equal an independent single tracker's
after every batch; a killed worker and a stopped (hung) worker are named within the timeout
and leave no process behind. Real processes and sockets: nothing is mocked.
"""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is in the spark extra: pip install -e '.[spark]'")

from engine import Exchange, ImpliedFrontierTracker, read_workload  # noqa: E402
from engine.errors import BatchError, ExchangeStateError  # noqa: E402
from engine.exchange.messages import DataMessage, Update  # noqa: E402
from engine.core.workload import EXAMPLE_PATH  # noqa: E402
from engine.errors import SchemaError  # noqa: E402
from engine.exchange.processes import WorkerProcessError, WorkerTimeoutError  # noqa: E402
from engine.exchange.processes import (ProcessExchange, data_batch, read_batch,  # noqa: E402
                                         update_batch)
from engine.batched.arrow import delta_schema  # noqa: E402


def _through_ipc(batches, width):
    """Record batches written as one Arrow IPC stream (schema once, batch messages) and read
    back, as a worker's socket carries them."""
    wire = delta_schema(width).serialize().to_pybytes()
    wire += b"".join(b.serialize().to_pybytes() for b in batches)
    return list(pa.ipc.open_stream(pa.py_buffer(wire)))


def test_update_round_trips_through_an_ipc_stream():
    rng = np.random.default_rng(5)
    sent = []
    for seq, n in enumerate([3, 0, 1, 17]):
        sent.append(Update(2, seq, rng.integers(0, 9, n).astype(np.int32),
                           rng.integers(0, 1 << 40, (n, 3)), rng.integers(-5, 6, n)))
    got = [read_batch(b, 2, 3, k) for k, b in
           enumerate(_through_ipc([update_batch(u, 3) for u in sent], 3))]
    for u, v in zip(sent, got):
        assert (v.sender, v.seq) == (u.sender, u.seq)
        assert v.loc.dtype == np.int32 and v.ts.dtype == np.int64 and v.diff.dtype == np.int64
        np.testing.assert_array_equal(v.loc, u.loc)
        np.testing.assert_array_equal(v.ts, u.ts)
        np.testing.assert_array_equal(v.diff, u.diff)
    # capabilities sent as data travel on the same stream, told apart by their producer
    d = DataMessage(0, np.array([4], np.int32), np.array([[1, 2, 3]]), np.array([2]))
    (b,) = _through_ipc([data_batch(d, 2, 6, 3)], 3)
    seq, loc, ts, diff = read_batch(b, 2, 3, 0)
    assert seq == 6 and loc.tolist() == [4] and ts.tolist() == [[1, 2, 3]] and diff.tolist() == [2]


def test_a_batch_from_the_wrong_sender_or_schema_is_refused():
    u = Update(1, 4, np.array([0, 1], np.int32), np.array([[0, 0], [1, 0]]), np.array([1, -1]))
    (b,) = _through_ipc([update_batch(u, 2)], 2)
    with pytest.raises(BatchError, match=r"worker 0's connection names producer\(s\) \['worker-1'\]"):
        read_batch(b, 0, 2, 4)
    mixed = b.set_column(4, "seq", pa.array([4, 5], pa.int64()))
    with pytest.raises(BatchError, match="several sequence numbers"):
        read_batch(mixed, 1, 2, 4)
    with pytest.raises(SchemaError, match="no column 'diff'"):
        read_batch(b.drop_columns(["diff"]), 1, 2, 4)


def test_cli_replay_on_processes_prints_the_single_replay(capsys):
    """``tfront replay --workers 2 --processes``: worker 0's frontiers after every batch, in
    the single-worker replay's format, byte for byte (the others are checked inside)."""
    from engine.cli.main import main

    assert main(["replay", str(EXAMPLE_PATH), "--sources", "--backend", "reference"]) == 0
    single = capsys.readouterr().out
    assert main(["replay", str(EXAMPLE_PATH), "--sources", "--backend", "reference",
                 "--workers", "2", "--processes", "--policy", "batch", "--time"]) == 0
    out, err = capsys.readouterr()
    assert out == single
    lines = [json.loads(x) for x in err.splitlines()]
    assert [x["batch"] for x in lines] == list(range(5)) and all(x["equal"] for x in lines)


def test_processes_agree_with_a_single_tracker_then_a_killed_worker_is_named():
    """K = 3 processes replay the example (every worker against an independent single tracker,
    capabilities sent as data as the simulator sends them); then a worker is killed and the
    next batch names it, and nothing is left running."""
    workers = 3
    workload = read_workload(EXAMPLE_PATH)
    oracle = ImpliedFrontierTracker(workload.graph)
    sim = Exchange(workload.graph, workers, backend="reference")   # same split, in one process
    L = workload.graph.num_locations
    with ProcessExchange(workload.graph, workers, backend="reference", timeout=120) as ex:
        assert len(set(ex.pids)) == workers and os.getpid() not in ex.pids
        for k, b in enumerate(workload.batches):
            report = ex.run_batch(b.loc, b.ts, b.diff)
            oracle.update(b.loc, b.ts, b.diff)
            before = sim.stats["data_messages"]
            sim.run(b.loc, b.ts, b.diff)
            assert report.data_messages == sim.stats["data_messages"] - before
            want = [sorted(oracle.frontier(l)) for l in range(L)]
            assert len(ex.last_frontiers) == workers
            for i, got in enumerate(ex.last_frontiers):
                assert [sorted(f) for f in got] == want, (k, i)
            assert report.batch == k and report.changes == len(b.loc) and report.equal
            # every broadcast crossed K - 1 sockets, as Arrow IPC messages
            assert report.messages == report.updates * (workers - 1)
            assert (report.wire_bytes > 0) == (report.messages > 0)
            assert report.pointstamps >= report.updates
            assert 0 <= report.latency_s <= report.round_s
        assert sim.stats["data_messages"] >= 1   # batch 1's edge messages go to b's owner as data

        b = workload.batches[-1]     # the last batch again: the single tracker accepts it
        victim = 1
        proc = ex._procs[victim]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with pytest.raises(WorkerProcessError,
                           match=rf"worker {victim} \(pid \d+\).*killed by signal 9") as e:
            ex.run_batch(b.loc, b.ts, b.diff)
        assert e.value.worker == victim and e.value.exit_status == -signal.SIGKILL
        assert all(p.poll() is not None for p in ex._procs)     # nothing left running
        with pytest.raises(ExchangeStateError, match=f"closed .*worker {victim} failed"):
            ex.run_batch(b.loc, b.ts, b.diff)


def test_a_hung_worker_is_named_within_the_timeout():
    workload = read_workload(EXAMPLE_PATH)
    b = workload.batches[0]
    with ProcessExchange(workload.graph, 1, backend="reference", timeout=120) as ex:
        ex.timeout = 1.0                          # started: now answers must come quickly
        os.kill(ex.pids[0], signal.SIGSTOP)
        with pytest.raises(WorkerTimeoutError,
                           match=r"worker 0 \(pid \d+\) did not admit batch 0's initial capabilities "
                                 r"within 1 s") as e:
            ex.run_batch(b.loc, b.ts, b.diff)
        assert e.value.worker == 0
        assert all(p.poll() is not None for p in ex._procs)     # killed, not left stopped


def test_gh23_the_stopped_worker_is_named_not_the_ones_waiting_for_it():
    """Issue 23 item 14: with worker 2 of 3 stopped, ``replay --processes`` named worker 0
    (the first late one: 0 and 1 wait for 2's updates). The stopped process is named, and
    the others as waiting for it."""
    workload = read_workload(EXAMPLE_PATH)
    b = workload.batches[0]
    with ProcessExchange(workload.graph, 3, backend="reference", timeout=120) as ex:
        ex.timeout = 1.0
        os.kill(ex.pids[2], signal.SIGSTOP)
        with pytest.raises(WorkerTimeoutError,
                           match=r"worker 2 \(pid \d+\) did not .* within 1 s: the process is "
                                 r"stopped \(SIGSTOP or Ctrl-Z; SIGCONT resumes it\)") as e:
            ex.run_batch(b.loc, b.ts, b.diff)
        assert e.value.worker == 2
        assert all(p.poll() is not None for p in ex._procs)


def test_processes_replay_an_adversarial_workload_exactly(tmp_path):
    """Issue 25: worker processes take the updates that have arrived as one batch
    (Worker.receive_many) and admit a batch's initial rows in one step; on awkward batch
    shapes (in-batch cancels, counts below zero and back, far times, an empty batch) every
    worker's frontiers still equal the single tracker's after every batch."""
    from perf.workloads import adversarial_batches, generate_graph, write_workload
    from engine.exchange.processes import replay_processes

    spec = generate_graph(30, 3)
    path = tmp_path / "adversarial.txt"
    write_workload(path, spec, adversarial_batches(spec, 3, batches=11, rows=200))
    reports = replay_processes(path, 3, policy="holdback", backend="cpu", oracle="cpu",
                               op_rows=4)
    assert len(reports) == 11 and all(r.equal for r in reports)
    assert sum(r.updates for r in reports) > 0
