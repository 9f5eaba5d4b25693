"""Job steps named for Spark and recorded in a progress log: the live view's data.

A :class:`ProgressRecorder` follows a job driven by a
:class:`~spark_plugin.service.frontier_service.FrontierService`. The driver names each step before it runs
it (:meth:`ProgressRecorder.step`): the name becomes the Spark job description of the
driver thread's next jobs (the Spark UI shows ``wcc epoch 3 round 2: small-star``) and,
with a log path, a ``step`` event. Subscribed to the service, the recorder writes one
``frontier`` event per operator input per delta batch that changed that input's frontier
-- the frontier after the batch, what entered and left it, the batch's producer and
sequence number and the step that sent it -- and a ``messages`` event whenever the
messages in flight (pointstamp counts at operator inputs) per timestamp changed. Every
event carries the wall-clock time and is flushed as it is written, so a reader
(:func:`engine.operate.progress_view.watch`, ``tfront progress --watch``) follows the job live.
The format is ``docs/progress.md``; :mod:`engine.operate.progress_view` reads and draws it.

>>> from engine.core.workload import example_graph
>>> from spark_plugin.schema import delta_table
>>> from spark_plugin.service.frontier_service import FrontierService
>>> import json, tempfile, os
>>> g = example_graph()
>>> svc = FrontierService(g)
>>> path = os.path.join(tempfile.mkdtemp(), "progress.jsonl")
>>> rec = ProgressRecorder(None, path, graph=g, job="example")
>>> rec.attach(svc)
>>> rec.step("first batch", 0, 0, stage=0)
>>> _ = svc.apply(delta_table([g.source(1, 0)], [[0, 0]], [1], "job-0", 0))
>>> rec.close()
>>> [json.loads(l)["event"] for l in open(path)][:3]
['start', 'step', 'frontier']
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from engine.core.graph import Graph, PortKind
from engine.operate.progress_view import PROGRESS_FORMAT

__all__ = ["ProgressRecorder", "job_description", "input_names"]


def job_description(job: str, step: str, epoch: int, iteration: int) -> str:
    """The Spark job description of a step: ``'wcc epoch 3 round 2: small-star'``.

    ``round`` counts the loop's rounds from 1, as the progress bar, the ``-v`` round lines
    and the epoch line's ``rounds R`` do: the step of loop iteration ``i`` (the timestamp
    coordinate, from 0) is in round ``i + 1``.

    >>> job_description("wcc", "small-star", 3, 1)
    'wcc epoch 3 round 2: small-star'
    """
    return f"{job} epoch {epoch} round {iteration + 1}: {step}"


def input_names(graph: Graph) -> dict[int, str]:
    """Location -> ``operator.inN`` for every operator input (target) of ``graph``; an
    operator without a name is called by its number (``op3.in0``)."""
    return {loc: f"{graph.op_names[l.op] or f'op{l.op}'}.in{l.port}"
            for loc, l in enumerate(graph.locations) if l.kind is PortKind.TARGET}


class ProgressRecorder:
    """Names a job's steps (Spark job descriptions) and, given ``path``, logs its progress.

    Parameters
    ----------
    spark_context : pyspark.SparkContext or None
        Whose job description each :meth:`step` sets (on the calling thread); ``None``: none.
    path : str or Path, optional
        The progress log (JSON Lines, created or truncated). Without it nothing is written.
    graph : engine.Graph
        The job's dataflow graph (names of its operator inputs).
    job : str
        The job's name, first word of every description (``wcc``).
    meta : dict, optional
        Extra fields of the ``start`` event (input path, epochs, partitions...).

    Notes
    -----
    The service's subscriber runs on whichever thread applied the batch; events are written
    under one lock, each as one line, flushed. A batch is attributed to the step that sent
    it: the step registered with its ``stage`` number (the ``seq`` of the tasks' batches), or
    the step current when the driver's own batch was :meth:`tag`-ged.
    """

    def __init__(self, spark_context, path=None, *, graph: Graph, job: str = "wcc",
                 meta: dict | None = None):
        self._sc = spark_context
        self._desc = None
        self.job = job
        self.names = input_names(graph)
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._ctx = {"epoch": None, "iteration": None, "stage": None, "step": None,
                     "job": None}
        self._stages: dict[int, dict] = {}     # stage -> its step's context
        self._tags: dict[tuple, dict] = {}     # (producer, seq) -> the driver's context
        self._frontiers: dict[int, set] = {loc: set() for loc in self.names}
        self._in_flight: list = []
        self._unsubscribe = None
        self._file = None
        self.path = None if path is None else Path(path)
        if self.path is not None:
            self._file = open(self.path, "w", encoding="utf-8")
            self._write("start", format=PROGRESS_FORMAT, job=job,
                        inputs=[{"loc": loc, "name": n} for loc, n in sorted(self.names.items())],
                        **(meta or {}))

    @property
    def sc(self):
        """The SparkContext whose job descriptions name the steps: ``None`` without one, or
        while a :class:`~spark_plugin.session.lazy.LazySession` is not started (its first
        Spark job is described by the step current when it starts)."""
        from spark_plugin.session.lazy import LazySession

        sc = self._sc
        if isinstance(sc, LazySession):
            if not sc.started:
                return None
            sc = self._sc = sc.get().sparkContext
            sc.setJobDescription(self._desc)
        return sc

    @property
    def logging(self) -> bool:
        return self._file is not None

    def attach(self, service) -> None:
        """Subscribe to ``service``'s frontier changes (a fresh service: every input's
        frontier starts empty, and the changes replayed in order give the frontiers)."""
        if self.logging:
            self._service = service
            self._unsubscribe = service.subscribe(self._changes)

    def step(self, step: str, epoch: int, iteration: int, stage: int | None = None) -> None:
        """The driver starts ``step`` of ``(epoch, iteration)``; ``stage``: the sequence
        number its tasks' delta batches carry, if it has tasks."""
        desc = self._desc = job_description(self.job, step, epoch, iteration)
        if self.sc is not None:
            self.sc.setJobDescription(desc)
        if not self.logging:
            return
        ctx = {"epoch": epoch, "iteration": iteration, "stage": stage, "step": step, "job": desc}
        with self._lock:
            self._ctx = ctx
            if stage is not None:
                self._stages[stage] = ctx
            self._write("step", **ctx)

    def tag(self, producer: str, seq: int) -> None:
        """The driver sends its own batch ``(producer, seq)`` now: attribute it to the
        current step (it may be applied later, on another thread)."""
        if self.logging:
            with self._lock:
                self._tags[(producer, seq)] = self._ctx

    def epoch(self, summary) -> None:
        """Epoch ``summary.epoch`` is final (an :class:`~spark_plugin.jobs.wcc.job.EpochSummary`, or
        another job's summary: ``epoch``, ``vertices``, ``edges``, ``rounds``, ``seconds``,
        and the job's own counts named by its ``log_fields``, WCC's ``components`` by
        default)."""
        if self.logging:
            own = {k: getattr(summary, k) for k in getattr(summary, "log_fields", ("components",))}
            with self._lock:
                self._write("epoch", epoch=summary.epoch, vertices=summary.vertices,
                            edges=summary.edges, **own, rounds=summary.rounds,
                            seconds=round(summary.seconds, 6))

    def close(self, error: BaseException | None = None) -> None:
        """Write the ``end`` event (``ok`` false and the error when ``error`` is given),
        close the log and clear the job description. Idempotent."""
        if self.sc is not None:
            self.sc.setJobDescription(None)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._file is None:
            return
        with self._lock:
            self._write("end", ok=error is None,
                        error=None if error is None else f"{type(error).__name__}: {error}")
            self._file.close()
            self._file = None

    # -- the subscriber ------------------------------------------------------------------------

    def _changes(self, changes) -> None:
        """Service subscriber: one ``frontier`` event per (batch, input) in ``changes``, then a
        ``messages`` event if the counts at the inputs changed."""
        loc = changes.column("loc").to_numpy(zero_copy_only=False)
        ts = changes.column("ts").to_pylist()
        diff = changes.column("diff").to_numpy(zero_copy_only=False)
        producer = changes.column("producer").to_pylist()
        seq = changes.column("seq").to_numpy(zero_copy_only=False)
        in_flight = self._counts()
        with self._lock:
            if self._file is None:
                return
            groups: dict[tuple, list] = {}   # (producer, seq, loc) -> rows, in order
            for r in range(len(loc)):
                key = (producer[r], int(seq[r]), int(loc[r]))
                groups.setdefault(key, []).append(r)
            contexts = {pair: self._context(*pair) for pair in dict.fromkeys(
                (p, s) for p, s, _ in groups)}
            for (p, s, l), rows in groups.items():
                added = [list(ts[r]) for r in rows if diff[r] > 0]
                removed = [list(ts[r]) for r in rows if diff[r] < 0]
                front = self._frontiers.get(l)
                if front is None:   # an output port: not an operator input
                    continue
                front.difference_update(tuple(t) for t in removed)
                front.update(tuple(t) for t in added)
                self._write("frontier", **contexts[(p, s)], loc=l, input=self.names[l],
                            frontier=[list(t) for t in sorted(front)], added=added,
                            removed=removed, producer=p, seq=s)
            if in_flight != self._in_flight:
                self._in_flight = in_flight
                self._write("messages", **self._ctx, in_flight=in_flight)

    def _context(self, producer: str, seq: int) -> dict:
        ctx = self._tags.pop((producer, seq), None)
        if ctx is None:
            ctx = self._stages.get(seq, self._ctx)
        return ctx

    def _counts(self) -> list:
        """``[[*timestamp, count], ...]``: pointstamp counts summed over operator inputs."""
        counts = self._service.counts()
        loc = counts.column("loc").to_numpy(zero_copy_only=False)
        keep = np.isin(loc, np.fromiter(self.names, np.int64, len(self.names)))
        total: dict[tuple, int] = {}
        ts = counts.column("ts").to_pylist()
        cnt = counts.column("cnt").to_numpy(zero_copy_only=False)
        for r in np.flatnonzero(keep):
            t = tuple(ts[r])
            total[t] = total.get(t, 0) + int(cnt[r])
        return [[*t, n] for t, n in sorted(total.items()) if n]

    def _write(self, event: str, **fields) -> None:
        now = time.time()
        line = json.dumps({"event": event, "time": round(now, 6),
                           "elapsed": round(time.monotonic() - self._t0, 6), **fields},
                          separators=(", ", ": "))
        self._file.write(line + "\n")
        self._file.flush()
