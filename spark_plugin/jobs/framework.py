"""A small framework for epoch-by-epoch Spark jobs decided from frontiers (issue 13).

A *job* reads its input in epochs (:func:`~spark_plugin.sources.local.epoch_sources`: a file split
into slices, a directory of epoch files, or a followed directory stream), runs Spark stages
per epoch until its frontiers say the epoch is done, and writes each *final* epoch -- one
whose frontier at the output operator's input has passed it -- to a Parquet dataset, with a
manifest that makes a local output resumable (:mod:`spark_plugin.jobs.recovery`). What is the
same for every such job lives here; a job supplies its dataflow and its algorithm, and
speaks of progress only in its operators' words (:class:`engine.operate.dataflow.Report`).

Writing a job
-------------
Subclass :class:`EpochJob` and define:

* ``name`` (producers ``name-<partition>``, ``name-driver``, ``name-output``; Spark job
  descriptions; the progress bar), ``input`` and ``output`` (``(operator path, port)`` of
  the input operator's output, which holds a capability for the next epoch, and of the
  output operator's input, whose frontier says when an epoch is final),
  ``result_columns`` (the int64 columns of an epoch's result besides ``epoch``, sorted by
  the first) and ``backends`` (the kernel backends the job accepts);
* :meth:`EpochJob.dataflow` -- the operators (:class:`engine.operate.dataflow.Operate`) in a root
  :class:`engine.operate.dataflow.Scope`, built; the input operator declares an initial capability
  at epoch 0;
* :meth:`EpochJob.epoch` -- the algorithm: run stages (:meth:`JobDriver.run_stage` for a
  ``mapInArrow`` stage over a DataFrame; :meth:`JobDriver.apply_stage` for reports made
  elsewhere), decide from :meth:`JobDriver.frontier`, return an :class:`EpochOutcome`
  with the epoch's result;
* :meth:`EpochJob.output_report` -- the report that delivers the result to the output
  operator and moves on (or drops) the capability it was sent under; optionally
  :meth:`EpochJob.input_report`, :meth:`EpochJob.end_report`, :meth:`EpochJob.resume`,
  :meth:`EpochJob.summary` and the hooks ``start``, ``prepare``, ``finish``, ``holding``;
  a job whose rows, results or state differ from WCC's: :meth:`EpochJob.sources` and
  :meth:`EpochJob.input_table` (its input), :meth:`EpochJob.fingerprint` (the options that
  make two runs the same job in a resumed ``out``),  and
  :meth:`EpochJob.replay` (state its output does not hold, rebuilt on resume from the input
  of the epochs already final).

The framework reports the rest: the operators' initial capabilities, the input's messages
and capability per epoch, the output operator consuming the result; it checks the output
frontier before writing. The task side of a stage is a :class:`StageTask` subclass whose
:meth:`StageTask.work` gets the partition's rows as NumPy arrays and returns the output
rows, the task's :class:`~engine.operate.dataflow.Report` and where its kernels ran; the framework
ships the report as progress rows beside the data, and the driver guards a stage's reports
against the capabilities held (:meth:`engine.operate.dataflow.Dataflow.check`), translates them
(:meth:`engine.operate.dataflow.Ports.pointstamps`) and applies them once per task (producer
``name-<partition>``, ``seq`` = the stage number) before any frontier is read.

:meth:`EpochJob.run` returns a :class:`JobResult`. :class:`spark_plugin.jobs.wcc.job.WccJob` and
:class:`spark_plugin.jobs.sssp.job.SsspJob` are complete examples (``docs/jobs.md``).

Beside the framework, in modules of their own: the Arrow arrays a task builds and reads
(:mod:`~spark_plugin.jobs.arrow`), lineage truncation per stage
(:mod:`~spark_plugin.jobs.checkpoints`), the kernel backend a job runs
(:mod:`~spark_plugin.jobs.backend`) and its progress bar (:mod:`~spark_plugin.jobs.progress_bar`).
"""

from __future__ import annotations

import abc
import functools
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa

from engine import Backend
from engine.errors import BatchError, TimelyFrontierError
from engine.jit import CompileWatch
from engine.operate.dataflow import Dataflow, Report

from spark_plugin.service.device import KernelPlacement
from spark_plugin.jobs.progress_log import ProgressRecorder
from spark_plugin.schema import delta_table, text_column
from spark_plugin.service.frontier_service import FrontierService
from spark_plugin.session.console import write_line
from spark_plugin.session.lazy import (LazySession, master_of, parallelism_of, session_of,
                                       started)
from spark_plugin.jobs.arrow import (arrow_bool, arrow_fixed, arrow_numpy, arrow_ragged, arrow_take,
                                     arrow_types, from_ipc, list_matrix, to_ipc)
from spark_plugin.jobs.backend import requested_backend, service_backend
from spark_plugin.jobs.checkpoints import Checkpoints
from spark_plugin.jobs.progress_bar import Progress, fmt_frontier
from spark_plugin.jobs.recovery import (OutputLog, crash_point, dataframe_digest, job_fingerprint,
                                        spark_fingerprint)
from spark_plugin.sources import (EpochPlan, EpochSource, FileStamp, SparkEdges, edges_table,
                                  epoch_sources, is_spark_source, table_columns)
from spark_plugin.sources.dataset import is_dataframe

__all__ = ["EpochJob", "EpochInput", "EpochOutcome", "JobDriver", "JobResult", "StageTask",
           "JobProtocolError", "le"]

log = logging.getLogger(__name__)

#: The progress columns every stage's task emits beside its data columns: the task's
#: :class:`~engine.operate.dataflow.Report` as rows (``kind`` a :class:`~engine.operate.dataflow.ReportKind`,
#: ``op`` the operator's path, ``port``, ``ts``, ``count``), its ``producer`` and ``seq``,
#: and the backend its kernels ran on with the reason. A data row has nulls there; a
#: progress row nulls in the data columns. A task with nothing to report sends one row with
#: an empty ``op``: the marker by which its ``(producer, seq)`` arrives.
PROGRESS_DDL = ("kind tinyint, op string, port int, ts array<bigint>, count bigint, "
                "producer string, seq bigint, kernels string, kernels_reason string")
#: The report columns of the progress rows.
REPORT_COLUMNS = ["kind", "op", "port", "ts", "count"]


class JobProtocolError(TimelyFrontierError, RuntimeError):
    """A frontier did not advance as the protocol requires (a lost or duplicated progress
    batch)."""


