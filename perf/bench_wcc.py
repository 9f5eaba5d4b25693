"""Benchmark of the Spark WCC job (``spark_plugin.jobs.wcc.job.run_wcc``) against GraphX and scipy.

What it measures
----------------
For each graph of ``--graphs`` (:data:`perf.graphs.GRAPHS`: ``rmat1m``, ``rmat10m`` -- R-MAT
with (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) and 1M / 10M edges; ``rmat20m``, ``rmat50m``
with 20M / 50M edges for the large-input runs --, ``grid100``, ``grid300``, ``grid1000``
-- n x n grids --, ``path100k`` -- a path of 100,000 vertices --, ``road`` -- a 320 x 320
grid with seeded local shortcuts --, ``small`` -- 100k components of 2 to 20 vertices --,
and ``tiny`` for smoke tests; ``all`` names issue 22's set :data:`perf.graphs.ISSUE_GRAPHS`;
the default is ``grid100`` alone) the graph is generated once, deterministically, into
``perf/results/graphs/`` (Parquet ``src, dst`` int64 and SNAP-style text, plus a ``.json``
with the component count scipy finds). Then each system of ``--systems`` (default: all
four) runs on it in a **fresh child process** (``python -m perf.bench_wcc --one SYSTEM
--graph FILE ...``):

* ``ours`` -- ``run_wcc(spark, graph.parquet, epochs=E, partitions=P)`` (``--epochs`` E,
  default 1; ``partitioner=`` only with ``--partitioner``), as ``tfront wcc`` runs it: the
  child's environment without ``TFRONT_WCC_DRIVER_ROWS``, so an epoch that fits the driver
  is finished there (the record also holds the driver memory, the driver JVM's heap and the
  driver-finish limit chosen from it);
* ``ours-spark`` -- the same call with ``TFRONT_WCC_DRIVER_ROWS=0`` in the child's
  environment: every round a Spark job;
* ``graphx`` -- GraphX through PySpark's JVM gateway: ``GraphLoader.edgeListFile(sc, graph.txt,
  false, P, MEMORY_ONLY, MEMORY_ONLY)``, then ``graph.ops().connectedComponents()`` and
  ``.vertices().count()`` to force it, with ``spark.graphx.pregel.checkpointInterval``
  (``--checkpoint-interval``, default 10) and ``sc.setCheckpointDir`` (without them the
  Pregel lineage grows with every iteration and a 100 x 100 grid already fails);
* ``scipy`` -- one core: read the Parquet file, build a CSR matrix, ``connected_components``
  (weak); no Spark;
* ``spark-floor`` (only when named in ``--systems``) -- not a WCC: the same Spark session,
  then the Parquet file read by the executors and every edge handed to a Python task once
  (``mapInArrow`` counting the rows; one Spark job). What any job running Python kernels
  over the edges on Spark pays at least on this machine, so GraphX's time over it bounds
  the speed-up such a job can reach here.

Both Spark systems get the same settings: the ``local`` preset of ``spark_plugin.session.config``
with ``spark.master`` = ``--master`` (default ``local[2]``), ``--partitions`` P (default: the
master's core count) as shuffle partitions, default parallelism and input partitions, the
same ``--driver-memory`` and the same checkpoint interval and directory.

Times
~~~~~
* ``whole_s`` -- the whole process, including interpreter and Spark start-up, measured by the
  parent from ``fork`` to ``wait``, minus ``verify_s`` (see below);
* ``job_s`` -- measured by the child around the job alone, from the started session to the
  forced result (for every system it includes reading the input file);
* ``session_s`` -- the child's Spark session start-up; ``reported_s`` and ``tracking_s`` --
  ``result.seconds`` and ``result.tracking_seconds`` of ``run_wcc``; ``tracking_share`` =
  ``tracking_s / reported_s``.

Spark jobs
~~~~~~~~~~
``spark_jobs`` -- the Spark jobs the timed job ran, counted by Spark's status tracker
(:mod:`perf.spark_jobs`: job ids are numbered in submission order, whatever group or thread
runs them; the tracker works with ``spark.ui.enabled=false``, and ``spark.ui.retainedJobs``
is raised so that it forgets none), for ``ours`` and GraphX alike, without asking our code;
``spark_jobs_per_epoch`` -- that over the epochs (GraphX: one). ``rounds`` -- our job's
rounds (last epoch), as it reports them.

Timeouts
~~~~~~~~
Each run has ``--timeout`` seconds (GraphX: ``--graphx-timeout``, where given); past it
its process group is killed and the record says ``status: timeout``, ``timed_out: true`` and,
instead of times, lower bounds ``whole_s_at_least`` and ``job_s_at_least`` (from the
moment the child said its job started; None when it never did). A ratio against a
timed-out GraphX is a lower bound (``>=``), and decides a target only when it reaches it
(else the target is ``open``).

After the timed job GraphX's component count is computed (``vertices.values.distinct.count``,
another Spark job) to check it against scipy's; that takes ``verify_s``, which is subtracted
from the whole-process time (``whole_raw_s`` keeps the raw figure). ``ours`` reports its count
in its result at no extra cost.

Memory
~~~~~~
``driver_maxrss_kib``: the child Python process's own peak (``VmHWM``; ``ru_maxrss`` is
inherited across ``exec`` from the parent, which generated the graph); ``jvm_hwm_kib``: the Spark
JVM's ``VmHWM`` from ``/proc/<pid>/status`` read just before stopping Spark (the JVM is never
reaped by the child, so ``RUSAGE_CHILDREN`` cannot see it); ``workers_hwm_kib``: the sum of
``VmHWM`` over the Python workers alive under the JVM at that point; ``peak_total_kib`` = the
sum of the three (an upper bound on the peak footprint of the process tree).
``tree_maxrss_kib`` is the ``ru_maxrss`` the parent gets from ``wait4``: the largest process
the child reaped, in practice the child itself (the JVM outlives it and is not counted there)
-- but at least the parent's own peak at the fork, which ``ru_maxrss`` carries across
``exec``: read ``peak_total_kib``.

A system that fails, or runs past its timeout, is recorded with ``status`` ``"failed"`` /
``"timeout"`` and its error; the benchmark goes on.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_wcc                       # grid100, all four systems
    python -m perf.bench_wcc --graphs all --timeout 240 --graphx-timeout 150 \\
        --out perf/results/wcc.json --plot perf/results/wcc.png

Large inputs with ``tfront wcc``'s default memory (the driver's heap sized from the machine,
``--driver-memory auto``), 20M and 50M edges in 4 epochs, peak memory of the JVM and the
Python processes in the JSON (several minutes each on a 2-core machine)::

    python -m perf.bench_wcc --graphs rmat20m,rmat50m --systems ours,scipy \
        --driver-memory auto --epochs 4 --timeout 3600 --out perf/results/wcc-large.json

How to read the output
----------------------
The table has one row per (graph, system): status, whole-process and job seconds (``>T``:
timed out), Spark start-up, Spark jobs per epoch, rounds, peak memory (MB,
``peak_total_kib``), component count and whether it equals scipy's, and for ours the share
of job time spent in progress tracking. Below it, per graph, the speed-ups of ``ours`` and
``ours-spark`` over GraphX (GraphX time / ours; above 1 means ours is faster; ``>=``: a
lower bound), and the targets (:data:`TARGETS`: issue 22's 10x GraphX on grid300 and rmat10m,
whole process; ``ours-spark``'s Spark jobs per epoch on grid300 at most a tenth of its
diameter 598) with PASS / FAIL / open / n/a. The JSON (``--out``) holds ``commit``, ``dirty``,
``machine``, ``parameters``, ``graphs`` (metadata), ``runs`` (raw records), ``speedups``,
``targets``. The PNG (``--plot``) shows whole-process seconds, job seconds and Spark jobs per
epoch per graph and system on log scales, a timed-out run as a hatched bar up to its bound.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from perf import graphs as G  # noqa: E402
from perf.common import (add_output_args, child_env, child_main, commit_info,  # noqa: E402
                         commit_label, job_started, machine, maxrss_kib, name_list, proc_kib,
                         process_children, progress,
                         run_child_process, write_results)
from perf.spark_jobs import RETAINED_JOBS, JobCount  # noqa: E402
from perf.systems import (OURS, SYSTEMS, Target, evaluate_targets, fmt_time,  # noqa: E402
                          format_runs, format_speedups, format_targets, plot_systems, speedups,
                          system_env)

#: Kept small so that a plain run (and tests/perf) is quick; ``--graphs all``: the issue's set.
DEFAULT_GRAPHS = ("grid100",)
RESULT_MARK = "BENCH_WCC_RESULT "
#: The environment variable that sizes what the driver finishes (``ours-spark``: ``0``).
DRIVER_ROWS_VAR = "TFRONT_WCC_DRIVER_ROWS"

#: GraphX reference figures from the issue (seconds, whole process / job), 2-core machine.
GRAPHX_REFERENCE = {"rmat1m": {"whole_s": 17.0, "job_s": 8.0}, "rmat10m": {"whole_s": 144.0},
                    "grid300": {"whole_s": 121.0}}

#: Targets of issue 22 (item 6), and the earlier ones that still hold.
TARGETS = [
    Target("grid300", "speedup", 10.0, "ours >= 10x GraphX, whole process, grid300"),
    Target("rmat10m", "speedup", 10.0, "ours >= 10x GraphX, whole process, rmat10m"),
    Target("grid300", "jobs_per_diameter", 0.1,
           "ours-spark: Spark jobs per epoch <= diameter / 10, grid300", system="ours-spark"),
    Target("grid1000", "finishes", None, "ours finishes the 1000 x 1000 grid"),
    Target("*", "tracking_share", 0.05, "progress tracking <= 5% of our job time (every graph)"),
]


# --- environment ---------------------------------------------------------------------------

def _java_version() -> str | None:
    try:
        r = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return (r.stderr or r.stdout).splitlines()[0] if (r.stderr or r.stdout) else None


def _machine() -> dict:
    extra = {"java": _java_version()}
    try:
        with open("/proc/meminfo") as f:
            extra["mem_total_kib"] = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        extra["mem_total_kib"] = None
    for mod in ("scipy", "pyarrow", "pyspark"):
        try:
            extra[mod] = __import__(mod).__version__
        except ImportError:
            extra[mod] = None
    return machine(**extra)


def master_cores(master: str) -> int:
    """Cores of a ``local[N]`` / ``local[N,F]`` / ``local[*]`` / ``local`` master."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if not m:
        return os.cpu_count() or 1
    if m.group(1) in (None,):
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


