"""The progress exchange protocol on real processes: ``K`` worker processes on this machine,
each holding one :class:`engine.exchange.worker.Worker`, send each other their progress updates as
Arrow IPC streams over loopback TCP sockets; a coordinator feeds them a workload's batches.

Topology (``docs/exchange-processes.md``)::

    coordinator (this process)                       worker i (python -m engine.exchange.processes)
    --------------------------                       -------------------------------------------------
    read_workload, split_batch  -- private pipe -->  perform its operations, send under its policy
    single tracker (the oracle) <-- private pipe --  settled / final frontiers, statistics
                                                     worker i --TCP, one Arrow IPC stream--> worker j
                                                     (a full mesh: one connection per ordered pair)

One TCP connection per ordered pair of workers is exactly the protocol's FIFO queue
``msg w w'``: TCP delivers the updates of one sender to one receiver in the order they were
sent, and each carries its ``seq``, which the receiving :class:`~engine.exchange.worker.Worker`
checks. A worker's update to itself (the model broadcasts to every worker, itself included)
is delivered in-process, in order with its sends.

The wire format of an update is the delta batch of the Spark side
(:func:`engine.batched.arrow.delta_schema`): ``loc int32, ts fixed_size_list<int64>[m+K],
diff int64, producer string, seq int64`` with ``producer = "worker-<i>"``; each connection
carries one Arrow IPC stream -- the schema once, then one record batch per update -- so a
:class:`~spark_plugin.service.frontier_service.FrontierService` could read it as it is.

At the end of each batch the system is run to quiescence: every worker *settles* (sends what
:class:`~engine.exchange.policies.HoldBack` releases: a positive change its own capabilities justify may
stay, no frontier sees it), reports how many messages it has sent to each worker, and then
waits until it has received that many from every worker; its frontiers are then final and are
compared with a single tracker's. A worker process that dies or stops answering is named in a
:class:`WorkerProcessError` (or :class:`WorkerTimeoutError`)
within the exchange's ``timeout``; the exchange then stops every worker and refuses further
calls.

>>> from engine.core.workload import EXAMPLE_PATH
>>> report = replay_processes(EXAMPLE_PATH, 2, backend="reference")
>>> len(report), all(r.equal for r in report)
(5, True)
"""

from __future__ import annotations

import argparse
import os
import queue
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

import engine.errors as _engine_errors
from engine.batched.backend import make_tracker
from engine.errors import ExchangeStateError, SafetyError, TimelyFrontierError, UpdateOrderError
from engine.batched.arrow import (DIFF, LOC, PRODUCER, SEQ, TS, check_delta_schema, delta_schema,
                                  int_column, text_column, ts_array, ts_matrix)

__all__ = ["ProcessExchange", "BatchReport", "replay_processes", "replay_command", "update_batch", "data_batch",
           "read_batch", "producer_name", "operation_parts", "settle", "HOST", "WorkerProcessError",
           "WorkerTimeoutError"]

#: Every socket of the exchange is on the loopback interface, on a port the OS assigns.
HOST = "127.0.0.1"


class WorkerProcessError(TimelyFrontierError, RuntimeError):
    """A worker process of a :class:`~engine.exchange.processes.ProcessExchange` died, broke
    its protocol with the coordinator, or failed with an error that is not one of the
    project's. The exchange has stopped every worker.

    Attributes
    ----------
    worker : int
        The worker's index.
    exit_status : int or None
        Its exit status (negative: killed by that signal), None while it was still running.
    """

    def __init__(self, message: str, worker: int, exit_status: int | None = None):
        super().__init__(message)
        self.worker = worker
        self.exit_status = exit_status


class WorkerTimeoutError(WorkerProcessError):
    """A worker process did not answer within the exchange's timeout (hung, stopped, or far
    too slow). The exchange has stopped every worker."""
#: The first bytes on a worker-to-worker connection: a magic word and the sender's index.
_HELLO = struct.Struct("<4sI")
_MAGIC = b"TFX1"
#: The Arrow IPC end-of-stream marker (continuation token, zero metadata length).
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def producer_name(index: int, kind: str = "worker") -> str:
    """The ``producer`` column of worker ``index``'s progress updates, ``"worker-<index>"``,
    or (``kind="data"``) of the capabilities it sends as data, ``"data-<index>"``."""
    return f"{kind}-{index}"


# --- the wire format: updates and data messages as delta batches -------------------------------

def _delta_batch(loc, ts, diff, producer: str, seq: int, width: int) -> pa.RecordBatch:
    loc = np.ascontiguousarray(loc, dtype=np.int32)
    n = len(loc)
    return pa.RecordBatch.from_arrays(
        [pa.array(loc, pa.int32()), ts_array(np.asarray(ts, dtype=np.int64).reshape(n, width)),
         pa.array(np.asarray(diff, np.int64)),
         pa.repeat(pa.scalar(producer, pa.string()), n), pa.array(np.full(n, seq, np.int64))],
        schema=delta_schema(width))

def update_batch(update, width: int) -> pa.RecordBatch:
    """An :class:`~engine.exchange.messages.Update` as one record batch of :func:`delta_schema(width)
    <engine.batched.arrow.delta_schema>`: its rows, ``producer = "worker-<sender>"`` and
    ``seq`` on every row.

    >>> import numpy as np
    >>> from engine.exchange.messages import Update
    >>> u = Update(1, 7, np.array([3], np.int32), np.array([[0, 2]]), np.array([-1]))
    >>> b = update_batch(u, 2)
    >>> b.num_rows, b.column("producer")[0].as_py(), b.column("seq")[0].as_py()
    (1, 'worker-1', 7)
    """
    return _delta_batch(update.loc, update.ts, update.diff, producer_name(update.sender),
                        update.seq, width)


