"""The closure gather's incremental rule (issue 10, item 1) and its only-producer refinement
(issue 24, item 4): a target is recomputed from all its sources only where a row of its old
frontier lost every producer -- a changed source withdrew a *witness* of it
(``gpu_kernels.propagate.witness_row``) and no entry's new candidate is below it
(``cover_hits``), an *orphan*; everywhere else its new implied frontier is the frontier of its
old one plus the candidates of its changed sources' new ``F``.

Checked here on the CPU (the scalar cores the device kernel runs, and its twin
``closure_vote``) against the implied frontiers of a cpu-backend replay, which equal the
reference tracker's (tests/engine/trackers/test_trackers.py); the device kernel itself runs under the
simulator (tests/cuda_sim/test_sim_backend.py, tests/cuda_sim/test_sim_kernels.py)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
import witness_cases as wc
from engine.batched.psi import compute_psi
from gpu_kernels import pareto, propagate
from gpu_kernels.summary_rows import apply_into
from strategies import batch_sequences, examples, random_graphs, structured_graphs

#: A table no target outgrows: the vote without its cap.
UNBOUNDED = 1 << 20


def _target_major(graph):
    psi = compute_psi(graph, layout="ragged")
    sums = psi.sums.reshape(-1, psi.sums.shape[-1])
    return propagate.target_major(psi.L, 0, np.zeros((1, 1), np.uint8), psi.t_ptr, psi.t_src,
                                  psi.t_pair, psi.sum_ptr, sums)


def _incremental(l2, m, tm, mode, F_ptr, F_ts, I_ptr, I_ts):
    """frontier(old I(l2) + s(t) for every entry (l1, s) of l2 with a changed l1, t in its
    new F), sorted: what the gather computes for a target it updates incrementally."""
    tm_ptr, tm_src, tm_sum = tm
    W = F_ts.shape[1]
    buf = np.empty((1 + I_ptr[l2 + 1] - I_ptr[l2] + (tm_ptr[l2 + 1] - tm_ptr[l2]) * len(F_ts), W),
                   np.int64)
    n = 0
    for x in range(I_ptr[l2], I_ptr[l2 + 1]):
        n = pareto.antichain_insert(buf, n, I_ts[x], m, W)
    cand = np.empty(W, np.int64)
    for e in range(tm_ptr[l2], tm_ptr[l2 + 1]):
        l1 = tm_src[e]
        if mode[l1] == 0:
            continue
        for f in range(F_ptr[l1], F_ptr[l1 + 1]):
            apply_into(tm_sum[e], F_ts[f], cand, m, W - m)
            n = pareto.antichain_insert(buf, n, cand, m, W)
    return sorted(map(tuple, buf[:n].tolist()))


def _vote(m, tm, step, hit_rows):
    (G_ptr, G_ts, I_ptr, I_ts), (F_ptr, F_ts, _, _), seeds = step
    mode, gone = pareto.seed_withdrawn(len(I_ptr) - 1, seeds, G_ptr, G_ts, F_ptr, F_ts, m)
    return propagate.closure_vote(m, *tm, mode, gone, G_ptr, G_ts, F_ptr, F_ts, I_ptr, I_ts,
                                  hit_rows)


def _check_rule(graph, batches, hit_rows=propagate.HIT_ROWS):
    """For every step of a replay: the vote is non-zero exactly where a source changed; every
    target voted incremental gets its true new frontier from the incremental rule; the
    targets in full are among those of the rule before (``hit_rows=0``: every withdrawn
    witness); and without the table's cap the vote is optimal -- full exactly where the
    incremental rule would be wrong. Returns the votes of all steps."""
    ga, steps = cc._steps(graph, batches)
    tm = _target_major(graph)
    votes = []
    for step in steps:
        (G_ptr, G_ts, I_ptr, I_ts), (F_ptr, F_ts, J_ptr, J_ts), seeds = step
        mode, _ = pareto.seed_withdrawn(ga.L, seeds, G_ptr, G_ts, F_ptr, F_ts, ga.m)
        vote = _vote(ga.m, tm, step, hit_rows)
        before = _vote(ga.m, tm, step, 0)
        exact = _vote(ga.m, tm, step, UNBOUNDED)
        votes.append(vote)
        for l2 in range(ga.L):
            new = sorted(map(tuple, J_ts[J_ptr[l2]:J_ptr[l2 + 1]].tolist()))
            reached = any(mode[s] for s in tm[1][tm[0][l2]:tm[0][l2 + 1]])
            assert (vote[l2] > 0) == reached
            assert (before[l2] > 0) == reached and (exact[l2] > 0) == reached
            if vote[l2] == 0:
                assert new == sorted(map(tuple, I_ts[I_ptr[l2]:I_ptr[l2 + 1]].tolist()))
                continue
            right = _incremental(l2, ga.m, tm, mode, F_ptr, F_ts, I_ptr, I_ts) == new
            if vote[l2] == 1:
                assert right, l2
            assert vote[l2] <= before[l2], l2  # refined full-set within the old full-set
            assert exact[l2] <= vote[l2], l2  # a bigger table only removes full targets
            assert (exact[l2] == 2) == (not right), l2
    return votes


@examples(60)
@given(data=st.data())
def test_incremental_rule_gives_the_true_frontier(data):
    graph = data.draw(st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=10)))
    hit_rows = data.draw(st.sampled_from([0, 1, 2, propagate.HIT_ROWS]))
    _check_rule(graph, data.draw(batch_sequences(graph, max_batches=5)), hit_rows)


def _last_votes(batches, hit_rows=propagate.HIT_ROWS):
    graph, a, c, b = wc.fan_in_graph()
    votes = _check_rule(graph, batches(a, c), hit_rows)
    return votes[-1].tolist(), (a, c, b)


def test_non_witness_retraction_is_incremental_and_a_witness_is_not():
    graph, a, c, b = wc.fan_in_graph()
    votes = _check_rule(graph, wc.fan_in_batches(a, c))
    # step 0 is the whole state from nothing (every location grew), then the three batches
    assert [v.tolist() for v in votes[2:]] == [
        [2 if loc == a else 1 if loc == b else 0 for loc in range(3)],
        [2 if loc in (b, c) else 0 for loc in range(3)]]


@pytest.mark.parametrize("batches", [wc.unchanged_producer_batches, wc.changed_producer_batches],
                         ids=["unchanged", "changed"])
def test_gh24_other_producer_keeps_the_target_incremental(batches):
    """Issue 24, item 4: a withdrawn witness of I(b) whose row another entry still produces
    -- the unchanged ``a`` exactly, or the changed ``a``'s new candidate below it -- leaves b
    incremental, where the rule before recomputed it in full; the frontiers are exact
    (``_check_rule``)."""
    got, (a, c, b) = _last_votes(batches)
    before, _ = _last_votes(batches, 0)
    grown = batches is wc.changed_producer_batches
    assert got == [2 if loc == c else 1 if loc == b or (grown and loc == a) else 0
                   for loc in range(3)]
    assert before[b] == 2


def test_gh24_more_hits_than_the_table_go_full():
    got, (a, c, b) = _last_votes(wc.two_hits_batches, 2)
    assert got[b] == 1 and got[c] == 2
    got, _ = _last_votes(wc.two_hits_batches, 1)
    assert got[b] == 2


def test_gh24_new_frontiers_of_the_producer_cases():
    graph, a, c, b = wc.fan_in_graph()
    for batches, want in [(wc.unchanged_producer_batches, [[0, 0]]),
                          (wc.changed_producer_batches, [[0, 5], [1, 0]]),
                          (wc.two_hits_batches, [[0, 3], [3, 0]])]:
        ga, steps = cc._steps(graph, batches(a, c))
        _, (_, _, J_ptr, J_ts), _ = steps[-1]
        assert J_ts[J_ptr[b]:J_ptr[b + 1]].tolist() == want


def test_witness_hit_is_needed():
    """The negative control: when (0,0) leaves ``c``, the incremental rule would keep (0,0) at
    ``b`` -- wrong, the true I(b) is {(5,0)}; witness_hit sees the withdrawn witness and no
    entry's new candidate covers it (cover_hits), so b is recomputed in full."""
    graph, a, c, b = wc.fan_in_graph()
    ga, steps = cc._steps(graph, wc.fan_in_batches(a, c))
    (G_ptr, G_ts, I_ptr, I_ts), (F_ptr, F_ts, J_ptr, J_ts), seeds = steps[-1]
    mode, gone = pareto.seed_withdrawn(ga.L, seeds, G_ptr, G_ts, F_ptr, F_ts, ga.m)
    assert mode[c] == 2
    assert gone[G_ptr[c]:G_ptr[c + 1]].any() and not gone[G_ptr[a]:G_ptr[a + 1]].any()
    tm = _target_major(graph)
    assert _incremental(b, ga.m, tm, mode, F_ptr, F_ts, I_ptr, I_ts) == [(0, 0)]
    assert J_ts[J_ptr[b]:J_ptr[b + 1]].tolist() == [[5, 0]]
    e = next(e for e in range(tm[0][b], tm[0][b + 1]) if tm[1][e] == c)
    cand = np.empty(2, np.int64)
    assert propagate.witness_hit(tm[2][e], c, 2, 2, G_ptr, G_ts, gone, I_ts, I_ptr[b],
                                 I_ptr[b + 1], cand)
    hits = np.array([I_ptr[b]], np.int64)  # I(b) = {(0,0)}: the hit row
    covered = np.zeros(1, np.uint8)
    for e in range(tm[0][b], tm[0][b + 1]):
        propagate.cover_hits(tm[2][e], tm[1][e], 2, 2, F_ptr, F_ts, I_ts, hits, 1, covered,
                             cand)
    assert propagate.uncovered(covered, 1) == 1
    e = next(e for e in range(tm[0][b], tm[0][b + 1]) if tm[1][e] == a)
    assert not propagate.witness_hit(tm[2][e], a, 2, 2, G_ptr, G_ts, gone, I_ts,
                                     I_ptr[b], I_ptr[b + 1], cand)
