"""Batch intake: a raw delta batch validated while it is packed, then consolidated by one
key-only sort with the row index in the key's low bits.

The columns arrive as they were given (``loc``: integer ``[n]``, ``ts``: integer ``[n, w]``
with ``w == W`` or ``w`` the width of every row's location, ``diff``: integer ``[n]``; any
integer dtype narrower than ``uint64``). Per row, the scalar core :func:`row_error` checks
the rules of docs/semantics.md 2.2 and 7 in the order ``engine.batched.batch_arrays`` checks them and names
the first that fails:

* ``LOC``: the location is outside ``0..L-1``;
* ``WIDTH``: ``w != W`` and the row's location has ``m + depth != w`` coordinates;
* ``RANGE``: a coordinate lies outside ``[0, 2**62)``;
* ``PADDING``: an unused counter (beyond the location's depth) is not 0.

Validation here only *detects*: it records, per kind, the first offending row; the caller
(``engine.batched.cuda``) then recomputes the exact exception on the host. A valid batch
leaves behind the maxima of ``loc`` and of every coordinate column (the packing plan) and,
once packed, the keys :func:`row_key`: ``loc`` and the ``W`` columns at the plan's bit widths
(``consolidate.pack_plan``), then the row index in the low ``idx_bits = bitlen(n - 1)``
bits. Keys are distinct and sort like ``(loc, ts, row)``: one key-only sort replaces an
argsort carrying an index, and the index recovers each sorted row's ``diff``.
Consolidation of the sorted keys: a row ends a run when the next key differs above
``idx_bits``; the run's sum is ``csum[end] - csum[start - 1]`` over the scan of the sorted
diffs (int64 wrap-around cancels in the difference), ``start`` found by :func:`run_start`
(galloping back, ``O(log run length)``); runs with a non-zero sum are kept, in order.
A run whose sum leaves int64 is never kept wrapped: when some diff is large enough that a
sum of ``n`` could leave int64 (``|d| > INT64_MAX // n``, flagged while the diffs are
gathered), each run of two or more rows is also summed exactly
(``consolidate.sum_overflows``), and the first that leaves int64 is flagged; the host then
raises ``consolidate.SumOverflow``, naming the pointstamp and the exact sum its CPU twin
finds.

CPU twins: :func:`check_pack` (validation, maxima, packing), :func:`runs_from_sorted`
(run sums and compaction) and :func:`intake` (the whole step). CUDA: :func:`intake_cuda`, the
same contract on the arrays' device; its kernels (``check_pack``, ``run_values``,
``run_tails``, ``emit_runs``) run the same scalar cores through ``_cuda.device``.
"""

from __future__ import annotations

import functools
import types
from typing import NamedTuple

import numpy as np
from numba import int64, njit

from . import _cuda
from .consolidate import (INT64_MAX, SumOverflow, consolidate, consolidate_sorting_cuda,
                          may_overflow, overflow_on_host, pack_plan, sum_overflows, unpack_key)

__all__ = ["LOC", "WIDTH", "RANGE", "PADDING", "KINDS", "MAX_COORD", "MAX_WIDTH",
           "SHARED_SLOTS", "stats_size", "Intake", "row_error", "row_key", "run_start",
           "check_pack", "check_columns", "runs_from_sorted", "intake", "intake_cuda",
           "consolidate_cuda", "speculative_widths", "deferred_verdict"]

#: Error kinds, in the order ``engine.batched.batch_arrays`` checks them over the whole batch.
LOC, WIDTH, RANGE, PADDING = 0, 1, 2, 3
KINDS = 4
#: Coordinates must lie in ``[0, MAX_COORD)`` (docs/semantics.md 2.2).
MAX_COORD = 1 << 62
#: Per-block shared slots of ``check_pack``: the first bad rows and the maxima.
SHARED_SLOTS = 64
#: The widest timestamp ``W`` the device intake takes (wider goes through the host).
MAX_WIDTH = SHARED_SLOTS - KINDS - 1


