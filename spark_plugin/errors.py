"""Named exceptions of the Spark integration, placed in the engine's hierarchy.

Every class derives from :class:`engine.errors.TimelyFrontierError` and from ``ValueError``
(or ``RuntimeError``), so callers can catch the project's base class, the engine's
:class:`~engine.errors.BatchError`, or the builtin one. A rejected delta batch never changes
the :class:`~spark_plugin.service.FrontierService`: neither counts nor sequence numbers.
"""

from __future__ import annotations

from engine.errors import BatchError, TimelyFrontierError

__all__ = [
    "SchemaError",
    "MissingBatchError",
    "ServiceStateError",
    "SubscriberError",
    "DeviceSelectionError",
    "ConfigError",
    "SparkJobError",
    "SparkMemoryError",
]


class SchemaError(BatchError):
    """A delta table lacks a column, or a column has the wrong Arrow type.

    The message names the column and lists the columns present.
    """


class MissingBatchError(BatchError):
    """Sequence numbers that a completeness check requires have not been applied.

    Attributes
    ----------
    missing : dict[str, list[int]]
        Per producer, the sequence numbers that are missing (sorted).
    """

    def __init__(self, message: str, missing: dict[str, list[int]]):
        super().__init__(message)
        self.missing = missing


class ServiceStateError(TimelyFrontierError, ValueError):
    """Saved service state is unreadable, incomplete, or belongs to another graph."""


class SubscriberError(TimelyFrontierError, RuntimeError):
    """A subscriber raised while frontier changes were published.

    The batches were applied (and logged) before publication; the exception names them.
    """


class DeviceSelectionError(TimelyFrontierError, ValueError):
    """A task's GPU assignment cannot be mapped to a CUDA device ordinal."""


class ConfigError(TimelyFrontierError, ValueError):
    """A configuration preset is unknown or was given inconsistent or missing arguments."""


class SparkJobError(TimelyFrontierError, RuntimeError):
    """The Spark driver JVM died under a job (killed, crashed): the job cannot go on.

    Attributes
    ----------
    exit_status : int or None
        The JVM's exit status, when this process started it.
    """

    def __init__(self, message: str, exit_status: int | None = None):
        super().__init__(message)
        self.exit_status = exit_status


class SparkMemoryError(SparkJobError):
    """A Spark JVM (the driver, or executors until the job gave up) ran out of heap.

    The message says which heap size was in force and how to raise it (``--driver-memory``,
    ``--conf spark.executor.memory=...``) or lower what the driver collects.
    """
