"""Benchmark of the operator interface (``engine.operate.dataflow``): what a report in the operators'
words costs against the same progress written as pointstamp delta rows by hand.

What it measures
----------------
The loop of docs/operate.md (a source, a loop scope with a body and a feedback operator, a
sink). For each number of messages ``n`` (``--rows``), one report in which the loop body
consumes ``n`` messages on its feedback input and sends each on around the loop, at
``--times`` distinct iterations of epoch 0 (``2n`` rows; a list of counts measures each,
e.g. ``--times 200,16000``: the guards' cost in the distinct times). The messages consumed
are in flight first: an untimed setup sends them around the loop by the guards' rules (the
guards reject consuming what was never sent). Variants, interleaved, each ``--repeat``
times, on fresh trackers of the ``--backend`` (``cpu``):

* ``build``: making the :class:`~engine.operate.dataflow.Report` and its columns;
* ``translate``: :meth:`~engine.operate.dataflow.Ports.pointstamps` (validate, route, consolidate);
* ``check``: :meth:`~engine.operate.dataflow.Dataflow.check` (the same plus the guards);
* ``apply``: :meth:`~engine.operate.dataflow.DataflowTracker.apply` (guards, translation, one tracker
  batch);
* ``by_hand``: the ``2n`` delta rows a job would write without the interface (``-1`` at
  the body's input, ``+1`` at the feedback's input), given to the tracker's
  ``update_arrays`` as one batch.

Report generation is outside the timed region except for ``build``; a warm-up run of every
variant precedes the timing (Numba's kernels load once). ``apply`` and ``by_hand`` must leave
equal frontiers: a mismatch is listed under ``consistency``.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_operate                                   # 1e4, 1e5, 1e6 messages
    python -m perf.bench_operate --rows 1e6 --repeat 5 --plot perf/results/operate.png

How to read the output
----------------------
One line per ``(n, times)``: the median seconds of each variant and ``apply / by_hand``, the cost of
the interface over hand-written deltas. The JSON file (``--out``) holds ``commit``,
``dirty``, ``machine``, ``parameters``, ``runs`` (one record per timed call: rows, variant,
repeat, ``wall_s``), ``cases`` (per ``n`` and ``times``: the medians and the ratio) and
``consistency``.
``--plot FILE.png`` draws each variant's median against ``n`` (log-log), one line style per
``--times`` count.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from engine import BOUNDARY, Operate, Report, Scope, Summary
from perf.common import add_output_args, commit_info, commit_label, figure, int_list, machine, write_results

VARIANTS = ("build", "translate", "check", "apply", "by_hand")


def loop_dataflow():
    """source -> loop(body <-> feedback) -> sink, timestamps (epoch, iteration)."""
    root = Scope("root", m=1)
    src = root.add(Operate("source", 0, 1, capabilities={0: [(0,)]}))
    loop = Scope("loop", 1, 1, depth=1)
    ident = Summary.identity(1)
    body = loop.add(Operate("body", 2, 2, summary={(i, o): ident for i in (0, 1) for o in (0, 1)}))
    fb = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1)}))
    loop.connect(BOUNDARY, 0, body, 0)
    loop.connect(body, 0, fb, 0)
    loop.connect(fb, 0, body, 1)
    loop.connect(body, 1, BOUNDARY, 0)
    lp = root.add(loop)
    sink = root.add(Operate("sink", 1, 0))
    root.connect(src, 0, lp, 0)
    root.connect(lp, 0, sink, 0)
    return root.build()


def in_flight(rt, ts) -> None:
    """Put one message per row of ``ts`` (``(0, it)``, ``it >= 1``) in flight at the body's
    feedback input, by the guards' rules: the source sends one message and drops its
    capability, the body consumes it and takes a capability at ``(0, 0)``, then sends at
    ``(0, it - 1)`` and drops it, and the feedback sends what it consumed on at ``(0, it)``."""
    prev = ts.copy()
    prev[:, 1] -= 1
    rt.apply(Report().produced("source", 0, (0,), 1).capabilities("source", 0, (0,), -1))
    rt.apply(Report().consumed("loop/body", 0, (0, 0), 1).capabilities("loop/body", 0, (0, 0), 1))
    rt.apply(Report().produced("loop/body", 0, prev, 1).capabilities("loop/body", 0, (0, 0), -1)
             .consumed("loop/feedback", 0, prev, 1).produced("loop/feedback", 0, ts, 1))


def run(rows: Sequence[int], times: Sequence[int] | int, repeat: int, backend: str, seed: int,
        quiet: bool = False) -> dict:
    df = loop_dataflow()
    body_in, fb_in = df.target("loop/body", 1), df.target("loop/feedback", 0)
    runs, cases, consistency = [], [], []

    def report(ts):
        return Report().consumed("loop/body", 1, ts, 1).produced("loop/body", 0, ts, 1)

    def fresh(ts):
        rt = df.tracker(backend)
        in_flight(rt, ts)
        return rt

    def one(variant, ts, hand):
        """Seconds of one call of ``variant`` and the frontiers it leaves (or None)."""
        rt = fresh(ts) if variant in ("check", "apply", "by_hand") else None
        r = report(ts) if variant != "build" else None
        if r is not None:
            r.to_arrays()
        start = time.perf_counter()
        if variant == "build":
            report(ts).to_arrays()
        elif variant == "translate":
            df.ports.pointstamps(r)
        elif variant == "check":
            df.check(r, rt.tracker)
        elif variant == "apply":
            rt.apply(r)
        else:
            rt.tracker.update_arrays(*hand)
        wall = time.perf_counter() - start
        return wall, (rt.tracker.frontiers() if variant in ("apply", "by_hand") else None)

    def by_hand(ts):
        n = len(ts)
        loc = np.concatenate([np.full(n, body_in, np.int32), np.full(n, fb_in, np.int32)])
        return loc, np.concatenate([ts, ts]), np.concatenate([np.full(n, -1), np.full(n, 1)])

    times = [times] if isinstance(times, int) else list(times)
    rng = np.random.default_rng(seed)
    for n in rows:
        for D in times:
            ts = np.zeros((n, 2), np.int64)
            ts[:, 1] = rng.integers(1, D + 1, n)
            hand = by_hand(ts)
            for variant in VARIANTS:  # warm-up: kernels load, memory is touched once
                one(variant, ts[:min(n, 1000)], by_hand(ts[:min(n, 1000)]))
            walls = {v: [] for v in VARIANTS}
            ends = {}
            for k in range(repeat):
                for variant in VARIANTS:
                    wall, end = one(variant, ts, hand)
                    walls[variant].append(wall)
                    runs.append({"rows": n, "times": D, "variant": variant, "repeat": k,
                                 "wall_s": wall})
                    if end is not None:
                        ends[variant] = end
            if ends["apply"] != ends["by_hand"]:
                consistency.append({"rows": n, "times": D,
                                    "what": "apply and by_hand leave different frontiers"})
            med = {v: statistics.median(w) for v, w in walls.items()}
            case = {"rows": n, "times": D, "distinct_times": int(len(np.unique(ts[:, 1]))),
                    "messages": 2 * n, "median_s": med,
                    "min_s": {v: min(w) for v, w in walls.items()},
                    "apply_over_by_hand": med["apply"] / med["by_hand"]}
            cases.append(case)
            if not quiet:
                print(f"n={n:>9,} times={D:>7,}  "
                      + "  ".join(f"{v} {med[v]:.3f}s" for v in VARIANTS)
                      + f"  apply/by_hand {case['apply_over_by_hand']:.2f}")
    return {"benchmark": "operate", **commit_info(), "machine": machine(),
            "parameters": {"rows": list(rows), "times": times, "repeat": repeat,
                           "backend": backend, "seed": seed},
            "runs": runs, "cases": cases, "consistency": consistency}


def plot(results: dict, path: Path) -> None:
    with figure(path, dpi=120, figsize=(7, 4.5)) as (fig, ax):
        times = sorted({c.get("times", 0) for c in results["cases"]})
        styles = ["-", "--", ":", "-."]
        for k, D in enumerate(times):
            cases = [c for c in results["cases"] if c.get("times", 0) == D]
            xs = [c["messages"] for c in cases]
            for j, v in enumerate(VARIANTS):
                ax.plot(xs, [c["median_s"][v] for c in cases], marker="o", color=f"C{j}",
                        linestyle=styles[k % len(styles)],
                        label=v if len(times) == 1 else f"{v}, {D:,} times")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("report rows (consumed + produced)")
        ax.set_ylabel("median seconds")
        ax.set_title(f"operator interface vs. hand-written deltas "
                     f"({results['parameters']['backend']}, {commit_label(results)})")
        ax.legend()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_operate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int_list, default=[10_000, 100_000, 1_000_000],
                   help="messages consumed (and as many produced) per report")
    p.add_argument("--times", type=int_list, default=[200],
                   help="distinct iterations in a report (a list: one case per count)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--seed", type=int, default=13)
    add_output_args(p, "perf/results/operate.json", quiet="no progress lines")
    args = p.parse_args(argv)
    if args.repeat < 1 or min(args.times) < 1:
        p.error("--repeat and --times must be >= 1")
    results = run(args.rows, args.times, args.repeat, args.backend, args.seed, args.quiet)
    write_results(results, args.out)
    if args.plot:
        plot(results, args.plot)
    if results["consistency"]:
        print(f"inconsistent: {results['consistency']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
