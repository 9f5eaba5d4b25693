"""The ``tfront`` command line: ``tfront replay FILE``, ``tfront psi FILE``, ``tfront info`` and
``tfront wcc EDGES`` (the Spark WCC job, :mod:`spark_plugin.wcc`).

``replay`` applies a workload's batches one by one and prints the frontiers after each, in
the format of ``shared/formats/progress-workload-v1.md``; ``psi`` prints the path-summary
closure of the workload's graph; ``info`` says which backend ``auto`` (or ``--backend``)
chooses here and why, with versions and CUDA devices. Errors in the input exit with status 2
and a message that names the line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Sequence

from .backend import Backend, make_tracker, resolve_backend
from .errors import TimelyFrontierError
from .workload import REPLAY_HEADER, read_workload, write_frontier_report, write_psi_report

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tfront", description="Progress tracking for timely dataflow.")
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

    q = sub.add_parser("psi", help="print the path-summary closure of a workload's graph")
    q.add_argument("file", help="workload file (timely-reach v1); batches are ignored")
    q.add_argument("--backend", choices=backends, default=None,
                   help="implementation (default: $TFRONT_BACKEND or auto)")
    q.add_argument("--time", action="store_true", help="print closure timing as JSON on stderr")
    q.add_argument("--allow-zero-cycles", action="store_true",
                   help="accept cycles that do not advance time (asynchronous loops)")

    w = sub.add_parser("wcc", help="incremental weakly connected components on Spark (needs pyspark)")
    w.add_argument("edges", help="edge file (SNAP text, CSV with header, Parquet) or directory of epoch files")
    w.add_argument("--epochs", type=int, default=1, help="split a single edge file into K epochs (default 1)")
    w.add_argument("--out", default=None, help="Parquet dataset to append epoch,vertex,component to")
    w.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    w.add_argument("--partitions", type=int, default=None, help="Spark partitions per round (default: cores)")
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
    w.add_argument("--follow", type=float, nargs="?", const=float("inf"), default=None,
                   metavar="IDLE",
                   help="consume the directory EDGES as a stream: new files become epochs as they "
                        "appear, until a _DONE file exists (or IDLE seconds pass without a new file)")

    i = sub.add_parser("info", help="show the backend chosen here and why, versions and CUDA devices")
    i.add_argument("--backend", choices=backends, default=None,
                   help="backend to resolve (default: $TFRONT_BACKEND or auto)")
    i.add_argument("--workload", default=None, metavar="FILE",
                   help="also say which propagation strategy the backend picks for this "
                        "workload's graph, and the cost estimates behind the choice")
    return p


def _replay(args) -> int:
    workload = read_workload(args.file, allow_zero_cycles=args.allow_zero_cycles)
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
                 "cupy-cuda13x", "cupy", "rmm-cu12", "rmm-cu13", "rmm"):
        v = _version(dist)
        if v != "not installed" or dist in ("timely-frontier", "numpy", "numba", "numba-cuda",
                                            "cupy-cuda12x"):
            out.write(f"  {dist} {v}\n")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tfront`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "info":
            return _info(args)
        if args.command == "wcc":
            from spark_plugin.wcc import main_wcc  # imports pyspark only on this path
            return main_wcc(args)
        return _replay(args) if args.command == "replay" else _psi(args)
    except (TimelyFrontierError, OSError) as e:
        print(f"tfront {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
