"""The progress exchange protocol: every worker tracks frontiers itself, kept safe by broadcast
count updates (the ``exchange`` protocol of the verified paper, sections 3, 4 and 6;
``docs/exchange.md``).

A system of ``K`` workers shares one multiset of pointstamps, ``rec``: the capabilities the
workers hold plus the capabilities in flight to them as data. No worker sees ``rec``. Worker
``w``'s part of the configuration is

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
    :func:`justified` by the worker's capabilities. *Which* part is the :class:`Policy`'s choice.
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

Pointstamps are ordered by could-result-in (``(l, t) <= (l', t')`` iff some summary ``s`` in
``Psi[l, l']`` has ``s(t) <= t'``), a partial order on graphs without zero-advance cycles.
Every multiset is columnar and consolidated, as in the batched engine: ``loc int32[n]``,
``ts int64[n, m+K]`` (padded), ``cnt int64[n]`` sorted by ``(loc, ts)``, no zero rows.

:class:`Exchange` simulates ``K`` workers with a seeded scheduler that interleaves the four
transitions at random; :func:`split_batch` turns a workload batch into admissible operations.

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

import abc

import random
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from engine.core.choices import Choice
from engine.errors import (BatchError, ExchangeCapabilityError, ExchangeError, ExchangeStateError,
                     NegativeCountError, SafetyError, UnjustifiedSendError, UpdateOrderError)
from engine.core.graph import Graph
from engine.core.timestamp import le

__all__ = ["Update", "DataMessage", "Operation", "PointstampOrder", "Policy", "SendAll",
           "SendBatched", "HoldBack", "SendPolicy", "POLICIES", "make_policy", "justified",
           "split_batch", "owner_of", "Worker", "Exchange", "OWN", "INITIAL", "HEADER_BYTES",
           "warm_up"]

#: ``to`` of a row that stays with (or is dropped by) the performing worker.
OWN = -1
#: ``to`` of a row of :func:`split_batch` that no held capability justifies: admitted as an
#: initial capability of its owner, into every worker's ``glob`` (:meth:`Worker.admit`).
INITIAL = -2
#: Bytes of an :class:`Update`'s fixed header on the wire: sender (4), seq (8), rows (4).
HEADER_BYTES = 16

Table = tuple  # (loc int32[n], ts int64[n, W], cnt int64[n]), sorted, consolidated


# -- signed multisets as consolidated columns ---------------------------------------------------

def _empty(W: int) -> Table:
    return np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64)


def _zsum(*parts: Table, signs=None) -> Table:
    """The sum of signed multisets (each optionally negated): consolidated."""
    from gpu_kernels.consolidate import consolidate
    signs = signs or (1,) * len(parts)
    loc = np.concatenate([p[0] for p in parts]).astype(np.int32)
    ts = np.ascontiguousarray(np.concatenate([p[1] for p in parts]), dtype=np.int64)
    cnt = np.concatenate([p[2] * s for p, s in zip(parts, signs)]).astype(np.int64)
    return consolidate(loc, ts, cnt)


def _take(t: Table, mask) -> Table:
    return t[0][mask], t[1][mask], t[2][mask]


def _lookup(t: Table, q_loc, q_ts) -> np.ndarray:
    """``int64[q]``: the count of each query pointstamp in the table (0 where absent)."""
    n, q = len(t[0]), len(q_loc)
    if n == 0 or q == 0:
        return np.zeros(q, np.int64)
    keys = np.concatenate([np.column_stack([t[0], t[1]]),
                           np.column_stack([np.asarray(q_loc, np.int64), q_ts])])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    vals = np.zeros(int(inv.max()) + 1, np.int64)
    vals[inv[:n]] = t[2]
    return vals[inv[n:]]


def _positive(t: Table) -> Table:
    return _take(t, t[2] > 0)


def _magnitude(t: Table) -> Table:
    return t[0], t[1], np.abs(t[2])


class PointstampOrder:
    """Could-result-in between the pointstamps of one graph, for whole arrays of them.

    ``Psi`` rows are computed on first use and kept (:class:`engine.batched.queries.PsiRowCache`);
    one instance can serve every worker of a system.

    Parameters
    ----------
    graph : Graph
        Without zero-advance cycles (else could-result-in is not a partial order and the
        protocol's guarantees do not hold): :class:`~engine.errors.ExchangeError`.
    """

    #: Up to this many queries run on one thread (starting the thread pool costs more).
    SERIAL = 1 << 16

    def __init__(self, graph: Graph):
        from engine.batched.graph_arrays import GraphArrays
        from engine.batched.queries import PsiRowCache
        cycle = graph.find_zero_advance_cycle()
        if cycle is not None:
            raise ExchangeError(
                "the exchange protocol needs could-result-in to be a partial order, but the "
                "graph has a cycle that does not advance time: "
                + " -> ".join(graph.describe(l) for l in cycle))
        self.graph = graph
        self.ga = GraphArrays.from_graph(graph)
        self.width = graph.m + graph.max_depth
        self._rows = PsiRowCache(self.ga)

    def below(self, t: Table, q_loc, q_ts) -> np.ndarray:
        """``int64[q]``: how many *other* pointstamps with a positive count in ``t`` are
        ``<=`` (so, being other, ``<``) each query pointstamp."""
        from gpu_kernels.precursors import precursor_counts, precursor_counts_serial
        q = len(q_loc)
        act = t[2] > 0
        if q == 0 or not act.any():
            return np.zeros(q, np.int64)
        act_locs = np.unique(t[0][act]).astype(np.int64)
        row_of, pair_ptr, pair_dst, sum_ptr, sums = self._rows.csr(act_locs)
        seg_ptr = np.searchsorted(t[0], np.arange(self.ga.L + 1)).astype(np.int64)
        t_ts, q_loc, q_ts = np.ascontiguousarray(t[1]), np.asarray(q_loc, np.int32), \
            np.ascontiguousarray(q_ts)
        kernel = precursor_counts if q > self.SERIAL else precursor_counts_serial
        return kernel(row_of, pair_ptr, pair_dst, sum_ptr, sums, self.ga.m, act_locs, seg_ptr,
                      t_ts, t[2], q_loc, q_ts)

    def name(self, loc: int, row) -> str:
        """``'(target b[2].in1 (depth 1), (0, 0))'``: a pointstamp for messages."""
        w = self.graph.width(int(loc))
        return f"({self.graph.describe(int(loc))}, {tuple(int(x) for x in row[:w])})"


def justified(order: PointstampOrder, caps: Table, m: Table) -> int:
    """The paper's ``justified C M``, with ``C`` = ``caps``: every positive count of ``M`` at
    ``p`` is justified by a negative count of ``M`` strictly before ``p`` (``supp``), or by a
    positive count of ``C`` strictly before ``p``, or by ``M(p) < C(p)``.

    Returns the index (into ``m``) of the first positive row that is not justified, or -1
    when ``M`` is justified.
    """
    pos = np.flatnonzero(m[2] > 0)
    if not len(pos):
        return -1
    q_loc, q_ts = m[0][pos], m[1][pos]
    neg = m[0], m[1], -m[2]                  # M's negative entries, as positive counts
    ok = order.below(neg, q_loc, q_ts) > 0
    ok |= order.below(caps, q_loc, q_ts) > 0
    ok |= m[2][pos] < _lookup(caps, q_loc, q_ts)
    bad = pos[~ok]
    return int(bad[0]) if len(bad) else -1


# -- messages ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Update:
    """One broadcast progress update (``send_upd``): the signed changes ``gamma`` a worker
    took out of its ``temp``, numbered ``seq = 0, 1, 2, ...`` per sender (FIFO per sender).

    Attributes
    ----------
    sender : int
    seq : int
    loc : int32[n]
    ts : int64[n, m+K]
        Padded timestamps, as in the batched engine.
    diff : int64[n]
    """

    sender: int
    seq: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray

    def __len__(self) -> int:
        return len(self.loc)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: :data:`HEADER_BYTES` plus, per row, a location (4), the padded
        timestamp (8 per coordinate) and the count (8)."""
        return HEADER_BYTES + len(self.loc) * (4 + 8 * self.ts.shape[1] + 8)


@dataclass(frozen=True, eq=False)
class DataMessage:
    """Capabilities sent as data by ``perf_op`` to worker ``receiver`` (positive counts),
    taken into its ``caps`` by ``recv_cap``."""

    receiver: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray


class Operation(NamedTuple):
    """One step of a split batch (:func:`split_batch`): rows performed by ``worker``.

    ``to[i]`` is :data:`OWN` (-1) for a capability the worker creates for itself or drops,
    a worker index for a capability sent to that worker as data, or :data:`INITIAL` (-2,
    then every row of the operation is): capabilities admitted as initial ones of ``worker``
    (:meth:`Worker.admit` on every worker).
    """

    worker: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray
    to: np.ndarray

    @property
    def initial(self) -> bool:
        return bool(len(self.to)) and bool((self.to == INITIAL).all())


# -- sending policies --------------------------------------------------------------------------

class SendPolicy(Choice):
    """The selectable sending policies (:data:`POLICIES`)."""

    ALL = "all"
    BATCH = "batch"
    HOLDBACK = "holdback"

    @classmethod
    def label(cls) -> str:
        return "sending policy"


class Policy(abc.ABC):
    """Decides which part of a worker's ``temp`` ``send_upd`` broadcasts now.

    :meth:`release` returns ``bool[n]`` over the rows of ``worker.temp``; an all-false mask
    means "send nothing now". Whatever it returns, :meth:`Worker.send` refuses a send that
    leaves ``temp`` unjustified, so a wrong policy cannot break safety silently.
    """

    name = "policy"

    @abc.abstractmethod
    def release(self, worker: "Worker", now=None) -> np.ndarray:
        """The rows of ``worker.temp`` to send now."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SendAll(Policy):
    """Send everything in ``temp`` at every opportunity (the naive baseline)."""

    name = "all"

    def release(self, worker, now=None):
        return np.ones(len(worker.temp[0]), bool)


class SendBatched(Policy):
    """Send everything, but only once ``temp`` holds ``size`` rows or the first operation
    since it was last empty or sent from (:attr:`Worker.temp_since`) is ``interval`` old (in
    the caller's clock: :class:`Exchange` steps, or seconds): what a partial send -- such as
    :meth:`Exchange.quiesce`'s settling -- leaves behind does not make the next batch due early.
    Holding everything back is always allowed (no send happens) and sending everything is
    always justified, so this policy needs no check of its own.
    """

    name = "batch"

    def __init__(self, size: int = 32, interval: float | None = 64):
        if size < 1:
            raise ExchangeError(f"batch policy: size must be at least 1, got {size}")
        self.size, self.interval = size, interval

    def release(self, worker, now=None):
        n = len(worker.temp[0])
        due = n >= self.size or (self.interval is not None and now is not None
                                 and worker.temp_since is not None
                                 and now - worker.temp_since >= self.interval)
        return np.full(n, bool(due))

    def __repr__(self):
        return f"SendBatched(size={self.size}, interval={self.interval})"


class HoldBack(Policy):
    """Send the negative changes and the positive changes the worker cannot keep; keep back
    every positive change at ``p`` that the worker's own capabilities justify -- one strictly
    before ``p``, or at ``p`` with a larger count. Such a change cannot move any worker's
    frontier back (a capability at or before it is already accounted for), and while it is
    held, a later drop of the same pointstamp cancels it in ``temp``: created-and-consumed
    pointstamps are never sent. What stays in ``temp`` is exactly what ``justified`` allows.
    """

    name = "holdback"

    def release(self, worker, now=None):
        loc, ts, cnt = worker.temp
        pos = cnt > 0
        keep = np.zeros(len(cnt), bool)
        if pos.any():
            caps = worker.caps
            idx = np.flatnonzero(pos)
            ok = worker.order.below(caps, loc[idx], ts[idx]) > 0
            ok |= cnt[idx] < _lookup(caps, loc[idx], ts[idx])
            keep[idx[ok]] = True
        return ~keep


#: The sending policies by name: each entry makes a fresh :class:`Policy`.
POLICIES = {SendPolicy.ALL.value: SendAll, SendPolicy.BATCH.value: SendBatched,
            SendPolicy.HOLDBACK.value: HoldBack}


def make_policy(policy: "str | SendPolicy | Policy") -> Policy:
    """A :class:`Policy` from its name (:data:`POLICIES`) or as given;
    :class:`~engine.errors.BackendError` lists the names for an unknown one."""
    if isinstance(policy, Policy):
        return policy
    return POLICIES[SendPolicy.parse(policy).value]()


# -- one worker --------------------------------------------------------------------------------

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
        Which part of ``temp`` :meth:`send` broadcasts (:data:`POLICIES`).
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
        (:attr:`Update.nbytes` per broadcast, once however many receive it),
        ``updates_received``, ``operations`` (``perf_op``s), ``rows_performed`` (their rows).
    temp_since
        The ``now`` of the first :meth:`perform` since ``temp`` was last empty or last sent
        from (None if unknown, or if nothing was performed since), for time-based policies:
        what a partial send leaves in ``temp`` ages from the next operation on.
    """

    def __init__(self, graph: Graph, index: int, workers: int, *, backend="cpu",
                 policy: "str | Policy" = "all", initial=None, initial_glob=None,
                 order: PointstampOrder | None = None):
        from engine.batched.backend import make_tracker
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
        self.tracker = make_tracker(graph, backend)
        self._caps, self._temp, self._glob = caps, _empty(W), glob
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
            ok = (_lookup(caps, dself[0], dself[1]) > 0)
            ok |= self.order.below(caps, dself[0], dself[1]) > 0
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
            ok = self.order.below(caps, b_loc[data_rows], b_ts[data_rows]) > 0
            if not ok.all():
                i = int(data_rows[np.flatnonzero(~ok)[0]])
                raise ExchangeCapabilityError(
                    f"worker {self.index}: row {i}: data message to worker {int(to_a[i])} at "
                    f"{self.order.name(b_loc[i], b_ts[i])} is not justified: the worker holds "
                    f"no capability strictly before it")
        # commit
        data = (b_loc[~own], b_ts[~own], b_diff[~own])
        new_caps = _zsum(caps, net)
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
        saved = self._caps, self._temp, self.temp_since, dict(self.stats)
        try:
            self.perform(loc, ts, diff, to=to)
        except (ExchangeError, BatchError) as err:
            return err
        finally:
            self._caps, self._temp, self.temp_since = saved[:3]
            self.stats = saved[3]
        return None

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
        from engine.batched.batch_arrays import batch_arrays
        b = batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff)
        if (b[2] <= 0).any():
            i = int(np.flatnonzero(b[2] <= 0)[0])
            raise ExchangeStateError(f"worker {self.index}: row {i}: received data must have a "
                                     f"positive count, got {int(b[2][i])}")
        self._caps = _zsum(self._caps, b)

    # -- send_upd ------------------------------------------------------------------------------

    def send(self, now=None, *, select=None) -> Update | None:
        """``send_upd``: broadcast the part of ``temp`` the policy releases (or ``select``,
        a ``bool[n]`` over the rows of :attr:`temp`, overriding the policy).

        Returns the :class:`Update`, to be delivered to every worker (this one included), or
        None when nothing is released.

        Raises
        ------
        UnjustifiedSendError
            What would stay in ``temp`` is not :func:`justified` by ``caps``; nothing changes.
        """
        n = len(self._temp[0])
        mask = self.policy.release(self, now) if select is None else np.asarray(select)
        if mask.shape != (n,) or mask.dtype != bool:
            raise ExchangeError(f"worker {self.index}: a send's selection must be bool[{n}] over "
                                f"temp's rows, got {mask.dtype}{list(mask.shape)}")
        if not mask.any():
            return None
        rest = _take(self._temp, ~mask)
        bad = justified(self.order, self._caps, rest)
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
        return bool(len(self._temp[0])) and bool(self.policy.release(self, now).any())

    # -- recv_upd ------------------------------------------------------------------------------

    def receive(self, update: Update) -> None:
        """``recv_upd``: add the sender's next update to ``glob`` and to the local tracker.

        Raises
        ------
        UpdateOrderError
            An unknown sender, or ``update.seq`` is not the next of its sender (a duplicate
            or a gap: updates of one sender are received in the order they were sent).
        """
        s = update.sender
        if not (isinstance(s, (int, np.integer)) and 0 <= s < self.workers):
            raise UpdateOrderError(f"worker {self.index}: update from unknown sender {s!r} "
                                   f"(workers are 0..{self.workers - 1})")
        if update.seq != self._expect[s]:
            what = "a duplicate" if update.seq < self._expect[s] else "out of order"
            raise UpdateOrderError(f"worker {self.index}: update {update.seq} from worker {s} is "
                                   f"{what}: expected update {self._expect[s]}")
        from engine.batched.batch_arrays import batch_arrays
        rows = batch_arrays(self.graph, self.order.ga.depth, update.loc, update.ts, update.diff)
        self._apply_tracker(rows)
        self._glob = _zsum(self._glob, rows)
        self._expect[s] += 1
        self.stats["updates_received"] += 1

    def admit(self, loc, ts, diff, *, owner: int) -> None:
        """This worker's share of admitting initial capabilities of worker ``owner`` (the
        paper's ``Init`` extended to later points): ``glob`` gains them, and the owner's
        ``caps``. The step is sound only if every worker takes it before any of them takes
        another step (in one process, :meth:`Exchange.admit`; across processes, at a barrier):
        then ``rec`` and every ``glob`` grow alike, and the invariants behind Safe survive
        (docs/exchange.md). ``glob`` may gain counts where it was vacant: a new ``Init``.

        Raises
        ------
        ExchangeStateError
            A count is not positive.
        """
        from engine.batched.batch_arrays import batch_arrays
        rows = _zsum(batch_arrays(self.graph, self.order.ga.depth, loc, ts, diff))
        if (rows[2] <= 0).any():
            i = int(np.flatnonzero(rows[2] <= 0)[0])
            raise ExchangeStateError(f"worker {self.index}: initial capability "
                                     f"{self.order.name(rows[0][i], rows[1][i])} has count "
                                     f"{int(rows[2][i])}; it must be positive")
        self._apply_tracker(rows)
        self._glob = _zsum(self._glob, rows)
        if owner == self.index:
            self._caps = _zsum(self._caps, rows)

    def _apply_tracker(self, rows: Table) -> None:
        _feed(self.tracker, self.graph, rows)

    def __repr__(self):
        return (f"Worker({self.index}/{self.workers}, caps={len(self._caps[0])}, "
                f"temp={len(self._temp[0])}, glob={len(self._glob[0])}, policy={self.policy!r})")


def _rows(graph: Graph, order: PointstampOrder, rows) -> Table:
    from engine.batched.batch_arrays import batch_arrays
    loc, ts, diff = rows
    return batch_arrays(graph, order.ga.depth, loc, ts, diff)


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


# -- splitting a workload batch ----------------------------------------------------------------

def owner_of(loc, workers: int) -> np.ndarray:
    """The worker that holds capabilities at each location: ``loc % workers``."""
    return np.asarray(loc, np.int64) % workers


def split_batch(graph: Graph, loc, ts, diff, workers: int, *, held=None,
                order: PointstampOrder | None = None) -> list[Operation]:
    """Split one batch of changes to ``rec`` among ``workers`` workers, admissibly.

    Each pointstamp belongs to the worker ``loc % workers`` (:func:`owner_of`): that worker
    holds its capabilities. Given ``held`` -- the capabilities held before the batch, as
    ``(loc, ts, cnt)`` (held by their owners; default none) -- each row becomes:

    * a negative change: a drop by the owner (it holds the count: the batch may not take
      ``rec`` below zero);
    * a positive change at ``p``: performed by the owner as a new own capability if the owner
      holds a capability at or before ``p``; otherwise by the lowest worker that holds a
      capability strictly before ``p``, as a data message to the owner; otherwise (nothing
      held justifies it) an :data:`INITIAL` row, admitted before the operations by every
      worker at once (:meth:`Worker.admit`).

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
        p_loc, p_ts = b[0][pos], b[1][pos]
        h_owner = owner_of(h[0], workers)
        below = np.stack([order.below(_take(h, h_owner == w), p_loc, p_ts) > 0
                          for w in range(workers)]) if len(h[0]) else np.zeros((workers, len(pos)), bool)
        own_ok = (_lookup(h, p_loc, p_ts) > 0) | below[owner[pos], np.arange(len(pos))]
        any_below = below.any(axis=0)
        first = np.argmax(below, axis=0)
        data = ~own_ok & any_below
        performer[pos[data]] = first[data]
        to[pos[data]] = owner[pos[data]]
        init = ~own_ok & ~any_below
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
    check : bool
        Run :meth:`check_safety` after every step.
    strict : bool
        :meth:`perform_batch` refuses a batch that takes a workload count below zero.

    Attributes
    ----------
    msg : dict[(sender, receiver), deque[Update]]
    data : list[Table]
        Capabilities in flight to each worker.
    clock : int
        Steps taken (the ``now`` of time-based policies).
    """

    def __init__(self, graph: Graph, workers: int, *, policy="all", backend="cpu", seed: int = 0,
                 check: bool = False, strict: bool = False):
        from engine.batched.backend import make_tracker
        self.graph = graph
        if not (isinstance(workers, (int, np.integer)) and workers >= 1):
            raise ExchangeError(f"workers must be a positive integer, got {workers!r}")
        make_policy(policy)  # an unknown name fails before anything is built
        self.order = PointstampOrder(graph)
        self.workers = [Worker(graph, i, workers, backend=backend, policy=policy, order=self.order)
                        for i in range(workers)]
        self.K = len(self.workers)
        W = self.order.width
        self.msg = {(s, r): deque() for s in range(self.K) for r in range(self.K)}
        self.data = [_empty(W) for _ in range(self.K)]
        self.pending = [deque() for _ in range(self.K)]
        self.rng = random.Random(seed)
        self.clock = 0
        self.check = check
        self.strict = strict
        self._counts = _empty(W)           # the workload's signed counts
        self.truth = make_tracker(graph, backend)   # implied frontiers of rec
        self._prev_globs = None
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
        """Totals over the workers (:attr:`Worker.stats`), plus ``steps`` and ``data_messages``."""
        out = {k: sum(w.stats[k] for w in self.workers) for k in self.workers[0].stats}
        out["steps"] = self.clock
        out["data_messages"] = self.data_messages
        return out

    # -- transitions ---------------------------------------------------------------------------

    def perform(self, w: int, loc, ts, diff, *, to=None) -> None:
        """``perf_op`` by worker ``w``; its data messages join ``data``."""
        out = self.workers[w].perform(loc, ts, diff, to=to, now=self.clock)
        self._rec_changed(loc, ts, diff)
        for d in out:
            self.data[d.receiver] = _zsum(self.data[d.receiver], (d.loc, d.ts, d.diff))
            self.data_messages += 1

    def _rec_changed(self, loc, ts, diff) -> None:
        from engine.batched.batch_arrays import batch_arrays
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
        (:meth:`admit`). The other operations wait in :attr:`pending` for :meth:`step`.

        Batches may be queued back to back, before the operations of earlier ones are
        performed: the split is made against :meth:`expected` -- what is held once everything
        pending is performed and its data delivered -- not against what is held now, so it
        never leans on a capability that a pending drop removes. A worker's operations are
        performed in the order queued, each only once its guards hold
        (:meth:`Worker.admissible`): an operation that needs a capability still pending or
        in flight as data waits for it (:meth:`events`); it becomes admissible at the latest
        once the earlier batches' operations are performed and their data delivered.
        """
        from engine.batched.kernels import cpu_kernels
        b = cpu_kernels.intake(self.graph, self.order.ga.depth, loc, ts, diff)
        old = _lookup(self._counts, b[0], b[1])
        new = old + b[2]
        if self.strict and (new < 0).any():
            i = int(np.flatnonzero(new < 0)[0])
            l = int(b[0][i])
            t = tuple(int(x) for x in b[1][i][:self.graph.width(l)])
            raise NegativeCountError(    # worded as the trackers word it
                f"strict mode: pointstamp ({l}, {t}) at {self.graph.describe(l)} would have count "
                f"{int(new[i])} (now {int(old[i])}, batch changes it by {int(b[2][i])}); batch "
                f"rejected, nothing applied")
        dpos = np.maximum(new, 0) - np.maximum(old, 0)
        keep = dpos != 0
        ops = split_batch(self.graph, b[0][keep], b[1][keep], dpos[keep], self.K,
                          held=self.expected(), order=self.order)
        initial = [op for op in ops if op.initial]
        self._counts = _zsum(self._counts, b)
        for op in initial:
            self.admit(op.loc, op.ts, op.diff, owner=op.worker)
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
        if not (isinstance(owner, (int, np.integer)) and 0 <= owner < self.K):
            raise ExchangeError(f"owner {owner!r} is not a worker 0..{self.K - 1}")
        rows = _zsum(_rows(self.graph, self.order, (loc, ts, diff)))
        self.workers[owner].admit(*rows, owner=owner)   # checks the counts first
        for w in self.workers:
            if w.index != owner:
                w.admit(*rows, owner=owner)
        _feed(self.truth, self.graph, rows)
        # Init again: Mono is a property of steps, not of Init; it restarts from here
        self._prev_globs = [w._glob for w in self.workers]

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

    def _stepped(self) -> None:
        self.clock += 1
        if self.check:
            try:
                self.check_safety()
            except SafetyError as err:
                raise SafetyError(f"step {self.clock}: {err}") from None

    def quiesce(self) -> None:
        """Step until nothing is pending or in flight and every ``temp`` is *settled*: once
        nothing else is enabled, a worker whose policy holds back more than :class:`HoldBack`
        would sends what :class:`HoldBack` releases (workers in random order). What stays in
        a ``temp`` then is only positive counts that the worker's own capabilities justify:
        each lies at or after a pointstamp every ``glob`` has, so every worker's frontiers
        equal the true ones (:meth:`check_agreement`) though ``glob`` may differ from ``rec``.
        :meth:`flush` empties the ``temp`` too.

        Raises
        ------
        ExchangeStateError
            A queued operation that can never pass its guards (capabilities moved by
            :meth:`perform` outside the batches' bookkeeping); it stays queued, named.
        """
        settle = HoldBack()
        while True:
            if self.step():
                continue
            unsettled = [w.index for w in self.workers if len(w._temp[0])
                         and settle.release(w).any()]
            if not unsettled:
                stuck = [w for w in range(self.K) if self.pending[w]]
                if stuck:   # nothing in flight can make them admissible: never drop them
                    w = stuck[0]
                    raise ExchangeStateError(
                        f"worker {w}'s next pending operation can never be performed, and "
                        f"nothing in flight can change that ({len(self.pending[w])} "
                        f"operation(s) left in its queue): {self._front_admissible(w)}")
                return
            w = self.rng.choice(unsettled)
            self.send(w, select=settle.release(self.workers[w]))
            self._stepped()

    def flush(self) -> None:
        """:meth:`quiesce`, then send and deliver everything still held back: afterwards
        :meth:`quiescent` -- every ``glob`` equals ``rec``."""
        self.quiesce()
        for w in self.rng.sample(range(self.K), self.K):
            if self.send(w, flush=True) is not None:
                self._stepped()
        self.quiesce()

    def run(self, loc, ts, diff) -> None:
        """One workload batch: :meth:`perform_batch`, then :meth:`quiesce`."""
        self.perform_batch(loc, ts, diff)
        self.quiesce()

    # -- checks --------------------------------------------------------------------------------

    def check_safety(self) -> None:
        """Check, for every worker: **Safe** (its ``glob`` is not vacant up to any pointstamp
        of ``rec``), **Mono** (its ``glob`` is vacant wherever it was at the previous check)
        and the combined result (its implied frontier at every location is never ahead of
        the implied frontier of ``rec``).

        Raises
        ------
        SafetyError
            Naming the first violation: worker, property, location and pointstamp.
        """
        rec = _positive(self.rec())
        m = self.graph.m
        truth = self.truth.frontiers()
        globs = [w._glob for w in self.workers]
        for w, g in zip(self.workers, globs):
            mag = _magnitude(g)
            if len(rec[0]):
                ok = (_lookup(g, rec[0], rec[1]) != 0) | (self.order.below(mag, rec[0], rec[1]) > 0)
                if not ok.all():
                    i = int(np.flatnonzero(~ok)[0])
                    raise SafetyError(
                        f"Safe fails: worker {w.index}'s view is vacant up to "
                        f"{self.order.name(rec[0][i], rec[1][i])}, which the system holds "
                        f"{int(rec[2][i])} of")
            if self._prev_globs is not None and len(g[0]):
                prev = self._prev_globs[w.index]
                ok = (_lookup(prev, g[0], g[1]) != 0) | (self.order.below(_magnitude(prev), g[0], g[1]) > 0)
                if not ok.all():
                    i = int(np.flatnonzero(~ok)[0])
                    raise SafetyError(
                        f"Mono fails: worker {w.index}'s view moved back: it has a count at "
                        f"{self.order.name(g[0][i], g[1][i])}, where it was vacant")
            mine = w.frontiers()
            for l, true_f in enumerate(truth):
                for t in true_f:
                    if not any(le(u, t, m) for u in mine[l]):
                        raise SafetyError(
                            f"worker {w.index}'s frontier at {self.graph.describe(l)} is "
                            f"{mine[l]}, ahead of the true implied frontier {true_f}: nothing "
                            f"in it is at or before {t}")
        self._prev_globs = globs

    def check_agreement(self) -> None:
        """After :meth:`quiesce`: every worker's frontiers equal the true implied frontiers
        exactly (:class:`~engine.errors.SafetyError` names the first difference)."""
        truth = self.truth.frontiers()
        for w in self.workers:
            mine = w.frontiers()
            for l, (a, b) in enumerate(zip(mine, truth)):
                if sorted(a) != sorted(b):
                    raise SafetyError(f"after quiescence worker {w.index}'s frontier at "
                                      f"{self.graph.describe(l)} is {a}, the true one {b}")


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
