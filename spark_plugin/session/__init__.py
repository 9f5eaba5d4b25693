"""The Spark session a job runs in: configuration presets (:mod:`~spark_plugin.session.config`)
and the console output of a command-line job (:mod:`~spark_plugin.session.console`).
"""
