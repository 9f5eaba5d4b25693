"""Benchmark of batch propagation: load, churn and drain batches through the batched tracker.

What it measures
----------------
For each graph size ``N`` (``--sizes``) and batch size ``B`` (``--batches``) the synthetic
workload of ``perf.workloads`` (docs/formats.md, "Synthetic workloads
for benchmarks") is generated from ``--seed``: a chain of ``N`` operators with nested loops and
diamonds, then five batches -- one load of ``B`` additions, three churn batches of ``B``
changes (half retractions, half additions), and a drain retracting everything still live.
The batches are converted to ``(loc int32[n], ts int64[n, 2], diff int64[n])`` arrays once,
outside the timed region, and replayed through a fresh tracker per variant and repeat:

* ``edgewise``, ``closure``, ``auto`` -- :class:`engine.batched.tracker.BatchedTracker` with that
  ``strategy``; each batch is timed with ``time.perf_counter`` around ``update_arrays``, and
  the tracker's own ``last_timing`` split (``apply_s``: validate, consolidate, merge, local
  frontiers; ``propagate_s``: implied frontiers and emitted changes) is kept;
* ``timely`` (opt-in) -- :class:`engine.trackers.propagation.PropagationTracker`, the pure-Python
  timely-style tracker, fed Python lists (``.tolist()`` outside the timed region); only run
  where ``N * B <= --timely-limit`` (default 1e7), since it costs Python work per change.

``--backend cuda`` runs the batched variants on the GPU backend (``engine.make_tracker(graph,
"cuda", strategy=...)``) and times each batch between two CUDA events (``"timer":
"cuda-events"`` in the record; the warm-up below also compiles the CUDA kernels). The
performance model these runs check is ``docs/performance-model.md``.

Tracker construction is timed separately as ``setup_s`` (for ``closure`` it computes ``Psi``).
Before any timing every variant replays a tiny workload once, so Numba JIT compilation (or
loading the on-disk cache) is excluded. Variants run interleaved in one process: for each
``(N, B)``, for each repeat, every variant replays the five batches on a fresh tracker (the
order of variants rotates by one per repeat so that none always runs first). A variant that
cannot run -- ``ImportError``/``AttributeError`` while ``engine/batched/psi.py`` is unfinished,
``MemoryError``, :class:`~engine.errors.AntichainOverflowError` or another
:class:`~engine.errors.TimelyFrontierError` -- is recorded as skipped with the exception's
message; any other exception is a bug and propagates.

Memory (readings taken outside the timed region): the tracker's resident state (``nbytes()``: count table, frontiers, ``Psi``) after the
load batch; the process's peak RSS (``ru_maxrss``, KiB on Linux) before and after each
``(N, B)``; and per batch ``ru_maxrss`` before and after it (``maxrss_before_kib``,
``peak_kib``) and the current RSS before and after (``rss_*_kib``, from ``/proc/self/statm``).
On Linux the peak is made batch-local by resetting the kernel's high-water mark
(``echo 5 > /proc/self/clear_refs``) just before the batch, so ``peak_growth_kib``
(``peak_kib - maxrss_before_kib``) is how far one batch, e.g. one 1e6-row churn batch, pushes
RSS above what was resident when it started, whatever ran earlier. In the timed runs the
allocator reuses memory freed by earlier batches (and by workload generation) without growing
RSS, so there the growth is often zero. Hence, after the timed repeats, an untimed *memory
pass* replays once more per variant with glibc's ``malloc_trim(0)`` before each batch (freed
heap pages go back to the kernel, RSS then counts live data), so its ``peak_growth_kib`` is
what the batch allocates on top of the resident state; these records are under
``memory_runs`` (``--no-memory-pass`` skips it; ``tracemalloc`` stays off throughout). Where the reset is impossible the peak is the process-wide
high-water mark and ``peak_is_batch_local`` is false: then the growth only shows a batch that
raised the process's peak (the largest ``B`` runs last within each ``N`` for that reason).
The process-wide peak (``maxrss_*``) is kept across resets by folding every reading into a
running maximum.

How to run (from the repository root)
-------------------------------------
::

    python -m perf.bench_propagate --quick                       # smoke test, seconds
    python -m perf.bench_propagate --plot perf/results/propagate.png
    python -m perf.bench_propagate --sizes 1000 --batches 1e5 --repeat 5 --variants edgewise,closure
    python -m perf.bench_propagate --sizes 100 --batches 1e3,1e4 --variants edgewise,timely

Defaults: ``--sizes 100,1000,5000 --batches 1e3,1e4,1e5,1e6 --repeat 3 --seed 1
--variants edgewise,closure --out perf/results/propagate.json``.

How to read the output
----------------------
The table printed on stdout has one row per ``(N, B, variant)``: ``setup`` is the tracker's
construction; ``load``, ``churn`` and ``drain`` are median milliseconds per batch (churn: the
median over all three churn batches and all repeats); ``churn M/s`` is ``B`` divided by that
median churn time, in millions of pointstamp changes per second (``best`` uses the minimum);
``emitted`` is the median number of frontier changes returned by the load / churn / drain
batches; ``resident MB`` is ``nbytes()`` after the load; ``churn +MB`` the largest transient
RSS growth of a churn batch in the memory pass. When several variants ran, each one's churn time is quoted as a
ratio to the first variant's (below 1 means faster). Variants must agree on the number of
frontier changes emitted (and the batched strategies on the changes themselves, by digest);
disagreements are printed and listed under ``"consistency"``.

The JSON file (``--out``) holds ``commit``, ``machine``, ``parameters``, ``warmup``, ``runs``
(raw records: one per variant, repeat and case, with ``setup_s``, ``nbytes_after_load`` and a
``batches`` list of ``kind``, ``rows``, ``wall_s``, ``apply_s``, ``propagate_s``,
``emitted``, ``updates_per_s`` and the memory readings), ``memory_runs`` (the same for the
memory pass; not timings), ``cases`` (per ``(N, B)``: workload
shape and RSS), ``summary`` (the table's numbers, min and median per batch kind), ``ratios``,
``consistency`` and ``skipped``. ``--plot FILE.png`` draws median churn updates/s against
``B`` for every ``N`` and variant, with the targets of 8 M/s at ``N = 1000`` and 2.5 M/s at
``N = 5000`` as dashed lines.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import os
import statistics
import sys
import time
from typing import Sequence

import numpy as np

from engine.batched.backend import make_tracker
from engine.batched.tracker import Strategy
from engine.errors import TimelyFrontierError
from engine.trackers.propagation import PropagationTracker
from perf.common import (add_output_args, commit_info, commit_label, figure, int_list, machine,
                         maxrss_kib, progress, require_backend, reset_peak_rss, save_results,
                         utc_now)
from perf.workloads import BATCH_KINDS, batch_columns, build_graph, generate_batches, generate_graph

__all__ = ["main", "run_benchmark", "summarize", "plot", "TARGETS", "VARIANTS"]


#: Variants: the strategies of BatchedTracker, plus the pure-Python timely-style tracker.
VARIANTS = tuple(s.value for s in Strategy) + ("timely",)
TIMELY = "timely"
#: Churn throughput targets (updates per second) by graph size N, from the issue.
TARGETS = {1000: 8e6, 5000: 2.5e6}
KINDS = ("load", "churn", "drain")
#: Exceptions that mark a variant as unable to run on a case (a Psi too large for memory, an
#: antichain over its cap): recorded as skipped with the message; anything else propagates.
SKIPPABLE = (MemoryError, TimelyFrontierError)

DEFAULT_SIZES = (100, 1000, 5000)
DEFAULT_BATCHES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (100, 1000)
QUICK_BATCHES = (1_000, 100_000)


# --- memory readings -----------------------------------------------------------------------

class RssMeter:
    """RSS readings in KiB: current, peak since the last reset, and the process's peak.

    ``ru_maxrss`` is the kernel's high-water mark; on Linux writing ``5`` to
    ``/proc/self/clear_refs`` resets it to the current RSS, which makes a per-batch peak
    possible. ``lifetime_kib`` folds every reading into a running maximum so the process-wide
    peak survives those resets.
    """

    def __init__(self):
        self.lifetime_kib = self.maxrss_kib()
        self.can_reset = reset_peak_rss()
        self.observe()

    @staticmethod
    def maxrss_kib() -> int:
        return maxrss_kib()

    def observe(self) -> int:
        """``ru_maxrss`` now (KiB), folded into ``lifetime_kib``."""
        v = self.maxrss_kib()
        self.lifetime_kib = max(self.lifetime_kib, v)
        return v

    def reset_peak(self) -> None:
        """Start a new high-water window (a no-op where the kernel does not allow it)."""
        self.observe()
        if self.can_reset:
            reset_peak_rss()

    @staticmethod
    def current_kib() -> int | None:
        try:
            with open("/proc/self/statm") as f:
                pages = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None
        return pages * os.sysconf("SC_PAGE_SIZE") // 1024


# --- environment ---------------------------------------------------------------------------

def _machine(backend: str = "cpu") -> dict:
    import numba

    device = {}
    if backend == "cuda":
        from engine.batched.cuda import usable_device
        device = {"cuda_device": usable_device()[1]}
    return machine(numba_threads=int(numba.config.NUMBA_NUM_THREADS), **device)


# --- one replay ----------------------------------------------------------------------------

def _digest(out) -> str:
    h = hashlib.sha1()
    for a in out:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _make_tracker(variant: str, graph, backend: str = "cpu"):
    if variant == TIMELY:
        return PropagationTracker(graph)
    return make_tracker(graph, backend, strategy=variant)


def _setup(variant: str, graph, backend: str = "cpu"):
    """``(tracker, seconds)``: the variant's tracker on ``graph`` (for closure: with ``Psi``)."""
    gc.collect()
    t0 = time.perf_counter()
    tracker = _make_tracker(variant, graph, backend)
    return tracker, time.perf_counter() - t0


