"""The driver-side frontier service: applies delta batches exactly once per ``(producer, seq)``.

A :class:`FrontierService` holds one engine tracker for the job's graph. Executors send
delta rows (:mod:`spark_plugin.schema`), each tagged with the *producer* that made it and
that producer's *sequence number*; :meth:`FrontierService.apply` takes a table of such rows
(any mix of producers and sequence numbers) and, per producer, applies sequence numbers
``0, 1, 2, ...`` in order, each exactly once (docs/spark.md and docs/semantics.md 7):

* a ``(producer, seq)`` already applied, or already held, is a **duplicate**: ignored and
  counted (a retried or speculative Spark task, a re-delivered micro-batch);
* a ``seq`` beyond the next expected one is **held** and reported as a **gap** (log warning,
  gap subscribers, :meth:`~FrontierService.gaps`); it is applied, in order, once the missing
  ones arrive;
* all rows of one ``(producer, seq)`` must arrive in the same ``apply`` call (they may span
  many record batches and Spark partitions); they form one atomic engine batch.

The whole table is validated before anything is applied (schema, nulls, known locations,
timestamp widths and ranges: the engine's own checks), and a batch the engine rejects while
applying (a negative count in strict mode) is rolled back together with everything applied
earlier in the same call: a rejected table changes neither counts nor sequence state.

Frontier changes are published after each successful call: to subscribers (a pyarrow
``Table`` per call, with the ``producer``/``seq`` that caused each change) and, with
``log_path``, as one Parquet file per call in that directory. :meth:`~FrontierService.save`
writes the state (counts, sequence numbers, held batches) to a directory that
:meth:`~FrontierService.restore` reads back.

>>> from engine.workload import example_graph
>>> from spark_plugin.schema import delta_table
>>> g = example_graph()
>>> svc = FrontierService(g)
>>> r = svc.apply(delta_table([g.source(1, 0)], [[0, 0]], [1], "job-0", 0))
>>> r.applied, r.changes.num_rows > 0, svc.frontier(g.target(2, 1))
([('job-0', 0)], True, [(0, 0)])
>>> svc.apply(delta_table([g.source(1, 0)], [[0, 0]], [1], "job-0", 0)).duplicates
[('job-0', 0)]
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine import make_tracker
from engine.batch_arrays import batch_arrays
from engine.errors import BatchError
from engine.graph import Graph

from .errors import MissingBatchError, SchemaError, ServiceStateError, SubscriberError
from .schema import (CNT, DIFF, LOC, PRODUCER, SEQ, TS, check_delta_schema, counts_schema,
                     delta_schema, int_column, ts_array, ts_matrix)

__all__ = ["FrontierService", "ApplyResult", "Gap", "ServiceStatus", "read_log", "STATE_FORMAT"]

log = logging.getLogger(__name__)

#: Format tag of the saved state (``state.json``).
STATE_FORMAT = "timely-frontier-service-state/1"
_STATE_FILE, _COUNTS_FILE, _HELD_FILE = "state.json", "counts.parquet", "held.parquet"
_LOG_PREFIX = "changes-"
_STATE_KEYS = ("graph", "strict", "next_seq", "held", "duplicates", "applied")


@dataclass(frozen=True)
class Gap:
    """A producer whose next expected sequence number has not arrived, while later ones have.

    Attributes
    ----------
    producer : str
    expected : int
        The sequence number the service waits for.
    held : tuple[int, ...]
        Sequence numbers received and held until the gap is filled, sorted.
    """

    producer: str
    expected: int
    held: tuple[int, ...]

    @property
    def missing(self) -> list[int]:
        """Sequence numbers below the largest held one that have not arrived."""
        have = set(self.held)
        return [s for s in range(self.expected, max(self.held)) if s not in have]

    def __str__(self) -> str:
        return (f"producer {self.producer!r} is missing seq {_ranges(self.missing)} "
                f"(holding {_ranges(list(self.held))})")


@dataclass(frozen=True)
class ApplyResult:
    """What one :meth:`FrontierService.apply` call did.

    Attributes
    ----------
    applied : list[tuple[str, int]]
        ``(producer, seq)`` applied to the engine, in application order (including held ones
        this call released).
    duplicates : list[tuple[str, int]]
        ``(producer, seq)`` ignored because they were already applied or held.
    held : list[tuple[str, int]]
        ``(producer, seq)`` received out of order and held.
    changes : pyarrow.Table
        The frontier changes, in the canonical delta schema: ``diff`` is +1 (the timestamp
        entered the location's implied frontier) or -1 (it left), and ``producer``/``seq``
        name the batch that caused it; replaying the rows in order reproduces the frontiers.
    gaps : list[Gap]
        All gaps after the call.
    """

    applied: list[tuple[str, int]]
    duplicates: list[tuple[str, int]]
    held: list[tuple[str, int]]
    changes: pa.Table
    gaps: list[Gap] = field(default_factory=list)


@dataclass(frozen=True)
class ServiceStatus:
    """The sequence state of a :class:`FrontierService`.

    Attributes
    ----------
    next_seq : dict[str, int]
        Per producer, the next sequence number it expects (= the number applied).
    held : dict[str, list[int]]
        Per producer with held batches, their sequence numbers.
    duplicates : int
        Duplicate ``(producer, seq)`` ignored since the service started (or was saved).
    applied : int
        ``(producer, seq)`` applied.
    gaps : list[Gap]
    """

    next_seq: dict[str, int]
    held: dict[str, list[int]]
    duplicates: int
    applied: int
    gaps: list[Gap]


@dataclass
class _Group:
    """The validated rows of one ``(producer, seq)``."""

    producer: str
    seq: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray


class FrontierService:
    """Exactly-once application of delta batches to a frontier tracker, with publication.

    Parameters
    ----------
    graph : engine.Graph
    backend : str or engine.Backend, optional
        Engine backend (``engine.make_tracker``): default ``$TFRONT_BACKEND``, else ``auto``.
    strict : bool
        Reject a batch that would leave a count negative (the whole ``apply`` call is rolled
        back).
    log_path : str or Path, optional
        Directory for the frontier change log: one Parquet file per ``apply`` call that
        changed a frontier, named ``changes-<n>.parquet`` in order (read it with
        :func:`read_log`).
    **tracker_options
        Passed to ``engine.make_tracker`` (``strategy``, ``memory_budget``, ...).

    Notes
    -----
    Thread-safe: ``apply``, ``save`` and the readers take one lock, so a streaming sink and
    other driver threads can share a service. Subscribers run under that lock, after the
    state is committed; they must not call ``apply``.
    """

    def __init__(self, graph: Graph, *, backend=None, strict: bool = False,
                 log_path: str | os.PathLike | None = None, **tracker_options):
        self.graph = graph
        self.width = graph.m + graph.max_depth
        self.strict = bool(strict)
        self._backend = backend
        self._options = tracker_options
        self._tracker = make_tracker(graph, backend, strict=self.strict, **tracker_options)
        self._depth = np.array([graph.depth(l) for l in range(graph.num_locations)], np.int64)
        self._lock = threading.RLock()
        self._next: dict[str, int] = {}
        self._held: dict[str, dict[int, _Group]] = {}
        self._duplicates = 0
        self._applied = 0
        self._subscribers: list[Callable[[pa.Table], None]] = []
        self._gap_subscribers: list[Callable[[list[Gap]], None]] = []
        self._log_dir = Path(log_path) if log_path is not None else None
        self._log_index = 0
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            self._log_index = _next_log_index(self._log_dir)

    # -- applying ------------------------------------------------------------------------------

    def apply(self, table) -> ApplyResult:
        """Apply the delta rows of ``table``, each ``(producer, seq)`` exactly once, in order.

        Parameters
        ----------
        table : pyarrow.Table, RecordBatch, or iterable of RecordBatch
            Columns ``loc, ts, diff, producer, seq`` (:func:`~spark_plugin.schema.delta_schema`;
            ``ts`` may also be a variable-size list, as Spark produces). Extra columns are
            ignored.

        Returns
        -------
        ApplyResult

        Raises
        ------
        SchemaError
            A column is missing or has the wrong type.
        engine.errors.UnknownLocationError, TimestampWidthError, TimestampRangeError, BatchError
            A row is invalid (the message names the row); a null value; a negative ``seq``.
        engine.errors.NegativeCountError
            Strict mode: a batch would leave a count negative (the message names the batch).
        SubscriberError
            A subscriber raised; the batches were applied and logged.

        On any error but ``SubscriberError`` nothing was applied: counts, frontiers and
        sequence state are as before the call.
        """
        table = _as_table(table)
        with self._lock:
            groups = self._read(table)
            plan = self._plan(groups)
            outputs = self._run(plan.apply)
            # commit the sequence state: nothing below can fail on the engine's account
            for producer, n in plan.next_seq.items():
                self._next[producer] = n
            for producer, pending in plan.held.items():
                if pending:
                    self._held[producer] = pending
                else:
                    self._held.pop(producer, None)
            self._duplicates += len(plan.duplicates)
            self._applied += len(plan.apply)
            changes = _changes_table(outputs, self.width)
            gaps = self._gaps()
            result = ApplyResult(applied=[(g.producer, g.seq) for g in plan.apply],
                                 duplicates=plan.duplicates, held=plan.newly_held,
                                 changes=changes, gaps=gaps)
            if plan.duplicates:
                log.info("ignored %d duplicate delta batch(es): %s", len(plan.duplicates),
                         _pairs(plan.duplicates))
            self._publish(result)
            return result

    def _read(self, table: pa.Table) -> list[_Group]:
        """Validate every row; return the groups sorted by ``(producer, seq)``."""
        check_delta_schema(table.schema, self.width)
        n = table.num_rows
        if n == 0:
            return []
        loc = int_column(table.column(LOC), LOC)
        ts = ts_matrix(table.column(TS), self.width, describe=lambda i: self._describe(loc[i]))
        diff = int_column(table.column(DIFF), DIFF)
        seq = int_column(table.column(SEQ), SEQ)
        if (seq < 0).any():
            i = int(np.flatnonzero(seq < 0)[0])
            raise BatchError(f"row {i}: {SEQ} {int(seq[i])} is negative; sequence numbers start "
                             f"at 0")
        prod = table.column(PRODUCER)
        if prod.null_count:
            i = int(np.flatnonzero(prod.is_null().to_numpy(zero_copy_only=False))[0])
            raise BatchError(f"row {i}: column {PRODUCER!r} is null")
        enc = pc.dictionary_encode(prod).combine_chunks()
        names = [str(s) for s in enc.dictionary.to_pylist()]
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        if "" in names:
            i = int(np.flatnonzero(codes == names.index(""))[0])
            raise BatchError(f"row {i}: column {PRODUCER!r} is empty; a producer needs a name")
        b_loc, b_ts, b_diff = batch_arrays(self.graph, self._depth, loc, ts, diff)
        rank = np.empty(len(names), np.int64)
        rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
        key = rank[codes]
        order = np.lexsort((seq, key))
        k_sorted, s_sorted = key[order], seq[order]
        starts = np.flatnonzero(np.r_[True, (k_sorted[1:] != k_sorted[:-1])
                                      | (s_sorted[1:] != s_sorted[:-1])])
        ends = np.r_[starts[1:], n]
        by_rank = sorted(names)
        groups = []
        for a, b in zip(starts.tolist(), ends.tolist()):
            rows = order[a:b]
            groups.append(_Group(by_rank[int(k_sorted[a])], int(s_sorted[a]), b_loc[rows],
                                 b_ts[rows], b_diff[rows]))
        return groups

    def _describe(self, loc) -> str:
        loc = int(loc)
        return self.graph.describe(loc) if 0 <= loc < self.graph.num_locations else \
            f"location {loc}"

    def _plan(self, groups: list[_Group]) -> "_Plan":
        """Decide, without changing anything, what to apply, hold and ignore."""
        plan = _Plan()
        i = 0
        while i < len(groups):
            producer = groups[i].producer
            n = self._next.get(producer, 0)
            pending = dict(self._held.get(producer, {}))
            while i < len(groups) and groups[i].producer == producer:
                g = groups[i]
                i += 1
                if g.seq < n or g.seq in pending:
                    plan.duplicates.append((producer, g.seq))
                elif g.seq == n:
                    plan.apply.append(g)
                    n += 1
                    while n in pending:
                        plan.apply.append(pending.pop(n))
                        n += 1
                else:
                    pending[g.seq] = g
                    plan.newly_held.append((producer, g.seq))
            plan.next_seq[producer] = n
            plan.held[producer] = pending
        return plan

    def _run(self, groups: list[_Group]) -> list[tuple[_Group, tuple]]:
        """Apply ``groups`` in order; on an error undo the ones applied and re-raise."""
        done: list[tuple[_Group, tuple]] = []
        try:
            for g in groups:
                done.append((g, self._update(g.loc, g.ts, g.diff)))
        except Exception as e:
            failed = groups[len(done)]
            for g, _ in reversed(done):
                try:
                    self._update(g.loc, g.ts, -g.diff)
                except Exception as undo_error:
                    raise ServiceStateError(
                        f"rolling back batch (producer {g.producer!r}, seq {g.seq}) after a "
                        f"failure of (producer {failed.producer!r}, seq {failed.seq}) failed: "
                        f"{undo_error}; the service state is inconsistent, restore it from a "
                        f"saved state") from e
            if isinstance(e, BatchError) and type(e).__init__ is BatchError.__init__:
                raise type(e)(f"delta batch (producer {failed.producer!r}, seq {failed.seq}): "
                              f"{e}; nothing of this apply call was applied") from e
            raise
        return done

    def _update(self, loc, ts, diff):
        t = self._tracker
        if hasattr(t, "update_arrays"):
            return t.update_arrays(loc, ts, diff)
        changes = t.update(loc, ts, diff)
        c_ts = np.zeros((len(changes), self.width), np.int64)
        for i, ch in enumerate(changes):
            c_ts[i, :len(ch.ts)] = ch.ts
        return (np.array([ch.loc for ch in changes], np.int32), c_ts,
                np.array([ch.diff for ch in changes], np.int64))

    def _publish(self, result: ApplyResult) -> None:
        if result.held:
            fresh = {p for p, _ in result.held}
            for gap in result.gaps:
                if gap.producer in fresh:
                    log.warning("delta batch gap: %s", gap)
        if result.changes.num_rows and self._log_dir is not None:
            self._write_log(result.changes)
        errors = []
        if result.changes.num_rows:
            for cb in list(self._subscribers):
                try:
                    cb(result.changes)
                except Exception as e:  # collected and raised below, naming the batches
                    errors.append((cb, e))
        if result.held:
            for cb in list(self._gap_subscribers):
                try:
                    cb(result.gaps)
                except Exception as e:  # collected and raised below
                    errors.append((cb, e))
        if errors:
            cb, e = errors[0]
            raise SubscriberError(
                f"{len(errors)} subscriber(s) raised, first {getattr(cb, '__qualname__', cb)!r}: "
                f"{type(e).__name__}: {e}; the batches {_pairs(result.applied)} were applied "
                f"and are not re-applied on redelivery") from e

    def _write_log(self, changes: pa.Table) -> None:
        path = self._log_dir / f"{_LOG_PREFIX}{self._log_index:08d}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        pq.write_table(changes, tmp)
        os.replace(tmp, path)
        self._log_index += 1

    # -- publication ---------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[pa.Table], None]) -> Callable[[], None]:
        """Call ``callback(changes)`` after every ``apply`` that changed a frontier.

        ``changes`` is :attr:`ApplyResult.changes`. Returns a function that unsubscribes.
        """
        with self._lock:
            self._subscribers.append(callback)
        return lambda: self._remove(self._subscribers, callback)

    def subscribe_gaps(self, callback: Callable[[list[Gap]], None]) -> Callable[[], None]:
        """Call ``callback(gaps)`` after every ``apply`` that held a batch out of order, with
        all current gaps. Returns a function that unsubscribes."""
        with self._lock:
            self._gap_subscribers.append(callback)
        return lambda: self._remove(self._gap_subscribers, callback)

    def _remove(self, subscribers: list, callback) -> None:
        with self._lock:
            if callback in subscribers:
                subscribers.remove(callback)

    def log_files(self) -> list[Path]:
        """The change log's files, in order (empty without ``log_path``)."""
        if self._log_dir is None:
            return []
        return sorted(self._log_dir.glob(f"{_LOG_PREFIX}*.parquet"))

    # -- reading -------------------------------------------------------------------------------

    @property
    def tracker(self):
        """The engine tracker (read it; apply deltas only through :meth:`apply`)."""
        return self._tracker

    def frontier(self, loc: int) -> list[tuple[int, ...]]:
        """The implied frontier at ``loc``, sorted."""
        with self._lock:
            return self._tracker.frontier(loc)

    def frontiers(self) -> list[list[tuple[int, ...]]]:
        """Every location's implied frontier, indexed by location."""
        with self._lock:
            return self._tracker.frontiers()

    def counts(self) -> pa.Table:
        """The non-zero pointstamp counts as ``loc int32, ts fixed_size_list<int64>[width],
        cnt int64``, sorted by ``(loc, ts)``."""
        with self._lock:
            loc, ts, cnt = self._table()
        return pa.Table.from_arrays([pa.array(loc, pa.int32()), ts_array(ts),
                                     pa.array(cnt, pa.int64())], schema=counts_schema(self.width))

    def _table(self):
        t = self._tracker
        if hasattr(t, "table"):
            return t.table()
        items = sorted(t.counts.items())
        ts = np.zeros((len(items), self.width), np.int64)
        for i, ((_, row), _) in enumerate(items):
            ts[i, :len(row)] = row
        return (np.array([l for (l, _), _ in items], np.int32), ts,
                np.array([c for _, c in items], np.int64))

    def status(self) -> ServiceStatus:
        """Next expected sequence numbers, held batches, duplicates and applied counts."""
        with self._lock:
            return ServiceStatus(next_seq=dict(self._next),
                                 held={p: sorted(h) for p, h in self._held.items() if h},
                                 duplicates=self._duplicates, applied=self._applied,
                                 gaps=self._gaps())

    def gaps(self) -> list[Gap]:
        """Producers waiting for a missing sequence number, sorted by producer."""
        with self._lock:
            return self._gaps()

    def _gaps(self) -> list[Gap]:
        return [Gap(p, self._next.get(p, 0), tuple(sorted(h)))
                for p, h in sorted(self._held.items()) if h]

    def check_complete(self, expected: Mapping[str, int] | None = None) -> None:
        """Raise :class:`MissingBatchError` if any sequence number is missing.

        Parameters
        ----------
        expected : mapping, optional
            Producer -> the last sequence number it must have delivered. Without it, only
            gaps (held batches) are reported; with it, also producers that have not reached
            their last sequence number (a missing final batch leaves no gap).
        """
        with self._lock:
            missing: dict[str, list[int]] = {g.producer: g.missing for g in self._gaps()}
            for producer, last in (expected or {}).items():
                n = self._next.get(producer, 0)
                held = self._held.get(producer, {})
                lost = [s for s in range(n, int(last) + 1) if s not in held]
                if lost:
                    missing[producer] = sorted(set(missing.get(producer, [])) | set(lost))
        if missing:
            detail = "; ".join(f"producer {p!r}: seq {_ranges(s)}"
                               for p, s in sorted(missing.items()))
            raise MissingBatchError(f"missing delta batches: {detail}", missing)

    # -- saving and restoring ------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the state to directory ``path`` (replaced atomically if it exists).

        Files: ``state.json`` (graph fingerprint, strictness, sequence numbers, counters),
        ``counts.parquet`` (:meth:`counts`) and ``held.parquet`` (held batches' rows).
        """
        path = Path(path)
        with self._lock:
            tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            pq.write_table(self.counts(), tmp / _COUNTS_FILE)
            pq.write_table(self._held_table(), tmp / _HELD_FILE)
            state = {"format": STATE_FORMAT, "graph": _graph_info(self.graph),
                     "strict": self.strict, "next_seq": self._next,
                     "held": {p: sorted(h) for p, h in self._held.items() if h},
                     "duplicates": self._duplicates, "applied": self._applied}
            (tmp / _STATE_FILE).write_text(json.dumps(state, indent=1, sort_keys=True))
            old = path.with_name(f"{path.name}.old-{os.getpid()}")
            if path.exists():
                os.replace(path, old)
            os.replace(tmp, path)
            if old.exists():
                shutil.rmtree(old)

    def _held_table(self) -> pa.Table:
        groups = [g for h in self._held.values() for g in h.values()]
        loc = np.concatenate([g.loc for g in groups]) if groups else np.zeros(0, np.int32)
        ts = np.concatenate([g.ts for g in groups]) if groups else \
            np.zeros((0, self.width), np.int64)
        diff = np.concatenate([g.diff for g in groups]) if groups else np.zeros(0, np.int64)
        prod = [g.producer for g in groups for _ in range(len(g.loc))]
        seq = np.array([g.seq for g in groups for _ in range(len(g.loc))], np.int64)
        return pa.Table.from_arrays([pa.array(loc, pa.int32()), ts_array(ts),
                                     pa.array(diff, pa.int64()), pa.array(prod, pa.string()),
                                     pa.array(seq, pa.int64())], schema=delta_schema(self.width))

    @classmethod
    def restore(cls, path: str | os.PathLike, graph: Graph, *, backend=None,
                strict: bool | None = None, log_path: str | os.PathLike | None = None,
                **tracker_options) -> "FrontierService":
        """A service in the state :meth:`save` wrote to ``path``.

        Parameters
        ----------
        path : str or Path
        graph : engine.Graph
            Must be the graph of the saved service (checked by fingerprint).
        backend, log_path, tracker_options
            As for the constructor (the backend may differ from the saved one).
        strict : bool, optional
            Default: the saved service's.

        Raises
        ------
        ServiceStateError
            Missing or unreadable files, another format, or another graph.
        """
        path = Path(path)
        try:
            state = json.loads((path / _STATE_FILE).read_text())
            counts = pq.read_table(path / _COUNTS_FILE)
            held = pq.read_table(path / _HELD_FILE)
        except (OSError, ValueError, pa.ArrowInvalid) as e:
            raise ServiceStateError(f"cannot read saved service state in {str(path)!r}: {e}") from e
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise ServiceStateError(f"{str(path / _STATE_FILE)!r} has format "
                                    f"{state.get('format')!r}, expected {STATE_FORMAT!r}")
        absent = [k for k in _STATE_KEYS if k not in state]
        if absent:
            raise ServiceStateError(f"{str(path / _STATE_FILE)!r} lacks {', '.join(absent)}")
        info = _graph_info(graph)
        if state.get("graph") != info:
            raise ServiceStateError(f"saved state in {str(path)!r} belongs to another graph "
                                    f"(saved {state.get('graph')}, given {info})")
        svc = cls(graph, backend=backend, strict=state["strict"] if strict is None else strict,
                  log_path=log_path, **tracker_options)
        width = svc.width
        try:
            c_loc = int_column(counts.column(LOC), LOC)
            c_ts = ts_matrix(counts.column(TS), width)
            c_cnt = int_column(counts.column(CNT), CNT)
            svc._update(*batch_arrays(graph, svc._depth, c_loc, c_ts, c_cnt))
            for g in svc._read(held):
                svc._held.setdefault(g.producer, {})[g.seq] = g
        except (KeyError, BatchError) as e:
            raise ServiceStateError(f"saved state in {str(path)!r} is invalid: {e}") from e
        svc._next = {str(p): int(n) for p, n in state["next_seq"].items()}
        svc._duplicates = int(state["duplicates"])
        svc._applied = int(state["applied"])
        want = {p: sorted(s) for p, s in state["held"].items()}
        have = {p: sorted(h) for p, h in svc._held.items()}
        if want != have:
            raise ServiceStateError(f"saved state in {str(path)!r} is inconsistent: state.json "
                                    f"lists held batches {want}, held.parquet has {have}")
        return svc


class _Plan:
    """What an ``apply`` call will do, decided before anything is changed."""

    def __init__(self):
        self.apply: list[_Group] = []
        self.duplicates: list[tuple[str, int]] = []
        self.newly_held: list[tuple[str, int]] = []
        self.next_seq: dict[str, int] = {}
        self.held: dict[str, dict[int, _Group]] = {}


def read_log(path: str | os.PathLike) -> pa.Table:
    """All frontier changes of a service's change log directory, in order."""
    files = sorted(Path(path).glob(f"{_LOG_PREFIX}*.parquet"))
    if not files:
        raise ServiceStateError(f"no change log files ({_LOG_PREFIX}*.parquet) in {str(path)!r}")
    return pa.concat_tables([pq.read_table(f) for f in files])


def _as_table(data) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, Iterable):
        batches = list(data)
        if not batches:
            raise SchemaError("delta batch is an empty sequence of record batches: no columns; "
                              "columns present: (none)")
        if all(isinstance(b, pa.RecordBatch) for b in batches):
            return pa.Table.from_batches(batches)
    raise SchemaError(f"expected a pyarrow Table, RecordBatch or iterable of RecordBatch, got "
                      f"{type(data).__name__}")


def _changes_table(outputs, width: int) -> pa.Table:
    parts = [(g, c) for g, c in outputs if len(c[0])]
    if not parts:
        return delta_schema(width).empty_table()
    loc = np.concatenate([c[0] for _, c in parts]).astype(np.int32)
    ts = np.concatenate([c[1] for _, c in parts])
    diff = np.concatenate([c[2] for _, c in parts]).astype(np.int64)
    prod = [g.producer for g, c in parts for _ in range(len(c[0]))]
    seq = np.concatenate([np.full(len(c[0]), g.seq, np.int64) for g, c in parts])
    return pa.Table.from_arrays([pa.array(loc, pa.int32()), ts_array(ts),
                                 pa.array(diff, pa.int64()), pa.array(prod, pa.string()),
                                 pa.array(seq, pa.int64())], schema=delta_schema(width))


def _graph_info(graph: Graph) -> dict:
    """Size and a structural fingerprint of ``graph`` (locations, edges, summaries)."""
    h = hashlib.sha256()
    h.update(repr(graph.m).encode())
    for l in graph.locations:
        h.update(repr((l.kind.value, l.op, l.port, l.depth)).encode())
    for e in graph.edges:
        h.update(repr((e.src, e.dst, e.channel, [repr(s) for s in e.summaries])).encode())
    return {"num_locations": graph.num_locations, "m": graph.m, "max_depth": graph.max_depth,
            "fingerprint": h.hexdigest()}


def _next_log_index(log_dir: Path) -> int:
    idx = [int(p.stem[len(_LOG_PREFIX):]) for p in log_dir.glob(f"{_LOG_PREFIX}*.parquet")
           if p.stem[len(_LOG_PREFIX):].isdigit()]
    return max(idx) + 1 if idx else 0


def _ranges(seqs: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``'1-3, 7'``."""
    out, s = [], sorted(seqs)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ", ".join(out)


def _pairs(pairs: list[tuple[str, int]]) -> str:
    return ", ".join(f"({p!r}, {s})" for p, s in pairs) or "(none)"
