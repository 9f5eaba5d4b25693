"""Consistent rollback (Abadi & Isard, *Timely Rollback*): the largest consistent choice of
frontiers a failed timely computation can roll back to, and the exact solver that finds it.

The reference solver reads like the paper. Times are pairs ``(epoch, iteration)`` in the
product order. A *frontier* is a downward-closed set of times: the times whose events a
processor keeps (section 4.1). ``phi(e)`` maps the sender's kept frontier to the times at which
its messages on ``e`` are still determined (section 4.2), given through ``need_e``:
``phi(e)(f) = {t : need_e(t) ⊆ f}``. Could-result-in ``~>`` (Definitions 1 and 2) is
reachability over ``(location, time)`` states. The guards of *RollbackL* are the conditions
:func:`c1` .. :func:`c5`; the simple guard of section 7.4 replaces C4 by :func:`s`, with the
greatest auxiliary ``f_c`` (:func:`greatest_fc`). Section 7.3's *largest* consistent choice is
a greatest fixed point that shrinks frontiers from the largest available ones
(:func:`largest_consistent`); when some processor's available frontiers are not closed under
union, :func:`solve` searches the combinations of those lists exactly (branch and bound, within
a budget of :data:`MAX_SEARCH` fixed points), and reports ``nolargest`` (at most
:data:`MAX_CHOICES` of the maximal choices listed) or ``conflict`` where there is no largest
choice. ``docs/rollback.md`` explains it with the paper's examples.

Problems are read, and answers printed, in the ``timely-rollback v1`` format by
:mod:`engine.rollback.format`; :mod:`engine.rollback.batched` solves the same problems over
bitmask frontiers, sharing :func:`decide`.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Iterable, Iterator

from engine.errors import RollbackFormatError, RollbackLimitError

__all__ = [
    "Guard", "Time", "Antichain", "Frontier", "Avail", "EdgeDecl", "RollbackProblem", "Answer",
    "down", "maximal", "up", "phi", "could_result_in", "notification_demands",
    "c1", "c2", "c3", "c4", "c5", "s", "greatest_fc", "consistent", "largest_consistent",
    "solve", "decide", "MAX_CHOICES", "MAX_SEARCH",
]

#: The most maximal choices an answer lists by default (``--max-choices``): with more, the
#: search stops at the cap and the ``nolargest`` answer is cut (:attr:`Answer.cut`).
MAX_CHOICES = 100
#: The most greatest fixed points the search over availability lists that are not closed
#: under union computes by default (``--max-search``) before it gives up with
#: :class:`~engine.errors.RollbackLimitError`: the number of combinations of such lists, and
#: of maximal choices, can be exponential in the number of processors.
MAX_SEARCH = 10_000

Time = tuple[int, int]
#: A frontier in canonical form: its maximal elements, sorted.
Antichain = tuple[Time, ...]
#: A frontier as the full set of its times (the reference solver's working form).
Frontier = frozenset


class Guard(str, Enum):
    """Which guard a rollback must pass: *RollbackL*'s (C1-C5), or the simple one of 7.4."""

    FULL = "full"
    SIMPLE = "simple"


# --- frontiers -------------------------------------------------------------------------------

def leq(a: Time, b: Time) -> bool:
    """The product order on times."""
    return a[0] <= b[0] and a[1] <= b[1]


def maximal(times: Iterable[Time]) -> Antichain:
    """The maximal elements of a set of times, sorted: the canonical form of its ``down``.

    >>> maximal([(0, 1), (1, 0), (0, 0)])
    ((0, 1), (1, 0))
    """
    ts = set(times)
    return tuple(sorted(t for t in ts if not any(u != t and leq(t, u) for u in ts)))


def down(gens: Iterable[Time], ne: int, ni: int) -> Frontier:
    """``down(gens)`` within ``T = {0..ne-1} x {0..ni-1}``: every time below some generator."""
    out = set()
    for g in gens:
        out.update((e, i) for e in range(min(g[0] + 1, ne)) for i in range(min(g[1] + 1, ni)))
    return frozenset(out)


def up(times: Iterable[Time], ne: int, ni: int) -> frozenset:
    """Every time of ``T`` above some element of ``times`` (an upward-closed set)."""
    out = set()
    for b in maximal_min(times):
        out.update((e, i) for e in range(b[0], ne) for i in range(b[1], ni))
    return frozenset(out)


