"""Spark integration: pointstamp count deltas from Spark executors into the engine, exactly once.

Executors consolidate their deltas inside ``mapInArrow`` (:mod:`~spark_plugin.service.executor`, on
the task's GPU when one is usable: :mod:`~spark_plugin.service.device`) and send Arrow record batches
of the delta schema (:mod:`~spark_plugin.schema`); the driver's
:class:`~spark_plugin.service.frontier_service.FrontierService` applies each ``(producer, seq)`` exactly once
and publishes frontier changes. :mod:`~spark_plugin.service.batch` is the API for iterative jobs,
:mod:`~spark_plugin.service.streaming` the Structured Streaming sink, :mod:`~spark_plugin.session.config` the
``local`` / ``gpu-cluster`` / ``rapids`` configuration presets. See ``docs/spark.md``.

This package is the only part of the project that imports PySpark, and it does so lazily:
importing it loads pyarrow but neither PySpark nor CuPy.
"""

from spark_plugin.service.batch import apply_frame, check_frame_schema, collect_arrow, consolidate_frame
from spark_plugin.session.config import (Preset, Setting, build_session, preset_settings, spark_conf,
                     write_discovery_script)
from spark_plugin.service.device import choose_device, gpu_usable, task_device
from spark_plugin.errors import (ChangeLogError, ConfigError, DeliveryConflictError, DeviceSelectionError,
                     HeldBatchError, HeldLimitError, MissingBatchError, SchemaError, ServiceStateError, SparkJobError,
                     SparkMemoryError, SubscriberError, WorkerProcessError, WorkerTimeoutError)
from spark_plugin.service.executor import PartitionConsolidator, consolidate_table
from spark_plugin.schema import (CNT, DELTA_COLUMNS, DIFF, LOC, PRODUCER, RAW_COLUMNS, SEQ, SPARK_DDL, TS,
                     counts_schema, delta_schema, delta_table, spark_schema, wire_schema)
from spark_plugin.service.frontier_service import ApplyResult, FrontierService, Gap, ServiceStatus
from spark_plugin.service.persistence import read_log
from spark_plugin.service.streaming import DeltaSink, read_delta_stream, start_delta_stream

__all__ = [
    "ApplyResult", "CNT", "ChangeLogError", "ConfigError", "DeliveryConflictError",
    "HeldBatchError", "HeldLimitError", "DELTA_COLUMNS", "DIFF", "DeltaSink",
    "DeviceSelectionError", "FrontierService", "Gap", "LOC", "MissingBatchError",
    "PRODUCER", "PartitionConsolidator", "Preset", "RAW_COLUMNS", "SEQ", "SPARK_DDL",
    "SchemaError", "ServiceStateError", "ServiceStatus", "Setting", "SparkJobError",
    "SparkMemoryError", "SubscriberError", "TS", "WorkerProcessError", "WorkerTimeoutError",
    "apply_frame", "build_session", "check_frame_schema", "choose_device", "collect_arrow",
    "consolidate_frame",
    "consolidate_table", "counts_schema", "delta_schema", "delta_table", "gpu_usable",
    "preset_settings", "read_delta_stream", "read_log", "spark_conf", "spark_schema",
    "start_delta_stream", "task_device", "wire_schema", "write_discovery_script",
]