def data_batch(message, sender: int, seq: int, width: int) -> pa.RecordBatch:
    """A :class:`~engine.exchange.messages.DataMessage` (capabilities ``sender`` sends to
    ``message.receiver`` as data) as one record batch: ``producer = "data-<sender>"``, ``seq``
    numbering ``sender``'s data messages to that receiver."""
    return _delta_batch(message.loc, message.ts, message.diff, producer_name(sender, "data"),
                        seq, width)


def read_batch(batch: pa.RecordBatch, sender: int, width: int, next_seq: int):
    """What a record batch on ``sender``'s connection carries: an
    :class:`~engine.exchange.messages.Update` (producer ``worker-<sender>``) or, for producer
    ``data-<sender>``, ``(seq, loc, ts, diff)`` of capabilities sent as data.

    ``next_seq`` is the sequence number a batch without rows is given (it has no ``seq`` to
    read; TCP delivers in order). The receiving :class:`~engine.exchange.worker.Worker` checks an
    update's ``seq`` against its FIFO queue.

    Raises
    ------
    SchemaError, BatchError
        The batch is not a delta batch, names another producer than the connection's sender,
        or carries more than one sequence number.
    """
    from engine.exchange.messages import Update

    check_delta_schema(batch.schema, width)
    loc = int_column(batch.column(LOC), LOC).astype(np.int32)
    ts = ts_matrix(batch.column(TS), width)
    diff = int_column(batch.column(DIFF), DIFF)
    seq, kind = next_seq, "worker"
    if batch.num_rows:
        _codes, names = text_column(batch.column(PRODUCER), PRODUCER)
        seqs = int_column(batch.column(SEQ), SEQ)
        allowed = [producer_name(sender), producer_name(sender, "data")]
        if len(names) != 1 or names[0] not in allowed:
            raise _engine_errors.BatchError(
                f"a batch on worker {sender}'s connection names producer(s) {names}, expected "
                f"one of {allowed}")
        if (seqs != seqs[0]).any():
            raise _engine_errors.BatchError(
                f"a batch from worker {sender} carries several sequence numbers "
                f"{sorted(set(seqs.tolist()))[:5]}; one update has one")
        seq, kind = int(seqs[0]), names[0].split("-", 1)[0]
    if kind == "data":
        return seq, loc, ts, diff
    return Update(sender, seq, loc, ts, diff)


# --- the coordinator ----------------------------------------------------------------------------

@dataclass
class BatchReport:
    """What one batch did across the workers, once they were quiescent.

    Attributes
    ----------
    batch : int
        Index of the batch.
    changes : int
        Rows of the batch (data changes).
    operations : int
        Worker operations :func:`~engine.exchange.simulation.split_batch` made of it.
    equal : bool
        Every worker's frontiers equal the single tracker's (a difference raises
        :class:`~engine.errors.SafetyError`, so a returned report says True).
    updates, pointstamps, nbytes : int
        Progress updates sent in this batch (broadcasts, all workers), the rows they carried,
        and their size by :attr:`~engine.exchange.messages.Update.nbytes` -- the workers' ``stats``.
    messages : int
        Update messages that crossed a socket (each broadcast goes to the ``K - 1`` others).
    wire_bytes : int
        Bytes written to the sockets for them (Arrow IPC: metadata, padding, the ``producer``
        and ``seq`` columns included).
    data_messages : int
        Capabilities sent as data from one worker to another (``recv_cap`` at the receiver;
        not progress traffic, not in ``messages``).
    initial : int
        Rows no held capability justified, admitted as initial capabilities of their owner
        into the quiescent system before the operations (:meth:`engine.exchange.worker.Worker.admit`).
    latency_s : float
        From the dispatch of the batch until the last worker's frontiers took their final
        value (the time of the last update, in any worker, that changed its frontiers; the
        dispatch itself when none did) -- on the one clock of this machine.
    round_s : float
        From the dispatch until every worker had reported quiescence (the coordinator's
        round trips included).
    """

    batch: int
    changes: int
    operations: int
    equal: bool
    updates: int
    pointstamps: int
    nbytes: int
    messages: int
    wire_bytes: int
    data_messages: int
    initial: int
    latency_s: float
    round_s: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


_STAT_KEYS = ("updates_sent", "pointstamps_sent", "bytes_sent")
_WIRE_KEYS = ("wire_bytes", "messages", "data_messages")


def settle(worker):
    """Send what :class:`~engine.exchange.policies.HoldBack` releases of ``worker``'s ``temp`` (the
    :class:`~engine.exchange.simulation.Exchange`'s ``quiesce`` does the same): what stays is only
    positive changes the worker's own capabilities justify, which no frontier can see. The
    :class:`~engine.exchange.messages.Update`, or None when nothing is released."""
    from engine.exchange.policies import HoldBack

    mask = HoldBack().release(worker)
    return worker.send(select=mask) if mask.any() else None


