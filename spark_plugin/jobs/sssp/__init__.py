"""Incremental single-source shortest paths (docs/jobs.md) -- the job
(:mod:`~spark_plugin.jobs.sssp.job`), its distances kept in Spark past the driver's budget
(:mod:`~spark_plugin.jobs.sssp.spark`) and ``tfront sssp`` (:mod:`~spark_plugin.jobs.sssp.cli`);
its edge input, weighted or not, is :mod:`spark_plugin.sources`'s.
"""