def stats_size(W: int) -> int:
    """Entries of the statistics array: first bad row per kind (``KINDS``), the location
    maximum, ``W`` column maxima, the first row whose diff is large (``|d| > INT64_MAX //
    n``: some sum could leave int64), the first run (its last sorted row) whose sum leaves
    int64 -- both ``n`` when none -- and the number of consolidated rows: the last three at
    ``S - 3``, ``S - 2``, ``S - 1``."""
    return KINDS + 1 + W + 3


class Intake(NamedTuple):
    """What an intake found. ``bad``: ``int64[KINDS]``, the first offending row per kind
    (``n`` when none); ``maxima``: ``int64[1 + W]`` (location, then columns) of a valid
    batch, else None; ``loc``, ``ts``, ``diff``: the consolidated batch (sorted by
    ``(loc, ts)``, zero sums dropped) on the inputs' device, or None for an invalid batch."""

    bad: np.ndarray | None
    maxima: np.ndarray | None
    loc: object
    ts: object
    diff: object
    #: deferred intake only (``bad``/``maxima`` None until read): the device statistics
    #: array (:func:`stats_size` entries) and the guessed widths it was packed with
    pending: object = None
    spec: np.ndarray | None = None

    @property
    def valid(self) -> bool:
        return self.loc is not None


# -- the scalar core ----------------------------------------------------------------------------

@njit(cache=True, inline="always")
def row_error(l, row, w, depth, m, W, L):
    """The first rule row ``(l, row)`` breaks: ``LOC``, ``WIDTH``, ``RANGE``, ``PADDING``,
    or -1 (valid). ``row`` has ``w`` coordinates; the batch's width is ``W``."""
    if l < 0 or l >= L:
        return LOC
    width = m + depth[l]
    if w != W and width != w:
        return WIDTH
    for c in range(w):
        v = row[c]
        if v < 0 or v >= MAX_COORD:
            return RANGE
    for c in range(width, w):
        if row[c] != 0:
            return PADDING
    return -1


@njit(cache=True, inline="always")
def row_key(l, row, w, widths, W, idx, idx_bits):
    """The packed key of a valid row: ``l``, then columns ``0..W-1`` (0 beyond ``w``) at
    ``widths[c + 1]`` bits each, most significant first, then ``idx`` in the low
    ``idx_bits`` bits. A value wider than its field spoils only the fields above ``idx``."""
    k = np.uint64(l)
    for c in range(W):
        v = np.uint64(0)
        if c < w:
            v = np.uint64(row[c])
        k = (k << np.uint64(widths[c + 1])) | v
    return (k << np.uint64(idx_bits)) | np.uint64(idx)


@njit(cache=True, inline="always")
def run_start(keys, i, idx_bits):
    """First index of the run of sorted ``keys`` (equal above ``idx_bits``) holding ``i``:
    galloping back from ``i``, then a binary search; ``O(log run length)`` reads."""
    sh = np.uint64(idx_bits)
    hi = np.uint64(keys[i]) >> sh
    b = i
    step = 1
    while b - step >= 0 and (np.uint64(keys[b - step]) >> sh) == hi:
        b -= step
        step *= 2
    lo = b - step
    if lo < -1:
        lo = -1
    while b - lo > 1:
        mid = (lo + b) // 2
        if (np.uint64(keys[mid]) >> sh) == hi:
            b = mid
        else:
            lo = mid
    return b


# -- CPU twins ----------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def check_pack(loc, ts, depth, m, L, widths, idx_bits, validate, pack, keys, stats):
    """CPU twin of the ``check_pack`` kernel: per row, :func:`row_error` (when ``validate``)
    into ``stats[kind] = min(first bad row)``, the maxima of valid rows into
    ``stats[KINDS:KINDS + 1 + W]``, and (when ``pack``) ``keys[i] = row_key(...)`` (``i`` for
    an invalid row). ``stats`` must start as ``[n] * KINDS + [0] * (2 + W)``."""
    n = loc.shape[0]
    w = ts.shape[1]
    W = widths.shape[0] - 1
    for i in range(n):
        l = loc[i]
        kind = -1
        if validate:
            kind = row_error(l, ts[i], w, depth, m, W, L)
        if kind >= 0:
            if i < stats[kind]:
                stats[kind] = i
            if pack:
                keys[i] = i
            continue
        if l > stats[KINDS]:
            stats[KINDS] = l
        for c in range(w if w < W else W):  # not min(): numba-cuda's takes an iterable
            if ts[i, c] > stats[KINDS + 1 + c]:
                stats[KINDS + 1 + c] = ts[i, c]
        if pack:
            keys[i] = row_key(l, ts[i], w, widths, W, i, idx_bits)


