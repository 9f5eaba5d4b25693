"""Choosing how a rollback problem is solved (issue 12, item 3): ``tfront rollback --solver
reference|batched|auto --backend cpu|cuda|auto`` prints the same answer whichever solver runs,
``auto`` picks the batched solver for all but tiny problems and the cuda backend only where a
device is usable and the cost estimate says it pays, and a backend that cannot run here is an
error that names why."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from engine.cli.main import main
from engine.errors import BackendError
from engine.rollback.format import parse_rollback
from engine.rollback.problem import Guard, solve
from engine.rollback.batched import SOLVER_AUTO_CELLS, choose_solver, solve_batched
from engine.rollback.cuda import RollbackStats, choose_rollback_backend, estimate
from strategies import examples
from rollback_cases import EXPECTED, problems

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # perf/ is not an installed package
    sys.path.insert(0, str(ROOT))


def problem_text(problem) -> str:
    """A ``timely-rollback v1`` file for ``problem`` (a ``step`` set left empty is dropped: the
    format cannot say "no pairs", and both solvers read the same file)."""
    t = lambda ts: " ".join(f"{e} {i}" for e, i in sorted(ts))  # noqa: E731
    lines = ["timely-rollback v1", f"times {problem.ne} {problem.ni}"]
    lines += [f"node {p}" + (" buffer" if b else "") for p, b in enumerate(problem.buffer)]
    for k, d in enumerate(problem.edges):
        lines.append({"in": f"in {k} {d.dst}", "edge": f"edge {k} {d.src} {d.dst}",
                      "out": f"out {k} {d.src}"}[d.kind])
    lines += [f"phi {k} shift {de} {di}" for k, (de, di) in sorted(problem.shift.items())]
    lines += [f"need {k} {t([x])} {t(gens)}".rstrip()
              for k, over in sorted(problem.need_over.items()) for x, gens in sorted(over.items())]
    lines += [f"step {k} {t([a])} {t([b])}" for k, pairs in sorted(problem.steps.items())
              for a, b in sorted(pairs)]
    for p, a in enumerate(problem.avail):
        if a.every:
            continue
        if a.epochs >= 0:
            lines.append(f"avail {p} epochs {a.epochs}")
        lines += [f"avail {p} {t(x)}".rstrip() for x in sorted(a.explicit | {()})]
    for word, data in (("consumed", problem.consumed), ("inflight", problem.inflight)):
        lines += [f"{word} {k} {t(ts)}" for k, ts in sorted(data.items()) if ts]
    lines += [f"notified {q} {t(ts)}" for q, ts in enumerate(problem.notified) if ts]
    return "\n".join(lines) + "\n"


def run_cli(args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def same_answer_from_both_solvers(path, guard) -> str:
    runs = [run_cli(["rollback", str(path), "--guard", guard, *extra])
            for extra in (["--solver", "reference"], ["--solver", "batched", "--backend", "cpu"],
                          [])]
    assert runs[0][0] == 0 and runs[0][2] == ""
    assert runs[1] == runs[0] and runs[2] == runs[0]
    return runs[0][1]


@pytest.mark.parametrize("case", range(len(EXPECTED)))
def test_cli_same_answer_from_both_solvers_paper_examples(tmp_path, case):
    text, guard, body = EXPECTED[case]
    path = tmp_path / "problem.txt"
    path.write_text(text)
    assert same_answer_from_both_solvers(path, guard).endswith(body)


@examples(30)
@given(problems(), st.sampled_from(list(Guard)))
def test_cli_same_answer_from_both_solvers_random(tmp_path_factory, problem, guard):
    path = tmp_path_factory.mktemp("rb") / "problem.txt"
    path.write_text(problem_text(problem))
    out = same_answer_from_both_solvers(path, guard.value)
    assert out.startswith("# timely-rollback answer v1\nguard ")


def test_cli_backend_errors(tmp_path):
    path = tmp_path / "problem.txt"
    path.write_text(EXPECTED[0][0])
    from engine.batched.cuda import usable_device
    ok, why = usable_device()
    if not ok:  # no device here: cuda is an error naming why, nothing printed on stdout
        for solver in (["--solver", "batched"], []):  # --backend implies the batched solver
            status, out, err = run_cli(["rollback", str(path), *solver, "--backend", "cuda"])
            assert status == 2 and out == "" and err.startswith("tfront rollback: error: rollback backend cuda")
            assert why in err
    with pytest.raises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()) as err:
        main(["rollback", str(path), "--solver", "reference", "--backend", "cpu"])
    assert e.value.code == 2 and "--backend is for the batched solver" in err.getvalue()


def test_auto_solver_threshold():
    from perf.bench_rollback import generate_problem
    tiny = parse_rollback(EXPECTED[0][0])
    assert tiny.n * tiny.ne * tiny.ni < SOLVER_AUTO_CELLS
    assert choose_solver(tiny)[0] == "reference"
    assert choose_solver(tiny, "batched") == ("batched", "requested")
    big = generate_problem(30, 20)
    pick, why = choose_solver(big)
    assert pick == "batched" and f"{big.n * 20:,} mask cells" in why
    with pytest.raises(ValueError, match="rollback solver 'fast'"):
        choose_solver(big, "fast")


def test_backend_choice_without_a_device_and_bad_names():
    from engine.batched.cuda import usable_device
    from perf.bench_rollback import generate_problem
    problem = generate_problem(10, 20)
    ok, why = usable_device()
    stats = RollbackStats()
    answer = solve_batched(problem, "simple", "auto", stats=stats)
    assert answer == solve_batched(problem, "simple", "cpu") == solve(problem, "simple")
    assert stats.rounds and stats.rounds[0] >= 1 and stats.per_round == []
    if not ok:
        assert stats.backend == "cpu" and why in stats.reason
        with pytest.raises(BackendError, match="cannot run here"):
            solve_batched(problem, "simple", "cuda")
    assert choose_rollback_backend(problem, "full", "cpu") == ("cpu", "requested")
    with pytest.raises(BackendError, match="'cpu', 'cuda' or 'auto'"):
        choose_rollback_backend(problem, "full", "reference")


def test_cost_estimate_pays_only_for_large_problems():
    """The estimate (calibrated device constants): a tiny problem stays on the cpu, a large
    one goes to the device; both estimates grow with the problem; the full guard's C4
    reachability makes it costlier than the simple guard."""
    from perf.bench_rollback import generate_problem
    tiny = parse_rollback(EXPECTED[0][0])
    cpu, cuda, _ = estimate(tiny, Guard.FULL)
    assert cpu < cuda
    small, large = generate_problem(100, 100), generate_problem(10000, 100)
    s_cpu, s_cuda, _ = estimate(small, Guard.SIMPLE)
    l_cpu, l_cuda, what = estimate(large, Guard.SIMPLE)
    assert s_cpu < s_cuda and l_cpu > s_cpu and l_cuda > s_cuda and l_cpu < l_cuda
    assert f"{large.n * 100:,} mask cells" in what
    f_cpu, f_cuda, what = estimate(large, Guard.FULL)
    assert f_cpu > l_cpu and f_cuda < f_cpu and "C4 reachability" in what
