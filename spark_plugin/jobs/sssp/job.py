"""Incremental single-source shortest paths on Spark, decided by frontiers.

:func:`run_sssp` reads edges in epochs (as the WCC job does: :mod:`spark_plugin.jobs.edges`, or
:mod:`spark_plugin.jobs.sssp.io` with weights) and, per epoch, computes the distance from one
source vertex to every vertex of all edges seen so far: hop counts (BFS levels) without
weights, sums of non-negative weights with them. Edges are only ever added, so distances
only go down and the previous epoch's distances are a valid start: an epoch relaxes from the
reached sources of its new edges only.

The dataflow (:func:`sssp_dataflow`, timestamps ``(epoch, round)`` inside the loop):

* ``input`` sends the epoch's new edges to ``relax.in1`` and the *seeds* -- the vertices
  whose distance must be propagated again (the source in epoch 0; afterwards the reached
  sources of new edges) -- to ``relax.in2`` (``relax.in0`` is the feedback's);
* ``relax`` (Spark tasks, one per partition; each partition holds the edges whose source
  hashes to it as a CSR, cached between rounds) sends, for every active vertex ``v`` at
  distance ``d`` and edge ``v -> u`` of weight ``w``, the candidate ``(u, d + w)`` -- the
  smallest per ``u`` -- to ``min.in0`` (:func:`gpu_kernels.shortest_paths.relax`);
* ``min`` (on the driver, which holds the distances) keeps the candidates that lower a
  distance and sends them around the feedback (``round + 1``) to ``relax.in0``; its second
  output carries the epoch's distances to ``output``.

Every Spark task reports what it consumed and produced in these operators' words; the driver
decides only from frontiers (docs/jobs.md):

* round ``i`` of epoch ``e`` is complete when the frontiers at ``relax.in0`` and ``min.in0``
  have no element ``<= (e, i)``;
* the epoch's relaxation has converged when the frontier at ``relax.in0`` has no element of
  epoch ``e`` (nothing in flight, no capability that could send any);
* epoch ``e`` is final when the frontier at ``output.in0`` has passed ``e``; only then are its
  distances written.

The job is an :class:`~spark_plugin.jobs.framework.EpochJob` (:class:`SsspJob`): the framework reads
the epochs, guards and applies every report exactly once, checks the output frontier, writes
each final epoch to ``out`` -- a local one with its manifest, resumable -- and draws the
progress bar; this module is the dataflow and the algorithm.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from engine import Report
from engine.jit import CompileWatch
from gpu_kernels.shortest_paths import (csr_by_source, improve, merge_csr, relax, unreached)

from spark_plugin.jobs.framework import EpochJob, EpochOutcome, JobProtocolError, JobResult
from spark_plugin.jobs.sssp.io import weighted_epoch_sources, weighted_table
from spark_plugin.jobs.edges import EdgeInputError

__all__ = ["run_sssp", "SsspJob", "SsspResult", "SsspEpoch", "SsspProtocolError",
           "sssp_dataflow", "sssp_fingerprint", "EdgeInputError"]

log = logging.getLogger(__name__)

PRODUCER = "sssp"
#: A round's active vertices travel inside its task closures up to this many; beyond it they
#: are broadcast (one copy per executor instead of one per task).
BROADCAST_ACTIVE = 1 << 16
#: Why a ``relax`` task's kernels ran where they did (they have no GPU twin).
CPU_ONLY = "the shortest-paths kernels run on the CPU only"


class SsspProtocolError(JobProtocolError):
    """A frontier did not advance as the protocol requires (a lost or duplicated report)."""


#: Operator paths in the dataflow (:func:`sssp_dataflow`).
INPUT, RELAX, MIN, FEEDBACK, OUTPUT = "input", "loop/relax", "loop/min", "loop/feedback", "output"


def sssp_dataflow():
    """The job's dataflow as operators and a loop scope (:mod:`engine.operate.dataflow`).

    ``input`` (epochs ``(e,)``; out0 edges, out1 seeds) feeds the scope ``loop`` (timestamps
    ``(e, round)``) at its inputs 0 and 1; inside, ``relax`` takes the feedback (in0), the
    edges (in1) and the seeds (in2) and sends candidates to ``min``, whose out0 goes around
    ``feedback`` (``round + 1``) and whose out1 leaves the scope to ``output``. ``input``
    holds a capability for epoch 0 on both outputs, ``min`` one for ``(0, 0)`` on out1 (the
    epoch's distances).

    >>> df = sssp_dataflow()
    >>> df.external_summary("loop/min")
    {(0, 0): (Summary(1->1, keep=1, d_out=(0,), d_cnt=(1,), reset=()),)}
    """
    from engine import BOUNDARY, Operate, Scope, Summary

    root = Scope("sssp", m=1)
    inp = root.add(Operate(INPUT, 0, 2, capabilities={0: [(0,)], 1: [(0,)]}))
    loop = Scope("loop", 2, 1, depth=1)
    relax = loop.add(Operate("relax", 3, 1, summary={(i, 0): Summary.identity(1)
                                                    for i in range(3)}))
    mn = loop.add(Operate("min", 1, 2, summary={(0, o): Summary.identity(1) for o in (0, 1)},
                          capabilities={1: [(0, 0)]}))
    fb = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1)}))
    loop.connect(BOUNDARY, 0, relax, 1)
    loop.connect(BOUNDARY, 1, relax, 2)
    loop.connect(relax, 0, mn, 0)
    loop.connect(mn, 0, fb, 0)
    loop.connect(fb, 0, relax, 0)
    loop.connect(mn, 1, BOUNDARY, 0)
    lp = root.add(loop)
    out = root.add(Operate(OUTPUT, 1, 0))
    root.connect(inp, 0, lp, 0)
    root.connect(inp, 1, lp, 1)
    root.connect(lp, 0, out, 0)
    return root.build()


@dataclass(frozen=True)
class SsspEpoch:
    """One final epoch: vertices seen so far, how many the source reaches, edges so far (and
    the epoch's own), relaxation rounds, wall seconds, the largest finite distance, and the
    frontier at ``output.in0`` when the epoch was declared final."""

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

    #: The counts of this job in the progress log's ``epoch`` event (besides ``epoch``,
    #: ``vertices``, ``edges``, ``rounds``, ``seconds``).
    log_fields = ("reached", "max_distance")

    def line(self) -> str:
        """``epoch E: vertices V, reached R, edges M, rounds K, max distance D, S.SS s``."""
        return (f"epoch {self.epoch}: vertices {self.vertices}, reached {self.reached}, edges "
                f"{self.edges}, rounds {self.rounds}, max distance {self.max_distance:g}, "
                f"{self.seconds:.2f} s")


@dataclass
class SsspResult(JobResult):
    """What :func:`run_sssp` did (:class:`~spark_plugin.jobs.framework.JobResult`, which documents the
    common fields). ``distances`` (``vertex, distance``, reached vertices only, sorted by
    vertex) is the last final epoch's when no ``out`` was given; ``decisions`` the frontiers
    each decision of this run was taken from, in order: ``(epoch, round, what, frontier)``
    with ``what`` one of ``round`` (the frontiers at relax.in0 and min.in0 passed
    ``(e, round)``; ``frontier`` is the pair of them, relax.in0's first), ``converged`` (relax.in0 has no element of epoch ``e``) and ``final``
    (output.in0 passed ``e``); ``stages`` the Spark jobs of the rounds (one per round).

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


class _Relax:
    """The ``mapPartitionsWithIndex`` function of one round: the ``relax`` operator on one
    partition. Its element is ``(csr, added)``: the partition's edges and how many of them
    the epoch added (consumed at ``relax.in1`` in round 0). It yields one
    ``(partition, vertices, distances, report)``: the candidates and the task's
    :class:`~engine.operate.dataflow.Report` as plain arrays (``to_arrays``)."""

    def __init__(self, epoch: int, it: int, active, wrap=None):
        self.epoch, self.it, self.active, self.wrap = epoch, it, active, wrap

    def __call__(self, p, elements):
        fn = self._run if self.wrap is None else self.wrap(self._run)
        return fn(p, elements)

    def _run(self, p, elements):
        t = (self.epoch, self.it)
        av, ad = (self.active if isinstance(self.active, list) else self.active.value)[p]
        # the active vertices: the seeds (in2) in round 0, then what came around the feedback
        report = Report().consumed(RELAX, 2 if self.it == 0 else 0, t, len(av))
        cvs, cds = [np.zeros(0, np.int64)], [np.zeros(0, ad.dtype)]
        for csr, added in elements:   # one element per partition; every one's candidates
            if self.it == 0:
                report.consumed(RELAX, 1, t, int(added))
            cv, cd = relax(csr, av, ad)
            cvs.append(cv)
            cds.append(cd)
        cv, cd = np.concatenate(cvs), np.concatenate(cds)
        report.produced(RELAX, 0, t, len(cv))
        yield p, cv, cd, report.to_arrays()


def _merge(pair):
    """Round 0 of an epoch: a partition's CSR with the epoch's new edges added."""
    old, (src, dst, w) = pair
    csr = csr_by_source(src, dst, w) if old is None else merge_csr(old[0], src, dst, w)
    return csr, len(src)


def _warm_kernels() -> None:
    """Run the shortest-paths kernels once (hops and weights): loads them from Numba's cache,
    or compiles them there the first time."""
    x, y = np.array([1, 0], np.int64), np.array([0, 2], np.int64)
    for w in (np.ones(2, np.int64), np.ones(2, np.float64)):
        cv, cd = relax(csr_by_source(x, y, w), x, w)
        improve(np.array([0, 1, 2], np.int64), np.full(3, unreached(w.dtype)), cv, cd)


def sssp_fingerprint(edges, epochs: int, follow, source: int, weighted: bool,
                     undirected: bool, dataframe: dict | None = None) -> dict:
    """What makes two shortest-paths runs the same job (recorded in a local ``out``'s
    manifest): the input and its epochs (:func:`~spark_plugin.jobs.recovery.job_fingerprint`)
    and the options that change the distances."""
    from spark_plugin.jobs.recovery import job_fingerprint

    columns = ("src", "dst", "weight") if weighted else ("src", "dst")
    return {**job_fingerprint(edges, epochs, follow, columns=columns, dataframe=dataframe),
            "job": "sssp", "source": int(source),
            "weighted": bool(weighted), "undirected": bool(undirected)}


class SsspJob(EpochJob):
    """Incremental single-source shortest paths as an :class:`~spark_plugin.jobs.framework.EpochJob`
    (:func:`run_sssp` runs it; the module docstring describes the algorithm).

    The driver holds ``vertices`` (sorted, every vertex seen so far) and their distances
    (unreached: :func:`~gpu_kernels.shortest_paths.unreached`); the Spark partitions hold the
    edges as CSRs by source (an RDD cached between rounds, rebuilt each epoch with its new
    edges merged in). Resuming a local ``out``, the distances come from the last final
    epoch's result and the edges from the final epochs' input, read again (:meth:`replay`):
    the output holds the distances only.
    """

    name = PRODUCER
    input = (INPUT, 0)
    output = (OUTPUT, 0)
    result_columns = ("vertex", "distance")
    protocol_error = SsspProtocolError
    result_type = SsspResult

    def __init__(self, spark, edges, source: int, *, weighted: bool = False,
                 undirected: bool = False, **options):
        if isinstance(source, bool) or not isinstance(source, (int, np.integer)) or not (
                0 <= int(source) < (1 << 63)):
            raise ValueError(f"source must be a vertex id, a non-negative int64, got "
                             f"{source!r}")
        # the kernels run on the CPU; the driver reads every epoch (it computes the seeds)
        super().__init__(spark, edges, backend="cpu", executor_input=False, **options)
        self.source, self.weighted, self.undirected = int(source), weighted, undirected
        self.dtype = np.float64 if weighted else np.int64
        self.vertices = np.array([self.source], np.int64)
        self.dist = np.zeros(1, self.dtype)
        self.n_edges = 0
        self.backlog: list = []      # edges not yet in the partitions' CSRs (a resume's)
        self.csr = None              # the partitions' CSRs: an RDD of (csr, added)
        self.csr_ids: set = set()
        self.active = (np.zeros(0, np.int64), np.zeros(0, self.dtype))
        self.decisions: list = []

    # -- the dataflow, the input, the output -----------------------------------------------
    def dataflow(self):
        return sssp_dataflow()

    def sources(self):
        if not self.weighted:
            return super().sources()
        return weighted_epoch_sources(self.edges, self.epochs, follow=self.follow)

    def input_table(self, df):
        if not self.weighted:
            return super().input_table(df)
        from spark_plugin.service.batch import collect_arrow

        missing = [c for c in ("src", "dst", "weight") if c not in df.columns]
        if missing:
            raise EdgeInputError(f"edge DataFrame: no column {missing[0]!r} (columns: "
                                 f"{', '.join(df.columns) or '(none)'}); a weighted input "
                                 f"needs src, dst and weight", "edge DataFrame")
        return weighted_table(collect_arrow(df.select("src", "dst", "weight")),
                              "edge DataFrame")

    def fingerprint(self):
        return sssp_fingerprint(self.edges, self.epochs, self.follow, self.source,
                                self.weighted, self.undirected, dataframe=self.input_digest)

    @property
    def input_columns(self):
        return ("src", "dst", "weight") if self.weighted else ("src", "dst")

    def prepare(self):
        # the driver's kernels load (or compile, once) on the tracking thread meanwhile
        bar = self.bar

        def load():
            with CompileWatch(lambda: bar.note("compiling the Numba kernels (once: cached "
                                               "for later runs) ...")) as watch:
                _warm_kernels()
            return watch
        self.driver.load_kernels(load)

    def _edges_of(self, table: pa.Table):
        """An epoch's rows as edge arrays ``(src, dst, weight)`` (both ways if undirected)."""
        s = table.column("src").to_numpy().astype(np.int64)
        d = table.column("dst").to_numpy().astype(np.int64)
        w = (table.column("weight").to_numpy().astype(np.float64) if self.weighted
             else np.ones(len(s), np.int64))
        if self.undirected:
            s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
        return s, d, w

    def _grow(self, s, d) -> None:
        """Every vertex of the edges ``s -> d`` is seen: new ones are unreached."""
        grown = np.union1d(self.vertices, np.concatenate([s, d]))
        dist = np.full(len(grown), unreached(self.dtype), self.dtype)
        dist[np.searchsorted(grown, self.vertices)] = self.dist
        self.vertices, self.dist = grown, dist

    # -- resuming ----------------------------------------------------------------------------
    def resume(self, table):
        # the distances of the last final epoch; replay adds the vertices it did not reach
        self.vertices = table.column("vertex").to_numpy().astype(np.int64)
        self.dist = table.column("distance").to_numpy().astype(self.dtype)

    def replay(self, e, source):
        # the edges of a final epoch join the partitions' CSRs with the first epoch computed
        s, d, w = self._edges_of(source.read())
        self._grow(s, d)
        self.backlog.append((s, d, w))
        self.n_edges += len(s)

    # -- the algorithm -----------------------------------------------------------------------
    def input_report(self, e, inp):
        """The input sends the epoch's edges to ``relax.in1`` (with a resume's replayed
        ones) and the seeds -- the source in epoch 0, then the reached sources of the new
        edges -- to ``relax.in2``, and moves its seeds capability on (the framework moves
        the edges')."""
        s, d, w = self._edges_of(inp.table())
        self.new_edges = len(s)
        self.n_edges += len(s)
        self._grow(s, d)
        self.backlog.append((s, d, w))
        seeds = np.array([self.source], np.int64) if e == 0 else np.unique(s)
        seed_d = self.dist[np.searchsorted(self.vertices, seeds)]
        keep = seed_d != unreached(self.dtype)
        self.active = (seeds[keep], seed_d[keep])
        sent = sum(len(x[0]) for x in self.backlog)
        report = Report().produced(INPUT, 0, (e,), sent).produced(INPUT, 1, (e,), int(keep.sum()))
        report.capabilities(INPUT, 1, (e,), -1)
        return report.capabilities(INPUT, 1, (e + 1,), 1) if inp.more else report

    def epoch(self, e, inp):
        """Bellman-Ford rounds from the seeds until the frontier at ``relax.in0`` has no
        element of epoch ``e``; the result is the distances of the reached vertices."""
        d = self.driver
        old_ids = self.csr_ids
        self._merge_new_edges()
        active_v, active_d = self.active
        it = 0
        while True:
            cv, cd = self._relax_round(e, it, active_v, active_d)
            if it == 0:   # the partitions' CSRs of the last epoch are superseded
                d.checkpoints.release(old_ids)
            # min: consumes the candidates, sends the lowered distances around the loop
            active_v, active_d = improve(self.vertices, self.dist, cv,
                                         cd.astype(self.dtype, copy=False))
            k = len(active_v)
            d.report(Report().consumed(MIN, 0, (e, it), len(cv)).produced(MIN, 0, (e, it), k)
                     .consumed(FEEDBACK, 0, (e, it), k).produced(FEEDBACK, 0, (e, it + 1), k))
            fr, fm = d.round_passed(e, it, (RELAX, 0), (MIN, 0))
            self.decisions.append((e, it, "round", (tuple(fr), tuple(fm))))
            self.bar.round(e, it + 1, fr, "relax.in0")
            if d.converged(e, fr):   # nothing of epoch e can reach relax again
                self.decisions.append((e, it, "converged", tuple(fr)))
                break
            it += 1
        reached = self.dist != unreached(self.dtype)
        table = pa.table({"vertex": pa.array(self.vertices[reached]),
                          "distance": pa.array(self.dist[reached])})
        return EpochOutcome(table, int(reached.sum()), it, it + 1, stats={
            "max_distance": float(self.dist[reached].max()) if reached.any() else 0.0})

    def _merge_new_edges(self) -> None:
        """The edges not yet in the partitions' CSRs (partitioned by source) are merged in
        by round 0 of the epoch, which reports them consumed at ``relax.in1``."""
        sc, P = self.spark.sparkContext, self.P
        s, dst, w = (np.concatenate(x) for x in zip(*self.backlog))
        self.backlog = []
        part = s % P
        new = sc.parallelize([(s[part == p], dst[part == p], w[part == p]) for p in range(P)], P)
        old = self.csr if self.csr is not None else sc.parallelize([None] * P, P)
        self.csr, self.csr_ids = self.driver.checkpoints.checkpoint_rdd(old.zip(new).map(_merge))

    def _relax_round(self, e, it, active_v, active_d):
        """One Spark job: every partition's ``relax`` task over its share of the active
        vertices; its reports applied as stage ``seq``. Returns the candidates."""
        d, sc, P = self.driver, self.spark.sparkContext, self.P
        s = d.new_stage("relax", e, it)
        split = active_v % P
        shares = [(active_v[split == p], active_d[split == p]) for p in range(P)]
        # a small active set travels with the task; a large one is broadcast once
        bc = sc.broadcast(shares) if len(active_v) > BROADCAST_ACTIVE else None
        got = self.csr.mapPartitionsWithIndex(
            _Relax(e, it, shares if bc is None else bc, self.task_wrapper)).collect()
        if bc is not None:
            bc.destroy()
        d.apply_stage({f"{PRODUCER}-{p}": Report.from_arrays(**cols) for p, _, _, cols in got},
                      s, f"relax, epoch {e} round {it}",
                      [("cpu", CPU_ONLY)] * len(got))
        cv = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
        cd = np.concatenate([g[2] for g in got]) if got else np.zeros(0, self.dtype)
        return cv, cd

    def output_report(self, e, outcome, more):
        # min sends the epoch's distances to the output and moves its capability on
        report = Report().produced(MIN, 1, (e, outcome.iteration), 1)
        report.capabilities(MIN, 1, (e, 0), -1)
        return report.capabilities(MIN, 1, (e + 1, 0), 1) if more else report

    def end_report(self, e):
        # the input ended: the seeds output and min drop what they held for epoch e
        return Report().capabilities(INPUT, 1, (e,), -1).capabilities(MIN, 1, (e, 0), -1)

    def holding(self):
        return set(self.csr_ids)

    def summary(self, e, outcome, *, seconds, frontier, kernels, source, new_rows,
                rows_so_far):
        self.decisions.append((e, outcome.iteration, "final", frontier))
        return SsspEpoch(e, len(self.vertices), outcome.rows, self.n_edges, outcome.rounds,
                         seconds, outcome.stats["max_distance"], frontier, source,
                         self.new_edges)

    def run(self) -> SsspResult:
        result = super().run()
        result.decisions, result.weighted = self.decisions, self.weighted
        result.dataflow = self.driver.dataflow
        return result


def run_sssp(spark, edges, source: int, *, epochs: int = 1, out: str | None = None,
             weighted: bool = False, undirected: bool = False, partitions: int | None = None,
             progress: bool | int | None = None, on_epoch=None, task_wrapper=None,
             follow: float | None = None, checkpoint_dir: str | None = None,
             progress_log=None, overwrite: bool = False) -> SsspResult:
    """Run the incremental shortest-paths job from ``source`` (:class:`SsspJob`).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    edges : str, Path, pyarrow.Table or pyspark.sql.DataFrame
        An edge file (text, CSV, Parquet) cut into ``epochs`` slices, a directory of epoch
        files, or a table / DataFrame with columns ``src``, ``dst`` (and ``weight``) -- read
        as the WCC job reads them (:func:`~spark_plugin.jobs.edges.epoch_sources`), with a third
        column of weights when ``weighted`` (:mod:`spark_plugin.jobs.sssp.io`).
    source : int
        The vertex distances are measured from (a non-negative int64; it need not have an
        edge: its distance is 0 in every epoch).
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
        Spark partitions (one ``relax`` producer each); default the session's parallelism.
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

    Raises
    ------
    EdgeInputError
        Malformed input (file and line named); nothing is written for that epoch.
    OutputStateError
        ``out`` exists but cannot be resumed (another job's, not resumable, damaged).
    SsspProtocolError, spark_plugin.errors.MissingBatchError
        A frontier did not advance as required (a task's report was lost).
    ValueError
        ``source`` or ``partitions`` is not a non-negative / positive integer.
    """
    return SsspJob(spark, edges, source, weighted=weighted, undirected=undirected,
                   epochs=epochs, out=out, partitions=partitions, progress=progress,
                   on_epoch=on_epoch, task_wrapper=task_wrapper, follow=follow,
                   checkpoint_dir=checkpoint_dir, progress_log=progress_log,
                   overwrite=overwrite).run()