@njit(cache=True, nogil=True)
def check_columns(loc, ts, depth, m, L):
    """The host intake's validation in one pass (CPU only; issue 33): whether the batch
    ``loc int[n]``, ``ts int64[n, W]`` (every row padded to ``W``) breaks a rule of
    :func:`row_error`, and the maxima of a valid one.

    Returns ``(bad, loc_max, col_max int64[W])``: ``bad`` is -1 for a valid batch, else some
    offending row (not necessarily the first: the caller then names the error the slow way,
    ``engine.batched.batch_arrays``); the maxima are meaningful only when ``bad == -1``
    (``loc_max`` at least 0, columns at least 0)."""
    n, W = ts.shape
    lmax = 0
    cmax = np.zeros(W, np.int64)
    for i in range(n):
        l = loc[i]
        if l < 0 or l >= L:
            return i, lmax, cmax
        if l > lmax:
            lmax = l
        width = m + depth[l]
        for c in range(W):
            v = ts[i, c]
            if v < 0 or v >= MAX_COORD or (c >= width and v != 0):
                return i, lmax, cmax
            if v > cmax[c]:
                cmax[c] = v
    return -1, lmax, cmax


def runs_from_sorted(keys, diff, idx_bits, widths):
    """CPU twin of the run kernels: sum ``diff`` (through each sorted key's row index) over
    runs of keys equal above ``idx_bits``, keep the non-zero runs, unpack them.

    Returns ``(loc int32[k], ts int64[k, W], diff int64[k])`` in key order; raises
    ``consolidate.SumOverflow`` for the first run whose sum leaves int64."""
    exact = may_overflow(diff)
    out_loc, out_ts, out_diff, vals, a, b = _runs_from_sorted(keys, diff, idx_bits, widths,
                                                              exact)
    if a >= 0:
        raise SumOverflow(out_loc[-1], out_ts[-1], sum(int(x) for x in vals[a:b]))
    return out_loc, out_ts, out_diff


@njit(cache=True, nogil=True)
def _runs_from_sorted(keys, diff, idx_bits, widths, exact):
    """:func:`runs_from_sorted`; with ``exact``, a run of two or more rows is also summed
    exactly and the first one outside int64 ends the pass: it is the last output row, its
    sorted diffs ``vals[a:b]`` (``a = -1`` when none)."""
    n = keys.shape[0]
    W = widths.shape[0] - 1
    sh = np.uint64(idx_bits)
    mask = (np.uint64(1) << sh) - np.uint64(1)
    csum = np.empty(n, dtype=np.int64)
    vals = np.empty(n if exact else 0, dtype=np.int64)
    acc = np.int64(0)
    for i in range(n):
        d = diff[np.int64(np.uint64(keys[i]) & mask)]
        if exact:
            vals[i] = d
        acc += d
        csum[i] = acc
    out_loc = np.empty(n, dtype=np.int32)
    out_ts = np.empty((n, W), dtype=np.int64)
    out_diff = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if i + 1 < n and (np.uint64(keys[i + 1]) >> sh) == (np.uint64(keys[i]) >> sh):
            continue
        a = run_start(keys, i, idx_bits)
        s = csum[i]
        if a > 0:
            s -= csum[a - 1]
        if exact and i > a and sum_overflows(vals, a, i + 1):
            out_loc[k] = unpack_key(np.uint64(keys[i]) >> sh, widths, out_ts[k], W)
            return out_loc[:k + 1], out_ts[:k + 1], out_diff[:k + 1], vals, a, i + 1
        if s != 0:
            out_loc[k] = unpack_key(np.uint64(keys[i]) >> sh, widths, out_ts[k], W)
            out_diff[k] = s
            k += 1
    return out_loc[:k], out_ts[:k], out_diff[:k], vals, -1, -1