def _timed_update(tracker, arr):
    """``(out, seconds, timer)`` of one ``update_arrays``: on a device backend between two CUDA
    events recorded on the current stream (the call returns host arrays, so the stop event
    is reached after the whole batch), else with ``time.perf_counter``."""
    kernels = getattr(tracker, "kernels", None)
    if kernels is not None and kernels.on_device and kernels.xp is not np:
        cp = kernels.xp
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        out = tracker.update_arrays(*arr)
        stop.record()
        stop.synchronize()
        return out, cp.cuda.get_elapsed_time(start, stop) / 1e3, "cuda-events"
    t0 = time.perf_counter()
    out = tracker.update_arrays(*arr)
    return out, time.perf_counter() - t0, "perf_counter"


def _replay(variant: str, tracker, setup_s: float, arrays, lists, kinds,
            meter: RssMeter | None, trim: bool = False) -> dict:
    """Replay the batches through a fresh ``tracker``; return the run's raw record.

    ``arrays`` are the ``(loc, ts, diff)`` arrays of every batch; ``lists`` their ``.tolist()``
    forms (used by the timely variant only). With ``trim``, freed heap memory is handed back
    to the kernel before each batch (the memory pass: RSS then counts only live data, so the
    batch's peak growth is what it allocates; never used for timed runs, whose batches would
    then pay page faults). Raises whatever the tracker raises.
    """
    batches = []
    nbytes_after_load = None
    for i, (kind, arr) in enumerate(zip(kinds, arrays)):
        rows = int(len(arr[0]))
        if trim:
            gc.collect()
            _malloc_trim()
        if meter is not None:
            meter.reset_peak()
            rss_before = meter.current_kib()
            maxrss_before = meter.maxrss_kib()  # after a reset: the RSS at the reset
        if variant == TIMELY:
            loc, ts, diff = lists[i]
            t0 = time.perf_counter()
            out = tracker.update(loc, ts, diff)
            wall = time.perf_counter() - t0
            emitted, digest, timer = len(out), None, "perf_counter"
        else:
            out, wall, timer = _timed_update(tracker, arr)
            emitted, digest = int(len(out[0])), _digest(out)
        rec = {
            "batch": i, "kind": kind, "rows": rows, "wall_s": wall, "timer": timer,
            "apply_s": float(tracker.last_timing["apply_s"]),
            "propagate_s": float(tracker.last_timing["propagate_s"]),
            "emitted": emitted,
            "updates_per_s": rows / wall if wall > 0 else None,
            "digest": digest,
        }
        # a device backend's work per batch: kernel launches, primitives, syncs, allocations;
        # on the closure strategy also the targets recomputed in full and incrementally
        rec.update({c: tracker.last_timing[c] for c in ("launches", "ops", "syncs", "allocs",
                                                       "targets_full", "targets_incremental")
                    if c in getattr(tracker, "last_timing", {})})
        if meter is not None:
            peak = meter.observe()
            rss_after = meter.current_kib()
            rec.update(rss_before_kib=rss_before, rss_after_kib=rss_after,
                       maxrss_before_kib=maxrss_before, peak_kib=peak,
                       peak_growth_kib=peak - maxrss_before)
        del out
        batches.append(rec)
        if i == 0 and hasattr(tracker, "nbytes"):
            nbytes_after_load = int(tracker.nbytes())
    nbytes_final = int(tracker.nbytes()) if hasattr(tracker, "nbytes") else None
    choice = getattr(tracker, "choice", None)
    return {"setup_s": setup_s, "nbytes_after_load": nbytes_after_load,
            "nbytes_final": nbytes_final, "batches": batches,
            "strategy": None if choice is None else {"picked": choice.strategy,
                                                     "reason": choice.reason}}


