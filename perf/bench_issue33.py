"""Issue 33's CPU rows: ``Psi`` and small churn batches, against the issue's reference figures.

What it measures
----------------
Three rows of issue 33's table, on the synthetic workload of ``perf.workloads`` (``--seed``,
default 1; a chain of ``N`` operators with nested loops and diamonds):

* ``psi N=1000`` -- :func:`engine.batched.psi.compute_psi` with its defaults (layout
  ``auto``, one thread per CPU), wall time of the call;
* ``churn N=1000 B=1e5`` and ``churn N=5000 B=1e5`` -- the cpu backend's
  :class:`~engine.batched.tracker.BatchedTracker` (``auto``: edge-wise on the CPU), a fresh
  tracker per repeat fed the load batch (untimed) and then the three churn batches of
  ``perf.workloads.generate_batches``, each timed around ``update_arrays``; changes per
  second is ``B`` over the median of all churn batches of all repeats. The tracker's split
  (``apply_s``: intake, consolidation, merge, local frontiers; ``propagate_s``: edge-wise
  propagation and the emitted changes) is kept per batch.

The rows run interleaved, ``--repeat`` rounds of every row (at least 3), after a warm-up that
loads (or compiles) the kernels; each row reports the median and the minimum, and the
process's CPU time (user + system, ``resource.getrusage``) over the same calls -- on a
machine shared with other work the wall time exceeds it, which the CPU time shows.

The reference is **not run here**: it is the absolute figure issue 33 gives for
timely-dataflow's progress code (v0.29) on the same workload shape, measured on this machine
class (:data:`REFERENCE`): ``Builder::summarize`` 1.28-1.37 s for ``Psi`` at N = 1000, the
``Tracker`` (update + propagate + drain) 3.7-4.3 M changes/s at N = 1000 and 1.38 M/s at
N = 5000. The ratio is the reference's time over ours (for ``Psi``, against the faster end of
its range; for churn, our rate over the faster end of the reference's), and the target is the
issue's (:data:`TARGETS`): 10x (``Psi`` in at most 130 ms), 5x (about 20 M/s) and 8x (11 M/s).

How to run (from the repository root)
-------------------------------------
::

    .venv/bin/python -m perf.bench_issue33                     # 5 rounds, a minute or two
    .venv/bin/python -m perf.bench_issue33 --repeat 3 --plot perf/results/issue33.png
    .venv/bin/python -m perf.bench_issue33 --rows psi --repeat 7

How to read the output
----------------------
One line per row: ours (median and min), our CPU time per call, the reference figure, the
ratio (median) and the target ratio, and whether the median met it. The JSON (``--out``,
default ``perf/results/issue33.json``) holds ``commit``, ``machine``, ``parameters``,
``warmup``, ``runs`` (every timed call: row, repeat, ``wall_s``, ``cpu_s``, and for churn the
per-batch ``apply_s``/``propagate_s``/``emitted``) and ``rows`` (the table's numbers).
``--plot FILE.png`` draws ours against the reference and the target, as ratios.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
from typing import Callable, Sequence

from perf.common import (add_output_args, commit_info, commit_label, figure, machine, progress,
                         save_results, utc_now)

__all__ = ["main", "run_benchmark", "format_table", "plot", "REFERENCE", "TARGETS", "ROWS"]

#: The rows: ``name -> (kind, N, B)``.
ROWS = {
    "psi N=1000": ("psi", 1000, 0),
    "churn N=1000 B=1e5": ("churn", 1000, 100_000),
    "churn N=5000 B=1e5": ("churn", 5000, 100_000),
}
#: Issue 33's reference figures (timely-dataflow v0.29 on this machine class): seconds for
#: ``Psi``, changes per second for churn, as ``(fast end, slow end)``.
REFERENCE = {
    "psi N=1000": {"what": "timely Builder::summarize (all pairs)", "unit": "s",
                   "range": (1.28, 1.37)},
    "churn N=1000 B=1e5": {"what": "timely Tracker update+propagate+drain", "unit": "changes/s",
                           "range": (4.3e6, 3.7e6)},
    "churn N=5000 B=1e5": {"what": "timely Tracker update+propagate+drain", "unit": "changes/s",
                           "range": (1.38e6, 1.38e6)},
}
#: The issue's targets: the ratio to reach, and what it means in absolute terms.
TARGETS = {
    "psi N=1000": {"ratio": 10.0, "absolute": "at most 130 ms"},
    "churn N=1000 B=1e5": {"ratio": 5.0, "absolute": "about 20 M changes/s"},
    "churn N=5000 B=1e5": {"ratio": 8.0, "absolute": "about 11 M changes/s"},
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _warm_up() -> dict:
    """Load (or compile) the kernels the rows run, on small graphs."""
    from engine.batched.psi import compute_psi
    from engine.batched.tracker import warm_up
    from perf.workloads import build_graph, generate_graph

    t0 = time.perf_counter()
    g = build_graph(generate_graph(100, 0))
    for layout in ("dense", "ragged"):
        compute_psi(g, layout=layout)
    warm_up(1, 1, strategies=("edgewise",))
    return {"seconds": time.perf_counter() - t0}


class _Row:
    """One row's workload, built once (outside the timed region), and its timed call."""

    def __init__(self, name: str, seed: int):
        from perf.workloads import (batch_columns, build_graph, generate_batches,
                                    generate_graph)
        self.name = name
        self.kind, self.n, self.b = ROWS[name]
        spec = generate_graph(self.n, seed)
        self.graph = build_graph(spec)
        self.batches = []
        if self.kind == "churn":
            specs = generate_batches(spec, self.b, seed)
            self.batches = [(s.kind, batch_columns(self.graph, s)) for s in specs
                            if s.kind in ("load", "churn")]

    def run(self, repeat: int) -> dict:
        gc.collect()
        if self.kind == "psi":
            from engine.batched.psi import compute_psi
            c0, t0 = _cpu(), time.perf_counter()
            psi = compute_psi(self.graph)
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            rec = {"row": self.name, "repeat": repeat, "wall_s": wall, "cpu_s": cpu,
                   "layout": psi.layout.value, "summaries": psi.num_summaries,
                   "pairs": psi.num_pairs, "locations": psi.L}
            del psi
            return rec
        from engine.batched.tracker import BatchedTracker
        tracker = BatchedTracker(self.graph)
        batches = []
        for kind, cols in self.batches:
            c0, t0 = _cpu(), time.perf_counter()
            out = tracker.update_arrays(*cols)
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            if kind == "churn":
                batches.append({"wall_s": wall, "cpu_s": cpu, "rows": int(len(cols[0])),
                                "emitted": int(len(out[0])), **tracker.last_timing})
        return {"row": self.name, "repeat": repeat, "strategy": tracker.strategy.value,
                "locations": self.graph.num_locations, "batches": batches}


