"""The flagship job: incremental weakly connected components on Spark, driven by frontiers.

:func:`run_wcc` reads edges in epochs (:mod:`spark_plugin.wcc_io`), and per epoch computes the
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
:class:`~spark_plugin.service.FrontierService` on the driver. Every Spark task reports the
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
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import Backend, GraphBuilder, Summary
from engine.backend import ENV_VAR
from engine.errors import BackendError, TimelyFrontierError
from engine.jit import CompileWatch
from gpu_kernels.unionfind import compact_ids

from .device import KernelPlacement, place_kernels
from .progress_log import ProgressRecorder
from .schema import delta_table
from .service import FrontierService
from .wcc_io import (EdgeInputError, check_input, edge_files, edge_format, edges_table,
                     epoch_sources, even_cuts, read_edges)
from .wcc_recovery import OutputLog, crash_point, job_fingerprint

__all__ = ["run_wcc", "read_edges", "WccResult", "EpochSummary", "WccGraph", "wcc_graph",
           "EdgeInputError", "WccProtocolError", "WccKernels", "wcc_kernels", "WCC_BACKENDS"]

log = logging.getLogger(__name__)

#: Output schema of every stage's ``mapInArrow``: data rows (a, b, f) and delta rows (the rest:
#: the deltas, and the backend the task's kernels ran on with the reason).
STAGE_DDL = ("a bigint, b bigint, f boolean, loc int, ts array<bigint>, diff bigint, "
             "producer string, seq bigint, kernels string, kernels_reason string")
#: The delta columns the frontier service applies.
DELTA_COLUMNS = ["loc", "ts", "diff", "producer", "seq"]
#: The backends ``run_wcc`` and ``tfront wcc --backend`` accept.
WCC_BACKENDS = (Backend.AUTO, Backend.CPU, Backend.CUDA)
PRODUCER = "wcc"
DRIVER = "wcc-driver"
OUTPUT = "wcc-output"
#: An epoch whose loop input (new edges plus the previous stars) has at most
#: :func:`driver_finish_rows` rows is *finished on the driver*: the contract stage's output
#: (data and deltas) is collected in the same Spark job that computes it, and the driver runs
#: the small-star stage of iteration 0 as one global union-find (its deltas reported like a
#: stage's). The limit follows the driver's memory: per loop-input row, the driver JVM holds
#: about :data:`DRIVER_JVM_BYTES_PER_ROW` (the shipped input and the collected results as
#: serialized blobs, with the copies made while they move), of which the collected results
#: are about :data:`DRIVER_RESULT_BYTES_PER_ROW` (bounded by ``spark.driver.maxResultSize``),
#: and the Python driver about :data:`DRIVER_PYTHON_BYTES_PER_ROW` (the rows, the union-find,
#: the labels). ``$TFRONT_WCC_DRIVER_ROWS`` overrides it (``0``: every round on Spark).
DRIVER_JVM_BYTES_PER_ROW = 128
DRIVER_RESULT_BYTES_PER_ROW = 40
DRIVER_PYTHON_BYTES_PER_ROW = 256
#: The limit for a driver with Spark's default 1g heap (about 8.4M rows).
DRIVER_FINISH_ROWS = (1 << 30) // DRIVER_JVM_BYTES_PER_ROW


class WccProtocolError(TimelyFrontierError, RuntimeError):
    """A frontier did not advance as the protocol requires (a lost or duplicated delta batch)."""


@dataclass(frozen=True)
class WccGraph:
    """The job's dataflow graph and the locations the driver reads.

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


def wcc_graph() -> WccGraph:
    """Build the WCC dataflow graph (Figure 2 of the verified-progress-tracking paper, with the
    label operator split into its two exchange stages)."""
    g = GraphBuilder(m=1)
    d = g.add_operator(1, 0, depth=1, name="output")
    a = g.add_operator(0, 1, depth=1, name="edges")
    b = g.add_operator(2, 1, depth=1, name="label")
    s = g.add_operator(1, 2, depth=1, name="star")
    c = g.add_operator(1, 1, depth=1, name="feedback")
    for i in (0, 1):
        g.add_summary(b, i, 0, Summary.identity(1))
    for o in (0, 1):
        g.add_summary(s, 0, o, Summary.identity(1))
    g.add_summary(c, 0, 0, Summary.feedback(1))
    g.connect(a, 0, b, 1)
    g.connect(b, 0, s, 0)
    g.connect(s, 0, c, 0)
    g.connect(c, 0, b, 0)
    g.connect(s, 1, d, 0)
    graph = g.build()
    return WccGraph(graph, graph.source(a, 0), graph.target(b, 0), graph.target(b, 1),
                    graph.target(s, 0), graph.source(s, 1), graph.target(d, 0))


