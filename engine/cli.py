"""The ``tfront`` command line: ``tfront replay FILE``, ``tfront psi FILE``, ``tfront info``,
``tfront wcc EDGES`` (the Spark WCC job, :mod:`spark_plugin.wcc`) and ``tfront progress LOG``
(draws a progress log of ``tfront wcc --progress-log``, :mod:`engine.progress_view`).

``replay`` applies a workload's batches one by one and prints the frontiers after each, in
the format of ``docs/formats.md`` (with ``--workers K``, on K simulated workers exchanging
progress updates, :mod:`engine.exchange`: the same output); ``psi`` prints the path-summary
closure of the workload's graph; ``info`` says which backend ``auto`` (or ``--backend``)
chooses here and why, with versions (also of PySpark, PyArrow and Java) and CUDA devices.
``tfront --version`` prints the package version.

``rollback FILE [--guard full|simple]`` prints the largest consistent rollback of a
``timely-rollback v1`` problem (:mod:`engine.rollback`, ``docs/rollback.md``); a malformed
file gives ``error: line N: ...`` and status 2.

Exit status: 0 success; 2 bad options (argparse) or bad input, with one message that names
the file and line; 130 interrupted (Ctrl-C: a message, no traceback); 141 when stdout was
closed early (``tfront replay FILE | head -1``): like a Unix tool killed by ``SIGPIPE``,
quietly, without an error message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Sequence

from .backend import Backend, make_tracker, resolve_backend
from .errors import TimelyFrontierError, ZeroAdvanceCycleError
from .workload import REPLAY_HEADER, read_workload, write_frontier_report, write_psi_report

__all__ = ["main", "EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED"]

#: Exit status when stdout is closed early (128 + SIGPIPE, what a shell reports for a tool
#: killed by SIGPIPE).
EXIT_BROKEN_PIPE = 141
#: Exit status on Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130

#: Spark master URLs ``--master`` accepts (their form only; Spark checks the rest).
_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?"
    r"|local-cluster\[[1-9][0-9]*, *[1-9][0-9]*, *[1-9][0-9]*\]"
    r"|yarn|spark://[^\s/]+(,[^\s/]+)*|(k8s|mesos)://\S+")
_MASTER_FORMS = ("local, local[N], local[*], local[N,F], local-cluster[N,C,M], "
                 "spark://HOST:PORT, yarn, k8s://URL or mesos://URL")

_WCC_INPUT = """\
input formats (EDGES):
  text (any other name; .gz decompressed): one edge 'src dst' per line, separated by white
    space or a comma; '#' starts a comment; blank lines are skipped.
  CSV (*.csv, *.csv.gz): fields separated by ',', ';' or a tab, optionally double-quoted;
    the first row is a header unless its first two fields are integers (then columns
    src,dst are used, else the first two); otherwise it is the first edge.
  Parquet (*.parquet, *.pq): integer columns src and dst.
  a directory: one epoch per file, in natural order of the names (e2 before e10; hidden
    and '_' files skipped); each epoch's line names its file.
  Vertex ids are non-negative int64. Bad input stops with the file and line named (exit
  2) before Spark starts where the first rows show it; an input without edges is refused.

