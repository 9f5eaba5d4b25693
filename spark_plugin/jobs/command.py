"""Running an epoch job from the command line: what ``tfront wcc`` and ``tfront sssp`` share.

:func:`run_job_command` is the body of every job command (:mod:`spark_plugin.jobs.wcc.cli`,
:mod:`spark_plugin.jobs.sssp.cli`): the progress-log directory and ``--overwrite``/``--out``
checked (:func:`check_out_before_spark`: what the job would refuse about ``--out``, before
Spark starts), a rerun after success answered without Spark, the Spark settings chosen
(:func:`~spark_plugin.session.config.session_conf`) and said on stderr (``starting Spark``
first: the JVM takes seconds to start), the verbosity applied
(:func:`verbosity`: the progress bar, round lines, this package's log through the bar, Spark's
log level), an out-of-memory JVM turned into a named error, one line per final epoch and the
totals on stdout, Ctrl-C answered with one line and exit status 130
(:class:`~spark_plugin.session.interrupt.CtrlC`: the Spark jobs cancelled, no traceback, the
JVM's lines about the cancelled jobs dropped), and the session stopped if the command
started it. The job itself is a callable the command passes in. The option types
every job command shares -- :func:`master_url`, :func:`memory_size`, :func:`conf_pair` --
are here too. Importing this module loads neither PySpark nor any kernel.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from engine.errors import TimelyFrontierError

from spark_plugin.session.console import write_line

__all__ = ["run_job_command", "check_out_before_spark", "verbosity", "SPARK_LOG_LEVELS",
           "master_url", "memory_size", "conf_pair", "MASTER_FORMS", "columns_option",
           "check_columns", "path_option", "add_source_options", "check_source_options"]

log = logging.getLogger(__name__)

#: A job command's verbosity (0 ``--quiet``, 1 default, 2 ``-v``, 3 ``-vv``) -> Spark's log level.
SPARK_LOG_LEVELS = {0: "error", 1: "error", 2: "warn", 3: "info"}
#: Spark master URLs ``--master`` accepts (their form only; Spark checks the rest).
MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?"
    r"|local-cluster\[[1-9][0-9]*, *[1-9][0-9]*, *[1-9][0-9]*\]"
    r"|yarn|spark://[^\s/]+(,[^\s/]+)*|(k8s|mesos)://\S+")
MASTER_FORMS = ("local, local[N], local[*], local[N,F], local-cluster[N,C,M], "
                 "spark://HOST:PORT, yarn, k8s://URL or mesos://URL")


def verbosity(args) -> int:
    """A job command's level: 0 with ``--quiet``, else 1 plus the ``-v`` count (at most 3)."""
    if getattr(args, "quiet", False):
        return 0
    return 1 + min(int(getattr(args, "verbose", 0) or 0), 2)


def master_url(text: str) -> str:
    if not MASTER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Spark master URL; expected "
                                         f"{MASTER_FORMS}")
    return text.strip()


def memory_size(text: str) -> str:
    """``--driver-memory``: a JVM memory size such as ``512m`` or ``8g``."""
    t = text.strip().lower()
    if len(t) < 2 or t[-1] not in "kmgt" or not t[:-1].isdigit() or int(t[:-1]) == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a memory size: a whole number with a unit k, m, g or t (e.g. 8g)")
    return t


def path_option(text: str) -> str:
    """``EDGES`` and ``--out``: a path with a leading ``~`` or ``~user`` expanded as a shell
    would (``--out=~/o`` and a script's quoted ``"~/o"`` reach us unexpanded), so the command
    reads and writes the one place the user meant; a URI (``hdfs://...``) as given."""
    if "://" in text or not text.startswith("~"):
        return text
    full = os.path.expanduser(text)
    if full.startswith("~"):
        raise argparse.ArgumentTypeError(f"{text!r}: cannot expand {text.split(os.sep)[0]!r} "
                                         f"(no such user); write the full path")
    return full


def conf_pair(text: str) -> tuple[str, str]:
    """``--conf KEY=VALUE``: a Spark setting (the key must start with ``spark.``)."""
    key, eq, value = text.partition("=")
    key = key.strip()
    if not eq or not key.startswith("spark.") or len(key) <= len("spark."):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE with a Spark key (e.g. spark.executor.memory=4g)")
    return key, value.strip()


