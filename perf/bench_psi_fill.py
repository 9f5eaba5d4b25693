"""The device ``Psi`` build's two passes, this tree's against a baseline commit's, side by side.

What it measures
----------------
For each size ``N`` (``--sizes``) the synthetic workload graph (``perf.workloads``), built on
the device with ``gpu_kernels.closure`` of this tree and of ``--baseline`` (its
``gpu_kernels/closure.py`` read with ``git show`` and loaded beside this one; the rest of the
package is this tree's): the settle (``closure_settle_cuda``) and, from it, the dense and the
ragged fill (``closure_fill_dense_cuda``, ``closure_fill_cuda``), each between two CUDA
events after a device synchronisation. The two variants alternate, ``--repeat`` times each;
the medians are reported, and every fill's arrays are compared with the other variant's and
with the host's ``compute_psi`` (a difference is an error). Written for issue 24's change of
the fill from a thread per source to a thread per (source, target) pair (baseline
``56ea7d0``).

How to run (from the repository root, on a GPU)
-----------------------------------------------
::

    python -m perf.bench_psi_fill --sizes 100,1000,2000 --out perf/results/psi-fill.json

``--simulated`` runs the same on Numba's CUDA simulator (NumPy arrays, ``time.perf_counter``;
tiny sizes only: the timings mean nothing there).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_baseline(commit: str):
    """``gpu_kernels/closure.py`` of ``commit`` as the module ``gpu_kernels._closure_baseline``."""
    src = subprocess.run(["git", "show", f"{commit}:gpu_kernels/closure.py"], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    folder = tempfile.mkdtemp(prefix="psi-fill-baseline-")
    path = os.path.join(folder, "closure_baseline.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("gpu_kernels._closure_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def run(sizes, baseline, repeat, simulated, log=print):
    import numpy as np
    from engine.batched.graph_arrays import GraphArrays
    from engine.batched.psi import compute_psi
    from gpu_kernels import closure
    from perf.workloads import build_graph, generate_graph
    if simulated:
        xp, sync = np, (lambda: None)
    else:
        import cupy as xp
        sync = xp.cuda.Device().synchronize

    def timed(fn):
        sync()
        if simulated:
            t0 = time.perf_counter()
            out = fn()
            return out, (time.perf_counter() - t0) * 1e3
        a, b = xp.cuda.Event(), xp.cuda.Event()
        a.record()
        out = fn()
        b.record()
        b.synchronize()
        return out, xp.cuda.get_elapsed_time(a, b)

    def host(a):
        return np.asarray(a) if simulated else xp.asnumpy(a)

    variants = (("baseline", load_baseline(baseline)), ("this tree", closure))
    res = {"baseline": baseline, "repeat": repeat, "simulated": simulated, "sizes": []}
    for n in sizes:
        g = build_graph(generate_graph(n, 1))
        ga = GraphArrays.from_graph(g)
        dense = compute_psi(g, layout="dense")
        ragged = compute_psi(g, layout="ragged")
        fast = closure.translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
        args = [xp.asarray(a) for a in (ga.depth, ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr,
                                        ga.out_dst, ga.order, ga.rank, fast)]
        rec = {"n": n, "L": ga.L, "summaries": dense.num_summaries}
        times = {name: {"settle_ms": [], "fill_dense_ms": [], "fill_ragged_ms": []}
                 for name, _ in variants}
        for _ in range(repeat):
            for name, mod in variants:
                settle, t_settle = timed(lambda: mod.closure_settle_cuda(ga.m, ga.K, *args))
                (d, c), t_dense = timed(lambda: mod.closure_fill_dense_cuda(
                    settle, dense.dtype, dense.count.dtype))
                rows, t_ragged = timed(lambda: mod.closure_fill_cuda(settle, ragged.dtype))
                np.testing.assert_array_equal(host(d), dense.sums)
                np.testing.assert_array_equal(host(c), dense.count)
                for field, a in zip(("pair_ptr", "pair_dst", "sum_ptr", "sums", "t_ptr",
                                     "t_src", "t_pair"), rows):
                    np.testing.assert_array_equal(host(a), getattr(ragged, field), field)
                for k, t in (("settle_ms", t_settle), ("fill_dense_ms", t_dense),
                             ("fill_ragged_ms", t_ragged)):
                    times[name][k].append(t)
                settle = d = c = rows = None  # free the device arrays before the next build
                if not simulated:
                    xp.get_default_memory_pool().free_all_blocks()
        for name, t in times.items():
            rec[name] = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
            rec[name]["all"] = t
        log(json.dumps({k: v for k, v in rec.items()
                        if k not in ("baseline", "this tree")} | {
            name: {k: round(v, 3) for k, v in rec[name].items() if k != "all"}
            for name, _ in variants}), flush=True)
        res["sizes"].append(rec)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--sizes", default="100,1000,2000")
    p.add_argument("--baseline", default="56ea7d0",
                   help="commit whose gpu_kernels/closure.py is the baseline")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--simulated", action="store_true", help="Numba's CUDA simulator (tests)")
    p.add_argument("--out", help="write the results as JSON")
    args = p.parse_args(argv)
    if args.simulated:
        if "numba" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
            p.error("--simulated: Numba is already loaded without its CUDA simulator")
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from perf.common import commit_info, machine, write_results
    res = run([int(x) for x in args.sizes.split(",")], args.baseline, args.repeat,
              args.simulated)
    res = commit_info() | {"machine": machine()} | res
    if not args.simulated:
        import cupy
        res["machine"]["cuda_device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    if args.out:
        write_results(res, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
