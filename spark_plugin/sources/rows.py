"""The row checks every edge reader shares: vertex ids and weights as the jobs take them.

Ids are non-negative integers that fit int64; a weight (``tfront sssp --weighted``) is a
finite number ``>= 0``. :func:`check_id_columns` validates integer id columns of Arrow data
(a Parquet file's rows, an Arrow table, a collected DataFrame) and :func:`check_weights` a
weight column, naming the 1-based row; :func:`edges_table` and :func:`weighted_table` take a
whole Arrow table. The text reader parses ids from lines (:mod:`~spark_plugin.sources.text`)
and a Spark source checks them on the executors (:mod:`~spark_plugin.sources.ids`).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_plugin.errors import EdgeInputError
from spark_plugin.sources.columns import COLUMNS_HINT, EdgeColumns, table_columns

__all__ = ["EDGE_SCHEMA", "WEIGHTED_SCHEMA", "INT", "int64_array", "check_id_columns",
           "check_weights", "edges_table", "weighted_table"]

#: The schema of ``src, dst`` edges every reader returns.
EDGE_SCHEMA = pa.schema([pa.field("src", pa.int64(), nullable=False),
                         pa.field("dst", pa.int64(), nullable=False)])
#: The schema of weighted edges (``tfront sssp --weighted``) every reader returns.
WEIGHTED_SCHEMA = pa.schema([pa.field("src", pa.int64(), nullable=False),
                             pa.field("dst", pa.int64(), nullable=False),
                             pa.field("weight", pa.float64(), nullable=False)])

#: An integer field of a text row (``+`` or ``-`` allowed: a negative id is refused by name).
INT = re.compile(r"[+-]?[0-9]+\Z")


def int64_array(x: np.ndarray) -> pa.Array:
    """An int64 Arrow array of ``x`` built from its buffer (``pa.array`` of a NumPy array
    imports pandas, half a second of a driver run: issue 33)."""
    x = np.ascontiguousarray(x, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(x), [None, pa.py_buffer(x)])


def check_id_columns(t: pa.Table, path, first_row: int, names=("src", "dst")) -> pa.Table:
    """Validate the integer id columns ``names`` (``src``, ``dst`` by default) of rows of a
    Parquet edge file or an Arrow table (``first_row``: the 0-based file row of ``t``'s first
    row; errors name 1-based file rows) and return them as ``src, dst``."""
    cols = []
    for name in names:
        c = t.column(name).combine_chunks() if t.num_rows else pa.array([], pa.int64())
        if not pa.types.is_integer(c.type):
            raise EdgeInputError(f"{path}: column {name!r} has type {c.type}, expected "
                                 f"integer vertex ids", str(path))
        if c.null_count:
            row = first_row + int(np.flatnonzero(c.is_null().to_numpy(zero_copy_only=False))[0]) + 1
            raise EdgeInputError(f"{path}: row {row}: column {name!r} is null", str(path),
                                 row)
        try:
            c = c.cast(pa.int64())
        except pa.ArrowInvalid as e:
            raise EdgeInputError(f"{path}: column {name!r}: {e}", str(path)) from None
        if len(c) and pc.min(c).as_py() < 0:   # only a bad file pays for finding the row
            v = c.to_numpy(zero_copy_only=False)
            k = int(np.flatnonzero(v < 0)[0])
            row = first_row + k + 1
            raise EdgeInputError(f"{path}: row {row}: vertex id {int(v[k])} in column "
                                 f"{name!r} is negative; ids must be >= 0", str(path), row)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=EDGE_SCHEMA)


def check_weights(w: np.ndarray, where: str, rows) -> np.ndarray:
    """``w`` as float64, refusing NaN, infinite and negative weights (``rows[k]``: the line
    or row of ``w[k]`` for the message)."""
    w = np.asarray(w, np.float64)
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.size:
        k = int(bad[0])
        raise EdgeInputError(f"{where}:{rows[k]}: weight {float(w[k])!r} is not a finite number >= 0",
                             where, int(rows[k]))
    return w


def edges_table(table: pa.Table, what: str = "edge table",
                columns: "EdgeColumns | None" = None) -> pa.Table:
    """An Arrow table of edges (integer columns ``src``, ``dst``, or those ``columns``
    picks; other columns ignored) as ``src int64, dst int64``, validated like a Parquet
    file (rows named 1-based)."""
    if not isinstance(table, pa.Table):
        raise EdgeInputError(f"{what}: expected a pyarrow.Table, got {type(table).__name__}", what)
    names = table_columns(table.column_names, what, columns)
    return check_id_columns(table.select(names), what, 0, names)


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
    ids = check_id_columns(table.select(["src", "dst"]), what, 0)
    col = table.column("weight")
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise EdgeInputError(f"{what}: column 'weight' has type {col.type}, expected a number",
                             what)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]) + 1
        raise EdgeInputError(f"{what}: row {row}: column 'weight' is null", what, row)
    w = check_weights(col.to_numpy(zero_copy_only=False), what,
                       np.arange(1, table.num_rows + 1))
    return pa.Table.from_arrays([ids.column("src"), ids.column("dst"), pa.array(w)],
                                schema=WEIGHTED_SCHEMA)
