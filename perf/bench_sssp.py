"""Benchmark of the Spark shortest-paths job (``spark_plugin.jobs.sssp.job.run_sssp``) against GraphX's
``ShortestPaths`` (landmark BFS) and scipy.

What it measures
----------------
For each graph of ``--graphs`` (:data:`perf.graphs.GRAPHS`, generated once into
``perf/results/graphs/`` as for the WCC benchmark; ``all``: issue 22's set
``grid100,grid300,path100k,road,rmat1m,rmat10m``; default ``grid100``) the parent picks a
source -- vertex 0 of a grid, path or road graph (a corner, an end: the longest chain of
rounds), the vertex of largest out-degree otherwise -- and each system of ``--systems``
computes the **unweighted BFS levels** from it in a **fresh child process** (``python -m
perf.bench_sssp --one SYSTEM ...``), so that all of them compute the same thing: along the
edges, or both ways on the graphs that stand for undirected ones (``path100k``, ``road``:
the 100k-vertex path from one end is a real 99,999-hop chain) and on every graph with
``--undirected``:

* ``ours`` -- ``run_sssp(spark, graph.parquet, source, epochs=E, partitions=P,
  undirected=U)`` (``partitioner=`` only with ``--partitioner``), as ``tfront sssp`` runs
  it: the child's environment without ``TFRONT_SSSP_DRIVER_ROWS``;
* ``ours-spark`` -- the same with ``TFRONT_SSSP_DRIVER_ROWS=0``: no epoch finished on the
  driver;
* ``graphx`` -- through PySpark's JVM gateway: ``GraphLoader.edgeListFile(sc, graph.txt,
  false, P, MEMORY_ONLY, MEMORY_ONLY)``, ``.reverse()`` (``ShortestPaths`` measures the way
  *to* its landmarks along the edges; reversed, that is the way *from* the source) -- or,
  both ways, ``Graph.fromEdges(edges union reverse.edges)`` --, then
  ``ShortestPaths.run(graph, Seq(source), ClassTag.Int)`` forced by ``vertices().count()``,
  with ``spark.graphx.pregel.checkpointInterval`` and a checkpoint directory as for WCC;
* ``scipy`` -- one core: a CSR matrix and ``shortest_path(unweighted=True, indices=source,
  directed=not U)``.

Every system's result is checked against scipy's: the number of vertices reached, the sum and
the largest of their distances, and a SHA-256 of the sorted ``(vertex, distance)`` pairs.
GraphX's distances are written out with ``saveAsTextFile`` after the timed job and parsed
here; that takes ``verify_s``, subtracted from its whole-process time (as for WCC).

Times, Spark jobs, timeouts and memory are measured as in ``perf.bench_wcc`` (whose
machinery this reuses): ``whole_s`` the whole child process (interpreter and Spark start-up
included) from the parent; ``job_s`` the job alone in the child, after the Spark session is
up; ``spark_jobs`` / ``spark_jobs_per_epoch`` the Spark jobs of the timed job, counted by
Spark's status tracker (:mod:`perf.spark_jobs`) for ours and GraphX alike; a run past
``--timeout`` (GraphX: ``--graphx-timeout``) is killed and recorded with ``timed_out`` and
lower bounds ``whole_s_at_least`` / ``job_s_at_least``; ``peak_total_kib`` the child's own
``VmHWM`` plus the Spark JVM's and its Python workers'. ``rounds`` is ours' rounds summed over
the epochs, as it reports them; ``tracking_s`` its progress-tracking time.

Targets (:data:`TARGETS`, issue 22): ours on ``path100k`` (both ways) under 30 s whole
process; ours at least 10x GraphX on ``grid100`` and 5x on ``rmat1m``, job time (the whole
process's ratio beside it); ``ours-spark``'s Spark jobs per epoch on ``grid300`` at most a
tenth of its diameter (598). A ratio against a timed-out GraphX is a lower bound; it passes a
target it reaches and leaves ``open`` one it does not.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_sssp                      # grid100, all four systems
    python -m perf.bench_sssp --graphs all --timeout 240 --graphx-timeout 150 \\
        --out perf/results/sssp.json --plot perf/results/sssp.png

The JSON holds ``commit``, ``dirty``, ``machine``, ``parameters``, ``graphs`` (with the
source, the direction and scipy's fingerprint), ``runs``, ``speedups`` (per graph and our
system, GraphX time / ours; above 1 ours is faster; ``*_bound`` ``>=`` where GraphX timed
out) and ``targets``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from perf import graphs as G  # noqa: E402
from perf.bench_wcc import (_machine, add_system_args, local_record, parse_args,  # noqa: E402
                            save_systems, spark_record, spark_settings, start_spark, system_args,
                            system_timeout, timed_job)
from perf.common import (child_env, child_main, commit_info, commit_label,  # noqa: E402
                         progress, run_child_process)
from perf.systems import (OURS, SYSTEMS, Target, evaluate_targets, fmt_time,  # noqa: E402
                          format_runs, format_speedups, format_targets, plot_systems, speedups,
                          system_env)

__all__ = ["main", "run_one", "run_child", "scipy_bfs", "graphx_shortest_paths", "fingerprint",
           "pick_source", "speedups", "format_table", "plot", "SYSTEMS", "TARGETS",
           "spark_settings", "start_spark"]

#: Kept small so that a plain run (and tests/perf) is quick; ``--graphs all``: the issue's set.
DEFAULT_GRAPHS = ("grid100",)
RESULT_MARK = "BENCH_SSSP_RESULT "
#: The environment variable that sizes what the driver finishes (``ours-spark``: ``0``).
DRIVER_ROWS_VAR = "TFRONT_SSSP_DRIVER_ROWS"

#: Targets of issue 22 (item 6).
TARGETS = [
    Target("path100k", "whole_under", 30.0,
           "ours (tfront sssp --undirected) on the 100k-vertex path < 30 s, whole process"),
    Target("grid100", "speedup", 10.0, "ours >= 10x GraphX, job time, grid100", key="job"),
    Target("rmat1m", "speedup", 5.0, "ours >= 5x GraphX, job time, rmat1m", key="job"),
    Target("grid300", "jobs_per_diameter", 0.1,
           "ours-spark: Spark jobs per epoch <= diameter / 10, grid300", system="ours-spark"),
]


def fingerprint(vertices: np.ndarray, dist: np.ndarray) -> dict:
    """``reached``, ``dist_sum``, ``dist_max`` and ``digest`` (SHA-256 of the sorted
    ``(vertex, distance)`` int64 pairs) of the reached vertices' distances."""
    vertices = np.asarray(vertices, np.int64)
    dist = np.asarray(dist, np.int64)
    order = np.argsort(vertices, kind="stable")
    pairs = np.stack([vertices[order], dist[order]], axis=1)
    return {"reached": int(len(vertices)), "dist_sum": int(dist.sum()),
            "dist_max": int(dist.max()) if len(dist) else 0,
            "digest": hashlib.sha256(np.ascontiguousarray(pairs).tobytes()).hexdigest()}


