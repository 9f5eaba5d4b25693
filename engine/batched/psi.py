"""The resident path-summary closure ``Psi`` in array form, computed by the closure kernel.

``Psi[l1, l2]`` is the antichain of minimal summaries over all paths from ``l1`` to ``l2``
(docs/semantics.md 2.4); :func:`compute_psi` computes every row with the kernel of
``gpu_kernels.closure`` (one source at a time, sources spread over threads) and stores the
result in the form that fits its size (docs/batched-engine.md, "Psi"):

* **ragged**: per source, the reachable targets with offsets into a flat array of summary
  rows, plus the same pairs grouped by *target* (what the closure propagation strategy
  gathers through);
* **dense**: ``sums[L, L, A, W]`` with the antichain sizes ``count[L, L]``, ``A`` the
  largest antichain actually present.

With ``kernels=`` a device backend (the cuda backend), the same kernel runs on the device, one
thread per source to settle and one per (source, target) pair to fill, and the result keeps
``Psi`` on the device in the form the backend's gather reads (:attr:`PsiArrays.device`).

Summary rows are ``[keep, d_out(m), vals(K)]`` (``gpu_kernels.summary_rows``), ``W = 1 + m +
K`` entries, packed into the narrowest signed integer dtype that holds every entry.

Examples
--------
>>> from engine.core.workload import example_graph
>>> g = example_graph()
>>> psi = compute_psi(g)
>>> psi
PsiArrays(layout=dense, L=8, pairs=42, summaries=42, max_antichain=1, dtype=int8, nbytes=256)
>>> l1, l2 = g.target(2, 0), g.target(3, 0)
>>> psi.summaries(l1, l2).tolist()
[[1, 0, 0]]
>>> psi.row(l2)[l1]  # feedback: one iteration later
(Summary(1->1, keep=1, d_out=(0,), d_cnt=(1,), reset=()),)
>>> from engine import closure
>>> all(psi.row(l) == closure(g)[l] for l in range(g.num_locations))
True
"""

from __future__ import annotations

import os
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from gpu_kernels.closure import (ANTICHAIN_OVERFLOW, closure_counts, closure_counts_cached,
                                 closure_fill_cached, closure_fill_cuda,
                                 closure_fill_dense_cached, closure_fill_dense_cuda,
                                 closure_settle_cuda, merge_excess, reach_counts,
                                 target_major_cuda, translation_mask, transpose_pairs,
                                 uniform_translations)
from gpu_kernels.summary_rows import smallest_dtype, unpack_summary_row

from engine.errors import AntichainOverflowError, PsiLimitError, UnknownLocationError
from engine.core.graph import Graph
from engine.core.choices import Choice
from engine.batched.graph_arrays import GraphArrays
from engine.core.summary import Summary

if TYPE_CHECKING:
    from engine.batched.kernels import KernelSet

__all__ = ["PsiLayout", "PsiArrays", "compute_psi", "check_psi_size", "estimate_bytes",
           "estimate_shape", "DEFAULT_MEMORY_BUDGET", "MAX_SUMMARIES"]

#: Default memory budget of the dense layout: 1 GiB.
DEFAULT_MEMORY_BUDGET = 1 << 30
#: The most summaries ``tfront psi`` lets ``Psi`` hold (``--max-summaries``; the API's
#: ``compute_psi(..., max_summaries=N)`` has no cap unless given one). Memory, time and the
#: report's length all grow with it: see docs/formats.md, "Closure output".
MAX_SUMMARIES = 20_000_000
#: Bytes :func:`compute_psi` may hold, on the host, of rows kept from its first pass so that
#: their sources need not settle again (``settle_cache``; 0 settles every source twice).
SETTLE_CACHE_BYTES = 256 << 20


class PsiLayout(Choice):
    """How ``Psi`` is stored; ``AUTO`` chooses (see :func:`compute_psi`)."""

    AUTO = "auto"
    DENSE = "dense"
    RAGGED = "ragged"

    @classmethod
    def label(cls) -> str:
        return "Psi layout"


