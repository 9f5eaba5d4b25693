"""Incremental single-source shortest paths on Spark, decided by frontiers.

:func:`run_sssp` reads edges in epochs (as the WCC job does: :mod:`spark_plugin.wcc_io`, or
:mod:`spark_plugin.sssp_io` with weights) and, per epoch, computes the distance from one
source vertex to every vertex of all edges seen so far: hop counts (BFS levels) without
weights, sums of non-negative weights with them. Edges are only ever added, so distances
only go down and the previous epoch's distances are a valid start: an epoch relaxes from the
reached sources of its new edges only.

The dataflow (:func:`sssp_dataflow`, timestamps ``(epoch, round)`` inside the loop):

* ``input`` sends the epoch's new edges to ``relax.in1`` and the *seeds* -- the vertices
  whose distance must be propagated again (the source in epoch 0; afterwards the reached
  sources of new edges) -- to ``relax.in0``;
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
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine import Report
from engine.errors import TimelyFrontierError
from gpu_kernels.shortest_paths import (csr_by_source, improve, merge_csr, relax, unreached)

from .schema import delta_table
from .service import FrontierService
from .sssp_io import weighted_epoch_sources
from .wcc_io import EdgeInputError, epoch_sources

__all__ = ["run_sssp", "SsspResult", "SsspEpoch", "SsspProtocolError", "sssp_dataflow",
           "EdgeInputError"]

log = logging.getLogger(__name__)

PRODUCER = "sssp"
DRIVER = "sssp-driver"
#: A round's active vertices travel inside its task closures up to this many; beyond it they
#: are broadcast (one copy per executor instead of one per task).
BROADCAST_ACTIVE = 1 << 16


class SsspProtocolError(TimelyFrontierError, RuntimeError):
    """A frontier did not advance as the protocol requires (a lost or duplicated report)."""


#: Operator paths in the dataflow (:func:`sssp_dataflow`).
INPUT, RELAX, MIN, FEEDBACK, OUTPUT = "input", "loop/relax", "loop/min", "loop/feedback", "output"


def sssp_dataflow():
    """The job's dataflow as operators and a loop scope (:mod:`engine.operate`).

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

    def line(self) -> str:
        """``epoch E: vertices V, reached R, edges M, rounds K, max distance D, S.SS s``."""
        return (f"epoch {self.epoch}: vertices {self.vertices}, reached {self.reached}, edges "
                f"{self.edges}, rounds {self.rounds}, max distance {self.max_distance:g}, "
                f"{self.seconds:.2f} s")


@dataclass
class SsspResult:
    """What :func:`run_sssp` did. ``distances`` (``vertex, distance``, reached vertices
    only, sorted by vertex) is the last epoch's when no ``out`` was given; ``decisions`` the
    frontiers each decision was taken from, in order: ``(epoch, round, what, frontier)``
    with ``what`` one of ``round`` (the frontiers at relax.in0 and min.in0 passed
    ``(e, round)``), ``converged`` (relax.in0 has no element of epoch ``e``) and ``final``
    (output.in0 passed ``e``); ``stages`` the Spark jobs run (one per round)."""

    epochs: list[SsspEpoch] = field(default_factory=list)
    seconds: float = 0.0
    tracking_seconds: float = 0.0
    distances: pa.Table | None = None
    service: FrontierService | None = None
    dataflow: object = None
    stages: int = 0
    decisions: list = field(default_factory=list)
    weighted: bool = False

    def total_line(self, out: str | None = None) -> str:
        """``total: N epochs, S s (progress tracking T s), distances in OUT``.

        >>> SsspResult(seconds=2.0, tracking_seconds=0.01).total_line()
        'total: 0 epochs, 0 rounds, 2.00 s (progress tracking 0.01 s); nothing written'
        """
        rounds = sum(e.rounds for e in self.epochs)
        if not self.epochs:
            saved = "; nothing written" + (f" to {out}" if out else "")
        elif out:
            saved = f", distances in {out}"
        else:
            saved = ", distances not saved (no --out given)"
        return (f"total: {len(self.epochs)} epochs, {rounds} rounds, {self.seconds:.2f} s "
                f"(progress tracking {self.tracking_seconds:.2f} s){saved}")