def _fresh_stats(n: int, W: int) -> np.ndarray:
    s = np.zeros(stats_size(W), np.int64)
    s[:KINDS] = n
    s[-3:-1] = n
    return s


def _key_dtype(bits: int):
    return np.uint32 if bits <= 32 else np.uint64


def intake(loc, ts, diff, depth, m: int, L: int, W: int) -> Intake:
    """CPU twin of :func:`intake_cuda` (the exact plan, never a speculative one): validate,
    then consolidate through packed keys with the row index, or through
    ``consolidate.consolidate`` when those keys would not fit 64 bits.

    Parameters
    ----------
    loc : integer[n], ts : integer[n, w], diff : integer[n]
        Raw columns (any integer dtype but ``uint64``).
    depth : int64[L]
        Loop depth per location; ``m`` outer coordinates; ``W = m + max depth``.

    Returns
    -------
    Intake

    Raises
    ------
    gpu_kernels.consolidate.SumOverflow
        The diffs of a valid batch's ``(loc, ts)`` sum outside int64.
    """
    n, w = ts.shape
    stats = _fresh_stats(n, W)
    keys = np.empty(n, np.uint64)
    check_pack(loc, ts, depth, m, L, np.zeros(W + 1, np.int64), 0, True, False, keys, stats)
    bad = stats[:KINDS].copy()
    if (bad < n).any():
        return Intake(bad, None, None, None, None)
    maxima = stats[KINDS:KINDS + 1 + W].copy()
    idx_bits = max(n - 1, 0).bit_length()
    plan = pack_plan(maxima[0], maxima[1:])
    if plan is None or plan[1] + idx_bits > 64 or n == 0:
        t = np.zeros((n, W), np.int64)
        t[:, :w] = ts
        out = consolidate(loc.astype(np.int32), t, diff.astype(np.int64))
        return Intake(bad, maxima, *out)
    widths = plan[0]
    check_pack(loc, ts, depth, m, L, widths, idx_bits, False, True, keys, stats)
    keys.sort()
    return Intake(bad, maxima, *runs_from_sorted(keys, diff, idx_bits, widths))


def speculative_widths(maxima, L: int, n: int):
    """Bit widths to pack the *next* batch with before its maxima are known, from this
    batch's ``maxima`` (``int64[1 + W]``): the location's full range ``bitlen(L - 1)`` (every
    valid row fits), and one bit of headroom over each column's maximum (so a counter or an
    epoch may double before the guess fails). None if the guess would not fit 64 bits
    with the index of ``n`` rows."""
    widths = [int(L - 1).bit_length()] + [int(v).bit_length() + 1 for v in maxima[1:]]
    if sum(widths) + max(n - 1, 0).bit_length() > 64:
        return None
    return np.asarray(widths, np.int64)


# -- CUDA ---------------------------------------------------------------------------------------