@dataclass
class JobResult:
    """What :meth:`EpochJob.run` did.

    ``epochs`` lists the summaries of the epochs this run computed (:meth:`EpochJob.summary`);
    ``seconds`` is the job's wall time (the session already running); ``tracking_seconds``
    the driver's progress-tracking time on its main thread (building the stages' delta
    batches, ``FrontierService.apply`` of them, frontier queries, and waiting for its own
    batches on the tracking thread); ``tracking_background_seconds`` the time the tracking
    thread spent building and applying the driver's own batches (overlapped with Spark work,
    except what ``tracking_seconds`` waited for); ``delta_collect_seconds`` the Spark jobs
    that bring the tasks' progress rows to the driver (the checkpointed stage output's
    progress rows, or the whole output of a stage collected to finish the epoch on the
    driver). ``table`` is the last epoch's result (sorted by its first column) when no
    ``out`` was given; ``service`` the frontier service (all its counts are zero at the
    end); ``stages`` the number of Spark stages run. ``backend`` is the requested kernel
    backend; ``kernels`` counts tasks per backend their kernels actually ran on;
    ``kernel_fallbacks`` maps each reason a task ran the CPU kernels although ``cuda`` or
    ``auto`` was requested to its number of tasks; ``service_backend`` is the frontier
    service's engine backend. ``kernel_seconds`` is the time the driver took to load its
    kernels from Numba's cache -- or to compile them, ``kernels_compiled`` > 0 (the number of
    compilations: a first run, or an empty cache) -- on the tracking thread while the job
    read its first epoch and ran its first Spark job; waiting for it is not part of
    ``tracking_seconds``. ``checkpoints``: with a checkpoint directory, the checkpoints left
    there -- those of the newest final epoch run on Spark, what a restart from that epoch
    needs; everything superseded is deleted as the job goes. ``resumed_at`` is the first
    epoch this run computed: the epochs before it were already final in ``out`` (crash
    recovery)."""

    epochs: list = field(default_factory=list)
    seconds: float = 0.0
    tracking_seconds: float = 0.0
    table: pa.Table | None = None
    service: FrontierService | None = None
    stages: int = 0
    delta_collect_seconds: float = 0.0
    tracking_background_seconds: float = 0.0
    backend: Backend = Backend.AUTO
    kernels: dict = field(default_factory=dict)
    kernel_fallbacks: dict = field(default_factory=dict)
    service_backend: str = ""
    kernel_seconds: float = 0.0
    kernels_compiled: int = 0
    checkpoints: tuple = ()
    resumed_at: int = 0

    #: What the total line calls the job's result (``labels in OUT``).
    what = "results"

    def total_line(self, out: str | None = None) -> str:
        """The job's summary: epochs, job seconds, and apart from each other the time the
        driver took to load (or, the first time, compile) its kernels and the progress
        tracking time.

        >>> JobResult(seconds=4.0, tracking_seconds=0.05, kernel_seconds=0.2).total_line()
        'total: 0 epochs, 4.00 s (kernels loaded 0.20 s, progress tracking 0.05 s); nothing written'
        """
        if self.kernels_compiled:
            kernels = f"kernels compiled {self.kernel_seconds:.2f} s (once: cached for later runs)"
        else:
            kernels = f"kernels loaded {self.kernel_seconds:.2f} s"
        if not self.epochs and self.resumed_at and out:
            kept = ("epoch 0 was" if self.resumed_at == 1
                    else f"all {self.resumed_at} epochs were")
            return (f"total: {self.counts()}, {self.seconds:.2f} s; nothing to do: {kept} "
                    f"already final in {out} (--overwrite recomputes them)")
        if not self.epochs:
            saved = "; nothing written" + (f" to {out}" if out else "")
        elif out:
            saved = f", {self.what} in {out}"
        else:
            saved = f", {self.what} not saved (no --out given)"
        if self.resumed_at:
            kept = ("epoch 0 was" if self.resumed_at == 1
                    else f"epochs 0-{self.resumed_at - 1} were")
            saved += f" (resumed: {kept} already final there)"
        return (f"total: {self.counts()}, {self.seconds:.2f} s ({kernels}, progress "
                f"tracking {self.tracking_seconds:.2f} s){saved}")

    def counts(self) -> str:
        """What the total line counts first: ``N epochs`` (a job may add its own counts)."""
        return f"{len(self.epochs)} epochs"

    def kernels_line(self) -> str:
        """One line: the requested backend, tasks per backend, and each CPU fallback's reason.

        >>> JobResult(backend=Backend.CUDA, kernels={"cpu": 3},
        ...           kernel_fallbacks={"no GPU": 3}).kernels_line()
        'kernels: cuda requested; tasks on cpu 3; on the CPU because: no GPU (3 tasks)'
        """
        text = f"kernels: {self.backend.value} requested; tasks on " + (", ".join(
            f"{b} {n}" for b, n in sorted(self.kernels.items())) or "none")
        if self.kernel_fallbacks:
            text += "; on the CPU because: " + "; ".join(
                f"{why} ({n} task{'s' if n != 1 else ''})"
                for why, n in sorted(self.kernel_fallbacks.items()))
        return text


