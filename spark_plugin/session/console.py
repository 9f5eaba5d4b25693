"""The console of a command-line job: lines written through the progress bar, and Spark's
log level from the first line on.

A line written with :func:`write_line` goes through the progress bar
(:mod:`spark_plugin.jobs.progress_bar`), so that none is drawn over it.

A JVM started the usual way prints, before any ``setLogLevel`` can run, the JVM's notice
``WARNING: Using incubator modules: jdk.incubator.vector`` (Spark's launcher always adds that
module), ``Using Spark's default log4j profile``, ``Setting default log level to "WARN"``
and warnings such as ``NativeCodeLoader: Unable to load native-hadoop library``.
:func:`start_jvm` starts the driver JVM instead with a log4j2 configuration of the requested
root level (``-Dlog4j2.configurationFile``, in ``spark.driver.extraJavaOptions``) and its
standard error read through a pipe: every line is passed on (written through the progress
bar, :func:`write_line`) except, below level ``warn``, the JVM notices of
:data:`JVM_NOTICES`, and everything after :func:`hush_jvm` (a command interrupted by Ctrl-C).
The JVM runs in a session of its own, so that a terminal's Ctrl-C reaches neither it nor its
Python workers (:mod:`spark_plugin.session.interrupt`).

When a JVM is already running -- a session of this process, or ``spark-submit``, which
starts the JVM first -- nothing is started: the level is then only set by
``SparkContext.setLogLevel`` (:func:`spark_plugin.session.config.build_session`).
"""

from __future__ import annotations

import atexit
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Mapping

from spark_plugin.errors import ConfigError

__all__ = ["LOG_LEVELS", "JVM_NOTICES", "log4j2_properties", "start_jvm", "write_line",
           "hush_jvm"]

#: The log4j levels ``build_session(log_level=...)`` accepts, quietest first.
LOG_LEVELS = ("off", "fatal", "error", "warn", "info", "debug", "trace", "all")
#: Lines the JVM itself writes at start-up, dropped below level ``warn``.
JVM_NOTICES = ("WARNING: Using incubator modules:",)

_EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


#: Held while a line is written: the JVM's lines (forwarded on their own thread) and the
#: job's never share a line.
_WRITING = threading.Lock()


def write_line(text: str, file=None) -> None:
    """Write one line to ``file`` (default stdout) through the progress bar: a tqdm bar on
    the terminal is cleared first and redrawn after, so the two never share a line. The line
    and its newline are one write, under a lock, so lines written from several threads (the
    JVM's, forwarded, and a job's round lines under ``-v``) are never glued together."""
    file = sys.stdout if file is None else file
    tqdm = sys.modules.get("tqdm")   # a bar exists only if tqdm was imported
    with _WRITING:
        if tqdm is None:
            file.write(text + "\n")
            file.flush()
            return
        with tqdm.tqdm.external_write_mode(file=file):
            file.write(text + "\n")
            file.flush()


def _check_level(level: str) -> str:
    lv = str(level).lower()
    if lv not in LOG_LEVELS:
        raise ConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return lv


def log4j2_properties(level: str) -> Path:
    """A log4j2 properties file (in the temporary directory, removed at exit): root logger at
    ``level``, one console appender on standard error."""
    lv = _check_level(level)
    text = "\n".join([
        "status = error",
        f"rootLogger.level = {lv}",
        "rootLogger.appenderRef.stderr.ref = console",
        # the logger Spark takes a shell's level from (PySpark's driver counts as a shell):
        # configured, it is not reset to WARN with a "Setting default log level" notice
        "logger.repl.name = org.apache.spark.api.python.PythonGatewayServer",
        f"logger.repl.level = {lv}",
        # the jobs' own localCheckpoint makes Spark warn, every round, that the RDD "was
        # locally checkpointed ... cannot be recomputed after unpersisting": nothing a user
        # can act on, so said from INFO (-vv) only (issue 32 item 22)
        *(["logger.ckpt.name = org.apache.spark.rdd.MapPartitionsRDD",
           "logger.ckpt.level = error"] if lv == "warn" else []),
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
        ""])
    fd, name = tempfile.mkstemp(prefix=f"tfront-log4j2-{lv}-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    return Path(name)


#: Set by :func:`hush_jvm`: the JVM's lines are read and dropped from then on.
_HUSHED = threading.Event()


def hush_jvm(on: bool = True) -> None:
    """Stop passing the JVM's standard error on (``on=False``: pass it on again). A command
    interrupted by Ctrl-C calls it: what the JVM says then -- tasks cancelled or killed, a
    result stream closed early -- is the interrupt's doing, and the command's own line says
    what happened."""
    if on:
        _HUSHED.set()
    else:
        _HUSHED.clear()


def _forward(stream, show_notices: bool) -> None:
    """Pass the JVM's standard error on, line by line, through the progress bar (until
    :func:`hush_jvm`). Never stops reading before the pipe closes (a full pipe would block
    the JVM)."""
    for raw in iter(stream.readline, b""):
        try:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if _HUSHED.is_set():
                continue
            if show_notices or not line.startswith(JVM_NOTICES):
                write_line(line, sys.stderr)
        except Exception:  # noqa: BLE001 -- keep draining whatever a write did
            pass


def start_jvm(settings: Mapping[str, str], level: str) -> bool:
    """Start this process's Spark driver JVM with the settings ``settings`` (what the session
    will be built with), log4j's root logger at ``level`` from its first line, and its
    standard error filtered (module docstring). Returns False, starting nothing, when a JVM
    is already there (a running session, or ``spark-submit``'s ``PYSPARK_GATEWAY_PORT``).

    The log4j option is appended to ``spark.driver.extraJavaOptions`` (any given there is
    kept); a ``-Dlog4j2.configurationFile`` already there wins.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    lv = _check_level(level)
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return False
    conf = dict(settings)
    extra = conf.get(_EXTRA_JAVA_OPTIONS, "")
    if "log4j2.configurationFile" not in extra:
        option = "-Dlog4j2.configurationFile=" + shlex.quote(log4j2_properties(lv).as_uri())
        conf[_EXTRA_JAVA_OPTIONS] = (extra + " " + option).strip()
    # a session of its own: the terminal's Ctrl-C reaches this process only, not the JVM
    # nor the Python workers it forks (spark_plugin.session.interrupt)
    gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                             popen_kwargs={"stderr": subprocess.PIPE,
                                           "start_new_session": True})
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stderr is not None:
        threading.Thread(target=_forward, args=(proc.stderr, LOG_LEVELS.index(lv) >= 3),
                         name="spark-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway)
    return True