def _summarize(name: str, runs: list[dict]) -> dict:
    kind, n, b = ROWS[name]
    ref = REFERENCE[name]
    target = TARGETS[name]
    if kind == "psi":
        walls = [r["wall_s"] for r in runs]
        cpus = [r["cpu_s"] for r in runs]
        med = statistics.median(walls)
        fast, slow = ref["range"]
        return {"row": name, "unit": "s", "median": med, "min": min(walls),
                "cpu_median": statistics.median(cpus), "reference": ref,
                "ratio_median": fast / med, "ratio_min": fast / min(walls),
                "ratio_vs_slow_end": slow / med, "target": target,
                "target_met": fast / med >= target["ratio"], "calls": len(walls)}
    walls = [x["wall_s"] for r in runs for x in r["batches"]]
    cpus = [x["cpu_s"] for r in runs for x in r["batches"]]
    med = statistics.median(walls)
    rate, best = b / med, b / min(walls)
    fast, slow = ref["range"]
    return {"row": name, "unit": "changes/s", "median": rate, "best": best,
            "batch_median_s": med, "batch_min_s": min(walls),
            "cpu_median_s": statistics.median(cpus),
            "apply_median_s": statistics.median(x["apply_s"] for r in runs
                                                for x in r["batches"]),
            "propagate_median_s": statistics.median(x["propagate_s"] for r in runs
                                                    for x in r["batches"]),
            "reference": ref, "ratio_median": rate / fast, "ratio_best": best / fast,
            "ratio_vs_slow_end": rate / slow, "target": target,
            "target_met": rate / fast >= target["ratio"], "calls": len(walls)}


def run_benchmark(rows: Sequence[str] = tuple(ROWS), *, repeat: int = 5, seed: int = 1,
                  log: Callable[..., None] = print) -> dict:
    """Every row ``repeat`` times, interleaved; the JSON-ready results."""
    started = utc_now()
    warm = _warm_up()
    log(f"warm-up {warm['seconds']:.1f}s")
    work = [_Row(name, seed) for name in rows]
    runs: list[dict] = []
    for r in range(repeat):
        for row in work[r % len(work):] + work[:r % len(work)]:  # rotate: none always first
            rec = row.run(r)
            runs.append(rec)
            if row.kind == "psi":
                log(f"{row.name} #{r}: {rec['wall_s'] * 1e3:.1f} ms (cpu {rec['cpu_s'] * 1e3:.0f} ms)")
            else:
                ms = ", ".join(f"{x['wall_s'] * 1e3:.2f}" for x in rec["batches"])
                log(f"{row.name} #{r}: churn batches {ms} ms")
    return {
        "benchmark": "issue33",
        "started": started,
        **commit_info(),
        "machine": machine(),
        "parameters": {"rows": list(rows), "repeat": repeat, "seed": seed},
        "warmup": warm,
        "runs": runs,
        "rows": [_summarize(name, [x for x in runs if x["row"] == name]) for name in rows],
    }