class _BarLogHandler(logging.Handler):
    """Log records on stderr, written through the progress bar (:func:`write_line`)."""

    def emit(self, record):
        try:
            write_line(self.format(record), sys.stderr)
        except Exception:  # noqa: BLE001 -- logging's own convention
            self.handleError(record)


def run_job_command(args, *, name: str, what: str, run: Callable, fingerprint=None,
                    banner: Callable | None = None, on_summary: Callable | None = None,
                    after: Callable | None = None, memory_hint: str = "") -> int:
    """Run the job command ``tfront NAME`` with the parsed ``args`` (``edges``, ``epochs``,
    ``out``, ``overwrite``, ``follow``, ``progress_log``, ``master``, ``driver_memory``,
    ``conf``, ``quiet``, ``verbose``), its input already checked by the caller.

    ``run(spark, level, on_epoch)`` runs the job and returns its
    :class:`~spark_plugin.jobs.framework.JobResult`; ``what`` names its results (``labels``,
    ``distances``: the Ctrl-C line); ``fingerprint`` its options for
    :func:`check_out_before_spark` and :func:`~spark_plugin.jobs.recovery.already_final`
    (default: WCC's). Optional hooks:
    ``banner(spark)`` the end of the settings line (after the driver memory),
    ``on_summary(summary, warn)`` after each epoch's line, ``after(result, level, warn)``
    after the total line, ``memory_hint`` added to the out-of-memory error's advice.

    Output by :func:`verbosity`: ``--quiet`` prints only warnings and errors; the default
    prints ``starting Spark (MASTER) ...`` (when it starts one) and the settings line on
    stderr, each final epoch's line and the totals on stdout and, on a terminal, a progress
    bar on stderr; ``-v`` adds a line per round and this package's
    INFO log and Spark's warnings, ``-vv`` DEBUG and Spark's INFO log. Every line goes
    through the bar (:func:`write_line`).

    Spark settings, lowest precedence first: the ``local`` preset, ``spark.ui.enabled=false``;
    what ``spark-submit`` started the JVM with; then ``--master``, ``--driver-memory`` and
    ``--conf KEY=VALUE``. A JVM started here exits when it runs out of heap
    (``-XX:+ExitOnOutOfMemoryError``) instead of hanging, and the job then stops with
    :class:`~spark_plugin.errors.SparkMemoryError`. In a process that already has an active
    Spark session (a test, a notebook) that session is used -- its settings win -- and left
    running; a session this command started is stopped.

    Ctrl-C (SIGINT, to this process or to its terminal's process group): the Spark jobs are
    cancelled, ``interrupted after K epochs; ...`` is the one line said, and the status is
    130 (:mod:`spark_plugin.session.interrupt`); a second Ctrl-C while Spark stops exits at
    once.

    Returns the exit status: 0 done (or nothing to do), 130 interrupted.

    Raises
    ------
    OutputStateError
        ``--overwrite`` without ``--out`` (the command's parser refuses it first); an
        ``--out`` the job would refuse (:func:`check_out_before_spark`).
    FileNotFoundError
        The directory of ``--progress-log`` does not exist.
    """
    follow = getattr(args, "follow", None)
    log_path = getattr(args, "progress_log", None)
    if log_path is not None and not Path(log_path).absolute().parent.is_dir():
        raise FileNotFoundError(f"--progress-log {log_path}: directory "
                                f"{str(Path(log_path).absolute().parent)!r} does not exist")
    level = verbosity(args)
    overwrite = bool(getattr(args, "overwrite", False))
    if overwrite and not args.out:
        from spark_plugin.errors import OutputStateError

        raise OutputStateError("--overwrite needs --out")
    held = None
    if args.out is not None:   # what OutputLog.open would refuse, before Spark starts
        held = check_out_before_spark(args.out, args.edges, args.epochs or 1, follow,
                                      job=fingerprint, overwrite=overwrite)
    try:   # --out held from here to the end (the job's OutputLog takes it again)
        return _run_holding(args, name=name, what=what, run=run, fingerprint=fingerprint,
                            banner=banner, on_summary=on_summary, after=after,
                            memory_hint=memory_hint, level=level, overwrite=overwrite)
    finally:
        if held is not None:
            held.release()


