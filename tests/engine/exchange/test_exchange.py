"""The exchange protocol (engine.exchange) against the theorems of the verified paper.

A Hypothesis state machine drives K = 1..6 workers on random graphs through arbitrary
interleavings of ``perf_op``, ``send_upd`` (policy-chosen and arbitrary subsets),
``recv_upd`` and ``recv_cap``. After every step it checks, with an oracle written here from
the paper's definitions (signed multisets as dicts, could-result-in from the reference
closure):

* invariant 1: ``rec`` has no negative count;
* invariant 2: ``rec = glob(w) + info(w)`` for every worker ``w``;
* invariant 3: ``info(w)`` is ``justified`` with respect to ``rec``;
* **Safe**: no worker's ``glob`` is vacant up to a pointstamp of ``rec``;
* **Mono**: no worker's ``glob`` gains a count where it was vacant;
* combined (section 6): every worker's implied frontier at every location is at or before
  the implied frontier of ``rec`` (an :class:`engine.ImpliedFrontierTracker` fed ``rec``), and
  equal to it once everything is delivered.

Guards are predicted by the oracle: an operation or send the oracle rejects must raise the
named error and change nothing; one it accepts must go through.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule, run_state_machine_as_test)

import engine
import engine.exchange.worker as exchange_worker
from engine import GraphBuilder, ImpliedFrontierTracker, Summary
from engine.cli.main import main
from engine.core.closure import closure, could_result_in
from engine.errors import (BackendError, BatchError, ExchangeCapabilityError, ExchangeError,
                           ExchangeStateError, SafetyError, UnjustifiedSendError,
                           UpdateOrderError)
from engine.exchange.messages import HEADER_BYTES, INITIAL, OWN, Update
from engine.exchange.multisets import _take
from engine.exchange.policies import POLICIES, HoldBack, Policy, SendBatched, make_policy
from engine.exchange.simulation import Exchange, _Event, split_batch
from engine.exchange.worker import Worker
from engine.core.timestamp import le
from engine.core.workload import example_graph
from strategies import any_graphs, timestamps

# --------------------------------------------------------------------------------------------
# The oracle: signed multisets as {(loc, ts): count}, ts at the location's own width
# --------------------------------------------------------------------------------------------


class Oracle:
    def __init__(self, graph):
        self.graph = graph
        self.psi = closure(graph)

    def le(self, p, q):
        return could_result_in(self.psi, self.graph, p[0], p[1], q[0], q[1])

    def lt(self, p, q):
        return p != q and self.le(p, q)

    def table(self, t):
        out = {}
        for l, row, c in zip(t[0].tolist(), t[1].tolist(), t[2].tolist()):
            key = (l, tuple(row[:self.graph.width(l)]))
            out[key] = out.get(key, 0) + c
        return {k: v for k, v in out.items() if v}

    def justified(self, C, M):
        """The paper's ``justified C M``."""
        for p, c in M.items():
            if c <= 0:
                continue
            if any(v < 0 and self.lt(q, p) for q, v in M.items()):
                continue
            if any(v > 0 and self.lt(q, p) for q, v in C.items()):
                continue
            if c < C.get(p, 0):
                continue
            return False
        return True

    def vacant_up_to(self, G, p):
        return not any(v != 0 and self.le(q, p) for q, v in G.items())

    def perf_op_ok(self, C, changes):
        """The paper's ``perf_op`` guards for worker capabilities ``C`` and rows
        ``[(p, d, to), ...]``: ``Delta_neg`` (own drops, summed) <= ``C``; every ``Delta_self``
        pointstamp has a held one at or before it; every ``Delta_data`` one a held one strictly
        before it; and the configuration changes (data, or ``Delta_self != Delta_neg``)."""
        neg, pos, data = {}, {}, []
        for p, d, to in changes:
            if to == OWN and d < 0:
                neg[p] = neg.get(p, 0) - d
            elif to == OWN:
                pos[p] = pos.get(p, 0) + d
            else:
                data.append(p)
        return (all(C.get(p, 0) >= k for p, k in neg.items())
                and all(any(v > 0 and self.le(q, p) for q, v in C.items()) for p in pos)
                and all(any(v > 0 and self.lt(q, p) for q, v in C.items()) for p in data)
                and (bool(data) or zadd(pos, neg, sign=-1) != {}))


def zadd(*ms, sign=1):
    out = {}
    for i, m in enumerate(ms):
        s = 1 if i == 0 else sign
        for k, v in m.items():
            out[k] = out.get(k, 0) + s * v
    return {k: v for k, v in out.items() if v}


def rows(graph, points):
    """``(loc, ts, diff)`` arrays from ``[((l, t), d), ...]`` (ts padded to the graph width)."""
    W = graph.m + graph.max_depth
    loc = np.array([p[0] for p, _ in points], np.int32)
    ts = np.zeros((len(points), W), np.int64)
    for i, ((_, t), _) in enumerate(points):
        ts[i, :len(t)] = t
    return loc, ts, np.array([d for _, d in points], np.int64)


def snapshot(ex):
    def tab(t):
        return [a.tolist() for a in t]
    return ([(tab(w.caps), tab(w.temp), tab(w.glob), dict(w.stats), w._seq, list(w._expect))
             for w in ex.workers],
            {k: [(u.sender, u.seq) for u in q] for k, q in ex.msg.items()},
            [tab(d) for d in ex.data], [len(q) for q in ex.pending], tab(ex._counts))


# --------------------------------------------------------------------------------------------
# The state machine
# --------------------------------------------------------------------------------------------


