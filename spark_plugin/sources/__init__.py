"""Edge input read by Spark's executors: where it is, how it splits into epochs, its vertex ids.

A *Spark source* is an edge dataset that the driver never reads: a Hadoop URI (``hdfs://``,
``s3a://``, ``gs://``, ``file://``), a directory as Spark writes it (``part-*`` files,
``_SUCCESS``, Hive-style ``key=value/`` folders), a table (``--table db.edges``) or, from
Python, a DataFrame. :class:`SparkEdges` opens one (:mod:`~spark_plugin.sources.dataset`:
one reader per format), checks its vertex ids (:mod:`~spark_plugin.sources.ids`) and splits
it into epochs (:mod:`~spark_plugin.sources.epochs`) with one aggregation on the executors;
the driver keeps ``O(epochs + partitions)`` numbers. Local edge files and directories of
epoch files (``--follow`` streams) are :mod:`spark_plugin.jobs.edges`'s, read by the driver.
"""

from spark_plugin.sources.dataset import (FORMATS, SparkEdges, SparkSourceError, is_spark_source,
                                          is_uri, spark_dataset_dir, spark_source)
from spark_plugin.sources.epochs import EpochPlan, parse_every
from spark_plugin.sources.ids import IDS_MODES

__all__ = ["SparkEdges", "SparkSourceError", "is_spark_source", "is_uri", "spark_dataset_dir",
           "spark_source", "FORMATS", "EpochPlan", "parse_every", "IDS_MODES"]
