"""Benchmark of the Spark shortest-paths job (``spark_plugin.jobs.sssp.job.run_sssp``) against GraphX's
``ShortestPaths`` (landmark BFS) and scipy.

What it measures
----------------
For each graph of ``--graphs`` (:data:`perf.graphs.GRAPHS`, generated once into
``perf/results/graphs/`` as for the WCC benchmark) the parent picks a source -- vertex 0 of a
grid (a corner: the longest chain of rounds), the vertex of largest out-degree otherwise --
and each system of ``--systems`` computes the **unweighted, directed BFS levels** from it in a
**fresh child process** (``python -m perf.bench_sssp --one SYSTEM ...``), so that all three
compute the same thing:

* ``ours`` -- ``run_sssp(spark, graph.parquet, source, epochs=E, partitions=P)``;
* ``graphx`` -- through PySpark's JVM gateway: ``GraphLoader.edgeListFile(sc, graph.txt,
  false, P, MEMORY_ONLY, MEMORY_ONLY)``, ``.reverse()`` (``ShortestPaths`` measures the way
  *to* its landmarks along the edges; reversed, that is the way *from* the source), then
  ``ShortestPaths.run(graph, Seq(source), ClassTag.Int)`` forced by ``vertices().count()``,
  with ``spark.graphx.pregel.checkpointInterval`` and a checkpoint directory as for WCC;
* ``scipy`` -- one core: a CSR matrix and ``shortest_path(unweighted=True, indices=source)``.

Every system's result is checked against scipy's: the number of vertices reached, the sum and
the largest of their distances, and a SHA-256 of the sorted ``(vertex, distance)`` pairs.
GraphX's distances are written out with ``saveAsTextFile`` after the timed job and parsed
here; that takes ``verify_s``, subtracted from its whole-process time (as for WCC).

Times and memory are measured as in ``perf.bench_wcc`` (whose machinery this reuses):
``whole_s`` the whole child process (interpreter and Spark start-up included) from the
parent; ``job_s`` the job alone in the child; ``peak_total_kib`` the child's own ``VmHWM``
plus the Spark JVM's and its Python workers'. ``rounds`` is ours' relaxation rounds (one
Spark job each); ``tracking_s`` its progress-tracking time.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_sssp --graphs grid100,rmat1m --out perf/results/sssp.json \\
        --plot docs/img/sssp.png

The JSON holds ``commit``, ``dirty``, ``machine``, ``parameters``, ``graphs`` (with the
source and scipy's fingerprint), ``runs`` and ``speedups`` (GraphX time / ours; above 1 ours
is faster).
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
from perf.bench_wcc import (SYSTEMS, _machine, add_system_args, local_record,  # noqa: E402
                            parse_args, plot_systems, save_systems, spark_record, spark_settings,
                            start_spark, system_args)
from perf.common import (child_env, child_main, commit_info, commit_label,  # noqa: E402
                         progress, run_child_process)

__all__ = ["main", "run_one", "run_child", "scipy_bfs", "graphx_shortest_paths", "fingerprint",
           "pick_source", "speedups", "format_table", "plot", "SYSTEMS", "spark_settings",
           "start_spark"]

DEFAULT_GRAPHS = ("grid100", "rmat1m")
RESULT_MARK = "BENCH_SSSP_RESULT "


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
    """Vertex 0 of a grid; otherwise the smallest vertex of largest out-degree."""
    if meta["kind"] == "grid":
        return 0
    import pyarrow.parquet as pq

    src = pq.read_table(meta["parquet"], columns=["src"]).column("src").to_numpy()
    ids, counts = np.unique(src, return_counts=True)
    return int(ids[np.argmax(counts)])


def scipy_bfs(parquet: str, source: int) -> dict:
    """BFS levels from ``source`` with scipy (one core): read, CSR, ``shortest_path``."""
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    t0 = time.perf_counter()
    t = pq.read_table(parquet, columns=["src", "dst"])
    src, dst = t.column("src").to_numpy(), t.column("dst").to_numpy()
    n = int(max(src.max(), dst.max(), source)) + 1
    mat = csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n))
    mat.data[:] = 1   # duplicate edges were summed: every edge is one hop
    d = shortest_path(mat, directed=True, unweighted=True, indices=source)
    job_s = time.perf_counter() - t0
    reached = np.flatnonzero(np.isfinite(d))
    return {"job_s": job_s, **fingerprint(reached, d[reached].astype(np.int64))}


def graphx_shortest_paths(sc, edge_list: str, source: int, partitions: int,
                          scratch: str) -> dict:
    """GraphX ``ShortestPaths.run`` from ``source`` (on the reversed graph), through the JVM
    gateway; forced by ``vertices().count()``. Then (``verify_s``, not part of ``job_s``) the
    distances are saved as text under ``scratch`` and fingerprinted."""
    jvm = sc._jvm
    level = jvm.org.apache.spark.storage.StorageLevel.MEMORY_ONLY()
    t0 = time.perf_counter()
    graph = jvm.org.apache.spark.graphx.GraphLoader.edgeListFile(
        sc._jsc.sc(), str(edge_list), False, int(partitions), level, level)
    landmarks = jvm.java.util.ArrayList()
    landmarks.add(jvm.java.lang.Long.valueOf(int(source)))
    seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(landmarks).toSeq()
    int_tag = getattr(getattr(jvm.scala.reflect, "ClassTag$"), "MODULE$").Int()
    sp = jvm.org.apache.spark.graphx.lib.ShortestPaths.run(graph.reverse(), seq, int_tag)
    vertices = int(sp.vertices().count())
    job_s = time.perf_counter() - t0
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
    rec = {"job_s": job_s, "vertices": vertices, **fingerprint(np.array(vs), np.array(ds))}
    rec["verify_s"] = time.perf_counter() - t1
    return rec


def run_one(system: str, graph: str, source: int, *, master: str, partitions: int,
            driver_memory: str, checkpoint_interval: int, epochs: int = 1) -> dict:
    """Run ``system`` on the graph file ``graph`` in this process; return its record."""
    if system == "scipy":
        return local_record(system, lambda: scipy_bfs(graph, source))
    if system not in ("ours", "graphx"):
        raise ValueError(f"unknown system {system!r}")

    def job(spark, scratch: str) -> dict:
        if system == "graphx":
            return graphx_shortest_paths(spark.sparkContext, graph, source, partitions, scratch)
        from spark_plugin.jobs.sssp.job import run_sssp

        rec = {}
        t1 = time.perf_counter()
        result = run_sssp(spark, graph, source, epochs=epochs, partitions=partitions)
        rec["job_s"] = time.perf_counter() - t1
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
                                               checkpoint_interval), f"bench-sssp-{system}", job)


def run_child(system: str, meta: dict, args) -> dict:
    """Run one system on one graph in a fresh process; never raises for the system's failure."""
    graph_file = meta["txt"] if system == "graphx" else meta["parquet"]
    cmd = [sys.executable, "-m", "perf.bench_sssp", "--one", system, "--graph", graph_file,
           "--source", str(meta["source"]), *system_args(args)]
    rec = {"graph": meta["name"], "system": system, "input": graph_file,
           "cmd": ["python", *cmd[1:]]}   # as one would rerun it, not this interpreter's path
    run = run_child_process(cmd, timeout=args.timeout, mark=RESULT_MARK,
                            env=child_env(SPARK_LOCAL_IP="127.0.0.1"))
    rec["whole_raw_s"] = run.whole_s
    rec["returncode"] = run.returncode
    if run.outcome(rec, args.timeout) is not None:
        rec["equal_to_scipy"] = all(rec.get(k) == meta["scipy"][k]
                                    for k in ("reached", "dist_sum", "dist_max", "digest"))
    return rec


