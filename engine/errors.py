"""Named exceptions of timely-frontier: every rejected input raises one of these.

All of them derive from :class:`TimelyFrontierError` and from ``ValueError`` (or
``TypeError``), so callers can catch either the project's base class or the builtin one.
Messages name the offending location, port, timestamp or row, and say what was expected.
"""

from __future__ import annotations

__all__ = [
    "TimelyFrontierError",
    "GraphError",
    "UnknownOperatorError",
    "UnknownPortError",
    "DepthMismatchError",
    "SummaryShapeError",
    "DuplicateChannelError",
    "ZeroAdvanceCycleError",
    "AntichainOverflowError",
    "PsiLimitError",
    "BatchError",
    "SchemaError",
    "UnknownLocationError",
    "TimestampWidthError",
    "TimestampRangeError",
    "NegativeCountError",
    "CountOverflowError",
    "WorkloadFormatError",
    "WorkloadLimitError",
    "RollbackFormatError",
    "RollbackLimitError",
    "RollbackStateError",
    "BackendError",
    "ConvergenceError",
    "ProgressLogError",
    "DependencyError",
    "OperatorNameError",
    "ScopeError",
    "ReportError",
    "ReportOperatorError",
    "ReportPortError",
    "ReportCountError",
    "CapabilityError",
    "NoCapabilityError",
    "CapabilityRegressionError",
    "UnheldCapabilityError",
    "ExchangeError",
    "ExchangeCapabilityError",
    "UnjustifiedSendError",
    "UpdateOrderError",
    "ExchangeStateError",
    "SafetyError",
    "NotInFlightError",
]


class TimelyFrontierError(Exception):
    """Base class of every error the engine raises on bad input."""


class GraphError(TimelyFrontierError, ValueError):
    """A dataflow graph description is invalid."""


class UnknownOperatorError(GraphError):
    """An operator id that the graph does not have."""


class UnknownPortError(GraphError):
    """A port number that the operator does not have."""


class DepthMismatchError(GraphError):
    """A channel joins ports of different loop depths."""


class SummaryShapeError(GraphError):
    """A summary whose depths or vector lengths do not fit where it is used."""


class DuplicateChannelError(GraphError):
    """A second channel into one input port."""


class ZeroAdvanceCycleError(GraphError):
    """A cycle that can bring data back to a location at the same or an earlier time.

    Attributes
    ----------
    cycle : list[int]
        The locations of the cycle, in order; the first one is repeated at the end.
    """

    def __init__(self, message: str, cycle: list[int]):
        super().__init__(message)
        self.cycle = cycle


class AntichainOverflowError(TimelyFrontierError, ValueError):
    """An antichain of summaries grew past the caller-set ``max_antichain``."""


class PsiLimitError(TimelyFrontierError, ValueError):
    """The closure ``Psi`` of a graph would hold more summaries than the caller-set
    ``max_summaries``; raised before ``Psi`` is allocated. The message gives the size it
    would need and how to raise the limit.

    Attributes
    ----------
    summaries : int
        The summaries ``Psi`` would hold (a lower bound when ``exact`` is false: one per
        reachable pair, counted only until the limit was passed).
    max_summaries : int
        The limit.
    exact : bool
        Whether ``summaries`` is the exact count.
    """

    def __init__(self, message: str, summaries: int, max_summaries: int, exact: bool):
        super().__init__(message)
        self.summaries, self.max_summaries, self.exact = summaries, max_summaries, exact


class BatchError(TimelyFrontierError, ValueError):
    """A batch of pointstamp count changes is malformed; nothing of it was applied."""


class SchemaError(BatchError):
    """A delta table lacks a column, or a column has the wrong Arrow type.

    The message names the column and lists the columns present.
    """


class UnknownLocationError(BatchError):
    """A row names a location the graph does not have."""


class TimestampWidthError(BatchError):
    """A timestamp has the wrong number of coordinates for its location."""


class TimestampRangeError(BatchError):
    """A timestamp coordinate lies outside ``[0, 2**62)``."""


class NegativeCountError(BatchError):
    """In strict mode, a batch would leave a pointstamp with a negative count."""


class CountOverflowError(BatchError):
    """A pointstamp's count would leave the signed 64-bit range; nothing of the batch was
    applied (every backend raises it, before anything is committed)."""


