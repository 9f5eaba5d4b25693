"""Graphs, delta rounds and state snapshots shared by the Spark integration tests.

The reference tracker (``engine.ImpliedFrontierTracker``) fed the same deltas directly is the
oracle for everything that goes through Spark and the ``FrontierService``.
"""

from __future__ import annotations

import numpy as np

from engine import GraphBuilder, ImpliedFrontierTracker, Summary
from engine.core.workload import EXAMPLE_PATH, read_workload

from spark_plugin.schema import delta_table


def loop_graph():
    """A scope at depth 0 feeding a loop at depth 1 (widths 1 and 2: padding matters)."""
    b = GraphBuilder(m=1)
    scope = b.add_operator(1, 1, depth=0, name="scope")
    enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1], name="ingress")
    b.add_summary(enter, 0, 0, Summary.ingress(0))
    step = b.add_operator(2, 2, depth=1, name="step")
    for i in (0, 1):
        for o in (0, 1):
            b.add_summary(step, i, o, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1, name="feedback")
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0], name="egress")
    b.add_summary(leave, 0, 0, Summary.egress(1))
    b.connect(scope, 0, enter, 0)
    b.connect(enter, 0, step, 0)
    b.connect(step, 0, fb, 0)
    b.connect(fb, 0, step, 1)
    b.connect(step, 1, leave, 0)
    b.connect(leave, 0, scope, 0)
    return b.build()


def random_rounds(graph, rounds: int = 5, seed: int = 0, max_coord: int = 3):
    """Rounds of raw delta rows ``(loc, ts padded to m + K, diff)``.

    Each round adds and retracts pointstamps (the last drains everything, so counts end at
    zero); every net change is split into several rows and noise pairs ``+x, -x`` are added,
    so consolidation has work to do.
    """
    rng = np.random.default_rng(seed)
    W = graph.m + graph.max_depth
    live: dict[tuple, int] = {}
    out = []
    for r in range(rounds):
        net: dict[tuple, int] = {}
        if r < rounds - 1:
            for _ in range(int(rng.integers(4, 9))):
                loc = int(rng.integers(0, graph.num_locations))
                ts = [int(x) for x in rng.integers(0, max_coord + 1, graph.width(loc))]
                key = (loc, tuple(ts + [0] * (W - len(ts))))
                net[key] = net.get(key, 0) + int(rng.integers(1, 4))
            for key in list(live):
                if rng.random() < 0.4:
                    net[key] = net.get(key, 0) - live[key]
        else:
            for key, c in live.items():
                net[key] = net.get(key, 0) - c
        rows = []
        for (loc, ts), d in net.items():
            live[(loc, ts)] = live.get((loc, ts), 0) + d
            if live[(loc, ts)] == 0:
                del live[(loc, ts)]
            part = int(rng.integers(-2, 3))
            rows += [(loc, list(ts), part), (loc, list(ts), d - part)]
            noise = int(rng.integers(1, 5))
            rows += [(loc, list(ts), noise), (loc, list(ts), -noise)]
        order = rng.permutation(len(rows))
        out.append([rows[i] for i in order])
    return out


def wcc_rounds():
    """The bundled workload's batches as raw row rounds, and its graph."""
    w = read_workload(EXAMPLE_PATH)
    return w.graph, [[(int(l), [int(x) for x in t], int(d)) for l, t, d in
                      zip(b.loc.tolist(), b.ts.tolist(), b.diff.tolist())] for b in w.batches]


def rows_table(rows, producer, seq, width):
    """Raw rows as a canonical delta table of one ``(producer, seq)``."""
    if not rows:
        return delta_table(np.zeros(0, np.int32), np.zeros((0, width), np.int64),
                           np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    return delta_table([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                       producer, seq)


def reference_states(graph, rounds):
    """``(counts, frontiers)`` of the reference tracker after each round."""
    ref = ImpliedFrontierTracker(graph)
    states = []
    for rows in rounds:
        if rows:
            ref.update([r[0] for r in rows], np.array([r[1] for r in rows], np.int64),
                       [r[2] for r in rows])
        states.append((sorted(ref.counts.items()), ref.frontiers()))
    return states


def state(service):
    """``(counts, frontiers)`` of a FrontierService, in the reference tracker's terms."""
    t = service.counts().to_pydict()
    counts = sorted(((l, tuple(ts[:service.graph.width(l)])), c)
                    for l, ts, c in zip(t["loc"], t["ts"], t["cnt"]))
    return counts, service.frontiers()


def full_state(service):
    """:func:`state` plus the sequence state (next seq, held, duplicates)."""
    st = service.status()
    return state(service), st.next_seq, st.held, st.duplicates
