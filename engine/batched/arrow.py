"""Delta batches as Arrow: column names, schemas, and checks that name the column.

A *delta batch* carries pointstamp count changes from their producers (Spark executors,
worker processes of :mod:`engine.exchange.processes`) to a tracker (docs/spark.md)::

    loc       int32                          location id, 0..L-1
    ts        fixed_size_list<int64>[width]  timestamp, width = m + K, unused counters 0
    diff      int64                          count change
    producer  string                         who produced the rows (one logical unit of work)
    seq       int64                          the producer's sequence number, 0, 1, 2, ...

That is the *canonical* schema (:func:`delta_schema`): what
:class:`~spark_plugin.service.frontier_service.FrontierService` publishes and logs, and the best input for it.
Spark has no fixed-size list type, so between Spark and Python the ``ts`` column travels as a
variable-size ``list<int64>`` (:func:`wire_schema`, ``spark_plugin.schema.SPARK_DDL``); the service accepts
both and checks every row's length.

Frontier changes use the same five columns (``diff`` is +1 or -1; ``producer``/``seq`` name the
batch that caused them), and the count table uses ``loc, ts, cnt`` (:func:`counts_schema`).

>>> delta_schema(2).field(TS).type
FixedSizeListType(fixed_size_list<item: int64>[2])
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BatchError, SchemaError, TimestampRangeError, TimestampWidthError

__all__ = [
    "LOC", "TS", "DIFF", "PRODUCER", "SEQ", "CNT", "PART", "PARTS", "ORIGIN", "UNIT_COLUMNS",
    "DELTA_COLUMNS", "RAW_COLUMNS",
    "delta_schema", "wire_schema", "counts_schema", "check_delta_schema",
    "delta_table", "ts_array", "ts_matrix", "int_column", "text_column",
]

#: Column names (docs/spark.md).
LOC, TS, DIFF, PRODUCER, SEQ = "loc", "ts", "diff", "producer", "seq"
#: Count column of :func:`counts_schema`.
CNT = "cnt"
#: Optional delivery-unit columns: a ``(producer, seq)`` split into ``parts`` parts, this row's
#: part index, and the copy it came from (e.g. the file); see ``FrontierService``.
PART, PARTS, ORIGIN = "part", "parts", "origin"
#: The optional delivery-unit columns, in order.
UNIT_COLUMNS = (PART, PARTS, ORIGIN)
#: The columns of a delta batch, in order.
DELTA_COLUMNS = (LOC, TS, DIFF, PRODUCER, SEQ)
#: The columns of raw deltas before a producer and sequence number are stamped on them.
RAW_COLUMNS = (LOC, TS, DIFF)

_EXPECTED = {LOC: "an integer type (int32)", TS: "a list of integers (fixed_size_list<int64>)",
             DIFF: "an integer type (int64)", PRODUCER: "string", SEQ: "an integer type (int64)",
             CNT: "an integer type (int64)", PART: "an integer type (int64)",
             PARTS: "an integer type (int64)", ORIGIN: "string"}


def delta_schema(width: int) -> pa.Schema:
    """The canonical Arrow schema of a delta batch whose timestamps have ``width`` coordinates.

    Parameters
    ----------
    width : int
        ``m + K`` of the graph: outer coordinates plus the deepest loop's counters.

    Returns
    -------
    pyarrow.Schema
        ``loc int32, ts fixed_size_list<int64>[width], diff int64, producer string, seq int64``,
        all non-nullable.
    """
    width = _check_width(width)
    return pa.schema([pa.field(LOC, pa.int32(), nullable=False),
                      pa.field(TS, pa.list_(pa.int64(), width), nullable=False),
                      pa.field(DIFF, pa.int64(), nullable=False),
                      pa.field(PRODUCER, pa.string(), nullable=False),
                      pa.field(SEQ, pa.int64(), nullable=False)])


def wire_schema(*, large_types: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects from a ``mapInArrow`` function declared with
    ``spark_plugin.schema.SPARK_DDL``.

    Parameters
    ----------
    large_types : bool
        ``True`` when the session sets ``spark.sql.execution.arrow.useLargeVarTypes``: Spark
        then exchanges ``large_list`` and ``large_string``.
    """
    lst = pa.large_list(pa.int64()) if large_types else pa.list_(pa.int64())
    txt = pa.large_string() if large_types else pa.string()
    return pa.schema([pa.field(LOC, pa.int32()), pa.field(TS, lst), pa.field(DIFF, pa.int64()),
                      pa.field(PRODUCER, txt), pa.field(SEQ, pa.int64())])


