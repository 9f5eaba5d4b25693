"""Benchmark of the progress exchange protocol: traffic per data change and frontier latency as
the number of workers grows, per sending policy -- on real processes
(:class:`engine.exchange.processes.ProcessExchange`) and in the simulator
(:class:`engine.exchange.simulation.Exchange`).

What it measures
----------------
One synthetic workload of ``perf.workloads`` (``--nodes`` chain operators, ``--batch`` changes
per batch, ``--seed``: a load batch, three churn batches, a drain): its rows are the *data
changes* -- the pointstamp count changes that processing data causes (messages sent and
consumed, capabilities moved). Every batch is split among ``K`` workers by
:func:`engine.exchange.simulation.split_batch`; each worker performs its share and sends progress updates
under the policy; the batch ends when the system is quiescent, and every worker's frontiers
must then equal a single tracker's (checked: a difference is an error).

Per (mode, K, policy), summed over the batches and divided by the data changes:

* ``updates`` -- progress updates broadcast (one per ``send``), ``pointstamps`` -- the rows
  they carry, ``bytes`` -- their size by :attr:`engine.exchange.messages.Update.nbytes`;
* ``delivered_pointstamps`` / ``delivered_bytes`` -- the same counted at every receiver other
  than the sender (``x (K - 1)``): what crosses the network;
* real processes only: ``wire_bytes`` -- bytes written to the sockets (Arrow IPC messages:
  flatbuffer metadata, 8-byte padding and the ``producer``/``seq`` columns included), and
  ``latency_s`` -- from the batch's dispatch until the last worker's frontiers took their
  final value (median and max over batches), ``round_s`` -- until every worker had reported
  quiescence;
* simulated only: ``events`` -- scheduler steps (perform, send, receive, data delivery)
  until quiescence;
* ``data_messages`` -- capabilities sent as data from one worker to another by the split
  (the same in both modes: not progress traffic).

``all`` (send every change at once) is the naive baseline each policy is compared with
(``vs_all``: the policy's delivered pointstamps / ``all``'s). Real processes run ``K`` in
``--procs`` (default 2, 4, 8, 16): one set of ``K`` processes per ``K``, each policy after a
:meth:`~engine.exchange.processes.ProcessExchange.reset` (fresh workers, same processes and
sockets), the workers' trackers and the single tracker on ``--backend`` (default cpu); the simulator runs ``K`` in ``--sim`` (default 2 .. 128).

The reference line is timely dataflow's reported behaviour (TimelyDataflow/timely-dataflow
issue 190, "Progress tracking needs to be reigned in", 2018): with 4 processes of one worker
the progress channel carried 534,406,272 bytes against 1,165,185,520 on the data channels
(0.46 of the data volume), and "as we increase the workers up to 32, the volume even
dominates the amount of real data". The naive policy here is what that system did then: every
change goes to every worker, so progress traffic grows with ``K`` per data change while the
data traffic does not.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_exchange --plot docs/img/exchange.png          # a few minutes on 2 cores
    python -m perf.bench_exchange --procs 2 --sim 2,4 --nodes 20 --batch 10   # seconds

How to read the output
----------------------
One row per (mode, K, policy). The JSON file (``--out``, default perf/results/exchange.json)
holds ``commit``, ``dirty``, ``machine`` (CPU count: K processes share those cores, so real
latencies at K > cores measure time-sharing as much as the protocol), ``parameters``,
``workload`` (graph size, changes per batch), ``reference`` (the timely figures and their
source), ``runs`` (per batch: mode, K, policy, the counts and times) and ``cases`` (per
configuration: totals, per-data-change figures, ``vs_all``, start-up time).
``--plot FILE.png`` draws delivered pointstamps and bytes per data change against K (log-log,
one line per mode and policy, timely's 32 workers marked) and the real processes' latency.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Sequence


from perf.common import (add_output_args, commit_info, commit_label, figure, int_list, machine,
                         progress, save_results)
from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph

__all__ = ["main", "run_benchmark", "format_table", "plot", "POLICIES", "TIMELY_REFERENCE"]

#: The policies measured, the naive baseline first.
POLICIES = ("all", "batch", "holdback")

#: What timely dataflow's authors reported (bytes per channel over 100 s of a computation).
TIMELY_REFERENCE = {
    "source": "https://github.com/TimelyDataflow/timely-dataflow/issues/190",
    "title": "Progress tracking needs to be reigned in (Frank McSherry, 2018-09-19)",
    "workers_4x1": {"progress_bytes": 534_406_272,
                    "data_bytes": 1_799_904 + 98_112_480 + 1_065_273_136},
    "progress_exceeds_data_at_workers": 32,
    "quote": "As we increase the workers up to 32, the volume even dominates the amount of "
             "real data.",
}


def _workload(nodes: int, batch: int, seed: int):
    spec = generate_graph(nodes, seed)
    graph = build_graph(spec)
    batches = [batch_columns(graph, b) for b in generate_batches(spec, batch, seed)]
    return graph, batches


def _per_change(totals: dict, changes: int) -> dict:
    return {f"{k}_per_change": v / changes for k, v in totals.items()}


def _real_case(ex, batches, K, policy) -> tuple[dict, list]:
    runs = []
    for loc, ts, diff in batches:
        r = ex.run_batch(loc, ts, diff)
        runs.append({"mode": "real", "workers": K, "policy": policy, "batch": r.batch,
                     "changes": r.changes, "operations": r.operations,
                     "updates": r.updates, "pointstamps": r.pointstamps, "bytes": r.nbytes,
                     "messages": r.messages, "wire_bytes": r.wire_bytes,
                     "data_messages": r.data_messages, "initial": r.initial,
                     "latency_s": r.latency_s, "round_s": r.round_s})
    case = _summarise("real", K, policy, runs)
    lat = [r["latency_s"] for r in runs]
    case["latency_s_median"] = statistics.median(lat)
    case["latency_s_max"] = max(lat)
    case["round_s_median"] = statistics.median(r["round_s"] for r in runs)
    case["wire_bytes_per_change"] = case["totals"]["wire_bytes"] / case["changes"]
    return case, runs


def _policy(name: str):
    """The policy object a name stands for here: ``batch`` releases by size only (32 rows),
    so that it means the same in the simulator (whose clock counts steps) and on processes
    (whose clock is in seconds)."""
    from engine.exchange.policies import SendBatched
    return SendBatched(size=BATCH_ROWS, interval=None) if name == "batch" else name


#: The ``batch`` policy's size bound (rows of ``temp``).
BATCH_ROWS = 32


def _sim_batch(ex, loc, ts, diff, op_rows) -> None:
    """One batch in the simulator, in the schedule the processes follow: each worker performs
    its operations (in parts of ``op_rows`` rows), sending under its policy after each; the
    data is delivered; every worker settles (what stays in its ``temp`` no frontier sees);
    every update is received. (``Exchange.quiesce`` draws a random interleaving instead, at a
    cost quadratic in K per step.)"""
    from engine.exchange.processes import operation_parts, settle

    ex.perform_batch(loc, ts, diff)         # admits the unjustified rows, queues the rest
    for w in range(ex.K):
        while ex.pending[w]:
            op = ex.pending[w].popleft()
            for p_loc, p_ts, p_diff, p_to in operation_parts(op, op_rows):
                ex.perform(w, p_loc, p_ts, p_diff, to=p_to)
                ex.send(w)
                ex.clock += 2
    for r in range(ex.K):
        while len(ex.data[r][0]):
            ex.deliver_data(r)
    for w in range(ex.K):
        update = settle(ex.workers[w])
        if update is not None:
            for r in range(ex.K):
                ex.msg[(w, r)].append(update)
    for (s, r), q in ex.msg.items():
        while q:
            ex.receive(s, r)
            ex.clock += 1
    if any(ex.pending) or any(ex.msg.values()) or any(len(d[0]) for d in ex.data):
        raise AssertionError("the simulated batch did not end quiescent")


def _sim_case(graph, batches, K, policy, backend, seed, oracle, op_rows) -> tuple[dict, list]:
    from engine.exchange.simulation import Exchange

    ex = Exchange(graph, K, policy=_policy(policy), backend=backend, seed=seed)
    runs = []
    before = _sim_stats(ex)
    for k, (loc, ts, diff) in enumerate(batches):
        start = time.perf_counter()
        _sim_batch(ex, loc, ts, diff, op_rows)
        wall = time.perf_counter() - start
        want = oracle[k]
        for w in range(K):
            got = [sorted(f) for f in ex.frontiers(w)]
            if got != want:
                raise AssertionError(f"simulated K={K} policy={policy}: worker {w}'s frontiers "
                                     f"differ from the single tracker's after batch {k}")
        now = _sim_stats(ex)
        runs.append({"mode": "sim", "workers": K, "policy": policy, "batch": k,
                     "changes": len(loc), "wall_s": wall,
                     **{key: now[key] - before[key] for key in now}})
        before = now
    return _summarise("sim", K, policy, runs), runs


def _sim_stats(ex) -> dict:
    """The simulator's cumulative counters (summed over its workers by ``Exchange.stats``)."""
    stats = ex.stats
    return {"updates": int(stats["updates_sent"]), "pointstamps": int(stats["pointstamps_sent"]),
            "bytes": int(stats["bytes_sent"]), "events": int(stats["steps"]),
            "data_messages": int(stats["data_messages"])}