def maximal_min(times: Iterable[Time]) -> Antichain:
    """The minimal elements of a set of times, sorted."""
    ts = set(times)
    return tuple(sorted(t for t in ts if not any(u != t and leq(u, t) for u in ts)))


def in_down(t: Time, gens: Antichain) -> bool:
    """Whether ``t`` lies in ``down(gens)``."""
    return any(leq(t, g) for g in gens)


def within(a: Antichain, b: Antichain) -> bool:
    """Whether ``down(a)`` is a subset of ``down(b)``."""
    return all(in_down(t, b) for t in a)


def union(a: Antichain, b: Antichain) -> Antichain:
    """The canonical form of ``down(a) ∪ down(b)``."""
    return maximal(a + b)


# --- the problem -----------------------------------------------------------------------------

@dataclass(frozen=True)
class EdgeDecl:
    """An edge: ``kind`` is ``"in"`` (outside -> dst), ``"edge"`` (internal) or ``"out"``."""

    kind: str
    src: int | None
    dst: int | None
    line: int | None = None


@dataclass
class Avail:
    """The frontiers a processor can roll back to (``{}`` is always among them).

    ``every``: all frontiers of ``T``. Otherwise the chain ``down{(k, NI-1)}`` for ``k <= epochs``
    (``-1``: none) together with the ``explicit`` frontiers (canonical forms).
    """

    every: bool = True
    epochs: int = -1
    explicit: set = field(default_factory=set)

    def frontiers(self, ne: int, ni: int) -> list[Antichain]:
        """The finite list of available frontiers (not for ``every``), ``()`` first."""
        assert not self.every
        out = {()} | set(self.explicit)
        out.update(((k, ni - 1),) for k in range(min(self.epochs, ne - 1) + 1))
        return sorted(out)

    def closed_under_union(self, ne: int, ni: int) -> bool:
        """Whether the union of any two available frontiers is available (section 7.3)."""
        if self.every or not self.explicit:  # every frontier, or a chain
            return True
        fs = set(self.frontiers(ne, ni))
        return all(union(a, b) in fs for a, b in itertools.combinations(fs, 2))


