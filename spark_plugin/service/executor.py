"""Executor side: consolidate a partition's deltas inside ``mapInArrow`` before they leave.

:class:`PartitionConsolidator` is the function handed to ``DataFrame.mapInArrow``: it reads a
partition's record batches (``loc, ts, diff``, and ``producer, seq`` unless it stamps them),
sums the ``diff`` of equal ``(producer, seq, loc, ts)`` rows, drops zero sums, and yields
record batches with exactly the Arrow types Spark expects for :data:`~spark_plugin.schema.SPARK_DDL`
(:func:`~spark_plugin.schema.wire_schema`). Only consolidated deltas cross the network.

* **Where it runs.** Per task, :func:`~spark_plugin.service.device.task_device` picks a GPU
  (``CUDA_VISIBLE_DEVICES``, else the task's ``gpu`` resource); when CuPy runs there the
  consolidation is ``gpu_kernels.intake.consolidate_cuda`` (sort + segmented reduce on
  the device), otherwise the CPU twin ``gpu_kernels.consolidate.consolidate`` (NumPy + Numba
  radix sort). A GPU that is assigned but unusable is logged and the CPU is used. Compiled
  kernels (Numba's, on disk and in memory) are cached per Python worker, which Spark reuses
  across tasks (``spark.python.worker.reuse``).
* **Memory.** Input is buffered and re-consolidated every ``flush_rows`` rows, so a partition
  needs memory for its distinct ``(producer, seq, loc, ts)`` plus ``flush_rows`` rows.
* **Identity.** With ``producer`` given, rows are stamped ``producer-<partition id>`` (or just
  ``producer`` with ``per_partition=False``) and ``seq``: the partition id, not the attempt
  number, so a retried or speculative task re-produces the same ``(producer, seq)`` and the
  driver ignores the copy. Without ``producer`` the rows' own ``producer``/``seq`` are kept.
* **Markers.** Every ``(producer, seq)`` of the input -- and, when stamping, the stamped one
  even for an empty partition -- is present in the output: a group whose deltas cancel
  keeps one row ``loc 0, ts 0, diff 0`` (a no-op for the engine), so the driver sees the
  sequence number and does not report a gap.
* **Invalid rows** (a null, a timestamp of the wrong width, a negative location, coordinate
  or ``seq``) are not consolidated and do not fail the task: they are passed on unchanged,
  after the consolidated rows, so that the driver's validation rejects the whole batch with
  a named error (:class:`~engine.errors.TimestampWidthError`, ...) instead of Spark retrying
  a task that can never succeed. The executor does not know the graph; the driver checks
  locations against it. Likewise a ``(producer, seq)`` some of whose pointstamps' diffs sum
  outside int64 is passed on unconsolidated (never wrapped), for the driver to reject with
  :class:`~engine.errors.CountOverflowError`.

>>> import pyarrow as pa
>>> raw = pa.table({"loc": pa.array([1, 1, 2], pa.int32()),
...                 "ts": pa.array([[0, 0], [0, 0], [3, 1]], pa.list_(pa.int64())),
...                 "diff": pa.array([2, -1, 5], pa.int64())})
>>> out = pa.Table.from_batches(PartitionConsolidator(2, producer="job", seq=7)(raw.to_batches()))
>>> out.to_pydict()["diff"], out.column("producer")[0].as_py(), out.schema.field("ts").type
([1, 5], 'job-0', ListType(list<item: int64>))
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BatchError, UnknownLocationError
from engine.core.timestamp import MAX_COORD

from spark_plugin.service.device import choose_device, gpu_usable, task_resources
from spark_plugin.schema import (DELTA_COLUMNS, DIFF, LOC, PRODUCER, RAW_COLUMNS, SEQ, TS, check_delta_schema,
                     delta_schema, int_column, ts_array, ts_matrix, wire_schema)

__all__ = ["PartitionConsolidator", "consolidate_table", "to_wire", "marker_rows",
           "DEFAULT_FLUSH_ROWS"]

log = logging.getLogger(__name__)

#: Rows buffered before the buffer is re-consolidated.
DEFAULT_FLUSH_ROWS = 1 << 20
#: Rows per output record batch.
OUTPUT_BATCH_ROWS = 1 << 16

INT32_MAX = (1 << 31) - 1


class PartitionConsolidator:
    """The ``mapInArrow`` function that consolidates one partition's deltas.

    Parameters
    ----------
    width : int
        ``m + K`` of the graph (timestamps are padded to it with zeros).
    producer : str, optional
        Stamp rows with this producer (suffixed ``-<partition id>`` when ``per_partition``);
        then ``seq`` is required and the input needs only ``loc, ts, diff``.
    seq : int, optional
        The sequence number stamped on the rows (the round, epoch or micro-batch id).
    per_partition : bool
        Suffix the producer with the partition id (one producer per partition, stable
        across rounds as long as the partitioning is).
    large_types : bool
        Yield ``large_list``/``large_string`` (for ``spark.sql.execution.arrow.useLargeVarTypes``).
    use_gpu : bool
        Consolidate on the task's GPU when one is assigned and usable.
    flush_rows : int
        Re-consolidate the buffered input every this many rows.

    Notes
    -----
    Called with an iterator of record batches, it yields
    :func:`~spark_plugin.schema.wire_schema` batches: the consolidated rows sorted by
    ``(producer, seq, loc, ts)``, then the invalid rows unchanged. It raises
    :class:`~spark_plugin.errors.SchemaError` (or
    :class:`~engine.errors.TimestampWidthError` for a fixed-size ``ts`` of another width)
    when the input's columns are wrong; :func:`~spark_plugin.service.batch.consolidate_frame` checks
    the DataFrame's schema on the driver first.
    """

    def __init__(self, width: int, *, producer: str | None = None, seq: int | None = None,
                 per_partition: bool = True, large_types: bool = False, use_gpu: bool = True,
                 flush_rows: int = DEFAULT_FLUSH_ROWS):
        delta_schema(width)  # validates width
        if producer is not None:
            if not isinstance(producer, str) or not producer:
                raise BatchError(f"producer must be a non-empty string, got {producer!r}")
            if isinstance(seq, bool) or not isinstance(seq, (int, np.integer)) or seq < 0:
                raise BatchError(f"stamping producer {producer!r} needs a sequence number "
                                 f"seq >= 0, got {seq!r}")
        elif seq is not None:
            raise BatchError("seq is stamped only together with a producer; without one the "
                             "rows' own producer and seq columns are used")
        self.width = int(width)
        self.producer = producer
        self.seq = None if seq is None else int(seq)
        self.per_partition = bool(per_partition)
        self.large_types = bool(large_types)
        self.use_gpu = bool(use_gpu)
        self.flush_rows = int(flush_rows)

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        device = self._device() if self.use_gpu else None
        stamp = None
        if self.producer is not None:
            name = f"{self.producer}-{partition}" if self.per_partition else self.producer
            stamp = (name, self.seq)
        buffered: list[pa.Table] = []
        invalid: list[pa.Table] = []
        rows = 0
        for batch in batches:
            good, bad = self._split(pa.Table.from_batches([batch]), stamp)
            buffered.append(good)
            if bad.num_rows:
                invalid.append(bad)
            rows += good.num_rows
            if rows >= self.flush_rows:
                buffered = [consolidate_table(pa.concat_tables(buffered), self.width,
                                              device=device)]
                rows = buffered[0].num_rows
        if stamp is not None:
            buffered.append(marker_rows([stamp], self.width))
        if buffered:
            out = consolidate_table(pa.concat_tables(buffered), self.width, device=device)
            yield from to_wire(out, large_types=self.large_types).to_batches(
                max_chunksize=OUTPUT_BATCH_ROWS)
        for bad in invalid:
            yield from bad.to_batches(max_chunksize=OUTPUT_BATCH_ROWS)

    def _device(self) -> int | None:
        device = choose_device(os.environ, task_resources())
        if device is None:
            return None
        ok, why = gpu_usable(device)
        if not ok:
            log.warning("GPU %d is assigned to this task but not usable (%s); consolidating "
                        "deltas on the CPU", device, why)
            return None
        return device

    def _split(self, t: pa.Table, stamp) -> tuple[pa.Table, pa.Table]:
        """The input's rows as (valid rows in canonical types, stamped when ``stamp`` is
        given; invalid rows in wire types, unconsolidated, for the driver to reject by name)."""
        check_delta_schema(t.schema, self.width, RAW_COLUMNS if stamp else DELTA_COLUMNS)
        n = t.num_rows
        if stamp is not None:
            t = t.select(list(RAW_COLUMNS)).append_column(
                PRODUCER, pa.array([stamp[0]] * n, pa.string())).append_column(
                SEQ, pa.array(np.full(n, stamp[1], np.int64), pa.int64()))
        valid = _valid_rows(t, self.width)
        if valid.all():
            good, bad = t, t.slice(0, 0)
        else:
            mask = pa.array(valid)
            good, bad = t.filter(mask), t.filter(pc.invert(mask))
        good = pa.Table.from_arrays(
            [pc.cast(good.column(LOC), pa.int32()),
             ts_array(ts_matrix(good.column(TS), self.width)),
             pc.cast(good.column(DIFF), pa.int64()), pc.cast(good.column(PRODUCER), pa.string()),
             pc.cast(good.column(SEQ), pa.int64())], schema=delta_schema(self.width))
        return good, _wire_rows(bad, self.large_types)


def consolidate_table(table: pa.Table, width: int, *, device: int | None = None) -> pa.Table:
    """Consolidate canonical delta rows per ``(producer, seq)``.

    Parameters
    ----------
    table : pyarrow.Table
        :func:`~spark_plugin.schema.delta_schema` rows with non-negative ``loc`` and ``ts``.
    width : int
    device : int, optional
        CUDA device ordinal; ``None`` consolidates on the CPU.

    Returns
    -------
    pyarrow.Table
        Canonical rows sorted by ``(producer, seq, loc, ts)``, equal keys summed, zero sums
        dropped, and a marker row ``(0, 0..., 0)`` for every group whose sums are all zero.
        A group with a sum outside int64 keeps its rows as they are (the driver rejects it).
    """
    n = table.num_rows
    if n == 0:
        return delta_schema(width).empty_table()
    enc = pc.dictionary_encode(table.column(PRODUCER)).combine_chunks()
    names = [str(s) for s in enc.dictionary.to_pylist()]
    by_name = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), np.int64)
    rank[by_name] = np.arange(len(names))
    key = rank[enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    seq = int_column(table.column(SEQ), SEQ)
    loc = int_column(table.column(LOC), LOC).astype(np.int32)
    ts = ts_matrix(table.column(TS), width)
    diff = int_column(table.column(DIFF), DIFF)
    order = np.lexsort((seq, key))
    key, seq, loc, ts, diff = key[order], seq[order], loc[order], ts[order], diff[order]
    starts = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (seq[1:] != seq[:-1])])
    ends = np.r_[starts[1:], n]
    groups = [(names[by_name[int(key[a])]], int(seq[a]), a, b)
              for a, b in zip(starts.tolist(), ends.tolist())]
    if device is None:
        outs = [_consolidate_cpu(loc[a:b], ts[a:b], diff[a:b]) for _, _, a, b in groups]
    else:
        outs = _consolidate_gpu(loc, ts, diff, [(a, b) for _, _, a, b in groups], device)
    parts = []
    for (producer, s, _, _), (o_loc, o_ts, o_diff) in zip(groups, outs):
        if len(o_loc) == 0:
            o_loc, o_ts, o_diff = (np.zeros(1, np.int32), np.zeros((1, width), np.int64),
                                   np.zeros(1, np.int64))
        parts.append((producer, s, o_loc, o_ts, o_diff))
    sizes = [len(p[2]) for p in parts]
    return pa.Table.from_arrays(
        [pa.array(np.concatenate([p[2] for p in parts]).astype(np.int32), pa.int32()),
         ts_array(np.concatenate([p[3] for p in parts])),
         pa.array(np.concatenate([p[4] for p in parts]), pa.int64()),
         pa.array([p[0] for p, k in zip(parts, sizes) for _ in range(k)], pa.string()),
         pa.array(np.repeat([p[1] for p in parts], sizes).astype(np.int64), pa.int64())],
        schema=delta_schema(width))


def to_wire(table: pa.Table, *, large_types: bool = False) -> pa.Table:
    """Canonical delta rows in Spark's Arrow types (:func:`~spark_plugin.schema.wire_schema`):
    the fixed-size ``ts`` becomes a variable-size list."""
    return _wire_rows(table, large_types)


def _wire_rows(table: pa.Table, large_types: bool) -> pa.Table:
    schema = wire_schema(large_types=large_types)
    try:
        return pa.Table.from_arrays([pc.cast(table.column(f.name), f.type) for f in schema],
                                    schema=schema)
    except pa.ArrowInvalid as e:   # only a non-Spark input can hold a loc beyond int32
        raise UnknownLocationError(f"a location does not fit int32, so it cannot exist: "
                                   f"{e}") from None


def marker_rows(pairs, width: int) -> pa.Table:
    """One no-op row ``(loc 0, ts 0..., diff 0)`` per ``(producer, seq)`` in ``pairs``: it makes
    the driver see the sequence number of a batch whose deltas cancel or that has none."""
    k = len(pairs)
    return pa.Table.from_arrays(
        [pa.array(np.zeros(k, np.int32), pa.int32()), ts_array(np.zeros((k, width), np.int64)),
         pa.array(np.zeros(k, np.int64), pa.int64()), pa.array([p for p, _ in pairs], pa.string()),
         pa.array([s for _, s in pairs], pa.int64())], schema=delta_schema(width))


def _valid_rows(t: pa.Table, width: int) -> np.ndarray:
    """``bool[n]``: rows the consolidation can take -- no nulls, ``width`` coordinates, and
    ``loc``, ``ts`` and ``seq`` in range (the consolidation packs them as non-negative keys)."""
    n = t.num_rows
    ok = np.ones(n, bool)
    for name in DELTA_COLUMNS:
        col = t.column(name)
        if col.null_count:
            ok &= ~col.is_null().to_numpy(zero_copy_only=False)
    ts = t.column(TS)
    if not pa.types.is_fixed_size_list(ts.type):
        ok &= pc.fill_null(pc.list_value_length(ts), -1).to_numpy(zero_copy_only=False) == width
    values = pc.list_flatten(ts)
    parents = pc.list_parent_indices(ts).to_numpy(zero_copy_only=False)
    bad_value = pc.fill_null(pc.or_(pc.less(values, 0), pc.greater_equal(values, MAX_COORD)), True)
    bad_value = bad_value.to_numpy(zero_copy_only=False)
    if bad_value.any():
        ok[parents[bad_value]] = False
    loc = pc.fill_null(t.column(LOC), -1)
    ok &= pc.and_(pc.greater_equal(loc, 0), pc.less_equal(loc, INT32_MAX)).to_numpy(
        zero_copy_only=False)
    seq = pc.fill_null(t.column(SEQ), -1)
    ok &= pc.greater_equal(seq, 0).to_numpy(zero_copy_only=False)
    return ok


def _consolidate_cpu(loc, ts, diff):
    from gpu_kernels.consolidate import SumOverflow, consolidate

    try:
        return consolidate(np.ascontiguousarray(loc), np.ascontiguousarray(ts),
                           np.ascontiguousarray(diff))
    except SumOverflow:   # passed on as they are: the driver names the pointstamp
        return loc, ts, diff


def _consolidate_gpu(loc, ts, diff, slices, device: int):
    """Consolidate each ``[a, b)`` slice on CUDA device ``device``: one host-to-device copy of
    the sorted columns, one device-to-host copy per group's result."""
    import cupy

    from gpu_kernels.consolidate import SumOverflow
    from gpu_kernels.intake import consolidate_cuda

    _gpu_allocator()
    with cupy.cuda.Device(device):
        d_loc, d_ts, d_diff = cupy.asarray(loc), cupy.asarray(ts), cupy.asarray(diff)
        outs = []
        for a, b in slices:
            try:
                o = consolidate_cuda(d_loc[a:b], cupy.ascontiguousarray(d_ts[a:b]), d_diff[a:b])
            except SumOverflow:   # passed on as they are, as on the CPU
                outs.append((loc[a:b], ts[a:b], diff[a:b]))
                continue
            outs.append(tuple(cupy.asnumpy(x) for x in o))
        return outs


@functools.cache
def _gpu_allocator() -> str:
    """Route CuPy's allocations through RMM when RMM is importable (once per worker).

    Under the RAPIDS Accelerator the Python worker's RMM pool is sized by
    ``spark.rapids.python.memory.gpu.*``; sharing it keeps our kernels inside that budget.
    """
    import cupy

    try:
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        log.info("RMM is not importable: CuPy uses its own memory pool for delta consolidation")
        return "cupy"
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    return "rmm"
