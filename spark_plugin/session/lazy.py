"""A Spark session started when a job first needs one.

An epoch job whose every epoch fits the driver (:mod:`spark_plugin.jobs.budget`) runs no
Spark job at all: WCC's union-find and SSSP's Dijkstra run on the driver, and the progress
of every step is still reported through the job's dataflow and decided from frontiers.
Starting the driver JVM for such a run costs more than the run (5-10 s on a quiet 2-core
machine, 20-40 s on a loaded one, against a fraction of a second for a 10M-edge union-find).
:class:`LazySession` stands in for the ``SparkSession`` a job is given: it answers what the
job asks before it runs anything -- the master, the parallelism, a setting, the driver's
heap -- from the settings the session will be started with, and starts the session on the
first call of :meth:`LazySession.get`, which every Spark job of a job goes through.

The functions :func:`session_of`, :func:`started`, :func:`master_of`, :func:`parallelism_of`,
:func:`conf_of` and :func:`heap_of` take either a ``SparkSession`` or a :class:`LazySession`, so
that a job's code does not ask which it holds.

>>> lazy = LazySession(lambda: None, {"spark.master": "local[3]",
...                                   "spark.default.parallelism": "3",
...                                   "spark.driver.memory": "2g"})
>>> master_of(lazy), parallelism_of(lazy), heap_of(lazy) == 2 << 30, started(lazy)
('local[3]', 3, True, False)
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Mapping

__all__ = ["LazySession", "session_of", "started", "master_of", "parallelism_of", "conf_of",
           "heap_of", "default_session"]


class LazySession:
    """A ``SparkSession`` that ``start()`` makes when :meth:`get` is first called.

    Parameters
    ----------
    start : callable
        Starts the session and returns it (e.g. a
        :func:`~spark_plugin.session.config.build_session` call); called at most once, under a
        lock (a job may ask from two threads).
    settings : mapping
        The settings ``start`` uses: what :meth:`conf` answers until the session runs (then
        the running ``SparkConf``). ``spark.master`` must be an embedded master (``local``,
        ``local[N]``, ``local[*]``, ``local[N,F]``), whose parallelism is known without
        Spark; any other is refused (start such a session at once instead).
    on_start : callable, optional
        Called with the new session right after it started (on the thread that started it):
        e.g. to say so, or to install a signal handler again.

    Raises
    ------
    ValueError
        ``spark.master`` is not an embedded master.
    """

    def __init__(self, start: Callable[[], object], settings: Mapping[str, str], *,
                 on_start: Callable[[object], None] | None = None):
        from spark_plugin.session.config import is_embedded_master

        self._start, self.settings, self._on_start = start, dict(settings), on_start
        master = self.settings.get("spark.master", "local[*]")
        if not is_embedded_master(master):
            raise ValueError(f"a session started when first needed must run embedded "
                             f"(local, local[N], local[*]), not under master {master!r}")
        self._session = None
        self._lock = threading.Lock()
        self.start_seconds: float | None = None

    @property
    def started(self) -> bool:
        """Whether the session runs (was started by :meth:`get`)."""
        return self._session is not None

    def get(self):
        """The session, started now if it is not running yet."""
        if self._session is None:
            import time

            with self._lock:
                if self._session is None:
                    t0 = time.perf_counter()
                    session = self._start()
                    self.start_seconds = time.perf_counter() - t0
                    self._session = session
                    if self._on_start is not None:
                        self._on_start(session)
        return self._session

    @property
    def master(self) -> str:
        if self._session is not None:
            return self._session.sparkContext.master
        return self.settings.get("spark.master", "local[*]")

    def conf(self, key: str, default: str | None = None) -> str | None:
        """A setting: the running session's, or the one it will be started with."""
        if self._session is not None:
            return self._session.sparkContext.getConf().get(key, default)
        return self.settings.get(key, default)

    @property
    def parallelism(self) -> int:
        """Spark's default parallelism: ``spark.default.parallelism`` when set, else the
        cores of the embedded master (``local``: 1, ``local[N]``: N, ``local[*]``: this
        process's CPUs)."""
        if self._session is not None:
            return int(self._session.sparkContext.defaultParallelism)
        value = self.settings.get("spark.default.parallelism")
        if value is not None and str(value).strip().isdigit() and int(value) > 0:
            return int(value)
        master = self.master.strip()
        if master == "local":
            return 1
        cores = master[len("local["):].split(",")[0].rstrip("]")
        if cores == "*":
            return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
                else (os.cpu_count() or 1)
        return int(cores)

    @property
    def heap_bytes(self) -> int:
        """The driver JVM's heap: measured once it runs, else ``spark.driver.memory`` (Spark's
        default ``1g`` when unset), which is the ``-Xmx`` the JVM will be started with."""
        from spark_plugin.session.config import driver_heap_bytes, parse_memory

        if self._session is not None:
            return driver_heap_bytes(self._session)
        size = str(self.settings.get("spark.driver.memory", "1g")).strip().lower()
        return parse_memory(size if size[-1:].isalpha() else size + "b")

    def stop(self) -> None:
        """Stop the session if it was started."""
        if self._session is not None:
            self._session.stop()


def session_of(spark):
    """The running ``SparkSession`` of ``spark`` (a :class:`LazySession` is started now)."""
    return spark.get() if isinstance(spark, LazySession) else spark


def started(spark) -> bool:
    """Whether ``spark`` runs: a ``SparkSession`` always, a :class:`LazySession` once started."""
    return spark.started if isinstance(spark, LazySession) else spark is not None


def master_of(spark) -> str:
    """The master URL, without starting a :class:`LazySession`."""
    return spark.master if isinstance(spark, LazySession) else spark.sparkContext.master


def parallelism_of(spark) -> int:
    """Spark's default parallelism, without starting a :class:`LazySession`."""
    if isinstance(spark, LazySession):
        return spark.parallelism
    return int(spark.sparkContext.defaultParallelism)


def conf_of(spark, key: str, default: str | None = None) -> str | None:
    """A Spark setting (the ``SparkConf``'s), without starting a :class:`LazySession`."""
    if isinstance(spark, LazySession):
        return spark.conf(key, default)
    return spark.sparkContext.getConf().get(key, default)


def heap_of(spark) -> int:
    """The driver JVM's heap in bytes, without starting a :class:`LazySession`."""
    if isinstance(spark, LazySession):
        return spark.heap_bytes
    from spark_plugin.session.config import driver_heap_bytes

    return driver_heap_bytes(spark)


def default_session(app_name: str = "timely-frontier"):
    """The session a job given ``spark=None`` runs with: the active Spark session when this
    process has one (a notebook, a test), else an embedded ``local[*]`` one (the ``local``
    preset, as ``tfront`` starts it) that starts only when a step needs Spark -- a job whose
    every epoch the driver finishes never starts a JVM (issue 32 item 21)."""
    import sys

    if "pyspark" in sys.modules:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            return active
    from spark_plugin.session.config import build_session, session_conf

    return LazySession(lambda: build_session("local", app_name=app_name), session_conf("local"))
