"""The backend interface of the batched engine: an array namespace plus a handful of kernels.

:class:`~engine.batched.tracker.BatchedTracker` is written once against this interface; each backend
binds it to its own arrays and kernels (semantics, then a backend-neutral algorithm, then
kernels, then the integration: each layer uses only the one below). The ``cpu`` backend binds NumPy
and the Numba CPU twins of ``gpu_kernels``. A device backend binds its array library (CuPy)
and the CUDA kernels of the same modules, with the same signatures: arrays in, arrays out,
all resident on its device; only deltas go in and frontier changes come out
(:meth:`KernelSet.to_host`).

Every method's contract is the one of the CPU twin it names; shapes and dtypes are those of
``gpu_kernels``.
"""

from __future__ import annotations

import abc

import numpy as np

__all__ = ["KernelSet", "CpuKernels", "cpu_kernels", "Deferred", "RedoBatch",
           "StrictViolation", "OverflowViolation", "count_overflow"]


def count_overflow(graph, e):
    """The :class:`~engine.errors.CountOverflowError` for a consolidation's
    ``gpu_kernels.consolidate.SumOverflow`` ``e`` (its padded timestamp cut to the
    location's width)."""
    from engine.core.counts import sum_overflow_error
    return sum_overflow_error(graph, e.loc, e.ts[:graph.m + graph.depth(e.loc)], e.total)


class RedoBatch(Exception):
    """Raised by a deferred check when the batch must be taken again from its input (the
    device intake packed it with widths its maxima outgrew). Internal to a batch: the
    tracker catches it, nothing having been committed."""


class StrictViolation(Exception):
    """Raised by a deferred check: batch row ``row`` (consolidated) would leave a count
    negative in strict mode. The tracker turns it into ``NegativeCountError``."""

    def __init__(self, row: int):
        super().__init__(row)
        self.row = row


class OverflowViolation(Exception):
    """Raised by a deferred check: batch row ``row`` (consolidated) would take a count out of
    int64. The tracker turns it into ``CountOverflowError``."""

    def __init__(self, row: int):
        super().__init__(row)
        self.row = row


class Deferred:
    """Facts of one batch left on the device (``int64`` words: the intake's statistics, the
    merge's violation and table size) until the batch's first transfer to the host, which
    carries them along -- so they cost no synchronisation of their own. ``settle`` then runs
    each part's check in order, which may raise (a bad row, a negative count, a redo).

    Attributes set by the stages for the ones after them: ``batch_count`` (device
    ``int64[1]``, the consolidated rows when the batch arrays hold spare rows) and
    ``table_len`` (device ``int64[1]``, the new table's rows); ``results`` what the checks
    found (``table_len`` as a host int).
    """

    def __init__(self, xp):
        self.xp = xp
        self.parts: list = []
        self.batch_count = None
        self.table_len = None
        self.results: dict = {}

    def add(self, words, check) -> None:
        """Read ``words`` (a device ``int64`` array) with the batch's first transfer, then call
        ``check(host_words)``."""
        self.parts.append((words, check))

    def absorb(self, words, check) -> None:
        """Like :meth:`add`, for a stage whose ``words`` start with a copy of every part's
        words so far (:meth:`words` before it), followed by its own: they replace the parts,
        and settling runs the earlier checks, then ``check`` on the stage's own words. So
        the batch's words stay one array, which :meth:`words` hands over without a
        concatenation."""
        parts = self.parts
        o = sum(int(w.size) for w, _ in parts)

        def settle_all(host_words):
            k = 0
            for w, c in parts:
                c(host_words[k:k + w.size])
                k += w.size
            check(host_words[o:])

        self.parts = [(words, settle_all)]

    def joins(self) -> int:
        """Array-library primitives :meth:`words` costs: 1 when it concatenates, else 0."""
        return int(len(self.parts) > 1)

    def words(self):
        """The device words to transfer, or None: the one part's array itself, or the parts
        concatenated (an array-library primitive, :meth:`joins`)."""
        if not self.parts:
            return None
        if len(self.parts) == 1:
            return self.parts[0][0].reshape(-1)
        return self.xp.concatenate([w.reshape(-1) for w, _ in self.parts])

    def settle(self, host_words) -> None:
        """Split the transferred words and run the checks in the order they were added."""
        o = 0
        parts, self.parts = self.parts, []
        for w, check in parts:
            check(host_words[o:o + w.size])
            o += w.size