class ExchangeMachine(RuleBasedStateMachine):

    #: Drive ``perf_op`` through workload batches (:class:`BatchedExchangeMachine`) instead.
    batched = False

    @initialize(data=st.data())
    def setup(self, data):
        g = data.draw(any_graphs(max_ops=3), label="graph")
        self.g = g
        self.o = Oracle(g)
        self.K = data.draw(st.integers(1, 6), label="workers")
        self.ex = Exchange(g, self.K, seed=data.draw(st.integers(0, 3)))
        for w in self.ex.workers:      # a mix of policies in one system
            w.policy = make_policy(data.draw(st.sampled_from(sorted(POLICIES)), label="policy"))
        self.pool = data.draw(st.lists(self.points(), min_size=1, max_size=5, unique=True))
        self.rec = {}
        self.truth = ImpliedFrontierTracker(g)
        for p in data.draw(st.lists(st.sampled_from(self.pool), min_size=1, max_size=3)):
            owner = data.draw(st.integers(0, self.K - 1))
            self.ex.admit(*rows(g, [(p, 1)]), owner=owner)
            self.apply_rec({p: 1})
        self.prev_globs = None

    def points(self):
        g = self.g
        return st.integers(0, g.num_locations - 1).flatmap(
            lambda l: st.tuples(st.just(l), timestamps(g.m, g.depth(l), hi=2)))

    def apply_rec(self, delta):
        self.rec = zadd(self.rec, delta)
        if delta:
            items = list(delta.items())
            self.truth.update([p[0] for p, _ in items], [p[1] for p, _ in items],
                              [d for _, d in items])

    def successors(self, p):
        """Pointstamps at or after ``p``: its images through ``Psi``, and those bumped by one
        in the last coordinate (strictly after)."""
        l, t = p
        out = []
        for l2, sums in self.o.psi[l].items():
            for s in sums:
                u = s.apply(t)
                out += [(l2, u), (l2, u[:-1] + (u[-1] + 1,))]
        return out

    # -- perf_op -------------------------------------------------------------------------------

    @precondition(lambda self: not self.batched)
    @rule(data=st.data())
    def perform(self, data):
        holders = [w.index for w in self.ex.workers if len(w.caps[0])]
        if holders and data.draw(st.integers(0, 9)):
            w = data.draw(st.sampled_from(holders), label="worker")
        else:
            w = data.draw(st.integers(0, self.K - 1), label="worker")
        worker = self.ex.workers[w]
        caps = self.o.table(worker.caps)
        near = sorted({q for p in caps for q in self.successors(p)})
        cand = st.sampled_from(near) if near and data.draw(st.integers(0, 4)) else \
            st.sampled_from(self.pool)
        changes = []
        if caps:   # drops: of what is held, now and then more
            for p in data.draw(st.lists(st.sampled_from(sorted(caps)), max_size=2, unique=True)):
                extra = data.draw(st.integers(0, 9)) == 0
                changes.append((p, -data.draw(st.integers(1, caps[p])) - extra, OWN))
            if changes and data.draw(st.integers(0, 3)) == 0:   # and re-create a dropped one
                changes.append((changes[0][0], data.draw(st.integers(1, 2)), OWN))
        for p in data.draw(st.lists(cand, min_size=0 if changes else 1, max_size=2)):
            to = data.draw(st.sampled_from([OWN] + list(range(self.K))))
            changes.append((p, data.draw(st.integers(1, 2)), to))
        # the oracle's verdict: the paper's guards (against the capabilities held before)
        ok = self.o.perf_op_ok(caps, changes)
        net = zadd({}, *[{p: d} for p, d, to in changes if to == OWN])
        held = [q for q, v in caps.items() if v > 0]
        summed_ok = (all(caps.get(p, 0) >= -d for p, d in net.items() if d < 0)
                     and all(any(self.o.le(q, p) for q in held) for p, d in net.items() if d > 0)
                     and all(any(self.o.lt(q, p) for q in held) for p, _, to in changes if to != OWN))
        if summed_ok and not ok:    # where the paper differs from netting own rows first
            event("refused by the paper's perf_op, though its own rows, summed first, pass")
        loc, ts, diff = rows(self.g, [(p, d) for p, d, _ in changes])
        to = np.array([t for _, _, t in changes], np.int64)
        if ok:
            self.ex.perform(w, loc, ts, diff, to=to)
            self.apply_rec({k: v for k, v in zadd({}, *[{p: d} for p, d, _ in changes]).items()})
        else:
            before = snapshot(self.ex)
            with pytest.raises(ExchangeCapabilityError, match=f"worker {w}: (row|the operation changes nothing)"):
                self.ex.perform(w, loc, ts, diff, to=to)
            assert snapshot(self.ex) == before

    @precondition(lambda self: not self.batched)
    @rule(data=st.data())
    def admit(self, data):
        """New initial capabilities, admitted by every worker in one step, at any time."""
        p = data.draw(st.sampled_from(self.pool))
        c = data.draw(st.integers(1, 2))
        self.ex.admit(*rows(self.g, [(p, c)]), owner=data.draw(st.integers(0, self.K - 1)))
        self.apply_rec({p: c})
        # a new Init: Mono starts again, from the state right after it
        self.prev_globs = [self.o.table(w.glob) for w in self.ex.workers]

    # -- send_upd ------------------------------------------------------------------------------

    def holding(self):
        return [w.index for w in self.ex.workers if len(w.temp[0])]

    @precondition(lambda self: self.holding())
    @rule(data=st.data())
    def send_subset(self, data):
        w = data.draw(st.sampled_from(self.holding()))
        worker = self.ex.workers[w]
        n = len(worker.temp[0])
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
        mask[data.draw(st.integers(0, n - 1))] = True      # gamma is never empty
        rest = _take(worker.temp, ~mask)
        if self.o.justified(self.o.table(worker.caps), self.o.table(rest)):
            u = self.ex.send(w, select=mask)
            assert u.sender == w and len(u) == int(mask.sum())
        else:
            before = snapshot(self.ex)
            with pytest.raises(UnjustifiedSendError, match=f"worker {w}: this send would leave"):
                self.ex.send(w, select=mask)
            assert snapshot(self.ex) == before

    @rule(data=st.data())
    def send_by_policy(self, data):
        w = data.draw(st.integers(0, self.K - 1))
        self.ex.send(w)     # a policy's choice is always justified

    # -- recv_upd, recv_cap, the scheduler -----------------------------------------------------

    def queues(self):
        return [k for k, q in self.ex.msg.items() if q]

    def in_flight(self):
        return [r for r in range(self.K) if len(self.ex.data[r][0])]

    @precondition(lambda self: self.queues())
    @rule(data=st.data())
    def receive(self, data):
        self.ex.receive(*data.draw(st.sampled_from(self.queues())))

    @precondition(lambda self: self.in_flight())
    @rule(data=st.data())
    def receive_data(self, data):
        r = data.draw(st.sampled_from(self.in_flight()))
        self.ex.deliver_data(r, data.draw(st.integers(0, len(self.ex.data[r][0]) - 1)))

    @precondition(lambda self: self.ex.events())
    @rule()
    def scheduler_step(self):
        self.ex.step()

    @rule(hold_back=st.booleans())
    def scheduler_round(self, hold_back):
        """A round of every worker (issue 25): operations, sends, then each worker's queues
        as one batch -- only transitions the step scheduler could take, so the theorems hold
        after it too."""
        self.ex.round(hold_back=hold_back)

    @rule()
    def drain(self):
        """Everything delivered, only frontier-neutral changes left in ``temp``: every worker's
        frontiers equal the single tracker's; after a flush every ``glob`` equals ``rec``."""
        self.ex.quiesce()
        self.theorems_hold()
        want = self.truth.frontiers()
        settled = all(not self.o.table(w.temp) for w in self.ex.workers)
        for w in self.ex.workers:
            assert w.frontiers() == want
            assert not settled or self.o.table(w.glob) == self.rec
        self.ex.flush()
        self.theorems_hold()
        assert self.ex.quiescent()
        for w in self.ex.workers:
            assert w.frontiers() == want
            assert self.o.table(w.glob) == self.rec

    # -- the theorems --------------------------------------------------------------------------

    @invariant()
    def theorems_hold(self):
        if not hasattr(self, "ex"):
            return
        o, ex = self.o, self.ex
        if self.batched:
            self.sync_rec()
        rec = o.table(ex.rec())
        assert rec == self.rec                                   # bookkeeping of rec
        assert all(v > 0 for v in rec.values())                  # invariant 1
        temps = [o.table(w.temp) for w in ex.workers]
        globs = [o.table(w.glob) for w in ex.workers]
        for w in range(self.K):
            queued = [o.table((u.loc, u.ts, u.diff)) for s in range(self.K) for u in ex.msg[(s, w)]]
            info = zadd({}, *temps, *queued)
            assert zadd(globs[w], info) == rec                   # invariant 2
            assert o.justified(rec, info)                        # invariant 3
            for p in rec:                                        # Safe
                assert not o.vacant_up_to(globs[w], p), (w, p)
            if self.prev_globs is not None:                      # Mono
                for p in globs[w]:
                    assert not o.vacant_up_to(self.prev_globs[w], p), (w, p)
            mine = ex.workers[w].frontiers()                     # combined
            for l, true_f in enumerate(self.truth.frontiers()):
                for t in true_f:
                    assert any(le(u, t, self.g.m) for u in mine[l]), (w, l, mine[l], true_f)
        ex.check_safety()    # the module's own check agrees
        self.prev_globs = globs

    def teardown(self):
        if hasattr(self, "ex"):
            self.drain()


