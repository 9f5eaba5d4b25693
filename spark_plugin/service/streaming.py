"""Structured Streaming: a ``foreachBatch`` sink feeding micro-batches to a ``FrontierService``.

Two ways to identify a micro-batch's rows, chosen by :class:`DeltaSink`'s ``producer``:

* **Rows carry their identity** (``producer=None``, the default): the stream's rows have
  ``producer`` and ``seq`` columns written by whoever produced them, and optionally
  ``part``/``parts`` when one ``(producer, seq)`` is written as several files (a *delivery
  unit* in parts; null means one part). :func:`read_delta_stream` adds each row's source
  file as ``origin``: one file is one copy of a part. Exactly-once then holds end to end,
  whatever the micro-batch boundaries: a unit whose parts fall into several micro-batches
  is assembled before it is applied; a retried copy of a file (another name, same content)
  is a duplicate, in the same micro-batch as the original or a later one; a copy with other
  content is a :class:`~spark_plugin.errors.DeliveryConflictError`; units arriving out of
  order are held until the gap is filled.
* **The sink stamps them** (``producer="name"``): the rows need only ``loc, ts, diff``; every
  micro-batch becomes ``(name, batch_id)``. Spark re-runs the last micro-batch with the
  same ``batch_id`` after a failure, so the copy is ignored; the service must be restored
  together with the query's checkpoint (both advance together), or the next ``batch_id``
  is held as a gap.

Either way the executors consolidate each micro-batch (``mapInArrow``) before it is
collected, and one micro-batch is one ``apply`` call. With identities, the consolidation
must not merge two copies or two parts of one unit, so the sink folds
``(producer, part, parts, origin)`` into the ``producer`` column (a JSON object) for the
consolidation and unfolds it on the driver (:func:`fold_unit_key`, :func:`unfold_unit_key`).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_plugin.service.batch import collect_arrow, consolidate_frame
from spark_plugin.errors import ConfigError
from spark_plugin.service.executor import marker_rows
from spark_plugin.schema import ORIGIN, PART, PARTS, PRODUCER, RAW_COLUMNS, SPARK_DDL, text_column
from spark_plugin.service.frontier_service import ApplyResult, FrontierService

__all__ = ["DeltaSink", "read_delta_stream", "start_delta_stream", "RAW_DDL", "UNIT_DDL",
           "fold_unit_key", "unfold_unit_key"]

#: Spark DDL of raw deltas without identity (for a stamping :class:`DeltaSink`).
RAW_DDL = ", ".join(SPARK_DDL.split(", ")[:len(RAW_COLUMNS)])
#: Spark DDL of delta files with identity: the delta columns plus the optional parts columns.
UNIT_DDL = f"{SPARK_DDL}, {PART} bigint, {PARTS} bigint"


def fold_unit_key(df):
    """``df`` with ``producer`` replaced by the JSON object ``{"p": producer, "k": part,
    "n": parts, "o": origin}`` (absent or null ``part``/``parts``/``origin``: 0, 1, ""), so
    that a consolidation per ``(producer, seq)`` keeps copies and parts apart."""
    from pyspark.sql import functions as F

    cols = set(df.columns)

    def col(name, default):
        return F.coalesce(F.col(name), F.lit(default)) if name in cols else F.lit(default)

    key = F.to_json(F.struct(F.col(PRODUCER).alias("p"), col(PART, 0).cast("bigint").alias("k"),
                             col(PARTS, 1).cast("bigint").alias("n"),
                             col(ORIGIN, "").cast("string").alias("o")))
    return df.withColumn(PRODUCER, F.when(F.col(PRODUCER).isNull(), F.lit(None)).otherwise(key))


def unfold_unit_key(table: pa.Table) -> pa.Table:
    """Inverse of :func:`fold_unit_key` on a collected table: ``producer`` back to the name,
    plus ``part``, ``parts`` and ``origin`` columns (one JSON parse per distinct key)."""
    if table.num_rows == 0:
        return table.append_column(PART, pa.array([], pa.int64())).append_column(
            PARTS, pa.array([], pa.int64())).append_column(ORIGIN, pa.array([], pa.string()))
    column = table.column(PRODUCER)
    valid = pc.invert(pc.is_null(column)).to_numpy(zero_copy_only=False) if column.null_count \
        else None
    codes, keys = text_column(pc.fill_null(column, "{}") if valid is not None else column,
                              PRODUCER)
    parsed = [json.loads(k) for k in keys]
    names = pa.array([d.get("p") for d in parsed], pa.string()).take(pa.array(codes))
    if valid is not None:  # a null producer stays null, for the service to reject by name
        names = pc.if_else(pa.array(valid), names, pa.scalar(None, pa.string()))
    part = np.array([d.get("k", 0) for d in parsed], np.int64)[codes]
    parts = np.array([d.get("n", 1) for d in parsed], np.int64)[codes]
    origin = pa.array([d.get("o", "") for d in parsed], pa.string()).take(pa.array(codes))
    i = table.schema.get_field_index(PRODUCER)
    return table.set_column(i, PRODUCER, names).append_column(PART, pa.array(part)).append_column(
        PARTS, pa.array(parts)).append_column(ORIGIN, origin)


class DeltaSink:
    """A ``foreachBatch`` function applying each micro-batch to a :class:`FrontierService`.

    Parameters
    ----------
    service : FrontierService
    producer : str, optional
        Stamp every micro-batch as ``(producer, batch_id)``; without it the rows' own
        ``producer``/``seq`` columns are used.
    use_gpu : bool
        Consolidate on the executors' GPUs when usable.

    Attributes
    ----------
    last_result : ApplyResult or None
        The result of the last micro-batch.
    batches : int
        Micro-batches processed (duplicates included).
    """

    def __init__(self, service: FrontierService, *, producer: str | None = None,
                 use_gpu: bool = True):
        self.service = service
        self.producer = producer
        self.use_gpu = use_gpu
        self.last_result: ApplyResult | None = None
        self.batches = 0

    def __call__(self, df, batch_id: int) -> None:
        batch_id = int(batch_id)
        if self.producer is None:
            table = unfold_unit_key(collect_arrow(consolidate_frame(
                fold_unit_key(df), self.service.width, per_partition=False,
                use_gpu=self.use_gpu)))
        else:
            table = collect_arrow(consolidate_frame(
                df, self.service.width, producer=self.producer, seq=batch_id,
                per_partition=False, use_gpu=self.use_gpu))
            if table.num_rows == 0:
                # a micro-batch without partitions still consumes its sequence number
                table = marker_rows([(self.producer, batch_id)], self.service.width)
        self.last_result = self.service.apply(table)
        self.batches += 1


def read_delta_stream(spark, path: str, *, fmt: str = "parquet", stamped: bool = False,
                      max_files_per_trigger: int | None = None):
    """A streaming DataFrame of delta files under ``path``.

    Files with identity are read with :data:`UNIT_DDL` (``part``/``parts`` are null where a
    file lacks them: one part) plus ``origin``, the file's path (``_metadata.file_path``).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
        Directory the producers write delta files into.
    fmt : str
        Spark file format (``parquet``, ``orc``, ``json``, ...).
    stamped : bool
        The files hold raw deltas (``loc, ts, diff``) for a stamping :class:`DeltaSink`;
        otherwise they hold all five delta columns.
    max_files_per_trigger : int, optional
        Files per micro-batch.
    """
    reader = spark.readStream.schema(RAW_DDL if stamped else UNIT_DDL).format(fmt)
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    df = reader.load(path)
    if stamped:
        return df
    from pyspark.sql import functions as F

    return df.select("*", F.col("_metadata.file_path").alias(ORIGIN))


def start_delta_stream(stream_df, sink: DeltaSink, checkpoint: str, *,
                       available_now: bool = False, processing_time: str | None = None,
                       query_name: str | None = None):
    """Start ``stream_df.writeStream.foreachBatch(sink)`` with a checkpoint.

    Parameters
    ----------
    stream_df : pyspark.sql.DataFrame
        A streaming DataFrame of deltas (:func:`read_delta_stream`).
    sink : DeltaSink
    checkpoint : str
        The query's checkpoint directory (its offsets and committed ``batch_id``).
    available_now : bool
        Process everything available now, in as many micro-batches as the source's limits
        make, then stop (``trigger(availableNow=True)``).
    processing_time : str, optional
        A micro-batch interval such as ``"10 seconds"`` (``trigger(processingTime=...)``).
    query_name : str, optional

    Returns
    -------
    pyspark.sql.streaming.StreamingQuery
    """
    writer = stream_df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    if available_now and processing_time is not None:
        raise ConfigError("choose one trigger: available_now or processing_time, not both")
    if available_now:
        writer = writer.trigger(availableNow=True)
    elif processing_time is not None:
        writer = writer.trigger(processingTime=processing_time)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.start()
