"""The three trackers agree (docs/semantics.md 2.6): implied frontiers from the definition, local
propagation (the verified paper's theorem: its converged frontiers are the implied ones) and
Naiad's occurrence/precursor counts."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine import (GraphBuilder, ImpliedFrontierTracker, NaiadTracker, NegativeCountError,
                    PropagationTracker, Summary, closure, could_result_in, implied_frontier)
from engine.core.antichain import frontier
from engine.core.counts import PointstampCounts

from strategies import examples, any_graphs, batch_sequences, random_graphs, structured_graphs, timestamps
from tracker_cases import replay_changes, zero_cycle_graph

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=10))


@examples(150)
@given(st.data())
def test_propagation_converges_to_the_implied_frontier(data):
    """The verified paper's theorem, on random graphs and batches with negative counts."""
    graph = data.draw(graphs)
    psi = closure(graph)
    ref = ImpliedFrontierTracker(graph, psi=psi)
    prop = PropagationTracker(graph)
    for loc, ts, diff in data.draw(batch_sequences(graph)):
        before = ref.frontiers()
        c_ref = ref.update(loc, ts, diff)
        c_prop = prop.update(loc, ts, diff)
        assert prop.frontiers() == ref.frontiers()
        assert c_prop == c_ref
        assert replay_changes(before, c_ref) == ref.frontiers()
        # the reference is the definition, recomputed from scratch
        for l in range(graph.num_locations):
            assert ref.frontier(l) == implied_frontier(graph, psi, ref.counts, l)
        # implications hold positive counts only (an invariant of the algorithm)
        assert all(c > 0 for imp in prop.imp for c in imp.values())


@examples(100)
@given(st.data())
def test_numpy_batches_equal_tuple_batches(data):
    """The padded array layout ``int64[n, m+K]`` gives the same result as tuples."""
    graph = data.draw(graphs)
    a, b = ImpliedFrontierTracker(graph), PropagationTracker(graph)
    width = graph.m + graph.max_depth
    for loc, ts, diff in data.draw(batch_sequences(graph, padded=False)):
        arr = np.zeros((len(ts), width), dtype=np.int64)
        for i, t in enumerate(ts):
            arr[i, :len(t)] = t
        assert a.update(loc, ts, diff) == b.update(np.asarray(loc, dtype=np.int32), arr,
                                                   np.asarray(diff, dtype=np.int64))


def brute_precursors(graph, psi, active, p):
    return sum(1 for q in active if q != p and could_result_in(psi, graph, q[0], q[1], p[0], p[1]))


@examples(120)
@given(st.data())
def test_naiad_view_agrees_with_could_result_in_and_implied_frontiers(data):
    graph = data.draw(graphs)
    psi = closure(graph)
    nv = NaiadTracker(graph, psi=psi)
    for loc, ts, diff in data.draw(batch_sequences(graph)):
        nv.update(loc, ts, diff)
        active = nv.counts.active()
        for p in active:
            assert nv.precursor_count(*p) == brute_precursors(graph, psi, active, p)
        assert nv.active_frontier() == [p for p in active if brute_precursors(graph, psi, active, p) == 0]
        # notification queries at random pointstamps, active or not
        queries = active + [(l, data.draw(timestamps(graph.m, graph.depth(l))))
                            for l in data.draw(st.lists(st.integers(0, graph.num_locations - 1),
                                                        max_size=3))]
        for v, t in queries:
            deliverable = nv.may_deliver(v, t)
            assert deliverable == (brute_precursors(graph, psi, active, (v, t)) == 0)
            # ... which is: nothing in the implied frontier at v of the *other* pointstamps
            # is at or before t
            others = PointstampCounts(graph)
            rows = [p for p in active if p != (v, t)]
            others.commit(others.stage([l for l, _ in rows], [s for _, s in rows], [1] * len(rows)))
            implied = implied_frontier(graph, psi, others, v)
            assert deliverable == (not any(_le(u, t, graph.m) for u in implied))


def _le(a, b, m):
    from engine.core.timestamp import le
    return le(a, b, m)


@examples(60)
@given(st.data())
def test_batched_could_result_in_matches_pointwise(data):
    graph = data.draw(any_graphs(max_ops=3))
    psi = closure(graph)
    nv = NaiadTracker(graph, psi=psi)
    L = graph.num_locations
    rows = data.draw(st.lists(st.tuples(st.integers(0, L - 1), st.integers(0, L - 1)), max_size=8))
    l1 = [a for a, _ in rows]
    l2 = [b for _, b in rows]
    t1 = [data.draw(timestamps(graph.m, graph.depth(a))) for a in l1]
    t2 = [data.draw(timestamps(graph.m, graph.depth(b))) for b in l2]
    expect = [any(_le(s.apply(x), y, graph.m) for s in psi[a].get(b, ()))
              for a, x, b, y in zip(l1, t1, l2, t2)]
    assert nv.could_result_in(l1, t1, l2, t2) == expect


