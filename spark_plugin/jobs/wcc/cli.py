"""``tfront wcc``: the WCC job (:mod:`spark_plugin.jobs.wcc.job`) on the command line.

:mod:`engine.cli.main` does not import this package: it finds the Spark commands through the entry
point group ``tfront.commands`` (``pyproject.toml``), one entry point per command, named
after it, whose object ``add(subparsers)`` adds the command's parser and sets its
``run(args, parser) -> int`` default (:func:`engine.cli.main.plugin_commands`). Importing this
module loads pyarrow (the package's schemas) but not PySpark: a command imports PySpark only
when it runs, after its input has been checked.

The option types every Spark command shares (``--master``, ``--driver-memory``, ``--conf``)
are :mod:`spark_plugin.jobs.command`'s.
"""

from __future__ import annotations

import argparse
import sys

from engine import Backend
from engine.cli.main import positive_int, positive_seconds

from spark_plugin.jobs.command import (MASTER_FORMS, add_source_options, check_columns,
                                       check_source_options, columns_option, conf_pair,
                                       path_option,
                                       master_url, memory_size, run_job_command)

__all__ = ["add_wcc", "run_wcc_command", "loop_checkpoint", "WCC_INPUT"]

WCC_INPUT = """\
input formats (EDGES):
  text (any other name; .gz decompressed): one edge 'src dst' per line, separated by white
    space or a comma; '#' starts a comment; blank lines are skipped.
  CSV (*.csv, *.csv.gz): fields separated by ',', ';' or a tab, optionally double-quoted;
    the first row is a header unless its first two fields are integers (then columns
    src,dst are used, else the first two); otherwise it is the first edge -- except the
    column positions 0,1 (pandas' default header): a header, said on stderr
    (--header no reads it as an edge, through Spark).
  Parquet (*.parquet, *.pq): integer columns src and dst.
  A text file (.txt, .tsv, ...) may start with a header row (no field an integer), as a
    CSV may; rows with more than two fields: the first two are src, dst (said once).
  --columns SRC,DST: other columns, by name (Parquet, a header row) or 1-based number
    (any format), e.g. --columns from,to or --columns 1,3.
  a directory: one epoch per file, in natural order of the names (e2 before e10; hidden
    and '_' files skipped); each epoch's line names its file.

Spark sources, read by the executors (the driver reads no edge):
  a Hadoop URI (hdfs://, s3a://, gs://, file://) of Parquet, ORC, CSV or text files, or a
    local directory as Spark writes it (part-* files, _SUCCESS, key=value/ folders): one
    dataset (--format if its file names do not tell); --table db.edges: a table.
  Epochs: --epochs K equal slices in read order (files by name, rows in order), or
    --epoch-column COL (one epoch per value of an integer, date or timestamp column, a
    partition column too), with --epoch-every W for windows (1000; 1h, 1d).
  Vertex ids are non-negative int64. Bad input stops with the file and line named (exit
  2) before Spark starts where the first rows show it; an input without edges is refused.

Without --out the labels are computed but not saved (the total line says so).
exit status: 0 done, 2 bad option or input, 130 interrupted (Ctrl-C), 141 stdout closed.
"""