def operation_parts(op, rows: int | None) -> list[tuple]:
    """One operation of :func:`~engine.exchange.simulation.split_batch` as ``(loc, ts, diff, to)``
    operations of at most ``rows`` rows (all of it when ``rows`` is None): the positive rows
    (new capabilities, data messages) first, then the drops.

    Admissible in that order: ``split_batch`` justified every row by capabilities held
    before the batch; positive rows only add to them, and each drop is of a distinct,
    held pointstamp -- so no part loses what a later part's guard needs.
    """
    if rows is None or len(op.loc) <= rows:
        return [(op.loc, op.ts, op.diff, op.to)]
    order = np.argsort(op.diff < 0, kind="stable")
    return [(op.loc[i], op.ts[i], op.diff[i], op.to[i])
            for i in (order[a:a + rows] for a in range(0, len(order), rows))]


def _count_at(table, q_loc, q_ts) -> np.ndarray:
    """``int64[q]``: the count of each query pointstamp in a consolidated ``(loc, ts, cnt)``
    table (0 where absent)."""
    n = len(table[0])
    if n == 0 or len(q_loc) == 0:
        return np.zeros(len(q_loc), np.int64)
    keys = np.column_stack([np.concatenate([table[0], q_loc]).astype(np.int64),
                            np.concatenate([table[1], q_ts])])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    vals = np.zeros(int(inv.max()) + 1, np.int64)
    vals[inv[:n]] = table[2]
    return vals[inv[n:]]


