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

``--vs-scipy``: the command on the driver against a script (issue 33 item 4)
---------------------------------------------------------------------------
A mode of its own (its own options, :func:`driver_main`): ``tfront sssp EDGES.txt --source V``
(run as ``python -m engine.cli.main``, this tree's code, the environment without
``TFRONT_SSSP_DRIVER_ROWS``: every epoch on the driver, no JVM) against
``perf/sssp_scipy.py`` (pyarrow's CSV reader, a scipy CSR matrix and
``scipy.sparse.csgraph.dijkstra(unweighted=True)`` from the same source), each a fresh whole
process timed from the parent, on the text file of ``--graph`` (default ``rmat10m``: 10M R-MAT
edges; the source as above, the vertex of largest out-degree). First one untimed run of each
checks the result -- ours with ``--out``, its distances fingerprinted against the script's --
and warms the page cache and Numba's; then ``--repeat`` rounds (default 3), the systems
alternating (``ours, scipy`` then ``scipy, ours``, ...). Printed and recorded: each run's
whole-process seconds with its own phases (ours: its epoch and total lines; the script: read,
CSR, Dijkstra), the medians, and ``ours / scipy`` of the medians against the target 1.5
(``--systems ours,scipy,wcc`` adds ``tfront wcc`` on the same file for comparison). No test
checks a time.

::

    python -m perf.bench_sssp --vs-scipy --repeat 5 --out perf/results/sssp-driver.json \
        --plot perf/results/sssp-driver.png
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
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
from perf.common import (add_output_args, child_env, child_main, commit_info,  # noqa: E402
                         commit_label, name_list, progress, run_child_process)
from perf.systems import (OURS, SYSTEMS, Target, evaluate_targets, fmt_time,  # noqa: E402
                          format_runs, format_speedups, format_targets, plot_systems, speedups,
                          system_env)

