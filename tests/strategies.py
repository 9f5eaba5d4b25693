"""Hypothesis strategies shared by the tests: summaries, timestamps, graphs and delta batches.

Two graph families:

* :func:`random_graphs`: operators with random port depths, random summary antichains and
  random channels. Zero-advance cycles are cut (a channel on the cycle is removed) unless
  ``allow_invalid``; the result is therefore valid but otherwise arbitrary.
* :func:`structured_graphs`: what a timely program builds -- a chain of operators with
  loops (ingress, a loop head, a body, feedback, egress), nested loops, epoch delays,
  diamonds (a delay in parallel with a loop step, so antichains grow), and the cycle that
  leaves a loop, delays by one epoch and re-enters, which resets the counter.
"""

from __future__ import annotations

import os

from hypothesis import settings, strategies as st

from engine import GraphBuilder, Summary

SMALL = 3  # coordinates of sampled timestamps lie in [0, SMALL]

#: ``TFRONT_TEST_SCALE=20 make test`` runs every property 20 times longer.
SCALE = int(os.environ.get("TFRONT_TEST_SCALE", "1"))


def examples(n: int):
    """Hypothesis settings for ``n`` examples (times ``TFRONT_TEST_SCALE``), no deadline."""
    return settings(max_examples=n * SCALE, deadline=None)


@st.composite
def summaries(draw, m: int, a: int, b: int, max_step: int = 1) -> Summary:
    """A random summary from depth ``a`` to depth ``b`` with small entries."""
    j = draw(st.integers(0, min(a, b)))
    d_out = tuple(draw(st.sampled_from([0, 0, 0, 1][: 3 + max_step])) for _ in range(m))
    d_cnt = tuple(draw(st.integers(0, max_step)) for _ in range(j))
    reset = tuple(draw(st.integers(0, 2)) for _ in range(b - j))
    return Summary(a, b, j, d_out, d_cnt, reset)


def timestamps(m: int, depth: int, hi: int = SMALL):
    """Timestamps of width ``m + depth`` with coordinates in ``[0, hi]``."""
    return st.tuples(*[st.integers(0, hi) for _ in range(m + depth)])


@st.composite
def random_graphs(draw, max_ops: int = 4, max_depth: int = 2, m: int | None = None,
                  allow_invalid: bool = False, max_antichain: int = 2):
    """A random graph; valid (no zero-advance cycle) unless ``allow_invalid``."""
    m = draw(st.sampled_from([1, 2])) if m is None else m
    n_ops = draw(st.integers(1, max_ops))
    # one or two depths per graph, so that channels (which join equal depths) are common
    depth_choices = draw(st.lists(st.integers(0, max_depth), min_size=1, max_size=2, unique=True))
    port_depth = st.sampled_from(depth_choices)
    ops = []
    sums = []
    for op in range(n_ops):
        ins = draw(st.lists(port_depth, min_size=0, max_size=2))
        outs = draw(st.lists(port_depth, min_size=1 if op == 0 else 0, max_size=2))
        ops.append((ins, outs))
        for i, a in enumerate(ins):
            for o, b in enumerate(outs):
                for _ in range(draw(st.integers(0, max_antichain))):
                    sums.append((op, i, o, draw(summaries(m, a, b))))
    sources = [(op, p, d) for op, (_, outs) in enumerate(ops) for p, d in enumerate(outs)]
    channels = []
    for op, (ins, _) in enumerate(ops):
        for p, d in enumerate(ins):
            cands = [s for s in sources if s[2] == d]
            if cands and draw(st.integers(0, 3)) > 0:
                s_op, s_port, _ = draw(st.sampled_from(cands))
                channels.append((s_op, s_port, op, p))
    while True:
        b = GraphBuilder(m)
        for ins, outs in ops:
            b.add_operator(len(ins), len(outs), input_depths=ins, output_depths=outs)
        for s in sums:
            b.add_summary(*s)
        for c in channels:
            b.connect(*c)
        g = b.build(allow_zero_cycles=True)
        cycle = None if allow_invalid else g.find_zero_advance_cycle()
        if cycle is None:
            return g
        # cut the cycle at its first channel (cycles alternate channels and internal edges)
        for u, v in zip(cycle, cycle[1:]):
            lu, lv = g.locations[u], g.locations[v]
            if lu.kind.value == "s":
                channels.remove((lu.op, lu.port, lv.op, lv.port))
                break