class WorkloadFormatError(TimelyFrontierError, ValueError):
    """A progress workload file is malformed; the message names the line number."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


class WorkloadLimitError(WorkloadFormatError):
    """A progress workload exceeds a documented limit (``max_locations``: the ports its
    ``node`` lines declare, counted at the line that crosses it). Not malformed, but refused
    the same way, naming the line; the message names the limit and how to raise it."""


class RollbackFormatError(TimelyFrontierError, ValueError):
    """A rollback problem (format ``timely-rollback v1``) is malformed or breaks a condition the
    paper assumes (Condition 1, monotone ``need``, Condition 4); the message names the line.

    Attributes
    ----------
    line : int or None
        The 1-based line of the file that is wrong (the number of lines plus one for a problem
        found only at the end), or None for a problem built in code rather than read from a file.
    path : str or None
        The file the problem was read from, when it was (:func:`engine.rollback.format.read_rollback`):
        the message then starts ``FILE:LINE: `` instead of ``line LINE: ``.
    reason : str
        The message without its place.
    """

    def __init__(self, message: str, line: int | None = None, path: str | None = None):
        where = (f"{path}:{line}: " if path is not None and line is not None else
                 f"{path}: " if path is not None else
                 f"line {line}: " if line is not None else "")
        super().__init__(where + message)
        self.line, self.path, self.reason = line, path, message

    def at(self, path) -> "RollbackFormatError":
        """The same error, placed in the file ``path``."""
        return type(self)(self.reason, self.line, str(path))


class RollbackLimitError(RollbackFormatError):
    """A rollback problem exceeds a documented limit: its size (``max_states``: the
    ``(location, time)`` states of its could-result-in, named at the line that crosses it) or
    its search (``max_search``: fixed points computed where some availability list is not
    closed under union; no line). Not malformed, but refused the same way; the message names
    the limit and how to raise it."""


class RollbackStateError(TimelyFrontierError, ValueError):
    """A rollback's state cannot be rebuilt (``engine.rollback.state``): the choice of frontiers
    is malformed or fails the full guard on the run's state, or the problem's could-result-in
    cannot be expressed as tracker summaries; the message says which."""


class BackendError(TimelyFrontierError, ValueError):
    """An unknown backend name, or a backend that cannot run here."""


class ConvergenceError(TimelyFrontierError, RuntimeError):
    """Local propagation did not reach a fixed point within its step budget."""


class ProgressLogError(TimelyFrontierError, ValueError):
    """A progress log (``tfront wcc --progress-log``) is malformed; the message names the
    file and the line."""


class DependencyError(TimelyFrontierError, RuntimeError):
    """An optional package a command needs is not installed; the message names it and the
    ``pip install`` that adds it."""


class OperatorNameError(GraphError):
    """An operator or scope name (``engine.operate.dataflow``) that is not a non-empty string without
    ``/``, or that repeats the name of a sibling in the same scope."""


class ScopeError(GraphError):
    """A scope (``engine.operate.dataflow.Scope``) used in a way its nesting does not allow: a child at
    the wrong depth, a scope added twice, a root scope with boundary ports."""


class ReportError(BatchError):
    """A progress report in the operators' words (``engine.operate.dataflow.Report``) is malformed or
    breaks a guard; nothing of it was applied."""


class ReportOperatorError(ReportError, UnknownOperatorError):
    """A report names an operator the dataflow does not have (or a scope, which reports
    nothing of its own)."""


class ReportPortError(ReportError, UnknownPortError):
    """A report names an input or output port that its operator does not have."""


class ReportCountError(ReportError):
    """A report's consumed or produced count is negative, or its columns do not fit together."""


class CapabilityError(ReportError):
    """A report breaks the capability discipline of an operator (the guards of
    ``engine.operate.dataflow``); the message names the operator, the port and the time."""


class NoCapabilityError(CapabilityError):
    """A message produced at a time for which the operator holds no capability on that output
    and consumed nothing that could result in it."""


class CapabilityRegressionError(CapabilityError):
    """A capability acquired at a time that is not at or after a capability held on that
    output, nor justified by a message consumed in the same report: capabilities only move
    forward."""


class UnheldCapabilityError(CapabilityError):
    """A report drops more capabilities at a time than the operator holds there."""


class ExchangeError(TimelyFrontierError, ValueError):
    """A transition of the progress exchange protocol (:mod:`engine.exchange`) is not enabled
    with these arguments; the worker or the simulated system is left exactly as it was."""


class ExchangeCapabilityError(ExchangeError):
    """``perf_op``'s guards: a worker drops a capability it does not hold, or creates a
    capability (data message) that no capability it holds at or before (strictly before)
    it justifies."""


class UnjustifiedSendError(ExchangeError):
    """``send_upd``'s guard: what the send would leave in the worker's ``temp`` is not
    ``justified`` by the worker's capabilities (the message names the pointstamp)."""


class UpdateOrderError(ExchangeError):
    """``recv_upd``: a progress update from an unknown sender, or out of its sender's FIFO
    order (a duplicate or a gap in ``seq``)."""


class ExchangeStateError(ExchangeError):
    """A step that the system's current state does not allow: no such message or data in
    flight, or initial capabilities admitted while the system is not quiescent."""


class SafetyError(TimelyFrontierError, RuntimeError):
    """A checked property of the exchange protocol failed (Safe, Mono, or a worker's implied
    frontier ahead of the true one): the message names the worker, location and pointstamp."""


class NotInFlightError(ReportError, NegativeCountError):
    """A report consumes more messages at an input and time than are in flight there (the
    count at the input's target, plus what the report itself produces into it): a message
    that was never sent cannot be consumed, nor justify a capability or a production."""