def test_exchange_state_machine():
    run_state_machine_as_test(ExchangeMachine, settings=settings(
        max_examples=40, stateful_step_count=25, deadline=None))


class BatchedExchangeMachine(ExchangeMachine):
    """``perf_op`` only through workload batches: :meth:`Exchange.perform_batch` queued back
    to back (each split before the earlier ones' operations are performed or their data
    delivered), interleaved with the scheduler, sends, deliveries and the workers' next
    operations taken by hand. ``rec`` must always be the positive part of the workload's
    counts less what is still queued, and each worker's next operation is enabled exactly
    when the paper's guards hold for it."""

    batched = True

    @initialize(data=st.data())
    def setup(self, data):
        g = data.draw(any_graphs(max_ops=3), label="graph")
        self.g, self.o = g, Oracle(g)
        self.K = data.draw(st.integers(1, 4), label="workers")
        self.ex = Exchange(g, self.K, seed=data.draw(st.integers(0, 3)))
        for w in self.ex.workers:
            w.policy = make_policy(data.draw(st.sampled_from(sorted(POLICIES)), label="policy"))
        self.pool = data.draw(st.lists(self.points(), min_size=1, max_size=4, unique=True))
        self.rec, self.counts = {}, {}
        self.truth = ImpliedFrontierTracker(g)
        self.prev_globs = None
        self.queue(data, initial=True)

    def sync_rec(self):
        """Expected ``rec``: the workload's positive counts less the queued operations' rows;
        the true tracker follows it."""
        want = {p: c for p, c in self.counts.items() if c > 0}
        for q in self.ex.pending:
            for op in q:
                want = zadd(want, self.o.table((op.loc, op.ts, op.diff)), sign=-1)
        delta = zadd(want, self.rec, sign=-1)
        self.apply_rec(delta)

    def queue(self, data, initial=False):
        expected = {p: c for p, c in self.counts.items() if c > 0}
        # after what is expected, and after what is held now (which queued drops may remove)
        near = sorted({q for p in {**expected, **self.o.table(self.ex.held())}
                       for q in self.successors(p)})
        cand = st.sampled_from(self.pool) if initial or not near else \
            st.one_of(st.sampled_from(self.pool), st.sampled_from(near))
        lo = 1 if initial else -2
        batch = data.draw(st.dictionaries(cand, st.integers(lo, 2).filter(bool), min_size=1,
                                          max_size=4))
        if not initial and expected and data.draw(st.booleans()):
            # drop what a batch made, preferably what is not held yet (queued or in flight)
            held = self.o.table(self.ex.held())
            coming = sorted(p for p in expected if expected[p] > held.get(p, 0))
            p = data.draw(st.sampled_from(coming or sorted(expected)))
            batch[p] = -expected[p]
        self.ex.perform_batch(*rows(self.g, list(batch.items())))
        self.counts = zadd(self.counts, batch)
        # admissions are a new Init: Mono restarts right after them
        self.prev_globs = [self.o.table(w.glob) for w in self.ex.workers]

    @rule(data=st.data())
    def queue_batch(self, data):
        self.queue(data)

    def fronts(self):
        return [w for w in range(self.K) if self.ex.pending[w]]

    @precondition(lambda self: self.fronts())
    @rule(data=st.data())
    def next_operation(self, data):
        """A worker's next queued operation: enabled exactly when the paper's guards hold."""
        w = data.draw(st.sampled_from(self.fronts()))
        op = self.ex.pending[w][0]
        changes = [(p, d, t) for p, d, t in zip(
            [(l, tuple(r[:self.g.width(l)])) for l, r in zip(op.loc.tolist(), op.ts.tolist())],
            op.diff.tolist(), op.to.tolist())]
        ok = self.o.perf_op_ok(self.o.table(self.ex.workers[w].caps), changes)
        assert (_Event("perform", (w,)) in self.ex.events()) == ok
        if ok:
            self.ex.pending[w].popleft()
            self.ex.perform(w, op.loc, op.ts, op.diff, to=op.to)
        else:
            event("a queued operation waits for capabilities in flight or pending")