__all__ = ["main", "driver_main", "driver_run", "driver_summary", "parse_driver_output",
           "DRIVER_TARGET", "run_one", "run_child", "scipy_bfs", "graphx_shortest_paths", "fingerprint",
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


# --- --vs-scipy: tfront sssp on the driver against a script (issue 33 item 4) ---------------

#: Issue 33 item 4: the whole process within this factor of the script's.
DRIVER_TARGET = 1.5
#: What ``--vs-scipy`` can run: the command, the script, ``tfront wcc`` for comparison, and
#: ``before``: ``tfront sssp`` of another checkout (``--before DIR``).
DRIVER_SYSTEMS = ("ours", "before", "scipy", "wcc")
SCIPY_MARK = "SSSP_SCIPY "
_EPOCH = re.compile(r"^epoch (\d+): .*?reached (\d+), .*?max distance ([0-9.e+]+), "
                    r"(on the driver|on Spark, cut [0-9.]+%), ([0-9.]+) s")
_WCC_EPOCH = re.compile(r"^epoch (\d+): .*?, ([0-9.]+) s, kernels")
_TOTAL = re.compile(r"^total: .*?, ([0-9.]+) s \(kernels (loaded|compiled) ([0-9.]+) s")


def driver_command(system: str, txt: str, source: int, out: str | None = None) -> list[str]:
    """The command line of one ``--vs-scipy`` run (this interpreter, the repository as cwd).
    ``out``: ours writes its distances there (``--out``), the script fingerprints its own
    (``--digest``, any ``out``)."""
    if system in ("ours", "before"):
        return [sys.executable, "-m", "engine.cli.main", "sssp", str(txt), "--source",
                str(source), *(["--out", str(out)] if out else [])]
    if system == "wcc":
        return [sys.executable, "-m", "engine.cli.main", "wcc", str(txt)]
    if system == "scipy":
        return [sys.executable, str(ROOT / "perf" / "sssp_scipy.py"), str(txt), str(source),
                *(["--digest"] if out else [])]
    raise ValueError(f"unknown system {system!r}")


def parse_driver_output(system: str, stdout: str) -> dict:
    """What a run printed: ours' epoch line (``epoch_s``, ``where``, ``reached``, ``dist_max``)
    and total line (``total_s``, ``kernels_s``, ``compiled``); wcc's epoch and total seconds;
    the script's record (``read_s``, ``csr_s``, ``dijkstra_s``, ``reached``, ...).

    >>> parse_driver_output("ours", "epoch 0: vertices 5, reached 4, edges 9, rounds 1, "
    ...     "max distance 6, on the driver, 0.81 s; input x rows 1-9\\ntotal: 1 epochs, "
    ...     "1 rounds, 1.84 s (kernels loaded 0.90 s, progress tracking 0.01 s), x")
    {'epoch_s': 0.81, 'where': 'on the driver', 'reached': 4, 'dist_max': 6, 'total_s': 1.84, 'kernels_s': 0.9, 'compiled': False}
    """
    rec: dict = {}
    for line in stdout.splitlines():
        if system == "scipy" and line.startswith(SCIPY_MARK):
            rec.update(json.loads(line[len(SCIPY_MARK):]))
        elif system in ("ours", "before") and (m := _EPOCH.match(line)):
            rec.update(epoch_s=rec.get("epoch_s", 0.0) + float(m[5]), where=m[4],
                       reached=int(m[2]), dist_max=int(float(m[3])))
        elif system == "wcc" and (m := _WCC_EPOCH.match(line)):
            rec["epoch_s"] = rec.get("epoch_s", 0.0) + float(m[2])
        elif system != "scipy" and (m := _TOTAL.match(line)):
            rec.update(total_s=float(m[1]), kernels_s=float(m[3]), compiled=m[2] == "compiled")
    return rec


def driver_run(system: str, txt: str, source: int, *, timeout: float,
               out: str | None = None, root: str | os.PathLike = ROOT) -> dict:
    """One fresh process of ``system``, timed from here (``whole_s``: spawn to exit), with
    what it printed parsed (:func:`parse_driver_output`) and the load average at its start;
    ``root``: the checkout whose code it runs (its cwd, first on ``PYTHONPATH``)."""
    import signal
    import subprocess

    env = child_env()
    if Path(root).resolve() != ROOT:
        env["PYTHONPATH"] = str(root) + os.pathsep + env["PYTHONPATH"]
    env.pop(DRIVER_ROWS_VAR, None)          # as a user runs it: the driver's own budget
    env.pop("TFRONT_WCC_DRIVER_ROWS", None)
    cmd = driver_command(system, txt, source, out)
    rec = {"system": system, "cmd": ["python", *cmd[1:]], "load_1min": os.getloadavg()[0]}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        rec.update(status="timeout", whole_s_at_least=time.perf_counter() - t0)
        return rec
    rec["whole_s"] = time.perf_counter() - t0
    rec.update(parse_driver_output(system, stdout))
    rec["status"] = "ok" if proc.returncode == 0 else "failed"
    if proc.returncode:
        rec["error"] = f"exit code {proc.returncode}: {stderr[-1500:]}"
    return rec


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def driver_summary(runs: list[dict], systems: Sequence[str]) -> dict:
    """Per system the medians of the timed runs (``whole_s`` and each phase) and how many;
    ``ratio`` ``ours / scipy`` (and ``wcc / scipy``) of the whole-process medians; the
    target's verdict (``PASS``: at most :data:`DRIVER_TARGET`).

    >>> runs = [{"system": "ours", "status": "ok", "whole_s": w} for w in (3, 2, 9)]
    >>> runs += [{"system": "scipy", "status": "ok", "whole_s": w} for w in (2, 1, 2)]
    >>> s = driver_summary(runs, ["ours", "scipy"])
    >>> s["medians"]["ours"]["whole_s"], s["ratio"], s["target"]["verdict"]
    (3.0, {'ours': 1.5}, 'PASS')
    """
    keys = ("whole_s", "epoch_s", "total_s", "kernels_s", "read_s", "csr_s", "dijkstra_s",
            "imports_s")
    medians = {}
    for sname in systems:
        mine = [r for r in runs if r["system"] == sname and r["status"] == "ok"]
        medians[sname] = {"runs": len(mine),
                          **{k: _median(r.get(k) for r in mine) for k in keys
                             if any(k in r for r in mine)}}
    base = medians.get("scipy", {}).get("whole_s")
    ratio = {s: medians[s]["whole_s"] / base for s in systems
             if s != "scipy" and base and medians[s].get("whole_s") is not None}
    value = ratio.get("ours")
    return {"medians": medians, "ratio": ratio,
            "target": {"text": f"tfront sssp on the driver, whole process, within "
                               f"{DRIVER_TARGET}x of the scipy script (medians)",
                       "limit": DRIVER_TARGET, "value": value,
                       "verdict": "n/a" if value is None else
                       "PASS" if value <= DRIVER_TARGET else "FAIL"}}


def format_driver(results: dict) -> str:
    """Each run, the medians per system and the ratio against the target."""
    lines = [f"{'rep':>3} {'system':<6} {'status':<7} {'whole s':>8} {'phases'}"]
    for r in results["runs"]:
        if r["system"] == "scipy":
            ph = ", ".join(f"{k[:-2]} {r[k]:.2f}" for k in ("read_s", "csr_s", "dijkstra_s")
                           if k in r)
        else:
            ph = ", ".join(f"{k[:-2]} {r[k]:.2f}" for k in ("epoch_s", "total_s", "kernels_s")
                           if k in r) + (f" ({r['where']})" if "where" in r else "")
        whole = f"{r['whole_s']:.2f}" if "whole_s" in r else "-"
        lines.append(f"{r.get('rep', '-'):>3} {r['system']:<6} {r['status']:<7} {whole:>8} "
                     f"{ph}  [load {r['load_1min']:.1f}]")
    lines.append("")
    for sname, m in results["medians"].items():
        rest = ", ".join(f"{k} {v:.2f}" for k, v in m.items()
                         if k not in ("runs", "whole_s") and v is not None)
        whole = "-" if m.get("whole_s") is None else f"{m['whole_s']:.2f}"
        lines.append(f"median {sname:<6} whole {whole} s over {m['runs']} runs ({rest})")
    for sname, x in results["ratio"].items():
        lines.append(f"{sname} / scipy: {x:.2f}x")
    t = results["target"]
    lines.append(f"[{t['verdict']}] {t['text']}: "
                 + ("-" if t["value"] is None else f"{t['value']:.2f}x"))
    v = results.get("verify", {})
    lines.append(f"distances equal to the script's: {v.get('equal')}; ours ran "
                 f"{v.get('where', '-')}")
    lines.append(f"\ncommit {commit_label(results)}, {results['parameters']['graph']} "
                 f"({results['parameters']['edges']:,} edges, source "
                 f"{results['parameters']['source']}), {results['machine']['cpu_count']} CPUs")
    return "\n".join(lines)


def plot_driver(results: dict, path) -> None:
    """Whole-process seconds of every timed run (dots, in run order) and the medians (bars),
    per system, with ``ours / scipy`` in the title."""
    from perf.common import figure

    systems = results["parameters"]["systems"]
    with figure(path, dpi=110, figsize=(7.5, 4.5)) as (fig, ax):
        for i, sname in enumerate(systems):
            m = results["medians"][sname].get("whole_s")
            if m is not None:
                ax.bar(i, m, width=0.6, alpha=0.35, color=f"C{i}")
                ax.text(i, m, f"{m:.2f} s", ha="center", va="bottom", fontsize=9)
            ws = [r["whole_s"] for r in results["runs"]
                  if r["system"] == sname and "whole_s" in r]
            ax.plot([i + 0.25 * (k / max(1, len(ws) - 1) - 0.5) for k in range(len(ws))], ws,
                    "o", color=f"C{i}")
        ax.set_xticks(range(len(systems)),
                      [{"ours": "tfront sssp", "scipy": "scipy script", "wcc": "tfront wcc",
                        "before": "tfront sssp\n(before)"}[s] for s in systems])
        ax.set_ylabel("whole process (s)")
        p, t = results["parameters"], results["target"]
        ratio = "-" if t["value"] is None else f"{t['value']:.2f}x"
        ax.set_title(f"{p['graph']} ({p['edges']:,} edges, text) on the driver: ours / scipy "
                     f"{ratio} (target {t['limit']}x)\ncommit {commit_label(results)}, "
                     f"medians of {p['repeat']}", fontsize=9)


def build_driver_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_sssp --vs-scipy",
                                 description="tfront sssp on the driver against a pyarrow + "
                                             "scipy script (issue 33 item 4)")
    ap.add_argument("--vs-scipy", action="store_true", required=True)
    ap.add_argument("--graph", default="rmat10m", choices=sorted(G.GRAPHS),
                    help="the graph whose text file both read (default rmat10m)")
    ap.add_argument("--systems", default="ours,scipy",
                    type=lambda s: name_list(s, DRIVER_SYSTEMS, "system"),
                    help="comma-separated, of ours, scipy, wcc, before (default ours,scipy)")
    ap.add_argument("--before", default=None, metavar="DIR",
                    help="system 'before': tfront sssp of the checkout DIR (e.g. git worktree "
                         "add DIR COMMIT), in the same alternation")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each (default 3)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--cache", default=str(ROOT / "perf" / "results" / "graphs"))
    add_output_args(ap, str(ROOT / "perf" / "results" / "sssp-driver.json"),
                    quiet="no progress lines, only the table")
    return ap


