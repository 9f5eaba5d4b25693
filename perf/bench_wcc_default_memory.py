"""Issue 23 item 15: ``tfront wcc`` on 20M edges with the **default** driver memory finishes,
or fails with the memory message -- it does not hang or die silently.

What it runs
------------
``tfront wcc GRAPH.parquet --epochs E`` (the command a user types: no ``--driver-memory``,
no ``--master``, so embedded Spark ``local[*]`` with the driver memory ``tfront`` sizes from
the machine -- ``spark_plugin.session.config.default_driver_memory``, 35 % of its memory,
at least 1g) in a fresh process, with ``TFRONT_WCC_DRIVER_ROWS`` removed from its
environment, on ``--graph`` (default ``rmat20m``: R-MAT, 20,000,000 edges, generated once
into ``perf/results/graphs/``). The run is stopped after ``--timeout`` seconds.

What it records (``--out``, default ``perf/results/wcc-default-memory.json``): the commit,
the machine, the parameters, the driver memory the command chose (from its settings line on
stderr) and ``default_driver_memory()`` here, the wall time, the exit status and the
outcome:

* ``finished`` -- exit 0 and the total line (the epoch lines are kept);
* ``memory`` -- exit 2 with the job commands' out-of-memory message
  (:class:`~spark_plugin.errors.SparkMemoryError`: which heap was in force, how to raise it);
* ``timeout`` -- still running after ``--timeout`` seconds (a hang, or a slow machine:
  the record says which timeout);
* ``failed`` -- any other ending (the stderr tail is kept).

``perf/bench_wcc.py --driver-memory auto`` (``perf/results/wcc-large.json``) sizes the driver
the same way: ``auto`` leaves ``spark.driver.memory`` unset, so ``build_session``'s ``local``
preset applies ``default_driver_memory()``, exactly as ``tfront wcc`` without
``--driver-memory`` does; this benchmark runs the command itself, as a user does.

Run::

    .venv/bin/python -m perf.bench_wcc_default_memory            # rmat20m, 4 epochs, 170 s
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from perf.common import ROOT, add_output_args, commit_info, machine, save_results, utc_now
from perf.graphs import GRAPHS, ensure_graph

GRAPH_DIR = ROOT / "perf" / "results" / "graphs"
SETTINGS = re.compile(r"driver memory (\S+) \(([^;]*)")


def run_command(graph: str, epochs: int, timeout: float) -> dict:
    """``tfront wcc`` on ``graph``'s Parquet file, default driver memory: the record."""
    from spark_plugin.session.config import default_driver_memory, format_memory

    cmd = [sys.executable, "-m", "engine.cli.main", "wcc", graph, "--epochs", str(epochs)]
    env = {k: v for k, v in os.environ.items() if k != "TFRONT_WCC_DRIVER_ROWS"}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"]
                                     if env.get("PYTHONPATH") else "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the JVM too
        out, err = proc.communicate()
        status = None
    wall = time.perf_counter() - t0
    try:   # a JVM left by a killed driver
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    chosen = SETTINGS.search(err)
    if status is None:
        outcome = "timeout"
    elif status == 0 and "total:" in out + err:
        outcome = "finished"
    elif status == 2 and "out of memory" in err.lower():
        outcome = "memory"
    else:
        outcome = "failed"
    return {"command": " ".join(cmd[1:]), "outcome": outcome, "exit_status": status,
            "wall_s": round(wall, 3), "timeout_s": timeout,
            "driver_memory": chosen.group(1) if chosen else None,
            "driver_memory_source": chosen.group(2) if chosen else None,
            "default_driver_memory": format_memory(default_driver_memory()),
            "stdout_tail": out[-1500:], "stderr_tail": err[-3000:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--graph", default="rmat20m", choices=sorted(GRAPHS))
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=170.0,
                    help="seconds before the run is stopped and recorded as a timeout")
    add_output_args(ap, ROOT / "perf" / "results" / "wcc-default-memory.json", plot=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    meta = ensure_graph(args.graph, GRAPH_DIR)
    gen_s = time.perf_counter() - t0
    if not args.quiet:
        print(f"{args.graph}: {meta['edges']:,} edges ({gen_s:.1f} s to have it); running "
              f"tfront wcc with the default driver memory ...", flush=True)
    started = utc_now()
    rec = run_command(meta["parquet"], args.epochs, args.timeout)
    results = {"benchmark": "wcc-default-memory", **commit_info(),
               "machine": machine(mem_total_kib=_mem_total_kib()),
               "parameters": {"graph": args.graph, "epochs": args.epochs,
                              "timeout_s": args.timeout},
               "graph": meta, "started": started, "finished": utc_now(), "run": rec}
    table = (f"{args.graph} ({meta['edges']:,} edges, {args.epochs} epochs): {rec['outcome']} "
             f"after {rec['wall_s']:.1f} s, exit {rec['exit_status']}, driver memory "
             f"{rec['driver_memory']} ({rec['driver_memory_source']}); default_driver_memory() "
             f"here: {rec['default_driver_memory']}")
    save_results(results, args, table=table)
    return 0 if rec["outcome"] in ("finished", "memory") else 1


def _mem_total_kib() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(main())