@dataclass(frozen=True)
class EpochSummary:
    """One final epoch: sizes, Spark iterations (``rounds``) and wall seconds.

    ``output_frontier`` is the frontier at ``output.in0`` when the epoch was declared final
    (every element has an epoch greater than ``epoch``). ``kernels`` counts the epoch's
    tasks per backend their kernels ran on, as ``(backend, tasks)`` pairs sorted by backend
    (``"cpu"``, ``"cuda"``); the driver's finishing union-find counts as one task.
    ``source`` names what became the epoch (a file of a directory, or rows of a file);
    ``new_edges`` is the epoch's own input rows (``edges`` counts all epochs so far).
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

    def line(self) -> str:
        """``epoch E: vertices V, edges M, components C, rounds R, S.SS s, kernels cpu N``."""
        text = (f"epoch {self.epoch}: vertices {self.vertices}, edges {self.edges}, components "
                f"{self.components}, rounds {self.rounds}, {self.seconds:.2f} s")
        if self.kernels:
            text += ", kernels " + " ".join(f"{b} {n}" for b, n in self.kernels)
        return text


@dataclass
class WccResult:
    """What :func:`run_wcc` did.

    ``seconds`` is the job's wall time (the session already running); ``tracking_seconds``
    the driver's progress-tracking time on its main thread (building the stages' delta
    batches, ``FrontierService.apply`` of them, frontier queries, and waiting for its own
    batches on the tracking thread); ``tracking_background_seconds`` the time the tracking
    thread spent building and applying the driver's own batches (overlapped with Spark work,
    except what ``tracking_seconds`` waited for); ``delta_collect_seconds`` the Spark jobs
    that bring the tasks' delta rows to the driver (the checkpointed stage output's delta
    rows, or the whole output of a stage collected to finish the epoch on the driver). ``labels`` (``vertex,
    component``, sorted by vertex) is the last epoch's labels when no ``out`` was given;
    ``service`` the frontier service (all its counts are zero at the end); ``stages`` the
    number of Spark stages run (two per iteration). ``backend`` is the requested kernel
    backend; ``kernels`` counts tasks per backend their kernels actually ran on (every
    stage's tasks, and the driver's finishing union-find as one task); ``kernel_fallbacks``
    maps each reason a task ran the CPU kernels although ``cuda`` or ``auto`` was requested
    to its number of tasks; ``service_backend`` is the frontier service's engine backend.
    ``kernel_seconds`` is the time the driver took to load its kernels from Numba's cache --
    or to compile them, ``kernels_compiled`` > 0 (the number of compilations: a first run,
    or an empty cache) -- on the tracking thread while the job read its first epoch and ran
    its first Spark job; waiting for it is not part of ``tracking_seconds``. ``checkpoints``:
    with a checkpoint directory, the checkpoints left
    there -- the stars and the labels of the newest final epoch run on Spark, what a restart
    from that epoch needs; everything superseded is deleted as the job goes.
    ``resumed_at`` is the first epoch this run computed: the epochs before it were already
    final in ``out`` (crash recovery); ``epochs`` lists only the epochs this run computed."""

    epochs: list[EpochSummary] = field(default_factory=list)
    seconds: float = 0.0
    tracking_seconds: float = 0.0
    labels: pa.Table | None = None
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

    def total_line(self, out: str | None = None) -> str:
        """The job's summary: epochs, job seconds, and apart from each other the time the
        driver took to load (or, the first time, compile) its kernels and the progress
        tracking time.

        >>> WccResult(seconds=4.0, tracking_seconds=0.05, kernel_seconds=0.2).total_line("o")
        'total: 0 epochs, 4.00 s (kernels loaded 0.20 s, progress tracking 0.05 s); nothing written to o'
        """
        if self.kernels_compiled:
            kernels = f"kernels compiled {self.kernel_seconds:.2f} s (once: cached for later runs)"
        else:
            kernels = f"kernels loaded {self.kernel_seconds:.2f} s"
        if not self.epochs:
            saved = "; nothing written" + (f" to {out}" if out else "")
        elif out:
            saved = f", labels in {out}"
        else:
            saved = ", labels not saved (no --out given)"
        if self.resumed_at:
            kept = ("epoch 0 was" if self.resumed_at == 1
                    else f"epochs 0-{self.resumed_at - 1} were")
            saved += f" (resumed: {kept} already final there)"
        return (f"total: {len(self.epochs)} epochs, {self.seconds:.2f} s ({kernels}, progress "
                f"tracking {self.tracking_seconds:.2f} s){saved}")

    def kernels_line(self) -> str:
        """One line: the requested backend, tasks per backend, and each CPU fallback's reason.

        >>> WccResult(backend=Backend.CUDA, kernels={"cpu": 3},
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


@dataclass(frozen=True)
class WccKernels:
    """The three WCC kernels one task runs, bound to where they run.

    ``contract(a, b) -> (root, leaf)``, ``large(u, v) -> (a, b, new)`` and ``small(lo, hi,
    new) -> (a, b, new)`` take and return NumPy arrays (:mod:`gpu_kernels.unionfind`), on the
    CPU or, through the CuPy twins, on ``placement.device``.
    """

    placement: KernelPlacement
    contract: Callable
    large: Callable
    small: Callable


def wcc_kernels(requested: "Backend | str", rows: int | None = None) -> WccKernels:
    """The kernels a WCC task -- or the driver finishing an epoch -- runs, chosen here.

    Parameters
    ----------
    requested : Backend or str
        The job's backend (``auto``, ``cpu`` or ``cuda``; see
        :func:`~spark_plugin.device.place_kernels`, which decides per task and logs a CPU
        fallback's reason once per Python worker).
    rows : int, optional
        The task's input rows (``auto`` uses the GPU only from
        :data:`~spark_plugin.device.AUTO_GPU_MIN_ROWS` rows).

    Returns
    -------
    WccKernels
        On a usable GPU, the CuPy twins (``uf_stars_xp``, ``large_star_xp``,
        ``small_star_xp`` with ``xp = cupy``): each call copies its NumPy inputs to the
        device once and its outputs back once (a task calls one kernel). Otherwise the Numba
        kernels (``uf_stars``, ``large_star``, ``small_star``); ``cpu`` never imports CuPy.
        Both give the same edges (the tests check it), so the labels do not depend on where a
        task ran.
    """
    placement = place_kernels(requested, rows)
    if placement.backend is Backend.CUDA:
        from gpu_kernels.unionfind import large_star_xp, small_star_xp, uf_stars_xp

        return WccKernels(placement, *(_on_device(fn, placement.device)
                                       for fn in (uf_stars_xp, large_star_xp, small_star_xp)))
    from gpu_kernels.unionfind import large_star, small_star, uf_stars

    return WccKernels(placement, uf_stars, large_star, small_star)


def _on_device(fn, device: int) -> Callable:
    """``fn(xp, *arrays)`` run with CuPy on ``device``: NumPy arrays in, NumPy arrays out."""
    def run(*arrays):
        import cupy

        with cupy.cuda.Device(device):
            out = fn(cupy, *(cupy.asarray(x) for x in arrays))
            return tuple(cupy.asnumpy(x) for x in out)
    run.__name__ = run.__qualname__ = f"{fn.__name__}_on_cuda{device}"
    return run


class _Stage:
    """The ``mapInArrow`` function of one stage: the round's work plus its progress deltas.

    kind ``contract`` consumes edge messages (``f``) at ``label.in1 (e, 0)``; ``large``
    consumes new edges (``f``, counted once per undirected edge) at ``label.in0 (e, i)``; both
    send every output edge to ``star.in0 (e, i)``, flagged new unless it is unchanged (a star
    of the previous epoch, or a large-star edge whose centre did not move). ``small`` consumes every row at
    ``star.in0 (e, i)`` and sends its new edges to ``label.in0 (e, i + 1)`` (via the feedback).
    The kernels are :func:`wcc_kernels`' for ``backend``; the delta rows name where they ran.
    """

    def __init__(self, kind: str, epoch: int, it: int, seq: int, locs: dict, large: bool,
                 wrap: Callable | None, backend: Backend = Backend.CPU):
        self.kind, self.epoch, self.it, self.seq = kind, epoch, it, seq
        self.locs, self.large, self.wrap, self.backend = locs, large, wrap, backend

    def __call__(self, batches):
        fn = self._run if self.wrap is None else self.wrap(self._run)
        return fn(batches)

    def _run(self, batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        bs = list(batches)
        if bs:
            t = pa.Table.from_batches(bs)
            a = _numpy(t.column("a")).astype(np.int64, copy=False)
            b = _numpy(t.column("b")).astype(np.int64, copy=False)
            f = _numpy(t.column("f")).astype(np.bool_, copy=False)
        else:
            a = b = np.zeros(0, np.int64)
            f = np.zeros(0, np.bool_)
        e, i, L = self.epoch, self.it, self.locs
        kernels = wcc_kernels(self.backend, len(a))
        rows = []  # (loc, (epoch, iteration), diff)
        if self.kind == "contract":
            rows.append((L["b_in1"], (e, 0), -int(f.sum())))
            oa, ob = kernels.contract(a, b)
            of = _changed_stars(a, b, f, oa, ob)
            rows.append((L["s_in0"], (e, i), len(oa)))
        elif self.kind == "large":
            rows.append((L["b_in0"], (e, i), -int((f & (a < b)).sum())))
            oa, ob, of = kernels.large(a, b)
            rows.append((L["s_in0"], (e, i), len(oa)))
        else:
            rows.append((L["s_in0"], (e, i), -len(a)))
            oa, ob, of = kernels.small(a, b, f)
            rows.append((L["b_in0"], (e, i + 1), int(of.sum())))
        yield from _data_batches(oa, ob, of, self.large)
        rows = [r for r in rows if r[2] != 0] or [(0, (0, 0), 0)]  # marker: the seq arrives
        yield _delta_batch(rows, f"{PRODUCER}-{part}", self.seq, self.large, kernels.placement)


# Arrays for the tasks' output are built from their buffers: ``pa.array`` asks pyarrow's
# pandas shim whether its input is a pandas object, which imports pandas (about 0.3 s in
# every fresh Python worker, on the first stage's critical path).

def _arrow_fixed(typ: pa.DataType, x: np.ndarray) -> pa.Array:
    """A null-free Arrow array of the fixed-width type ``typ`` over the numpy array ``x``."""
    x = np.ascontiguousarray(x, typ.to_pandas_dtype())
    return pa.Array.from_buffers(typ, len(x), [None, pa.py_buffer(x)])


def _arrow_bool(x: np.ndarray) -> pa.Array:
    bits = np.packbits(np.asarray(x, np.bool_), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(x), [None, pa.py_buffer(bits)])


def _arrow_lists(typ: pa.DataType, rows) -> pa.Array:
    """A list array (``list<int64>`` or ``large_list<int64>``) of the int sequences ``rows``."""
    lens = np.array([len(r) for r in rows], np.int64)
    off = np.zeros(len(rows) + 1, np.int64 if pa.types.is_large_list(typ) else np.int32)
    np.cumsum(lens, out=off[1:])
    values = _arrow_fixed(pa.int64(), np.array([v for r in rows for v in r], np.int64))
    return pa.Array.from_buffers(typ, len(rows), [None, pa.py_buffer(off)], children=[values])


def _arrow_strings(typ: pa.DataType, items) -> pa.Array:
    """A ``string`` / ``large_string`` array of the Python strings ``items``."""
    data = [x.encode("utf-8") for x in items]
    off = np.zeros(len(data) + 1, np.int64 if pa.types.is_large_string(typ) else np.int32)
    np.cumsum([len(d) for d in data], out=off[1:])
    return pa.Array.from_buffers(typ, len(data),
                                 [None, pa.py_buffer(off), pa.py_buffer(b"".join(data))])


def _numpy(col) -> np.ndarray:
    """The values of an Arrow (chunked) array of a fixed-width or boolean type as a writable
    numpy array, read from its buffers (``to_numpy`` imports pandas too); arrays with nulls
    go through ``to_numpy``."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    typ = col.type
    parts = []
    for c in chunks:
        n, off = len(c), c.offset
        if c.null_count:
            parts.append(c.to_numpy(zero_copy_only=False))
        elif pa.types.is_boolean(typ):
            bits = np.frombuffer(c.buffers()[1], np.uint8)
            parts.append(np.unpackbits(bits, count=off + n, bitorder="little")[off:]
                         .astype(np.bool_))
        else:
            dt = np.dtype(typ.to_pandas_dtype())
            parts.append(np.frombuffer(c.buffers()[1], dt, count=n, offset=off * dt.itemsize))
    if not parts:
        return np.zeros(0, np.bool_ if pa.types.is_boolean(typ) else typ.to_pandas_dtype())
    return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()


def _to_ipc(batches, schema: pa.Schema) -> bytes:
    """Arrow record batches as one Arrow IPC stream (the bytes a task ships)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


_EDGE_SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64())])


def _from_ipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