def driver_main(argv: Sequence[str]) -> int:
    """``--vs-scipy`` (module docstring): verify, then alternate, then medians and the ratio."""
    import tempfile

    from perf.common import machine, utc_now, write_results

    args = build_driver_parser().parse_args(argv)
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    systems = list(dict.fromkeys(["ours", "scipy", *args.systems]))   # both, always
    if args.before and "before" not in systems:
        systems.append("before")
    if "before" in systems and not args.before:
        raise SystemExit("system 'before' needs --before DIR")
    systems = [s for s in DRIVER_SYSTEMS if s in systems]
    roots = {s: (args.before if s == "before" else ROOT) for s in systems}
    say = progress(args.quiet)
    measured = commit_info()
    meta = G.ensure_graph(args.graph, args.cache)
    source = pick_source(meta)
    say(f"# {args.graph}: {meta['edges']:,} edges in {meta['txt']}, source {source}")
    verify: dict = {}
    with tempfile.TemporaryDirectory(prefix="sssp-driver-") as tmp:   # untimed: the check
        ref = driver_run("scipy", meta["txt"], source, timeout=args.timeout, out="digest")
        ours = driver_run("ours", meta["txt"], source, timeout=args.timeout,
                          out=os.path.join(tmp, "out"))
        if ours["status"] == "ok":
            import pyarrow.parquet as pq

            t = pq.read_table(os.path.join(tmp, "out"), columns=["vertex", "distance"])
            fp = fingerprint(t.column("vertex").to_numpy(), t.column("distance").to_numpy())
            verify = {"equal": all(fp[k] == ref.get(k) for k in
                                   ("reached", "dist_sum", "dist_max", "digest")),
                      "where": ours.get("where"), "reached": fp["reached"],
                      "digest": fp["digest"], "scipy_digest": ref.get("digest")}
        else:
            verify = {"equal": None, "error": ours.get("error")}
        verify["runs"] = [ref, ours]
        if "before" in systems:   # and warms the other checkout's caches
            verify["runs"].append(driver_run("before", meta["txt"], source,
                                             timeout=args.timeout, root=args.before))
    say(f"# check: distances equal to the script's: {verify.get('equal')}, ours ran "
        f"{verify.get('where')}")
    runs = []
    for rep_ in range(args.repeat):
        for sname in (systems if rep_ % 2 == 0 else systems[::-1]):
            rec = driver_run(sname, meta["txt"], source, timeout=args.timeout,
                             root=roots[sname])
            rec["rep"] = rep_
            runs.append(rec)
            say(f"#   {rep_} {sname:<6} {rec['status']:<7} whole "
                f"{rec.get('whole_s', float('nan')):.2f} s")
    results = {"benchmark": "sssp-driver", **measured, "finished": utc_now(),
               "machine": machine(),
               "parameters": {"graph": args.graph, "input": meta["txt"], "edges": meta["edges"],
                              "source": source, "repeat": args.repeat, "systems": systems,
                              "before": args.before,
                              "timeout_s": args.timeout},
               "verify": verify, "runs": runs, **driver_summary(runs, systems)}
    out = write_results(results, args.out)
    if args.plot:
        plot_driver(results, args.plot)
    if not args.quiet:
        print(format_driver(results))
        print(f"\nwrote {out}" + (f" and {args.plot}" if args.plot else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--vs-scipy" in argv:   # a mode with options of its own
        return driver_main(argv)
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