# --- memory readings -----------------------------------------------------------------------

def _maxrss_kib() -> int:
    """This process's peak resident memory. On Linux its ``VmHWM``: ``ru_maxrss`` survives
    ``exec`` and so starts at the benchmark parent's peak (which generated the graph) --
    every child reported the same figure as the largest one before."""
    own = _vm_hwm_kib(os.getpid())
    return maxrss_kib() if own is None else own


def _vm_hwm_kib(pid: int) -> int | None:
    return proc_kib(pid, "VmHWM")


def _descendants(pid: int) -> list[int]:
    """Process ids below ``pid`` (Linux ``/proc``), any depth."""
    children = process_children()
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _spark_memory(sc) -> dict:
    """JVM and Python-worker high-water marks (KiB), read while Spark still runs."""
    try:
        jvm_pid = int(sc._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001
        return {"jvm_pid": None, "jvm_hwm_kib": None, "workers_hwm_kib": None, "workers": 0}
    workers = [p for p in _descendants(jvm_pid)]
    hwm = [h for h in (_vm_hwm_kib(p) for p in workers) if h is not None]
    return {"jvm_pid": jvm_pid, "jvm_hwm_kib": _vm_hwm_kib(jvm_pid),
            "workers_hwm_kib": sum(hwm), "workers": len(hwm)}


# --- the child: one system on one graph ----------------------------------------------------

def spark_settings(master: str, partitions: int, driver_memory: str,
                   checkpoint_interval: int) -> dict[str, str]:
    """The Spark settings both Spark systems run with (on top of the ``local`` preset).
    ``driver_memory`` ``auto`` keeps the preset's, sized from the machine
    (``spark_plugin.session.config.default_driver_memory``), as ``tfront wcc`` does by default."""
    settings = {
        "spark.master": master,
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.default.parallelism": str(partitions),
        "spark.driver.memory": driver_memory,
        "spark.ui.enabled": "false",
        # the status tracker the Spark jobs are counted from keeps this many jobs
        "spark.ui.retainedJobs": str(RETAINED_JOBS),
        "spark.graphx.pregel.checkpointInterval": str(checkpoint_interval),
    }
    if driver_memory == "auto":
        del settings["spark.driver.memory"]
    return settings


def start_spark(settings: dict[str, str], checkpoint_dir: str, app_name: str):
    from spark_plugin.session.config import build_session

    spark = build_session("local", app_name=app_name, conf=settings)
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.setCheckpointDir(checkpoint_dir)
    return spark


@contextmanager
def timed_job(rec: dict, sc=None) -> Iterator[dict]:
    """``with timed_job(rec, sc):`` the body is the timed job: ``rec["job_s"]`` its seconds and,
    with a SparkContext ``sc``, ``rec["spark_jobs"]`` / ``rec["spark_jobs_exact"]`` the Spark
    jobs it ran (:class:`perf.spark_jobs.JobCount`, read outside the timed span). On entry the
    child says that its job starts (:func:`perf.common.job_started`): a parent that kills it
    on timeout knows for how long the job ran at least."""
    count = JobCount(sc) if sc is not None else None
    job_started()
    t0 = time.perf_counter()
    yield rec
    rec["job_s"] = time.perf_counter() - t0
    if count is not None:
        rec.update(count.stop())


def graphx_connected_components(sc, edge_list: str, partitions: int, *,
                                count_components: bool = True) -> dict:
    """GraphX ``connectedComponents`` on a SNAP-style edge list, through the JVM gateway.

    ``GraphLoader.edgeListFile(sc, path, canonicalOrientation=false, numEdgePartitions,
    edgeStorageLevel, vertexStorageLevel)`` (Scala default arguments passed explicitly),
    ``graph.ops().connectedComponents()`` (the method lives on ``GraphOps``), forced by
    ``vertices().count()``. Returns ``vertices``, ``job_s``, ``spark_jobs`` (those of the
    timed part) and, with ``count_components``, ``components`` (distinct component ids, an
    extra job) and ``verify_s``.
    """
    jvm = sc._jvm
    level = jvm.org.apache.spark.storage.StorageLevel.MEMORY_ONLY()
    out: dict = {}
    with timed_job(out, sc):
        graph = jvm.org.apache.spark.graphx.GraphLoader.edgeListFile(
            sc._jsc.sc(), str(edge_list), False, int(partitions), level, level)
        cc = graph.ops().connectedComponents()
        out["vertices"] = int(cc.vertices().count())
    if count_components:
        t1 = time.perf_counter()
        pairs = jvm.org.apache.spark.api.java.JavaPairRDD.fromJavaRDD(cc.vertices().toJavaRDD())
        out["components"] = int(pairs.values().distinct().count())
        out["verify_s"] = time.perf_counter() - t1
    return out


def scipy_wcc(parquet: str) -> dict:
    """Read the Parquet edges, build a CSR matrix, weak ``connected_components``; one core.
    Components are counted over the vertex ids that some edge touches."""
    import numpy as np
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    t0 = time.perf_counter()
    table = pq.read_table(parquet, columns=["src", "dst"])
    src = table.column("src").to_numpy()
    dst = table.column("dst").to_numpy()
    t1 = time.perf_counter()
    n = int(max(src.max(), dst.max())) + 1 if src.size else 0
    mat = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
    t2 = time.perf_counter()
    ncomp, _ = connected_components(mat, directed=True, connection="weak")
    present = np.zeros(n, dtype=bool)
    present[src] = True
    present[dst] = True
    n_present = int(present.sum())
    t3 = time.perf_counter()
    return {"vertices": n_present, "components": int(ncomp) - (n - n_present), "job_s": t3 - t0,
            "read_s": t1 - t0, "build_s": t2 - t1, "cc_s": t3 - t2}


def run_one(system: str, graph: str, *, master: str, partitions: int, driver_memory: str,
            checkpoint_interval: int, epochs: int = 1, partitioner: str | None = None) -> dict:
    """Run ``system`` on the graph file ``graph`` in this process; return its record.
    ``ours`` and ``ours-spark`` run the same call (the parent sets the latter's environment);
    ``partitioner`` reaches ``run_wcc`` only when given."""
    if system == "scipy":
        return local_record(system, lambda: scipy_wcc(graph))
    if system == "spark-floor":
        def floor(spark, scratch: str) -> dict:
            rec: dict = {}
            with timed_job(rec, spark.sparkContext):
                rows = spark.read.parquet(graph).mapInArrow(_count_rows, "n long").agg(
                    {"n": "sum"}).collect()[0][0]
            rec["edges"] = int(rows or 0)
            return rec

        return spark_record(system, spark_settings(master, partitions, driver_memory,
                                                   checkpoint_interval),
                            f"bench-wcc-{system}", floor)
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}")

    def job(spark, scratch: str) -> dict:
        from spark_plugin.session.lazy import conf_of, heap_of

        sc = spark if system in OURS else spark.sparkContext   # ours: a LazySession
        rec = {"driver_memory": conf_of(spark, "spark.driver.memory", "1g")}
        if system == "graphx":
            rec.update(graphx_connected_components(sc, graph, partitions))
            rec["spark_jobs_per_epoch"] = rec["spark_jobs"]
            return rec
        from spark_plugin.jobs.wcc.job import driver_finish_rows, run_wcc

        rec["driver_heap_bytes"] = heap_of(spark)
        rec["driver_finish_rows"], rec["driver_finish_rows_why"] = driver_finish_rows(spark)
        extra = {} if partitioner is None else {"partitioner": partitioner}
        with timed_job(rec, sc):
            result = run_wcc(spark, graph, epochs=epochs, out=None, partitions=partitions,
                             backend=None, progress=False, **extra)
        rec["spark_jobs_per_epoch"] = rec["spark_jobs"] / max(1, len(result.epochs))
        rec["reported_s"] = float(result.seconds)
        rec["tracking_s"] = float(result.tracking_seconds)
        rec["tracking_share"] = (rec["tracking_s"] / rec["reported_s"]
                                 if rec["reported_s"] > 0 else None)
        last = result.epochs[-1]
        rec["vertices"] = int(last.vertices)
        rec["components"] = int(last.components)
        rec["rounds"] = int(last.rounds)
        rec["epochs"] = [{k: (float(v) if isinstance(v, float) else v)
                          for k, v in _as_dict(e).items()} for e in result.epochs]
        return rec

    return spark_record(system, spark_settings(master, partitions, driver_memory,
                                               checkpoint_interval), f"bench-wcc-{system}", job,
                        lazy=system in OURS)


