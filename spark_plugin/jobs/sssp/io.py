"""Weighted edge input of the shortest-paths job: ``src dst weight``, split into epochs.

The unweighted job reads its edges exactly as the WCC job does (:mod:`spark_plugin.jobs.edges`).
With weights, each edge has a third field, a finite non-negative number:

* **text / CSV** (any name but ``*.parquet``; ``.gz`` is decompressed): one edge
  ``src dst weight`` per line, fields separated by white space, a comma, ``;`` or a tab;
  ``#`` starts a comment; blank lines are skipped; a first line whose first two fields are
  not integers is a header (of a CSV file).
* **Parquet** (``*.parquet``, ``*.pq``) and Arrow tables: integer columns ``src``, ``dst``
  and a numeric column ``weight``.

Anything else raises :class:`~spark_plugin.jobs.edges.EdgeInputError` naming the file and the
line (row). Epochs are made as for WCC (:func:`~spark_plugin.jobs.edges.epoch_sources`): a file
or table in ``epochs`` consecutive equal slices, a directory one epoch per file in natural
order, each file stamped when the job starts and refused if it changes.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from spark_plugin.jobs.edges import (COLUMNS_HINT, EdgeColumns, EdgeInputError, ParquetSlice,
                                     _check_epochs, _check_parquet, _find, _kind, _open_text,
                                     _peek_text, _table_sources, check_input, epoch_sources,
                                     table_columns)

__all__ = ["WEIGHTED_SCHEMA", "read_weighted_edges", "weighted_table", "weighted_epoch_sources",
           "check_weighted_input"]

#: The schema :func:`read_weighted_edges` returns.
WEIGHTED_SCHEMA = pa.schema([pa.field("src", pa.int64(), nullable=False),
                             pa.field("dst", pa.int64(), nullable=False),
                             pa.field("weight", pa.float64(), nullable=False)])

_SPLIT = re.compile(r"[\s,;]+")
_INT = re.compile(r"[+-]?[0-9]+\Z")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_weights(w: np.ndarray, where: str, rows) -> np.ndarray:
    """``w`` as float64, refusing NaN, infinite and negative weights (``rows[k]``: the line
    or row of ``w[k]`` for the message)."""
    w = np.asarray(w, np.float64)
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        k = int(bad[0])
        raise EdgeInputError(f"{where}:{rows[k]}: weight {float(w[k])!r} is not a finite number >= 0",
                             where, int(rows[k]))
    return w


def weighted_table(table: pa.Table, what: str = "edge table",
                   columns: "EdgeColumns | None" = None) -> pa.Table:
    """An Arrow table of weighted edges (integer ``src``, ``dst``, numeric ``weight``, or the
    three columns ``columns`` picks; other columns ignored) as :data:`WEIGHTED_SCHEMA`,
    validated (rows named 1-based)."""
    if not isinstance(table, pa.Table):
        raise EdgeInputError(f"{what}: expected a pyarrow.Table, got {type(table).__name__}", what)
    if columns is None:
        for name in ("src", "dst", "weight"):
            if name not in table.column_names:
                raise EdgeInputError(f"{what}: no column {name!r} (columns: "
                                     f"{', '.join(table.column_names) or '(none)'}); a weighted "
                                     f"input needs src, dst and weight; {COLUMNS_HINT}", what)
    src, dst, weight = table_columns(table.column_names, what, columns,
                                     ("src", "dst", "weight"))
    table = table.select([src, dst, weight]).rename_columns(["src", "dst", "weight"])
    ids = _check_parquet(table.select(["src", "dst"]), what, 0)
    col = table.column("weight")
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise EdgeInputError(f"{what}: column 'weight' has type {col.type}, expected a number",
                             what)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise EdgeInputError(f"{what}: row {row}: column 'weight' is null", what, row)
    w = _check_weights(col.to_numpy(zero_copy_only=False), what,
                       np.arange(1, table.num_rows + 1))
    return pa.Table.from_arrays([ids.column("src"), ids.column("dst"), pa.array(w)],
                                schema=WEIGHTED_SCHEMA)


def read_weighted_edges(path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """Read one weighted edge file as :data:`WEIGHTED_SCHEMA` (rows in file order);
    ``columns`` (:class:`~spark_plugin.jobs.edges.EdgeColumns`) picks the three columns.

    Raises
    ------
    EdgeInputError
        A line without exactly three fields, a vertex id that is not a non-negative int64, a
        weight that is not a finite number ``>= 0``; the message reads ``FILE:LINE: ...``.
    FileNotFoundError
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"edge file {str(path)!r} does not exist")
    if _kind(path) == "parquet":
        import pyarrow.parquet as pq

        try:
            t = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{path}: not a readable Parquet file ({e})", str(path)) from None
        return weighted_table(t, str(path), columns)
    return _weighted_lines(path, _open_text(path).splitlines(), columns)