class _IpcTask:
    """``RDD.mapPartitions`` function around a stage function, for epochs finished on the
    driver. Each element of the partition is ``(state, new)``: ``state`` an Arrow IPC blob of
    rows ``a, b, f`` (or ``None``), ``new`` the epoch's new edges as such a blob or as a
    :class:`~spark_plugin.wcc_io.ParquetSlice` the task reads and validates itself. ``fn``
    gets them as record batches (the same contract as ``mapInArrow``); the task yields one
    ``(blobs, loops, error)``: ``fn``'s output as two Arrow IPC blobs -- its data rows
    (columns ``a, b`` only: the driver needs no flag) and its delta rows --, the distinct
    self-loop vertices of the new edges (int64), and ``None`` -- or ``(None, None, (message,
    path, row))`` when the input is malformed (the driver raises ``EdgeInputError``, Spark
    does not retry a deterministic error).

    The rows never become Spark SQL rows (no ``createDataFrame``, no SQL plan, no shuffle):
    the contract stage is correct on any split of its rows, because the driver's global
    union-find completes it."""

    def __init__(self, fn, schema: pa.Schema):
        self.fn, self.schema = fn, schema

    def __call__(self, elements):
        batches, loops = [], []
        try:
            for state, new in elements:
                if state is not None:
                    batches += _from_ipc(state).to_batches()
                if isinstance(new, (bytes, bytearray)):
                    t = _from_ipc(new)
                    a, b = (_numpy(t.column(c)) for c in ("a", "b"))
                    batches += t.to_batches()
                else:
                    t = new.read()
                    a, b = (_numpy(t.column(c)) for c in ("src", "dst"))
                    batches.append(pa.RecordBatch.from_arrays(
                        [_arrow_fixed(pa.int64(), a), _arrow_fixed(pa.int64(), b),
                         _arrow_bool(np.ones(len(a), np.bool_))], names=["a", "b", "f"]))
                loops.append(np.unique(a[a == b]).astype(np.int64))
        except EdgeInputError as err:
            yield None, None, (str(err), err.path, err.line)
            return
        loops = np.concatenate(loops) if loops else np.zeros(0, np.int64)
        data, deltas = [], []
        for batch in self.fn(iter(batches)):
            isd = batch.column("a").is_null()
            if isd.true_count:
                deltas.append(batch.filter(isd))
            if isd.true_count < batch.num_rows:
                data.append(batch.filter(pc.invert(isd)).select(["a", "b"]))
        yield (_to_ipc(data, _EDGE_SCHEMA), _to_ipc(deltas, self.schema)), loops, None


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
        return iter(())


def _local_path(out) -> bool:
    """``out`` names the local file system (no URL scheme other than ``file:``)."""
    text = str(out)
    return "://" not in text or text.startswith("file://")


def _fresh_remote_out(spark, out, overwrite: bool) -> None:
    """A non-local ``out`` (HDFS, S3, ...) keeps no manifest, so the job cannot resume it:
    it must not exist yet -- appending to it again would write its epochs twice -- unless
    ``overwrite``, which deletes it first (through Hadoop's ``FileSystem``)."""
    from .errors import OutputStateError

    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(str(out))
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return
    if not overwrite:
        raise OutputStateError(
            f"{out} exists: crash recovery keeps its records only in a local --out, so "
            f"appending to this one again would write its epochs twice; pass --overwrite "
            f"(overwrite=True) to start over, or choose a new path")
    if not fs.delete(path, True):
        raise OutputStateError(f"{out}: could not delete it to start over")


def _append_local(out, epoch: int, labels: pa.Table, name: str | None = None) -> list[str]:
    """Append one epoch's labels to the local Parquet dataset ``out`` as one part file,
    written under a hidden name, fsynced and renamed when complete (readers -- pyarrow,
    Spark -- skip hidden files, so they never see a partial part). Same columns as Spark's
    writer: ``epoch, vertex, component`` (int64). No Spark job: the labels are on the
    driver. Returns the file's name."""
    import uuid

    import pyarrow.parquet as pq

    from .wcc_recovery import fsync_file

    text = str(out)
    d = Path(text[len("file://"):] if text.startswith("file://") else text)
    d.mkdir(parents=True, exist_ok=True)
    n = labels.num_rows
    table = pa.table({"epoch": _arrow_fixed(pa.int64(), np.full(n, epoch, np.int64)),
                      "vertex": labels.column("vertex"), "component": labels.column("component")})
    name = name or f"part-epoch-{epoch:06d}-{uuid.uuid4().hex}.parquet"
    tmp = d / f".{name}.tmp"
    pq.write_table(table, tmp)
    fsync_file(tmp)
    os.replace(tmp, d / name)
    return [name]


def _spark_local(out_log, epoch: int, labels, F) -> list[str]:
    """Write one epoch's labels (a DataFrame) into the local dataset of ``out_log``: Spark
    writes a hidden directory inside it, whose part files are fsynced and renamed into the
    dataset. Returns their names (the manifest names them afterwards)."""
    from .wcc_recovery import fsync_file

    tmp = out_log.out / f".epoch-{epoch:06d}.tmp"
    labels.select(F.lit(epoch).cast("long").alias("epoch"), "vertex", "component") \
        .write.mode("overwrite").parquet(str(tmp))
    files = []
    for k, part in enumerate(sorted(tmp.glob("part-*.parquet"))):
        name = out_log.new_name(epoch, k)
        fsync_file(part)
        os.replace(part, out_log.out / name)
        files.append(name)
    shutil.rmtree(tmp)
    return files


def _is_dataframe(edges) -> bool:
    """``edges`` is a Spark DataFrame (classic or Spark Connect)."""
    return not isinstance(edges, (str, os.PathLike, pa.Table)) and all(
        hasattr(edges, a) for a in ("columns", "select", "schema", "sparkSession"))


def _tasks_read(edges) -> bool:
    """Whether the first epoch's contract tasks read their rows themselves (Parquet input)."""
    if isinstance(edges, pa.Table):
        return False
    p = Path(edges)
    if p.is_dir():
        files = edge_files(p)
        p = files[0] if files else p
    return p.is_file() and edge_format(p) == "parquet"


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


def _stars_table(a, b) -> pa.Table:
    """Stars ``(component, vertex)`` held on the driver as loop-input rows (``f`` false)."""
    return pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64()),
                     "f": pa.array(np.zeros(len(a), np.bool_))})


def _types(large: bool):
    return (pa.large_list(pa.int64()) if large else pa.list_(pa.int64()),
            pa.large_string() if large else pa.string())


def _stage_schema(large: bool) -> pa.Schema:
    lst, txt = _types(large)
    return pa.schema([("a", pa.int64()), ("b", pa.int64()), ("f", pa.bool_()),
                      ("loc", pa.int32()), ("ts", lst), ("diff", pa.int64()),
                      ("producer", txt), ("seq", pa.int64()), ("kernels", txt),
                      ("kernels_reason", txt)])


def _data_batches(a, b, f, large: bool, chunk: int = 1 << 16):
    schema = _stage_schema(large)
    n = len(a)
    for s in range(0, n, chunk):
        k = min(chunk, n - s)
        yield pa.RecordBatch.from_arrays(
            [_arrow_fixed(pa.int64(), a[s:s + k]), _arrow_fixed(pa.int64(), b[s:s + k]),
             _arrow_bool(f[s:s + k]), pa.nulls(k, pa.int32()),
             pa.nulls(k, schema.field("ts").type), pa.nulls(k, pa.int64()),
             pa.nulls(k, schema.field("producer").type), pa.nulls(k, pa.int64()),
             pa.nulls(k, schema.field("kernels").type),
             pa.nulls(k, schema.field("kernels_reason").type)], schema=schema)


def _delta_batch(rows, producer: str, seq: int, large: bool,
                 placement: KernelPlacement) -> pa.RecordBatch:
    """The task's delta rows ``(loc, (epoch, iteration), diff)``, each also naming the
    backend its kernels ran on (``placement``) and why."""
    schema = _stage_schema(large)
    k = len(rows)
    return pa.RecordBatch.from_arrays(
        [pa.nulls(k, pa.int64()), pa.nulls(k, pa.int64()), pa.nulls(k, pa.bool_()),
         _arrow_fixed(pa.int32(), np.array([r[0] for r in rows], np.int32)),
         _arrow_lists(schema.field("ts").type, [r[1] for r in rows]),
         _arrow_fixed(pa.int64(), np.array([r[2] for r in rows], np.int64)),
         _arrow_strings(schema.field("producer").type, [producer] * k),
         _arrow_fixed(pa.int64(), np.full(k, seq, np.int64)),
         _arrow_strings(schema.field("kernels").type, [placement.backend.value] * k),
         _arrow_strings(schema.field("kernels_reason").type, [placement.reason] * k)],
        schema=schema)


#: Stage kinds as their steps are called in job descriptions and the progress log.
_STEP_NAMES = {"small": "small-star", "large": "large-star"}



def write_line(text: str, file=None) -> None:
    """Write one line to ``file`` (default stdout) through the progress bar: a tqdm bar on
    the terminal is cleared first and redrawn after, so the two never share a line."""
    file = sys.stdout if file is None else file
    tqdm = sys.modules.get("tqdm")   # a bar exists only if tqdm was imported
    if tqdm is None:
        print(text, file=file, flush=True)
        return
    with tqdm.tqdm.external_write_mode(file=file):
        file.write(text + "\n")
        file.flush()


