"""The batched rollback solver on a GPU: the greatest fixed point of
:mod:`engine.rollback.batched` with every mask resident on the device, driven by the kernels of
:mod:`gpu_kernels.rollback`.

The problem's arrays (:class:`~engine.rollback.masks.RollbackArrays`: edges, shifts, ``need``
overrides, ``step`` pairs, C3 rows, in-flight and notified cells) go to the device once; the
frontiers ``f`` (and the simple guard's ``f_c``) stay there for the whole fixed point, and only
the round's "changed" flag comes back each round. The answer is still assembled by
:func:`engine.rollback.problem.decide`, so the cpu and cuda backends differ only in how the fixed point
is computed.

**A round** is a constant number of launches whatever ``n`` and ``|T|`` (counted with
:data:`gpu_kernels._cuda.COUNTS`, reported in :class:`RollbackStats`): ``fc_step`` (simple
guard only), ``bad_init``, ``rows_violated`` (C3 and C4 rows in one launch), the upward
closure of the forbidden cells (two launches), ``select`` and ``write`` -- 7 launches under the
simple guard, 6 under the full one (one fewer where the problem has no C3/C4 rows) -- and one
synchronisation (the flag). The simple guard's ``f_c`` is not iterated to its own fixed point
inside each round, as the cpu backend does: one Jacobi step of it runs per round, so ``f`` and
``f_c`` reach their joint greatest fixed point together. That is the same ``f`` and the same
greatest ``f_c`` within it (both operators are monotone: iterating them together from the
top reaches the greatest fixed point of the pair, whose parts are the nested fixed points), and
it keeps the round's launches constant; the device may take more rounds than the cpu backend.

**C4's precomputation** (reverse reachability over ``(location, time)`` states, in chunks of
notifications, :data:`DEVICE_CHUNK_BYTES` of masks each) runs as kernels too: per
reachability round a fill, ``image_scatter``, the downward closure (two launches),
``gather_src`` and ``pull_dst``, and one synchronisation; per chunk, the final ``R(q, t2, p)``
image and its maximal elements, read back once to build the C4 rows.

**Choosing** (:func:`choose_rollback_backend`): ``auto`` takes ``cuda`` only where a device is
usable (:func:`engine.batched.cuda.usable_device`) and the estimate of :class:`RollbackCostModel`
says the problem is large enough to pay for the launches, the synchronisations and the
one-time kernel compilation. Its device constants are those calibrated on the H100 run of
commit 840c890 (issue 24); no rollback timing has been taken on a GPU yet, so its cuda
estimates are calibrated predictions.

``simulated=True`` runs the same orchestration with NumPy arrays and the kernels on Numba's
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` set before Numba loads; the tests in
``tests/cuda_sim/`` do). Slow: small problems only.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

import numpy as np

from engine.batched.cost import H100_840C890, DeviceConstants
from engine.errors import BackendError
from engine.rollback.problem import Guard, RollbackProblem
from engine.rollback.masks import RollbackArrays, maximal_rows

__all__ = ["DeviceRollback", "RollbackStats", "RollbackCostModel", "choose_rollback_backend",
           "DEVICE_CHUNK_BYTES"]

#: Bytes of the C4 masks of one chunk of notifications on the device (``2 (n + E) B |T|``).
DEVICE_CHUNK_BYTES = 1 << 30


@dataclass
class RollbackStats:
    """What a solve did: the backend and why, the fixed-point rounds of each greatest fixed
    point (``decide`` computes one per combination of open availability lists), and on the
    cuda backend the device work per round and of C4's precomputation (launches, ops, syncs,
    allocs as counted by :data:`gpu_kernels._cuda.COUNTS`)."""

    backend: str = "cpu"
    reason: str = ""
    rounds: list = field(default_factory=list)
    per_round: list = field(default_factory=list)
    precompute: dict = field(default_factory=dict)
    reach_rounds: int = 0


def _csr(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr int64[size + 1], order)``: the items grouped by ``keys`` (stable)."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(size + 1, dtype=np.int64)
    if len(keys):
        ptr[1:] = np.cumsum(np.bincount(keys, minlength=size))
    return ptr, order


class DeviceRollback:
    """The fixed point of a rollback problem on the device (or Numba's simulator).

    Parameters
    ----------
    problem : RollbackProblem
    guard : Guard
    simulated : bool
        NumPy arrays and the CUDA simulator (the process must simulate CUDA).
    stats : RollbackStats, optional
        Filled in (a new one otherwise): ``self.stats``.
    tpb : int, optional
        Threads per block (tests: partial blocks under the simulator).
    """

    def __init__(self, problem: RollbackProblem, guard: Guard | str = Guard.FULL, *,
                 simulated: bool = False, stats: RollbackStats | None = None, tpb=None):
        from gpu_kernels import _cuda
        self._cuda = _cuda
        if simulated:
            if not _cuda.simulator():
                raise BackendError("simulated rollback solver: this process does not simulate "
                                   "CUDA (set NUMBA_ENABLE_CUDASIM=1 before Numba is imported)")
            self.xp = np
        else:
            import cupy
            self.xp = cupy
        self.tpb = tpb
        self.stats = stats if stats is not None else RollbackStats()
        self.stats.backend = "cuda-simulated" if simulated else "cuda"
        self._rnd = 0
        self._edges = None
        self._flag = None
        before = _cuda.COUNTS.snapshot()
        self.arrays = a = RollbackArrays(problem, Guard(guard), c4_rows=self._c4_rows)
        if a.guard is Guard.FULL:
            self.stats.precompute = _cuda.COUNTS.since(before)
        n, ne, ni = a.shape
        self.edges = self._edge_arrays(a)
        rows = [a.c3] + ([a.c4] if a.c4 is not None else [])
        target = np.concatenate([r.target for r in rows])
        gen_row = np.concatenate([r.gen_row + off for r, off in
                                  zip(rows, np.cumsum([0] + [r.count for r in rows[:-1]]))])
        gen_at = np.concatenate([r.gen_at for r in rows])
        self.nrows = len(target)
        ptr, order = _csr(gen_row, self.nrows)
        self.gen_ptr, self.gen_at, self.target = map(self._up, (ptr, gen_at[order], target))
        self.inflight = self._up(a.inflight.astype(np.uint8))
        self.notified = self._up(a.notified.astype(np.uint8))

    # -- host -> device ---------------------------------------------------------------------

    def _up(self, a: np.ndarray):
        """A device copy of ``a`` (at least one element: empty arrays become one zero)."""
        a = np.ascontiguousarray(a)
        if a.size == 0:
            a = np.zeros(1, dtype=a.dtype)
        self._cuda.COUNTS.allocs += 1
        return self.xp.asarray(a)

    def _alloc(self, size: int, dtype, fill=None):
        return self._cuda.alloc(self.xp, (max(1, int(size)),), dtype, fill)

    def _edge_arrays(self, a: RollbackArrays):
        """The internal edges as device arrays (once): endpoints, shifts, ``need`` overrides
        (CSR by edge), ``step`` pairs (CSR by edge), edges grouped by receiver and sender."""
        if self._edges is not None:
            return self._edges
        problem, (n, ne, ni) = a.problem, a.shape
        E = len(a.src)
        over_j = np.array([j for j, _t, _g in a.over], dtype=np.int64)
        over_ptr, _ = _csr(over_j, E)
        gen_ptr, _ = _csr(np.repeat(np.arange(len(a.over)), [len(g) for _j, _t, g in a.over]),
                          len(a.over))
        has_steps = np.zeros(E, dtype=np.uint8)
        step_j, step_a, step_b = [], [], []
        for j, k in enumerate(a.internal):
            if k in problem.steps:
                has_steps[j] = 1
                for x, y in sorted(problem.steps[k]):
                    step_j.append(j)
                    step_a.append(x[0] * ni + x[1])
                    step_b.append(y[0] * ni + y[1])
        step_ptr, _ = _csr(np.array(step_j, dtype=np.int64), E)
        in_ptr, in_edge = _csr(a.dst, n)
        out_ptr, out_edge = _csr(a.src, n)
        i64 = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
        host = dict(
            src=a.src, dst=a.dst, shift_e=a.shift[:, 0], shift_i=a.shift[:, 1],
            over_ptr=over_ptr, over_t=i64([t for _j, t, _g in a.over]), gen_ptr=gen_ptr,
            gen_t=i64([g for _j, _t, gens in a.over for g in gens]), has_steps=has_steps,
            step_ptr=step_ptr, step_a=i64(step_a), step_b=i64(step_b), in_ptr=in_ptr,
            in_edge=i64(in_edge), out_ptr=out_ptr, out_edge=i64(out_edge))
        self._edges = types.SimpleNamespace(**{k: self._up(i64(v) if v.dtype != np.uint8 else v)
                                               for k, v in host.items()})
        self._flag = self._alloc(1, np.int64, 0)
        return self._edges

    def _changed(self) -> bool:
        """Whether the round ``self._rnd`` changed something (one blocking read)."""
        return int(self._cuda.read(self._flag)[0]) == self._rnd

    # -- C4's precomputation ----------------------------------------------------------------

    def _c4_rows(self, a: RollbackArrays) -> list:
        """The C4 rows of :meth:`RollbackArrays._c4_rows`, computed on the device."""
        from gpu_kernels import rollback as rk
        problem, (n, ne, ni), nt = a.problem, a.shape, a.nt
        E = len(a.src)
        targets = [(q, t) for q in range(n) for t in sorted(problem.notified[q])]
        if not targets or not E:
            return [(q, t[0] * ni + t[1], []) for q, t in targets]
        g = self._edge_arrays(a)
        xp, tpb = self.xp, self.tpb
        chunk = max(1, min(len(targets), DEVICE_CHUNK_BYTES // max(1, (2 * E + 3 * n) * nt)))
        dem, pre = self._alloc(E * chunk * nt, np.uint8), self._alloc(E * chunk * nt, np.uint8)
        demp, r, top = (self._alloc(n * chunk * nt, np.uint8) for _ in range(3))
        rows = []
        for lo in range(0, len(targets), chunk):
            block = targets[lo:lo + chunk]
            B = len(block)
            ce, cn = E * B * nt, n * B * nt
            d_e, p_e, d_p, r_p, t_p = dem[:ce], pre[:ce], demp[:cn], r[:cn], top[:cn]
            blk_q = self._up(np.array([q for q, _ in block], dtype=np.int64))
            blk_t = self._up(np.array([t[0] * ni + t[1] for _, t in block], dtype=np.int64))
            rk.seed_demands_cuda(d_e, g.dst, blk_q, blk_t, B, nt, ni, tpb=tpb)
            self._cuda.op(d_p.fill(0))
            while True:  # the demand sets only grow: stop when a round adds nothing
                self._rnd += 1
                self.stats.reach_rounds += 1
                self._cuda.op(p_e.fill(0))
                rk.image_scatter_cuda(d_e, p_e, g, B, nt, ni, use_steps=True, tpb=tpb)
                rk.close_cuda(p_e, E * B, ne, ni, down=True, tpb=tpb)
                rk.gather_src_cuda(p_e, d_p, g, B, nt, tpb=tpb)
                rk.pull_dst_cuda(d_e, d_p, g, B, nt, self._flag, self._rnd, tpb=tpb)
                if not self._changed():
                    break
            # R(q, t2, p) = ∪_{e1 out of p} N_e1(dem[e1]), and its maximal elements
            self._cuda.op(p_e.fill(0))
            rk.image_scatter_cuda(d_e, p_e, g, B, nt, ni, use_steps=False, tpb=tpb)
            rk.close_cuda(p_e, E * B, ne, ni, down=True, tpb=tpb)
            self._cuda.op(r_p.fill(0))
            rk.gather_src_cuda(p_e, r_p, g, B, nt, tpb=tpb)
            rk.tops_cuda(r_p, t_p, ne, ni, tpb=tpb)
            host = np.asarray(self._cuda.read(t_p)).reshape(n, B, nt)
            for b, (q, t2) in enumerate(block):
                p, t = np.nonzero(host[:, b])
                rows.append((q, t2[0] * ni + t2[1], list(zip(p.tolist(), t.tolist()))))
        return rows

    # -- the greatest fixed point -----------------------------------------------------------

    def avail_arrays(self, fixed: dict | None = None):
        """The availability of every processor (``fixed`` ones fixed) as the device arrays
        of ``select``/``write``: ``kind``, ``chain_k``, members (CSR by processor, flat
        masks) and their sizes."""
        a, n, nt = self.arrays, self.arrays.shape[0], self.arrays.nt
        a.availability(fixed)
        owner, masks = a.member_owner, a.member_masks.reshape(len(a.member_owner), nt)
        mem_ptr, _ = _csr(owner, n)  # members are listed in processor order
        return types.SimpleNamespace(
            kind=self._up(a.avail_kind), chain_k=self._up(a.chain_k), mem_ptr=self._up(mem_ptr),
            masks=self._up(masks.astype(np.uint8).reshape(-1)),
            sizes=self._up(masks.sum(axis=1).astype(np.int64)))

    def largest_consistent(self, fixed: dict | None = None):
        """The greatest fixed point on the device: ``(f, fc)`` in canonical form, as
        :meth:`RollbackArrays.largest_consistent` returns them."""
        from gpu_kernels import rollback as rk
        a, cu, tpb = self.arrays, self._cuda, self.tpb
        n, ne, ni = a.shape
        nt, cells = a.nt, n * a.nt
        avail = self.avail_arrays(fixed)
        simple = a.guard is Guard.SIMPLE
        f = self._alloc(cells, np.uint8, 1)
        fc, fc2 = self._alloc(cells, np.uint8, 1), self._alloc(cells, np.uint8)
        bad, pick = self._alloc(cells, np.uint8), self._alloc(n, np.int64)
        rounds = 0
        while True:
            rounds += 1
            self._rnd += 1
            snap = cu.COUNTS.snapshot()
            if simple:
                rk.fc_step_cuda(fc, f, fc2, self.edges, nt, ni, self._flag, self._rnd, tpb=tpb)
                fc, fc2 = fc2, fc
            rk.bad_init_cuda(self.inflight, self.notified, fc, bad, simple=simple, tpb=tpb)
            rk.rows_violated_cuda(self.gen_ptr, self.gen_at, self.target, f, bad, self.nrows,
                                  tpb=tpb)
            rk.close_cuda(bad, n, ne, ni, down=False, tpb=tpb)
            rk.select_cuda(f, bad, avail, pick, n, ne, ni, tpb=tpb)
            rk.write_cuda(f, bad, avail, pick, ne, ni, self._flag, self._rnd, tpb=tpb)
            changed = self._changed()
            self.stats.per_round.append(cu.COUNTS.since(snap))
            if not changed:
                break
        self.stats.rounds.append(rounds)
        shape = (n, ne, ni)
        fs = maximal_rows(np.asarray(cu.read(f)).reshape(shape).astype(bool))
        fcs = maximal_rows(np.asarray(cu.read(fc)).reshape(shape).astype(bool)) if simple else None
        return fs, fcs


# -- choosing the backend ------------------------------------------------------------------------

@dataclass(frozen=True)
class RollbackCostModel:
    """Seconds per unit of work of the two backends' fixed points (see :func:`estimate`).

    The cpu constants are rough fits to ``perf/results/rollback.json`` (about 2.5e-8 s per
    mask cell per round at 10^6..10^7 cells, 2-4 rounds; the full guard's C4 reachability
    about 5e-9 s per cell of ``notifications x (n + E) x |T|`` in all, taken as 10
    reachability rounds of 5e-10 s). The device side is the calibrated model of issue 24
    (:data:`engine.batched.cost.H100_840C890`: per launch, per array argument, per sync, per
    byte, fitted to the H100 run of commit 840c890) applied to the solver's counted work: a
    round is 7 launches (6 under the full guard) with about 6 array arguments each
    (``perf/results/gpu-counts-today.json``, counted on the simulator), one sync, and
    ``cell_bytes`` of mask traffic per cell; a C3/C4 row ``row_bytes`` of random reads. The
    one-time kernel compilation of a fresh process, ``device_setup_s``, is of the order of
    the H100 run's warm-ups (1.6 to 6.1 s for the batch kernels). No rollback timing has
    been taken on a device: the cuda estimates are **calibrated predictions**.
    """

    cpu_cell_s: float = 2.5e-8
    cpu_row_s: float = 3.0e-8
    cpu_reach_cell_s: float = 5.0e-10
    device: DeviceConstants = H100_840C890
    round_launches: int = 7
    array_args_per_launch: float = 6.0
    cell_bytes: float = 8.0
    row_bytes: float = 32.0
    device_setup_s: float = 3.0
    rounds: int = 4
    reach_rounds: int = 10

    def launches_s(self, launches: int) -> float:
        """Launches with their arguments, and nothing else."""
        return self.device.seconds(launches=launches,
                                   array_args=launches * self.array_args_per_launch)


def estimate(problem: RollbackProblem, guard: Guard, model: RollbackCostModel = RollbackCostModel()
             ) -> tuple[float, float, str]:
    """``(cpu_s, cuda_s, what)``: estimated seconds of one greatest fixed point on each
    backend, for ``model.rounds`` rounds and (full guard) ``model.reach_rounds`` rounds of C4's
    reverse reachability. The masks are ``n |T|`` bytes; a round touches each a few times and
    each C3/C4 row once; C4 touches ``notifications x (n + E) x |T|`` cells per reachability
    round."""
    n, nt = problem.n, problem.ne * problem.ni
    E = len(problem.internal())
    cells = n * nt
    notes = sum(len(x) for x in problem.notified)
    rows = sum(len(v) for k, v in problem.consumed.items() if problem.edges[k].kind == "edge")
    reach = notes * (n + E) * nt if Guard(guard) is Guard.FULL else 0
    rows += notes if Guard(guard) is Guard.FULL else 0
    m = model
    cpu = m.rounds * (cells * m.cpu_cell_s + rows * m.cpu_row_s) \
        + m.reach_rounds * reach * m.cpu_reach_cell_s
    chunks = -(-2 * reach // DEVICE_CHUNK_BYTES) if reach else 0
    d = m.device
    cuda = m.device_setup_s \
        + m.rounds * (m.launches_s(m.round_launches) + d.seconds(
            syncs=1, device_bytes=cells * m.cell_bytes + rows * m.row_bytes)) \
        + m.reach_rounds * (d.seconds(device_bytes=reach * m.cell_bytes)
                            + chunks * (m.launches_s(6) + d.seconds(syncs=1))) \
        + d.seconds(h2d_bytes=3 * cells)
    what = (f"n |T| = {cells:,} mask cells, {rows:,} C3/C4 rows, "
            f"{reach:,} C4 reachability cells per round")
    return cpu, cuda, what


def choose_rollback_backend(problem: RollbackProblem, guard: Guard | str = Guard.FULL,
                            backend: str = "auto",
                            model: RollbackCostModel = RollbackCostModel()) -> tuple[str, str]:
    """``("cpu" | "cuda", reason)`` for :func:`engine.rollback.batched.solve_batched`.

    ``cpu`` always; ``cuda`` where a device is usable (:class:`~engine.errors.BackendError`
    naming the cause otherwise); ``auto``: ``cuda`` only where a device is usable and
    :func:`estimate` (device constants calibrated on the H100 run of 840c890) makes it the
    cheaper one.
    """
    from engine.batched.backend import Backend
    chosen = Backend.parse(backend)
    if chosen not in (Backend.AUTO, Backend.CPU, Backend.CUDA):
        raise BackendError(f"rollback backend {backend!r}: the batched rollback solver runs on "
                           f"'cpu', 'cuda' or 'auto'")
    if chosen is Backend.CPU:
        return "cpu", "requested"
    from engine.batched.cuda import usable_device
    ok, why = usable_device()
    if chosen is Backend.CUDA:
        if not ok:
            raise BackendError(f"rollback backend cuda cannot run here: {why}")
        return "cuda", f"requested: {why}"
    if not ok:
        return "cpu", f"auto: cpu, cuda not usable: {why}"
    cpu_s, cuda_s, what = estimate(problem, Guard(guard), model)
    pick = "cuda" if cuda_s < cpu_s else "cpu"
    return pick, (f"auto: {pick}: estimated cpu ~{cpu_s:.3g} s, cuda ~{cuda_s:.3g} s "
                  f"(calibrated device constants) for {what}")