@dataclass(frozen=True, eq=False, repr=False)
class PsiArrays:
    """``Psi`` of a graph as arrays (build it with :func:`compute_psi`).

    Attributes
    ----------
    layout : PsiLayout
        ``DENSE`` or ``RAGGED``.
    arrays : GraphArrays
        The graph's flat form (depths, to turn rows back into :class:`Summary` objects).
    L, m, K : int
        Locations, outer width, largest depth; ``W = 1 + m + K`` entries per summary row.
    dtype : numpy.dtype
        The packed dtype of the summary rows (the narrowest holding every entry).
    max_antichain : int
        The largest antichain present (0 for a graph without locations).
    num_pairs, num_summaries : int
        Pairs ``(l1, l2)`` with ``l2`` reachable from ``l1`` (``l1`` itself included), and
        summaries over all of them.
    pair_ptr : int64[L + 1]
        Ragged only: the pairs of source ``l1`` are ``pair_ptr[l1]:pair_ptr[l1 + 1]``.
    pair_dst : int32[P]
        Ragged only: the target of each pair, ascending within a source.
    sum_ptr : int64[P + 1]
        Ragged only: the summaries of pair ``i`` are ``sums[sum_ptr[i]:sum_ptr[i + 1]]``.
    sums : dtype[S, W] (ragged) or dtype[L, L, A, W] (dense)
        Summary rows; each antichain sorted lexicographically by row. Dense slots past
        ``count`` are zero.
    t_ptr : int64[L + 1]
        Ragged only: the pairs into target ``l2`` are ``t_ptr[l2]:t_ptr[l2 + 1]`` of
        ``t_src``/``t_pair``.
    t_src : int32[P]
        Ragged only: their sources, ascending.
    t_pair : int64[P]
        Ragged only: their index into ``pair_dst``/``sum_ptr``.
    count : uint8/int16/...[L, L]
        Dense only: the antichain size of every pair (0: ``l2`` not reachable).
    graph : Graph or None
        The graph, when it was given (for messages).
    device : types.SimpleNamespace or None
        Set when ``Psi`` was built on a device backend (``compute_psi(..., kernels=...)``
        with ``kernels.on_device``): ``Psi`` on that device, target-major, the form the
        closure step's gather reads (``gpu_kernels.propagate.target_major``): ``tm_ptr
        int64[L + 1]``, ``tm_src int32[S]``, ``tm_sum dtype[S, W]``, the entries of target
        ``l2`` being ``tm_ptr[l2]:tm_ptr[l2 + 1]``, sources ascending. ``None`` when built
        on the host. Not counted in :attr:`nbytes`.
    """

    layout: PsiLayout
    arrays: GraphArrays
    dtype: np.dtype
    max_antichain: int
    num_pairs: int
    num_summaries: int
    sums: np.ndarray
    pair_ptr: np.ndarray | None = None
    pair_dst: np.ndarray | None = None
    sum_ptr: np.ndarray | None = None
    t_ptr: np.ndarray | None = None
    t_src: np.ndarray | None = None
    t_pair: np.ndarray | None = None
    count: np.ndarray | None = None
    graph: Graph | None = None
    device: types.SimpleNamespace | None = None

    @property
    def L(self) -> int:
        return self.arrays.L

    @property
    def m(self) -> int:
        return self.arrays.m

    @property
    def K(self) -> int:
        return self.arrays.K

    def __repr__(self) -> str:
        return (f"PsiArrays(layout={self.layout.value}, L={self.L}, pairs={self.num_pairs}, "
                f"summaries={self.num_summaries}, max_antichain={self.max_antichain}, "
                f"dtype={self.dtype}, nbytes={self.nbytes})")

    @property
    def dense(self) -> bool:
        """Stored in the dense layout (``[L, L, A]`` plus counts), not as ragged rows."""
        return self.layout is PsiLayout.DENSE

    @property
    def nbytes(self) -> int:
        """Bytes held by the layout's arrays (not counting :attr:`arrays`)."""
        return sum(a.nbytes for a in (self.sums, self.pair_ptr, self.pair_dst, self.sum_ptr,
                                      self.t_ptr, self.t_src, self.t_pair, self.count)
                   if a is not None)

    # -- queries -----------------------------------------------------------------------------

    def summaries(self, l1: int, l2: int) -> np.ndarray:
        """``Psi[l1, l2]`` as ``int64[n, W]`` rows, sorted lexicographically (``n = 0`` when
        ``l2`` is not reachable from ``l1``). Cost O(log L + n W).

        Raises
        ------
        UnknownLocationError
            If ``l1`` or ``l2`` is not a location.
        """
        l1, l2 = self._check(l1), self._check(l2)
        W = 1 + self.m + self.K
        if self.layout is PsiLayout.DENSE:
            return self.sums[l1, l2, :int(self.count[l1, l2])].astype(np.int64)
        lo, hi = int(self.pair_ptr[l1]), int(self.pair_ptr[l1 + 1])
        i = lo + int(np.searchsorted(self.pair_dst[lo:hi], l2))
        if i == hi or self.pair_dst[i] != l2:
            return np.zeros((0, W), np.int64)
        return self.sums[self.sum_ptr[i]:self.sum_ptr[i + 1]].astype(np.int64)

    def targets(self, l1: int) -> np.ndarray:
        """``int32[n]``: the locations reachable from ``l1`` (itself included), ascending."""
        l1 = self._check(l1)
        if self.layout is PsiLayout.DENSE:
            return np.flatnonzero(self.count[l1]).astype(np.int32)
        return self.pair_dst[self.pair_ptr[l1]:self.pair_ptr[l1 + 1]]

    def sources(self, l2: int) -> np.ndarray:
        """``int32[n]``: the locations that reach ``l2`` (itself included), ascending."""
        l2 = self._check(l2)
        if self.layout is PsiLayout.DENSE:
            return np.flatnonzero(self.count[:, l2]).astype(np.int32)
        return self.t_src[self.t_ptr[l2]:self.t_ptr[l2 + 1]]

    def row(self, l1: int) -> dict[int, tuple[Summary, ...]]:
        """``Psi[l1]`` as the reference gives it (``engine.closure(graph)[l1]``): reachable
        location -> summaries sorted by :meth:`Summary.sort_key`. Cost O(row size) objects."""
        l1 = self._check(l1)
        ga, m = self.arrays, self.m
        d1 = int(ga.depth[l1])
        out: dict[int, tuple[Summary, ...]] = {}
        for l2 in self.targets(l1).tolist():
            d2 = int(ga.depth[l2])
            chain = [Summary(*unpack_summary_row(r, m, d1, d2)) for r in self.summaries(l1, l2)]
            out[l2] = tuple(sorted(chain, key=Summary.sort_key))
        return out

    def _check(self, loc) -> int:
        if isinstance(loc, bool) or not isinstance(loc, Integral) or not 0 <= loc < self.L:
            raise UnknownLocationError(f"location {loc!r} does not exist (the graph has "
                                       f"{self.L} locations)")
        return int(loc)

    # -- sizes -------------------------------------------------------------------------------

    @staticmethod
    def estimate_bytes(graph: Graph | GraphArrays, *, layout: PsiLayout | str = "auto",
                       memory_budget: int = DEFAULT_MEMORY_BUDGET) -> int:
        """An estimate, meant to err high, of :attr:`nbytes` before computing ``Psi``; see
        :func:`estimate_bytes`."""
        return estimate_bytes(graph, layout=layout, memory_budget=memory_budget)


