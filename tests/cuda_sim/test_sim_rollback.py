"""The batched rollback solver's CUDA kernels (``gpu_kernels.rollback``) on Numba's simulator:
each kernel against its NumPy twin in ``engine.rollback.batched``, C4's rows by the device's
reverse reachability, ``solve_batched(backend="cuda")`` against the reference solver on
random problems (both guards, cycles or not, availability closed under union or not), and the
device work per round, constant across problem sizes. Small problems: the simulator runs a
Python thread per CUDA thread."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
from engine.rollback.format import parse_rollback
from engine.rollback.problem import Guard
from strategies import examples
from rollback_cases import EXPECTED, problems

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # perf/ is not an installed package
    sys.path.insert(0, ROOT)

guards = st.sampled_from(list(Guard))


def same(a):
    return a


@pytest.mark.parametrize("tpb", [1, 3])
def test_closures(tpb):
    cc.check_rollback_closures(np.random.default_rng(1), same, np.asarray, tpb=tpb)


@examples(12)
@given(problems(max_nodes=3), guards, st.integers(0, 2**32 - 1))
def test_round_kernels(problem, guard, seed):
    cc.check_rollback_round_kernels(problem, guard, np.random.default_rng(seed), simulated=True,
                                    tpb=2)


@examples(8)
@given(problems(max_nodes=3), st.integers(0, 2**32 - 1))
def test_c4_image_gather_and_tops_kernels(problem, seed):
    cc.check_rollback_images(problem, np.random.default_rng(seed), simulated=True, tpb=3)


@examples(8)
@given(problems(max_nodes=3))
def test_c4_rows(problem):
    cc.check_rollback_c4_rows(problem, simulated=True)


@pytest.mark.parametrize("case", range(len(EXPECTED)))
def test_paper_examples(case):
    text, guard, _ = EXPECTED[case]
    cc.check_rollback_solver(parse_rollback(text), guard, simulated=True)


@examples(20)
@given(problems(max_nodes=3), guards)
def test_solver_equals_reference(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=True)


@examples(8)
@given(problems(max_nodes=3, closed=False), guards)
def test_solver_equals_reference_not_closed(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=True)


@examples(6)
@given(problems(max_nodes=4, cycles=False), guards)
def test_solver_equals_reference_acyclic(problem, guard):
    cc.check_rollback_solver(problem, guard, simulated=True)


def test_launches_per_round_do_not_grow():
    cc.check_rollback_round_counts([(3, 2, 2), (8, 3, 2)], simulated=True)


def test_bench_rollback_cuda_on_the_simulator():
    """``perf.bench_rollback`` with the cpu and cuda backends (cuda simulated): the answers
    agree with each other and the reference, and each cuda case records its device work per
    round."""
    from perf.bench_rollback import format_table, run_benchmark
    res = run_benchmark([4, 8], [4], ["simple", "full"], repeat=1, backends=("cpu", "cuda"),
                        simulated=True, log=lambda *a, **k: None)
    assert res["consistency"] == [] and res["device"] == "Numba's CUDA simulator"
    assert [(c["guard"], c["n"], c["backend"]) for c in res["cases"]] == [
        (g, n, b) for g in ("simple", "full") for n in (4, 8) for b in ("cpu", "cuda")]
    for c in res["cases"]:
        if c["backend"] == "cuda":
            assert c["first_call_s"] > 0 and c["per_round"]
            assert all(r["syncs"] == 1 and r["ops"] == 0 for r in c["per_round"])
            assert sum(r["rounds"] for r in c["per_round"]) == c["rounds"]
    assert "[cuda]" in format_table(res)
