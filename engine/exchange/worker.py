"""One worker of the progress exchange protocol: its share of the configuration and its four
transitions, checked by the paper's guards (the ``exchange`` protocol of the verified paper,
sections 3, 4 and 6; ``docs/exchange.md``).

Every worker tracks frontiers itself, kept safe by broadcast count updates. A system of ``K``
workers shares one multiset of pointstamps, ``rec``: the capabilities the workers hold plus the
capabilities in flight to them as data. No worker sees ``rec``. Worker ``w``'s part of the
configuration is

* ``caps`` -- the capabilities it holds (positive counts);
* ``temp`` -- the changes it made and has not broadcast yet (signed);
* ``glob`` -- its view of ``rec``: the sum of every update it has received (signed);

and the system adds ``data`` (capabilities sent to a worker and not yet received) and ``msg``
(a FIFO queue of progress updates from every worker to every worker, itself included). Four
transitions change it:

``perf_op`` (:meth:`Worker.perform`)
    drop capabilities the worker holds, create capabilities for itself (each justified by a
    held capability at or before it) and send capabilities as data to workers (each justified
    by a held capability strictly before it). ``caps`` and ``temp`` change, ``data`` grows.
``send_upd`` (:meth:`Worker.send`)
    broadcast part ``gamma`` of ``temp``; allowed only if what stays in ``temp`` is
    :func:`~engine.exchange.multisets.justified` by the worker's capabilities. *Which* part is
    the :class:`~engine.exchange.policies.Policy`'s choice.
``recv_upd`` (:meth:`Worker.receive`)
    take the oldest update of one sender's queue into ``glob``.
``recv_cap`` (:meth:`Worker.receive_data`)
    take capabilities in flight to the worker into its ``caps``.

Theorem (the paper's ``safe``): if a worker's ``glob`` is *vacant* up to a pointstamp ``p``
(no non-zero count at or before ``p``), ``rec`` is vacant up to ``p`` too, and ``glob``
never moves back (``Mono``). Section 6 combines this with local propagation: each worker
feeds the changes of its ``glob`` into its own frontier tracker (any backend of
:func:`engine.make_tracker`), so its implied frontiers are never ahead of those of ``rec``,
and equal them once every update is delivered.

The multisets are consolidated columns ordered by could-result-in
(:mod:`engine.exchange.multisets`); :mod:`engine.exchange.simulation` runs ``K`` workers in one
process, :mod:`engine.exchange.processes` on real processes.
"""

from __future__ import annotations

import numpy as np

from engine.core.graph import Graph
from engine.errors import (BatchError, ExchangeCapabilityError, ExchangeError, ExchangeStateError,
                           UnjustifiedSendError, UpdateOrderError)
from engine.exchange.messages import OWN, DataMessage, Update
from engine.exchange.multisets import (PointstampOrder, Table, _empty, _lookup, _rows, _take,
                                       _zsum, justified)
from engine.exchange.phases import PhaseClock
from engine.exchange.policies import Policy, make_policy

__all__ = ["Worker"]


