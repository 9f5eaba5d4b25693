"""Timestamps: ``m`` outer coordinates then ``k`` loop counters, and their partial order.

A timestamp at a location of loop depth ``k`` is a tuple of ``m + k`` non-negative integers
(docs/semantics.md 2.2). ``t <= t'`` iff the outer coordinates are ``<=`` componentwise **and** the loop
counters are ``<=`` lexicographically. With ``m = 1`` and one loop this is the product order of
``(epoch, iteration)``.

Examples
--------
>>> le((0, 5), (1, 5), m=1)
True
>>> le((0, 5), (1, 4), m=1)        # epoch earlier, iteration later: incomparable
False
>>> le((1, 2, 9), (1, 3, 0), m=1)  # counters are compared lexicographically
True
"""

from __future__ import annotations

from numbers import Integral
from typing import Sequence

from engine.errors import TimestampRangeError, TimestampWidthError

__all__ = ["MAX_COORD", "Timestamp", "le", "lt", "check_timestamp", "minimal"]

#: Coordinates must lie in ``[0, MAX_COORD)``.
MAX_COORD = 1 << 62

Timestamp = tuple[int, ...]


def le(a: Timestamp, b: Timestamp, m: int) -> bool:
    """``a <= b`` for two timestamps of the same width with ``m`` outer coordinates.

    Cost: O(width).
    """
    for x, y in zip(a[:m], b[:m]):
        if x > y:
            return False
    return a[m:] <= b[m:]


def lt(a: Timestamp, b: Timestamp, m: int) -> bool:
    """``a < b``: ``a <= b`` and ``a != b``."""
    return a != b and le(a, b, m)


def minimal(times, m: int) -> list[Timestamp]:
    """The minimal elements of a collection of timestamps, sorted, without duplicates.

    >>> minimal([(1, 0), (0, 3), (0, 1), (2, 2), (0, 1)], m=1)
    [(0, 1), (1, 0)]

    Cost: O(n^2) comparisons (this is the reference; the batched engine has a fast path).
    """
    distinct = sorted(set(times))
    out = []
    for t in distinct:
        if not any(lt(u, t, m) for u in distinct):
            out.append(t)
    return out


def check_timestamp(ts: Sequence[int], m: int, depth: int, padded_width: int | None = None,
                    *, where: str = "timestamp") -> Timestamp:
    """Validate one timestamp and return it as a tuple of ``m + depth`` Python ints.

    Parameters
    ----------
    ts : sequence of int
        ``m + depth`` coordinates, or ``padded_width`` coordinates whose unused trailing
        counters are 0 (the array layout ``int64[n, m+K]``).
    m, depth : int
        Outer width and the location's loop depth.
    padded_width : int, optional
        ``m + K`` for the graph's largest depth ``K``.
    where : str
        Describes the timestamp's origin for error messages ("row 3", "line 12").

    Raises
    ------
    TimestampWidthError
        Wrong number of coordinates, non-integer coordinates, or non-zero unused counters.
    TimestampRangeError
        A coordinate outside ``[0, 2**62)``.

    >>> check_timestamp([3, 0, 0], m=1, depth=1, padded_width=3)
    (3, 0)
    """
    try:
        values = list(ts)
    except TypeError:
        raise TimestampWidthError(
            f"{where}: timestamp must be a sequence of {m + depth} integers, got {ts!r}") from None
    width = m + depth
    if len(values) != width:
        if padded_width is None or len(values) != padded_width or padded_width < width:
            expect = f"{width}" if padded_width in (None, width) else f"{width} (or {padded_width} padded)"
            raise TimestampWidthError(
                f"{where}: timestamp {tuple(values)!r} has {len(values)} coordinates, expected "
                f"{expect} (m={m} outer + depth {depth})")
        if any(v != 0 for v in values[width:]):
            raise TimestampWidthError(
                f"{where}: timestamp {tuple(values)!r} has non-zero unused counters beyond "
                f"depth {depth}; they must be 0")
        values = values[:width]
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, Integral):
            raise TimestampWidthError(
                f"{where}: coordinate {i} of timestamp {tuple(values)!r} is not an integer")
        v = int(v)
        if not 0 <= v < MAX_COORD:
            raise TimestampRangeError(
                f"{where}: coordinate {i} of timestamp {tuple(values)!r} is {v}, "
                f"outside [0, 2**62)")
        out.append(v)
    return tuple(out)
