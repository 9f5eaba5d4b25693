"""Where a device's milliseconds go: the ``profile`` and ``jobs`` steps of
``perf/device_checks.sh`` (issue 34, items 1, 3 and 4).

``profile`` splits the two missed targets of the H200 runs:

* a churn batch (``--n``, ``--b``, the edge-wise strategy on the cuda backend): the plain
  median per batch; the same batches with a device synchronisation around each backend call
  (intake with its staging, merge, frontier update, the copy of ``F`` to the host, the host's
  edge-wise propagation and change extraction; what is left is Python between them); and a
  ``cProfile`` of the plain batches, its heaviest functions by own time;
* ``Psi``'s count pass (``closure_settle_cuda``, one thread per source) at ``--psi-n``: its
  time by threads per block, the fill's, and one thread alone settling the source with the
  most summaries and the first source in rank order -- the serial chain that bounds the
  pass however many threads run beside it.

``jobs`` runs ``tfront wcc`` end to end on this host (``python -m engine.cli.main``, whole
process, no PySpark needed: epochs finish on the driver), ``--backend cpu`` and ``cuda``
alternating on the same Parquet file, and ``tfront sssp`` (cpu kernels) once per graph; every
run's labels are checked against scipy's component count, its seconds and its own summary
lines recorded.

Both write one JSON (``--out``); ``--simulated`` runs them on Numba's CUDA simulator with tiny
sizes (the logic, not the speed; ``tests/perf/test_device_checks.py``).
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from perf.device_check import _device_name, _kernels, _replays, _sync, _write


def _timed(fn, name, acc, xp):
    """``fn`` between two synchronisations, its seconds added to ``acc[name]`` while
    ``acc["on"]`` (the churn batches; the workload's first batches fill the table)."""
    def wrapper(*a, **k):
        _sync(xp)
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            _sync(xp)
            if acc.get("on"):
                acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
    return wrapper


def profile_churn(n, b, repeat, simulated):
    """The churn batch split by phase (see the module docstring)."""
    from engine.batched.tracker import BatchedTracker
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(n, 1)
    g = build_graph(spec)
    batches = [(x.kind, batch_columns(g, x)) for x in generate_batches(spec, b, 1)]
    kernels = _kernels(simulated)
    xp = kernels.xp

    def replay(tr, prof=None, acc=None):
        times = []
        for kind, arr in batches:
            churn = kind == "churn"
            if acc is not None:
                acc["on"] = churn
            if churn and prof is not None:
                prof.enable()
            t = time.perf_counter()
            tr.update_arrays(*arr)
            dt = time.perf_counter() - t
            if churn and prof is not None:
                prof.disable()
            if churn:
                times.append(dt)
        return times

    plain, _, _ = _replays(g, batches, lambda: kernels, "edgewise", repeat)  # after a warm-up
    # phases, each call between two synchronisations
    tr = BatchedTracker(g, kernels=kernels, strategy="edgewise")
    acc: dict[str, float] = {}
    names = ("intake", "stage", "merge_counts", "frontier_update", "frontiers_to_host")
    for name in names:
        setattr(kernels, name, _timed(getattr(kernels, name), name, acc, xp))
    pk = tr._pk
    host_names = ("edgewise", "frontier_changes")
    for name in host_names:
        setattr(pk, name, _timed(getattr(pk, name), name, acc, xp))
    synced = []
    try:
        for _ in range(repeat):
            tr = BatchedTracker(g, kernels=kernels, strategy="edgewise")
            synced += replay(tr, acc=acc)
    finally:
        for name in names:
            kernels.__dict__.pop(name, None)
        for name in host_names:
            pk.__dict__.pop(name, None)
    churns = len(synced)
    acc.pop("on", None)
    phases = {k: v / churns * 1e3 for k, v in acc.items()}
    phases["rest (Python between calls)"] = (sum(synced) * 1e3 / churns
                                            - sum(v for k, v in phases.items() if k != "stage"))
    prof = cProfile.Profile()
    profiled = len(replay(BatchedTracker(g, kernels=kernels, strategy="edgewise"), prof))
    s = io.StringIO()
    st = pstats.Stats(prof, stream=s)
    st.sort_stats("tottime").print_stats(25)
    top = [line.replace(os.getcwd() + os.sep, "") for line in s.getvalue().splitlines()
           if line.strip()][-26:]
    top.insert(0, f"total {st.total_tt * 1e3:.2f} ms over {profiled} churn batches")
    return {"n": n, "b": b, "churn_batches": churns, "median_ms": statistics.median(plain) * 1e3,
            "synced_median_ms": statistics.median(synced) * 1e3,
            "phases_ms_per_batch": phases, "cprofile_top_tottime": top,
            "counts": {k: v for k, v in tr.last_timing.items() if isinstance(v, (int, float))}}


def _events(xp):
    if xp is np:
        return None
    return xp.cuda.Event(), xp.cuda.Event()


def _elapsed(xp, ev, fn):
    """Seconds of ``fn``: between two CUDA events ``ev`` on a device, by the clock (the
    simulator, ``ev`` None)."""
    if ev is None:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    ev[0].record()
    fn()
    ev[1].record()
    ev[1].synchronize()
    return xp.cuda.get_elapsed_time(*ev) / 1e3


def profile_psi(n, repeat, simulated, tpbs):
    """The count pass of ``Psi`` by threads per block, the fill, and the serial chain."""
    from engine.batched.graph_arrays import GraphArrays
    from gpu_kernels import _cuda
    from gpu_kernels import closure as gc_
    from perf.workloads import build_graph, generate_graph
    kernels = _kernels(simulated)
    xp = kernels.xp
    g = build_graph(generate_graph(n, 1))
    ga = GraphArrays.from_graph(g)
    fast = gc_.translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
    args = [kernels.asarray(a) for a in (ga.depth, ga.in_ptr, ga.in_src, ga.in_sum,
                                         ga.out_ptr, ga.out_dst, ga.order, ga.rank, fast)]
    ev = _events(xp)
    out = {"n": n, "L": int(ga.L), "W": int(1 + ga.m + ga.K), "settle_ms_by_tpb": {},
           "fill_dense_ms_by_layout": {}}

    def settle(tpb=None, layout=None):
        return gc_.closure_settle_cuda(ga.m, ga.K, *args, tpb=tpb, layout=layout)

    s = settle()
    _sync(xp)
    # the work spaces by thread are a device-only layout (see gpu_kernels.closure)
    layouts = ["interleaved"] + ([] if simulated else ["by_thread"])
    for layout in layouts:
        for tpb in (tpbs if layout == "interleaved" else tpbs[:1]):
            settled = settle(tpb, layout)
            _sync(xp)
            ts = [_elapsed(xp, ev, lambda: settle(tpb, layout))
                  for _ in range(repeat)]
            key = str(tpb) if layout == "interleaved" else f"{tpb} {layout}"
            out["settle_ms_by_tpb"][key] = statistics.median(ts) * 1e3
            print(f"Psi N={n} settle, {tpb} threads per block, work spaces {layout}: "
                  f"{out['settle_ms_by_tpb'][key]:.2f} ms", flush=True)
        ts = [_elapsed(xp, ev, lambda: gc_.closure_fill_dense_cuda(
            settled, np.int64, np.int32)) for _ in range(repeat)]
        out["fill_dense_ms_by_layout"][layout] = statistics.median(ts) * 1e3
        if layout != "interleaved":  # the same Psi, array for array
            a = [_cuda.to_host(x) for x in gc_.closure_fill_dense_cuda(s, np.int64, np.int32)]
            b = [_cuda.to_host(x) for x in gc_.closure_fill_dense_cuda(settled, np.int64,
                                                                         np.int32)]
            out[f"{layout}_equal"] = all(np.array_equal(x, y) for x, y in zip(a, b))
    out["fill_dense_ms"] = out["fill_dense_ms_by_layout"]["interleaved"]
    # one thread alone: the heaviest source by summaries, and the first in rank order
    rows = np.diff(_cuda.to_host(s.row_ptr))
    pairs = np.diff(_cuda.to_host(s.pair_ptr))
    heavy = int(np.argmax(rows))
    first = int(ga.order[0])
    out["rows_per_source"] = {"max": int(rows.max()), "median": float(np.median(rows)),
                              "mean": float(rows.mean())}
    out["pairs_per_source"] = {"max": int(pairs.max()), "median": float(np.median(pairs))}
    k = gc_._kernels()
    L, W = int(ga.L), int(1 + ga.m + ga.K)
    cnt = _cuda.alloc(xp, (7, L), xp.int64)
    for label, src in (("heaviest", heavy), ("first_in_rank", first)):
        srcs = kernels.asarray(np.array([src], ga.order.dtype))

        def one():
            ws = gc_._device_work_space(xp, 1, L, W, s.rows)
            settled = _cuda.alloc(xp, 1, xp.uint8)
            _cuda.launch(k.closure_settle, 1, srcs, ga.m, ga.K, *args, *ws, 0, settled, *cnt,
                         tpb=1 if not simulated else None)
        one()
        _sync(xp)
        ts = [_elapsed(xp, ev, one) for _ in range(repeat)]
        out[f"one_thread_{label}_ms"] = statistics.median(ts) * 1e3
        out[f"one_thread_{label}_source"] = {"source": src, "summaries": int(rows[src]),
                                             "pairs": int(pairs[src])}
    return out


def step_profile(args):
    res = {"device": _device_name(args.simulated)}
    res["churn"] = profile_churn(args.n, args.b, args.repeat, args.simulated)
    print(json.dumps({k: v for k, v in res["churn"].items() if k != "cprofile_top_tottime"}),
          flush=True)
    print("\n".join(res["churn"]["cprofile_top_tottime"]), flush=True)
    _write(args.out, res)
    res["psi"] = profile_psi(args.psi_n, args.repeat, args.simulated, args.tpbs)
    print(json.dumps(res["psi"]), flush=True)
    _write(args.out, res)
    return 0


def _summary_lines(text, cache):
    """The job's own summary lines, the graph folder written ``<graphs>``."""
    return [line.replace(cache.rstrip("/") + "/", "<graphs>/") for line in text.splitlines()
            if line.startswith(("epoch ", "total:", "kernels:", "tfront "))][-6:]


def step_jobs(args):
    """``tfront wcc`` cpu/cuda alternating and ``tfront sssp`` on the same files."""
    import pyarrow.parquet as pq
    from perf.graphs import GRAPHS, ensure_graph
    res = {"device": _device_name(args.simulated), "graphs": []}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p)
    cache = args.cache or tempfile.mkdtemp(prefix="tfront-jobs-")
    for name in args.graphs:
        meta = ensure_graph(GRAPHS[name], cache)
        rec = {"graph": name, "edges": meta["edges"], "vertices": meta["vertices"],
               "components": meta["components"], "runs": []}
        plan = [("wcc", b) for _ in range(args.repeat) for b in args.backends] + [("sssp", "cpu")]
        for job, backend in plan:
            out_dir = os.path.join(cache, f"{name}-{job}-{backend}-out")
            cmd = [sys.executable, "-m", "engine.cli.main", job, meta["parquet"], "--out",
                   out_dir, "--overwrite"]
            cmd += ["--backend", backend] if job == "wcc" else ["--source", "0"]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                               timeout=args.job_timeout)
            wall = time.perf_counter() - t
            run = {"job": job, "backend": backend, "rc": p.returncode, "wall_s": wall,
                   "lines": _summary_lines(p.stdout + p.stderr, cache)}
            if p.returncode == 0:
                t = pq.read_table(out_dir)
                run["vertices_out"] = t.num_rows
                if job == "wcc":
                    comp = t.column("component").to_numpy()
                    run["components_out"] = int(np.unique(comp).size)
                    run["equal_to_scipy"] = (run["components_out"] == meta["components"]
                                             and t.num_rows == meta["vertices"])
            else:
                run["stderr_tail"] = (p.stdout + p.stderr)[-1500:]
            rec["runs"].append(run)
            print(f"{name} {job} {backend}: rc {p.returncode} {wall:.2f} s "
                  f"{run.get('equal_to_scipy', '')} | " + " | ".join(run["lines"][-2:]),
                  flush=True)
            _write(args.out, {**res, "graphs": res["graphs"] + [rec]})
        for b in args.backends:
            ws = [r["wall_s"] for r in rec["runs"]
                  if r["job"] == "wcc" and r["backend"] == b and r["rc"] == 0]
            rec[f"wcc_{b}_median_s"] = statistics.median(ws) if ws else None
        res["graphs"].append(rec)
        _write(args.out, res)
    return 0


