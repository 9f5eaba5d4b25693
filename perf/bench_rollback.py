"""Benchmark of the rollback solvers: :func:`engine.rollback.problem.solve` (reference) and
:func:`engine.rollback.batched.solve_batched` by processors and times.

What it measures
----------------
For each number of processors ``n`` (``--procs``) and size of the time universe ``|T|``
(``--times``; ``NI = 10`` iterations, ``NE = |T| / 10`` epochs, or ``NI = 1`` below 10) a random
rollback problem is generated from ``--seed`` (:func:`generate_problem`): a DAG of internal edges
(one or two from earlier processors into each, ``shift 0 0`` or a one-epoch delay ``shift 1 0``),
feedback edges that increment the loop counter (``shift 0 1``) closing cycles, input edges into
the first tenth of the processors, a buffer with an output edge after every 20th processor;
the state of a run in progress (each processor has consumed up to an epoch of its own, a few
messages per edge, messages in flight on a tenth of the edges, notifications at a twentieth of
the processors) and checkpoints (a chain of epochs at half the processors, ``every`` at the
others: closed under union, so both solvers take the greatest fixed point). Then, per guard
(``--guards``), in one process: ``batched`` (``solve_batched``, C4's reverse reachability
included) ``--repeat`` times, and ``reference`` (``solve``) once where
``n * |T| <= --reference-limit`` (``--reference-limit-full`` under the full guard, whose
could-result-in closure is much costlier), interleaved; the two answers must be
equal. Problem generation is outside the timed region; there is no compilation to warm up
(NumPy only). The speedup is reference time / batched median.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_rollback                                  # 10..1000 x 100..10000
    python -m perf.bench_rollback --procs 10,100,1000,10000 --times 1e2,1e3,1e4,1e5 \\
        --max-cells 1e8 --guards simple --plot perf/results/rollback.png
    python -m perf.bench_rollback --backend cpu,cuda ...          # also on the GPU

``--backend cpu,cuda`` times the batched solver on each backend (cuda needs a usable device;
``perf/device_checks.sh`` runs it). A cuda case's first call compiles the kernels and is not
timed (recorded as ``first_call_s``); the JSON names the device (``device``) and each cuda case
records its launches and syncs per round (``per_round``: the distinct counts, each with its
number of rounds), C4's precomputation counts and reachability rounds. The answers of every
backend must equal each other and the reference (``consistency`` lists any that differ).

How to read the output
----------------------
One row per (guard, n, |T|): the batched solver's min/median seconds, its fixed-point rounds,
the result, and where it ran the reference's seconds and the speedup. Cases with
``n * |T| > --max-cells`` (a tenth of it under the full guard, whose C4 precomputation costs
``O(notifications x (n + E) x |T|)`` per reverse-reachability round) are skipped (listed in
``skipped``: bool masks take ``n * |T|`` bytes each). The JSON file (``--out``) holds ``commit``, ``dirty``, ``machine``,
``parameters``, ``runs`` (one record per timed call: guard, n, times, variant, repeat,
``wall_s``) and ``cases`` (per case: problem shape, result, rounds, medians, speedup).
``--plot FILE.png`` draws batched and reference time against ``n * |T|`` (log-log), one
line per ``|T|`` and guard.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Sequence

import numpy as np

from engine.rollback.problem import Avail, EdgeDecl, RollbackProblem, solve
from engine.rollback.batched import solve_batched
from engine.rollback.cuda import RollbackStats
from perf.common import (add_output_args, commit_info, commit_label, figure, int_list, machine,
                         progress, timed, save_results)

__all__ = ["main", "generate_problem", "run_benchmark", "format_table", "plot"]


def generate_problem(n: int, nt: int, seed: int = 1) -> RollbackProblem:
    """A random rollback problem with ``n`` processors (plus buffers) and ``|T| = nt``."""
    rng = np.random.default_rng(seed)
    ni = 10 if nt >= 10 else 1
    ne = max(1, nt // ni)
    buffer, edges, shift = [], [], {}
    sources = max(1, n // 10)
    for p in range(n):
        buffer.append(False)
        if p < sources:  # the first tenth read input and nothing else
            edges.append(EdgeDecl("in", None, p))
            continue
        for src in set(rng.integers(0, p, size=rng.integers(1, 3)).tolist()):
            edges.append(EdgeDecl("edge", src, p))
            shift[len(edges) - 1] = (1, 0) if rng.random() < 0.3 else (0, 0)
        if rng.random() < 0.1:  # a loop back, incrementing the counter
            edges.append(EdgeDecl("edge", p, int(rng.integers(0, p))))
            shift[len(edges) - 1] = (0, 1)
    for p in range(19, n, 20):  # buffers relaying outside
        b = len(buffer)
        buffer.append(True)
        edges.append(EdgeDecl("edge", p, b))
        shift[len(edges) - 1] = (0, 0)
        edges.append(EdgeDecl("out", b, None))
    problem = RollbackProblem(ne, ni, buffer, edges, shift=shift)
    # the epoch each processor has got to: senders are ahead of receivers on the DAG edges
    done = np.full(len(buffer), ne - 1)
    for k, d in enumerate(edges):
        if d.kind == "edge" and shift[k] != (0, 1):
            done[d.dst] = min(done[d.dst], done[d.src] - int(rng.random() < 0.3))
    done = np.maximum(done, 0)
    for k, d in enumerate(edges):
        if d.kind == "out":
            continue
        top = int(done[d.dst]) if d.kind == "in" else int(min(done[d.dst], done[d.src]))
        es = rng.integers(0, top + 1, size=4)
        problem.consumed[k] = {(int(e), int(rng.integers(0, ni))) for e in es}
        if d.kind == "edge" and rng.random() < 0.1 and done[d.dst] + 1 < ne:
            problem.inflight[k] = {(int(done[d.dst]) + 1, int(rng.integers(0, ni)))}
    for p in range(0, len(buffer), 20):
        problem.notified[p] = {(int(rng.integers(0, int(done[p]) + 1)), ni - 1)}
    for p in range(len(buffer)):
        if rng.random() < 0.5:
            problem.avail[p] = Avail(every=False, epochs=int(done[p]))
    return problem


def run_benchmark(procs, times, guards, repeat=3, seed=1, reference_limit=20_000,
                  reference_limit_full=2_000, max_cells=10**7, log=print,
                  backends=("cpu",), simulated=False) -> dict:
    """Time the solvers (see the module notes); ``simulated``: the cuda backend on Numba's
    CUDA simulator (tests only: the process must simulate CUDA)."""
    results = {"benchmark": "rollback", **commit_info(), "machine": machine(),
               "parameters": {"procs": procs, "times": times, "guards": guards, "repeat": repeat,
                              "seed": seed, "reference_limit": reference_limit,
                              "reference_limit_full": reference_limit_full,
                              "max_cells": max_cells, "backends": list(backends),
                              "simulated": simulated},
               "runs": [], "cases": [], "skipped": [], "consistency": []}
    if "cuda" in backends:
        from engine.batched.cuda import usable_device
        results["device"] = "Numba's CUDA simulator" if simulated else usable_device()[1]
    for guard in guards:
        for nt in times:
            for n in procs:
                cells = max_cells if guard == "simple" else max_cells // 10
                if n * nt > cells:
                    results["skipped"].append({"guard": guard, "n": n, "times": nt,
                                               "reason": f"n * |T| > {cells}"})
                    continue
                problem = generate_problem(n, nt, seed)
                limit = reference_limit if guard == "simple" else reference_limit_full
                ref_s, ref = None, None
                answers = {}
                for backend in backends:
                    variant = "batched" if backend == "cpu" else f"batched-{backend}"
                    first_s = None
                    if backend != "cpu":  # compiles the kernels (once per process): not timed
                        first_s, _ = timed(lambda: _batched(problem, guard, backend, simulated))
                    walls, stats = [], None
                    for r in range(repeat):
                        wall, (answer, stats) = timed(
                            lambda: _batched(problem, guard, backend, simulated))
                        walls.append(wall)
                        results["runs"].append({"guard": guard, "n": n, "times": nt,
                                                "variant": variant, "repeat": r, "wall_s": wall})
                        if n * nt <= limit and ref is None:
                            ref_s, ref = timed(lambda: solve(problem, guard))
                            results["runs"].append({"guard": guard, "n": n, "times": nt,
                                                    "variant": "reference", "repeat": 0,
                                                    "wall_s": ref_s})
                    answers[backend] = answer
                    if (ref is not None and ref != answer) or answer != answers[backends[0]]:
                        results["consistency"].append({"guard": guard, "n": n, "times": nt,
                                                       "backend": backend})
                    med = statistics.median(walls)
                    case = {"guard": guard, "n": n, "times": nt, "ne": problem.ne,
                            "ni": problem.ni, "processors": problem.n,
                            "edges": len(problem.edges), "backend": backend,
                            "result": answer.result, "rounds": sum(stats.rounds),
                            "batched_s_min": min(walls), "batched_s_median": med,
                            "reference_s": ref_s,
                            "speedup": None if ref_s is None else ref_s / med}
                    if backend != "cpu":
                        case.update(first_call_s=first_s, per_round=_distinct(stats.per_round),
                                    precompute=stats.precompute,
                                    reach_rounds=stats.reach_rounds)
                    results["cases"].append(case)
                    log(_row(case))
    return results


def _distinct(rows: list) -> list:
    """The distinct per-round device counts, each with how many rounds had it."""
    out: dict = {}
    for r in rows:
        key = json.dumps(r, sort_keys=True)
        out[key] = out.get(key, 0) + 1
    return [{**json.loads(k), "rounds": v} for k, v in out.items()]


def _batched(problem, guard, backend="cpu", simulated=False):
    stats = RollbackStats()
    sim = simulated and backend == "cuda"
    return solve_batched(problem, guard, backend, stats=stats, simulated=sim), stats


def _row(c) -> str:
    ref = "" if c["reference_s"] is None else f"  reference {c['reference_s']:9.3f} s  x{c['speedup']:.1f}"
    where = "" if c.get("backend", "cpu") == "cpu" else f" [{c['backend']}]"
    return (f"{c['guard']:6}{where} n={c['n']:6} |T|={c['times']:7}  "
            f"batched {c['batched_s_min']:8.4f} / "
            f"{c['batched_s_median']:8.4f} s  rounds {c['rounds']:3}  {c['result']:9}{ref}")


def format_table(results) -> str:
    return "\n".join(_row(c) for c in results["cases"])


def plot(results, path) -> None:
    with figure(path, dpi=110, figsize=(7, 5)) as (fig, ax):
        backends = results["parameters"].get("backends", ["cpu"])
        for guard in results["parameters"]["guards"]:
            for nt in results["parameters"]["times"]:
                for backend in backends:
                    cs = [c for c in results["cases"] if c["guard"] == guard and c["times"] == nt
                          and c.get("backend", "cpu") == backend]
                    if not cs:
                        continue
                    x = [c["n"] * nt for c in cs]
                    name = "batched" if backend == "cpu" else f"batched {backend}"
                    line, = ax.plot(x, [c["batched_s_median"] for c in cs], "o-",
                                    label=f"{name} {guard} |T|={nt}")
                    rs = [(c["n"] * nt, c["reference_s"]) for c in cs if c["reference_s"] is not None]
                    if rs and backend == backends[0]:
                        ax.plot(*zip(*rs), "x--", color=line.get_color(),
                                label=f"reference {guard} |T|={nt}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("processors x times")
        ax.set_ylabel("seconds")
        ax.legend(fontsize=7)
        ax.set_title(f"rollback solvers (seed {results['parameters']['seed']}, commit "
                     f"{commit_label(results)}, {results['machine']['cpu_count']} CPUs)", fontsize=9)



def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_rollback",
                                description="Time the batched and reference rollback solvers.")
    p.add_argument("--procs", type=int_list, default=[10, 100, 1000],
                   help="processors, comma-separated (default 10,100,1000)")
    p.add_argument("--times", type=int_list, default=[100, 1000, 10000],
                   help="|T|, comma-separated (default 1e2,1e3,1e4)")
    p.add_argument("--guards", default="simple,full",
                   help="guards, comma-separated (default simple,full)")
    p.add_argument("--repeat", type=int, default=3, help="batched calls per case (default 3)")
    p.add_argument("--seed", type=int, default=1, help="problem seed (default 1)")
    p.add_argument("--reference-limit", type=int_list, default=[20_000],
                   help="largest n * |T| for the reference under the simple guard (default 2e4)")
    p.add_argument("--reference-limit-full", type=int_list, default=[2_000],
                   help="largest n * |T| for the reference under the full guard, whose "
                        "could-result-in closure costs far more (default 2e3)")
    p.add_argument("--max-cells", type=int_list, default=[10**7],
                   help="skip cases with n * |T| above this (default 1e7)")
    add_output_args(p, "perf/results/rollback.json")
    p.add_argument("--backend", default="cpu",
                   help="backends of the batched solver, comma-separated: cpu, cuda (default "
                        "cpu); cuda needs a usable device and records it in the JSON")
    args = p.parse_args(argv)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    for b in backends:
        if b not in ("cpu", "cuda"):
            p.error(f"unknown backend {b!r}: expected cpu or cuda")
    if "cuda" in backends:
        from engine.batched.cuda import usable_device
        ok, why = usable_device()
        if not ok:
            p.error(f"--backend cuda: no usable device here: {why}")
    guards = [g.strip() for g in args.guards.split(",") if g.strip()]
    for g in guards:
        if g not in ("full", "simple"):
            p.error(f"unknown guard {g!r}: expected full or simple")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    log = progress(args.quiet)
    results = run_benchmark(sorted(args.procs), sorted(args.times), guards, repeat=args.repeat,
                            seed=args.seed, reference_limit=args.reference_limit[0],
                            reference_limit_full=args.reference_limit_full[0],
                            max_cells=args.max_cells[0], log=log, backends=backends)
    save_results(results, args, plot, table=format_table(results) if args.quiet else None)
    return 0 if not results["consistency"] else 1


if __name__ == "__main__":
    sys.exit(main())