def _count_rows(batches):
    """``spark-floor``'s task: every edge reaches Python once; one row, the count."""
    import pyarrow as pa

    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.record_batch([pa.array([n], pa.int64())], names=["n"])


def local_record(system: str, job: Callable[[], dict]) -> dict:
    """The record of a one-core system: ``job()``'s, then the process's peak memory and
    ``child_s``, this process's whole time."""
    t_start = time.perf_counter()
    rec: dict = {"system": system}
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    job_started()
    rec.update(job())
    rec["driver_maxrss_kib"] = _maxrss_kib()
    rec["peak_total_kib"] = rec["driver_maxrss_kib"]
    rec["child_s"] = time.perf_counter() - t_start
    return rec


def spark_record(system: str, settings: dict[str, str], app_name: str,
                 job: Callable[[object, str], dict], *, lazy: bool = False) -> dict:
    """The record of a Spark system: a session started with ``settings`` (``session_s``), then
    ``job(spark, scratch)``'s record (``scratch``: a temporary directory, removed after; the
    checkpoints live in it), the JVM's and workers' memory read before the session stops, the
    driver's peak, their sum ``peak_total_kib`` and ``child_s``.

    ``lazy``: ``job`` is given a :class:`~spark_plugin.session.lazy.LazySession` instead, as
    ``tfront wcc`` / ``tfront sssp`` run our jobs: the session starts when the job first
    runs a Spark job (its start-up is then inside ``job_s``; ``session_s`` says how long it
    took, ``spark_started`` whether it happened)."""
    t_start = time.perf_counter()
    rec: dict = {"system": system}
    scratch = tempfile.mkdtemp(prefix=f"{app_name}-")
    try:
        t0 = time.perf_counter()
        if lazy:
            from spark_plugin.session.config import session_conf
            from spark_plugin.session.lazy import LazySession

            spark = LazySession(
                lambda: start_spark(settings, os.path.join(scratch, "ckpt"), app_name),
                session_conf("local", conf=settings))
        else:
            spark = start_spark(settings, os.path.join(scratch, "ckpt"), app_name)
            rec["session_s"] = time.perf_counter() - t0
        try:
            rec.update(job(spark, scratch))
            if lazy:
                rec["spark_started"] = spark.started
                rec["session_s"] = spark.start_seconds or 0.0
            if not lazy or spark.started:
                from spark_plugin.session.lazy import session_of

                rec.update(_spark_memory(session_of(spark).sparkContext))
        finally:
            spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rec["driver_maxrss_kib"] = _maxrss_kib()
    rec["peak_total_kib"] = sum(v for v in (rec["driver_maxrss_kib"], rec.get("jvm_hwm_kib"),
                                            rec.get("workers_hwm_kib")) if v)
    rec["child_s"] = time.perf_counter() - t_start
    return rec


