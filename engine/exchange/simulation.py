"""The exchange protocol simulated in one process: ``K`` workers, their FIFO queues and the
data in flight, driven by a seeded scheduler, with Safe and Mono checked (``docs/exchange.md``).

:class:`Exchange` simulates ``K`` workers (:class:`~engine.exchange.worker.Worker`) with a
seeded scheduler that interleaves the four transitions at random; :func:`split_batch` turns a
workload batch into admissible operations.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> a = g.source(1, 0)                      # the input operator's output port
>>> ex = Exchange(g, 2, seed=1)
>>> ex.perform_batch([a], [(0, 0)], [1])    # a capability at (0, 0): admitted as initial
>>> ex.perform_batch([g.target(2, 1), a, a], [(0, 0), (1, 0), (0, 0)], [5, 1, -1])
>>> ex.quiesce()
>>> ex.frontiers(1)[g.target(2, 1)], ex.frontiers(0)[g.target(2, 1)]
([(0, 0)], [(0, 0)])
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from engine.core.choices import Choice
from engine.core.graph import Graph
from engine.errors import (BatchError, ExchangeError, ExchangeStateError, NegativeCountError,
                           SafetyError)
from engine.exchange.messages import INITIAL, OWN, Operation, Update
from engine.exchange.multisets import (PointstampOrder, Table, _empty, _lookup, _magnitude,
                                       _positive, _rows, _take, _zsum, covered)
from engine.exchange.phases import PhaseClock
from engine.exchange.policies import HoldBack, make_policy
from engine.exchange.worker import Worker, _feed

__all__ = ["Exchange", "CheckMode", "split_batch", "owner_of", "warm_up", "frontier_table",
           "covered"]


class CheckMode(Choice):
    """When :class:`Exchange` checks Safe, Mono and the frontier property by itself, and how it
    schedules transitions.

    ``every-step``
        One transition at a time, chosen by the seeded scheduler among all enabled ones
        (:meth:`Exchange.step`), every property checked after each: the exhaustive mode
        of the tests.
    ``round``
        Rounds (:meth:`Exchange.round`): every worker's next operation, every worker's send,
        then every queued update and data message moved as one columnar batch (a seeded
        random prefix of some queues held back); checked after each round.
    ``batch``
        Rounds, checked once per workload batch, after quiescence (:meth:`Exchange.run`):
        the fast mode of ``tfront replay --workers``.
    ``none``
        Rounds; nothing checked unless asked (:meth:`Exchange.check_safety`).
    """

    EVERY_STEP = "every-step"
    ROUND = "round"
    BATCH = "batch"
    NONE = "none"

    @classmethod
    def label(cls) -> str:
        return "check mode"

    @classmethod
    def of(cls, check) -> "CheckMode":
        """``True`` is ``every-step`` and ``False``/None ``none`` (the old boolean flag);
        else :meth:`parse`."""
        if check is True:
            return cls.EVERY_STEP
        if check is False or check is None:
            return cls.NONE
        return cls.parse(check)


# -- splitting a workload batch ----------------------------------------------------------------

def owner_of(loc, workers: int) -> np.ndarray:
    """The worker that holds capabilities at each location: ``loc % workers``."""
    return np.asarray(loc, np.int64) % workers


def split_batch(graph: Graph, loc, ts, diff, workers: int, *, held=None,
                order: PointstampOrder | None = None, held_frontiers=None) -> list[Operation]:
    """Split one batch of changes to ``rec`` among ``workers`` workers, admissibly.

    Each pointstamp belongs to the worker ``loc % workers`` (:func:`owner_of`): that worker
    holds its capabilities. Given ``held`` -- the capabilities held before the batch, as
    ``(loc, ts, cnt)`` (held by their owners; default none) -- each row becomes:

    * a negative change: a drop by the owner (it holds the count: the batch may not take
      ``rec`` below zero);
    * a positive change at ``p``: performed by the owner as a new own capability if the owner
      holds a capability at or before ``p``; otherwise by the lowest worker that holds a
      capability strictly before ``p``, as a data message to the owner; otherwise (nothing
      held justifies it) an :data:`~engine.exchange.messages.INITIAL` row, admitted before
      the operations by every worker at once (:meth:`~engine.exchange.worker.Worker.admit`).

    Returns
    -------
    list[Operation]
        First one ``INITIAL`` operation per owner that has such rows, then one operation per
        worker with rows (its own positives and data messages, and its drops). Every guard is
        checked against ``held`` and each worker drops only pointstamps it owns, so once the
        workers hold (at least) ``held``, the operations are admissible in any order and
        interleaving. A batch queued while earlier operations are still pending or their
        data in flight is split against what will be held after them
        (:meth:`Exchange.perform_batch`).

    ``held_frontiers``, if given, is per worker the implied frontier table of what it holds
    of ``held`` (each worker holding only pointstamps it owns: :meth:`Worker.caps_frontier`);
    the questions "does the owner hold something at or before the row" and "which is the
    lowest worker holding something strictly before it" are then frontier covers, with no
    could-result-in pass at all.
    """
    from engine.batched.batch_arrays import batch_arrays
    order = order if order is not None else PointstampOrder(graph)
    b = _zsum(batch_arrays(graph, order.ga.depth, loc, ts, diff))
    W = order.width
    h = _positive(_zsum(batch_arrays(graph, order.ga.depth, *held))) if held is not None else _empty(W)
    owner = owner_of(b[0], workers)
    to = np.full(len(b[0]), OWN, np.int64)
    performer = owner.copy()
    pos = np.flatnonzero(b[2] > 0)
    if len(pos):
        # Each row asks its owner first, then all of `held` at once, then the workers in
        # order only for the rows that something held justifies: a row costs about one
        # could-result-in query, not one per worker.
        p_loc, p_ts, p_owner = b[0][pos], b[1][pos], owner[pos]
        h_owner = owner_of(h[0], workers)
        own_ok = np.zeros(len(pos), bool)
        first = np.full(len(pos), -1, np.int64)     # the lowest worker strictly before
        if held_frontiers is not None:
            m = graph.m
            for w in np.unique(p_owner).tolist():
                sel = np.flatnonzero(p_owner == w)
                own_ok[sel] = covered(*held_frontiers[w], p_loc[sel], p_ts[sel], m)
            undecided = np.flatnonzero(~own_ok)
            # a row the owner does not cover is not held by anyone (only its owner holds at
            # its location), so "at or before" is "strictly before" for every other worker
            for w in range(workers):
                if not len(undecided):
                    break
                hit = covered(*held_frontiers[w], p_loc[undecided], p_ts[undecided], m)
                first[undecided[hit]] = w
                undecided = undecided[~hit]
        for w in (np.unique(p_owner).tolist() if held_frontiers is None else ()):
            sel = np.flatnonzero(p_owner == w)
            hw = _take(h, h_owner == w)
            if len(hw[0]):
                own_ok[sel] = order.reaches(hw, p_loc[sel], p_ts[sel], strict=False)
        rest = np.flatnonzero(~own_ok)
        if held_frontiers is None and len(rest) and len(h[0]):
            undecided = rest[order.reaches(h, p_loc[rest], p_ts[rest], strict=True)]
            for w in range(workers):
                if not len(undecided):
                    break
                hw = _take(h, h_owner == w)
                if not len(hw[0]):
                    continue
                hit = order.reaches(hw, p_loc[undecided], p_ts[undecided], strict=True)
                first[undecided[hit]] = w
                undecided = undecided[~hit]
        data = ~own_ok & (first >= 0)
        performer[pos[data]] = first[data]
        to[pos[data]] = owner[pos[data]]
        init = ~own_ok & (first < 0)
        to[pos[init]] = INITIAL
    ops = []
    for w in range(workers):
        sel = (to == INITIAL) & (owner == w)
        if sel.any():
            ops.append(Operation(w, b[0][sel], b[1][sel], b[2][sel], to[sel]))
    for w in range(workers):
        sel = (to != INITIAL) & (performer == w)
        if sel.any():
            ops.append(Operation(w, b[0][sel], b[1][sel], b[2][sel], to[sel]))
    return ops


# -- the simulated system ----------------------------------------------------------------------

@dataclass
class _Event:
    kind: str
    args: tuple = field(default_factory=tuple)


class Exchange:
    """``K`` workers, their FIFO progress queues and the data in flight, driven by a seeded
    scheduler: a simulation of the protocol in one process.

    Parameters
    ----------
    graph : Graph
    workers : int
    policy : str or Policy
        Every worker's sending policy (a name gives each worker a fresh instance).
    backend : str
        The workers' local trackers (and the one that tracks ``rec`` for the safety check).
    seed : int
        Seeds the scheduler: the same seed replays the same interleaving.
    check : CheckMode, str or bool
        When to run :meth:`check_safety` by itself, and whether :meth:`quiesce` takes single
        steps (``every-step``, or True) or rounds (``round``, ``batch``, ``none``, or False):
        :class:`CheckMode`.
    strict : bool
        :meth:`perform_batch` refuses a batch that takes a workload count below zero.

    Attributes
    ----------
    msg : dict[(sender, receiver), deque[Update]]
    data : list[Table]
        Capabilities in flight to each worker.
    clock : int
        Transitions taken (the ``now`` of time-based policies).
    phases : PhaseClock
        Where the time went, per phase (:mod:`engine.exchange.phases`), shared with the workers.
    """

    def __init__(self, graph: Graph, workers: int, *, policy="all", backend="cpu", seed: int = 0,
                 check: "CheckMode | str | bool" = False, strict: bool = False):
        self.graph = graph
        if isinstance(workers, bool) or not (isinstance(workers, (int, np.integer)) and workers >= 1):
            raise ExchangeError(f"workers must be a positive integer, got {workers!r}")
        make_policy(policy)  # an unknown name fails before anything is built
        self.check_mode = CheckMode.of(check)
        self.phases = PhaseClock()
        self.order = PointstampOrder(graph)
        self.workers = [Worker(graph, i, workers, backend=backend, policy=policy, order=self.order,
                               phases=self.phases)
                        for i in range(workers)]
        self.K = len(self.workers)
        W = self.order.width
        self.msg = {(s, r): deque() for s in range(self.K) for r in range(self.K)}
        self.data = [_empty(W) for _ in range(self.K)]
        self.pending = [deque() for _ in range(self.K)]
        self.rng = random.Random(seed)
        self.clock = 0
        self.rounds = 0
        self.strict = strict
        self._counts = _empty(W)           # the workload's signed counts
        self.truth = self.order.make_tracker(backend)   # implied frontiers of rec
        self._prev_globs = None
        self._prev_fronts = None            # the workers' frontier tables at the last check
        self._verdicts = [None] * self.K    # (op, caps, verdict) of each worker's next op
        self.data_messages = 0

    # -- state ---------------------------------------------------------------------------------

    def rec(self) -> Table:
        """The system's pointstamps: every worker's ``caps`` plus the data in flight."""
        return _zsum(*[w._caps for w in self.workers], *self.data)

    def held(self) -> Table:
        """Every capability held by a worker (data in flight excluded)."""
        return _zsum(*[w._caps for w in self.workers])

    def expected(self) -> Table:
        """``rec`` once every operation in :attr:`pending` is performed: the capabilities the
        workers will hold when those operations are done and their data delivered. A batch
        queued now is split against this (:meth:`perform_batch`)."""
        return _zsum(self.rec(), *[(op.loc, op.ts, op.diff) for q in self.pending for op in q])

    def info(self, w: int) -> Table:
        """Worker ``w``'s incoming information: every ``temp`` and every update queued to ``w``."""
        parts = [x._temp for x in self.workers]
        parts += [(u.loc, u.ts, u.diff) for s in range(self.K) for u in self.msg[(s, w)]]
        return _zsum(*parts)

    def quiescent(self) -> bool:
        """Nothing pending, in flight, queued or unsent: every ``glob`` equals ``rec``."""
        return (not any(self.pending) and not any(self.msg.values())
                and not any(len(d[0]) for d in self.data)
                and not any(len(w._temp[0]) for w in self.workers))

    def frontiers(self, worker: int) -> list[list[tuple]]:
        """Worker ``worker``'s implied frontier at every location."""
        return self.workers[worker].frontiers()

    @property
    def stats(self) -> dict:
        """Totals over the workers (:attr:`~engine.exchange.worker.Worker.stats`), plus
        ``steps`` (transitions taken), ``rounds`` (:meth:`round`) and ``data_messages``."""
        out = {k: sum(w.stats[k] for w in self.workers) for k in self.workers[0].stats}
        out["steps"] = self.clock
        out["rounds"] = self.rounds
        out["data_messages"] = self.data_messages
        return out

    @property
    def check(self) -> bool:
        """Whether every step is checked (``check_mode`` is ``every-step``)."""
        return self.check_mode is CheckMode.EVERY_STEP

    # -- transitions ---------------------------------------------------------------------------

    def perform(self, w: int, loc, ts, diff, *, to=None) -> None:
        """``perf_op`` by worker ``w``; its data messages join ``data``."""
        out = self.workers[w].perform(loc, ts, diff, to=to, now=self.clock)
        self._rec_changed(loc, ts, diff)
        with self.phases("deliver"):
            for d in out:
                self.data[d.receiver] = _zsum(self.data[d.receiver], (d.loc, d.ts, d.diff))
                self.data_messages += 1

    def _rec_changed(self, loc, ts, diff) -> None:
        from engine.batched.batch_arrays import batch_arrays
        with self.phases("tracker"):
            rows = _zsum(batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff))
            _feed(self.truth, self.graph, rows)

    def send(self, w: int, *, select=None, flush: bool = False) -> Update | None:
        """``send_upd`` by worker ``w`` (its policy, ``select``, or everything); the update is
        queued to every worker."""
        worker = self.workers[w]
        u = worker.flush() if flush else worker.send(self.clock, select=select)
        if u is not None:
            for r in range(self.K):
                self.msg[(w, r)].append(u)
        return u

    def receive(self, sender: int, receiver: int) -> None:
        """``recv_upd``: ``receiver`` takes the oldest update from ``sender``."""
        q = self.msg.get((sender, receiver))
        if not q:
            raise ExchangeStateError(f"no update from worker {sender} to worker {receiver} is "
                                     f"in flight")
        self.workers[receiver].receive(q[0])
        q.popleft()

    def deliver_data(self, receiver: int, row: int | None = None) -> None:
        """``recv_cap``: ``receiver`` takes the capabilities of one row of the data in flight
        to it (``row``; default the first)."""
        d = self.data[receiver]
        if not len(d[0]):
            raise ExchangeStateError(f"no data is in flight to worker {receiver}")
        i = 0 if row is None else row
        if not 0 <= i < len(d[0]):
            raise ExchangeStateError(f"worker {receiver} has {len(d[0])} data rows in flight; "
                                     f"no row {i}")
        self.workers[receiver].receive_data(d[0][i:i + 1], d[1][i:i + 1], d[2][i:i + 1])
        keep = np.arange(len(d[0])) != i
        self.data[receiver] = _take(d, keep)

    # -- workload batches and the scheduler ----------------------------------------------------

    def perform_batch(self, loc, ts, diff) -> None:
        """Queue one workload batch as operations of the workers (:func:`split_batch`).

        A workload's counts may go below zero between batches (docs/formats.md); ``rec``
        cannot. The protocol is given the changes of the *positive part* ``max(c, 0)`` of
        every count ``c`` -- the same frontiers -- while the negative part stays here. Rows
        that nothing held justifies are admitted at once as initial capabilities
        (:meth:`admit`). The other operations wait in :attr:`pending` for :meth:`step` or
        :meth:`round`.

        Batches may be queued back to back, before the operations of earlier ones are
        performed: the split is made against :meth:`expected` -- what is held once everything
        pending is performed and its data delivered -- not against what is held now, so it
        never leans on a capability that a pending drop removes. A worker's operations are
        performed in the order queued, each only once its guards hold
        (:meth:`~engine.exchange.worker.Worker.admissible`): an operation that needs a
        capability still pending or in flight as data waits for it (:meth:`events`); it
        becomes admissible at the latest once the earlier batches' operations are performed and
        their data delivered.
        """
        from engine.batched.kernels import cpu_kernels
        with self.phases("split"):
            b = cpu_kernels.intake(self.graph, self.order.ga.depth, loc, ts, diff)
            old = _lookup(self._counts, b[0], b[1])
            new = old + b[2]
            if self.strict and (new < 0).any():
                i = int(np.flatnonzero(new < 0)[0])
                l = int(b[0][i])
                t = tuple(int(x) for x in b[1][i][:self.graph.width(l)])
                raise NegativeCountError(    # worded as the trackers word it
                    f"strict mode: pointstamp ({l}, {t}) at {self.graph.describe(l)} would have "
                    f"count {int(new[i])} (now {int(old[i])}, batch changes it by "
                    f"{int(b[2][i])}); batch rejected, nothing applied")
            dpos = np.maximum(new, 0) - np.maximum(old, 0)
            keep = dpos != 0
            # quiescent, each worker holding only what it owns: split on the workers'
            # frontiers of what they hold (kept by their caps trackers)
            settled = (not any(self.pending) and not any(len(d[0]) for d in self.data)
                       and all((w._caps[0] % self.K == w.index).all() for w in self.workers))
            fronts = [w.caps_frontier() for w in self.workers] if settled else None
            ops = split_batch(self.graph, b[0][keep], b[1][keep], dpos[keep], self.K,
                              held=self.expected(), order=self.order, held_frontiers=fronts)
            initial = [op for op in ops if op.initial]
            self._counts = _zsum(self._counts, b)
        if initial:     # one step of every worker: all owners' rows as one batch each
            parts = [(op.worker, op.loc, op.ts, op.diff) for op in initial]
            for w in self.workers:
                w.admit_many(parts)
            with self.phases("tracker"):
                _feed(self.truth, self.graph, _zsum(*[(op.loc, op.ts, op.diff) for op in initial]))
            self._restart_mono()
        for op in ops:
            if not op.initial:
                self.pending[op.worker].append(op)

    def admit(self, loc, ts, diff, *, owner: int) -> None:
        """Initial capabilities of worker ``owner``, admitted by every worker in one step: the
        owner holds them and every worker's ``glob`` (and tracker) has them, as in ``Init``.
        ``rec`` and every ``glob`` grow alike, so invariants 1-3 and with them Safe hold on;
        Mono restarts from the state right after the admission (a new ``Init``): the next
        :meth:`check_safety` compares with it.

        Raises
        ------
        ExchangeStateError
            A count is not positive (nothing changes).
        """
        self._admit(loc, ts, diff, owner=owner)
        self._restart_mono()

    def _admit(self, loc, ts, diff, *, owner: int) -> None:
        if not (isinstance(owner, (int, np.integer)) and 0 <= owner < self.K):
            raise ExchangeError(f"owner {owner!r} is not a worker 0..{self.K - 1}")
        rows = _zsum(_rows(self.graph, self.order, (loc, ts, diff)))
        self.workers[owner].admit(*rows, owner=owner)   # checks the counts first
        for w in self.workers:
            if w.index != owner:
                w.admit(*rows, owner=owner)
        with self.phases("tracker"):
            _feed(self.truth, self.graph, rows)

    def _restart_mono(self) -> None:
        """Init again: Mono is a property of steps, not of Init; it restarts from here."""
        self._prev_globs = [w._glob for w in self.workers]
        self._prev_fronts = None
        if self.check_mode is not CheckMode.NONE:
            with self.phases("check"):
                self._prev_fronts = [frontier_table(w.tracker, self.graph) for w in self.workers]

    def _front_admissible(self, w: int) -> ExchangeError | BatchError | None:
        """None if worker ``w``'s next pending operation passes its guards now, else the
        error (remembered until the operation or the worker's capabilities change)."""
        op, caps = self.pending[w][0], self.workers[w]._caps
        seen = self._verdicts[w]
        if seen is None or seen[0] is not op or seen[1] is not caps:
            seen = (op, caps, self.workers[w].admissible(op.loc, op.ts, op.diff, to=op.to))
            self._verdicts[w] = seen
        return seen[2]

    def events(self) -> list[_Event]:
        """The transitions enabled now (sends only where the policy releases something; a
        worker's next pending operation only once its guards hold)."""
        with self.phases("schedule"):
            ev = []
            for w in range(self.K):
                if self.pending[w] and self._front_admissible(w) is None:
                    ev.append(_Event("perform", (w,)))
                if self.workers[w].wants_to_send(self.clock):
                    ev.append(_Event("send", (w,)))
                if len(self.data[w][0]):
                    ev.append(_Event("data", (w,)))
            for (s, r), q in self.msg.items():
                if q:
                    ev.append(_Event("receive", (s, r)))
            return ev

    def step(self) -> bool:
        """Take one enabled transition chosen by the seeded scheduler; False if none is
        enabled (what the policies hold back is then sent only by :meth:`quiesce`)."""
        ev = self.events()
        if not ev:
            return False
        e = ev[self.rng.randrange(len(ev))]
        if e.kind == "perform":
            op = self.pending[e.args[0]].popleft()
            self.perform(op.worker, op.loc, op.ts, op.diff, to=op.to)
        elif e.kind == "send":
            self.send(e.args[0])
        elif e.kind == "data":
            r = e.args[0]
            self.deliver_data(r, self.rng.randrange(len(self.data[r][0])))
        else:
            self.receive(*e.args)
        self._stepped()
        return True

    def _stepped(self, taken: int = 1) -> None:
        self.clock += taken
        if self.check_mode is CheckMode.EVERY_STEP:
            try:
                self.check_safety()
            except SafetyError as err:
                raise SafetyError(f"step {self.clock}: {err}") from None

    def round(self, *, hold_back: bool = True) -> int:
        """One round of every worker at once; returns the transitions it took (0: nothing
        was enabled).

        1. every worker whose next pending operation passes its guards performs it (workers
           in a seeded random order; an operation that does not pass stays queued);
        2. every worker sends what its policy releases (same order);
        3. the updates queued to each worker are moved as one columnar batch: the worker
           takes them with :meth:`~engine.exchange.worker.Worker.receive_many` (FIFO per
           sender), its ``glob`` and tracker fed their consolidated sum once; workers that
           take the same updates share one consolidation. With ``hold_back``, the seed makes
           about half the workers take only a random prefix of each queue (an interleaving
           in which those updates are still in flight);
        4. the data in flight to each worker arrives (with ``hold_back``, to about three
           workers in four).

        Every transition of a round is one the step scheduler could take in some order, so
        Safe and Mono hold after it as after any step. If steps 1-2 took nothing and
        ``hold_back`` held everything back, everything is delivered.
        """
        rng, K = self.rng, self.K
        order = rng.sample(range(K), K) if K > 1 else [0]
        taken = 0
        for w in order:                                   # 1. operations
            if self.pending[w]:
                op, caps = self.pending[w][0], self.workers[w]._caps
                seen = self._verdicts[w]
                if seen is not None and seen[0] is op and seen[1] is caps and seen[2] is not None:
                    continue                  # refused before, and nothing it holds changed
                try:
                    self.perform(w, op.loc, op.ts, op.diff, to=op.to)
                except (ExchangeError, BatchError) as err:
                    self._verdicts[w] = (op, caps, err)
                    continue                  # not admissible now: it waits (nothing changed)
                self.pending[w].popleft()
                taken += 1
        for w in order:                                   # 2. sends
            if len(self.workers[w]._temp[0]) and self.send(w) is not None:
                taken += 1
        moved = self._deliver_round(hold_back)            # 3. updates, 4. data
        if not moved and not taken and hold_back:
            moved = self._deliver_round(False)
        taken += moved
        if taken:
            self.rounds += 1
            self.clock += taken
            if self.check_mode is CheckMode.ROUND:
                try:
                    self.check_safety()
                except SafetyError as err:
                    raise SafetyError(f"round {self.rounds} (step {self.clock}): {err}") from None
        return taken

    def deliver_all(self) -> int:
        """Deliver every queued update and all data in flight, as steps 3 and 4 of
        :meth:`round` without holding anything back: each worker takes what is queued to it
        as one columnar batch. Returns the transitions taken."""
        moved = self._deliver_round(False)
        self.clock += moved
        return moved

    def _deliver_round(self, hold_back: bool) -> int:
        """Steps 3 and 4 of :meth:`round`: the transitions taken."""
        rng, K = self.rng, self.K
        moved = 0
        with self.phases("deliver"):
            shared: dict[tuple, Table] = {}
            for r in range(K):
                partial = hold_back and rng.random() < 0.5
                ups = []
                for s in range(K):
                    q = self.msg[(s, r)]
                    if q:
                        n = rng.randint(0, len(q)) if partial else len(q)
                        ups += [q[i] for i in range(n)]
                if not ups:
                    continue
                key = tuple(id(u) for u in ups)
                rows = shared.get(key)
                if rows is None:
                    rows = shared[key] = _zsum(*[(u.loc, u.ts, u.diff) for u in ups])
                self.workers[r].receive_many(ups, rows=rows)
                for u in ups:
                    self.msg[(u.sender, r)].popleft()
                moved += len(ups)
            for r in range(K):
                d = self.data[r]
                if len(d[0]) and not (hold_back and rng.random() < 0.25):
                    self.workers[r].receive_data(*d)
                    self.data[r] = _empty(self.order.width)
                    moved += len(d[0])
        return moved

    def _unsettled(self, settle: HoldBack) -> list[int]:
        return [w.index for w in self.workers if len(w._temp[0]) and settle.release(w).any()]

    def quiesce(self) -> None:
        """Run until nothing is pending or in flight and every ``temp`` is *settled*: once
        nothing else is enabled, a worker whose policy holds back more than
        :class:`~engine.exchange.policies.HoldBack` would sends what
        :class:`~engine.exchange.policies.HoldBack` releases (workers in random order). What
        stays in a ``temp`` then is only positive counts that the worker's own capabilities justify:
        each lies at or after a pointstamp every ``glob`` has, so every worker's frontiers
        equal the true ones (:meth:`check_agreement`) though ``glob`` may differ from ``rec``.
        :meth:`flush` empties the ``temp`` too. Single steps (:meth:`step`) in ``every-step``
        mode, else rounds (:meth:`round`).

        Raises
        ------
        ExchangeStateError
            A queued operation that can never pass its guards (capabilities moved by
            :meth:`perform` outside the batches' bookkeeping); it stays queued, named.
        """
        settle = HoldBack()
        stepwise = self.check_mode is CheckMode.EVERY_STEP
        while True:
            if (self.step() if stepwise else self.round()):
                continue
            with self.phases("schedule"):
                unsettled = self._unsettled(settle)
            if not unsettled:
                stuck = [w for w in range(self.K) if self.pending[w]]
                if stuck:   # nothing in flight can make them admissible: never drop them
                    w = stuck[0]
                    raise ExchangeStateError(
                        f"worker {w}'s next pending operation can never be performed, and "
                        f"nothing in flight can change that ({len(self.pending[w])} "
                        f"operation(s) left in its queue): {self._front_admissible(w)}")
                return
            if stepwise:
                w = self.rng.choice(unsettled)
                self.send(w, select=settle.release(self.workers[w]))
                self._stepped()
            else:
                for w in self.rng.sample(unsettled, len(unsettled)):
                    self.send(w, select=settle.release(self.workers[w]))
                self.clock += len(unsettled)

    def flush(self) -> None:
        """:meth:`quiesce`, then send and deliver everything still held back: afterwards
        :meth:`quiescent` -- every ``glob`` equals ``rec``."""
        self.quiesce()
        for w in self.rng.sample(range(self.K), self.K):
            if self.send(w, flush=True) is not None:
                self._stepped()
        self.quiesce()

    def run(self, loc, ts, diff) -> None:
        """One workload batch: :meth:`perform_batch`, then :meth:`quiesce`; in ``batch``
        check mode, then :meth:`check_safety` and :meth:`check_agreement`."""
        self.perform_batch(loc, ts, diff)
        self.quiesce()
        if self.check_mode is CheckMode.BATCH:
            try:
                self.check_safety()
            except SafetyError as err:
                raise SafetyError(f"after quiescence (step {self.clock}): {err}") from None
            self.check_agreement()

    # -- checks --------------------------------------------------------------------------------

    def check_safety(self) -> None:
        """Check, for every worker: **Safe** (its ``glob`` is not vacant up to any pointstamp
        of ``rec``), **Mono** (its ``glob`` is vacant wherever it was at the previous check)
        and the combined result (its implied frontier at every location is never ahead of
        the implied frontier of ``rec``).

        Vectorised, on the frontiers first: if a worker's frontier covers the true frontier
        (every true element has one of the worker's at or before it at its location), Safe
        holds for that worker (each pointstamp of ``rec`` lies at or after a true frontier
        element, which lies at or after the image of a positive count of ``glob``); a row of
        ``glob`` that was in the previous ``glob`` or lies at or after the previous
        frontier satisfies Mono. Only what these do not settle goes through could-result-in
        against whole multisets (:meth:`PointstampOrder.below`), which also names the first
        violation.

        Raises
        ------
        SafetyError
            Naming the first violation: worker, property, location and pointstamp.
        """
        with self.phases("check"):
            self._check_safety()

    def _check_safety(self) -> None:
        rec = None
        m = self.graph.m
        t_loc, t_ts = frontier_table(self.truth, self.graph)
        globs = [w._glob for w in self.workers]
        fronts = [frontier_table(w.tracker, self.graph) for w in self.workers]
        verified: list[tuple] = []      # (glob, previous glob) pairs found monotone
        for w, g, (f_loc, f_ts) in zip(self.workers, globs, fronts):
            if np.array_equal(f_loc, t_loc) and np.array_equal(f_ts, t_ts):
                ahead = np.zeros(0, bool)      # the true frontiers themselves
            else:
                ahead = ~covered(f_loc, f_ts, t_loc, t_ts, m)
            if ahead.any():
                if rec is None:
                    rec = _positive(self.rec())
                self._check_safe_exactly(w, g, rec)
                i = int(np.flatnonzero(ahead)[0])
                l = int(t_loc[i])
                true_f = self.truth.frontier(l)
                raise SafetyError(
                    f"worker {w.index}'s frontier at {self.graph.describe(l)} is "
                    f"{w.frontier(l)}, ahead of the true implied frontier {true_f}: nothing "
                    f"in it is at or before {tuple(int(x) for x in t_ts[i][:self.graph.width(l)])}")
            if self._prev_globs is not None and len(g[0]):
                prev = self._prev_globs[w.index]
                if g is prev or _same(g, prev) or any(_same(g, a) and _same(prev, b)
                                                      for a, b in verified):
                    continue        # unchanged, or as another worker's view was: monotone
                ok = _lookup(prev, g[0], g[1]) != 0
                if self._prev_fronts is not None and not ok.all():
                    p_loc, p_ts = self._prev_fronts[w.index]
                    rest = np.flatnonzero(~ok)
                    ok[rest] = covered(p_loc, p_ts, g[0][rest], g[1][rest], m)
                if not ok.all():
                    rest = np.flatnonzero(~ok)
                    ok[rest] = self.order.below(_magnitude(prev), g[0][rest], g[1][rest]) > 0
                if not ok.all():
                    i = int(np.flatnonzero(~ok)[0])
                    raise SafetyError(
                        f"Mono fails: worker {w.index}'s view moved back: it has a count at "
                        f"{self.order.name(g[0][i], g[1][i])}, where it was vacant")
                if len(verified) < 4:
                    verified.append((g, prev))
        self._prev_globs = globs
        self._prev_fronts = fronts

    def _check_safe_exactly(self, w: Worker, g: Table, rec: Table) -> None:
        if len(rec[0]):
            ok = (_lookup(g, rec[0], rec[1]) != 0) | \
                (self.order.below(_magnitude(g), rec[0], rec[1]) > 0)
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                raise SafetyError(
                    f"Safe fails: worker {w.index}'s view is vacant up to "
                    f"{self.order.name(rec[0][i], rec[1][i])}, which the system holds "
                    f"{int(rec[2][i])} of")

    def check_agreement(self) -> None:
        """After :meth:`quiesce`: every worker's frontiers equal the true implied frontiers
        exactly (:class:`~engine.errors.SafetyError` names the first difference)."""
        with self.phases("check"):
            t_loc, t_ts = frontier_table(self.truth, self.graph)
            for w in self.workers:
                f_loc, f_ts = frontier_table(w.tracker, self.graph)
                if np.array_equal(f_loc, t_loc) and np.array_equal(f_ts, t_ts):
                    continue
                truth = self.truth.frontiers()
                mine = w.frontiers()
                for l, (a, b) in enumerate(zip(mine, truth)):
                    if sorted(a) != sorted(b):
                        raise SafetyError(f"after quiescence worker {w.index}'s frontier at "
                                          f"{self.graph.describe(l)} is {a}, the true one {b}")


