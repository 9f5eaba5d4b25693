"""An edge dataset that Spark's executors read: a Hadoop URI, a Spark-written directory, a
table or a DataFrame (:class:`SparkEdges`).

Where: a URI of any Hadoop file system (``hdfs://``, ``s3a://``, ``gs://``, ``file://``), a
local directory as Spark writes it (:func:`spark_dataset_dir`), ``--table db.edges``
(``spark.table``), or a DataFrame from Python. The driver only ever touches metadata: the
file system's listing (through Hadoop's ``FileSystem`` in the JVM), the Parquet/ORC schema,
and one Spark job's first line of a text or CSV dataset, to see its separator and header.

One reader per format (``--format``, default from the file names):

* ``parquet``, ``orc``: the columns ``src``, ``dst`` (or ``--columns``); Hive-style
  ``key=value/`` folders are columns (an ``--epoch-column``); empty part files are nothing.
* ``csv``: fields separated by ``,``, ``;`` or a tab (what the first line uses), optionally
  double-quoted, ``#`` comments; ``--header yes|no|auto`` (``auto``: a header when the first
  line's first two fields are not integers; a first line that is the column positions,
  ``0,1``, as pandas writes it, is a header too, and said).
* ``text``: SNAP-style ``src dst`` per line, white space or a comma between, ``#`` comments,
  blank lines skipped; a header line only with ``--header yes`` or when ``auto`` sees one.

Every row is an edge: a row with fewer than two fields, or a vertex id that is not one
(:mod:`~spark_plugin.sources.ids`), stops the job with
:class:`~spark_plugin.errors.EdgeInputError` naming the file and the row's text.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from spark_plugin.errors import EdgeInputError, SparkSourceError
from spark_plugin.sources.columns import COLUMNS_HINT, EdgeColumns
from spark_plugin.sources.directory import natural_key
from spark_plugin.sources.epochs import EpochPlan, EpochPlanError, even_cuts, parse_every
from spark_plugin.sources.ids import edge_weights, strip

__all__ = ["SparkEdges", "SparkEpoch", "SparkSourceError", "is_spark_source", "is_uri",
           "is_dataframe", "spark_source",
           "spark_dataset_dir", "FORMATS", "HEADER_MODES"]

#: The formats ``--format`` names.
FORMATS = ("parquet", "orc", "csv", "text")
#: ``--header``.
HEADER_MODES = ("auto", "yes", "no")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_INT = re.compile(r"^\s*-?\d+\s*$")


def is_dataframe(edges) -> bool:
    """``edges`` is a Spark DataFrame (classic or Spark Connect)."""
    return not isinstance(edges, (str, os.PathLike)) and all(
        hasattr(edges, a) for a in ("columns", "select", "schema", "sparkSession"))


def is_uri(edges) -> bool:
    """``edges`` is a string with a scheme, ``hdfs://...``, ``file:///...``."""
    return isinstance(edges, str) and bool(_URI.match(edges))


def spark_dataset_dir(path) -> bool:
    """Whether the local directory ``path`` is one dataset as Spark (or Hive) writes it: it
    has ``_SUCCESS``, a ``key=value`` folder, or only ``part-*`` data files; not a directory
    of epoch files (``e0.txt``, ``e1.txt``), which stays one epoch per file."""
    p = Path(path)
    if not p.is_dir():
        return False
    names = [n for n in os.listdir(p) if not n.startswith(".")]
    if "_SUCCESS" in names:
        return True
    if any("=" in n and (p / n).is_dir() for n in names):
        return True
    data = [n for n in names if not n.startswith("_")]
    return bool(data) and all(n.startswith("part-") for n in data)


def is_spark_source(edges, *, follow=None) -> bool:
    """Whether the job's input is read by the executors (:class:`SparkEdges`): a DataFrame,
    a :class:`SparkEdges`, a URI, or a Spark-written local directory (not followed: a
    ``--follow`` stream is a directory of epoch files)."""
    if isinstance(edges, SparkEdges) or is_dataframe(edges):
        return True
    if follow is not None or not isinstance(edges, (str, os.PathLike)):
        return False
    return is_uri(str(edges)) or spark_dataset_dir(edges)


