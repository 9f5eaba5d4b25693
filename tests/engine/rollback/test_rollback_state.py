"""engine.rollback.state (issue 12, item 5): the state and the pointstamp counts after a rollback.

A simulated run on a random rollback problem: processors consume queued messages and receive
notifications (delivered when the reference tracker's frontiers at their input ports have passed
the time), every step feeds the tracker the change of the pointstamp counts. The run is rolled
back at a random step to the solver's answer; the rebuilt counts satisfy Lemma 1, come from
kept work only, and replaying the undone work and then the rest of the run gives the tracker
the frontiers of the run that never failed, at every step.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import assume, event, given, strategies as st

from engine.batched.backend import make_tracker
from engine.errors import RollbackFormatError, RollbackStateError, TimelyFrontierError
from engine.trackers.reference import ImpliedFrontierTracker
from engine.rollback.format import parse_rollback
from engine.rollback.problem import Avail, EdgeDecl, Guard, RollbackProblem, down, solve
from engine.rollback.state import (Effects, RunState, count_delta, one_step_pairs, pointstamps,
                                   rebuild, rebuild_counts, state_problem, tracker_graph)
from strategies import examples
from rollback_cases import EXAMPLE_2, problems


def behaviour(problem, requesting):
    """A ``g``: on internal edge ``k`` a processor has put, at each time ``b``, ``min(2, #events
    at times a with (a, b) in ~>1(k))`` messages (a function of the history filtered to
    ``need_k(b)``, Condition 2); a requesting processor asks to be notified at the time of every
    message it consumes, until it is notified."""
    pairs = {k: one_step_pairs(problem, k) for k in problem.internal()}
    outs = [problem.edges_out_of(p, ("edge",)) for p in range(problem.n)]

    def g(p, history):
        times = Counter(t for _k, t in history)
        msgs = {}
        for k in outs[p]:
            made = Counter()
            for a, b in pairs[k]:
                made[b] += times[a]
            msgs[k] = Counter({b: min(2, c) for b, c in made.items() if c})
        reqs = frozenset()
        if requesting[p]:
            reqs = frozenset(t for k, t in history if k is not None) - \
                {t for k, t in history if k is None}
        return Effects(msgs, reqs)
    return g


class Sim:
    """A run: its state, the reference tracker fed with every change of its pointstamps."""

    def __init__(self, problem, g, tmap, state, tracker=None, also=()):
        self.problem, self.g, self.tmap, self.state = problem, g, tmap, state
        self.tracker = tracker or ImpliedFrontierTracker(tmap.graph, strict=True)
        self.also = list(also)  # more trackers fed the same changes (they must agree)
        self.counts = {(loc, ts): c for (loc, ts), c in self.tracker.counts.items() if c}
        for tr in self.also:
            assert {k: c for k, c in tr.counts.items() if c} == self.counts
        self.sync()

    def sync(self):
        new = pointstamps(self.tmap, self.state)
        delta = count_delta(self.counts, new)
        for tr in [self.tracker] + self.also:
            tr.update(*delta)
        self.counts = new
        for tr in self.also:
            assert tr.frontiers() == self.tracker.frontiers()

    def deliverable(self, p, t):
        return not any(all(x <= y for x, y in zip(u, t))
                       for loc in self.tmap.inputs[p] for u in self.tracker.frontier(loc))

    def actions(self):
        out = [(self.problem.edges[k].dst, (k, t)) for k, q in sorted(self.state.queues.items())
               for t in sorted(set(q))]
        out += [(p, (None, t)) for p, r in enumerate(self.state.requests) for t in sorted(r)
                if self.deliverable(p, t)]
        return out

    def apply(self, p, ev):
        """Process one event at ``p`` (a message must be queued; notifications are taken from
        the log as they are, the way a replay does)."""
        k, t = ev
        st_ = self.state
        if k is not None:
            assert t in st_.queues[k], f"replayed message {ev} at {p} is not queued"
            st_.queues[k].remove(t)
        before = self.g(p, st_.histories[p])
        st_.histories[p].append(ev)
        after = self.g(p, st_.histories[p])
        for d, made in after.messages.items():
            for b, c in made.items():
                st_.queues[d].extend([b] * (c - before.messages[d].get(b, 0)))
        st_.requests[p] = set(after.requests)
        self.sync()


@st.composite
def run_problems(draw):
    """Graphs a run does something on: an input into processor 0, a tree of internal edges
    from it, extra edges (cycles too), ``shift`` phis, ``need`` overrides and ``step`` subsets
    (as in ``tests/test_rollback.problems``), sometimes a buffer relaying to an output edge."""
    ne, ni, k = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(2, 4))
    times = [(e, i) for e in range(ne) for i in range(ni)]
    edges = [EdgeDecl("in", None, 0)]
    edges += [EdgeDecl("edge", draw(st.integers(0, p - 1)), p) for p in range(1, k)]
    for _ in range(draw(st.integers(0, 3))):
        a, b = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
        if a != b:
            edges.append(EdgeDecl("edge", a, b))
    buffer = [False] * k
    if draw(st.booleans()):
        edges += [EdgeDecl("edge", draw(st.integers(0, k - 1)), k), EdgeDecl("out", k, None)]
        buffer.append(True)
    problem = RollbackProblem(ne, ni, buffer, edges)
    for j, d in enumerate(edges):
        if d.kind != "edge" or buffer[d.src]:
            continue
        problem.shift[j] = draw(st.sampled_from([(0, 0), (0, 0), (0, 1), (1, 0)]))
        if draw(st.booleans()):
            over = {}
            if draw(st.booleans()):
                over[(0, 0)] = ()
            if draw(st.booleans()):
                over[(ne - 1, ni - 1)] = ((ne - 1, ni - 1),)
            problem.need_over[j] = over
        if draw(st.booleans()):
            pairs = sorted(one_step_pairs(problem, j))
            if pairs:
                problem.steps[j] = set(draw(st.lists(st.sampled_from(pairs), max_size=4)))
    try:
        problem.check()
    except RollbackFormatError:
        assume(False)
    return problem


def initial(problem, inputs):
    queues = {k: [] for k in problem.internal()}
    queues.update({k: [] for k, d in enumerate(problem.edges) if d.kind == "in"})
    for k, t in inputs:
        queues[k].append(t)
    return RunState([[] for _ in range(problem.n)], queues, [set() for _ in range(problem.n)])


def canon(state):
    return ([Counter(h) for h in state.histories],
            {k: Counter(q) for k, q in state.queues.items()}, state.requests)


@given(st.one_of(run_problems(), problems(max_nodes=4, max_times=(3, 2), closed=True)),
       st.sampled_from(list(Guard)),
       st.integers(0, 2**32), st.integers(2, 30), st.data())
@examples(150)
def test_rebuilt_state_replays_to_the_unfailed_run(problem, guard, seed, steps, data):
    rng = random.Random(seed)
    if not any(d.kind == "in" for d in problem.edges):  # processor 0 is never a buffer
        problem.edges.append(EdgeDecl("in", None, 0))
    tmap = tracker_graph(problem)
    g = behaviour(problem, [rng.random() < 0.5 for _ in range(problem.n)])
    inputs = [(k, t) for k, d in enumerate(problem.edges) if d.kind == "in"
              for t in problem.times if rng.random() < 0.6]
    # the run that never fails: its log and the tracker's frontiers after every step
    run = Sim(problem, g, tmap, initial(problem, inputs))
    log, frontiers, states = [], [run.tracker.frontiers()], [run.state.copy()]
    for _ in range(steps):
        acts = run.actions()
        if not acts:
            break
        p, ev = acts[rng.randrange(len(acts))]
        run.apply(p, ev)
        log.append((p, ev))
        frontiers.append(run.tracker.frontiers())
        states.append(run.state.copy())
    fail = data.draw(st.integers(len(log) // 2, len(log)), label="failure step")
    at_fail = states[fail]
    # the failure: a processor that reads no input loses its live history and can only go
    # back to an epoch checkpoint (or start over)
    sp = state_problem(problem, at_fail)
    no_input = [p for p in range(problem.n)
                if not problem.edges_into(p, ("in",)) and at_fail.histories[p]]
    if no_input:
        failed = data.draw(st.sampled_from(no_input), label="failed processor")
        sp.avail = list(sp.avail)
        sp.avail[failed] = Avail(every=False, epochs=data.draw(st.integers(-1, problem.ne - 1)))
    answer = solve(sp, guard)
    event(answer.result)
    assume(answer.result == "ok")
    f = [down(x, problem.ne, problem.ni) for x in answer.choice]
    snapshot = at_fail.copy()
    new, rows = rebuild_counts(problem, g, at_fail, f, tmap)
    assert canon(at_fail) == canon(snapshot)  # the failed state is not changed
    undone = sum(1 for p, (_k, t) in log[:fail] if t not in f[p])
    event("work undone" if undone else "nothing undone")

    # (a) Lemma 1 on the rebuilt counts: per internal edge and time, produced = consumed +
    # queued, the queue being the tracker's count at the edge's port; inputs neither lost nor
    # doubled
    table = {(loc, ts): c for loc, ts, c in rows}
    assert all(c > 0 for c in table.values())
    for k in problem.internal():
        d = problem.edges[k]
        made = g(d.src, new.histories[d.src]).messages[k]
        for b in problem.times:
            consumed = sum(1 for e, t in new.histories[d.dst] if e == k and t == b)
            assert made.get(b, 0) == consumed + table.get((tmap.edge_port[k], b), 0)
    for k, d in enumerate(problem.edges):
        if d.kind == "in":
            consumed = Counter(t for e, t in new.histories[d.dst] if e == k)
            assert consumed + Counter(new.queues[k]) == Counter(t for e, t in inputs if e == k)

    # (c) nothing of the undone work remains: every kept event is at a kept time, and the
    # rolled-back state (counts included) is the one a run that only ever did the kept work,
    # in the original order, reaches
    assert all(t in f[p] for p, h in enumerate(new.histories) for _k, t in h)
    for k in problem.internal():  # each queued message has a cause in the kept history
        pairs, src = one_step_pairs(problem, k), problem.edges[k].src
        assert all(any((a, t) in pairs for _e, a in new.histories[src]) for t in new.queues[k])
    assert all(r <= f[p] for p, r in enumerate(new.requests))  # g requests at its events' times
    kept = Sim(problem, g, tmap, initial(problem, inputs))
    for p, ev in log[:fail]:
        if ev[1] in f[p]:
            kept.apply(p, ev)
    assert canon(kept.state) == canon(new)
    assert kept.counts == table

    # (b) fresh trackers (the reference and the batched engine, cpu backend) loaded with the
    # rebuilt counts; replay the undone work in the original order: at the failure point the
    # state and the frontiers are the unfailed run's, and every later step of the run gives the
    # same frontiers, to the end
    trackers = [ImpliedFrontierTracker(tmap.graph, strict=True),
                make_tracker(tmap.graph, "cpu", strict=True)]
    for tr in trackers:
        tr.update([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    replay = Sim(problem, g, tmap, new.copy(), trackers[0], trackers[1:])
    assert replay.counts == table
    for p, ev in log[:fail]:
        if ev[1] not in f[p]:
            replay.apply(p, ev)
    assert canon(replay.state) == canon(at_fail)
    assert replay.tracker.frontiers() == frontiers[fail]
    for i in range(fail, len(log)):
        p, ev = log[i]
        assert (p, ev) in replay.actions()
        replay.apply(p, ev)
        assert replay.tracker.frontiers() == frontiers[i + 1]
    assert canon(replay.state) == canon(run.state)

    # (d) no rollback: every frontier T rebuilds the original counts, when no message is in
    # flight on an internal edge (the paper loses in-flight messages: C5 rejects T then)
    top = [frozenset(problem.times)] * problem.n
    for state in (at_fail, run.state):
        if any(state.queues[k] for k in problem.internal()):
            with pytest.raises(RollbackStateError, match="C5"):
                rebuild(problem, g, state, top)
        else:
            same, rows_t = rebuild_counts(problem, g, state, top, tmap)
            assert canon(same) == canon(state)
            assert rows_t == sorted((l, t, c) for (l, t), c in pointstamps(tmap, state).items())


def test_example2_rebuild():
    """The paper's Example 2 as a run: p2 hears from p1 (time 1) before p0 (time 0), sends p3 a
    message at 1, p3 consumes it and is notified of 1; p2 can only go back to {0}. p3 forgets
    its message and notification at 1 and p2 its event at 1; the messages at 1 into p2 and from
    p2 (made again by its kept event at 0) are queued again."""
    problem = parse_rollback(EXAMPLE_2)
    tmap = tracker_graph(problem)
    g = behaviour(problem, [False, False, False, True])
    run = Sim(problem, g, tmap, initial(problem, [(0, (0, 0)), (1, (1, 0))]))
    for p, ev in [(0, (0, (0, 0))), (1, (1, (1, 0))), (2, (3, (1, 0))), (2, (2, (0, 0))),
                  (3, (4, (1, 0))), (3, (None, (1, 0)))]:
        assert (p, ev) in run.actions()
        run.apply(p, ev)
    f = [down(x, 2, 1) for x in solve(state_problem(problem, run.state)).choice]
    assert f == [frozenset({(0, 0), (1, 0)})] * 2 + [frozenset({(0, 0)})] * 2
    new, rows = rebuild_counts(problem, g, run.state, f, tmap)
    assert new.histories == [[(0, (0, 0))], [(1, (1, 0))], [(2, (0, 0))], []]
    assert new.queues == {0: [], 1: [], 2: [(1, 0)], 3: [(1, 0)], 4: [(1, 0)]}
    assert new.requests == [set()] * 4
    assert rows == sorted((tmap.edge_port[k], (1, 0), 1) for k in (2, 3, 4))
    tracker = ImpliedFrontierTracker(tmap.graph, strict=True)
    tracker.update(*zip(*rows))
    assert tracker.frontier(tmap.edge_port[4]) == [(1, 0)]  # p3 will see time 1 again


def test_rejected_choices_name_the_problem():
    problem = parse_rollback(EXAMPLE_2)
    g = behaviour(problem, [False] * 4)
    state = RunState([[(0, (0, 0))], [], [], []], {0: [], 1: [], 2: [(0, 0)], 3: [], 4: []},
                     [set()] * 4)
    before = state.copy()
    top = [frozenset(problem.times)] * 4
    cases = [(top[:3], "one per processor"),
             ([frozenset({(1, 0)})] + top[1:], "downward-closed"),
             ([frozenset()] + top[1:], "C1"),
             (top, "C5")]
    for f, match in cases:
        with pytest.raises(RollbackStateError, match=match) as info:
            rebuild(problem, g, state, f)
        assert isinstance(info.value, TimelyFrontierError) and isinstance(info.value, ValueError)
    assert canon(state) == canon(before)
    back = parse_rollback("timely-rollback v1\ntimes 2 1\nnode 0\nnode 1\nedge 0 0 1\n"
                          "need 0 0 0 1 0\nneed 0 1 0 1 0\n")
    with pytest.raises(RollbackStateError, match=r"edge 0: .*\(1, 0\).*earlier.*\(0, 0\)"):
        tracker_graph(back)