@dataclass
class RollbackProblem:
    """A rollback problem: the graph, the state at the rollback, and availability.

    Processors are ``0..n-1``; ``edges[k]`` is edge ``k``. For internal edges whose sender is
    not a buffer, ``shift[k]`` and ``need_over[k]`` give ``need_k`` and ``steps[k]`` (when
    present) lists ``~>1`` exactly. ``consumed``, ``inflight`` are keyed by edge,
    ``notified`` by processor. ``node_line`` holds the ``node`` line numbers (or None).
    """

    ne: int
    ni: int
    buffer: list[bool]
    edges: list[EdgeDecl]
    shift: dict = field(default_factory=dict)
    need_over: dict = field(default_factory=dict)
    need_line: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    step_line: dict = field(default_factory=dict)
    avail: list = field(default_factory=list)
    consumed: dict = field(default_factory=dict)
    notified: list = field(default_factory=list)
    inflight: dict = field(default_factory=dict)
    node_line: list = field(default_factory=list)

    def __post_init__(self):
        n = len(self.buffer)
        if not self.avail:
            self.avail = [Avail() for _ in range(n)]
        if not self.notified:
            self.notified = [set() for _ in range(n)]
        if not self.node_line:
            self.node_line = [None] * n

    # -- shape --
    @property
    def n(self) -> int:
        return len(self.buffer)

    @property
    def times(self) -> list[Time]:
        """``T``, sorted by ``(epoch, iteration)``."""
        return [(e, i) for e in range(self.ne) for i in range(self.ni)]

    @property
    def top(self) -> Antichain:
        return ((self.ne - 1, self.ni - 1),)

    def internal(self) -> list[int]:
        """The internal edges, by ID."""
        return [k for k, d in enumerate(self.edges) if d.kind == "edge"]

    def _adjacency(self) -> tuple[dict, dict]:
        """Edge IDs by destination and by source (rebuilt when edges are added)."""
        key = len(self.edges)
        if getattr(self, "_adj_key", None) != key:
            into, out = {}, {}
            for k, d in enumerate(self.edges):
                into.setdefault(d.dst, []).append(k)
                out.setdefault(d.src, []).append(k)
            self._adj, self._adj_key = (into, out), key
        return self._adj

    def edges_into(self, p: int, kinds=("in", "edge")) -> list[int]:
        return [k for k in self._adjacency()[0].get(p, ()) if self.edges[k].kind in kinds]

    def edges_out_of(self, p: int, kinds=("edge", "out")) -> list[int]:
        return [k for k in self._adjacency()[1].get(p, ()) if self.edges[k].kind in kinds]

    def consumed_by(self, p: int) -> set:
        """``consumed(p)``: the union of ``consumed(e)`` over the edges into ``p``."""
        out = set()
        for k in self.edges_into(p):
            out |= self.consumed.get(k, set())
        return out

    # -- phi --
    def need(self, k: int, t: Time) -> Antichain:
        """``need_k(t)`` as generators: the sender's history that determines ``t`` on edge ``k``."""
        over = self.need_over.get(k)
        if over is not None and t in over:
            return over[t]
        de, di = self.shift.get(k, (0, 0))
        if t[0] < de or t[1] < di:
            return ()
        return ((t[0] - de, t[1] - di),)

    def one_step(self, k: int, a: Time) -> list[Time]:
        """The minimal ``b`` with ``(src(k), a') ~>1 (k, b)`` for some ``a' >= a`` (Definition 1):
        from the listed ``step`` pairs, or by default every ``b`` with ``a`` in ``need_k(b)``."""
        if k in self.steps:
            return list(maximal_min(b for (a2, b) in self.steps[k] if leq(a, a2)))
        return list(maximal_min(b for b in self.times if in_down(a, self.need(k, b))))

    # -- checks --
    def check(self) -> None:
        """The checks made after a whole file is read (format section 4): buffer nodes,
        monotone ``need``, ``step`` pairs within ``need``, Condition 4. Raises
        :class:`RollbackFormatError` naming the line."""
        for p in range(self.n):
            if self.buffer[p]:
                ins, outs = len(self.edges_into(p)), len(self.edges_out_of(p))
                if ins != 1 or outs != 1:
                    raise RollbackFormatError(
                        f"buffer node {p} needs exactly one incoming and one outgoing edge, "
                        f"got {ins} incoming and {outs} outgoing", self.node_line[p])
        for k in sorted(self.need_over):
            self._check_monotone(k)
        for k in sorted(self.steps):
            for (a, b) in sorted(self.steps[k]):
                if not in_down(a, self.need(k, b)):
                    raise RollbackFormatError(
                        f"step on edge {k}: {_fmt(a)} is not in need({_fmt(b)}) = "
                        f"{_fmt_set(self.need(k, b))} (Proposition 11)",
                        self.step_line.get((k, a, b)))
        bad = condition4_violation(self)
        if bad is not None:
            k, t, t2 = bad
            raise RollbackFormatError(
                f"Condition 4 fails: ({self.edges[k].dst}, {_fmt(t)}) ~> (edge {k}, {_fmt(t2)}) "
                f"but {_fmt(t)} is not <= {_fmt(t2)}", self.edges[k].line)

    def _check_monotone(self, k: int) -> None:
        lines = self.need_line.get(k, {})
        for t in self.times:
            for t_small in ((t[0] - 1, t[1]), (t[0], t[1] - 1)):
                if t_small[0] < 0 or t_small[1] < 0:
                    continue
                if within(self.need(k, t_small), self.need(k, t)):
                    continue
                line = lines.get(t, lines.get(t_small))
                raise RollbackFormatError(
                    f"need on edge {k} is not monotone: need({_fmt(t_small)}) = "
                    f"{_fmt_set(self.need(k, t_small))} is not within need({_fmt(t)}) = "
                    f"{_fmt_set(self.need(k, t))}", line)


def _fmt(t: Time) -> str:
    return f"({t[0]}, {t[1]})"


def _fmt_set(a: Antichain) -> str:
    return "down{" + ", ".join(_fmt(t) for t in a) + "}" if a else "{}"


# --- could-result-in -------------------------------------------------------------------------
# Locations are ("p", processor) and ("e", internal edge). When Condition 4 holds, ~> is plain
# reachability over (location, time) states (format section 1), computed here by a worklist.