@examples(80)
@given(st.data())
def test_strict_mode_rejects_atomically(data):
    """A strict tracker skips exactly the batches that would leave a negative count, and
    then equals a lenient tracker fed only the accepted batches."""
    graph = data.draw(graphs)
    strict_trackers = [ImpliedFrontierTracker(graph, strict=True),
                       PropagationTracker(graph, strict=True)]
    lenient = ImpliedFrontierTracker(graph)
    for loc, ts, diff in data.draw(batch_sequences(graph)):
        probe = PointstampCounts(graph)
        probe.commit(probe.stage(*_current(lenient)))
        delta = probe.stage(loc, ts, diff)
        would_go_negative = any(probe.count(*p) + d < 0 for p, d in delta.items())
        for tr in strict_trackers:
            before = (sorted(tr.counts.items()), tr.frontiers())
            if would_go_negative:
                with pytest.raises(NegativeCountError):
                    tr.update(loc, ts, diff)
                assert (sorted(tr.counts.items()), tr.frontiers()) == before
            else:
                tr.update(loc, ts, diff)
        if not would_go_negative:
            lenient.update(loc, ts, diff)
        for tr in strict_trackers:
            assert tr.frontiers() == lenient.frontiers()
            assert sorted(tr.counts.items()) == sorted(lenient.counts.items())


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("backend", ["cpu", "reference", "timely"])
def test_count_overflow_is_a_named_error_and_changes_nothing(backend, strict):
    """A count taken past int64 (INT64_MAX, then +1; INT64_MIN, then -1) raises
    CountOverflowError on every host backend, as on the reference; nothing changes."""
    from cuda_cases import check_count_overflow
    from engine import make_tracker

    check_count_overflow(lambda g: make_tracker(g, backend, strict=strict), strict)


def _current(tracker):
    items = list(tracker.counts.items())
    return [l for (l, _), _ in items], [t for (_, t), _ in items], [c for _, c in items]


def test_zero_advance_cycle_drains_with_psi_but_not_with_local_propagation():
    """docs/semantics.md 2.4: the Psi-based implied frontier drains to empty once the pointstamps
    are gone, while edge-by-edge propagation keeps the cycle's implications alive."""
    graph, head = zero_cycle_graph()
    entry = graph.target(head, 0)
    ref, prop, nv = ImpliedFrontierTracker(graph), PropagationTracker(graph), NaiadTracker(graph)
    for tr in (ref, prop, nv):
        tr.update([entry], [(2, 5)], [1])
    assert ref.frontiers() == prop.frontiers()
    assert ref.frontier(graph.target(head, 1)) == [(2, 5)]
    for tr in (ref, prop, nv):
        tr.update([entry], [(2, 5)], [-1])
    assert ref.frontiers() == [[] for _ in range(graph.num_locations)]
    assert prop.frontier(graph.target(head, 1)) == [(2, 5)]   # kept alive by the cycle
    assert nv.active_frontier() == []
    # could-result-in is not antisymmetric on such a cycle
    a, b = (graph.target(head, 1), (1, 1)), (graph.source(head, 0), (1, 1))
    assert nv.could_result_in([a[0], b[0]], [a[1], b[1]], [b[0], a[0]], [b[1], a[1]]) == [True, True]


def test_propagation_handles_nested_loop_reentry():
    """A retraction inside an inner loop is processed before the additions it would chase."""
    b = GraphBuilder(m=1)
    scope = b.add_operator(1, 1, depth=0)
    enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1])
    b.add_summary(enter, 0, 0, Summary.ingress(0))
    head = b.add_operator(2, 2, depth=1)
    for i in range(2):
        for o in range(2):
            b.add_summary(head, i, o, Summary.identity(1))
    enter2 = b.add_operator(1, 1, input_depths=[1], output_depths=[2])
    b.add_summary(enter2, 0, 0, Summary.ingress(1))
    inner = b.add_operator(2, 2, depth=2)
    for i in range(2):
        for o in range(2):
            b.add_summary(inner, i, o, Summary.identity(2))
    fb2 = b.add_operator(1, 1, depth=2)
    b.add_summary(fb2, 0, 0, Summary.feedback(2))
    leave2 = b.add_operator(1, 1, input_depths=[2], output_depths=[1])
    b.add_summary(leave2, 0, 0, Summary.egress(2))
    fb = b.add_operator(1, 1, depth=1)
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0])
    b.add_summary(leave, 0, 0, Summary.egress(1))
    b.connect(scope, 0, enter, 0); b.connect(enter, 0, head, 0)
    b.connect(head, 0, enter2, 0); b.connect(enter2, 0, inner, 0)
    b.connect(inner, 0, fb2, 0); b.connect(fb2, 0, inner, 1)
    b.connect(inner, 1, leave2, 0); b.connect(leave2, 0, fb, 0); b.connect(fb, 0, head, 1)
    b.connect(head, 1, leave, 0); b.connect(leave, 0, scope, 0)
    g = b.build()
    ref, prop = ImpliedFrontierTracker(g), PropagationTracker(g)
    steps = [([g.source(scope, 0)], [(0,)], [1]),
             ([g.target(inner, 1)], [(0, 2, 57)], [1]),
             ([g.source(scope, 0)], [(0,)], [-1]),
             ([g.target(inner, 1), g.source(fb, 0)], [(0, 2, 57), (0, 3)], [-1, 1]),
             ([g.source(fb, 0)], [(0, 3)], [-1])]
    for batch in steps:
        assert prop.update(*batch) == ref.update(*batch)
        assert prop.frontiers() == ref.frontiers()
    assert ref.frontier(g.target(head, 0)) == []
    assert frontier({}, 1) == []


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("backend", ["cpu", "reference", "timely"])
def test_gh23_a_batch_summing_outside_int64_is_rejected_and_changes_nothing(backend, strict):
    """Issue 23, item 2: two rows of 2**62 at one pointstamp in one batch wrapped to a count
    of -2**63 on the cpu backend (the pointstamp vanished from the frontier; strict mode
    called it a negative count). Every backend now raises the reference's
    CountOverflowError, with the same message, and changes nothing."""
    from cuda_cases import check_batch_sum_overflow
    from engine import make_tracker

    check_batch_sum_overflow(lambda g: make_tracker(g, backend, strict=strict), strict)
