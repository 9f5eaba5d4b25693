"""The batched rollback solver's front door: the largest consistent rollback by rounds over all
processors at once, on the cpu (:mod:`engine.rollback.masks`) or a GPU (:mod:`engine.rollback.cuda`),
and the choice between it and the reference solver.

The answer is assembled by :func:`engine.rollback.problem.decide`, the same code the reference
uses, so the solvers differ only in how a fixed point is computed; they are compared on random
problems in ``tests/engine/rollback/test_rollback.py``.

``solve_batched(..., backend="cuda")`` runs the same fixed point with the masks on a GPU
(:mod:`engine.rollback.cuda`); ``backend="auto"`` takes it only where a device is usable and
the cost estimate says it pays.

>>> from engine.rollback.format import parse_rollback
>>> from engine.rollback.problem import solve
>>> problem = parse_rollback("timely-rollback v1\\ntimes 3 1\\nnode 0\\nnode 1\\nin 0 0\\n"
...                          "edge 1 0 1\\nconsumed 0 0 0 1 0\\ninflight 1 2 0\\n")
>>> solve_batched(problem).choice == solve(problem).choice
True
"""

from __future__ import annotations

from engine.rollback.cuda import DeviceRollback, RollbackStats, choose_rollback_backend
from engine.rollback.masks import RollbackArrays
from engine.rollback.problem import MAX_CHOICES, MAX_SEARCH, Answer, Guard, RollbackProblem, decide

__all__ = ["solve_batched", "choose_solver", "SOLVER_AUTO_CELLS"]


def solve_batched(problem: RollbackProblem, guard: Guard | str = Guard.FULL,
                  backend: str = "cpu", *, stats=None, simulated: bool = False,
                  max_choices: int = MAX_CHOICES, max_search: int = MAX_SEARCH,
                  progress=None) -> Answer:
    """The largest consistent rollback of ``problem``, equal to :func:`engine.rollback.problem.solve`.

    ``backend``: ``"cpu"`` (NumPy: :mod:`engine.rollback.masks`), ``"cuda"`` (the masks on a GPU:
    :mod:`engine.rollback.cuda`) or ``"auto"`` (cuda only where a device is usable and the
    cost estimate of :func:`engine.rollback.cuda.choose_rollback_backend` says it pays).
    ``stats``, a :class:`engine.rollback.cuda.RollbackStats`, is filled in with the backend,
    the reason, the rounds and (cuda) the launches and syncs per round. ``simulated=True`` with
    ``backend="cuda"`` runs the device code on Numba's CUDA simulator (tests only).
    ``max_choices`` (the most maximal choices a ``nolargest`` answer lists) and ``max_search``
    (the most fixed points the search over lists not closed under union computes, else
    :class:`~engine.errors.RollbackLimitError`) and ``progress`` (called after each fixed point
    of that search) are :func:`engine.rollback.problem.decide`'s, as for
    :func:`engine.rollback.problem.solve`.
    """
    guard = Guard(guard)
    stats = stats if stats is not None else RollbackStats()
    if simulated:
        chosen, stats.reason = "cuda", "simulated"
    else:
        chosen, stats.reason = choose_rollback_backend(problem, guard, backend)
    if chosen == "cuda":
        solver = DeviceRollback(problem, guard, simulated=simulated, stats=stats)
        return decide(problem, guard, solver.largest_consistent, max_choices=max_choices,
                      max_search=max_search, progress=progress)
    stats.backend = "cpu"
    arrays = RollbackArrays(problem, guard)

    def gfp(fixed):
        out = arrays.largest_consistent(fixed)
        stats.rounds.append(arrays.rounds)
        return out

    return decide(problem, guard, gfp, max_choices=max_choices, max_search=max_search,
                  progress=progress)


#: ``auto`` takes the reference solver below this many mask cells (``n |T|``): both answer at
#: once there, and the reference is the oracle. Above it the batched solver is much faster
#: (27x at 1,000 cells, over 400x at 10,000 in ``perf/results/rollback.json``).
SOLVER_AUTO_CELLS = 256


def choose_solver(problem: RollbackProblem, solver: str = "auto") -> tuple[str, str]:
    """``("reference" | "batched", reason)``: ``auto`` takes the batched solver unless
    ``n |T| < SOLVER_AUTO_CELLS``. Both give the same answer.

    >>> from engine.rollback.format import parse_rollback
    >>> choose_solver(parse_rollback("timely-rollback v1\\ntimes 2 1\\nnode 0\\n"))[0]
    'reference'
    """
    if solver not in ("auto", "reference", "batched"):
        raise ValueError(f"rollback solver {solver!r}: expected auto, reference or batched")
    if solver != "auto":
        return solver, "requested"
    cells = problem.n * problem.ne * problem.ni
    pick = "batched" if cells >= SOLVER_AUTO_CELLS else "reference"
    return pick, f"auto: {pick} for n |T| = {cells:,} mask cells (threshold {SOLVER_AUTO_CELLS})"
