"""The delta batch schema on the Spark side: its Spark types, and the Arrow schema re-exported.

The columns, Arrow schemas and checks are :mod:`engine.batched.arrow` (worker processes of the
exchange use them too); this module adds what only Spark needs -- the schema as Spark DDL (a
``mapInArrow`` output, a streaming source) and as a ``StructType`` -- and keeps every name
importable from here.

>>> SPARK_DDL
'loc int, ts array<bigint>, diff bigint, producer string, seq bigint'
"""

from __future__ import annotations

from engine.batched.arrow import (CNT, DELTA_COLUMNS, DIFF, LOC, ORIGIN, PART, PARTS, PRODUCER,
                                  RAW_COLUMNS, SEQ, TS, UNIT_COLUMNS, check_delta_schema,
                                  counts_schema, delta_schema, delta_table, int_column,
                                  text_column, ts_array, ts_matrix, wire_schema)

__all__ = [
    "LOC", "TS", "DIFF", "PRODUCER", "SEQ", "CNT", "PART", "PARTS", "ORIGIN", "UNIT_COLUMNS",
    "DELTA_COLUMNS", "RAW_COLUMNS", "SPARK_DDL",
    "delta_schema", "wire_schema", "counts_schema", "spark_schema", "check_delta_schema",
    "delta_table", "ts_array", "ts_matrix", "int_column", "text_column",
]

#: The delta batch as a Spark DDL schema (``mapInArrow`` output, streaming source schema).
SPARK_DDL = f"{LOC} int, {TS} array<bigint>, {DIFF} bigint, {PRODUCER} string, {SEQ} bigint"


def spark_schema():
    """:data:`SPARK_DDL` as a ``pyspark.sql.types.StructType`` (imports PySpark)."""
    from pyspark.sql.types import (ArrayType, IntegerType, LongType, StringType, StructField,
                                   StructType)
    return StructType([StructField(LOC, IntegerType(), False),
                       StructField(TS, ArrayType(LongType(), False), False),
                       StructField(DIFF, LongType(), False),
                       StructField(PRODUCER, StringType(), False),
                       StructField(SEQ, LongType(), False)])
