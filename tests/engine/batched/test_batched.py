"""The batched engine (cpu backend) equals the reference on random graphs and batches."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import ImpliedFrontierTracker
from engine.batched.tracker import BatchedTracker
from engine.core.workload import read_workload, EXAMPLE_PATH

from strategies import batch_sequences, examples, random_graphs, structured_graphs
from tracker_cases import check_strict_rejection, replay_changes, zero_cycle_graph

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=12))
STRATEGIES = ["edgewise", "closure"]


def make(graph, strategy, **kw):
    """``closure-dense`` / ``closure-ragged`` force the layout of Psi."""
    if strategy.startswith("closure-"):
        return BatchedTracker(graph, strategy="closure", psi_layout=strategy.split("-")[1], **kw)
    return BatchedTracker(graph, strategy=strategy, **kw)


@pytest.mark.parametrize("strategy", ["edgewise", "closure-dense", "closure-ragged"])
@examples(150)
@given(data=st.data())
def test_batched_equals_reference(strategy, data):
    graph = data.draw(graphs)
    ref = ImpliedFrontierTracker(graph)
    eng = make(graph, strategy)
    for batch in data.draw(batch_sequences(graph)) + [None]:
        if batch is None:     # finally drain every live pointstamp: all frontiers retreat
            rows = [(l, t, -c) for (l, t), c in ref.counts.items()]
            batch = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
        loc, ts, diff = batch
        before = eng.frontiers()
        changes = eng.update(loc, ts, diff)
        assert changes == ref.update(loc, ts, diff)
        assert eng.frontiers() == ref.frontiers()
        assert replay_changes(before, changes) == eng.frontiers()
        assert sorted(eng.counts.items()) == sorted(ref.counts.items())
    assert eng.frontiers() == [[] for _ in range(graph.num_locations)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@examples(60)
@given(data=st.data())
def test_strict_rejection_changes_nothing(strategy, data):
    graph = data.draw(graphs)
    eng = BatchedTracker(graph, strict=True, strategy=strategy)
    ref = ImpliedFrontierTracker(graph, strict=True)
    check_strict_rejection(eng, ref, data.draw(batch_sequences(graph)))


@examples(40)
@given(data=st.data())
def test_strategies_give_identical_changes(data):
    graph = data.draw(graphs)
    a = BatchedTracker(graph, strategy="edgewise")
    b = BatchedTracker(graph, strategy="closure")
    for loc, ts, diff in data.draw(batch_sequences(graph)):
        ca, cb = a.update_arrays(loc, ts, diff), b.update_arrays(loc, ts, diff)
        for x, y in zip(ca, cb):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_zero_advance_cycle_drains(strategy):
    """Both strategies compute the least fixed point: nothing stays alive on the cycle."""
    graph, head = zero_cycle_graph()
    eng = BatchedTracker(graph, strategy=strategy)
    entry = graph.target(head, 0)
    eng.update([entry], [(2, 5)], [1])
    assert eng.frontier(graph.target(head, 1)) == [(2, 5)]
    eng.update([entry], [(2, 5)], [-1])
    assert eng.frontiers() == [[] for _ in range(graph.num_locations)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_example_workload(strategy):
    w = read_workload(EXAMPLE_PATH)
    eng, ref = BatchedTracker(w.graph, strategy=strategy), ImpliedFrontierTracker(w.graph)
    for b in w.batches:
        assert eng.update(b.loc, b.ts, b.diff) == ref.update(b.loc, b.ts, b.diff)
        assert eng.frontiers() == ref.frontiers()


def test_large_batch_consolidates_without_python_rows():
    """A 200k-row batch of numpy arrays, half of it cancelling, equals the reference."""
    w = read_workload(EXAMPLE_PATH)
    g = w.graph
    rng = np.random.default_rng(7)
    n = 100_000
    loc = rng.integers(0, g.num_locations, n).astype(np.int32)
    ts = np.stack([rng.integers(0, 16, n), rng.integers(0, 64, n)], axis=1)
    diff = rng.integers(1, 4, n)
    eng, ref = BatchedTracker(g, strategy="edgewise"), ImpliedFrontierTracker(g)
    both = (np.concatenate([loc, loc]), np.concatenate([ts, ts]), np.concatenate([diff, -diff]))
    assert eng.update(*both) == []
    assert len(eng.counts) == 0
    eng.update(loc, ts, diff)
    ref.update(loc.tolist(), [tuple(r) for r in ts.tolist()], diff.tolist())
    assert eng.frontiers() == ref.frontiers()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_retraction_inside_a_loop_reaches_downstream(strategy):
    """Regression: when a wave restarts a loop from empty, the loop's old values must still be
    withdrawn downstream even if no member's recomputed value differs from empty."""
    from engine import GraphBuilder, Summary
    b = GraphBuilder(m=1)
    scope = b.add_operator(1, 1, depth=0)
    enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1])
    b.add_summary(enter, 0, 0, Summary.ingress(0))
    head = b.add_operator(2, 2, depth=1)
    for i in range(2):
        for o in range(2):
            b.add_summary(head, i, o, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1)
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0])
    b.add_summary(leave, 0, 0, Summary.egress(1))
    b.connect(scope, 0, enter, 0); b.connect(enter, 0, head, 0)
    b.connect(head, 0, fb, 0); b.connect(fb, 0, head, 1)
    b.connect(head, 1, leave, 0); b.connect(leave, 0, scope, 0)
    g = b.build()
    eng, ref = BatchedTracker(g, strategy=strategy), ImpliedFrontierTracker(g)
    for batch in ([g.target(fb, 0)], [(3, 4)], [1]), ([g.target(fb, 0)], [(3, 4)], [-1]):
        assert eng.update(*batch) == ref.update(*batch)
        assert eng.frontiers() == ref.frontiers()
    assert eng.frontier(g.target(scope, 0)) == []


@examples(60)
@given(data=st.data())
def test_naiad_view_and_could_result_in_equal_the_reference(data):
    """Batched precursor counts, Naiad's frontier, deliverability and could-result-in equal
    the reference NaiadTracker's."""
    from engine import NaiadTracker
    from strategies import timestamps
    graph = data.draw(graphs)
    eng, nv = BatchedTracker(graph, strategy="edgewise"), NaiadTracker(graph)
    L = graph.num_locations
    for loc, ts, diff in data.draw(batch_sequences(graph)):
        eng.update(loc, ts, diff)
        nv.update(loc, ts, diff)
        assert eng.active_frontier() == nv.active_frontier()
        q = data.draw(st.lists(st.integers(0, L - 1), max_size=4))
        q_ts = [data.draw(timestamps(graph.m, graph.depth(l))) for l in q]
        active = nv.counts.active()
        q_loc = q + [l for l, _ in active]
        q_ts = q_ts + [t for _, t in active]
        assert eng.precursor_counts(q_loc, q_ts).tolist() == [nv.precursor_count(l, t) for l, t in zip(q_loc, q_ts)]
        assert eng.may_deliver(q_loc, q_ts).tolist() == [nv.may_deliver(l, t) for l, t in zip(q_loc, q_ts)]
        l2 = data.draw(st.lists(st.integers(0, L - 1), min_size=len(q_loc), max_size=len(q_loc)))
        t2 = [data.draw(timestamps(graph.m, graph.depth(l))) for l in l2]
        assert eng.could_result_in(q_loc, q_ts, l2, t2).tolist() == nv.could_result_in(q_loc, q_ts, l2, t2)