class ProcessExchange:
    """``workers`` worker processes running the exchange protocol, and their coordinator.

    Parameters
    ----------
    graph : engine.Graph
    workers : int
        Number of worker processes ``K`` (at least 1).
    policy : str or engine.exchange.policies.Policy
        The workers' sending policy (a name of :data:`engine.exchange.policies.POLICIES`, or a
        policy object, pickled to each worker). Workers pass ``now`` in seconds of the
        machine's monotonic clock, so a time-based policy's interval is in seconds.
    backend : str or None
        Each worker's local tracker (:func:`engine.make_tracker`; None: ``$TFRONT_BACKEND``
        or ``auto``).
    oracle : str or None
        Backend of the coordinator's single tracker the workers' frontiers are checked
        against (default ``reference``, :class:`engine.ImpliedFrontierTracker`).
    timeout : float
        Seconds a worker may take to answer (to start, to finish a batch) before it is
        declared hung.
    op_rows : int or None
        Perform each worker's share of a batch as operations of at most this many rows
        (:func:`operation_parts`), sending under the policy after each; None: one operation.

    Use it as a context manager (or call :meth:`close`): the processes are stopped at exit.
    """

    def __init__(self, graph, workers: int, *, policy="all", backend: str | None = "cpu",
                 oracle: str | None = "reference", timeout: float = 60.0,
                 op_rows: int | None = None):
        if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if op_rows is not None and (isinstance(op_rows, bool) or not isinstance(op_rows, int)
                                    or op_rows < 1):
            raise ValueError(f"op_rows must be a positive integer or None, got {op_rows!r}")
        self.op_rows = op_rows
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        from engine.exchange.multisets import PointstampOrder
        from engine.exchange.policies import make_policy
        make_policy(policy)        # an unknown name fails here, before any process starts
        self.order = PointstampOrder(graph)
        self.graph, self.workers, self.policy, self.backend = graph, int(workers), policy, backend
        self.timeout = float(timeout)
        self.width = graph.m + graph.max_depth
        self._oracle_backend = oracle
        self._fresh_state()
        self._procs: list[subprocess.Popen] = []
        self._send: list[Connection] = []
        self._recv: list[Connection] = []
        self._logs: list = []
        self._closed = False
        self._broken: str | None = None
        self._hung: set[int] = set()
        self._batches = 0
        self._stats = [dict.fromkeys(_STAT_KEYS + _WIRE_KEYS, 0)
                       for _ in range(self.workers)]
        self.startup_s = None
        #: Every worker's frontiers (indexed by location) after the last batch.
        self.last_frontiers: list[list[list[tuple]]] = []
        start = time.perf_counter()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        self.startup_s = time.perf_counter() - start

    def _fresh_state(self) -> None:
        self._oracle = make_tracker(self.graph, self._oracle_backend)
        W = self.width
        #: The workload's signed counts (loc, ts, cnt), consolidated.
        self._counts = (np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64))

    def reset(self, *, policy=None) -> None:
        """Start over on the same processes and sockets: every worker gets a fresh
        :class:`~engine.exchange.worker.Worker` (``policy``, default the current one; ``initial``
        capabilities), the single tracker and the counts a fresh state, the statistics zero. The exchange is
        quiescent between batches, so nothing is in flight. Saves the processes' start-up (a
        benchmark measures several policies on the same ``K``)."""
        self._check_usable()
        if policy is not None:
            from engine.exchange.policies import make_policy
            make_policy(policy)
            self.policy = policy
        try:
            for i in range(self.workers):
                self._post(i, ("reset", self.policy))
            self._gather("ready", "start over")
        except BaseException:
            self._broken = self._broken or "reset failed"
            self.close()
            raise
        self._fresh_state()
        self._batches = 0
        self.last_frontiers = []
        self._stats = [dict.fromkeys(_STAT_KEYS + _WIRE_KEYS, 0)
                       for _ in range(self.workers)]

    # -- life cycle ------------------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """Process ids of the workers, by index."""
        return [p.pid for p in self._procs]

    def _start(self) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the repository root
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        for i in range(self.workers):
            down_r, down_w = os.pipe()     # coordinator -> worker
            up_r, up_w = os.pipe()         # worker -> coordinator
            log = tempfile.TemporaryFile(prefix=f"tfront-worker-{i}-")
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "engine.exchange.processes", "--control",
                     f"{down_r},{up_w}"], pass_fds=(down_r, up_w), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=log, env=env, close_fds=True)
            finally:
                os.close(down_r)
                os.close(up_w)
            self._procs.append(proc)
            self._logs.append(log)
            self._send.append(Connection(down_w, readable=False))
            self._recv.append(Connection(up_r, writable=False))
        for i in range(self.workers):
            self._post(i, ("init", i, self.workers, self.graph, self.policy, self.backend,
                           self.timeout))
        ports = [msg[1] for msg in self._gather("listening", "start")]
        for i in range(self.workers):
            self._post(i, ("peers", ports))
        self._gather("ready", "connect to its peers")

    def close(self) -> None:
        """Stop every worker (politely, then by force) and release the pipes. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for i, proc in enumerate(self._procs):
            if proc.poll() is None:
                try:
                    self._send[i].send(("stop",))
                except OSError:
                    pass
        # A worker that failed or hung gets no grace: the others stop at once (they only
        # close their sockets), and a hung one is killed.
        for i in self._hung:
            if self._procs[i].poll() is None:
                self._procs[i].kill()
        deadline = time.monotonic() + (1.0 if self._broken else 5.0)
        for proc in self._procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for c in self._send + self._recv:
            c.close()
        for log in self._logs:
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_procs", None) is not None and not getattr(self, "_closed", True):
            self.close()

    # -- batches ---------------------------------------------------------------------------------

    def run_batch(self, loc, ts, diff) -> BatchReport:
        """Perform one workload batch across the workers and run them to quiescence.

        As :meth:`engine.exchange.simulation.Exchange.perform_batch` does, the protocol is given the
        changes of the *positive part* of every workload count (a workload count may go below
        zero between batches, ``rec`` cannot: the frontiers are the same), split by
        :func:`engine.exchange.simulation.split_batch` given the capabilities held (at quiescence, the
        positive counts); rows nothing held justifies are admitted first on every worker as
        initial capabilities of their owner. Each worker then performs its operation, sends
        its capabilities-as-data to their receivers and its updates under its policy, and
        settles (:func:`settle`); once every update and data message has been received everywhere, every
        worker's frontiers are compared with the single tracker's (which applies the batch
        as it is).

        Raises
        ------
        BatchError
            A malformed batch (before any worker sees it; nothing changes).
        SafetyError
            A worker's frontier differs from the single tracker's (location and both named).
        WorkerProcessError, WorkerTimeoutError
            A worker died, hung or failed (its index named); the exchange is then closed.
        TimelyFrontierError
            A worker rejected an operation (the engine's named error, re-raised with the
            worker's index); the exchange is then closed: the workers' states have diverged.
        """
        self._check_usable()
        from engine.exchange.simulation import split_batch
        from engine.batched.kernels import cpu_kernels
        from gpu_kernels.consolidate import consolidate

        k = self._batches
        b = cpu_kernels.intake(self.graph, self.order.ga.depth, loc, ts, diff)   # validates
        n = len(np.asarray(loc))
        old = _count_at(self._counts, b[0], b[1])
        dpos = np.maximum(old + b[2], 0) - np.maximum(old, 0)
        keep = dpos != 0
        c = self._counts
        held = (c[0][c[2] > 0], c[1][c[2] > 0], c[2][c[2] > 0])
        ops = split_batch(self.graph, b[0][keep], b[1][keep], dpos[keep], self.workers,
                          held=held, order=self.order)
        self._oracle.update(loc, ts, diff)
        self._counts = consolidate(np.concatenate([c[0], b[0]]).astype(np.int32),
                                   np.ascontiguousarray(np.concatenate([c[1], b[1]])),
                                   np.concatenate([c[2], b[2]]))
        admits = [(int(op.worker), op.loc, op.ts, op.diff) for op in ops if op.initial]
        per_worker: list[list] = [[] for _ in range(self.workers)]
        for op in ops:
            if not op.initial:
                per_worker[int(op.worker)] += operation_parts(op, self.op_rows)
        try:
            t0 = time.monotonic()
            if admits:   # one step of every worker before any other: a barrier
                for i in range(self.workers):
                    self._post(i, ("admit", k, admits))
                self._gather("admitted", f"admit batch {k}'s initial capabilities")
            for i in range(self.workers):
                self._post(i, ("batch", k, per_worker[i], t0))
            settled = self._gather("settled", f"finish batch {k}")
            for r in range(self.workers):       # what r must receive from each sender
                self._post(r, ("await", k, [msg[2][r] for msg in settled]))
            finals = self._gather("final", f"reach quiescence after batch {k}")
            t_end = time.monotonic()
        except BaseException:
            self._broken = self._broken or f"batch {k} failed"
            self.close()
            raise
        self._batches += 1
        self.last_frontiers = [msg[2] for msg in finals]
        expected = self._oracle.frontiers()
        for i, msg in enumerate(finals):
            _, _, frontiers, _stats, _changed_at, _wire = msg
            for l, (got, want) in enumerate(zip(frontiers, expected)):
                if sorted(got) != sorted(want):
                    self._broken = f"worker {i}'s frontiers differed after batch {k}"
                    self.close()
                    raise SafetyError(
                        f"after batch {k} and quiescence, worker {i}'s frontier at "
                        f"{self.graph.describe(l)} is {sorted(got)}, the single tracker's "
                        f"{sorted(want)}")
        delta = dict.fromkeys(_STAT_KEYS + _WIRE_KEYS, 0)
        for i, msg in enumerate(finals):
            stats, wire = msg[3], msg[5]
            now = {**{key: int(stats.get(key, 0)) for key in _STAT_KEYS}, **wire}
            for key in delta:
                delta[key] += now[key] - self._stats[i][key]
            self._stats[i] = now
        changed = [msg[4] for msg in finals if msg[4] is not None]
        return BatchReport(batch=k, changes=n, operations=len(ops) - len(admits), equal=True,
                           updates=delta["updates_sent"], pointstamps=delta["pointstamps_sent"],
                           nbytes=delta["bytes_sent"], messages=delta["messages"],
                           wire_bytes=delta["wire_bytes"], data_messages=delta["data_messages"],
                           initial=int(sum(len(a[1]) for a in admits)),
                           latency_s=max([t0] + changed) - t0, round_s=t_end - t0)

    def frontier(self, loc: int) -> list[tuple]:
        """The single tracker's frontier at ``loc`` (every worker's, once a batch returned)."""
        return self._oracle.frontier(loc)

    # -- the control channel ---------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise ExchangeStateError("the process exchange is closed" + (
                f" ({self._broken})" if self._broken else "") + "; start a new one")

    def _post(self, i: int, msg) -> None:
        try:
            self._send[i].send(msg)
        except OSError as e:           # the pipe is gone: the worker has exited
            raise self._failure(i, f"its control pipe is closed ({e})") from None

    def _gather(self, kind: str, doing: str) -> list:
        """One ``kind`` reply from every worker, in worker order, within ``timeout`` each."""
        replies: list = [None] * self.workers
        pending = {self._recv[i]: i for i in range(self.workers)}
        deadline = time.monotonic() + self.timeout
        while pending:
            ready = wait(list(pending), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                # the workers a stopped one holds up are late too: name the stopped first
                late = sorted(pending.values(),
                              key=lambda i: (not _stopped(self._procs[i].pid), i))
                raise self._failure(late[0], None, hung=True, doing=doing,
                                    others=sorted(late[1:]))
            for conn in ready:
                i = pending[conn]
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    raise self._failure(i, "its control pipe closed", doing=doing) from None
                if msg[0] == "error":
                    raise self._worker_error(i, msg)
                if msg[0] != kind:
                    raise self._failure(i, f"it answered {msg[0]!r}, expected {kind!r}",
                                        doing=doing)
                replies[i] = msg
                del pending[conn]
        return replies

    def _worker_error(self, i: int, msg) -> Exception:
        """A worker's report of an exception: the same named class where it is one of the
        project's (raised again with the worker's index), else a WorkerProcessError."""
        _, name, text, tb, peer = msg
        cls = getattr(_engine_errors, name, None) or globals().get(name)
        ours = isinstance(cls, type) and issubclass(cls, TimelyFrontierError)
        if peer is not None or not ours:
            # A worker that lost a peer, or failed writing to one: name the peer if it is the
            # one that died, rather than the worker that noticed.
            dead = self._dead(grace=2.0, prefer=peer)
            if dead is not None and dead != i:
                return self._failure(dead, None)
        if ours:
            try:
                err = cls(f"worker {i}: {text}")
            except TypeError:       # a class whose constructor wants more than a message
                err = None
            if err is not None:
                self._broken = f"worker {i} raised {name}"
                return err
        return WorkerProcessError(f"worker {i} failed: {name}: {text}\n{tb}", worker=i)

    def _dead(self, grace: float = 0.0, prefer: int | None = None) -> int | None:
        """Index of a worker process that has exited (``prefer`` first, waited for up to
        ``grace`` seconds), or None."""
        if prefer is not None:
            try:
                self._procs[prefer].wait(timeout=grace)
                return prefer
            except subprocess.TimeoutExpired:
                pass
        for i, proc in enumerate(self._procs):
            if proc.poll() is not None:
                return i
        return None

    def _failure(self, i: int, what: str | None, *, hung: bool = False, doing: str = "answer",
                 others: Sequence[int] = ()) -> WorkerProcessError:
        """The error naming worker ``i`` (or the worker that really died), with its exit
        status and the end of its log."""
        if not hung:
            dead = self._dead(grace=2.0, prefer=i)
            i = dead if dead is not None else i
        proc = self._procs[i]
        status = proc.poll()
        self._broken = f"worker {i} failed"
        log = _tail(self._logs[i])
        if hung:
            stopped = _stopped(proc.pid)
            self._hung.update([i, *others])
            more = (f" (also late: worker{'s' if len(others) > 1 else ''} "
                    f"{', '.join(map(str, others))}"
                    + (", waiting for it" if stopped else "") + ")") if others else ""
            why = (": the process is stopped (SIGSTOP or Ctrl-Z; SIGCONT resumes it)"
                   if stopped else "")
            return WorkerTimeoutError(
                f"worker {i} (pid {proc.pid}) did not {doing} within {self.timeout:g} s"
                f"{why}{more}"
                + (f"; its output ends:\n{log}" if log else ""), worker=i)
        if status is None:
            why = f"{what}, but the process is still running"
        elif status < 0:
            why = f"the process was killed by signal {-status}"
        else:
            why = f"the process exited with status {status}"
        return WorkerProcessError(
            f"worker {i} (pid {proc.pid}) failed while the exchange waited for it to {doing}: "
            f"{why}" + (f"; its output ends:\n{log}" if log else ""), worker=i, exit_status=status)


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (``SIGSTOP``, ``SIGTSTP``, a tracer): its state
    in ``/proc/PID/stat`` is ``T`` or ``t`` (Linux; ``False`` where that cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]   # after "(comm) "
    return state in (b"T", b"t")


def _tail(log, lines: int = 12) -> str:
    try:
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def replay_command(args, workload, out) -> int:
    """``tfront replay FILE --workers K --processes`` (the entry point ``processes`` of
    ``engine.cli.main.RUNNERS_GROUP``): ``workload``'s batches on ``args.workers`` processes, each
    run to quiescence and every worker's frontiers checked against a single tracker's; worker
    0's written to ``out`` in the replay format. ``--time`` writes each batch's
    :class:`BatchReport` as one JSON line on stderr."""
    import json

    from engine.core.workload import REPLAY_HEADER, write_frontier_report

    options = {} if args.worker_timeout is None else {"timeout": args.worker_timeout}
    with ProcessExchange(workload.graph, args.workers, policy=args.policy or "all",
                         backend=args.backend, oracle=args.backend, **options) as ex:
        if not args.quiet:
            out.write(REPLAY_HEADER + "\n")
        for k, batch in enumerate(workload.batches):
            report = ex.run_batch(batch.loc, batch.ts, batch.diff)
            if args.time:
                print(json.dumps(report.as_dict()), file=sys.stderr)
            if not args.quiet:
                write_frontier_report(out, workload, k, ex.last_frontiers[0].__getitem__,
                                      sources=args.sources)
    return 0


def replay_processes(path, workers: int, *, on_batch=None, allow_zero_cycles: bool = False,
                     **options) -> list[BatchReport]:
    """Replay the workload file at ``path`` on ``workers`` processes (``options`` go to
    :class:`ProcessExchange`); ``on_batch(exchange, report)`` is called after each batch.
    Returns the per-batch reports (every one checked equal to the single tracker)."""
    from engine.core.workload import read_workload

    workload = read_workload(path, allow_zero_cycles=allow_zero_cycles)
    reports = []
    with ProcessExchange(workload.graph, workers, **options) as ex:
        for b in workload.batches:
            report = ex.run_batch(b.loc, b.ts, b.diff)
            reports.append(report)
            if on_batch is not None:
                on_batch(ex, report)
    return reports


# --- the worker process -------------------------------------------------------------------------

class _PeerLost(Exception):
    """A peer's connection ended while this worker still needed something from it."""

    def __init__(self, peer: int, text: str):
        super().__init__(text)
        self.peer = peer