def test_exchange_state_machine_batches_back_to_back():
    run_state_machine_as_test(BatchedExchangeMachine, settings=settings(
        max_examples=15, stateful_step_count=20, deadline=None))


# --------------------------------------------------------------------------------------------
# Guards: each named error, and a rejected call changes nothing
# --------------------------------------------------------------------------------------------

def _chain():
    """src -> mid -> sink at depth 0, m = 1: pointstamps ordered along the chain and in time."""
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=0, name="src")
    mid = b.add_operator(1, 1, depth=0, name="mid")
    b.add_summary(mid, 0, 0, Summary.identity(0, 1))
    sink = b.add_operator(1, 0, depth=0, name="sink")
    b.connect(src, 0, mid, 0)
    b.connect(mid, 0, sink, 0)
    g = b.build()
    return g, g.source(src, 0), g.target(mid, 0), g.target(sink, 0)


def _worker(index=0, workers=2, policy="all", caps=((0, 5, 1),)):
    g, *_ = _chain()
    init = rows(g, [((l, (t,)), c) for l, t, c in caps])
    return Worker(g, index, workers, policy=policy, initial=init, initial_glob=init)


def _state(w):
    return [[a.tolist() for a in t] for t in (w.caps, w.temp, w.glob)] + [dict(w.stats)]


def test_perf_op_drops_only_held_capabilities():
    w = _worker()
    before = _state(w)
    with pytest.raises(ExchangeCapabilityError, match=r"row 0: drops 2 of \(source src\[0\].out0.*\(5,\)\) but holds 1"):
        w.perform(*rows(w.graph, [((0, (5,)), -2)]))
    assert _state(w) == before
    w.perform(*rows(w.graph, [((0, (5,)), -1)]))
    assert w.caps[0].tolist() == [] and w.temp[2].tolist() == [-1]


def test_perf_op_new_capability_needs_one_at_or_before_it():
    w = _worker()
    before = _state(w)
    with pytest.raises(ExchangeCapabilityError, match=r"row 1: new capability .*\(4,\)\) is not justified"):
        w.perform(*rows(w.graph, [((1, (6,)), 1), ((1, (4,)), 1)]))
    assert _state(w) == before
    w.perform(*rows(w.graph, [((0, (5,)), 1), ((1, (5,)), 2)]))     # at and after (0, 5)
    assert sorted(zip(w.caps[0].tolist(), w.caps[2].tolist())) == [(0, 2), (1, 2)]


def test_perf_op_data_needs_a_capability_strictly_before_it():
    w = _worker()
    with pytest.raises(ExchangeCapabilityError, match=r"row 0: data message to worker 1 .* strictly before"):
        w.perform(*rows(w.graph, [((0, (5,)), 1)]), to=[1])
    before = _state(w)
    with pytest.raises(ExchangeCapabilityError, match="must carry a positive count"):
        w.perform(*rows(w.graph, [((0, (5,)), -1)]), to=[1])
    with pytest.raises(ExchangeError, match="to=7 is neither"):
        w.perform(*rows(w.graph, [((1, (5,)), 1)]), to=[7])
    with pytest.raises(BatchError):
        w.perform([9], [(5,)], [1])
    assert _state(w) == before
    out = w.perform(*rows(w.graph, [((1, (5,)), 3)]), to=[1])
    assert [(d.receiver, d.loc.tolist(), d.diff.tolist()) for d in out] == [(1, [1], [3])]
    assert w.caps[2].tolist() == [1] and w.temp[2].tolist() == [3]   # data is in temp, not caps


