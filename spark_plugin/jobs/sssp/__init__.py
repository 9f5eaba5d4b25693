"""Incremental single-source shortest paths (docs/jobs.md) -- the job
(:mod:`~spark_plugin.jobs.sssp.job`), its weighted edge input (:mod:`~spark_plugin.jobs.sssp.io`)
and ``tfront sssp`` (:mod:`~spark_plugin.jobs.sssp.cli`).
"""