def _as_dict(obj) -> dict:
    if hasattr(obj, "_asdict"):
        return dict(obj._asdict())
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses
        return dataclasses.asdict(obj)
    return dict(vars(obj))


# --- the parent: child processes -----------------------------------------------------------

def run_child(system: str, meta: dict, args) -> dict:
    """Run one system on one graph in a fresh process; never raises for the system's failure."""
    graph_file = meta["txt"] if system == "graphx" else (
        meta["txt"] if (system in OURS and args.ours_input == "txt") else meta["parquet"])
    if (system in OURS and args.ours_input == "uri") or system == "spark-floor":
        graph_file = (ROOT / meta["parquet"]).resolve().as_uri()   # the executors read it
    cmd = [sys.executable, "-m", "perf.bench_wcc", "--one", system, "--graph", graph_file,
           *system_args(args)]
    rec = {"graph": meta["name"], "system": system, "input": graph_file,
           "cmd": ["python", *cmd[1:]]}   # as one would rerun it, not this interpreter's path
    env = system_env(system, child_env(SPARK_LOCAL_IP="127.0.0.1"), DRIVER_ROWS_VAR)
    if DRIVER_ROWS_VAR in env:
        rec["env"] = {DRIVER_ROWS_VAR: env[DRIVER_ROWS_VAR]}
    timeout = system_timeout(system, args)
    run = run_child_process(cmd, timeout=timeout, mark=RESULT_MARK, env=env)
    rec["whole_raw_s"] = run.whole_s
    rec["returncode"] = run.returncode
    rec["tree_maxrss_kib"] = run.maxrss_kib  # largest single process
    child = run.outcome(rec, timeout)
    if child is not None:
        comps = child.get("components")
        rec["components_ok"] = (comps == meta["components"]) if comps is not None else None
    elif rec["status"] == "failed" and run.result:
        rec["traceback"] = run.result.get("traceback")
    return rec


