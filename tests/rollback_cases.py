"""Rollback problems shared by the rollback tests, the backend tests and the simulator tests:
the paper's examples (the files ``engine/examples/rollback-example-*.txt``) with their
answers, and a Hypothesis strategy of random problems."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import assume, strategies as st

from engine.errors import RollbackFormatError
from engine.rollback.problem import Avail, EdgeDecl, RollbackProblem, down, maximal, union


#: The paper's three examples, as shipped with the package (``engine/examples/``: the docs
#: run them with ``tfront rollback``); :data:`EXPECTED` holds their answers.
EXAMPLES = Path(__file__).resolve().parents[1] / "engine" / "examples"
EXAMPLE_1, EXAMPLE_2, EXAMPLE_3 = (
    (EXAMPLES / f"rollback-example-{k}.txt").read_text() for k in (1, 2, 3))


EXPECTED = [
    (EXAMPLE_1, "full", "f 0 1 0 1\nf 1 1 1 1\n"),
    (EXAMPLE_1, "simple", "f 0 1 0 1\nf 1 1 1 1\nc 0 1 0 1\nc 1 1 0 1\n"),
    (EXAMPLE_2, "full", "f 0 1 1 0\nf 1 1 1 0\nf 2 1 0 0\nf 3 1 0 0\n"),
    (EXAMPLE_2, "simple", "f 0 1 1 0\nf 1 1 1 0\nf 2 1 0 0\nf 3 1 0 0\n"
                          "c 0 1 1 0\nc 1 1 1 0\nc 2 1 0 0\nc 3 1 0 0\n"),
    (EXAMPLE_3, "full", "f 0 1 1 0\nf 1 1 2 0\nf 2 1 2 0\n"),
    (EXAMPLE_3, "simple", "f 0 1 1 0\nf 1 1 2 0\nf 2 1 1 0\nc 0 1 1 0\nc 1 1 1 0\nc 2 1 1 0\n"),
    # Example 3 with p restricted to the checkpoint {1}: q keeps 1, not 2, under both guards
    (EXAMPLE_3 + "avail 1 1 0\n", "full", "f 0 1 1 0\nf 1 1 1 0\nf 2 1 1 0\n"),
    (EXAMPLE_3 + "avail 1 1 0\n", "simple",
     "f 0 1 1 0\nf 1 1 1 0\nf 2 1 1 0\nc 0 1 1 0\nc 1 1 1 0\nc 2 1 1 0\n"),
]


@st.composite
def problems(draw, max_nodes=4, max_times=(3, 2), closed=None, cycles=True, buffers=True):
    """Random valid rollback problems: processors with inputs, internal edges (cycles if
    ``cycles``), ``shift`` phis, ``need`` overrides that keep ``need`` monotone, ``step`` subsets,
    buffers with output edges, consumed/notified/in-flight times, and availability (every,
    epoch chains, explicit lists; closed under union when ``closed``, else either)."""
    lo = 2 if closed is False else 1  # lists that are not closed need incomparable times
    ne = draw(st.integers(lo, max(lo, max_times[0])))
    ni = draw(st.integers(lo, max(lo, max_times[1])))
    times = [(e, i) for e in range(ne) for i in range(ni)]
    k = draw(st.integers(1, max_nodes))
    edges: list = []
    for _ in range(draw(st.integers(0, k))):
        edges.append(EdgeDecl("in", None, draw(st.integers(0, k - 1))))
    for _ in range(draw(st.integers(0, 2 * k)) if k > 1 else 0):
        a, b = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
        if a != b and (cycles or a < b):
            edges.append(EdgeDecl("edge", a, b))
    nb = draw(st.integers(0, 2)) if buffers else 0
    buffer = [False] * k + [True] * nb
    for b in range(k, k + nb):
        edges.append(draw(st.sampled_from([EdgeDecl("edge", draw(st.integers(0, k - 1)), b),
                                           EdgeDecl("in", None, b)])))
        edges.append(draw(st.sampled_from([EdgeDecl("out", b, None),
                                           EdgeDecl("edge", b, draw(st.integers(0, k - 1)))])))
    n = k + nb
    problem = RollbackProblem(ne, ni, buffer, edges)
    for j, d in enumerate(edges):
        if d.kind != "edge" or buffer[d.src]:
            continue
        problem.shift[j] = draw(st.sampled_from([(0, 0), (0, 0), (0, 1), (1, 0)]))
        if draw(st.booleans()):  # monotone overrides: {} at the bottom, T at the top
            over = {}
            if draw(st.booleans()):
                over[(0, 0)] = ()
            if draw(st.booleans()):
                over[(ne - 1, ni - 1)] = ((ne - 1, ni - 1),)
            problem.need_over[j] = over
        if draw(st.booleans()):  # ~>1 exactly: a subset of the largest relation
            pairs = [(a, b) for b in times for a in times if a in down(problem.need(j, b), ne, ni)]
            if pairs:
                problem.steps[j] = set(draw(st.lists(st.sampled_from(pairs), max_size=4)))
    ts = st.sets(st.sampled_from(times), max_size=3)
    for j, d in enumerate(edges):
        if d.kind in ("in", "edge") and draw(st.booleans()):
            problem.consumed[j] = draw(ts)
        if d.kind == "edge" and draw(st.integers(0, 3)) == 0:
            problem.inflight[j] = draw(ts)
    problem.notified = [draw(ts) if draw(st.booleans()) else set() for _ in range(n)]
    frontiers = all_frontiers(ne, ni)
    for p in range(n):
        kind = draw(st.sampled_from(["every", "epochs", "list"]))
        if kind == "every":
            a = Avail()
        elif kind == "epochs":
            a = Avail(every=False, epochs=draw(st.integers(0, ne - 1)))
        else:
            lst = set(draw(st.lists(st.sampled_from(frontiers), max_size=3)))
            if closed or (closed is None and draw(st.booleans())):
                while any(union(x, y) not in lst for x in lst for y in lst):
                    lst |= {union(x, y) for x in lst for y in lst}
            a = Avail(every=False, explicit=lst)
        problem.avail[p] = a
    if closed is False:  # one processor gets two incomparable checkpoints, not their union
        p = draw(st.integers(0, n - 1))
        x, y = ((0, ni - 1),), ((ne - 1, 0),)
        extra = draw(st.lists(st.sampled_from(frontiers), max_size=2))
        problem.avail[p] = Avail(every=False, explicit={x, y} | set(extra) - {union(x, y)})
        if draw(st.booleans()):  # an input that needs both kept: a conflict unless its union is
            problem.edges.append(EdgeDecl("in", None, p))
            problem.consumed[len(problem.edges) - 1] = {x[0], y[0]}
    if closed is not None:  # closed: every list closed under union; False: some list is not
        assume(closed == all(a.closed_under_union(ne, ni) for a in problem.avail))
    try:
        problem.check()
    except RollbackFormatError:
        assume(False)
    return problem


def all_frontiers(ne, ni):
    """Every frontier of T, canonical forms: non-increasing row lengths."""
    out = []
    for rows in itertools.product(range(ni + 1), repeat=ne):
        if all(a >= b for a, b in zip(rows, rows[1:])):
            out.append(maximal((e, h - 1) for e, h in enumerate(rows) if h))
    return out