def pick_source(meta: dict) -> int:
    """Vertex 0 of a grid, path or road graph (a corner, an end: the longest chain of
    rounds); otherwise the smallest vertex of largest out-degree."""
    if meta["kind"] in ("grid", "path", "road"):
        return 0
    import pyarrow.parquet as pq

    src = pq.read_table(meta["parquet"], columns=["src"]).column("src").to_numpy()
    ids, counts = np.unique(src, return_counts=True)
    return int(ids[np.argmax(counts)])


def scipy_bfs(parquet: str, source: int, undirected: bool = False) -> dict:
    """BFS levels from ``source`` with scipy (one core): read, CSR, ``shortest_path`` (along
    the edges, or both ways when ``undirected``)."""
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    t0 = time.perf_counter()
    t = pq.read_table(parquet, columns=["src", "dst"])
    src, dst = t.column("src").to_numpy(), t.column("dst").to_numpy()
    n = int(max(src.max(), dst.max(), source)) + 1
    mat = csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n))
    mat.data[:] = 1   # duplicate edges were summed: every edge is one hop
    d = shortest_path(mat, directed=not undirected, unweighted=True, indices=source)
    job_s = time.perf_counter() - t0
    reached = np.flatnonzero(np.isfinite(d))
    return {"job_s": job_s, **fingerprint(reached, d[reached].astype(np.int64))}


