"""Structured Streaming: a ``foreachBatch`` sink feeding micro-batches to a ``FrontierService``.

Two ways to identify a micro-batch's rows, chosen by :class:`DeltaSink`'s ``producer``:

* **Rows carry their identity** (``producer=None``, the default): the stream's rows have
  ``producer`` and ``seq`` columns written by whoever produced them (e.g. one delta file
  per ``(producer, seq)``). Exactly-once then holds end to end, whatever the micro-batch
  boundaries: a file re-read after a restart is a duplicate, files arriving out of order
  are held until the gap is filled.
* **The sink stamps them** (``producer="name"``): the rows need only ``loc, ts, diff``; every
  micro-batch becomes ``(name, batch_id)``. Spark re-runs the last micro-batch with the
  same ``batch_id`` after a failure, so the copy is ignored; the service must be restored
  together with the query's checkpoint (both advance together), or the next ``batch_id``
  is held as a gap.

Either way the executors consolidate each micro-batch (``mapInArrow``) before it is
collected, and one micro-batch is one ``apply`` call.
"""

from __future__ import annotations

from .batch import collect_arrow, consolidate_frame
from .errors import ConfigError
from .executor import marker_rows
from .schema import RAW_COLUMNS, SPARK_DDL
from .service import ApplyResult, FrontierService

__all__ = ["DeltaSink", "read_delta_stream", "start_delta_stream", "RAW_DDL"]

#: Spark DDL of raw deltas without identity (for a stamping :class:`DeltaSink`).
RAW_DDL = ", ".join(SPARK_DDL.split(", ")[:len(RAW_COLUMNS)])


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
        table = collect_arrow(consolidate_frame(
            df, self.service.width, producer=self.producer,
            seq=batch_id if self.producer is not None else None, per_partition=False,
            use_gpu=self.use_gpu))
        if self.producer is not None and table.num_rows == 0:
            # a micro-batch without partitions still consumes its sequence number
            table = marker_rows([(self.producer, batch_id)], self.service.width)
        self.last_result = self.service.apply(table)
        self.batches += 1


def read_delta_stream(spark, path: str, *, fmt: str = "parquet", stamped: bool = False,
                      max_files_per_trigger: int | None = None):
    """A streaming DataFrame of delta files under ``path``.

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
    reader = spark.readStream.schema(RAW_DDL if stamped else SPARK_DDL).format(fmt)
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    return reader.load(path)


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
