"""The ``tfront`` command line: ``tfront replay FILE``, ``tfront psi FILE``, ``tfront info``,
``tfront progress LOG`` (draws a progress log of ``tfront wcc --progress-log``,
:mod:`engine.operate.progress_view`), and the commands other packages add (``tfront wcc EDGES``, the
Spark WCC job: :mod:`spark_plugin.jobs.wcc.cli`).

The engine does not import those packages: a command of another package is an entry point of
the group :data:`COMMANDS_GROUP` (``tfront.commands``), named after the command, whose object
``add(subparsers)`` adds the command's parser and sets its default ``run`` to a function
``run(args, parser) -> int`` (the exit status; ``parser`` is ``tfront``'s).
:func:`plugin_commands` loads them. When a command's package cannot be imported (its extra,
e.g. ``spark``, is not installed), the command still exists and says so: ``tfront wcc ...``
prints ``tfront wcc: error: ...`` naming the missing module and the ``pip install`` that
provides it, exit status 2.

``replay`` applies a workload's batches one by one and prints the frontiers after each, in
the format of ``docs/formats.md`` (with ``--workers K``, on K simulated workers exchanging
progress updates, :mod:`engine.exchange.simulation`: the same output); ``psi`` prints the path-summary
closure of the workload's graph (refusing, before computing it, one of more than
``--max-summaries`` summaries: :func:`engine.batched.psi.check_psi_size`); both refuse a
workload declaring more than ``--max-locations`` ports (:data:`engine.core.workload.MAX_LOCATIONS`); ``info`` says which backend ``auto`` (or ``--backend``)
chooses here and why, with versions (also of PySpark, PyArrow and Java) and CUDA devices.
``tfront --version`` prints the package version.

``rollback FILE [--guard full|simple] [--solver auto|reference|batched] [--backend
auto|cpu|cuda] [--max-states N] [--max-choices N] [--max-search N]`` prints the largest
consistent rollback of a ``timely-rollback v1`` problem (:mod:`engine.rollback.problem`, read
by :mod:`engine.rollback.format`, ``docs/rollback.md``); a malformed file (or one past a
limit) gives ``error: line N: ... (in FILE)`` (the line ``timely-rollback v1`` fixes) and status 2. Both solvers print the same answer
(both assemble it with :func:`engine.rollback.problem.decide`); ``auto`` takes the batched one
for all but tiny problems (:func:`engine.rollback.batched.choose_solver`), on the backend
``--backend`` picks.

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

from engine.batched.backend import Backend, make_tracker, resolve_backend
from engine.batched.psi import MAX_SUMMARIES
from engine.errors import (DependencyError, RollbackFormatError, TimelyFrontierError,
                           ZeroAdvanceCycleError)
from engine.core.workload import (MAX_LOCATIONS, REPLAY_HEADER, read_workload,
                                  write_frontier_report, write_psi_report)

__all__ = ["main", "Parser", "plugin_commands", "positive_int", "positive_seconds", "COMMANDS_GROUP",
           "RUNNERS_GROUP", "EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED"]

#: Exit status when stdout is closed early (128 + SIGPIPE, what a shell reports for a tool
#: killed by SIGPIPE).
EXIT_BROKEN_PIPE = 141
#: Exit status on Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: The entry-point group of the commands other packages add to ``tfront``.
COMMANDS_GROUP = "tfront.commands"
#: Entry-point group of the runners of ``tfront replay``'s ``--processes`` (name ``processes``).
RUNNERS_GROUP = "tfront.replay_runners"
#: The commands defined here (the others are loaded only when asked for, or for help).
BUILTIN_COMMANDS = ("replay", "psi", "progress", "rollback", "info")


def positive_int(text: str) -> int:
    """An argparse type: a positive integer (``--partitions``, ``--epochs``)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {v}")
    return v


