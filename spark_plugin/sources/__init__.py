"""The jobs' edge input: sources, their epochs and vertex ids, one reader per source kind.

Read by the driver (a *local* input):

* :mod:`~spark_plugin.sources.text` -- SNAP text and CSV files (and ``src dst weight``);
* :mod:`~spark_plugin.sources.parquet` -- Parquet files, as slices the driver or the tasks read;
* :mod:`~spark_plugin.sources.directory` -- a directory of epoch files, or one followed as a
  stream (``--follow``);
* :mod:`~spark_plugin.sources.local` -- a local input as a whole: :func:`read_edges`,
  :func:`check_input` before Spark starts, :func:`epoch_sources` (an Arrow table too).

Read by Spark's executors (a *Spark source*, which the driver never reads): a Hadoop URI
(``hdfs://``, ``s3a://``, ``gs://``, ``file://``), a directory as Spark writes it
(``part-*`` files, ``_SUCCESS``, Hive-style ``key=value/`` folders), a table (``--table
db.edges``) or, from Python, a DataFrame. :class:`SparkEdges` opens one
(:mod:`~spark_plugin.sources.dataset`: one reader per format), checks its vertex ids
(:mod:`~spark_plugin.sources.ids`) and splits it into epochs
(:mod:`~spark_plugin.sources.epochs`) with one aggregation on the executors; the driver keeps
``O(epochs + partitions)`` numbers.

What every reader shares: the columns picked (:mod:`~spark_plugin.sources.columns`,
``--columns``), the row checks (:mod:`~spark_plugin.sources.rows`), a local file's identity
(:mod:`~spark_plugin.sources.files`), an epoch (:class:`EpochSource`) and the errors
(:class:`EdgeInputError`, :class:`ColumnsError`, :class:`SparkSourceError`).
"""

from spark_plugin.errors import ColumnsError, EdgeInputError, SparkSourceError
from spark_plugin.sources.columns import COLUMNS_HINT, EdgeColumns, table_columns
from spark_plugin.sources.dataset import (FORMATS, SparkEdges, is_spark_source, is_uri,
                                          spark_dataset_dir, spark_source)
from spark_plugin.sources.directory import DONE_MARKER, edge_files, natural_key
from spark_plugin.sources.epochs import EpochPlan, EpochSource, even_cuts, parse_every
from spark_plugin.sources.files import FileStamp, check_regular, edge_format
from spark_plugin.sources.ids import IDS_MODES
from spark_plugin.sources.local import (check_input, epoch_sources, parquet_file_rows, read_edges,
                                        read_weighted_edges)
from spark_plugin.sources.parquet import ParquetSlice
from spark_plugin.sources.rows import EDGE_SCHEMA, WEIGHTED_SCHEMA, edges_table, weighted_table
from spark_plugin.sources.text import CSV_RULE

__all__ = ["SparkEdges", "SparkSourceError", "is_spark_source", "is_uri", "spark_dataset_dir",
           "spark_source", "FORMATS", "EpochPlan", "parse_every", "IDS_MODES",
           "EdgeInputError", "ColumnsError", "EdgeColumns", "COLUMNS_HINT", "table_columns",
           "read_edges", "read_weighted_edges", "epoch_sources", "check_input", "EpochSource",
           "parquet_file_rows",
           "even_cuts", "ParquetSlice", "FileStamp", "check_regular", "edge_format",
           "edge_files", "natural_key", "DONE_MARKER", "EDGE_SCHEMA", "WEIGHTED_SCHEMA",
           "edges_table", "weighted_table", "CSV_RULE"]