class StageTask(abc.ABC):
    """The ``mapInArrow`` function of one stage of a job: the round's work plus its progress.

    Subclass it, set :attr:`data_schema` (the stage's input and output data columns) and
    define :meth:`work`. An instance is pickled to the tasks: keep its state small (the
    epoch, iteration, backend). ``wrap`` (the job's ``task_wrapper``, a testing hook) wraps
    the task function. The task's progress is a :class:`~engine.operate.dataflow.Report` in the
    operators' words -- messages consumed per input, produced per output, capability
    changes -- shipped as rows (:data:`PROGRESS_DDL`); the driver guards it against the
    capabilities held and translates it into pointstamps (:meth:`JobDriver.apply_stage`).
    """

    #: The data columns a stage reads and writes (name, Arrow type).
    data_schema = pa.schema([])

    def __init__(self, seq: int, producer: str, large: bool, wrap: Callable | None = None):
        self.seq, self.producer, self.large, self.wrap = seq, producer, large, wrap

    @abc.abstractmethod
    def work(self, cols: dict, part: int) -> tuple[dict, Report, KernelPlacement]:
        """The work of task ``part`` on its rows ``cols`` (column name -> NumPy array):
        returns the output columns (same names as :attr:`data_schema`), the task's progress
        report, and where its kernels ran."""

    @classmethod
    def ddl(cls) -> str:
        """The Spark DDL of the stage's output: the data columns, then :data:`PROGRESS_DDL`."""
        spark_types = {pa.int64(): "bigint", pa.int32(): "int", pa.bool_(): "boolean",
                       pa.float64(): "double"}
        return ", ".join(f"{f.name} {spark_types[f.type]}" for f in cls.data_schema) + \
            ", " + PROGRESS_DDL

    def schema(self) -> pa.Schema:
        """The Arrow schema of the stage's output (what ``mapInArrow`` expects)."""
        lst, txt = arrow_types(self.large)
        return pa.schema(list(self.data_schema) + [
            ("kind", pa.int8()), ("op", txt), ("port", pa.int32()), ("ts", lst),
            ("count", pa.int64()), ("producer", txt), ("seq", pa.int64()), ("kernels", txt),
            ("kernels_reason", txt)])

    def __call__(self, batches, part: int | None = None):
        """The task's output batches; ``part``: the partition it stands for when the driver
        runs it (no Spark session runs), else the Spark task's own."""
        run = self._run if part is None else functools.partial(self._run, part=part)
        fn = run if self.wrap is None else self.wrap(run)
        return fn(batches)

    def _run(self, batches, part: int | None = None):
        if part is None:
            from pyspark import TaskContext

            ctx = TaskContext.get()
            part = ctx.partitionId() if ctx is not None else 0
        bs = list(batches)
        t = pa.Table.from_batches(bs) if bs else None
        cols = {f.name: (arrow_numpy(t.column(f.name)).astype(f.type.to_pandas_dtype(),
                                                               copy=False)
                         if t is not None else np.zeros(0, f.type.to_pandas_dtype()))
                for f in self.data_schema}
        out, report, placement = self.work(cols, part)
        yield from self._data_batches(out)
        progress = self._progress_batch(report, f"{self.producer}-{part}", placement)
        if self.side is not None:   # beside the data, in the same Spark job (ProgressSide)
            self.side.add([to_ipc([progress], progress.schema)])
        else:
            yield progress

    #: A Spark accumulator (:class:`ProgressSide`) that carries the task's progress rows
    #: to the driver with the task's completion, instead of rows in its output.
    side = None

    def _data_batches(self, out: dict, chunk: int = 1 << 16):
        schema = self.schema()
        n = len(next(iter(out.values()))) if out else 0
        nd = len(self.data_schema)
        for s in range(0, n, chunk):
            k = min(chunk, n - s)
            arrays = [arrow_bool(out[f.name][s:s + k]) if pa.types.is_boolean(f.type)
                      else arrow_fixed(f.type, out[f.name][s:s + k]) for f in self.data_schema]
            arrays += [pa.nulls(k, f.type) for f in list(schema)[nd:]]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _progress_batch(self, report: Report, producer: str,
                        placement: KernelPlacement) -> pa.RecordBatch:
        """The task's report as progress rows, each also naming the backend its kernels ran
        on (``placement``) and why; an empty report is one marker row (``op`` empty)."""
        schema = self.schema()
        c = report.to_arrays()
        k = len(c["count"])
        if k:   # columnar: the list offsets from the rows' widths, the coordinates they keep
            width = c["width"].astype(np.int64)
            values = c["ts"][np.arange(c["ts"].shape[1]) < width[:, None]]
            op = arrow_take(schema.field("op").type, c["ops"], c["op"])
            kind, port, count = c["kind"], c["port"], c["count"]
        else:   # the marker: the (producer, seq) arrives with nothing in it
            k, width, values = 1, np.zeros(1, np.int64), np.zeros(0, np.int64)
            op = arrow_take(schema.field("op").type, [""], np.zeros(1, np.int32))
            kind, port, count = (np.zeros(1, np.int8), np.zeros(1, np.int32),
                                 np.zeros(1, np.int64))
        one = np.zeros(k, np.int32)
        arrays = [pa.nulls(k, f.type) for f in self.data_schema]
        arrays += [
            arrow_fixed(pa.int8(), kind), op, arrow_fixed(pa.int32(), port),
            arrow_ragged(schema.field("ts").type, values, width),
            arrow_fixed(pa.int64(), count),
            arrow_take(schema.field("producer").type, [producer], one),
            arrow_fixed(pa.int64(), np.full(k, self.seq, np.int64)),
            arrow_take(schema.field("kernels").type, [placement.backend.value], one),
            arrow_take(schema.field("kernels_reason").type, [placement.reason], one)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class ProgressSide:
    """The ``AccumulatorParam`` of a stage's progress: a list of Arrow IPC blobs, one per task.
    Spark sends a task's additions to the driver with the task's completion, so the stage's
    progress arrives with the job that materialises its output -- one Spark job per stage,
    not a second one that reads the output back for its progress rows (issue 31 item 5).
    The eager checkpoint runs the stage's tasks in its one result stage, and Spark applies
    a result task's accumulator updates once, for its first successful attempt (a failed or
    speculative attempt's are not); should a report come twice all the same (the stage
    recomputed), :meth:`JobDriver.run_stage` keeps the first per producer: the rows of one
    ``(producer, seq)`` are one delivery, and two copies would double its counts."""

    def zero(self, value):
        return []

    def addInPlace(self, a, b):
        a.extend(b)
        return a


def reports_of(progress: pa.Table, producers=None) -> dict[str, Report]:
    """The report of every producer in the progress rows ``progress`` (columns
    :data:`REPORT_COLUMNS` and ``producer``; marker rows give an empty report), in order of
    first appearance. Columnar: the producers and operator paths are dictionary-encoded,
    the timestamps read from the list column's offsets and values; one Python step per
    producer. ``producers``: :func:`producer_rows` of ``progress``, if already computed.

    Raises
    ------
    BatchError
        A null in a report column (a data row among the progress rows), or a marker row
        (empty ``op``) that carries a timestamp or a count."""
    names, groups = producer_rows(progress) if producers is None else producers
    if not names:
        return {}
    op_codes, op_names = text_column(progress.column("op"), "op")
    for col in ("kind", "port", "count"):
        if progress.column(col).null_count:
            raise BatchError(f"progress rows: column {col!r} is null in "
                             f"{progress.column(col).null_count} rows (a data row?)")
    kind = arrow_numpy(progress.column("kind")).astype(np.int64)
    port = arrow_numpy(progress.column("port")).astype(np.int64)
    count = arrow_numpy(progress.column("count")).astype(np.int64)
    ts, widths = list_matrix(progress.column("ts"), "ts")
    # the marker's empty path is no operator: codes only over the real rows' paths
    marker = np.zeros(len(op_names), np.bool_)
    if "" in op_names:
        marker[op_names.index("")] = True
    real = ~marker[op_codes]
    bad = ~real & ((widths != 0) | (count != 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise BatchError(f"progress row {i}: a marker row (empty op) of producer "
                         f"{progress.column('producer')[i].as_py()!r} carries a timestamp "
                         f"({len(ts[i][:widths[i]])} coordinates) or a count ({count[i]})")
    keep = np.flatnonzero(~marker)
    recode = np.full(len(op_names), -1, np.int64)
    recode[keep] = np.arange(len(keep))
    ops = [op_names[j] for j in keep]
    codes = recode[op_codes]
    out: dict[str, Report] = {}
    for p, rows in zip(names, groups):
        idx = rows[real[rows]]
        if not len(idx):   # only its marker
            out[p] = Report()
            continue
        if int(idx[-1]) - int(idx[0]) + 1 == len(idx):   # one run of rows: views, no gather
            idx = slice(int(idx[0]), int(idx[-1]) + 1)
        out[p] = Report.from_arrays(kind[idx], codes[idx], port[idx], ts[idx], count[idx],
                                    ops, width=widths[idx])
    return out


def producer_rows(progress: pa.Table) -> tuple[list[str], list[np.ndarray]]:
    """The producers of the rows ``progress`` in order of first appearance, and the row
    indices of each (ascending), from one ``dictionary_encode`` and one stable
    ``argsort``: no Python step per row."""
    codes, names = text_column(progress.column("producer"), "producer")
    order = np.argsort(codes, kind="stable")
    cuts = np.cumsum(np.bincount(codes, minlength=len(names)))[:-1]
    return names, np.split(order, cuts)


class JobSettings:
    """Session settings a job runs its queries with, set when the job first uses its Spark
    session and restored when it ends (:meth:`restore`: a session the caller gave the job
    keeps its own settings).

    ``spark.sql.adaptive.enabled`` is off: every shuffle of a job is sized by the job (``P``
    partitions, keyed by its partitioner), so adaptive execution has nothing to coalesce,
    and it would submit each shuffle's map side as a Spark job of its own -- two jobs per
    stage instead of one. ``spark.sql.autoBroadcastJoinThreshold`` is -1: a join whose side
    looks small (the stars of the roots, a few labels) is not broadcast, which is one more
    job to build the broadcast, and at the sizes the Spark path is for, no side is small.
    A 2-round epoch of a 300x300 grid: 17 Spark jobs with the defaults, 9 without adaptive
    execution, 8 with neither. ``spark.sql.shuffle.partitions`` is the job's ``P``: the
    shuffles Spark plans itself (the joins of the labels) have as many partitions as the
    job's own stages, not the session's default (200 unless set), which adaptive execution
    would otherwise have coalesced."""

    SETTINGS = {"spark.sql.adaptive.enabled": "false",
                "spark.sql.autoBroadcastJoinThreshold": "-1"}

    def __init__(self, partitions: int):
        self.settings = dict(self.SETTINGS, **{"spark.sql.shuffle.partitions": str(partitions)})
        self._saved: dict | None = None
        self._session = None

    def apply(self, spark) -> None:
        """Set :attr:`settings` on ``spark`` (once per job), remembering what was there."""
        if self._saved is not None:
            return
        self._saved = {k: spark.conf.get(k, None) for k in self.settings}
        for k, v in self.settings.items():
            spark.conf.set(k, v)
        self._session = spark

    def restore(self) -> None:
        """Put back what :meth:`apply` replaced (nothing when Spark never started)."""
        spark, saved, self._saved, self._session = self._session, self._saved, None, None
        if spark is None:
            return
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


class JobDriver:
    """The driver side of a job: its :class:`~spark_plugin.service.frontier_service.FrontierService` over
    the job's :class:`~engine.operate.dataflow.Dataflow`, the tracking thread that applies the
    driver's own reports, the stages, the kernel counts.

    Every report -- the driver's and the tasks' -- is guarded first
    (:meth:`~engine.operate.dataflow.Dataflow.check` against the service's counts: production needs a
    capability or a consumed message that could result in it, capabilities only move
    forward, only held ones are dropped; a violation is a named
    :class:`~engine.errors.ReportError` and nothing is applied), then translated into
    pointstamps (:meth:`~engine.operate.dataflow.Ports.pointstamps`) and applied as one batch of its
    producer -- ``(producer, seq)`` exactly once, as the service does for any batch. The
    driver's own reports (:meth:`report`) are applied on a tracking thread, in order, while
    the driver goes on (reading the epoch, submitting its Spark job); every frontier query
    and every stage's apply first waits for them (:meth:`sync`), so no decision sees a
    stale count.
    """

    #: What :meth:`round_passed` raises (the job's own, set by :meth:`EpochJob.run`).
    protocol_error = JobProtocolError

    def __init__(self, spark, dataflow: Dataflow, *, name: str, requested: Backend,
                 partitions: int, task_wrapper=None, checkpoint_dir=None, progress_log=None,
                 meta=None, protocol_error=None):
        from spark_plugin.service.batch import large_var_types

        if protocol_error is not None:
            self.protocol_error = protocol_error
        self._spark, self.dataflow, self.name = spark, dataflow, name
        self.graph = dataflow.graph
        self.requested = requested
        self.service_backend = service_backend(requested)
        self.service = FrontierService(self.graph, backend=self.service_backend, strict=True)
        self.P = partitions
        self.large = large_var_types(spark)
        self.task_wrapper = task_wrapper
        self.checkpoints = Checkpoints(spark, checkpoint_dir)
        self.tracking = self.background = self.collecting = 0.0
        self.kernel_seconds, self.kernels_compiled = 0.0, 0
        self.seq: dict = {}           # producer -> its next seq (the driver's own producers)
        self.stages = 0               # the next stage number (the tasks' seq)
        self.kernels: dict = {}       # backend -> tasks, the whole job
        self.kernel_fallbacks: dict = {}
        self.epoch_kernels: dict = {}   # backend -> tasks of the current epoch
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{name}-tracking")
        self._pending: list = []
        self._loading: list = []
        self.steps = ProgressRecorder(spark if isinstance(spark, LazySession)
                                      else spark.sparkContext, progress_log, graph=self.graph,
                                      job=name, meta=meta)
        self.steps.attach(self.service)
        self.settings = JobSettings(partitions)

    @property
    def spark(self):
        """The Spark session: a :class:`~spark_plugin.session.lazy.LazySession` is started
        now (only what runs a Spark job asks for it), with the job's :class:`JobSettings`."""
        spark = session_of(self._spark)
        self.settings.apply(spark)
        return spark

    # -- the driver's own progress ---------------------------------------------------------
    def load_kernels(self, load: Callable[[], CompileWatch]) -> None:
        """Run ``load`` (returning its :class:`~engine.jit.CompileWatch`) first on the
        tracking thread; the first :meth:`sync` waits for it outside the tracking time.

        After it, one empty batch goes through the whole apply path of a scratch service
        of the job's graph (delta table, guard, translation, consolidation), so that what
        the first real batch would otherwise pay once -- PyArrow loading pandas on its first
        array, Numba dispatching the service's own kernels -- is loading time too, not
        tracking (timed with ``load``: ``kernels loaded``)."""
        def run():
            watch = load()
            t0 = time.perf_counter()
            scratch = FrontierService(self.graph, backend=self.service_backend, strict=True)
            scratch.apply(self._delta_table([], [], [], f"{self.name}-warm", 0))
            scratch.frontier(0)
            watch.seconds += time.perf_counter() - t0
            return watch

        self._loading.append(self._pool.submit(run))

    def _timed_apply(self, report, producer, s):
        """On the tracking thread: guard and translate ``report`` (``None``: the operators'
        initial capabilities), apply it as batch ``s`` of ``producer``."""
        t0 = time.perf_counter()
        if report is None:
            loc, ts, diff = self.dataflow.initial()
        else:
            loc, ts, diff = self.dataflow.check(report, self.service)
        self.service.apply(self._delta_table(loc, ts, diff, producer, s))
        return time.perf_counter() - t0

    def _delta_table(self, loc, ts, diff, producer, s) -> pa.Table:
        if not len(loc):   # the marker: the (producer, seq) arrives with nothing in it
            loc, ts, diff = [0], np.zeros((1, self.graph.m + self.graph.max_depth), np.int64), [0]
        return delta_table(np.asarray(loc, np.int32), np.asarray(ts, np.int64),
                           np.asarray(diff, np.int64), producer, s)

    def report(self, report: Report | None, producer: str | None = None) -> None:
        """Apply ``report`` as the next batch of ``producer`` (default ``<name>-driver``), on
        the tracking thread (guarded there, against the counts of every earlier batch).
        ``None`` applies the operators' initial capabilities (the job's first batch)."""
        t0 = time.perf_counter()
        producer = producer or f"{self.name}-driver"
        s = self.seq.get(producer, 0)
        self.steps.tag(producer, s)
        self._pending.append(self._pool.submit(self._timed_apply, report, producer, s))
        self.seq[producer] = s + 1
        self.tracking += time.perf_counter() - t0

    def sync(self) -> None:
        """Wait until the driver's own batches are applied (re-raising their errors)."""
        if self._loading:   # waiting for the kernels to load (or compile) is not tracking
            watch = self._loading.pop().result()
            self.kernel_seconds, self.kernels_compiled = watch.seconds, watch.compiled
        while self._pending:
            fut = self._pending.pop(0)
            t0 = time.perf_counter()
            self.background += fut.result()   # re-raises the apply's error here
            self.tracking += time.perf_counter() - t0

    def frontier(self, loc: int) -> list:
        """The frontier at location ``loc`` after every batch reported so far."""
        self.sync()
        t0 = time.perf_counter()
        f = self.service.frontier(loc)
        self.tracking += time.perf_counter() - t0
        return f

    def frontier_at(self, op: str, input: int) -> list:
        """The frontier at input ``input`` of operator ``op`` (its path)."""
        return self.frontier(self.dataflow.target(op, input))

    # -- decisions from frontiers ------------------------------------------------------------
    def round_passed(self, e: int, it: int, *targets, what: str = "every task reported"):
        """The check that round ``it`` of epoch ``e`` is complete: the frontier at each of
        ``targets`` (``(operator path, input)`` pairs) has no element ``<= (e, it)`` (product
        order). Returns the frontiers, in the order of ``targets``; otherwise raises the job's
        :attr:`protocol_error` naming every frontier (``what``: what happened before the
        check, for the message)."""
        fronts = [self.frontier_at(op, port) for op, port in targets]
        if any(le(t, (e, it)) for f in fronts for t in f):
            raise self.protocol_error(
                f"epoch {e} round {it}: {what}, but the frontier at "
                + " / ".join(f"{_port_name(op, port)} {fmt_frontier(f)}"
                             for (op, port), f in zip(targets, fronts))
                + f" has not passed ({e}, {it})")
        return fronts

    def converged(self, e: int, frontier) -> bool:
        """Whether a loop has converged for epoch ``e``: ``frontier`` (at the loop's head) has
        no element of epoch ``e`` or earlier -- nothing in flight, no capability that could
        send anything of ``e`` round the loop again."""
        return not any(t[0] <= e for t in frontier)

    # -- stages ----------------------------------------------------------------------------
    def new_stage(self, step: str, epoch: int, iteration: int) -> int:
        """Number the next stage (its tasks' ``seq``) and name its step (Spark job
        description, progress log)."""
        s = self.stages
        self.stages += 1
        self.steps.step(step, epoch, iteration, s)
        return s

    def apply_stage(self, reports: dict, s: int, what: str, placements=None) -> None:
        """Apply stage ``s``: ``reports`` maps each task's producer (``<name>-<partition>``)
        to its :class:`~engine.operate.dataflow.Report` (:func:`reports_of`). The stage's reports are
        guarded together, as the one step they are (:meth:`~engine.operate.dataflow.Dataflow.check`:
        a violation raises and nothing is applied), then each is translated and applied as
        its producer's batch ``s``, all in one ``apply``. Raises
        :class:`~spark_plugin.errors.MissingBatchError` if a task's batch is missing.
        ``placements``: ``(backend, reason)`` per task, counted (:meth:`count_kernels`)."""
        self.sync()
        t1 = time.perf_counter()
        df = self.dataflow
        df.check(Report.concat(reports.values()), self.service)
        tables = [self._delta_table(*df.pointstamps(r), p, s) for p, r in reports.items()]
        res = self.service.apply(pa.concat_tables(tables) if tables
                                 else self._delta_table([], [], [], f"{self.name}-0", s))
        self.tracking += time.perf_counter() - t1
        want = {f"{self.name}-{p}": s for p in range(self.P)}
        got = {p for p, q in res.applied if q == s} | {p for p, q in res.duplicates if q == s}
        if set(want) - got:
            self.service.check_complete(want)  # raises MissingBatchError naming the producers
        if placements is not None:
            self.count_kernels(s, what, placements)

    def apply_progress(self, progress: pa.Table, s: int, what: str,
                       tasks: int | None = None) -> None:
        """:meth:`apply_stage` from a stage's progress rows (:data:`PROGRESS_DDL`). A stage
        of ``tasks < P`` tasks (partitions ``0 .. tasks - 1``) has no task for partitions
        ``tasks .. P - 1``: the driver gives their producers the stage's batch, empty, as
        a task with no rows would (the service wants every producer's every stage)."""
        self.sync()   # the kernels loaded first (not tracking), then the driver's own batches
        t0 = time.perf_counter()
        names, groups = producer_rows(progress)
        reports = reports_of(progress, (names, groups))
        for p in range(self.P if tasks is None else tasks, self.P):
            reports.setdefault(f"{self.name}-{p}", Report())
        first = pa.array(np.array([g[0] for g in groups], np.int64), pa.int64())
        placements = zip(*(progress.column(c).take(first).to_pylist()
                           for c in ("kernels", "kernels_reason")))
        self.tracking += time.perf_counter() - t0
        self.apply_stage(reports, s, what, list(placements))

    def count_kernels(self, s: int | None, what: str, placements) -> None:
        """Count stage ``s``'s tasks per backend from their ``(backend, reason)`` pairs
        (``s`` ``None``: kernels the driver ran itself, one entry); a CPU fallback's reason
        is logged the first time the job sees it."""
        counts: dict = {}
        requested = self.requested
        where = "on the driver" if s is None else f"in stage {s}"
        for k, why in placements:
            counts[k] = counts.get(k, 0) + 1
            self.epoch_kernels[k] = self.epoch_kernels.get(k, 0) + 1
            self.kernels[k] = self.kernels.get(k, 0) + 1
            if k == Backend.CPU.value and requested in (Backend.AUTO, Backend.CUDA):
                if why not in self.kernel_fallbacks:
                    log.log(logging.WARNING if requested is Backend.CUDA else logging.INFO,
                            "backend %s: %s kernels on the CPU %s (%s): %s",
                            requested.value, self.name.upper(), where, what, why)
                self.kernel_fallbacks[why] = self.kernel_fallbacks.get(why, 0) + 1
        log.info("%s (%s): tasks per kernel backend %s", where, what,
                 ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))

    def run_stage(self, make_task: Callable[[int], StageTask], df, key, step: str,
                  epoch: int, iteration: int):
        """Run one stage on ``df`` (the task's data columns) repartitioned into ``P`` by
        ``key`` -- ``None``: where ``df``'s rows are, its partitions coalesced into at most
        ``P`` with no shuffle (a stage of fewer tasks: :meth:`apply_progress`) --:
        ``make_task(seq)`` is its :class:`StageTask`. The output is checkpointed
        (:class:`~spark_plugin.jobs.checkpoints.Checkpoints`), its progress rows collected
        and applied (:meth:`apply_progress`) before this returns. Returns the data rows (a
        DataFrame) and the ids of the checkpoint, for
        :meth:`~spark_plugin.jobs.checkpoints.Checkpoints.release`."""
        s = self.new_stage(step, epoch, iteration)
        task = make_task(s)
        side = task.side = self.checkpoints.sc.accumulator([], ProgressSide())
        names = [f.name for f in task.data_schema]   # the progress travels in ``side``:
        parts = df.repartition(self.P, key) if key is not None else df.coalesce(self.P)
        tasks = self.P if key is not None else parts.rdd.getNumPartitions()
        done, ids = self.checkpoints.checkpoint(parts   # the progress columns are not stored
                                                .mapInArrow(task, task.ddl()).select(*names))
        t0 = time.perf_counter()   # the tasks' progress came with their completion
        blobs, seen, tables = list(side.value), set(), []
        side.value = []   # the accumulator stays registered: drop its blobs
        for b in blobs:   # one report per producer (ProgressSide)
            t = from_ipc(b)
            who = t.column("producer")[0].as_py() if t.num_rows else None
            if who not in seen:
                seen.add(who)
                tables.append(t)
        progress = (pa.concat_tables(tables) if tables
                    else task.schema().empty_table()).select(
            [*REPORT_COLUMNS, "producer", "seq", "kernels", "kernels_reason"])
        self.collecting += time.perf_counter() - t0
        self.apply_progress(progress, s, f"{step}, epoch {epoch} iteration {iteration}",
                            tasks=tasks)
        return done, ids

    def close(self, error: BaseException | None) -> None:
        """Stop the tracking thread, end the progress log (``error``: what ended the job) and
        give the session its own settings back."""
        self._pool.shutdown(wait=True)
        self.steps.close(error)
        self.settings.restore()


@dataclass
class EpochInput:
    """The input of one epoch: ``source`` (an :class:`~spark_plugin.sources.epochs.EpochSource`),
    its ``rows``, and ``scan`` -- a :class:`~spark_plugin.sources.parquet.ParquetSlice` the tasks
    read themselves, when the job lets them -- or ``None``; ``more``: whether another
    epoch may follow (the input keeps a capability for it). :meth:`table` reads it on the
    driver (once)."""

    source: object
    rows: int
    scan: object = None
    more: bool = True
    #: A Spark source's epoch: its rows as a DataFrame ``src, dst`` the executors read
    #: (:mod:`spark_plugin.sources`), or ``None``.
    frame: object = None
    _table: pa.Table | None = None

    def table(self) -> pa.Table:
        if self._table is None:
            self._table = self.source.read()
        return self._table

    @property
    def read(self) -> bool:
        """Whether the driver holds the rows already."""
        return self._table is not None


@dataclass
class EpochOutcome:
    """What :meth:`EpochJob.epoch` computed: ``result`` (a ``pyarrow.Table`` on the driver or
    a Spark DataFrame with the job's ``result_columns``), its number of rows, the loop's
    last ``iteration`` (the output operator's timestamp is ``(epoch, iteration)``), the
    checkpoint ids the result holds (released when superseded), and job-specific ``stats``
    for :meth:`EpochJob.summary`."""

    result: object
    rows: int
    iteration: int
    rounds: int
    holds: set = field(default_factory=set)
    stats: dict = field(default_factory=dict)


class EpochJob(abc.ABC):
    """An epoch-by-epoch job decided from frontiers: subclass it (module docstring).

    The constructor takes the options every such job has (:func:`spark_plugin.jobs.wcc.job.run_wcc`
    documents them); :meth:`run` runs the job.
    """

    #: The job's name: producers ``<name>-<partition>``, ``<name>-driver``, ``<name>-output``.
    name = "job"
    #: The columns of an epoch's result (int64), besides ``epoch``; sorted by the first.
    result_columns: tuple = ("vertex", "value")
    #: The kernel backends the job accepts.
    backends = (Backend.AUTO, Backend.CPU, Backend.CUDA)
    #: The error raised when a frontier does not advance as the protocol requires.
    protocol_error = JobProtocolError
    #: The :class:`JobResult` subclass :meth:`run` returns.
    result_type = JobResult

    def __init__(self, spark, edges, *, epochs: int = 1, out: str | None = None,
                 partitions: int | None = None, backend: str | None = None,
                 progress: bool | None = None, on_epoch=None, task_wrapper=None,
                 executor_input: bool | None = None, follow: float | None = None,
                 checkpoint_dir: str | None = None, progress_log=None,
                 overwrite: bool = False, changes: bool = False):
        if changes and out is None:
            raise ValueError("changes=True (--changes) writes each epoch's changed rows to "
                             "out: it needs out (--out)")
        self.changes = bool(changes)
        if partitions is not None and (isinstance(partitions, bool)
                                       or int(partitions) != partitions or partitions < 1):
            raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
        if spark is None:   # as tfront runs it: Spark started only if an epoch needs it
            from spark_plugin.session.lazy import default_session
            spark = default_session(f"tfront-{self.name}")
        self._spark, self.edges, self.epochs, self.out = spark, edges, epochs, out
        self.P = int(partitions or parallelism_of(spark))
        self.backend, self.progress, self.on_epoch = backend, progress, on_epoch
        self.task_wrapper, self.follow = task_wrapper, follow
        self.checkpoint_dir, self.progress_log, self.overwrite = (checkpoint_dir, progress_log,
                                                                  overwrite)
        if executor_input is None:   # local[...] only: local-cluster executors have other cwds
            from spark_plugin.session.config import is_embedded_master
            executor_input = is_embedded_master(master_of(spark))
        self.executor_input = executor_input
        self.driver: JobDriver | None = None

    @property
    def spark(self):
        """The Spark session. A job given a :class:`~spark_plugin.session.lazy.LazySession`
        starts it here, the first time a step needs Spark (:attr:`spark_started` says whether
        it has); a job whose every epoch the driver finishes never does. While the job runs
        its queries run with the driver's :class:`JobSettings`."""
        return self.driver.spark if self.driver is not None else session_of(self._spark)

    @property
    def spark_started(self) -> bool:
        """Whether the job's Spark session runs (a lazy one: whether a step started it)."""
        return started(self._spark)

    #: The input operator and its output port (path, port): it holds a capability at epoch
    #: ``e`` (:meth:`time`: ``(e,)`` outside a loop, ``(e, 0)`` inside) for the next epoch,
    #: an initial capability at epoch 0 in its description.
    input: tuple = ("input", 0)
    #: The output operator and its input port (path, port): epoch ``e`` is final when the
    #: frontier there has no element ``(e', _)`` with ``e' <= e``.
    output: tuple = ("output", 0)

    # -- what a job defines ----------------------------------------------------------------
    @abc.abstractmethod
    def dataflow(self) -> Dataflow:
        """The job's :class:`~engine.operate.dataflow.Dataflow` (a root
        :class:`~engine.operate.dataflow.Scope` built, ``m = 1``: the epoch; loops add the
        iteration); it has the operators :attr:`input` and :attr:`output` name."""

    def start(self) -> None:
        """Called once the driver exists, before the input is opened (e.g. to warm workers)."""

    def prepare(self) -> None:
        """Called after the input is opened, before the first epoch (e.g. to load the
        driver's kernels on the tracking thread: :meth:`JobDriver.load_kernels`)."""

    def sources(self):
        """``(number of epochs or None, iterator of EpochSource)``: the job's input in epochs.
        By default :func:`~spark_plugin.sources.local.epoch_sources` of ``edges`` (``src, dst``),
        or a Spark source's epochs (:attr:`spark_edges`: counted by one aggregation on the
        executors, each read by them); a job whose rows have other columns reads them here."""
        se = self.spark_edges
        if se is not None:
            from spark_plugin.service.batch import collect_arrow

            se.materialize = self.driver.checkpoints.checkpoint   # numbered slices, once
            eps = se.epochs(self.spark)
            if se.as_file:   # a local file read by Spark: recorded as the driver reads it
                check = FileStamp.of(self.edges).check
                return len(eps), (EpochSource(ep.what, functools.partial(collect_arrow, ep.frame),
                                              check=check, frame=ep.frame, rows=ep.rows)
                                  for ep in eps)
            stamp = se.stamp()   # None for a DataFrame: each slice's digest, when recorded

            def digest(frame):
                d = dataframe_digest(frame)
                return f"{d['content']}:{d['rows']}"
            return len(eps), (EpochSource(ep.what, functools.partial(collect_arrow, ep.frame),
                                          check=se.check, frame=ep.frame, rows=ep.rows,
                                          stamp=stamp if stamp is not None else
                                          functools.partial(digest, ep.frame))
                              for ep in eps)
        return epoch_sources(self.edges, self.epochs, follow=self.follow,
                             columns=self.file_columns)

    def too_big_for_driver(self, edges) -> bool:
        """Whether a local edge file, which the driver would read, is read by the executors
        instead (as a Spark source, its epochs the same slices): a job's rule, by default
        never."""
        return False

    #: Whether the job reads Spark sources on the executors (:mod:`spark_plugin.sources`):
    #: a URI, a Spark-written directory, a table, a DataFrame. A job without it collects a
    #: DataFrame to the driver once, at the start.
    spark_sources = False
    #: The job's Spark source (:class:`~spark_plugin.sources.SparkEdges`), or ``None``.
    spark_edges = None
    #: Options of the :class:`~spark_plugin.sources.SparkEdges` the framework opens for a
    #: Spark source given as a path or DataFrame (``{"weighted": True}``: a third column).
    spark_options: dict = {}
    #: The result columns that hold vertex ids (``--ids string`` writes names there); by
    #: default every result column.
    id_columns: tuple | None = None

    def result_ddl(self) -> str:
        """The Spark DDL of a result as a DataFrame: by default every column ``bigint``."""
        return ", ".join(f"{c} bigint" for c in self.result_columns)

    def input_table(self, df) -> pa.Table:
        """An input DataFrame collected to the driver (once, at the start), as the table
        :meth:`sources` splits: by default its ``src, dst`` columns (or those
        :attr:`columns` picks), validated."""
        return edges_table(self._collect(df, ("src", "dst")), "edge DataFrame")

    def _collect(self, df, want: tuple) -> pa.Table:
        """The DataFrame's columns read as ``want`` (:attr:`columns`' picks, else those
        names; checked before any Spark job), collected under those names."""
        from pyspark.sql import functions as F

        from spark_plugin.service.batch import collect_arrow

        names = table_columns(df.columns, "edge DataFrame", self.columns, want)
        self._input_names = tuple(names)   # what the content digest covers
        return collect_arrow(df.select(*(F.col(n).alias(w) for n, w in zip(names, want))))

    def fingerprint(self) -> dict:
        """What makes two runs the same job, recorded in ``out``'s manifest (a run with
        another fingerprint is refused there): by default the input (a table's or
        DataFrame's content digest over :attr:`input_columns`), its epochs and the columns
        picked (:func:`~spark_plugin.jobs.recovery.job_fingerprint`); a job adds the options
        that change its results."""
        if self.spark_edges is not None and not self.spark_edges.as_file:
            job = spark_fingerprint(self.spark_edges, self.input_digest, self.columns)
        else:
            job = job_fingerprint(self.edges, self.epochs, self.follow,
                                  columns=self.input_columns, dataframe=self.input_digest,
                                  picked=self.columns)
        if self.changes:   # each epoch's files hold its changes, not the whole result
            job["changes"] = True
        return job

    #: The input columns read as ``src``, ``dst`` (``weight``): an
    #: :class:`~spark_plugin.sources.columns.EdgeColumns` (``columns=`` of ``run_wcc`` /
    #: ``run_sssp``), or ``None`` for those names (a file's first two fields).
    columns = None
    _input_names = None   # a DataFrame's columns, once collected (:meth:`_collect`)

    @property
    def file_columns(self):
        """:attr:`columns` as :meth:`sources` applies them: not to a collected DataFrame,
        whose table already has its columns renamed."""
        return None if self._input_names is not None else self.columns

    def _picked(self, want: tuple) -> tuple:
        """The names in the input table or DataFrame of the columns read as ``want``."""
        if self.columns is None:
            return want
        if self._input_names is not None:
            return self._input_names
        if isinstance(self.edges, pa.Table):
            return tuple(table_columns(self.edges.column_names, "edge table", self.columns,
                                       want))
        return want

    @property
    def input_columns(self) -> tuple:
        """The input columns an Arrow table's or a DataFrame's content digest covers."""
        return self._picked(("src", "dst"))
    #: A DataFrame input's :func:`~spark_plugin.jobs.recovery.dataframe_digest` (with ``out``).
    input_digest: dict | None = None

    def resume(self, table: pa.Table) -> None:
        """Take the loop's state from ``table``, the result of the last epoch final in a
        resumed ``out`` (its ``result_columns``)."""

    def replay(self, e: int, source) -> None:
        """Epoch ``e`` was final in a resumed ``out`` (before the first epoch this run
        computes; :meth:`resume` has been called): a job whose state is more than its last
        result rebuilds the rest here from the epoch's input (``source.read()``, checked
        against the manifest's record). By default nothing is read."""

    def input_report(self, e: int, epoch_input: EpochInput) -> Report:
        """The progress of epoch ``e``'s input arriving, besides the input operator's
        capability (the framework moves it on): by default, the input operator produces
        the epoch's rows as messages at ``(e, 0)``."""
        op, port = self.input
        return Report().produced(op, port, self.time(op, e), epoch_input.rows)

    @abc.abstractmethod
    def epoch(self, e: int, epoch_input: EpochInput) -> EpochOutcome:
        """Compute epoch ``e`` (the algorithm)."""

    @abc.abstractmethod
    def output_report(self, e: int, outcome: EpochOutcome, more: bool) -> Report:
        """The progress of delivering epoch ``e``'s result to the output operator (one
        message at ``(e, outcome.iteration)``, from an operator that holds a capability for
        it) and of releasing what the job held for the epoch (``more``: another epoch may
        come). The framework then lets the output operator consume it."""

    def end_report(self, e: int) -> Report:
        """Drop the capabilities the job's operators hold for epoch ``e`` when the input ends
        without a last epoch (a followed stream that stops, or every epoch already final);
        the framework drops the input operator's."""
        return Report()

    @abc.abstractmethod
    def summary(self, e: int, outcome: EpochOutcome, *, seconds: float, frontier: tuple,
                kernels: tuple, source: str, new_rows: int, rows_so_far: int):
        """The epoch's summary (passed to ``on_epoch``, in ``result.epochs``)."""

    def notice(self, text: str) -> None:
        """A one-off message from the framework (resume), on stderr from progress level 1."""
        if Progress.level_of(self.progress) >= 1:
            write_line(f"{self.name}: {text}", sys.stderr)

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> JobResult:
        """Run the job: read the epochs, compute each, write each final epoch."""
        t_start = time.perf_counter()
        spark, edges = self._spark, self.edges
        if self.spark_sources and (is_spark_source(edges, follow=self.follow)
                                   or self.too_big_for_driver(edges)):
            se = self.spark_edges = (edges if isinstance(edges, SparkEdges) else SparkEdges(
                edges, columns=self.columns, plan=EpochPlan.parse(self.epochs),
                as_file=not is_spark_source(edges, follow=self.follow),
                **self.spark_options))
            se.open(self.spark)   # the location and schema, before anything is written
            for note in se.notes:
                self.notice(note)
            if se.df is not None and self.out is not None:   # one pass: what a resume matches
                self.input_digest = dataframe_digest(se.df.select(
                    *(_col(c) for c in se.picked)), se.picked)
        elif is_dataframe(edges):    # collected once: the driver holds each epoch's new edges
            df = edges
            edges = self.edges = self.input_table(df)
            if self.out is not None:   # one Spark pass: the content a resume must match
                self.input_digest = dataframe_digest(df, self.input_columns)
        requested = requested_backend(self.backend, self.backends, self.name)
        dataflow = self.dataflow()
        d = self.driver = JobDriver(
            spark, dataflow, name=self.name, requested=requested, partitions=self.P,
            task_wrapper=self.task_wrapper, checkpoint_dir=self.checkpoint_dir,
            progress_log=self.progress_log,
            meta={"edges": str(edges), "partitions": self.P, "backend": requested.value},
            protocol_error=self.protocol_error)
        result = self.result_type(service=d.service, backend=requested,
                                  service_backend=d.service_backend.value)
        self.start()
        try:
            total, sources = self.sources()
            out_log = self.out_log = self._open_out(result)
        except BaseException as err:
            d.close(err)   # a reader of the log learns that the job ended, and why
            raise
        first = result.resumed_at
        bar = self.bar = Progress(self.progress, None if total is None else total - first,
                                  self.name)
        self.prepare()
        cap = first         # the epoch the input holds a capability for (None: dropped)
        kept: set = set()   # the checkpoints of the newest final epoch
        in_op, in_port = self.input
        out_op, out_port = self.output
        output_loc = dataflow.target(out_op, out_port)
        try:
            d.report(None)   # the operators' initial capabilities, at (0, 0)
            if first:        # resumed: every one moves on to the first epoch not final
                d.report(self._move_initial(first))
            for e, source in enumerate(sources):
                if e < first:   # final in out: neither recomputed nor written
                    out_log.check_source(e, source)
                    self.replay(e, source)   # re-read only if the job's state needs it
                    continue
                if out_log is not None:
                    if self.loop_resume is not None and not out_log.same_source(e, source):
                        self.notice(f"epoch {e}'s input {source.what} changed since its loop "
                                    f"checkpoint was written: the epoch restarts from its "
                                    f"first iteration")
                        self.loop_resume = None
                        out_log.drop_loop()
                    out_log.record_input(e, source)
                    crash_point("after-input", e)
                t_epoch = time.perf_counter()
                bar.start(e)
                d.epoch_kernels.clear()
                d.steps.step("read", e, 0)
                source.check()   # the input file is still the one recorded at the start
                scan = source.scan if self.executor_input else None
                inp = EpochInput(source, 0, scan, frame=getattr(source, "frame", None))
                # EdgeInputError before anything of this epoch happens
                inp.rows = (source.rows if inp.frame is not None
                            else inp.table().num_rows if scan is None else scan.rows)
                self.rows_so_far += inp.rows
                more = inp.more = total is None or e + 1 < total   # a stream: one may come
                # the input sends the epoch and moves its capability on (or drops it)
                report = self.input_report(e, inp).capabilities(in_op, in_port,
                                                                 self.time(in_op, e), -1)
                cap = e + 1 if more else None
                if more:
                    report.capabilities(in_op, in_port, self.time(in_op, e + 1), 1)
                d.report(report)
                outcome = self.epoch(e, inp)
                d.steps.step("output", e, outcome.iteration)
                d.report(self.output_report(e, outcome, more))
                d.report(Report().consumed(out_op, out_port,
                                           self.time(out_op, e, outcome.iteration), 1),
                         producer=f"{self.name}-output")
                fd = d.frontier(output_loc)
                if any(t[0] <= e for t in fd):
                    raise self.protocol_error(
                        f"epoch {e}: the frontier at {out_op}.in{out_port} "
                        f"{fmt_frontier(fd)} has not passed epoch {e}")
                source.check()   # the tasks read what the driver recorded: else nothing written
                self._write(out_log, e, outcome)
                summary = self.summary(
                    e, outcome, seconds=time.perf_counter() - t_epoch, frontier=tuple(fd),
                    kernels=tuple(sorted(d.epoch_kernels.items())), source=source.what,
                    new_rows=inp.rows, rows_so_far=self.rows_so_far)
                result.epochs.append(summary)
                d.steps.epoch(summary)
                # final: what a restart needs is this epoch's state; release the older
                d.checkpoints.release(kept - self.holding())
                kept = self.holding()
                self.last_result = outcome.result
                bar.epoch(summary)
                if self.on_epoch is not None:
                    self.on_epoch(summary)
            if cap is not None:   # the stream ended (or every epoch was final): the input
                d.report(self.end_report(cap).capabilities(in_op, in_port,
                                                           self.time(in_op, cap), -1))
                cap = None
            if out_log is not None:
                out_log.finish(first + len(result.epochs))
            result.table = self._final_table(self.last_result)
            d.sync()
        finally:
            bar.close()
            d.close(sys.exc_info()[1])   # the end event: ok, or the error that ended the job
            if out_log is not None:
                out_log.close()   # out's lock: another run may take it now
            self.finish()
            returned = (self.result_ids() if result.table is not None
                        and not isinstance(result.table, pa.Table) else set())
            held = self.holding() | (self.spark_edges.held if self.spark_edges else set())
            result.checkpoints = d.checkpoints.close(held, kept, hand_over=returned)
        result.seconds = time.perf_counter() - t_start
        result.tracking_seconds = d.tracking
        result.tracking_background_seconds = d.background
        result.delta_collect_seconds = d.collecting
        result.stages = d.stages
        result.kernels, result.kernel_fallbacks = d.kernels, d.kernel_fallbacks
        result.kernel_seconds, result.kernels_compiled = d.kernel_seconds, d.kernels_compiled
        return result

    #: Input rows of every epoch so far (the manifest's count), and the newest final epoch's
    #: result (a resumed one's too).
    rows_so_far = 0
    last_result = None
    #: The manifest of a local ``out`` (:class:`~spark_plugin.jobs.recovery.OutputLog`), or
    #: ``None``; and the loop checkpoint of the first epoch to compute that the rollback kept
    #: (a record of the manifest's ``loop`` list), which the job's :meth:`epoch` resumes from
    #: (and clears), or ``None``.
    out_log = None
    loop_resume = None

    def holding(self) -> set:
        """The checkpoint ids the job's state holds now (kept while the state is current)."""
        return set()

    def result_ids(self) -> set:
        """The checkpoint ids of the result :meth:`run` returns as a DataFrame (a Spark
        source's, without ``out``): they outlive the run, for the caller to read."""
        return set()

    def finish(self) -> None:
        """Called once at the end of :meth:`run`, also after an error."""

    def time(self, op: str, epoch: int, iteration: int = 0) -> tuple:
        """The timestamp ``(epoch, iteration)`` as operator ``op`` sees it: ``(epoch,)``
        outside any loop, ``(epoch, iteration)`` in a loop of depth 1, padded with zeros
        deeper."""
        ports = self.driver.dataflow.ports
        w = ports.m + int(ports.depth[ports.leaf(op)])
        return ((epoch, iteration) + (0,) * w)[:w]

    def _move_initial(self, first: int) -> Report:
        """Every initial capability ``(0, ...)`` moved on to ``(first, ...)``."""
        report = Report()
        for op, port, t in self.driver.dataflow.initial_capabilities():
            report.capabilities(op, port, t, -1).capabilities(op, port, (first,) + t[1:], 1)
        return report

    def _open_out(self, result: JobResult):
        """The manifest of ``out`` (resuming it; a bare path on the local file system, a URI
        through Hadoop's ``FileSystem``), or ``None`` without ``out``."""
        out = self.out
        if out is None:
            return None
        out_log, resume = OutputLog.open(out, self.fingerprint(), overwrite=self.overwrite,
                                         columns=self.result_columns, spark=self._spark,
                                         spark_read=self.spark_edges is not None,
                                         changes=self.changes)
        result.resumed_at = resume.epoch
        self.loop_resume = resume.loop
        if resume.labels is not None:   # the loop's state: the last final epoch's result
            if self.spark_edges is not None:   # names back to the dictionary's ids
                resume.labels = self.spark_edges.from_names(
                    resume.labels, self.id_columns or self.result_columns)
            self.rows_so_far = resume.edges
            self.last_result = resume.labels
            self.resume(resume.labels)
        for note in resume.notes:   # what the resume found changed, and does not use
            self.notice(note)
        if resume.epoch or resume.removed or resume.loop:
            were = ("epoch 0 is" if resume.epoch == 1 else f"epochs 0-{resume.epoch - 1} are")
            self.notice((f"resuming {out}: {were} final there, not recomputed"
                         if resume.epoch else f"resuming {out}: no epoch was final there")
                        + (f"; epoch {resume.epoch} has a loop checkpoint after iteration "
                           f"{resume.loop['iteration']}" if resume.loop else "")
                        + (f"; removed {len(resume.removed)} leftover file"
                           f"{'s' if len(resume.removed) != 1 else ''} of a killed epoch"
                           if resume.removed else ""))
        return out_log

    def _write(self, out_log, e: int, outcome: EpochOutcome) -> None:
        """Write final epoch ``e``'s result into ``out``'s dataset, then its manifest (crash
        recovery); nothing without ``out``."""
        if out_log is None:
            return
        result, rows = outcome.result, int(outcome.rows)
        if self.changes:   # only the rows that are new or changed since the last final epoch
            result, rows = self._changed(self.last_result, result)
        table = self._named(result)   # renamed into place, then the manifest names it
        files = (out_log.write_table(e, table) if isinstance(table, pa.Table)
                 else out_log.write_df(e, table))
        if rows is None:   # a DataFrame's changes: counted from the written files' footers
            rows = out_log.store.parquet_rows(files)
        crash_point("after-data", e)
        out_log.record_final(e, files, rows, self.rows_so_far)
        crash_point("after-manifest", e)

    def _changed(self, prev, cur):
        """``(rows, count)``: the rows of the result ``cur`` whose key (the first result
        column) is new since the result ``prev`` or whose value (the second) changed; the
        count, or ``None`` for a DataFrame (counted when written). Both on the driver
        (sorted by key) or, where either is a DataFrame, one join on the executors."""
        key, val = self.result_columns[:2]
        if prev is None:
            return cur, (cur.num_rows if isinstance(cur, pa.Table) else None)
        if isinstance(cur, pa.Table) and isinstance(prev, pa.Table):
            k = cur.column(key).to_numpy(zero_copy_only=False)
            v = cur.column(val).to_numpy(zero_copy_only=False)
            pk = prev.column(key).to_numpy(zero_copy_only=False)
            pv = prev.column(val).to_numpy(zero_copy_only=False)
            order = np.argsort(pk, kind="stable")
            pk, pv = pk[order], pv[order]
            at = np.minimum(np.searchsorted(pk, k), max(len(pk) - 1, 0))
            same = (pk[at] == k) & (pv[at] == v) if len(pk) else np.zeros(len(k), np.bool_)
            out = cur.filter(pa.array(~same))
            return out, out.num_rows
        from pyspark.sql import functions as F

        old = self._frame_of(prev).select(key, F.col(val).alias("_was"))
        out = self._frame_of(cur).join(old, key, "left").where(
            F.col("_was").isNull() | (F.col("_was") != F.col(val))).select(key, val)
        return out, None

    def _frame_of(self, result):
        """A result as a DataFrame (a driver-finished epoch's table is small: it fit)."""
        if isinstance(result, pa.Table):
            return self.spark.createDataFrame(result, schema=self.result_ddl())
        return result

    def _named(self, result):
        """A result as the user's ids: a Spark source read with ``--ids string`` has its
        dictionary's names put back (on the executors); else ``result`` unchanged."""
        se = self.spark_edges
        if se is None or se.words is None:
            return result
        return se.to_names(self._frame_of(result), self.id_columns or self.result_columns)

    def _final_table(self, last) -> pa.Table | None:
        """The newest final epoch's result, sorted by its first column, when there is no
        ``out`` (an empty table when there is none)."""
        if last is None:
            return pa.table({c: pa.array([], pa.int64()) for c in self.result_columns})
        if self.out is not None:
            return None
        if self.spark_edges is not None and not self.spark_edges.as_file:
            return self._named(self._frame_of(last))   # a Spark source's result stays in Spark
        # a local input, also one the executors read in the driver's stead: a table, as when
        # the driver reads it (collected before the run releases its checkpoint)
        if isinstance(last, pa.Table):
            return last
        from spark_plugin.service.batch import collect_arrow
        return collect_arrow(last.orderBy(self.result_columns[0]))


def _col(name: str):
    """``pyspark.sql.functions.col`` (PySpark imported when called)."""
    from pyspark.sql import functions as F
    return F.col(f"`{name}`")


def le(t, u) -> bool:
    """The product order of timestamps: every coordinate of ``t`` at most ``u``'s."""
    return all(x <= y for x, y in zip(t, u))


def _port_name(op: str, port: int) -> str:
    """``relax.in0`` for input 0 of the operator at path ``loop/relax``."""
    return f"{op.rsplit('/', 1)[-1]}.in{port}"