def _format_of(name: str) -> str | None:
    n = name.lower()
    for suffix in (".gz", ".bz2", ".snappy", ".zst", ".lz4", ".deflate"):
        if n.endswith(suffix):
            n = n[: -len(suffix)]
    if n.endswith((".parquet", ".pq")):
        return "parquet"
    if n.endswith(".orc"):
        return "orc"
    if n.endswith(".csv"):
        return "csv"
    if n.endswith((".txt", ".tsv", ".text", ".edges", ".el")):
        return "text"
    return None


class SparkEpoch:
    """One epoch of a Spark source: ``what`` (for messages), its ``rows``, and ``frame``, the
    epoch's rows as a DataFrame ``src bigint, dst bigint`` (lazy: reading it is a Spark
    job's)."""

    __slots__ = ("what", "rows", "frame")

    def __init__(self, what: str, rows: int, frame):
        self.what, self.rows, self.frame = what, rows, frame


class SparkEdges:
    """An edge dataset read by the executors (module docstring).

    Parameters
    ----------
    edges : str, Path or DataFrame
        A URI, a local Spark-written directory (or any local path: read by Spark), or a
        DataFrame (never collected). ``None`` with ``table``.
    table : str, optional
        A table's name for ``spark.table`` (``db.edges``).
    fmt : {"parquet", "orc", "csv", "text"}, optional
        The files' format; default from their names (``part-00000-...snappy.parquet``).
    header : {"auto", "yes", "no"}
        Whether a CSV or text dataset's first line is a header.
    columns : EdgeColumns, optional
        The columns read as ``src``, ``dst`` (names, or 1-based numbers for CSV and text).
    plan : EpochPlan
        How the rows become epochs.

    :meth:`open` reads the schema and checks the location (a Spark session needed);
    :meth:`epochs` then runs the one aggregation that counts the epochs and checks the ids.
    """

    def __init__(self, edges=None, *, table: str | None = None, fmt: str | None = None,
                 header: str = "auto", columns: EdgeColumns | None = None,
                 plan: EpochPlan | None = None, ids: str = "int", as_file: bool = False,
                 weighted: bool = False):
        if (edges is None) == (table is None):
            raise SparkSourceError("give either an edge input or a table (--table), not "
                                   + ("both" if edges is not None else "neither"))
        if fmt is not None and fmt not in FORMATS:
            raise SparkSourceError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        from spark_plugin.sources.ids import IDS_MODES

        if ids not in IDS_MODES:
            raise SparkSourceError(f"--ids {ids!r}: expected one of {', '.join(IDS_MODES)}")
        self.ids = ids
        #: ``weighted`` (``tfront sssp --weighted``): a third column, ``weight``, a finite
        #: number ``>= 0`` (a double) -- checked on the executors like the ids.
        self.weighted = bool(weighted)
        #: The columns of every epoch's rows.
        self.edge_columns = ("src", "dst", "weight") if self.weighted else ("src", "dst")
        #: ``--ids string``: the vertex dictionary ``name, id`` (:meth:`epochs` builds it).
        self.words = None
        if header not in HEADER_MODES:
            raise SparkSourceError(f"--header {header!r}: expected one of "
                                   f"{', '.join(HEADER_MODES)}")
        self.table, self.fmt, self.header = table, fmt, header
        self.columns, self.plan = columns, plan or EpochPlan()
        self.df = edges if is_dataframe(edges) else None
        if self.df is not None:
            self.uri, self.what = None, "edge DataFrame"
        elif table is not None:
            self.uri, self.what = None, f"table {table}"
        else:
            text = str(edges)
            self.uri = text if is_uri(text) else Path(text).absolute().as_uri()
            self.what = text if is_uri(text) else str(Path(text).absolute())
        #: A local edge file too large for the driver, read by Spark in its stead: its epochs
        #: are named (``PATH rows A-B``) and recorded as the driver's reading would be.
        self.as_file = bool(as_file)
        if as_file:
            self.what = str(edges)
        self.notes: list[str] = []
        #: ``materialize(df) -> (df, ids)`` (the job's checkpoints): the numbered rows of
        #: ``--epochs K`` slices are materialised once with it; ``held``: its ids.
        self.materialize = None
        self.held: set = set()
        self._frame = None
        self._listing: list | None = None

    # -- identity ----------------------------------------------------------------------------
    def fingerprint(self) -> dict:
        """What makes two runs the same job (no Spark needed): the location, format, header
        rule, columns and epoch plan. A DataFrame's content is digested by the job
        (:func:`~spark_plugin.jobs.recovery.dataframe_digest`)."""
        kind = "dataframe" if self.df is not None else "table" if self.table else "dataset"
        job = {"input": self.what, "kind": kind, "epochs": self.plan.epochs,
               "plan": self.plan.describe()}
        if self.fmt is not None:
            job["format"] = self.fmt
        if self.header != "auto":
            job["header"] = self.header
        if self.ids != "int":
            job["ids"] = self.ids
        if self.weighted:
            job["weighted"] = True
        return job

    def stamp(self) -> str | None:
        """A digest of the dataset's files -- names, sizes, modification times -- as listed
        when :meth:`open` ran (``None`` for a DataFrame): an epoch recorded with one stamp
        is another input under another."""
        if not self._listing:
            return None
        h = hashlib.sha256()
        for name, size, mtime in self._listing:
            h.update(f"{name}\0{size}\0{mtime}\n".encode())
        return "files-sha256:" + h.hexdigest()

    def check(self) -> None:
        """Raise :class:`EdgeInputError` if the dataset's files changed since :meth:`open`
        (a file added, removed, rewritten): input must not change under the job."""
        if not self._listing or self._spark is None:
            return
        now = self._list_files(self._spark)
        if now != self._listing:
            old, new = {f[0] for f in self._listing}, {f[0] for f in now}
            what = (f"{len(new - old)} file(s) added" if new - old else
                    f"{len(old - new)} file(s) removed" if old - new else "a file rewritten")
            raise EdgeInputError(f"{self.what}: the dataset changed since the job listed it "
                                 f"({what}); input must not change while the job uses it",
                                 self.what)

    # -- opening -----------------------------------------------------------------------------
    _spark = None

    def open(self, spark) -> None:
        """Check the location and read the schema (metadata only; a text or CSV dataset: one
        small Spark job reads its first line). Idempotent.

        Raises
        ------
        SparkSourceError
            No file system for the scheme, no HDFS configured, a missing table.
        EdgeInputError
            A missing input, no data files, missing columns, a type that holds no ids.
        """
        if self._frame is not None:
            return
        self._spark = spark
        if self.df is not None:
            raw = self.df
            self._frame = self._edges_of(raw, raw.columns, "edge DataFrame")
            return
        if self.table is not None:
            try:
                raw = spark.table(self.table)
            except Exception as e:   # noqa: BLE001 -- AnalysisException: no such table
                raise SparkSourceError(f"--table {self.table}: {_first_line(e)}") from None
            try:
                self._listing = sorted(self._files_of(raw))
            except Exception:   # noqa: BLE001 -- a view or a source without files
                self._listing = None
            self._frame = self._edges_of(raw, raw.columns, self.what)
            return
        fs, root = self._file_system(spark)
        if not fs.exists(root):
            raise EdgeInputError(f"edge input {self.what!r} does not exist", self.what)
        self._listing = self._list_files(spark)
        if not self._listing:
            raise EdgeInputError(f"{self.what}: no data files (only hidden, '_' and empty "
                                 f"files); no edges, nothing to do", self.what)
        fmt = self.fmt or self._guess_format()
        self.fmt_read = fmt
        if fmt in ("parquet", "orc"):
            raw = spark.read.format(fmt).load(self.uri)
            self._frame = self._edges_of(raw, raw.columns, self.what)
        else:
            self._frame = self._text_frame(spark, fmt)

    def _file_system(self, spark):
        jvm, sc = spark.sparkContext._jvm, spark.sparkContext
        conf = sc._jsc.hadoopConfiguration()
        path = jvm.org.apache.hadoop.fs.Path(self.uri)
        uri = path.toUri()
        scheme = uri.getScheme()
        if scheme == "hdfs" and not uri.getAuthority():
            default = str(conf.get("fs.defaultFS") or "file:///")
            if not default.startswith("hdfs://"):
                raise SparkSourceError(
                    f"{self.what}: no HDFS is configured here (fs.defaultFS is {default}): "
                    f"name the namenode (hdfs://HOST:PORT/path), or run where "
                    f"HADOOP_CONF_DIR holds the cluster's core-site.xml (e.g. spark-submit "
                    f"--master yarn)")
        try:
            return path.getFileSystem(conf), path
        except Exception as e:   # noqa: BLE001 -- py4j: UnsupportedFileSystemException ...
            msg = _first_line(e)
            if "No FileSystem for scheme" in str(e) or "UnsupportedFileSystem" in str(e):
                raise SparkSourceError(
                    f"{self.what}: this Spark has no Hadoop FileSystem for {scheme}:// -- add "
                    f"its connector (e.g. --conf spark.jars.packages=org.apache.hadoop:"
                    f"hadoop-aws:<hadoop version> for s3a://, the GCS connector for gs://)"
                ) from None
            raise SparkSourceError(f"{self.what}: {msg}") from None

    def _list_files(self, spark) -> list:
        """``[(path, size, mtime), ...]`` of the dataset's data files, recursively (Hive
        folders too), skipping hidden and ``_`` names and empty files."""
        if self.table is not None:
            return sorted(self._files_of(spark.table(self.table)))
        fs, root = self._file_system(spark)
        out = []
        it = fs.listFiles(root, True)
        base = str(root.toUri().getPath()).rstrip("/")
        while it.hasNext():
            st = it.next()
            p = st.getPath()
            rel = str(p.toUri().getPath())[len(base):].lstrip("/")
            parts = rel.split("/") if rel else [p.getName()]
            if any(x.startswith((".", "_")) for x in parts) or st.getLen() == 0:
                continue
            out.append((str(p), int(st.getLen()), int(st.getModificationTime())))
        out.sort(key=lambda f: natural_key(f[0]))
        return out

    def _files_of(self, df) -> list:
        jvm = self._spark.sparkContext._jvm
        conf = self._spark.sparkContext._jsc.hadoopConfiguration()
        out = []
        for f in df.inputFiles():
            p = jvm.org.apache.hadoop.fs.Path(f)
            st = p.getFileSystem(conf).getFileStatus(p)
            out.append((str(f), int(st.getLen()), int(st.getModificationTime())))
        return out

    def _guess_format(self) -> str:
        kinds = {_format_of(Path(name).name) for name, _, _ in self._listing}
        kinds.discard(None)
        if len(kinds) == 1:
            return kinds.pop()
        if not kinds:   # no telling suffix: SNAP text, the jobs' default for files
            return "text"
        raise SparkSourceError(f"{self.what}: its files are of several formats "
                               f"({', '.join(sorted(kinds))}): pick one with --format")

    # -- reading -----------------------------------------------------------------------------
    def _first_line(self, spark) -> str | None:
        """The first non-blank, non-comment line of the dataset (one small Spark job)."""
        from pyspark.sql import functions as F

        v = strip(F.col("value"))
        row = spark.read.text(self.uri).where((F.length(v) > 0) & ~v.startswith("#")) \
            .limit(1).collect()
        return row[0][0] if row else None

    def _text_frame(self, spark, fmt: str):
        from pyspark.sql import functions as F

        first = self._first_line(spark)
        if first is None:
            raise EdgeInputError(f"{self.what}: no edges (only blank lines and comments); "
                                 f"nothing to do", self.what)
        if fmt == "csv":
            sep = next((s for s in (",", ";", "\t") if s in first), ",")
            fields = [f.strip().strip('"') for f in first.split(sep)]
        else:
            sep = None
            fields = [f for f in re.split(r"[\s,]+", first.strip()) if f]
        header = self._is_header(fields)
        if fmt == "csv":
            raw = (spark.read.option("header", header).option("sep", sep)
                   .option("comment", "#").option("quote", '"').option("mode", "PERMISSIVE")
                   .csv(self.uri))
            names = raw.columns if header else None
            return self._edges_of(raw, names, self.what, positional=list(raw.columns))
        lines = spark.read.text(self.uri)
        v = strip(F.col("value"))
        lines = lines.where((F.length(v) > 0) & ~v.startswith("#"))
        if header:
            lines = lines.where(v != F.lit(first.strip()))   # each file's header line
        width = len(fields)
        least = 3 if self.weighted else 2   # fields every row has
        parts = F.split(v, r"[\s,]+")
        cols = [F.get(parts, k).alias(f"_c{k}") for k in range(max(width, least))]
        raw = lines.select(*cols, F.size(parts).alias("_n"), F.col("value").alias("_line"))
        names = fields if header else None
        return self._edges_of(raw, names, self.what, positional=[f"_c{k}" for k in
                                                                 range(max(width, least))],
                              short=F.col("_n") < least, line=F.col("_line"))

    def _is_header(self, fields: list[str]) -> bool:
        if self.header != "auto":
            return self.header == "yes"
        if len(fields) >= 2 and all(f.strip().isdigit() for f in fields) and \
                [int(f) for f in fields] == list(range(len(fields))):
            self.notes.append(f"{self.what}: its first line {','.join(fields)} is read as a "
                              f"header (the column positions, as pandas writes them); "
                              f"--header no reads it as an edge")
            return True
        return not (len(fields) >= 2 and _INT.match(fields[0]) and _INT.match(fields[1]))

    def _edges_of(self, raw, names, where: str, positional=None, short=None, line=None):
        """``raw`` as rows ``src, dst`` (bigint) plus ``_bad`` (the row is no edge) and the
        columns that explain a bad row (``_src``, ``_dst`` as read, ``_line``), and the
        epoch plan's column (``_ec``) when there is one."""
        from pyspark.sql import functions as F

        from spark_plugin.sources.ids import vertex_ids

        by_name = names if names is not None else None
        picks = self.columns.picks if self.columns is not None else self.edge_columns
        first = (1, 2, 3) if self.weighted else (1, 2)
        if self.columns is None and by_name is not None and not all(
                p in by_name for p in picks) and positional is not None:
            picks = first   # a header without src, dst: the first fields, as for files
        if self.columns is None and by_name is None:
            picks = first if positional is not None else picks
        chosen = []
        for p in picks:
            if isinstance(p, int):
                cols = positional if positional is not None else list(raw.columns)
                if p > len(cols):
                    raise EdgeInputError(f"{where}: --columns {self.columns}: there is no "
                                         f"column {p}: the rows have {len(cols)} fields",
                                         where)
                chosen.append(cols[p - 1])
                continue
            if by_name is None:
                raise EdgeInputError(f"{where}: column {p!r} is named, but the input has no "
                                     f"header row; pick columns by 1-based number, e.g. "
                                     f"--columns 1,2", where)
            hit = next((c for c in raw.columns if c == p), None) or next(
                (c for c in raw.columns if c.lower() == str(p).lower()), None)
            if hit is None:
                raise EdgeInputError(f"{where}: no column {p!r} (columns: "
                                     f"{', '.join(raw.columns) or '(none)'}); {COLUMNS_HINT}",
                                     where)
            chosen.append(hit)
        self.picked = tuple(chosen)   # the source's columns read as src, dst
        types = dict((f.name, f.dataType) for f in raw.schema.fields)
        if self.ids == "string":
            from spark_plugin.sources.ids import vertex_names

            (s, sbad), (d, dbad) = (vertex_names(F.col(f"`{c}`")) for c in chosen[:2])
        else:
            (s, sbad), (d, dbad) = (vertex_ids(F.col(f"`{c}`"), types[c]) for c in chosen[:2])
        bad = sbad | dbad
        if self.weighted:
            if len(chosen) < 3:
                raise EdgeInputError(f"{where}: a weighted input needs a third column, the "
                                     f"weight (--columns SRC,DST,WEIGHT)", where)
            weight, wbad = edge_weights(F.col(f"`{chosen[2]}`"), types[chosen[2]], where)
            bad = bad | wbad
        if short is not None:
            bad = short | bad
        if self.ids == "string":   # names now, ids once the dictionary exists (epochs())
            s, d = s.alias("_sn"), d.alias("_dn")
        cols = [s.alias("src") if self.ids != "string" else s,
                d.alias("dst") if self.ids != "string" else d, bad.alias("_bad"),
                F.col(f"`{chosen[0]}`").cast("string").alias("_src"),
                F.col(f"`{chosen[1]}`").cast("string").alias("_dst"),
                (line if line is not None else F.lit(None).cast("string")).alias("_line")]
        if self.weighted:
            cols[2:2] = [weight.alias("weight")]
            cols.append(F.col(f"`{chosen[2]}`").cast("string").alias("_w"))
        if self.plan.column is not None:
            ec = next((c for c in raw.columns if c == self.plan.column), None) or next(
                (c for c in raw.columns if c.lower() == self.plan.column.lower()), None)
            if ec is None:
                raise EpochPlanError(f"{where}: --epoch-column {self.plan.column!r}: no such "
                                     f"column (columns: {', '.join(raw.columns)})")
            cols.append(self._epoch_key(F.col(f"`{ec}`"), types[ec], where).alias("_ec"))
            cols.append(F.col(f"`{ec}`").cast("string").alias("_ev"))
        return raw.select(*cols)

    def _epoch_key(self, col, dtype, where: str):
        """The epoch column as an orderable key: its value, or its window's number."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import DateType, IntegralType, TimestampNTZType, TimestampType

        timeish = isinstance(dtype, (DateType, TimestampType, TimestampNTZType))
        if not (timeish or isinstance(dtype, IntegralType)):
            raise EpochPlanError(f"{where}: --epoch-column {self.plan.column}: its type "
                                 f"{dtype.simpleString()} is neither an integer nor a date "
                                 f"or timestamp")
        # as a number, exactly: a date by its UTC day (no session time zone), a timestamp
        # by its microseconds since 1970 UTC, an integer as it is
        value = (F.unix_date(col).cast("bigint") * F.lit(86_400_000_000)
                 if isinstance(dtype, DateType)
                 else F.unix_micros(col.cast("timestamp")) if timeish else col.cast("bigint"))
        if self.plan.every is None:
            return value
        width, duration = parse_every(self.plan.every)
        if duration != timeish:
            raise EpochPlanError(
                f"{where}: --epoch-every {self.plan.every}: column {self.plan.column} is "
                + ("a date or timestamp: give a duration such as 1h or 1d" if timeish
                   else "an integer: give a whole number such as 1000"))
        w = int(round(width * 1_000_000)) if timeish else int(width)
        # integer division that floors, also below zero (no double: ids past 2**53 stay exact)
        exact = (value - F.pmod(value, F.lit(w))).cast("decimal(38,0)")
        return (exact / F.lit(w).cast("decimal(38,0)")).cast("bigint")

    # -- the epochs --------------------------------------------------------------------------
    def epochs(self, spark) -> list[SparkEpoch]:
        """The epochs, in order, each with its row count: one aggregation on the executors
        (which also counts the rows that are no edge: any stops the job here, named).

        Raises
        ------
        EdgeInputError
            A row that is no edge (file and text named), no rows at all, more slices than
            rows.
        EpochPlanError
            A null in the epoch column.
        """
        self.open(spark)
        eps = self._epochs(spark)
        if self.ids != "string":
            return eps
        from spark_plugin.sources.ids import dictionary, to_ids

        self.words = dictionary(self._frame).localCheckpoint(eager=True)
        extra = self.edge_columns[2:]
        return [SparkEpoch(ep.what, ep.rows, to_ids(ep.frame, self.words, extra=extra))
                for ep in eps]

    def to_names(self, labels, columns=("vertex", "component")):
        """``--ids string``: ``labels`` (a DataFrame whose ``columns`` hold ids) as names;
        else ``labels``."""
        if self.words is None:
            return labels
        from spark_plugin.sources.ids import to_names
        return to_names(labels, self.words, columns)

    def from_names(self, labels, columns=("vertex", "component")):
        """The inverse of :meth:`to_names` (a resumed ``--out``'s labels)."""
        if self.words is None:
            return labels
        from spark_plugin.sources.ids import from_names
        return from_names(labels, self.words, columns)

    def vertex_id(self, name) -> int | None:
        """``--ids string``: the id of the vertex ``name`` (one small Spark job over the
        dictionary), ``None`` when no edge has it; else ``name`` as an int."""
        if self.words is None:
            return int(name)
        from pyspark.sql import functions as F
        row = self.words.where(F.col("name") == F.lit(str(name).strip())).select("id").first()
        return None if row is None else int(row["id"])

    def _epochs(self, spark) -> list[SparkEpoch]:
        from pyspark.sql import functions as F

        frame = self._frame
        if self.ids == "string":   # the epochs' rows as names: src, dst are the dictionary's
            frame = frame.withColumnRenamed("_sn", "src").withColumnRenamed("_dn", "dst")
        if self.plan.column is not None:
            stats = (frame.groupBy("_ec").agg(F.count(F.lit(1)).alias("n"),
                                              F.sum(F.col("_bad").cast("long")).alias("bad"),
                                              F.min("_ev").alias("v"))
                     .orderBy("_ec").collect())
            self._raise_bad(sum(int(r["bad"] or 0) for r in stats))
            if any(r["_ec"] is None for r in stats):
                n = sum(int(r["n"]) for r in stats if r["_ec"] is None)
                raise EpochPlanError(f"{self.what}: {n} row{'s' if n != 1 else ''} have no "
                                     f"--epoch-column {self.plan.column} (null): every edge "
                                     f"needs an epoch")
            if not stats:
                self._no_edges()
            edges = frame.select(*self.edge_columns, "_ec")
            return [SparkEpoch(self._window_name(r["_ec"], r["v"]),
                               int(r["n"]), edges.where(F.col("_ec") == F.lit(r["_ec"]))
                               .select(*self.edge_columns))
                    for r in stats]
        k = self.plan.epochs
        if k == 1:
            r = frame.agg(F.count(F.lit(1)).alias("n"),
                          F.sum(F.col("_bad").cast("long")).alias("bad")).first()
            self._raise_bad(int(r["bad"] or 0))
            if not r["n"]:
                self._no_edges()
            return [SparkEpoch(self.what, int(r["n"]), frame.select(*self.edge_columns))]
        return self._slices(frame, k)

    def _window_name(self, key: int, value: str) -> str:
        """An epoch's name: ``COL=value``, or its window ``COL in [start, end)``."""
        col = self.plan.column
        if self.plan.every is None:
            return f"{col}={value}"
        width, duration = parse_every(self.plan.every)
        if not duration:
            return f"{col} in [{key * width}, {(key + 1) * width})"
        import datetime as dt
        start = dt.datetime.fromtimestamp(key * width, dt.timezone.utc)
        return f"{col} in [{start:%Y-%m-%d %H:%M:%S} UTC, +{self.plan.every})"

    def _slices(self, frame, k: int) -> list[SparkEpoch]:
        """``k`` equal slices in read order (:mod:`~spark_plugin.sources.epochs`)."""
        from pyspark.sql import functions as F

        cols = self.edge_columns
        tagged = frame.select(*cols, "_bad", F.input_file_name().alias("_f"),
                              F.input_file_block_start().alias("_s"),
                              F.spark_partition_id().alias("_p"),
                              F.monotonically_increasing_id().alias("_m"))
        blocks = tagged.groupBy("_p", "_f", "_s").agg(
            F.count(F.lit(1)).alias("n"), F.min("_m").alias("lo"), F.max("_m").alias("hi"),
            F.sum(F.col("_bad").cast("long")).alias("bad")).collect()
        self._raise_bad(sum(int(b["bad"] or 0) for b in blocks))
        for b in blocks:   # a block's rows are consecutive in its partition
            if int(b["hi"]) - int(b["lo"]) + 1 != int(b["n"]):
                raise RuntimeError(f"{self.what}: the rows of block {b['_f']}@{b['_s']} are "
                                   f"not consecutive in partition {b['_p']}")
        n = sum(int(b["n"]) for b in blocks)
        if n == 0:
            self._no_edges()
        if k > n:
            raise EdgeInputError(f"{self.what}: --epochs {k} is more than its {n} edge"
                                 f"{'s' if n != 1 else ''}: each epoch of a split input "
                                 f"needs at least one (--epochs {n} or fewer)", self.what)
        order = sorted(blocks, key=lambda b: (natural_key(b["_f"] or ""), int(b["_s"]),
                                              int(b["_p"]), int(b["lo"])))
        base, at = [], 0
        for b in order:   # row number = block offset + (m - lo)
            base.extend([F.lit(f"{b['_p']}:{b['_s']}:{b['_f']}"), F.lit(at - int(b["lo"]))])
            at += int(b["n"])
        key = F.concat_ws(":", F.col("_p").cast("string"), F.col("_s").cast("string"),
                          F.col("_f"))
        row = F.element_at(F.create_map(*base), key) + F.col("_m")
        # a block this job does not know (Spark split the files otherwise than in the count
        # above: its parallelism changed in between) stops the job; no row is in no epoch
        row = F.when(row.isNotNull(), row).otherwise(F.raise_error(F.concat(
            F.lit(f"{self.what}: the input was split differently from the count of its rows "
                  f"(block "), key, F.lit("); rerun the job"))))
        epoch = F.expr(f"({k} * (__row + 1) - 1) div {n}")
        numbered = tagged.select(*cols, row.alias("__row")).select(
            *cols, epoch.alias("_e"))
        if self.materialize is not None:
            # numbered once, right after the count, and kept: every epoch reads this copy,
            # so a later rescan -- another split of the files, a DataFrame whose rows come
            # in another order after a shuffle -- cannot move a row to another epoch
            numbered, ids = self.materialize(numbered)
            self.held |= set(ids)
        cuts = even_cuts(n, k)
        return [SparkEpoch(f"{self.what} rows {cuts[e] + 1}-{cuts[e + 1]}",
                           cuts[e + 1] - cuts[e],
                           numbered.where(F.col("_e") == F.lit(e)).select(*cols))
                for e in range(k)]

    def _no_edges(self):
        raise EdgeInputError(f"{self.what}: no edges (no rows); nothing to do", self.what)

    def _raise_bad(self, bad: int) -> None:
        """Name the first row that is no edge, when there is one (one more small job)."""
        if not bad:
            return
        from pyspark.sql import functions as F

        from spark_plugin.sources.ids import explain

        ids = ("_sn", "_dn") if self.ids == "string" else ("src", "dst")
        wcols = [F.col("_w"), F.col("weight").alias("_wv")] if self.weighted else []
        r = self._frame.where(F.col("_bad")).select(
            F.input_file_name().alias("f"), "_src", "_dst", F.col(ids[0]).alias("src"),
            F.col(ids[1]).alias("dst"), "_line", *wcols).first()
        where = r["f"] or self.what
        row = r["_line"] if r["_line"] is not None else ", ".join(
            str(r[c]) for c in (("_src", "_dst", "_w") if self.weighted else ("_src", "_dst")))
        ids_ok = r["src"] is not None and r["dst"] is not None and (
            self.ids != "string" or (len(r["src"]) > 0 and len(r["dst"]) > 0))
        if r["_line"] is not None and (r["_src"] is None or r["_dst"] is None or (
                self.weighted and r["_w"] is None)):
            why = ("has fewer than three fields (src dst weight: --weighted)" if self.weighted
                   else "has fewer than two fields (src dst)")
        elif self.weighted and ids_ok:
            why = f"weight {r['_w']!r} is not a finite number >= 0"
        elif self.ids == "string":
            why = "has no vertex name (null or empty)"
        else:
            value = r["_src"] if r["src"] is None else r["_dst"]
            why = f"vertex id {value!r} {explain(value)}"
        more = f" ({bad} such rows)" if bad > 1 else ""
        raise EdgeInputError(f"{where}: row {row.strip()!r}: {why}{more}", where)


def _first_line(err: BaseException) -> str:
    text = str(getattr(err, "desc", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def spark_source(edges, *, epochs: int = 1, columns=None, table=None, fmt=None,
                 header: str = "auto", epoch_column=None, epoch_every=None, follow=None,
                 ids: str = "int", weighted: bool = False):
    """``edges`` as a job takes it (``tfront wcc``, ``tfront sssp``): a :class:`SparkEdges`
    when the input is a Spark source (a URI, a Spark-written directory, a DataFrame,
    ``table``) or an option only a Spark source has is given (``epoch_column``, ``fmt``, a
    ``header``, string ``ids``); otherwise ``edges`` unchanged (a local file or directory of
    epoch files, an Arrow table: the driver reads them). ``weighted``: the rows have a third
    column, the weight (``tfront sssp --weighted``).

    Raises
    ------
    SparkSourceError, EpochPlanError
        Options that do not fit together (``table`` and ``edges``, ``epoch_every`` without
        a column ...)."""
    import pyarrow as pa

    wants = table is not None or epoch_column is not None or fmt is not None or (
        header != "auto") or epoch_every is not None or ids != "int"
    if isinstance(edges, SparkEdges) or not (wants or (
            not isinstance(edges, pa.Table) and is_spark_source(edges, follow=follow))):
        return edges
    return SparkEdges(edges, table=table, fmt=fmt, header=header, columns=columns,
                      plan=EpochPlan.parse(epochs, epoch_column, epoch_every), ids=ids,
                      weighted=weighted)
