"""Named exceptions of the Spark integration, placed in the engine's hierarchy.

Every class derives from :class:`engine.errors.TimelyFrontierError` and from ``ValueError``
(or ``RuntimeError``), so callers can catch the project's base class, the engine's
:class:`~engine.errors.BatchError`, or the builtin one. A rejected delta batch never changes
the :class:`~spark_plugin.service.frontier_service.FrontierService`: neither counts nor sequence numbers.
"""

from __future__ import annotations

from engine.errors import BatchError, NegativeCountError, SchemaError, TimelyFrontierError
# the process exchange's errors, kept importable from here
from engine.exchange.processes import WorkerProcessError, WorkerTimeoutError

__all__ = [
    "OutputStateError",
    "SparkSourceError",
    "EdgeInputError",
    "ColumnsError",
    "OutputInUseError",
    "SchemaError",
    "MissingBatchError",
    "DeliveryConflictError",
    "HeldLimitError",
    "HeldBatchError",
    "ChangeLogError",
    "ServiceStateError",
    "SubscriberError",
    "DeviceSelectionError",
    "ConfigError",
    "SparkJobError",
    "SparkMemoryError",
    "WorkerProcessError",
    "WorkerTimeoutError",
]


class MissingBatchError(BatchError):
    """Sequence numbers that a completeness check requires have not been applied.

    Attributes
    ----------
    missing : dict[str, list[tuple[int, int]]]
        Per producer, the missing sequence numbers as sorted inclusive ranges
        ``(first, last)`` (a gap of 2**62 numbers is one pair, not a list).
    """

    def __init__(self, message: str, missing: dict[str, list[int]]):
        super().__init__(message)
        self.missing = missing


class DeliveryConflictError(BatchError):
    """Two copies of one delivery unit part (same ``producer, seq, part``) differ in content,
    or two parts of one unit disagree on its number of parts. Nothing of the call was applied.

    Attributes
    ----------
    producer : str
    seq : int
    """

    def __init__(self, message: str, producer: str, seq: int):
        super().__init__(message)
        self.producer = producer
        self.seq = seq


class HeldLimitError(BatchError):
    """A producer would hold more batches (or rows) out of order than the service's bound
    (``max_held_batches`` / ``max_held_rows``). Nothing of the call was applied."""


class HeldBatchError(NegativeCountError):
    """Strict mode: a batch held out of order, released by this call, would leave a count
    negative. Nothing of the call was applied; the held batch stays held until it is
    discarded (:meth:`~spark_plugin.service.frontier_service.FrontierService.discard_held`).

    Attributes
    ----------
    producer : str
    seq : int
        The poisoned held batch.
    """

    def __init__(self, message: str, producer: str, seq: int):
        super().__init__(message)
        self.producer = producer
        self.seq = seq


class ServiceStateError(TimelyFrontierError, ValueError):
    """Saved service state is unreadable, incomplete, or belongs to another graph."""


class ChangeLogError(TimelyFrontierError, RuntimeError):
    """The change log directory is in use by another service, or a change log file could not
    be written (then nothing of the ``apply`` call was applied)."""


class SubscriberError(TimelyFrontierError, RuntimeError):
    """A subscriber raised while frontier changes were published.

    The batches were applied (and logged) before publication; the exception names them.
    """


class DeviceSelectionError(TimelyFrontierError, ValueError):
    """A task's GPU assignment cannot be mapped to a CUDA device ordinal."""


class ConfigError(TimelyFrontierError, ValueError):
    """A configuration preset is unknown or was given inconsistent or missing arguments."""


class OutputStateError(TimelyFrontierError, ValueError):
    """An existing ``--out`` of the WCC job cannot be resumed: not written by a resumable run,
    written by another job (the differing settings named), or its manifest or data damaged.
    Nothing in it was changed."""


class OutputInUseError(OutputStateError):
    """Another run holds the ``--out`` (its lock file, ``_tfront_lock``, is locked): the
    message names the holder (pid, host, command). Nothing in ``--out`` was changed."""


class OutputWriteError(TimelyFrontierError, RuntimeError):
    """Writing into ``--out`` failed (a full disk, a lost permission): the message names the
    file and says that a rerun of the same command resumes -- the epochs the manifest made
    final are kept, and what the failed write left is removed on the next start."""


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


class SparkSourceError(TimelyFrontierError, ValueError):
    """A Spark source (:mod:`spark_plugin.sources`) cannot be read: no file system for its
    scheme, no HDFS configured, a missing table, an unknown format. The message says which and
    what to do."""


class EdgeInputError(TimelyFrontierError, ValueError):
    """An edge input is malformed: the message names the file and the line (or row).

    Attributes
    ----------
    path : str
    line : int or None
        1-based line number (row number, 1-based, for Parquet); ``None`` for file-level errors.
    """

    def __init__(self, message: str, path: str, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


class ColumnsError(TimelyFrontierError, ValueError):
    """A ``--columns`` / ``columns=`` value that is not ``SRC,DST[,WEIGHT]``
    (:class:`~spark_plugin.sources.columns.EdgeColumns`)."""