def _successors(problem: RollbackProblem, state, cache: dict) -> Iterator:
    (kind, x), t = state
    for t2 in ((t[0] + 1, t[1]), (t[0], t[1] + 1)):  # (x, t) ~> (x, t') for t <= t'
        if t2[0] < problem.ne and t2[1] < problem.ni:
            yield (kind, x), t2
    if kind == "e":  # an edge delivers to its destination at the same time
        yield ("p", problem.edges[x].dst), t
    else:  # a processor at t may send on an out edge d at the times one_step gives
        for d in problem.edges_out_of(x, kinds=("edge",)):
            key = (d, t)
            if key not in cache:
                cache[key] = problem.one_step(d, t)
            for b in cache[key]:
                yield ("e", d), b


def could_result_in(problem: RollbackProblem, loc, t: Time, cache: dict | None = None) -> set:
    """Every state ``(loc', t')`` with ``(loc, t) ~> (loc', t')`` (Definition 2), as a set.

    ``loc`` is ``("p", processor)`` or ``("e", internal edge)``.
    """
    cache = {} if cache is None else cache
    seen = {(loc, t)}
    todo = deque(seen)
    while todo:
        for nxt in _successors(problem, todo.popleft(), cache):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def condition4_violation(problem: RollbackProblem):
    """The lowest-numbered internal edge ``e`` into a processor ``p`` with ``(p, t) ~> (e, t')``
    and ``t`` not ``<= t'``, as ``(e, t, t')``; None when Condition 4 holds.

    A step along an edge with the default ``~>1`` (or listed ``step`` pairs, which lie within
    it) and a ``shift`` phi never lowers a time, so a violation needs a cycle through ``p``
    that uses an edge with ``need`` overrides: only processors on such a cycle are searched.
    """
    cache: dict = {}
    reach = {p: {t: could_result_in(problem, ("p", p), t, cache) for t in problem.times}
             for p in _on_cycles_with_overrides(problem)}
    for k in problem.internal():
        p = problem.edges[k].dst
        for t, states in reach.get(p, {}).items():
            for (loc, t2) in states:
                if loc == ("e", k) and not leq(t, t2):
                    return k, t, t2
    return None


def _on_cycles_with_overrides(problem: RollbackProblem) -> set:
    """Processors that lie on a cycle of internal edges through an edge with ``need`` lines."""
    def reach(start, forward):
        seen, todo = {start}, [start]
        while todo:
            x = todo.pop()
            ks = problem.edges_out_of(x, ("edge",)) if forward else problem.edges_into(x, ("edge",))
            for k in ks:
                y = problem.edges[k].dst if forward else problem.edges[k].src
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        return seen

    out: set = set()
    for k, over in problem.need_over.items():
        if over:  # p is on a cycle through k: src(k) reaches p and p reaches src(k) via k
            d = problem.edges[k]
            from_k, to_src = reach(d.dst, True), reach(d.src, False)
            if d.src in from_k:
                out |= from_k & to_src
    return out


def notification_demands(problem: RollbackProblem) -> dict:
    """``R(q, t2, p)`` for every notified ``(q, t2)`` (format section 2, C4).

    Returns ``{(q, t2): {p: frontier}}``: the union of ``need_e1(t1)`` over the internal edges
    ``e1`` out of ``p`` and times ``t1`` with ``(e1, t1) ~> (e2, t2)`` for an internal ``e2``
    into ``q``. Computed from the forward closure of every ``(e1, t1)``.
    """
    ne, ni = problem.ne, problem.ni
    out = {(q, t2): {} for q in range(problem.n) for t2 in problem.notified[q]}
    if not out:
        return out
    cache: dict = {}
    for e1 in problem.internal():
        p = problem.edges[e1].src
        for t1 in problem.times:
            need = down(problem.need(e1, t1), ne, ni)
            for (loc, t2) in could_result_in(problem, ("e", e1), t1, cache):
                if loc[0] != "e":
                    continue
                q = problem.edges[loc[1]].dst
                if (q, t2) in out:
                    demand = out[(q, t2)]
                    demand[p] = demand.get(p, frozenset()) | need
    return out