def format_table(results: dict) -> str:
    lines = [f"{'row':20s} {'ours (median)':>15s} {'ours (best)':>13s} {'cpu/call':>10s} "
             f"{'reference (issue 33)':>22s} {'ratio':>7s} {'target':>7s}  met"]
    for s in results["rows"]:
        fast, slow = s["reference"]["range"]
        if s["unit"] == "s":
            ours = f"{s['median'] * 1e3:.1f} ms"
            best = f"{s['min'] * 1e3:.1f} ms"
            cpu = f"{s['cpu_median'] * 1e3:.0f} ms"
            ref = f"{fast:.2f}-{slow:.2f} s"
        else:
            ours = f"{s['median'] / 1e6:.1f} M/s"
            best = f"{s['best'] / 1e6:.1f} M/s"
            cpu = f"{s['cpu_median_s'] * 1e3:.2f} ms"
            ref = (f"{slow / 1e6:.2f}-{fast / 1e6:.2f} M/s" if fast != slow
                   else f"{fast / 1e6:.2f} M/s")
        lines.append(f"{s['row']:20s} {ours:>15s} {best:>13s} {cpu:>10s} {ref:>22s} "
                     f"{s['ratio_median']:>6.1f}x {s['target']['ratio']:>6.0f}x  "
                     f"{'yes' if s['target_met'] else 'NO'}")
    m = results["machine"]
    lines.append(f"ratio: the reference's faster end over ours (medians of "
                 f"{results['parameters']['repeat']} rounds; churn: all 3 batches a round); "
                 f"the reference is the issue's figure, not run here")
    lines.append(f"commit {(results['commit'] or 'unknown')[:10]}"
                 f"{'+dirty' if results['dirty'] else ''}, {m['cpu_count']} CPUs, "
                 f"{m['platform']}")
    return "\n".join(lines)


def plot(results: dict, path) -> None:
    """Ratios to the reference (median, best) against the targets, one bar group per row."""
    rows = results["rows"]
    names = [s["row"] for s in rows]
    med = [s["ratio_median"] for s in rows]
    best = [s.get("ratio_min", s.get("ratio_best")) for s in rows]
    with figure(path, dpi=110, figsize=(8, 4.2)) as (fig, ax):
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], med, width=0.4, label="ours, median")
        ax.bar([i + 0.2 for i in x], best, width=0.4, label="ours, best")
        for i, s in enumerate(rows):
            ax.hlines(s["target"]["ratio"], i - 0.45, i + 0.45, colors="red",
                      label="target (issue 33)" if i == 0 else None)
        ax.axhline(1.0, color="gray", linestyle=":", label="reference (timely, issue's figure)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names)
        ax.set_ylabel("speed-up over the reference (x)")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle(f"issue 33 rows on the cpu backend (commit {commit_label(results)}, "
                     f"{results['machine']['cpu_count']} CPUs)", fontsize=10)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_issue33",
                                description="Issue 33's Psi and churn rows on the cpu backend "
                                            "against the issue's reference figures.")
    p.add_argument("--rows", default=",".join(k.split()[0] + ":" + k.split()[1] for k in ROWS),
                   help="rows to run, comma-separated: psi:N=1000, churn:N=1000, "
                        "churn:N=5000 (default all)")
    p.add_argument("--repeat", type=int, default=5, help="rounds of every row (at least 3)")
    p.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    add_output_args(p, "perf/results/issue33.json")
    args = p.parse_args(argv)
    if args.repeat < 3:
        p.error("--repeat must be at least 3 (the rows are medians)")
    by_key = {k.split()[0] + ":" + k.split()[1]: k for k in ROWS}
    rows = []
    for part in args.rows.split(","):
        part = part.strip()
        if part not in by_key:
            p.error(f"unknown row {part!r}; choose from {', '.join(by_key)}")
        if by_key[part] not in rows:
            rows.append(by_key[part])
    results = run_benchmark(rows, repeat=args.repeat, seed=args.seed,
                            log=progress(args.quiet))
    save_results(results, args, plot, table=format_table(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