def _run_holding(args, *, name: str, what: str, run: Callable, fingerprint, banner,
                 on_summary, after, memory_hint: str, level: int, overwrite: bool) -> int:
    """:func:`run_job_command` once ``--out`` is checked and held."""
    import tempfile

    from spark_plugin.session.config import (DRIVER_MEMORY_SHARE, build_session, format_memory, machine_memory,
                         session_conf, submitted_conf)
    from spark_plugin.session.console import hush_jvm
    from spark_plugin.session.config import is_embedded_master
    from spark_plugin.session.interrupt import EXIT_INTERRUPTED, CtrlC
    from spark_plugin.session.lazy import LazySession, conf_of, heap_of, master_of
    from spark_plugin.session.lazy import started as started_here

    follow = getattr(args, "follow", None)
    if not overwrite:
        from spark_plugin.jobs.recovery import already_final

        final = already_final(args.out, args.edges, args.epochs or 1, follow, job=fingerprint)
        if final is not None:   # a rerun after success: no Spark session at all
            write_line(f"tfront {name}: {final}")
            return 0
    cli_conf = dict(getattr(args, "conf", None) or [])
    if args.master:
        cli_conf["spark.master"] = args.master
    driver_memory = getattr(args, "driver_memory", None)
    if driver_memory:
        cli_conf["spark.driver.memory"] = driver_memory
    running = None   # a caller's session (a test, a notebook); none before PySpark is loaded
    if "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession()
    submitted = submitted_conf()          # {} unless spark-submit started the JVM
    jvm_running = bool(submitted) or running is not None
    settings = session_conf("local", conf=cli_conf, submitted=submitted,
                            defaults={"spark.ui.enabled": "false",
                                      "spark.ui.showConsoleProgress": "false"})
    oom_marker = None
    if submitted:
        for key in ("spark.driver.memory", "spark.driver.extraJavaOptions"):
            if key in cli_conf and cli_conf[key] != submitted.get(key):
                print(f"tfront {name}: warning: {key}={cli_conf[key]} has no effect: the driver "
                      f"JVM was already started by spark-submit (pass it to spark-submit)",
                      file=sys.stderr, flush=True)
    if not jvm_running:   # this process starts the JVM: make an out-of-memory JVM exit, say so
        oom_dir = tempfile.mkdtemp(prefix=f"tfront-{name}-")
        oom_marker = Path(oom_dir) / "jvm-out-of-memory"
        settings["spark.driver.extraJavaOptions"] = " ".join(filter(None, [
            settings.get("spark.driver.extraJavaOptions", ""), "-XX:+ExitOnOutOfMemoryError",
            f"-XX:OnOutOfMemoryError='touch {oom_marker}'"]))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    done: list = []
    # below -v, the JVM is hushed the moment Ctrl-C comes: what it and its Python workers
    # say then (cancelled tasks, broken pipes) is the interrupt's doing
    ctrl_c = CtrlC(on_request=hush_jvm if level <= 1 else None)
    handler = _BarLogHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    # after Ctrl-C, a py4j call it broke or a Spark job it cancelled (logged with their
    # tracebacks) are the interrupt's doing: the interrupted line says what happened
    handler.addFilter(lambda r: not (ctrl_c.requested and _interrupt_noise(r)))
    # py4j logs a connection the JVM broke (its out-of-memory exit) with tracebacks; the
    # command names what happened itself, so they show only under -vv
    handler.addFilter(lambda r: level >= 3 or f"{os.sep}py4j{os.sep}" not in (r.pathname or ""))
    root = logging.getLogger()
    root.addHandler(handler)
    ours = [logging.getLogger(n) for n in ("engine", "gpu_kernels", "spark_plugin")]
    saved_levels = (root.level, [lg.level for lg in ours])
    root.setLevel(logging.WARNING)
    for lg in ours:
        lg.setLevel({2: logging.INFO, 3: logging.DEBUG}.get(level, logging.WARNING))

    def warn(text: str) -> None:
        write_line(f"tfront {name}: warning: {text}", sys.stderr)

    def interrupted() -> int:
        ctrl_c.handled()
        if level <= 1:   # what the JVM says now is about the jobs Ctrl-C cancelled
            hush_jvm()
        if not done:
            kept = "no epoch was finished"
        elif not args.out:
            kept = f"{what} not saved (no --out)"
        else:
            last = done[-1].epoch
            kept = f"{f'epochs 0-{last} are' if last else 'epoch 0 is'} written to {args.out}"
        write_line(f"tfront {name}: interrupted after {len(done)} epoch"
                   f"{'s' if len(done) != 1 else ''}; {kept}", sys.stderr)
        return EXIT_INTERRUPTED

    # An embedded master started by this command starts when the job first needs Spark
    # (spark_plugin.session.lazy): a job whose every epoch the driver finishes runs no JVM.
    lazy = (running is None and not submitted
            and is_embedded_master(settings.get("spark.master", "local[*]")))
    spark = None
    try:
        with ctrl_c:   # from the JVM's start to the session's stop
            try:
                def start():
                    if level >= 1 and running is None:   # the JVM takes 10-30 s to start
                        write_line(f"tfront {name}: starting Spark "
                                   f"({settings.get('spark.master', 'local[*]')}) ...",
                                   sys.stderr)
                    try:
                        return build_session("local", app_name=f"tfront-{name}", conf=settings,
                                             log_level=SPARK_LOG_LEVELS[level])
                    except Exception as err:   # noqa: BLE001 -- PySparkRuntimeError
                        if "JAVA_GATEWAY_EXITED" in str(err) or "Java gateway" in str(err):
                            from spark_plugin.errors import SparkJobError
                            raise SparkJobError(f"cannot start Spark: {_java_problem()}") \
                                from None
                        raise

                def started(session) -> None:
                    # a new SparkContext installed PySpark's handler (signals: main thread)
                    if threading.current_thread() is threading.main_thread():
                        ctrl_c.install()

                if lazy:
                    spark = LazySession(start, settings, on_start=started)
                else:
                    spark = start()
                    started(spark)
                heap = heap_of(spark)
                if level >= 1:
                    master = master_of(spark)
                    total = machine_memory()
                    source = ("--driver-memory" if driver_memory
                              else "--conf" if "spark.driver.memory" in cli_conf
                              else "spark-submit" if "spark.driver.memory" in submitted
                              else "Spark's default" if jvm_running
                              else f"{DRIVER_MEMORY_SHARE:.0%} of this machine's "
                                   f"{total / (1 << 30):.1f} GiB")
                    write_line(f"tfront {name}: Spark master {master}"
                               + (", started when an epoch needs it" if lazy else "")
                               + f"; driver memory "
                               f"{conf_of(spark, 'spark.driver.memory', '1g')} ({source}; "
                               f"heap {format_memory(heap)})"
                               + ("" if master.startswith("local[") or master == "local" else
                                  f"; executor memory "
                                  f"{conf_of(spark, 'spark.executor.memory', '1g')}")
                               + (f"; {banner(spark)}" if banner is not None else ""),
                               sys.stderr)

                def on_epoch(s) -> None:
                    done.append(s)
                    if level >= 1:
                        write_line(f"{s.line()}; input {s.source}")
                    if on_summary is not None:
                        on_summary(s, warn)

                try:
                    res = run(spark, level, on_epoch)
                except TimelyFrontierError:
                    if ctrl_c.requested:
                        return interrupted()
                    raise
                except Exception as e:   # Py4J and Spark errors: a JVM that died or ran out of memory?
                    if ctrl_c.requested:   # the jobs Ctrl-C cancelled
                        return interrupted()
                    failure = _jvm_failure(e, oom_marker, heap, memory_hint)
                    if failure is not None:
                        raise failure from e
                    raise
                if level >= 1:
                    write_line(res.total_line(args.out))
                if after is not None:
                    after(res, level, warn)
                ctrl_c.handled()   # done: a Ctrl-C while Spark stops ends the process now
            except KeyboardInterrupt:
                return interrupted()
            finally:
                if spark is not None and running is None and started_here(spark):
                    try:   # the session this command started
                        spark.stop()
                    except Exception as e:   # a dead JVM: the job's own error says what happened
                        log.debug("stopping the Spark session failed: %s", e)
                if oom_marker is not None:
                    shutil.rmtree(oom_marker.parent, ignore_errors=True)
    finally:
        if running is not None:   # a caller's session runs on: its JVM is heard again
            hush_jvm(False)
        root.removeHandler(handler)
        root.setLevel(saved_levels[0])
        for lg, lv in zip(ours, saved_levels[1]):
            lg.setLevel(lv)
    return 0