# --- the conditions --------------------------------------------------------------------------
# f maps each processor to a frontier (a frozenset of times).

def phi(problem: RollbackProblem, k: int, f_p: Frontier) -> Frontier:
    """``phi(k)(f_p) = {t : need_k(t) ⊆ f_p}`` (section 4.2)."""
    return frozenset(t for t in problem.times if all(g in f_p for g in problem.need(k, t)))


def c1(problem, f) -> bool:
    """C1, inputs are kept: ``consumed(i) ⊆ f(p)`` for every input edge ``i`` into ``p``."""
    return all(problem.consumed.get(k, set()) <= f[d.dst]
               for k, d in enumerate(problem.edges) if d.kind == "in")


def c2(problem, f) -> bool:
    """C2, outputs are kept: ``consumed(p) ⊆ f(p)`` for every buffer ``p`` with an output edge."""
    return all(problem.consumed_by(d.src) <= f[d.src]
               for d in problem.edges if d.kind == "out")


def c3(problem, f) -> bool:
    """C3, kept messages stay determined: for ``e: p -> q`` and ``t`` in ``consumed(e) ∩ f(q)``,
    ``t`` is in ``phi(e)(f(p))``."""
    return all(all(g in f[problem.edges[k].src] for g in problem.need(k, t))
               for k in problem.internal()
               for t in problem.consumed.get(k, set()) if t in f[problem.edges[k].dst])


def c4(problem, f, demands=None) -> bool:
    """C4, kept notifications stay valid: ``R(q, t2, p) ⊆ f(p)`` for every ``t2`` in
    ``notified(q) ∩ f(q)`` and every ``p``."""
    demands = notification_demands(problem) if demands is None else demands
    return all(r <= f[p] for (q, t2), need in demands.items() if t2 in f[q]
               for p, r in need.items())


def c5(problem, f) -> bool:
    """C5, lost messages are not kept: ``inflight(e)`` and ``f(dst(e))`` are disjoint."""
    return all(not (problem.inflight.get(k, set()) & f[problem.edges[k].dst])
               for k in problem.internal())


def greatest_fc(problem, f) -> list:
    """``fc*``: the greatest ``f_c`` with S1 (``f_c ⊆ f``) and S3 (``f_c(q) ⊆ phi(e)(f_c(p))``),
    the greatest fixed point of ``f_c(q) := f_c(q) ∩ phi(e)(f_c(p))`` from ``f_c = f``."""
    fc = list(f)
    changed = True
    while changed:
        changed = False
        for k in problem.internal():
            d = problem.edges[k]
            new = fc[d.dst] & phi(problem, k, fc[d.src])
            if new != fc[d.dst]:
                fc[d.dst], changed = new, True
    return fc


def s(problem, f, fc=None) -> bool:
    """S (section 7.4): some ``f_c`` satisfies S1, S2, S3; checked on ``fc*``, by S2:
    ``notified(p) ∩ f(p) ⊆ fc*(p)``."""
    fc = greatest_fc(problem, f) if fc is None else fc
    return all(problem.notified[p] & f[p] <= fc[p] for p in range(problem.n))


def consistent(problem, f, guard: Guard = Guard.FULL, demands=None, relaxed=False) -> bool:
    """Whether the choice ``f`` passes the guard (without C1 and C2 when ``relaxed``) and
    every ``f(p)`` is available."""
    guard = Guard(guard)
    if not all(available(problem, p, f[p]) for p in range(problem.n)):
        return False
    if not relaxed and not (c1(problem, f) and c2(problem, f)):
        return False
    if not (c3(problem, f) and c5(problem, f)):
        return False
    return c4(problem, f, demands) if guard is Guard.FULL else s(problem, f)


def available(problem, p: int, f_p: Frontier) -> bool:
    a = problem.avail[p]
    return a.every or maximal(f_p) in set(a.frontiers(problem.ne, problem.ni))


# --- the largest consistent choice (section 7.3) ---------------------------------------------

