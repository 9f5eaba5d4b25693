"""Vertex ids of a Spark source, checked on the executors.

Ids are non-negative int64 (the labels' ``component`` is the smallest id of the component).
A source column may be

* an integer type (``tinyint`` .. ``bigint``): taken as it is;
* a whole-number ``float``, ``double`` or ``decimal`` (``2.0``; a Parquet ``uint64`` is read
  by Spark as ``decimal(20,0)``): converted; ``2.5``, NaN, or a value past int64 is refused;
* a string (CSV, text, a string column): its digits (``"17"``, spaces around allowed).

:func:`vertex_ids` gives the Spark expressions: the id as ``bigint`` and a flag for a row whose
id is not one. The source counts the flagged rows in the same aggregation that counts its
epochs; one flagged row stops the job with :class:`~spark_plugin.errors.EdgeInputError`
naming the file and the value (:func:`explain`). Nothing is dropped.
"""

from __future__ import annotations

__all__ = ["IDS_MODES", "vertex_ids", "vertex_names", "dictionary", "to_ids", "to_names",
           "from_names", "strip", "explain", "edge_weights", "INT64_MAX"]

#: ``--ids``: ``int`` (the default; a column of another type is converted as above) or
#: ``string``: any non-empty text (names, URLs) through a dictionary (:func:`dictionary`).
IDS_MODES = ("int", "string")
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
        s = strip(col)
        # at most 19 digits (decimal(20,0) holds them, no cast can fail under ANSI), then at
        # most int64's largest; no try_cast (PySpark 4 only)
        digits = s.rlike(r"^[0-9]{1,19}$")
        d = F.when(digits, s).cast("decimal(20,0)")
        ok = F.coalesce(digits & (d <= F.lit(INT64_MAX).cast("decimal(20,0)")), F.lit(False))
        return F.when(ok, d.cast("bigint")), ~ok
    from spark_plugin.errors import SparkSourceError
    raise SparkSourceError(f"vertex ids cannot be of type {dtype.simpleString()}: use an "
                           f"integer column (or whole numbers, or digit strings)")


def vertex_names(col):
    """``(name, bad)`` for ``--ids string``: the column as trimmed text, and whether the row has
    no name (null or empty)."""
    from pyspark.sql import functions as F

    name = F.trim(col.cast("string"))
    return name, name.isNull() | (F.length(name) == 0)


def dictionary(frame, src: str = "_sn", dst: str = "_dn"):
    """The vertex dictionary ``name string, id bigint`` of every name in the columns ``src``,
    ``dst`` of ``frame`` (the whole dataset: the ids are the same in every epoch, and again
    in a rerun on the same data): the distinct names sorted, numbered ``0..n-1`` by
    ``zipWithIndex`` -- all on the executors. A component's smallest id is then its
    alphabetically first name."""
    from pyspark.sql import functions as F

    names = frame.select(F.col(src).alias("name")).union(
        frame.select(F.col(dst).alias("name"))).distinct().orderBy("name")
    spark = frame.sparkSession
    numbered = names.rdd.map(lambda r: r[0]).zipWithIndex()
    return spark.createDataFrame(numbered, "name string, id bigint")


def to_ids(frame, words, src: str = "src", dst: str = "dst", extra=()):
    """``frame``'s names in ``src``, ``dst`` as ids ``src, dst`` (two joins with ``words``),
    followed by its columns ``extra`` as they are (a weight)."""
    from pyspark.sql import functions as F

    f = frame.select(F.col(src).alias("_sn"), F.col(dst).alias("_dn"), *extra)
    s = words.select(F.col("name").alias("_sn"), F.col("id").alias("src"))
    d = words.select(F.col("name").alias("_dn"), F.col("id").alias("dst"))
    return f.join(s, "_sn").join(d, "_dn").select("src", "dst", *extra)


def to_names(labels, words, columns=("vertex", "component")):
    """``labels`` (a DataFrame of ids in ``columns``) with each id replaced by its name."""
    return _swap(labels, words, columns, "id", "name")


def from_names(labels, words, columns=("vertex", "component")):
    """The inverse of :func:`to_names`: names in ``columns`` back to ids."""
    return _swap(labels, words, columns, "name", "id")


def _swap(labels, words, columns, have: str, want: str):
    """Each of ``columns`` of ``labels`` (values of ``words``' column ``have``) replaced by
    ``words``' column ``want`` (one join per column)."""
    from pyspark.sql import functions as F

    out = labels
    for c in columns:
        out = out.join(words.select(F.col(have).alias(c), F.col(want).alias(f"_{c}")), c)
    # the swapped columns, and any other (a distance) as it was, in the labels' order
    return out.select(*(F.col(f"_{c}").alias(c) if c in columns else F.col(c)
                        for c in labels.columns))


def edge_weights(col, dtype, where: str):
    """``(weight, bad)`` for a weighted source (``tfront sssp --weighted``): the column as a
    double, and whether the row's value is no weight -- null, NaN, infinite, negative, or
    text that is not a number (no cast that fails under ANSI: a string is matched first).

    Raises
    ------
    SparkSourceError (ValueError)
        A type that holds no numbers (boolean, binary, a struct ...), naming it.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType, StringType

    if isinstance(dtype, StringType):
        s = strip(col)
        number = s.rlike(r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]{1,3})?$")
        w = F.when(number, s).cast("double")
    elif isinstance(dtype, NumericType):
        w = col.cast("double")
    else:
        from spark_plugin.errors import SparkSourceError
        raise SparkSourceError(f"{where}: weights cannot be of type {dtype.simpleString()}: "
                               f"use a numeric column")
    ok = w.isNotNull() & ~F.isnan(w) & (w >= 0) & (w < F.lit(float("inf")))
    return w, ~F.coalesce(ok, F.lit(False))


def strip(col):
    """``col`` without white space (tabs too: ``trim`` strips only spaces) at either end."""
    from pyspark.sql import functions as F
    return F.regexp_replace(col, r"^\s+|\s+$", "")


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
            return ("is not an integer: vertex ids are non-negative int64 (names, URLs: "
                    "--ids string reads them through a dictionary)")
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
