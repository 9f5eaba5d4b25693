"""The real cuda backend on a GPU: every CUDA kernel against its CPU twin, and the backend
against the reference tracker on random workloads and the replay example.

Every test is marked ``gpu``: ``tests/conftest.py`` skips them, with the reason, where no CUDA
device is usable. The check bodies are those the simulator runs (``cuda_cases.py``); here the
arrays are CuPy arrays and the kernels run at full block size."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
from engine import Backend, ImpliedFrontierTracker
from engine.core.workload import EXAMPLE_PATH, read_workload
from strategies import batch_sequences, examples, random_graphs, structured_graphs

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # perf/ is not an installed package
    sys.path.insert(0, str(ROOT))

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=14))


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


@pytest.fixture(scope="module")
def kernels():
    from engine.batched.cuda import CudaKernels
    return CudaKernels()


# -- kernels --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n", [1, 300, 5000])
@pytest.mark.parametrize("keys", cc.KEYS)
def test_consolidate(cp, seed, n, keys):
    cc.check_consolidate(np.random.default_rng(seed), cp.asarray, cp.asnumpy, n=n, L=50,
                         keys=keys)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("r,n", [(0, 10), (2000, 500), (50, 3000)])
def test_merge_counts(cp, seed, r, n):
    cc.check_merge_counts(np.random.default_rng(seed), cp.asarray, cp.asnumpy, r=r, n=n, L=40)


def test_merge_counts_overflow(cp):
    cc.check_merge_overflow(cp.asarray, cp.asnumpy)


@pytest.mark.parametrize("strict", [False, True])
def test_count_overflow_on_the_cuda_backend(kernels, strict):
    cc.check_count_overflow(lambda g: cc.make_tracker(g, kernels, "edgewise", strict=strict),
                            strict)


def test_gh23_consolidation_sums_outside_int64_raise(cp):
    cc.check_sum_overflow(np.random.default_rng(3), cp.asarray, cp.asnumpy)


@pytest.mark.parametrize("strict", [False, True])
def test_gh23_batch_summing_outside_int64_on_the_cuda_backend(kernels, strict):
    cc.check_batch_sum_overflow(lambda g: cc.make_tracker(g, kernels, "edgewise",
                                                          strict=strict), strict)


@pytest.mark.parametrize("m,W", [(1, 2), (2, 3)])
@pytest.mark.parametrize("threads", [32, 64])
def test_frontier_update(cp, m, W, threads):
    cc.check_frontier_update(np.random.default_rng(7), cp.asarray, cp.asnumpy, m=m, W=W, L=40,
                             threads=threads)


@pytest.mark.parametrize("strategy", ["closure", "edgewise"])
def test_deferred_checks_raise_and_redo(kernels, strategy):
    cc.check_deferred_checks(kernels, strategy, np.random.default_rng(12))


@pytest.mark.parametrize("strategy", ["closure", "edgewise"])
def test_batch_launches_and_syncs_do_not_grow(kernels, strategy):
    from perf.workloads import build_graph, generate_graph
    graphs = [build_graph(generate_graph(n, 1)) for n in (10, 300)]
    cc.check_batch_counts(kernels, strategy, graphs, [1000, 100000], np.random.default_rng(11))


@examples(40)
@given(data=st.data())
def test_frontier_changes(cp, data):
    graph = data.draw(graphs)
    cc.check_frontier_changes(graph, data.draw(batch_sequences(graph)), cp.asarray, cp.asnumpy)


@pytest.mark.parametrize("rows", [1, 8])
@examples(40)
@given(data=st.data())
def test_closure_step(cp, rows, data):
    graph = data.draw(graphs)
    cc.check_closure_step(graph, data.draw(batch_sequences(graph)), cp.asarray, cp.asnumpy,
                          rows=rows)


@examples(30)
@given(graph=graphs)
def test_closure_psi(cp, graph):
    """Device count and fill passes of Psi equal compute_psi, both layouts."""
    cc.check_closure_psi(graph, cp.asarray, cp.asnumpy)


@examples(20)
@given(graph=graphs)
def test_closure_psi_retry(cp, graph):
    cc.check_closure_psi(graph, cp.asarray, cp.asnumpy, rows=1)


@examples(20)
@given(graph=graphs, rows=st.sampled_from([None, 1]), tpb=st.sampled_from([1, 4]))
def test_gh34_closure_psi_work_spaces_by_thread(cp, graph, rows, tpb):
    """Issue 34, item 3: work spaces by thread, small blocks: the same Psi."""
    cc.check_closure_psi(graph, cp.asarray, cp.asnumpy, rows=rows, tpb=tpb, layout="by_thread")


def test_closure_psi_fill_is_a_thread_per_pair(cp):
    cc.check_psi_fill_thread_per_pair(cc.chain_graph(4), cp.asarray, cp.asnumpy)


def test_closure_psi_overflow_and_retry(cp):
    cc.check_closure_psi_overflow(cc.chain_graph(40), cp.asarray, cp.asnumpy)


@examples(30)
@given(graph=graphs)
def test_compute_psi_on_the_device(kernels, graph):
    cc.check_compute_psi_device(graph, kernels)


def test_compute_psi_on_the_device_synthetic(kernels):
    """The synthetic workload graph of N = 300 (about 630 locations, loops, diamonds)."""
    from perf.workloads import build_graph, generate_graph
    cc.check_compute_psi_device(build_graph(generate_graph(300, 1)), kernels)


def test_psi_launches_do_not_grow_with_the_longest_path(kernels):
    cc.check_psi_launches_do_not_grow(kernels, short=3, long=300)


@examples(40)
@given(data=st.data())
def test_precursors_and_could_result_in(cp, data):
    graph = data.draw(graphs)
    cc.check_precursors(graph, data.draw(batch_sequences(graph)), np.random.default_rng(5),
                        cp.asarray, cp.asnumpy, n=64)


# -- the backend ----------------------------------------------------------------------------

def test_auto_picks_cuda(monkeypatch):
    import engine
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    backend, why = engine.resolve_backend()
    assert backend is Backend.CUDA and "device" in why


def test_auto_keeps_small_batches_on_the_cpu(monkeypatch):
    """With a usable GPU, auto takes the cpu backend for batches the cost model estimates
    cheaper there, and cuda for large ones; an explicit cuda is never overridden."""
    import engine
    from engine.core.workload import example_graph
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    g = example_graph()
    assert engine.make_tracker(g, batch_hint=10).kernels.name == "cpu"
    assert engine.make_tracker(g, batch_hint=10 ** 7).kernels.name == "cuda"
    assert engine.make_tracker(g, "cuda", batch_hint=10).kernels.name == "cuda"


@pytest.mark.parametrize("strategy", ["edgewise", "closure-dense", "closure-ragged"])
@examples(100)
@given(data=st.data())
def test_cuda_equals_reference(kernels, strategy, data):
    graph = data.draw(graphs)
    cc.check_backend_replay(graph, data.draw(batch_sequences(graph)), kernels, strategy)


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
def test_example_workload(kernels, strategy):
    w = read_workload(EXAMPLE_PATH)
    cc.check_backend_replay(w.graph, [(b.loc, b.ts, b.diff) for b in w.batches], kernels,
                            strategy)


@pytest.mark.parametrize("strategy", ["edgewise", "closure"])
def test_large_random_batches_equal_cpu(kernels, strategy):
    """1e5-row batches through pinned buffers on a synthetic graph: the change arrays equal
    the cpu backend's, and a drain empties every frontier."""
    from perf.workloads import batch_columns, build_graph, generate_batches, generate_graph
    spec = generate_graph(200, 1)
    graph = build_graph(spec)
    arrays = [batch_columns(graph, b) for b in generate_batches(spec, 100_000, 1)]
    gpu = cc.make_tracker(graph, kernels, strategy)
    cpu = cc.make_tracker(graph, None, strategy)
    for arr in arrays:
        for a, b in zip(cpu.update_arrays(*arr), gpu.update_arrays(*arr)):
            np.testing.assert_array_equal(a, b)
    assert gpu.frontiers() == cpu.frontiers()


