"""engine.rollback.problem, engine.rollback.format and engine.rollback.batched (issue 12, items
1-4): the paper's examples with their answers, the format's errors with their lines, the batched
solver against the reference, and the paper's properties (Theorem 2, closure under union, least
rollback against brute force, Lemma 1 across a rollback in a simulated run)."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import assume, event, given, strategies as st

from engine.cli.main import main
from engine.errors import RollbackFormatError, TimelyFrontierError
from engine.rollback.format import format_answer, parse_rollback
from engine.rollback.problem import (Guard, RollbackProblem, c1, c2, c3, c5,
                             could_result_in, down, phi,
                             s, solve, union, within)
from engine.rollback.batched import solve_batched
from engine.rollback.state import Effects, RunState, rebuild
from strategies import examples
from rollback_cases import EXPECTED, all_frontiers, problems

# --- the paper's examples (format section 8), with the answers the format gives --------------


HEAD = "# timely-rollback answer v1\nguard {}\n\nresult ok\n"


@pytest.mark.parametrize(("text", "guard", "body"), EXPECTED,
                         ids=[f"example{1 + i // 2}-{g}" for i, (_, g, _) in enumerate(EXPECTED[:6])]
                         + ["example3-p-checkpoint-full", "example3-p-checkpoint-simple"])
def test_paper_examples(tmp_path, capsys, text, guard, body):
    path = tmp_path / "problem.txt"
    path.write_text(text)
    assert main(["rollback", str(path), "--guard", guard]) == 0
    assert capsys.readouterr().out == HEAD.format(guard) + body
    problem = parse_rollback(text)
    assert solve_batched(problem, guard) == solve(problem, guard)


def test_example1_without_buffer_is_rejected(tmp_path, capsys):
    """Example 1 with q -> o directly: Condition 1 (an output edge needs a buffer node)."""
    text = ("timely-rollback v1\ntimes 2 2\n# q forwards t1 messages as t3 on o\nnode 0\nin 0 0\n"
            "# the output edge, straight out of q\n\nout 1 0\nconsumed 0 0 1\n")
    path = tmp_path / "problem.txt"
    path.write_text(text)
    assert main(["rollback", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: line 8: ") and "buffer" in err


def test_cli_subprocess_exit_status(tmp_path):
    """The installed entry point: an answer exits 0 (also `none`), a malformed file 2."""
    ok = tmp_path / "none.txt"
    ok.write_text("timely-rollback v1\ntimes 2 1\nnode 0\nnode 1\nin 0 1\nedge 1 0 1\n"
                  "consumed 0 1 0\nconsumed 1 0 0\ninflight 1 0 0\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("timely-rollback v1\ntimes 2 1\nnode 0\nconsumed 0 0 0\n")
    run = lambda p: subprocess.run([sys.executable, "-m", "engine.cli.main", "rollback", str(p)],  # noqa: E731
                                   capture_output=True, text=True, timeout=120)
    r = run(ok)
    assert r.returncode == 0 and r.stderr == ""
    # p1 must keep its input at (1, 0), hence (0, 0), where a message is in flight to it
    assert r.stdout.endswith("result none\nlost 1 C1 0 1 1 0\nbound 0 1 1 0\nbound 1 0\n")
    r = run(bad)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith(
        "error: line 4: ")


# --- answers: none, lost, conflict, nolargest -------------------------------------------------

def _answer(text, guard="full"):
    problem = parse_rollback(text)
    answer = solve(problem, guard)
    assert solve_batched(problem, guard) == answer
    return format_answer(problem, answer).split("\n", 3)[3]


def test_none_with_lost_lines():
    """p1 must keep its input at 0 (C1), but a message at 0 is in flight to it (C5); the buffer
    relayed a message at 1 that p1 cannot keep determined (C3), so it cannot keep it (C2)."""
    text = ("timely-rollback v1\ntimes 2 1\nnode 0\nnode 1\nnode 2 buffer\nin 0 1\nedge 1 0 1\n"
            "edge 2 1 2\nout 3 2\nconsumed 0 0 0\nconsumed 2 1 0\ninflight 1 0 0\n")
    assert _answer(text) == ("result none\nlost 1 C1 0 1 0 0\nlost 2 C2 3 1 1 0\n"
                             "bound 0 1 1 0\nbound 1 0\nbound 2 1 0 0\n")


def test_conflict_and_nolargest():
    """p1 can keep {0} or {1}-ish checkpoints but not their union: two maximal choices; with
    C1 requiring both, no choice, yet each time alone can be kept: conflict."""
    base = ("timely-rollback v1\ntimes 2 2\nnode 0\nnode 1\nin 0 1\n"
            "avail 1 0 1\navail 1 1 0\n")
    assert _answer(base) == ("result nolargest 2\nchoice 1\nf 0 1 1 1\nf 1 1 0 1\n"
                             "choice 2\nf 0 1 1 1\nf 1 1 1 0\n")
    assert _answer(base + "consumed 0 0 1 1 0\n") == ("result none\nconflict\nbound 0 1 1 1\n"
                                                      "bound 1 2 0 1 1 0\n")
    assert _answer(base + "consumed 0 0 1\n") == "result ok\nf 0 1 1 1\nf 1 1 0 1\n"


def test_epochs_chain_shift_and_need():
    """A chain of epoch checkpoints, a one-epoch delay (shift 1 0) and a need override: p0 can
    only restart from {}; its messages at epoch 0 do not depend on its history (need {}), so p1
    keeps epoch 0 only (its chain allows epochs <= 0); p2 gets p1's epoch-k state as its
    epoch k+1 input, so it keeps epochs <= 1."""
    text = ("timely-rollback v1\ntimes 4 1\nnode 0\nnode 1\nnode 2\nedge 0 0 1\nedge 1 1 2\n"
            "phi 1 shift 1 0\nneed 0 0 0\nconsumed 0 0 0 1 0 2 0 3 0\nconsumed 1 1 0 2 0 3 0\n"
            "avail 0\navail 1 epochs 2\n")
    assert _answer(text) == "result ok\nf 0 0\nf 1 1 0 0\nf 2 1 1 0\n"
    assert _answer(text, "simple") == "result ok\nf 0 0\nf 1 1 0 0\nf 2 1 1 0\nc 0 0\nc 1 1 0 0\nc 2 1 1 0\n"


# --- errors (format section 6) ------------------------------------------------------------------

H = "timely-rollback v1\ntimes 3 2\n"
ERRORS = [
    ("timely-rollback v2\ntimes 1 1\nnode 0\n", 1),
    ("", 1),
    ("timely-rollback v1\n# c\n\nnode 0\n", 4),
    ("timely-rollback v1\ntimes 0 2\nnode 0\n", 2),
    (H + "times 3 2\n", 3),
    (H + "node 0\nfrob 0\n", 4),
    (H + "node 0 1\n", 3),
    (H + "node 0\nnode 1\nedge 0 0 1 2\n", 5),
    (H + "node 0\nin 0 0\nconsumed 0 -1 0\n", 5),
    (H + "node 0\nin 0 0\nconsumed 0 1.0 0\n", 5),
    (H + "node 0\nin 0 0\nconsumed 0 1 0 2\n", 5),
    (H + "node 0\nin 0 0\nconsumed 0 3 0\n", 5),
    (H + "node 0\nin 0 0\nconsumed 0\n", 5),
    (H + "node 1\n", 3),
    (H + "node 0\nin 1 0\n", 4),
    (H + "node 0\nin 0 1\n", 4),
    (H + "node 0\nedge 0 0 0\n", 4),
    (H + "node 0\nin 0 0\nnode 1\n", 5),
    (H + "node 0\nnotified 0 0 0\nin 0 0\n", 5),
    (H + "in 0 0\n", 3),
    (H + "notified 0 0 0\n", 3),
    (H + "node 0\nnode 1\nedge 0 0 1\nout 1 1\n", 6),
    (H + "node 0\nnode 1 buffer\nedge 0 0 1\n", 4),  # a buffer with no outgoing edge
    (H + "node 0\nin 0 0\nphi 0 shift 0 1\n", 5),
    (H + "node 0 buffer\nnode 1\nin 0 0\nedge 1 0 1\nphi 1 shift 0 1\n", 7),
    (H + "node 0\nnode 1\nedge 0 0 1\nphi 0 shift 0 1\nphi 0 shift 1 0\n", 7),
    (H + "node 0\nnode 1\nedge 0 0 1\nneed 0 1 1\nneed 0 1 1 0 0\n", 7),
    (H + "node 0\nnode 1 buffer\nedge 0 0 1\nout 1 1\nconsumed 1 0 0\n", 7),
    (H + "node 0\nin 0 0\ninflight 0 0 0\n", 5),
    (H + "node 0\navail 0 epochs 3\n", 4),
    (H + "node 0\nnode 1\nedge 0 0 1\nneed 0 1 0\n", 6),  # need((1,0)) = {} below need((0,0))
    (H + "node 0\nnode 1\nedge 0 0 1\nneed 0 0 0 1 1\n", 6),  # need((0,0)) above need((1,0))
    (H + "node 0\nnode 1\nedge 0 0 1\nstep 0 1 0 0 0\n", 6),  # (1,0) not in need((0,0))
    (H + "node 0\nnode 1\nedge 0 0 1\nphi 0 shift x 0\n", 6),
    (H + "node 0\nnode 1\nedge 0 0 1\nphi 0 slide 0 0\n", 6),
    # Condition 4: p1 sends at (1, 0) what it read at (1, 1) (or at (0, 1)) back to p0, which
    # forwards it to p1 at (1, 0): the lowest edge with a violation is edge 0, into p1
    (H + "node 0\nnode 1\nedge 0 0 1\nedge 1 1 0\nneed 1 1 0 1 1\nneed 1 2 0 2 1\n", 5),
]


@pytest.mark.parametrize(("text", "line"), ERRORS)
def test_format_errors_name_the_line(text, line):
    with pytest.raises(RollbackFormatError) as info:
        parse_rollback(text)
    assert info.value.line == line, str(info.value)
    assert str(info.value).startswith(f"line {line}: ")
    assert isinstance(info.value, TimelyFrontierError) and isinstance(info.value, ValueError)


def test_condition4_message_names_the_times():
    with pytest.raises(RollbackFormatError, match=r"Condition 4.*\(1, \(0, 1\)\) ~> \(edge 0"):
        parse_rollback(ERRORS[-1][0])


# --- random problems ----------------------------------------------------------------------------


@given(problems(), st.sampled_from(list(Guard)))
@examples(100)
def test_batched_equals_reference(problem, guard):
    answer = solve(problem, guard)
    event(answer.result + (" conflict" if answer.conflict else ""))
    assert solve_batched(problem, guard) == answer


@given(problems(closed=False), st.sampled_from(list(Guard)))
@examples(50)
def test_batched_equals_reference_not_closed(problem, guard):
    """Availability not closed under union: the exact search (nolargest, conflict)."""
    answer = solve(problem, guard)
    event(answer.result + (" conflict" if answer.conflict else ""))
    assert solve_batched(problem, guard) == answer


@given(problems(max_nodes=6, max_times=(4, 3), cycles=False), st.sampled_from(list(Guard)))
@examples(30)
def test_batched_equals_reference_acyclic_larger(problem, guard):
    assert solve_batched(problem, guard) == solve(problem, guard)


# --- brute force: every choice checked literally ------------------------------------------------

def literal_c4(problem, f):
    """C4 as the format states it: for t2 in notified(q) ∩ f(q), internal e2 into q, internal e1
    and t1 with (e1, t1) ~> (e2, t2): need_e1(t1) ⊆ f(src(e1))."""
    ne, ni = problem.ne, problem.ni
    for e1 in problem.internal():
        p = problem.edges[e1].src
        for t1 in problem.times:
            reach = could_result_in(problem, ("e", e1), t1)
            for (loc, t2) in reach:
                if loc[0] == "e":
                    q = problem.edges[loc[1]].dst
                    if t2 in problem.notified[q] and t2 in f[q] \
                            and not down(problem.need(e1, t1), ne, ni) <= f[p]:
                        return False
    return True


def brute_force(problem, guard, relaxed=False):
    """Every consistent choice, as tuples of canonical forms."""
    ne, ni = problem.ne, problem.ni
    every = all_frontiers(ne, ni)
    lists = [every if a.every else a.frontiers(ne, ni) for a in problem.avail]
    out = []
    for choice in itertools.product(*lists):
        f = [down(x, ne, ni) for x in choice]
        if not relaxed and not (c1(problem, f) and c2(problem, f)):
            continue
        if not (c3(problem, f) and c5(problem, f)):
            continue
        if (literal_c4(problem, f) if guard is Guard.FULL else s(problem, f)):
            out.append(choice)
    return out


def _small(problem):
    ne, ni = problem.ne, problem.ni
    sizes = [len(all_frontiers(ne, ni)) if a.every else len(a.frontiers(ne, ni))
             for a in problem.avail]
    total = 1
    for x in sizes:
        total *= x
    return total <= 400


@given(st.sampled_from([None, False]).flatmap(lambda c: problems(3, (2, 2), closed=c)),
       st.sampled_from(list(Guard)))
@examples(80)
def test_least_rollback_against_brute_force(problem, guard):
    """The answer is the largest consistent choice (no larger one exists), the maximal ones for
    nolargest, none exactly when there is no consistent choice; ``bound`` is M; and the
    consistent choices are closed under union when availability is."""
    assume(_small(problem))
    answer = solve(problem, guard)
    event(answer.result)
    sols = brute_force(problem, guard)
    maximal_sols = sorted({x for x in sols
                           if not any(y != x and all(within(a, b) for a, b in zip(x, y))
                                      for y in sols)})
    if answer.result == "ok":
        assert [tuple(answer.choice)] == maximal_sols
        assert all(all(within(a, b) for a, b in zip(x, answer.choice)) for x in sols)
    elif answer.result == "nolargest":
        assert [tuple(c) for c in answer.choices] == maximal_sols and len(maximal_sols) > 1
    else:
        assert sols == []
        relaxed = brute_force(problem, guard, relaxed=True)
        bound = [()] * problem.n
        for x in relaxed:
            bound = [union(a, b) for a, b in zip(bound, x)]
        assert answer.bound == bound
    if all(a.closed_under_union(problem.ne, problem.ni) for a in problem.avail):
        assert answer.result != "nolargest" and not answer.conflict
        keys = set(sols)
        for x, y in itertools.combinations(sols, 2):
            assert tuple(union(a, b) for a, b in zip(x, y)) in keys


@given(problems(max_nodes=4, max_times=(3, 2), closed=True))
@examples(60)
def test_simple_guard_within_full(problem):
    """Theorem 2: with availability closed under union, the simple answer is pointwise within
    the full one, and `none` under the full guard implies `none` under the simple guard."""
    full, simple = solve(problem, Guard.FULL), solve(problem, Guard.SIMPLE)
    if full.result == "none":
        assert simple.result == "none"
    if simple.result == "ok":
        assert full.result == "ok"
        assert all(within(a, b) for a, b in zip(simple.choice, full.choice))
        assert all(within(c, a) for c, a in zip(simple.fc, simple.choice))  # S1


# --- Lemma 1 in a simulated run -------------------------------------------------------------------

class Run:
    """A simulated timely run on a rollback problem's graph. A processor's history ``H[p]`` is
    the list of ``(edge, time)`` events it consumed; on an internal edge ``e`` it has produced,
    at each time ``b``, ``min(cap, #events of H[p] at times in need_e(b))`` messages -- a
    function of ``H[p]`` filtered to ``need_e(b)`` (Condition 2). ``Q[e]`` is the queue."""

    def __init__(self, problem, rng, inputs):
        self.problem, self.rng = problem, rng
        self.H = [[] for _ in range(problem.n)]
        self.Q = {k: [] for k in problem.internal()}
        self.pending = list(inputs)  # (input edge, time) not yet delivered
        self.need = {(k, b): down(problem.need(k, b), problem.ne, problem.ni)
                     for k in problem.internal() for b in problem.times}

    def produced(self, k, history):
        out = {}
        for b in self.problem.times:
            c = min(2, sum(1 for _e, t in history if t in self.need[(k, b)]))
            if c:
                out[b] = c
        return out

    def consume(self, p, k, t):
        before = {d: self.produced(d, self.H[p]) for d in self.problem.edges_out_of(p, ("edge",))}
        self.H[p].append((k, t))
        for d, old in before.items():
            for b, c in self.produced(d, self.H[p]).items():
                self.Q[d].extend([b] * (c - old.get(b, 0)))

    def step(self) -> bool:
        queued = [k for k, q in self.Q.items() if q]
        if not queued and not self.pending:
            return False
        if self.pending and (not queued or self.rng.random() < 0.3):
            k, t = self.pending.pop(self.rng.randrange(len(self.pending)))
        else:
            k = self.rng.choice(queued)
            t = self.Q[k].pop(self.rng.randrange(len(self.Q[k])))
        self.consume(self.problem.edges[k].dst, k, t)
        return True

    def lemma1(self) -> bool:
        """Per internal edge and time: produced = consumed + queued."""
        for k in self.problem.internal():
            d = self.problem.edges[k]
            prod = self.produced(k, self.H[d.src])
            for b in self.problem.times:
                consumed = sum(1 for e, t in self.H[d.dst] if e == k and t == b)
                if prod.get(b, 0) != consumed + self.Q[k].count(b):
                    return False
        return True

    def state(self) -> RollbackProblem:
        """The rollback problem of the current state (availability of the graph's problem)."""
        pr = self.problem
        out = RollbackProblem(pr.ne, pr.ni, pr.buffer, pr.edges, shift=pr.shift,
                              need_over=pr.need_over, steps=pr.steps, avail=pr.avail)
        for p, h in enumerate(self.H):
            for k, t in h:
                out.consumed.setdefault(k, set()).add(t)
        for k, q in self.Q.items():
            if q:
                out.inflight[k] = set(q)
        return out

    def g(self, p, history) -> Effects:
        """The run's behaviour as ``engine.rollback.state`` takes it: ``g(p)`` of a history."""
        return Effects({k: Counter(self.produced(k, history))
                        for k in self.problem.edges_out_of(p, ("edge",))}, frozenset())

    def run_state(self) -> RunState:
        """The run as a :class:`RunState`; the undelivered inputs are the input edges' queues."""
        queues = {k: list(q) for k, q in self.Q.items()}
        for k, d in enumerate(self.problem.edges):
            if d.kind == "in":
                queues[k] = [t for kk, t in self.pending if kk == k]
        return RunState([list(h) for h in self.H], queues, [set() for _ in self.H])

    def rollback(self, f, rebuild_state=rebuild) -> None:
        """*RollbackL2* by ``engine.rollback.state.rebuild``: ``H'(p) = H(p)@f(p)``, each
        internal queue what ``g(p)`` produces from ``H'(p)`` outside ``phi(e)(f(p)) ∩ f(q)``;
        the undelivered inputs stay (C1)."""
        new = rebuild_state(self.problem, self.g, self.run_state(), f)
        self.H = new.histories
        self.Q = {k: list(new.queues[k]) for k in self.problem.internal()}
        assert sorted(self.pending) == sorted((k, t) for k, d in enumerate(self.problem.edges)
                                              if d.kind == "in" for t in new.queues[k])


@given(problems(max_nodes=4, max_times=(3, 2), closed=True, buffers=False),
       st.sampled_from(list(Guard)), st.integers(0, 2**32), st.integers(3, 40))
@examples(40)
def test_lemma1_before_and_after_rollback(problem, guard, seed, steps):
    rng = random.Random(seed)
    inputs = [(k, t) for k, d in enumerate(problem.edges) if d.kind == "in"
              for t in problem.times if rng.random() < 0.6]
    assume(inputs)
    run = Run(problem, rng, inputs)
    for _ in range(steps):
        if not run.step():
            break
        assert run.lemma1()
    answer = solve(run.state(), guard)
    before = sum(len(h) for h in run.H)
    event(answer.result)
    assume(answer.result == "ok")
    run.rollback([down(x, problem.ne, problem.ni) for x in answer.choice])
    event(f"events: {before} before the rollback, {sum(len(h) for h in run.H)} after")
    assert run.lemma1()
    while run.step():  # and it keeps holding as the run goes on from the rolled-back state
        assert run.lemma1()


def _rebuild_keeping_everything(problem, g, state, f):
    """A wrong *RollbackL2*: queues every message ``g(p)`` produces from ``H'(p)``, also those
    ``q`` kept (double counting them)."""
    new = rebuild(problem, g, state, f)
    for k in problem.internal():
        d = problem.edges[k]
        made = g(d.src, new.histories[d.src]).messages.get(k, {})
        new.queues[k] = [t for t in sorted(made) for _ in range(made[t])]
    return new


def test_lemma1_check_catches_a_wrong_rebuild():
    """The Lemma 1 check can fail: after a run that delivered everything, rolling back to
    ``T`` (nothing lost) with a rebuild that re-queues kept messages breaks produced =
    consumed + queued, while ``rebuild`` keeps it."""
    problem = parse_rollback("timely-rollback v1\ntimes 2 1\nnode 0\nnode 1\nin 0 0\n"
                             "edge 1 0 1\n")
    top = [down(problem.top, problem.ne, problem.ni)] * problem.n
    for wrong in (False, True):
        run = Run(problem, random.Random(1), [(0, (0, 0)), (0, (1, 0))])
        while run.step():
            pass
        assert run.lemma1() and sum(len(q) for q in run.Q.values()) == 0
        run.rollback(top, _rebuild_keeping_everything if wrong else rebuild)
        assert run.lemma1() is not wrong