class _Relax:
    """The ``mapPartitionsWithIndex`` function of one round: the ``relax`` operator on one
    partition. Its element is ``(csr, added)``: the partition's edges and how many of them
    the epoch added (consumed at ``relax.in1`` in round 0). It yields one
    ``(partition, vertices, distances, report)``: the candidates and the task's
    :class:`~engine.operate.Report` as plain arrays (``to_arrays``)."""

    def __init__(self, epoch: int, it: int, active, wrap=None):
        self.epoch, self.it, self.active, self.wrap = epoch, it, active, wrap

    def __call__(self, p, elements):
        fn = self._run if self.wrap is None else self.wrap(self._run)
        return fn(p, elements)

    def _run(self, p, elements):
        from engine import Report

        t = (self.epoch, self.it)
        av, ad = (self.active if isinstance(self.active, list) else self.active.value)[p]
        # the active vertices: the seeds (in2) in round 0, then what came around the feedback
        report = Report().consumed(RELAX, 2 if self.it == 0 else 0, t, len(av))
        cv = np.zeros(0, np.int64)
        cd = np.zeros(0, ad.dtype)
        for csr, added in elements:
            if self.it == 0:
                report.consumed(RELAX, 1, t, int(added))
            cv, cd = relax(csr, av, ad)
        report.produced(RELAX, 0, t, len(cv))
        yield p, cv, cd, report.to_arrays()


def _merge(pair):
    """Round 0 of an epoch: a partition's CSR with the epoch's new edges added."""
    old, (src, dst, w) = pair
    csr = csr_by_source(src, dst, w) if old is None else merge_csr(old[0], src, dst, w)
    return csr, len(src)


def _le(t, u) -> bool:
    return all(x <= y for x, y in zip(t, u))


def _fmt(frontier) -> str:
    return "{" + ", ".join("(" + ", ".join(str(x) for x in t) + ")" for t in frontier) + "}"


def _write_epoch(spark, out, epoch: int, table: pa.Table) -> None:
    """Append one epoch's ``epoch, vertex, distance`` to the Parquet dataset ``out``: a local
    path gets one part file, written under a hidden name and renamed when complete (readers
    skip hidden files); any other path is appended to by Spark's writer."""
    import uuid

    import pyarrow.parquet as pq

    n = table.num_rows
    rows = pa.table({"epoch": pa.array(np.full(n, epoch, np.int64)),
                     "vertex": table.column("vertex"), "distance": table.column("distance")})
    text = str(out)
    if "://" in text and not text.startswith("file://"):
        spark.createDataFrame(rows).write.mode("append").parquet(text)
        return
    d = Path(text[len("file://"):] if text.startswith("file://") else text)
    d.mkdir(parents=True, exist_ok=True)
    name = f"part-epoch-{epoch:06d}-{uuid.uuid4().hex}.parquet"
    pq.write_table(rows, d / f".{name}.tmp")
    os.replace(d / f".{name}.tmp", d / name)