def test_perf_op_follows_the_paper_drops_are_not_netted_with_additions():
    """The paper checks ``Delta_neg <= caps`` before anything is added: creating and
    dropping in one operation a capability the worker does not hold is refused, though the
    rows sum to a valid drop; and an operation must change something."""
    w = _worker(caps=((0, 5, 1),))
    before = _state(w)
    # +1 and -2 of (0, 5), holding 1: summed it is a drop of 1, but Delta_neg = 2 > 1
    with pytest.raises(ExchangeCapabilityError, match=r"worker 0: row 1: drops 2 of \(source src.*\(5,\)\) but holds 1"):
        w.perform(*rows(w.graph, [((0, (5,)), 1), ((0, (5,)), -2)]))
    with pytest.raises(ExchangeCapabilityError, match=r"worker 0: row 1: drops 1 of \(target mid.*\(6,\)\) but holds 0"):
        w.perform(*rows(w.graph, [((1, (6,)), 1), ((1, (6,)), -1)]))
    # both guards hold, but the rows sum to no change of the configuration
    with pytest.raises(ExchangeCapabilityError, match="worker 0: the operation changes nothing"):
        w.perform(*rows(w.graph, [((0, (5,)), 1), ((0, (5,)), -1)]))
    with pytest.raises(ExchangeCapabilityError, match="worker 0: the operation changes nothing"):
        w.perform(*rows(w.graph, []))
    assert _state(w) == before
    w.perform(*rows(w.graph, [((0, (5,)), 1), ((0, (5,)), -1), ((1, (6,)), 1)]))
    assert sorted(zip(w.caps[0].tolist(), w.caps[2].tolist())) == [(0, 1), (1, 1)]


def test_send_refuses_to_leave_temp_unjustified():
    w = _worker(policy="all")
    w.perform(*rows(w.graph, [((1, (5,)), 1), ((0, (5,)), -1)]))    # move the capability on
    loc, _, cnt = w.temp
    only_drop = cnt < 0
    before = _state(w)
    with pytest.raises(UnjustifiedSendError, match=r"leave 1 of \(target mid\[1\].in0 .*\(5,\)\)"):
        w.send(select=only_drop)                                    # the drop alone: not allowed
    assert _state(w) == before
    assert w.send(select=~only_drop) is not None                    # the new one alone: fine
    u = w.flush()
    assert (u.sender, u.seq, u.diff.tolist()) == (0, 1, [-1])
    assert w.stats["updates_sent"] == 2 and w.stats["pointstamps_sent"] == 2
    assert w.stats["bytes_sent"] == 2 * (HEADER_BYTES + 1 * (4 + 8 * 1 + 8))


def test_receive_checks_fifo_order_per_sender():
    w = _worker()
    g = w.graph
    u0 = Update(1, 0, *rows(g, [((1, (5,)), 1)]))
    u1 = Update(1, 1, *rows(g, [((0, (5,)), -1)]))
    before = _state(w)
    with pytest.raises(UpdateOrderError, match="update 1 from worker 1 is out of order: expected update 0"):
        w.receive(u1)
    with pytest.raises(UpdateOrderError, match="unknown sender 5"):
        w.receive(Update(5, 0, *rows(g, [])))
    assert _state(w) == before
    w.receive(u0)
    with pytest.raises(UpdateOrderError, match="is a duplicate"):
        w.receive(u0)
    w.receive(u1)
    assert w.frontier(1) == [(5,)] and w.stats["updates_received"] == 2


def test_admit_needs_positive_counts():
    g, *_ = _chain()
    ex = Exchange(g, 2)
    ex.admit(*rows(g, [((0, (1,)), 1)]), owner=1)
    before = snapshot(ex)
    with pytest.raises(ExchangeStateError, match=r"initial capability .*\(3,\)\) has count -1"):
        ex.admit(*rows(g, [((0, (1,)), 2), ((0, (3,)), -1)]), owner=0)
    with pytest.raises(ExchangeError, match="owner 2 is not a worker 0..1"):
        ex.admit(*rows(g, [((0, (1,)), 2)]), owner=2)
    assert snapshot(ex) == before
    assert [w.frontier(0) for w in ex.workers] == [[(1,)], [(1,)]]
    assert ex.workers[1].caps[2].tolist() == [1] and ex.workers[0].caps[2].tolist() == []


def test_exchange_refuses_steps_that_are_not_enabled():
    g, *_ = _chain()
    ex = Exchange(g, 2)
    before = snapshot(ex)
    with pytest.raises(ExchangeStateError, match="no update from worker 0 to worker 1"):
        ex.receive(0, 1)
    with pytest.raises(ExchangeStateError, match="no data is in flight to worker 1"):
        ex.deliver_data(1)
    with pytest.raises(BatchError):
        ex.perform_batch([0, 7], [(1,), (1,)], [1, 1])
    assert snapshot(ex) == before
    with pytest.raises(ExchangeError, match="workers must be a positive integer"):
        Exchange(g, 0)
    with pytest.raises(BackendError, match="unknown sending policy 'often'; choose one of: all, batch, holdback"):
        Exchange(g, 2, policy="often")


def test_zero_advance_cycles_are_refused():
    b = GraphBuilder(m=1)
    op = b.add_operator(1, 1, depth=0)
    b.add_summary(op, 0, 0, Summary.identity(0, 1))
    b.connect(op, 0, op, 0)
    with pytest.raises(ExchangeError, match="needs could-result-in to be a partial order"):
        Exchange(b.build(allow_zero_cycles=True), 2)


# --------------------------------------------------------------------------------------------
# The checks can fail
# --------------------------------------------------------------------------------------------

class DropsFirst(Policy):
    """A broken policy: sends the negative changes and holds back everything else."""

    def release(self, worker, now=None):
        return worker.temp[2] < 0