def _summarise(mode: str, K: int, policy: str, runs: list) -> dict:
    keys = [k for k in ("updates", "pointstamps", "bytes", "messages", "wire_bytes", "events",
                        "data_messages") if k in runs[0]]
    totals = {k: int(sum(r[k] for r in runs)) for k in keys}
    changes = int(sum(r["changes"] for r in runs))
    totals["delivered_pointstamps"] = totals["pointstamps"] * (K - 1)
    totals["delivered_bytes"] = totals["bytes"] * (K - 1)
    return {"mode": mode, "workers": K, "policy": policy, "changes": changes, "totals": totals,
            **_per_change(totals, changes)}


def run_benchmark(*, nodes: int, batch: int, seed: int, procs: Sequence[int],
                  sim: Sequence[int], policies: Sequence[str], backend: str = "cpu",
                  op_rows: int | None = 8, timeout: float = 120.0, log=print) -> dict:
    import engine

    graph, batches = _workload(nodes, batch, seed)
    single = engine.make_tracker(graph, backend)
    oracle = []
    for loc, ts, diff in batches:
        getattr(single, "update_arrays", single.update)(loc, ts, diff)
        oracle.append([sorted(f) for f in single.frontiers()])
    results = {"benchmark": "exchange", **commit_info(),
               "machine": machine(note=f"{_cores()} cores shared by the coordinator and all "
                                       f"K worker processes",
                                  load_average_start=list(_load())),
               "parameters": {"nodes": nodes, "batch": batch, "seed": seed, "procs": list(procs),
                              "sim": list(sim), "policies": list(policies), "backend": backend,
                              "op_rows": op_rows, "batch_policy_rows": BATCH_ROWS,
                              "timeout": timeout},
               "workload": {"locations": graph.num_locations, "batches": len(batches),
                            "changes": [len(b[0]) for b in batches]},
               "reference": TIMELY_REFERENCE, "runs": [], "cases": []}
    for K in sim:
        for policy in policies:
            start = time.perf_counter()
            case, runs = _sim_case(graph, batches, K, policy, backend, seed, oracle, op_rows)
            case["wall_s"] = time.perf_counter() - start
            results["runs"] += runs
            results["cases"].append(case)
            log(_row(case))
    if procs:
        from engine.exchange.processes import ProcessExchange
    for K in procs:
        # One set of K processes for every policy: reset() gives each a fresh Worker.
        with ProcessExchange(graph, K, policy=_policy(policies[0]), backend=backend,
                             oracle=backend, timeout=timeout, op_rows=op_rows) as ex:
            for n, policy in enumerate(policies):
                start = time.perf_counter()
                if n:
                    ex.reset(policy=_policy(policy))
                case, runs = _real_case(ex, batches, K, policy)
                case["startup_s"] = ex.startup_s
                case["wall_s"] = time.perf_counter() - start
                results["runs"] += runs
                results["cases"].append(case)
                log(_row(case))
    results["machine"]["load_average_end"] = list(_load())
    for case in results["cases"]:
        base = next(c for c in results["cases"] if c["mode"] == case["mode"]
                    and c["workers"] == case["workers"] and c["policy"] == "all") \
            if "all" in policies else None
        case["vs_all"] = (None if base is None or not base["totals"]["pointstamps"] else
                          case["totals"]["pointstamps"] / base["totals"]["pointstamps"])
    return results


