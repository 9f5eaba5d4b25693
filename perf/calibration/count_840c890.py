"""Count what commit 840c890's cuda backend did on the cases measured on the H100 (issue 24).

Runs against a checkout of 840c890, never against this tree: its modules are imported from
``PYTHONPATH`` (the script refuses to run when ``engine.batched`` is this tree's package), and
Numba simulates CUDA (``NUMBA_ENABLE_CUDASIM=1`` is set here before Numba loads)::

    git worktree add --detach ../wt-840c890 840c890
    PYTHONPATH=../wt-840c890 python perf/calibration/count_840c890.py \\
        --out perf/results/gpu-counts-840c890.json

What it counts, and how
-----------------------
* **Per stage, per batch: Numba launches and their array arguments, CuPy primitives.** A
  tiny workload (N=10, B=60) runs through 840c890's ``CudaKernels(simulated=True)``: every
  ``_cuda.launch``/``launch_blocks`` is counted with its array arguments (Numba converts each
  CuPy argument on every launch), and the array namespace that the kernels and the tracker
  use is a counting proxy of NumPy (each ``xp.f(...)`` call is one primitive: a lower
  bound, array methods and indexing are not seen). These counts do not depend on ``B`` or
  ``L`` except the loops below, which are counted on the real cases.
* **Host round trips (syncs)** are read from the code (``int()`` of a device value,
  ``flatnonzero``/boolean masks, ``to_host``), per stage: :data:`SYNCS`, with lines.
* **The real cases** (N=1000, B=1e5..1e7; N=5000, B=1e5, 1e6): the workload replays on
  840c890's *cpu* backend (identical states), and the inputs of every batch's propagation are
  captured. From them:

  - the closure gather's **longest serial work of one thread**: thread per target, which
    loops over every source with a non-empty ``F`` (one dense ``count`` read each) and
    inserts ``count[l1, l2] x |F(l1)|`` candidates (NumPy over the dense ``Psi``); a target
    overflowing its 8-row slot is relaunched with 4x room (found by running the kernel's
    own scalar core, ``gather_target``, njit on the host), and the longest chain is summed
    over relaunch rounds;
  - the edge-wise strategy's **rounds**: ``edgewise_cuda`` itself runs under the simulator
    on the captured inputs, counting its launches per kernel (every Jacobi round is one
    ``relax``), its level scans and cycle resets;
  - the rows of each stage (input, consolidated, table, flipped locations, output changes),
    from which bytes follow.
* ``Psi`` on the device (``closure_dense_cuda``): rounds are the recorded ones
  (``closure_check.py`` printed them); per round one launch (11 array arguments), one
  allocation and one sync, ``L^2`` threads.
* WCC's ``uf_stars_xp`` (CuPy only): primitives and round trips counted with the proxy on
  NumPy, rounds by running it.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import sys
import time


import numpy as np  # noqa: E402

#: Host round trips per call of each stage at 840c890, read from the code (file:line there).
SYNCS = {
    # to_host(maxima) 482; flatnonzero(head) 498; flatnonzero(total) 501
    "consolidate": 3,
    # int(bad[0]) 550; flatnonzero(ins) 555; int(kept_before[r]) 557
    "merge_counts": 3,
    # to_host(stack) 346; flatnonzero(keep) 353
    "segment_frontiers": 2,
    # locs[same == 0] 386 (pareto.py); int(new_ptr[-1]) in gather_segments_cuda (segments.py:89)
    "replace_segments": 2,
    # int(off[q]) 561; then the tracker's three to_host of the changes (batched.py:203)
    "frontier_changes": 4,
    # the tracker itself: int(bad) 185, flatnonzero(flip) 189, flipped.size, seeds.size
    "tracker": 2,
    # gather_closure_cuda: flatnonzero(hit) 707, flatnonzero(F) 709; per relaunch round
    # int(pend.shape) via flatnonzero(cnt >= 0) 720 and pend[cnt < 0]; gather_segments 1
    "gather_closure_fixed": 3,
    "gather_closure_per_round": 2,
    # edgewise_cuda: per level visited int(min) 634; per inner iteration the work mask 647
    # (one more, empty, per cyclic level); per Jacobi round int(off[nw]) 659; at the end
    # gather_segments_cuda 1 and flatnonzero(touched) 1
    "edgewise_fixed": 2,
}


def _refuse_this_tree():
    import engine
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__))) == here or \
            not os.path.exists(os.path.join(os.path.dirname(engine.__file__), "cuda_backend.py")):
        sys.exit("count_840c890: put a checkout of commit 840c890 first on PYTHONPATH "
                 f"(engine is {engine.__file__})")


class Counter:
    """Launches, array arguments and primitives, attributed to the current stage."""

    def __init__(self):
        self.stage = "tracker"
        self.launch = collections.Counter()
        self.args = collections.Counter()
        self.threads = collections.Counter()
        self.prims = collections.Counter()
        self.kernels = collections.Counter()
        self.calls = collections.Counter()
        self.fn = collections.Counter()

    def reset(self):
        self.__init__()


C = Counter()


class CountingNumPy:
    """NumPy with every function call counted as one device primitive of the current stage."""

    def __getattr__(self, name):
        v = getattr(np, name)
        if callable(v) and not isinstance(v, type):
            @functools.wraps(v)
            def f(*a, **k):
                C.prims[C.stage] += 1
                C.fn[(C.stage, name)] += 1
                return v(*a, **k)
            return f
        return v


def _install():
    from gpu_kernels import _cuda
    proxy = CountingNumPy()
    real_launch, real_blocks, real_ns = _cuda.launch, _cuda.launch_blocks, _cuda.namespace

    def _note(kernel, n, args):
        name = getattr(getattr(kernel, "py_func", kernel), "__name__", repr(kernel))
        C.launch[C.stage] += 1
        C.kernels[(C.stage, name)] += 1
        C.args[C.stage] += sum(isinstance(a, np.ndarray) for a in args)
        C.threads[C.stage] += int(n)

    def launch(kernel, n, *args, tpb=None):
        if int(n) > 0:
            _note(kernel, n, args)
        return real_launch(kernel, n, *args, tpb=tpb)

    def launch_blocks(kernel, nb, threads, *args):
        if int(nb) > 0:
            _note(kernel, int(nb) * int(threads), args)
        return real_blocks(kernel, nb, threads, *args)

    def namespace(*arrays):
        return proxy if real_ns(*arrays) is np else real_ns(*arrays)

    _cuda.launch, _cuda.launch_blocks, _cuda.namespace = launch, launch_blocks, namespace
    return proxy


def _stage_wrap(kernels, names):
    for name in names:
        f = getattr(kernels, name)

        def g(*a, _f=f, _name=name, **k):
            prev, C.stage = C.stage, _name
            C.calls[_name] += 1
            try:
                return _f(*a, **k)
            finally:
                C.stage = prev
        setattr(kernels, name, g)


STAGES = ["consolidate", "merge_counts", "segment_frontiers", "replace_segments",
          "edgewise", "gather_closure", "frontier_changes"]


def per_stage_counts(proxy):
    """Launches, array arguments and primitives per churn batch and stage, on a tiny workload."""
    from engine.batched import BatchedTracker
    from engine.cuda_backend import CudaKernels
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(10, 1)
    g = build_graph(spec)
    arrays = [batch_columns(g, b) for b in generate_batches(spec, 60, 1)]
    out = {}
    for strategy in ("closure", "edgewise"):
        k = CudaKernels(simulated=True)
        k.xp = proxy
        _stage_wrap(k, STAGES)
        tr = BatchedTracker(g, kernels=k, strategy=strategy)
        per_batch = []
        for arr in arrays:
            C.reset()
            tr.update_arrays(*arr)
            per_batch.append({s: {"calls": C.calls[s], "launches": C.launch[s],
                                  "array_args": C.args[s], "primitives": C.prims[s],
                                  "kernels": {kn: v for (st, kn), v in C.kernels.items()
                                              if st == s},
                                  "functions": {fn: v for (st, fn), v in C.fn.items()
                                                if st == s}}
                              for s in STAGES + ["tracker"] if C.calls[s] or s == "tracker"})
        out[strategy] = per_batch[1]  # the first churn batch
    return out


def _gather_serial(psi_count, F_ptr, seeds, L):
    """Serial steps of the 840c890 gather thread of every reached target (dense layout)."""
    Flen = np.diff(F_ptr).astype(np.int64)
    srcs = np.flatnonzero(Flen)
    reached = (psi_count[seeds] > 0).any(axis=0)
    targets = np.flatnonzero(reached)
    cand = (psi_count[srcs][:, targets].astype(np.int64) * Flen[srcs][:, None]).sum(axis=0)
    steps = cand + len(srcs)
    return targets, srcs, cand, steps


def _overflow_rounds(ga, psi, F_ptr, F_ts, targets, capacity=8):
    """Per target, the relaunch round (0, 1, ...) in which its antichain fits (C x 4 each)."""
    from gpu_kernels.propagate import gather_target
    W = F_ts.shape[1]
    Flen = np.diff(F_ptr)
    srcs = np.flatnonzero(Flen).astype(np.int64)
    z64 = np.zeros(1, np.int64)
    z32 = np.zeros(1, np.int32)
    sums = psi.sums.reshape(-1, psi.sums.shape[-1])
    rounds = np.zeros(len(targets), np.int64)
    for i, l2 in enumerate(targets):
        C_, r = capacity, 0
        while True:
            slot = np.zeros((C_, W), np.int64)
            cand = np.zeros(W, np.int64)
            n = gather_target(int(l2), ga.m, W, srcs, z64, z32, z64, z64, psi.count, sums,
                              psi.max_antichain, F_ptr, F_ts, slot, C_, cand)
            if n >= 0:
                break
            C_, r = C_ * 4, r + 1
        rounds[i] = r
    return rounds


def _edgewise_sim(proxy, ga, F_ptr, F_ts, I_ptr, I_ts, seeds):
    from gpu_kernels.propagate import edgewise_cuda
    C.reset()
    C.stage = "edgewise"
    t = time.perf_counter()
    res = edgewise_cuda(ga.m, ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr, ga.out_dst, ga.order,
                        ga.rank, ga.scc, ga.scc_ptr, ga.scc_members, F_ptr, F_ts, I_ptr, I_ts,
                        seeds, 10 ** 9)
    kn = {name: v for (s, name), v in C.kernels.items()}
    rounds = kn.get("relax", 0)
    cyc = kn.get("cycle_hits", 0)
    levels = C.fn[("edgewise", "where")]  # one level scan per level visited (+1 final)
    syncs = levels + rounds + (rounds + cyc) + 2
    return res, {"rounds": rounds, "cycle_levels": cyc, "level_scans": levels,
                 "syncs": syncs, "launches": C.launch["edgewise"],
                 "array_args": C.args["edgewise"], "primitives": C.prims["edgewise"],
                 "threads": C.threads["edgewise"], "kernels": kn,
                 "sim_seconds": time.perf_counter() - t}


#: Which batches' edge-wise rounds are simulated (about 40 ms of simulator per round): the
#: first churn batch; the others' rounds are of the same order (N=100: 155-206 per churn).
EDGEWISE_BATCHES = {1}


def real_cases(proxy, cases, do_edgewise):
    from engine.batched import BatchedTracker
    from engine.graph_arrays import GraphArrays
    from engine.kernels import CpuKernels
    from engine.psi import compute_psi
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    from gpu_kernels import propagate as gp
    out = []
    graphs = {}
    for n, b in cases:
        t0 = time.perf_counter()
        if n not in graphs:
            spec = generate_graph(n, 1)
            g = build_graph(spec)
            graphs[n] = (spec, g)
        spec, g = graphs[n]
        ga = GraphArrays.from_graph(g)
        psi = compute_psi(g, layout="dense") if n <= 1000 else None
        batches = generate_batches(spec, b, 1)
        cpu = CpuKernels()
        captured = []
        real_edgewise = cpu.edgewise

        def edgewise(ga_, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps, _r=real_edgewise):
            captured.append((F_ptr.copy(), F_ts.copy(), I_ptr.copy(), I_ts.copy(), seeds.copy()))
            return _r(ga_, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps)
        cpu.edgewise = edgewise
        real_cons, real_merge = cpu.consolidate, cpu.merge_counts
        rows = []

        def consolidate(loc, ts, diff, _r=real_cons):
            res = _r(loc, ts, diff)
            rows.append({"input_rows": int(len(loc)), "consolidated": int(len(res[0]))})
            return res

        def merge_counts(t_loc, *a, _r=real_merge):
            res = _r(t_loc, *a)
            rows[-1]["table_before"] = int(len(t_loc))
            rows[-1]["table_after"] = int(len(res[0]))
            rows[-1]["flipped"] = int(a[-1].sum())
            return res
        cpu.consolidate, cpu.merge_counts = consolidate, merge_counts
        tr = BatchedTracker(g, kernels=cpu, strategy="edgewise")
        per = []
        for i, bs in enumerate(batches):
            arr = batch_columns(g, bs)
            captured.clear()
            c_loc, c_ts, c_diff = tr.update_arrays(*arr)
            rec = dict(rows[-1], kind=bs.kind, changes_out=int(len(c_loc)))
            if captured:
                F_ptr, F_ts, I_ptr, I_ts, seeds = captured[0]
                rec["seeds"] = int(len(seeds))
                rec["F_rows"] = int(F_ptr[-1])
                rec["I_rows"] = int(I_ptr[-1])
                if psi is not None:
                    targets, srcs, cand, steps = _gather_serial(psi.count, F_ptr, seeds, ga.L)
                    rnd = _overflow_rounds(ga, psi, F_ptr, F_ts, targets)
                    chain = 0
                    for r in range(int(rnd.max()) + 1 if len(rnd) else 0):
                        sel = rnd >= r
                        chain += int(steps[sel].max())
                    rec["gather"] = {
                        "targets": int(len(targets)), "sources": int(len(srcs)),
                        "candidates_total": int(cand.sum()),
                        "candidates_max": int(cand.max()) if len(cand) else 0,
                        "serial_max_first_round": int(steps.max()) if len(steps) else 0,
                        "relaunch_rounds": int(rnd.max()) + 1 if len(rnd) else 0,
                        "overflowed": int((rnd > 0).sum()),
                        "serial_chain": chain}
                if do_edgewise and i in EDGEWISE_BATCHES:
                    _, ec = _edgewise_sim(proxy, ga, F_ptr, F_ts, I_ptr, I_ts, seeds)
                    rec["edgewise"] = ec
            per.append(rec)
            print(f"  N={n} B={b:.0e} batch {i} {bs.kind}: {json.dumps(rec)[:400]}", flush=True)
        out.append({"n": n, "b": b, "locations": ga.L, "width": ga.width,
                    "psi": None if psi is None else {"max_antichain": int(psi.max_antichain),
                                                     "summaries": int(psi.count.sum()),
                                                     "pairs": int((psi.count > 0).sum())},
                    "batches": per, "seconds": time.perf_counter() - t0})
    return out


def psi_shapes(sizes=(100, 1000, 2000)):
    """What the dense ``Psi`` rounds of ``closure_dense_cuda`` touch: locations, arcs, row
    width ``1 + m + K`` and the capacity of the final pass (4, doubled past the largest
    antichain)."""
    from engine.graph_arrays import GraphArrays
    from engine.psi import compute_psi
    from perf.workloads import build_graph, generate_graph
    out = {}
    for n in sizes:
        g = build_graph(generate_graph(n, 1))
        ga = GraphArrays.from_graph(g)
        psi = compute_psi(g, layout="dense")
        A = 4
        while A < psi.max_antichain:
            A *= 2
        out[str(n)] = {"L": ga.L, "arcs": int(ga.in_ptr[-1]), "W": 1 + ga.m + ga.K, "A": A,
                       "max_antichain": int(psi.max_antichain)}
        print("psi", n, out[str(n)], flush=True)
    return out


def uf_counts(cases=((10, 5), (1000, 3000), (100_000, 200_000), (2_000_000, 8_000_000))):
    """``uf_stars_xp`` on CuPy, counted on NumPy with the draws of ``unionfind_check.py``:
    its primitives, host round trips (each ``bool(...all())``, the final ``flatnonzero``) and
    device bytes (a random gather read as a 32-byte sector; CuPy's ``unique`` as an 8-pass
    radix sort of ``2 m`` keys and its inverse)."""
    rng = np.random.default_rng(0)
    out = {}
    for n, m in cases:
        a = rng.integers(0, n, m).astype(np.int64)
        b = rng.integers(0, n, m).astype(np.int64)
        ids, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
        nv = ids.shape[0]
        prims = 3 + 6 + 1 + 1          # asarray x2 + concatenate; unique; astype; arange
        byts = 32 * m + 2 * m * 8 * 2 * 8 + 3 * 2 * m * 16 + 2 * m * 16
        syncs = 0
        ia, ib = inv[:m], inv[m:]
        parent = np.arange(nv, dtype=np.int64)
        outer = jumps = 0
        while True:
            outer += 1
            pa, pb = parent[ia], parent[ib]
            lo, hi = np.minimum(pa, pb), np.maximum(pa, pb)
            before = parent.copy()
            np.minimum.at(parent, hi, lo)
            prims += 6
            byts += 2 * m * 48 + 2 * m * 24 + nv * 16 + m * 48
            while True:
                jumps += 1
                nxt = parent[parent]
                prims += 3
                syncs += 1
                byts += nv * 48 + nv * 17 + nv
                if bool((nxt == parent).all()):
                    break
                parent = nxt
            prims += 2
            syncs += 1
            byts += nv * 17
            if bool((parent == before).all()):
                break
        prims += 5
        syncs += 1
        byts += nv * 24 + nv * 48
        out[f"{n}:{m}"] = {"vertices": int(nv), "outer_rounds": outer, "jumps": jumps,
                           "primitives": prims, "syncs": syncs, "bytes": int(byts)}
        print("uf", n, m, out[f"{n}:{m}"], flush=True)
    return out


def main(argv=None):
    # the simulator is chosen when Numba loads: a process that already loaded it cannot count
    if "numba" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        sys.exit("run this as a script: Numba is already loaded without its CUDA simulator")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--out", required=True)
    p.add_argument("--cases", default="1000:1e5,1000:1e6,1000:1e7,5000:1e5,5000:1e6")
    p.add_argument("--edgewise", default="1000,5000",
                   help="sizes whose edge-wise rounds are counted on the simulator")
    p.add_argument("--extras-only", action="store_true",
                   help="add the Psi shapes and the union-find counts to an existing --out")
    p.add_argument("--per-stage-only", action="store_true",
                   help="recount the per-stage launches and primitives into an existing --out")
    args = p.parse_args(argv)
    _refuse_this_tree()
    proxy = _install()
    if args.per_stage_only:
        with open(args.out) as f:
            res = json.load(f)
        res["per_stage_churn_batch"] = per_stage_counts(proxy)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=int)
        return 0
    if args.extras_only:
        with open(args.out) as f:
            res = json.load(f)
        res["psi"] = psi_shapes()
        res["uf"] = uf_counts()
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=int)
        return 0
    res = {"commit": "840c890", "how": __doc__, "syncs_by_code_reading": SYNCS}
    t = time.perf_counter()
    res["per_stage_churn_batch"] = per_stage_counts(proxy)
    print("per stage:", json.dumps(res["per_stage_churn_batch"])[:2000], flush=True)
    cases = [(int(a), int(float(b))) for a, b in (c.split(":") for c in args.cases.split(","))]
    ew = {int(x) for x in args.edgewise.split(",") if x}
    res["cases"] = []
    for n, b in cases:
        res["cases"] += real_cases(proxy, [(n, b)], n in ew)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=int)
    res["psi"] = psi_shapes()
    res["uf"] = uf_counts()
    res["seconds"] = time.perf_counter() - t
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, default=int)
    return 0


if __name__ == "__main__":
    sys.exit(main())