Without --out the labels are computed but not saved (the total line says so).
exit status: 0 done, 2 bad option or input, 130 interrupted (Ctrl-C), 141 stdout closed.
"""


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


def _positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a positive number), got "
                                         f"{text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return v


def _master_url(text: str) -> str:
    if not _MASTER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Spark master URL; expected "
                                         f"{_MASTER_FORMS}")
    return text.strip()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tfront", description="Progress tracking for timely dataflow.")
    p.add_argument("--version", action="version",
                   version=f"tfront (timely-frontier) {_version('timely-frontier')}")
    sub = p.add_subparsers(dest="command", required=True)
    backends = [b.value for b in Backend]

    r = sub.add_parser("replay", help="replay a progress workload and print frontiers after each batch")
    r.add_argument("file", help="workload file (timely-reach v1)")
    r.add_argument("--sources", action="store_true", help="also print frontiers at output ports")
    r.add_argument("--backend", choices=backends, default=None,
                   help="implementation (default: $TFRONT_BACKEND or auto)")
    r.add_argument("--time", action="store_true", help="print one JSON timing line per batch on stderr")
    r.add_argument("--quiet", action="store_true", help="do not print frontiers")
    r.add_argument("--strict", action="store_true", help="reject a batch that leaves a count negative")
    r.add_argument("--allow-zero-cycles", action="store_true",
                   help="accept cycles that do not advance time (asynchronous loops)")
    r.add_argument("--workers", type=_positive_int, default=None, metavar="K",
                   help="replay on K simulated workers that exchange progress updates "
                        "(engine.exchange, docs/exchange.md); same output, safety checked at "
                        "every step")
    r.add_argument("--schedule-seed", type=int, default=None, metavar="S",
                   help="with --workers: seed of the random delivery order (default 0)")
    r.add_argument("--policy", choices=_policy_names(), default=None,
                   help="with --workers: the workers' sending policy (default all)")
    # --processes: the K workers as real processes (spark_plugin.exchange_procs; needs pyarrow)
    r.add_argument("--processes", action="store_true",
                   help="with --workers: run the K workers as K processes that exchange their "
                        "updates as Arrow IPC over loopback sockets (needs pyarrow); same output, "
                        "every worker's frontiers checked against a single tracker after each batch")
    r.add_argument("--worker-timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="with --processes: seconds a worker process may take to answer before it "
                        "is named as hung (default 60)")

    q = sub.add_parser("psi", help="print the path-summary closure of a workload's graph")
    q.add_argument("file", help="workload file (timely-reach v1); batches are ignored")
    q.add_argument("--backend", choices=backends, default=None,
                   help="implementation (default: $TFRONT_BACKEND or auto)")
    q.add_argument("--time", action="store_true", help="print closure timing as JSON on stderr")
    q.add_argument("--allow-zero-cycles", action="store_true",
                   help="accept cycles that do not advance time (asynchronous loops)")

    w = sub.add_parser("wcc", help="incremental weakly connected components on Spark (needs pyspark)",
                       epilog=_WCC_INPUT, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("edges", help="edge file (text, CSV, Parquet; see below) or directory of epoch files")
    w.add_argument("--epochs", type=_positive_int, default=None, metavar="K",
                   help="split a single edge file into K epochs (default 1; not for a directory)")
    w.add_argument("--out", default=None,
                   help="Parquet dataset to append epoch,vertex,component to (without it the "
                        "labels are not saved). A run on an existing OUT of the same job "
                        "resumes it: epochs already final there are skipped (docs/wcc.md)")
    w.add_argument("--overwrite", action="store_true",
                   help="remove the content of an existing --out and start from epoch 0")
    w.add_argument("--master", type=_master_url, default=None, metavar="URL",
                   help=f"Spark master URL (default local[*]): {_MASTER_FORMS}")
    w.add_argument("--partitions", type=_positive_int, default=None, metavar="P",
                   help="Spark partitions per round (default: cores)")
    w.add_argument("--backend", choices=[b.value for b in (Backend.AUTO, Backend.CPU, Backend.CUDA)],
                   default=None,
                   help="where the WCC kernels run, decided per task: cuda = each task's GPU where "
                        "usable, else the CPU (reason logged and printed); auto = the same for large "
                        "inputs; cpu = Numba kernels only. Also the driver's frontier-service backend "
                        "(cpu when the driver has no GPU). Default: $TFRONT_BACKEND or auto")
    w.add_argument("--checkpoint-dir", default=None,
                   help="checkpoint the Spark loop's stages reliably here (e.g. an HDFS path on a "
                        "cluster) instead of localCheckpoint")
    talk = w.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="print only warnings and errors (no progress bar, epoch lines or totals)")
    talk.add_argument("-v", "--verbose", action="count", default=0,
                      help="-v: also a line per round, which task ran which kernels, and Spark's "
                           "warnings; -vv: also debug output and Spark's INFO log")
    w.add_argument("--follow", type=_positive_seconds, nargs="?", const=float("inf"), default=None,
                   metavar="IDLE",
                   help="consume the directory EDGES as a stream: new files become epochs as they "
                        "appear, until a _DONE file exists (or IDLE seconds pass without a new file). "
                        "A file is taken once its size is unchanged over one 0.5 s poll (Parquet: "
                        "once it has its footer); a taken file that changes stops the job. Write "
                        "each file under a hidden or _ name and rename it when complete. Ctrl-C "
                        "stops (exit 130)")
    w.add_argument("--progress-log", default=None, metavar="FILE",
                   help="record every frontier change at every operator input (time, epoch, "
                        "iteration, Spark job) and the messages in flight in FILE, one JSON "
                        "object per line, flushed as the job runs; draw it with tfront progress")
    w.add_argument("--driver-memory", type=_memory_size, default=None, metavar="SIZE",
                   help="heap of the Spark driver JVM, e.g. 8g (default: 35%% of this machine's "
                        "memory, at least 1g; embedded Spark runs its tasks there too). Under "
                        "spark-submit, pass spark-submit --driver-memory instead")
    w.add_argument("--conf", type=_conf_pair, action="append", default=None, metavar="KEY=VALUE",
                   help="a Spark setting (repeatable), e.g. --conf spark.executor.memory=4g; wins "
                        "over the defaults and over spark-submit's settings")

    g = sub.add_parser("progress", help="draw a progress log (tfront wcc --progress-log) as a "
                                        "PNG and/or a live HTML page")
    g.add_argument("log", help="progress log (JSON Lines) written by tfront wcc --progress-log")
    g.add_argument("--png", default=None, metavar="OUT.png",
                   help="draw the timeline here (needs matplotlib: pip install "
                        "'timely-frontier[plot]')")
    g.add_argument("--html", default=None, metavar="OUT.html",
                   help="write a self-contained page with the timeline here; while the job runs "
                        "the page reloads itself every few seconds")
    g.add_argument("--watch", action="store_true",
                   help="keep redrawing --png/--html as the log grows, until the job ends")
    g.add_argument("--interval", type=_positive_seconds, default=1.0, metavar="SECONDS",
                   help="how often --watch looks at the log (default 1)")

    rb = sub.add_parser("rollback", help="the largest consistent rollback of a problem (timely-rollback v1)")
    rb.add_argument("file", help="rollback problem file (timely-rollback v1)")
    rb.add_argument("--guard", choices=["full", "simple"], default="full",
                    help="full: the guards of RollbackL (C1-C5); simple: section 7.4's guard with fc "
                         "(default full)")

    i = sub.add_parser("info", help="show the backend chosen here and why, versions and CUDA devices")
    i.add_argument("--backend", choices=backends, default=None,
                   help="backend to resolve (default: $TFRONT_BACKEND or auto)")
    i.add_argument("--workload", default=None, metavar="FILE",
                   help="also say which propagation strategy the backend picks for this "
                        "workload's graph, and the cost estimates behind the choice")
    return p


def _progress(args) -> int:
    """``tfront progress LOG``: summarise the log; draw it (``--png``, ``--html``), once or,
    with ``--watch``, every time it grows until the job ends."""
    from .progress_view import read_progress, render_html, render_png, summary_lines, watch

    if args.watch:
        def show(run):
            print(summary_lines(run)[0], flush=True)

        try:
            run = watch(args.log, html=args.html, png=args.png, interval=args.interval,
                        on_update=show)
        except KeyboardInterrupt:
            print("tfront progress: stopped watching", file=sys.stderr)
            return 130
    else:
        run = read_progress(args.log)
        if args.html is not None:
            render_html(run, args.html)
        if args.png is not None:
            render_png(run, args.png)
    for line in summary_lines(run)[1 if args.watch else 0:]:
        print(line)
    for what, path in (("page", args.html), ("picture", args.png)):
        if path is not None:
            print(f"{what}: {path}")
    return 0


def _memory_size(text: str) -> str:
    """``--driver-memory``: a JVM memory size such as ``512m`` or ``8g``."""
    t = text.strip().lower()
    if len(t) < 2 or t[-1] not in "kmgt" or not t[:-1].isdigit() or int(t[:-1]) == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a memory size: a whole number with a unit k, m, g or t (e.g. 8g)")
    return t


def _conf_pair(text: str) -> tuple[str, str]:
    """``--conf KEY=VALUE``: a Spark setting (the key must start with ``spark.``)."""
    key, eq, value = text.partition("=")
    key = key.strip()
    if not eq or not key.startswith("spark.") or len(key) <= len("spark."):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE with a Spark key (e.g. spark.executor.memory=4g)")
    return key, value.strip()


def _policy_names() -> list[str]:
    from .exchange import POLICIES
    return list(POLICIES)


def _replay(args) -> int:
    workload = read_workload(args.file, allow_zero_cycles=args.allow_zero_cycles)
    if args.processes:
        return _replay_processes(args, workload)
    if args.workers is not None:
        return _replay_workers(args, workload)
    tracker = make_tracker(workload.graph, args.backend, strict=args.strict,
                           batch_hint=_median_batch(workload))
    kernels = getattr(tracker, "kernels", None)
    if args.time and kernels is not None:
        from .batched import warm_up
        warm_up(workload.graph.m, workload.graph.max_depth, kernels)
    out = sys.stdout
    if not args.quiet:
        out.write(REPLAY_HEADER + "\n")
    for k, batch in enumerate(workload.batches):
        try:
            apply = getattr(tracker, "update_arrays", tracker.update)
            apply(batch.loc, batch.ts, batch.diff)
        except TimelyFrontierError as e:
            raise type(e)(f"batch {k} (line {batch.line}): {e}") from e
        if args.time:
            t = tracker.last_timing
            apply_ms, prop_ms = t["apply_s"] * 1e3, t["propagate_s"] * 1e3
            device = {c: t[c] for c in ("launches", "ops", "syncs", "allocs") if c in t}
            print(json.dumps({"batch": k, "changes": len(batch.loc), "apply_ms": round(apply_ms, 3),
                              "propagate_ms": round(prop_ms, 3),
                              "total_ms": round(apply_ms + prop_ms, 3), **device}),
                  file=sys.stderr)
        if not args.quiet:
            write_frontier_report(out, workload, k, tracker.frontier, sources=args.sources)
    return 0


def _replay_workers(args, workload) -> int:
    """``tfront replay FILE --workers K``: each batch split among K simulated workers
    (:func:`engine.exchange.split_batch`), every transition taken in a seeded random order with
    the safety properties checked after each, then the system run to quiescence and worker 0's
    frontiers printed -- after checking that every worker's equal the true ones."""
    from .exchange import Exchange
    ex = Exchange(workload.graph, args.workers, policy=args.policy or "all",
                  backend=args.backend, seed=args.schedule_seed or 0, check=True,
                  strict=args.strict)
    out = sys.stdout
    if not args.quiet:
        out.write(REPLAY_HEADER + "\n")
    for k, batch in enumerate(workload.batches):
        start = time.perf_counter()
        before = ex.stats
        try:
            ex.run(batch.loc, batch.ts, batch.diff)
            ex.check_agreement()
        except TimelyFrontierError as e:
            raise type(e)(f"batch {k} (line {batch.line}): {e}") from e
        if args.time:
            after = ex.stats
            print(json.dumps({"batch": k, "changes": len(batch.loc),
                              "total_ms": round((time.perf_counter() - start) * 1e3, 3),
                              **{key: after[key] - before[key] for key in after}}),
                  file=sys.stderr)
        if not args.quiet:
            write_frontier_report(out, workload, k, ex.workers[0].frontier, sources=args.sources)
    return 0