class _Node:
    """One worker process: its :class:`~engine.exchange.worker.Worker`, its sockets and its loop.

    Threads: one reads the coordinator's pipe, one per incoming peer connection reads that
    peer's Arrow IPC stream; they only put what they read on ``inbox``. The main thread alone
    touches the Worker, so its transitions happen one at a time, as in the model.
    """

    def __init__(self, cin: Connection, cout: Connection):
        self.cin, self.cout = cin, cout
        self.inbox: queue.Queue = queue.Queue()
        self.front: list = []      # events taken from the inbox and not handled yet
        self.deferred: list = []
        self.stopping = False

    # -- set-up ----------------------------------------------------------------------------------

    def start(self) -> None:
        _, self.index, self.k, graph, policy, backend, timeout = self.cin.recv()
        self.width = graph.m + graph.max_depth
        self.schema = delta_schema(self.width)
        listener = socket.create_server((HOST, 0), backlog=max(self.k, 1))
        listener.settimeout(timeout)
        self.cout.send(("listening", listener.getsockname()[1]))
        self.graph, self.backend = graph, backend
        self._new_worker(policy)
        update_batch(_empty_update(self.index, self.width), self.width).serialize()
        msg = self.cin.recv()
        if msg[0] != "peers":
            raise RuntimeError(f"expected the peers' ports, got {msg[0]!r}")
        ports = msg[1]
        self.out: dict[int, socket.socket] = {}
        header = self.schema.serialize().to_pybytes()
        for j in range(self.k):
            if j == self.index:
                continue
            s = socket.create_connection((HOST, ports[j]), timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(_HELLO.pack(_MAGIC, self.index) + header)
            self.out[j] = s
        self.closed_peers: set[int] = set()
        threads = []
        for _ in range(self.k - 1):
            conn, _addr = listener.accept()
            conn.settimeout(timeout)
            hello = _recv_exactly(conn, _HELLO.size)
            magic, j = _HELLO.unpack(hello)
            if magic != _MAGIC or not 0 <= j < self.k or j == self.index:
                raise RuntimeError(f"a connection on worker {self.index}'s port did not "
                                   f"introduce itself as a peer (got {hello!r})")
            conn.settimeout(None)
            threads.append(threading.Thread(target=self._read_peer, args=(conn, j), daemon=True))
        listener.close()
        self.readers = threads
        for t in threads:
            t.start()
        threading.Thread(target=self._read_control, daemon=True).start()
        self.cout.send(("ready",))

    def _new_worker(self, policy) -> None:
        from engine.exchange.worker import Worker

        self.worker = Worker(self.graph, self.index, self.k, backend=self.backend, policy=policy)
        self.worker.tracker = _Noting(self.worker.tracker, self._frontier_changed)
        self.worker.frontiers()    # whatever the tracker builds lazily, build it now
        self._warm_up()
        self.received = [0] * self.k           # batches taken from each sender (self included)
        self.updates_in = [0] * self.k         # of which progress updates
        self.data_in = [0] * self.k            # of which data messages
        self.sent_to = [0] * self.k            # batches sent to each receiver (self included)
        self.data_out = [0] * self.k           # data messages sent to each receiver
        self.wire_bytes = self.messages = self.data_messages = 0
        self.last_change = self.admitted = None

    def _read_control(self) -> None:
        while True:
            try:
                msg = self.cin.recv()
            except (EOFError, OSError):
                self.inbox.put(("control-eof",))
                return
            self.inbox.put(("control", msg))

    def _read_peer(self, conn: socket.socket, j: int) -> None:
        try:
            reader = pa.ipc.open_stream(conn.makefile("rb"))
            if not reader.schema.equals(self.schema):
                raise _engine_errors.BatchError(f"worker {j}'s stream has schema "
                                                f"{reader.schema}, expected {self.schema}")
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                self.inbox.put(("update", j, batch))
            self.inbox.put(("peer-end", j, "closed its stream"))
        except Exception as e:     # noqa: BLE001 -- reported to the main thread, which raises
            self.inbox.put(("peer-end", j, f"its stream broke: {type(e).__name__}: {e}"))

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> None:
        self.start()
        self.pending = None        # (batch, counts) of an await not yet satisfied
        while True:
            if self.deferred:
                events = [self.deferred.pop(0)]
            else:
                events = self._available() or [self.inbox.get()] + self._available()
            if not self._handle_all(events, during_batch=False):
                return

    def _available(self) -> list:
        """Every event taken and not handled yet (:attr:`front`), then every event already
        in the inbox, without waiting."""
        out, self.front = self.front, []
        while True:
            try:
                out.append(self.inbox.get_nowait())
            except queue.Empty:
                return out

    def _handle_all(self, events, *, during_batch: bool) -> bool:
        """Handle events in order; the progress updates among them, as they come in a row,
        are received together (:meth:`~engine.exchange.worker.Worker.receive_many`: one
        ``glob`` merge and one tracker batch), which the model allows: a sequence of
        ``recv_upd`` steps ends in the same state however it is grouped."""
        ups: list = []
        for i, ev in enumerate(events):
            if ev[0] == "update":
                j = ev[1]
                got = read_batch(ev[2], j, self.width,
                                 self.updates_in[j] + sum(u.sender == j for u in ups))
                if not isinstance(got, tuple):
                    ups.append(got)
                    continue
                self._apply_many(ups)
                ups = []
                self._take_data_message(j, got)
                self._check_await()
                continue
            self._apply_many(ups)
            # A control event may run a batch, which receives what arrives meanwhile: the
            # events behind it go back to the front of the line first, to keep FIFO order.
            self.front[:0] = events[i + 1:]
            return self._handle(ev, during_batch=during_batch)
        self._apply_many(ups)
        self._check_await()
        return True

    def _handle(self, ev, *, during_batch: bool) -> bool:
        kind = ev[0]
        if kind == "update":
            return self._handle_all([ev], during_batch=during_batch)
        elif kind == "peer-end":
            self.closed_peers.add(ev[1])
            if not self.stopping:
                self._check_peers(ev[1], ev[2])
        elif kind == "control-eof":
            self.stopping = True
            return False
        elif kind == "control":
            if during_batch:           # the coordinator waits for this batch: keep it for later
                self.deferred.append(ev)
                return True
            msg = ev[1]
            if msg[0] == "batch":
                self._batch(*msg[1:])
            elif msg[0] == "admit":
                self._admit(*msg[1:])
            elif msg[0] == "reset":
                self._new_worker(msg[1])
                self.cout.send(("ready",))
            elif msg[0] == "await":
                self.pending = (msg[1], msg[2])
            elif msg[0] == "stop":
                self.stopping = True
                for s in self.out.values():
                    try:
                        s.sendall(_EOS)
                        s.close()
                    except OSError:
                        pass
                deadline = time.monotonic() + 5.0   # the peers end their streams as they stop
                for t in self.readers:
                    t.join(max(0.0, deadline - time.monotonic()))
                return False
            else:
                raise RuntimeError(f"unknown control message {msg[0]!r}")
        self._check_await()
        return True

    def _check_peers(self, j: int, text: str) -> None:
        if self.pending is not None and self.received[j] < self.pending[1][j]:
            raise _PeerLost(j, f"worker {j} {text} with {self.pending[1][j] - self.received[j]} "
                               f"update(s) still to come")

    def _admit(self, k: int, admits: list) -> None:
        self.last_change = None
        self.worker.admit_many(admits)
        self.admitted = k
        self.cout.send(("admitted", k))

    def _batch(self, k: int, ops: list, t0: float) -> None:
        if self.admitted != k:
            self.last_change = None
        for loc, ts, diff, to in ops:
            for message in self.worker.perform(loc, ts, diff, to=to, now=time.monotonic()):
                self._send_data(message)
            self._broadcast(self.worker.send(now=time.monotonic()))
            self._drain()
        self._broadcast(settle(self.worker))
        self.cout.send(("settled", k, list(self.sent_to)))

    def _drain(self) -> None:
        """Receive what has arrived, without waiting (between two operations): the updates
        in one :meth:`~engine.exchange.worker.Worker.receive_many`."""
        events = self._available()
        if events:
            self._handle_all(events, during_batch=True)

    def _broadcast(self, update) -> None:
        if update is None:
            return
        if self.out:
            payload = update_batch(update, self.width).serialize().to_pybytes()
            for j, s in self.out.items():
                s.sendall(payload)
                self.sent_to[j] += 1
                self.wire_bytes += len(payload)
                self.messages += 1
        self.sent_to[self.index] += 1
        self._apply(update)        # the model's broadcast includes the sender itself

    def _send_data(self, message) -> None:
        r = message.receiver
        self.sent_to[r] += 1
        self.data_messages += 1
        if r == self.index:
            self._take_data(r, message.loc, message.ts, message.diff)
            return
        self.out[r].sendall(data_batch(message, self.index, self.data_out[r],
                                       self.width).serialize().to_pybytes())
        self.data_out[r] += 1

    def _take_data_message(self, j: int, got) -> None:
        seq, loc, ts, diff = got
        if seq != self.data_in[j]:
            raise UpdateOrderError(f"worker {self.index}: data message {seq} from worker {j} "
                                   f"is out of order: expected {self.data_in[j]}")
        self.data_in[j] += 1
        self._take_data(j, loc, ts, diff)

    def _apply_many(self, updates) -> None:
        if not updates:
            return
        self.worker.receive_many(updates)
        for u in updates:
            self.received[u.sender] += 1
            self.updates_in[u.sender] += 1

    def _take_data(self, j: int, loc, ts, diff) -> None:
        self.worker.receive_data(loc, ts, diff)     # recv_cap
        self.received[j] += 1

    def _apply(self, update) -> None:
        self.worker.receive(update)
        self.received[update.sender] += 1
        self.updates_in[update.sender] += 1

    def _warm_up(self) -> None:
        """Run every transition once on a throw-away worker of the same graph, backend and
        policy -- admit, perform (a drop), send, receive -- so the kernels they use are loaded
        (or compiled) and the tracker's lazy structures built before the first batch: its
        latency then measures the protocol, not the start-up."""
        from engine.exchange.worker import Worker

        w = Worker(self.graph, 0, 1, backend=self.backend, policy=self.worker.policy,
                   order=self.worker.order)
        row = (np.zeros(1, np.int32), np.zeros((1, self.width), np.int64), np.ones(1, np.int64))
        w.admit(*row, owner=0)
        w.perform(row[0], row[1], -row[2], now=0.0)
        for update in (w.send(now=0.0), settle(w), w.flush()):
            if update is not None:
                w.receive(update)

    def _frontier_changed(self) -> None:
        self.last_change = time.monotonic()

    def _check_await(self) -> None:
        if self.pending is None:
            return
        k, counts = self.pending
        for j in self.closed_peers:
            self._check_peers(j, "closed its stream")
        if all(self.received[j] >= counts[j] for j in range(self.k)):
            self.pending = None
            wire = {"wire_bytes": self.wire_bytes, "messages": self.messages,
                    "data_messages": self.data_messages}
            self.cout.send(("final", k, self.worker.frontiers(), dict(self.worker.stats),
                            self.last_change, wire))


def _empty_update(sender: int, width: int):
    from engine.exchange.messages import Update
    return Update(sender, 0, np.zeros(0, np.int32), np.zeros((0, width), np.int64),
                  np.zeros(0, np.int64))


class _Noting:
    """A worker's local tracker, passed through, calling ``on_change()`` whenever an update
    changes a frontier (its returned frontier changes are not empty): when the frontiers took
    their final value is what the latency measures."""

    def __init__(self, tracker, on_change):
        self._tracker, self._on_change = tracker, on_change

    def __getattr__(self, name):
        attr = getattr(self._tracker, name)
        if name not in ("update", "update_arrays"):
            return attr

        def noted(*args, **kwargs):
            out = attr(*args, **kwargs)
            if len(out[0] if name == "update_arrays" else out):
                self._on_change()
            return out
        return noted


def _recv_exactly(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def _worker_main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m engine.exchange.processes",
                                description="One worker process of a ProcessExchange (started "
                                            "by its coordinator, not by hand).")
    p.add_argument("--control", required=True, help="READ_FD,WRITE_FD of the coordinator's pipes")
    args = p.parse_args(argv)
    rfd, wfd = (int(x) for x in args.control.split(","))
    cin, cout = Connection(rfd, writable=False), Connection(wfd, readable=False)
    node = _Node(cin, cout)
    try:
        node.run()
    except BaseException as e:  # noqa: BLE001 -- reported to the coordinator, then exit 1
        peer = e.peer if isinstance(e, _PeerLost) else None
        try:
            cout.send(("error", type(e).__name__, str(e), traceback.format_exc(), peer))
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    status = _worker_main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Not sys.exit: a reader thread may still be blocked inside pyarrow on a peer's socket (a
    # peer that failed), and interpreter shutdown under such a thread aborts the process.
    os._exit(status)