def _weighted_lines(path: Path, lines: list[str],
                    columns: "EdgeColumns | None" = None) -> pa.Table:
    """The text lines of a weighted edge file (its first ones, or all) as
    :data:`WEIGHTED_SCHEMA`, validated (lines named 1-based). Without ``columns`` every
    line has three fields, ``src dst weight`` (a header naming them may order them
    otherwise); with them, as many as the first row has, three of them picked."""
    rows, numbers = [], []
    width, picks = None, (0, 1, 2)
    for no, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f.strip('"') for f in _SPLIT.split(line) if f]
        if width is None and len(fields) >= 2:
            # a header: the first two fields are not both integers (without columns: the
            # weight may come first when they are picked, so then no field is a number)
            header = (not (_INT.match(fields[0]) and _INT.match(fields[1]))
                      if columns is None else not any(_is_number(f) for f in fields))
            if columns is not None:
                width = len(fields)
                picks = columns.indices(fields if header else None, width, str(path), no)
            elif header and len(fields) == 3:
                idx = [_find(fields, n) for n in ("src", "dst", "weight")]
                picks = tuple(idx) if None not in idx else picks
            if header and (columns is not None or len(fields) == 3):
                continue   # a header line
        want = 3 if columns is None else width
        if len(fields) != want:
            raise EdgeInputError(f"{path}:{no}: malformed line {raw!r}: expected 'src dst weight'"
                                 + (" (--weighted: every edge has a third field, its weight)"
                                    if len(fields) == 2 else
                                    f"; {COLUMNS_HINT} (with a third, WEIGHT)"
                                    if columns is None else
                                    f": {len(fields)} fields, the first row has {want}"),
                                 str(path), no)
        if width is None:
            width = len(fields)
        rows.append([fields[k] for k in picks])
        numbers.append(no)
    ids = np.zeros((len(rows), 2), np.int64)
    w = np.zeros(len(rows), np.float64)
    for k, (s, d, x) in enumerate(rows):
        for j, v in enumerate((s, d)):
            if not _INT.match(v):
                raise EdgeInputError(f"{path}:{numbers[k]}: vertex id {v!r} is not an integer",
                                     str(path), numbers[k])
            n = int(v)
            if not 0 <= n < (1 << 63):
                raise EdgeInputError(f"{path}:{numbers[k]}: vertex id {v} is negative or does "
                                     f"not fit int64", str(path), numbers[k])
            ids[k, j] = n
        try:
            w[k] = float(x)
        except ValueError:
            raise EdgeInputError(f"{path}:{numbers[k]}: weight {x!r} is not a number",
                                 str(path), numbers[k]) from None
    _check_weights(w, str(path), numbers)
    return pa.Table.from_arrays([pa.array(ids[:, 0]), pa.array(ids[:, 1]), pa.array(w)],
                                schema=WEIGHTED_SCHEMA)


def check_weighted_input(edges, epochs: int | None = None, *,
                         follow: float | None = None, peek: int = 1 << 16,
                         columns: "EdgeColumns | None" = None) -> list[str]:
    """:func:`~spark_plugin.jobs.edges.check_input` for a weighted input, before a Spark
    session starts: the same checks of the input and its epochs, with every file's first
    rows read as ``src dst weight`` (a Parquet file: its columns ``src``, ``dst`` and
    ``weight`` and its first rows). Returns the notes for the user.

    Raises
    ------
    EdgeInputError
        Naming the file (and line), and ``--weighted`` where the weight is missing.
    """
    return check_input(edges, epochs, follow=follow, peek=peek,
                       check_file=lambda f, peek: _check_weighted_file(f, peek, columns))


def _check_weighted_file(f: Path, peek: int, columns: "EdgeColumns | None" = None) -> bool:
    """Validate the first rows of one weighted edge file; ``False`` when it certainly has
    no edges."""
    if _kind(f) == "parquet":
        pf = ParquetSlice._open(f)
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
    lines, whole = _peek_text(f, peek)
    return _weighted_lines(f, lines, columns).num_rows > 0 or not whole


def weighted_epoch_sources(edges, epochs: int = 1, *, follow: float | None = None,
                           columns: "EdgeColumns | None" = None, **options):
    """``(number of epochs, iterator of EpochSource)`` of a weighted input: the WCC job's
    :func:`~spark_plugin.jobs.edges.epoch_sources` with :func:`read_weighted_edges` as its
    reader -- a file read (and validated) up front and cut into ``epochs`` equal slices, a
    directory with one epoch per file (``epochs`` must be 1), each file read when its epoch
    starts and refused if it changed since the job started
    (:class:`~spark_plugin.jobs.edges.FileStamp`), or with ``follow`` a directory consumed as a
    stream -- or a table, validated here (:func:`weighted_table`) and cut the same way.
    ``options``: ``epoch_sources``'s ``poll`` and ``sleep``; ``columns``: the three columns
    read as ``src``, ``dst``, ``weight``."""
    if isinstance(edges, pa.Table):
        _check_epochs(epochs, "edge table")
        return _table_sources(weighted_table(edges, columns=columns), epochs, "edge table")
    reader = read_weighted_edges if columns is None else (
        lambda path: read_weighted_edges(path, columns))
    return epoch_sources(edges, epochs, follow=follow, reader=reader, **options)
