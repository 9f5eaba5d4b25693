"""Local edge input, read by the driver: one file, a directory of epoch files, a followed stream,
an Arrow table -- read, checked before Spark starts, and split into epochs.

Each file is read by its format's reader (:func:`~spark_plugin.sources.files.edge_format`):
text and CSV (:mod:`~spark_plugin.sources.text`), Parquet
(:mod:`~spark_plugin.sources.parquet`); a ``pyarrow.Table`` is checked as a Parquet file's
rows are (:mod:`~spark_plugin.sources.rows`). With ``weighted`` (``tfront sssp
--weighted``) every row has a third field, its weight.

Ids must be non-negative integers that fit int64. Anything else raises
:class:`~spark_plugin.errors.EdgeInputError`, naming the file and the line (the row for
Parquet); so does a ``.gz`` file that is not gzip or is truncated, an input with no edges at
all, and an input file that changes (size, modification time or inode) after the job
recorded it (:class:`~spark_plugin.sources.files.FileStamp`).

:func:`epoch_sources` turns a file into ``K`` consecutive, equal slices of its rows, or a
directory into one epoch per file (in natural order: ``e2`` before ``e10``; hidden and ``_``
files skipped; :mod:`~spark_plugin.sources.directory`). :func:`check_input` validates an
input (existence, readability, the first rows of every file) cheaply, before a Spark
session is started.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa

from spark_plugin.errors import EdgeInputError
from spark_plugin.sources.columns import EdgeColumns
from spark_plugin.sources.directory import edge_files, follow_files
from spark_plugin.sources.epochs import EpochSource, even_cuts
from spark_plugin.sources.files import FileStamp, check_regular, edge_format
from spark_plugin.sources.parquet import (ParquetSlice, check_parquet_file,
                                          check_weighted_parquet_file, parquet_rows,
                                          read_weighted_parquet)
from spark_plugin.sources.rows import edges_table, weighted_table
from spark_plugin.sources.text import (check_text_file, check_weighted_text_file,
                                       known_text_rows, read_text_edges, read_weighted_text)

__all__ = ["read_edges", "read_weighted_edges", "epoch_sources", "check_input",
           "parquet_file_rows"]


def read_edges(path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """Read one edge file as a table ``src int64, dst int64`` (rows in file order);
    ``columns`` (:class:`~spark_plugin.sources.columns.EdgeColumns`) picks other columns
    than the default ones.

    Raises
    ------
    EdgeInputError
        A malformed line (not two fields), a non-integer or negative id; the message reads
        ``FILE:LINE: ...``; a pipe or device (:func:`~spark_plugin.sources.files.check_regular`);
        a file the driver's memory cannot hold (``MemoryError`` while reading, named with
        what to do).
    FileNotFoundError
    """
    return _read(path, columns, weighted=False)


def read_weighted_edges(path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """Read one weighted edge file as :data:`~spark_plugin.sources.rows.WEIGHTED_SCHEMA`
    (rows in file order); ``columns`` picks the three columns.

    * **text / CSV** (any name but ``*.parquet``; ``.gz`` is decompressed): one edge
      ``src dst weight`` per line, fields separated by white space, a comma, ``;`` or a tab;
      ``#`` starts a comment; blank lines are skipped; a first line whose first two fields
      are not integers is a header (of a CSV file).
    * **Parquet** (``*.parquet``, ``*.pq``): integer columns ``src``, ``dst`` and a numeric
      column ``weight``.

    Raises
    ------
    EdgeInputError
        A line without exactly three fields, a vertex id that is not a non-negative int64, a
        weight that is not a finite number ``>= 0``; the message reads ``FILE:LINE: ...``;
        what :func:`read_edges` refuses of a file.
    FileNotFoundError
    """
    return _read(path, columns, weighted=True)


def _read(path, columns, *, weighted: bool) -> pa.Table:
    """One edge file by its format's reader: :func:`read_edges`, :func:`read_weighted_edges`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"edge file {str(path)!r} does not exist")
    check_regular(path)
    parquet = edge_format(path) == "parquet"
    try:
        if weighted:
            return (read_weighted_parquet if parquet else read_weighted_text)(path, columns)
        if parquet:
            return ParquetSlice.of(path, columns=columns).read()
        return read_text_edges(path, columns)
    except (MemoryError, pa.ArrowMemoryError):   # issue 32 item 11: named, not a traceback
        size = path.stat().st_size
        raise EdgeInputError(f"{path}: the driver ran out of memory reading this "
                             f"{size / 2**30:.1f} GiB edge file; read it on the executors "
                             f"instead: tfront wcc file://{path.absolute()} (a Spark source), "
                             f"or as Parquet", str(path)) from None


