"""Count what this tree's cuda backend does per churn batch and per ``Psi`` build (issue 24).

Numba simulates CUDA (``NUMBA_ENABLE_CUDASIM=1`` is set here before Numba loads)::

    python perf/calibration/count_today.py --out perf/results/gpu-counts-today.json

* **Per churn batch** (steady state, the 3rd batch of a stream), on the simulated backend with
  the benchmark's workload at N=10, B=60, for each strategy: launches, primitives, syncs and
  allocations from :data:`gpu_kernels._cuda.COUNTS` (as ``last_timing`` reports them), and
  the array arguments of the Numba launches (each CuPy argument is converted by Numba on
  every launch), counted by wrapping :func:`gpu_kernels._cuda.launch`. These are constants
  of the design (``tests/cuda_sim`` asserts they do not grow with ``L`` or ``B``).
* **Per ``Psi`` build on the device** (``compute_psi(..., kernels=)``, dense and ragged) at
  N=6: the same counts.
* **Serial work of one thread, at the real sizes**, from the host's ``Psi`` (no simulator
  needed: the loop lengths are data): the closure gather's block per target strides 32
  threads over the target's entries, so a thread takes ``ceil(entries x |F| / 32)``
  candidates (plus the vote's reads, half a candidate each) and then the block's merge.
  The device build runs two kernels one after the other, so its longest thread is the
  longer of theirs: the settle's thread per source visits every location its row reaches
  and then counts it (``source_counts``: per reached location a composition of two rows,
  about a translation visit's work, so a step each; an unreached location costs that loop
  one read, coalesced across the warp, and is not counted), ``2 x reached``; the fill's
  thread per (source, target) writes one antichain, ``max_antichain`` steps. (Until the fill
  took a thread per pair, one thread per source also wrote its whole row: ``reached +
  summaries``, kept as ``build_serial_max_thread_per_source``.) Taken on the first churn
  batch of the synthetic workload (cpu backend).

``--only psi_build,serial`` recounts those parts alone into an existing ``--out`` (the
others keep their figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

ARGS = {"n": 0}


def _wrap_launch():
    from gpu_kernels import _cuda
    real_launch, real_blocks = _cuda.launch, _cuda.launch_blocks

    def launch(kernel, n, *args, tpb=None):
        if int(n) > 0:
            ARGS["n"] += sum(isinstance(a, np.ndarray) for a in args)
        return real_launch(kernel, n, *args, tpb=tpb)

    def launch_blocks(kernel, nb, threads, *args):
        if int(nb) > 0:
            ARGS["n"] += sum(isinstance(a, np.ndarray) for a in args)
        return real_blocks(kernel, nb, threads, *args)
    _cuda.launch, _cuda.launch_blocks = launch, launch_blocks


def batch_counts():
    from engine.batched.cuda import CudaKernels
    from engine.batched.tracker import BatchedTracker
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(10, 1)
    g = build_graph(spec)
    arrays = [batch_columns(g, b) for b in generate_batches(spec, 60, 1)]
    out = {}
    for strategy in ("closure", "edgewise"):
        tr = BatchedTracker(g, kernels=CudaKernels(simulated=True), strategy=strategy)
        per = []
        for arr in arrays:
            ARGS["n"] = 0
            tr.update_arrays(*arr)
            t = tr.last_timing
            per.append({c: t[c] for c in ("launches", "ops", "syncs", "allocs")}
                       | {"array_args": ARGS["n"]})
        out[strategy] = {"steady_churn": per[2], "first_batch": per[0], "all": per}
    return out


def psi_counts():
    from engine.batched.cuda import CudaKernels
    from engine.batched.psi import compute_psi
    from gpu_kernels import _cuda
    from perf.workloads import build_graph, generate_graph
    g = build_graph(generate_graph(6, 1))
    out = {}
    for layout in ("dense", "ragged"):
        ARGS["n"] = 0
        before = _cuda.COUNTS.snapshot()
        compute_psi(g, layout=layout, kernels=CudaKernels(simulated=True))
        out[layout] = _cuda.COUNTS.since(before) | {"array_args": ARGS["n"]}
    return out


def rollback_counts():
    """The rollback solver's device work per fixed-point round (simulated, small problems):
    launches, syncs, primitives and the array arguments per launch."""
    from gpu_kernels import _cuda
    from perf.bench_rollback import run_benchmark
    out = {}
    for guard in ("simple", "full"):
        ARGS["n"] = 0
        before = _cuda.COUNTS.snapshot()
        res = run_benchmark([8], [4], [guard], repeat=1, backends=("cuda",), simulated=True,
                            log=lambda *a, **k: None)
        tot = _cuda.COUNTS.since(before)
        case = res["cases"][0]
        out[guard] = {"per_round": case["per_round"], "rounds": case["rounds"],
                      "launches_total": tot["launches"],
                      "array_args_per_launch": ARGS["n"] / max(tot["launches"], 1)}
    return out


def serial_work(sizes):
    """Loop lengths of one device thread at the real sizes (host data, no simulator)."""
    from engine.batched.graph_arrays import GraphArrays
    from engine.batched.psi import compute_psi
    from engine.batched.tracker import BatchedTracker
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    out = {}
    for n in sizes:
        t0 = time.perf_counter()
        spec = generate_graph(n, 1)
        g = build_graph(spec)
        ga = GraphArrays.from_graph(g)
        psi = compute_psi(g, layout="dense")
        count = np.asarray(psi.count, np.int64)
        rec = {"locations": ga.L, "summaries": int(count.sum()),
               "pairs": int((count > 0).sum()), "max_antichain": int(psi.max_antichain),
               "arcs": int(ga.in_ptr[-1])}
        # the device build's two kernels: the settle's thread per source, a visit (its
        # in-arcs and antichain work folded in) and a count step per reached location; the
        # fill's thread per (source, target), a write per summary of one antichain
        reach = (count > 0).sum(axis=1)
        summ = count.sum(axis=1)
        settle = 2 * reach
        rec["settle_serial_max"] = int(settle.max())
        rec["fill_serial_max"] = int(psi.max_antichain)
        rec["build_serial_max"] = max(rec["settle_serial_max"], rec["fill_serial_max"])
        rec["build_serial_mean"] = float(settle.mean())
        rec["build_serial_max_thread_per_source"] = int((reach + summ).max())
        if n <= 1000:
            tr = BatchedTracker(g, strategy="edgewise")
            batches = generate_batches(spec, 100_000, 1)
            tr.update_arrays(*batch_columns(g, batches[0]))
            F_old = np.diff(tr._F_ptr) if hasattr(tr, "_F_ptr") else None
            tr.update_arrays(*batch_columns(g, batches[1]))
            Flen = np.diff(tr._F_ptr) if hasattr(tr, "_F_ptr") else F_old
            if Flen is not None:
                cand = (count * Flen[:, None]).sum(axis=0)   # per target, all sources
                per_thread = np.ceil(cand / 32.0)
                # vote: half a candidate per entry and F row; merge: 8 rows x 256 compares
                # in shared memory, counted as 1/8 step each (assumption, see the model)
                steps = per_thread * 1.5 + 8 * 256 / 8
                rec["gather_candidates_max"] = int(cand.max())
                rec["gather_serial_max"] = float(steps.max())
                rec["F_rows"] = int(Flen.sum())
        rec["seconds"] = time.perf_counter() - t0
        out[str(n)] = rec
        print(n, rec, flush=True)
    return out


def main(argv=None):
    # the simulator is chosen when Numba loads: a process that already loaded it cannot count
    if "numba" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        sys.exit("run this as a script: Numba is already loaded without its CUDA simulator")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--out", required=True)
    p.add_argument("--sizes", default="1000,2000")
    p.add_argument("--only", metavar="PARTS",
                   help="comma-separated parts among batch, psi_build, serial, rollback: "
                        "recount those alone into an existing --out")
    p.add_argument("--rollback-only", action="store_true", help="the same as --only rollback")
    args = p.parse_args(argv)
    only = args.only.split(",") if args.only else (["rollback"] if args.rollback_only else None)
    parts = {"batch": batch_counts, "psi_build": psi_counts, "rollback": rollback_counts,
             "serial": lambda: serial_work([int(x) for x in args.sizes.split(",")])}
    if only is not None and not set(only) <= set(parts):
        p.error(f"--only: unknown parts {sorted(set(only) - set(parts))}; "
                f"expected some of {sorted(parts)}")
    _wrap_launch()
    if only is not None:
        with open(args.out) as f:
            res = json.load(f)
        res["how"] = __doc__
        for part in only:
            res[part] = parts[part]()
            print(part, json.dumps(res[part])[:1500], flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
        return 0
    res = {"how": __doc__}
    res["batch"] = batch_counts()
    print(json.dumps(res["batch"])[:1500], flush=True)
    res["psi_build"] = psi_counts()
    print(res["psi_build"], flush=True)
    res["serial"] = serial_work([int(x) for x in args.sizes.split(",")])
    res["rollback"] = rollback_counts()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