def add_parsers(sub, simulated):
    """The ``profile`` and ``jobs`` subcommands of ``python -m perf.device_check``."""
    q = sub.add_parser("profile")
    q.set_defaults(fn=step_profile)
    _common(q)
    q.add_argument("--n", type=int, default=3 if simulated else 1000)
    q.add_argument("--b", type=int, default=10 if simulated else 100_000)
    q.add_argument("--psi-n", type=int, default=3 if simulated else 1000)
    q.add_argument("--tpbs", type=lambda t: [int(x) for x in t.split(",")],
                   default=[1] if simulated else [1, 4, 32])
    q.add_argument("--repeat", type=int, default=1 if simulated else 3)
    q = sub.add_parser("jobs")
    q.set_defaults(fn=step_jobs)
    _common(q)
    q.add_argument("--graphs", type=lambda t: t.split(","),
                   default=["tiny"] if simulated else ["grid1000", "rmat10m"])
    q.add_argument("--backends", type=lambda t: t.split(","), default=["cpu", "cuda"])
    q.add_argument("--repeat", type=int, default=1)
    q.add_argument("--cache", default=None, help="folder for the graphs (default: a temporary one)")
    q.add_argument("--job-timeout", type=float, default=300)


def _common(q):
    q.add_argument("--out", required=True)
    q.add_argument("--simulated", action="store_true",
                   help="Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 must be set)")