def compute_psi(graph: Graph | GraphArrays, *, max_antichain: int | None = None,
                layout: PsiLayout | str = "auto", memory_budget: int = DEFAULT_MEMORY_BUDGET,
                threads: int | None = None, kernels: "KernelSet | None" = None,
                max_summaries: int | None = None,
                settle_cache: int = SETTLE_CACHE_BYTES) -> PsiArrays:
    """``Psi`` for all pairs of locations, as :class:`PsiArrays`.

    Parameters
    ----------
    graph : Graph or GraphArrays
        The location graph (a :class:`GraphArrays` saves re-flattening it; messages then
        name locations by id).
    max_antichain : int, optional
        The largest antichain allowed; ``None`` for no cap.
    layout : {"auto", "dense", "ragged"} or PsiLayout
        ``auto`` stores dense while the dense arrays take at most twice the ragged ones'
        bytes and at most ``memory_budget``, ragged otherwise.
    memory_budget : int
        Bytes the dense layout may take under ``auto``.
    threads : int, optional
        Worker threads (the kernel releases the GIL); default ``os.cpu_count()``. Unused on
        a device.
    kernels : KernelSet, optional
        The backend to build ``Psi`` with. On a device backend (``kernels.on_device``: the
        cuda backend, or its simulated form) ``Psi`` is computed on the device
        (``gpu_kernels.closure.closure_settle_cuda`` and the fill kernels) and the result
        keeps it on the device, target-major, in :attr:`PsiArrays.device` beside the host
        copies; default (and for the cpu backend) the host's thread pool.
    max_summaries : int, optional
        The most summaries ``Psi`` may hold; ``None`` (the default) for no cap. Checked
        twice before ``Psi`` is allocated: by :func:`check_psi_size` (pairs counted, cheap)
        before anything is computed, and on the exact count after the first pass.
    settle_cache : int
        Bytes of host memory (about) the first pass may fill with what the sources it
        settled are made of (their anchors' rows and, per target, the anchor and the
        translation), so that the second writes their rows from it instead of settling them
        again, and so that, on a graph of one depth without resets, a source with a single
        out-arc derives its row from its successor's instead of settling (default
        :data:`SETTLE_CACHE_BYTES`; 0: every source settles twice). The result is the same.
        Unused on a device.

    Returns
    -------
    PsiArrays
        The same arrays whichever backend built them.

    Raises
    ------
    AntichainOverflowError
        If the (final) antichain of some pair has more than ``max_antichain`` summaries; the
        message names the first such source and, within it, the first target (by id), and
        the cap. Nothing is stored.
    PsiLimitError
        If ``Psi`` would hold more than ``max_summaries`` summaries; the message gives the
        count (or, from the first check, a lower bound) and the bytes it would need.
    ValueError
        For a bad ``layout``, ``max_antichain``, ``memory_budget``, ``threads`` or
        ``max_summaries``.
    gpu_kernels.closure.WorkSpaceOverflow
        On a device, if a source's rows outgrow every work space it was given (a
        ``RuntimeError``; see ``closure_settle_cuda``).

    Notes
    -----
    Two passes over the sources, each split into chunks run on a thread pool: the first
    settles every source's fixed point and counts its pairs, summaries, largest entry and
    largest antichain, keeping the settled row while the settle cache has room, or deriving
    it from the successor's (``gpu_kernels.closure.closure_counts_cached``; sources by
    decreasing DFS rank within a chunk); the host then sizes the output exactly,
    chooses the dtype and the layout; the second writes the cached sources' rows from the
    cache and settles the others again to write theirs. Cost: the fixed points once (twice
    for the sources past the cache) plus O(S * W) to write; memory: the output, the cache
    (at most ``settle_cache`` bytes; about ``P * (8 + W)`` at N = 1000 on the synthetic
    workload, 26 MB), plus O(L * W) work space per thread. The ragged layout adds a
    counting sort by target, O(L + P).

    On a device the same steps run as kernels (the settle one thread per source, the fill
    one thread per source and target), in a number of launches that does not depend on the
    graph (two, and one host synchronisation, unless a source overflows its work space; see
    ``gpu_kernels.closure``): the settled work spaces stay on the device, so each source
    settles once; then the result is copied to the host.

    ``max_antichain`` bounds the *final* antichains. The reference (``engine.core.closure``)
    checks every intermediate antichain of its worklist, so on a graph whose antichains
    shrink on the way it may raise where this does not.
    """
    layout = PsiLayout.parse(layout)
    cap = _check_count(max_antichain, "max_antichain", allow_none=True) or 0
    budget = _check_count(memory_budget, "memory_budget", minimum=0)
    threads = _check_count(threads, "threads", allow_none=True) or (os.cpu_count() or 1)
    limit = _check_count(max_summaries, "max_summaries", allow_none=True)
    settle_cache = _check_count(settle_cache, "settle_cache", minimum=0)
    ga = graph if isinstance(graph, GraphArrays) else GraphArrays.from_graph(graph)
    described = graph if isinstance(graph, Graph) else None
    L, m, K = ga.L, ga.m, ga.K
    W = 1 + m + K
    if limit is not None:
        check_psi_size(ga, limit)
    fast = translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
    args = (m, K, ga.depth, ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr, ga.out_dst, ga.order,
            ga.rank, fast)
    if kernels is not None and kernels.on_device:
        return _compute_psi_device(ga, described, args, layout, cap, budget, kernels, limit)
    chunks = _chunks(L, threads)
    caches = _caches(ga, chunks, settle_cache)
    # sources by decreasing DFS rank within a chunk: a source's single successor comes first
    derive = bool(L) and bool(uniform_translations(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum))
    perms = [lo + np.argsort(-ga.rank[lo:hi], kind="stable") for lo, hi in chunks]

    with ThreadPoolExecutor(max_workers=threads) as pool:
        # Step 1: count pairs, summaries, the largest entry and antichain per source, and
        # keep the rows of what fits the settle cache.
        counted = list(pool.map(lambda c: closure_counts_cached(
            c[0][0], c[0][1], *args, cap, *c[1], c[2], derive), zip(chunks, caches, perms)))
        if any(c[0] == ANTICHAIN_OVERFLOW for c in counted):
            # the first overflowing source by id, then target, as the plain count names it
            for lo, hi in chunks:
                status, s, t, size, *_ = closure_counts(lo, hi, *args, cap)
                if status == ANTICHAIN_OVERFLOW:
                    raise _overflow(described, s, t, size, cap)
        n_pairs = np.concatenate([c[4] for c in counted]) if counted else np.zeros(0, np.int64)
        n_rows = np.concatenate([c[5] for c in counted]) if counted else np.zeros(0, np.int64)
        vmax = max((int(c[6]) for c in counted), default=0)
        largest = max((int(c[7]) for c in counted), default=0)
        pair_ptr = np.zeros(L + 1, np.int64)
        np.cumsum(n_pairs, out=pair_ptr[1:])
        P = int(pair_ptr[-1])
        S = int(n_rows.sum())

        # Step 2: choose the dtypes and the layout (within the size limit).
        layout, dtype, count_dtype = _choose(layout, L, P, S, W, vmax, largest, budget)
        _check_exact(L, P, S, W, layout, dtype, largest, count_dtype, limit)

        # Step 3: write the rows in place: copied from the cache, or settled again.
        work = [(lo, hi, c[8], *cache[:6], c[4])
                for (lo, hi), cache, c in zip(chunks, caches, counted)]
        del counted, caches
        if layout is PsiLayout.DENSE:
            sums = np.zeros((L, L, largest, W), dtype)
            count = np.zeros((L, L), count_dtype)
            list(pool.map(lambda w: closure_fill_dense_cached(
                w[0], w[1], *args, *w[2:], sums, count), work))
            return PsiArrays(layout, ga, dtype, largest, P, S, sums, count=count, graph=described)
        pair_dst = np.empty(P, np.int32)
        sum_ptr = np.empty(P + 1, np.int64)
        sum_ptr[P] = S
        row_ptr = np.zeros(L + 1, np.int64)
        np.cumsum(n_rows, out=row_ptr[1:])
        sums = np.empty((S, W), dtype)
        list(pool.map(lambda w: closure_fill_cached(
            w[0], w[1], *args, *w[2:], pair_ptr, row_ptr, pair_dst, sum_ptr, sums), work))
        del work
    # Step 4: the pairs grouped by target.
    t_ptr, t_src, t_pair = transpose_pairs(pair_ptr, pair_dst, L)
    return PsiArrays(layout, ga, dtype, largest, P, S, sums, pair_ptr=pair_ptr,
                     pair_dst=pair_dst, sum_ptr=sum_ptr, t_ptr=t_ptr, t_src=t_src,
                     t_pair=t_pair, graph=described)