def _moved_capability(policy):
    """Worker 0 of 2 moves its capability (0, 5) to (1, 5): temp = {+(1, 5), -(0, 5)}."""
    g, *_ = _chain()
    ex = Exchange(g, 2, policy=policy, check=True)
    ex.admit(*rows(g, [((0, (5,)), 1)]), owner=0)
    ex.perform(0, *rows(g, [((1, (5,)), 1), ((0, (5,)), -1)]))
    return ex


def test_a_broken_policy_is_stopped_by_send():
    ex = _moved_capability(DropsFirst())
    before = snapshot(ex)
    with pytest.raises(UnjustifiedSendError):
        ex.send(0)
    assert snapshot(ex) == before


def test_an_unguarded_send_is_caught_by_the_safety_check(monkeypatch):
    ex = _moved_capability(DropsFirst())
    monkeypatch.setattr(exchange_worker, "justified", lambda *a: -1)   # switch send_upd's guard off
    ex.send(0)                       # only the drop travels
    ex.receive(0, 1)                 # worker 1's view is now empty, but (1, 5) exists
    with pytest.raises(SafetyError, match=r"Safe fails: worker 1's view is vacant up to \(target mid\[1\].in0 .*\(5,\)\)"):
        ex.check_safety()
    monkeypatch.undo()
    with pytest.raises(SafetyError, match="frontier at target mid"):
        _frontier_check_only(ex)


def _frontier_check_only(ex):
    """The combined check alone (Safe already failed): worker 1's frontier is ahead."""
    truth = ex.truth.frontiers()
    for l, true_f in enumerate(truth):
        for t in true_f:
            if not any(le(u, t, ex.graph.m) for u in ex.workers[1].frontier(l)):
                raise SafetyError(f"frontier at {ex.graph.describe(l)}")


def test_mono_violation_is_caught():
    ex = _moved_capability("all")
    ex.check_safety()
    w1 = ex.workers[1]
    # a forged update that brings back a pointstamp before anything worker 1 has seen
    w1.receive(Update(0, 0, *rows(ex.graph, [((0, (2,)), 1)])))
    with pytest.raises(SafetyError, match="Mono fails: worker 1's view moved back"):
        ex.check_safety()


# --------------------------------------------------------------------------------------------
# Policies and split_batch
# --------------------------------------------------------------------------------------------

def test_holdback_never_sends_a_pointstamp_created_and_consumed_under_a_capability():
    """A message at (mid, 5) sent and consumed while (src, 5) is held: holdback keeps +1 back
    (justified by the capability before it), the -1 cancels it in temp, nothing is sent."""
    sent = {}
    for policy in ("all", "holdback"):
        g, src, mid, _ = _chain()
        ex = Exchange(g, 1, policy=policy, check=True)
        ex.admit(*rows(g, [((src, (5,)), 1)]), owner=0)
        ex.perform(0, *rows(g, [((mid, (5,)), 1)]))
        ex.send(0)
        ex.perform(0, *rows(g, [((mid, (5,)), -1)]))
        ex.send(0)
        ex.quiesce()
        sent[policy] = ex.stats["pointstamps_sent"]
    assert sent == {"all": 2, "holdback": 0}


def test_holdback_keeps_exactly_what_justified_allows():
    w = _worker(policy="holdback", caps=((0, 5, 2),))
    w.perform(*rows(w.graph, [((0, (5,)), 1), ((1, (7,)), 1), ((0, (5,)), -2)]))
    # temp: (0,5) -1, (1,7) +1; caps: (0,5) 1. (1,7) is after the held (0,5): kept back.
    mask = HoldBack().release(w)
    assert w.temp[0][mask].tolist() == [0] and w.temp[0][~mask].tolist() == [1]
    w.perform(*rows(w.graph, [((0, (5,)), -1)]))
    assert HoldBack().release(w).all()      # no capability left: everything must go


def test_batch_policy_waits_for_size_or_time():
    w = _worker(policy=SendBatched(size=3, interval=10))
    w.perform(*rows(w.graph, [((1, (5,)), 1)]), now=0)
    assert w.send(now=5) is None and w.send(now=10) is not None
    w.perform(*rows(w.graph, [((1, (6,)), 1), ((1, (7,)), 1), ((2, (8,)), 1)]), now=11)
    assert w.send(now=11) is not None       # three rows: the size is reached


def test_batch_policy_clock_restarts_after_a_partial_send():
    """What a partial send (quiesce's settling) leaves behind does not make the next batch
    due early: the clock restarts at the next operation."""
    w = _worker(policy=SendBatched(size=100, interval=10))
    w.perform(*rows(w.graph, [((1, (6,)), 1), ((1, (7,)), 1)]), now=0)
    assert w.send(now=1, select=np.array([True, False])) is not None   # (1, 7) stays
    assert not w.wants_to_send(50)       # nothing performed since the send
    w.perform(*rows(w.graph, [((2, (8,)), 1)]), now=50)
    assert not w.wants_to_send(59) and w.wants_to_send(60)


def test_batches_queued_back_to_back_are_split_against_what_is_pending():
    """A batch queued before the last one's operations ran must not lean on a capability a
    queued drop removes (it is admitted instead), and an operation that drops a capability
    still in flight as data waits for it."""
    g, src, mid, sink = _chain()
    ex = Exchange(g, 1, check=True)
    ex.run([src], [(5,)], [1])
    ex.perform_batch([src], [(5,)], [-1])       # queued: drop (src, 5)
    ex.perform_batch([mid], [(5,)], [1])        # (src, 5) will be gone: admitted
    ex.quiesce()
    ex.check_agreement()
    assert Oracle(g).table(ex.rec()) == {(mid, (5,)): 1}
    ex = Exchange(g, 2, check=True)             # src is worker 0's, mid worker 1's
    ex.run([src], [(5,)], [1])
    ex.perform_batch([mid], [(6,)], [1])        # worker 0 sends (mid, 6) to worker 1
    ex.perform_batch([mid], [(6,)], [-1])       # worker 1 drops it: only once it arrived
    assert [e.args for e in ex.events() if e.kind == "perform"] == [(0,)]
    assert "drops 1 of" in str(ex._front_admissible(1))
    ex.step()                                   # worker 0's operation: data in flight
    assert "data" in [e.kind for e in ex.events()]
    assert (1,) not in [e.args for e in ex.events() if e.kind == "perform"]
    ex.deliver_data(1)
    assert (1,) in [e.args for e in ex.events() if e.kind == "perform"]
    ex.quiesce()
    ex.check_agreement()
    assert Oracle(g).table(ex.rec()) == {(src, (5,)): 1}


