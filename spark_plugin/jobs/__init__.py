"""Epoch-by-epoch Spark jobs decided from frontiers: the framework they share, and the jobs.

* :mod:`~spark_plugin.jobs.framework` -- the job framework on ``engine.operate``, with
  :mod:`~spark_plugin.jobs.arrow` (a task's Arrow arrays from NumPy buffers),
  :mod:`~spark_plugin.jobs.checkpoints` (lineage truncation per stage),
  :mod:`~spark_plugin.jobs.backend` (the kernel backend a job runs) and
  :mod:`~spark_plugin.jobs.progress_bar` (what a running job shows on stderr);
* :mod:`~spark_plugin.jobs.command` -- what ``tfront wcc`` and ``tfront sssp`` share on the
  command line; :mod:`~spark_plugin.jobs.progress_log` -- the ``--progress-log`` writer;
* :mod:`~spark_plugin.jobs.recovery`, :mod:`~spark_plugin.jobs.out_store` -- crash recovery:
  what is final, kept durably in ``--out`` on any Hadoop file system;
* :mod:`spark_plugin.jobs.wcc`, :mod:`spark_plugin.jobs.sssp` -- the two jobs.

Their edge input -- local files, directories, streams, tables, Spark sources -- is
:mod:`spark_plugin.sources`, one layer below.
"""