def _malloc_trim() -> bool:
    """glibc ``malloc_trim(0)``: return free heap pages to the kernel; False where unavailable."""
    global _TRIM
    if _TRIM is None:
        try:
            _TRIM = ctypes.CDLL(None).malloc_trim
            _TRIM.argtypes, _TRIM.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM is False:
        return False
    _TRIM(0)
    return True


_TRIM = None


def _skip_message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _warm_up(variants: Sequence[str], seed: int, backend: str = "cpu") -> dict:
    """Replay a tiny workload through every variant so JIT compilation is excluded later."""
    spec = generate_graph(20, seed)
    graph = build_graph(spec)
    specs = generate_batches(spec, 64, seed)
    arrays = [batch_columns(graph, b) for b in specs]
    lists = [tuple(a.tolist() for a in arr) for arr in arrays]
    kinds = [b.kind for b in specs]
    result = {}
    for v in variants:
        t0 = time.perf_counter()
        try:
            _replay(v, *_setup(v, graph, backend), arrays, lists, kinds, None)
        except SKIPPABLE as exc:
            result[v] = {"status": "skipped", "error": _skip_message(exc),
                         "seconds": time.perf_counter() - t0}
        else:
            result[v] = {"status": "ok", "seconds": time.perf_counter() - t0}
    return result