def counts_schema(width: int) -> pa.Schema:
    """Arrow schema of the count table:
    ``loc int32, ts fixed_size_list<int64>[width], cnt int64``."""
    width = _check_width(width)
    return pa.schema([pa.field(LOC, pa.int32(), nullable=False),
                      pa.field(TS, pa.list_(pa.int64(), width), nullable=False),
                      pa.field(CNT, pa.int64(), nullable=False)])


def check_delta_schema(schema: pa.Schema, width: int,
                       columns: Sequence[str] = DELTA_COLUMNS) -> None:
    """Check that ``schema`` has ``columns`` with usable types; extra columns are allowed.

    Integer columns may have any integer type (values are range-checked when read); ``ts``
    may be a fixed-size list (its size must be ``width``) or a variable-size list (each row's
    length is checked when read); ``producer`` a string, large string or string dictionary.

    Raises
    ------
    SchemaError
        A column is missing, duplicated or has the wrong type; the message names it and lists
        the columns present.
    TimestampWidthError
        ``ts`` is a fixed-size list of another size than ``width``.
    """
    width = _check_width(width)
    names = list(schema.names)
    for name in columns:
        if name not in names:
            raise SchemaError(f"delta batch has no column {name!r} ({_EXPECTED[name]}); "
                              f"columns present: {_present(names)}")
        if names.count(name) > 1:
            raise SchemaError(f"delta batch has {names.count(name)} columns named {name!r}; "
                              f"columns present: {_present(names)}")
        typ = schema.field(name).type
        if name == TS:
            if not (pa.types.is_fixed_size_list(typ) or pa.types.is_list(typ)
                    or pa.types.is_large_list(typ)) or not pa.types.is_integer(typ.value_type):
                raise SchemaError(f"column {TS!r} has type {typ}, expected a list of integers "
                                  f"(fixed_size_list<int64>[{width}]); columns present: "
                                  f"{_present(names)}")
            if pa.types.is_fixed_size_list(typ) and typ.list_size != width:
                raise TimestampWidthError(
                    f"column {TS!r} has type {typ}: timestamps with {typ.list_size} coordinates, "
                    f"expected {width} (m + K, unused loop counters 0)")
        elif name in (PRODUCER, ORIGIN):
            if not _is_text(typ):
                raise SchemaError(f"column {name!r} has type {typ}, expected string; columns "
                                  f"present: {_present(names)}")
        elif not pa.types.is_integer(typ):
            raise SchemaError(f"column {name!r} has type {typ}, expected {_EXPECTED[name]}; "
                              f"columns present: {_present(names)}")


def delta_table(loc, ts, diff, producer, seq) -> pa.Table:
    """Build a delta table with exactly the canonical types of :func:`delta_schema`.

    Parameters
    ----------
    loc : int[n]
    ts : int64[n, width]
        Timestamps padded to the graph's ``m + K`` with zeros.
    diff : int[n]
    producer : str or sequence of str
        One producer for every row, or one per row.
    seq : int or int[n]
        One sequence number for every row, or one per row.

    Examples
    --------
    >>> t = delta_table([0, 1], [[0, 0], [0, 1]], [1, -1], "job-0", 0)
    >>> t.schema.names, t.column("ts").to_pylist()
    (['loc', 'ts', 'diff', 'producer', 'seq'], [[0, 0], [0, 1]])
    """
    loc_a = np.asarray(loc, dtype=np.int64)
    n = loc_a.shape[0]
    ts_a = np.asarray(ts, dtype=np.int64)
    diff_a = np.asarray(diff, dtype=np.int64)
    if ts_a.ndim != 2 or ts_a.shape[0] != n or diff_a.shape != (n,):
        raise BatchError(f"delta columns must be loc[n], ts[n, width], diff[n]: got loc of "
                         f"shape {loc_a.shape}, ts {ts_a.shape}, diff {diff_a.shape}")
    prod = [producer] * n if isinstance(producer, str) else list(producer)
    seq_a = np.full(n, seq, dtype=np.int64) if np.ndim(seq) == 0 else np.asarray(seq, np.int64)
    if len(prod) != n or seq_a.shape != (n,):
        raise BatchError(f"delta columns differ in length: loc has {n} rows, producer "
                         f"{len(prod)}, seq {seq_a.shape[0] if seq_a.ndim else 1}")
    if np.any(loc_a < np.iinfo(np.int32).min) or np.any(loc_a > np.iinfo(np.int32).max):
        raise BatchError("loc values must fit int32")
    return pa.Table.from_arrays(
        [pa.array(loc_a.astype(np.int32), pa.int32()), ts_array(ts_a),
         pa.array(diff_a, pa.int64()), pa.array(prod, pa.string()), pa.array(seq_a, pa.int64())],
        schema=delta_schema(ts_a.shape[1]))