class _Program:
    """Builds a structured timely-style graph from random choices."""

    def __init__(self, draw, m: int, max_ops: int):
        self.draw, self.m, self.budget = draw, m, max_ops
        self.b = GraphBuilder(m)

    def op(self, ins, outs, summaries_, name):
        op = self.b.add_operator(len(ins), len(outs), input_depths=ins, output_depths=outs, name=name)
        for i, o, s in summaries_:
            self.b.add_summary(op, i, o, s)
        self.budget -= 1
        return op

    def delay_vector(self):
        k = self.draw(st.integers(0, self.m - 1))
        return tuple(1 if i == k else 0 for i in range(self.m))

    def segment(self, src, depth, level):
        """Extend the chain from output ``src = (op, port)`` at ``depth``; return the new end."""
        m, draw = self.m, self.draw
        kinds = ["plain", "delay", "diamond"] + (["loop"] if level < 2 else []) + \
                (["reset_cycle"] if depth >= 1 else [])
        kind = draw(st.sampled_from(kinds))
        ident = Summary.identity(depth, m)
        if kind == "plain":
            op = self.op([depth], [depth], [(0, 0, ident)], "map")
            self.b.connect(*src, op, 0)
            return (op, 0)
        if kind == "delay":
            op = self.op([depth], [depth], [(0, 0, Summary.delay(depth, m, self.delay_vector()))], "delay")
            self.b.connect(*src, op, 0)
            return (op, 0)
        if kind == "diamond":
            # a delay in parallel with a step that advances the innermost counter (or, at depth
            # 0, a different epoch coordinate): two incomparable paths into one merge operator.
            split = self.op([depth], [depth, depth], [(0, 0, ident), (0, 1, ident)], "split")
            self.b.connect(*src, split, 0)
            slow = self.op([depth], [depth], [(0, 0, Summary.delay(depth, m, self.delay_vector()))], "delay")
            if depth >= 1:
                step = Summary.feedback(depth, m)
            else:
                step = Summary.delay(depth, m, self.delay_vector())
            side = self.op([depth], [depth], [(0, 0, step)], "side")
            merge = self.op([depth, depth], [depth], [(0, 0, ident), (1, 0, ident)], "merge")
            self.b.connect(split, 0, slow, 0)
            self.b.connect(split, 1, side, 0)
            self.b.connect(slow, 0, merge, 0)
            self.b.connect(side, 0, merge, 1)
            return (merge, 0)
        if kind == "loop":
            inner = depth + 1
            enter = self.op([depth], [inner], [(0, 0, Summary.ingress(depth, m))], "ingress")
            self.b.connect(*src, enter, 0)
            head = self.op([inner, inner], [inner, inner],
                           [(0, 0, Summary.identity(inner, m)), (1, 0, Summary.identity(inner, m)),
                            (0, 1, Summary.identity(inner, m)), (1, 1, Summary.identity(inner, m))],
                           "head")
            self.b.connect(enter, 0, head, 0)
            end = (head, 0)
            for _ in range(draw(st.integers(0, 2))):
                if self.budget <= 0:
                    break
                end = self.segment(end, inner, level + 1)
            fb = self.op([inner], [inner], [(0, 0, Summary.feedback(inner, m))], "feedback")
            self.b.connect(*end, fb, 0)
            self.b.connect(fb, 0, head, 1)
            leave = self.op([inner], [depth], [(0, 0, Summary.egress(inner, m))], "egress")
            self.b.connect(head, 1, leave, 0)
            return (leave, 0)
        # reset_cycle: leave the current loop, delay by an epoch, re-enter at counter 0 and
        # merge back: (e, .., i) -> (e + 1, .., 0), incomparable with the identity.
        merge = self.op([depth, depth], [depth, depth],
                        [(0, 0, ident), (1, 0, ident), (0, 1, ident), (1, 1, ident)], "merge")
        self.b.connect(*src, merge, 0)
        out = self.op([depth], [depth - 1], [(0, 0, Summary.egress(depth, m))], "egress")
        delay = self.op([depth - 1], [depth - 1],
                        [(0, 0, Summary.delay(depth - 1, m, self.delay_vector()))], "delay")
        back = self.op([depth - 1], [depth], [(0, 0, Summary.ingress(depth - 1, m))], "ingress")
        self.b.connect(merge, 1, out, 0)
        self.b.connect(out, 0, delay, 0)
        self.b.connect(delay, 0, back, 0)
        self.b.connect(back, 0, merge, 1)
        return (merge, 0)