def graphx_shortest_paths(sc, edge_list: str, source: int, partitions: int,
                          scratch: str, undirected: bool = False) -> dict:
    """GraphX ``ShortestPaths.run`` from ``source`` through the JVM gateway, on the reversed
    graph -- or, ``undirected``, on the graph of the edges and their reverses
    (``Graph.fromEdges(edges union reverse.edges)``) --; forced by ``vertices().count()``
    (``job_s``, ``spark_jobs``). Then (``verify_s``, not part of ``job_s``) the distances are
    saved as text under ``scratch`` and fingerprinted."""
    jvm = sc._jvm
    level = jvm.org.apache.spark.storage.StorageLevel.MEMORY_ONLY()
    int_tag = getattr(getattr(jvm.scala.reflect, "ClassTag$"), "MODULE$").Int()
    rec: dict = {}
    with timed_job(rec, sc):
        graph = jvm.org.apache.spark.graphx.GraphLoader.edgeListFile(
            sc._jsc.sc(), str(edge_list), False, int(partitions), level, level)
        if undirected:
            both = graph.edges().union(graph.reverse().edges())
            graph = jvm.org.apache.spark.graphx.Graph.fromEdges(both, 1, level, level,
                                                                int_tag, int_tag)
        else:
            graph = graph.reverse()
        landmarks = jvm.java.util.ArrayList()
        landmarks.add(jvm.java.lang.Long.valueOf(int(source)))
        seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(landmarks).toSeq()
        sp = jvm.org.apache.spark.graphx.lib.ShortestPaths.run(graph, seq, int_tag)
        rec["vertices"] = int(sp.vertices().count())
    t1 = time.perf_counter()
    out = os.path.join(scratch, "graphx-distances")
    sp.vertices().saveAsTextFile(out)
    vs, ds = [], []
    for part in sorted(Path(out).glob("part-*")):
        for line in part.read_text().splitlines():
            # (vertex,Map(source -> distance)) or (vertex,Map()) when unreached
            v, _, rest = line[1:-1].partition(",")
            if "->" in rest:
                vs.append(int(v))
                ds.append(int(rest.split("->")[1].strip(" )")))
    rec.update(fingerprint(np.array(vs), np.array(ds)))
    rec["verify_s"] = time.perf_counter() - t1
    return rec


def run_one(system: str, graph: str, source: int, *, master: str, partitions: int,
            driver_memory: str, checkpoint_interval: int, epochs: int = 1,
            undirected: bool = False, partitioner: str | None = None) -> dict:
    """Run ``system`` on the graph file ``graph`` in this process; return its record.
    ``ours`` and ``ours-spark`` run the same call (the parent sets the latter's environment);
    ``partitioner`` reaches ``run_sssp`` only when given."""
    if system == "scipy":
        return local_record(system, lambda: scipy_bfs(graph, source, undirected))
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}")

    def job(spark, scratch: str) -> dict:
        if system == "graphx":
            rec = graphx_shortest_paths(spark.sparkContext, graph, source, partitions, scratch,
                                        undirected)
            rec["spark_jobs_per_epoch"] = rec["spark_jobs"]
            return rec
        from spark_plugin.jobs.sssp.job import run_sssp

        rec = {}
        extra = {} if partitioner is None else {"partitioner": partitioner}
        with timed_job(rec, spark):   # a LazySession (spark_record(lazy=True))
            result = run_sssp(spark, graph, source, epochs=epochs, partitions=partitions,
                              undirected=undirected, **extra)
        rec["spark_jobs_per_epoch"] = rec["spark_jobs"] / max(1, len(result.epochs))
        rec["reported_s"] = float(result.seconds)
        rec["tracking_s"] = float(result.tracking_seconds)
        rec["tracking_share"] = rec["tracking_s"] / max(rec["reported_s"], 1e-9)
        rec["rounds"] = sum(e.rounds for e in result.epochs)
        rec["epochs"] = [{"epoch": e.epoch, "rounds": e.rounds, "reached": e.reached,
                          "seconds": e.seconds} for e in result.epochs]
        d = result.distances
        rec.update(fingerprint(d.column("vertex").to_numpy(), d.column("distance").to_numpy()))
        return rec

    return spark_record(system, spark_settings(master, partitions, driver_memory,
                                               checkpoint_interval), f"bench-sssp-{system}", job,
                        lazy=system in OURS)


def run_child(system: str, meta: dict, args) -> dict:
    """Run one system on one graph in a fresh process; never raises for the system's failure."""
    graph_file = meta["txt"] if system == "graphx" else meta["parquet"]
    cmd = [sys.executable, "-m", "perf.bench_sssp", "--one", system, "--graph", graph_file,
           "--source", str(meta["source"]), *system_args(args),
           *(["--undirected"] if meta["sssp_undirected"] else [])]
    rec = {"graph": meta["name"], "system": system, "input": graph_file,
           "undirected": meta["sssp_undirected"],
           "cmd": ["python", *cmd[1:]]}   # as one would rerun it, not this interpreter's path
    env = system_env(system, child_env(SPARK_LOCAL_IP="127.0.0.1"), DRIVER_ROWS_VAR)
    if DRIVER_ROWS_VAR in env:
        rec["env"] = {DRIVER_ROWS_VAR: env[DRIVER_ROWS_VAR]}
    timeout = system_timeout(system, args)
    run = run_child_process(cmd, timeout=timeout, mark=RESULT_MARK, env=env)
    rec["whole_raw_s"] = run.whole_s
    rec["returncode"] = run.returncode
    if run.outcome(rec, timeout) is not None:
        rec["equal_to_scipy"] = all(rec.get(k) == meta["scipy"][k]
                                    for k in ("reached", "dist_sum", "dist_max", "digest"))
    return rec