def positive_seconds(text: str) -> float:
    """An argparse type: a positive number of seconds (``--interval``, ``--follow``)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (a positive number), got "
                                         f"{text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return v


def plugin_commands(sub) -> list[str]:
    """Add the commands of the entry points of :data:`COMMANDS_GROUP` to ``sub`` (the
    ``tfront`` parser's subparsers), in the order of their names; returns the names.

    An entry point whose object cannot be imported becomes a command of its name that
    accepts any arguments and fails with :class:`~engine.errors.DependencyError` (exit
    status 2) naming the missing module and the extra of the distribution that requires it
    (``pip install 'timely-frontier[spark]'``).

    Run from a source checkout that is not installed (``python -m engine.cli.main`` with the
    checkout on ``PYTHONPATH``, as on a GPU host without a package index), there are no
    entry points: the commands are then those the checkout's ``pyproject.toml`` declares."""
    from importlib.metadata import entry_points

    names = []
    found = list(entry_points(group=COMMANDS_GROUP)) or _checkout_entry_points(COMMANDS_GROUP)
    for ep in sorted(found, key=lambda e: e.name):
        if ep.name in sub.choices:   # a name already taken: the first one wins
            continue
        try:
            add = ep.load()
        except ImportError as e:
            _unavailable(sub, ep, e)
        else:
            add(sub)
        names.append(ep.name)
    return names


def _checkout_entry_points(group: str) -> list:
    """The entry points of ``group`` that the source checkout's ``pyproject.toml`` declares
    (none when ``engine`` is not imported from a checkout that has one)."""
    import tomllib
    from importlib.metadata import EntryPoint
    from pathlib import Path

    toml = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        with open(toml, "rb") as f:
            declared = tomllib.load(f).get("project", {}).get("entry-points", {}).get(group, {})
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return [EntryPoint(name, value, group) for name, value in declared.items()]


def _unavailable(sub, ep, err: ImportError) -> None:
    """The command ``ep.name`` whose package does not import: it says so when run."""
    why = (f"the {ep.name} command cannot run here: {err}; {_install_hint(ep, err.name)}")
    u = sub.add_parser(ep.name, help=f"unavailable here ({err})", add_help=False)
    u.add_argument("rest", nargs=argparse.REMAINDER)

    def run(args, parser) -> int:
        raise DependencyError(why)

    u.set_defaults(run=run)


def _install_hint(ep, missing: str | None) -> str:
    """``pip install 'DIST[EXTRA]'`` for the extra of ``ep``'s distribution that requires the
    module ``missing`` (``pyarrow`` -> ``timely-frontier[spark]``), else ``pip install
    MISSING``."""
    top = (missing or "").partition(".")[0]
    dist = getattr(ep, "dist", None)
    norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()   # noqa: E731 -- PEP 503 names
    for req in (getattr(dist, "requires", None) or []):
        m = re.match(r"\s*([A-Za-z0-9._-]+).*;.*extra\s*==\s*[\"']([^\"']+)[\"']", req)
        if m and top and norm(m.group(1)) == norm(top):
            return f"install its extra: pip install '{dist.name}[{m.group(2)}]'"
    return f"pip install {top}" if top else "reinstall the package that provides it"


class Parser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` that takes options only as written: no
    abbreviations (``allow_abbrev=False``; ``--overwrit`` is an error, not ``--overwrite``).
    ``tfront``'s parser is one, and so is every command's -- subparsers are made of their
    parent's class, the commands of other packages' too."""

    def __init__(self, *args, allow_abbrev: bool = False, **kwargs):
        super().__init__(*args, allow_abbrev=allow_abbrev, **kwargs)


def _png_path(text: str) -> str:
    """``--png``: a name ending in ``.png`` (the picture is PNG data)."""
    from engine.operate.progress_view import check_png_path

    try:
        check_png_path(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--png {text}: ")) from None
    return text


def _parser(plugins: bool = True) -> argparse.ArgumentParser:
    """``tfront``'s parser; ``plugins=False`` leaves out the commands of other packages
    (:func:`plugin_commands`), so that running a built-in command imports none of them."""
    p = Parser(prog="tfront", description="Progress tracking for timely dataflow.")
    p.add_argument("--version", action="version",
                   version=f"tfront (timely-frontier) {_version('timely-frontier')}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
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
    r.add_argument("--workers", type=positive_int, default=None, metavar="K",
                   help="replay on K simulated workers that exchange progress updates "
                        "(engine.exchange.simulation, docs/exchange.md); same output, safety "
                        "checked (see --check)")
    r.add_argument("--schedule-seed", type=int, default=None, metavar="S",
                   help="with --workers: seed of the random delivery order (default 0)")
    r.add_argument("--policy", choices=_policy_names(), default=None,
                   help="with --workers: the workers' sending policy (default all)")
    r.add_argument("--check", choices=_check_names(), default=None,
                   help="with --workers: when the simulated workers' Safe, Mono and frontier "
                        "properties are checked: every-step (one transition at a time, checked "
                        "after each: exhaustive and slow, for tests), round (after each round "
                        "of all workers), batch (once per batch, after quiescence; default)")
    # --processes: the K workers as real processes (a runner of RUNNERS_GROUP; needs pyarrow)
    r.add_argument("--processes", action="store_true",
                   help="with --workers: run the K workers as K processes that exchange their "
                        "updates as Arrow IPC over loopback sockets (needs pyarrow); same output, "
                        "every worker's frontiers checked against a single tracker after each batch")
    r.add_argument("--worker-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="with --processes: seconds a worker process may take to answer before it "
                        "is named as hung (default 60)")

    q = sub.add_parser("psi", help="print the path-summary closure of a workload's graph")
    q.add_argument("file", help="workload file (timely-reach v1); batches are ignored")
    q.add_argument("--backend", choices=backends, default=None,
                   help="implementation (default: $TFRONT_BACKEND or auto)")
    q.add_argument("--time", action="store_true", help="print closure timing as JSON on stderr")
    q.add_argument("--max-summaries", type=positive_int, default=MAX_SUMMARIES, metavar="N",
                   help="refuse a graph whose Psi holds more than N summaries, before "
                        f"computing it (default {MAX_SUMMARIES:,}; about 30 bytes each, and "
                        "a line of output per pair)")
    q.add_argument("--allow-zero-cycles", action="store_true",
                   help="accept cycles that do not advance time (asynchronous loops)")
    for cmd in (r, q):
        cmd.add_argument("--max-locations", type=positive_int, default=MAX_LOCATIONS,
                         metavar="N", help="refuse a workload whose node lines declare more "
                                           f"than N ports in all (default {MAX_LOCATIONS:,})")

    if plugins:
        plugin_commands(sub)   # tfront wcc, ... (the entry points of COMMANDS_GROUP)

    g = sub.add_parser("progress", help="draw a progress log (tfront wcc --progress-log) as a "
                                        "PNG and/or a live HTML page")
    g.add_argument("log", help="progress log (JSON Lines) written by tfront wcc --progress-log")
    g.add_argument("--png", type=_png_path, default=None, metavar="OUT.png",
                   help="draw the timeline here (needs matplotlib: pip install "
                        "'timely-frontier[plot]')")
    g.add_argument("--html", default=None, metavar="OUT.html",
                   help="write a self-contained page with the timeline here; while the job runs "
                        "the page reloads itself every few seconds")
    g.add_argument("--watch", action="store_true",
                   help="keep redrawing --png/--html as the log grows, until the job ends")
    g.add_argument("--interval", type=positive_seconds, default=1.0, metavar="SECONDS",
                   help="how often --watch looks at the log (default 1)")

    rb = sub.add_parser("rollback", help="the largest consistent rollback of a problem (timely-rollback v1)")
    rb.add_argument("file", help="rollback problem file (timely-rollback v1)")
    rb.add_argument("--guard", choices=["full", "simple"], default="full",
                    help="full: the guards of RollbackL (C1-C5); simple: section 7.4's guard with fc "
                         "(default full)")
    rb.add_argument("--solver", choices=["auto", "reference", "batched"], default="auto",
                    help="reference: the solver that reads like the paper; batched: bitmask rounds "
                         "(much faster on large problems); auto: batched unless the problem is "
                         "tiny (default auto; the answer is the same)")
    rb.add_argument("--backend", choices=["auto", "cpu", "cuda"], default=None,
                    help="where the batched solver runs (given, it implies --solver batched "
                         "under --solver auto): cpu, cuda (a GPU), or auto (cuda only where a "
                         "device is usable and the estimate says it pays; default)")
    rb.add_argument("--max-states", type=positive_int, default=None, metavar="N",
                    help="refuse a problem of more than N (location, time) states, (nodes + "
                         "internal edges) x NE x NI, before building anything (default "
                         "10,000,000)")
    rb.add_argument("--max-choices", type=positive_int, default=None, metavar="N",
                    help="list at most N maximal choices of a nolargest answer: the search "
                         "stops at N and the answer says 'cut' (default 100)")
    rb.add_argument("--max-search", type=positive_int, default=None, metavar="N",
                    help="where some availability list is not closed under union, compute at "
                         "most N fixed points searching the combinations, else refuse "
                         "(default 10,000)")

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
    from engine.operate.progress_view import (_check_folder, read_progress, render_html,
                                              render_png, summary_lines, watch)

    for path in (args.html, args.png):   # before the log is read (or watched)
        if path is not None:
            _check_folder(path)
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


def _policy_names() -> list[str]:
    from engine.exchange.policies import POLICIES
    return list(POLICIES)


def _check_names() -> list[str]:
    from engine.exchange.simulation import CheckMode
    return [c.value for c in CheckMode if c is not CheckMode.NONE]


def _replay(args) -> int:
    workload = read_workload(args.file, allow_zero_cycles=args.allow_zero_cycles,
                             max_locations=args.max_locations)
    if args.processes:
        return _replay_processes(args, workload)
    if args.workers is not None:
        return _replay_workers(args, workload)
    tracker = make_tracker(workload.graph, args.backend, strict=args.strict,
                           batch_hint=_median_batch(workload))
    kernels = getattr(tracker, "kernels", None)
    if args.time and kernels is not None:
        from engine.batched.tracker import warm_up
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
    (:func:`engine.exchange.simulation.split_batch`), run to quiescence in rounds of all workers
    (or, with ``--check every-step``, one transition at a time) in a seeded random order, the
    safety properties checked as ``--check`` says, and worker 0's frontiers printed -- after
    checking that every worker's equal the true ones."""
    from engine.exchange.simulation import Exchange
    ex = Exchange(workload.graph, args.workers, policy=args.policy or "all",
                  backend=args.backend, seed=args.schedule_seed or 0,
                  check=args.check or "batch", strict=args.strict)
    out = sys.stdout
    if not args.quiet:
        out.write(REPLAY_HEADER + "\n")
    for k, batch in enumerate(workload.batches):
        start = time.perf_counter()
        before = ex.stats
        try:
            ex.run(batch.loc, batch.ts, batch.diff)    # in batch mode, checked there
            if args.check not in (None, "batch"):
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
    """``tfront replay FILE --workers K --processes``: the batches on K worker processes, each
    run to quiescence and every worker's frontiers checked against a single tracker's; worker
    0's printed. ``--time`` writes each batch's traffic and latency as one JSON line on stderr.

    The runner is another package's (it needs pyarrow: ``engine.exchange.processes``), found
    like the plugin commands, through the entry point ``processes`` of :data:`RUNNERS_GROUP`:
    ``run(args, workload, out) -> int``."""
    from importlib.metadata import entry_points

    found = [ep for ep in (list(entry_points(group=RUNNERS_GROUP))
                           or _checkout_entry_points(RUNNERS_GROUP)) if ep.name == "processes"]
    hint = "pip install 'timely-frontier[spark]'"
    if not found:
        raise DependencyError(f"--processes: no process runner is installed ({hint})")
    try:
        run = found[0].load()
    except ImportError as e:
        raise DependencyError(f"--processes needs pyarrow ({hint}): {e}") from None
    return run(args, workload, sys.stdout)


def _psi(args) -> int:
    workload = read_workload(args.file, allow_zero_cycles=args.allow_zero_cycles,
                             max_locations=args.max_locations)
    backend, _why = resolve_backend(args.backend)
    if args.time and backend in (Backend.CPU, Backend.CUDA):
        from engine.batched.tracker import warm_up
        warm_up(workload.graph.m, workload.graph.max_depth)
    from engine.batched.psi import check_psi_size, compute_psi
    start = time.perf_counter()
    spent = [0.0]   # seconds computing the closure (for the reference, row by row)
    if backend in (Backend.CPU, Backend.CUDA):  # Psi is computed on the host for both
        row = compute_psi(workload.graph, max_summaries=args.max_summaries).row
    else:  # reference, and timely (which has no Psi of its own): the reference closure, a
        # row at a time as the report asks for it (after the same check of its pairs)
        from engine.core.closure import closure_row
        check_psi_size(workload.graph, args.max_summaries)

        def row(l):
            t = time.perf_counter()
            try:
                return closure_row(workload.graph, l)
            finally:
                spent[0] += time.perf_counter() - t
    spent[0] += time.perf_counter() - start
    stats = write_psi_report(sys.stdout, workload, row)
    if args.time:
        print(json.dumps({"closure_ms": round(spent[0] * 1e3, 3), **stats}), file=sys.stderr)
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

    from engine.batched.cuda import device_report
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
    from engine.batched.cost import choose_strategy
    from engine.batched.graph_arrays import GraphArrays
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
    from engine.batched.cost import choose_backend
    pick = choose_backend(ga, _median_batch(workload))
    out.write(f"backend auto would take with a GPU: {pick.backend} ({pick.reason})\n")


def _rollback(args) -> int:
    """``tfront rollback FILE``: print the answer (the answer format of docs/rollback.md).
    A malformed file, or one past ``--max-states``, raises ``RollbackFormatError`` naming
    ``FILE:LINE``; a search past ``--max-search`` ``RollbackLimitError`` naming the file;
    ``main`` prints them as ``tfront rollback: error: ...``, status 2. A ``nolargest`` answer
    cut at ``--max-choices`` says so on stderr too."""
    from engine.errors import RollbackFormatError
    from engine.rollback.format import MAX_STATES, format_answer, read_rollback
    from engine.rollback.problem import MAX_CHOICES, MAX_SEARCH, solve
    from engine.rollback.batched import choose_solver, solve_batched
    problem = read_rollback(args.file, max_states=args.max_states or MAX_STATES)
    limits = {"max_choices": args.max_choices or MAX_CHOICES,
              "max_search": args.max_search or MAX_SEARCH}
    # an explicit --backend asks for the batched solver, whatever the size
    solver, _why = choose_solver(problem, "batched" if args.solver == "auto" and args.backend
                                 else args.solver)
    limits["progress"] = SearchProgress(problem)
    try:
        if solver == "reference":
            answer = solve(problem, args.guard, **limits)
        else:
            answer = solve_batched(problem, args.guard, args.backend or "auto", **limits)
    except RollbackFormatError as e:   # the search's limit: name the file
        raise e.at(args.file) from None
    sys.stdout.write(format_answer(problem, answer))
    if answer.cut:
        print(f"tfront rollback: the answer was cut: it lists the first {len(answer.choices)} "
              f"maximal choices found, and there are more (--max-choices)", file=sys.stderr)
    return 0


class SearchProgress:
    """``tfront rollback``'s progress line on stderr while it searches the combinations of
    availability lists not closed under union (each fixed point of the search is one pass
    over all ``(location, time)`` states: 0.1 s near the default ``--max-states``, so up to
    ``--max-search`` of them can take many minutes). Quiet for a search that ends within
    :attr:`EVERY_S`; then one line every :attr:`EVERY_S` seconds: the fixed points done, the
    limit, the time each took on how many states, and the most the rest can take.

    Called as ``progress(done, max_search)`` after each fixed point
    (:func:`engine.rollback.problem.decide`)."""

    #: Seconds between progress lines (the first comes after as long).
    EVERY_S = 5.0

    def __init__(self, problem, out=None):
        self.out = out if out is not None else sys.stderr
        self.states = (problem.n + len(problem.internal())) * problem.ne * problem.ni
        self.open = sum(not a.closed_under_union(problem.ne, problem.ni) for a in problem.avail)
        self.start = time.perf_counter()
        self.due = self.start + self.EVERY_S

    def __call__(self, done: int, max_search: int) -> None:
        now = time.perf_counter()
        if now < self.due:
            return
        self.due = now + self.EVERY_S
        each = (now - self.start) / done
        print(f"tfront rollback: searching the combinations of {self.open} processors' "
              f"availability lists (not closed under union): {done:,} fixed points so far of "
              f"at most {max_search:,} (--max-search), {each:.3g} s each over "
              f"{self.states:,} states; at most {_duration((max_search - done) * each)} more",
              file=self.out, flush=True)


def _duration(seconds: float) -> str:
    """``42 s``, ``17 min``, ``3.2 h``."""
    return (f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200
            else f"{seconds / 3600:.1f} h")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfront`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(plugins=command not in BUILTIN_COMMANDS)
    args, extra = parser.parse_known_args(argv)
    # errors after the command is known are the command's: its usage, ``tfront CMD: error:``
    # (the top-level usage would list only the built-in commands, and not the options)
    commands = next(a.choices for a in parser._actions
                    if isinstance(a, argparse._SubParsersAction))
    cmd_parser = commands.get(args.command, parser)
    if extra:
        cmd_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    parser = cmd_parser
    if args.command == "progress" and args.watch and args.html is None and args.png is None:
        parser.error("progress --watch needs --html and/or --png to redraw")
    if args.command == "rollback" and args.solver == "reference" and args.backend is not None:
        parser.error("rollback --backend is for the batched solver, not --solver reference")
    if args.command == "replay" and args.workers is None:
        for flag, value in (("--schedule-seed", args.schedule_seed), ("--policy", args.policy),
                            ("--check", args.check)):
            if value is not None:
                parser.error(f"replay {flag} needs --workers")
    if args.command == "replay" and args.processes:
        if args.workers is None:
            parser.error("replay --processes needs --workers K")
        if args.schedule_seed is not None:
            parser.error("replay --schedule-seed is for the simulated workers: with --processes "
                         "the operating system schedules them")
        if args.check is not None:
            parser.error("replay --check is for the simulated workers: with --processes every "
                         "worker's frontiers are checked against a single tracker after each "
                         "batch")
    elif args.command == "replay" and args.worker_timeout is not None:
        parser.error("replay --worker-timeout needs --processes")
    try:
        if args.command == "info":
            status = _info(args)
        elif args.command == "rollback":
            status = _rollback(args)
        elif getattr(args, "run", None) is not None:   # a command of another package
            status = args.run(args, parser)
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
        if isinstance(e, RollbackFormatError) and e.line is not None:
            # the line format/rollback-v1 fixes (section 6): "error: line N: TEXT"
            where = f" (in {e.path})" if e.path is not None else ""
            print(f"error: line {e.line}: {e.reason}{where}", file=sys.stderr)
        else:
            print(f"tfront {args.command}: error: {_for_cli(e)}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:   # a built-in command's input file that is not text
        where = getattr(args, "file", None) or getattr(args, "log", None) or "input"
        print(f"tfront {args.command}: error: {where}: not UTF-8 text (byte "
              f"0x{e.object[e.start]:02x} at offset {e.start})", file=sys.stderr)
        return 2


def _for_cli(e: BaseException) -> str:
    """The error's message, with the API's advice turned into the command line's; a file
    that cannot be read or written as ``FILE: what`` (no errno)."""
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return f"{e.filename}: {e.strerror}"
    text = str(e)
    if isinstance(e, ZeroAdvanceCycleError) or isinstance(e.__cause__, ZeroAdvanceCycleError):
        text = text.replace("pass allow_zero_cycles=True", "pass --allow-zero-cycles")
    return text


if __name__ == "__main__":
    sys.exit(main())
