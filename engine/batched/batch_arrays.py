"""Validation of columnar delta batches: one vectorised pass, errors that name the row.

Turns ``loc``, ``ts``, ``diff`` (NumPy arrays, or any sequences) into ``int32[n]``,
``int64[n, m+K]`` (unused counters 0) and ``int64[n]``, checking every rule of docs/semantics.md 2.2
and 7: known locations, timestamp width, coordinates in ``[0, 2**62)``, zero padding,
integer diffs. Nothing is modified; the first offending row is named in the error.
Array input costs O(n) NumPy work and no per-row Python; ragged sequences of tuples take a
per-row path that gives the same errors.
"""

from __future__ import annotations

import numpy as np

from engine.core.counts import batch_length
from engine.errors import BatchError, TimestampRangeError, TimestampWidthError, UnknownLocationError
from engine.core.graph import Graph
from engine.core.timestamp import MAX_COORD, check_timestamp

__all__ = ["batch_arrays"]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def batch_arrays(graph: Graph, depth: np.ndarray, loc, ts, diff):
    """Validate a batch; return ``(loc int32[n], ts int64[n, m+K], diff int64[n])``.

    ``depth`` is ``int64[L]``, the loop depth of every location.
    """
    m, K, L = graph.m, graph.max_depth, graph.num_locations
    W = m + K
    n = batch_length(loc, ts, diff)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64)

    loc_a = np.asarray(loc)
    if loc_a.dtype.kind not in "iu":
        bad = next(i for i, v in enumerate(loc) if not _is_int(v))
        raise UnknownLocationError(f"row {bad}: location {loc[bad]!r} is not an integer")
    if loc_a.ndim != 1:
        raise BatchError(f"loc must be one-dimensional, got shape {loc_a.shape}")
    out_of_range = (loc_a < 0) | (loc_a >= L)
    if out_of_range.any():
        i = _first(out_of_range)
        raise UnknownLocationError(f"row {i}: location {loc_a[i]} does not exist (the graph has "
                                   f"locations 0..{L - 1})")
    loc_a = loc_a.astype(np.int32, copy=False)
    widths = m + depth[loc_a]

    ts_a = ts if isinstance(ts, np.ndarray) else _try_array(ts)
    if ts_a is None or ts_a.ndim != 2 or ts_a.dtype.kind not in "iu":
        ts_a = _rows_one_by_one(graph, loc_a, ts, W)
    else:
        if ts_a.dtype.kind == "u" and (ts_a >= MAX_COORD).any():
            i = _first((ts_a >= MAX_COORD).any(axis=1))
            raise TimestampRangeError(f"row {i} ({graph.describe(int(loc_a[i]))}): timestamp "
                                      f"{tuple(int(x) for x in ts_a[i])} has a coordinate "
                                      f"outside [0, 2**62)")
        ts_a = ts_a.astype(np.int64, copy=False)
        w = ts_a.shape[1]
        if w != W:
            wrong = widths != w
            if wrong.any():
                i = _first(wrong)
                raise TimestampWidthError(
                    f"row {i} ({graph.describe(int(loc_a[i]))}): timestamp "
                    f"{tuple(int(x) for x in ts_a[i])} has {w} coordinates, expected "
                    f"{int(widths[i])} (or {W} padded)")
            ts_a = np.concatenate([ts_a, np.zeros((n, W - w), np.int64)], axis=1)
        bad = (ts_a < 0) | (ts_a >= MAX_COORD)
        if bad.any():
            i = _first(bad.any(axis=1))
            c = _first(bad[i])
            raise TimestampRangeError(
                f"row {i} ({graph.describe(int(loc_a[i]))}): coordinate {c} of timestamp "
                f"{tuple(int(x) for x in ts_a[i][:widths[i]])} is {int(ts_a[i, c])}, outside "
                f"[0, 2**62)")
        if K:
            unused = (np.arange(W)[None, :] >= widths[:, None]) & (ts_a != 0)
            if unused.any():
                i = _first(unused.any(axis=1))
                raise TimestampWidthError(
                    f"row {i} ({graph.describe(int(loc_a[i]))}): timestamp "
                    f"{tuple(int(x) for x in ts_a[i])} has non-zero unused counters beyond "
                    f"depth {int(depth[loc_a[i]])}; they must be 0")
    ts_a = np.ascontiguousarray(ts_a)

    diff_a = _try_array(diff)
    if diff_a is None or diff_a.dtype.kind not in "iu" or diff_a.ndim != 1:
        bad = next((i for i, v in enumerate(diff)
                    if not _is_int(v) or not INT64_MIN <= v <= INT64_MAX), 0)
        raise BatchError(f"row {bad}: diff {diff[bad]!r} is not a signed 64-bit integer")
    if diff_a.dtype.kind == "u" and (diff_a > np.iinfo(np.int64).max).any():
        i = _first(diff_a > np.iinfo(np.int64).max)
        raise BatchError(f"row {i}: diff {int(diff_a[i])} is not a signed 64-bit integer")
    return loc_a, ts_a, diff_a.astype(np.int64, copy=False)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _try_array(ts):
    try:
        a = np.asarray(ts)
    except (ValueError, TypeError, OverflowError):
        return None
    return a if a.dtype != object else None


def _rows_one_by_one(graph: Graph, loc_a: np.ndarray, ts, W: int) -> np.ndarray:
    out = np.zeros((len(loc_a), W), dtype=np.int64)
    for i, (l, t) in enumerate(zip(loc_a.tolist(), ts)):
        row = check_timestamp(t, graph.m, graph.depth(l), W,
                              where=f"row {i} ({graph.describe(l)})")
        out[i, :len(row)] = row
    return out