class KernelSet(abc.ABC):
    """The operations the batched engine needs from a backend.

    Attributes
    ----------
    name : str
        Backend name (``"cpu"``, ``"cuda"``).
    xp : module
        The array namespace (``numpy``, ``cupy``) for glue: ``zeros``, ``searchsorted``,
        ``flatnonzero``, ``unique``, ``arange``.
    on_device : bool
        Whether arrays live on an accelerator (decides the ``auto`` propagation strategy).
    """

    name = "abstract"
    xp = np
    on_device = False

    def asarray(self, a):
        """Host array -> backend array (a copy to the device, or the array itself)."""
        return self.xp.asarray(a)

    def to_host(self, a) -> np.ndarray:
        """Backend array -> NumPy array."""
        return np.asarray(a)


    # batch intake: validation and consolidation
    def intake(self, graph, depth, loc, ts, diff, deferred=None):
        """Validate a batch as :func:`engine.batched.batch_arrays.batch_arrays` does (same exceptions,
        same messages, nothing changed on error) and consolidate it on the backend.

        Returns the consolidated ``(loc int32[k], ts int64[k, W], diff int64[k])`` as backend
        arrays, sorted by ``(loc, ts)``, zero sums dropped. This default validates on the
        host and consolidates on the backend; a device backend may validate while packing,
        and with ``deferred`` (:meth:`deferred`) leave its checks for the batch's first
        transfer (then the arrays may hold spare rows past ``deferred.batch_count``).
        The diffs of a pointstamp that sum outside int64 raise
        :class:`~engine.errors.CountOverflowError` (:func:`count_overflow`), never a wrapped
        count.
        """
        from engine.batched.batch_arrays import batch_arrays
        from gpu_kernels.consolidate import SumOverflow
        b_loc, b_ts, b_diff = batch_arrays(graph, depth, loc, ts, diff)
        try:
            return self.consolidate(self.asarray(b_loc), self.asarray(b_ts),
                                    self.asarray(b_diff))
        except SumOverflow as e:
            raise count_overflow(graph, e) from None

    # consolidation and the count table: gpu_kernels.consolidate
    @abc.abstractmethod
    def consolidate(self, loc, ts, diff):
        ...

    @abc.abstractmethod
    def merge_counts(self, t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip, deferred=None):
        ...

    # per-location frontiers: gpu_kernels.pareto
    def deferred(self) -> "Deferred | None":
        """A :class:`Deferred` for one batch when this backend can leave checks on the device
        until the batch's first transfer; None (the default) when every stage reads its own."""
        return None

    def flags(self, n: int):
        """``bool[n]`` zeros on the backend (the merge's flipped-location marks)."""
        return self.xp.zeros(n, dtype=self.xp.bool_)

    def frontier_update(self, t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m: int, deferred=None):
        """Every location's new ``F`` after a merge and how it changed:
        :func:`gpu_kernels.pareto.frontier_update` (``(F_ptr, F_ts, mode uint8[L], gone)``,
        backend arrays; ``gone`` marks the old ``F``'s withdrawn rows). A device backend may return ``F_ts`` with spare rows past ``F_ptr[L]``."""
        from gpu_kernels.pareto import frontier_update
        return frontier_update(t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m)

    def frontiers_to_host(self, F_ptr, F_ts, mode, deferred=None):
        """``F`` and the modes as host arrays (for host-side propagation)."""
        return self.to_host(F_ptr), self.to_host(F_ts), self.to_host(mode)

    # propagation: gpu_kernels.propagate. Edge-wise propagation runs on the host for every
    # backend (CpuKernels.edgewise): it does sequential work where frontiers change.
    @abc.abstractmethod
    def closure_step(self, ga, psi, mode, F_ptr, F_ts, I_ptr, I_ts, deferred=None, old_F=None):
        """The closure strategy: ``(I_ptr, I_ts, (c_loc, c_ts, c_diff))`` -- the new implied
        frontiers (backend arrays) of every target that a changed ``F`` (``mode > 0``, from
        :meth:`frontier_update`) reaches, and their changes as host arrays sorted by
        ``(loc, ts)``. ``old_F``: ``(F_ptr, F_ts, gone)`` from before the batch (``gone``: the
        withdrawn marks :meth:`frontier_update` made), which lets a backend update a target
        incrementally where no row of its old frontier lost every producer (a withdrawn
        witness and no other entry's new candidate below it:
        :func:`gpu_kernels.propagate.closure_vote`)."""

    @abc.abstractmethod
    def frontier_changes(self, locs, old_ptr, old_ts, new_ptr, new_ts, W):
        ...

    # accounting of device work (gpu_kernels._cuda.COUNTS); nothing to count on the host
    def counts_snapshot(self):
        """An opaque snapshot of the backend's work counters, or None if it counts nothing."""
        return None

    def counts_since(self, snap) -> dict[str, int]:
        """``{"launches", "ops", "syncs", "allocs"}`` issued since ``snap``; ``{}`` when the
        backend counts nothing."""
        return {}