class Worker:
    """One worker's share of the exchange protocol, and its local frontier tracker.

    Parameters
    ----------
    graph : Graph
    index, workers : int
        This worker's index among ``workers`` workers.
    backend : str
        The local tracker's backend (:func:`engine.make_tracker`), fed every change of ``glob``.
    policy : str or Policy
        Which part of ``temp`` :meth:`send` broadcasts (:data:`~engine.exchange.policies.POLICIES`).
    initial : (loc, ts, diff), optional
        The capabilities this worker starts with (positive counts).
    initial_glob : (loc, ts, diff), optional
        ``rec`` at the start: every worker's initial capabilities (the paper's ``Init``:
        every ``glob`` equals ``rec``). Default ``initial``, right when the other workers
        start empty.
    order : PointstampOrder, optional
        Shared by the workers of one system to compute ``Psi`` rows once.

    Attributes
    ----------
    stats : dict
        ``updates_sent`` (broadcasts), ``pointstamps_sent`` (rows broadcast), ``bytes_sent``
        (:attr:`~engine.exchange.messages.Update.nbytes` per broadcast, once however many
        receive it), ``updates_received``, ``operations`` (``perf_op``s), ``rows_performed``
        (their rows).
    temp_since
        The ``now`` of the first :meth:`perform` since ``temp`` was last empty or last sent
        from (None if unknown, or if nothing was performed since), for time-based policies:
        what a partial send leaves in ``temp`` ages from the next operation on.
    """

    def __init__(self, graph: Graph, index: int, workers: int, *, backend="cpu",
                 policy: "str | Policy" = "all", initial=None, initial_glob=None,
                 order: PointstampOrder | None = None, phases: PhaseClock | None = None):
        #: Where this worker's time goes (:mod:`engine.exchange.phases`; shared by a system).
        self.phases = phases if phases is not None else PhaseClock()
        if not (isinstance(workers, (int, np.integer)) and workers >= 1):
            raise ExchangeError(f"workers must be a positive integer, got {workers!r}")
        if not (isinstance(index, (int, np.integer)) and 0 <= index < workers):
            raise ExchangeError(f"worker index {index!r} is not in 0..{workers - 1}")
        self.graph, self.index, self.workers = graph, int(index), int(workers)
        self.order = order if order is not None else PointstampOrder(graph)
        self.policy = make_policy(policy)
        W = self.order.width
        caps = _zsum(_rows(graph, self.order, initial)) if initial is not None else _empty(W)
        if (caps[2] < 0).any():
            i = int(np.flatnonzero(caps[2] < 0)[0])
            raise ExchangeCapabilityError(f"worker {index}: initial capability "
                                  f"{self.order.name(caps[0][i], caps[1][i])} has count "
                                  f"{int(caps[2][i])}; initial capabilities are positive")
        glob = _zsum(_rows(graph, self.order, initial_glob)) if initial_glob is not None else caps
        self.tracker = self.order.make_tracker(backend)
        self._caps, self._temp, self._glob = caps, _empty(W), glob
        self._caps_tracker = self._caps_front = None     # caps_frontier(), made on first use
        self._apply_tracker(glob)
        self._seq = 0
        self._expect = [0] * self.workers
        self.temp_since = None
        self.stats = {"updates_sent": 0, "pointstamps_sent": 0, "bytes_sent": 0,
                      "updates_received": 0, "operations": 0, "rows_performed": 0}

    # -- views ---------------------------------------------------------------------------------

    @property
    def caps(self) -> Table:
        """The capabilities held: ``(loc, ts, cnt)``, consolidated (copies)."""
        return tuple(a.copy() for a in self._caps)

    @property
    def temp(self) -> Table:
        """Changes made and not yet broadcast (signed)."""
        return tuple(a.copy() for a in self._temp)

    @property
    def glob(self) -> Table:
        """This worker's view of ``rec``: the sum of the updates it received (signed)."""
        return tuple(a.copy() for a in self._glob)

    def frontier(self, loc: int) -> list[tuple]:
        """The implied frontier at ``loc`` by this worker's local tracker."""
        return self.tracker.frontier(loc)

    def frontiers(self) -> list[list[tuple]]:
        return self.tracker.frontiers()

    # -- perf_op -------------------------------------------------------------------------------

    def perform(self, loc, ts, diff, *, to=None, now=None) -> list[DataMessage]:
        """``perf_op``: one operation of this worker (see :meth:`_perform`)."""
        with self.phases("perform"):
            return self._perform(loc, ts, diff, to=to, now=now)

    def _perform(self, loc, ts, diff, *, to=None, now=None, commit=True) -> list[DataMessage]:
        """``perf_op``: one operation of this worker, as signed changes.

        Rows with ``to[i] == OWN`` (the default for every row) change the worker's own
        capabilities: the negative rows, summed per pointstamp, are the paper's ``Delta_neg``
        (drops), the positive ones its ``Delta_self`` (new capabilities). Rows with
        ``to[i] = r >= 0`` must be positive: capabilities sent to worker ``r`` as data
        (``r`` may be this worker), the paper's ``Delta_data``.

        Guards, exactly the paper's, checked against the capabilities held *before* the
        operation (all of them before anything changes):

        * the drops of ``p``, summed, need ``caps(p) >= Delta_neg(p)`` (a drop and an
          addition of the same pointstamp are not netted first: creating and dropping a
          capability one does not hold is refused);
        * a new capability at ``p`` needs a held capability at or before ``p``;
        * a data message at ``p`` needs a held capability strictly before ``p``;
        * the operation changes something: a data message, or own changes that do not
          sum to zero.

        ``temp`` gains the operation's whole change (data included: it is in ``rec`` from now).

        Returns
        -------
        list[DataMessage]
            One per receiving worker, for the caller to deliver (``recv_cap``).

        Raises
        ------
        BatchError
            A malformed row (location, timestamp width or range, diff).
        ExchangeCapabilityError
            A guard fails; the message names the row and pointstamp. Nothing changes.
        """
        from engine.batched.batch_arrays import batch_arrays
        b_loc, b_ts, b_diff = batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff)
        n = len(b_loc)
        to_a = np.full(n, OWN, np.int64) if to is None else np.asarray(to)
        if to_a.shape != (n,) or (n and to_a.dtype.kind not in "iu"):
            raise ExchangeError(f"worker {self.index}: 'to' must be {n} integers, got shape "
                                f"{to_a.shape}")
        to_a = to_a.astype(np.int64)
        bad = (to_a < OWN) | (to_a >= self.workers)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ExchangeError(f"worker {self.index}: row {i}: to={int(to_a[i])} is neither "
                                f"{OWN} (own capability) nor a worker 0..{self.workers - 1}")
        bad = (to_a >= 0) & (b_diff <= 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ExchangeCapabilityError(f"worker {self.index}: row {i}: a data message to worker "
                                  f"{int(to_a[i])} must carry a positive count, got "
                                  f"{int(b_diff[i])}")
        own = to_a == OWN
        caps = self._caps
        # the paper's perf_op: drops (Delta_neg, own negative rows summed) and new own
        # capabilities (Delta_self, own positive rows summed) are checked separately, each
        # against the capabilities held before the operation -- never netted
        negr = own & (b_diff < 0)
        posr = own & (b_diff > 0)
        dneg = _zsum((b_loc[negr], b_ts[negr], -b_diff[negr]))
        dself = _zsum((b_loc[posr], b_ts[posr], b_diff[posr]))
        # drop only held capabilities
        if len(dneg[0]):
            held = _lookup(caps, dneg[0], dneg[1])
            short = np.flatnonzero(held < dneg[2])
            if len(short):
                j = int(short[0])
                raise ExchangeCapabilityError(
                    f"worker {self.index}: row {self._row_of(b_loc, b_ts, dneg, j, negr)}: drops "
                    f"{int(dneg[2][j])} of {self.order.name(dneg[0][j], dneg[1][j])} but holds "
                    f"{int(held[j])}")
        # a new own capability: a held one at or before it
        if len(dself[0]):
            ok = self.holds(dself[0], dself[1], strict=False)
            if not ok.all():
                j = int(np.flatnonzero(~ok)[0])
                raise ExchangeCapabilityError(
                    f"worker {self.index}: row {self._row_of(b_loc, b_ts, dself, j, posr)}: new "
                    f"capability {self.order.name(dself[0][j], dself[1][j])} is not justified: "
                    f"the worker holds no capability at or before it")
        net = _zsum(dself, dneg, signs=(1, -1))
        if not len(net[0]) and own.all():
            raise ExchangeCapabilityError(
                f"worker {self.index}: the operation changes nothing ({n} rows, no data "
                f"message, own changes that sum to zero): perf_op must change the configuration")
        # a data message: a held capability strictly before it
        data_rows = np.flatnonzero(~own)
        if len(data_rows):
            ok = self.holds(b_loc[data_rows], b_ts[data_rows], strict=True)
            if not ok.all():
                i = int(data_rows[np.flatnonzero(~ok)[0]])
                raise ExchangeCapabilityError(
                    f"worker {self.index}: row {i}: data message to worker {int(to_a[i])} at "
                    f"{self.order.name(b_loc[i], b_ts[i])} is not justified: the worker holds "
                    f"no capability strictly before it")
        if not commit:
            return []
        # commit
        data = (b_loc[~own], b_ts[~own], b_diff[~own])
        new_caps = _zsum(caps, net)
        self._caps_changed(net)
        new_temp = _zsum(self._temp, net, data)
        out = []
        for r in np.unique(to_a[~own]).tolist():
            sel = to_a == r
            out.append(DataMessage(int(r), *_zsum((b_loc[sel], b_ts[sel], b_diff[sel]))))
        if not len(new_temp[0]):
            self.temp_since = None
        elif self.temp_since is None:
            self.temp_since = now
        self._caps, self._temp = new_caps, new_temp
        if n:
            self.stats["operations"] += 1
            self.stats["rows_performed"] += n
        return out

    def admissible(self, loc, ts, diff, *, to=None) -> ExchangeError | BatchError | None:
        """Whether :meth:`perform` would accept this operation now: None if so, else the
        error it would raise (nothing changes either way)."""
        try:
            self._perform(loc, ts, diff, to=to, commit=False)
        except (ExchangeError, BatchError) as err:
            return err
        return None

    # -- what the worker holds, as frontiers ------------------------------------------------

    def holds(self, q_loc, q_ts, *, strict: bool) -> np.ndarray:
        """``bool[q]``: whether this worker holds a capability at or before (``strict``:
        strictly before) each query pointstamp -- the question of the guards, of
        ``justified`` and of :class:`~engine.exchange.policies.HoldBack`. Answered from the
        implied frontiers of ``caps`` (:meth:`caps_frontier`), kept by a tracker of their
        own that takes every change of ``caps``
        (:meth:`~engine.exchange.multisets.PointstampOrder.reaches`)."""
        return self.order.reaches(self._caps, q_loc, q_ts, strict=strict,
                                  implied=self.caps_frontier)

    def caps_frontier(self) -> tuple[np.ndarray, np.ndarray]:
        """The implied frontiers of the capabilities held, as a frontier table ``(loc, ts)``:
        a batched tracker (cpu) made on first use from ``caps`` and fed every change since."""
        if self._caps_tracker is None:
            self._caps_tracker = self.order.make_tracker("cpu")
            if len(self._caps[0]):
                self._caps_tracker.update_arrays(*self._caps)
            self._caps_front = None
        if self._caps_front is None:
            self._caps_front = self._caps_tracker.frontier_table()
        return self._caps_front

    def _caps_changed(self, delta: Table) -> None:
        """``caps`` is about to change by ``delta`` (consolidated): keep its tracker up."""
        if self._caps_tracker is not None and len(delta[0]):
            with self.phases("tracker"):
                self._caps_tracker.update_arrays(*delta)
            self._caps_front = None

    @staticmethod
    def _row_of(b_loc, b_ts, table, j, among) -> int:
        """The first input row (of those in ``among``) of consolidated row ``j`` of ``table``
        (for messages)."""
        hit = among & (b_loc == table[0][j]) & (b_ts == table[1][j]).all(axis=1)
        return int(np.flatnonzero(hit)[0])

    # -- recv_cap ------------------------------------------------------------------------------

    def receive_data(self, loc, ts, diff) -> None:
        """``recv_cap``: capabilities that arrived as data join ``caps`` (positive counts).
        That they were in flight to this worker is the caller's (the system's) to check."""
        with self.phases("deliver"):
            self._receive_data(loc, ts, diff)

    def _receive_data(self, loc, ts, diff) -> None:
        from engine.batched.batch_arrays import batch_arrays
        b = batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff)
        if (b[2] <= 0).any():
            i = int(np.flatnonzero(b[2] <= 0)[0])
            raise ExchangeStateError(f"worker {self.index}: row {i}: received data must have a "
                                     f"positive count, got {int(b[2][i])}")
        self._caps_changed(_zsum(b))
        self._caps = _zsum(self._caps, b)

    # -- send_upd ------------------------------------------------------------------------------

    def send(self, now=None, *, select=None) -> Update | None:
        """``send_upd`` (see :meth:`_send`)."""
        with self.phases("build"):
            return self._send(now, select=select)

    def _send(self, now=None, *, select=None) -> Update | None:
        """``send_upd``: broadcast the part of ``temp`` the policy releases (or ``select``,
        a ``bool[n]`` over the rows of :attr:`temp`, overriding the policy).

        Returns the :class:`~engine.exchange.messages.Update`, to be delivered to every worker
        (this one included), or None when nothing is released.

        Raises
        ------
        UnjustifiedSendError
            What would stay in ``temp`` is not :func:`~engine.exchange.multisets.justified` by
            ``caps``; nothing changes.
        """
        n = len(self._temp[0])
        mask = self.policy.release(self, now) if select is None else np.asarray(select)
        if mask.shape != (n,) or mask.dtype != bool:
            raise ExchangeError(f"worker {self.index}: a send's selection must be bool[{n}] over "
                                f"temp's rows, got {mask.dtype}{list(mask.shape)}")
        if not mask.any():
            return None
        rest = _take(self._temp, ~mask)
        bad = justified(self.order, self._caps, rest, self.caps_frontier)
        if bad >= 0:
            p_loc, p_ts, kept = rest[0][bad:bad + 1], rest[1][bad:bad + 1], int(rest[2][bad])
            held = int(_lookup(self._caps, p_loc, p_ts)[0])
            raise UnjustifiedSendError(
                f"worker {self.index}: this send would leave {kept} of "
                f"{self.order.name(p_loc[0], p_ts[0])} in temp unjustified: no negative change "
                f"strictly before it stays, the worker holds no capability strictly before it, "
                f"and it holds {held} at it (needs more than the {kept} kept)")
        gamma = _take(self._temp, mask)
        update = Update(self.index, self._seq, *gamma)
        self._temp = rest
        self.temp_since = None    # what stays (if anything) ages from the next perform
        self._seq += 1
        self.stats["updates_sent"] += 1
        self.stats["pointstamps_sent"] += len(update)
        self.stats["bytes_sent"] += update.nbytes
        return update

    def flush(self) -> Update | None:
        """Send all of ``temp`` (always allowed: nothing stays); None if it is empty."""
        return self.send(select=np.ones(len(self._temp[0]), bool))

    def wants_to_send(self, now=None) -> bool:
        """Whether the policy would release anything now."""
        if not len(self._temp[0]):
            return False
        with self.phases("schedule"):
            return bool(self.policy.release(self, now).any())

    # -- recv_upd ------------------------------------------------------------------------------

    def receive(self, update: Update) -> None:
        """``recv_upd``: add the sender's next update to ``glob`` and to the local tracker.

        Raises
        ------
        UpdateOrderError
            An unknown sender, or ``update.seq`` is not the next of its sender (a duplicate
            or a gap: updates of one sender are received in the order they were sent).
        """
        self.receive_many([update])

    def receive_many(self, updates, rows: Table | None = None) -> None:
        """``recv_upd`` for several updates at once, in order: the same as :meth:`receive` of
        each in turn (each must be the next of its sender, counting the ones before it in the
        list), but ``glob`` and the local tracker take their sum as *one* batch -- the state
        after a sequence of ``recv_upd`` steps does not depend on how they are grouped.

        Parameters
        ----------
        updates : sequence of Update
        rows : (loc, ts, diff), optional
            The updates' rows summed and consolidated, when the caller has them already (a
            round of :class:`~engine.exchange.simulation.Exchange` delivers the same updates to
            many workers and consolidates them once).

        Raises
        ------
        UpdateOrderError
            As :meth:`receive`, for the first offending update; nothing changes.
        """
        with self.phases("deliver"):
            expect = {}
            for update in updates:
                s = update.sender
                if not (isinstance(s, (int, np.integer)) and 0 <= s < self.workers):
                    raise UpdateOrderError(f"worker {self.index}: update from unknown sender "
                                           f"{s!r} (workers are 0..{self.workers - 1})")
                want = expect.get(s, self._expect[s])
                if update.seq != want:
                    what = "a duplicate" if update.seq < want else "out of order"
                    raise UpdateOrderError(f"worker {self.index}: update {update.seq} from "
                                           f"worker {s} is {what}: expected update {want}")
                expect[s] = want + 1
            if not updates:
                return
            if rows is None:
                from engine.batched.batch_arrays import batch_arrays
                depth = self.order.ga.depth
                parts = [batch_arrays(self.graph, depth, u.loc, u.ts, u.diff) for u in updates]
                rows = _zsum(*parts)
            self._apply_tracker(rows)
            self._glob = _zsum(self._glob, rows)
            for s, e in expect.items():
                self._expect[s] = e
            self.stats["updates_received"] += len(updates)

    def admit(self, loc, ts, diff, *, owner: int) -> None:
        """This worker's share of admitting initial capabilities of worker ``owner`` (the
        paper's ``Init`` extended to later points): ``glob`` gains them, and the owner's
        ``caps``. The step is sound only if every worker takes it before any of them takes
        another step (in one process, :meth:`~engine.exchange.simulation.Exchange.admit`;
        across processes, at a barrier): then ``rec`` and every ``glob`` grow alike, and the
        invariants behind Safe survive (docs/exchange.md). ``glob`` may gain counts where it
        was vacant: a new ``Init``.

        Raises
        ------
        ExchangeStateError
            A count is not positive.
        """
        self.admit_many([(owner, loc, ts, diff)])

    def admit_many(self, parts) -> None:
        """:meth:`admit` of several owners' initial capabilities as one step: ``parts`` is a
        list of ``(owner, loc, ts, diff)``; ``glob`` and the local tracker take them all as
        one batch, ``caps`` the parts this worker owns. Every count is checked before anything
        changes (:class:`~engine.errors.ExchangeStateError`)."""
        from engine.batched.batch_arrays import batch_arrays
        tables = []
        for owner, loc, ts, diff in parts:
            rows = _zsum(batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff))
            if (rows[2] <= 0).any():
                i = int(np.flatnonzero(rows[2] <= 0)[0])
                raise ExchangeStateError(f"worker {self.index}: initial capability "
                                         f"{self.order.name(rows[0][i], rows[1][i])} has count "
                                         f"{int(rows[2][i])}; it must be positive")
            tables.append((owner, rows))
        if not tables:
            return
        rows = tables[0][1] if len(tables) == 1 else _zsum(*[t for _, t in tables])
        self._apply_tracker(rows)
        self._glob = _zsum(self._glob, rows)
        mine = [t for owner, t in tables if owner == self.index]
        if mine:
            delta = _zsum(*mine)
            self._caps_changed(delta)
            self._caps = _zsum(self._caps, delta)

    def _apply_tracker(self, rows: Table) -> None:
        with self.phases("tracker"):
            _feed(self.tracker, self.graph, rows)

    def __repr__(self):
        return (f"Worker({self.index}/{self.workers}, caps={len(self._caps[0])}, "
                f"temp={len(self._temp[0])}, glob={len(self._glob[0])}, policy={self.policy!r})")



def _feed(tracker, graph: Graph, rows: Table) -> None:
    """Give a frontier tracker (any backend) the changes ``rows``."""
    if not len(rows[0]):
        return
    apply = getattr(tracker, "update_arrays", None)
    if apply is not None:
        apply(*rows)
    else:
        tracker.update(rows[0].tolist(), [tuple(r[:graph.width(l)]) for l, r in
                                          zip(rows[0].tolist(), rows[1].tolist())], rows[2].tolist())