def largest_consistent(problem: RollbackProblem, guard: Guard = Guard.FULL,
                       fixed: dict | None = None, demands=None):
    """The largest choice that passes the guard without C1 and C2, when every availability
    list is closed under union: the greatest fixed point, from the largest available frontiers,
    of "``f(q)`` := the largest available frontier within ``f(q)`` that avoids the times C3, C4
    (or S2 with ``fc*``) and C5 forbid at ``q``".

    ``fixed`` maps processors to one frontier (canonical form) that replaces their list: their
    availability is then ``{{}, fixed[p]}``; or to None: every frontier is then available to
    them (the relaxation :func:`decide` bounds a part of its search with). Returns ``(f, fc)``,
    lists of canonical forms (``fc`` is None for the full guard).
    """
    guard = Guard(guard)
    ne, ni = problem.ne, problem.ni
    demands = (notification_demands(problem) if guard is Guard.FULL and demands is None
               else demands)
    fixed = fixed or {}
    T = frozenset(problem.times)
    lists = {p: [down(a, ne, ni) for a in ([(), fixed[p]] if p in fixed
                                          else problem.avail[p].frontiers(ne, ni))]
             for p in range(problem.n)
             if fixed.get(p, ()) is not None and (p in fixed or not problem.avail[p].every)}

    def largest_available(p, x):
        if p not in lists:
            return x
        return frozenset().union(*[a for a in lists[p] if a <= x])

    f = [T] * problem.n
    while True:
        fc = greatest_fc(problem, f) if guard is Guard.SIMPLE else None
        new = []
        for q in range(problem.n):
            bad = set(_c5_forbids(problem, q)) | set(_c3_forbids(problem, q, f))
            if guard is Guard.FULL:
                bad |= _c4_forbids(problem, q, f, demands)
            else:
                bad |= problem.notified[q] - fc[q]
            new.append(largest_available(q, f[q] - up(bad, ne, ni)))
        if new == f:
            break
        f = new
    fc = greatest_fc(problem, f) if guard is Guard.SIMPLE else None
    return [maximal(x) for x in f], (None if fc is None else [maximal(x) for x in fc])


def _c3_forbids(problem, q, f):
    for k in problem.edges_into(q, kinds=("edge",)):
        p = problem.edges[k].src
        for t in problem.consumed.get(k, set()):
            if not all(g in f[p] for g in problem.need(k, t)):
                yield t


def _c4_forbids(problem, q, f, demands) -> set:
    return {t2 for t2 in problem.notified[q]
            if not all(r <= f[p] for p, r in demands[(q, t2)].items())}


def _c5_forbids(problem, q):
    for k in problem.edges_into(q, kinds=("edge",)):
        yield from problem.inflight.get(k, set())


# --- the answer ------------------------------------------------------------------------------

@dataclass
class Answer:
    """The answer to a rollback problem (format section 3), frontiers in canonical form.

    ``result`` is ``"ok"`` (``choice``, and ``fc`` for the simple guard), ``"nolargest"``
    (``choices``, sorted; ``cut`` when there are more maximal choices than the cap
    ``max_choices`` and the search stopped: the choices listed are maximal, the others are
    not listed) or ``"none"`` (``lost`` rows ``(node, "C1"|"C2", edge, times)``, ``bound`` =
    ``M``; ``conflict`` when there is no lost row).
    """

    guard: Guard
    result: str
    choice: list | None = None
    fc: list | None = None
    choices: list | None = None
    lost: list | None = None
    bound: list | None = None
    cut: bool = False

    @property
    def conflict(self) -> bool:
        return self.result == "none" and not self.lost


def solve(problem: RollbackProblem, guard: Guard | str = Guard.FULL, *,
          max_choices: int = MAX_CHOICES, max_search: int = MAX_SEARCH,
          progress: Callable[[int, int], None] | None = None) -> Answer:
    """The largest consistent rollback of ``problem`` under ``guard`` (the reference solver).

    ``max_choices`` and ``max_search`` bound the answer and the search where some availability
    list is not closed under union, ``progress`` hears of its fixed points (:func:`decide`)."""
    guard = Guard(guard)
    demands = notification_demands(problem) if guard is Guard.FULL else None
    return decide(problem, guard,
                  lambda fixed: largest_consistent(problem, guard, fixed, demands),
                  max_choices=max_choices, max_search=max_search, progress=progress)