def _replay_processes(args, workload) -> int:
    """``tfront replay FILE --workers K --processes``: the batches on K worker processes
    (:class:`spark_plugin.exchange_procs.ProcessExchange`), each run to quiescence and every
    worker's frontiers checked against a single tracker's; worker 0's printed. ``--time``
    writes each batch's traffic and latency (:class:`~spark_plugin.exchange_procs.BatchReport`)
    as one JSON line on stderr."""
    try:
        from spark_plugin.exchange_procs import ProcessExchange
    except ImportError as e:
        from .errors import DependencyError
        raise DependencyError(f"--processes needs pyarrow (pip install 'timely-frontier[spark]'): "
                              f"{e}") from None
    options = {} if args.worker_timeout is None else {"timeout": args.worker_timeout}
    out = sys.stdout
    with ProcessExchange(workload.graph, args.workers, policy=args.policy or "all",
                         backend=args.backend, oracle=args.backend, **options) as ex:
        if not args.quiet:
            out.write(REPLAY_HEADER + "\n")
        for k, batch in enumerate(workload.batches):
            report = ex.run_batch(batch.loc, batch.ts, batch.diff)
            if args.time:
                print(json.dumps(report.as_dict()), file=sys.stderr)
            if not args.quiet:
                write_frontier_report(out, workload, k, ex.last_frontiers[0].__getitem__,
                                      sources=args.sources)
    return 0


