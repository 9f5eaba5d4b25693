"""The steps of ``perf/device_checks.sh``: short device measurements, each writing one JSON, and
the target table that sets them beside the calibrated predictions (issue 24).

Each step is one subcommand, run by the script under its own ``timeout``; a step that fails
or runs out of time leaves its JSON missing (``propagate`` writes its JSON after every case, so
a cut keeps the cases done), and the table shows ``-`` for what is missing::

    python -m perf.device_check launch    --out DIR/launch.json      # pins launch vs args
    python -m perf.device_check propagate --out DIR/propagate.json   # churn batches
    python -m perf.device_check psi       --out DIR/psi.json         # Psi on the device
    python -m perf.device_check uf        --out DIR/uf.json          # WCC's CuPy twin
    python -m perf.device_check rollback  --out DIR/rollback.json    # the rollback solver
    python -m perf.device_check table     --dir DIR --out DIR/targets.json

``--simulated`` (every subcommand but ``table``) runs on Numba's CUDA simulator with NumPy
in place of CuPy and tiny default sizes: the logic of the check, not its speed
(``tests/perf/test_device_checks.py`` runs the whole script that way). Times are wall
seconds around calls that end in a host read (a churn batch returns host arrays) or around a
device synchronisation; warm-up calls (kernel compilation) are excluded.

The table's predictions are those of ``perf/calibration/gpu_model.py`` (constants fitted to
the H100 run of commit 840c890); its measured column is what this run measured, on the
device that ``launch.json`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SIM_ENV = "NUMBA_ENABLE_CUDASIM"
#: ``numba.cuda``, set on first use: the kernels read it as a *global*, which the simulator
#: swaps for its own module while they run (as in ``gpu_kernels``).
cuda = None


def _sync(xp):
    if xp.__name__ == "cupy":
        xp.cuda.runtime.deviceSynchronize()


def _xp(simulated):
    if simulated:
        import numpy
        return numpy
    import cupy
    return cupy


def _kernels(simulated):
    from engine.batched.cuda import CudaKernels
    return CudaKernels(simulated=simulated)


def _device_name(simulated):
    if simulated:
        return "simulator (NUMBA_ENABLE_CUDASIM=1)"
    from engine.batched.cuda import usable_device
    return usable_device()[1]


def _write(out, res):
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def step_launch(args):
    """What one Numba launch, one array argument, one CuPy primitive and one host round trip
    cost: the terms the 840c890 data does not split (launch vs argument, sync vs primitive)."""
    global cuda
    from gpu_kernels import _cuda
    cuda = _cuda.cuda()
    xp = _xp(args.simulated)

    @cuda.jit
    def touch1(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] += 1

    @cuda.jit
    def touch12(a, b, c, d, e, f, g, h, p, q, r, s):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] += b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i] + p[i] + q[i] + r[i] + s[i]

    n = args.reps
    arrs = [xp.zeros(256, xp.int64) for _ in range(12)]
    res = {"device": _device_name(args.simulated), "reps": n}

    def per_call(fn):
        fn()  # warm-up: compilation
        _sync(xp)
        t = time.perf_counter()
        for _ in range(n):
            fn()
        _sync(xp)
        return (time.perf_counter() - t) / n

    res["launch_1_array_s"] = per_call(lambda: _cuda.launch(touch1, 256, arrs[0]))
    res["launch_12_arrays_s"] = per_call(lambda: _cuda.launch(touch12, 256, *arrs))
    if not args.simulated:
        dev = [cuda.as_cuda_array(a) for a in arrs]
        res["launch_12_numba_arrays_s"] = per_call(lambda: _cuda.launch(touch12, 256, *dev))
        # what "converted once" would save per batch: one conversion, and 12 converted anew
        # before each launch (the arrays of a batch are new each batch)
        res["as_cuda_array_s"] = per_call(lambda: cuda.as_cuda_array(arrs[3]))
        res["launch_12_converted_each_time_s"] = per_call(
            lambda: _cuda.launch(touch12, 256, *[cuda.as_cuda_array(a) for a in arrs]))
    res["primitive_s"] = per_call(lambda: xp.cumsum(arrs[1]))
    res["alloc_s"] = per_call(lambda: xp.empty(1024, xp.int64))
    res["sync_s"] = per_call(lambda: int(arrs[2][:1].sum()))
    res["array_arg_s"] = (res["launch_12_arrays_s"] - res["launch_1_array_s"]) / 11
    res["launch_s"] = res["launch_1_array_s"] - res["array_arg_s"]
    _write(args.out, res)
    print(json.dumps(res))
    return 0


def step_propagate(args):
    """Churn batches of the benchmark's workload on the cuda backend, per strategy (``auto``,
    and each forced, closure only up to ``--closure-max-n``): the median wall time of the
    churn batches over ``--repeat`` replays, the strategy taken and why, and the counts of
    the last batch; the cpu backend (``auto``) on the same host beside it."""
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    res = {"device": _device_name(args.simulated), "cases": []}
    for n in args.sizes:
        spec = generate_graph(n, 1)
        g = build_graph(spec)
        for b in args.batches:
            t0 = time.perf_counter()
            batches = [(x.kind, batch_columns(g, x)) for x in generate_batches(spec, b, 1)]
            rec = {"n": n, "b": b, "workload_s": time.perf_counter() - t0}
            runs = [("cuda", st) for st in args.strategies
                    if not (st == "closure" and n > args.closure_max_n)] + [("cpu", "auto")]
            for backend, strat in runs:
                times, counts, tr = _replays(
                    g, batches, lambda: _kernels(args.simulated) if backend == "cuda" else None,
                    strat, args.repeat)
                taken = getattr(tr.strategy, "value", str(tr.strategy))
                rec.setdefault(backend, {})[strat] = {
                    "strategy": taken, "churn_ms": [x * 1e3 for x in times],
                    "median_ms": statistics.median(times) * 1e3, "last_batch": counts,
                    "reason": str(getattr(tr, "choice", ""))}
                print(f"N={n} B={b}: {backend} {strat} ({taken}) "
                      f"{rec[backend][strat]['median_ms']:.2f} ms", flush=True)
            res["cases"].append(rec)
            _write(args.out, res)
    for b in args.big:
        n = args.sizes[0]
        spec = generate_graph(n, 1)
        g = build_graph(spec)
        t0 = time.perf_counter()
        batches = [(x.kind, batch_columns(g, x)) for x in generate_batches(spec, b, 1)]
        rec = {"n": n, "b": b, "workload_s": time.perf_counter() - t0}
        times, counts, tr = _replays(g, batches, lambda: _kernels(args.simulated), "auto", 1)
        taken = getattr(tr.strategy, "value", str(tr.strategy))
        med = statistics.median(times)
        rec["cuda"] = {"auto": {"strategy": taken, "churn_ms": [x * 1e3 for x in times],
                                "median_ms": med * 1e3, "last_batch": counts,
                                "changes_per_s": b / med}}
        print(f"N={n} B={b}: cuda auto ({taken}) {med * 1e3:.2f} ms, {b / med:.3g} changes/s",
              flush=True)
        res["cases"].append(rec)
        _write(args.out, res)
    _write(args.out, res)
    return 0


def _replays(g, batches, kernels, strategy, repeat):
    """``repeat + 1`` replays of ``batches`` on a new tracker each (``kernels()`` its
    backend): the churn batches' seconds after the first replay (which warms up: compiles),
    the counts of the last one and the last tracker."""
    from engine.batched.tracker import BatchedTracker
    times, counts, tr = [], None, None
    for rep in range(repeat + 1):
        tr = BatchedTracker(g, kernels=kernels(), strategy=strategy)
        for kind, arr in batches:
            t = time.perf_counter()
            tr.update_arrays(*arr)
            dt = time.perf_counter() - t
            if kind == "churn" and rep:
                times.append(dt)
                counts = {k: v for k, v in tr.last_timing.items() if isinstance(v, (int, float))}
    return times, counts, tr


def step_psi(args):
    """``Psi`` built on the device (``perf.bench_closure``'s ``device_build``: the kernels
    alone) and on the host, median of ``--repeat``."""
    from gpu_kernels import closure as gc_
    from perf.bench_closure import run_benchmark
    kernels = _kernels(args.simulated)
    default = gc_.SOURCE_THREADS_PER_BLOCK
    res = {"device": _device_name(args.simulated), "source_threads_per_block": default,
           "sizes": [], "by_tpb": []}
    # the count pass's threads per block (one thread per source): the default first, then
    # each of --tpbs, the whole device build each time
    for tpb in [default] + [t for t in args.tpbs if t != default]:
        gc_.SOURCE_THREADS_PER_BLOCK = tpb
        try:
            r = run_benchmark(args.sizes, repeat=args.repeat, backend="cuda", kernels=kernels,
                              warmup_size=min(args.sizes), log=lambda *a, **k: None)
        finally:
            gc_.SOURCE_THREADS_PER_BLOCK = default
        for s in r["sizes"]:
            rec = {"n": s["n"], "tpb": tpb, "device_build_ms": s["device_build"]["median"] * 1e3,
                   "device_counts": s.get("device_counts")}
            (res["sizes"] if tpb == default else res["by_tpb"]).append(rec)
            print(f"Psi N={s['n']} (source threads per block {tpb}): device build "
                  f"{rec['device_build_ms']:.2f} ms", flush=True)
        _write(args.out, res)
    return 0


def step_uf(args):
    """WCC's union-find twin ``uf_stars_xp`` on CuPy (warm), against scipy's components."""
    import numpy as np
    from gpu_kernels.unionfind import uf_stars_xp
    xp = _xp(args.simulated)
    rng = np.random.default_rng(0)
    res = {"device": _device_name(args.simulated), "cases": []}
    for n, m in args.cases:
        a = rng.integers(0, n, m).astype(np.int64)
        b = rng.integers(0, n, m).astype(np.int64)
        da, db = xp.asarray(a), xp.asarray(b)
        uf_stars_xp(xp, da, db)
        _sync(xp)
        ts = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            uf_stars_xp(xp, da, db)
            _sync(xp)
            ts.append(time.perf_counter() - t)
        res["cases"].append({"n": n, "m": m, "median_ms": statistics.median(ts) * 1e3})
        print(f"uf_stars_xp n={n} m={m}: {statistics.median(ts) * 1e3:.2f} ms", flush=True)
    _write(args.out, res)
    return 0


def step_rollback(args):
    """The batched rollback solver, simple guard, on the cpu and cuda backends
    (``perf.bench_rollback``): the median of ``--repeat`` solves after a first (compiling)
    one, and the calibrated estimate of ``engine.rollback.cuda.estimate`` for the same
    problem, without its one-time compilation term."""
    from engine.rollback.cuda import RollbackCostModel, estimate
    from engine.rollback.problem import Guard
    from perf.bench_rollback import generate_problem, run_benchmark
    r = run_benchmark(args.procs, args.times, ["simple"], repeat=args.repeat,
                      reference_limit=0, reference_limit_full=0, backends=("cpu", "cuda"),
                      simulated=args.simulated, log=lambda *a, **k: None)
    res = {"device": _device_name(args.simulated), "cases": []}
    model = RollbackCostModel()
    for c in r["cases"]:
        rec = {k: c.get(k) for k in ("n", "times", "backend", "rounds", "first_call_s")}
        rec["median_ms"] = c["batched_s_median"] * 1e3
        if c["backend"] == "cuda":
            cpu_s, cuda_s, _ = estimate(generate_problem(c["n"], c["times"]), Guard.SIMPLE)
            rec["predicted_ms"] = (cuda_s - model.device_setup_s) * 1e3
            rec["predicted_cpu_ms"] = cpu_s * 1e3
        res["cases"].append(rec)
        print(f"rollback n={c['n']} |T|={c['times']} {c['backend']}: {rec['median_ms']:.2f} ms",
              flush=True)
    _write(args.out, res)
    return 0


def target_rows(folder):
    """Rows ``(what, measured_ms or None, predicted_ms, target_ms or None, dominant)`` from the
    step JSONs in ``folder`` and the calibrated model."""
    from perf.calibration import gpu_model as gm
    counts = gm._load(gm.COUNTS_840C890)
    today = gm._load(gm.COUNTS_TODAY)
    c = gm.fit(gm.calibration_rows(counts))
    preds = {r.case: r for r in gm.today_rows(counts, today)}

    def load(name):
        p = os.path.join(folder, name)
        if not os.path.exists(p):
            return None
        with open(p) as f:
            return json.load(f)
    calls = load("launch.json")
    rows = []
    prop = load("propagate.json")
    measured = {}
    for case in (prop or {}).get("cases", []):
        for strat, m in case.get("cuda", {}).items():
            measured[(case["n"], case["b"], strat)] = m
    named = [(1000, 100_000, "closure"), (1000, 100_000, "edgewise"),
             (1000, 1_000_000, "closure"), (1000, 1_000_000, "edgewise"),
             (5000, 100_000, "edgewise"), (5000, 1_000_000, "edgewise")]
    for n, b, strat in named:
        key = f"churn N={n} B={b:.0e} {strat}"
        m = measured.get((n, b, strat))
        rows.append(_row(key, m and m["median_ms"], preds.get(key), c, gm, calls=calls))
    for (n, b, strat), m in sorted(measured.items()):
        if strat == "auto":  # what auto took, beside the prediction of what it took
            key = f"churn N={n} B={b:.0e} {m['strategy']}"
            r = preds.get(key)
            rows.append(_row(f"churn N={n} B={b:.0e} auto (took {m['strategy']})",
                             m["median_ms"], r, c, gm, target_key=key, calls=calls))
        elif (n, b, strat) not in named:  # sizes the model has no counts for (simulator)
            rows.append(_row(f"churn N={n} B={b:.0e} {strat} (measured only)",
                             m["median_ms"], None, c, gm, calls=calls))
    psi = load("psi.json")
    for n in (1000, 2000):
        key = f"Psi device build N={n} (dense)"
        meas = None
        if psi:
            meas = next((s["device_build_ms"] for s in psi["sizes"] if s["n"] == n), None)
        rows.append(_row(key, meas, preds.get(key), c, gm, calls=calls))
    if psi:
        for s in psi["sizes"]:
            if s["n"] not in (1000, 2000):
                rows.append(_row(f"Psi device build N={s['n']} (measured only)",
                                 s["device_build_ms"], None, c, gm, calls=calls))
        for s in psi.get("by_tpb", []):
            rows.append(_row(f"Psi device build N={s['n']} tpb={s['tpb']} (measured only)",
                             s["device_build_ms"], None, c, gm, calls=calls))
    uf = load("uf.json")
    key = "WCC uf_stars_xp n=2e6 m=8e6 (same code as 840c890)"
    meas = None
    if uf:
        meas = next((x["median_ms"] for x in uf["cases"]
                     if (x["n"], x["m"]) == (2_000_000, 8_000_000)), None)
    rows.append(_row(key, meas, preds.get(key), c, gm, calls=calls))
    if uf:
        for x in uf["cases"]:
            if (x["n"], x["m"]) != (2_000_000, 8_000_000):
                rows.append(_row(f"WCC uf_stars_xp n={x['n']:.0e} m={x['m']:.0e} (measured only)",
                                 x["median_ms"], None, c, gm, calls=calls))
    rb = load("rollback.json")
    for x in (rb or {}).get("cases", []):
        if x["backend"] == "cuda":
            pred = x.get("predicted_ms")
            rows.append({"case": f"rollback simple n={x['n']} |T|={x['times']} (cuda)",
                         "measured_ms": x["median_ms"], "predicted_ms": pred,
                         "ratio": x["median_ms"] / pred if pred else None, "target_ms": None,
                         "dominant": "RollbackCostModel (launches, syncs, mask bytes)",
                         "meets_target": None})
    jobs = load("jobs.json")
    for g in (jobs or {}).get("graphs", []):
        for r in g.get("runs", []):
            if r.get("rc") == 0:
                what = "equal to scipy" if r.get("equal_to_scipy") else (
                    "NOT equal to scipy" if r.get("equal_to_scipy") is False else "not checked")
                rows.append({"case": f"tfront {r['job']} {g['graph']} --backend {r['backend']} "
                                     f"(whole process)",
                             "measured_ms": r["wall_s"] * 1e3, "predicted_ms": None,
                             "ratio": None, "target_ms": None, "dominant": what,
                             "meets_target": None})
    return rows, calls


def _row(key, meas, r, c, gm, target_key=None, calls=None):
    pred = gm.predict_ms(r, c) if r is not None else None
    target = gm._target_of(target_key or key)
    with_calls = gm.predict_with_calls_ms(r, c, calls) if r is not None and calls else None
    return {"case": key, "measured_ms": meas, "predicted_ms": pred,
            "predicted_with_measured_calls_ms": with_calls,
            "ratio": (meas / pred) if meas is not None and pred else None,
            "target_ms": target, "dominant": gm.dominant(r, c) if r else None,
            "meets_target": (meas <= target) if meas is not None and target else None}


def step_table(args):
    rows, launch = target_rows(args.dir)
    steps = []
    tsv = os.path.join(args.dir, "steps.tsv")
    if os.path.exists(tsv):
        with open(tsv) as f:
            for line in f:
                name, rc, secs = line.split()
                steps.append({"step": name, "rc": int(rc), "seconds": int(secs)})
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    print(f"{'case':52s} {'measured ms':>11s} {'predicted':>10s} {'meas/pred':>9s} "
          f"{'w/ calls':>9s} {'target':>7s}  dominant term (model)")
    for r in rows:
        print(f"{r['case']:52s} {fmt(r['measured_ms']):>11s} {fmt(r['predicted_ms']):>10s} "
              f"{fmt(r['ratio']):>9s} {fmt(r.get('predicted_with_measured_calls_ms')):>9s} "
              f"{fmt(r['target_ms']):>7s}  {r['dominant']}")
    print("w/ calls: the prediction with the launch step's measured per-call terms (launch, "
          "array argument, primitive, allocation, sync) in place of the calibrated ones")
    if launch:
        print("launch terms measured: " + ", ".join(
            f"{k} {launch[k] * 1e6:.1f} us" for k in ("launch_s", "array_arg_s", "primitive_s",
                                                    "alloc_s", "sync_s") if k in launch))
    out = {"device": (launch or {}).get("device"), "predicted_by": "perf/calibration/gpu_model.py "
           "(constants fitted to the H100 run of commit 840c890)", "rows": rows,
           "launch": launch, "steps": steps}
    try:
        from perf.common import commit_info
        out.update(commit_info())
    except Exception as e:  # noqa: BLE001 - the table must still be written
        out["commit_error"] = str(e)
    _write(args.out, out)
    print(f"wrote {args.out}")
    return 0


def _pairs(text):
    out = []
    for item in text.split(","):
        n, m = item.split(":")
        out.append((int(float(n)), int(float(m))))
    return out


def _ints(text):
    return [int(float(x)) for x in text.split(",") if x]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    sub = p.add_subparsers(dest="step", required=True)
    simulated = os.environ.get(SIM_ENV) == "1"
    for name, fn in (("launch", step_launch), ("propagate", step_propagate), ("psi", step_psi),
                     ("uf", step_uf), ("rollback", step_rollback)):
        q = sub.add_parser(name)
        q.set_defaults(fn=fn)
        q.add_argument("--out", required=True)
        q.add_argument("--simulated", action="store_true",
                       help="Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 must be set)")
        if name == "launch":
            q.add_argument("--reps", type=int, default=5 if simulated else 200)
        if name == "propagate":
            q.add_argument("--sizes", type=_ints, default=[3] if simulated else [1000, 5000])
            q.add_argument("--batches", type=_ints,
                           default=[10] if simulated else [100_000, 1_000_000])
            q.add_argument("--repeat", type=int, default=1 if simulated else 3)
            q.add_argument("--strategies", type=lambda t: t.split(","),
                           default=["auto", "closure", "edgewise"])
            q.add_argument("--big", type=_ints, default=[] if simulated else [10_000_000],
                           help="then these batch sizes at N = the first size, cuda auto only, "
                                "one replay after the warm-up")
            q.add_argument("--closure-max-n", type=int, default=2000,
                           help="force the closure strategy only up to this N (Psi's size)")
        if name == "psi":
            q.add_argument("--sizes", type=_ints, default=[3] if simulated else [1000, 2000])
            q.add_argument("--tpbs", type=_ints, default=[] if simulated else [1],
                           help="also build with these threads per block in the count pass")
            q.add_argument("--repeat", type=int, default=1 if simulated else 3)
        if name == "uf":
            q.add_argument("--cases", type=_pairs, default=[(10, 5)] if simulated else
                           [(100_000, 200_000), (2_000_000, 8_000_000)])
            q.add_argument("--repeat", type=int, default=1 if simulated else 5)
        if name == "rollback":
            q.add_argument("--procs", type=_ints, default=[4] if simulated else [1000])
            q.add_argument("--times", type=_ints, default=[4] if simulated else [1000, 10_000])
            q.add_argument("--repeat", type=int, default=1 if simulated else 2)
    from perf.device_profile import add_parsers
    add_parsers(sub, simulated)
    q = sub.add_parser("table")
    q.set_defaults(fn=step_table)
    q.add_argument("--dir", required=True)
    q.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if getattr(args, "simulated", False) and not simulated:
        p.error(f"--simulated needs {SIM_ENV}=1 in the environment (set before Numba loads)")
    if not getattr(args, "simulated", True) and args.step != "table":
        from gpu_kernels import _cuda
        _cuda.restore_numpy_aliases()
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