def parquet_file_rows(edges, follow=None) -> int | None:
    """The rows of ``edges`` when it is a single local Parquet file (from its footer:
    metadata only), else ``None`` -- also for a followed directory, and for a damaged file,
    which the driver's reader names when it reads it. What a job weighs against the driver's
    budget to have the executors read the file instead (``too_big_for_driver``)."""
    if follow is not None or not isinstance(edges, (str, os.PathLike)):
        return None
    p = Path(edges)
    if not p.is_file() or edge_format(p) != "parquet":
        return None
    try:
        return parquet_rows(p)
    except EdgeInputError:
        return None


def epoch_sources(edges, epochs: int = 1, *, follow: float | None = None,
                  poll: float = 0.5, sleep=None, columns: "EdgeColumns | None" = None,
                  weighted: bool = False) -> tuple[int | None, Iterator[EpochSource]]:
    """``(number of epochs, iterator of EpochSource per epoch)``.

    A text or CSV file (or a ``pyarrow.Table`` of edges) is read (and validated) once, up
    front, and split into ``epochs`` consecutive slices of equal size (the first slices one
    row shorter when it does not divide); a Parquet file is split the same way by its row
    count (footer), each slice read and validated when its epoch starts; a directory yields
    one epoch per file, in natural order of the names, each read when its epoch starts
    (``epochs`` must then be 1). An input with no edges at all, or a directory without epoch
    files, raises :class:`~spark_plugin.errors.EdgeInputError`. Every input file's
    :class:`~spark_plugin.sources.files.FileStamp` is recorded here: a file that changes
    later stops the job with :class:`~spark_plugin.errors.EdgeInputError` naming it.

    ``follow`` (directories only) consumes the directory as a **stream**: after the files
    present, new files become the next epochs as they appear (natural order within one
    listing; every file exactly once), until the marker file ``_DONE`` exists and every file
    is consumed, or no file has appeared or grown for ``follow`` seconds (``math.inf``: wait
    for the marker). The number of epochs is then ``None``. A file is taken only once its
    size and modification time were the same at two listings ``poll`` seconds apart (and,
    for Parquet, it ends with its footer); a taken file that changes afterwards stops the
    job with :class:`~spark_plugin.errors.EdgeInputError`. Writers should still create each
    file under a hidden or ``_``-prefixed name and rename it when complete (those names are
    skipped): a writer that pauses for longer than ``poll`` mid-file otherwise has its file
    taken early, and then refused. ``sleep`` (testing hook) replaces ``time.sleep`` between
    listings (:func:`~spark_plugin.sources.directory.follow_files`).

    ``columns`` (:class:`~spark_plugin.sources.columns.EdgeColumns`): the columns read as
    ``src``, ``dst`` (``weight``). ``weighted`` (the shortest-paths job's weighted edges):
    every row has a third column, the weight (:func:`read_weighted_edges`); every file,
    Parquet too, is then read whole (a single file up front, a directory's files when their
    epochs start), and a table is checked by
    :func:`~spark_plugin.sources.rows.weighted_table`.
    """
    if isinstance(edges, pa.Table):
        _check_epochs(epochs, "edge table")
        table = (weighted_table(edges, columns=columns) if weighted
                 else edges_table(edges, columns=columns))
        return _table_sources(table, epochs, "edge table")
    reader = _Reader(columns, weighted)
    path = Path(edges)
    _check_epochs(epochs, str(path))
    check_regular(path)
    if follow is not None:
        if not path.is_dir():
            raise EdgeInputError(f"{path}: following needs a directory of epoch files",
                                 str(path))
        if not follow > 0:
            raise ValueError(f"follow must be a positive number of seconds, got {follow!r}")
        if epochs != 1:
            raise EdgeInputError(f"{path}: epochs={epochs} splits a single file; a "
                                 f"directory has one epoch per file", str(path))
        import time
        return None, (_file_source(f, st, reader) for f, st in follow_files(
            path, float(follow), float(poll), sleep or time.sleep))
    if path.is_dir():
        if epochs != 1:
            raise EdgeInputError(f"{path}: epochs={epochs} splits a single file; a "
                                 f"directory has one epoch per file", str(path))
        files = _epoch_files(path)
        stamps = [FileStamp.of(f) for f in files]
        return len(files), (_file_source(f, st, reader) for f, st in zip(files, stamps))
    if not path.exists():
        raise FileNotFoundError(f"edge file {str(path)!r} does not exist")
    if reader.parquet_slices(path):
        whole = ParquetSlice.of(path, columns=columns)
        if whole.rows == 0:
            raise EdgeInputError(f"{path}: the Parquet file has no rows: no edges, "
                                 f"nothing to do", str(path))
        _check_split(whole.rows, epochs, str(path))
        slices = [whole.part(e, epochs) for e in range(epochs)]
        return epochs, (EpochSource(f"{path} rows {s.start + 1}-{s.stop}", s.read, s,
                                    whole.stamp.check) for s in slices)
    table = reader(path)
    if table.num_rows == 0:
        raise EdgeInputError(f"{path}: no edges (the file is empty or has only comments "
                             f"and blank lines); nothing to do", str(path))
    return _table_sources(table, epochs, str(path))