def run_sssp(spark, edges, source: int, *, epochs: int = 1, out: str | None = None,
             weighted: bool = False, undirected: bool = False, partitions: int | None = None,
             progress: int = 0, on_epoch=None, task_wrapper=None) -> SsspResult:
    """Run the incremental shortest-paths job from ``source``.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    edges : str, Path or pyarrow.Table
        An edge file (text, CSV, Parquet) cut into ``epochs`` slices, a directory of epoch
        files, or a table with columns ``src``, ``dst`` (and ``weight``) -- read as the WCC
        job reads them (:func:`~spark_plugin.wcc_io.epoch_sources`), with a third column of
        weights when ``weighted`` (:mod:`spark_plugin.sssp_io`).
    source : int
        The vertex distances are measured from (a non-negative int64; it need not have an
        edge: its distance is 0 in every epoch).
    epochs : int
        Number of slices of a single file or table.
    out : str, optional
        Parquet dataset to append ``epoch, vertex, distance`` to, one append per final
        epoch, reached vertices only (``distance`` int64 hops, or double with weights).
        Without it the last epoch's distances are in ``result.distances``.
    weighted : bool
        Edges carry a third column, a finite weight ``>= 0``; distances are sums of weights.
    undirected : bool
        Every edge also leads from ``dst`` to ``src``.
    partitions : int, optional
        Spark partitions (one ``relax`` producer each); default the session's parallelism.
    progress : int
        ``2``: one line per round on stderr (``sssp: epoch E round R: ...``); else nothing.
    on_epoch : callable, optional
        Called with each :class:`SsspEpoch` after it is written.
    task_wrapper : callable, optional
        Testing hook: ``task_wrapper(fn)`` wraps every task function ``fn(partition, rows)``.

    Raises
    ------
    EdgeInputError
        Malformed input (file and line named); nothing is written for that epoch.
    SsspProtocolError, spark_plugin.errors.MissingBatchError
        A frontier did not advance as required (a task's report was lost).
    ValueError
        ``source`` or ``partitions`` is not a non-negative / positive integer.
    """
    t_start = time.perf_counter()
    if isinstance(source, bool) or not isinstance(source, (int, np.integer)) or not (
            0 <= int(source) < (1 << 63)):
        raise ValueError(f"source must be a vertex id, a non-negative int64, got {source!r}")
    if partitions is not None and (isinstance(partitions, bool) or int(partitions) != partitions
                                   or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
    source = int(source)
    sc = spark.sparkContext
    P = int(partitions or sc.defaultParallelism)
    df = sssp_dataflow()
    svc = FrontierService(df.graph, strict=True)
    result = SsspResult(service=svc, dataflow=df, weighted=weighted)
    total, sources = (weighted_epoch_sources if weighted else epoch_sources)(edges, epochs)
    dtype = np.float64 if weighted else np.int64
    inf = unreached(dtype)
    seq = {"stage": 0, "driver": 0}
    tracking = 0.0

    def apply(report, producer, s):
        """Guard ``report`` against the capabilities held (a rejected one changes nothing)
        and apply its pointstamps as the delivery unit ``(producer, s)``."""
        nonlocal tracking
        t0 = time.perf_counter()
        loc, ts, diff = df.check(report, svc)
        if not len(loc):   # nothing changed: the unit still arrives, as a marker row
            loc, ts, diff = [0], np.zeros((1, df.ports.W), np.int64), [0]
        svc.apply(delta_table(loc, ts, diff, producer, s))
        tracking += time.perf_counter() - t0

    def driver(report):
        apply(report, DRIVER, seq["driver"])
        seq["driver"] += 1

    def frontier(loc):
        nonlocal tracking
        t0 = time.perf_counter()
        f = svc.frontier(loc)
        tracking += time.perf_counter() - t0
        return f

    def say(text):
        if progress >= 2:
            print(f"sssp: {text}", file=sys.stderr, flush=True)

    vertices = np.array([source], np.int64)
    dist = np.zeros(1, dtype)
    edges_rdd = merged = None   # the partitions' CSRs: the last epoch's, this epoch's
    n_edges = 0
    relax_in0, min_in0 = df.target(RELAX, 0), df.target(MIN, 0)
    output_in0 = df.target(OUTPUT, 0)
    # the initial capabilities: the input's for epoch 0, min's for epoch 0's distances
    loc, ts, diff = df.ports.initial()
    svc.apply(delta_table(loc, ts, diff, DRIVER, seq["driver"]))
    seq["driver"] += 1
    try:
        for e, src_epoch in enumerate(sources):
            t_epoch = time.perf_counter()
            table = src_epoch.read()
            s = table.column("src").to_numpy().astype(np.int64)
            d = table.column("dst").to_numpy().astype(np.int64)
            w = (table.column("weight").to_numpy().astype(np.float64) if weighted
                 else np.ones(len(s), np.int64))
            if undirected:
                s, d, w = np.concatenate([s, d]), np.concatenate([d, s]), np.concatenate([w, w])
            n_new = len(s)
            n_edges += n_new
            # the distances of the vertices seen so far, new vertices unreached
            grown = np.union1d(vertices, np.concatenate([s, d]))
            new_dist = np.full(len(grown), inf, dtype)
            new_dist[np.searchsorted(grown, vertices)] = dist
            vertices, dist = grown, new_dist
            # seeds: the source in epoch 0; then the reached sources of the new edges
            seeds = np.array([source], np.int64) if e == 0 else np.unique(s)
            seed_d = dist[np.searchsorted(vertices, seeds)]
            keep = seed_d != inf
            active_v, active_d = seeds[keep], seed_d[keep]
            more = total is None or e + 1 < total
            # input: sends the edges and the seeds, moves its capabilities to the next epoch
            report = Report().produced(INPUT, 0, (e,), n_new).produced(INPUT, 1, (e,),
                                                                        len(active_v))
            for o in (0, 1):
                report.capabilities(INPUT, o, (e,), -1)
                if more:
                    report.capabilities(INPUT, o, (e + 1,), 1)
            driver(report)
            # the new edges, partitioned by source, join each partition's CSR in round 0
            part = s % P
            new = sc.parallelize([(s[part == p], d[part == p], w[part == p]) for p in range(P)], P)
            old = edges_rdd if edges_rdd is not None else sc.parallelize([None] * P, P)
            merged = old.zip(new).map(_merge)
            merged.cache()             # not pipelined into the rounds: computed once,
            merged.localCheckpoint()   # in round 0, its lineage cut there
            it = 0
            while True:
                stage = seq["stage"]
                seq["stage"] += 1
                sc.setJobDescription(f"sssp epoch {e} round {it}")
                split = active_v % P
                shares = [(active_v[split == p], active_d[split == p]) for p in range(P)]
                # a small active set travels with the task; a large one is broadcast once
                bc = sc.broadcast(shares) if len(active_v) > BROADCAST_ACTIVE else None
                fn = _Relax(e, it, shares if bc is None else bc, task_wrapper)
                got = merged.mapPartitionsWithIndex(fn).collect()
                if bc is not None:
                    bc.destroy()
                for p, _, _, cols in got:
                    apply(Report.from_arrays(**cols), f"{PRODUCER}-{p}", stage)
                want = {f"{PRODUCER}-{p}": stage for p in range(P)}
                have = {f"{PRODUCER}-{p}" for p, _, _, _ in got}
                if set(want) - have:
                    svc.check_complete(want)   # raises MissingBatchError naming them
                if it == 0 and edges_rdd is not None:
                    edges_rdd.unpersist(False)
                cv = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
                cd = np.concatenate([g[2] for g in got]) if got else np.zeros(0, dtype)
                # min: consumes the candidates, sends the lowered distances around the loop
                active_v, active_d = improve(vertices, dist, cv, cd.astype(dtype, copy=False))
                k = len(active_v)
                driver(Report().consumed(MIN, 0, (e, it), len(cv)).produced(MIN, 0, (e, it), k)
                       .consumed(FEEDBACK, 0, (e, it), k).produced(FEEDBACK, 0, (e, it + 1), k))
                fr, fm = frontier(relax_in0), frontier(min_in0)
                if any(_le(t, (e, it)) for t in fr) or any(_le(t, (e, it)) for t in fm):
                    raise SsspProtocolError(
                        f"epoch {e} round {it}: every task reported, but the frontier at "
                        f"relax.in0 {_fmt(fr)} / min.in0 {_fmt(fm)} has not passed ({e}, {it})")
                result.decisions.append((e, it, "round", tuple(fr)))
                say(f"epoch {e} round {it + 1}: {len(active_v)} distances lowered; frontier "
                    f"relax.in0 {_fmt(fr)}")
                if not any(t[0] <= e for t in fr):
                    result.decisions.append((e, it, "converged", tuple(fr)))
                    break
                it += 1
            edges_rdd = merged
            # min sends the epoch's distances to the output and moves its capability on
            report = Report().produced(MIN, 1, (e, 0), 1).capabilities(MIN, 1, (e, 0), -1)
            if more:
                report.capabilities(MIN, 1, (e + 1, 0), 1)
            driver(report)
            driver(Report().consumed(OUTPUT, 0, (e,), 1))   # the output takes them
            fo = frontier(output_in0)
            if any(t[0] <= e for t in fo):
                raise SsspProtocolError(f"epoch {e}: the frontier at output.in0 {_fmt(fo)} has "
                                        f"not passed epoch {e}")
            result.decisions.append((e, it, "final", tuple(fo)))
            reached = dist != inf
            table = pa.table({"vertex": pa.array(vertices[reached]),
                              "distance": pa.array(dist[reached])})
            src_epoch.check()
            if out is not None:
                _write_epoch(spark, out, e, table)
            summary = SsspEpoch(e, len(vertices), int(reached.sum()), n_edges, it + 1,
                                time.perf_counter() - t_epoch,
                                float(dist[reached].max()) if reached.any() else 0,
                                tuple(fo), src_epoch.what, n_new)
            result.epochs.append(summary)
            if on_epoch is not None:
                on_epoch(summary)
        if out is None:
            result.distances = table if result.epochs else None
    finally:
        sc.setJobDescription(None)
        for rdd in {id(r): r for r in (edges_rdd, merged) if r is not None}.values():
            rdd.unpersist(False)
    result.seconds = time.perf_counter() - t_start
    result.tracking_seconds = tracking
    result.stages = seq["stage"]
    return result