def check_out_before_spark(out, edges, epochs: int, follow, *, job: dict | None = None,
                           overwrite: bool = False):
    """What the job would refuse about a local ``--out`` once Spark runs, checked before it
    starts (a URI ``--out`` needs Hadoop's ``FileSystem``: the job checks it), and ``--out``
    held for this run: no file on its path, writable
    (:func:`~spark_plugin.jobs.recovery.check_out_path`), no other run holding it (its lock,
    taken here, creating the directory: :func:`~spark_plugin.jobs.out_store.hold_out`), and
    what :func:`~spark_plugin.jobs.recovery.check_out` checks against the job's fingerprint
    ``job`` (default WCC's, :func:`~spark_plugin.jobs.recovery.job_fingerprint`): not the
    input's directory, no files a job did not write, not another job's output (unless
    ``overwrite``).

    Returns the hold on ``--out`` (release it when the run ends), or ``None`` for a URI.
    Refused, it holds nothing and leaves ``--out`` as it was (a directory it created for
    the lock is removed).

    Raises
    ------
    OutputInUseError
        Another run holds ``--out``: the message names its pid, host and command.
    OutputStateError
        Naming ``--out`` and what is wrong (a directory that cannot be created too).
    """
    from spark_plugin.jobs.out_store import LocalStore, hold_out, is_local
    from spark_plugin.jobs.recovery import check_out, check_out_path, job_fingerprint

    if not is_local(out):
        return None
    if job is None:
        job = job_fingerprint(edges, epochs, follow)
    check_out_path(out)
    held = hold_out(out)
    try:
        check_out(LocalStore(out), job, overwrite=overwrite)
    except BaseException:
        held.release()
        raise
    return held


