"""The flagship job: incremental weakly connected components on Spark, driven by frontiers.

:func:`run_wcc` reads edges in epochs (:mod:`spark_plugin.sources`), and per epoch computes the
components of all edges seen so far (insertions only), in a number of Spark rounds that grows
with ``log n``, not with the graph's diameter:

1. **contract** -- the epoch's new edges plus the previous epoch's stars ``(component,
   vertex)`` are hash-partitioned; each task runs union-find (Numba) over its rows and emits
   one star edge per vertex (:func:`gpu_kernels.unionfind.uf_stars`);
2. **small-star / large-star** (Kiveris et al. 2014) alternate, one shuffle each, until an
   iteration changes no edge. The result is a star per component centred on its smallest id.

Where the kernels run (``backend``): every stage's tasks, and the driver when it finishes an
epoch, pick their kernels with :func:`wcc_kernels` -- the CuPy twins on the task's GPU where
one is usable (``cuda``, or ``auto`` on large enough inputs), the Numba CPU kernels otherwise,
with the reason logged once per Python worker. Every task reports the backend it used with
its delta rows; the driver counts them per stage and per epoch (:class:`EpochSummary`
``kernels``, :class:`WccResult` ``kernels`` and ``kernel_fallbacks``).

The loop is a real timely dataflow graph (:func:`wcc_graph`), tracked by a
:class:`~spark_plugin.service.frontier_service.FrontierService` on the driver. Every Spark task reports the
messages it consumed and produced as pointstamp count deltas (producer ``wcc-<partition>``,
``seq`` = global stage number; retried tasks are de-duplicated by the service); the driver
only ever decides from frontiers (docs/wcc.md):

* iteration ``i`` of epoch ``e`` is complete when the frontiers at ``star.in0`` and
  ``label.in0`` have no element ``<= (e, i)``;
* the loop has converged when the frontier at ``label.in0`` has no element of epoch ``e``
  (no new edge is in flight and nobody holds a capability that could send one);
* epoch ``e`` is final when the frontier at ``output.in0`` has no element ``(e', _)`` with
  ``e' <= e``; only then are its labels appended to ``out``.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import Backend, Summary
from engine.jit import CompileWatch
from engine.operate.dataflow import Dataflow, Operate, Report, Scope
from gpu_kernels.unionfind import compact_ids

from spark_plugin.service.device import KernelPlacement, place_kernels
from spark_plugin.jobs.framework import EpochJob, EpochOutcome, JobProtocolError, JobResult, StageTask
from spark_plugin.jobs.arrow import arrow_bool, arrow_fixed, arrow_numpy, from_ipc, to_ipc
from spark_plugin.jobs.progress_bar import fmt_frontier
from spark_plugin.jobs.budget import (DRIVER_FINISH_ROWS, DRIVER_JVM_BYTES_PER_ROW,  # noqa: F401
                                      DRIVER_PYTHON_BYTES_PER_ROW, DRIVER_RESULT_BYTES_PER_ROW)
from spark_plugin.jobs.budget import driver_finish_rows as budget_rows
from spark_plugin.sources import (EdgeColumns, EdgeInputError, edge_files, edge_format,
                                  even_cuts, parquet_file_rows, read_edges)
from spark_plugin.jobs.recovery import LOOP_DIR
from spark_plugin.sources.dataset import spark_source
from spark_plugin.jobs.wcc.partition import Partitioner, hash_preimages, locality_partition

__all__ = ["run_wcc", "read_edges", "WccResult", "EpochSummary", "WccGraph", "wcc_graph",
           "EdgeInputError", "WccProtocolError", "WccKernels", "wcc_kernels", "WCC_BACKENDS",
           "WccJob", "DEFAULT_LOOP_CHECKPOINT", "loop_checkpoint_seconds", "Partitioner",
           "range_cuts"]

log = logging.getLogger(__name__)

#: The backends ``run_wcc`` and ``tfront wcc --backend`` accept.
WCC_BACKENDS = (Backend.AUTO, Backend.CPU, Backend.CUDA)
PRODUCER = "wcc"
DRIVER = "wcc-driver"
OUTPUT = "wcc-output"
#: A Spark source's epoch of more rows picks its locality ranges from a seeded sample of about
#: this many rows (collected: 4 MiB), not from a quantile sketch over every row (on R-MAT 10M
#: the sketch took 11.8 s, the sample's quantiles 1.8 s; one run each, loaded machine).
CUT_SAMPLE_ROWS = 1 << 18
#: Ranges are used when they cut at most this share of what a random partition into ``P``
#: cuts (``1 - 1 / P``); else the epoch is contracted where it was read, with no shuffle.
RANGE_MAX_CUT = 0.5
#: An epoch whose loop input (new edges plus the previous stars) has at most
#: :func:`driver_finish_rows` rows is *finished on the driver*: the contract stage's output
#: (data and deltas) is collected in the same Spark job that computes it, and the driver runs
#: the small-star stage of iteration 0 as one global union-find (its deltas reported like a
#: stage's). The limit is the jobs' shared sizing rule (:mod:`spark_plugin.jobs.budget`);
#: ``$TFRONT_WCC_DRIVER_ROWS`` overrides it (``0``: every round on Spark).
DRIVER_ROWS_ENV = "TFRONT_WCC_DRIVER_ROWS"


#: Seconds between two loop checkpoints of an epoch (:func:`run_wcc` ``loop_checkpoint``).
DEFAULT_LOOP_CHECKPOINT = 60.0


def loop_checkpoint_seconds(value) -> float | None:
    """``run_wcc``'s ``loop_checkpoint`` as seconds (``None``: never): a number ``>= 0`` (``0``:
    after every round) or ``None`` / ``"off"``.

    Raises
    ------
    ConfigError
        Anything else (a negative or non-finite number, another word).

    >>> loop_checkpoint_seconds("off"), loop_checkpoint_seconds(0), loop_checkpoint_seconds("90")
    (None, 0.0, 90.0)
    """
    from spark_plugin.errors import ConfigError

    if value is None or isinstance(value, str) and value.strip().lower() == "off":
        return None
    try:
        seconds = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        seconds = -1.0
    if not (0 <= seconds < float("inf")):
        raise ConfigError(f"loop_checkpoint must be a number of seconds >= 0 or 'off', got "
                          f"{value!r}")
    return seconds


#: The loop's data rows: an edge ``(a, b)`` and whether it is new (``f``).
EDGE_DDL = "a bigint, b bigint, f boolean"
_EDGE_SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64())])
#: Stage kinds as their steps are called in job descriptions and the progress log.
_STEP_NAMES = {"small": "small-star", "large": "large-star", "links": "root-links",
               "final": "union-find in one task"}
#: The inputs a round's completion is read at (:meth:`~spark_plugin.jobs.framework.JobDriver.round_passed`):
#: the label operator's feedback input (also the loop's convergence) and the star operator's.
LABEL_IN0, STAR_IN0 = ("label", 0), ("star", 0)


class WccProtocolError(JobProtocolError):
    """A frontier did not advance as the protocol requires (a lost or duplicated delta batch)."""


@dataclass(frozen=True)
class WccGraph:
    """The job's dataflow (:func:`wcc_graph`), its flat graph and the locations the driver
    reads.

    Operators (all at loop depth 1, timestamps ``(epoch, iteration)``): ``edges`` (a), ``label``
    (b: union-find / large-star; in0 labels from the feedback, in1 edges), ``star`` (s:
    small-star; out0 to the feedback, out1 results), ``feedback`` (c: ``+(0, 1)``),
    ``output`` (d).
    """

    graph: object
    a_out: int
    b_in0: int
    b_in1: int
    s_in0: int
    s_out1: int
    d_in0: int
    dataflow: Dataflow | None = None


def wcc_graph() -> WccGraph:
    """Build the WCC dataflow (Figure 2 of the verified-progress-tracking paper, with the
    label operator split into its two exchange stages) as operators in a loop scope.

    The scope is the root and runs at loop depth 1, so that every operator -- the edge input
    and the output too -- speaks of ``(epoch, iteration)``, as the progress log always did.
    Initial capabilities, all at ``(0, 0)``: the edge input's (for the next epoch), the
    label operator's on its output (it re-sends its state, the previous epoch's stars, in
    the contract stage) and the star operator's on its results output (held until the
    epoch's labels are delivered).

    >>> wg = wcc_graph()
    >>> wg.dataflow.external_summary("star")
    {(0, 0): (Summary(1->1, keep=1, d_out=(0,), d_cnt=(1,), reset=()),)}
    >>> wg.graph.describe(wg.b_in0)
    'target label[2].in0 (depth 1)'
    """
    loop = Scope("wcc", depth=1, m=1)
    step = Summary.identity(1)
    d = loop.add(Operate("output", 1, 0))
    a = loop.add(Operate("edges", 0, 1, capabilities={0: [(0, 0)]}))
    b = loop.add(Operate("label", 2, 1, summary={(0, 0): step, (1, 0): step},
                         capabilities={0: [(0, 0)]}))
    s = loop.add(Operate("star", 1, 2, summary={(0, 0): step, (0, 1): step},
                         capabilities={1: [(0, 0)]}))
    c = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1)}))
    loop.connect(a, 0, b, 1)
    loop.connect(b, 0, s, 0)
    loop.connect(s, 0, c, 0)
    loop.connect(c, 0, b, 0)
    loop.connect(s, 1, d, 0)
    df = loop.build()
    return WccGraph(df.graph, df.source("edges", 0), df.target("label", 0),
                    df.target("label", 1), df.target("star", 0), df.source("star", 1),
                    df.target("output", 0), df)


@dataclass(frozen=True)
class EpochSummary:
    """One final epoch: sizes, Spark iterations (``rounds``) and wall seconds.

    ``output_frontier`` is the frontier at ``output.in0`` when the epoch was declared final
    (every element has an epoch greater than ``epoch``). ``kernels`` counts the epoch's
    tasks per backend their kernels ran on, as ``(backend, tasks)`` pairs sorted by backend
    (``"cpu"``, ``"cuda"``); the driver's finishing union-find counts as one task.
    ``source`` names what became the epoch (a file of a directory, or rows of a file);
    ``new_edges`` is the epoch's own input rows (``edges`` counts all epochs so far).
    ``cut`` is the share of the contract stage's driver-held input rows (the new edges) whose
    endpoints the locality partitioner put into different partitions, or ``None`` where no
    locality partition was made (hash partitioning, an epoch finished on the driver from the
    start, an epoch resumed from a loop checkpoint).
    """

    epoch: int
    vertices: int
    edges: int
    components: int
    rounds: int
    seconds: float
    output_frontier: tuple = ()
    kernels: tuple = ()
    source: str = ""
    new_edges: int = 0
    cut: float | None = None

    def line(self) -> str:
        """``epoch E: vertices V, edges M, components C, rounds R, S.SS s[, cut X.X%], kernels
        cpu N``."""
        text = (f"epoch {self.epoch}: vertices {self.vertices}, edges {self.edges}, components "
                f"{self.components}, rounds {self.rounds}, {self.seconds:.2f} s")
        if self.cut is not None:
            pct = 100 * self.cut
            text += f", cut {pct:.1f}%" if pct >= 1 or pct == 0 else f", cut {pct:.2g}%"
        if self.kernels:
            text += ", kernels " + " ".join(f"{b} {n}" for b, n in self.kernels)
        return text


@dataclass
class WccResult(JobResult):
    """What :func:`run_wcc` did (:class:`~spark_plugin.jobs.framework.JobResult`, which documents the
    fields): ``labels`` (``vertex, component``, sorted by vertex) is the last epoch's labels
    when no ``out`` was given; ``stages`` counts two Spark stages per iteration; the driver's
    finishing union-find counts as one task in ``kernels``; ``checkpoints`` are the stars
    and the labels of the newest final epoch run on Spark.

    >>> WccResult(seconds=4.0, tracking_seconds=0.05, kernel_seconds=0.2).total_line("o")
    'total: 0 epochs, 4.00 s (kernels loaded 0.20 s, progress tracking 0.05 s); nothing written to o'
    """

    what = "labels"

    @property
    def labels(self):
        """The last epoch's labels ``vertex, component`` without ``out``: a ``pyarrow.Table``
        for a driver-read input, a Spark DataFrame for a Spark source (never collected);
        ``None`` with ``out``."""
        return self.table


@dataclass(frozen=True)
class WccKernels:
    """The four WCC kernels one task runs, bound to where they run.

    ``contract(a, b) -> (root, leaf)``, ``large(u, v) -> (a, b, new)``, ``small(lo, hi,
    new) -> (a, b, new)`` and ``links(r, v) -> (a, b, new)`` take and return NumPy arrays
    (:mod:`gpu_kernels.unionfind`), on the CPU or, through the CuPy twins, on
    ``placement.device``.
    """

    placement: KernelPlacement
    contract: Callable
    large: Callable
    small: Callable
    links: Callable


def wcc_kernels(requested: "Backend | str", rows: int | None = None) -> WccKernels:
    """The kernels a WCC task -- or the driver finishing an epoch -- runs, chosen here.

    Parameters
    ----------
    requested : Backend or str
        The job's backend (``auto``, ``cpu`` or ``cuda``; see
        :func:`~spark_plugin.service.device.place_kernels`, which decides per task and logs a CPU
        fallback's reason once per Python worker).
    rows : int, optional
        The task's input rows (``auto`` uses the GPU only from
        :data:`~spark_plugin.service.device.AUTO_GPU_MIN_ROWS` rows).

    Returns
    -------
    WccKernels
        On a usable GPU, the CuPy twins (``uf_stars_xp``, ``large_star_xp``,
        ``small_star_xp``, ``root_links_xp`` with ``xp = cupy``): each call copies its NumPy inputs to the
        device once and its outputs back once (a task calls one kernel). Otherwise the Numba
        kernels (``uf_stars``, ``large_star``, ``small_star``, ``root_links``); ``cpu`` never
        imports CuPy.
        Both give the same edges (the tests check it), so the labels do not depend on where a
        task ran.
    """
    placement = place_kernels(requested, rows)
    if placement.backend is Backend.CUDA:
        from gpu_kernels.unionfind import (large_star_xp, root_links_xp, small_star_xp,
                                           uf_stars_xp)

        return WccKernels(placement, *(_on_device(fn, placement.device)
                                       for fn in (uf_stars_xp, large_star_xp, small_star_xp,
                                                  root_links_xp)))
    from gpu_kernels.unionfind import large_star, root_links, small_star, uf_stars

    return WccKernels(placement, uf_stars, large_star, small_star, root_links)


def _on_device(fn, device: int) -> Callable:
    """``fn(xp, *arrays)`` run with CuPy on ``device``: NumPy arrays in, NumPy arrays out."""
    def run(*arrays):
        import cupy

        with cupy.cuda.Device(device):
            out = fn(cupy, *(cupy.asarray(x) for x in arrays))
            return tuple(cupy.asnumpy(x) for x in out)
    run.__name__ = run.__qualname__ = f"{fn.__name__}_on_cuda{device}"
    return run


class _Stage(StageTask):
    """The ``mapInArrow`` function of one stage: the round's work plus its progress report.

    kind ``contract`` consumes edge messages (``f``) at ``label.in1 (e, 0)``; ``large``
    consumes new edges (``f``, counted once per undirected edge) at ``label.in0 (e, i)``; both
    produce every output edge on ``label.out0`` (to ``star.in0``) at ``(e, i)``, flagged new
    unless it is unchanged (a star of the previous epoch, or a large-star edge whose centre
    did not move). In the contract stage the label operator also re-sends its state, the
    previous epoch's stars, under its capability ``(e, 0)``, which task 0 moves on to
    ``(e + 1, 0)`` (or drops, when no epoch follows: ``more``). ``small`` consumes every row
    at ``star.in0 (e, i)`` and produces its new edges on ``star.out0``, which the feedback
    operator consumes at ``(e, i)`` and produces at ``(e, i + 1)`` (to ``label.in0``).
    ``final`` (the star operator's stage of the iteration whose rows all go to one task, in
    place of ``small``) consumes the same and contracts them with a union-find into the
    loop's fixed point, its output stars flagged not new: nothing goes round the loop.
    ``links`` (the star operator's stage of iteration 0 of the Spark loop, in place of
    ``small``) consumes the same and produces the links between the contracted pieces' roots
    (:func:`gpu_kernels.unionfind.root_links`) as its new edges; the pointers of the other
    vertices to their roots are its state (not new). With ``roots`` (the Spark loop's
    contract stage) the contract stage also emits each local root ``r``'s row ``(r, r)``
    (flagged new), which ``links`` needs to tell roots from the vertices pointing at them.
    The kernels are :func:`wcc_kernels`' for ``backend``; the progress rows name where they
    ran.
    """

    data_schema = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("f", pa.bool_())])

    def __init__(self, kind: str, epoch: int, it: int, seq: int, large: bool,
                 wrap: Callable | None, backend: Backend = Backend.CPU, more: bool = True,
                 roots: bool = False):
        super().__init__(seq, PRODUCER, large, wrap)
        self.kind, self.epoch, self.it, self.backend, self.more = kind, epoch, it, backend, more
        self.roots = roots

    def work(self, cols, part):
        a, b, f = cols["a"], cols["b"], cols["f"]
        t = (self.epoch, self.it)
        kernels = wcc_kernels(self.backend, len(a))
        report = Report()
        if self.kind == "contract":
            report.consumed("label", 1, t, int(f.sum()))
            oa, ob = kernels.contract(a, b)
            of = _changed_stars(a, b, f, oa, ob)
            if self.roots:   # each local root's own row, (r, r)
                r = np.unique(oa)
                oa, ob = np.concatenate([oa, r]), np.concatenate([ob, r])
                of = np.concatenate([of, np.ones(len(r), np.bool_)])
            report.produced("label", 0, t, len(oa))
            if part == 0:   # the label operator's capability for its state moves on
                report.capabilities("label", 0, t, -1)
                if self.more:
                    report.capabilities("label", 0, (self.epoch + 1, 0), 1)
        elif self.kind == "large":
            report.consumed("label", 0, t, int((f & (a < b)).sum()))
            oa, ob, of = kernels.large(a, b)
            report.produced("label", 0, t, len(oa))
        elif self.kind == "final":   # every row of the loop is here: the fixed point
            report.consumed("star", 0, t, len(a))
            oa, ob = kernels.contract(a, b)
            of = np.zeros(len(oa), np.bool_)
        else:
            report.consumed("star", 0, t, len(a))
            oa, ob, of = (kernels.small(a, b, f) if self.kind == "small"
                          else kernels.links(a, b))
            new = int(of.sum())
            report.produced("star", 0, t, new)
            report.consumed("feedback", 0, t, new)   # around the loop: (e, i) -> (e, i + 1)
            report.produced("feedback", 0, (self.epoch, self.it + 1), new)
        return {"a": oa, "b": ob, "f": of}, report, kernels.placement


class _IpcTask:
    """``RDD.mapPartitions`` function around a stage function, for epochs finished on the
    driver. Each element of the partition is ``(state, new)``: ``state`` an Arrow IPC blob of
    rows ``a, b, f`` (or ``None``), ``new`` the epoch's new edges as such a blob or as a
    :class:`~spark_plugin.sources.parquet.ParquetSlice` the task reads and validates itself. ``fn``
    gets them as record batches (the same contract as ``mapInArrow``); the task yields one
    ``(blobs, loops, error)``: ``fn``'s output as two Arrow IPC blobs -- its data rows
    (columns ``a, b`` only: the driver needs no flag) and its delta rows --, the distinct
    self-loop vertices of the new edges (int64), and ``None`` -- or ``(None, None, (message,
    path, row))`` when the input is malformed (the driver raises ``EdgeInputError``, Spark
    does not retry a deterministic error).

    The rows never become Spark SQL rows (no ``createDataFrame``, no SQL plan, no shuffle):
    the contract stage is correct on any split of its rows, because the driver's global
    union-find completes it.

    With ``part`` (the task's partition), the driver runs the task itself -- no Spark session
    runs --: the state and new rows come as Arrow tables (or the slice), and the output as
    tables, with no IPC."""

    def __init__(self, fn, schema: pa.Schema, part: int | None = None):
        self.fn, self.schema, self.part = fn, schema, part

    def __call__(self, elements):
        batches, loops = [], []
        ipc = self.part is None
        try:
            for state, new in elements:
                if state is not None:
                    batches += (from_ipc(state) if ipc else state).to_batches()
                if isinstance(new, (bytes, bytearray, pa.Table)):
                    t = from_ipc(new) if ipc else new
                    a, b = (arrow_numpy(t.column(c)) for c in ("a", "b"))
                    batches += t.to_batches()
                else:
                    t = new.read()
                    a, b = (arrow_numpy(t.column(c)) for c in ("src", "dst"))
                    batches.append(pa.RecordBatch.from_arrays(
                        [arrow_fixed(pa.int64(), a), arrow_fixed(pa.int64(), b),
                         arrow_bool(np.ones(len(a), np.bool_))], names=["a", "b", "f"]))
                loops.append(np.unique(a[a == b]).astype(np.int64))
        except EdgeInputError as err:
            yield None, None, (str(err), err.path, err.line)
            return
        loops = np.concatenate(loops) if loops else np.zeros(0, np.int64)
        data, deltas = [], []
        for batch in self.fn(iter(batches), part=self.part):
            isd = batch.column("a").is_null()
            if isd.true_count:
                deltas.append(batch.filter(isd))
            if isd.true_count < batch.num_rows:
                data.append(batch.filter(pc.invert(isd)).select(["a", "b"]))
        if ipc:
            yield (to_ipc(data, _EDGE_SCHEMA), to_ipc(deltas, self.schema)), loops, None
        else:   # run on the driver: the tables themselves
            yield ((pa.Table.from_batches(data, _EDGE_SCHEMA),
                    pa.Table.from_batches(deltas, self.schema)), loops, None)


class _WarmKernels:
    """Load the compiled WCC kernels (Numba's on-disk cache) into this process -- and, where
    :func:`wcc_kernels` places ``backend``'s kernels on a GPU, run the CuPy twins once (their
    first call compiles CuPy's kernels: 102 ms against 37 ms warm for 8M edges on an H100);
    as a ``mapPartitions`` function it starts and warms the Python workers (yields
    nothing)."""

    def __init__(self, backend: Backend = Backend.CPU):
        self.backend = backend

    def __call__(self, parts=()):
        import pyarrow.parquet  # noqa: F401  (the contract tasks may read Parquet)

        x = np.array([1, 0], np.int64)
        y = np.array([0, 2], np.int64)
        new = np.ones(2, np.bool_)
        kernels = [wcc_kernels(Backend.CPU)]   # also the fallback of small tasks under auto
        on_gpu = wcc_kernels(self.backend)
        if on_gpu.placement.backend is Backend.CUDA:
            kernels.append(on_gpu)
        for k in kernels:
            k.contract(x, y)
            k.large(x, y)
            k.small(x, y, new)
            k.links(x, y)
        return iter(())


def _tasks_read(edges) -> bool:
    """Whether the first epoch's contract tasks read their rows themselves (Parquet input)."""
    if isinstance(edges, pa.Table):
        return False
    if not isinstance(edges, (str, os.PathLike)):   # a Spark source: the executors read it
        return True
    p = Path(edges)
    if p.is_dir():
        files = edge_files(p)
        p = files[0] if files else p
    return p.is_file() and edge_format(p) == "parquet"


def range_cuts(a: np.ndarray, b: np.ndarray, P: int) -> tuple[list, float]:
    """``P`` ranges of ``least(a, b)`` over the sampled edges ``(a[j], b[j])``: the ``P - 1``
    cuts (a range starts at its cut: bucket ``searchsorted(cuts, v, "right")``) at the
    quantiles of ``least(a, b)``, and the share of the edges other than self-loops whose
    endpoints fall into different ranges (0 without such edges).

    >>> range_cuts(np.array([0, 1, 2, 3]), np.array([1, 0, 3, 2]), 2)
    ([2], 0.0)
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    low = np.minimum(a, b)
    if P < 2 or low.size == 0:
        return [], 0.0
    cuts = [int(x) for x in np.quantile(low, [i / P for i in range(1, P)],
                                        method="higher")]
    keep = a != b
    if not keep.any():
        return cuts, 0.0
    ca = np.searchsorted(cuts, a[keep], side="right")
    cb = np.searchsorted(cuts, b[keep], side="right")
    return cuts, float(np.count_nonzero(ca != cb)) / int(keep.sum())


def _range_key(x, cuts: list, pre: list):
    """The Spark expression ``pre[bucket(x)]``: ``bucket`` the number of ``cuts`` (sorted)
    at most ``x``, found by a balanced tree of comparisons (``log P`` per row)."""
    from pyspark.sql import functions as F

    def node(lo: int, hi: int):
        if lo == hi:
            return F.lit(pre[lo])
        mid = (lo + hi + 1) // 2     # bucket mid starts at cuts[mid - 1]
        return F.when(x < F.lit(cuts[mid - 1]), node(lo, mid - 1)).otherwise(node(mid, hi))
    return node(0, len(cuts)).cast("bigint")


def _changed_stars(a, b, f, oa, ob) -> np.ndarray:
    """``new[j]``: the contracted edge ``(oa[j], ob[j])`` is not one of the previous epoch's
    stars among the input (state rows ``f == False``, ``a`` the centre of leaf ``b``)."""
    old = ~f & (a < b)
    if not old.any() or len(oa) == 0:
        return np.ones(len(oa), np.bool_)
    leaf, root = b[old], a[old]
    order = np.argsort(leaf, kind="stable")
    leaf, root = leaf[order], root[order]
    pos = np.minimum(np.searchsorted(leaf, ob), len(leaf) - 1)
    return ~((leaf[pos] == ob) & (root[pos] == oa))


def _pointstamps(counts: pa.Table) -> list:
    """A tracker's pointstamp counts (``loc, ts, cnt``) as sorted ``[loc, [ts...], cnt]``
    rows (what a loop checkpoint records, JSON)."""
    rows = zip(counts.column("loc").to_pylist(), counts.column("ts").to_pylist(),
               counts.column("cnt").to_pylist())
    return sorted([int(l), [int(x) for x in t], int(c)] for l, t, c in rows if c)


def _up_to_epoch(pointstamps: list, e: int) -> list:
    """The rows of :func:`_pointstamps` at times of epoch ``e`` or earlier."""
    return [p for p in pointstamps if p[1][0] <= e]


def _stars_table(a, b) -> pa.Table:
    """Stars ``(component, vertex)`` held on the driver as loop-input rows (``f`` false)."""
    return pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()),
                     "f": pa.array(np.zeros(len(a), np.bool_))})


class WccJob(EpochJob):
    """Incremental WCC as an :class:`~spark_plugin.jobs.framework.EpochJob` (:func:`run_wcc` runs it).

    Per epoch: the new edges and the previous epoch's stars are *contracted* (a union-find per
    task), then *small-star* and *large-star* alternate until the frontier at ``label.in0``
    shows that no edge of the epoch is in flight. An epoch whose loop input is small enough
    (:func:`driver_finish_rows`) is finished on the driver instead: one Spark job contracts,
    and one global union-find on the driver is the fixed point.
    """

    name = PRODUCER
    spark_sources = True
    input = ("edges", 0)
    output = ("output", 0)
    result_columns = ("vertex", "component")
    backends = WCC_BACKENDS
    protocol_error = WccProtocolError
    result_type = WccResult

    def __init__(self, *args, loop_checkpoint: "float | str | None" = DEFAULT_LOOP_CHECKPOINT,
                 partitioner: "Partitioner | str" = Partitioner.LOCALITY, **kwargs):
        self.partitioner = Partitioner.parse(partitioner)   # before Spark does anything
        super().__init__(*args, **kwargs)
        self.loop_checkpoint = loop_checkpoint_seconds(loop_checkpoint)

    state = None        # converged stars (a = component, b = vertex): a DataFrame or arrays
    _resumed_pointers = False   # the loop checkpoint read back holds pointers (a > b)
    labels = None       # vertex, component of all vertices seen so far
    state_ids: set = frozenset()
    labels_ids: set = frozenset()

    # -- the dataflow ----------------------------------------------------------------------
    def dataflow(self):
        self.wg = wcc_graph()
        return self.wg.dataflow

    def output_report(self, e, outcome, more):
        # the star operator sends the epoch's labels to the output under its capability
        # (e, 0), which moves on to the next epoch (or is dropped)
        t = (e, outcome.iteration)
        report = Report().produced("star", 1, t, 1).capabilities("star", 1, (e, 0), -1)
        return report.capabilities("star", 1, (e + 1, 0), 1) if more else report

    def end_report(self, e):
        # the input ended: label and star drop the capabilities they held for epoch e
        return Report().capabilities("label", 0, (e, 0), -1).capabilities("star", 1, (e, 0), -1)

    # -- start, resume, end ----------------------------------------------------------------
    def start(self):
        # The driver loads its kernels while it reads the input and Spark runs the first
        # stage. When the driver reads the input itself (text, CSV, or Parquet it ships), a
        # small job starts the Python workers and loads their kernels meanwhile, so the first
        # stage does not wait for both; when the tasks read Parquet themselves the first stage
        # is submitted at once and starts the workers itself.
        # A lazy session not started yet (spark_plugin.session.lazy) stays so: an epoch that
        # fits the driver runs its contract tasks on the driver (_stage_collect), and one
        # that does not starts Spark when it needs it.
        d = self.driver
        self.driver_rows = driver_finish_rows(self._spark)[0]
        self.requested = d.requested
        warm = ThreadPoolExecutor(1, thread_name_prefix="wcc-warm")
        self.warming = []
        if self.spark_started and not (self.executor_input and _tasks_read(self.edges)):
            spark, P = self.spark, self.P
            self.warming.append(warm.submit(lambda: spark.sparkContext.parallelize(range(P), P)
                                            .mapPartitions(_WarmKernels(d.requested)).collect()))
        warm.shutdown(wait=False)

    def prepare(self):
        # The driver's kernels (the WCC kernels for the epochs it finishes, and the frontier
        # service's) are loaded first on the tracking thread; a first run compiles them into
        # Numba's cache, which is not progress tracking (and says so once).
        d, bar, wg = self.driver, self.bar, self.wg

        def load_kernels():
            with CompileWatch(lambda: bar.note("compiling the Numba kernels (once: cached for "
                                               "later runs) ...")) as watch:
                _WarmKernels(d.requested)()
                tracker = getattr(d.service, "_tracker", None)
                if getattr(tracker, "kernels", None) is not None:
                    from engine.batched.tracker import warm_up
                    warm_up(wg.graph.m, wg.graph.max_depth, tracker.kernels,
                            strategies=(tracker.strategy.value,))
            return watch

        d.load_kernels(load_kernels)

    def resume(self, table):
        self.labels = table
        if not isinstance(table, pa.Table):   # a Spark source's labels, read by Spark
            from pyspark.sql import functions as F

            self.state = table.where(F.col("vertex") != F.col("component")).select(
                F.col("component").alias("a"), F.col("vertex").alias("b"), F.lit(False).alias("f"))
            return
        vert = table.column("vertex").to_numpy()
        comp = table.column("component").to_numpy()
        leaf = vert != comp
        self.state = (comp[leaf], vert[leaf])

    def holding(self):
        # new_ids: a Spark source's epoch in flight (released once its labels hold it; an
        # epoch that fails leaves it to close())
        return set(self.state_ids) | set(self.labels_ids) | set(self.new_ids)

    def result_ids(self):
        return set(self.labels_ids)

    def too_big_for_driver(self, edges) -> bool:
        # A local Parquet file whose largest epoch (rows from its footer) is past the
        # driver's budget -- the sizing rule's: $TFRONT_WCC_DRIVER_ROWS says where the loop
        # runs, and keeps the driver's reading -- is read by the executors, as the Spark
        # source file://PATH with the same slices: the driver would otherwise read it and
        # hold the epoch's rows.
        if os.environ.get(DRIVER_ROWS_ENV, "").strip():
            return False
        rows = parquet_file_rows(edges, self.follow)   # the footer: metadata only
        return rows is not None and -(-rows // max(1, int(self.epochs))) > driver_finish_rows(
            self._spark)[0]

    def finish(self):
        for w in getattr(self, "warming", ()):   # a warm-up failure is not the job's
            if w.exception() is not None:
                log.warning("warming the WCC kernels failed: %s", w.exception())

    def summary(self, e, outcome, *, seconds, frontier, kernels, source, new_rows,
                rows_so_far):
        return EpochSummary(e, outcome.rows, rows_so_far, outcome.stats["components"],
                            outcome.rounds, seconds, frontier, kernels, source, new_rows,
                            outcome.stats.get("cut"))

    # -- the algorithm ---------------------------------------------------------------------
    def epoch(self, e, inp):
        held = isinstance(self.state, tuple)   # the previous stars are on the driver
        n_state = len(self.state[0]) if held else 0
        on_driver = (self.state is None or held) and inp.rows + n_state <= self.driver_rows
        if not inp.read and (on_driver if inp.frame is not None else not on_driver):
            inp.table()   # a Spark source's epoch is collected only when the driver finishes it
        new_tbl = None
        if inp.read:
            t = inp.table()
            src = t.column("src").combine_chunks() if inp.rows else pa.array([], pa.int64())
            dst = t.column("dst").combine_chunks() if inp.rows else pa.array([], pa.int64())
            new_tbl = pa.table({"a": src, "b": dst, "f": pa.array(np.ones(inp.rows, np.bool_))})
        if isinstance(self.labels, pa.Table) and not on_driver:
            self.labels = self.spark.createDataFrame(self.labels,
                                                schema="vertex bigint, component bigint")
        self.more = inp.more
        if on_driver and self.loop_resume is not None:   # e.g. TFRONT_WCC_DRIVER_ROWS raised
            self.notice(f"epoch {e} is finished on the driver this time: its loop checkpoint "
                        f"of iteration {self.loop_resume['iteration']} is not used")
            self.loop_resume = None
            self.out_log.drop_loop()
        if on_driver:
            return self._finish_on_driver(e, inp.scan if new_tbl is None else new_tbl)
        return self._spark_loop(e, new_tbl if new_tbl is not None else inp.frame, inp.rows)

    def _stage(self, kind, df, e, it, key):
        """One Spark stage of ``kind`` on ``df``, partitioned by ``key`` (the contract stage
        with the roots' rows, for the ``links`` stage after it)."""
        d = self.driver
        return d.run_stage(lambda s: _Stage(kind, e, it, s, d.large, d.task_wrapper,
                                            d.requested, self.more, roots=True),
                           df, key, _STEP_NAMES.get(kind, kind), e, it)

    def _spark_loop(self, e, new_tbl, rows: int) -> EpochOutcome:
        """Contract (partitioned by :meth:`_contract_input`), link the contracted pieces'
        roots (setting the other vertices' pointers aside), then large-star / small-star on
        the links until the frontier at ``label.in0`` has no element of epoch ``e``; the
        stars of every vertex (:meth:`_resolve`) and the labels of every vertex seen so far,
        checkpointed (docs/wcc.md, "Algorithm").

        Before each star-operator stage, the rows in flight at ``star.in0`` are read from the
        tracker: when they fit the driver (:func:`driver_finish_rows`), the driver collects
        them and finishes the loop with one union-find (:meth:`_finish_loop_on_driver`);
        when they fit one task (:meth:`_task_rows`), they all go to one task, whose
        union-find is the fixed point (stage ``final``). After a star-operator stage that
        leaves the loop running, the state is written to ``out`` as a loop checkpoint when
        :attr:`loop_checkpoint` seconds have passed since the epoch's last one; an epoch the
        rollback kept a checkpoint of resumes from it.

        ``new_tbl``: the epoch's ``rows`` new edges (``a, b, f``) held by the driver, or a
        Spark source's epoch (a DataFrame ``src, dst`` the executors read:
        :meth:`_contract_frame`)."""
        from pyspark.sql import functions as F

        d, ck = self.driver, self.driver.checkpoints
        rec, self.loop_resume = self.loop_resume, None
        df, new, cut = None, None, None
        pointers, ptr_ids = None, set()   # the links stage's pointers, their checkpoint
        if rec is not None and rec["epoch"] == e:
            df = self._resume_loop(e, rec, rows)
            ids, it = set(), rec["iteration"] + 1
        if df is not None and self._resumed_pointers:   # set aside again, as they were
            pointers, ptr_ids = ck.checkpoint(df.filter(F.col("a") > F.col("b")).select(
                F.col("b").alias("a"), F.col("a").alias("b"), "f"))
            df = df.filter(F.col("a") < F.col("b"))
        if df is None:
            rec = None
            inp, key, new, cut = (self._contract_input(new_tbl) if isinstance(new_tbl, pa.Table)
                                  else self._contract_frame(new_tbl, rows))
            df, ids = self._stage("contract", inp, e, 0, key)
            it = 0
        task_rows = self._task_rows(rows)   # the same when resumed
        if new is None:
            new = (self.spark.createDataFrame(new_tbl, schema=EDGE_DDL)
                   if isinstance(new_tbl, pa.Table) else self._new_frame(new_tbl))
        last = time.monotonic()
        while True:
            if rec is None:   # resumed: the checkpoint is the small-star stage's output
                rows = self._rows_at(STAR_IN0, e, it)   # a limit of 0: never
                if rows <= self.driver_rows and self.driver_rows:
                    return self._finish_loop_on_driver(e, it, df, ids | ptr_ids, new_tbl, new,
                                                       cut, pointers)
                # what is left fits one task: a union-find there is the fixed point; else,
                # after the contract stage, link the pieces' roots; then small-star
                kind = ("final" if rows <= task_rows and task_rows
                        else "links" if it == 0 else "small")
                key = F.lit(int(hash_preimages(self.P)[0])) if kind == "final" else F.col("b")
                out, ids2 = self._stage(kind, df, e, it, key)
                ck.release(ids)
                if kind == "links":   # the pointers stay aside; the links go round the loop
                    pointers, ptr_ids = out.filter(~F.col("f")), ids2
                    df, ids = out.filter(F.col("f")), set()
                else:
                    df, ids = out, ids2
                fb, _ = d.round_passed(e, it, LABEL_IN0, STAR_IN0)
                self.bar.round(e, it + 1, fb)   # rounds so far: the epoch line's count
                if d.converged(e, fb):
                    break  # no new edge of epoch e can reach the label operator
                if (self.out_log is not None and self.loop_checkpoint is not None
                        and time.monotonic() - last >= self.loop_checkpoint):
                    # the pointers reversed, (vertex, root): every loop row has a < b
                    self._write_loop(e, it, df if pointers is None else df.unionByName(
                        pointers.select(F.col("b").alias("a"), F.col("a").alias("b"), "f")))
                    last = time.monotonic()
                it += 1
            rec = None
            both = df.unionByName(df.select(F.col("b").alias("a"), F.col("a").alias("b"), "f"))
            df, ids2 = self._stage("large", both, e, it, F.col("a"))
            ck.release(ids)
            ids = ids2
        if pointers is None:
            self.state, self.state_ids = df, ids   # the previous stars stay until e is final
        elif it == 0:   # no links: every pointer points at its component's smallest id
            self.state, self.state_ids = pointers, ptr_ids
        else:
            self.state, self.state_ids = self._resolve(pointers, df)
            ck.release(ids | ptr_ids)
        return self._spark_labels(e, it, new, cut)

    def _resolve(self, pointers, stars):
        """The stars of every vertex: the converged ``stars`` of the roots (a, b, f) and the
        ``pointers`` (root, vertex) of the other vertices, re-pointed at their root's centre
        (one join), checkpointed: ``(DataFrame, ids)``."""
        from pyspark.sql import functions as F

        centre = stars.select(F.col("b").alias("a"), F.col("a").alias("c"))
        moved = pointers.join(centre, "a", "left").select(
            F.coalesce(F.col("c"), F.col("a")).alias("a"), "b", "f")
        return self.driver.checkpoints.checkpoint(stars.unionByName(moved))

    def _contract_input(self, new_tbl):
        """The contract stage's input: the previous epoch's stars and the epoch's new edges
        ``new_tbl`` as rows ``a, b, f``; returns it (a DataFrame), the column it is
        partitioned by, a DataFrame holding at least the new edges (for the labels) and the
        share of cut edges (``None`` unless partitioned by locality).

        ``hash``: by ``least(a, b)``. ``locality``: the rows the driver holds -- the new
        edges, after the previous stars when the driver holds those too -- are partitioned
        by :func:`~spark_plugin.jobs.wcc.partition.locality_partition`, each carrying in a
        column ``key`` a value that Spark's hash partitioning sends to its range's task
        (:func:`~spark_plugin.jobs.wcc.partition.hash_preimages`); stars held by Spark keep
        their centre ``a`` as key, so that a star stays in one task, as with ``hash``."""
        from pyspark.sql import functions as F

        spark, held = self.spark, isinstance(self.state, tuple)
        a = arrow_numpy(new_tbl.column("a")).astype(np.int64, copy=False)
        b = arrow_numpy(new_tbl.column("b")).astype(np.int64, copy=False)
        f = np.ones(len(a), np.bool_)
        if held:   # back to Spark: the stars the driver holds go first
            a, b = np.concatenate([self.state[0], a]), np.concatenate([self.state[1], b])
            f = np.concatenate([np.zeros(len(self.state[0]), np.bool_), f])
        cols = {"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()), "f": pa.array(f)}
        cut, schema, key = None, EDGE_DDL, F.least("a", "b")
        if self.partitioner is Partitioner.LOCALITY:
            lp = locality_partition(a, b, self.P)
            cols["key"] = pa.array(hash_preimages(self.P)[lp.part], pa.int64())
            cut = lp.cut if len(a) else None
            schema, key = EDGE_DDL + ", key bigint", F.col("key")
            log.info("locality partition of %d rows into %d: order %s, %d cut edges (%.1f%%)",
                     len(a), self.P, lp.order, lp.cut_edges, 100 * lp.cut)
        rows = spark.createDataFrame(pa.table(cols), schema=schema)
        inp = rows
        if self.state is not None and not held:
            state = self.state
            if self.partitioner is Partitioner.LOCALITY:
                state = state.withColumn("key", F.col("a"))
            inp = state.unionByName(rows)
        return inp, key, rows, cut

    def _new_frame(self, frame):
        """A Spark source's epoch as the loop's new rows ``a, b, f``, materialised once on the
        executors (the contract stage and the labels read it; the driver never does) and
        released when the epoch is final."""
        from pyspark.sql import functions as F

        new, ids = self.driver.checkpoints.checkpoint(frame.select(
            F.col("src").alias("a"), F.col("dst").alias("b"), F.lit(True).alias("f")))
        self.new_ids = ids
        return new

    def _contract_frame(self, frame, rows: int):
        """:meth:`_contract_input` for a Spark source's epoch, all on the executors: the new
        rows (:meth:`_new_frame`) and the previous stars (held by Spark, or by the driver
        when it finished the epochs before). ``hash``: partitioned by ``least(a, b)``.

        ``locality``: a seeded sample of about :data:`CUT_SAMPLE_ROWS` of the epoch's
        ``rows`` rows is collected (one small job; the driver holds the sample, never the
        epoch) and gives ``P`` ranges of ``least(a, b)`` cut at its quantiles, and their
        share of cut edges (:func:`range_cuts`). Ranges that cut fewer than
        :data:`RANGE_MAX_CUT` of what a random partition would are worth a shuffle: each
        row carries in ``key`` a value Spark's hash partitioning sends to its range's task
        (:func:`~spark_plugin.jobs.wcc.partition.hash_preimages`), the stars keep their
        centre as key, and the sampled share is the epoch's ``cut``. Otherwise (ids that do
        not follow the graph's structure, as R-MAT's) a shuffle of every row buys nothing:
        the rows are contracted where the executors read them (at most ``P`` of the
        source's partitions, coalesced in read order, plus the stars'), with no shuffle
        before the contract stage, and no cut is measured."""
        from pyspark.sql import functions as F

        from spark_plugin.service.batch import collect_arrow

        new = self._new_frame(frame)
        state = self.state
        if isinstance(state, tuple):   # the driver's stars go back to Spark (they fit it)
            state = self.spark.createDataFrame(_stars_table(*state), schema=EDGE_DDL)
        if self.partitioner is not Partitioner.LOCALITY:
            inp = new if state is None else state.unionByName(new)
            return inp, F.least("a", "b"), new, None
        P = self.P
        cuts, cut = [], 0.0
        if P > 1:
            sample = new.select("a", "b")
            if rows > CUT_SAMPLE_ROWS:
                sample = sample.sample(False, CUT_SAMPLE_ROWS / rows, seed=0)
            t = collect_arrow(sample)
            cuts, cut = range_cuts(arrow_numpy(t.column("a")), arrow_numpy(t.column("b")), P)
        if cut > RANGE_MAX_CUT * (1 - 1 / P):
            n = new.rdd.getNumPartitions()
            where = new.coalesce(P) if n > P else new
            log.info("the epoch's %d new edges contracted where they were read (%d "
                     "partitions, no shuffle): ranges cut at sampled quantiles would cut "
                     "%.1f%% of them", rows, min(n, P), 100 * cut)
            return (where if state is None else state.unionByName(where)), None, new, None
        pre = [int(x) for x in hash_preimages(P)]
        keyed = new.withColumn("key", _range_key(F.least("a", "b"), cuts, pre))
        inp = keyed if state is None else state.withColumn("key", F.col("a")).unionByName(keyed)
        log.info("range partition of the epoch's %d new edges into %d at sampled cuts %s: "
                 "%.2f%% cut", rows, P, cuts[:8], 100 * cut)
        return inp, F.col("key"), new, cut

    new_ids: set = frozenset()   # the checkpoint of a Spark source's epoch (_new_frame)

    def _task_rows(self, new_rows: int) -> int:
        """The most rows the star operator's stage of an iteration may send to one task, which
        then contracts them all with one union-find (stage ``final``): ``$TFRONT_WCC_TASK_ROWS``
        when set, else the contract stage's mean task input of new edges (``new_rows // P``)
        -- as much as a task held already; not counting the previous stars, which the driver
        may hold or not, so that a resumed epoch decides as the killed run did.

        Raises
        ------
        ConfigError
            ``$TFRONT_WCC_TASK_ROWS`` is not a non-negative integer.
        """
        from spark_plugin.errors import ConfigError

        env = os.environ.get("TFRONT_WCC_TASK_ROWS")
        if env is not None and env.strip() != "":
            try:
                rows = int(env)
            except ValueError:
                rows = -1
            if rows < 0:
                raise ConfigError(f"$TFRONT_WCC_TASK_ROWS must be a non-negative integer, "
                                  f"got {env!r}")
            return rows
        return new_rows // self.P

    def _rows_at(self, target, e, it) -> int:
        """The messages in flight at ``target`` (``(operator, input)``) at ``(e, it)``, from
        the tracker: at ``star.in0`` every row of the loop's state is one."""
        d = self.driver
        d.sync()
        t0 = time.perf_counter()
        loc = d.dataflow.target(*target)
        n = sum(c for l, ts, c in _pointstamps(d.service.counts()) if l == loc and ts == [e, it])
        d.tracking += time.perf_counter() - t0
        return n

    def _finish_loop_on_driver(self, e, it, df, ids, new_tbl, new, cut,
                               pointers) -> EpochOutcome:
        """The rows ``df`` in flight at ``star.in0 (e, it)`` fit the driver: collect them (one
        Spark job) and run the star operator's stage of iteration ``it`` as the driver's
        global union-find, the loop's fixed point (:meth:`_union_find_on_driver`, reported
        like the one-job path's). The labels are then computed on the driver when the job's
        state is nowhere else (no earlier epoch, no ``pointers`` of a links stage held by
        Spark), otherwise by Spark from the stars (and the pointers re-pointed at them)."""
        from spark_plugin.service.batch import collect_arrow

        d, ck = self.driver, self.driver.checkpoints
        d.steps.step("collect", e, it)
        t0 = time.perf_counter()
        rows = collect_arrow(df.select("a", "b"))
        d.collecting += time.perf_counter() - t0
        if pointers is None:
            ck.release(ids)
        a, b = (arrow_numpy(rows.column(c)).astype(np.int64, copy=False) for c in ("a", "b"))
        sa, sb = self._union_find_on_driver(a, b, e, it)
        fb, _ = d.round_passed(e, it, LABEL_IN0, STAR_IN0, what="the driver finished the loop")
        if not d.converged(e, fb):
            raise WccProtocolError(f"epoch {e}: the driver finished the loop, but the frontier "
                                   f"at label.in0 {fmt_frontier(fb)} has not passed epoch {e}")
        self.bar.round(e, it + 1, fb)
        if (self.labels is None and self.state is None and pointers is None
                and isinstance(new_tbl, pa.Table)):
            na = arrow_numpy(new_tbl.column("a")).astype(np.int64, copy=False)
            nb = arrow_numpy(new_tbl.column("b")).astype(np.int64, copy=False)
            return self._driver_labels(e, it, sa, sb, np.unique(na[na == nb]), cut)
        stars = self.spark.createDataFrame(_stars_table(sa, sb), schema=EDGE_DDL)
        if pointers is None:
            self.state, self.state_ids = ck.checkpoint(stars)
        else:
            self.state, self.state_ids = self._resolve(pointers, stars)
            ck.release(ids)
        return self._spark_labels(e, it, new, cut)

    def _spark_labels(self, e, it, new, cut) -> EpochOutcome:
        """The labels of every vertex seen so far -- of the new edges ``new`` and the earlier
        labels -- from the stars :attr:`state` (a DataFrame): the star's centre, or the vertex
        itself; checkpointed."""
        from pyspark.sql import functions as F

        d, ck = self.driver, self.driver.checkpoints
        d.steps.step("labels", e, it)
        # Every vertex of an edge between two vertices is in the stars, as a leaf (b) or a
        # centre (a); the rest are the earlier labels' and the new self-loops' vertices. So
        # the vertices to label come from about 2V rows, not from the epoch's 2E endpoints.
        leaves = self.state.select(F.col("b").alias("vertex"), F.col("a").alias("component"))
        roots = self.state.select(F.col("a").alias("vertex")).unionByName(
            new.where(F.col("a") == F.col("b")).select(F.col("a").alias("vertex")))
        if self.labels is not None:
            roots = roots.unionByName(self.labels.select("vertex"))
        roots = roots.distinct().join(leaves, "vertex", "left_anti")
        lab = leaves.unionByName(roots.select("vertex", F.col("vertex").alias("component")))
        self.labels, self.labels_ids = ck.checkpoint(lab)
        ck.release(self.new_ids)   # a Spark source's epoch: its labels hold what it added
        self.new_ids = frozenset()
        stats = self.labels.agg(F.count(F.lit(1)).alias("v"),
                                F.sum((F.col("vertex") == F.col("component")).cast("long"))
                                .alias("c")).collect()[0]
        return EpochOutcome(self.labels, int(stats["v"] or 0), it, it + 1,
                            stats={"components": int(stats["c"] or 0), "cut": cut})

    def _write_loop(self, e, it, df) -> None:
        """Write the loop checkpoint after the small-star stage of iteration ``it``: the rows
        ``df`` (a, b, f) at ``label.in0 (e, it + 1)`` -- those flagged ``f`` are the messages
        in flight there, whose count the tracker holds -- with the tracker's pointstamps at
        this cut. One Spark job (the write)."""
        d = self.driver
        d.steps.step("loop checkpoint", e, it)
        d.sync()
        stamps = _pointstamps(d.service.counts())
        at, t = self.wg.b_in0, [e, it + 1]
        new = sum(c for l, ts, c in stamps if l == at and ts == t)
        self.out_log.record_loop(e, it, df, new=new, pointstamps=stamps)

    def _resume_loop(self, e, rec, rows):
        """Resume epoch ``e`` after iteration ``I = rec["iteration"]`` from its loop
        checkpoint: read the state back (checked against the record), and report what the
        skipped stages did in one driver batch -- the label operator consumed the epoch's
        ``rows`` input edges and moved its capability on, and the ``rec["new"]`` new edges
        of the checkpoint went round the loop to ``label.in0 (e, I + 1)`` -- after which the
        tracker's pointstamps must be the ones recorded at the checkpoint. Returns the
        state (a DataFrame a, b, f), in which the pointers the root-links stage set aside
        are the rows written reversed, ``a > b`` (:attr:`_resumed_pointers`: whether there
        are any)."""
        from pyspark.sql import functions as F

        d, I = self.driver, rec["iteration"]
        where = f"{self.out_log.out}/{LOOP_DIR}/{rec['dir']}"
        d.steps.step("loop checkpoint", e, I)
        try:
            df = self.spark.read.schema(EDGE_DDL).parquet(*self.out_log.loop_paths(rec))
            stats = df.agg(F.count(F.lit(1)).alias("rows"),
                           F.sum(F.col("f").cast("long")).alias("new"),
                           F.sum((F.col("a") > F.col("b")).cast("long")).alias("pointers")
                           ).collect()[0]
            got = (int(stats["rows"] or 0), int(stats["new"] or 0))
            self._resumed_pointers = bool(stats["pointers"])
            fault = (None if got == (rec["rows"], rec["new"]) else
                     f"it holds {got[0]} rows ({got[1]} new), its record says {rec['rows']} "
                     f"({rec['new']})")
        except Exception as err:   # unreadable (a lost or damaged part file): Spark's error
            fault = f"it cannot be read ({type(err).__name__}: {str(err).splitlines()[0]})"
        if fault is not None:
            # dropping the checkpoint is always consistent (the loop's frontier shrinks to
            # the last final epoch); nothing has been reported yet, so the epoch restarts
            self.notice(f"epoch {e}: the loop checkpoint of iteration {I} ({where}) is not "
                        f"used: {fault}; the epoch restarts from its first iteration")
            self.out_log.drop_loop()
            return None
        self.notice(f"resuming epoch {e} at iteration {I + 1} from the loop checkpoint of "
                    f"iteration {I} ({where}, {rec['rows']:,} edges)")
        c, t0, t1 = rec["new"], (e, 0), (e, I + 1)
        report = Report().consumed("label", 1, t0, rows).capabilities("label", 0, t0, -1)
        if self.more:
            report.capabilities("label", 0, (e + 1, 0), 1)
        report.produced("label", 0, t0, c).consumed("star", 0, t0, c) \
            .produced("star", 0, t0, c).consumed("feedback", 0, t0, c) \
            .produced("feedback", 0, t1, c)
        d.report(report)
        d.sync()
        # only the epochs up to e: what stands beyond them (the capabilities for epoch e + 1)
        # depends on whether another epoch can follow, which may differ between the killed run
        # and this one (a file added to the input directory since, --follow or not)
        now, then = (_up_to_epoch(p, e) for p in (_pointstamps(d.service.counts()),
                                                    rec["pointstamps"]))
        if now != then:
            raise self.protocol_error(
                f"epoch {e}: resumed after iteration {I}, the tracker holds the pointstamps "
                f"{now}, not the {then} recorded at the loop checkpoint")
        return df

    def _finish_on_driver(self, e, new) -> EpochOutcome:
        """One Spark job contracts (its output collected); the driver's global union-find is
        the fixed point of the loop (nothing goes around the feedback)."""
        d = self.driver
        ca, cb, loops = self._stage_collect(None if self.state is None
                                            else _stars_table(*self.state), new, e, 0)
        it = 0
        sa, sb = self._union_find_on_driver(ca, cb, e, it)
        fb, _ = d.round_passed(e, it, LABEL_IN0, STAR_IN0, what="the driver finished the loop")
        if not d.converged(e, fb):
            raise WccProtocolError(f"epoch {e}: the driver finished the loop, but the frontier "
                                   f"at label.in0 {fmt_frontier(fb)} has not passed epoch {e}")
        self.bar.round(e, it + 1, fb)
        return self._driver_labels(e, it, sa, sb, loops, None)

    def _driver_labels(self, e, it, sa, sb, loops, cut) -> EpochOutcome:
        """Epoch ``e`` finished on the driver with the stars ``sa, sb`` (component, vertex)
        after iteration ``it``: they become the state, held on the driver, and the labels of
        every vertex seen so far are computed there. A vertex of a new edge is a star's
        centre or leaf unless its component is itself alone, which only a self-loop gives
        (``loops``, the self-loop vertices of the new edges)."""
        self.state = (sa, sb)
        parts = [sa, sb, loops]
        if self.labels is not None:
            parts.append(self.labels.column("vertex").to_numpy(zero_copy_only=False))
        vert = compact_ids(*parts)[0]   # sorted distinct vertices
        comp = vert.copy()
        if len(sb):
            comp[np.searchsorted(vert, sb)] = sa
        self.labels = pa.table({"vertex": pa.array(vert, pa.int64()),
                                "component": pa.array(comp, pa.int64())})
        return EpochOutcome(self.labels, len(vert), it, it + 1,
                            stats={"components": int(np.count_nonzero(vert == comp)),
                                   "cut": cut})

    def _stage_collect(self, state_tbl, new, e, it):
        """Run the contract stage over the driver-held rows ``state_tbl`` (a, b, f; or
        ``None``) and the epoch's new edges ``new`` (a table a, b, f held by the driver, or a
        :class:`~spark_plugin.sources.parquet.ParquetSlice` the tasks read) as one Spark job of ``P``
        tasks, each given a contiguous ``1/P`` of both (:class:`_IpcTask`); apply the
        progress; return the data rows ``a, b`` and the self-loop vertices of the new edges
        (numpy)."""
        d, P = self.driver, self.P
        s = d.new_stage("contract", e, it)
        fn = _Stage("contract", e, it, s, d.large, d.task_wrapper, d.requested, self.more)
        t0 = time.perf_counter()

        def piece(t, p):   # task p's contiguous 1/P of t
            cuts = even_cuts(t.num_rows, P)
            return t.slice(cuts[p], cuts[p + 1] - cuts[p])

        def element(p, ship):   # task p's (state, new); ship: as Arrow IPC, for Spark
            rows = [None if state_tbl is None else piece(state_tbl, p),
                    piece(new, p) if isinstance(new, pa.Table) else new.part(p, P)]
            return tuple(to_ipc(t.to_batches(), t.schema) if ship and isinstance(t, pa.Table)
                         else t for t in rows)

        if self.spark_started:
            out = self.spark.sparkContext.parallelize(
                [element(p, True) for p in range(P)], P).mapPartitions(
                _IpcTask(fn, fn.schema())).collect()
        else:   # no Spark session runs (a lazy one not started): the driver runs the tasks,
            # on threads (the union-find runs without the GIL)
            with ThreadPoolExecutor(max(1, min(P, os.cpu_count() or 1)),
                                    thread_name_prefix="wcc-contract") as pool:
                out = list(pool.map(lambda p: next(_IpcTask(fn, fn.schema(), part=p)(
                    [element(p, False)])), range(P)))
        for _, _, err in out:
            if err is not None:   # a task found bad input: the epoch stops, nothing written
                raise EdgeInputError(*err)

        def table(blob):
            return blob if isinstance(blob, pa.Table) else from_ipc(blob)

        data = pa.concat_tables([table(x[0]) for x, _, _ in out])
        deltas = pa.concat_tables([table(x[1]) for x, _, _ in out])
        loops = np.concatenate([x for _, x, _ in out])
        d.collecting += time.perf_counter() - t0
        d.apply_progress(deltas, s, f"contract, epoch {e} iteration {it}")
        return (data.column("a").to_numpy(zero_copy_only=False).astype(np.int64),
                data.column("b").to_numpy(zero_copy_only=False).astype(np.int64), loops)

    def _union_find_on_driver(self, a, b, e, it):
        """The small-star stage of iteration ``it`` run on the driver over every row at
        ``star.in0 (e, it)``: one global union-find gives the fixed point (one star per
        component centred on its smallest id). No task runs it, so it is no stage (no task
        ``seq``): the driver reports it as its own batch (producer ``wcc-driver``), the star
        operator consuming the rows. Returns the stars ``(component, vertex)``."""
        d = self.driver
        what = f"driver union-find, epoch {e} iteration {it}"
        d.steps.step("driver union-find", e, it)
        kernels = wcc_kernels(d.requested, len(a))
        oa, ob = kernels.contract(a, b)
        d.count_kernels(None, what, [(kernels.placement.backend.value,
                                      kernels.placement.reason)])
        # the star operator consumed every row at star.in0 (e, it) and sends nothing around
        # the loop; the next frontier query waits for this batch (JobDriver.sync)
        d.report(Report().consumed("star", 0, (e, it), len(a)))
        return oa, ob


def run_wcc(spark, edges, *, epochs: int = 1, out: str | None = None,
            partitions: int | None = None, backend: str | None = None,
            progress: bool | None = None, on_epoch=None, task_wrapper=None,
            executor_input: bool | None = None, follow: float | None = None,
            checkpoint_dir: str | None = None, progress_log=None,
            overwrite: bool = False,
            loop_checkpoint: "float | str | None" = DEFAULT_LOOP_CHECKPOINT,
            partitioner: "Partitioner | str" = Partitioner.LOCALITY,
            columns=None, table: str | None = None, fmt: str | None = None,
            header: str = "auto", epoch_column: str | None = None,
            epoch_every: str | None = None, ids: str = "int",
            changes: bool = False) -> WccResult:
    """Run the incremental WCC job.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    edges : str, Path, pyarrow.Table, pyspark.sql.DataFrame or SparkEdges
        An edge file (SNAP text, CSV, Parquet; :mod:`~spark_plugin.sources`) split into
        ``epochs`` slices, or a directory of epoch files (one epoch per file, in natural
        order of the names: ``e2`` before ``e10``), or an Arrow table with integer
        columns ``src`` and ``dst`` (other columns ignored), split like a file: the driver
        reads these. A **Spark source** is read by the executors and never by the driver
        (:mod:`spark_plugin.sources`): a Hadoop URI (``hdfs://``, ``s3a://``, ``file://``
        ...) of Parquet, ORC, CSV or text, a directory as Spark writes it (``part-*``,
        ``_SUCCESS``, ``key=value/`` folders: one dataset, not one epoch per file), a
        DataFrame (never collected), or ``table``; its epochs are ``epochs`` equal slices
        in read order, or ``epoch_column``'s values or windows. Every input file's size, modification time and
        inode are recorded when the job starts; a file that changes before its epoch is
        written stops the job with ``EdgeInputError`` naming it. An input without edges, or
        a directory without epoch files (not followed), raises ``EdgeInputError``.
    epochs : int
        Number of slices of a single file or table (a directory: must be 1).
    out : str, optional
        Parquet dataset to append ``epoch, vertex, component`` (int64) to, one append per
        final epoch. Without it the last epoch's labels are in ``result.labels``. A local
        ``out`` is resumable (:mod:`spark_plugin.jobs.recovery`, docs/wcc.md "Crash
        recovery"): its manifest records each final epoch after its data; a run on an
        existing ``out`` of the same job skips the epochs already final there (not re-read,
        not written again) and resumes from the last one's labels.
    overwrite : bool
        Remove what a job wrote into an existing ``out`` and start from epoch 0 (an ``out``
        that holds anything else, or is or contains the input, is refused).
    loop_checkpoint : float or "off", optional
        With a local ``out``: write the Spark loop's state (its edges after a small-star
        stage) into ``out`` as a *loop checkpoint* when at least this many seconds have
        passed since the epoch's last one (default 60; ``0``: after every round; ``None`` or
        ``"off"``: never), so that a killed epoch resumes after its last checkpointed
        iteration instead of from its first (docs/wcc.md "Crash recovery"). An epoch
        finished on the driver has no iterations to checkpoint.
    partitions : int, optional
        Spark partitions per stage (fixed: one producer per partition); default the
        session's default parallelism.
    partitioner : {"locality", "hash"}
        How an epoch run on Spark partitions its contract stage, whose tasks each contract
        what they hold with a union-find (:mod:`spark_plugin.jobs.wcc.partition`):
        ``locality`` (default) cuts a cheap vertex order -- the ids, or the order in which
        the vertices first appear in the epoch's input, whichever cuts fewer edges -- into
        ``partitions`` ranges, so that a task holds a connected stretch of the graph where
        the order follows it (each epoch line then ends its numbers with the share of cut
        edges, ``cut 3.1%``); for a Spark source's epoch, ranges of the ids cut at the
        quantiles of a sample where the sample says they cut few edges, else the rows are
        contracted where the executors read them, with no shuffle; ``hash`` hashes
        ``least(src, dst)``. The labels do not depend on it; the rounds do.
    backend : {"auto", "cpu", "cuda"}, optional
        Where the WCC kernels run, decided per task by :func:`wcc_kernels` (default
        ``$TFRONT_BACKEND``, else ``auto``). ``cuda``: every task (and the driver's finishing
        union-find) with a usable GPU -- its Spark ``gpu`` resource or ``CUDA_VISIBLE_DEVICES``
        (:mod:`spark_plugin.service.device`), else the process's device 0 -- runs the CuPy twins
        there; the others run the Numba CPU kernels and log why, once per Python worker.
        ``auto``: the same, quietly, for inputs of at least
        :data:`~spark_plugin.service.device.AUTO_GPU_MIN_ROWS` rows. ``cpu``: the Numba kernels
        everywhere, CuPy never imported. The backend is also the engine backend of the
        driver's frontier service, except that ``cuda`` on a driver without a usable GPU
        gives the service the ``cpu`` backend (logged) instead of failing: the tasks still
        use their own GPUs. Which backend the tasks actually used is in
        ``result.kernels``, ``result.kernel_fallbacks`` and each epoch's ``kernels``.
    progress : bool or int, optional
        Progress on stderr (:class:`~spark_plugin.jobs.progress_bar.Progress`): ``1``
        (default, or ``True``) a tqdm bar of epochs, with the round and the frontier at ``label.in0``, when stderr is a terminal;
        ``2`` also one line per round (through the bar); ``0`` or ``False`` nothing. Write
        other lines with :func:`write_line` (as ``tfront wcc`` does) so that none is drawn
        over the bar. The job first loads the driver's kernels; when that compiles them (a first run, an empty Numba cache) it says so once on stderr, and the
        time is ``result.kernel_seconds``, not tracking time.
    on_epoch : callable, optional
        Called with each :class:`EpochSummary` right after the epoch is written.
    task_wrapper : callable, optional
        Testing hook: ``task_wrapper(fn)`` wraps every stage's task function.
    follow : float, optional
        Consume the directory ``edges`` as a stream: after the files present, each new file
        is the next epoch, until the marker file ``_DONE`` appears (every file before it
        consumed) or no file has arrived for ``follow`` seconds (``math.inf``: only the
        marker ends it). The edge input keeps its capability for the next epoch until then.
    checkpoint_dir : str, optional
        Checkpoint every Spark-loop stage reliably to this directory (``SparkContext.
        setCheckpointDir``; on a cluster a shared file system such as HDFS) instead of
        ``localCheckpoint``, which loses its blocks with their executor.
    executor_input : bool, optional
        Let the contract tasks of epochs finished on the driver read their share of a Parquet
        input themselves (row groups of their rows only, validated there) instead of the
        driver reading it and shipping the rows. The path must then be readable by every
        executor; default: on for a ``local[...]`` master, off otherwise (``local-cluster`` too).
    progress_log : str or Path, optional
        Write the progress log here (JSON Lines, flushed per event; ``docs/progress.md``):
        every frontier change at every operator input with the wall-clock time, epoch,
        iteration and step (Spark job description), the messages in flight, and each final
        epoch. ``tfront progress`` draws it. Every Spark job gets a description (``wcc epoch
        E round I: step``) with or without it.
    columns : str or sequence, optional
        The input columns read as ``src``, ``dst``: two names (a Parquet file's, a table's
        or DataFrame's columns, a CSV or text header's fields) or 1-based numbers (any
        format), ``"from,to"`` or ``(1, 3)`` (:class:`~spark_plugin.sources.columns.EdgeColumns`;
        ``tfront wcc --columns``). Part of the job's fingerprint: a resumed ``out`` must
        have been written with the same ones.

    table : str, optional
        A table (``spark.table``, e.g. ``db.edges``) as the input, instead of ``edges``.
    fmt : {"parquet", "orc", "csv", "text"}, optional
        A Spark source's format (default: from its files' names).
    header : {"auto", "yes", "no"}
        Whether a CSV or text Spark source's first line is a header (``auto``: when its first
        two fields are not integers, or are the column positions ``0,1``, which is said).
    epoch_column : str, optional
        One epoch per distinct value of this integer, date or timestamp column (a Hive-style
        partition column too), in order; the input is then read as a Spark source.
    epoch_every : str, optional
        With ``epoch_column``: one epoch per window of this width that holds rows
        (``"1000"`` for an integer column, ``"1h"``, ``"1d"`` for a date or timestamp).
    changes : bool
        With ``out``: write for each epoch only the vertices whose component is new or
        changed since the epoch before (epoch 0: every vertex), not every vertex seen so
        far; the labels after epoch ``e`` are then, per vertex, its row of the latest epoch
        ``<= e`` (a resume rebuilds them so). Part of the job's fingerprint.
    ids : {"int", "string"}
        A Spark source's vertex ids: non-negative integers (whole-number floats and digit
        strings converted), or ``"string"``: any non-empty text (user names, URLs), numbered
        by a dictionary built on the executors over the whole dataset (the same ids in every
        epoch and in a rerun); the labels are written back as names, ``component`` the
        alphabetically first name of the component.

    Raises
    ------
    EdgeInputError
        Malformed input (file and line named); nothing is written for that epoch.
    SparkSourceError
        A Spark source that cannot be read: no HDFS configured for ``hdfs:///...``, no
        Hadoop file system for the scheme, a missing table.
    OutputStateError
        ``out`` exists but cannot be resumed (another job's, not resumable, damaged).
    WccProtocolError
        A frontier did not advance as required (lost delta batch).
    engine.errors.BackendError
        ``backend`` is not one of auto, cpu, cuda (``$TFRONT_BACKEND`` may also name a
        tracker-only backend, ``reference`` or ``timely``: the service uses it, the kernels
        run on the CPU).
    """
    picked = EdgeColumns.parse(columns)   # before anything runs
    edges = spark_source(edges, epochs=epochs, columns=picked, table=table, fmt=fmt,
                         header=header, epoch_column=epoch_column, epoch_every=epoch_every,
                         follow=follow, ids=ids)
    job = WccJob(spark, edges, epochs=epochs, out=out, partitions=partitions, backend=backend,
                 progress=progress, on_epoch=on_epoch, task_wrapper=task_wrapper,
                 executor_input=executor_input, follow=follow, checkpoint_dir=checkpoint_dir,
                 progress_log=progress_log, overwrite=overwrite, changes=changes,
                 loop_checkpoint=loop_checkpoint, partitioner=partitioner)
    job.columns = picked
    return job.run()


def driver_finish_rows(spark) -> tuple[int, str]:
    """The largest loop input (rows) of an epoch finished on the driver, and how it was chosen:
    ``$TFRONT_WCC_DRIVER_ROWS`` when set, else the jobs' sizing rule
    (:func:`spark_plugin.jobs.budget.driver_finish_rows`).

    Raises
    ------
    ConfigError
        ``$TFRONT_WCC_DRIVER_ROWS`` is not a non-negative integer.
    """
    return budget_rows(spark, DRIVER_ROWS_ENV)