class _Progress:
    """What the job shows on stderr while it runs, by ``level``:

    * 0: nothing;
    * 1 (the default): on a terminal a tqdm bar of final epochs, its postfix the current
      epoch's round and the frontier at ``label.in0``; nothing otherwise;
    * 2 (``-v``): also one line per round, ``wcc: epoch E round R: frontier label.in0 {..}``
      (written through the bar on a terminal).

    Rounds are counted from 1: after round ``R`` of an epoch the bar and the round line say
    ``round R``, and an epoch that ends there says ``rounds R`` (:class:`EpochSummary`).
    """

    @staticmethod
    def level_of(progress: "bool | int | None") -> int:
        """``run_wcc``'s ``progress`` as a level: ``None``/``True`` 1, ``False`` 0."""
        return 1 if progress is None or progress is True else int(progress)

    def __init__(self, level: "bool | int | None", total: int | None):
        self.level = self.level_of(level)
        self.bar = None
        if self.level >= 1 and sys.stderr.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="epoch", desc="wcc", file=sys.stderr,
                                dynamic_ncols=True)
            except ImportError:  # pragma: no cover
                self.bar = None

    def note(self, text: str) -> None:
        """A one-off message (``wcc: text``) on stderr, shown from level 1."""
        if self.level >= 1:
            write_line(f"wcc: {text}", sys.stderr)

    def round(self, epoch: int, rounds: int, frontier) -> None:
        """Round ``rounds`` (1, 2, ...) of ``epoch`` is complete; ``frontier`` at label.in0."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"epoch {epoch} round {rounds}, frontier label.in0 "
                                     f"{_fmt_frontier(frontier)}")
        if self.level >= 2:
            write_line(f"wcc: epoch {epoch} round {rounds}: frontier label.in0 "
                       f"{_fmt_frontier(frontier)}", sys.stderr)

    def epoch(self, summary: EpochSummary) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _le(t, u) -> bool:
    """The product order of timestamps: every coordinate of ``t`` at most ``u``'s."""
    return all(x <= y for x, y in zip(t, u))


def _fmt_frontier(frontier) -> str:
    return "{" + ", ".join("(" + ", ".join(str(x) for x in t) + ")" for t in frontier) + "}"


class _Checkpoints:
    """Truncates lineage after every stage. With no directory: ``localCheckpoint`` (executor
    storage, fast), tracking the RDDs it persists to release them when superseded. With a
    checkpoint directory (a reliable file system, e.g. HDFS on a cluster): ``checkpoint``,
    written there (under the run's own ``<directory>/<uuid>``, which ``setCheckpointDir``
    creates), so an executor lost mid-run costs a recomputation of nothing but its current
    stage. Each checkpoint is then known by the ``rdd-*`` directories it added, and
    :meth:`release` deletes them once superseded (through Hadoop's ``FileSystem``, so HDFS
    too) -- Spark's own cleaner would only do so when the JVM collects the RDD, and only with
    ``spark.cleaner.referenceTracking.cleanCheckpoints``. :meth:`close` deletes everything of
    the run but what it is told to keep: the newest completed epoch's stars and labels, the
    state a recovery would restart from."""

    def __init__(self, spark, directory: str | None = None):
        self.sc = spark.sparkContext
        self.reliable = directory is not None
        self.root = None
        if self.reliable:
            self.sc.setCheckpointDir(str(directory))
            jvm = self.sc._jvm
            root = self.sc._jsc.sc().getCheckpointDir().get()   # <directory>/<uuid>
            self.root = jvm.org.apache.hadoop.fs.Path(root)
            self.fs = self.root.getFileSystem(self.sc._jsc.hadoopConfiguration())

    def _ids(self) -> set:
        from py4j.protocol import Py4JError

        try:
            return set(int(k) for k in self.sc._jsc.getPersistentRDDs().keySet().toArray())
        except Py4JError as e:  # only a memory optimisation: keep going, say why
            log.warning("cannot list persisted RDDs (%s); superseded checkpoints stay cached", e)
            return set()

    def _files(self) -> set:
        """The run's checkpoint directories (``.../<uuid>/rdd-N``, as URI strings)."""
        if not self.fs.exists(self.root):
            return set()
        return {st.getPath().toString() for st in self.fs.listStatus(self.root)}

    def checkpoint(self, df):
        """``(checkpointed df, ids)``: ids name what :meth:`release` frees (persisted RDD ids,
        or the checkpoint directories written)."""
        if self.reliable:
            before = self._files()
            out = df.checkpoint(eager=True)
            return out, self._files() - before
        before = self._ids()
        out = df.localCheckpoint(eager=True)
        return out, self._ids() - before

    def release(self, ids) -> None:
        if not ids:
            return
        from py4j.protocol import Py4JError

        if self.reliable:
            for path in ids:
                try:
                    self.fs.delete(self.sc._jvm.org.apache.hadoop.fs.Path(path), True)
                except Py4JError as e:   # the labels are right regardless: say what is left
                    log.warning("cannot delete the superseded checkpoint %s: %s", path, e)
            return
        try:
            rdds = self.sc._jsc.getPersistentRDDs()
            for i in ids:
                r = rdds.get(i)
                if r is not None:
                    r.unpersist(False)
        except Py4JError as e:  # only a memory optimisation: keep going, say why
            log.warning("cannot unpersist superseded checkpoints: %s", e)

    def close(self, live, keep=frozenset()) -> tuple:
        """End of the run: release ``live`` (the ids still held) but ``keep``; with a
        directory, also delete any other checkpoint of the run (a stage of a failed epoch),
        and the run's directory when nothing is kept. Returns the kept checkpoint
        directories, sorted."""
        if not self.reliable:
            self.release(set(live) | set(keep))
            return ()
        from py4j.protocol import Py4JError

        try:
            self.release(self._files() - set(keep))
            if not keep:
                self.fs.delete(self.root, True)
        except Py4JError as e:
            log.warning("cannot clean the checkpoint directory %s: %s", self.root, e)
        return tuple(sorted(keep))


