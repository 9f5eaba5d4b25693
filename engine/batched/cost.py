"""The cost model that chooses a propagation strategy: estimated seconds per batch, not memory.

A batch's propagation can run two ways with identical results (docs/batched-engine.md):

* **closure**, on the backend's arrays: every target that a changed ``F`` reaches gathers its
  implied frontier through ``Psi``. Work: the candidates ``s(t)``, one per ``Psi`` entry
  ``(l1, s)`` times the rows of ``F(l1)`` -- independent per target, so on a GPU it is a
  block per target (:func:`gpu_kernels.propagate.closure_step_cuda`) and costs a fixed
  number of launches and synchronisations plus the candidates at the device's rate, plus
  its vote (per entry of a retreated source: a withdrawn mark read per old ``F`` row and,
  per withdrawn row, one summary application and a binary search in the target's old
  frontier -- on a churn batch every source may have retreated; counted as
  :attr:`CostModel.device_vote_share` of a candidate per ``F`` row). The coverage test behind the marks runs once per location in
  the frontier update, which both strategies share, so it does not enter the comparison;
* **edge-wise**, always on the host (:func:`gpu_kernels.propagate.edgewise`): a worklist over
  the location graph that only relaxes where frontiers change -- sequential, but its work is
  the arcs into recomputed locations times the frontier sizes on both ends, which on the
  synthetic workloads is a few thousand relaxations per batch.

:func:`choose_strategy` estimates both for a batch that changes every location's ``F`` (a
churn batch, the expensive case) with the constants of :class:`CostModel` and takes the
cheaper one. The closure strategy needs ``Psi``; one estimated above ``memory_budget`` rules
it out, whatever its speed. On the cpu backend the closure gather is the same work done
serially, so the model always prefers edge-wise there; the cuda backend's edge-wise
propagation is the cpu backend's own, so ``auto`` on a GPU is never slower at propagation than
the cpu backend -- it only takes the closure gather where the model says that is faster.

The constants are a model, calibrated from measurements on an H100 host
(measured by hand there, not reproduced in CI: the cpu backend propagates a churn batch of the N=1000 chain
workload in about 1 ms and of N=5000 in about 4 ms; CUDA launches and synchronisations cost
10-30 microseconds each through CuPy and Numba) and from the counted device work (the
closure step: 2 launches, 1 primitive, 2 synchronisations; a whole batch: 16 launches and
primitives, 2 synchronisations). The device rate of the block-per-target gather is a
prediction until it is measured on a device.

>>> from engine.core.workload import example_graph
>>> from engine.batched.graph_arrays import GraphArrays
>>> c = choose_strategy(GraphArrays.from_graph(example_graph()), on_device=False)
>>> c.strategy, c.reason.split(":")[0]
('edgewise', 'cpu backend')
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.batched.graph_arrays import GraphArrays

__all__ = ["CostModel", "StrategyChoice", "BackendChoice", "estimate_summaries",
           "choose_strategy", "choose_backend"]


@dataclass(frozen=True)
class CostModel:
    """Seconds per unit of work (see the module notes for where each comes from).

    Attributes
    ----------
    host_relax_s : float
        Edge-wise propagation on the host, per arc relaxation times the frontier rows on its
        two ends (``antichain_insert`` of one candidate).
    device_launch_s, device_sync_s : float
        One kernel launch (Numba, through CuPy's stream) and one blocking device-to-host read.
    device_candidate_s : float
        One candidate ``s(t)`` of the closure gather, over the whole device (summed over SMs).
    device_vote_share : float
        The closure gather's vote, per ``Psi`` entry and row of the source's old ``F``, as a
        share of one candidate: a withdrawn row costs a summary application and a binary
        search in a frontier of about ``frontier_rows`` rows (a candidate: the application
        and an insertion into an 8-row antichain, up to 8 ``W`` compares); a covered row
        only its 1-byte mark. Worst case on a churn batch: every row withdrawn.
    transfer_s_per_byte : float
        Host <-> device bytes (pinned, one direction).
    frontier_rows : float
        Rows of a typical frontier ``F``/``I`` (the model's average antichain of timestamps).
    host_row_s, device_row_s : float
        Per batch row: the cpu backend's validation, consolidation and merge (about 60 ns on
        one core: 18 M changes/s end to end at N = 1000, B = 1e6); the cuda backend's intake
        (pinned fill, PCIe, sort) and merge (a prediction).
    device_batch_ops, device_batch_syncs : int
        Kernel launches plus primitives, and blocking reads, of one cuda batch (counted).
    """

    host_relax_s: float = 1.0e-7
    device_launch_s: float = 1.0e-5
    device_sync_s: float = 2.0e-5
    device_candidate_s: float = 2.0e-11
    device_vote_share: float = 0.5
    transfer_s_per_byte: float = 1.0 / 20e9
    frontier_rows: float = 2.0
    host_row_s: float = 6.0e-8
    device_row_s: float = 1.5e-9
    device_batch_ops: int = 16
    device_batch_syncs: int = 2


@dataclass(frozen=True)
class StrategyChoice:
    """What ``auto`` (or the caller) picked, why, and the estimates behind it (seconds per
    churn batch; ``None`` where a strategy was not estimated)."""

    strategy: str
    reason: str
    closure_s: float | None = None
    edgewise_s: float | None = None
    psi_bytes: int | None = None

    def __str__(self) -> str:
        return f"{self.strategy} ({self.reason})"


def estimate_summaries(ga: GraphArrays) -> int:
    """Estimated number of ``Psi`` entries (summaries over all pairs): the ``S`` of
    :func:`engine.batched.psi.estimate_shape`, which :func:`engine.batched.psi.estimate_bytes` also uses."""
    from engine.batched.psi import estimate_shape
    return estimate_shape(ga)[1]


@dataclass(frozen=True)
class BackendChoice:
    """Which backend ``auto`` takes for batches of about ``rows`` rows when a GPU is usable,
    why, and the estimates (seconds per churn batch)."""

    backend: str
    reason: str
    cpu_s: float
    cuda_s: float


def choose_backend(ga: GraphArrays, rows: int, *, memory_budget: int = 256 << 20,
                   model: CostModel = CostModel()) -> BackendChoice:
    """The cheaper backend for churn batches of about ``rows`` rows on this graph, by the
    model: the cpu backend pays per row and its edge-wise propagation; the cuda backend pays
    a fixed number of launches and synchronisations per batch, much less per row, and the
    cheaper of its two strategies. Small batches can be cheaper on the CPU.

    >>> from engine.core.workload import example_graph
    >>> c = choose_backend(GraphArrays.from_graph(example_graph()), 100)
    >>> c.backend, choose_backend(GraphArrays.from_graph(example_graph()), 10 ** 7).backend
    ('cpu', 'cuda')
    """
    rows = max(int(rows), 0)
    host = choose_strategy(ga, on_device=False, model=model)
    gpu = choose_strategy(ga, on_device=True, memory_budget=memory_budget, model=model)
    edgewise_host = gpu.edgewise_s - model.device_sync_s  # the same work, without the copy
    cpu_s = rows * model.host_row_s + edgewise_host
    prop = gpu.closure_s if gpu.strategy == "closure" else gpu.edgewise_s
    cuda_s = model.device_batch_ops * model.device_launch_s \
        + model.device_batch_syncs * model.device_sync_s + rows * model.device_row_s + prop
    pick = "cuda" if cuda_s < cpu_s else "cpu"
    return BackendChoice(pick, f"batches of ~{rows:,} rows: cpu ~{cpu_s * 1e3:.3g} ms "
                         f"({host.strategy}), cuda ~{cuda_s * 1e3:.3g} ms ({gpu.strategy}) per "
                         f"batch, estimated", cpu_s, cuda_s)


def choose_strategy(ga: GraphArrays, *, on_device: bool, memory_budget: int = 256 << 20,
                    model: CostModel = CostModel()) -> StrategyChoice:
    """The propagation strategy of ``auto`` for a backend (``on_device``: the cuda backend).

    Returns a :class:`StrategyChoice` whose ``reason`` names the estimates it compared.
    """
    if not on_device:
        return StrategyChoice("edgewise", "cpu backend: edge-wise relaxation does only the "
                              "work where frontiers change; the closure gather is the same "
                              "candidates done one by one (measured 5x-1000x slower)")
    from engine.batched.psi import estimate_bytes
    f = model.frontier_rows
    arcs = int(ga.in_ptr[-1]) if len(ga.in_ptr) else 0
    W = ga.width
    # edge-wise on the host: relaxations, plus the changed F rows down and nothing else up
    edgewise_s = (arcs + ga.L) * f * f * model.host_relax_s \
        + model.device_sync_s + ga.L * f * 8 * W * model.transfer_s_per_byte
    S = estimate_summaries(ga)
    # the gather's candidates, plus its vote: per entry of a retreated source, f mark reads
    # and at most f (summary application + binary search), each a share of a candidate
    closure_s = 3 * model.device_launch_s + 2 * model.device_sync_s \
        + S * f * (1 + model.device_vote_share) * model.device_candidate_s
    psi_bytes = estimate_bytes(ga, memory_budget=memory_budget)
    est = f"closure ~{closure_s * 1e3:.3g} ms (Psi ~{S:,} summaries), edge-wise on the host " \
          f"~{edgewise_s * 1e3:.3g} ms per churn batch"
    if psi_bytes > memory_budget:
        return StrategyChoice("edgewise", f"Psi would take ~{psi_bytes:,} bytes, over the "
                              f"memory budget of {memory_budget:,}; {est}",
                              closure_s, edgewise_s, psi_bytes)
    pick = "closure" if closure_s < edgewise_s else "edgewise"
    return StrategyChoice(pick, f"estimated {est}: {pick} is cheaper", closure_s, edgewise_s,
                          psi_bytes)