#: ``numba.cuda``, bound by :func:`_kernels` on first use (a module global: the simulator swaps
#: the kernels' global ``cuda`` for its fake module).
cuda = None


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    err = _cuda.device(row_error)
    key = _cuda.device(row_key)
    start = _cuda.device(run_start)
    unpack = _cuda.device(unpack_key)
    sum_over = _cuda.device(sum_overflows)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def check_pack(loc, ts, depth, m, L, widths, idx_bits, validate, pack, keys, stats):
        """Thread per row: ``row_error`` (first bad row per kind, atomic min), the maxima
        of valid rows (atomic max), and the packed key. Each block reduces into shared
        memory first, then issues one global atomic per slot: ``KINDS + 1 + W`` per block.
        Reads ``itemsize(loc) + w * itemsize(ts)`` bytes per row, writes the key."""
        sh = cuda.shared.array(SHARED_SLOTS, int64)
        n = loc.shape[0]
        w = ts.shape[1]
        W = widths.shape[0] - 1
        t = cuda.threadIdx.x
        nt = cuda.blockDim.x
        for s in range(t, KINDS + 1 + W, nt):
            sh[s] = n if s < KINDS else 0
        cuda.syncthreads()
        i = cuda.grid(1)
        if i < n:
            l = loc[i]
            kind = -1
            if validate:
                kind = err(l, ts[i], w, depth, m, W, L)
            if kind >= 0:
                cuda.atomic.min(sh, kind, np.int64(i))
                if pack:
                    keys[i] = i
            else:
                cuda.atomic.max(sh, KINDS, np.int64(l))
                for c in range(w if w < W else W):  # not min(): numba-cuda's takes an iterable
                    cuda.atomic.max(sh, KINDS + 1 + c, np.int64(ts[i, c]))
                if pack:
                    keys[i] = key(l, ts[i], w, widths, W, i, idx_bits)
        cuda.syncthreads()
        for s in range(t, KINDS + 1 + W, nt):
            v = sh[s]
            if s < KINDS:
                if v < n:
                    cuda.atomic.min(stats, s, v)
            elif v > 0:
                cuda.atomic.max(stats, s, v)

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def run_values(keys, idx_bits, diff, vals, lim, stats):
        """vals[i] <- diff[row index of sorted key i]; thread per row; a random 8-byte read.
        A value outside ``[-lim, lim]`` (``lim = INT64_MAX // n``: some sum could leave
        int64) sets stats[S - 3] to the least such i (atomic min; none on ordinary diffs)."""
        i = cuda.grid(1)
        if i < keys.shape[0]:
            mask = (np.uint64(1) << np.uint64(idx_bits)) - np.uint64(1)
            d = diff[np.int64(np.uint64(keys[i]) & mask)]
            vals[i] = d
            if d > lim or d < -lim:
                cuda.atomic.min(stats, stats.shape[0] - 3, np.int64(i))

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def run_tails(keys, idx_bits, csum, vals, keep, total, stats):
        """At the last row of each run: total <- the run's sum (``csum`` differences,
        ``run_start`` galloping back), keep <- sum != 0; keep <- 0 elsewhere. When
        ``run_values`` flagged a large diff, a run of two or more rows is also summed exactly
        (``sum_overflows``, O(run length)) and stats[S - 2] <- the least last row of a run
        outside int64 (atomic min)."""
        i = cuda.grid(1)
        n = keys.shape[0]
        if i < n:
            sh = np.uint64(idx_bits)
            if i + 1 < n and (np.uint64(keys[i + 1]) >> sh) == (np.uint64(keys[i]) >> sh):
                keep[i] = 0
            else:
                a = start(keys, i, idx_bits)
                s = csum[i]
                if a > 0:
                    s = s - csum[a - 1]
                total[i] = s
                keep[i] = 1 if s != 0 else 0
                S = stats.shape[0]
                if stats[S - 3] < n and i > a:
                    if sum_over(vals, a, i + 1):
                        cuda.atomic.min(stats, S - 2, np.int64(i))

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def emit_runs(keys, idx_bits, widths, keep, pos, total, out_loc, out_ts, out_diff, stats):
        """Kept run ending at i -> output row pos[i] - 1 (unpacked key, its sum); the last
        thread stores the number of output rows in ``stats[-1]``."""
        i = cuda.grid(1)
        n = keys.shape[0]
        if i < n:
            if keep[i] != 0:
                k = pos[i] - 1
                out_loc[k] = unpack(np.uint64(keys[i]) >> np.uint64(idx_bits), widths, out_ts[k],
                                    out_ts.shape[1])
                out_diff[k] = total[i]
            if i == n - 1:
                stats[stats.shape[0] - 1] = pos[i]

    return types.SimpleNamespace(check_pack=check_pack, run_values=run_values,
                                 run_tails=run_tails, emit_runs=emit_runs)


def _to_device(xp, dst, host: np.ndarray) -> None:
    """Copy a small host array into ``dst`` on the current stream (asynchronous: pageable
    memory is staged by the driver before the call returns; no device synchronisation)."""
    if xp is np:
        dst[...] = host
    else:
        dst.set(host, stream=xp.cuda.get_current_stream())


