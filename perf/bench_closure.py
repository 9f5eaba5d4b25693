"""Benchmark of the path-summary closure ``Psi``: :func:`engine.batched.psi.compute_psi` by graph size.

What it measures
----------------
For each graph size ``N`` (``--sizes``, chain operators) the synthetic workload graph of
``perf.workloads`` (docs/formats.md, "Synthetic workloads for
benchmarks") is generated from ``--seed``: a chain of ``N`` operators with nested feedback
loops and delay/step diamonds, depth 1 everywhere, ``m = 1`` (about ``2 N`` locations).
Then, in one process:

* ``compute_psi`` -- :func:`engine.batched.psi.compute_psi` with its defaults (``layout="auto"``,
  one thread per CPU), timed with ``time.perf_counter`` around the call, ``--repeat``
  times; the graph is built outside the timed region. Before any timing the kernels run
  once on a small graph in both layouts, so Numba JIT compilation (or loading its on-disk
  cache) is excluded; should a size need an entry dtype the warm-up did not compile, one
  more untimed call runs first;
* ``reference`` (``--reference``) -- :func:`engine.core.closure`, the plain-Python worklist, for
  ``N <= --reference-limit`` (default 1000), ``--reference-repeat`` times (default 1: it
  takes minutes at ``N = 1000``), interleaved with the ``compute_psi`` repeats. The two
  must agree on pairs, summaries and the largest antichain, and on every row of a sample of
  sources; a disagreement is an error. The speedup is reference time / ``compute_psi``
  time (medians; min is also recorded).

``--backend cuda`` builds ``Psi`` on the GPU instead (``compute_psi(..., kernels=CudaKernels())``:
the count kernel of ``gpu_kernels.closure``, one thread per source, and the fill, one thread
per source and target, then the copies to the host), timed the same way with a device
synchronisation before the clock stops; and, as the variant ``device_build``, the device
work alone (``closure_settle_cuda`` and the fill of the layout ``compute_psi`` chose, the
graph already on the device, no host copies), timed between two CUDA events. Both record
the launches, operations, synchronisations and allocations they issued
(``gpu_kernels._cuda.COUNTS``); the machine record names the device.

Per size it records the layout chosen, ``nbytes``, pairs, summaries, the largest antichain,
the packed dtype, :func:`engine.batched.psi.estimate_bytes` (and its time), and the peak RSS while
that size ran (``ru_maxrss`` in KiB; on Linux the kernel's high-water mark is reset through
``/proc/self/clear_refs`` before each size, otherwise it is the process's peak so far).

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_closure                                   # 100,1000,2000,5000
    python -m perf.bench_closure --sizes 100,1000 --reference --plot perf/results/closure.png
    python -m perf.bench_closure --sizes 2000 --repeat 5 --threads 1
    python -m perf.bench_closure --backend cuda --sizes 100,1000,2000   # on a GPU

How to read the output
----------------------
One row per size: ``L`` locations, ``min``/``median`` milliseconds of ``compute_psi``, the
layout, resident megabytes, pairs, summaries, largest antichain, dtype, peak RSS, and with
``--reference`` the reference's seconds and the speedup. ``targets`` lists the issue's
goals and whether the median met them: on the cpu backend ``compute_psi`` at N = 1000 under
150 ms and N = 2000 under 2 s; on the cuda backend the device build at N = 1000 under 10 ms
and N = 2000 under 40 ms.
The JSON file (``--out``) holds ``commit``, ``dirty``, ``machine`` (with ``cuda_device`` on
the cuda backend), ``parameters`` (with ``backend``), ``warmup``, ``runs`` (one record per
timed call: size, variant, repeat, ``wall_s``, and on the cuda backend ``counts``) and
``sizes`` (per size: graph shape, results, times, estimate, RSS; on the cuda backend also
``device_build_s``, ``device_build`` and ``device_counts``, the counts of one call of each
variant). ``--plot FILE.png`` draws
time against locations (log-log, both variants, the targets as markers) and ``Psi`` bytes
(actual and estimated) against locations.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Callable, Sequence

import numpy as np

from engine import closure
from engine.batched.psi import PsiLayout, compute_psi, estimate_bytes
from perf.common import (add_output_args, commit_info, commit_label, figure, int_list, machine,
                         maxrss_kib, progress, require_backend, reset_peak_rss, save_results,
                         utc_now)
from perf.workloads import build_graph, generate_graph

__all__ = ["main", "run_benchmark", "format_table", "plot", "TARGETS"]

#: Wall-time goals (seconds) by N, from the issues: ``compute_psi`` on the cpu backend
#: (2-core machine), the device build on the cuda backend (an H100).
TARGETS = {1000: 0.150, 2000: 2.0}
DEVICE_TARGETS = {1000: 0.010, 2000: 0.040}
BACKENDS = ("cpu", "cuda")
DEFAULT_SIZES = (100, 1000, 2000, 5000)
#: Sources whose full rows are compared with the reference (evenly spaced).
ROW_SAMPLE = 24


# --- the benchmark -------------------------------------------------------------------------

def _warm_up(threads: int | None, kernels=None, size: int = 100) -> dict:
    """Compile (or load) the kernels on a small graph, both layouts; returns what it did."""
    t0 = time.perf_counter()
    g = build_graph(generate_graph(size, 0))
    dtypes = set()
    for layout in ("dense", "ragged"):
        psi = compute_psi(g, layout=layout, threads=threads, kernels=kernels)
        dtypes.add(str(psi.dtype))
        if kernels is not None:
            _device_build(kernels, g, psi)
    estimate_bytes(g)
    return {"seconds": time.perf_counter() - t0, "dtypes": sorted(dtypes)}


def _kernels(backend: str):
    """``None`` for the cpu backend (``compute_psi``'s thread pool), else the cuda backend."""
    if backend == "cpu":
        return None
    from engine.batched.cuda import CudaKernels
    return CudaKernels()


def _sync(kernels) -> None:
    """Wait for the device (nothing on the cpu backend, or on the simulator)."""
    if kernels is not None and kernels.xp is not np:
        kernels.xp.cuda.get_current_stream().synchronize()


def _device_name(backend: str) -> dict:
    if backend != "cuda":
        return {}
    from engine.batched.cuda import usable_device
    return {"cuda_device": usable_device()[1]}


def _timed_psi(graph, threads, kernels):
    """``(psi, seconds, counts)`` of one ``compute_psi`` (device synchronised at both ends)."""
    from gpu_kernels import _cuda
    gc.collect()
    _sync(kernels)
    before = _cuda.COUNTS.snapshot()
    t0 = time.perf_counter()
    psi = compute_psi(graph, threads=threads, kernels=kernels)
    _sync(kernels)
    wall = time.perf_counter() - t0
    return psi, wall, _cuda.COUNTS.since(before)


def _device_build(kernels, graph, psi) -> tuple[float, dict]:
    """``(seconds, counts)`` of the device work of ``compute_psi`` alone, in the layout and
    dtypes ``psi`` has: the count pass and the fill, between two CUDA events, the graph's
    arrays uploaded beforehand and nothing copied back. (On the simulated backend, which
    tests use, ``time.perf_counter`` instead of events.)"""
    from engine.batched.graph_arrays import GraphArrays
    from gpu_kernels import _cuda
    from gpu_kernels.closure import (closure_fill_cuda, closure_fill_dense_cuda,
                                     closure_settle_cuda, translation_mask)
    ga = GraphArrays.from_graph(graph)
    fast = translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
    args = [kernels.asarray(a) for a in (ga.depth, ga.in_ptr, ga.in_src, ga.in_sum,
                                         ga.out_ptr, ga.out_dst, ga.order, ga.rank, fast)]
    cp = kernels.xp
    events = cp is not np
    gc.collect()
    _sync(kernels)
    if events:
        start, stop = cp.cuda.Event(), cp.cuda.Event()
    before = _cuda.COUNTS.snapshot()
    t0 = time.perf_counter()
    if events:
        start.record()
    settle = closure_settle_cuda(ga.m, ga.K, *args)
    if psi.layout is PsiLayout.DENSE:
        out = closure_fill_dense_cuda(settle, psi.dtype, psi.count.dtype)
    else:
        out = closure_fill_cuda(settle, psi.dtype)
    if events:
        stop.record()
        stop.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3
    else:
        seconds = time.perf_counter() - t0
    counts = _cuda.COUNTS.since(before)
    del out, settle
    return seconds, counts


def _psi_counts(psi) -> dict:
    return {"layout": psi.layout.value, "nbytes": int(psi.nbytes), "pairs": psi.num_pairs,
            "summaries": psi.num_summaries, "max_antichain": psi.max_antichain,
            "dtype": str(psi.dtype)}


def _ref_counts(ref) -> dict:
    sizes = [len(c) for row in ref.values() for c in row.values()]
    return {"pairs": len(sizes), "summaries": sum(sizes), "max_antichain": max(sizes, default=0)}


def _check_agreement(graph, psi, ref) -> None:
    got, want = _psi_counts(psi), _ref_counts(ref)
    for k, v in want.items():
        if got[k] != v:
            raise AssertionError(f"compute_psi and the reference disagree on {k}: {got[k]} vs {v}")
    L = graph.num_locations
    for l in sorted(set(np.linspace(0, L - 1, min(L, ROW_SAMPLE)).astype(int).tolist())):
        if psi.row(l) != ref[l]:
            raise AssertionError(f"compute_psi and the reference disagree on row {l} "
                                 f"({graph.describe(l)})")


def _stats(vals: list[float]) -> dict:
    return {"min": min(vals), "median": statistics.median(vals)} if vals else \
        {"min": None, "median": None}


def run_benchmark(sizes: Sequence[int], *, repeat: int = 3, seed: int = 1,
                  threads: int | None = None, reference: bool = False,
                  reference_limit: int = 1000, reference_repeat: int = 1,
                  backend: str = "cpu", kernels=None, warmup_size: int = 100,
                  log: Callable[..., None] = print) -> dict:
    """Run every size; return the JSON-ready results (see the module docstring).
    ``backend``: ``cpu`` (the host's thread pool) or ``cuda`` (the device build, on
    ``kernels``, default ``CudaKernels()``: tests pass the simulated backend, with a small
    ``warmup_size``, the N of the warm-up graph)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    started = utc_now()
    if backend == "cpu":
        kernels = None
    elif kernels is None:
        kernels = _kernels(backend)
    warm = _warm_up(threads, kernels, warmup_size)
    log(f"warm-up {warm['seconds']:.1f}s (dtypes {', '.join(warm['dtypes'])})")
    warmed = set(warm["dtypes"])
    can_reset = reset_peak_rss()
    runs: list[dict] = []
    per_size: list[dict] = []
    for n in sizes:
        spec = generate_graph(n, seed)
        graph = build_graph(spec)
        L = graph.num_locations
        arcs = sum(len(e.summaries) for e in graph.edges)
        gc.collect()
        if can_reset:
            reset_peak_rss()
        rss_before = maxrss_kib()
        t0 = time.perf_counter()
        est = estimate_bytes(graph)
        est_s = time.perf_counter() - t0
        do_ref = reference and n <= reference_limit
        times: list[float] = []
        dev_times: list[float] = []
        dev_counts: dict = {}
        ref_times: list[float] = []
        info = ref_info = None
        extra_warmup = False
        for r in range(repeat):
            psi, wall, counts = _timed_psi(graph, threads, kernels)
            if str(psi.dtype) not in warmed:  # that call compiled a new specialization
                warmed.add(str(psi.dtype))
                extra_warmup = True
                if kernels is not None:
                    _device_build(kernels, graph, psi)
                psi, wall, counts = _timed_psi(graph, threads, kernels)
            info = _psi_counts(psi)
            times.append(wall)
            run = {"n": n, "variant": "compute_psi", "repeat": r, "wall_s": wall}
            if kernels is not None:
                run["counts"] = dev_counts["compute_psi"] = counts
            runs.append(run)
            log(f"N={n} L={L} compute_psi #{r}: {wall * 1e3:.1f} ms ({info['layout']}, "
                f"{info['nbytes'] / 1e6:.1f} MB)")
            if kernels is not None:
                dwall, dcounts = _device_build(kernels, graph, psi)
                dev_times.append(dwall)
                dev_counts["device_build"] = dcounts
                runs.append({"n": n, "variant": "device_build", "repeat": r, "wall_s": dwall,
                             "counts": dcounts})
                log(f"N={n} L={L} device_build #{r}: {dwall * 1e3:.2f} ms ({dcounts})")
            if do_ref and r < reference_repeat:
                del psi
                gc.collect()
                t0 = time.perf_counter()
                ref = closure(graph)
                rwall = time.perf_counter() - t0
                ref_times.append(rwall)
                runs.append({"n": n, "variant": "reference", "repeat": r, "wall_s": rwall})
                log(f"N={n} L={L} reference #{r}: {rwall:.2f} s")
                if ref_info is None:
                    ref_info = _ref_counts(ref)
                    _check_agreement(graph, compute_psi(graph, threads=threads,
                                                        kernels=kernels), ref)
                del ref
            else:
                del psi
        rss_peak = maxrss_kib()
        rec = {
            "n": n, "locations": L, "arcs": arcs, "loops": len(spec.loops),
            "diamonds": len(spec.diamonds), **info,
            "compute_psi_s": times, "compute_psi": _stats(times),
            "estimate_bytes": int(est), "estimate_s": est_s,
            "extra_warmup": extra_warmup,
            "maxrss_before_kib": rss_before, "peak_rss_kib": rss_peak,
            "peak_is_size_local": can_reset,
        }
        if kernels is not None:
            rec["device_build_s"] = dev_times
            rec["device_build"] = _stats(dev_times)
            rec["device_counts"] = dev_counts
        if do_ref:
            rec["reference_s"] = ref_times
            rec["reference"] = _stats(ref_times)
            rec["reference_counts"] = ref_info
            rec["speedup_median"] = statistics.median(ref_times) / rec["compute_psi"]["median"]
            rec["speedup_min"] = min(ref_times) / rec["compute_psi"]["min"]
        goals, timed = (TARGETS, "compute_psi") if kernels is None else (DEVICE_TARGETS,
                                                                         "device_build")
        if n in goals:
            rec["target_s"] = goals[n]
            rec["target_variant"] = timed
            rec["target_met"] = rec[timed]["median"] <= goals[n]
        per_size.append(rec)
    return {
        "benchmark": "closure",
        "started": started,
        **commit_info(),
        "machine": machine(**_device_name(backend)),
        "parameters": {"sizes": list(sizes), "repeat": repeat, "seed": seed, "backend": backend,
                       "simulated": bool(getattr(kernels, "simulated", False)),
                       "threads": threads or os.cpu_count(), "reference": reference,
                       "reference_limit": reference_limit,
                       "reference_repeat": reference_repeat, "layout": "auto"},
        "warmup": warm,
        "runs": runs,
        "sizes": per_size,
    }


# --- output --------------------------------------------------------------------------------

def format_table(results: dict) -> str:
    ref = results["parameters"]["reference"]
    head = (f"{'N':>6} {'L':>6} {'min ms':>9} {'median ms':>10} {'layout':>7} {'MB':>8} "
            f"{'est MB':>8} {'pairs':>10} {'summaries':>11} {'max A':>5} {'dtype':>5} "
            f"{'peak RSS MB':>11}")
    if ref:
        head += f" {'ref s':>8} {'speedup':>8}"
    device = results["parameters"].get("backend", "cpu") != "cpu"
    if device:
        head += f" {'device ms':>10} {'launches':>8} {'syncs':>5}"
    lines = [head]
    for s in results["sizes"]:
        line = (f"{s['n']:>6} {s['locations']:>6} {s['compute_psi']['min'] * 1e3:>9.1f} "
                f"{s['compute_psi']['median'] * 1e3:>10.1f} {s['layout']:>7} "
                f"{s['nbytes'] / 1e6:>8.1f} {s['estimate_bytes'] / 1e6:>8.1f} {s['pairs']:>10} "
                f"{s['summaries']:>11} {s['max_antichain']:>5} {s['dtype']:>5} "
                f"{s['peak_rss_kib'] / 1024:>11.0f}")
        if ref:
            line += (f" {s['reference']['median']:>8.2f} {s['speedup_median']:>7.0f}x"
                     if "reference" in s else f" {'-':>8} {'-':>8}")
        if device:
            c = s["device_counts"]["device_build"]
            line += (f" {s['device_build']['median'] * 1e3:>10.2f} {c['launches']:>8} "
                     f"{c['syncs']:>5}")
        lines.append(line)
    goals = [f"N={s['n']}: {s.get('target_variant', 'compute_psi')} median "
             f"{s[s.get('target_variant', 'compute_psi')]['median'] * 1e3:.1f} ms vs target "
             f"{s['target_s'] * 1e3:.0f} ms ({'met' if s['target_met'] else 'MISSED'})"
             for s in results["sizes"] if "target_s" in s]
    if goals:
        lines.append("targets: " + "; ".join(goals))
    m = results["machine"]
    lines.append(f"commit {(results['commit'] or 'unknown')[:10]}"
                 f"{'+dirty' if results['dirty'] else ''}, {m['cpu_count']} CPUs, "
                 f"{results['parameters']['threads']} threads, {m['platform']}"
                 + (f", {m['cuda_device']}" if "cuda_device" in m else ""))
    return "\n".join(lines)


def plot(results: dict, path: str | os.PathLike) -> None:
    """Time against locations (log-log) and ``Psi`` bytes against locations."""
    sizes = results["sizes"]
    L = [s["locations"] for s in sizes]
    with figure(path, dpi=110, ncols=2, figsize=(11, 4.4)) as (fig, (ax_t, ax_b)):
        ax_t.plot(L, [s["compute_psi"]["median"] for s in sizes], marker="o",
                  label="compute_psi (median)")
        ax_t.plot(L, [s["compute_psi"]["min"] for s in sizes], linestyle=":", marker=".",
                  label="compute_psi (min)")
        refs = [(s["locations"], s["reference"]["median"]) for s in sizes if "reference" in s]
        if refs:
            ax_t.plot(*zip(*refs), marker="s", label="engine.core.closure reference (median)")
        if all("device_build" in s for s in sizes):
            ax_t.plot(L, [s["device_build"]["median"] for s in sizes], marker="^",
                      label="device build, kernels only (median)")
        goals = [(s["locations"], s["target_s"]) for s in sizes if "target_s" in s]
        if goals:
            ax_t.scatter(*zip(*goals), marker="_", s=400, color="red", zorder=3,
                         label="target (N = 1000, 2000)")
        ax_t.set_xscale("log")
        ax_t.set_yscale("log")
        ax_t.set_xlabel("locations L")
        ax_t.set_ylabel("wall time (s)")
        ax_t.set_title("computing Psi")
        ax_t.grid(True, which="both", alpha=0.3)
        ax_t.legend(fontsize=8)
        ax_b.plot(L, [s["nbytes"] for s in sizes], marker="o", label="Psi nbytes (layout auto)")
        ax_b.plot(L, [s["estimate_bytes"] for s in sizes], linestyle="--", marker=".",
                  label="estimate_bytes")
        for s in sizes:
            ax_b.annotate(f"{s['layout']}, A={s['max_antichain']}", (s["locations"], s["nbytes"]),
                          textcoords="offset points", xytext=(4, -12), fontsize=7)
        ax_b.set_xscale("log")
        ax_b.set_yscale("log")
        ax_b.set_xlabel("locations L")
        ax_b.set_ylabel("bytes")
        ax_b.set_title("Psi storage")
        ax_b.grid(True, which="both", alpha=0.3)
        ax_b.legend(fontsize=8)
        commit = commit_label(results)
        p = results["parameters"]
        fig.suptitle(f"compute_psi ({p.get('backend', 'cpu')} backend) on the synthetic workload "
                     f"(seed {p['seed']}, {p['repeat']} "
                     f"repeats, {p['threads']} threads, commit {commit}, "
                     f"{results['machine']['cpu_count']} CPUs)", fontsize=10)


# --- command line --------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_closure",
                                description="Time compute_psi (and optionally the reference "
                                            "closure) on the synthetic workload graphs.")
    p.add_argument("--sizes", type=int_list, default=list(DEFAULT_SIZES),
                   help="chain operators N, comma-separated (default 100,1000,2000,5000)")
    p.add_argument("--repeat", type=int, default=3, help="timed calls per size (default 3)")
    p.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    p.add_argument("--backend", choices=BACKENDS, default="cpu",
                   help="build Psi on the host (cpu, default) or on the GPU (cuda: the "
                        "device kernels, timed with device synchronisation)")
    p.add_argument("--threads", type=int, default=None,
                   help="compute_psi threads (default: one per CPU)")
    p.add_argument("--reference", action="store_true",
                   help="also time engine.core.closure for N <= --reference-limit")
    p.add_argument("--reference-limit", type=int, default=1000,
                   help="largest N for the reference (default 1000)")
    p.add_argument("--reference-repeat", type=int, default=1,
                   help="reference calls per size (default 1)")
    add_output_args(p, "perf/results/closure.json")
    args = p.parse_args(argv)
    for name in ("repeat", "reference_repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be at least 1")
    if args.backend == "cuda":
        require_backend(p, "cuda")
    log = progress(args.quiet)
    results = run_benchmark(sorted(args.sizes), repeat=args.repeat, seed=args.seed,
                            threads=args.threads, reference=args.reference,
                            backend=args.backend,
                            reference_limit=args.reference_limit,
                            reference_repeat=min(args.reference_repeat, args.repeat), log=log)
    save_results(results, args, plot, table=format_table(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
