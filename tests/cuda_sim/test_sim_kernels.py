"""Every CUDA kernel of ``gpu_kernels`` on Numba's simulator equals its CPU twin.

Small inputs (the simulator costs about a millisecond per thread). Blocks of a few threads
(``tpb``) make the kernels' bounds checks and partial blocks run; the block-per-location
Pareto kernel runs with 1, 3 and 4 threads per block so that its cross-chunk phase runs.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
from engine.core.workload import example_graph
from gpu_kernels import _cuda
from strategies import batch_sequences, examples, random_graphs, structured_graphs

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=8))


def same(a):
    return a


def test_runs_on_the_simulator():
    assert _cuda.simulator()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keys", cc.KEYS)
def test_consolidate(seed, keys):
    rng = np.random.default_rng(seed)
    cc.check_consolidate(rng, same, np.asarray, n=int(rng.integers(1, 20)), keys=keys, tpb=3)


def test_consolidate_empty_and_cancelling():
    rng = np.random.default_rng(0)
    cc.check_consolidate(rng, same, np.asarray, n=0)
    loc = np.array([1, 1, 0], np.int32)
    ts = np.array([[2, 0], [2, 0], [0, 0]], np.int64)
    from gpu_kernels.intake import consolidate_cuda
    out = consolidate_cuda(loc, ts, np.array([3, -3, 0], np.int64))
    assert [len(a) for a in out] == [0, 0, 0]


# the device's run sums are differences of a wrapping scan (exact whenever the sum fits);
# the simulator computes them with NumPy scalars, which warn when they wrap
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_gh23_consolidation_sums_outside_int64_raise():
    """Issue 23, item 2: ``consolidate_cuda`` and ``intake_cuda`` (every key path; no guess,
    a guess, deferred) raise the CPU twin's ``SumOverflow`` for a sum outside int64 and sum
    exactly where only a partial sum leaves it."""
    cc.check_sum_overflow(np.random.default_rng(3), same, np.asarray, tpb=3)


@pytest.mark.parametrize("seed", range(6))
def test_merge_counts(seed):
    cc.check_merge_counts(np.random.default_rng(seed), same, np.asarray, tpb=2)


def test_merge_counts_overflow():
    cc.check_merge_overflow(same, np.asarray, tpb=2)


@pytest.mark.parametrize("m,W", [(1, 2), (2, 3)])
@pytest.mark.parametrize("threads", [1, 3])
def test_frontier_update(m, W, threads):
    cc.check_frontier_update(np.random.default_rng(7), same, np.asarray, m=m, W=W,
                             threads=threads)


@pytest.mark.parametrize("m,W", [(1, 2), (2, 3)])
def test_withdrawn_marks(m, W):
    """``frontier_fill`` marks the old ``F``'s withdrawn rows (``segment_withdrawn``, read by
    the closure gather's vote) exactly as the twin ``seed_withdrawn`` and their definition,
    over merges that retract rows (some row is marked)."""
    marked = cc.check_frontier_update(np.random.default_rng(11), same, np.asarray, m=m, W=W,
                                      L=4, threads=2, rounds=6, rows=10)
    assert marked > 0


@examples(30)
@given(data=st.data())
def test_frontier_changes(data):
    graph = data.draw(graphs)
    cc.check_frontier_changes(graph, data.draw(batch_sequences(graph, max_batches=3)), same,
                              np.asarray, tpb=2)


@examples(20)
@given(data=st.data())
def test_closure_step(data):
    """Two rows per thread and two threads per block send every frontier of more than four
    rows (and most of three or four) down the overflow path; batch after batch exercises the
    incremental and full recomputation."""
    graph = data.draw(graphs)
    batches = data.draw(batch_sequences(graph, max_batches=3))
    cc.check_closure_step(graph, batches, same, np.asarray, rows=2, threads=2, tpb=2)


@examples(6)
@given(data=st.data())
def test_closure_step_one_row_per_thread(data):
    graph = data.draw(graphs)
    batches = data.draw(batch_sequences(graph, max_batches=2))
    cc.check_closure_step(graph, batches, same, np.asarray, rows=1, threads=3)


@pytest.mark.parametrize("hit_rows", [0, 1, 8])
@pytest.mark.parametrize("case", ["fan_in", "unchanged_producer", "changed_producer",
                                  "two_hits"])
def test_gh24_vote_counts_equal_the_twin(case, hit_rows):
    """Issue 24, item 4: coop_gather's targets in full and incremental equal closure_vote's
    on the witness cases, with the vote's table of 0 (the rule before), 1 and 8 hit rows, and
    the refinement shows: b, whose withdrawn witness another entry still produces, is
    incremental once the table holds its hits."""
    import witness_cases as wc
    graph, a, c, b = wc.fan_in_graph()
    votes = cc.check_vote_counts(graph, getattr(wc, f"{case}_batches")(a, c), same, np.asarray,
                                 hit_rows=hit_rows, threads=2)
    if case in ("unchanged_producer", "changed_producer"):
        assert votes[-1][b] == (2 if hit_rows == 0 else 1)
    elif case == "two_hits":
        assert votes[-1][b] == (1 if hit_rows >= 2 else 2)


@examples(10)
@given(data=st.data(), hit_rows=st.sampled_from([1, 8]))
def test_gh24_vote_counts_on_random_graphs(data, hit_rows):
    graph = data.draw(graphs)
    batches = data.draw(batch_sequences(graph, max_batches=3))
    cc.check_vote_counts(graph, batches, same, np.asarray, hit_rows=hit_rows, threads=3)


psi_graphs = st.one_of(random_graphs(max_ops=3, max_depth=2, max_antichain=2),
                       structured_graphs(max_ops=6, m=1), structured_graphs(max_ops=6, m=2))


@examples(25)
@given(graph=psi_graphs)
def test_closure_psi(graph):
    """Device count and fill passes equal compute_psi (both layouts), thread blocks of 2."""
    cc.check_closure_psi(graph, same, np.asarray, tpb=2)


@pytest.mark.parametrize("graph", [example_graph(), cc.chain_graph(4)], ids=["example", "loop"])
def test_closure_psi_overflow_and_retry(graph):
    cc.check_closure_psi_overflow(graph, same, np.asarray, tpb=3)


def test_closure_psi_fill_is_a_thread_per_pair():
    """A partial launch of the fill kernels writes single pairs, not a source's whole row."""
    cc.check_psi_fill_thread_per_pair(cc.chain_graph(4), same, np.asarray)


@examples(10)
@given(graph=psi_graphs)
def test_closure_psi_retry_on_random_graphs(graph):
    """One row per source to start with: every source with a materialised row settles again."""
    cc.check_closure_psi(graph, same, np.asarray, rows=1)


@examples(30)
@given(data=st.data())
def test_precursors_and_could_result_in(data):
    graph = data.draw(graphs)
    batches = data.draw(batch_sequences(graph, max_batches=3))
    cc.check_precursors(graph, batches, np.random.default_rng(5), same, np.asarray, tpb=3)