def run_wcc(spark, edges, *, epochs: int = 1, out: str | None = None,
            partitions: int | None = None, backend: str | None = None,
            progress: bool | None = None, on_epoch=None, task_wrapper=None,
            executor_input: bool | None = None, follow: float | None = None,
            checkpoint_dir: str | None = None, progress_log=None,
            overwrite: bool = False) -> WccResult:
    """Run the incremental WCC job.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    edges : str, Path, pyarrow.Table or pyspark.sql.DataFrame
        An edge file (SNAP text, CSV, Parquet; :mod:`~spark_plugin.wcc_io`) split into
        ``epochs`` slices, or a directory of epoch files (one epoch per file, in natural
        order of the names: ``e2`` before ``e10``), or a table / DataFrame with integer
        columns ``src`` and ``dst`` (other columns ignored), split like a file. A DataFrame
        is collected to the driver once, at the start (the driver holds each epoch's new
        edges, as it does for a text file). Every input file's size, modification time and
        inode are recorded when the job starts; a file that changes before its epoch is
        written stops the job with ``EdgeInputError`` naming it. An input without edges, or
        a directory without epoch files (not followed), raises ``EdgeInputError``.
    epochs : int
        Number of slices of a single file or table (a directory: must be 1).
    out : str, optional
        Parquet dataset to append ``epoch, vertex, component`` (int64) to, one append per
        final epoch. Without it the last epoch's labels are in ``result.labels``. A local
        ``out`` is resumable (:mod:`spark_plugin.wcc_recovery`, docs/wcc.md "Crash
        recovery"): its manifest records each final epoch after its data; a run on an
        existing ``out`` of the same job skips the epochs already final there (not re-read,
        not written again) and resumes from the last one's labels.
    overwrite : bool
        Remove the content of an existing ``out`` first and start from epoch 0.
    partitions : int, optional
        Spark partitions per stage (fixed: one producer per partition); default the
        session's default parallelism.
    backend : {"auto", "cpu", "cuda"}, optional
        Where the WCC kernels run, decided per task by :func:`wcc_kernels` (default
        ``$TFRONT_BACKEND``, else ``auto``). ``cuda``: every task (and the driver's finishing
        union-find) with a usable GPU -- its Spark ``gpu`` resource or ``CUDA_VISIBLE_DEVICES``
        (:mod:`spark_plugin.device`), else the process's device 0 -- runs the CuPy twins
        there; the others run the Numba CPU kernels and log why, once per Python worker.
        ``auto``: the same, quietly, for inputs of at least
        :data:`~spark_plugin.device.AUTO_GPU_MIN_ROWS` rows. ``cpu``: the Numba kernels
        everywhere, CuPy never imported. The backend is also the engine backend of the
        driver's frontier service, except that ``cuda`` on a driver without a usable GPU
        gives the service the ``cpu`` backend (logged) instead of failing: the tasks still
        use their own GPUs. Which backend the tasks actually used is in
        ``result.kernels``, ``result.kernel_fallbacks`` and each epoch's ``kernels``.
    progress : bool or int, optional
        Progress on stderr (:class:`_Progress`): ``1`` (default, or ``True``) a tqdm bar of
        epochs, with the round and the frontier at ``label.in0``, when stderr is a terminal;
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

    Raises
    ------
    EdgeInputError
        Malformed input (file and line named); nothing is written for that epoch.
    OutputStateError
        ``out`` exists but cannot be resumed (another job's, not resumable, damaged).
    WccProtocolError
        A frontier did not advance as required (lost delta batch).
    engine.errors.BackendError
        ``backend`` is not one of auto, cpu, cuda (``$TFRONT_BACKEND`` may also name a
        tracker-only backend, ``reference`` or ``timely``: the service uses it, the kernels
        run on the CPU).
    """
    from pyspark.sql import functions as F

    from .batch import collect_arrow, large_var_types

    t_start = time.perf_counter()
    if partitions is not None and (isinstance(partitions, bool) or int(partitions) != partitions
                                   or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, got {partitions!r}")
    P = int(partitions or spark.sparkContext.defaultParallelism)
    if _is_dataframe(edges):      # collected once: the driver holds each epoch's new edges
        missing = [c for c in ("src", "dst") if c not in edges.columns]
        if missing:
            raise EdgeInputError(f"edge DataFrame: no column {missing[0]!r} (columns: "
                                 f"{', '.join(edges.columns) or '(none)'})", "edge DataFrame")
        edges = edges_table(collect_arrow(edges.select("src", "dst")), "edge DataFrame")
    requested = _requested_backend(backend)
    service_backend = _service_backend(requested)
    wg = wcc_graph()
    svc = FrontierService(wg.graph, backend=service_backend, strict=True)
    locs = {"b_in0": wg.b_in0, "b_in1": wg.b_in1, "s_in0": wg.s_in0}
    large = large_var_types(spark)
    result = WccResult(service=svc, backend=requested, service_backend=service_backend.value)
    epoch_kernels: dict = {}   # backend -> tasks of the current epoch
    ck = _Checkpoints(spark, checkpoint_dir)
    tracking = 0.0
    collecting = 0.0
    seq = {"driver": 0, "stage": 0, "output": 0}
    driver_rows = driver_finish_rows(spark)[0]
    if executor_input is None:   # local[...] only: local-cluster executors have other cwds
        from .config import is_embedded_master
        executor_input = is_embedded_master(spark.sparkContext.master)

    # The driver's own delta batches are applied on a tracking thread, in order, while the
    # driver goes on (reading the epoch, submitting its Spark job); every frontier query and
    # every stage's apply first waits for them (sync), so no decision sees a stale count.
    pool = ThreadPoolExecutor(1, thread_name_prefix="wcc-tracking")
    pending: list = []
    background = 0.0

    def timed_apply(rows, producer, s):
        """On the tracking thread: build the driver's delta batch and apply it."""
        t0 = time.perf_counter()
        svc.apply(delta_table([r[0] for r in rows], [list(r[1]) for r in rows],
                              [r[2] for r in rows], producer, s))
        return time.perf_counter() - t0

    loading: list = []   # the driver's kernel loading, first on the tracking thread

    def sync():
        nonlocal tracking, background
        if loading:   # waiting for the kernels to load (or compile) is not tracking
            watch = loading.pop().result()
            result.kernel_seconds, result.kernels_compiled = watch.seconds, watch.compiled
        while pending:
            fut = pending.pop(0)
            t0 = time.perf_counter()
            background += fut.result()   # re-raises the apply's error here
            tracking += time.perf_counter() - t0

    def driver(rows, producer=DRIVER, key="driver"):
        nonlocal tracking
        t0 = time.perf_counter()
        steps.tag(producer, seq[key])
        pending.append(pool.submit(timed_apply, list(rows), producer, seq[key]))
        seq[key] += 1
        tracking += time.perf_counter() - t0

    def frontier(loc):
        nonlocal tracking
        sync()
        t0 = time.perf_counter()
        f = svc.frontier(loc)
        tracking += time.perf_counter() - t0
        return f

    def check_stage(deltas, s):
        """Apply a stage's delta rows; raise if a producer's batch for ``s`` is missing."""
        nonlocal tracking
        sync()
        t1 = time.perf_counter()
        res = svc.apply(deltas)
        tracking += time.perf_counter() - t1
        want = {f"{PRODUCER}-{p}": s for p in range(P)}
        got = {p for p, q in res.applied if q == s} | {p for p, q in res.duplicates if q == s}
        if set(want) - got:
            svc.check_complete(want)  # raises MissingBatchError naming the producers

    def count_kernels(s, what, placements):
        """Count stage ``s``'s tasks per backend from their ``(backend, reason)`` pairs; a
        CPU fallback's reason is logged the first time the job sees it."""
        counts: dict = {}
        for k, why in placements:
            counts[k] = counts.get(k, 0) + 1
            epoch_kernels[k] = epoch_kernels.get(k, 0) + 1
            result.kernels[k] = result.kernels.get(k, 0) + 1
            if k == Backend.CPU.value and requested in (Backend.AUTO, Backend.CUDA):
                if why not in result.kernel_fallbacks:
                    log.log(logging.WARNING if requested is Backend.CUDA else logging.INFO,
                            "backend %s: WCC kernels on the CPU in stage %d (%s): %s",
                            requested.value, s, what, why)
                result.kernel_fallbacks[why] = result.kernel_fallbacks.get(why, 0) + 1
        log.info("stage %d (%s): tasks per kernel backend %s", s, what,
                 ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))

    def note_kernels(s, what, deltas):
        """:func:`count_kernels` from a stage's delta rows (a producer is a task)."""
        by_task = {}
        for p, k, why in zip(*(deltas.column(c).to_pylist()
                               for c in ("producer", "kernels", "kernels_reason"))):
            by_task.setdefault(p, (k, why))
        count_kernels(s, what, by_task.values())

    def stage_collect(kind, state_tbl, new, e, it):
        """Run one stage over the driver-held rows ``state_tbl`` (a, b, f; or ``None``) and
        the epoch's new edges ``new`` (a table a, b, f held by the driver, or a
        :class:`~spark_plugin.wcc_io.ParquetSlice` the tasks read) as one Spark job of ``P``
        tasks, each given a contiguous ``1/P`` of both (:class:`_IpcTask`); apply the deltas;
        return the data rows ``a, b`` and the self-loop vertices of the new edges (numpy)."""
        nonlocal collecting
        fn = _Stage(kind, e, it, seq["stage"], locs, large, task_wrapper, requested)
        s = seq["stage"]
        seq["stage"] += 1
        steps.step(kind, e, it, s)
        t0 = time.perf_counter()

        def part(t, p):
            cuts = even_cuts(t.num_rows, P)
            return _to_ipc(t.slice(cuts[p], cuts[p + 1] - cuts[p]).to_batches(), t.schema)

        elements = [(None if state_tbl is None else part(state_tbl, p),
                     part(new, p) if isinstance(new, pa.Table) else new.part(p, P))
                    for p in range(P)]
        out = spark.sparkContext.parallelize(elements, P).mapPartitions(
            _IpcTask(fn, _stage_schema(large))).collect()
        for _, _, err in out:
            if err is not None:   # a task found bad input: the epoch stops, nothing written
                raise EdgeInputError(*err)
        data = pa.concat_tables([_from_ipc(x[0]) for x, _, _ in out])
        deltas = pa.concat_tables([_from_ipc(x[1]) for x, _, _ in out])
        loops = np.concatenate([x for _, x, _ in out])
        collecting += time.perf_counter() - t0
        check_stage(deltas.select(DELTA_COLUMNS), s)
        note_kernels(s, f"{kind}, epoch {e} iteration {it}", deltas)
        return (data.column("a").to_numpy(zero_copy_only=False).astype(np.int64),
                data.column("b").to_numpy(zero_copy_only=False).astype(np.int64), loops)

    def finish_on_driver(a, b, e, it):
        """The small-star stage of iteration ``it`` run on the driver over every row at
        ``star.in0 (e, it)``: one global union-find gives the fixed point (one star per
        component centred on its smallest id), so nothing goes around the feedback. Reported
        as a stage (producer ``wcc-0`` consumes the rows, the other producers send their
        markers). Returns the stars ``(component, vertex)``."""
        nonlocal tracking
        s = seq["stage"]
        seq["stage"] += 1
        steps.step("driver union-find", e, it, s)
        kernels = wcc_kernels(requested, len(a))
        oa, ob = kernels.contract(a, b)
        count_kernels(s, f"driver union-find, epoch {e} iteration {it}",
                      [(kernels.placement.backend.value, kernels.placement.reason)])
        t0 = time.perf_counter()
        rows = [(wg.s_in0, (e, it), -len(a), f"{PRODUCER}-0")] if len(a) else []
        rows += [(0, (0, 0), 0, f"{PRODUCER}-{p}") for p in range(P)
                 if p > 0 or not len(a)]
        tbl = delta_table([r[0] for r in rows], [list(r[1]) for r in rows],
                          [r[2] for r in rows], [r[3] for r in rows], s)
        tracking += time.perf_counter() - t0
        check_stage(tbl, s)
        return oa, ob

    def stage(kind, df, e, it, key):
        """Run one stage on ``df`` (columns a, b, f) partitioned by ``key``; apply its deltas;
        return the checkpointed edge DataFrame and the ids of its persisted RDDs."""
        fn = _Stage(kind, e, it, seq["stage"], locs, large, task_wrapper, requested)
        s = seq["stage"]
        seq["stage"] += 1
        steps.step(_STEP_NAMES.get(kind, kind), e, it, s)
        done, ids = ck.checkpoint(df.repartition(P, key).mapInArrow(fn, STAGE_DDL))
        nonlocal collecting
        t0 = time.perf_counter()
        deltas = collect_arrow(done.filter(F.col("a").isNull())
                               .select(*DELTA_COLUMNS, "kernels", "kernels_reason"))
        collecting += time.perf_counter() - t0
        check_stage(deltas.select(DELTA_COLUMNS), s)
        note_kernels(s, f"{kind}, epoch {e} iteration {it}", deltas)
        return done.filter(F.col("a").isNotNull()).select("a", "b", "f"), ids

    # The driver loads its kernels while it reads the input and Spark runs the first stage.
    # When the driver reads the input itself (text, CSV, or Parquet it ships), a small job
    # starts the Python workers and loads their kernels meanwhile, so the first stage does
    # not wait for both; when the tasks read Parquet themselves the first stage is submitted
    # at once and starts the workers itself.
    warm = ThreadPoolExecutor(1, thread_name_prefix="wcc-warm")
    warming = []
    if not (executor_input and _tasks_read(edges)):
        warming.append(warm.submit(lambda: spark.sparkContext.parallelize(range(P), P)
                                   .mapPartitions(_WarmKernels(requested)).collect()))
    warm.shutdown(wait=False)
    steps = ProgressRecorder(spark.sparkContext, progress_log, graph=wg.graph, job=PRODUCER,
                             meta={"edges": str(edges), "partitions": P,
                                   "backend": requested.value})
    steps.attach(svc)
    try:
        total, sources = epoch_sources(edges, epochs, follow=follow)
    except BaseException as err:
        steps.close(err)   # a reader of the log learns that the job ended, and why
        raise
    state = None        # converged stars (a = component, b = vertex), f false
    state_ids: set = set()
    labels = None       # vertex, component of all vertices seen so far
    labels_ids: set = set()
    kept: set = set()   # the checkpoints of the newest final epoch (stars, labels)
    n_edges = 0
    out_log = None      # the manifest of a local out (crash recovery)
    if out is not None and _local_path(out):
        try:
            out_log, resume = OutputLog.open(out, job_fingerprint(edges, epochs, follow),
                                             overwrite=overwrite)
        except BaseException as err:
            steps.close(err)
            raise
        result.resumed_at = resume.epoch
        if resume.labels is not None:   # the loop's state: the last final epoch's stars
            labels, n_edges = resume.labels, resume.edges
            vert = labels.column("vertex").to_numpy()
            comp = labels.column("component").to_numpy()
            leaf = vert != comp
            state = (comp[leaf], vert[leaf])
        if (resume.epoch or resume.removed) and _Progress.level_of(progress) >= 1:
            were = ("epoch 0 is" if resume.epoch == 1 else f"epochs 0-{resume.epoch - 1} are")
            write_line((f"wcc: resuming {out}: {were} final there, not recomputed"
                        if resume.epoch else f"wcc: resuming {out}: no epoch was final there")
                       + (f"; removed {len(resume.removed)} leftover file"
                          f"{'s' if len(resume.removed) != 1 else ''} of a killed epoch"
                          if resume.removed else ""), sys.stderr)
    elif out is not None:
        try:
            _fresh_remote_out(spark, out, overwrite)
        except BaseException as err:
            steps.close(err)
            raise
    first = result.resumed_at
    bar = _Progress(progress, None if total is None else total - first)
    cap = first         # the epoch the edge input holds a capability for (None: dropped)
    # The driver's kernels (the WCC kernels for the epochs it finishes, and the frontier
    # service's) are loaded first on the tracking thread, while this thread reads the input
    # and starts the first Spark job; they are timed apart: a first run compiles them into
    # Numba's cache, which is not progress tracking (and says so once). The first sync waits
    # for them outside the tracking time.
    def load_kernels():
        with CompileWatch(lambda: bar.note("compiling the Numba kernels (once: cached for "
                                           "later runs) ...")) as watch:
            _WarmKernels(requested)()
            tracker = getattr(svc, "_tracker", None)
            if getattr(tracker, "kernels", None) is not None:
                from engine.batched import warm_up
                warm_up(wg.graph.m, wg.graph.max_depth, tracker.kernels,
                        strategies=(tracker.strategy.value,))
        return watch

    loading.append(pool.submit(load_kernels))
    try:
        driver([(wg.a_out, (first, 0), 1)])  # the edge input's capability for its first epoch
        for e, source in enumerate(sources):
            if e < first:   # final in out: neither re-read nor recomputed nor written again
                out_log.check_source(e, source)
                continue
            if out_log is not None:
                out_log.record_input(e, source)
                crash_point("after-input", e)
            t_epoch = time.perf_counter()
            epoch_kernels.clear()
            steps.step("read", e, 0)
            source.check()   # the input file is still the one recorded when the job started
            scan = source.scan if executor_input else None
            table = None
            if scan is None:
                table = source.read()  # EdgeInputError before anything of this epoch happens
                n_new = table.num_rows
            else:
                n_new = scan.rows      # the tasks read (and validate) the rows themselves
            n_edges += n_new
            more = total is None or e + 1 < total   # a stream: the next epoch may come
            # a sends the epoch's edges to label.in1 at (e, 0); the star operator takes a
            # capability for the epoch's results; a moves its capability on (or drops it).
            rows = [(wg.b_in1, (e, 0), n_new), (wg.s_out1, (e, 0), 1), (wg.a_out, (e, 0), -1)]
            cap = e + 1 if more else None
            if more:
                rows.append((wg.a_out, (e + 1, 0), 1))
            driver([r for r in rows if r[2] != 0])
            edge_ddl = "a bigint, b bigint, f boolean"
            held = isinstance(state, tuple)   # the previous stars are on the driver
            n_state = len(state[0]) if held else 0
            on_driver = (state is None or held) and n_new + n_state <= driver_rows
            if table is None and not on_driver:
                table = source.read()
            if table is not None:
                src = table.column("src").combine_chunks() if n_new else pa.array([], pa.int64())
                dst = table.column("dst").combine_chunks() if n_new else pa.array([], pa.int64())
                new_tbl = pa.table({"a": src, "b": dst,
                                    "f": pa.array(np.ones(n_new, np.bool_))})
            if held and not on_driver:        # back to Spark: the stars become a DataFrame
                state = spark.createDataFrame(_stars_table(*state), schema=edge_ddl)
            if isinstance(labels, pa.Table) and not on_driver:
                labels = spark.createDataFrame(labels, schema="vertex bigint, component bigint")
            if on_driver:
                # one Spark job: contract, collecting its output; the driver finishes the loop
                ca, cb, loops = stage_collect("contract", None if state is None
                                              else _stars_table(*state),
                                              scan if table is None else new_tbl, e, 0)
                it = 0
                sa, sb = finish_on_driver(ca, cb, e, it)
                fb, fs = frontier(wg.b_in0), frontier(wg.s_in0)
                if (any(_le(t, (e, it)) for t in fb) or any(_le(t, (e, it)) for t in fs)
                        or any(t[0] <= e for t in fb)):
                    raise WccProtocolError(
                        f"epoch {e}: the driver finished the loop, but the frontier at "
                        f"label.in0 {_fmt_frontier(fb)} / star.in0 {_fmt_frontier(fs)} has not "
                        f"passed epoch {e}")
                rounds = it + 1
                bar.round(e, rounds, fb)
                state = (sa, sb)
                # labels of every vertex seen so far: the star's centre, or the vertex itself.
                # A vertex of a new edge is a star's centre or leaf unless its component is
                # itself alone, which only a self-loop gives (the tasks return those).
                parts = [sa, sb, loops]
                if labels is not None:
                    parts.append(labels.column("vertex").to_numpy(zero_copy_only=False))
                vert = compact_ids(*parts)[0]   # sorted distinct vertices
                comp = vert.copy()
                if len(sb):
                    comp[np.searchsorted(vert, sb)] = sa
                labels = pa.table({"vertex": pa.array(vert, pa.int64()),
                                   "component": pa.array(comp, pa.int64())})
                stats = {"v": len(vert), "c": int(np.count_nonzero(vert == comp))}
            else:
                new = spark.createDataFrame(new_tbl, schema=edge_ddl)
                inp = new if state is None else state.unionByName(new)
                df, ids = stage("contract", inp, e, 0, F.least("a", "b"))
                it = 0
                while True:
                    df, ids2 = stage("small", df, e, it, F.col("b"))
                    ck.release(ids)
                    ids = ids2
                    fb, fs = frontier(wg.b_in0), frontier(wg.s_in0)
                    if any(_le(t, (e, it)) for t in fb) or any(_le(t, (e, it)) for t in fs):
                        raise WccProtocolError(
                            f"epoch {e} iteration {it}: all tasks reported, but the frontier at "
                            f"label.in0 {_fmt_frontier(fb)} / star.in0 {_fmt_frontier(fs)} has "
                            f"not passed ({e}, {it})")
                    bar.round(e, it + 1, fb)   # rounds so far: the epoch line's count
                    if not any(t[0] <= e for t in fb):
                        break  # converged: no new edge of epoch e can reach the label operator
                    it += 1
                    both = df.unionByName(df.select(F.col("b").alias("a"),
                                                    F.col("a").alias("b"), "f"))
                    df, ids2 = stage("large", both, e, it, F.col("a"))
                    ck.release(ids)
                    ids = ids2
                rounds = it + 1
                steps.step("labels", e, it)
                state, state_ids = df, ids   # the previous stars stay until the epoch is final
                # labels of every vertex seen so far: the star's centre, or the vertex itself
                verts = new.select(F.col("a").alias("vertex")).unionByName(
                    new.select(F.col("b").alias("vertex")))
                if labels is not None:
                    verts = verts.unionByName(labels.select("vertex"))
                lab = verts.distinct().join(
                    state.select(F.col("b").alias("vertex"), F.col("a").alias("component")),
                    "vertex", "left").select(
                    "vertex", F.coalesce(F.col("component"), F.col("vertex")).alias("component"))
                lab, lab_ids = ck.checkpoint(lab)
                labels, labels_ids = lab, lab_ids
                stats = labels.agg(F.count(F.lit(1)).alias("v"),
                                   F.sum((F.col("vertex") == F.col("component")).cast("long"))
                                   .alias("c")).collect()[0]
            steps.step("output", e, it)
            driver([(wg.d_in0, (e, it), 1), (wg.s_out1, (e, 0), -1)])
            driver([(wg.d_in0, (e, it), -1)], producer=OUTPUT, key="output")
            fd = frontier(wg.d_in0)
            if any(t[0] <= e for t in fd):
                raise WccProtocolError(f"epoch {e}: the frontier at output.in0 "
                                       f"{_fmt_frontier(fd)} has not passed epoch {e}")
            source.check()   # the tasks read what the driver recorded: else nothing written
            if out_log is not None:   # data renamed into place, then the manifest names it
                files = (_append_local(out, e, labels, out_log.new_name(e))
                         if isinstance(labels, pa.Table) else _spark_local(out_log, e, labels, F))
                crash_point("after-data", e)
                out_log.record_final(e, files, int(stats["v"] or 0), n_edges)
                crash_point("after-manifest", e)
            elif out is not None:
                lab_df = labels
                if isinstance(labels, pa.Table):
                    lab_df = spark.createDataFrame(labels,
                                                   schema="vertex bigint, component bigint")
                lab_df.select(F.lit(e).cast("long").alias("epoch"), "vertex", "component") \
                    .write.mode("append").parquet(str(out))
            summary = EpochSummary(e, int(stats["v"] or 0), n_edges, int(stats["c"] or 0),
                                   rounds, time.perf_counter() - t_epoch, tuple(fd),
                                   tuple(sorted(epoch_kernels.items())), source.what, n_new)
            result.epochs.append(summary)
            steps.epoch(summary)
            # final: what a restart needs is this epoch's stars and labels; release the older
            ck.release(kept - (state_ids | labels_ids))
            kept = state_ids | labels_ids
            bar.epoch(summary)
            if on_epoch is not None:
                on_epoch(summary)
        if cap is not None:   # the stream ended (or every epoch was final): the edge input
            driver([(wg.a_out, (cap, 0), -1)])   # drops its capability
            cap = None
        if out_log is not None:
            out_log.finish(first + len(result.epochs))
        if out is None and isinstance(labels, pa.Table):
            result.labels = labels   # sorted by vertex (np.unique)
        elif out is None and labels is not None:
            result.labels = collect_arrow(labels.orderBy("vertex"))
        elif labels is None:
            result.labels = pa.table({"vertex": pa.array([], pa.int64()),
                                      "component": pa.array([], pa.int64())})
        sync()
    finally:
        bar.close()
        pool.shutdown(wait=True)
        steps.close(sys.exc_info()[1])   # the end event: ok, or the error that ended the job
        for w in warming:   # a warm-up failure is not the job's: the stages say what failed
            if w.exception() is not None:
                log.warning("warming the WCC kernels failed: %s", w.exception())
        result.checkpoints = ck.close(state_ids | labels_ids, kept)
    result.seconds = time.perf_counter() - t_start
    result.tracking_seconds = tracking
    result.tracking_background_seconds = background
    result.delta_collect_seconds = collecting
    result.stages = seq["stage"]
    return result