def system_args(args) -> list[str]:
    """The options a ``--one SYSTEM`` child gets from its parent's ``args``."""
    return ["--master", args.master, "--partitions", str(args.partitions),
            "--driver-memory", args.driver_memory, "--epochs", str(args.epochs),
            "--checkpoint-interval", str(args.checkpoint_interval),
            *(["--partitioner", args.partitioner] if args.partitioner else [])]


def system_timeout(system: str, args) -> float:
    """Seconds a ``system`` run may take: ``--graphx-timeout`` for GraphX (where given),
    ``--timeout`` otherwise."""
    if system == "graphx" and args.graphx_timeout is not None:
        return args.graphx_timeout
    return args.timeout


# --- table, plot ---------------------------------------------------------------------------

def format_table(results: dict) -> str:
    """The runs (:func:`perf.systems.format_runs` plus component count, equal to scipy's,
    tracking share), the speed-ups over GraphX and the targets."""
    def comps_ok(r):
        return {True: "yes", False: "NO", None: "-"}[r.get("components_ok")]

    def share(r):
        v = r.get("tracking_share")
        return "-" if v is None else f"{v * 100:.2f}"

    lines = format_runs(results["runs"], [
        ("comps", 8, lambda r: _fmt(r.get("components"), "d")), ("ok", 3, comps_ok),
        ("track%", 7, share)])
    lines += ["", *format_speedups(results["speedups"]), "", *format_targets(results["targets"])]
    p = results["parameters"]
    lines.append("")
    lines.append(f"commit {commit_label(results)}, master {p['master']}, partitions "
                 f"{p['partitions']}, driver memory {p['driver_memory']}, checkpoint interval "
                 f"{p['checkpoint_interval']}, {results['machine']['cpu_count']} CPUs")
    return "\n".join(lines)


