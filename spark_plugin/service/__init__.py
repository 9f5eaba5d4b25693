"""Deltas into the engine, exactly once: the driver-side ``FrontierService``
(:mod:`~spark_plugin.service.frontier_service`; its change log and saved state on disk:
:mod:`~spark_plugin.service.persistence`), executor-side consolidation inside
``mapInArrow`` (:mod:`~spark_plugin.service.executor`, on the task's GPU when usable:
:mod:`~spark_plugin.service.device`), the batch API for iterative jobs
(:mod:`~spark_plugin.service.batch`) and the Structured Streaming sink
(:mod:`~spark_plugin.service.streaming`).
"""
