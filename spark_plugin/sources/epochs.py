"""How an input splits into epochs: equal slices, a column's values, or windows of it.

Every epoch is an :class:`EpochSource`. A local input's epochs
(:func:`~spark_plugin.sources.local.epoch_sources`) are :func:`even_cuts` slices of a file or
table, or the files of a directory; a Spark source's follow an :class:`EpochPlan`:

* ``EpochPlan(epochs=K)``: ``K`` consecutive slices of equal size of the dataset in its
  *read order* -- files by name, each file's rows in order (a DataFrame without files: its
  partitions in order) -- whatever Spark's partitioning, so a rerun on another cluster gets
  the same epochs. The row numbers are computed on the executors: one aggregation gives
  each file block's row count (``O(blocks)`` numbers on the driver), then each row's number
  is its block's offset plus its position.
* ``EpochPlan(column=COL)``: one epoch per distinct value of ``COL`` (an integer, date or
  timestamp column; a Hive-style partition column such as ``day=2026-11-01/`` is one), in
  increasing order.
* ``EpochPlan(column=COL, every=W)``: one epoch per window of width ``W`` that holds rows,
  in order: ``W`` is a number for an integer column (``--epoch-every 1000``) and a duration
  for a date or timestamp column (``--epoch-every 1h``, ``30m``, ``2d``; :func:`parse_every`).

Either way one Spark aggregation counts a Spark source's epochs' rows (and the rows with bad vertex ids:
:mod:`~spark_plugin.sources.ids`); a row whose epoch value is null is an error, never
dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import TimelyFrontierError

__all__ = ["EpochPlan", "EpochPlanError", "parse_every", "slice_of_row", "even_cuts",
           "EpochSource"]

_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")


class EpochPlanError(TimelyFrontierError, ValueError):
    """``--epochs`` / ``--epoch-column`` / ``--epoch-every`` do not fit together or the data."""


def parse_every(text) -> tuple[float, bool]:
    """``--epoch-every``: ``(width, is_duration)``: ``"1000"`` -> ``(1000, False)`` (an
    integer column's window), ``"1h"`` -> ``(3600.0, True)`` (seconds, for a date or
    timestamp column; units ``s``, ``m``/``min``, ``h``, ``d``, ``w``).

    >>> parse_every("1000"), parse_every("90s"), parse_every("1h"), parse_every("2d")
    ((1000, False), (90.0, True), (3600.0, True), (172800.0, True))
    >>> parse_every("1 fortnight")
    Traceback (most recent call last):
    ...
    spark_plugin.sources.epochs.EpochPlanError: --epoch-every '1 fortnight': expected a positive number (an integer column's window) or a duration such as 90s, 30m, 1h, 2d, 1w
    """
    m = _EVERY.match(str(text).lower())
    bad = EpochPlanError(f"--epoch-every {text!r}: expected a positive number (an integer "
                         f"column's window) or a duration such as 90s, 30m, 1h, 2d, 1w")
    if m is None or (m.group(2) and m.group(2) not in _UNITS):
        raise bad
    value = float(m.group(1))
    if not value > 0:
        raise bad
    if not m.group(2):
        if value != int(value):
            raise EpochPlanError(f"--epoch-every {text!r}: an integer column's window is a "
                                 f"whole number (or give a duration such as 1h)")
        return int(value), False
    return value * _UNITS[m.group(2)], True


def even_cuts(n: int, k: int) -> list[int]:
    """The ``k + 1`` bounds of ``k`` consecutive, equal slices of ``n`` rows (the first ones
    one row shorter when ``k`` does not divide ``n``).

    >>> even_cuts(5, 2)
    [0, 2, 5]
    """
    return [(i * n) // k for i in range(k + 1)]


def slice_of_row(row: int, rows: int, epochs: int) -> int:
    """The epoch of 0-based row ``row`` of ``rows`` split into ``epochs`` equal slices, as
    :func:`even_cuts` cuts them (the Spark expression computes the
    same: ``(epochs * (row + 1) - 1) div rows``).

    >>> [slice_of_row(r, 5, 2) for r in range(5)]
    [0, 0, 1, 1, 1]
    """
    return (epochs * (row + 1) - 1) // rows


@dataclass(frozen=True)
class EpochPlan:
    """How a Spark source becomes epochs (module docstring); :meth:`parse` checks the
    options."""

    epochs: int = 1
    column: str | None = None
    every: str | None = None

    @classmethod
    def parse(cls, epochs=None, column=None, every=None) -> "EpochPlan":
        """The plan of ``--epochs`` / ``--epoch-column`` / ``--epoch-every``.

        Raises
        ------
        EpochPlanError
            ``--epoch-every`` without ``--epoch-column``, ``--epochs K > 1`` with a column,
            a bad width.
        """
        if every is not None and column is None:
            raise EpochPlanError("--epoch-every needs --epoch-column: the column whose "
                                 "windows are the epochs")
        if column is not None and epochs not in (None, 1):
            raise EpochPlanError(f"--epochs {epochs} and --epoch-column {column}: choose one "
                                 f"(equal slices of the rows, or the column's values)")
        if every is not None:
            parse_every(every)
        if column is not None and not str(column).strip():
            raise EpochPlanError("--epoch-column: an empty column name")
        if isinstance(epochs, bool) or epochs is not None and (
                int(epochs) != epochs or epochs < 1):
            raise EpochPlanError(f"--epochs must be a positive integer, got {epochs!r}")
        return cls(int(epochs or 1), column, None if every is None else str(every))

    def describe(self) -> dict:
        """What the plan is, for a job's fingerprint (a resumed ``--out`` must match)."""
        if self.column is None:
            return {"slices": self.epochs}
        return {"column": self.column, **({"every": self.every} if self.every else {})}


class EpochSource:
    """One epoch's edges: ``what`` (for messages: the file, or the rows of a file, that
    became the epoch), ``read()`` (the rows as ``src, dst`` on the driver, validated), for
    Parquet input ``scan`` (a :class:`~spark_plugin.sources.parquet.ParquetSlice` that
    Spark tasks can read themselves; ``None`` otherwise), and ``check()``: raises
    :class:`~spark_plugin.errors.EdgeInputError` if the epoch's file changed since the job
    recorded it (a no-op for rows already held in memory).
    ``in_memory``: the rows are a slice of a table on the driver (an Arrow table, a
    collected DataFrame), so ``read()`` costs nothing. ``frame``, ``rows``, ``stamp``: an
    epoch of a Spark source, which the executors read (``read()`` collects it, for an epoch
    finished on the driver)."""

    __slots__ = ("what", "read", "scan", "check", "in_memory", "frame", "rows", "stamp")

    def __init__(self, what: str, read, scan=None, check=None,
                 in_memory: bool = False, frame=None, rows: int | None = None,
                 stamp: str | None = None):
        self.what, self.read, self.scan, self.in_memory = what, read, scan, in_memory
        self.check = check if check is not None else (lambda: None)
        #: A Spark source's epoch (:mod:`spark_plugin.sources`): its rows as a DataFrame
        #: (``src, dst``) the executors read, their count, and the dataset's listing digest.
        self.frame, self.rows, self.stamp = frame, rows, stamp