@st.composite
def structured_graphs(draw, max_ops: int = 14, m: int | None = None):
    """A timely-style program graph: chain, loops, nested loops, delays, diamonds, reset cycles."""
    m = draw(st.sampled_from([1, 2])) if m is None else m
    prog = _Program(draw, m, max_ops)
    scope = prog.op([0], [0], [], "scope")
    end = (scope, 0)
    while prog.budget > 0 and (end == (scope, 0) or draw(st.booleans())):
        end = prog.segment(end, 0, 0)
    prog.b.connect(*end, scope, 0)
    return prog.b.build()


def any_graphs(**kw):
    """Either family."""
    return st.one_of(random_graphs(**kw), structured_graphs())


@st.composite
def batch_sequences(draw, graph, max_batches: int = 5, max_rows: int = 6, padded=None):
    """Batches ``(loc, ts, diff)`` over a small pool of pointstamps, so that counts rise,
    fall, cancel and go transiently negative. ``padded`` draws some timestamps at the
    array width ``m + K`` with zero padding."""
    L = graph.num_locations
    if L == 0:
        return []
    pool = draw(st.lists(
        st.integers(0, L - 1).flatmap(
            lambda l: st.tuples(st.just(l), timestamps(graph.m, graph.depth(l)))),
        min_size=1, max_size=6, unique=True))
    width = graph.m + graph.max_depth
    batches = []
    for _ in range(draw(st.integers(1, max_batches))):
        rows = draw(st.lists(st.tuples(st.sampled_from(pool), st.integers(-2, 2)),
                             min_size=0, max_size=max_rows))
        loc = [p[0] for p, _ in rows]
        ts = []
        for (l, t), _ in rows:
            pad = draw(st.booleans()) if padded is None else padded
            ts.append(t + (0,) * (width - len(t)) if pad else t)
        batches.append((loc, ts, [d for _, d in rows]))
    return batches


@st.composite
def weighted_edge_lists(draw, max_vertices: int = 30, max_edges: int = 70,
                        weighted: bool | None = None):
    """``(src, dst, w)``: random directed edges over a few vertices (duplicates and self-loops
    included), ids dense or spread far apart; ``w`` int64 ones (unweighted) or non-negative
    float64 weights (zero included). ``weighted``: which (default: either)."""
    import numpy as np

    n = draw(st.integers(1, max_vertices))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=max_edges))
    scale = draw(st.sampled_from([1, 1, 7, 10 ** 9 + 7]))
    e = np.array(edges, np.int64).reshape(-1, 2) * scale
    if weighted is None:
        weighted = draw(st.booleans())
    if weighted:
        w = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25, 3.0, 10.0]),
                                   min_size=len(e), max_size=len(e))), np.float64)
    else:
        w = np.ones(len(e), np.int64)
    return e[:, 0].copy(), e[:, 1].copy(), w