def driver_heap_bytes(spark) -> int:
    """The driver JVM's largest heap (``Runtime.maxMemory``): what ``spark.driver.memory``
    (or ``spark-submit --driver-memory``) actually gave it."""
    return int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())


def driver_finish_rows(spark) -> tuple[int, str]:
    """The largest loop input (rows) of an epoch finished on the driver, and how it was chosen:
    ``$TFRONT_WCC_DRIVER_ROWS`` when set, else the smallest of the driver JVM's heap over
    :data:`DRIVER_JVM_BYTES_PER_ROW`, ``spark.driver.maxResultSize`` over
    :data:`DRIVER_RESULT_BYTES_PER_ROW`, and the memory outside the JVM
    (:func:`~spark_plugin.config.machine_memory` less the heap) over
    :data:`DRIVER_PYTHON_BYTES_PER_ROW`.

    Raises
    ------
    ConfigError
        ``$TFRONT_WCC_DRIVER_ROWS`` is not a non-negative integer.
    """
    from .config import format_memory, machine_memory, parse_memory
    from .errors import ConfigError

    env = os.environ.get("TFRONT_WCC_DRIVER_ROWS")
    if env is not None and env.strip() != "":
        try:
            rows = int(env)
        except ValueError:
            rows = -1
        if rows < 0:
            raise ConfigError(f"$TFRONT_WCC_DRIVER_ROWS must be a non-negative integer, "
                              f"got {env!r}")
        return rows, "$TFRONT_WCC_DRIVER_ROWS"
    heap = driver_heap_bytes(spark)
    limits = {f"driver heap {format_memory(heap)}": heap // DRIVER_JVM_BYTES_PER_ROW}
    result_size = spark.sparkContext.getConf().get("spark.driver.maxResultSize", "1g")
    try:
        cap = parse_memory(result_size if result_size[-1:].isalpha() else result_size + "b")
    except Exception:   # an unusual value: Spark checks it; leave this bound out
        cap = 0
    if cap > 0:
        limits[f"spark.driver.maxResultSize {result_size}"] = cap // DRIVER_RESULT_BYTES_PER_ROW
    outside = machine_memory() - heap
    if outside > 0:
        limits[f"{format_memory(outside)} outside the JVM"] = outside // DRIVER_PYTHON_BYTES_PER_ROW
    why, rows = min(limits.items(), key=lambda kv: kv[1])
    return int(rows), why


def _requested_backend(backend) -> Backend:
    """The job's backend: ``backend`` (auto, cpu or cuda), else ``$TFRONT_BACKEND``, else auto.

    Raises
    ------
    BackendError
        An unknown name, or an argument naming a tracker-only backend.
    """
    if backend is None:
        env = os.environ.get(ENV_VAR)
        return Backend.parse(env) if env else Backend.AUTO
    chosen = Backend.parse(backend)
    if chosen not in WCC_BACKENDS:
        raise BackendError(f"the WCC job's backend must be one of "
                           f"{', '.join(b.value for b in WCC_BACKENDS)}, got {backend!r}")
    return chosen


def _service_backend(requested: Backend) -> Backend:
    """The concrete engine backend of the driver's frontier service for ``requested``:
    itself (``auto`` resolved), except ``cuda`` on a driver without a usable GPU, which
    gives ``cpu`` with a logged warning -- the executors may still have GPUs."""
    from engine import resolve_backend

    if requested is Backend.CUDA:
        from engine.cuda_backend import usable_device

        ok, why = usable_device()
        if not ok:
            log.warning("backend cuda: the driver has no usable GPU (%s); its frontier service "
                        "runs on the cpu backend, and every task still runs its kernels on its "
                        "own GPU where it has one", why)
            return Backend.CPU
    return resolve_backend(requested)[0]


#: ``tfront wcc`` verbosity (0 ``--quiet``, 1 default, 2 ``-v``, 3 ``-vv``) -> Spark's log level.
SPARK_LOG_LEVELS = {0: "error", 1: "error", 2: "warn", 3: "info"}


class _BarLogHandler(logging.Handler):
    """Log records on stderr, written through the progress bar (:func:`write_line`)."""

    def emit(self, record):
        try:
            write_line(self.format(record), sys.stderr)
        except Exception:  # noqa: BLE001 -- logging's own convention
            self.handleError(record)


def verbosity(args) -> int:
    """``tfront wcc``'s level: 0 with ``--quiet``, else 1 plus the ``-v`` count (at most 3)."""
    if getattr(args, "quiet", False):
        return 0
    return 1 + min(int(getattr(args, "verbose", 0) or 0), 2)


def main_wcc(args) -> int:
    """The ``tfront wcc`` command (called by :mod:`engine.cli`, which has checked the options'
    forms). The input is validated -- existence, readability, ``--epochs`` / ``--follow``
    against it, the first rows of every file -- before a Spark session starts. Each epoch's
    line names the input that became the epoch; an epoch without edges is said on stderr,
    a run without ``--out`` in the total line (labels not saved). Ctrl-C stops the job
    cleanly (exit 130; the epochs already printed are written). An existing local ``--out``
    of the same job is resumed (docs/wcc.md, "Crash recovery"); when every epoch is already
    final there, this says so and returns 0 without starting Spark; ``--overwrite`` starts
    over.

    Output by :func:`verbosity`: ``--quiet`` prints only warnings and errors; the default
    prints each final epoch's line and the totals on stdout and, on a terminal, a progress bar
    on stderr; ``-v`` adds a line per round and this package's INFO log (which task ran
    which kernels) and Spark's warnings, ``-vv`` DEBUG and Spark's INFO log. Every line goes
    through the bar (:func:`write_line`), so none is drawn over it.

    Spark settings, lowest precedence first: the ``local`` preset (driver memory sized from
    this machine, loopback networking for a ``local[...]`` master), ``spark.ui.enabled=false``;
    what ``spark-submit`` started the JVM with (its ``--master``, ``--conf``,
    ``--driver-memory``, properties file); then ``--master``, ``--driver-memory`` and
    ``--conf KEY=VALUE``. One line on stderr says what was chosen. A JVM started here exits
    when it runs out of heap (``-XX:+ExitOnOutOfMemoryError``) instead of hanging, and the
    job then stops with :class:`~spark_plugin.errors.SparkMemoryError`.
    """
    import tempfile

    from .config import (DRIVER_MEMORY_SHARE, build_session, format_memory, machine_memory,
                         session_conf, submitted_conf)

    follow = getattr(args, "follow", None)
    log_path = getattr(args, "progress_log", None)
    if log_path is not None and not Path(log_path).absolute().parent.is_dir():
        raise FileNotFoundError(f"--progress-log {log_path}: directory "
                                f"{str(Path(log_path).absolute().parent)!r} does not exist")
    epochs = args.epochs
    for note in check_input(args.edges, epochs, follow=follow):
        print(f"tfront wcc: warning: {note}", file=sys.stderr, flush=True)
    level = verbosity(args)
    overwrite = bool(getattr(args, "overwrite", False))
    if overwrite and not args.out:
        from .errors import OutputStateError

        raise OutputStateError("--overwrite needs --out")
    if not overwrite:
        from .wcc_recovery import already_final

        final = already_final(args.out, args.edges, epochs or 1, follow)
        if final is not None:   # a rerun after success: no Spark session at all
            print(f"tfront wcc: {final}", flush=True)
            return 0
    cli_conf = dict(getattr(args, "conf", None) or [])
    if args.master:
        cli_conf["spark.master"] = args.master
    driver_memory = getattr(args, "driver_memory", None)
    if driver_memory:
        cli_conf["spark.driver.memory"] = driver_memory
    submitted = submitted_conf()          # {} unless spark-submit started the JVM
    jvm_running = bool(submitted)
    settings = session_conf("local", conf=cli_conf, submitted=submitted,
                            defaults={"spark.ui.enabled": "false",
                                      "spark.ui.showConsoleProgress": "false"})
    oom_marker = None
    if jvm_running:
        for key in ("spark.driver.memory", "spark.driver.extraJavaOptions"):
            if key in cli_conf and cli_conf[key] != submitted.get(key):
                print(f"tfront wcc: warning: {key}={cli_conf[key]} has no effect: the driver JVM "
                      f"was already started by spark-submit (pass it to spark-submit)",
                      file=sys.stderr, flush=True)
    else:   # this process starts the JVM: make an out-of-memory JVM exit, and say so
        oom_dir = tempfile.mkdtemp(prefix="tfront-wcc-")
        oom_marker = Path(oom_dir) / "jvm-out-of-memory"
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, [
            settings.get("spark.driver.extraJavaOptions", ""), "-XX:+ExitOnOutOfMemoryError",
            f"-XX:OnOutOfMemoryError='touch {oom_marker}'"]))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    done: list[EpochSummary] = []
    handler = _BarLogHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    ours = [logging.getLogger(n) for n in ("engine", "gpu_kernels", "spark_plugin")]
    saved_levels = (root.level, [lg.level for lg in ours])
    root.setLevel(logging.WARNING)
    for lg in ours:
        lg.setLevel({2: logging.INFO, 3: logging.DEBUG}.get(level, logging.WARNING))

    def warn(text: str) -> None:
        write_line(f"tfront wcc: warning: {text}", sys.stderr)

    try:
        try:
            spark = build_session("local", app_name="tfront-wcc", conf=settings,
                                  log_level=SPARK_LOG_LEVELS[level])
        except BaseException:
            if oom_marker is not None:
                shutil.rmtree(oom_marker.parent, ignore_errors=True)
            raise
        try:
            rows, why = driver_finish_rows(spark)
            master = spark.sparkContext.master
            heap = driver_heap_bytes(spark)
            total = machine_memory()
            source = ("--driver-memory" if driver_memory
                      else "--conf" if "spark.driver.memory" in cli_conf
                      else "spark-submit" if "spark.driver.memory" in submitted
                      else "Spark's default" if jvm_running
                      else f"{DRIVER_MEMORY_SHARE:.0%} of this machine's {total / (1 << 30):.1f} GiB")
            if level >= 1:
                sc_conf = spark.sparkContext.getConf()
                write_line(f"tfront wcc: Spark master {master}; driver memory "
                           f"{sc_conf.get('spark.driver.memory', '1g')} ({source}; "
                           f"heap {format_memory(heap)})"
                           + ("" if master.startswith("local[") or master == "local" else
                              f"; executor memory {sc_conf.get('spark.executor.memory', '1g')}")
                           + f"; epochs of up to {rows:,} rows finish on the driver ({why})",
                           sys.stderr)

            def report(s: EpochSummary) -> None:
                done.append(s)
                if level >= 1:
                    write_line(f"{s.line()}; input {s.source}")
                if s.new_edges == 0:
                    warn(f"epoch {s.epoch}: {s.source} has no edges; its labels are those of "
                         f"epoch {s.epoch - 1}" if s.epoch else
                         f"epoch 0: {s.source} has no edges")

            try:
                res = run_wcc(spark, args.edges, epochs=epochs or 1, out=args.out,
                              partitions=args.partitions, backend=args.backend, progress=level,
                              on_epoch=report, follow=follow,
                              checkpoint_dir=getattr(args, "checkpoint_dir", None),
                              progress_log=log_path, overwrite=overwrite)
            except KeyboardInterrupt:
                kept = (f"epochs 0-{done[-1].epoch} are written to {args.out}"
                        if done and args.out else "no epoch was finished" if not done
                        else "labels not saved (no --out)")
                write_line(f"tfront wcc: interrupted after {len(done)} epoch"
                           f"{'s' if len(done) != 1 else ''}; {kept}", sys.stderr)
                return 130
            except TimelyFrontierError:
                raise
            except Exception as e:   # Py4J and Spark errors: a JVM that died or ran out of memory?
                failure = _jvm_failure(e, oom_marker, heap)
                if failure is not None:
                    raise failure from e
                raise
            if level >= 1:
                write_line(res.total_line(args.out))
                write_line(res.kernels_line())
            if not res.epochs and not res.resumed_at:
                warn(f"no epoch file arrived in {args.edges}")
        finally:
            try:
                spark.stop()
            except Exception as e:   # a dead JVM: the job's own error says what happened
                log.debug("stopping the Spark session failed: %s", e)
            if oom_marker is not None:
                shutil.rmtree(oom_marker.parent, ignore_errors=True)
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_levels[0])
        for lg, lv in zip(ours, saved_levels[1]):
            lg.setLevel(lv)
    return 0


