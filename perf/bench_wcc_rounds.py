"""Rounds and Spark jobs per epoch of the WCC job's Spark loop (issue 22, item 5).

What it measures
----------------
Every graph of ``--graphs`` runs through ``run_wcc`` as one epoch **forced onto the Spark
loop** (``TFRONT_WCC_DRIVER_ROWS=0``: no epoch is finished on the driver; ``--driver-rows``
changes that), with each partitioner of ``--partitioners`` (``locality``, ``hash``; ``none``
passes no ``partitioner``, for the job before it existed), in one Spark session
(``local[2]``, ``--partitions`` P, default 4). Recorded per run: the epoch's ``rounds``
(loop iterations, the epoch line's count), ``stages`` (Spark stages the job ran),
``spark_jobs`` (Spark jobs the run submitted, counted from Spark's status tracker by
:mod:`perf.spark_jobs`), the components (checked against scipy), the share of cut edges
when partitioned by locality, and wall seconds (noisy: a shared 2-core machine).

Graphs (``--graphs``, comma separated): ``pathN`` (a path of N vertices, ids in order),
``rpathN`` (the same path, ids randomly permuted, edges listed along the path), ``xpathN``
(ids permuted and the edges listed in random order), ``gridN`` (N x N grid,
:func:`perf.graphs.grid`), ``rmatS_M`` (R-MAT, scale S, M edges, :func:`perf.graphs.rmat`).

How to run (from the repository root)::

    python -m perf.bench_wcc_rounds --graphs path20000,rpath20000,grid100,rmat16_100000 \\
        --out perf/results/wcc-rounds.json
"""

from __future__ import annotations

import argparse
import os
import re
import time

import numpy as np
import pyarrow as pa

from perf.common import add_output_args, commit_info, machine, progress, save_results, utc_now
from perf.graphs import grid, rmat, scipy_components


def make_graph(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The edges of a named graph (module docstring)."""
    if m := re.fullmatch(r"([rx]?)path(\d+)", name):
        n = int(m.group(2))
        rng = np.random.default_rng(1)
        ids = (rng.permutation(n) if m.group(1) else np.arange(n)).astype(np.int64)
        if m.group(1) == "x":   # the edges in random order too
            order = rng.permutation(n - 1)
            return ids[:-1][order], ids[1:][order]
        return ids[:-1], ids[1:]
    if m := re.fullmatch(r"grid(\d+)", name):
        return grid(int(m.group(1)))
    if m := re.fullmatch(r"rmat(\d+)_(\d+)", name):
        return rmat(int(m.group(1)), int(m.group(2)), seed=1)
    raise ValueError(f"unknown graph {name!r} (pathN, rpathN, gridN, rmatS_M)")


def run_one(spark, src, dst, partitioner, P, driver_rows="0") -> dict:
    from spark_plugin.jobs.wcc.job import run_wcc

    rows = float(driver_rows)
    os.environ["TFRONT_WCC_DRIVER_ROWS"] = str(int(rows * src.size) if rows < 1 else int(rows))

    from perf.spark_jobs import JobCount

    table = pa.table({"src": src, "dst": dst})
    count = JobCount(spark.sparkContext)
    t0 = time.perf_counter()
    kw = {} if partitioner is None else {"partitioner": partitioner}
    res = run_wcc(spark, table, partitions=P, progress=False, backend="cpu", **kw)
    secs = time.perf_counter() - t0
    s = res.epochs[0]
    return {"rounds": s.rounds, "stages": res.stages, **count.stop(),
            "components": s.components, "cut": getattr(s, "cut", None),
            "seconds": round(secs, 2), "line": s.line()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--graphs", default="path20000,rpath20000,grid100,rmat16_100000")
    p.add_argument("--partitioners", default="locality,hash",
                   help="comma separated; 'none' runs without the option (the old job)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--driver-rows", default="0",
                   help="TFRONT_WCC_DRIVER_ROWS (0: every round on Spark), or a share of the "
                        "graph's edges such as 0.25 (the epoch starts on Spark and may finish "
                        "on the driver once its loop state fits)")
    add_output_args(p, "perf/results/wcc-rounds.json", plot=None)
    args = p.parse_args(argv)
    say = progress(args.quiet)
    from spark_plugin.session.config import build_session

    from perf.spark_jobs import RETAINED_JOBS

    spark = build_session("local", cores=2, app_name="bench-wcc-rounds", conf={
        "spark.master": "local[2]", "spark.ui.enabled": "false",
        "spark.ui.retainedJobs": str(RETAINED_JOBS),
        "spark.sql.shuffle.partitions": str(args.partitions),
        "spark.default.parallelism": str(args.partitions)})
    spark.sparkContext.setLogLevel("ERROR")
    # warm-up: workers started, kernels loaded
    run_one(spark, *make_graph("path100"), None if args.partitioners == "none" else "hash",
            args.partitions)
    runs = []
    for g in args.graphs.split(","):
        src, dst = make_graph(g)
        n, comps = scipy_components(src, dst)
        for part in args.partitioners.split(","):
            r = run_one(spark, src, dst, None if part == "none" else part, args.partitions,
                        args.driver_rows)
            ok = r["components"] == comps
            runs.append({"graph": g, "vertices": n, "edges": int(src.size),
                         "partitioner": part, "components_ok": ok, **r})
            say(f"{g:>14} ({n} v, {src.size} e) {part:>8}: rounds {r['rounds']}, stages "
                f"{r['stages']}, spark jobs {r['spark_jobs']}, {r['seconds']} s"
                f"{'' if ok else ' WRONG COMPONENTS'} | {r['line']}")
    spark.stop()
    results = {"benchmark": "wcc_rounds", "when": utc_now(), **commit_info(),
               "machine": machine(), "parameters": vars(args) | {"out": str(args.out)},
               "runs": runs}
    table = "\n".join(f"{r['graph']:>14} {r['partitioner']:>8} rounds {r['rounds']:>3} "
                      f"jobs {r['spark_jobs']:>4} {r['seconds']:>7} s" for r in runs)
    save_results(results, args, table=table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
