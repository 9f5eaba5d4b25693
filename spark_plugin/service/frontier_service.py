"""The driver-side frontier service: applies delivery units exactly once per ``(producer, seq)``.

A :class:`FrontierService` holds one engine tracker for the job's graph. Executors send
delta rows (:mod:`spark_plugin.schema`), each tagged with the *producer* that made it and
that producer's *sequence number*; :meth:`FrontierService.apply` takes a table of such rows
(any mix of producers and sequence numbers) and, per producer, applies sequence numbers
``0, 1, 2, ...`` in order, each exactly once (docs/semantics.md 7). The rules
(``docs/spark.md``, "Exactly once"):

* **Delivery unit.** The rows of one ``(producer, seq)``: one atomic engine batch. A unit may
  be split into ``parts`` parts (optional columns ``part``, ``parts``; default one part),
  which may arrive in any calls, in any order; the unit is applied once every part has
  arrived. The rows of one part in one call form one *copy* of it -- unless the optional
  ``origin`` column (e.g. the file the rows were read from) names several copies.
* **Content.** Each copy's rows are consolidated (equal ``(loc, ts)`` summed, zeros dropped)
  and digested (SHA-256). A second copy of a part -- in the same call, a later call, while
  held or after the unit was applied (within ``digest_window`` units of the producer's
  next sequence number) -- with the same digest is a **duplicate**: ignored and counted.
  With another digest, or another ``parts``, it is a :class:`DeliveryConflictError`.
* **Gap.** A complete unit beyond the next expected ``seq`` is **held** and reported as a
  gap (log warning, gap subscribers, :meth:`~FrontierService.gaps`, as ranges); it is
  applied, in order, once the missing ones arrive. At most ``max_held_batches`` units and
  ``max_held_rows`` rows are held per producer (:class:`HeldLimitError` beyond).

The whole table is validated before anything is applied (schema, nulls, known locations,
timestamp widths and ranges: the engine's own checks), and a batch the engine rejects while
applying (a negative count in strict mode, a count overflow) is rolled back together with
everything applied earlier in the same call: a rejected table changes neither counts nor
sequence state. A held batch that the engine rejects when released is named
(:class:`HeldBatchError`) and can be inspected (:meth:`~FrontierService.held_batches`) and
dropped (:meth:`~FrontierService.discard_held`).

Frontier changes are published after each successful call: with ``log_path``, first as one
Parquet file per call in that directory (written and synced before the state is committed:
a failed write rolls the call back), then to subscribers (a pyarrow ``Table`` per call, with
the ``producer``/``seq`` that caused each change). :meth:`~FrontierService.save` writes the
state to a new version directory, synced, renamed into place atomically;
:meth:`~FrontierService.restore` reads the newest version back, validating every field, and
cuts the change log back to what that state had published. What is on disk -- the change
log and the saved versions -- is :mod:`spark_plugin.service.persistence`'s.

>>> from engine.core.workload import example_graph
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
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa

from engine import make_tracker
from engine.batched.batch_arrays import batch_arrays
from engine.errors import BatchError, NegativeCountError
from engine.core.graph import Graph

from spark_plugin.errors import (ChangeLogError, DeliveryConflictError, HeldBatchError, HeldLimitError,
                     MissingBatchError, SchemaError, ServiceStateError, SubscriberError)
from spark_plugin.service.persistence import ChangeLog, load_newest, save_version
from spark_plugin.schema import (CNT, DIFF, LOC, ORIGIN, PART, PARTS, PRODUCER, SEQ, TS, check_delta_schema,
                     counts_schema, delta_schema, int_column, text_column, ts_array, ts_matrix)

__all__ = ["FrontierService", "ApplyResult", "Gap", "ServiceStatus", "held_schema",
           "DEFAULT_MAX_HELD_BATCHES", "DEFAULT_MAX_HELD_ROWS", "DEFAULT_DIGEST_WINDOW"]

log = logging.getLogger(__name__)

#: Units held out of order per producer, by default.
DEFAULT_MAX_HELD_BATCHES = 10_000
#: Consolidated rows held out of order per producer, by default.
DEFAULT_MAX_HELD_ROWS = 10_000_000
#: Applied units per producer whose part digests are kept to check late copies.
DEFAULT_DIGEST_WINDOW = 1024
_EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Gap:
    """A producer whose next expected unit has not (completely) arrived, while others have.

    Attributes
    ----------
    producer : str
    expected : int
        The sequence number the service waits for.
    held : tuple[int, ...]
        Sequence numbers with at least one part received and held, sorted.
    missing : tuple[tuple[int, int], ...]
        Sequence numbers below the largest held one of which nothing has arrived, as sorted
        inclusive ranges ``(first, last)`` (a gap of 2**62 numbers is one pair).
    partial : tuple[tuple[int, int, int], ...]
        ``(seq, parts received, parts)`` of held units still missing parts.
    """

    producer: str
    expected: int
    held: tuple[int, ...]
    missing: tuple[tuple[int, int], ...] = ()
    partial: tuple[tuple[int, int, int], ...] = ()

    def __str__(self) -> str:
        text = f"producer {self.producer!r} is missing seq {_range_text(self.missing) or '(none)'}"
        if self.partial:
            text += " and parts of seq " + ", ".join(f"{s} ({k} of {n} parts)"
                                                     for s, k, n in self.partial)
        return text + f" (holding {_ranges(list(self.held))})"


@dataclass(frozen=True)
class ApplyResult:
    """What one :meth:`FrontierService.apply` call did.

    Attributes
    ----------
    applied : list[tuple[str, int]]
        ``(producer, seq)`` applied to the engine, in application order (including held ones
        this call released).
    duplicates : list[tuple[str, int]]
        ``(producer, seq)`` of copies ignored because an equal copy was already applied or
        held (once per ignored copy of a part).
    held : list[tuple[str, int]]
        ``(producer, seq)`` received (wholly or in part) and held: out of order or still
        missing parts.
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
        Per producer with held units (complete or partial), their sequence numbers.
    duplicates : int
        Duplicate copies ignored since the service started (or was saved).
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
class _Part:
    """One copy of one part of a delivery unit: its consolidated rows and their digest."""

    producer: str
    seq: int
    part: int
    parts: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray
    digest: str
    origin: str = ""