def _psi(args) -> int:
    workload = read_workload(args.file, allow_zero_cycles=args.allow_zero_cycles)
    backend, _why = resolve_backend(args.backend)
    if args.time and backend in (Backend.CPU, Backend.CUDA):
        from .batched import warm_up
        warm_up(workload.graph.m, workload.graph.max_depth)
    start = time.perf_counter()
    if backend in (Backend.CPU, Backend.CUDA):  # Psi is computed on the host for both
        from .psi import compute_psi
        row = compute_psi(workload.graph).row
    else:  # reference, and timely (which has no Psi of its own): the reference closure
        from .closure import closure_row
        rows = {l: closure_row(workload.graph, l) for l in range(workload.graph.num_locations)}
        row = rows.__getitem__
    ms = (time.perf_counter() - start) * 1e3
    stats = write_psi_report(sys.stdout, workload, row)
    if args.time:
        print(json.dumps({"closure_ms": round(ms, 3), **stats}), file=sys.stderr)
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _java_version() -> str:
    """The Java that Spark would use (``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``):
    its ``-version`` line and path, or why there is none."""
    import shutil
    import subprocess

    home = os.environ.get("JAVA_HOME")
    java = shutil.which(os.path.join(home, "bin", "java") if home else "java")
    if java is None:
        return ("not found (" + (f"no bin/java under JAVA_HOME={home}" if home else
                                 "no java on PATH, JAVA_HOME unset") + "; Spark needs Java 17+)")
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unusable ({java}: {e})"
    m = re.search(r'version "([^"]+)"', proc.stderr + proc.stdout)
    return f"{m.group(1) if m else 'unknown version'} ({java})"


