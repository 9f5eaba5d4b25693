"""The batched frontier engine: arrays in, frontier changes out, state resident between batches.

A batch flows through four steps (docs/batched-engine.md):

1. **consolidate** -- validate, sort by ``(loc, ts)``, sum equal rows, drop zeros;
2. **merge** into the resident count table (sorted, non-zero counts only) and note the
   locations whose set of positive timestamps changed; recompute those locations' frontiers
   ``F(l)`` (per-location Pareto minimum, prefix-minimum fast path when ``m == 1``);
3. **propagate** the changed ``F`` to the implied frontiers ``I`` with the chosen strategy:
   *edge-wise* (relaxation along the location graph, no ``Psi``) or *closure* (gather each
   affected location's frontier through ``Psi``);
4. **emit** the changes of ``I`` as ``(loc, ts, +1/-1)`` rows and keep ``I`` resident.

Everything on that path is NumPy and Numba kernels from ``gpu_kernels`` (the backend): no
per-change Python work. A rejected batch (bad row, or a negative count in strict mode)
changes nothing.

>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> tr = BatchedTracker(g)
>>> tr.update([g.source(1, 0)], [(0, 0)], [1])[:2]
[FrontierChange(loc=0, ts=(0, 0), diff=1), FrontierChange(loc=1, ts=(0, 0), diff=1)]
>>> tr.frontier(g.target(2, 0))
[(0, 1)]
"""

from __future__ import annotations

import time
from typing import Iterator, Sequence

import numpy as np

from engine.batched.batch_arrays import batch_arrays
from engine.core.counts import FrontierChange
from engine.core.choices import Choice
from engine.errors import ConvergenceError, CountOverflowError, NegativeCountError
from engine.core.graph import Graph
from engine.batched.graph_arrays import GraphArrays
from engine.batched.kernels import KernelSet, OverflowViolation, RedoBatch, StrictViolation, cpu_kernels
from engine.core.timestamp import Timestamp

__all__ = ["Strategy", "BatchedTracker", "TableCounts"]


class Strategy(Choice):
    """How changed frontiers reach the implied frontiers; both give identical results."""

    AUTO = "auto"
    EDGEWISE = "edgewise"
    CLOSURE = "closure"

    @classmethod
    def label(cls) -> str:
        return "propagation strategy"


class TableCounts:
    """Read-only view of the resident count table (the same reading API as
    :class:`~engine.core.counts.PointstampCounts`)."""

    def __init__(self, tracker: "BatchedTracker"):
        self._t = tracker

    @property
    def strict(self) -> bool:
        return self._t.strict

    def items(self) -> Iterator[tuple[tuple[int, Timestamp], int]]:
        t = self._t
        loc, ts, cnt = t.table()
        for l, row, c in zip(loc.tolist(), ts.tolist(), cnt.tolist()):
            yield (l, tuple(row[:t._width[l]])), c

    def count(self, loc: int, ts: Sequence[int]) -> int:
        key = (int(loc), tuple(int(x) for x in ts))
        for k, c in self.items():
            if k == key:
                return c
        return 0

    def active(self) -> list[tuple[int, Timestamp]]:
        return sorted(k for k, c in self.items() if c > 0)

    def __len__(self) -> int:
        return int(self._t._cnt.shape[0])


