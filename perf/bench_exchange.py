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

    python -m perf.bench_exchange --targets issue --cli --plot docs/img/exchange.png   # minutes
    python -m perf.bench_exchange --procs 2 --sim 2,4 --nodes 20 --batch 10   # seconds
    python -m perf.bench_exchange --no-sim --no-real --targets FILE --target-workers 4,32

``--targets`` (issue 25's targets) times the replay of workload files -- ``issue``: the two
workloads of the issue, written by :func:`issue_workloads` -- with the single tracker and on
``--target-workers`` simulated workers (the path of ``tfront replay --workers K``: rounds,
checked once per batch), side by side in one process, every worker's frontiers checked
against the single tracker's; each run keeps its per-phase breakdown (``phases``: split,
perform, build, deliver, tracker, check, schedule; :mod:`engine.exchange.phases`). ``--cli``
adds the wall time of each whole ``tfront replay`` command, start-up and parsing included.

Data traffic is a model beside the measured progress traffic: every positive count change at
a target is a record of ``--record-bytes`` (default 16) put on a channel, and crosses to
another worker with probability ``(K - 1) / K``; ``progress_to_data`` is the delivered
progress bytes over that (timely's issue 190 measured 0.46 at 4 workers).

How to read the output
----------------------
One row per (mode, K, policy). The JSON file (``--out``, default perf/results/exchange.json)
holds ``commit``, ``dirty``, ``machine`` (CPU count: K processes share those cores, so real
latencies at K > cores measure time-sharing as much as the protocol), ``parameters``,
``workload`` (graph size, changes per batch), ``reference`` (the timely figures and their
source), ``runs`` (per batch: mode, K, policy, the counts and times) and ``cases`` (per
configuration: totals, per-data-change figures, ``vs_all``, start-up time).
``--plot FILE.png`` draws delivered pointstamps and bytes per data change against K (log-log,
one line per mode and policy, timely's 32 workers marked), the real processes' latency, and
progress bytes over the data-traffic model beside timely's figures. ``targets`` (with
``--targets``) holds per workload the single tracker's time and, per K, the time, ratio,
rounds, traffic and phases.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from perf.common import (add_output_args, commit_info, commit_label, figure, int_list, machine,
                         progress, save_results)
from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph

__all__ = ["main", "run_benchmark", "run_targets", "issue_workloads", "data_records",
           "format_table", "format_targets", "plot", "POLICIES", "TIMELY_REFERENCE"]

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
    every update is received, each worker's as one batch (:meth:`Exchange.deliver_all`).
    (``Exchange.quiesce`` draws a random interleaving of rounds instead.)"""
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
        if len(ex.data[r][0]):
            ex.workers[r].receive_data(*ex.data[r])
            ex.data[r] = (ex.data[r][0][:0], ex.data[r][1][:0], ex.data[r][2][:0])
    for w in range(ex.K):
        update = settle(ex.workers[w])
        if update is not None:
            for r in range(ex.K):
                ex.msg[(w, r)].append(update)
    ex.deliver_all()        # every worker takes its queues as one columnar batch
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
    case = _summarise("sim", K, policy, runs)
    case["phases"] = ex.phases.report()
    return case, runs


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


def data_records(graph, batches) -> int:
    """Data records the workload stands for: the positive count changes at targets (operator
    inputs), each a message put in flight on a channel."""
    from engine.core.graph import PortKind
    is_target = np.array([l.kind is PortKind.TARGET for l in graph.locations], bool)
    return int(sum(int(diff[(diff > 0) & is_target[np.asarray(loc)]].sum())
                   for loc, _ts, diff in batches))


def _add_data_bytes(case: dict, records: int, record_bytes: int) -> None:
    """The data traffic model beside the progress traffic: each record of ``record_bytes``
    crosses to another worker with probability ``(K - 1) / K`` (an exchange on a uniform
    key, as in timely's data channels)."""
    K = case["workers"]
    data = records * record_bytes * (K - 1) / K
    case["data_bytes"] = data
    case["progress_to_data"] = case["totals"]["delivered_bytes"] / data if data else None
    if "wire_bytes" in case["totals"]:
        case["wire_to_data"] = case["totals"]["wire_bytes"] / data if data else None


def run_benchmark(*, nodes: int, batch: int, seed: int, procs: Sequence[int],
                  sim: Sequence[int], policies: Sequence[str], backend: str = "cpu",
                  op_rows: int | None = 8, timeout: float = 120.0, record_bytes: int = 16,
                  log=print) -> dict:
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
                              "timeout": timeout, "record_bytes": record_bytes},
               "workload": {"locations": graph.num_locations, "batches": len(batches),
                            "changes": [len(b[0]) for b in batches],
                            "data_records": data_records(graph, batches)},
               "reference": TIMELY_REFERENCE, "runs": [], "cases": []}
    for K in sim:
        for policy in policies:
            start = time.perf_counter()
            case, runs = _sim_case(graph, batches, K, policy, backend, seed, oracle, op_rows)
            case["wall_s"] = time.perf_counter() - start
            _add_data_bytes(case, results["workload"]["data_records"], record_bytes)
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
                _add_data_bytes(case, results["workload"]["data_records"], record_bytes)
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


