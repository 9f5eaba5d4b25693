"""Issue 31: ``tfront wcc`` on a Spark source -- the driver holds progress, not edges.

What it runs
------------
For each size of ``--sizes`` (millions of edges; default ``2,10``) an R-MAT graph
(:func:`perf.graphs.rmat`, edge factor 16, seeded) is written once as a dataset the way
Spark writes one -- ``part-NNNNN.parquet`` files of at most 4M rows and ``_SUCCESS`` -- under
``perf/results/graphs/``. Then, in a fresh process, the command a cluster user types::

    tfront wcc file:///.../rmat10m-ds --out TMP --driver-memory 2g \\
        --master 'local-cluster[1,2,MB]' --conf spark.executor.memory=... -q

``local-cluster``: the executors run in a JVM of their own, so the driver's memory is the
driver's alone (with ``local[*]`` the driver JVM would hold the executors too). With
``--driver-memory 2g`` no epoch of these sizes fits the driver's budget: every one runs on
Spark. ``--spark`` also sets ``TFRONT_WCC_DRIVER_ROWS=0``.

What it records (``--out``, default ``perf/results/wcc-sources.json``)
---------------------------------------------------------------------
Per size: the wall time and seconds per edge; the peak resident memory of the driver's
Python process, of the driver JVM and of the executor JVM(s), sampled from ``/proc`` every
0.25 s (``VmRSS``; the Python driver's own ``VmHWM`` too); the component count against
scipy's on the same edges and 2,000 sampled vertices' labels against scipy's. The table
compares the sizes: driver peaks within 1.5x of each other, seconds per edge within 1.5x.

Run::

    .venv/bin/python -m perf.bench_wcc_sources --sizes 2,10,30      # minutes per size
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from perf.common import (ROOT, commit_info, machine, proc_kib, process_children, repo_path,
                         utc_now, write_results)
from perf.graphs import rmat

GRAPH_DIR = ROOT / "perf" / "results" / "graphs"
PART_ROWS = 4_000_000


def dataset(millions: int) -> Path:
    """The R-MAT graph of ``millions`` M edges as a Spark-style Parquet dataset (cached)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = int(millions * 1_000_000)
    scale = max(10, int(np.ceil(np.log2(m / 16))))
    d = GRAPH_DIR / f"rmat{millions}m-s{scale}-ds"
    if (d / "_SUCCESS").exists():
        return d
    src, dst = rmat(scale, m, seed=1)
    tmp = d.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for k, a in enumerate(range(0, m, PART_ROWS)):
        pq.write_table(pa.table({"src": src[a:a + PART_ROWS], "dst": dst[a:a + PART_ROWS]}),
                       tmp / f"part-{k:05d}.parquet")
    (tmp / "_SUCCESS").touch()
    tmp.rename(d)
    return d