@dataclass
class _Unit:
    """A delivery unit being assembled or held: its parts received so far."""

    parts: int
    received: dict[int, _Part]
    before: bool = True  # complete before the current call (a held batch, not a new one)

    @property
    def complete(self) -> bool:
        return len(self.received) == self.parts

    @property
    def rows(self) -> int:
        return sum(len(p.loc) for p in self.received.values())


@dataclass
class _Group:
    """The rows of one complete unit, applied as one engine batch."""

    producer: str
    seq: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray
    held_before: bool = False


class FrontierService:
    """Exactly-once application of delivery units to a frontier tracker, with publication.

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
        :func:`~spark_plugin.service.persistence.read_log`). One service at a time: a lock
        file (``.lock``, ``flock``) refuses a second one (:class:`ChangeLogError`) until the
        first is closed or its process ends.
    max_held_batches, max_held_rows : int
        Per producer, the most units (complete or partial) and consolidated rows held out of
        order; a call that would hold more raises :class:`HeldLimitError`.
    digest_window : int
        Per producer, the applied units whose part digests are kept (the last
        ``digest_window``), so that a late copy with other content is a conflict rather than
        a duplicate; older copies are duplicates unchecked.
    **tracker_options
        Passed to ``engine.make_tracker`` (``strategy``, ``memory_budget``, ...).

    Notes
    -----
    Thread-safe: ``apply``, ``save`` and the readers take one lock, so a streaming sink and
    other driver threads can share a service. Subscribers run under that lock, after the
    state is committed; they must not call ``apply``.
    """

    def __init__(self, graph: Graph, *, backend=None, strict: bool = False,
                 log_path: str | os.PathLike | None = None,
                 max_held_batches: int = DEFAULT_MAX_HELD_BATCHES,
                 max_held_rows: int = DEFAULT_MAX_HELD_ROWS,
                 digest_window: int = DEFAULT_DIGEST_WINDOW, **tracker_options):
        for name, v, low in (("max_held_batches", max_held_batches, 0),
                             ("max_held_rows", max_held_rows, 0),
                             ("digest_window", digest_window, 0)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        self.graph = graph
        self.width = graph.m + graph.max_depth
        self.strict = bool(strict)
        self.max_held_batches = int(max_held_batches)
        self.max_held_rows = int(max_held_rows)
        self.digest_window = int(digest_window)
        self._backend = backend
        self._options = tracker_options
        self._tracker = make_tracker(graph, backend, strict=self.strict, **tracker_options)
        self._depth = np.array([graph.depth(l) for l in range(graph.num_locations)], np.int64)
        self._lock = threading.RLock()
        self._next: dict[str, int] = {}
        self._pending: dict[str, dict[int, _Unit]] = {}
        self._recent: dict[str, dict[int, tuple[int, tuple[str, ...]]]] = {}
        self._duplicates = 0
        self._applied = 0
        self._subscribers: list[Callable[[pa.Table], None]] = []
        self._gap_subscribers: list[Callable[[list[Gap]], None]] = []
        self._log = ChangeLog(log_path) if log_path is not None else None

    def close(self) -> None:
        """Release the change log directory's lock (the service can still be read)."""
        with self._lock:
            if self._log is not None:
                self._log.close()

    def __enter__(self) -> "FrontierService":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- applying ------------------------------------------------------------------------------

    def apply(self, table) -> ApplyResult:
        """Apply the delta rows of ``table``: each delivery unit exactly once, in seq order.

        Parameters
        ----------
        table : pyarrow.Table, RecordBatch, or iterable of RecordBatch
            Columns ``loc, ts, diff, producer, seq`` (:func:`~spark_plugin.schema.delta_schema`;
            ``ts`` may also be a variable-size list, as Spark produces; ``producer`` may be
            dictionary-encoded), optionally ``part``, ``parts`` (integers) and ``origin``
            (string). Extra columns are ignored.

        Returns
        -------
        ApplyResult

        Raises
        ------
        SchemaError
            A column is missing or has the wrong type.
        engine.errors.UnknownLocationError, TimestampWidthError, TimestampRangeError, BatchError
            A row is invalid (the message names the row); a null value; a negative ``seq``;
            a ``part`` outside ``[0, parts)``.
        DeliveryConflictError
            Two copies of a part differ, or parts of a unit disagree on ``parts``.
        HeldLimitError
            A producer would hold more than ``max_held_batches`` units or ``max_held_rows``
            rows.
        engine.errors.NegativeCountError, engine.errors.CountOverflowError
            A batch would leave a count negative (strict mode) or outside int64 (the message
            names the batch); :class:`HeldBatchError` when it is a held batch.
        ChangeLogError
            The change log file could not be written.
        SubscriberError
            A subscriber raised; the batches were applied and logged.

        On any error but ``SubscriberError`` nothing was applied: counts, frontiers,
        sequence state and the change log are as before the call.
        """
        table = _as_table(table)
        with self._lock:
            plan = self._plan(self._read(table))
            outputs = self._run(plan.apply)
            changes = _changes_table(outputs, self.width)
            if changes.num_rows and self._log is not None:
                try:
                    self._log.write(changes)
                except OSError as e:
                    self._undo(outputs, None, e)
                    raise ChangeLogError(
                        f"writing the change log in {str(self._log.directory)!r} failed: {e}; "
                        f"nothing of this apply call was applied (deliver it again)") from e
            # commit the sequence state: nothing below can fail on the engine's account
            for producer, n in plan.next_seq.items():
                self._next[producer] = n
            for producer, pending in plan.pending.items():
                if pending:
                    self._pending[producer] = pending
                else:
                    self._pending.pop(producer, None)
            for producer, recent in plan.recent.items():
                n = self._next.get(producer, 0)
                self._recent[producer] = {q: d for q, d in recent.items()
                                          if q >= n - self.digest_window}
            for unit_map in plan.pending.values():  # held from now on: "received earlier"
                for u in unit_map.values():
                    u.before = u.complete
            self._duplicates += len(plan.duplicates)
            self._applied += len(plan.apply)
            gaps = self._gaps()
            result = ApplyResult(applied=[(g.producer, g.seq) for g in plan.apply],
                                 duplicates=plan.duplicates, held=plan.newly_held,
                                 changes=changes, gaps=gaps)
            if plan.duplicates:
                log.info("ignored %d duplicate delta batch copies: %s", len(plan.duplicates),
                         _pairs(plan.duplicates))
            self._publish(result)
            return result

    def _read(self, table: pa.Table) -> list[_Part]:
        """Validate every row; return one consolidated copy per ``(producer, seq, part,
        origin)``, sorted by those keys."""
        return _read_parts(table, self.graph, self._depth, self.width, self._describe)

    def _describe(self, loc) -> str:
        loc = int(loc)
        return self.graph.describe(loc) if 0 <= loc < self.graph.num_locations else \
            f"location {loc}"

    def _plan(self, parts: list[_Part]) -> "_Plan":
        """Decide, without changing anything, what to apply, hold and ignore."""
        plan = _Plan()
        i = 0
        while i < len(parts):
            producer = parts[i].producer
            n = self._next.get(producer, 0)
            pending = dict(self._pending.get(producer, {}))
            recent = dict(self._recent.get(producer, {}))
            copied: set[int] = set()
            received: list[int] = []
            while i < len(parts) and parts[i].producer == producer:
                p = parts[i]
                i += 1
                if p.seq < n:   # applied already (perhaps earlier in this call)
                    known = recent.get(p.seq)
                    if known is not None:
                        _check_copy(p, known[0], known[1][p.part] if p.part < known[0] else None,
                                    "applied")
                    plan.duplicates.append((producer, p.seq))
                    continue
                unit = pending.get(p.seq)
                if unit is None:
                    unit = _Unit(p.parts, {}, before=False)
                    copied.add(p.seq)
                elif p.seq not in copied:  # copy on write: the service's unit stays as it is
                    unit = _Unit(unit.parts, dict(unit.received), before=unit.before)
                    copied.add(p.seq)
                pending[p.seq] = unit
                if p.part in unit.received or unit.parts != p.parts:
                    have = unit.received.get(p.part)
                    _check_copy(p, unit.parts, have.digest if have is not None else None,
                                "held")
                    plan.duplicates.append((producer, p.seq))
                    continue
                unit.received[p.part] = p
                received.append(p.seq)
                while n in pending and pending[n].complete:
                    u = pending.pop(n)
                    ordered = [u.received[k] for k in range(u.parts)]
                    plan.apply.append(_Group(
                        producer, n, np.concatenate([q.loc for q in ordered]),
                        np.concatenate([q.ts for q in ordered]),
                        np.concatenate([q.diff for q in ordered]), held_before=u.before))
                    recent[n] = (u.parts, tuple(q.digest for q in ordered))
                    n += 1
            if len(pending) > self.max_held_batches:
                raise HeldLimitError(
                    f"producer {producer!r} would hold {len(pending)} delta batches out of "
                    f"order (waiting for seq {n}; held seq {_ranges(sorted(pending))}), more "
                    f"than max_held_batches={self.max_held_batches}; nothing of this call was "
                    f"applied")
            rows = sum(u.rows for u in pending.values())
            if rows > self.max_held_rows:
                raise HeldLimitError(
                    f"producer {producer!r} would hold {rows} rows out of order (waiting for "
                    f"seq {n}), more than max_held_rows={self.max_held_rows}; nothing of this "
                    f"call was applied")
            plan.next_seq[producer] = n
            plan.pending[producer] = pending
            plan.recent[producer] = recent
            for q in dict.fromkeys(received):
                if q in pending:
                    plan.newly_held.append((producer, q))
        return plan

    def _run(self, groups: list[_Group]) -> list[tuple[_Group, tuple]]:
        """Apply ``groups`` in order; on an error undo the ones applied and re-raise."""
        done: list[tuple[_Group, tuple]] = []
        try:
            for g in groups:
                done.append((g, self._update(g.loc, g.ts, g.diff)))
        except Exception as e:
            failed = groups[len(done)]
            self._undo(done, failed, e)
            if isinstance(e, NegativeCountError) and failed.held_before:
                raise HeldBatchError(
                    f"held delta batch (producer {failed.producer!r}, seq {failed.seq}), "
                    f"received earlier and released by this call: {e}; nothing of this apply "
                    f"call was applied. The held batch blocks its producer: inspect it with "
                    f"held_batches({failed.producer!r}) and drop it with "
                    f"discard_held({failed.producer!r}, {failed.seq})",
                    failed.producer, failed.seq) from e
            if isinstance(e, BatchError) and type(e).__init__ is BatchError.__init__:
                held = (f"; it was held and blocks its producer: drop it with "
                        f"discard_held({failed.producer!r}, {failed.seq})"
                        if failed.held_before else "")
                raise type(e)(f"delta batch (producer {failed.producer!r}, seq {failed.seq}): "
                              f"{e}; nothing of this apply call was applied{held}") from e
            raise
        return done

    def _undo(self, done, failed, error) -> None:
        """Apply the negation of ``done`` (``(group, changes)`` pairs) in reverse order."""
        for g, _ in reversed(done):
            try:
                self._update(g.loc, g.ts, -g.diff)
            except Exception as undo_error:
                cause = (f"a failure of (producer {failed.producer!r}, seq {failed.seq})"
                         if failed is not None else f"{type(error).__name__}: {error}")
                raise ServiceStateError(
                    f"rolling back batch (producer {g.producer!r}, seq {g.seq}) after {cause} "
                    f"failed: {undo_error}; the service state is inconsistent, restore it from "
                    f"a saved state") from error

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
                if gap.producer in fresh:  # parts still to come without a gap: normal
                    log.log(logging.WARNING if gap.missing else logging.INFO,
                            "delta batch gap: %s", gap)
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

    # -- held batches --------------------------------------------------------------------------

    def held_batches(self, producer: str | None = None) -> pa.Table:
        """The rows of the units held (out of order, or missing parts), consolidated, with
        their ``part`` and ``parts``: :func:`held_schema`, sorted by ``(producer, seq,
        part)``; only ``producer``'s with it."""
        with self._lock:
            return self._held_table(producer)

    def discard_held(self, producer: str, seq: int) -> pa.Table:
        """Drop the held unit ``(producer, seq)`` -- e.g. one that strict mode rejects when it
        is released (:class:`HeldBatchError`) -- and return its rows (:meth:`held_batches`).

        The service forgets it: a later copy is received afresh. Raises ``KeyError`` naming
        the held units when ``(producer, seq)`` is not held.
        """
        with self._lock:
            units = self._pending.get(producer, {})
            if seq not in units:
                raise KeyError(f"(producer {producer!r}, seq {seq}) is not held; held: "
                               f"{ {p: _ranges(sorted(u)) for p, u in self._pending.items()} }")
            rows = self._held_table(producer, seq)
            del units[seq]
            if not units:
                del self._pending[producer]
            log.warning("discarded held delta batch (producer %r, seq %d): %d rows",
                        producer, seq, rows.num_rows)
            return rows

    def _held_table(self, producer: str | None = None, seq: int | None = None) -> pa.Table:
        parts = [p for prod, units in sorted(self._pending.items())
                 if producer is None or prod == producer
                 for q, u in sorted(units.items()) if seq is None or q == seq
                 for _, p in sorted(u.received.items())]
        return _parts_table(parts, self.width)

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
        if self._log is None:
            return []
        return self._log.files()

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
        """Next expected sequence numbers, held units, duplicates and applied counts."""
        with self._lock:
            return ServiceStatus(next_seq=dict(self._next),
                                 held={p: sorted(h) for p, h in self._pending.items() if h},
                                 duplicates=self._duplicates, applied=self._applied,
                                 gaps=self._gaps())

    def gaps(self) -> list[Gap]:
        """Producers waiting for a missing unit or part, sorted by producer."""
        with self._lock:
            return self._gaps()

    def _gaps(self) -> list[Gap]:
        out = []
        for p, units in sorted(self._pending.items()):
            if not units:
                continue
            n = self._next.get(p, 0)
            held = sorted(units)
            out.append(Gap(p, n, tuple(held), tuple(_missing_ranges(n, held[-1], held)),
                           tuple((q, len(units[q].received), units[q].parts) for q in held
                                 if not units[q].complete)))
        return out

    def check_complete(self, expected: Mapping[str, int] | None = None) -> None:
        """Raise :class:`MissingBatchError` if any sequence number or part is missing.

        Parameters
        ----------
        expected : mapping, optional
            Producer -> the last sequence number it must have delivered. Without it, only
            gaps (held units) are reported; with it, also producers that have not reached
            their last sequence number (a missing final batch leaves no gap).
        """
        expected = {str(p): int(q) for p, q in (expected or {}).items()}
        with self._lock:
            missing: dict[str, list[tuple[int, int]]] = {}
            partial: dict[str, list[int]] = {}
            for p in sorted(set(self._pending) | set(expected)):
                units = self._pending.get(p, {})
                held = sorted(units)
                stop = max(held[-1] if held else -1, expected.get(p, -1)) + 1
                ranges = _missing_ranges(self._next.get(p, 0), stop, held)
                if ranges:
                    missing[p] = ranges
                incomplete = [q for q in held if not units[q].complete]
                if incomplete:
                    partial[p] = incomplete
        if missing or partial:
            detail = []
            for p in sorted(set(missing) | set(partial)):
                what = [f"seq {_range_text(missing[p])}"] if p in missing else []
                what += [f"parts of seq {_ranges(partial[p])}"] if p in partial else []
                detail.append(f"producer {p!r}: {' and '.join(what)}")
            raise MissingBatchError(f"missing delta batches: {'; '.join(detail)}", missing)

    # -- saving and restoring ------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> Path:
        """Write the state as a new version under directory ``path``; return its directory.

        The version (``path/v-<n>/``: ``state.json`` with sequence state, part digests,
        file checksums and the graph's fingerprint; ``counts.parquet``; ``held.parquet``)
        is written to a temporary directory, every file and the directory synced, then
        renamed into place in one atomic step; older versions are removed afterwards. A
        crash at any point leaves the previous version or the new one complete, and
        :meth:`restore` reads the newest
        (:func:`~spark_plugin.service.persistence.save_version`).
        """
        with self._lock:
            fields = {"strict": self.strict, "next_seq": dict(self._next),
                      "pending": {p: {str(q): {"parts": u.parts,
                                               "received": {str(k): r.digest
                                                            for k, r in u.received.items()}}
                                      for q, u in units.items()}
                                  for p, units in self._pending.items() if units},
                      "recent": {p: {str(q): [parts, list(d)] for q, (parts, d) in r.items()}
                                 for p, r in self._recent.items() if r},
                      "duplicates": self._duplicates, "applied": self._applied,
                      "log_index": self._log.index if self._log is not None else None}
            return save_version(path, self.graph, self.counts(), self._held_table(), fields)

    @classmethod
    def restore(cls, path: str | os.PathLike, graph: Graph, *, backend=None,
                strict: bool | None = None, log_path: str | os.PathLike | None = None,
                **options) -> "FrontierService":
        """A service in the state :meth:`save` wrote last under ``path``.

        Parameters
        ----------
        path : str or Path
        graph : engine.Graph
            Must be the graph of the saved service (checked by fingerprint).
        backend, log_path, options
            As for the constructor (the backend may differ from the saved one).
        strict : bool, optional
            Default: the saved service's.

        With ``log_path`` and a saved service that had a change log, change log files the
        saved state had not written (written after the save) are renamed
        ``*.parquet.discarded-<time>``: their batches are not applied in the restored state,
        and their redelivery logs them again, so the log replays to the service's frontiers.

        Raises
        ------
        ServiceStateError
            No saved version, unreadable or corrupted files (checksums), another format,
            another graph, or a field that is missing or invalid; the message names it.
        """
        where, state, counts, held = load_newest(path, graph)
        svc = cls(graph, backend=backend, strict=state["strict"] if strict is None else strict,
                  log_path=log_path, **options)
        try:
            svc._load(where, state, counts, held)
        except BaseException:
            svc.close()
            raise
        if svc._log is not None and state["log_index"] is not None:
            svc._log.cut(int(state["log_index"]))
        return svc

    def _load(self, where: Path, state: dict, counts: pa.Table, held: pa.Table) -> None:
        graph, width = self.graph, self.width
        try:
            c_loc = int_column(counts.column(LOC), LOC)
            c_ts = ts_matrix(counts.column(TS), width)
            c_cnt = int_column(counts.column(CNT), CNT)
            b = batch_arrays(graph, self._depth, c_loc, c_ts, c_cnt)
            from gpu_kernels.consolidate import SumOverflow, consolidate
            try:
                twice = len(consolidate(*b)[0]) != len(b[0])
            except SumOverflow:
                twice = True
            if (b[2] == 0).any() or twice:
                raise BatchError("counts.parquet has a zero count or a pointstamp twice")
            self._update(*b)
            parts = _read_parts(held, graph, self._depth, width, self._describe)
        except (KeyError, BatchError) as e:
            raise ServiceStateError(f"saved state in {str(where)!r} is invalid: {e}") from e
        got = {(p.producer, p.seq, p.part): p for p in parts}
        for p, units in state["pending"].items():
            for q, u in units.items():
                unit = _Unit(u["parts"], {})
                for k, digest in u["received"].items():
                    part = got.pop((p, q, k), None)
                    if part is None and digest == _EMPTY_DIGEST:
                        part = _Part(p, q, k, u["parts"], np.zeros(0, np.int32),
                                     np.zeros((0, width), np.int64), np.zeros(0, np.int64),
                                     _EMPTY_DIGEST)
                    if part is None or part.digest != digest or part.parts != u["parts"]:
                        raise ServiceStateError(
                            f"saved state in {str(where)!r} is inconsistent: held.parquet's "
                            f"rows of (producer {p!r}, seq {q}, part {k}) do not match the "
                            f"digest in state.json")
                    unit.received[k] = part
                unit.before = unit.complete
                self._pending.setdefault(p, {})[q] = unit
        if got:
            p, q, k = next(iter(got))
            raise ServiceStateError(f"saved state in {str(where)!r} is inconsistent: "
                                    f"held.parquet has rows of (producer {p!r}, seq {q}, part "
                                    f"{k}), which state.json does not list")
        self._next = dict(state["next_seq"])
        self._recent = {p: {q: (v[0], tuple(v[1])) for q, v in r.items()}
                        for p, r in state["recent"].items()}
        self._duplicates = state["duplicates"]
        self._applied = state["applied"]


class _Plan:
    """What an ``apply`` call will do, decided before anything is changed."""

    def __init__(self):
        self.apply: list[_Group] = []
        self.duplicates: list[tuple[str, int]] = []
        self.newly_held: list[tuple[str, int]] = []
        self.next_seq: dict[str, int] = {}
        self.pending: dict[str, dict[int, _Unit]] = {}
        self.recent: dict[str, dict[int, tuple[int, tuple[str, ...]]]] = {}


def _check_copy(p: _Part, parts: int, digest: str | None, where: str) -> None:
    """Raise :class:`DeliveryConflictError` unless copy ``p`` matches the known part."""
    if parts != p.parts:
        raise DeliveryConflictError(
            f"delivery conflict: (producer {p.producer!r}, seq {p.seq}) arrived as "
            f"{p.parts} part(s) (part {p.part}{_from(p)}) but was {where} as {parts}; nothing "
            f"of this call was applied", p.producer, p.seq)
    if digest is not None and digest != p.digest:
        raise DeliveryConflictError(
            f"delivery conflict: part {p.part} of (producer {p.producer!r}, seq {p.seq}) "
            f"arrived again{_from(p)} with other content (digest {p.digest[:12]}, {where} copy "
            f"{digest[:12]}); a retried copy must be identical; nothing of this call was "
            f"applied", p.producer, p.seq)


def _from(p: _Part) -> str:
    return f" from {p.origin!r}" if p.origin else ""


def held_schema(width: int) -> pa.Schema:
    """Held rows: the delta schema plus ``part int64, parts int64``."""
    return delta_schema(width).append(pa.field(PART, pa.int64(), nullable=False)).append(
        pa.field(PARTS, pa.int64(), nullable=False))


def _parts_table(parts: list[_Part], width: int) -> pa.Table:
    sizes = [len(p.loc) for p in parts]
    loc = np.concatenate([p.loc for p in parts]) if parts else np.zeros(0, np.int32)
    ts = np.concatenate([p.ts for p in parts]) if parts else np.zeros((0, width), np.int64)
    diff = np.concatenate([p.diff for p in parts]) if parts else np.zeros(0, np.int64)

    def rep(values, typ):
        return pa.array(np.repeat(np.array(values, np.int64), sizes) if typ == pa.int64()
                        else [v for v, k in zip(values, sizes) for _ in range(k)], typ)

    return pa.Table.from_arrays(
        [pa.array(loc.astype(np.int32), pa.int32()), ts_array(ts), pa.array(diff, pa.int64()),
         rep([p.producer for p in parts], pa.string()), rep([p.seq for p in parts], pa.int64()),
         rep([p.part for p in parts], pa.int64()), rep([p.parts for p in parts], pa.int64())],
        schema=held_schema(width))


def _read_parts(table: pa.Table, graph: Graph, depth, width: int, describe) -> list[_Part]:
    """Validate every row of ``table``; return one consolidated copy per ``(producer, seq,
    part, origin)``, sorted by ``(producer, seq, part, origin)``."""
    check_delta_schema(table.schema, width)
    names = table.schema.names
    for name in (PART, PARTS):
        if name in names and not pa.types.is_integer(table.schema.field(name).type):
            raise SchemaError(f"column {name!r} has type {table.schema.field(name).type}, "
                              f"expected an integer type (int64); columns present: "
                              f"{', '.join(map(repr, names))}")
    if ORIGIN in names:
        check_delta_schema(table.schema, width, (ORIGIN,))
    n = table.num_rows
    if n == 0:
        return []
    loc = int_column(table.column(LOC), LOC)
    ts = ts_matrix(table.column(TS), width, describe=lambda i: describe(loc[i]))
    diff = int_column(table.column(DIFF), DIFF)
    seq = int_column(table.column(SEQ), SEQ)
    if (seq < 0).any():
        i = int(np.flatnonzero(seq < 0)[0])
        raise BatchError(f"row {i}: {SEQ} {int(seq[i])} is negative; sequence numbers start "
                         f"at 0")
    codes, producers = text_column(table.column(PRODUCER), PRODUCER)
    if "" in producers:
        i = int(np.flatnonzero(codes == producers.index(""))[0])
        raise BatchError(f"row {i}: column {PRODUCER!r} is empty; a producer needs a name")
    part = int_column(table.column(PART), PART) if PART in names else np.zeros(n, np.int64)
    parts = int_column(table.column(PARTS), PARTS) if PARTS in names else np.ones(n, np.int64)
    bad = (parts < 1) | (part < 0) | (part >= parts)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise BatchError(f"row {i}: {PART} {int(part[i])} of {PARTS} {int(parts[i])}: a unit "
                         f"has parts >= 1, numbered 0 .. parts - 1")
    if ORIGIN in names:
        o_codes, origins = text_column(table.column(ORIGIN), ORIGIN)
    else:
        o_codes, origins = np.zeros(n, np.int64), [""]
    b_loc, b_ts, b_diff = batch_arrays(graph, depth, loc, ts, diff)
    p_rank = _rank(producers)[codes]
    o_rank = _rank(origins)[o_codes]
    order = np.lexsort((o_rank, part, seq, p_rank))
    keys = [k[order] for k in (p_rank, seq, part, o_rank)]
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    ends = np.r_[starts[1:], n]
    by_p, by_o = sorted(producers), sorted(origins)
    from gpu_kernels.consolidate import SumOverflow, consolidate
    from engine.batched.kernels import count_overflow
    out = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        rows = order[a:b]
        counts = parts[rows]
        prod, q, k = by_p[int(keys[0][a])], int(keys[1][a]), int(keys[2][a])
        if (counts != counts[0]).any():
            raise DeliveryConflictError(
                f"delivery conflict: rows of (producer {prod!r}, seq {q}, part {k}) disagree "
                f"on {PARTS} ({sorted(set(counts.tolist()))})", prod, q)
        try:
            c_loc, c_ts, c_diff = consolidate(np.ascontiguousarray(b_loc[rows]),
                                              np.ascontiguousarray(b_ts[rows]),
                                              np.ascontiguousarray(b_diff[rows]))
        except SumOverflow as e:
            err = count_overflow(graph, e)
            raise type(err)(f"(producer {prod!r}, seq {q}, part {k}): {err}; nothing of this "
                            f"call was applied") from None
        out.append(_Part(prod, q, k, int(counts[0]), c_loc, c_ts, c_diff,
                         _digest(c_loc, c_ts, c_diff), by_o[int(keys[3][a])]))
    return out


def _rank(names: list[str]) -> np.ndarray:
    rank = np.empty(len(names), np.int64)
    rank[np.argsort(np.array(names, dtype=object), kind="stable")] = np.arange(len(names))
    return rank


def _digest(loc, ts, diff) -> str:
    """SHA-256 of consolidated rows (sorted, summed, no zeros): equal content, equal digest."""
    if len(loc) == 0:
        return _EMPTY_DIGEST
    h = hashlib.sha256()
    for a, t in ((loc, "<i4"), (ts, "<i8"), (diff, "<i8")):
        h.update(np.ascontiguousarray(a, dtype=t).tobytes())
    return h.hexdigest()


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


def _missing_ranges(start: int, stop: int, have: list[int]) -> list[tuple[int, int]]:
    """Inclusive ranges of ``[start, stop)`` not in sorted ``have`` (O(len(have)))."""
    out, lo = [], start
    for q in have:
        if q >= stop:
            break
        if q > lo:
            out.append((lo, q - 1))
        lo = max(lo, q + 1)
    if lo < stop:
        out.append((lo, stop - 1))
    return out


def _range_text(ranges) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


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
