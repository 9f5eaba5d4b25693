"""Ctrl-C in a command whose main thread drives Spark through py4j: the Spark jobs cancelled,
and :exc:`KeyboardInterrupt` raised only where it cannot break a py4j call.

A terminal sends SIGINT to its whole foreground process group. The driver JVM a command
starts runs in a session of its own (:func:`spark_plugin.session.console.start_jvm`), so
neither it nor the Python workers it forks get the signal -- a worker that does dies with a
traceback, and the JVM reports it ``crashed``. The command's own process does. PySpark's
handler (installed with every ``SparkContext``) then calls ``cancelAllJobs`` through py4j
and raises :exc:`KeyboardInterrupt` from inside whatever py4j call the main thread was
blocked in: a reentrant call on the same connection, which py4j logs as two tracebacks, and
a connection left broken.

:class:`CtrlC` replaces that handler while a command runs. The first Ctrl-C marks the
command interrupted (:attr:`CtrlC.requested`) and cancels every Spark job from a thread of
its own (its own py4j connection), again every second until the command has reported the
interrupt. :exc:`KeyboardInterrupt` is raised in the main thread at once where that is safe
-- outside py4j, and not while an exception is already unwinding -- else as soon as it is:
the thread re-sends the signal to the main thread every :data:`NUDGE_SECONDS` until it is
raised. A second Ctrl-C raises at once wherever the main
thread is; once the command has reported the interrupt (:meth:`CtrlC.handled`), one more
ends the process with exit status 130 without waiting for Spark to stop.
"""

from __future__ import annotations

import _thread
import logging
import os
import signal
import sys
import threading
import time

__all__ = ["CtrlC", "EXIT_INTERRUPTED", "NUDGE_SECONDS"]

log = logging.getLogger(__name__)

#: Exit status of an interrupted command (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: How often the main thread is reminded of a pending Ctrl-C (it raises at the first safe
#: reminder); Spark's jobs are cancelled again every ten reminders.
NUDGE_SECONDS = 0.1


def in_py4j(frame) -> bool:
    """Whether ``frame`` (the main thread's, as a signal handler gets it) is inside py4j."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


class CtrlC:
    """SIGINT while a Spark command runs (module docstring); a context manager around the
    command's run. :meth:`install` again after a ``SparkContext`` was created (it installs
    PySpark's handler); leaving the context restores the handler found on entering it.
    Only the main thread can install it: elsewhere it does nothing."""

    def __init__(self, on_request=None):
        #: Called once, in the signal handler, when the first Ctrl-C comes -- before the
        #: Spark jobs are cancelled (a command hushes the JVM there: the cancelled tasks'
        #: workers print broken-pipe tracebacks at once, issue 32 item 13).
        self.on_request = on_request
        #: A Ctrl-C came: whatever the command's job raises now is the interrupt's doing.
        self.requested = False
        #: :exc:`KeyboardInterrupt` was raised in the main thread.
        self.raised = False
        #: The command reported the interrupt (:meth:`handled`), or ended.
        self.done = False
        self._presses = 0
        self._nudged = False
        self._previous = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "CtrlC":
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        self.done = True
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def install(self) -> None:
        """Make :meth:`_on_sigint` the SIGINT handler (in the main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        if self._previous is None:
            self._previous = previous

    def handled(self) -> None:
        """The command has reported the interrupt: no more reminders; one more Ctrl-C ends
        the process at once."""
        self.done = True

    def _on_sigint(self, signum, frame) -> None:
        nudged, self._nudged = self._nudged, False
        if self.done:
            if not nudged:   # a Ctrl-C while the command stops Spark: stop waiting
                _exit_now()
            return
        if self.raised:      # the main thread is on its way out already
            return
        if not nudged:
            self._presses += 1
        if not self.requested and self.on_request is not None:
            self.on_request()
        self.requested = True
        if self._thread is None:
            self._thread = threading.Thread(target=self._cancel, name="ctrl-c", daemon=True)
            self._thread.start()
        if self._presses < 2 and (in_py4j(frame) or sys.exc_info()[1] is not None):
            return           # raised at the first reminder where it is safe
        self.raised = True
        raise KeyboardInterrupt

    def _cancel(self) -> None:
        """Until the command has reported the interrupt: cancel Spark's jobs (again every
        second: a job started since, e.g. from a background thread, is one the command no
        longer waits for), and remind the main thread until it has raised."""
        k = 0
        while not self.done:
            if k % 10 == 0:
                _cancel_spark_jobs()
            time.sleep(NUDGE_SECONDS)
            if self.done:
                break
            if not self.raised:
                self._nudged = True
                _thread.interrupt_main(signal.SIGINT)
            k += 1


def _cancel_spark_jobs() -> None:
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is not None:
            sc.cancelAllJobs()
    except Exception as e:  # noqa: BLE001 -- a JVM already gone has no jobs to cancel
        log.debug("cancelling the Spark jobs after Ctrl-C failed: %s", e)


def _exit_now() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(EXIT_INTERRUPTED)