def loop_checkpoint(text: str) -> "float | None":
    """``--loop-checkpoint``: seconds ``>= 0``, or ``off`` (``None``)."""
    t = text.strip().lower()
    if t == "off":
        return None
    try:
        seconds = float(t)
    except ValueError:
        seconds = -1.0
    if not (0 <= seconds < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0 or 'off'")
    return seconds


def add_wcc(sub) -> argparse.ArgumentParser:
    """Add ``tfront wcc`` to ``sub`` (the ``tfront`` parser's subparsers; the entry point
    ``wcc`` of the group ``tfront.commands``)."""
    w = sub.add_parser("wcc", help="incremental weakly connected components on Spark (needs pyspark)",
                       epilog=WCC_INPUT, formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("edges", nargs="?", default=None, type=path_option,
                   help="edge file (text, CSV, Parquet; see below), directory of epoch files, "
                        "or a Spark source: a URI (hdfs://, s3a://, file://) or a Spark-written "
                        "directory")
    add_source_options(w, "labels")
    w.add_argument("--epochs", type=positive_int, default=None, metavar="K",
                   help="split a single edge file (or a Spark source, in read order) into K epochs "
                        "of equal size (default 1; not for a directory of epoch files)")
    w.add_argument("--columns", type=columns_option, default=None, metavar="SRC,DST",
                   help="the input's columns read as src and dst: names (Parquet, a header "
                        "row) or 1-based numbers (any format), e.g. from,to or 1,3")
    w.add_argument("--out", type=path_option, default=None,
                   help="Parquet dataset to append epoch,vertex,component to (without it the "
                        "labels are not saved). A run on an existing OUT of the same job "
                        "resumes it: epochs already final there are skipped (docs/wcc.md)")
    w.add_argument("--changes", action="store_true",
                   help="with --out: write for each epoch only the vertices whose component is "
                        "new or changed in it (epoch 0: all); a vertex's label after epoch E is "
                        "its row of the latest epoch <= E")
    w.add_argument("--overwrite", action="store_true",
                   help="remove the content of an existing --out and start from epoch 0")
    w.add_argument("--master", type=master_url, default=None, metavar="URL",
                   help=f"Spark master URL (default local[*]): {MASTER_FORMS}")
    w.add_argument("--partitions", type=positive_int, default=None, metavar="P",
                   help="Spark partitions per round (default: cores)")
    w.add_argument("--partitioner", choices=["locality", "hash"], default="locality",
                   help="how the contract stage of an epoch run on Spark partitions its edges: "
                        "locality = ranges of the vertex ids or of their first appearance in "
                        "the input, whichever cuts fewer edges (the epoch line says 'cut X%%'); "
                        "for a Spark source, ranges of the ids cut at a sample's quantiles "
                        "where they cut few edges, else the rows stay where the executors "
                        "read them (no shuffle); hash = by least(src, dst). Default locality")
    w.add_argument("--backend", choices=[b.value for b in (Backend.AUTO, Backend.CPU, Backend.CUDA)],
                   default=None,
                   help="where the WCC kernels run, decided per task: cuda = each task's GPU where "
                        "usable, else the CPU (reason logged and printed); auto = the same for large "
                        "inputs; cpu = Numba kernels only. Also the driver's frontier-service backend "
                        "(cpu when the driver has no GPU). Default: $TFRONT_BACKEND or auto")
    w.add_argument("--loop-checkpoint", type=loop_checkpoint, default=60.0, metavar="SECONDS",
                   help="with --out: write the Spark loop's state into OUT after a round when "
                        "SECONDS have passed since the epoch's last such checkpoint, so that a "
                        "killed epoch resumes from there (default 60; 0 = every round; off = never)")
    w.add_argument("--checkpoint-dir", default=None,
                   help="checkpoint the Spark loop's stages reliably here (e.g. an HDFS path on a "
                        "cluster) instead of localCheckpoint")
    talk = w.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="print only warnings and errors (no progress bar, epoch lines or totals)")
    talk.add_argument("-v", "--verbose", action="count", default=0,
                      help="-v: also a line per round, which task ran which kernels, and Spark's "
                           "warnings; -vv: also debug output and Spark's INFO log")
    w.add_argument("--follow", type=positive_seconds, nargs="?", const=float("inf"), default=None,
                   metavar="IDLE",
                   help="consume the directory EDGES as a stream: new files become epochs as they "
                        "appear, until a _DONE file exists (or IDLE seconds pass without a new file). "
                        "A file is taken once its size is unchanged over one 0.5 s poll (Parquet: "
                        "once it has its footer); a taken file that changes stops the job. Write "
                        "each file under a hidden or _ name and rename it when complete. Ctrl-C "
                        "stops (exit 130)")
    w.add_argument("--progress-log", default=None, metavar="FILE",
                   help="record every frontier change at every operator input (time, epoch, "
                        "iteration, Spark job) and the messages in flight in FILE, one JSON "
                        "object per line, flushed as the job runs; draw it with tfront progress")
    w.add_argument("--driver-memory", type=memory_size, default=None, metavar="SIZE",
                   help="heap of the Spark driver JVM, e.g. 8g (default: 35%% of this machine's "
                        "memory, at least 1g; embedded Spark runs its tasks there too). Under "
                        "spark-submit, pass spark-submit --driver-memory instead")
    w.add_argument("--conf", type=conf_pair, action="append", default=None, metavar="KEY=VALUE",
                   help="a Spark setting (repeatable), e.g. --conf spark.executor.memory=4g; wins "
                        "over the defaults and over spark-submit's settings")

    w.set_defaults(run=run_wcc_command)
    return w


def run_wcc_command(args, parser: argparse.ArgumentParser) -> int:
    """Run ``tfront wcc`` with the parsed ``args``; ``parser`` is ``tfront``'s (for option
    errors, exit status 2). A missing input is refused before PySpark is imported."""
    if args.overwrite and args.out is None:
        parser.error("wcc --overwrite needs --out")
    args.columns = check_columns(args, parser)
    check_source_options(args, parser, "wcc")   # a typo: before importing the Spark side
    return main_wcc(args)


def main_wcc(args) -> int:
    """The ``tfront wcc`` command, after :func:`run_wcc_command`'s checks (and
    :mod:`engine.cli.main`'s of the options' forms); the Spark side is imported on this path
    only. The input is validated -- existence, readability, ``--epochs`` / ``--follow``
    against it, the first rows of every file -- before a Spark session starts. Each epoch's
    line names the input that became the epoch; an epoch without edges is said on stderr,
    a run without ``--out`` in the total line (labels not saved). Ctrl-C stops the job
    cleanly (exit 130; the epochs already printed are written). An existing local ``--out``
    of the same job is resumed (docs/wcc.md, "Crash recovery"); when every epoch is already
    final there, this says so and returns 0 without starting Spark; ``--overwrite`` starts
    over.

    The rest is every job command's (:func:`~spark_plugin.jobs.command.run_job_command`):
    verbosity (``-q``; ``-v`` a line per round, which task ran which kernels and Spark's
    warnings; ``-vv`` debug output and Spark's INFO log), the Spark settings and the line on
    stderr that says them (here with how many rows an epoch may have to finish on the
    driver), a JVM out of memory as :class:`~spark_plugin.errors.SparkMemoryError`, Ctrl-C,
    stopping the session it started. WCC adds the kernels line after the totals and a
    warning for an epoch without edges.
    """
    from spark_plugin.sources import check_input
    from spark_plugin.jobs.wcc.job import (DEFAULT_LOOP_CHECKPOINT, EpochSummary, WccResult,
                                           driver_finish_rows, run_wcc)
    from spark_plugin.session.console import write_line

    from spark_plugin.jobs.recovery import job_fingerprint, spark_fingerprint
    from spark_plugin.jobs.wcc.job import spark_source
    from spark_plugin.sources import SparkEdges

    follow = getattr(args, "follow", None)
    columns = getattr(args, "columns", None)
    edges = spark_source(args.edges, epochs=args.epochs or 1, columns=columns,
                         table=getattr(args, "table", None), fmt=getattr(args, "fmt", None),
                         header=getattr(args, "header", "auto"),
                         epoch_column=getattr(args, "epoch_column", None),
                         epoch_every=getattr(args, "epoch_every", None), follow=follow,
                         ids=getattr(args, "ids", "int"))
    if isinstance(edges, SparkEdges):   # read by the executors: checked once Spark runs
        fingerprint = spark_fingerprint(edges, None, columns)
    else:
        for note in check_input(args.edges, args.epochs, follow=follow, columns=columns):
            print(f"tfront wcc: warning: {note}", file=sys.stderr, flush=True)
        fingerprint = job_fingerprint(args.edges, args.epochs or 1, follow, picked=columns)
    if getattr(args, "changes", False):
        fingerprint["changes"] = True

    def banner(spark) -> str:
        rows, why = driver_finish_rows(spark)
        return f"epochs of up to {rows:,} rows finish on the driver ({why})"

    def empty_epoch(s: EpochSummary, warn) -> None:
        if s.new_edges == 0:
            warn(f"epoch {s.epoch}: {s.source} has no edges; its labels are those of "
                 f"epoch {s.epoch - 1}" if s.epoch else f"epoch 0: {s.source} has no edges")

    def after(res: WccResult, level: int, warn) -> None:
        if level >= 1:
            write_line(res.kernels_line())
        if not res.epochs and not res.resumed_at:
            warn(f"no epoch file arrived in {args.edges}")

    def run(spark, level, on_epoch) -> WccResult:
        return run_wcc(spark, edges, epochs=args.epochs or 1, out=args.out,
                       partitions=args.partitions, backend=args.backend, progress=level,
                       on_epoch=on_epoch, follow=follow,
                       checkpoint_dir=getattr(args, "checkpoint_dir", None),
                       progress_log=getattr(args, "progress_log", None),
                       overwrite=bool(getattr(args, "overwrite", False)),
                       loop_checkpoint=getattr(args, "loop_checkpoint", DEFAULT_LOOP_CHECKPOINT),
                       partitioner=getattr(args, "partitioner", "locality"),
                       columns=columns, changes=bool(getattr(args, "changes", False)))

    return run_job_command(args, name="wcc", what="labels", run=run, banner=banner,
                           on_summary=empty_epoch, after=after,
                           fingerprint=fingerprint,
                           memory_hint="lower TFRONT_WCC_DRIVER_ROWS so that fewer rows are "
                                       "collected on the driver")