def _info(args) -> int:
    """Print the chosen backend and the reason, versions, and CUDA devices."""
    import os
    import platform

    from .cuda_backend import device_report
    out = sys.stdout
    status = 0
    try:
        backend, why = resolve_backend(args.backend)
        out.write(f"backend: {backend.value}\nreason: {why}\n")
    except TimelyFrontierError as e:
        out.write(f"backend: none\nreason: {e}\n")
        status = 2
    if args.workload is not None and status == 0:
        _info_strategy(out, args.workload, backend)
    out.write("versions:\n")
    out.write(f"  python {platform.python_version()}\n")
    for dist in ("timely-frontier", "numpy", "numba", "numba-cuda", "cupy-cuda12x",
                 "cupy-cuda13x", "cupy", "rmm-cu12", "rmm-cu13", "rmm", "pyspark", "pyarrow"):
        v = _version(dist)
        if v != "not installed" or dist in ("timely-frontier", "numpy", "numba", "numba-cuda",
                                            "cupy-cuda12x", "pyspark", "pyarrow"):
            out.write(f"  {dist} {v}\n")
    out.write(f"  java {_java_version()}\n")
    from gpu_kernels._cuda import NUMPY_ALIASES
    if NUMPY_ALIASES:
        out.write(f"compatibility: restored {', '.join(NUMPY_ALIASES)} (removed from NumPy "
                  f"{_version('numpy')}, still used by numba-cuda {_version('numba-cuda')})\n")
    out.write(f"CUDA_VISIBLE_DEVICES: {os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}\n")
    out.write("devices:\n")
    for line in device_report():
        out.write(f"  {line}\n")
    return status