def _same(a: Table, b: Table) -> bool:
    """Whether two tables hold the same rows (the same arrays, or equal ones)."""
    return all(x is y for x, y in zip(a, b)) or all(np.array_equal(x, y) for x, y in zip(a, b))


def frontier_table(tracker, graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """A tracker's implied frontiers as columns ``(loc int32[n], ts int64[n, m+K])`` sorted by
    ``(loc, ts)``: the batched engine's own arrays (``frontier_table``), else built from
    ``frontiers()`` (the reference trackers)."""
    table = getattr(tracker, "frontier_table", None)
    if table is not None:
        return table()
    W = graph.m + graph.max_depth
    locs, rows = [], []
    for l, f in enumerate(tracker.frontiers()):
        for t in sorted(f):
            locs.append(l)
            rows.append(tuple(t) + (0,) * (W - len(t)))
    return np.asarray(locs, np.int32), np.asarray(rows, np.int64).reshape(len(rows), W)


def warm_up() -> None:
    """Load (or compile once) the kernels the protocol's guards and checks use, on a tiny
    graph: ``make venv`` runs it (:func:`engine.jit.precompile`), so that the first
    :class:`Exchange` of a process does not pay for compilation."""
    from engine.core.workload import example_graph
    g = example_graph()
    a, b = g.source(1, 0), g.target(2, 1)
    ex = Exchange(g, 2, policy="holdback", check=True)
    ex.run([a], [(0, 0)], [1])
    ex.run([b, a, a], [(0, 0), (1, 0), (0, 0)], [1, 1, -1])