def _is_java(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"java" in f.read().split(b"\0")[0]
    except OSError:
        return False


def run_size(millions: int, args) -> dict:
    ds = dataset(millions)
    out = tempfile.mkdtemp(prefix="wcc-sources-")
    cmd = [sys.executable, "-m", "engine.cli.main", "wcc", ds.as_uri(), "--out", out + "/o",
           "--driver-memory", args.driver_memory, "--master", args.master,
           "--conf", f"spark.executor.memory={args.executor_memory}", "-q",
           *(["--partitions", str(args.partitions)] if args.partitions else [])]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if args.spark:
        env["TFRONT_WCC_DRIVER_ROWS"] = "0"
    peak = {"python": 0, "driver_jvm": 0, "executors": 0}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    def rss(pid: int) -> int:
        return proc_kib(pid) or 0

    while proc.poll() is None:
        children = process_children()   # one /proc scan per sample
        peak["python"] = max(peak["python"], rss(proc.pid))
        jvms = [c for c in children.get(proc.pid, []) if _is_java(c)]
        peak["driver_jvm"] = max(peak["driver_jvm"], sum(rss(j) for j in jvms))
        execs = [e for j in jvms for e in children.get(j, []) if _is_java(e)]
        peak["executors"] = max(peak["executors"], sum(rss(e) for e in execs))
        if time.perf_counter() - t0 > args.timeout:
            proc.kill()
        time.sleep(0.25)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    shown = [f"file://{repo_path(ds)}" if c == ds.as_uri() else c for c in cmd[1:]]
    rec = {"edges": millions * 1_000_000, "input": str(ds), "cmd": shown,
           "returncode": proc.returncode, "wall_s": round(wall, 2),
           "s_per_medge": round(wall / millions, 3),
           "peak_rss_mib": {k: round(v / 1024, 1) for k, v in peak.items()},
           "driver_peak_mib": round((peak["python"] + peak["driver_jvm"]) / 1024, 1)}
    if proc.returncode != 0:
        rec["stderr_tail"] = stderr[-3000:]
        return rec
    rec.update(_verify(ds, out + "/o") if millions <= SCIPY_MAX_MILLIONS
               else _verify_uf(ds, out + "/o"))
    return rec


#: Past this many million edges scipy's CSR (with ``np.unique`` of every endpoint) does not
#: fit this 24 GiB machine next to the edges: the labels are checked against one union-find
#: over all edges in this process instead (:func:`_verify_uf`).
SCIPY_MAX_MILLIONS = 100


def _verify_uf(ds: Path, out: str) -> dict:
    """Every vertex's label against :func:`gpu_kernels.unionfind.uf_stars` over all edges at
    once, in this process (the kernel the tests hold to scipy; ids are R-MAT's dense
    ``[0, 2**scale)``, so it indexes them directly: ``O(E + V)`` memory, no sort)."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    from gpu_kernels.unionfind import uf_stars

    t = pq.read_table(ds, columns=["src", "dst"])
    src, dst = t.column("src").to_numpy(), t.column("dst").to_numpy()
    del t
    span = int(max(src.max(), dst.max())) + 1
    present = np.zeros(span, np.bool_)
    present[src] = True
    present[dst] = True
    root, leaf = uf_stars(src, dst)
    del src, dst
    want = np.arange(span, dtype=np.int64)
    want[leaf] = root
    n = int(np.count_nonzero(present))
    labels = pads.dataset(out, format="parquet").to_table(columns=["vertex", "component"])
    vert = labels.column("vertex").to_numpy()
    comp = labels.column("component").to_numpy()
    ok = bool(vert.size == n and (vert < span).all() and present[vert].all()
              and np.unique(vert).size == n and np.array_equal(comp, want[vert]))
    return {"vertices": n, "components_uf": n - int(leaf.size),
            "components": int(np.count_nonzero(vert == comp)), "labelled": int(vert.size),
            "verified_by": "uf_stars (every vertex)", "equal_to_uf": ok}


def _verify(ds: Path, out: str) -> dict:
    """Components and 2,000 sampled labels against scipy (in this process, not the job's)."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    t = pq.read_table(ds)
    src, dst = t.column("src").to_numpy(), t.column("dst").to_numpy()
    del t
    ids, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = ids.size
    mat = coo_matrix((np.ones(src.size, np.int8), (inv[:src.size], inv[src.size:])),
                     shape=(n, n)).tocsr()
    ncomp, lab = connected_components(mat, directed=False)
    del mat
    mins = np.full(ncomp, np.iinfo(np.int64).max)
    np.minimum.at(mins, lab, ids)
    labels = pads.dataset(out, format="parquet").to_table(columns=["vertex", "component"])
    vert = labels.column("vertex").to_numpy()
    comp = labels.column("component").to_numpy()
    rng = np.random.default_rng(0)
    pick = rng.choice(vert.size, min(2000, vert.size), replace=False)
    want = mins[lab[np.searchsorted(ids, vert[pick])]]
    return {"vertices": int(n), "components_scipy": int(ncomp),
            "components": int(np.count_nonzero(vert == comp)), "labelled": int(vert.size),
            "sample_equal": bool(np.array_equal(comp[pick], want)),
            "equal_to_scipy": bool(vert.size == n and np.count_nonzero(vert == comp) == ncomp
                                   and np.array_equal(comp[pick], want))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m perf.bench_wcc_sources", allow_abbrev=False,
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2,10", help="millions of edges, comma-separated")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--executor-memory", default="6g")
    ap.add_argument("--master", default="local-cluster[1,2,8192]")
    ap.add_argument("--spark", action="store_true",
                    help="TFRONT_WCC_DRIVER_ROWS=0: no epoch finished on the driver")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--partitions", type=int, default=None,
                    help="tfront wcc --partitions (default: the job's, the master's cores); "
                         "more keeps each task's rows in a Python worker's memory at 300M")
    ap.add_argument("--out", default=str(ROOT / "perf" / "results" / "wcc-sources.json"))
    args = ap.parse_args(argv)
    runs = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        rec = run_size(size, args)
        runs.append(rec)
        print(json.dumps(rec), flush=True)
    ok = [r for r in runs if r["returncode"] == 0]
    summary = {}
    if len(ok) >= 2:
        peaks = [r["driver_peak_mib"] for r in ok]
        spe = [r["s_per_medge"] for r in ok]
        summary = {"driver_peak_ratio": round(max(peaks) / min(peaks), 2),
                   "s_per_medge_ratio_largest_to_smallest": round(spe[-1] / spe[0], 2)}
    res = {"benchmark": "wcc-sources", "when": utc_now(), "commit": commit_info(),
           "machine": machine(), "parameters": vars(args), "runs": runs, "summary": summary}
    write_results(res, args.out)   # paths relative to the repository
    print(json.dumps(summary))
    return 0 if all(r["returncode"] == 0 and r.get("equal_to_scipy", r.get("equal_to_uf"))
                    for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
