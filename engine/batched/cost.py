"""The cost model that chooses a propagation strategy: estimated seconds per batch, not memory.

A batch's propagation can run two ways with identical results (docs/batched-engine.md):

* **closure**, on the backend's arrays: every target that a changed ``F`` reaches gathers its
  implied frontier through ``Psi``. Work: the candidates ``s(t)``, one per ``Psi`` entry
  ``(l1, s)`` times the rows of ``F(l1)`` -- independent per target, so on a GPU it is a
  block per target (:func:`gpu_kernels.propagate.closure_step_cuda`) and costs a fixed
  number of launches and synchronisations plus the candidates of its busiest thread (the
  block's 32 threads share a target's; one serial step each), plus
  its vote (per entry of a retreated source: a withdrawn mark read per old ``F`` row and,
  per withdrawn row, one summary application and a binary search in the target's old
  frontier -- on a churn batch every source may have retreated; counted as
  :attr:`CostModel.device_vote_share` of a candidate per ``F`` row), and the vote's second
  pass on the targets where a withdrawn row was a witness of a frontier row (one summary
  application per entry and row of the source's new ``F``, compared with at most
  ``HIT_ROWS`` suspect rows, stopping once every suspect is still produced: counted as
  :attr:`CostModel.device_cover_share` of a candidate per ``F`` row, on every target and
  without the early stop -- the churn worst case). The coverage test behind the marks runs
  once per location in the frontier update, which both strategies share, so it does not
  enter the comparison;
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

The device constants are **calibrated**, not guessed (issue 24): :data:`H100_840C890` holds
seconds per counted unit (a Numba launch, a CuPy primitive, a host round trip, a byte, a
serial step of the longest device thread) fitted by ``perf/calibration/gpu_model.py`` to the
one H100 run of commit 840c890, whose launches, primitives, syncs, bytes and per-thread loop
lengths were counted on the CUDA simulator (``perf/results/gpu-counts-840c890.json``). The
work of one batch of *this* tree is counted the same way (``perf/results/gpu-counts-today.json``,
:data:`BATCH_WORK`); a device figure this module gives is therefore a **calibrated
prediction**, not a measurement. The host constants (``host_row_s``, ``host_relax_s``) are
the cpu backend measured on the H100's host. ``docs/performance-model.md`` has the
calibration table and says which terms the data does not pin down.

>>> from engine.core.workload import example_graph
>>> from engine.batched.graph_arrays import GraphArrays
>>> c = choose_strategy(GraphArrays.from_graph(example_graph()), on_device=False)
>>> c.strategy, c.reason.split(":")[0]
('edgewise', 'cpu backend')
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.batched.graph_arrays import GraphArrays

__all__ = ["DeviceConstants", "H100_840C890", "BatchWork", "BATCH_WORK", "CostModel",
           "StrategyChoice", "BackendChoice", "estimate_summaries", "choose_strategy",
           "choose_backend", "propagation_s", "PerBatchChoice", "per_batch_choice"]


@dataclass(frozen=True)
class DeviceConstants:
    """Seconds per counted unit of device work (``perf/calibration/gpu_model.py`` defines
    the terms and fits them).

    Attributes
    ----------
    launch_s : float
        One Numba kernel launch from Python (dispatch, typing and converting its arguments:
        the 840c890 data does not split this from ``array_arg_s``).
    array_arg_s : float
        One device array argument of a launch, beyond what ``launch_s`` holds.
    primitive_s : float
        One array-library call (a CuPy primitive or allocation) from Python, kernel included.
    sync_s : float
        One blocking device-to-host read beyond the primitive it ends (not pinned by 840c890:
        each of its syncs came with a primitive).
    device_byte_s : float
        One byte of device-memory traffic (streaming, sorting, gathering kernels).
    h2d_byte_s : float
        One byte of a NumPy array staged through pinned memory into the device (and back).
    serial_step_s : float
        One dependent step (a candidate inserted into an antichain, a location visited) of
        the longest-running device thread: latency-bound work.
    """

    launch_s: float
    array_arg_s: float
    primitive_s: float
    sync_s: float
    device_byte_s: float
    h2d_byte_s: float
    serial_step_s: float

    def seconds(self, *, launches=0.0, array_args=0.0, primitives=0.0, syncs=0.0,
                device_bytes=0.0, h2d_bytes=0.0, serial_steps=0.0) -> float:
        """The model's seconds for that much counted work."""
        return (launches * self.launch_s + array_args * self.array_arg_s
                + primitives * self.primitive_s + syncs * self.sync_s
                + device_bytes * self.device_byte_s + h2d_bytes * self.h2d_byte_s
                + serial_steps * self.serial_step_s)