# --- the benchmark -------------------------------------------------------------------------

def run_benchmark(sizes: Sequence[int], batches: Sequence[int], variants: Sequence[str], *,
                  repeat: int = 3, seed: int = 1, timely_limit: float = 1e7,
                  memory_pass: bool = True, backend: str = "cpu", log=print) -> dict:
    """Run every ``(N, B)`` case; return the results (without summary) as a JSON-able dict.

    ``backend`` (``cpu`` or ``cuda``) runs the batched variants on that backend."""
    meter = RssMeter()
    started = utc_now()
    warmup = _warm_up(variants, seed, backend)
    for v, w in warmup.items():
        if w["status"] != "ok":
            log(f"warm-up: {v} skipped everywhere ({w['error']})")
    runs, memory_runs, cases, skipped = [], [], [], []
    setup_failures: dict[tuple[int, str], str] = {}  # (N, variant) -> message: Psi is per graph

    for n in sizes:
        spec = generate_graph(n, seed)
        graph = build_graph(spec)
        for b in batches:
            t0 = time.perf_counter()
            meter.reset_peak()
            maxrss_before = meter.lifetime_kib
            rss_before = meter.current_kib()
            specs = generate_batches(spec, b, seed)
            kinds = [s.kind for s in specs]
            arrays = [batch_columns(graph, s) for s in specs]
            del specs
            active = []
            for v in variants:
                reason = None
                if warmup[v]["status"] != "ok":
                    reason = f"warm-up failed: {warmup[v]['error']}"
                elif (n, v) in setup_failures:
                    reason = setup_failures[(n, v)]
                elif v == TIMELY and n * b > timely_limit:
                    reason = f"N*B = {n * b:.3g} > --timely-limit {timely_limit:.3g} (pure Python)"
                if reason:
                    skipped.append({"n": n, "b": b, "variant": v, "reason": reason})
                else:
                    active.append(v)
            lists = ([tuple(a.tolist() for a in arr) for arr in arrays]
                     if TIMELY in active else None)
            prepare_s = time.perf_counter() - t0
            log(f"N={n} B={_fmt_b(b)}: {graph.num_locations} locations, workload ready in "
                f"{prepare_s:.2f}s; variants {', '.join(active) or '(none)'}")
            for r in range(repeat):
                k = len(active)
                order = [active[(r + j) % k] for j in range(k)] if k else []
                for slot, v in enumerate(order):
                    if v not in active:  # failed earlier in this case
                        continue
                    phase = "setup"
                    try:
                        tracker, setup_s = _setup(v, graph, backend)
                        phase = "replay"
                        rec = _replay(v, tracker, setup_s, arrays, lists, kinds, meter)
                    except SKIPPABLE as exc:
                        msg = f"{phase}: {_skip_message(exc)}"
                        skipped.append({"n": n, "b": b, "variant": v, "repeat": r,
                                        "reason": msg})
                        active.remove(v)
                        log(f"  {v}: skipped ({msg})")
                        if phase == "setup":  # Psi depends on the graph only: skip every B
                            setup_failures[(n, v)] = f"at N={n}, B={b}: {msg}"
                        continue
                    finally:
                        tracker = None
                    rec.update(n=n, b=b, variant=v, repeat=r, slot=slot)
                    runs.append(rec)
                    churn = [x["wall_s"] for x in rec["batches"] if x["kind"] == "churn"]
                    log(f"  repeat {r} {v:9s} setup {rec['setup_s'] * 1e3:9.2f} ms, churn median "
                        f"{statistics.median(churn) * 1e3:9.3f} ms")
            # Memory pass (untimed): one more replay per variant, heap trimmed before each
            # batch, so that a batch's peak growth is the memory it allocates.
            for v in active if memory_pass else ():
                try:
                    tracker, setup_s = _setup(v, graph, backend)
                    rec = _replay(v, tracker, setup_s, arrays, lists, kinds, meter, trim=True)
                except SKIPPABLE as exc:
                    msg = f"memory pass: {_skip_message(exc)}"
                    skipped.append({"n": n, "b": b, "variant": v, "reason": msg})
                    log(f"  {v}: {msg}")
                    continue
                finally:
                    tracker = None
                rec.update(n=n, b=b, variant=v)
                memory_runs.append(rec)
            meter.observe()
            cases.append({
                "n": n, "b": b, "locations": graph.num_locations,
                "operators": graph.num_operators,
                "rows": {k: int(sum(len(a[0]) for a, kk in zip(arrays, kinds) if kk == k))
                         for k in KINDS},
                "input_bytes": int(sum(x.nbytes for arr in arrays for x in arr)),
                "prepare_s": prepare_s,
                "maxrss_before_kib": maxrss_before, "maxrss_after_kib": meter.lifetime_kib,
                "rss_before_kib": rss_before, "rss_after_kib": meter.current_kib(),
                "case_peak_kib": max([x["peak_kib"] for run in runs + memory_runs
                                      if run["n"] == n and run["b"] == b
                                      for x in run["batches"]] + [meter.maxrss_kib()]),
            })
            del arrays, lists
    return {
        "benchmark": "propagate",
        "started": started,
        "finished": utc_now(),
        **commit_info(),
        "machine": _machine(backend),
        "parameters": {"sizes": list(sizes), "batches": list(batches), "backend": backend,
                       "variants": list(variants), "repeat": repeat, "seed": seed,
                       "timely_limit": timely_limit, "batch_kinds": list(BATCH_KINDS),
                       "targets_updates_per_s": {str(k): v for k, v in TARGETS.items()}},
        "memory_method": {"peak_is_batch_local": meter.can_reset,
                          "memory_pass": memory_pass,
                          "heap_trimmed_in_memory_pass": _malloc_trim() if memory_pass else False,
                          "process_peak_kib": meter.lifetime_kib,
                          "units": "KiB (ru_maxrss on Linux, /proc/self/statm)"},
        "warmup": warmup,
        "cases": cases,
        "runs": runs,
        "memory_runs": memory_runs,
        "skipped": skipped,
    }