class BatchedTracker:
    """Implied frontiers for large batches of pointstamp count changes.

    Parameters
    ----------
    graph : Graph
    strict : bool
        Reject (atomically) a batch that would leave any count negative.
    strategy : {"auto", "edgewise", "closure"}
        Propagation strategy, identical in results. ``auto`` takes the one with the smaller
        estimated cost per batch (:mod:`engine.batched.cost`): ``edgewise`` on the CPU; on a device
        backend, ``closure`` where the device gather is estimated cheaper than host-side
        edge-wise propagation and ``Psi`` fits ``memory_budget``. Edge-wise propagation
        always runs on the host (only the changed ``F`` rows leave the device).
    max_antichain : int, optional
        Cap on ``Psi`` antichains (closure strategy); exceeding it raises
        :class:`~engine.errors.AntichainOverflowError`.
    memory_budget : int
        Bytes ``Psi`` may take for ``auto`` to choose the closure strategy.
    psi_layout : {"auto", "dense", "ragged"}
        Storage of ``Psi`` for the closure strategy (see :func:`engine.batched.psi.compute_psi`).
    kernels : KernelSet, optional
        The backend (array namespace + kernels); default the cpu backend.
    arrays : GraphArrays, optional
        ``graph`` as arrays (:meth:`GraphArrays.from_graph`), when the caller has them: many
        trackers of one graph (the exchange protocol's workers) then share one copy instead
        of each building its own. Read only.

    Attributes
    ----------
    choice : engine.batched.cost.StrategyChoice
        The strategy taken and why (the cost estimates ``auto`` compared).
    last_timing : dict
        ``apply_s`` (validate, consolidate, merge, local frontiers) and ``propagate_s`` of the
        last batch; on a device backend also the batch's device work: ``launches`` (kernels),
        ``ops`` (array-library primitives), ``syncs`` (blocking reads) and ``allocs``, and
        what the closure gather did: ``targets_full`` (targets recomputed from all their
        sources), ``targets_incremental`` (from their old frontier and the changed
        sources only) and ``targets_overflowed`` (their antichain outgrew a thread's rows:
        the serial overflow path; the rows then grow, ``CudaKernels.closure_rows``).
    """

    def __init__(self, graph: Graph, *, strict: bool = False, strategy: "str | Strategy" = "auto",
                 max_antichain: int | None = None, memory_budget: int = 256 << 20,
                 psi_layout: str = "auto", max_steps: int = 50_000_000,
                 kernels: KernelSet | None = None, arrays: GraphArrays | None = None):
        self.kernels = kernels if kernels is not None else cpu_kernels
        self.graph = graph
        self.strict = bool(strict)
        if arrays is not None and (arrays.L != graph.num_locations or arrays.m != graph.m
                                   or arrays.K != graph.max_depth):
            from engine.errors import BackendError
            raise BackendError(f"arrays describe {arrays.L} locations, m={arrays.m}, depth "
                               f"{arrays.K}; the graph has {graph.num_locations}, m={graph.m}, "
                               f"depth {graph.max_depth}")
        self.ga = arrays if arrays is not None else GraphArrays.from_graph(graph)
        self.max_steps = max_steps
        self.max_antichain = max_antichain
        self.memory_budget = memory_budget
        self.strategy, self.choice = self._choose(Strategy.parse(strategy))
        # where F and I live and propagation runs: edge-wise propagation is host work for
        # every backend (only the changed F rows travel); the closure gather runs on the backend
        on_host = self.kernels.on_device and self.strategy is Strategy.EDGEWISE
        self._pk = cpu_kernels if on_host else self.kernels
        self.psi = None
        if self.strategy is Strategy.CLOSURE:
            from engine.batched.psi import compute_psi
            self.psi = compute_psi(graph, max_antichain=max_antichain, layout=psi_layout,
                                   memory_budget=memory_budget, kernels=self.kernels)
        W, L = self.ga.width, self.ga.L
        self._width = (graph.m + self.ga.depth).tolist()
        xp = self.kernels.xp
        # resident state: on the backend's device, the count table (sorted by (loc, ts), no
        # zero counts) and F (frontier of positive counts, CSR by location; a device backend
        # may keep spare rows past F_ptr[L]); I (implied frontier, CSR) where propagation runs
        # (a host-side propagation gets its copy of F per batch: frontiers_to_host)
        self._loc = xp.zeros(0, xp.int32)
        self._ts = xp.zeros((0, W), xp.int64)
        self._cnt = xp.zeros(0, xp.int64)
        self._F_ptr = xp.zeros(L + 1, xp.int64)
        self._F_ts = xp.zeros((0, W), xp.int64)
        xp = self._pk.xp
        self._I_ptr = xp.zeros(L + 1, xp.int64)
        self._I_ts = xp.zeros((0, W), xp.int64)
        self.counts = TableCounts(self)
        self.last_timing = {"apply_s": 0.0, "propagate_s": 0.0}

    def _choose(self, strategy: Strategy):
        """The strategy and a :class:`~engine.batched.cost.StrategyChoice` saying why: ``auto`` takes
        the cheaper by the cost model of :mod:`engine.batched.cost` (edge-wise on the cpu backend;
        on a device, the closure gather only where its estimated cost per churn batch beats
        the host-side edge-wise propagation and ``Psi`` fits ``memory_budget``)."""
        from engine.batched.cost import StrategyChoice, choose_strategy
        if strategy is not Strategy.AUTO:
            return strategy, StrategyChoice(strategy.value, "requested")
        choice = choose_strategy(self.ga, on_device=self.kernels.on_device,
                                 memory_budget=self.memory_budget)
        return Strategy.parse(choice.strategy), choice

    # -- the batch path ------------------------------------------------------------------------

    def update_arrays(self, loc, ts, diff):
        """Apply a batch; return the frontier changes as arrays.

        Returns
        -------
        (loc int32[c], ts int64[c, m+K], diff int64[c]) sorted by ``(loc, ts)``; ``diff`` is
        +1 for a timestamp entering a location's implied frontier and -1 for one leaving.
        Host (NumPy) arrays whatever the backend.
        """
        k, ga = self.kernels, self.ga
        snap = k.counts_snapshot()
        start = time.perf_counter()
        try:
            out, applied = self._batch(loc, ts, diff)
        except RedoBatch:  # the device intake's packing guess failed: again, unguessed
            out, applied = self._batch(loc, ts, diff)
        out = tuple(np.asarray(a) for a in out)
        self.last_timing = {"apply_s": applied - start, "propagate_s": time.perf_counter() - applied,
                            **k.counts_since(snap)}
        return out

    def _batch(self, loc, ts, diff):
        """One batch, committed only at the end: ``(changes, time when F was ready)``. On a
        device backend the intake's and the merge's checks are *deferred*: they stay on the
        device and travel with the batch's first transfer (the closure step's statistics, or
        ``F`` on its way to the host), where they raise before anything is committed."""
        k, pk, ga = self.kernels, self._pk, self.ga
        deferred = k.deferred()
        # 1. validate and consolidate (on the backend: only the deltas travel)
        c_loc, c_ts, c_diff = k.intake(self.graph, ga.depth, loc, ts, diff, deferred=deferred)
        # 2. merge into the count table; recompute F where the positive set changed
        flip = k.flags(ga.L)
        n_loc, n_ts, n_cnt, bad = k.merge_counts(self._loc, self._ts, self._cnt, c_loc, c_ts,
                                                 c_diff, self.strict, flip, deferred=deferred)
        if int(bad) >= 0:
            self._reject_negative(k.to_host(c_loc[bad:bad + 1])[0],
                                  k.to_host(c_ts[bad:bad + 1])[0], int(c_diff[bad]))
        if int(bad) <= -2:  # gpu_kernels.consolidate.overflow_row
            j = -2 - int(bad)
            self._reject_overflow(k.to_host(c_loc[j:j + 1])[0], k.to_host(c_ts[j:j + 1])[0],
                                  int(c_diff[j]))
        # nothing is committed before propagation succeeded: an error (out of memory, no
        # convergence, a deferred check) leaves table, F and I as they were, consistent
        F_ptr, F_ts, mode, gone = k.frontier_update(n_loc, n_ts, n_cnt, flip, self._F_ptr, self._F_ts,
                                              ga.m, deferred=deferred)
        dF_ptr, dF_ts = F_ptr, F_ts
        try:
            if pk is not k:  # the host-side propagation works on a host copy of F
                F_ptr, F_ts, mode = k.frontiers_to_host(F_ptr, F_ts, mode, deferred=deferred)
            applied = time.perf_counter()
            # 3. propagate; 4. emit the changes of I
            I_ptr, I_ts = self._I_ptr, self._I_ts
            if self.strategy is Strategy.CLOSURE:  # a changed F is found by the gather itself
                I_ptr, I_ts, out = pk.closure_step(ga, self.psi, mode, F_ptr, F_ts, I_ptr, I_ts,
                                                   deferred=deferred if pk is k else None,
                                                   old_F=(self._F_ptr, self._F_ts, gone))
            else:
                seeds = np.flatnonzero(mode).astype(np.int64)
                out = (np.zeros(0, np.int32), np.zeros((0, ga.width), np.int64),
                       np.zeros(0, np.int64))
                if seeds.size:
                    new_ptr, new_ts, touched, steps = pk.edgewise(ga, F_ptr, F_ts, I_ptr, I_ts,
                                                                  seeds, self.max_steps)
                    if steps < 0:
                        raise ConvergenceError(
                            f"edge-wise propagation exceeded {self.max_steps} steps")
                    out = pk.frontier_changes(touched, I_ptr, I_ts, new_ptr, new_ts, ga.width)
                    I_ptr, I_ts = new_ptr, new_ts
        except StrictViolation as e:
            self._reject_negative(k.to_host(c_loc[e.row:e.row + 1])[0],
                                  k.to_host(c_ts[e.row:e.row + 1])[0], int(c_diff[e.row]))
        except OverflowViolation as e:
            self._reject_overflow(k.to_host(c_loc[e.row:e.row + 1])[0],
                                  k.to_host(c_ts[e.row:e.row + 1])[0], int(c_diff[e.row]))
        if deferred is not None and "table_len" in deferred.results:
            r = deferred.results["table_len"]
            n_loc, n_ts, n_cnt = n_loc[:r], n_ts[:r], n_cnt[:r]
        self._loc, self._ts, self._cnt = n_loc, n_ts, n_cnt
        self._F_ptr, self._F_ts = dF_ptr, dF_ts
        self._I_ptr, self._I_ts = I_ptr, I_ts
        return out, applied
    def _reject_overflow(self, l, row, d):
        l = int(l)
        t = tuple(int(x) for x in row[:self._width[l]])
        old = self.counts.count(l, t)
        raise CountOverflowError(
            f"pointstamp ({l}, {t}) at {self.graph.describe(l)}: count would overflow 64 bits "
            f"({old + d}); batch rejected, nothing applied")

    def _reject_negative(self, l, row, d):
        l = int(l)
        t = tuple(int(x) for x in row[:self._width[l]])
        old = self.counts.count(l, t)
        raise NegativeCountError(
            f"strict mode: pointstamp ({l}, {t}) at {self.graph.describe(l)} would have count "
            f"{old + d} (now {old}, batch changes it by {d}); batch rejected, nothing applied")

    # -- the tracker API -----------------------------------------------------------------------

    def update(self, loc, ts, diff) -> list[FrontierChange]:
        """Apply a batch; return the frontier changes as :class:`FrontierChange` rows.

        Same contract as the reference trackers; :meth:`update_arrays` is the fast path.
        """
        c_loc, c_ts, c_diff = self.update_arrays(loc, ts, diff)
        w = self._width
        return [FrontierChange(l, tuple(row[:w[l]]), d)
                for l, row, d in zip(c_loc.tolist(), c_ts.tolist(), c_diff.tolist())]

    def frontier(self, loc: int) -> list[Timestamp]:
        """The implied frontier at ``loc``, sorted."""
        w = self._width[loc]
        return [tuple(row[:w]) for row in self.frontier_array(loc).tolist()]

    def frontier_array(self, loc: int) -> np.ndarray:
        """The implied frontier at ``loc`` as host ``int64[k, m+K]`` rows."""
        a, b = int(self._I_ptr[loc]), int(self._I_ptr[loc + 1])
        return self.kernels.to_host(self._I_ts[a:b])

    def frontiers(self) -> list[list[Timestamp]]:
        """Every location's implied frontier, indexed by location."""
        ptr = self.kernels.to_host(self._I_ptr).tolist()
        rows = self.kernels.to_host(self._I_ts).tolist()
        w = self._width
        return [[tuple(r[:w[l]]) for r in rows[ptr[l]:ptr[l + 1]]] for l in range(self.ga.L)]

    def frontier_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Every location's implied frontier as host columns ``(loc int32[n], ts int64[n,
        m+K])``, sorted by ``(loc, ts)`` (padded rows: unused counters 0) -- what
        :meth:`frontiers` lists, without a Python object per element (the exchange simulator
        compares many workers' frontiers this way)."""
        ptr = np.asarray(self.kernels.to_host(self._I_ptr), np.int64)
        ts = np.asarray(self.kernels.to_host(self._I_ts), np.int64)
        loc = np.repeat(np.arange(self.ga.L, dtype=np.int32), np.diff(ptr))
        return loc, ts[:len(loc)]

    def table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The count table as host arrays ``(loc int32[r], ts int64[r, m+K], cnt int64[r])``,
        sorted by ``(loc, ts)``, non-zero counts only (to save, inspect or compare state).
        Applying it as a batch to a fresh tracker of the same graph restores the state."""
        h = self.kernels.to_host
        return h(self._loc), h(self._ts), h(self._cnt)

    # -- could-result-in and Naiad's view ------------------------------------------------------

    def _rows(self):
        if getattr(self, "_psi_rows", None) is None:
            from engine.batched.queries import PsiRowCache
            self._psi_rows = PsiRowCache(self.ga, self.max_antichain)
        return self._psi_rows

    def _query(self, loc, ts):
        q_loc, q_ts, _ = batch_arrays(self.graph, self.ga.depth, loc, ts, np.zeros(len(loc), np.int64))
        return q_loc, q_ts

    def could_result_in(self, loc1, ts1, loc2, ts2) -> np.ndarray:
        """``bool[n]``: row ``i`` is ``(loc1[i], ts1[i]) <=cri (loc2[i], ts2[i])``.

        ``Psi`` rows of the distinct ``loc1`` are computed on first use and kept.
        """
        from gpu_kernels.precursors import could_result_in
        l1, t1 = self._query(loc1, ts1)
        l2, t2 = self._query(loc2, ts2)
        if len(l1) != len(l2):
            from engine.errors import BatchError
            raise BatchError(f"query columns differ in length: {len(l1)} and {len(l2)}")
        row_of, pair_ptr, pair_dst, sum_ptr, sums = self._rows().csr(l1)
        return could_result_in(row_of, pair_ptr, pair_dst, sum_ptr, sums, self.ga.m, l1, t1, l2, t2)

    def precursor_counts(self, loc, ts) -> np.ndarray:
        """``int64[n]``: for each query pointstamp, the number of *other* active pointstamps
        (positive counts) that could-result-in it (Naiad's precursor count)."""
        from gpu_kernels.precursors import precursor_counts
        q_loc, q_ts = self._query(loc, ts)
        t_loc, t_ts, t_cnt = self.table()
        act_locs = np.unique(t_loc[t_cnt > 0]).astype(np.int64)
        row_of, pair_ptr, pair_dst, sum_ptr, sums = self._rows().csr(act_locs)
        seg_ptr = np.searchsorted(t_loc, np.arange(self.ga.L + 1)).astype(np.int64)
        return precursor_counts(row_of, pair_ptr, pair_dst, sum_ptr, sums, self.ga.m, act_locs,
                                seg_ptr, t_ts, t_cnt, q_loc, q_ts)

    def may_deliver(self, loc, ts) -> np.ndarray:
        """``bool[n]``: a notification at ``(loc[i], ts[i])`` may be delivered -- no other
        active pointstamp could-result-in it."""
        return self.precursor_counts(loc, ts) == 0

    def active_frontier(self) -> list[tuple[int, Timestamp]]:
        """The active pointstamps with precursor count 0, sorted (Naiad's frontier)."""
        t_loc, t_ts, t_cnt = self.table()
        loc, ts = t_loc[t_cnt > 0], t_ts[t_cnt > 0]
        if not len(loc):
            return []
        keep = self.precursor_counts(loc, ts) == 0
        w = self._width
        return [(l, tuple(row[:w[l]])) for l, row in zip(loc[keep].tolist(), ts[keep].tolist())]

    def nbytes(self) -> int:
        """Bytes of resident state: count table, frontiers, and ``Psi`` when present."""
        arrays = (self._loc, self._ts, self._cnt, self._F_ptr, self._F_ts, self._I_ptr, self._I_ts)
        return sum(a.nbytes for a in arrays) + (self.psi.nbytes if self.psi is not None else 0)


def warm_up(m: int, K: int, kernels: KernelSet | None = None,
            strategies: Sequence[str] = ("edgewise", "closure")) -> None:
    """Load (or compile) a backend's kernels for timestamps of width ``m + K`` on a tiny graph
    (the given ``strategies``; ``closure`` in both ``Psi`` layouts), so that timings taken
    afterwards measure work, not JIT compilation or cache loading. ``kernels`` defaults to the
    cpu backend. Only what the strategies use is loaded: ``("edgewise",)`` -- what the cpu
    backend's ``auto`` runs -- needs a fraction of the kernels (compiling them all from an
    empty cache takes minutes, edge-wise alone seconds)."""
    from engine.core.graph import GraphBuilder
    from engine.core.summary import Summary

    b = GraphBuilder(m=m)
    a = b.add_operator(1, 1, depth=K)
    c = b.add_operator(1, 1, depth=K)
    b.add_summary(a, 0, 0, Summary.identity(K, m))
    b.add_summary(c, 0, 0, Summary.delay(K, m))
    b.connect(a, 0, c, 0)
    b.connect(c, 0, a, 0)
    g = b.build()
    for strategy, layout in (("edgewise", "auto"), ("closure", "dense"), ("closure", "ragged")):
        if strategy not in strategies:
            continue
        tr = BatchedTracker(g, strategy=strategy, psi_layout=layout, kernels=kernels)
        ts = np.zeros((2, m + K), np.int64)
        ts[1, 0] = 1
        tr.update_arrays(np.array([0, 1], np.int32), ts, np.array([1, 1], np.int64))
        tr.update_arrays(np.array([0], np.int32), ts[:1], np.array([-1], np.int64))
    if kernels is None or kernels is cpu_kernels:
        from engine.batched.kernels import warm_host_paths
        warm_host_paths()