def test_quiesce_names_an_operation_that_can_never_be_performed():
    """Capabilities moved by hand away from the batch's bookkeeping: the queued drop can
    never pass its guard, and quiesce says so instead of leaving it behind silently."""
    g, src, mid, sink = _chain()
    ex = Exchange(g, 2, check=True)
    ex.run([src, mid], [(5,), (5,)], [1, 1])
    ex.perform(1, *rows(g, [((mid, (5,)), -1), ((mid, (6,)), 1)]))   # not through a batch
    ex.quiesce()
    ex.perform_batch([mid], [(5,)], [-1])
    with pytest.raises(ExchangeStateError, match=r"worker 1's next pending operation can never be performed.*drops 1 of \(target mid"):
        ex.quiesce()
    assert len(ex.pending[1]) == 1


def test_mono_is_checked_right_after_an_admission():
    """A batch with an unjustified row admits it; the next check still checks Mono, from
    the state right after the admission."""
    g, src, mid, sink = _chain()
    ex = Exchange(g, 2, check=True)
    ex.run([src], [(5,)], [1])
    ex.perform_batch([sink, mid], [(1,), (6,)], [1, 1])     # (sink, 1) admitted, (mid, 6) queued
    assert len(ex.pending[0]) == 1
    # a forged update that brings back a pointstamp before anything worker 1 has seen
    ex.workers[1].receive(Update(0, 0, *rows(g, [((src, (2,)), 1)])))
    with pytest.raises(SafetyError, match="Mono fails: worker 1's view moved back"):
        ex.check_safety()


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_split_batch_is_admissible_in_any_order(data):
    """Every operation of split_batch passes the guards in any order, and together they
    change rec by exactly the batch."""
    g = example_graph()
    K = data.draw(st.integers(1, 5))
    pts = st.tuples(st.integers(0, g.num_locations - 1), timestamps(1, 1, hi=2))
    held = data.draw(st.dictionaries(pts, st.integers(1, 2), max_size=4))
    batch = data.draw(st.dictionaries(pts, st.integers(-2, 2).filter(bool), max_size=5))
    batch = {p: d for p, d in batch.items() if held.get(p, 0) + d >= 0}
    ex = Exchange(g, K)
    for p, c in held.items():
        ex.admit(*rows(g, [(p, c)]), owner=p[0] % K)
    ops = split_batch(g, *rows(g, list(batch.items())), K, held=ex.held())
    initial = [op for op in ops if op.initial]
    assert all(op.to.tolist() == [INITIAL] * len(op.to) for op in initial)
    assert ops[:len(initial)] == initial
    for op in initial:
        ex.admit(op.loc, op.ts, op.diff, owner=op.worker)
    rest = [op for op in ops if not op.initial]
    assert len({op.worker for op in rest}) == len(rest)
    for op in data.draw(st.permutations(rest)):
        ex.perform(op.worker, op.loc, op.ts, op.diff, to=op.to)
    ex.quiesce()
    o = Oracle(g)
    assert o.table(ex.rec()) == zadd(held, batch)
    for w in ex.workers:        # each worker holds exactly the pointstamps it owns
        assert all(l % K == w.index for l in w.caps[0].tolist())


# --------------------------------------------------------------------------------------------
# tfront replay --workers: the same output whatever K, the schedule and the policy
# --------------------------------------------------------------------------------------------

EXAMPLES = sorted((Path(engine.__file__).parent / "core" / "examples").glob("*.txt"))


