"""Spark integration: streams count deltas from Spark executors into the engine.

Executors pre-consolidate deltas as Arrow record batches; a driver-side tracker applies them
exactly once per ``(producer, seq)`` and publishes frontiers. This package is the only part of
the project that imports PySpark. Its contents arrive with the Spark integration.
"""