def _carve(xp, n_bytes_parts):
    """One device allocation split into 8-byte aligned typed arrays: ``[(dtype, shape)]``."""
    sizes, offs, total = [], [], 0
    for dtype, shape in n_bytes_parts:
        nb = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        offs.append(total)
        sizes.append(nb)
        total += -(-nb // 8) * 8
    buf = _cuda.alloc(xp, max(total, 8), xp.uint8)
    return [buf[o:o + nb].view(dtype).reshape(shape)
            for (dtype, shape), o, nb in zip(n_bytes_parts, offs, sizes)]


def _runs(xp, k, keys, diff, idx_bits, widths_d, W, stats, tpb):
    """Sorted keys -> consolidated rows (``n`` rows allocated; ``stats[-1]`` gets the count,
    ``stats[-2]`` a run outside int64). Launches: sort (1 primitive), ``run_values``, scan
    (1), ``run_tails``, scan (1), ``emit_runs``; no synchronisation."""
    n = keys.shape[0]
    pos_t = np.int32 if n < 2 ** 31 else np.int64
    vals, csum, total, keep, pos = _carve(xp, [(np.int64, (n,)), (np.int64, (n,)),
                                               (np.int64, (n,)), (np.uint8, (n,)),
                                               (pos_t, (n,))])
    out_loc, out_ts, out_diff = _carve(xp, [(np.int32, (n,)), (np.int64, (n, W)),
                                            (np.int64, (n,))])
    _cuda.op(keys.sort())
    _cuda.launch(k.run_values, n, keys, idx_bits, diff, vals, INT64_MAX // n, stats, tpb=tpb)
    _cuda.op(xp.cumsum(vals, out=csum))
    _cuda.launch(k.run_tails, n, keys, idx_bits, csum, vals, keep, total, stats, tpb=tpb)
    _cuda.op(xp.cumsum(keep, out=pos))
    _cuda.launch(k.emit_runs, n, keys, idx_bits, widths_d, keep, pos, total, out_loc, out_ts,
                 out_diff, stats, tpb=tpb)
    return out_loc, out_ts, out_diff


def _fits(maxima, widths) -> bool:
    return all(int(v) < (1 << int(b)) for v, b in zip(maxima, widths))


def deferred_verdict(stats: np.ndarray, n: int, spec: np.ndarray):
    """What the host statistics of a deferred intake say: ``("bad", bad)`` (some row breaks a
    rule: ``bad`` the first row per rule), ``("redo", maxima)`` (a maximum outgrew its guessed
    field: the keys were packed wrongly and the batch must be taken again, unguessed),
    ``("overflow", maxima)`` (a valid batch, correctly packed, some of whose sums leave int64:
    :func:`~gpu_kernels.consolidate.overflow_on_host` names it), or ``("ok", maxima,
    count)``."""
    S = stats_size(len(spec) - 1)
    bad, maxima = stats[:KINDS].copy(), stats[KINDS:KINDS + len(spec)].copy()
    if (bad < n).any():
        return ("bad", bad)
    if not _fits(maxima, spec):
        return ("redo", maxima)
    if int(stats[S - 2]) < n:
        return ("overflow", maxima)
    return ("ok", maxima, int(stats[S - 1]))


def intake_cuda(loc, ts, diff, depth, m: int, L: int, W: int, *, validate: bool = True,
                guess=None, defer: bool = False, tpb=None) -> Intake:
    """CUDA version of :func:`intake`: validate and consolidate a raw batch on its device.

    Parameters
    ----------
    loc : integer[n], ts : integer[n, w], diff : integer[n]
        Device arrays (CuPy; NumPy under the simulator), any integer dtype but ``uint64``,
        ``n > 0``.
    depth : int64[L] device array, or None when ``validate`` is False.
    m, L, W : outer coordinates, locations, padded timestamp width.
    validate : bool
        False for rows already valid (``ts`` then ``int64[n, W]``): maxima and packing only.
    guess : int64[1 + W], optional
        Bit widths to pack with before the maxima are known (:func:`speculative_widths` of
        the previous batch). Used only with ``validate``; checked against the maxima.
    defer : bool
        With a guess: read nothing; return the ``n``-row output arrays (the consolidated
        rows first, their count in ``stats[-1]``) and the device statistics as ``pending``,
        to be judged by :func:`deferred_verdict` once the caller has read them. 4 launches,
        3 primitives, **no sync**.
    tpb : int, optional
        Threads per block (default ``_cuda.THREADS_PER_BLOCK``).

    Returns
    -------
    Intake
        Host ``bad`` and ``maxima``; device ``loc int32[k]``, ``ts int64[k, W]``,
        ``diff int64[k]``.

    Raises
    ------
    gpu_kernels.consolidate.SumOverflow
        (Not deferred) the diffs of some ``(loc, ts)`` of a valid batch sum outside int64:
        found again by the CPU twin on a copy of the columns, to name it.

    Notes
    -----
    Launch shape: thread per row, ``ceil(n / 256)`` blocks of 256 threads.

    **With a guess that holds** (the steady state of a stream of batches): ``check_pack``
    validates, takes the maxima and packs with the guessed widths in one pass; the key-only
    sort; ``run_values``, scan, ``run_tails``, scan, ``emit_runs``; then **one sync** reads
    the statistics (first bad rows, maxima, overflow flags, output count: ``8 (8 + W)``
    bytes). That is 4 Numba launches, 3 CuPy primitives (sort, 2 scans), 1 sync and 3
    allocations (a small upload of statistics and widths, a workspace, the output) --
    whatever ``n``. An invalid row, or a maximum wider than its guessed field, is seen at
    that sync: the first returns without output, the second redoes the packing with the
    exact plan (below, less its first pass and sync); a sum outside int64 raises.

    **Without a guess**: ``check_pack`` validates and takes the maxima only; **sync**; the
    exact plan (``pack_plan``); ``check_pack`` packs; the same five steps; **sync** for the
    output count: 5 launches, 3 primitives, 2 syncs. When ``loc``, the columns and the row
    index do not fit 64 bits, the packed rows are argsorted (or lexsorted when they do not
    fit 63 bits either: ``consolidate.consolidate_sorting_cuda``).

    Bytes per row (``W = 2``, ``int32`` loc, ``int64`` ts and diff, ``uint64`` keys):
    ``check_pack`` 24 in + 8 out; sort about 8 passes x 16; ``run_values`` 8 + 32 (the
    random ``diff`` read costs a sector) + 8; scans 16 + 5; ``run_tails`` 8 + 16 + 9 (the
    neighbour key is cached); ``emit_runs`` 21 in, 28 per output row: about 300 bytes, of
    which the 64-bit radix sort is 128 (CuPy sorts all 64 key bits; 32-bit keys -- ``loc``,
    columns and index within 32 bits -- halve it).
    """
    xp = _cuda.namespace(loc, ts, diff)
    n, w = ts.shape
    k = _kernels()
    S = stats_size(W)
    idx_bits = max(n - 1, 0).bit_length()
    spec = guess if validate and guess is not None else None
    host = np.concatenate([_fresh_stats(n, W), spec if spec is not None else np.zeros(W + 1)])
    small = _cuda.alloc(xp, S + W + 1, xp.int64)
    _to_device(xp, small, host.astype(np.int64))
    stats, widths_d = small[:S], small[S:]
    dep = depth if depth is not None else widths_d
    if spec is not None:
        keys = _cuda.alloc(xp, n, _key_dtype(int(spec.sum()) + idx_bits))
        _cuda.launch(k.check_pack, n, loc, ts, dep, m, L, widths_d, idx_bits, True, True, keys,
                     stats, tpb=tpb)
        out = _runs(xp, k, keys, diff, idx_bits, widths_d, W, stats, tpb)
        if defer:  # the caller reads ``stats`` later, with its own first transfer
            return Intake(None, None, *out, pending=stats, spec=spec)
        got = _cuda.read(stats)
        bad, maxima = got[:KINDS].copy(), got[KINDS:KINDS + 1 + W].copy()
        if (bad < n).any():
            return Intake(bad, None, None, None, None)
        if _fits(maxima, spec):
            if int(got[S - 2]) < n:
                raise overflow_on_host(loc, ts, diff, W)
            c = int(got[S - 1])
            return Intake(bad, maxima, out[0][:c], out[1][:c], out[2][:c])
    else:
        keys = None
        _cuda.launch(k.check_pack, n, loc, ts, dep, m, L, widths_d, idx_bits, validate, False,
                     widths_d, stats, tpb=tpb)
        got = _cuda.read(stats)
        bad, maxima = got[:KINDS].copy(), got[KINDS:KINDS + 1 + W].copy()
        if (bad < n).any():
            return Intake(bad, None, None, None, None)
    plan = pack_plan(maxima[0], maxima[1:])
    if plan is None or plan[1] + idx_bits > 64:
        return Intake(bad, maxima, *_canonical_fallback(xp, loc, ts, diff, W, plan, tpb))
    widths = plan[0]
    _to_device(xp, widths_d, widths)
    kd = _key_dtype(plan[1] + idx_bits)
    if keys is None or keys.dtype != kd:
        keys = _cuda.alloc(xp, n, kd)
    _cuda.launch(k.check_pack, n, loc, ts, dep, m, L, widths_d, idx_bits, False, True, keys,
                 stats, tpb=tpb)
    out = _runs(xp, k, keys, diff, idx_bits, widths_d, W, stats, tpb)
    over, c = (int(v) for v in _cuda.read(stats[S - 2:]))
    if over < n:
        raise overflow_on_host(loc, ts, diff, W)
    return Intake(bad, maxima, out[0][:c], out[1][:c], out[2][:c])


def _canonical_fallback(xp, loc, ts, diff, W, plan, tpb):
    """Rows whose packed key leaves no room for the index: canonical dtypes, then the
    argsort/lexsort path of ``consolidate``."""
    n, w = ts.shape
    if loc.dtype != np.int32:
        loc = _cuda.op(loc.astype(xp.int32))
    if w != W or ts.dtype != np.int64:
        t = _cuda.alloc(xp, (n, W), xp.int64, 0)
        t[:, :w] = ts
        _cuda.op()
        ts = t
    if diff.dtype != np.int64:
        diff = _cuda.op(diff.astype(xp.int64))
    return consolidate_sorting_cuda(loc, ts, diff, plan, tpb=tpb)


def consolidate_cuda(loc, ts, diff, *, tpb=None):
    """CUDA version of :func:`consolidate`: same inputs, same outputs, on the arrays' device.

    Parameters
    ----------
    loc : int32[n], ts : int64[n, W] (non-negative), diff : int64[n]
        CuPy arrays (NumPy under the simulator).
    tpb : int, optional
        Threads per block (default :data:`gpu_kernels._cuda.THREADS_PER_BLOCK`).

    Returns
    -------
    (loc int32[k], ts int64[k, W], diff int64[k]) sorted by ``(loc, ts)``, zero sums dropped.

    Notes
    -----
    The device intake's consolidation without its validation
    (:func:`intake_cuda` with ``validate=False``): a ``check_pack`` pass
    takes the column maxima with per-block atomics (no reduction over the leading axis of
    ``ts``) -- **sync** to choose the packing; ``check_pack`` packs ``(loc, ts, row index)``
    into one key; a key-only sort; ``run_values``, a scan, ``run_tails``, a scan and
    ``emit_runs`` sum and compact the runs -- **sync** for the output size. 5 launches, 3
    CuPy primitives, 2 syncs. Rows whose key leaves no room for the row index take
    :func:`gpu_kernels.consolidate.consolidate_sorting_cuda`. Bytes per row: ``docs/performance-model.md``.
    """
    xp = _cuda.namespace(loc, ts, diff)
    n, W = ts.shape
    if n == 0:
        return loc[:0].astype(xp.int32), ts[:0], diff[:0]
    r = intake_cuda(loc, ts, diff, None, 1, 0, W, validate=False, tpb=tpb)
    return r.loc, r.ts, r.diff