def _compute_psi_device(ga: GraphArrays, described: Graph | None, args: tuple,
                        layout: PsiLayout, cap: int, budget: int, kernels,
                        limit: int | None = None) -> PsiArrays:
    """:func:`compute_psi` on a device backend: count, choose, fill on the device (see
    ``gpu_kernels.closure.closure_settle_cuda``); host copies plus :attr:`PsiArrays.device`."""
    m, K = args[0], args[1]
    L, W = ga.L, 1 + m + K
    dev, host = kernels.asarray, kernels.to_host
    # Step 1: settle every source and count its row (one launch, one sync).
    settle = closure_settle_cuda(m, K, *(dev(a) for a in args[2:]), cap)
    if settle.status == ANTICHAIN_OVERFLOW:
        raise _overflow(described, settle.err_src, settle.err_dst, settle.err_size, cap)
    P, S, largest = settle.num_pairs, settle.num_summaries, settle.largest
    # Step 2: choose the dtypes and the layout, as on the host.
    layout, dtype, count_dtype = _choose(layout, L, P, S, W, settle.vmax, largest, budget)
    _check_exact(L, P, S, W, layout, dtype, largest, count_dtype, limit)
    # Step 3: write the rows from the settled work spaces (and group the pairs by target);
    # keep Psi on the device target-major, the form the gather reads.
    if layout is PsiLayout.DENSE:
        sums, count = closure_fill_dense_cuda(settle, dtype, count_dtype)
        i64, i32 = dev(np.zeros(1, np.int64)), dev(np.zeros(1, np.int32))
        tm = target_major_cuda(L, largest, count, i64, i32, i64, i64, sums.reshape(-1, W),
                               num_summaries=S)
        return PsiArrays(layout, ga, dtype, largest, P, S, host(sums), count=host(count),
                         graph=described, device=_target_major(tm))
    pair_ptr, pair_dst, sum_ptr, sums, t_ptr, t_src, t_pair = closure_fill_cuda(settle, dtype)
    tm = target_major_cuda(L, 0, None, t_ptr, t_src, t_pair, sum_ptr, sums)
    return PsiArrays(layout, ga, dtype, largest, P, S, host(sums), pair_ptr=host(pair_ptr),
                     pair_dst=host(pair_dst), sum_ptr=host(sum_ptr), t_ptr=host(t_ptr),
                     t_src=host(t_src), t_pair=host(t_pair), graph=described,
                     device=_target_major(tm))