# --- summary -------------------------------------------------------------------------------

def _stats(vals: list[float]) -> tuple[float | None, float | None]:
    vals = [v for v in vals if v is not None]
    return (min(vals), statistics.median(vals)) if vals else (None, None)


def summarize(results: dict) -> dict:
    """Add ``summary``, ``ratios`` and ``consistency`` to ``results`` (in place); return it."""
    variants = results["parameters"]["variants"]
    summary, ratios, consistency = [], [], []
    for case in results["cases"]:
        n, b = case["n"], case["b"]
        case_runs = [r for r in results["runs"] if r["n"] == n and r["b"] == b]
        mem = [r for r in results.get("memory_runs", []) if r["n"] == n and r["b"] == b]
        for v in variants:
            vr = [r for r in case_runs if r["variant"] == v]
            if not vr:
                reasons = [s["reason"] for s in results["skipped"]
                           if s["n"] == n and s["b"] == b and s["variant"] == v]
                summary.append({"n": n, "b": b, "variant": v, "status": "skipped",
                                "reason": reasons[0] if reasons else "not run"})
                continue
            row = {"n": n, "b": b, "variant": v, "status": "ok", "repeats": len(vr)}
            row["setup_s_min"], row["setup_s_median"] = _stats([r["setup_s"] for r in vr])
            loads = [r["nbytes_after_load"] for r in vr if r["nbytes_after_load"] is not None]
            row["resident_bytes"] = max(loads) if loads else None
            for kind in KINDS:
                xs = [x for r in vr for x in r["batches"] if x["kind"] == kind]
                wmin, wmed = _stats([x["wall_s"] for x in xs])
                rows = statistics.median([x["rows"] for x in xs])
                row[kind] = {
                    "batches": len(xs), "rows": rows,
                    "wall_s_min": wmin, "wall_s_median": wmed,
                    "apply_s_min": _stats([x["apply_s"] for x in xs])[0],
                    "apply_s_median": _stats([x["apply_s"] for x in xs])[1],
                    "propagate_s_min": _stats([x["propagate_s"] for x in xs])[0],
                    "propagate_s_median": _stats([x["propagate_s"] for x in xs])[1],
                    "emitted_median": statistics.median([x["emitted"] for x in xs]),
                    **{f"{c}_max": max(x[c] for x in xs) for c in ("launches", "ops", "syncs",
                                                                    "allocs") if c in xs[0]},
                    "updates_per_s_median": rows / wmed if wmed else None,
                    "updates_per_s_best": rows / wmin if wmin else None,
                    "peak_growth_kib_max": max((x.get("peak_growth_kib") or 0) for x in xs),
                    "peak_kib_max": max((x.get("peak_kib") or 0) for x in xs),
                    "memory_pass_growth_kib_max": max(
                        (x["peak_growth_kib"] for r in mem if r["variant"] == v
                         for x in r["batches"] if x["kind"] == kind), default=None),
                    "memory_pass_peak_kib_max": max(
                        (x["peak_kib"] for r in mem if r["variant"] == v
                         for x in r["batches"] if x["kind"] == kind), default=None),
                }
            summary.append(row)
        # Churn-time ratios against the first variant that ran in this case.
        ok = [s for s in summary if s["n"] == n and s["b"] == b and s["status"] == "ok"]
        if len(ok) >= 2:
            base = ok[0]
            for other in ok[1:]:
                ratios.append({"n": n, "b": b, "variant": other["variant"],
                               "baseline": base["variant"],
                               "churn_time_ratio": other["churn"]["wall_s_median"]
                               / base["churn"]["wall_s_median"]})
        # Agreement: same number of emitted changes per batch (and same digest for batched).
        by_batch: dict[int, dict[str, set]] = {}
        for r in case_runs:
            for x in r["batches"]:
                d = by_batch.setdefault(x["batch"], {})
                d.setdefault("emitted", set()).add((r["variant"], x["emitted"]))
                if x["digest"] is not None:
                    d.setdefault("digest", set()).add(x["digest"])
        for i, d in sorted(by_batch.items()):
            counts = {c for _, c in d["emitted"]}
            if len(counts) > 1 or len(d.get("digest", ())) > 1:
                consistency.append({"n": n, "b": b, "batch": i,
                                    "emitted": sorted(d["emitted"]),
                                    "digests": sorted(d.get("digest", ()))})
    results["summary"], results["ratios"], results["consistency"] = summary, ratios, consistency
    return results


