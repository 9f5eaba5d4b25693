"""Arrow arrays to and from NumPy buffers, for the tasks of a job's stages.

Arrays for the tasks' output are built from their buffers: ``pa.array`` asks pyarrow's
pandas shim whether its input is a pandas object, which imports pandas (about 0.3 s in
every fresh Python worker, on the first stage's critical path); columns are read back the
same way (``to_numpy`` imports pandas too). A task's output travels as Arrow IPC bytes
(:func:`to_ipc`, :func:`from_ipc`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from engine.errors import BatchError

__all__ = ["arrow_fixed", "arrow_bool", "arrow_lists", "arrow_ragged", "arrow_take", "list_matrix",
           "arrow_strings", "arrow_numpy", "to_ipc", "from_ipc", "arrow_types"]


def arrow_fixed(typ: pa.DataType, x: np.ndarray) -> pa.Array:
    """A null-free Arrow array of the fixed-width type ``typ`` over the numpy array ``x``."""
    x = np.ascontiguousarray(x, typ.to_pandas_dtype())
    return pa.Array.from_buffers(typ, len(x), [None, pa.py_buffer(x)])


def arrow_bool(x: np.ndarray) -> pa.Array:
    bits = np.packbits(np.asarray(x, np.bool_), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(x), [None, pa.py_buffer(bits)])


def arrow_lists(typ: pa.DataType, rows) -> pa.Array:
    """A list array (``list<int64>`` or ``large_list<int64>``) of the int sequences ``rows``."""
    lens = np.array([len(r) for r in rows], np.int64)
    off = np.zeros(len(rows) + 1, np.int64 if pa.types.is_large_list(typ) else np.int32)
    np.cumsum(lens, out=off[1:])
    values = arrow_fixed(pa.int64(), np.array([v for r in rows for v in r], np.int64))
    return pa.Array.from_buffers(typ, len(rows), [None, pa.py_buffer(off)], children=[values])


def arrow_ragged(typ: pa.DataType, values: np.ndarray, widths: np.ndarray) -> pa.Array:
    """A list array (``list<int64>`` or ``large_list<int64>``) whose row ``i`` holds the next
    ``widths[i]`` of ``values`` (int64, the rows' elements one after another), built from
    the buffers: no Python step per row."""
    widths = np.asarray(widths, np.int64)
    off = np.zeros(len(widths) + 1, np.int64 if pa.types.is_large_list(typ) else np.int32)
    np.cumsum(widths, out=off[1:])
    if int(off[-1]) != len(values):
        raise ValueError(f"arrow_ragged: widths sum to {int(off[-1])}, {len(values)} values")
    return pa.Array.from_buffers(typ, len(widths), [None, pa.py_buffer(off)],
                                 children=[arrow_fixed(pa.int64(), values)])


def arrow_take(typ: pa.DataType, names, codes: np.ndarray) -> pa.Array:
    """The ``string`` / ``large_string`` array whose row ``i`` is ``names[codes[i]]``, built
    from the buffers with NumPy over the few distinct strings: no Python string per row
    (nor ``pyarrow.compute``, whose first import costs a task most of a second)."""
    codes = np.asarray(codes, np.int64)
    data = [str(x).encode("utf-8") for x in names]
    size = np.array([len(d) for d in data], np.int64)
    start = np.zeros(len(data) + 1, np.int64)
    np.cumsum(size, out=start[1:])
    pool = np.frombuffer(b"".join(data), np.uint8)
    lens = size[codes]
    off = np.zeros(len(codes) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    total = int(off[-1])
    if len(data) == 1:   # one string repeated: its bytes, k times
        blob = data[0] * len(codes)
    else:
        at = np.repeat(start[:-1][codes] - off[:-1], lens) + np.arange(total, dtype=np.int64)
        blob = pool[at].tobytes()
    off = off.astype(np.int64 if pa.types.is_large_string(typ) else np.int32, copy=False)
    return pa.Array.from_buffers(typ, len(codes), [None, pa.py_buffer(off),
                                                   pa.py_buffer(blob)])


def list_matrix(column, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A list-of-integers column (``list``, ``large_list`` or ``fixed_size_list``, any
    chunking) as ``(int64[n, w], widths int64[n])``: row ``i``'s elements in the first
    ``widths[i]`` columns, zeros after, ``w`` the widest row. Read from the offsets and the
    values, no Python step per row. A null row or element raises :class:`BatchError`."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(arr)
    if arr.null_count:
        raise BatchError(f"column {name!r}: {arr.null_count} null rows")
    if pa.types.is_fixed_size_list(arr.type):
        widths = np.full(n, arr.type.list_size, np.int64)
    else:
        off = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
        widths = np.diff(off)
    values = arr.flatten()   # the elements of the rows in the array's slice, in order
    if values.null_count:
        raise BatchError(f"column {name!r}: {values.null_count} null elements")
    flat = arrow_numpy(values).astype(np.int64, copy=False)
    w = int(widths.max()) if n else 0
    out = np.zeros((n, w), np.int64)
    out[np.arange(w) < widths[:, None]] = flat
    return out, widths


def arrow_strings(typ: pa.DataType, items) -> pa.Array:
    """A ``string`` / ``large_string`` array of the Python strings ``items``."""
    data = [x.encode("utf-8") for x in items]
    off = np.zeros(len(data) + 1, np.int64 if pa.types.is_large_string(typ) else np.int32)
    np.cumsum([len(d) for d in data], out=off[1:])
    return pa.Array.from_buffers(typ, len(data),
                                 [None, pa.py_buffer(off), pa.py_buffer(b"".join(data))])


def arrow_numpy(col, writable: bool = True) -> np.ndarray:
    """The values of an Arrow (chunked) array of a fixed-width or boolean type as a writable
    numpy array, read from its buffers (``to_numpy`` imports pandas too); arrays with nulls
    go through ``to_numpy``. ``writable=False``: a read-only view of the Arrow buffer where
    there is one (one chunk of a fixed-width type without nulls), no copy."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    typ = col.type
    parts = []
    for c in chunks:
        n, off = len(c), c.offset
        if c.null_count:
            parts.append(c.to_numpy(zero_copy_only=False))
        elif pa.types.is_boolean(typ):
            bits = np.frombuffer(c.buffers()[1], np.uint8)
            parts.append(np.unpackbits(bits, count=off + n, bitorder="little")[off:]
                         .astype(np.bool_))
        else:
            dt = np.dtype(typ.to_pandas_dtype())
            parts.append(np.frombuffer(c.buffers()[1], dt, count=n, offset=off * dt.itemsize))
    if not parts:
        return np.zeros(0, np.bool_ if pa.types.is_boolean(typ) else typ.to_pandas_dtype())
    if len(parts) > 1:
        return np.concatenate(parts)
    return parts[0].copy() if writable else parts[0]


def to_ipc(batches, schema: pa.Schema) -> bytes:
    """Arrow record batches as one Arrow IPC stream (the bytes a task ships)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


def from_ipc(blob: bytes) -> pa.Table:
    return pa.ipc.open_stream(blob).read_all()


def arrow_types(large: bool):
    return (pa.large_list(pa.int64()) if large else pa.list_(pa.int64()),
            pa.large_string() if large else pa.string())
