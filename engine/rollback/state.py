r"""Rebuilding the state after a rollback (Abadi & Isard, *Timely Rollback*, section 5, action
*RollbackL2*), and the pointstamp counts the progress tracker must hold afterwards.

A run on a rollback problem's graph is a :class:`RunState`: per processor ``p`` its history
``H(p)`` (the events it processed: ``(edge, time)`` for a consumed message, ``(None, time)`` for
a delivered notification), per input or internal edge the times of the messages queued on it,
and per processor its outstanding notification requests. What a processor does is the paper's
``g(p)``: a :data:`Behaviour` maps ``(p, history)`` to the :class:`Effects` of processing that
history from the initial state (cumulative messages per internal edge and time, and the
requests still outstanding).

Given a choice ``f`` that passes the full guard (an ``ok`` answer of :func:`~engine.rollback.problem.solve`
under either guard, Theorem 2), :func:`rebuild` computes *RollbackL2*:

* ``H'(p) = H(p)@f(p)``: the events at times in ``f(p)``;
* ``NotRequests'(p)`` = the requests ``g(p)(H'(p))`` leaves outstanding;
* on an internal edge ``e: p -> q``, ``Q'(e)`` = the messages ``g(p)(H'(p))`` puts on ``e`` at
  times *outside* ``phi(e)(f(p)) ∩ f(q)`` (those inside, ``q`` already has; C3 and C5 make
  this exact);
* input queues are unchanged (C1: no consumed input is forgotten, none is replayed).

:func:`tracker_graph` maps the problem onto the tracker's graph of locations
(:class:`~engine.core.graph.Graph`, ``m = 1``, every port at loop depth 1, so a timestamp is the
problem's ``(epoch, iteration)`` in the product order):

* processor ``p`` -> operator ``p``; its input ports are, in edge-ID order, the input and
  internal edges into ``p``, then one *clock port* (no channel into it) that holds ``p``'s
  notification requests, i.e. its capabilities; its output ports are, in edge-ID order, the
  internal and output edges out of ``p``;
* internal edge ``k: p -> q`` -> a channel from ``p``'s output port for ``k`` to ``q``'s input
  port for ``k``; an input edge has no channel (its queue sits at its input port), an output
  edge's port feeds nothing (its queue is outside and unaffected by a rollback);
* every input port of ``p`` (clock port included) reaches the output port of each internal edge
  ``k`` out of ``p`` through the summary ``(d_epoch, d_iter)`` = the componentwise least
  ``b - a`` over the one-step pairs ``(p, a) ~>1 (k, b)`` (the ``step`` lines, or every ``a`` in
  ``need_k(b)``); no pairs, no summary. A pair with ``a`` not ``<= b`` cannot be a summary and
  raises :class:`~engine.errors.RollbackStateError`. Output edges get the identity.
  Cycles that do not advance time are allowed (``allow_zero_cycles``), as the format allows them.

:func:`pointstamps` lists a state's pointstamps as ``(location, timestamp, count)`` rows (the
tracker's ``update`` vocabulary): each queued message at its edge's input port, each request at
its processor's clock port. ``docs/rollback.md`` ("Rebuilding the state") explains it.

Processor 0 forwards every message it reads to processor 1 at the same time; processor 1 fails
and has no checkpoint (``avail 1``: only ``{}``), so it forgets its event at 0 and both messages
are queued for it again:

>>> from engine.rollback.format import parse_rollback
>>> from engine.rollback.problem import solve
>>> problem = parse_rollback("timely-rollback v1\ntimes 2 1\nnode 0\nnode 1\nin 0 0\n"
...                          "edge 1 0 1\navail 1\n")
>>> def g(p, history):
...     return Effects({1: Counter(t for _k, t in history)} if p == 0 else {}, frozenset())
>>> state = RunState([[(0, (0, 0)), (0, (1, 0))], [(1, (0, 0))]], {0: [], 1: [(1, 0)]},
...                  [set(), set()])
>>> f = [down(x, 2, 1) for x in solve(state_problem(problem, state)).choice]
>>> [sorted(x) for x in f]
[[(0, 0), (1, 0)], []]
>>> new, rows = rebuild_counts(problem, g, state, f)
>>> new.histories, new.queues
([[(0, (0, 0)), (0, (1, 0))], []], {0: [], 1: [(0, 0), (1, 0)]})
>>> rows  # location 3: processor 1's input port for edge 1
[(3, (0, 0), 1), (3, (1, 0), 1)]
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from engine.errors import RollbackStateError
from engine.core.graph import Graph, GraphBuilder
from engine.rollback.problem import (RollbackProblem, Time, c1, c2, c3, c4, c5, down, phi)
from engine.core.summary import Summary

__all__ = ["Event", "Effects", "Behaviour", "RunState", "TrackerMap", "one_step_pairs",
           "tracker_graph", "pointstamps", "count_delta", "state_problem", "rebuild",
           "rebuild_counts"]

#: ``(edge, time)``: a message consumed from ``edge``; ``(None, time)``: a notification received.
Event = tuple


@dataclass
class Effects:
    """What ``g(p)`` yields for a history: the messages put on each internal edge so far
    (``edge -> Counter(time -> count)``) and the notification requests still outstanding."""

    messages: dict = field(default_factory=dict)
    requests: frozenset = frozenset()


#: The paper's ``g``: ``(p, history) -> Effects``, a function of the history's events.
Behaviour = Callable[[int, Sequence[Event]], Effects]


@dataclass
class RunState:
    """A run's state: ``histories[p]`` (events in order), ``queues[k]`` for every input and
    internal edge (times of the queued messages, a multiset), ``requests[p]`` (outstanding
    notification requests)."""

    histories: list
    queues: dict
    requests: list

    def copy(self) -> "RunState":
        return RunState([list(h) for h in self.histories],
                        {k: list(q) for k, q in self.queues.items()},
                        [set(r) for r in self.requests])


@dataclass(frozen=True)
class TrackerMap:
    """The tracker graph of a rollback problem and where its edges and processors live:
    ``edge_port[k]`` is the location (an input port) of input or internal edge ``k``,
    ``clock[p]`` the clock port of processor ``p``, ``inputs[p]`` the locations of ``p``'s
    edge input ports (not its clock port)."""

    graph: Graph
    edge_port: dict
    clock: list
    inputs: list


def one_step_pairs(problem: RollbackProblem, k: int) -> set:
    """The pairs ``(a, b)`` with ``(src(k), a) ~>1 (k, b)``: the ``step`` lines of internal edge
    ``k``, or by default every ``a`` in ``need_k(b)``; the identity for an edge out of a buffer."""
    if k in problem.steps:
        return set(problem.steps[k])
    ne, ni = problem.ne, problem.ni
    return {(a, b) for b in problem.times for a in down(problem.need(k, b), ne, ni)}


def tracker_graph(problem: RollbackProblem) -> TrackerMap:
    """The tracker's graph of locations for ``problem`` (module docstring). Raises
    :class:`RollbackStateError` when a one-step pair goes back in time."""
    b = GraphBuilder(m=1)
    ins = [problem.edges_into(p) for p in range(problem.n)]
    outs = [problem.edges_out_of(p) for p in range(problem.n)]
    for p in range(problem.n):
        b.add_operator(len(ins[p]) + 1, len(outs[p]), depth=1, name=f"p{p}")
    for p in range(problem.n):
        for j, k in enumerate(outs[p]):
            if problem.edges[k].kind == "out":
                s = Summary.identity(1)
            else:
                pairs = one_step_pairs(problem, k)
                back = sorted((a, t) for a, t in pairs if not (a[0] <= t[0] and a[1] <= t[1]))
                if back:
                    a, t = back[0]
                    raise RollbackStateError(
                        f"edge {k}: processor {p} at time {a} may put a message at the earlier "
                        f"or incomparable time {t}; a tracker summary cannot express it")
                if not pairs:
                    continue
                s = Summary.product(min(t[0] - a[0] for a, t in pairs),
                                    min(t[1] - a[1] for a, t in pairs))
            for i in range(len(ins[p]) + 1):
                b.add_summary(p, i, j, s)
    for k in problem.internal():
        d = problem.edges[k]
        b.connect(d.src, outs[d.src].index(k), d.dst, ins[d.dst].index(k))
    g = b.build(allow_zero_cycles=True)
    edge_port = {k: g.target(p, i) for p in range(problem.n) for i, k in enumerate(ins[p])}
    return TrackerMap(g, edge_port, [g.target(p, len(ins[p])) for p in range(problem.n)],
                      [[g.target(p, i) for i in range(len(ins[p]))] for p in range(problem.n)])


def pointstamps(tmap: TrackerMap, state: RunState) -> dict:
    """The state's pointstamp counts, ``{(location, timestamp): count}``: queued messages at
    their edge's input port, notification requests at their processor's clock port."""
    out: Counter = Counter()
    for k, q in state.queues.items():
        for t in q:
            out[(tmap.edge_port[k], tuple(t))] += 1
    for p, reqs in enumerate(state.requests):
        for t in reqs:
            out[(tmap.clock[p], tuple(t))] += 1
    return dict(out)


def count_delta(old: dict, new: dict) -> tuple[list, list, list]:
    """The ``(loc, ts, diff)`` columns that take the counts ``old`` to ``new`` (for a
    tracker's ``update``), sorted."""
    rows = sorted((key, new.get(key, 0) - old.get(key, 0)) for key in set(old) | set(new))
    rows = [(key, d) for key, d in rows if d]
    return [k[0] for k, _ in rows], [k[1] for k, _ in rows], [d for _, d in rows]


def state_problem(problem: RollbackProblem, state: RunState) -> RollbackProblem:
    """The rollback problem of ``state`` on ``problem``'s graph and availability: consumed
    times per edge, notified times per processor, in-flight times per internal edge."""
    out = RollbackProblem(problem.ne, problem.ni, problem.buffer, problem.edges,
                          shift=problem.shift, need_over=problem.need_over,
                          steps=problem.steps, avail=problem.avail)
    out.notified = [set() for _ in range(problem.n)]
    for p, h in enumerate(state.histories):
        for k, t in h:
            if k is None:
                out.notified[p].add(t)
            else:
                out.consumed.setdefault(k, set()).add(t)
    for k in problem.internal():
        if state.queues.get(k):
            out.inflight[k] = set(state.queues[k])
    return out


def _check_choice(problem: RollbackProblem, state: RunState, f) -> list:
    if len(f) != problem.n:
        raise RollbackStateError(f"the choice has {len(f)} frontiers, expected one per "
                                 f"processor ({problem.n})")
    fs = []
    for p, x in enumerate(f):
        x = frozenset(tuple(t) for t in x)
        if not all(t in set(problem.times) for t in x) or down(x, problem.ne, problem.ni) != x:
            raise RollbackStateError(f"f({p}) = {sorted(x)} is not a downward-closed set of "
                                     f"times of T = {problem.ne} x {problem.ni}")
        fs.append(x)
    sp = state_problem(problem, state)
    for name, cond, what in (("C1", c1, "consumed input would be forgotten"),
                             ("C2", c2, "relayed output would be retracted"),
                             ("C3", c3, "a kept message would no longer be determined"),
                             ("C5", c5, "a message in flight (lost) is at a kept time"),
                             ("C4", c4, "a kept notification would no longer be valid")):
        if not cond(sp, fs):
            raise RollbackStateError(f"the choice fails {name} of the full guard on this "
                                     f"state: {what}")
    return fs


def rebuild(problem: RollbackProblem, g: Behaviour, state: RunState, f) -> RunState:
    """*RollbackL2* for every processor: the state after rolling ``state`` back to ``f`` (a
    frontier, as a set of times, per processor). ``state`` is not changed. Raises
    :class:`RollbackStateError` (before computing anything) when ``f`` is not a list of
    frontiers or fails the full guard on ``state``."""
    fs = _check_choice(problem, state, f)
    hist = [[(k, t) for k, t in h if t in fs[p]] for p, h in enumerate(state.histories)]
    effects = [g(p, hist[p]) for p in range(problem.n)]
    queues = {k: list(q) for k, q in state.queues.items() if problem.edges[k].kind == "in"}
    for k in problem.internal():
        d = problem.edges[k]
        keep = phi(problem, k, fs[d.src]) & fs[d.dst]
        made = effects[d.src].messages.get(k, {})
        queues[k] = [t for t in sorted(made) if t not in keep for _ in range(made[t])]
    return RunState(hist, queues, [set(e.requests) for e in effects])


def rebuild_counts(problem: RollbackProblem, g: Behaviour, state: RunState, f,
                   tmap: TrackerMap | None = None) -> tuple[RunState, list]:
    """The rolled-back state and the pointstamp count table the tracker must hold after the
    rollback, as sorted ``(location, timestamp, count)`` rows."""
    new = rebuild(problem, g, state, f)
    tmap = tracker_graph(problem) if tmap is None else tmap
    return new, sorted((loc, ts, c) for (loc, ts), c in pointstamps(tmap, new).items())