def format_table(results: dict) -> str:
    """The runs (:func:`perf.systems.format_runs` plus vertices reached and whether the
    distances equal scipy's), the speed-ups over GraphX and the targets."""
    lines = format_runs(results["runs"], [
        ("reached", 8, lambda r: _fmt(r.get("reached"), "d")),
        ("equal", 6, lambda r: {True: "yes", False: "NO", None: "-"}[r.get("equal_to_scipy")])])
    lines += ["", *format_speedups(results["speedups"]), "",
              *format_targets(results.get("targets", []))]
    p = results["parameters"]
    lines.append(f"\ncommit {commit_label(results)}, master {p['master']}, partitions "
                 f"{p['partitions']}, {results['machine']['cpu_count']} CPUs")
    return "\n".join(lines)


def _fmt(v, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def plot(results: dict, path) -> None:
    graphs, p = results["parameters"]["graphs"], results["parameters"]
    labels = [f"{g}{' (both ways)' if results['graphs'][g].get('sssp_undirected') else ''}\n"
              f"{results['graphs'][g]['edges']:,} edges" for g in graphs]
    plot_systems(results, path, labels, dpi=110, fontsize=9,
                 title=f"BFS levels from one source: ours vs GraphX ShortestPaths vs scipy "
                       f"({p['master']}, {p['partitions']} partitions, commit "
                       f"{commit_label(results)}, {results['machine']['cpu_count']} CPUs)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_sssp",
                                 description=__doc__.split("\n")[0])
    add_system_args(ap, "sssp", DEFAULT_GRAPHS, driver_memory="4g")
    ap.add_argument("--undirected", action="store_true",
                    help="every graph's edges lead both ways (tfront sssp --undirected); "
                         "without it only the graphs that stand for undirected ones "
                         f"({', '.join(g for g, s in G.GRAPHS.items() if s.undirected)})")
    ap.add_argument("--source", type=int, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if args.one:
        return child_main(RESULT_MARK, args.one, lambda: run_one(
            args.one, args.graph, args.source, master=args.master, partitions=args.partitions,
            driver_memory=args.driver_memory, checkpoint_interval=args.checkpoint_interval,
            epochs=args.epochs, undirected=args.undirected, partitioner=args.partitioner))
    say = progress(args.quiet)
    measured = commit_info()
    metas, runs = {}, []
    for g in args.graphs:
        meta = G.ensure_graph(g, args.cache)
        meta["source"] = pick_source(meta)
        meta["sssp_undirected"] = bool(args.undirected or meta.get("undirected"))
        ref = scipy_bfs(meta["parquet"], meta["source"], meta["sssp_undirected"])
        meta["scipy"] = {k: ref[k] for k in ("reached", "dist_sum", "dist_max", "digest")}
        metas[g] = meta
        say(f"# {g}: {meta['edges']} edges{' (both ways)' if meta['sssp_undirected'] else ''}, "
            f"source {meta['source']}, scipy reaches {ref['reached']} vertices, farthest "
            f"{ref['dist_max']}")
        for s in args.systems:
            rec = run_child(s, meta, args)
            runs.append(rec)
            say(f"#   {s:<10} {rec['status']:<8} whole {fmt_time(rec, 'whole_s')} s, job "
                f"{fmt_time(rec, 'job_s')} s, Spark jobs/epoch "
                f"{_fmt(rec.get('spark_jobs_per_epoch'), '.1f')}, equal to scipy "
                f"{rec.get('equal_to_scipy')}"
                + ("" if rec["status"] == "ok" else f"  [{str(rec.get('error'))[-300:]}]"))
    results = {"benchmark": "sssp", **measured, "machine": _machine(),
               "parameters": {"graphs": args.graphs, "systems": args.systems,
                              "master": args.master, "partitions": args.partitions,
                              "driver_memory": args.driver_memory, "epochs": args.epochs,
                              "checkpoint_interval": args.checkpoint_interval,
                              "timeout_s": args.timeout,
                              "graphx_timeout_s": system_timeout("graphx", args),
                              "partitioner": args.partitioner, "undirected": args.undirected,
                              "spark_settings": spark_settings(args.master, args.partitions,
                                                               args.driver_memory,
                                                               args.checkpoint_interval)},
               "graphs": metas, "runs": runs}
    results["speedups"] = sp = speedups(runs, args.graphs)
    results["targets"] = evaluate_targets(TARGETS, runs, args.graphs, metas, sp)
    save_systems(results, args, plot, format_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