def speedups(runs: list[dict], graphs: Sequence[str]) -> dict:
    """GraphX time / our time, whole process and job, per graph (where both finished)."""
    out = {}
    for g in graphs:
        ok = {r["system"]: r for r in runs if r["graph"] == g and r["status"] == "ok"}
        if "ours" in ok and "graphx" in ok:
            out[g] = {"whole": ok["graphx"]["whole_s"] / ok["ours"]["whole_s"],
                      "job": ok["graphx"]["job_s"] / ok["ours"]["job_s"]}
    return out


def _fmt(v, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def format_table(results: dict) -> str:
    hdr = (f"{'graph':<9} {'system':<7} {'status':<8} {'whole s':>8} {'job s':>8} {'rounds':>7} "
           f"{'peak MB':>8} {'reached':>8} {'equal':>6}")
    lines = [hdr, "-" * len(hdr)]
    for r in results["runs"]:
        peak = r.get("peak_total_kib")
        eq = {True: "yes", False: "NO", None: "-"}[r.get("equal_to_scipy")]
        lines.append(f"{r['graph']:<9} {r['system']:<7} {r['status']:<8} "
                     f"{_fmt(r.get('whole_s')):>8} {_fmt(r.get('job_s')):>8} "
                     f"{_fmt(r.get('rounds'), 'd'):>7} {_fmt(peak / 1024 if peak else None, '.0f'):>8} "
                     f"{_fmt(r.get('reached'), 'd'):>8} {eq:>6}")
        if r["status"] != "ok":
            lines.append(f"    {r['status']}: {str(r.get('error', '')).strip().splitlines()[-1:]}")
    lines.append("")
    lines.append("speed-up of ours over GraphX (GraphX time / our time; > 1: ours faster)")
    for g, s in results["speedups"].items():
        lines.append(f"  {g:<9} whole {s['whole']:.2f}x   job {s['job']:.2f}x")
    p = results["parameters"]
    lines.append(f"\ncommit {commit_label(results)}, master {p['master']}, partitions "
                 f"{p['partitions']}, {results['machine']['cpu_count']} CPUs")
    return "\n".join(lines)


def plot(results: dict, path) -> None:
    graphs, p = results["parameters"]["graphs"], results["parameters"]
    plot_systems(results, path, [f"{g}\n{results['graphs'][g]['edges']:,} edges" for g in graphs],
                 dpi=110, fontsize=9,
                 title=f"BFS levels from one source: ours vs GraphX ShortestPaths vs scipy "
                       f"({p['master']}, {p['partitions']} partitions, commit "
                       f"{commit_label(results)}, {results['machine']['cpu_count']} CPUs)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_sssp",
                                 description=__doc__.split("\n")[0])
    add_system_args(ap, "sssp", DEFAULT_GRAPHS, driver_memory="4g")
    ap.add_argument("--source", type=int, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    if args.one:
        return child_main(RESULT_MARK, args.one, lambda: run_one(
            args.one, args.graph, args.source, master=args.master, partitions=args.partitions,
            driver_memory=args.driver_memory, checkpoint_interval=args.checkpoint_interval,
            epochs=args.epochs))
    say = progress(args.quiet)
    measured = commit_info()
    metas, runs = {}, []
    for g in args.graphs:
        meta = G.ensure_graph(g, args.cache)
        meta["source"] = pick_source(meta)
        ref = scipy_bfs(meta["parquet"], meta["source"])
        meta["scipy"] = {k: ref[k] for k in ("reached", "dist_sum", "dist_max", "digest")}
        metas[g] = meta
        say(f"# {g}: {meta['edges']} edges, source {meta['source']}, scipy reaches "
            f"{ref['reached']} vertices, farthest {ref['dist_max']}")
        for s in args.systems:
            rec = run_child(s, meta, args)
            runs.append(rec)
            say(f"#   {s:<7} {rec['status']:<8} whole {_fmt(rec.get('whole_s'))} s, job "
                f"{_fmt(rec.get('job_s'))} s, equal to scipy {rec.get('equal_to_scipy')}"
                + ("" if rec["status"] == "ok" else f"  [{str(rec.get('error'))[-300:]}]"))
    results = {"benchmark": "sssp", **measured, "machine": _machine(),
               "parameters": {"graphs": args.graphs, "systems": args.systems,
                              "master": args.master, "partitions": args.partitions,
                              "driver_memory": args.driver_memory, "epochs": args.epochs,
                              "checkpoint_interval": args.checkpoint_interval,
                              "timeout_s": args.timeout},
               "graphs": metas, "runs": runs, "speedups": speedups(runs, args.graphs)}
    save_systems(results, args, plot, format_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