def test_cli_replay_and_info(capsys):
    from engine.cli.main import main
    assert main(["replay", str(EXAMPLE_PATH), "--backend", "cuda", "--quiet", "--time"]) == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert all("total_ms" in json.loads(x) for x in lines)
    assert main(["info", "--backend", "cuda"]) == 0
    assert "backend: cuda" in capsys.readouterr().out


def test_bench_propagate_on_the_device(tmp_path):
    from perf import bench_propagate as bp
    out = tmp_path / "propagate.json"
    assert bp.main(["--sizes", "50", "--batches", "1e3", "--repeat", "1", "--backend", "cuda",
                    "--variants", "edgewise,closure", "--no-memory-pass", "--out", str(out),
                    "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert data["parameters"]["backend"] == "cuda" and data["consistency"] == []
    assert all(x["timer"] == "cuda-events" for run in data["runs"] for x in run["batches"])


def test_bench_closure_on_the_device(tmp_path):
    from perf import bench_closure as bc
    out = tmp_path / "closure.json"
    assert bc.main(["--backend", "cuda", "--sizes", "100,300", "--repeat", "2", "--out",
                    str(out), "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert data["parameters"]["backend"] == "cuda" and "cuda_device" in data["machine"]
    for s in data["sizes"]:
        assert len(s["device_build_s"]) == 2
        assert s["device_counts"]["device_build"]["launches"] == 2


def test_strict_rejection_changes_nothing(kernels):
    """Strict mode on the device: a rejected batch changes nothing."""
    from engine import NegativeCountError
    w = read_workload(EXAMPLE_PATH)
    eng = cc.make_tracker(w.graph, kernels, "closure", strict=True)
    ref = ImpliedFrontierTracker(w.graph, strict=True)
    b = w.batches[0]
    eng.update(b.loc, b.ts, b.diff)
    ref.update(b.loc, b.ts, b.diff)
    state = (sorted(eng.counts.items()), eng.frontiers())
    with pytest.raises(NegativeCountError):
        eng.update(b.loc, b.ts, [-d - 1 for d in b.diff])
    assert (sorted(eng.counts.items()), eng.frontiers()) == state == (
        sorted(ref.counts.items()), ref.frontiers())


# -- batch intake on the device (issue 10, item 2) ------------------------------------------

@examples(60)
@given(data=st.data())
def test_intake_kernels_equal_twin_and_host(cp, data):
    graph = data.draw(graphs)
    cc.check_intake_kernels(graph, data.draw(cc.raw_batches(graph, max_rows=200)), cp.asarray,
                            cp.asnumpy)


@examples(60)
@given(data=st.data())
def test_backend_intake_equals_host_path(kernels, data):
    graph = data.draw(graphs)
    cc.check_intake_backend(graph, data.draw(cc.raw_batches(graph, max_rows=200)), kernels)


def test_intake_launches_and_syncs_do_not_depend_on_n(kernels):
    from engine.core.workload import example_graph
    cc.check_intake_counts(example_graph(), kernels, [1000, 100_000, 1_000_000],
                           np.random.default_rng(4))


def test_intake_staging_in_chunks():
    from engine.batched.cuda import CudaKernels
    from engine.core.workload import example_graph
    k = CudaKernels()
    k.stage_chunk = 1 << 16
    cc.check_intake_counts(example_graph(), k, [300_000, 1000], np.random.default_rng(3))


def test_pinned_pool_reuses_buffers_across_batches():
    from engine.batched.cuda import CudaKernels
    from engine.core.workload import example_graph
    k = CudaKernels()
    k.pool.min_bytes = 1 << 12
    cc.check_pinned_pool_reuse(example_graph(), k, 100, np.random.default_rng(5))


# -- the batched rollback solver on the device (engine.rollback.cuda) ---------------------------

from engine.rollback.format import parse_rollback  # noqa: E402
from engine.rollback.problem import Guard  # noqa: E402
from rollback_cases import EXPECTED, problems  # noqa: E402

rollback_guards = st.sampled_from(list(Guard))


def test_rollback_closures(cp):
    cc.check_rollback_closures(np.random.default_rng(1), cp.asarray, cp.asnumpy)


@examples(40)
@given(problems(), rollback_guards, st.integers(0, 2**32 - 1))
def test_rollback_round_kernels(problem, guard, seed):
    cc.check_rollback_round_kernels(problem, guard, np.random.default_rng(seed), simulated=False)


@examples(30)
@given(problems(), st.integers(0, 2**32 - 1))
def test_rollback_c4_kernels(problem, seed):
    cc.check_rollback_images(problem, np.random.default_rng(seed), simulated=False)
    cc.check_rollback_c4_rows(problem, simulated=False)


@pytest.mark.parametrize("case", range(len(EXPECTED)))
def test_rollback_paper_examples(case):
    text, guard, _ = EXPECTED[case]
    cc.check_rollback_solver(parse_rollback(text), guard, simulated=False)


@examples(100)
@given(problems(), rollback_guards)
def test_rollback_cuda_equals_reference(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=False)


@examples(50)
@given(problems(closed=False), rollback_guards)
def test_rollback_cuda_equals_reference_not_closed(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=False)


@examples(30)
@given(problems(max_nodes=6, max_times=(4, 3), cycles=False), rollback_guards)
def test_rollback_cuda_equals_reference_acyclic_larger(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=False)


def test_rollback_launches_per_round_do_not_grow():
    cc.check_rollback_round_counts([(3, 2, 2), (50, 4, 3), (400, 5, 4)], simulated=False)


def test_rollback_auto_is_cpu_for_small_and_cuda_for_large():
    from engine.rollback.cuda import choose_rollback_backend
    from perf.bench_rollback import generate_problem
    assert choose_rollback_backend(parse_rollback(EXPECTED[0][0]), "full")[0] == "cpu"
    assert choose_rollback_backend(generate_problem(10000, 100), "full")[0] == "cuda"
