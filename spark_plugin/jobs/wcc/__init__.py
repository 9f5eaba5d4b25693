"""The flagship job: incremental weakly connected components (docs/wcc.md) -- the job
(:mod:`~spark_plugin.jobs.wcc.job`), ``tfront wcc`` (:mod:`~spark_plugin.jobs.wcc.cli`) and
the sample graph of ``make run`` (:mod:`~spark_plugin.jobs.wcc.sample`).
"""