def _jvm_status():
    """The exit status of the driver JVM this process started, or ``None`` while it runs
    (or when spark-submit started it)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    return None if proc is None else proc.poll()


def _jvm_failure(err: BaseException, oom_marker, heap: int):
    """The named error for a job that failed because a JVM ran out of memory or died
    (:class:`SparkMemoryError`, :class:`SparkJobError`), or ``None`` for any other failure."""
    from .config import format_memory
    from .errors import SparkJobError, SparkMemoryError

    deadline = time.monotonic() + 3   # a JVM that is exiting takes a moment to be reaped
    while (_jvm_status() is None and "OutOfMemoryError" not in str(err)
           and (oom_marker is None or not oom_marker.exists()) and time.monotonic() < deadline):
        time.sleep(0.1)
    status = _jvm_status()
    hint = (f"rerun with a larger --driver-memory (this run's heap: {format_memory(heap)}), or "
            f"lower TFRONT_WCC_DRIVER_ROWS so that fewer rows are collected on the driver")
    if oom_marker is not None and oom_marker.exists():
        return SparkMemoryError(f"the Spark driver JVM ran out of memory and exited "
                                f"(status {status}): {hint}", status)
    if "OutOfMemoryError" in str(err):
        return SparkMemoryError(f"a Spark JVM ran out of memory ({_first_line(err)}): {hint}; "
                                f"on a cluster, raise --conf spark.executor.memory", status)
    if status is not None:
        return SparkJobError(f"the Spark driver JVM exited with status {status} during the job "
                             f"({_first_line(err)})", status)
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"