def _target_major(tm) -> types.SimpleNamespace:
    return types.SimpleNamespace(tm_ptr=tm[0], tm_src=tm[1], tm_sum=tm[2])


def estimate_bytes(graph: Graph | GraphArrays, *, layout: PsiLayout | str = "auto",
                   memory_budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """Estimate the bytes of ``compute_psi(graph, layout=layout).nbytes`` without computing
    ``Psi``, to choose a propagation strategy. Meant to err high.

    How: a breadth-first search from every location counts the pairs ``P`` exactly (the
    locations each one reaches). Every antichain of a source's row is estimated by ``1 +``
    the *merge excess* of the locations it reaches: for each, its in-arcs beyond the first (an
    edge labelled with an antichain of ``k`` summaries counts as ``k`` arcs), since minimal
    summaries come from distinct paths and paths only multiply where arcs merge. Inside a
    component whose cycles all strictly advance, ``Psi`` is the minimum over simple paths
    and the arcs that close cycles (back arcs of the DFS order) are not charged
    (``gpu_kernels.closure.merge_excess``): a loop head with its feedback adds nothing, a
    diamond adds one. So ``S`` is estimated as ``sum over sources of reach x (1 + excess)``
    and ``A`` as the largest ``1 + excess``. With unit steps in one coordinate (``d``
    delay/step diamonds in series give ``d + 1`` summaries) this bounds the truth; weighted
    merges (steps of different sizes), and diamonds in series that step different
    coordinates (an epoch, a loop counter and a reset: their minimal sums can outnumber
    ``1 + excess``), can exceed it, so it is an estimate, not a guarantee. Over random
    timely-style graphs (``tests/strategies.py``, 4,000 drawn) the ragged estimate never fell
    short, and the dense one, which rests on the single largest antichain, fell short by up
    to 28 % (an antichain of 7 estimated as 5). Only the *strategy* rests on the estimate:
    :func:`compute_psi` lays ``Psi`` out from its exact counts. Entries are
    bounded by the sum of all arc entries (plus ``K`` for ``keep``), which fixes the
    itemsize. The layout rule is :func:`compute_psi`'s.

    Cost: O(L * (L + A)) for the searches (Numba), O(L + A) for the rest; no ``Psi`` rows.

    >>> from engine.core.workload import example_graph
    >>> estimate_bytes(example_graph()) >= compute_psi(example_graph()).nbytes
    True
    """
    layout = PsiLayout.parse(layout)
    budget = _check_count(memory_budget, "memory_budget", minimum=0)
    ga = graph if isinstance(graph, GraphArrays) else GraphArrays.from_graph(graph)
    L, W = ga.L, 1 + ga.m + ga.K
    if L == 0:
        return 0
    P, S, A = estimate_shape(ga)
    bound = int(ga.in_sum[:, 1:].sum()) + ga.K if len(ga.in_sum) else ga.K
    itemsize = smallest_dtype(bound).itemsize
    ragged = _ragged_bytes(L, P, S, W, itemsize)
    dense = _dense_bytes(L, A, W, itemsize, smallest_dtype(A).itemsize)
    if layout is PsiLayout.DENSE:
        return dense
    if layout is PsiLayout.RAGGED:
        return ragged
    return dense if dense <= 2 * ragged and dense <= budget else ragged


def estimate_shape(ga: GraphArrays) -> tuple[int, int, int]:
    """``(P, S, A)``, the pairs, summaries and largest antichain :func:`estimate_bytes`
    estimates (its notes say how), without ``Psi`` rows. Memoized on ``ga``: the searches
    cost O(L (L + A)) and both the layout rule and the strategy's cost model need them."""
    hit = getattr(ga, "_psi_shape", None)
    if hit is not None:
        return hit
    if ga.L == 0:
        shape = (0, 0, 0)
    else:
        excess = merge_excess(ga.scc, ga.rank, ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
        reach, merged = reach_counts(ga.out_ptr, ga.out_dst, excess, -1)
        width = 1 + merged
        shape = (int(reach.sum()), int((reach * width).sum()), int(width.max()))
    object.__setattr__(ga, "_psi_shape", shape)
    return shape


def check_psi_size(graph: Graph | GraphArrays, max_summaries: int) -> int:
    """Refuse a graph whose ``Psi`` holds more than ``max_summaries`` summaries, before
    computing any of it: every pair ``(l1, l2)`` with a path holds at least one, so the
    pairs are counted (a breadth-first search per location) -- for the message, up to ten
    times the limit. Returns the pairs (when they are within the limit).

    Raises
    ------
    PsiLimitError
        With the pairs (all of them, or those counted before ten times the limit: either
        way a lower bound on the summaries) and the bytes they would take at least, the
        limit and the option that raises it.

    Notes
    -----
    Cost O(min(P, 10 * max_summaries) * out-degree) (Numba; about 6 ns a pair here, 0.1 s
    at the default :data:`MAX_SUMMARIES`, 1.1 s to refuse a graph of ten times that), O(L)
    space; the exact count of the summaries comes with ``compute_psi``'s first pass.

    >>> from engine.core.workload import example_graph
    >>> check_psi_size(example_graph(), 100)
    42
    """
    limit = _check_count(max_summaries, "max_summaries")
    ga = graph if isinstance(graph, GraphArrays) else GraphArrays.from_graph(graph)
    if ga.L == 0:
        return 0
    reach, _ = reach_counts(ga.out_ptr, ga.out_dst, np.zeros(ga.L, np.int64), 10 * limit)
    P = int(reach.sum())
    if P > limit:
        pairs = (f"{P:,} pairs of locations joined by a path" if reach[-1] else
                 f"more than {P:,} pairs of locations joined by a path (counting stopped there)")
        need = _ragged_bytes(ga.L, P, P, 1 + ga.m + ga.K, 1)
        raise PsiLimitError(
            f"Psi of this graph ({ga.L:,} locations) has {pairs}, and so at least as many "
            f"summaries, more than max_summaries = {limit:,}: at least {_gb(need)} as arrays "
            f"and a line of output per pair; raise the limit (--max-summaries) to compute it",
            P, limit, False)
    return P


# -- helpers ------------------------------------------------------------------------------------

def _check_exact(L: int, P: int, S: int, W: int, layout: PsiLayout, dtype: np.dtype,
                 largest: int, count_dtype: np.dtype, limit: int | None) -> None:
    """:func:`compute_psi`'s second check, on the exact counts, before ``Psi`` is allocated."""
    if limit is None or S <= limit:
        return
    need = (_dense_bytes(L, largest, W, dtype.itemsize, count_dtype.itemsize)
            if layout is PsiLayout.DENSE else _ragged_bytes(L, P, S, W, dtype.itemsize))
    raise PsiLimitError(
        f"Psi of this graph ({L:,} locations) has {S:,} summaries over {P:,} pairs, more than "
        f"max_summaries = {limit:,}: {_gb(need)} as arrays and {P:,} lines of output at most; "
        f"raise the limit (--max-summaries) to compute it", S, limit, True)


def _gb(nbytes: int) -> str:
    return f"{nbytes / 1e9:,.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:,.1f} MB"


def _choose(layout: PsiLayout, L: int, P: int, S: int, W: int, vmax: int, largest: int,
            budget: int) -> tuple[PsiLayout, np.dtype, np.dtype]:
    """The layout (``auto`` resolved), the summary dtype and the dense count dtype."""
    dtype = smallest_dtype(vmax)
    count_dtype = smallest_dtype(largest)
    if layout is PsiLayout.AUTO:
        ragged = _ragged_bytes(L, P, S, W, dtype.itemsize)
        dense = _dense_bytes(L, largest, W, dtype.itemsize, count_dtype.itemsize)
        layout = PsiLayout.DENSE if dense <= 2 * ragged and dense <= budget else PsiLayout.RAGGED
    return layout, dtype, count_dtype


def _ragged_bytes(L: int, P: int, S: int, W: int, itemsize: int) -> int:
    # pair_ptr, pair_dst, sum_ptr, sums, and the transpose t_ptr, t_src, t_pair
    return 8 * (L + 1) + 4 * P + 8 * (P + 1) + S * W * itemsize + 8 * (L + 1) + 4 * P + 8 * P


def _dense_bytes(L: int, A: int, W: int, itemsize: int, count_itemsize: int) -> int:
    return L * L * (A * W * itemsize + count_itemsize)


def _caches(ga: GraphArrays, chunks: list[tuple[int, int]], budget: int) -> list[tuple]:
    """Per chunk of sources, an empty settle cache for ``closure_counts_cached``: ``(c_dst,
    c_anc, c_delta, a_off, a_cnt, a_rows, c_vmax)``, its share of ``budget`` bytes by sources:
    at most three quarters for the pairs (8 bytes plus a row each), an eighth for the
    anchors (12 bytes each) and an eighth for their rows, and no more pairs, anchors or rows
    than ``L`` per source. The entries' dtype is a guess from the graph (the entries summed
    over every arc, plus ``K``): a source with a larger entry is not cached. ``np.empty``
    commits no memory before it is written, so a chunk holds about the bytes of what it
    caches."""
    L, W = ga.L, 1 + ga.m + ga.K
    bound = int(ga.in_sum[:, 1:].sum()) + ga.K if len(ga.in_sum) else ga.K
    dtype = smallest_dtype(bound)
    row = W * dtype.itemsize
    vmax = int(np.iinfo(dtype).max)
    out = []
    for lo, hi in chunks:
        share = budget * (hi - lo) // max(L, 1)
        most = (hi - lo) * L
        pairs = min(most, 3 * share // 4 // (8 + row))
        anchors = min(most, share // 8 // 12)
        rows = min(most, share // 8 // row)
        out.append((np.empty(pairs, np.int32), np.empty(pairs, np.int32),
                    np.empty((pairs, W), dtype), np.empty(anchors, np.int64),
                    np.empty(anchors, np.int32), np.empty((rows, W), dtype), vmax))
    return out


def _chunks(L: int, threads: int) -> list[tuple[int, int]]:
    """Source ranges: about eight per thread, so that uneven rows still balance."""
    size = max(1, -(-L // (8 * threads)))
    return [(lo, min(lo + size, L)) for lo in range(0, L, size)]


def _check_count(value, name: str, *, allow_none: bool = False, minimum: int = 1):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}"
                         f"{' or None' if allow_none else ''}, got {value!r}")
    return int(value)


def _overflow(graph: Graph | None, source: int, target: int, size: int,
              cap: int) -> AntichainOverflowError:
    where = (f" ({graph.describe(source)} to {graph.describe(target)})" if graph is not None
             else f" (location {source} to location {target})")
    err = AntichainOverflowError(
        f"Psi[{source}][{target}]{where} has {size} minimal summaries, more than "
        f"max_antichain={cap}; raise the cap")
    err.source, err.target, err.size, err.max_antichain = source, target, size, cap
    return err