def issue_workloads(directory) -> list[Path]:
    """The two workloads of issue 25's table, written to ``directory``: the adversarial
    shapes (``perf.workloads --nodes 200 --adversarial --seed 7``: 9,178 lines, 26 batches)
    and the synthetic N=600 one with 5,000-change batches (``--nodes 600 --batch 5000
    --seed 1``: 420 KB)."""
    from perf.workloads import adversarial_batches, generate_batches, generate_graph, write_workload
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    spec = generate_graph(200, 7)
    path = directory / "adversarial-n200-s7.txt"
    write_workload(path, spec, adversarial_batches(spec, 7))
    out.append(path)
    spec = generate_graph(600, 1)
    path = directory / "synthetic-n600-b5000-s1.txt"
    write_workload(path, spec, generate_batches(spec, 5000, 1))
    out.append(path)
    return out


def run_targets(paths: Sequence, workers: Sequence[int], *, policies: Sequence[str] = ("all",),
                seed: int = 11, backend: str = "cpu", repeat: int = 1, cli: bool = False,
                log=print) -> list[dict]:
    """Issue 25's targets: replay each workload file with the single tracker and on ``K``
    simulated workers (``tfront replay --workers K``'s path: :class:`Exchange` in rounds,
    checked once per batch), side by side in this process (parsing excluded, kernels loaded
    first, variants interleaved ``repeat`` times; the minimum is kept), every worker's
    frontiers checked equal to the single tracker's after every batch. Each worker run keeps
    its phase breakdown (:attr:`Exchange.phases`). With ``cli``, the same commands also run
    once each as ``tfront replay FILE --quiet [--workers K]`` processes (wall time of the
    whole command, start-up and parsing included, as the issue measured)."""
    import engine
    from engine.core.workload import read_workload
    from engine.exchange.simulation import Exchange, frontier_table, warm_up
    from perf.common import repo_path

    warm_up()
    rows = []
    for path in paths:
        wl = read_workload(path)
        g = wl.graph
        lines = sum(1 for _ in open(path))
        times: dict[str, list[float]] = {"single": []}
        runs: dict[str, dict] = {}
        for _ in range(repeat):
            start = time.perf_counter()
            single = engine.make_tracker(g, backend)
            want = []
            for b in wl.batches:
                getattr(single, "update_arrays", single.update)(b.loc, b.ts, b.diff)
                want.append(frontier_table(single, g))
            times["single"].append(time.perf_counter() - start)
            for policy in policies:
                for K in workers:
                    key = f"{K}:{policy}"
                    start = time.perf_counter()
                    ex = Exchange(g, K, policy=policy, backend=backend, seed=seed, check="batch")
                    for k, b in enumerate(wl.batches):
                        ex.run(b.loc, b.ts, b.diff)     # checks Safe, Mono, agreement
                        got = frontier_table(ex.workers[0].tracker, g)
                        if not (np.array_equal(got[0], want[k][0])
                                and np.array_equal(got[1], want[k][1])):
                            raise AssertionError(f"{path}: K={K} {policy}: worker 0's frontiers "
                                                 f"differ from the single tracker's after batch {k}")
                    times.setdefault(key, []).append(time.perf_counter() - start)
                    runs[key] = {"rounds": ex.rounds, "steps": ex.clock,
                                 "phases": ex.phases.report(), **_sim_stats(ex)}
        single_s = min(times["single"])
        row = {"workload": repo_path(path) if Path(path).is_absolute() else str(path),
               "lines": lines, "batches": len(wl.batches),
               "changes": int(sum(len(b.loc) for b in wl.batches)),
               "locations": g.num_locations, "single_s": single_s, "single_all_s": times["single"],
               "workers": []}
        for policy in policies:
            for K in workers:
                key = f"{K}:{policy}"
                t = min(times[key])
                row["workers"].append({"workers": K, "policy": policy, "s": t, "all_s": times[key],
                                       "ratio": t / single_s, "equal": True, **runs[key]})
        if cli:
            row["cli"] = _cli_times(path, workers, backend)
        rows.append(row)
        log(format_targets([row]))
    return rows


def _cli_times(path, workers: Sequence[int], backend: str) -> dict:
    import subprocess

    from perf.common import ROOT, child_env

    def run(*extra) -> float:
        cmd = [sys.executable, "-c", "import sys; from engine.cli.main import main; "
               "sys.exit(main())", "replay", str(path), "--quiet", "--backend", backend, *extra]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    out = {"single_s": run()}
    for K in workers:
        out[f"workers_{K}_s"] = run("--workers", str(K), "--schedule-seed", "11")
        out[f"workers_{K}_ratio"] = out[f"workers_{K}_s"] / out["single_s"]
    return out