def _fmt(v, spec: str = ".1f", none: str = "-") -> str:
    return none if v is None else format(v, spec)


def plot(results: dict, path: str | os.PathLike) -> None:
    p = results["parameters"]
    plot_systems(results, path, p["graphs"], dpi=120, fontsize=10,
                 title=f"WCC: ours vs GraphX connectedComponents vs scipy ({p['master']}, "
                       f"{p['partitions']} partitions, commit {commit_label(results)}, "
                       f"{results['machine']['cpu_count']} CPUs)")


# --- command line --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_wcc",
                                 description=__doc__.split("\n")[0])
    add_system_args(ap, "wcc", DEFAULT_GRAPHS, driver_memory="8g",
                    driver_memory_help="spark.driver.memory of both Spark systems; 'auto': sized "
                                       "from the machine like tfront wcc's default (default 8g)",
                    extra_systems=("spark-floor",))
    ap.add_argument("--ours-input", choices=("parquet", "txt", "uri"), default="parquet",
                    help="which file run_wcc reads; 'uri': the Parquet file as a file:// URI, "
                         "a Spark source the executors read (the driver never does)")
    return ap


def add_system_args(ap: argparse.ArgumentParser, name: str, graphs: Sequence[str], *,
                    driver_memory: str, driver_memory_help: str | None = None,
                    extra_systems: Sequence[str] = ()) -> None:
    """The options of a benchmark of ``SYSTEMS`` on :data:`perf.graphs.GRAPHS` (``name``:
    ``perf/results/NAME.json`` by default), and the hidden ``--one SYSTEM --graph FILE`` of
    its child processes; ``extra_systems`` may be named too (not run by default)."""
    names = (*SYSTEMS, *extra_systems)
    ap.add_argument("--graphs", default=",".join(graphs), type=G.graph_names,
                    help=f"comma-separated, of {', '.join(G.GRAPHS)}; 'all': the issue's set "
                         f"{','.join(G.ISSUE_GRAPHS)} (default {','.join(graphs)})")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    type=lambda s: name_list(s, names, "system"),
                    help="comma-separated, of " + ", ".join(names) + " (default: "
                         + ", ".join(SYSTEMS) + ")")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=None,
                    help="input / shuffle partitions (default: the master's cores)")
    ap.add_argument("--driver-memory", default=driver_memory, help=driver_memory_help)
    ap.add_argument("--epochs", type=int, default=1,
                    help="ours: split the graph into this many epochs (default 1)")
    ap.add_argument("--checkpoint-interval", type=int, default=10,
                    help="spark.graphx.pregel.checkpointInterval (iterations)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds per system and graph (its process group is then killed and "
                         "the run recorded as timed out)")
    ap.add_argument("--graphx-timeout", type=float, default=None,
                    help="seconds per graph for GraphX (default: --timeout); a timed-out run's "
                         "times, and ratios against them, are lower bounds")
    ap.add_argument("--partitioner", choices=("hash", "locality"), default=None,
                    help="ours: run_{name}(partitioner=...) (default: not passed)")
    ap.add_argument("--cache", default=str(ROOT / "perf" / "results" / "graphs"))
    add_output_args(ap, str(ROOT / "perf" / "results" / f"{name}.json"), quiet="no table")
    ap.add_argument("--one", choices=names, help=argparse.SUPPRESS)
    ap.add_argument("--graph", help=argparse.SUPPRESS)