def _fmt_b(b: int) -> str:
    """``100000`` as ``1e5``; other numbers as they are."""
    e = len(str(b)) - 1
    return f"1e{e}" if b == 10 ** e and e >= 3 else str(b)


def _ms(s):
    return "-" if s is None else f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.2f}" \
        if s < 1 else f"{s * 1e3:.0f}"


def _growth(kind_row: dict) -> int:
    """A batch kind's transient RSS growth: from the memory pass when it ran."""
    g = kind_row["memory_pass_growth_kib_max"]
    return kind_row["peak_growth_kib_max"] if g is None else g


def format_table(results: dict) -> str:
    """The summary as a fixed-width text table, then ratios, memory and warnings."""
    head = (f"{'N':>5} {'B':>8} {'variant':<9} {'setup ms':>9} {'load ms':>9} {'churn ms':>9} "
            f"{'drain ms':>9} {'churn M/s':>9} {'best M/s':>8} {'emitted L/C/D':>21} "
            f"{'resident MB':>11} {'churn +MB':>9}")
    lines = [head, "-" * len(head)]
    for s in results["summary"]:
        pre = f"{s['n']:>5} {_fmt_b(s['b']):>8} {s['variant']:<9}"
        if s["status"] != "ok":
            lines.append(f"{pre} skipped: {s['reason'][:110]}")
            continue
        c = s["churn"]
        emitted = "/".join(f"{s[k]['emitted_median']:g}" for k in KINDS)
        mps = c["updates_per_s_median"]
        best = c["updates_per_s_best"]
        res = "-" if s["resident_bytes"] is None else f"{s['resident_bytes'] / 2**20:.2f}"
        lines.append(
            f"{pre} {_ms(s['setup_s_median']):>9} {_ms(s['load']['wall_s_median']):>9} "
            f"{_ms(c['wall_s_median']):>9} {_ms(s['drain']['wall_s_median']):>9} "
            f"{(mps or 0) / 1e6:>9.3f} {(best or 0) / 1e6:>8.3f} {emitted:>21} {res:>11} "
            f"{_growth(c) / 1024:>9.1f}")
    if results["ratios"]:
        lines.append("")
        lines.append("churn-time ratios (median churn time of variant / baseline; < 1 is faster):")
        for r in results["ratios"]:
            lines.append(f"  N={r['n']:>5} B={_fmt_b(r['b']):>8}: {r['variant']}/{r['baseline']} = "
                         f"{r['churn_time_ratio']:.3f}")
    lines.append("")
    mm = results["memory_method"]
    lines.append(f"memory: process peak RSS {mm['process_peak_kib'] / 1024:.1f} MiB; per-batch "
                 f"peaks are {'batch-local (clear_refs reset)' if mm['peak_is_batch_local'] else 'process high-water marks'}"
                 f"; batch growth from {'the memory pass (heap trimmed before each batch)' if mm['memory_pass'] and mm['heap_trimmed_in_memory_pass'] else 'the timed runs (allocator may reuse freed memory)'}")
    for case in results["cases"]:
        lines.append(f"  N={case['n']:>5} B={_fmt_b(case['b']):>8}: peak RSS {case['maxrss_before_kib'] / 1024:8.1f}"
                     f" -> {case['maxrss_after_kib'] / 1024:8.1f} MiB (case peak "
                     f"{case['case_peak_kib'] / 1024:.1f} MiB, input arrays "
                     f"{case['input_bytes'] / 2**20:.1f} MiB)")
    for s in results["summary"]:
        if s["status"] == "ok" and s["b"] == max(results["parameters"]["batches"]):
            pk = s["churn"]["memory_pass_peak_kib_max"] or s["churn"]["peak_kib_max"]
            lines.append(f"  B={_fmt_b(s['b'])} N={s['n']} {s['variant']}: one churn batch raises RSS "
                         f"by up to {_growth(s['churn']) / 1024:.1f} MiB over its start (peak "
                         f"{pk / 1024:.1f} MiB); load +{_growth(s['load']) / 1024:.1f} MiB, drain "
                         f"+{_growth(s['drain']) / 1024:.1f} MiB; resident state after load "
                         f"{(s['resident_bytes'] or 0) / 2**20:.1f} MiB")
    if results["consistency"]:
        lines.append("")
        lines.append(f"WARNING: variants disagree on {len(results['consistency'])} batches "
                     f"(see 'consistency' in the JSON)")
    return "\n".join(lines)


