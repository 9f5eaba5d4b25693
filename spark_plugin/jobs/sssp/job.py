"""Incremental single-source shortest paths on Spark, decided by frontiers.

:func:`run_sssp` reads edges in epochs (as the WCC job does: :mod:`spark_plugin.sources`, with
a third column with weights) and, per epoch, computes the distance from one
source vertex to every vertex of all edges seen so far: hop counts (BFS levels) without
weights, sums of non-negative weights with them. Edges are only ever added, so distances
only go down and the previous epoch's distances are a valid start: an epoch relaxes from the
reached sources of its new edges only.

Where the work runs (docs/jobs.md, "What a job costs"):

* **On the driver** while every edge so far fits the driver's budget (the jobs' sizing rule,
  :func:`~spark_plugin.jobs.budget.driver_finish_rows`; ``$TFRONT_SSSP_DRIVER_ROWS``
  overrides it, ``0``: always Spark). The driver reads every epoch anyway (it computes the
  seeds); it keeps the edges and finishes the epoch with one Dijkstra over the whole graph
  from the seeds (:func:`gpu_kernels.shortest_paths.local_fixpoint`): no Spark job at all,
  whatever the graph's diameter.
* **On Spark** past that, for good (:mod:`spark_plugin.jobs.sssp.spark`): the distances and
  the edges move to ``P`` partitions kept in Spark and the driver holds ``O(P)`` numbers.
  Every vertex has an owner partition (``partitioner``: ``locality``, ranges of ids cut at
  quantiles that Spark samples, or ``hash``, ``v % P``); each partition holds the edges of
  the vertices it owns. A *global round* is one Spark job: every task runs Dijkstra from its
  active vertices to its partition's *local fixpoint* and sends only what leaves the
  partition -- candidates for vertices owned elsewhere -- to their owners, where ``min``
  keeps those that lower a distance: the next round's active set. Global rounds follow how
  often a shortest path crosses partitions, not its length. A Spark source's epochs are
  read by the executors; so is a local Parquet file past the budget (as the Spark source
  ``file://PATH``, its epochs the same slices); other local input (text, CSV, a directory,
  an Arrow table) is read by the driver and each epoch's rows handed to Spark.

The dataflow (:func:`sssp_dataflow`) models exactly that: the scope ``loop`` counts global
rounds (timestamps ``(epoch, round)``), the nested scope ``loop/local`` a task's local rounds
(``(epoch, round, local round)``: a vertex settled by the local Dijkstra is at the local round
of the number of local edges on its shortest path from an active vertex):

* ``input`` sends the epoch's new edges (out0) and the *seeds* (out1; the source in epoch 0,
  afterwards the reached sources of new edges) into the loop;
* ``local/step`` (one task per partition, or the driver) takes the local feedback (in0), the
  edges (in1), the seeds (in2) and the global feedback (in3, the round's active vertices);
  what it settles at local round ``l`` goes around ``local/feedback`` (out0, ``l + 1``), what
  leaves the partition -- lowered distances and candidates -- goes to ``min`` (out1);
* ``min`` (the driver finishing an epoch; on Spark the tasks of the owners, whose counts the
  driver reports) sends the vertices a candidate lowered around ``feedback`` (``round + 1``)
  to ``step.in3``; its out1 carries the epoch's distances to ``output``.

Every task (and the driver, finishing an epoch) reports what it consumed and produced in these
operators' words, local rounds included; the driver decides only from frontiers:

* round ``g`` of epoch ``e`` is complete when the frontiers at ``step.in3`` and ``min.in0``
  have no element ``<= (e, g)``;
* the epoch's relaxation has converged when the frontier at ``step.in3`` has no element of
  epoch ``e`` (nothing in flight, no capability that could send any);
* epoch ``e`` is final when the frontier at ``output.in0`` has passed ``e``; only then are its
  distances written.

A Spark source (a URI, a Spark-written directory, a table, a DataFrame: read by the executors,
:mod:`spark_plugin.sources`) is collected for an epoch that fits the driver's budget. On
Spark the same operators report the same way: ``min`` runs in the owners' tasks and the
driver reports its counts.

The job is an :class:`~spark_plugin.jobs.framework.EpochJob` (:class:`SsspJob`): the framework
reads the epochs, guards and applies every report exactly once, checks the output frontier,
writes each final epoch to ``out`` -- a local one with its manifest, resumable -- and draws
the progress bar; this module is the dataflow and the algorithm.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from engine import Report
from engine.jit import CompileWatch, warm_shortest_paths
from gpu_kernels.shortest_paths import grow_csr, local_fixpoint, unit_weights, unreached
from gpu_kernels.unionfind import compact_ids

from spark_plugin.jobs.arrow import arrow_numpy

from spark_plugin.jobs.budget import driver_finish_rows as budget_rows
from spark_plugin.jobs.framework import EpochJob, EpochOutcome, JobProtocolError, JobResult
from spark_plugin.jobs.sssp.spark import EdgeFrame, SparkDistances
from spark_plugin.sources.dataset import SparkEdges, spark_source
from spark_plugin.sources import (COLUMNS_HINT, EdgeColumns, EdgeInputError, epoch_sources,
                                  parquet_file_rows, weighted_table)

__all__ = ["run_sssp", "SsspJob", "SsspResult", "SsspEpoch", "SsspProtocolError",
           "sssp_dataflow", "sssp_fingerprint", "EdgeInputError", "driver_finish_rows",
           "PARTITIONERS", "DRIVER_ROWS_ENV"]

log = logging.getLogger(__name__)

PRODUCER = "sssp"
#: Why a task's kernels ran where they did (they have no GPU twin).
CPU_ONLY = "the shortest-paths kernels run on the CPU only"
#: The environment variable that overrides the driver's budget (``0``: every epoch on Spark).
DRIVER_ROWS_ENV = "TFRONT_SSSP_DRIVER_ROWS"
#: How vertices are placed on partitions when the epochs run on Spark.
PARTITIONERS = ("locality", "hash")


class SsspProtocolError(JobProtocolError):
    """A frontier did not advance as the protocol requires (a lost or duplicated report)."""


#: Operator paths in the dataflow (:func:`sssp_dataflow`).
INPUT, STEP, LOCAL_FEEDBACK, MIN, FEEDBACK, OUTPUT = (
    "input", "loop/local/step", "loop/local/feedback", "loop/min", "loop/feedback", "output")
#: ``step``'s inputs: the local feedback, the edges, the seeds, the global feedback.
STEP_LOCAL, STEP_EDGES, STEP_SEEDS, STEP_ACTIVE = 0, 1, 2, 3


def sssp_dataflow():
    """The job's dataflow as operators and two nested loop scopes
    (:mod:`engine.operate.dataflow`).

    ``input`` (epochs ``(e,)``; out0 edges, out1 seeds) feeds the scope ``loop`` (timestamps
    ``(e, round)``) at its inputs 0 and 1, which feed the scope ``loop/local`` (``(e, round,
    local round)``) at its inputs 0 and 1; the global ``feedback`` (``round + 1``) enters it
    at input 2. Inside, ``step`` takes the local feedback (in0), the edges (in1), the seeds
    (in2) and the global feedback (in3); its out0 goes around ``local/feedback`` (``local
    round + 1``), its out1 leaves the local scope to ``min``, whose out0 goes around
    ``feedback`` and whose out1 leaves the loop to ``output``. ``input`` holds a capability
    for epoch 0 on both outputs, ``min`` one for ``(0, 0)`` on out1 (the epoch's distances).

    >>> df = sssp_dataflow()
    >>> df.external_summary("loop/min")[(0, 0)]
    (Summary(1->1, keep=1, d_out=(0,), d_cnt=(1,), reset=()),)
    >>> df.external_summary("loop/local/step")[(0, 0)]
    (Summary(2->2, keep=2, d_out=(0,), d_cnt=(0, 1), reset=()),)
    """
    from engine import BOUNDARY, Operate, Scope, Summary

    root = Scope("sssp", m=1)
    inp = root.add(Operate(INPUT, 0, 2, capabilities={0: [(0,)], 1: [(0,)]}))
    loop = Scope("loop", 2, 1, depth=1)
    local = Scope("local", 3, 1, depth=2)
    step = local.add(Operate("step", 4, 2, summary={(i, o): Summary.identity(2)
                                                   for i in range(4) for o in range(2)}))
    lfb = local.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(2)}))
    for i in range(3):
        local.connect(BOUNDARY, i, step, i + 1)
    local.connect(step, 0, lfb, 0)
    local.connect(lfb, 0, step, 0)
    local.connect(step, 1, BOUNDARY, 0)
    lc = loop.add(local)
    mn = loop.add(Operate("min", 1, 2, summary={(0, o): Summary.identity(1) for o in (0, 1)},
                          capabilities={1: [(0, 0)]}))
    fb = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1)}))
    loop.connect(BOUNDARY, 0, lc, 0)
    loop.connect(BOUNDARY, 1, lc, 1)
    loop.connect(fb, 0, lc, 2)
    loop.connect(lc, 0, mn, 0)
    loop.connect(mn, 0, fb, 0)
    loop.connect(mn, 1, BOUNDARY, 0)
    lp = root.add(loop)
    out = root.add(Operate(OUTPUT, 1, 0))
    root.connect(inp, 0, lp, 0)
    root.connect(inp, 1, lp, 1)
    root.connect(lp, 0, out, 0)
    return root.build()


def driver_finish_rows(spark) -> tuple[int, str]:
    """The most edges (rows, both ways when undirected) an epoch may have in all to be
    finished on the driver, and how that was chosen: ``$TFRONT_SSSP_DRIVER_ROWS`` when set,
    else the jobs' sizing rule (:func:`spark_plugin.jobs.budget.driver_finish_rows`)."""
    return budget_rows(spark, DRIVER_ROWS_ENV)


def local_report(e: int, g: int, res, *, active: int, seeds: bool, edges: int | None = None,
                 report: Report | None = None) -> Report:
    """What one ``step`` did in global round ``g`` of epoch ``e``, in the operators' words:
    it consumed ``active`` vertices at in2 (the seeds, round 0) or in3 (the global
    feedback), and ``edges`` new edges at in1; per local round ``l >= 1`` the vertices the
    local Dijkstra settled there (``res``: :class:`~gpu_kernels.shortest_paths.LocalResult`)
    were produced at out0 in round ``l - 1``, went around ``local/feedback`` and were
    consumed at in0; what left the partition (lowered distances, candidates) was produced at
    out1 in the local round it was found."""
    report = Report() if report is None else report
    report.consumed(STEP, STEP_SEEDS if seeds else STEP_ACTIVE, (e, g, 0), int(active))
    if edges is not None:
        report.consumed(STEP, STEP_EDGES, (e, g, 0), int(edges))
    settled = np.asarray(res.settled_rounds, np.int64)
    if len(settled) > 1:
        lv = np.flatnonzero(settled[1:] > 0) + 1
        n = settled[lv]
        t_in = np.stack([np.full(len(lv), e), np.full(len(lv), g), lv], axis=1)
        t_out = t_in - np.array([0, 0, 1])
        report.produced(STEP, 0, t_out, n).consumed(LOCAL_FEEDBACK, 0, t_out, n)
        report.produced(LOCAL_FEEDBACK, 0, t_in, n).consumed(STEP, STEP_LOCAL, t_in, n)
    rounds = np.concatenate([res.rounds, res.out_rounds]).astype(np.int64)
    if len(rounds):
        per = np.bincount(rounds)
        lv = np.flatnonzero(per)
        ts = np.stack([np.full(len(lv), e), np.full(len(lv), g), lv], axis=1)
        report.produced(STEP, 1, ts, per[lv])
    return report


@dataclass(frozen=True)
class SsspEpoch:
    """One final epoch: vertices seen so far, how many the source reaches, edges so far (and
    the epoch's own), global rounds, wall seconds, the largest finite distance, and the
    frontier at ``output.in0`` when the epoch was declared final. ``where``: ``driver`` (the
    driver finished it, no Spark job) or ``spark`` (one Spark job per round, ``cut`` the
    share of the edges so far that join two partitions); ``local_rounds`` the most local
    rounds of one task (or of the driver's Dijkstra) in the epoch."""

    epoch: int
    vertices: int
    reached: int
    edges: int
    rounds: int
    seconds: float
    max_distance: float = 0
    output_frontier: tuple = ()
    source: str = ""
    new_edges: int = 0
    where: str = "driver"
    cut: float = 0.0
    local_rounds: int = 0
    #: ``--undirected``: every input edge is two of :attr:`edges` (the line says so).
    both_ways: bool = False

    #: The counts of this job in the progress log's ``epoch`` event (besides ``epoch``,
    #: ``vertices``, ``edges``, ``rounds``, ``seconds``).
    log_fields = ("reached", "max_distance", "where", "cut", "local_rounds")

    def line(self) -> str:
        """``epoch E: vertices V, reached R, edges M, rounds K, max distance D, WHERE, S.SS
        s`` -- ``WHERE`` is ``on the driver`` or ``on Spark, cut C%``; undirected, ``edges
        M`` counts the input's edges and says that each leads both ways.

        >>> SsspEpoch(0, 3, 3, 4, 1, 0.5, 2, both_ways=True).line()
        'epoch 0: vertices 3, reached 3, edges 2 (both ways: 4 directed), rounds 1, max distance 2, on the driver, 0.50 s'
        """
        where = ("on the driver" if self.where == "driver"
                 else f"on Spark, cut {100 * self.cut:.1f}%")
        edges = (f"{self.edges // 2} (both ways: {self.edges} directed)" if self.both_ways
                 else f"{self.edges}")
        return (f"epoch {self.epoch}: vertices {self.vertices}, reached {self.reached}, edges "
                f"{edges}, rounds {self.rounds}, max distance {self.max_distance:g}, "
                f"{where}, {self.seconds:.2f} s")


@dataclass
class SsspResult(JobResult):
    """What :func:`run_sssp` did (:class:`~spark_plugin.jobs.framework.JobResult`, which documents the
    common fields). ``distances`` (``vertex, distance``, reached vertices only, sorted by
    vertex) is the last final epoch's when no ``out`` was given -- for a Spark source a
    Spark DataFrame (unsorted, never collected by the job); ``decisions`` the frontiers
    each decision of this run was taken from, in order: ``(epoch, round, what, frontier)``
    with ``what`` one of ``round`` (the frontiers at step.in3 and min.in0 passed
    ``(e, round)``; ``frontier`` is the pair of them, step.in3's first), ``converged``
    (step.in3 has no element of epoch ``e``) and ``final`` (output.in0 passed ``e``);
    ``stages`` the Spark jobs of the rounds (one per global round on Spark, none on the
    driver).

    >>> SsspResult(seconds=2.0, tracking_seconds=0.01).total_line()
    'total: 0 epochs, 0 rounds, 2.00 s (kernels loaded 0.00 s, progress tracking 0.01 s); nothing written'
    """

    decisions: list = field(default_factory=list)
    weighted: bool = False
    dataflow: object = None

    what = "distances"

    @property
    def distances(self) -> pa.Table | None:
        return self.table

    def counts(self) -> str:
        return f"{len(self.epochs)} epochs, {sum(e.rounds for e in self.epochs)} rounds"


def sssp_fingerprint(edges, epochs: int, follow, source, weighted: bool,
                     undirected: bool, dataframe: dict | None = None, *,
                     columns: tuple | None = None, picked=None, changes: bool = False) -> dict:
    """What makes two shortest-paths runs the same job (recorded in ``out``'s manifest; the
    job's :meth:`SsspJob.fingerprint` and ``tfront sssp``'s check before Spark starts): the
    input and its epochs and the columns picked (``picked``, an
    :class:`~spark_plugin.sources.columns.EdgeColumns`) -- a local input's path or an Arrow
    table's or collected DataFrame's content digest
    (:func:`~spark_plugin.jobs.recovery.job_fingerprint`), a Spark source's location, format
    and epoch plan (:func:`~spark_plugin.jobs.recovery.spark_fingerprint`; a local file read
    by Spark in the driver's stead is its path) -- and the options that change the
    distances: ``source`` (an id, or a name with ``--ids string``), ``weighted``,
    ``undirected`` and ``changes`` (each epoch's files hold its changes only).
    ``columns``: the table columns a table's content digest covers; ``dataframe``: a
    DataFrame's :func:`~spark_plugin.jobs.recovery.dataframe_digest`."""
    from spark_plugin.jobs.recovery import job_fingerprint, spark_fingerprint

    if isinstance(edges, SparkEdges) and not edges.as_file:
        job = spark_fingerprint(edges, dataframe, picked)
    else:
        if columns is None:
            columns = ("src", "dst", "weight") if weighted else ("src", "dst")
        job = job_fingerprint(edges, epochs, follow, columns=columns, dataframe=dataframe,
                              picked=picked)
    job.update({"job": "sssp", "source": source if isinstance(source, str) else int(source),
                "weighted": bool(weighted), "undirected": bool(undirected)})
    if changes:
        job["changes"] = True
    return job


class SsspJob(EpochJob):
    """Incremental single-source shortest paths as an :class:`~spark_plugin.jobs.framework.EpochJob`
    (:func:`run_sssp` runs it; the module docstring describes the algorithm).

    While the edges so far fit its budget (:func:`driver_finish_rows`) the driver holds
    ``vertices`` (sorted, every vertex seen so far), their distances (unreached:
    :func:`~gpu_kernels.shortest_paths.unreached`) and the edges (``held``, and as a CSR by
    vertex index, grown by each epoch's edges: ``drv_csr``). The first epoch past it moves
    them to Spark (``relax``, a :class:`~spark_plugin.jobs.sssp.spark.SparkDistances`), where
    they stay: from then on the driver holds ``O(P)`` numbers. Resuming ``out``, the
    distances come from the last final epoch's result and the edges from the final epochs'
    input, read again (:meth:`replay`; kept as DataFrames, or as the tables the driver read,
    until the first epoch computed says where they go): the output holds the distances only.
    """

    name = PRODUCER
    input = (INPUT, 0)
    output = (OUTPUT, 0)
    result_columns = ("vertex", "distance")
    protocol_error = SsspProtocolError
    result_type = SsspResult
    #: A Spark source (a URI, a Spark-written directory, a table, a DataFrame) is read by
    #: the executors (:mod:`spark_plugin.sources`), and so is a local Parquet file past the
    #: driver's budget (:meth:`too_big_for_driver`).
    spark_sources = True
    id_columns = ("vertex",)
    relax: SparkDistances | None = None   # the distances in Spark, once an epoch needs it
    resumed_df = None       # a Spark source's resumed distances (a DataFrame), not yet used
    # the final epochs' rows of a resumed run, not yet used: (DataFrame or the driver's
    # table, what); and their edges (both ways when undirected)
    replayed: list = []
    pending_rows = 0

    @property
    def spark_options(self):
        return {"weighted": self.weighted}

    def result_ddl(self) -> str:
        return f"vertex bigint, distance {'double' if self.weighted else 'bigint'}"

    def __init__(self, spark, edges, source: int, *, weighted: bool = False,
                 undirected: bool = False, partitioner: str = "locality", **options):
        #: ``--ids string``: the source as named (its id comes from the dictionary).
        self.source_name = None
        if isinstance(edges, SparkEdges) and edges.ids == "string":
            if not str(source).strip():
                raise ValueError("source must name a vertex (--ids string), got an empty name")
            self.source_name, source = str(source).strip(), 0
        if isinstance(source, bool) or not isinstance(source, (int, np.integer)) or not (
                0 <= int(source) < (1 << 63)):
            raise ValueError(f"source must be a vertex id, a non-negative int64, got "
                             f"{source!r}")
        if partitioner not in PARTITIONERS:
            raise ValueError(f"partitioner must be one of {', '.join(PARTITIONERS)}, got "
                             f"{partitioner!r}")
        # the kernels run on the CPU; the driver reads every epoch (it computes the seeds)
        super().__init__(spark, edges, backend="cpu", executor_input=False, **options)
        self.source, self.weighted, self.undirected = int(source), weighted, undirected
        self.partitioner = partitioner
        self.dtype = np.float64 if weighted else np.int64
        self.vertices = np.array([self.source], np.int64)
        self.dist = np.zeros(1, self.dtype)
        self.n_edges = 0
        self.held: list = []         # the edges, while the driver holds them
        # ... and as a CSR by vertex index (grow_csr), with the edges not yet in it (vertex
        # indices) and, when vertices were added since it was built, its vertices' new indices
        self.drv_csr = None
        self.drv_new: list = []
        self.drv_at = None
        self.unsent = 0              # edges replayed by a resume, not yet reported sent
        self.driver_rows = 0
        self.active = (np.zeros(0, np.int64), np.zeros(0, self.dtype))
        self.decisions: list = []
        self.replayed = []

    # -- the dataflow, the input, the output -----------------------------------------------
    def dataflow(self):
        return sssp_dataflow()

    def sources(self):
        if self.spark_edges is not None:   # read by the executors
            total, eps = super().sources()
            if self.source_name is not None:   # --ids string: the source's id
                sid = self.spark_edges.vertex_id(self.source_name)
                if sid is None:
                    raise EdgeInputError(f"{self.spark_edges.what}: --source "
                                         f"{self.source_name!r} is no vertex of any edge (with "
                                         f"--ids string the source is a vertex's name)",
                                         self.spark_edges.what)
                self.source = sid
                self.vertices = np.array([sid], np.int64)
            return total, eps
        if not self.weighted:
            return super().sources()
        return epoch_sources(self.edges, self.epochs, follow=self.follow,
                             columns=self.file_columns, weighted=True)

    def input_table(self, df):
        if not self.weighted:
            return super().input_table(df)
        if self.columns is None:
            missing = [c for c in ("src", "dst", "weight") if c not in df.columns]
            if missing:
                raise EdgeInputError(f"edge DataFrame: no column {missing[0]!r} (columns: "
                                     f"{', '.join(df.columns) or '(none)'}); a weighted input "
                                     f"needs src, dst and weight; {COLUMNS_HINT}",
                                     "edge DataFrame")
        return weighted_table(self._collect(df, ("src", "dst", "weight")), "edge DataFrame")

    def fingerprint(self):
        se = self.spark_edges
        return sssp_fingerprint(
            se if se is not None and not se.as_file else self.edges, self.epochs, self.follow,
            self.source_name if self.source_name is not None else self.source, self.weighted,
            self.undirected, dataframe=self.input_digest, columns=self.input_columns,
            picked=self.columns, changes=self.changes)

    def too_big_for_driver(self, edges) -> bool:
        """A local Parquet file whose edges (both ways when undirected; its rows from the
        footer) are past the driver's budget (:func:`driver_finish_rows`) is read by the
        executors, as the Spark source ``file://PATH`` with the same slices, named and
        recorded as the driver's reading would be: its epochs' distances then stay in Spark
        without the driver reading the edges or holding the vertices."""
        rows = parquet_file_rows(edges, self.follow)
        return rows is not None and (2 if self.undirected else 1) * rows > driver_finish_rows(
            self._spark)[0]

    @property
    def input_columns(self):
        return self._picked(("src", "dst", "weight") if self.weighted else ("src", "dst"))

    #: Said (from level 1) when the kernels are not in Numba's cache yet.
    COMPILING = "compiling the Numba kernels (once: cached for later runs) ..."

    def start(self):
        self.driver_rows = driver_finish_rows(self._spark)[0]
        # the driver's kernels load (or compile, once) on the tracking thread while the input
        # is read (a text file is read whole before prepare(): Arrow's parser releases the
        # GIL, Numba's start-up -- half a second -- then costs nothing); the note that they
        # compile waits for the progress bar, made once the input is open
        lock, said, ready = threading.Lock(), [], []

        def announce():
            with lock:
                said.append(True)
                now = bool(ready)
            if now:
                self.bar.note(self.COMPILING)

        def load():
            with CompileWatch(announce) as watch:
                warm_shortest_paths()   # engine.jit's: make venv compiled them
            return watch
        self._announced = (lock, said, ready)
        self.driver.load_kernels(load)

    def prepare(self):
        lock, said, ready = self._announced
        with lock:   # the bar exists now: announce() says it from here on, or we do once
            ready.append(True)
            late = bool(said)
        if late:
            self.bar.note(self.COMPILING)

    def _edges_of(self, table: pa.Table):
        """An epoch's rows as edge arrays ``(src, dst, weight)`` (both ways if undirected),
        read from the Arrow buffers (``to_numpy`` of a chunked column imports pandas)."""
        s = arrow_numpy(table.column("src"), writable=False).astype(np.int64, copy=False)
        d = arrow_numpy(table.column("dst"), writable=False).astype(np.int64, copy=False)
        w = (arrow_numpy(table.column("weight"), writable=False).astype(np.float64, copy=False)
             if self.weighted else None)
        if self.undirected:
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
            w = None if w is None else np.concatenate([w, w])
        # hops: every weight 1, a view of one value
        return s, d, unit_weights(len(s)) if w is None else w

    def _grow(self, s, d):
        """Every vertex of the edges ``s -> d`` is seen: new ones are unreached. Returns the
        edges by vertex index (positions in :attr:`vertices`), found with the vertices in one
        pass (:func:`~gpu_kernels.unionfind.compact_ids`: a presence mask when the ids are
        dense, else one sort)."""
        grown, (at, si, di) = compact_ids(self.vertices, s, d)
        if len(grown) == len(self.vertices):
            return si, di
        dist = np.full(len(grown), unreached(self.dtype), self.dtype)
        dist[at] = self.dist
        self.vertices, self.dist = grown, dist
        # the driver's CSR and its pending edges are renumbered when the epoch is finished
        if self.drv_csr is not None:
            self.drv_at = at if self.drv_at is None else at[self.drv_at]
        self.drv_new = [(at[a], at[b], w) for a, b, w in self.drv_new]
        return si, di

    def _add(self, s, d, w, si, di) -> None:
        """The edges join the driver's (``si -> di`` by vertex index join its CSR when the
        epoch is finished)."""
        self.n_edges += len(s)
        self.held.append((s, d, w))
        self.drv_new.append((si, di, w if self.weighted else None))

    # -- resuming ----------------------------------------------------------------------------
    def resume(self, table):
        if not isinstance(table, pa.Table):   # a Spark source's, read by Spark: kept there
            self.resumed_df = table
            return
        # the distances of the last final epoch; replay adds the vertices it did not reach
        self.vertices = table.column("vertex").to_numpy().astype(np.int64)
        self.dist = table.column("distance").to_numpy().astype(self.dtype)

    def replay(self, e, source):
        # a final epoch's rows, kept until the first epoch computed says where they go: to
        # the driver's edges when they fit its budget, else to Spark's. A Spark source's are
        # not read here (by the executors, or collected then); a local input's are read now,
        # to check them and count them
        if self.spark_edges is not None:
            rows, n = source.frame, int(source.rows)
        else:
            rows = source.read()
            n = rows.num_rows
        self.replayed.append((rows, source.what))
        self.pending_rows += (2 if self.undirected else 1) * n

    def _replay_table(self, table, what):
        # the edges of a final epoch join the driver's with the first epoch computed
        s, d, w = self._edges_of(table)
        self._bound_weights(w, what)
        si, di = self._grow(s, d)
        self._add(s, d, w, si, di)
        self.unsent += len(s)

    #: The sum of every weight so far: a bound on any distance (issue 32 item 6).
    weight_sum = 0.0

    def _bound_weights(self, w, what: str) -> None:
        """Refuse an epoch whose weights would let a distance pass the largest double: no
        shortest path is longer than the sum of all the weights, so while that sum is finite
        every distance is exact or unreached, never an overflow read as unreachable.

        Raises
        ------
        EdgeInputError
            The sum of the weights so far is past the largest double (nothing of the epoch
            is applied)."""
        if w is None or not len(w) or not self.weighted:   # hops: every weight is 1
            return
        with np.errstate(over="ignore"):
            self._bound_sum(float(np.sum(np.asarray(w, np.float64))), what)

    def _bound_sum(self, more: float, what: str) -> None:
        """:meth:`_bound_weights` of weights summing to ``more``."""
        with np.errstate(over="ignore"):
            total = self.weight_sum + more
        if not np.isfinite(total):
            raise EdgeInputError(
                f"{what}: the weights so far sum past the largest double "
                f"({np.finfo(np.float64).max:.3g}): a distance could overflow to infinity and "
                f"read as unreachable; scale the weights down", what)
        self.weight_sum = total

    # -- the move to Spark -----------------------------------------------------------------
    def _fits(self, rows: int) -> bool:
        """Whether the edges so far with an epoch of ``rows`` rows fit the driver's budget."""
        k = 2 if self.undirected else 1
        return self.n_edges + self.pending_rows + k * int(rows) <= self.driver_rows

    def _pull_resumed(self) -> None:
        """A resumed run whose next epoch fits the driver: the last final epoch's distances
        and the final epochs' edges join the driver's (they fit: the budget counts them) --
        a Spark source's collected."""
        from spark_plugin.service.batch import collect_arrow

        if self.resumed_df is not None:
            t = collect_arrow(self.resumed_df.orderBy("vertex"))
            self.resumed_df = None
            self.resume(t)
        replayed, self.replayed, self.pending_rows = self.replayed, [], 0
        for rows, what in replayed:
            self._replay_table(rows if isinstance(rows, pa.Table) else collect_arrow(rows),
                               what)

    def _frame(self, rows):
        """Rows ``src, dst`` (``weight``) as a DataFrame: a Spark source's as they are, a
        table on the driver (the driver read it, or holds it) handed to Spark."""
        if not isinstance(rows, pa.Table):
            return rows
        names = ["src", "dst", "weight"] if self.weighted else ["src", "dst"]
        ddl = "src bigint, dst bigint" + (", weight double" if self.weighted else "")
        return self.spark.createDataFrame(rows.select(names), schema=ddl)

    def _spark_input(self, e, inp):
        """The input of an epoch kept in Spark: its rows (and, the first time, what the driver
        or a resumed ``out`` held) merged into the partitions on the executors
        (:meth:`SparkDistances.merge`) -- a Spark source's (a local Parquet file past the
        budget too) read there, a local input's handed over by the driver, which read them;
        the input sends the edges merged this epoch and the seeds the merge found."""
        k = 2 if self.undirected else 1
        frames, dist_frame = [], None
        first = self.relax is None
        relax = SparkDistances(self, local_report) if first else self.relax
        if first:
            spark = self.spark
            if self.resumed_df is not None:
                dist_frame = self.resumed_df
            elif self.held or len(self.vertices) > 1:   # the driver's state fit it: moved
                reached = self.dist != unreached(self.dtype)
                dist_frame = spark.createDataFrame(pa.table({
                    "vertex": pa.array(self.vertices[reached]),
                    "distance": pa.array(self.dist[reached])}), schema=self.result_ddl())
            if self.held:
                s, d, w = (np.concatenate(x) for x in zip(*self.held))
                cols = {"src": pa.array(s), "dst": pa.array(d)}
                if self.weighted:
                    cols["weight"] = pa.array(w.astype(np.float64))
                frames.append(EdgeFrame(self._frame(pa.table(cols)), fresh=self.unsent > 0,
                                        seed=False, summed=True, both=True))
            frames += [EdgeFrame(self._frame(rows), seed=False) for rows, _ in self.replayed]
        frames.append(EdgeFrame(self._frame(inp.table()) if inp.frame is None else inp.frame))
        try:
            tot = relax.merge(e, frames, dist_frame)
            self._bound_sum(tot.weight_sum, inp.source.what)   # nothing applied if refused
        except BaseException:
            relax.discard()
            raise
        relax.commit(tot)
        if first:   # the driver holds nothing of the graph from now on
            self.relax, self.held, self.replayed, self.resumed_df = relax, [], [], None
            self.vertices = np.array([self.source], np.int64)
            self.dist = np.zeros(1, self.dtype)
        self.new_edges = k * int(inp.rows)
        self.n_edges, self.pending_rows = tot.edges, 0
        self.sent, self.unsent = tot.fresh, 0
        report = Report().produced(INPUT, 0, (e,), self.sent)
        report.produced(INPUT, 1, (e,), tot.seeds).capabilities(INPUT, 1, (e,), -1)
        return report.capabilities(INPUT, 1, (e + 1,), 1) if inp.more else report

    # -- the algorithm -----------------------------------------------------------------------
    def input_report(self, e, inp):
        """The input sends the epoch's edges to ``step.in1`` (with a resume's replayed
        ones) and the seeds -- the source in epoch 0, then the reached sources of the new
        edges -- to ``step.in2``, and moves its seeds capability on (the framework moves
        the edges')."""
        if self.relax is not None or not self._fits(inp.rows):
            return self._spark_input(e, inp)   # past the budget: in Spark from now on
        self._pull_resumed()   # a resume's distances and edges fit the driver: they join it
        s, d, w = self._edges_of(inp.table())
        self._bound_weights(w, inp.source.what)   # before anything of the epoch changes
        self.new_edges = len(s)
        si, di = self._grow(s, d)
        self._add(s, d, w, si, di)
        self.sent, self.unsent = self.unsent + len(s), 0
        if e == 0:
            at = np.searchsorted(self.vertices, np.array([self.source], np.int64))
        else:   # the distinct sources of the new edges, in id order
            seen = np.zeros(len(self.vertices), np.bool_)
            seen[si] = True
            at = np.flatnonzero(seen)
        seeds, seed_d = self.vertices[at], self.dist[at]
        keep = seed_d != unreached(self.dtype)
        self.active = (seeds[keep], seed_d[keep])
        report = Report().produced(INPUT, 0, (e,), self.sent)
        report.produced(INPUT, 1, (e,), int(keep.sum())).capabilities(INPUT, 1, (e,), -1)
        return report.capabilities(INPUT, 1, (e + 1,), 1) if inp.more else report

    def epoch(self, e, inp):
        """Finish the epoch on the driver, or on Spark round by round until the frontier at
        ``step.in3`` has no element of epoch ``e``; the result is the distances of the
        reached vertices."""
        if self.relax is not None:   # the distances stay in Spark
            it, local = self.relax.rounds(e)
            df, nv, reached, top = self.relax.distances(e)
            return EpochOutcome(df, reached, it, it + 1, stats={
                "max_distance": top, "local_rounds": local, "vertices": nv})
        it, local = self._finish_on_driver(e), self.local_rounds
        reached = self.dist != unreached(self.dtype)
        table = pa.table({"vertex": pa.array(self.vertices[reached]),
                          "distance": pa.array(self.dist[reached])})
        return EpochOutcome(table, int(reached.sum()), it, it + 1, stats={
            "max_distance": float(self.dist[reached].max()) if reached.any() else 0.0,
            "local_rounds": local})

    def _decide(self, e, g, what) -> bool:
        """The frontier decisions after global round ``g``: the round is complete (else the
        job's protocol error), and whether the relaxation converged."""
        d = self.driver
        fr, fm = d.round_passed(e, g, (STEP, STEP_ACTIVE), (MIN, 0), what=what)
        self.decisions.append((e, g, "round", (tuple(fr), tuple(fm))))
        self.bar.round(e, g + 1, fr, "step.in3")
        if d.converged(e, fr):   # nothing of epoch e can reach step again
            self.decisions.append((e, g, "converged", tuple(fr)))
            return True
        return False

    def _min_report(self, e, g, received: int, lowered: int) -> Report:
        """``min`` consumed what the round sent it and sent the vertices a candidate lowered
        around ``feedback`` to round ``g + 1``."""
        return (Report().consumed(MIN, 0, (e, g), received).produced(MIN, 0, (e, g), lowered)
                .consumed(FEEDBACK, 0, (e, g), lowered)
                .produced(FEEDBACK, 0, (e, g + 1), lowered))

    def _finish_on_driver(self, e) -> int:
        """One Dijkstra over every edge the driver holds, from the seeds: the epoch's fixed
        point in global round 0 (no Spark job). Reported as the driver's own batch: ``step``
        consumed the seeds and the new edges and went through its local rounds, ``min``
        consumed what it produced and sent nothing around the loop. The driver's CSR is
        the last epoch's with the new edges added (:func:`~gpu_kernels.shortest_paths.grow_csr`:
        linear, no sort, the edges in the order :func:`~gpu_kernels.shortest_paths.local_csr`
        of all of them would give)."""
        d = self.driver
        n = len(self.vertices)
        d.steps.step("driver dijkstra", e, 0)
        if self.drv_new or self.drv_csr is None or self.drv_at is not None:
            if len(self.drv_new) == 1:
                si, di, w = self.drv_new[0]
            elif self.drv_new:
                si, di = (np.concatenate(x) for x in list(zip(*self.drv_new))[:2])
                w = (np.concatenate([x[2] for x in self.drv_new]) if self.weighted
                     else None)
            else:
                si = di = np.zeros(0, np.int64)
                w = np.zeros(0, self.dtype) if self.weighted else None
            self.drv_csr = grow_csr(self.drv_csr, n, si, di, w, at=self.drv_at)
            self.drv_new, self.drv_at = [], None
        indptr, targets, weights = self.drv_csr
        if weights is None:   # hop counts
            weights = unit_weights(len(targets))
        av, ad = self.active
        res = local_fixpoint((indptr, targets, targets, weights), self.dist,
                             np.searchsorted(self.vertices, av), ad)
        self.dist[res.updated] = res.distances
        self.local_rounds = len(res.settled_rounds)
        d.count_kernels(None, f"driver dijkstra, epoch {e}", [("cpu", CPU_ONLY)])
        report = local_report(e, 0, res, active=len(av), seeds=True, edges=self.sent)
        d.report(Report.concat([report, self._min_report(e, 0, len(res.updated), 0)]))
        if not self._decide(e, 0, "the driver finished the loop"):
            raise SsspProtocolError(f"epoch {e}: the driver finished the loop, but the frontier "
                                    f"at step.in3 has not passed epoch {e}")
        return 0

    def output_report(self, e, outcome, more):
        # min sends the epoch's distances to the output and moves its capability on
        report = Report().produced(MIN, 1, (e, outcome.iteration), 1)
        report.capabilities(MIN, 1, (e, 0), -1)
        return report.capabilities(MIN, 1, (e + 1, 0), 1) if more else report

    def end_report(self, e):
        # the input ended: the seeds output and min drop what they held for epoch e
        return Report().capabilities(INPUT, 1, (e,), -1).capabilities(MIN, 1, (e, 0), -1)

    def holding(self):
        return self.relax.ids if self.relax is not None else set()

    def result_ids(self):
        return set(self.relax.result_ids) if self.relax is not None else set()

    def summary(self, e, outcome, *, seconds, frontier, kernels, source, new_rows,
                rows_so_far):
        self.decisions.append((e, outcome.iteration, "final", frontier))
        relax = self.relax
        return SsspEpoch(e, outcome.stats.get("vertices", len(self.vertices)), outcome.rows,
                         self.n_edges, outcome.rounds,
                         seconds, outcome.stats["max_distance"], frontier, source,
                         self.new_edges, where="driver" if relax is None else "spark",
                         cut=relax.n_cut / self.n_edges if relax is not None and self.n_edges
                         else 0.0, local_rounds=outcome.stats["local_rounds"],
                         both_ways=self.undirected)

    def run(self) -> SsspResult:
        result = super().run()
        result.decisions, result.weighted = self.decisions, self.weighted
        result.dataflow = self.driver.dataflow
        return result


def run_sssp(spark, edges, source: int, *, epochs: int = 1, out: str | None = None,
             weighted: bool = False, undirected: bool = False, partitions: int | None = None,
             progress: bool | int | None = None, on_epoch=None, task_wrapper=None,
             follow: float | None = None, checkpoint_dir: str | None = None,
             progress_log=None, overwrite: bool = False,
             partitioner: str = "locality", columns=None, table: str | None = None,
             fmt: str | None = None, header: str = "auto", epoch_column: str | None = None,
             epoch_every: str | None = None, ids: str = "int",
             changes: bool = False) -> SsspResult:
    """Run the incremental shortest-paths job from ``source`` (:class:`SsspJob`).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    edges : str, Path, pyarrow.Table, pyspark.sql.DataFrame or SparkEdges
        An edge file (text, CSV, Parquet) cut into ``epochs`` slices, a directory of epoch
        files, or an Arrow table with columns ``src``, ``dst`` (and ``weight``) -- read
        by the driver as the WCC job reads them
        (:func:`~spark_plugin.sources.local.epoch_sources`), with a third column of weights
        when ``weighted`` (:func:`~spark_plugin.sources.local.read_weighted_edges`).
        A **Spark source** is read by the executors, as ``run_wcc`` reads one
        (:mod:`spark_plugin.sources`): a Hadoop URI, a Spark-written directory, a DataFrame
        (never collected) or ``table``; epochs as ``epochs`` slices in read order or
        ``epoch_column``'s values or windows. Its epochs that fit the driver's budget are
        collected and finished there; past it the distances stay in Spark
        (:mod:`spark_plugin.jobs.sssp.spark`) and are written by the executors, and without
        ``out`` ``result.distances`` is a Spark DataFrame ``vertex, distance``. Any input
        past the budget is computed that way: a local Parquet file is then read by the
        executors too (``file://PATH``, the same slices, recorded as the driver's reading
        would be), other local input is read by the driver and handed to Spark epoch by
        epoch; a local input's ``result.distances`` stays a table.
    source : int or str
        The vertex distances are measured from (a non-negative int64; it need not have an
        edge: its distance is 0 in every epoch). With ``ids="string"``: its name, which
        must be in some edge.
    epochs : int
        Number of slices of a single file or table.
    out : str, optional
        Parquet dataset of ``epoch, vertex, distance``, one part per final epoch, reached
        vertices only (``distance`` int64 hops, or double with weights). A local ``out``
        keeps a manifest and is resumable as ``tfront wcc``'s is (docs/wcc.md, "Crash
        recovery"): a rerun of the same job (input, epochs, source, weighted, undirected)
        computes only the epochs not final there, another job's ``out`` is refused.
        Without it the last epoch's distances are in ``result.distances``.
    weighted : bool
        Edges carry a third column, a finite weight ``>= 0``; distances are sums of weights.
    undirected : bool
        Every edge also leads from ``dst`` to ``src``.
    partitions : int, optional
        Spark partitions (one ``step`` task each per round on Spark); default the session's
        parallelism.
    partitioner : str
        How vertices are placed on the partitions once the epochs run on Spark (the edges
        so far past :func:`driver_finish_rows`): ``locality`` (default: ranges of ids cut
        at quantiles that Spark samples from the first Spark epoch's sources; neighbours
        with near ids stay together, so rounds follow how often a shortest path crosses
        partitions) or ``hash`` (``v % P``). The epoch line says the share of cut edges.
    progress : bool or int, optional
        As for :func:`~spark_plugin.jobs.wcc.job.run_wcc`: on a terminal a bar of final epochs
        (default), ``2`` also a line per round on stderr, ``False``/``0`` nothing.
    on_epoch : callable, optional
        Called with each :class:`SsspEpoch` after it is written.
    task_wrapper : callable, optional
        Testing hook: ``task_wrapper(fn)`` wraps every task function ``fn(partition, rows)``.
    follow, checkpoint_dir, progress_log, overwrite
        As for :func:`~spark_plugin.jobs.wcc.job.run_wcc`: a directory consumed as a stream; a
        reliable directory for the partitions' edges (checkpointed once per epoch); a JSON
        lines log of every frontier change (``tfront progress``); start ``out`` over.
    columns : str or sequence, optional
        The input columns read as ``src``, ``dst`` (and, ``weighted``, ``weight``): names
        or 1-based numbers, ``"from,to"`` or ``("from", "to", "w")``
        (:class:`~spark_plugin.sources.columns.EdgeColumns`); part of the job's fingerprint.
    table, fmt, header, epoch_column, epoch_every, ids
        A Spark source's options, as for :func:`~spark_plugin.jobs.wcc.job.run_wcc`; with
        ``ids="string"`` the distances are written with the vertices' names.
    changes : bool
        With ``out``: write for each epoch only the vertices whose distance is new or
        changed since the epoch before (epoch 0: every reached vertex); the distances after
        epoch ``e`` are, per vertex, its row of the latest epoch ``<= e``.

    Raises
    ------
    EdgeInputError
        Malformed input (file and line named); nothing is written for that epoch.
    OutputStateError
        ``out`` exists but cannot be resumed (another job's, not resumable, damaged).
    SsspProtocolError, spark_plugin.errors.MissingBatchError
        A frontier did not advance as required (a task's report was lost).
    ValueError
        ``source`` or ``partitions`` is not a non-negative / positive integer, or
        ``partitioner`` is not one of :data:`PARTITIONERS`.
    """
    picked = EdgeColumns.parse(columns, weighted=bool(weighted))   # before anything runs
    edges = spark_source(edges, epochs=epochs, columns=picked, table=table, fmt=fmt,
                         header=header, epoch_column=epoch_column, epoch_every=epoch_every,
                         follow=follow, ids=ids, weighted=bool(weighted))
    job = SsspJob(spark, edges, source, weighted=weighted, undirected=undirected,
                  partitioner=partitioner,
                  epochs=epochs, out=out, partitions=partitions, progress=progress,
                  on_epoch=on_epoch, task_wrapper=task_wrapper, follow=follow,
                  checkpoint_dir=checkpoint_dir, progress_log=progress_log,
                  overwrite=overwrite, changes=changes)
    job.columns = picked
    return job.run()