def _java_problem() -> str:
    """Why the JVM did not start, in one line (issue 32 item 12): the Java that Spark uses
    (``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``) missing, or its version."""
    from engine.cli.main import _java_version

    java = _java_version()
    if java.startswith(("not found", "unusable")):
        return f"java {java}"
    return (f"the Java gateway exited (java {java}); Spark needs Java 17+ -- run tfront info, "
            f"or with -vv for Spark's own output")


def _interrupt_noise(record: logging.LogRecord) -> bool:
    """Whether a log record is about what Ctrl-C broke: a py4j call (py4j logs it through
    the root logger, with its traceback) or a Spark job cancelled with all the others (e.g.
    a background warm-up's)."""
    if f"{os.sep}py4j{os.sep}" in (record.pathname or ""):
        return True
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 -- a record that cannot format is not ours to judge
        return False
    return "SPARK_JOB_CANCELLED" in text or "cancellation of all jobs" in text


def _jvm_status():
    """The exit status of the driver JVM this process started, or ``None`` while it runs
    (or when spark-submit started it)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    return None if proc is None else proc.poll()


def _jvm_failure(err: BaseException, oom_marker, heap: int, hint_more: str = ""):
    """The named error for a job that failed because a JVM ran out of memory or died
    (:class:`SparkMemoryError`, :class:`SparkJobError`), or ``None`` for any other failure."""
    from spark_plugin.session.config import format_memory
    from spark_plugin.errors import SparkJobError, SparkMemoryError

    deadline = time.monotonic() + 3   # a JVM that is exiting takes a moment to be reaped
    while (_jvm_status() is None and "OutOfMemoryError" not in str(err)
           and (oom_marker is None or not oom_marker.exists()) and time.monotonic() < deadline):
        time.sleep(0.1)
    status = _jvm_status()
    hint = (f"rerun with a larger --driver-memory (this run's heap: {format_memory(heap)})"
            + (f", or {hint_more}" if hint_more else ""))
    if oom_marker is not None and oom_marker.exists():
        return SparkMemoryError(f"the Spark driver JVM ran out of memory and exited "
                                f"(status {status}): {hint}", status)
    if "OutOfMemoryError" in str(err):
        return SparkMemoryError(f"a Spark JVM ran out of memory ({_first_line(err)}): {hint}; "
                                f"on a cluster, raise --conf spark.executor.memory", status)
    if status is not None:
        return SparkJobError(f"the Spark driver JVM exited with status {status} during the job "
                             f"({_first_line(err)})", status)
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def columns_option(text: str):
    """``--columns SRC,DST[,WEIGHT]``: two or three names or 1-based numbers (how many a
    command takes is its run's check: :func:`check_columns`)."""
    from spark_plugin.sources import ColumnsError, EdgeColumns

    try:
        return EdgeColumns.parse(text, weighted=None)
    except ColumnsError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--columns {text!r}: ")) from None


def check_columns(args, parser=None, *, weighted: bool = False):
    """``args.columns`` with as many picks as the command reads (two; three with
    ``--weighted``).

    Raises
    ------
    spark_plugin.errors.ColumnsError
        Naming the value and the option that would take it (``tfront CMD: error: ...``,
        exit 2)."""
    from spark_plugin.sources import EdgeColumns

    return EdgeColumns.parse(getattr(args, "columns", None), weighted=weighted)


def add_source_options(p: argparse.ArgumentParser, result: str) -> None:
    """The options of a Spark source that ``tfront wcc`` and ``tfront sssp`` share: ``--table``,
    ``--format``, ``--header``, ``--ids``, ``--epoch-column``, ``--epoch-every``
    (:mod:`spark_plugin.sources`); ``result`` names what is written back (``labels``)."""
    p.add_argument("--table", default=None, metavar="NAME",
                   help="read the edges from this table (spark.table, e.g. db.edges) instead "
                        "of EDGES")
    p.add_argument("--format", dest="fmt", choices=["parquet", "orc", "csv", "text"],
                   default=None, help="a Spark source's format (default: from its file names)")
    p.add_argument("--header", choices=["auto", "yes", "no"], default="auto",
                   help="whether a CSV or text Spark source's first line is a header (auto: when "
                        "its first two fields are not integers, or are the positions 0,1)")
    p.add_argument("--ids", choices=["int", "string"], default="int",
                   help="a Spark source's vertex ids: int (non-negative integers; default) or "
                        "string (names, URLs: numbered by a dictionary built on the executors, "
                        f"{result} written back as names)")
    p.add_argument("--epoch-column", default=None, metavar="COL",
                   help="one epoch per distinct value of COL (integer, date or timestamp; a "
                        "partition column too), in order; reads EDGES as a Spark source")
    p.add_argument("--epoch-every", default=None, metavar="W",
                   help="with --epoch-column: one epoch per window of width W that holds rows "
                        "(an integer column: e.g. 1000; a date or timestamp: 30m, 1h, 1d)")


def check_source_options(args, parser, job: str) -> None:
    """What ``tfront JOB``'s parser refuses about the input before anything runs: ``--changes``
    without ``--out``, neither or both of EDGES and ``--table``, ``--epoch-every`` without
    ``--epoch-column``; and a local EDGES that does not exist (a typo: before PySpark is
    imported).

    Raises
    ------
    FileNotFoundError
        A local EDGES that does not exist.
    """
    from spark_plugin.sources.dataset import is_uri

    if getattr(args, "changes", False) and args.out is None:
        parser.error(f"{job} --changes needs --out (it says what to write there)")
    table = getattr(args, "table", None)
    if (args.edges is None) == (table is None):
        parser.error(f"{job} needs EDGES or --table NAME" if table is None
                     else f"{job} takes EDGES or --table NAME, not both")
    if getattr(args, "epoch_every", None) is not None and getattr(args, "epoch_column",
                                                                  None) is None:
        parser.error(f"{job} --epoch-every needs --epoch-column")
    if table is None and not is_uri(args.edges) and not os.path.exists(args.edges):
        raise FileNotFoundError(f"edge input {args.edges!r} does not exist")