# --- plot ----------------------------------------------------------------------------------

def plot(results: dict, path: str | os.PathLike) -> None:
    """Median churn updates/s against B (log-log), one panel per N, one line per variant."""
    sizes = results["parameters"]["sizes"]
    variants = results["parameters"]["variants"]
    with figure(path, dpi=110, ncols=len(sizes), figsize=(5.2 * len(sizes), 4.4), sharey=True,
                squeeze=False) as (fig, axes):
        markers = dict(zip(VARIANTS, "osD^v"))
        for ax, n in zip(axes[0], sizes):
            for v in variants:
                pts = sorted((s["b"], s["churn"]["updates_per_s_median"], s["churn"]["updates_per_s_best"])
                             for s in results["summary"]
                             if s["n"] == n and s["variant"] == v and s["status"] == "ok")
                if not pts:
                    continue
                bs, med, best = zip(*pts)
                line, = ax.plot(bs, med, marker=markers.get(v, "o"), label=f"{v} (median)")
                ax.plot(bs, best, linestyle=":", color=line.get_color(), alpha=0.6,
                        label=f"{v} (best)")
            if n in TARGETS:
                ax.axhline(TARGETS[n], color="red", linestyle="--", linewidth=1.2,
                           label=f"target {TARGETS[n] / 1e6:g} M/s (N={n})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"N = {n} operators")
            ax.set_xlabel("batch size B (changes per batch)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8, loc="best")
        axes[0][0].set_ylabel("churn throughput (updates / s)")
        commit = commit_label(results)
        ran = {s["variant"] for s in results["summary"] if s["status"] == "ok"}
        never = [v for v in variants if v not in ran]
        fig.suptitle(f"Churn batches through BatchedTracker (seed {results['parameters']['seed']}, "
                     f"{results['parameters']['repeat']} repeats, commit {commit}, "
                     f"{results['machine']['cpu_count']} CPUs)"
                     + (f" -- not run: {', '.join(never)}" if never else ""), fontsize=10)


# --- command line --------------------------------------------------------------------------

def _variant_list(text: str) -> list[str]:
    out = [v.strip().lower() for v in text.split(",") if v.strip()]
    bad = [v for v in out if v not in VARIANTS]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"unknown variant(s) {bad}; choose from {', '.join(VARIANTS)}")
    return list(dict.fromkeys(out))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.bench_propagate",
                                description="Time load/churn/drain batches through the batched "
                                            "tracker's propagation strategies.")
    p.add_argument("--sizes", type=int_list, default=list(DEFAULT_SIZES),
                   help="graph sizes N (chain operators), comma-separated (default 100,1000,5000)")
    p.add_argument("--batches", type=int_list, default=list(DEFAULT_BATCHES),
                   help="batch sizes B, comma-separated, 1e5 forms accepted (default 1e3,1e4,1e5,1e6)")
    p.add_argument("--variants", type=_variant_list, default=["edgewise", "closure"],
                   help=f"comma-separated, from {', '.join(VARIANTS)} (default edgewise,closure)")
    p.add_argument("--backend", choices=["cpu", "cuda"], default="cpu",
                   help="backend of the batched variants (default cpu; cuda times with CUDA "
                        "events after the warm-up)")
    p.add_argument("--repeat", type=int, default=3, help="replays per variant and case (default 3)")
    p.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    p.add_argument("--timely-limit", type=float, default=1e7,
                   help="run the pure-Python timely variant only where N*B <= this (default 1e7)")
    add_output_args(p, "perf/results/propagate.json", plot="also draw churn throughput to this PNG")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: N=100,1000; B=1e3,1e5; repeat 1")
    p.add_argument("--no-memory-pass", dest="memory_pass", action="store_false",
                   help="skip the untimed extra replay per variant that measures batch memory")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.batches, args.repeat = list(QUICK_SIZES), list(QUICK_BATCHES), 1
    if args.repeat < 1:
        p.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.backend == "cuda":
        require_backend(p, "cuda")

    log = progress(args.quiet)
    results = run_benchmark(args.sizes, sorted(args.batches), args.variants, repeat=args.repeat,
                            seed=args.seed, timely_limit=args.timely_limit,
                            memory_pass=args.memory_pass, backend=args.backend, log=log)
    summarize(results)
    save_results(results, args, plot, table=format_table(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