#: Fitted to the H100 run of commit 840c890 (NVIDIA H100 80GB HBM3, numba-cuda 0.30.4, CuPy
#: 14.2; ``perf/calibration/gpu_model.py``, table in docs/performance-model.md). A test checks
#: that the fit on the committed counts reproduces these.
H100_840C890 = DeviceConstants(
    launch_s=3.256e-4,
    array_arg_s=0.0,
    primitive_s=5.892e-5,
    sync_s=0.0,
    device_byte_s=4.320e-13,
    h2d_byte_s=1.612e-10,
    serial_step_s=1.035e-6,
)


@dataclass(frozen=True)
class BatchWork:
    """Device work of one steady-state churn batch of this tree's cuda backend, counted on the
    simulator (``perf/calibration/count_today.py``; ``tests/cuda_sim`` asserts the launches,
    primitives and syncs): Numba launches, their array arguments, primitives plus
    allocations, syncs; and device bytes per input row (intake with 64-bit keys, merge,
    new ``F``: docs/performance-model.md)."""

    launches: int
    array_args: int
    primitives: int
    syncs: int
    h2d_bytes_per_row: float = 28.0
    device_bytes_per_row: float = 650.0


#: Per strategy (``closure``: the gather on the device; ``edgewise``: ``F`` to the host).
BATCH_WORK = {"closure": BatchWork(10, 104, 36, 2), "edgewise": BatchWork(8, 78, 30, 2)}


@dataclass(frozen=True)
class CostModel:
    """Seconds per unit of work (see the module notes for where each comes from).

    Attributes
    ----------
    device : DeviceConstants
        The calibrated device constants (:data:`H100_840C890`).
    host_relax_s : float
        Edge-wise propagation on the host, per arc relaxation times the frontier rows on its
        two ends (about 1 ms per churn batch at N = 1000 and 4 ms at N = 5000 on the H100's
        host: measured, cpu backend).
    device_vote_share : float
        The closure gather's vote, per ``Psi`` entry and row of the source's old ``F``, as a
        share of one candidate (worst case on a churn batch: every row withdrawn).
    device_cover_share : float
        The vote's second pass (the only-producer test,
        :func:`gpu_kernels.propagate.cover_hits`), per ``Psi`` entry and row of the source's
        new ``F``, as a share of one candidate: a summary application and at most
        ``HIT_ROWS`` comparisons, no insertion (worst case on a churn batch: every target
        has a suspect row and no entry stops early). It is work added, not traded: on a
        churn batch every source changed, so the incremental update it enables has as many
        candidates as the full one.
    frontier_rows : float
        Rows of a typical frontier ``F``/``I`` (3 on the synthetic churn batches).
    gather_skew : float
        The most-loaded target's candidates over the mean (2.6 on the synthetic workloads,
        counted): the gather's block per target waits for its longest thread.
    gather_threads : int
        Threads of the gather's block per target (one warp).
    gather_merge_steps : float
        The block's merge of its threads' antichains (8 rows x 256 compares in shared
        memory, counted as an eighth of a step each: an assumption the data does not pin).
    host_row_s : float
        Per batch row, the cpu backend's validation, consolidation and merge (measured on the
        H100's host: 9.5 M changes/s end to end at N = 1000, B = 1e5..1e7).
    batch : dict
        :data:`BATCH_WORK`, per strategy.
    """

    device: DeviceConstants = H100_840C890
    host_relax_s: float = 2.9e-8
    device_vote_share: float = 0.5
    device_cover_share: float = 0.5
    frontier_rows: float = 3.0
    gather_skew: float = 2.6
    gather_threads: int = 32
    gather_merge_steps: float = 256.0
    host_row_s: float = 9.5e-8
    batch: tuple = tuple(BATCH_WORK.items())

    def work(self, strategy: str) -> BatchWork:
        return dict(self.batch)[strategy]

    def device_batch_s(self, strategy: str, rows: int) -> float:
        """A churn batch's device work other than propagation: launches, primitives, syncs
        and the bytes of ``rows`` input rows."""
        w = self.work(strategy)
        return self.device.seconds(launches=w.launches, array_args=w.array_args,
                                   primitives=w.primitives, syncs=w.syncs,
                                   h2d_bytes=rows * w.h2d_bytes_per_row,
                                   device_bytes=rows * w.device_bytes_per_row)

    def gather_steps(self, summaries: float, L: int) -> float:
        """Serial steps of the closure gather's longest thread on a churn batch."""
        per_target = summaries / max(L, 1) * self.frontier_rows * self.gather_skew
        return per_target / self.gather_threads \
            * (1 + self.device_vote_share + self.device_cover_share) \
            + self.gather_merge_steps


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
    cpu_s = rows * model.host_row_s + host.edgewise_s
    prop = gpu.closure_s if gpu.strategy == "closure" else gpu.edgewise_s
    cuda_s = model.device_batch_s(gpu.strategy, rows) + prop
    pick = "cuda" if cuda_s < cpu_s else "cpu"
    return BackendChoice(pick, f"batches of ~{rows:,} rows: cpu ~{cpu_s * 1e3:.3g} ms "
                         f"({host.strategy}), cuda ~{cuda_s * 1e3:.3g} ms ({gpu.strategy}) per "
                         f"batch, calibrated estimate", cpu_s, cuda_s)