class _Reader:
    """How :func:`epoch_sources` reads one file: :func:`read_edges` (a Parquet file as lazy
    :class:`~spark_plugin.sources.parquet.ParquetSlice` epochs) or, ``weighted``,
    :func:`read_weighted_edges` (every file whole), with ``columns``."""

    def __init__(self, columns: "EdgeColumns | None", weighted: bool):
        self.columns, self.weighted = columns, bool(weighted)

    def __call__(self, path) -> pa.Table:
        read = read_weighted_edges if self.weighted else read_edges
        return read(path, self.columns)

    def parquet_slices(self, path) -> bool:
        """``path`` is read as lazy slices (a Parquet file, unweighted)."""
        return not self.weighted and edge_format(path) == "parquet"


def _epoch_files(path: Path) -> list[Path]:
    """The epoch files of the directory ``path``
    (:func:`~spark_plugin.sources.directory.edge_files`); none is refused."""
    files = edge_files(path)
    if not files:
        raise EdgeInputError(f"{path}: the directory has no epoch files (hidden and "
                             f"'_'-prefixed files are skipped); nothing to do", str(path))
    return files


def _check_epochs(epochs, where: str) -> None:
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise EdgeInputError(f"--epochs must be a positive integer, got {epochs!r}", where)


def _check_split(rows: int, epochs: int, what: str) -> None:
    """A split input has at least one edge per epoch (else the epoch lines read ``rows
    1-0``)."""
    if epochs > rows > 0:
        raise EdgeInputError(f"{what}: --epochs {epochs} is more than its {rows} "
                             f"edge{'s' if rows != 1 else ''}: each epoch of a split input "
                             f"needs at least one (--epochs {rows} or fewer)", what)


def _table_sources(table: pa.Table, epochs: int, what: str):
    if table.num_rows == 0:
        raise EdgeInputError(f"{what}: no edges (no rows); nothing to do", what)
    _check_split(table.num_rows, epochs, what)
    bounds = even_cuts(table.num_rows, epochs)
    return epochs, (EpochSource(f"{what} rows {bounds[e] + 1}-{bounds[e + 1]}",
                                (lambda s=bounds[e], t=bounds[e + 1]: table.slice(s, t - s)),
                                in_memory=True)
                    for e in range(epochs))


