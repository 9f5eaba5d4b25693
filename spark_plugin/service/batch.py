"""Batch API for iterative jobs: ``mapInArrow`` consolidation, ``toArrow()``, ``apply``.

An iterative Spark job computes, per round, a DataFrame of raw count deltas
(``loc int, ts array<bigint>, diff bigint``) -- e.g. one row per message sent and per
capability moved -- and reports them with :func:`apply_frame`::

    result = apply_frame(service, deltas_df, producer="wcc", seq=round_number)
    if service.frontier(output_loc) ...   # react: emit results, stop iterating

Each partition becomes producer ``wcc-<partition id>`` with sequence number ``round_number``,
so the job must keep its number of partitions fixed across rounds (a producer that appears
first at ``seq`` 5 is held as a gap, waiting for 0..4). Task retries and speculative copies
re-produce the same ``(producer, seq)`` and are ignored by the service.
"""

from __future__ import annotations

import pyarrow as pa

from spark_plugin.errors import SchemaError
from spark_plugin.service.executor import PartitionConsolidator
from spark_plugin.schema import DELTA_COLUMNS, PRODUCER, RAW_COLUMNS, SPARK_DDL, TS
from spark_plugin.service.frontier_service import ApplyResult, FrontierService

__all__ = ["consolidate_frame", "check_frame_schema", "collect_arrow", "apply_frame",
           "large_var_types"]

LARGE_VAR_TYPES = "spark.sql.execution.arrow.useLargeVarTypes"


def large_var_types(spark) -> bool:
    """Whether the session exchanges ``large_list``/``large_string`` with Python workers (a
    :class:`~spark_plugin.session.lazy.LazySession` answers from its settings, not started)."""
    from spark_plugin.session.lazy import LazySession

    value = (spark.conf(LARGE_VAR_TYPES, "false") if isinstance(spark, LazySession)
             else spark.conf.get(LARGE_VAR_TYPES, "false"))
    return str(value).strip().lower() == "true"


def consolidate_frame(df, width: int, *, producer: str | None = None, seq: int | None = None,
                      per_partition: bool = True, use_gpu: bool = True):
    """``df.mapInArrow`` with a :class:`~spark_plugin.service.executor.PartitionConsolidator`.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Columns ``loc, ts, diff`` (plus ``producer, seq`` when ``producer`` is not given);
        other columns are ignored.
    width : int
        ``m + K`` of the graph.
    producer, seq, per_partition, use_gpu
        See :class:`~spark_plugin.service.executor.PartitionConsolidator`.

    Returns
    -------
    pyspark.sql.DataFrame
        With schema :data:`~spark_plugin.schema.SPARK_DDL`, lazily evaluated.

    Raises
    ------
    SchemaError
        ``df`` lacks a column or has a wrong type (checked here, before any task runs).
    """
    fn = PartitionConsolidator(width, producer=producer, seq=seq, per_partition=per_partition,
                               large_types=large_var_types(df.sparkSession), use_gpu=use_gpu)
    check_frame_schema(df, stamped=producer is not None)
    return df.mapInArrow(fn, SPARK_DDL)


def check_frame_schema(df, *, stamped: bool) -> None:
    """Check a DataFrame of deltas on the driver, before any task runs.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    stamped : bool
        Only ``loc, ts, diff`` are needed (a producer will be stamped); otherwise also
        ``producer, seq``.

    Raises
    ------
    SchemaError
        A column is missing or has the wrong Spark type; the message names it and lists the
        columns present.
    """
    from pyspark.sql.types import ArrayType, IntegralType, StringType

    fields = df.schema.fields
    names = [f.name for f in fields]
    present = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields) or "(none)"
    for name in (RAW_COLUMNS if stamped else DELTA_COLUMNS):
        if name not in names:
            raise SchemaError(f"DataFrame of deltas has no column {name!r}; columns present: "
                              f"{present}")
        typ = fields[names.index(name)].dataType
        if name == TS:
            ok = isinstance(typ, ArrayType) and isinstance(typ.elementType, IntegralType)
            expected = "array<bigint>"
        elif name == PRODUCER:
            ok, expected = isinstance(typ, StringType), "string"
        else:
            ok, expected = isinstance(typ, IntegralType), "an integral type (int, bigint)"
        if not ok:
            raise SchemaError(f"DataFrame column {name!r} has type {typ.simpleString()}, "
                              f"expected {expected}; columns present: {present}")


def collect_arrow(df) -> pa.Table:
    """Collect a DataFrame to the driver as a pyarrow Table (``DataFrame.toArrow``, PySpark >= 4.0;
    the same Arrow collection path on older versions)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql.pandas.types import to_arrow_schema

    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else to_arrow_schema(df.schema).empty_table()


def apply_frame(service: FrontierService, df, *, producer: str | None = None,
                seq: int | None = None, per_partition: bool = True,
                use_gpu: bool = True) -> ApplyResult:
    """Consolidate ``df`` on the executors, collect it, and apply it to ``service``.

    Parameters
    ----------
    service : FrontierService
    df : pyspark.sql.DataFrame
        Raw deltas (see :func:`consolidate_frame`).
    producer, seq, per_partition, use_gpu
        See :class:`~spark_plugin.service.executor.PartitionConsolidator`.

    Returns
    -------
    ApplyResult
    """
    table = collect_arrow(consolidate_frame(df, service.width, producer=producer, seq=seq,
                                            per_partition=per_partition, use_gpu=use_gpu))
    return service.apply(table)
