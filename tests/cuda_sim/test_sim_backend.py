"""The simulated cuda backend: ``BatchedTracker`` on ``CudaKernels(simulated=True)`` -- NumPy
standing in for CuPy, every kernel on Numba's simulator -- equals the reference tracker on
random graphs and batches, and emits exactly the cpu backend's change arrays. So every line
of the backend's orchestration runs before it ever meets a GPU."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
from engine import ImpliedFrontierTracker
from engine.batched.cuda import CudaKernels, usable_device
from engine.core.workload import EXAMPLE_PATH, read_workload
from strategies import batch_sequences, examples, random_graphs, structured_graphs
from tracker_cases import check_strict_rejection, zero_cycle_graph

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=12))
KERNELS = CudaKernels(simulated=True)


def test_simulated_backend_is_no_device():
    assert KERNELS.on_device and KERNELS.xp is np and "simulated" in repr(KERNELS)
    ok, why = usable_device()
    assert not ok and "NUMBA_ENABLE_CUDASIM" in why


@examples(20)
@given(graph=st.one_of(random_graphs(max_ops=3, max_depth=2), structured_graphs(max_ops=8)))
def test_compute_psi_on_the_simulated_device(graph):
    """``compute_psi(..., kernels=CudaKernels(simulated=True))``: the host's arrays, the
    device copies in the gather's form, the host's antichain overflow error."""
    cc.check_compute_psi_device(graph, KERNELS)


def test_compute_psi_on_the_device_with_cycles():
    cc.check_compute_psi_device(cc.chain_graph(5), KERNELS)
    cc.check_compute_psi_device(zero_cycle_graph()[0], KERNELS)


def test_psi_launches_do_not_grow_with_the_longest_path():
    cc.check_psi_launches_do_not_grow(KERNELS)


@examples(60)
@given(data=st.data())
def test_simulated_cuda_equals_reference_edgewise(data):
    graph = data.draw(graphs)
    cc.check_backend_replay(graph, data.draw(batch_sequences(graph, max_batches=4)), KERNELS,
                            "edgewise")


@pytest.mark.parametrize("strategy", ["closure-dense", "closure-ragged"])
@examples(15)
@given(data=st.data())
def test_simulated_cuda_equals_reference_closure(strategy, data):
    """Fewer examples than edge-wise: every batch simulates a block for every location (the
    two took 4 minutes of the suite's simulator run at 25 examples each);
    ``tests/cuda_sim/test_sim_kernels.py`` checks the closure step
    and the vote on their own, ``tests/engine/batched/test_closure_witness.py`` the vote's
    CPU twin against the true frontiers, and the backend ran on an H200 against the
    reference (``tests/engine/batched/test_cuda_gpu.py``)."""
    graph = data.draw(graphs)
    cc.check_backend_replay(graph, data.draw(batch_sequences(graph, max_batches=4)), KERNELS,
                            strategy)


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
@examples(20)
@given(data=st.data())
def test_strict_rejection_changes_nothing(strategy, data):
    graph = data.draw(graphs)
    eng = cc.make_tracker(graph, KERNELS, strategy, strict=True)
    ref = ImpliedFrontierTracker(graph, strict=True)
    check_strict_rejection(eng, ref, data.draw(batch_sequences(graph, max_batches=3)))


@pytest.mark.parametrize("strict", [False, True])
def test_count_overflow_is_rejected_like_the_reference(strict):
    """The deferred merge check raises the reference's CountOverflowError, state unchanged."""
    cc.check_count_overflow(lambda g: cc.make_tracker(g, KERNELS, "edgewise", strict=strict),
                            strict)


@pytest.mark.parametrize("strict", [False, True])
def test_gh23_a_batch_summing_outside_int64_is_rejected_like_the_reference(strict):
    """Issue 23, item 2: the simulated cuda backend (device intake, deferred after the first
    batch) rejects a batch whose changes to one pointstamp sum outside int64, as the
    reference does, and changes nothing."""
    cc.check_batch_sum_overflow(lambda g: cc.make_tracker(g, KERNELS, "edgewise",
                                                          strict=strict), strict)


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
def test_example_workload(strategy):
    w = read_workload(EXAMPLE_PATH)
    cc.check_backend_replay(w.graph, [(b.loc, b.ts, b.diff) for b in w.batches], KERNELS,
                            strategy)


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
def test_zero_advance_cycle_drains(strategy):
    graph, head = zero_cycle_graph()
    eng = cc.make_tracker(graph, KERNELS, strategy)
    entry = graph.target(head, 0)
    eng.update([entry], [(2, 5)], [1])
    assert eng.frontier(graph.target(head, 1)) == [(2, 5)]
    eng.update([entry], [(2, 5)], [-1])
    assert eng.frontiers() == [[] for _ in range(graph.num_locations)]


def test_larger_batch_with_duplicates():
    """A 400-row batch of repeated rows, then its cancellation, on the example graph."""
    g = read_workload(EXAMPLE_PATH).graph
    rng = np.random.default_rng(7)
    n = 200
    depth = np.array([g.depth(l) for l in range(g.num_locations)])
    loc = rng.integers(0, g.num_locations, n).astype(np.int32)
    ts = np.stack([rng.integers(0, 4, n), rng.integers(0, 4, n) * (depth[loc] > 0)], axis=1)
    loc, ts = np.concatenate([loc, loc]), np.concatenate([ts, ts])
    diff = rng.integers(1, 3, 2 * n)
    rows = [tuple(r[:g.m + depth[l]]) for l, r in zip(loc.tolist(), ts.tolist())]
    eng, ref = cc.make_tracker(g, KERNELS, "edgewise"), ImpliedFrontierTracker(g)
    assert eng.update(loc, ts, diff) == ref.update(loc.tolist(), rows, diff.tolist())
    assert eng.frontiers() == ref.frontiers()
    assert eng.update(loc, ts, -diff) == ref.update(loc.tolist(), rows, (-diff).tolist())
    assert len(eng.counts) == 0 and eng.frontiers() == ref.frontiers()


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
def test_synthetic_benchmark_workload(strategy):
    """The benchmark's workload (nested loops, diamonds; load, churn, drain) at N = 12,
    B = 60: the change arrays equal the cpu backend's batch by batch."""
    import sys
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(12, 3)
    graph = build_graph(spec)
    sim = cc.make_tracker(graph, KERNELS, strategy)
    cpu = cc.make_tracker(graph, None, strategy)
    for b in generate_batches(spec, 60, 3):
        arr = batch_columns(graph, b)
        for x, y in zip(cpu.update_arrays(*arr), sim.update_arrays(*arr)):
            np.testing.assert_array_equal(x, y)
    assert sim.frontiers() == cpu.frontiers() == [[] for _ in range(graph.num_locations)]


def test_bench_closure_on_the_simulated_backend():
    """``perf.bench_closure`` with ``--backend cuda`` (run here on the simulated backend):
    both variants timed, their device counts recorded, the table drawn."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # perf/ is no package
    from perf.bench_closure import format_table, run_benchmark
    res = run_benchmark([3, 6], repeat=1, backend="cuda", kernels=KERNELS, warmup_size=3,
                        log=lambda *a, **k: None)
    assert res["parameters"]["backend"] == "cuda" and res["parameters"]["simulated"]
    assert "NUMBA_ENABLE_CUDASIM" in res["machine"]["cuda_device"]
    for s in res["sizes"]:
        assert [r["variant"] for r in res["runs"] if r["n"] == s["n"]] == ["compute_psi",
                                                                          "device_build"]
        assert len(s["device_build_s"]) == 1 and s["device_build"]["median"] > 0
        for counts in s["device_counts"].values():
            assert counts["launches"] == 2 and counts["syncs"] == 1
    assert "device ms" in format_table(res)


@pytest.mark.parametrize("strategy", ["closure", "edgewise"])
def test_batch_launches_and_syncs_do_not_grow(strategy):
    """Issue 10, item 3: a churn batch's launches and synchronisations are a constant of the
    design, the same for 8 and 22 locations and for 30 and 300 rows."""
    from perf.workloads import build_graph, generate_graph
    graphs = [build_graph(generate_graph(n, 1)) for n in (3, 10)]
    cc.check_batch_counts(KERNELS, strategy, graphs, [30, 300], np.random.default_rng(11))


@pytest.mark.parametrize("strategy", ["closure", "edgewise"])
def test_deferred_checks_raise_and_redo(strategy):
    cc.check_deferred_checks(KERNELS, strategy, np.random.default_rng(12))


def test_non_witness_retraction_is_not_recomputed_in_full():
    """Issue 10, item 1, on the simulated backend: retracting an ``F`` row whose candidates
    witness nothing updates the target incrementally (``last_timing["targets_incremental"]``);
    retracting the only witness recomputes it in full; the frontiers equal the reference's."""
    from witness_cases import fan_in_batches, fan_in_graph
    graph, a, c, b = fan_in_graph()
    eng = cc.make_tracker(graph, KERNELS, "closure")
    ref = ImpliedFrontierTracker(graph)
    got = []
    for loc, ts, diff in fan_in_batches(a, c):
        assert eng.update(loc, ts, diff) == ref.update(loc, ts, diff)
        assert eng.frontiers() == ref.frontiers()
        t = eng.last_timing
        got.append((t["targets_full"], t["targets_incremental"]))
    # all three grew from nothing; a's retraction: a in full, b incremental; c's: b, c in full
    assert got == [(0, 3), (1, 1), (2, 0)]


@pytest.mark.parametrize("case", ["unchanged_producer", "changed_producer"])
def test_gh24_withdrawn_witness_with_another_producer_is_incremental(case):
    """Issue 24, item 4, on the simulated backend: (0,0) or (1,1) leaves ``c``, a witness of
    I(b), but ``a`` still produces it (unchanged) or, changed, a row below it: b updates
    incrementally, only ``c`` is recomputed in full; the frontiers equal the reference's."""
    import witness_cases as wc
    graph, a, c, b = wc.fan_in_graph()
    eng = cc.make_tracker(graph, KERNELS, "closure")
    ref = ImpliedFrontierTracker(graph)
    got = []
    for loc, ts, diff in getattr(wc, f"{case}_batches")(a, c):
        assert eng.update(loc, ts, diff) == ref.update(loc, ts, diff)
        assert eng.frontiers() == ref.frontiers()
        t = eng.last_timing
        got.append((t["targets_full"], t["targets_incremental"]))
    # the rule before: (2, 0) and (2, 1) -- b in full too
    assert got == [(0, 3), (1, 1) if case == "unchanged_producer" else (1, 2)]


def test_gh24_closure_rows_grow_until_no_batch_overflows():
    """Issue 24, measured on an H200: with 8 rows per thread, 408 targets of the N = 1000
    churn batch overflowed into the serial overflow path (114 ms a batch). The backend now
    starts the rows above ``Psi``'s largest antichain and doubles them after a batch that
    overflowed. Forced down to 1 row, the first batches overflow
    (``last_timing["targets_overflowed"]``), the rows grow, and a later batch runs without an
    overflow; every frontier equals the reference's on the way."""
    from engine.batched.tracker import BatchedTracker
    from gpu_kernels.propagate import COOP_ROWS
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(3, 1)
    graph = build_graph(spec)
    kernels = CudaKernels(simulated=True)
    eng = BatchedTracker(graph, strategy="closure", kernels=kernels)
    start = kernels.closure_rows(eng.psi)
    assert start >= COOP_ROWS and start > eng.psi.max_antichain and start & (start - 1) == 0
    kernels._coop_rows[id(eng.psi)] = 1  # too few: every wide antichain overflows
    ref = ImpliedFrontierTracker(graph)
    seen = []
    for batch in generate_batches(spec, 60, 6):
        loc, ts, diff = batch_columns(graph, batch)
        eng.update_arrays(loc, ts, diff)
        ref.update(loc.tolist(), [tuple(r) for r in ts.tolist()], diff.tolist())
        assert eng.frontiers() == ref.frontiers()
        seen.append((kernels.closure_rows(eng.psi), eng.last_timing["targets_overflowed"]))
    overflowed = [o for _, o in seen]
    rows = [r for r, _ in seen]
    assert overflowed[0] > 0 and rows[0] == 2      # the first batch overflowed: 1 -> 2 rows
    assert rows == sorted(rows)                     # rows only grow ...
    assert all(b == 2 * a for (a, o), (b, _) in zip(seen, seen[1:]) if o > 0 and b != a)
    assert overflowed[-1] == 0                      # ... until a batch fits