def ts_array(ts: np.ndarray) -> pa.FixedSizeListArray:
    """``int64[n, width]`` rows as a ``fixed_size_list<int64>[width]`` array (zero-copy when
    ``ts`` is C-contiguous int64)."""
    ts = np.ascontiguousarray(ts, dtype=np.int64)
    return pa.FixedSizeListArray.from_arrays(pa.array(ts.reshape(-1), pa.int64()), ts.shape[1])


def ts_matrix(column, width: int, *, describe: Callable[[int], str] | None = None) -> np.ndarray:
    """The ``ts`` column as ``int64[n, width]``.

    Parameters
    ----------
    column : pyarrow.Array or ChunkedArray
        A fixed-size or variable-size list of integers.
    width : int
    describe : callable, optional
        ``describe(row)`` names a row's location in error messages.

    Raises
    ------
    BatchError
        A null timestamp or coordinate (the row is named).
    TimestampWidthError
        A row whose timestamp does not have ``width`` coordinates.
    TimestampRangeError
        A coordinate that does not fit int64.
    """
    arr = _one_chunk(column)
    n = len(arr)
    if arr.null_count:
        i = _first_true(arr.is_null())
        raise BatchError(f"row {i}{_where(describe, i)}: column {TS!r} is null")
    if not pa.types.is_fixed_size_list(arr.type):
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
        wrong = lengths != width
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise TimestampWidthError(
                f"row {i}{_where(describe, i)}: timestamp {tuple(arr[i].as_py())} has "
                f"{int(lengths[i])} coordinates, expected {width} (m + K, unused loop counters 0)")
    elif arr.type.list_size != width:
        raise TimestampWidthError(f"column {TS!r} has timestamps with {arr.type.list_size} "
                                  f"coordinates, expected {width}")
    values = arr.flatten()
    if values.null_count:
        i = _first_true(pc.is_null(values)) // width
        raise BatchError(f"row {i}{_where(describe, i)}: timestamp {tuple(arr[i].as_py())} has a "
                         f"null coordinate")
    try:
        flat = pc.cast(values, pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid as e:
        raise TimestampRangeError(f"column {TS!r}: a coordinate does not fit int64 ({e})") from None
    return flat.reshape(n, width)


def int_column(column, name: str) -> np.ndarray:
    """An integer column as ``int64[n]``; raise :class:`BatchError` naming the first null row
    or a value that does not fit int64."""
    arr = _one_chunk(column)
    if arr.null_count:
        raise BatchError(f"row {_first_true(arr.is_null())}: column {name!r} is null")
    try:
        return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid as e:
        raise BatchError(f"column {name!r}: a value does not fit int64 ({e})") from None


def text_column(column, name: str) -> tuple[np.ndarray, list[str]]:
    """A string column as ``(codes int64[n], names)``: ``names[codes[i]]`` is row ``i``'s value
    and ``names`` are distinct. A dictionary-encoded column is decoded first, so duplicate or
    unused dictionary entries do not matter. Raise :class:`BatchError` naming the first null
    row."""
    arr = _one_chunk(column)
    if pa.types.is_dictionary(arr.type):
        arr = pc.cast(arr, arr.type.value_type)
    if arr.null_count:
        raise BatchError(f"row {_first_true(arr.is_null())}: column {name!r} is null")
    enc = pc.dictionary_encode(arr)
    names = [str(v) for v in enc.dictionary.to_pylist()]
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), names


def _one_chunk(column):
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _first_true(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False)))[0])


def _where(describe, row: int) -> str:
    return f" ({describe(row)})" if describe is not None else ""


def _is_text(typ: pa.DataType) -> bool:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or \
        getattr(pa.types, "is_string_view", lambda t: False)(typ)


def _present(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "(none)"


def _check_width(width) -> int:
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or int(width) < 1:
        raise SchemaError(f"timestamp width must be a positive integer, got {width!r}")
    return int(width)