def _file_source(f: Path, stamp: FileStamp, reader: _Reader) -> EpochSource:
    """A directory's epoch file (called when its epoch starts: the iterator is lazy), as it
    was when ``stamp`` was recorded, read by ``reader`` (Parquet as a lazy slice)."""
    if reader.parquet_slices(f):
        whole = ParquetSlice.of(f, stamp=stamp, columns=reader.columns)
        return EpochSource(str(f), whole.read, whole, stamp.check)

    def read():
        stamp.check()
        t = reader(f)
        stamp.check()
        return t
    return EpochSource(str(f), read, None, stamp.check)


def check_input(edges, epochs: int | None = None, *, follow: float | None = None,
                peek: int = 1 << 16, columns: "EdgeColumns | None" = None,
                weighted: bool = False) -> list[str]:
    """Validate an edge input cheaply, before a Spark session starts: that it exists and is
    readable, that ``epochs`` and ``follow`` fit it, and the first rows of every file (the
    first ``peek`` bytes of a text or CSV file, decompressed; a Parquet file's footer,
    columns and first row group); a small file is checked completely, so an input without
    edges is refused here. A followed directory's files are not read here (one may be half
    written): each is validated when it is taken. Returns notes for the user (e.g. an epoch
    file without edges; said once per input: the first file whose rows have fields the job
    ignores). ``columns``: the columns read
    (:class:`~spark_plugin.sources.columns.EdgeColumns`); ``weighted``: every file's first
    rows are read as ``src dst weight`` (a Parquet file: its columns ``src``, ``dst`` and
    ``weight``), and ``--weighted`` is named where the weight is missing.

    Raises
    ------
    EdgeInputError
        What :func:`epoch_sources` or the first rows' reading would raise, naming the file
        (and line); ``FileNotFoundError`` for a missing input.
    """
    path = Path(edges)
    said = []

    def check(f, peek) -> bool:
        if weighted:
            has, note = (check_weighted_parquet_file(f, columns)
                         if edge_format(f) == "parquet"
                         else check_weighted_text_file(f, peek, columns)), None
        else:
            has, note = (check_parquet_file(f, columns) if edge_format(f) == "parquet"
                         else check_text_file(f, peek, columns))
        if note and not said:
            said.append(note)
        return has
    if not path.exists():
        raise FileNotFoundError(f"edge input {str(path)!r} does not exist")
    check_regular(path)
    if epochs is not None:
        _check_epochs(epochs, str(path))
    if path.is_dir():
        if epochs not in (None, 1):
            raise EdgeInputError(f"{path}: --epochs splits a single file; a directory "
                                 f"has one epoch per file (drop --epochs)", str(path))
        if not os.access(path, os.R_OK | os.X_OK):
            raise EdgeInputError(f"{path}: cannot list the directory (permission "
                                 f"denied)", str(path))
        if follow is not None:   # a stream: each file is validated when it is taken, complete
            return []
        files = _epoch_files(path)
        notes = []
        for f in files:
            if not check(f, peek):
                notes.append(f"{f}: no edges (empty, or only comments); its epoch adds none")
        return said + notes
    if follow is not None:
        raise EdgeInputError(f"{path}: --follow needs a directory of epoch files",
                             str(path))
    if not check(path, peek):
        raise EdgeInputError(f"{path}: no edges (the file is empty or has only comments "
                             f"and blank lines); nothing to do", str(path))
    if epochs is not None and epochs > 1:
        rows = _known_rows(path, peek, None if weighted else columns)
        if rows is not None:
            _check_split(rows, epochs, str(path))
    return said


def _known_rows(path: Path, peek: int, columns) -> int | None:
    """The edges of a file when they are known cheaply (a Parquet footer, a text file no
    longer than ``peek``), else ``None``."""
    try:
        if edge_format(path) == "parquet":
            return parquet_rows(path)
        return known_text_rows(path, peek, columns)
    except EdgeInputError:   # another reader's format (weighted): the run counts them
        return None
