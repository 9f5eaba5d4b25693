"""How many targets the closure gather recomputes in full, by the witness rule with its
only-producer refinement and by the rules before it: a count, not a timing (issue 10, item 1;
issue 24, item 4).

What it counts
--------------
For each chain size ``N`` (``--sizes``) the synthetic workload of :mod:`perf.workloads`
(``--batch`` rows per batch, ``--seed``) is replayed on the cpu backend; for every churn batch
the device gather's vote is computed by its CPU twin,
:func:`gpu_kernels.propagate.closure_vote` (the same scalar cores, ``witness_row`` and
``cover_hits``, as the kernel): the targets some changed ``F`` reaches (``reached``), those
recomputed from all their sources because a row of their old frontier lost every producer
(``full``: the vote of the device, with its table of ``HIT_ROWS`` suspect rows;
``full_exact``: without the table's cap), those the witness rule without the only-producer
refinement recomputed in full -- every target where a changed source withdrew a witness of
its old frontier (``full_witness``, the vote with a table of 0 rows) -- and those the rule
before both recomputed in full, every target with a *retreated* source (``full_before``).
The rest are updated incrementally (old frontier plus the changed sources' candidates).
``Psi`` is built once per size (``compute_psi``), which
bounds the sizes to a few thousand locations.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.count_witness --sizes 100,1000 --batch 1000,100000 \\
        --out perf/results/witness.json

The JSON (``--out``) holds ``commit``, ``dirty``, ``machine``, ``parameters`` and ``cases``
(per size and batch size: ``locations``, ``churn_batches``, ``reached``, ``full``,
``full_exact``, ``full_witness``, ``full_before``, ``incremental``); the table is printed
too.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import numpy as np

from perf.common import add_output_args, commit_info, int_list, machine, write_results


def _target_major(graph):
    from engine.batched.psi import compute_psi
    from gpu_kernels.propagate import target_major
    psi = compute_psi(graph, layout="ragged")
    sums = psi.sums.reshape(-1, psi.sums.shape[-1])
    return target_major(psi.L, 0, np.zeros((1, 1), np.uint8), psi.t_ptr, psi.t_src, psi.t_pair,
                        psi.sum_ptr, sums)


def count_case(n: int, batch: int, seed: int) -> dict:
    """The counts of one workload (chain size ``n``, ``batch`` rows per batch), summed over
    its churn batches."""
    from engine.batched.tracker import BatchedTracker
    from gpu_kernels import pareto, propagate
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(n, seed)
    graph = build_graph(spec)
    tm_ptr, tm_src, tm_sum = _target_major(graph)
    tr = BatchedTracker(graph, strategy="edgewise")
    L, m = tr.ga.L, tr.ga.m
    out = {"n": n, "batch": batch, "locations": L, "churn_batches": 0, "reached": 0, "full": 0,
           "full_exact": 0, "full_witness": 0, "full_before": 0}
    for b in generate_batches(spec, batch, seed):
        G_ptr, G_ts, I_ptr, I_ts = tr._F_ptr, tr._F_ts, tr._I_ptr, tr._I_ts
        tr.update_arrays(*batch_columns(graph, b))
        F_ptr, F_ts = tr._F_ptr, tr._F_ts
        if b.kind != "churn":
            continue
        seeds = np.array([l for l in range(L)
                          if not np.array_equal(G_ts[G_ptr[l]:G_ptr[l + 1]],
                                                F_ts[F_ptr[l]:F_ptr[l + 1]])], np.int64)
        mode, gone = pareto.seed_withdrawn(L, seeds, G_ptr, G_ts, F_ptr, F_ts, m)
        votes = {key: propagate.closure_vote(m, tm_ptr, tm_src, tm_sum, mode, gone, G_ptr,
                                             G_ts, F_ptr, F_ts, I_ptr, I_ts, rows)
                 for key, rows in (("full", propagate.HIT_ROWS), ("full_exact", L + 1),
                                   ("full_witness", 0))}
        vote = votes["full"]
        # per target: its Psi entries whose source retreated (the rule before: any -> full)
        cs = np.concatenate([[0], np.cumsum(mode[tm_src] == 2)])
        per_target = cs[tm_ptr[1:]] - cs[tm_ptr[:-1]]
        out["churn_batches"] += 1
        out["reached"] += int((vote > 0).sum())
        for key, v in votes.items():
            out[key] += int((v == 2).sum())
        out["full_before"] += int((per_target > 0).sum())
    out["incremental"] = out["reached"] - out["full"]
    return out


def format_table(results: dict) -> str:
    lines = [f"{'N':>6} {'B':>8} {'L':>6} {'reached':>8} {'full':>7} {'exact':>7} "
             f"{'witness':>8} {'before':>7} {'incr.':>7}"]
    for c in results["cases"]:
        lines.append(f"{c['n']:>6} {c['batch']:>8} {c['locations']:>6} {c['reached']:>8} "
                     f"{c['full']:>7} {c['full_exact']:>7} {c['full_witness']:>8} "
                     f"{c['full_before']:>7} {c['incremental']:>7}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.count_witness",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int_list, default=[100, 1000], help="chain sizes N")
    ap.add_argument("--batch", type=int_list, default=[1000, 100000], help="rows per batch")
    ap.add_argument("--seed", type=int, default=1)
    add_output_args(ap, None, plot=None, quiet="no table")
    args = ap.parse_args(argv)
    results = {"benchmark": "witness_counts", **commit_info(), "machine": machine(),
               "parameters": {"sizes": args.sizes, "batch": args.batch, "seed": args.seed},
               "cases": [count_case(n, b, args.seed) for n in args.sizes for b in args.batch]}
    if args.out is not None:
        write_results(results, args.out)
    if not args.quiet:
        print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
