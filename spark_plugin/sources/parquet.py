"""Parquet edge files, read by the driver or by Spark tasks: integer columns ``src`` and ``dst``
(and a numeric ``weight`` with ``tfront sssp --weighted``), or those ``--columns`` picks.

A file is split by its row count (the footer) into :class:`ParquetSlice` epochs, each read
and validated when its epoch starts -- by the driver, or by the Spark tasks that open only
the row groups they need. Errors name the file and the 1-based row
(:mod:`~spark_plugin.sources.rows`).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from spark_plugin.errors import EdgeInputError
from spark_plugin.sources.columns import COLUMNS_HINT, EdgeColumns, table_columns
from spark_plugin.sources.epochs import even_cuts
from spark_plugin.sources.files import FileStamp, ends_with
from spark_plugin.sources.rows import EDGE_SCHEMA, check_id_columns, weighted_table

__all__ = ["ParquetSlice", "open_parquet", "parquet_rows", "parquet_complete",
           "read_weighted_parquet", "check_parquet_file", "check_weighted_parquet_file"]


def open_parquet(path):
    """``pyarrow.parquet.ParquetFile`` of ``path`` (its footer read).

    Raises
    ------
    EdgeInputError
        Not a readable Parquet file, named."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise EdgeInputError(f"{path}: not a readable Parquet file ({e})", str(path)) from None


def parquet_rows(path) -> int:
    """The rows of a Parquet file, from its footer (metadata only)."""
    return open_parquet(path).metadata.num_rows


class ParquetSlice:
    """Rows ``[start, stop)`` (0-based) of a Parquet edge file, read -- and validated -- by
    whoever needs them: the driver (:meth:`read`) or a Spark task (:meth:`read` of a
    sub-range), which opens only the row groups it needs. Errors name 1-based file rows.
    ``stamp`` (a :class:`FileStamp`, recorded by :meth:`of`): :meth:`read` first checks that
    the file is still the one whose footer gave the row count."""

    __slots__ = ("path", "start", "stop", "stamp", "names")

    def __init__(self, path, start: int, stop: int, stamp: FileStamp | None = None,
                 names: tuple = ("src", "dst")):
        self.path, self.start, self.stop = str(path), int(start), int(stop)
        self.stamp, self.names = stamp, tuple(names)

    @classmethod
    def of(cls, path, start: int = 0, stop: int | None = None,
           stamp: FileStamp | None = None,
           columns: "EdgeColumns | None" = None) -> "ParquetSlice":
        """The rows ``[start, stop)`` of ``path`` (default: all); checks the file's footer and
        columns now, the values when read. ``stamp``: the file as the job recorded it
        (default: as it is now); ``columns``: the columns read as ``src``, ``dst`` (default
        those)."""
        stamp = FileStamp.of(path) if stamp is None else stamp
        stamp.check()
        pf = cls._open(path)
        names = cls._names(pf, path, columns)
        n = pf.metadata.num_rows
        return cls(path, start, n if stop is None else min(stop, n), stamp, names)

    @staticmethod
    def _names(pf, path, columns: "EdgeColumns | None", want=("src", "dst")) -> tuple:
        """The file's columns read as ``want`` (``columns``' picks, else those names)."""
        names = pf.schema_arrow.names
        if columns is not None:
            return tuple(columns.names(names, path))
        for name in want:
            if name not in names:
                raise EdgeInputError(f"{path}: Parquet file has no column {name!r} "
                                     f"(columns: {', '.join(names) or '(none)'}); "
                                     f"{COLUMNS_HINT}", str(path))
        return tuple(want)

    @staticmethod
    def _open(path):
        return open_parquet(path)

    @property
    def rows(self) -> int:
        return self.stop - self.start

    def part(self, p: int, parts: int) -> "ParquetSlice":
        """The ``p``-th of ``parts`` consecutive, equal sub-slices."""
        cuts = even_cuts(self.rows, parts)
        return ParquetSlice(self.path, self.start + cuts[p], self.start + cuts[p + 1],
                            self.stamp, self.names)

    def read(self) -> pa.Table:
        """The rows as ``src int64, dst int64`` (validated)."""
        if self.rows <= 0:
            return EDGE_SCHEMA.empty_table()
        if self.stamp is not None:
            self.stamp.check()
        pf = self._open(self.path)
        md = pf.metadata
        groups, first, at = [], None, 0
        for g in range(md.num_row_groups):
            k = md.row_group(g).num_rows
            if at < self.stop and at + k > self.start:
                groups.append(g)
                first = at if first is None else first
            at += k
        try:
            t = pf.read_row_groups(groups, columns=list(self.names))
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{self.path}: not a readable Parquet file ({e})",
                                 self.path) from None
        if self.stamp is not None:
            self.stamp.check()
        t = t.slice(self.start - first, self.rows)
        return check_id_columns(t, self.path, self.start, self.names)

    def __repr__(self) -> str:
        return f"ParquetSlice({self.path!r}, {self.start}, {self.stop})"


def parquet_complete(f: Path, size: int) -> bool:
    """The file ends with Parquet's footer magic (a writer has finished it)."""
    return size >= 12 and ends_with(f, size, b"PAR1")


def check_parquet_file(f: Path, columns: "EdgeColumns | None" = None) -> tuple[bool, None]:
    """Validate a Parquet edge file's footer, columns and first rows: ``(has_edges,
    None)``."""
    s = ParquetSlice.of(f, columns=columns)
    if s.rows == 0:
        return False, None
    batch = next(open_parquet(f).iter_batches(batch_size=1024, columns=list(s.names)), None)
    if batch is not None:
        check_id_columns(pa.Table.from_batches([batch]), f, 0, s.names)
    return True, None


def read_weighted_parquet(path: Path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """A whole weighted Parquet edge file as
    :data:`~spark_plugin.sources.rows.WEIGHTED_SCHEMA`, validated."""
    import pyarrow.parquet as pq

    try:
        t = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise EdgeInputError(f"{path}: not a readable Parquet file ({e})", str(path)) from None
    return weighted_table(t, str(path), columns)


def check_weighted_parquet_file(f: Path, columns: "EdgeColumns | None" = None) -> bool:
    """Validate the columns ``src``, ``dst``, ``weight`` (or those ``columns`` picks) and
    the first rows of a weighted Parquet file; ``False`` when it has no rows."""
    pf = open_parquet(f)
    names = pf.schema_arrow.names
    if columns is None and "weight" not in names:
        raise EdgeInputError(f"{f}: Parquet file has no column 'weight' (columns: "
                             f"{', '.join(names)}); --weighted needs src, dst and weight; "
                             f"{COLUMNS_HINT} (with a third, WEIGHT)", str(f))
    picked = table_columns(names, str(f), columns, ("src", "dst", "weight"))
    if pf.metadata.num_rows == 0:
        return False
    batch = next(pf.iter_batches(batch_size=1024, columns=picked), None)
    if batch is not None:
        weighted_table(pa.Table.from_batches([batch]), str(f), columns)
    return True
