"""Path summaries: how a timestamp changes along a path, their composition and order.

A summary from depth ``a`` to depth ``b`` is ``s = (j, d_out, d_cnt, c)`` (docs/semantics.md 2.3)::

    s(t) = (t_out + d_out,  t_cnt[0:j] + d_cnt,  c)

It keeps the ``j`` outermost loop counters (adding ``d_cnt``), drops the rest and appends
``b - j`` counters with the fixed values ``c``. Ingress, egress, feedback, identity and epoch
delay are special cases with their own constructors.

Laws (tested as properties): composition is associative, ``s1.then(s2)(t) == s2(s1(t))``,
``apply`` is monotone in ``t``, and ``s <= s'`` implies ``s(t) <= s'(t)`` for every ``t``.

Examples
--------
>>> f = Summary.feedback(depth=1, m=1)
>>> f.apply((4, 7))
(4, 8)
>>> Summary.ingress(depth=0, m=1).then(f).then(Summary.egress(depth=1, m=1)).apply((4,))
(4,)
>>> Summary.delay(depth=1, m=1).le(Summary.identity(depth=1, m=1))
False
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Sequence

from engine.errors import SummaryShapeError
from engine.core.timestamp import MAX_COORD, Timestamp

__all__ = ["Summary"]


def _vector(values, length: int, name: str) -> tuple[int, ...]:
    values = tuple(values)
    if len(values) != length:
        raise SummaryShapeError(f"summary {name} has {len(values)} entries, expected {length}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, Integral) or not 0 <= v < MAX_COORD:
            raise SummaryShapeError(
                f"summary {name} = {values!r}: entries must be integers in [0, 2**62)")
    return tuple(int(v) for v in values)


@dataclass(frozen=True, order=False)
class Summary:
    """A path summary from loop depth ``src_depth`` to ``dst_depth``.

    Parameters
    ----------
    src_depth, dst_depth : int
        Loop depths ``a`` and ``b`` of the locations it connects.
    keep : int
        ``j <= min(a, b)``: how many outermost counters are kept.
    d_out : tuple of int, length m
        Added to the outer coordinates (an epoch delay when non-zero).
    d_cnt : tuple of int, length ``keep``
        Added to the kept counters.
    reset : tuple of int, length ``dst_depth - keep``
        The values ``c`` of the appended counters.

    Raises
    ------
    SummaryShapeError
        If the lengths or ``keep`` do not fit the depths, or an entry is negative.
    """

    src_depth: int
    dst_depth: int
    keep: int
    d_out: tuple[int, ...]
    d_cnt: tuple[int, ...]
    reset: tuple[int, ...]

    def __post_init__(self):
        for name in ("src_depth", "dst_depth", "keep"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, Integral) or v < 0:
                raise SummaryShapeError(f"summary {name} must be a non-negative integer, got {v!r}")
        if self.keep > min(self.src_depth, self.dst_depth):
            raise SummaryShapeError(
                f"summary keeps {self.keep} counters but maps depth {self.src_depth} to depth "
                f"{self.dst_depth}; it can keep at most {min(self.src_depth, self.dst_depth)}")
        if len(self.d_out) < 1:
            raise SummaryShapeError("summary d_out needs at least one outer coordinate (m >= 1)")
        object.__setattr__(self, "d_out", _vector(self.d_out, len(self.d_out), "d_out"))
        object.__setattr__(self, "d_cnt", _vector(self.d_cnt, self.keep, "d_cnt"))
        object.__setattr__(self, "reset", _vector(self.reset, self.dst_depth - self.keep, "reset"))

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def identity(cls, depth: int, m: int = 1) -> "Summary":
        """The identity at loop depth ``depth``: ``s(t) = t``."""
        return cls(depth, depth, depth, (0,) * m, (0,) * depth, ())

    @classmethod
    def ingress(cls, depth: int, m: int = 1) -> "Summary":
        """Enter a loop: depth ``a -> a+1``, appending a counter starting at 0."""
        return cls(depth, depth + 1, depth, (0,) * m, (0,) * depth, (0,))

    @classmethod
    def egress(cls, depth: int, m: int = 1) -> "Summary":
        """Leave a loop: depth ``a -> a-1``, dropping the innermost counter."""
        if depth < 1:
            raise SummaryShapeError(f"egress needs a location inside a loop, got depth {depth}")
        return cls(depth, depth - 1, depth - 1, (0,) * m, (0,) * (depth - 1), ())

    @classmethod
    def feedback(cls, depth: int, m: int = 1, step: int = 1) -> "Summary":
        """Loop feedback at depth ``a >= 1``: the innermost counter advances by ``step``."""
        if depth < 1:
            raise SummaryShapeError(f"feedback needs a location inside a loop, got depth {depth}")
        return cls(depth, depth, depth, (0,) * m, (0,) * (depth - 1) + (step,), ())

    @classmethod
    def delay(cls, depth: int, m: int = 1, by: Sequence[int] | int = 1) -> "Summary":
        """Advance the outer coordinates by ``by`` (an int advances the first one), keeping counters."""
        d_out = (by,) + (0,) * (m - 1) if isinstance(by, Integral) else tuple(by)
        if len(d_out) != m:
            raise SummaryShapeError(f"delay by {by!r} does not have m={m} outer coordinates")
        return cls(depth, depth, depth, d_out, (0,) * depth, ())

    @classmethod
    def product(cls, d_epoch: int, d_iter: int) -> "Summary":
        """The ``(epoch, iteration)`` summary ``(d_epoch, d_iter)`` at depth 1 with ``m = 1``.

        This is the summary of the workload format's ``summary`` lines.
        """
        return cls(1, 1, 1, (d_epoch,), (d_iter,), ())

    # -- laws ----------------------------------------------------------------------------------

    @property
    def m(self) -> int:
        """Number of outer coordinates."""
        return len(self.d_out)

    def apply(self, t: Timestamp) -> Timestamp:
        """``s(t)`` for a timestamp ``t`` of width ``m + src_depth``. Cost: O(width)."""
        m, j = len(self.d_out), self.keep
        outer = tuple(x + d for x, d in zip(t[:m], self.d_out))
        kept = tuple(x + d for x, d in zip(t[m:m + j], self.d_cnt))
        return outer + kept + self.reset

    def then(self, other: "Summary") -> "Summary":
        """Composition: first ``self`` (a->b), then ``other`` (b->c).

        ``self.then(other).apply(t) == other.apply(self.apply(t))``.

        Raises
        ------
        SummaryShapeError
            If ``other`` does not start at the depth where ``self`` ends, or ``m`` differs.
        """
        if other.src_depth != self.dst_depth or other.m != self.m:
            raise SummaryShapeError(
                f"cannot compose a summary ending at depth {self.dst_depth} (m={self.m}) with one "
                f"starting at depth {other.src_depth} (m={other.m})")
        j1, j2 = self.keep, other.keep
        d_out = tuple(a + b for a, b in zip(self.d_out, other.d_out))
        if j2 <= j1:
            d_cnt = tuple(a + b for a, b in zip(self.d_cnt[:j2], other.d_cnt))
            return Summary(self.src_depth, other.dst_depth, j2, d_out, d_cnt, other.reset)
        d_cnt = tuple(a + b for a, b in zip(self.d_cnt, other.d_cnt[:j1]))
        middle = tuple(a + b for a, b in zip(self.reset[:j2 - j1], other.d_cnt[j1:j2]))
        return Summary(self.src_depth, other.dst_depth, j1, d_out, d_cnt, middle + other.reset)

    def le(self, other: "Summary") -> bool:
        """``self <= other``: ``self(t) <= other(t)`` for every timestamp ``t``.

        The exact decision procedure of docs/semantics.md 2.3. Cost: O(m + depth).
        """
        if (self.src_depth, self.dst_depth, self.m) != (other.src_depth, other.dst_depth, other.m):
            raise SummaryShapeError(
                f"cannot compare summaries of shapes {self.src_depth}->{self.dst_depth} (m={self.m}) "
                f"and {other.src_depth}->{other.dst_depth} (m={other.m})")
        if any(a > b for a, b in zip(self.d_out, other.d_out)):
            return False
        for p in range(self.dst_depth):
            mine_kept, theirs_kept = p < self.keep, p < other.keep
            mine = self.d_cnt[p] if mine_kept else self.reset[p - self.keep]
            theirs = other.d_cnt[p] if theirs_kept else other.reset[p - other.keep]
            if mine_kept and not theirs_kept:
                return False  # t_p + d grows without bound past a constant
            if mine < theirs:
                return True
            if mine > theirs:
                return False
        return True

    def lt(self, other: "Summary") -> bool:
        """``self < other``: ``self <= other`` and they differ."""
        return self != other and self.le(other)

    def advances(self) -> bool:
        """For a cycle summary (``a == b``): does it bring every time back strictly later or
        incomparable, i.e. is ``s(t) <= t`` false for every ``t``?

        True iff the epoch advances or some kept counter advances (docs/semantics.md 2.4).
        """
        return any(self.d_out) or any(self.d_cnt)

    def strictly_advances(self) -> bool:
        """For a cycle summary (``a == b``): is ``s(t) > t`` for every ``t``?

        True iff some kept counter advances (the first non-zero ``d_cnt`` makes the counters
        lexicographically larger whatever follows), or nothing is dropped (``keep == a``),
        ``d_cnt == 0`` and the epoch advances. A graph all of whose cycles strictly advance
        has ``Psi`` equal to the minimum over simple paths (docs/semantics.md 2.4).
        """
        if any(self.d_cnt):
            return True
        return self.keep == self.src_depth == self.dst_depth and any(self.d_out)

    def sort_key(self) -> tuple:
        """A deterministic total order for printing: ``(d_out, d_cnt ++ reset, keep)``."""
        return (self.d_out, self.d_cnt + self.reset, self.keep)

    def __repr__(self) -> str:
        return (f"Summary({self.src_depth}->{self.dst_depth}, keep={self.keep}, "
                f"d_out={self.d_out}, d_cnt={self.d_cnt}, reset={self.reset})")