class CpuKernels(KernelSet):
    """NumPy arrays and the Numba CPU twins of ``gpu_kernels``; also the host side of every
    backend's edge-wise propagation."""

    name = "cpu"
    xp = np
    on_device = False

    def intake(self, graph, depth, loc, ts, diff, deferred=None):
        """:meth:`KernelSet.intake`, with a fast path for the usual batch -- NumPy columns
        ``loc`` (int32 or int64), ``ts`` (int64, ``W`` columns), ``diff`` (int64) -- that
        validates in one kernel pass (``gpu_kernels.intake.check_columns``), which also finds
        the maxima the consolidation packs its keys with. Anything else, and any batch that
        pass finds a fault in, takes the general path, which names the error."""
        W = graph.m + graph.max_depth
        if (type(loc) is np.ndarray and type(ts) is np.ndarray and type(diff) is np.ndarray
                and loc.ndim == 1 and ts.ndim == 2 and diff.ndim == 1
                and loc.dtype in (np.int32, np.int64) and ts.dtype == np.int64
                and diff.dtype == np.int64 and ts.shape[1] == W
                and 0 < len(loc) == len(ts) == len(diff)):
            from gpu_kernels.consolidate import SumOverflow, consolidate
            from gpu_kernels.intake import check_columns
            ts = np.ascontiguousarray(ts)
            bad, lmax, cmax = check_columns(loc, ts, depth, graph.m, graph.num_locations)
            if bad < 0:
                try:
                    return consolidate(loc.astype(np.int32, copy=False), ts, diff,
                                       maxima=(lmax, cmax))
                except SumOverflow as e:
                    raise count_overflow(graph, e) from None
        return super().intake(graph, depth, loc, ts, diff, deferred)

    def consolidate(self, loc, ts, diff):
        from gpu_kernels.consolidate import consolidate
        return consolidate(loc, ts, diff)

    def merge_counts(self, t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip, deferred=None):
        from gpu_kernels.consolidate import merge_counts
        return merge_counts(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip)

    def edgewise(self, ga, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps):
        from gpu_kernels.propagate import edgewise
        return edgewise(ga.m, ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr, ga.out_dst, ga.order,
                        ga.rank, ga.scc, ga.scc_ptr, ga.scc_members, F_ptr, F_ts, I_ptr, I_ts,
                        seeds, max_steps)

    def gather_closure(self, ga, psi, F_ptr, F_ts, I_ptr, I_ts, seeds):
        """:func:`gpu_kernels.propagate.gather_closure` on ``Psi``'s own layout:
        ``(I_ptr, I_ts, touched)``."""
        from gpu_kernels.propagate import gather_closure
        dense = psi.dense
        i64, i32 = np.zeros(1, np.int64), np.zeros(1, np.int32)
        return gather_closure(
            ga.m, i64 if dense else psi.pair_ptr, i32 if dense else psi.pair_dst,
            i64 if dense else psi.sum_ptr, i64 if dense else psi.t_ptr,
            i32 if dense else psi.t_src, i64 if dense else psi.t_pair,
            psi.count if dense else np.zeros((1, 1), np.uint8),
            psi.sums.reshape(-1, psi.sums.shape[-1]), psi.max_antichain if dense else 0,
            F_ptr, F_ts, I_ptr, I_ts, seeds)

    def closure_step(self, ga, psi, mode, F_ptr, F_ts, I_ptr, I_ts, deferred=None, old_F=None):
        """:meth:`gather_closure` (every target a changed ``F`` reaches, recomputed in full;
        ``old_F`` is not needed) and :meth:`frontier_changes`."""
        seeds = np.flatnonzero(mode).astype(np.int64)
        if not len(seeds):
            return I_ptr, I_ts, (np.zeros(0, np.int32), np.zeros((0, ga.width), np.int64),
                                 np.zeros(0, np.int64))
        new_ptr, new_ts, touched = self.gather_closure(ga, psi, F_ptr, F_ts, I_ptr, I_ts, seeds)
        changes = self.frontier_changes(touched, I_ptr, I_ts, new_ptr, new_ts, ga.width)
        return new_ptr, new_ts, changes

    def frontier_changes(self, locs, old_ptr, old_ts, new_ptr, new_ts, W):
        from gpu_kernels.propagate import frontier_changes
        return frontier_changes(locs, old_ptr, old_ts, new_ptr, new_ts, W)


def warm_host_paths() -> None:
    """Load (or compile) the kernels of the host path a warm-up's array batches do not take:
    the general intake's consolidation, which finds the packing maxima itself (batches given
    as lists, or in other dtypes, take it)."""
    from gpu_kernels.consolidate import consolidate
    consolidate(np.array([0, 1], np.int32), np.zeros((2, 2), np.int64), np.ones(2, np.int64))


cpu_kernels = CpuKernels()
