"""Epoch-by-epoch Spark jobs decided from frontiers: the framework they share, and the jobs.

* :mod:`~spark_plugin.jobs.framework` -- the job framework on ``engine.operate``;
* :mod:`~spark_plugin.jobs.command` -- what ``tfront wcc`` and ``tfront sssp`` share on the
  command line; :mod:`~spark_plugin.jobs.progress_log` -- the ``--progress-log`` writer;
* :mod:`~spark_plugin.jobs.edges` -- edge input (text, CSV, Parquet, tables), epochs;
* :mod:`~spark_plugin.jobs.recovery`, :mod:`~spark_plugin.jobs.out_store` -- crash recovery:
  what is final, kept durably in ``--out`` on any Hadoop file system;
* :mod:`spark_plugin.jobs.wcc`, :mod:`spark_plugin.jobs.sssp` -- the two jobs.
"""