def format_targets(rows: list) -> str:
    """The target table: workload, single tracker, each K, ratios."""
    out = []
    for r in rows:
        parts = [f"{r['workload']} ({r['lines']} lines, {r['batches']} batches): single "
                 f"{r['single_s']:.3f} s"]
        for w in r["workers"]:
            parts.append(f"K={w['workers']} {w['policy']} {w['s']:.3f} s ({w['ratio']:.1f}x, "
                         f"{w['rounds']} rounds)")
        if "cli" in r:
            c = r["cli"]
            parts.append("commands: single " + f"{c['single_s']:.2f} s, " + ", ".join(
                f"K={k.split('_')[1]} {v:.2f} s" for k, v in c.items()
                if k.startswith("workers_") and k.endswith("_s")))
        out.append("; ".join(parts))
    return "\n".join(out)


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
            f"{c['delivered_bytes_per_change']:9.1f}  progress/data "
            f"{c.get('progress_to_data') or 0:6.2f}{extra}")


def format_table(results: dict) -> str:
    return "\n".join(_row(c) for c in results["cases"])


def plot(results: dict, path) -> None:
    with figure(path, dpi=100, ncols=4, figsize=(20, 4.8)) as (fig, axes):
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
        ax = axes[3]
        for mode in ("sim", "real"):
            for policy in results["parameters"]["policies"]:
                cs = [c for c in results["cases"] if c["mode"] == mode and c["policy"] == policy
                      and c.get("progress_to_data")]
                if cs:
                    ax.plot([c["workers"] for c in cs], [c["progress_to_data"] for c in cs],
                            styles[mode] + (markers.get(policy, "x") if mode == "real" else ""),
                            color=colors.get(policy), label=f"{mode} {policy}")
        ref = TIMELY_REFERENCE["workers_4x1"]
        ax.plot([4], [ref["progress_bytes"] / ref["data_bytes"]], "*", color="red", ms=12,
                label="timely #190, 4 workers (measured)")
        ax.annotate("timely #190: above data\nat 32 workers (reported)", xy=(32, 1.0),
                    xytext=(6, 3.0), color="red", fontsize=7,
                    arrowprops={"arrowstyle": "->", "color": "red"})
        ax.axhline(1.0, color="red", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("workers K")
        ax.set_ylabel(f"progress bytes / data bytes ({results['parameters'].get('record_bytes', 16)} B "
                      f"records, (K-1)/K cross)")
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
    p.add_argument("--record-bytes", type=int, default=16,
                   help="bytes of one data record in the data-traffic model (default 16)")
    p.add_argument("--targets", default=None, metavar="FILES",
                   help="also time the replay of these workload files (comma-separated; "
                        "'issue' writes and uses the two workloads of issue 25) with the single "
                        "tracker and on --target-workers simulated workers, with the phase "
                        "breakdown")
    p.add_argument("--target-workers", type=int_list, default=[4, 32],
                   help="simulated workers for --targets (default 4,32)")
    p.add_argument("--target-policies", default="all",
                   help="sending policies for --targets, comma-separated (default all)")
    p.add_argument("--repeat", type=int, default=1,
                   help="--targets: interleaved repetitions, the minimum kept (default 1)")
    p.add_argument("--cli", action="store_true",
                   help="--targets: also time each as a whole tfront replay command")
    add_output_args(p, "perf/results/exchange.json")
    args = p.parse_args(argv)
    from engine.exchange.policies import POLICIES as known
    policies = [x.strip() for x in args.policies.split(",") if x.strip()]
    for x in policies:
        if x not in known:
            p.error(f"unknown policy {x!r}: expected one of {', '.join(sorted(known))}")
    target_policies = [x.strip() for x in args.target_policies.split(",") if x.strip()]
    for x in target_policies:
        if x not in known:
            p.error(f"unknown policy {x!r} in --target-policies: expected one of "
                    f"{', '.join(sorted(known))}")
    log = progress(args.quiet)
    results = run_benchmark(nodes=args.nodes, batch=args.batch, seed=args.seed,
                            procs=[] if args.no_real else sorted(args.procs),
                            sim=[] if args.no_sim else sorted(args.sim), policies=policies, backend=args.backend,
                            op_rows=args.op_rows, timeout=args.timeout,
                            record_bytes=args.record_bytes, log=log)
    if args.targets:
        if args.targets == "issue":
            import tempfile
            paths = issue_workloads(tempfile.mkdtemp(prefix="tfront-exchange-"))
        else:
            paths = [Path(x.strip()) for x in args.targets.split(",") if x.strip()]
            for path in paths:
                if not path.is_file():
                    p.error(f"--targets: no workload file {str(path)!r}")
        results["parameters"].update(targets=[str(x) for x in paths],
                                     target_workers=list(args.target_workers),
                                     target_policies=target_policies, repeat=args.repeat)
        results["targets"] = run_targets(paths, args.target_workers, policies=target_policies,
                                         seed=11, backend=args.backend, repeat=args.repeat,
                                         cli=args.cli, log=log)
    table = format_table(results)
    if results.get("targets"):
        table += ("\n" if table else "") + format_targets(results["targets"])
    save_results(results, args, plot, table=table if args.quiet else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