def parse_args(ap: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``ap``'s arguments, ``--partitions`` defaulting to the master's cores."""
    args = ap.parse_args(argv)
    if args.partitions is None:
        args.partitions = master_cores(args.master)
    return args


def save_systems(results: dict, args: argparse.Namespace, plot, format_table) -> None:
    """Write the JSON, draw ``--plot``; unless ``--quiet``, print the table and the files."""
    out = write_results(results, args.out)
    if args.plot:
        plot(results, args.plot)
    if not args.quiet:
        print(format_table(results))
        print(f"\nwrote {out}" + (f" and {args.plot}" if args.plot else ""))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if args.one:
        if not args.graph:
            raise SystemExit("--one needs --graph FILE")
        return child_main(RESULT_MARK, args.one, lambda: run_one(
            args.one, args.graph, master=args.master, partitions=args.partitions,
            driver_memory=args.driver_memory, checkpoint_interval=args.checkpoint_interval,
            epochs=args.epochs, partitioner=args.partitioner))
    say = progress(args.quiet)
    measured = commit_info()   # the code the runs use: recorded before they start
    metas, runs = {}, []
    for g in args.graphs:
        t0 = time.perf_counter()
        metas[g] = G.ensure_graph(g, args.cache)
        say(f"# {g}: {metas[g]['edges']} edges, {metas[g]['vertices']} vertices, "
            f"{metas[g]['components']} components ({time.perf_counter() - t0:.1f} s to load/generate)")
        for s in args.systems:
            rec = run_child(s, metas[g], args)
            runs.append(rec)
            say(f"#   {s:<10} {rec['status']:<8} whole {fmt_time(rec, 'whole_s')} s, "
                f"job {fmt_time(rec, 'job_s')} s, Spark jobs/epoch "
                f"{_fmt(rec.get('spark_jobs_per_epoch'), '.1f')}, components "
                f"{rec.get('components', '-')}"
                + ("" if rec["status"] == "ok" else
                   f"  [{str(rec.get('error', '')).strip().splitlines()[-1:]}]"))
    sp = speedups(runs, args.graphs)
    results = {
        "benchmark": "wcc",
        **measured,
        "machine": _machine(),
        "parameters": {"graphs": args.graphs, "systems": args.systems, "master": args.master,
                       "partitions": args.partitions, "driver_memory": args.driver_memory,
                       "epochs": args.epochs,
                       "checkpoint_interval": args.checkpoint_interval,
                       "ours_input": args.ours_input, "timeout_s": args.timeout,
                       "graphx_timeout_s": system_timeout("graphx", args),
                       "partitioner": args.partitioner,
                       "spark_settings": spark_settings(args.master, args.partitions,
                                                        args.driver_memory,
                                                        args.checkpoint_interval)},
        "graphs": metas,
        "graphx_reference": GRAPHX_REFERENCE,
        "runs": runs,
        "speedups": sp,
        "targets": evaluate_targets(TARGETS, runs, args.graphs, metas, sp),
    }
    save_systems(results, args, plot, format_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