def _host_relax_s(ga: GraphArrays, model: CostModel) -> float:
    """Edge-wise relaxation on the host for a churn batch: every arc and location, times the
    frontier rows on its two ends."""
    arcs = int(ga.in_ptr[-1]) if len(ga.in_ptr) else 0
    return (arcs + ga.L) * model.frontier_rows ** 2 * model.host_relax_s


def propagation_s(ga: GraphArrays, *, changed: float = 1.0,
                  model: CostModel = CostModel()) -> tuple[float, float]:
    """``(closure_s, edgewise_s)``: the cuda backend's estimated seconds to propagate a batch
    that changes the ``F`` of a share ``changed`` (``0 < changed <= 1``) of the locations, by
    the closure gather on the device and by edge-wise relaxation on the host. ``changed = 1``
    is the churn batch :func:`choose_strategy` compares.

    Both scale with the batch the same way: the host relaxes the arcs out of the changed
    locations (``changed`` of the churn batch's relaxations) and receives every location's
    pointers and modes plus the changed locations' rows; the gather's busiest block sees the
    candidates of the changed sources only (an incremental update; a target recomputed in
    full sees all its sources, so this is the gather's best case) on top of its fixed two
    launches, one scan and two syncs.
    """
    changed = float(changed)
    if not 0.0 < changed <= 1.0:
        raise ValueError(f"changed must be a share of the locations in (0, 1], got {changed!r}")
    f = model.frontier_rows
    d = model.device
    host_relax = _host_relax_s(ga, model) * changed
    # edge-wise on the host: relaxations, plus the new F (pointers and modes, then the
    # changed locations' rows) to the host: two round trips
    edgewise_s = host_relax + d.seconds(syncs=2, primitives=2,
                                        h2d_bytes=ga.L * (9 + changed * f * 8 * ga.width))
    # the gather: 2 launches (coop_gather, coop_fill) with their arrays, a scan, 2 syncs,
    # and the longest thread's candidates and vote (block per target, 32 threads)
    closure_s = d.seconds(launches=2, array_args=2 * 11, primitives=1, syncs=2,
                          serial_steps=model.gather_steps(estimate_summaries(ga) * changed,
                                                          ga.L))
    return closure_s, edgewise_s


