"""Path summaries and timestamps as array rows: the scalar core shared by every kernel.

A summary from depth ``a`` to depth ``b`` (docs/semantics.md 2.3) is stored as one integer row of
``1 + m + K`` entries::

    [keep, d_out[0..m), vals[0..K)]

where ``vals[p]`` is ``d_cnt[p]`` for ``p < keep``, the appended constant ``c[p - keep]`` for
``keep <= p < b``, and 0 for ``p >= b``. The depths are those of the locations the summary
connects, so they are not stored. A timestamp is a row of ``m + K`` integers with its unused
counters 0 (the ``int64[n, m+K]`` layout).

In this form the three operations need no depths:

* apply:   ``out[:m] = t[:m] + d_out``; ``out[m+p] = (t[m+p] if p < keep else 0) + vals[p]``
* compose ``s`` then ``r``: ``keep = min(s.keep, r.keep)``, ``d_out = s.d_out + r.d_out``,
  ``vals[p] = s.vals[p] + r.vals[p]`` for ``p < r.keep`` else ``r.vals[p]``
* order ``s <= r``: ``d_out`` componentwise, then positions ``p = 0..K-1``: a kept ``s``
  against a constant ``r`` fails; otherwise compare ``vals[p]``: ``<`` holds, ``>`` fails,
  equal goes on (positions past the depth are equal zeros).

The functions are Numba ``@njit`` device-agnostic scalar code: the CPU kernels call them and
the CUDA kernels (``numba.cuda.jit(device=True)`` wrappers of the same Python functions) reuse
them, so the two never drift. Each is O(m + K).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["summary_width", "apply_into", "compose_into", "summary_le", "ts_le", "ts_cmp",
           "ts_equal", "summary_equal", "pack_summaries", "unpack_summary_row", "smallest_dtype"]


def summary_width(m: int, K: int) -> int:
    """Entries per summary row: ``1 + m + K``."""
    return 1 + m + K


@njit(cache=True, inline="always")
def apply_into(s, t, out, m, K):
    """``out <- s(t)`` for a summary row ``s`` and a timestamp row ``t`` (int64 arithmetic)."""
    keep = s[0]
    for i in range(m):
        out[i] = t[i] + s[1 + i]
    for p in range(K):
        base = t[m + p] if p < keep else 0
        out[m + p] = base + s[1 + m + p]


@njit(cache=True, inline="always")
def compose_into(s, r, out, m, K):
    """``out <- s ; r`` (first ``s``, then ``r``)."""
    ks, kr = s[0], r[0]
    out[0] = ks if ks < kr else kr
    for i in range(m):
        out[1 + i] = s[1 + i] + r[1 + i]
    for p in range(K):
        if p < kr:
            out[1 + m + p] = s[1 + m + p] + r[1 + m + p]
        else:
            out[1 + m + p] = r[1 + m + p]


@njit(cache=True, inline="always")
def summary_le(s, r, m, K):
    """``s <= r``: ``s(t) <= r(t)`` for every ``t`` (the exact order)."""
    for i in range(m):
        if s[1 + i] > r[1 + i]:
            return False
    ks, kr = s[0], r[0]
    for p in range(K):
        if p < ks and p >= kr:
            return False
        a, b = s[1 + m + p], r[1 + m + p]
        if a < b:
            return True
        if a > b:
            return False
    return True


@njit(cache=True, inline="always")
def summary_equal(s, r, w):
    for i in range(w):
        if s[i] != r[i]:
            return False
    return True


@njit(cache=True, inline="always")
def ts_le(a, b, m, W):
    """``a <= b`` for two timestamp rows of one location (padding zeros compare equal)."""
    for i in range(m):
        if a[i] > b[i]:
            return False
    for p in range(m, W):
        if a[p] < b[p]:
            return True
        if a[p] > b[p]:
            return False
    return True


@njit(cache=True, inline="always")
def ts_cmp(a, b, W):
    """Lexicographic comparison of two rows: -1, 0 or 1 (a total order, for sorting)."""
    for p in range(W):
        if a[p] < b[p]:
            return -1
        if a[p] > b[p]:
            return 1
    return 0


@njit(cache=True, inline="always")
def ts_equal(a, b, W):
    for p in range(W):
        if a[p] != b[p]:
            return False
    return True


def smallest_dtype(max_abs: int):
    """The narrowest signed integer dtype that holds ``[-max_abs, max_abs]``."""
    for dt in (np.int8, np.int16, np.int32):
        if max_abs <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def pack_summaries(summaries, m: int, K: int) -> np.ndarray:
    """Rows ``int64[len(summaries), 1 + m + K]`` of objects with ``keep``, ``d_out``, ``d_cnt``
    and ``reset`` attributes (``engine.Summary``)."""
    out = np.zeros((len(summaries), 1 + m + K), dtype=np.int64)
    for i, s in enumerate(summaries):
        out[i, 0] = s.keep
        out[i, 1:1 + m] = s.d_out
        vals = tuple(s.d_cnt) + tuple(s.reset)
        out[i, 1 + m:1 + m + len(vals)] = vals
    return out


def unpack_summary_row(row, m: int, src_depth: int, dst_depth: int) -> tuple:
    """``(src_depth, dst_depth, keep, d_out, d_cnt, reset)``: the arguments of ``engine.Summary``."""
    row = [int(x) for x in row]
    keep = row[0]
    vals = row[1 + m:]
    return (src_depth, dst_depth, keep, tuple(row[1:1 + m]), tuple(vals[:keep]),
            tuple(vals[keep:dst_depth]))