def decide(problem: RollbackProblem, guard: Guard, gfp: Callable, *,
           max_choices: int = MAX_CHOICES, max_search: int = MAX_SEARCH,
           progress: Callable[[int, int], None] | None = None) -> Answer:
    """Assemble the answer from a greatest-fixed-point solver ``gfp(fixed) -> (f, fc)``
    (shared by the reference and the batched solver).

    With every list closed under union, one fixed point gives ``M``. Otherwise the processors
    whose lists are not closed are fixed to each combination of their frontiers in turn: each
    set of consistent choices with those processors fixed is closed under union, so its largest
    element is a fixed point; the maximal ones among those passing C1 and C2 are the maximal
    consistent choices, and the union of all the fixed points is ``M``.

    The combinations are searched by branch and bound, one open processor fixed per level: a
    level's fixed point with the processors not yet fixed given every frontier
    (``fixed[p] = None``) bounds every combination below it (``gfp`` is monotone in what is
    available). A branch is cut when its bound keeps less than C1 and C2 require, or lies
    within a maximal choice found already -- and, while none is found, within the union of
    the fixed points so far (nothing below could add to ``M``). Branches are taken largest
    bound first (by the number of kept times), so a choice found is never below one found
    later: each is maximal when it is found, and the search can stop at ``max_choices``.
    The answers are those of the plain enumeration.

    Parameters
    ----------
    max_choices : int
        A ``nolargest`` answer lists at most this many maximal choices: the search stops
        when it finds one more, and the answer is *cut* (:attr:`Answer.cut`): the choices
        listed are maximal, but there are others.
    max_search : int
        The most fixed points the search may compute.
    progress : callable, optional
        ``progress(done, max_search)``, called after each fixed point the search computes
        (``done`` of them so far; not called when every list is closed under union, which
        takes one): how ``tfront rollback`` says what a long search is doing.

    Raises
    ------
    RollbackLimitError
        The search needs more than ``max_search`` fixed points; it stops there, with no answer.
    ValueError
        ``max_choices`` or ``max_search`` below 1.

    Notes
    -----
    The combinations, and the maximal choices, can be exponential in the number of processors
    with lists that are not closed under union (a chain of five processors with four
    incomparable checkpoints each has 3,125 combinations and 192 maximal choices);
    ``max_search`` bounds the work, ``max_choices`` the output and the comparisons between
    choices (each new one is compared with at most ``max_choices`` others).
    """
    for name, v in (("max_choices", max_choices), ("max_search", max_search)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    ne, ni = problem.ne, problem.ni
    open_ = [p for p in range(problem.n) if not problem.avail[p].closed_under_union(ne, ni)]
    if not open_:
        f, fc = gfp(None)
        if _keeps_inputs_outputs(problem, f):
            return Answer(guard, "ok", choice=list(f), fc=fc)
        return Answer(guard, "none", lost=_lost(problem, f), bound=list(f))
    search = _Search(problem, gfp, open_, max_choices, max_search, progress)
    best = sorted({tuple(f): fc for f, fc in search.found}.items())
    if len(best) == 1 and not search.cut:
        f, fc = best[0]
        return Answer(guard, "ok", choice=list(f), fc=fc)
    if best:
        return Answer(guard, "nolargest", choices=[list(f) for f, _ in best], cut=search.cut)
    return Answer(guard, "none", lost=_lost(problem, search.bound), bound=search.bound)


class _Search:
    """:func:`decide`'s branch and bound over the combinations of the open lists, largest
    bound first: ``found`` the maximal choices passing C1 and C2 (with their ``fc``), at most
    ``max_choices`` (``cut`` when there are more), ``bound`` the union of every combination's
    fixed point (``M``; exact only when nothing is found)."""

    def __init__(self, problem, gfp, open_, max_choices, max_search, progress=None):
        ne, ni = problem.ne, problem.ni
        self.problem, self.gfp, self.open, self.progress = problem, gfp, open_, progress
        self.lists = [problem.avail[p].frontiers(ne, ni) for p in open_]
        self.max_search, self.calls = max_search, 0
        self.found: list = []
        self.cut = False
        self.bound = [()] * problem.n
        # (-kept times, -level, tie, fixed, f, fc): the largest bound first, deeper first
        heap = [self._node({})]
        while heap:
            _, _, _, fixed, f, fc = heapq.heappop(heap)
            level = len(fixed)
            if level == len(open_):
                if self._leaf(f, fc) and len(self.found) > max_choices:
                    self.found.pop()
                    self.cut = True
                    return
                continue
            if self._pruned(f):
                continue
            p = open_[level]
            for a in self.lists[level]:
                child = self._node({**fixed, p: a})
                if level + 1 == len(open_) or not self._pruned(child[4]):
                    heapq.heappush(heap, child)

    def _node(self, fixed):
        """A search node: the bound of the combinations below ``fixed`` and its heap key,
        the most times any of them keeps. The fixed point with the open processors not in
        ``fixed`` given every frontier bounds them; so does, for such a processor, the union
        of its frontiers within that bound, and its largest frontier within the bound bounds
        what it keeps."""
        level = len(fixed)
        f, fc = self._gfp({**fixed, **{p: None for p in self.open[level:]}})
        f = list(f)
        kept = sum(_size(x) for x in f)
        for j in range(level, len(self.open)):
            p = self.open[j]
            fit = [a for a in self.lists[j] if within(a, f[p])]
            kept += max(_size(a) for a in fit) - _size(f[p])   # () always fits
            f[p] = maximal(t for a in fit for t in a)
        return (-kept, -level, self.calls, fixed, f, fc)

    def _pruned(self, f) -> bool:
        """Nothing below a bound ``f`` can be a new maximal choice, nor (while none is
        found) add to ``M``."""
        if _keeps_inputs_outputs(self.problem, f) and not self._dominated(f):
            return False
        return bool(self.found) or all(within(x, y) for x, y in zip(f, self.bound))

    def _gfp(self, fixed):
        if self.calls >= self.max_search:
            sizes = [len(x) for x in self.lists]
            combos = 1
            for k in sizes:
                combos *= k
            shown = ", ".join(map(str, self.open[:8])) + (", ..." if len(self.open) > 8 else "")
            raise RollbackLimitError(
                f"the search over the availability lists that are not closed under union "
                f"({len(self.open)} processors: {shown}; {combos:,} combinations of their "
                f"frontiers) needs more than max_search = {self.max_search:,} fixed points; "
                f"raise the limit (--max-search), or make those lists closed under union "
                f"(add the unions of their frontiers)")
        self.calls += 1
        out = self.gfp(fixed)
        if self.progress is not None:
            self.progress(self.calls, self.max_search)
        return out

    def _dominated(self, f) -> bool:
        return any(all(within(x, y) for x, y in zip(f, g)) for g, _ in self.found)

    def _leaf(self, f, fc) -> bool:
        """Record a combination's fixed point; whether it is a new maximal choice. No choice
        found later lies above it (largest bound first), so it is maximal unless one found
        already is above it."""
        self.bound = [union(b, x) for b, x in zip(self.bound, f)]
        if not _keeps_inputs_outputs(self.problem, f) or self._dominated(f):
            return False
        self.found.append((f, fc))
        return True


def _size(a: Antichain) -> int:
    """``|down(a)|`` of an antichain of times: the area of its staircase."""
    total, last_e = 0, -1
    for e, i in sorted(a):  # epochs ascending, so iterations descending
        total += (e - last_e) * (i + 1)
        last_e = e
    return total


def _keeps_inputs_outputs(problem, f: list) -> bool:
    """C1 and C2 on a choice in canonical form."""
    return all(in_down(t, f[p]) for p, _k, ts in _required(problem) for t in ts)


def _required(problem):
    """``(node, edge, times)`` that C1 (input edges) and C2 (output edges) require kept."""
    for k, d in enumerate(problem.edges):
        if d.kind == "in":
            yield d.dst, k, problem.consumed.get(k, set())
        elif d.kind == "out":
            yield d.src, k, problem.consumed_by(d.src)


def _lost(problem, bound) -> list:
    rows = []
    for k, d in enumerate(problem.edges):
        if d.kind == "in":
            p, cond, ts = d.dst, "C1", problem.consumed.get(k, set())
        elif d.kind == "out":
            p, cond, ts = d.src, "C2", problem.consumed_by(d.src)
        else:
            continue
        missing = sorted(t for t in ts if not in_down(t, bound[p]))
        if missing:
            rows.append((p, cond, k, missing))
    return sorted(rows, key=lambda r: (r[0], r[2]))
