"""Vertex ids of a Spark source, checked on the executors.

Ids are non-negative int64 (the labels' ``component`` is the smallest id of the component).
A source column may be

* an integer type (``tinyint`` .. ``bigint``): taken as it is;
* a whole-number ``float``, ``double`` or ``decimal`` (``2.0``; a Parquet ``uint64`` is read
  by Spark as ``decimal(20,0)``): converted; ``2.5``, NaN, or a value past int64 is refused;
* a string (CSV, text, a string column): its digits (``"17"``, spaces around allowed).

:func:`vertex_ids` gives the Spark expressions: the id as ``bigint`` and a flag for a row whose
id is not one. The source counts the flagged rows in the same aggregation that counts its
epochs; one flagged row stops the job with :class:`~spark_plugin.jobs.edges.EdgeInputError`
naming the file and the value (:func:`explain`). Nothing is dropped.
"""

from __future__ import annotations

__all__ = ["IDS_MODES", "vertex_ids", "explain", "INT64_MAX"]

#: ``--ids``: ``int`` (the default; a column of another type is converted as above).
IDS_MODES = ("int",)
INT64_MAX = (1 << 63) - 1


def vertex_ids(col, dtype):
    """``(id, bad)``: Spark columns for the source column ``col`` of Spark type ``dtype``:
    the id as ``bigint`` (null where ``bad``) and whether the row's value is no id.

    Raises
    ------
    SparkSourceError (ValueError)
        A type that cannot hold ids (boolean, binary, a struct ...), naming it.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import (DecimalType, DoubleType, FloatType, IntegralType,
                                   StringType)

    if isinstance(dtype, IntegralType):
        v = col.cast("bigint")
        return v, col.isNull() | (v < 0)
    if isinstance(dtype, (FloatType, DoubleType, DecimalType)):
        d = col.cast("decimal(38,6)") if not isinstance(dtype, DecimalType) else col
        whole = col.isNotNull() & ~F.isnan(col.cast("double")) & (col >= 0) & (
            F.floor(col) == col) & (d <= F.lit(INT64_MAX).cast("decimal(20,0)"))
        return F.when(whole, d.cast("bigint")), ~F.coalesce(whole, F.lit(False))
    if isinstance(dtype, StringType):
        s = F.trim(col)
        digits = s.rlike(r"^[0-9]+$")
        v = F.when(digits, s.try_cast("bigint"))
        return v, ~F.coalesce(digits, F.lit(False)) | v.isNull()
    from spark_plugin.sources.dataset import SparkSourceError
    raise SparkSourceError(f"vertex ids cannot be of type {dtype.simpleString()}: use an "
                           f"integer column (or whole numbers, or digit strings)")


def explain(value) -> str:
    """Why ``value`` (a flagged row's source value, as collected) is not a vertex id."""
    if value is None:
        return "is null (a missing vertex id)"
    if isinstance(value, str):
        t = value.strip()
        if t.lstrip("-").isdigit():
            return ("is negative: vertex ids are non-negative int64" if t.startswith("-")
                    else "is past the largest int64 (9223372036854775807)")
        try:
            value = float(t)
        except ValueError:
            return ("is not an integer: vertex ids are non-negative int64 (string ids such "
                    "as names are not supported yet: map them to integers first)")
    try:
        f = float(value)
    except (TypeError, ValueError):
        return "is not an integer"
    if f != f:
        return "is NaN, not a vertex id"
    if f < 0:
        return "is negative: vertex ids are non-negative int64"
    if f != int(f):
        return "is not a whole number: vertex ids are non-negative int64"
    return "is past the largest int64 (9223372036854775807)"