def _replay(*argv):
    """``tfront replay ARGV`` in this process: its stdout (stderr must stay empty)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["replay", *map(str, argv)])
    assert status == 0 and err.getvalue() == "", err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_replay_workers_matches_single_worker_on_the_examples(path):
    want = {flags: _replay(path, *flags) for flags in ((), ("--sources",))}
    for k in (1, 2, 5):
        for policy in POLICIES:
            for seed, flags in ((0, ()), (5, ("--sources",))):
                got = _replay(path, *flags, "--workers", k, "--policy", policy,
                              "--schedule-seed", seed)
                assert got == want[flags], (k, policy, seed)


@st.composite
def workload_texts(draw):
    """A workload (format v1): nodes 1..n after the scope, channels forward along the node
    order; a channel back to an earlier node leaves a node whose every summary advances the
    iteration, so every cycle advances time. Batches over a small pool of ports and times,
    counts rising, falling and going negative."""
    n = draw(st.integers(1, 4))
    ins = [1] + [draw(st.integers(1, 2)) for _ in range(n)]
    outs = [1] + [draw(st.integers(1, 2)) for _ in range(n)]
    lines = ["timely-reach v1"] + [f"node {i} {ins[i]} {outs[i]}" for i in range(n + 1)]
    advancing = [False] + [draw(st.booleans()) for _ in range(n)]
    for i in range(1, n + 1):
        for a in range(ins[i]):
            for b in range(outs[i]):
                for _ in range(draw(st.integers(0, 2))):
                    d_e = draw(st.integers(0, 1))
                    d_i = draw(st.integers(1 if advancing[i] else 0, 1))
                    lines.append(f"summary {i} {a} {b} {d_e} {d_i}")
    edges = {}
    for j in range(n + 1):
        for p in range(ins[j]):
            srcs = [(i, q) for i in range(n + 1) for q in range(outs[i])
                    if i < j or (j and advancing[i]) or (j == 0 and i > 0)]
            if srcs and draw(st.integers(0, 3)):
                i, q = draw(st.sampled_from(srcs))
                lines.append(f"edge {i} {q} {j} {p}")
                edges.setdefault(("s", i, q), []).append(("t", j, p))
    ports = [("s", i, q) for i in range(n + 1) for q in range(outs[i])] + \
            [("t", i, q) for i in range(n + 1) for q in range(ins[i])]
    times = st.tuples(st.integers(0, 2), st.integers(0, 2))
    pool = draw(st.lists(st.tuples(st.sampled_from(ports), times), min_size=1, max_size=4,
                         unique=True))
    later = lambda t: st.tuples(st.integers(t[0], t[0] + 1), st.integers(t[1], t[1] + 1))
    lines.append("batch")           # the pool's pointstamps exist at first
    lines += [f"{k} {i} {q} {e} {it} 1" for (k, i, q), (e, it) in pool]
    lines.append("end")
    for _ in range(draw(st.integers(1, 4))):
        rows_ = []
        for _ in range(draw(st.integers(0, 3))):
            (port, t) = draw(st.sampled_from(pool))
            kind = draw(st.sampled_from(["any", "advance", "message"]))
            if kind == "any":           # anything, justified or not, counts may go negative
                rows_.append((port, t, draw(st.integers(-2, 2))))
            elif kind == "advance":     # a capability moves to a later time
                rows_ += [(port, draw(later(t)), 1), (port, t, -1)]
            elif edges.get(port):       # a message along a channel, at or after the time
                rows_.append((draw(st.sampled_from(edges[port])), draw(later(t)), 1))
        lines.append("batch")
        lines += [f"{k} {i} {q} {e} {it} {d}" for (k, i, q), (e, it), d in rows_]
        lines.append("end")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(text=workload_texts(), k=st.integers(1, 9), seed=st.integers(0, 9),
       policy=st.sampled_from(sorted(POLICIES)),
       check=st.sampled_from(["every-step", "round", "batch"]))
def test_replay_workers_matches_single_worker_on_random_workloads(tmp_path_factory, text, k,
                                                                   seed, policy, check):
    path = tmp_path_factory.mktemp("w") / "w.txt"
    path.write_text(text)
    want = _replay(path, "--sources")
    got = _replay(path, "--sources", "--workers", k, "--schedule-seed", seed, "--policy", policy,
                  "--check", check)
    assert got == want


def test_replay_workers_options_need_workers(capsys):
    for flag, value in (("--policy", "all"), ("--schedule-seed", "3")):
        with pytest.raises(SystemExit) as e:
            main(["replay", str(EXAMPLES[0]), flag, value])
        assert e.value.code == 2
        assert f"replay {flag} needs --workers" in capsys.readouterr().err


def test_replay_workers_refuses_a_zero_advance_cycle(capsys, tmp_path):
    p = tmp_path / "zero.txt"
    p.write_text("timely-reach v1\nnode 0 1 1\nnode 1 1 1\nsummary 1 0 0 0 0\nedge 1 0 1 0\n"
                 "edge 0 0 0 0\nbatch\ns 1 0 0 0 1\nend\n")
    status = main(["replay", str(p), "--allow-zero-cycles", "--workers", "2"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("tfront replay: error: the exchange protocol needs could-result-in "
                          "to be a partial order")


def test_replay_workers_time_reports_traffic(capsys):
    status = main(["replay", str(EXAMPLES[0]), "--workers", "3", "--quiet", "--time"])
    out, err = capsys.readouterr()
    assert status == 0 and out == ""
    rows_ = [json.loads(line) for line in err.splitlines()]
    assert [r["batch"] for r in rows_] == list(range(len(rows_)))
    assert sum(r["updates_received"] for r in rows_) == 3 * sum(r["updates_sent"] for r in rows_)


@pytest.mark.parametrize("backend", ["reference", "timely"])
def test_replay_workers_on_other_backends(backend):
    path = EXAMPLES[0]
    assert _replay(path, "--workers", 3, "--backend", backend) == _replay(path)


def test_replay_workers_strict_refuses_a_negative_count_like_the_single_worker():
    """The bundled example takes a count to -1 in batch 3: --strict stops there, either way,
    with the same message."""
    runs = []
    for extra in ((), ("--workers", "3")):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["replay", str(EXAMPLES[0]), "--strict", *extra])
        runs.append((status, out.getvalue(), err.getvalue()))
    assert runs[0] == runs[1]
    status, out, err = runs[0]
    assert status == 2 and out.count("\nB ") == 3      # batches 0-2 were printed
    assert err.startswith("tfront replay: error: batch 3 (line 41): strict mode: pointstamp "
                          "(3, (7, 0)) at target node2[2].in1 (depth 1) would have count -1"), err


def test_replay_workers_names_the_first_safety_violation(monkeypatch):
    """With send's guard switched off and a policy that sends drops first, the replay stops at
    the first step where a worker's view is wrong, and says where."""
    monkeypatch.setattr(exchange_worker, "justified", lambda *a: -1)
    monkeypatch.setitem(POLICIES, "all", DropsFirst)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["replay", str(EXAMPLES[0]), "--workers", "2", "--check", "every-step"])
    assert status == 2
    assert re.match(r"tfront replay: error: batch 1 \(line 28\): step \d+: Safe fails: worker \d's "
                    r"view is vacant up to \(source node1\[1\]\.out0 \(depth 1\), \(1, 0\)\), "
                    r"which the system holds 1 of\n\Z", err.getvalue()), err.getvalue()