@dataclass(frozen=True)
class PerBatchChoice:
    """What choosing the strategy per batch instead of per tracker would save, by the model
    (:func:`per_batch_choice`): the tracker's strategy (the churn batch's choice), the share
    of changed locations where the other strategy saves most, that saving and the cost of
    switching there (seconds per batch)."""

    tracker: str
    best_changed: float
    saving_s: float
    switch_s: float

    @property
    def pays(self) -> bool:
        """Whether some batch would gain more from switching than the switch costs."""
        return self.saving_s > self.switch_s

    def __str__(self) -> str:
        if self.saving_s <= 0.0:
            return (f"per-batch choice: {self.tracker} is the cheaper strategy for every share "
                    f"of changed locations (nothing to gain)")
        return (f"per-batch choice: the other strategy saves at most "
                f"{self.saving_s * 1e3:.3g} ms, at {self.best_changed:.3g} of the locations "
                f"changed, against {self.switch_s * 1e3:.3g} ms to move I for the switch: "
                f"{'pays' if self.pays else 'does not pay'}")


def per_batch_choice(ga: GraphArrays, *, model: CostModel = CostModel(),
                     shares: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3, 0.5,
                                                  0.7, 0.9, 1.0)) -> PerBatchChoice:
    """Whether the cuda backend would gain by choosing its strategy per batch (by the share
    of locations whose ``F`` changed, :func:`propagation_s`) rather than once per tracker
    from the churn batch (:func:`choose_strategy`, memory budget aside).

    The switch is not free: the strategies keep the implied frontiers ``I`` in different
    places (the closure gather on the device, edge-wise on the host), so a batch that
    switches moves ``I`` (every location's pointer and rows) across PCIe with one round
    trip and one copy. The model answers for the calibrated constants; with 840c890's
    launch cost, edge-wise is cheaper at every share on the benchmark graphs, so there is
    nothing to switch to (docs/performance-model.md, "A strategy per batch").
    """
    if ga.L == 0:
        return PerBatchChoice("edgewise", 1.0, 0.0, 0.0)
    c1, e1 = propagation_s(ga, changed=1.0, model=model)
    tracker = "closure" if c1 < e1 else "edgewise"
    best, where = 0.0, 1.0
    for share in shares:
        c, e = propagation_s(ga, changed=share, model=model)
        gain = (c - e) if tracker == "closure" else (e - c)
        if gain > best:
            best, where = gain, float(share)
    d = model.device
    switch_s = d.seconds(syncs=1, primitives=1,
                         h2d_bytes=ga.L * (8 + model.frontier_rows * 8 * ga.width))
    return PerBatchChoice(tracker, where, best, switch_s)


def choose_strategy(ga: GraphArrays, *, on_device: bool, memory_budget: int = 256 << 20,
                    model: CostModel = CostModel()) -> StrategyChoice:
    """The propagation strategy of ``auto`` for a backend (``on_device``: the cuda backend).

    Returns a :class:`StrategyChoice` whose ``reason`` names the estimates it compared.
    """
    host_edgewise_s = _host_relax_s(ga, model)
    if not on_device:
        return StrategyChoice("edgewise", "cpu backend: edge-wise relaxation does only the "
                              "work where frontiers change; the closure gather is the same "
                              "candidates done one by one (measured 5x-1000x slower)",
                              None, host_edgewise_s)
    from engine.batched.psi import estimate_bytes
    closure_s, edgewise_s = propagation_s(ga, changed=1.0, model=model)
    S = estimate_summaries(ga)
    psi_bytes = estimate_bytes(ga, memory_budget=memory_budget)
    est = f"closure ~{closure_s * 1e3:.3g} ms (Psi ~{S:,} summaries), edge-wise on the host " \
          f"~{edgewise_s * 1e3:.3g} ms per churn batch (calibrated)"
    if psi_bytes > memory_budget:
        return StrategyChoice("edgewise", f"Psi would take ~{psi_bytes:,} bytes, over the "
                              f"memory budget of {memory_budget:,}; {est}",
                              closure_s, edgewise_s, psi_bytes)
    pick = "closure" if closure_s < edgewise_s else "edgewise"
    return StrategyChoice(pick, f"estimated {est}: {pick} is cheaper", closure_s, edgewise_s,
                          psi_bytes)