def _load() -> tuple:
    import os
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        return ()


def _cores() -> int:
    import os
    return os.cpu_count() or 1


def _row(c: dict) -> str:
    extra = ""
    if c["mode"] == "real":
        extra = (f"  wire {c['wire_bytes_per_change']:8.1f} B  latency median "
                 f"{c['latency_s_median'] * 1e3:7.1f} ms  start {c['startup_s']:5.1f} s")
    return (f"{c['mode']:4} K={c['workers']:3} {c['policy']:8}  per change: updates "
            f"{c['updates_per_change']:6.3f}  pointstamps {c['pointstamps_per_change']:6.3f}  "
            f"delivered {c['delivered_pointstamps_per_change']:8.2f}  bytes "
            f"{c['delivered_bytes_per_change']:9.1f}{extra}")


def format_table(results: dict) -> str:
    return "\n".join(_row(c) for c in results["cases"])


def plot(results: dict, path) -> None:
    with figure(path, dpi=100, ncols=3, figsize=(15, 4.8)) as (fig, axes):
        styles = {"sim": "--", "real": "-"}
        markers = {"all": "o", "batch": "s", "holdback": "^"}
        colors = {"all": "C0", "batch": "C1", "holdback": "C2"}
        for ax, key, label in ((axes[0], "delivered_pointstamps_per_change",
                                "pointstamps delivered per data change"),
                               (axes[1], "delivered_bytes_per_change",
                                "progress bytes delivered per data change")):
            for mode in ("sim", "real"):
                for policy in results["parameters"]["policies"]:
                    cs = [c for c in results["cases"] if c["mode"] == mode and c["policy"] == policy]
                    if cs:
                        ax.plot([c["workers"] for c in cs], [c[key] for c in cs],
                                styles[mode] + (markers.get(policy, "x") if mode == "real" else ""),
                                color=colors.get(policy), label=f"{mode} {policy}")
            real = [c for c in results["cases"] if c["mode"] == "real" and c["policy"] == "all"]
            if key == "delivered_bytes_per_change" and real:
                ax.plot([c["workers"] for c in real], [c["wire_bytes_per_change"] for c in real],
                        ":o", color="grey", label="real all: Arrow IPC bytes on the wire")
            if key == "delivered_pointstamps_per_change":
                ax.axhline(1.0, color="grey", lw=0.8, ls=":")
                ax.text(2, 1.05, "each change sent once (one tracker)", color="grey", fontsize=7)
            ax.axvline(TIMELY_REFERENCE["progress_exceeds_data_at_workers"], color="red", lw=0.8)
            ax.text(TIMELY_REFERENCE["progress_exceeds_data_at_workers"] * 1.05, 0.02,
                    "timely #190: progress bytes\nexceed data bytes\nat 32 workers", color="red",
                    fontsize=7, va="bottom", transform=ax.get_xaxis_transform())
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("workers K")
            ax.set_ylabel(label)
            ax.legend(fontsize=7)
        ax = axes[2]
        for policy in results["parameters"]["policies"]:
            cs = [c for c in results["cases"] if c["mode"] == "real" and c["policy"] == policy]
            if cs:
                ax.plot([c["workers"] for c in cs], [c["latency_s_median"] * 1e3 for c in cs],
                        "-" + markers.get(policy, "x"), color=colors.get(policy),
                        label=f"{policy} (median over batches)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("worker processes K")
        ax.set_ylabel("frontier latency, ms")
        ax.legend(fontsize=7)
        p = results["parameters"]
        fig.suptitle(f"progress exchange: chain {p['nodes']}, {p['batch']} changes per batch, "
                     f"{p['op_rows']} rows per operation; processes (solid) and simulator (dashed) "
                     f"coincide where both ran; commit {commit_label(results)}, "
                     f"{results['machine']['cpu_count']} CPUs", fontsize=9)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_exchange",
                                description="Progress traffic and frontier latency of the "
                                            "exchange protocol as the workers grow.")
    p.add_argument("--nodes", type=int, default=100, help="chain operators of the workload (default 100)")
    p.add_argument("--batch", type=int, default=1000, help="changes per batch (default 1000)")
    p.add_argument("--seed", type=int, default=1, help="workload and scheduler seed (default 1)")
    p.add_argument("--procs", type=int_list, default=[2, 4, 8, 16],
                   help="worker processes K, comma-separated (default 2,4,8,16)")
    p.add_argument("--sim", type=int_list, default=[2, 4, 8, 16, 32, 64, 128],
                   help="simulated workers K, comma-separated (default 2..128)")
    p.add_argument("--no-sim", action="store_true", help="skip the simulator")
    p.add_argument("--policies", default=",".join(POLICIES),
                   help=f"sending policies, comma-separated (default {','.join(POLICIES)})")
    p.add_argument("--backend", default="cpu", help="the workers' trackers (default cpu)")
    p.add_argument("--op-rows", type=int, default=8,
                   help="rows per worker operation: a worker's share of a batch is performed "
                        "as operations of at most this many rows, sending under its policy "
                        "after each (default 8)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds a worker process may take to answer (default 120)")
    p.add_argument("--no-real", action="store_true", help="skip the real processes")
    add_output_args(p, "perf/results/exchange.json")
    args = p.parse_args(argv)
    from engine.exchange.policies import POLICIES as known
    policies = [x.strip() for x in args.policies.split(",") if x.strip()]
    for x in policies:
        if x not in known:
            p.error(f"unknown policy {x!r}: expected one of {', '.join(sorted(known))}")
    log = progress(args.quiet)
    results = run_benchmark(nodes=args.nodes, batch=args.batch, seed=args.seed,
                            procs=[] if args.no_real else sorted(args.procs),
                            sim=[] if args.no_sim else sorted(args.sim), policies=policies, backend=args.backend,
                            op_rows=args.op_rows, timeout=args.timeout, log=log)
    save_results(results, args, plot, table=format_table(results) if args.quiet else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