def _median_batch(workload) -> int:
    """Rows of the workload's median batch (0 for none): the batch size ``auto`` plans for."""
    sizes = sorted(len(b.loc) for b in workload.batches)
    return sizes[len(sizes) // 2] if sizes else 0


def _info_strategy(out, path: str, backend: Backend) -> None:
    """The propagation strategy ``auto`` takes for a workload's graph on ``backend``, and why."""
    from .cost import choose_strategy
    from .graph_arrays import GraphArrays
    workload = read_workload(path)
    if backend not in (Backend.CPU, Backend.CUDA):
        out.write(f"strategy: none ({backend.value} has no propagation strategies)\n")
        return
    ga = GraphArrays.from_graph(workload.graph)
    choice = choose_strategy(ga, on_device=backend is Backend.CUDA)
    out.write(f"strategy: {choice.strategy}\nstrategy reason: {choice.reason}\n")
    if backend is Backend.CPU:  # what a GPU would change, for planning
        gpu = choose_strategy(ga, on_device=True)
        out.write(f"strategy on cuda: {gpu.strategy} ({gpu.reason})\n")
    from .cost import choose_backend
    pick = choose_backend(ga, _median_batch(workload))
    out.write(f"backend auto would take with a GPU: {pick.backend} ({pick.reason})\n")


def _rollback(args) -> int:
    """``tfront rollback FILE``: print the answer; ``error: line N: ...`` and status 2 for a
    malformed file (the answer format of docs/rollback.md)."""
    from .errors import RollbackFormatError
    from .rollback import format_answer, read_rollback, solve
    try:
        problem = read_rollback(args.file)
    except RollbackFormatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(format_answer(problem, solve(problem, args.guard)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfront`` console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "progress" and args.watch and args.html is None and args.png is None:
        parser.error("progress --watch needs --html and/or --png to redraw")
    if args.command == "replay" and args.workers is None:
        for flag, value in (("--schedule-seed", args.schedule_seed), ("--policy", args.policy)):
            if value is not None:
                parser.error(f"replay {flag} needs --workers")
    if args.command == "replay" and args.processes:
        if args.workers is None:
            parser.error("replay --processes needs --workers K")
        if args.schedule_seed is not None:
            parser.error("replay --schedule-seed is for the simulated workers: with --processes "
                         "the operating system schedules them")
    elif args.command == "replay" and args.worker_timeout is not None:
        parser.error("replay --worker-timeout needs --processes")
    if args.command == "wcc" and args.overwrite and args.out is None:
        parser.error("wcc --overwrite needs --out")
    try:
        if args.command == "info":
            status = _info(args)
        elif args.command == "rollback":
            status = _rollback(args)
        elif args.command == "wcc":
            if not os.path.exists(args.edges):   # a typo: before importing the Spark side
                raise FileNotFoundError(f"edge input {args.edges!r} does not exist")
            from spark_plugin.wcc import main_wcc  # imports pyspark only on this path
            status = main_wcc(args)
        elif args.command == "progress":
            status = _progress(args)
        else:
            status = _replay(args) if args.command == "replay" else _psi(args)
        sys.stdout.flush()   # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, like a tool killed by SIGPIPE.
        # Python would flush stdout again at exit and report the error: point it at devnull.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"tfront {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (TimelyFrontierError, OSError) as e:
        print(f"tfront {args.command}: error: {_for_cli(e)}", file=sys.stderr)
        return 2


def _for_cli(e: BaseException) -> str:
    """The error's message, with the API's advice turned into the command line's."""
    text = str(e)
    if isinstance(e, ZeroAdvanceCycleError) or isinstance(e.__cause__, ZeroAdvanceCycleError):
        text = text.replace("pass allow_zero_cycles=True", "pass --allow-zero-cycles")
    return text


if __name__ == "__main__":
    sys.exit(main())
