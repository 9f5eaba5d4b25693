"""``tfront sssp``: the shortest-paths job (:mod:`spark_plugin.jobs.sssp.job`) on the command line.

Registered like ``tfront wcc`` (:mod:`spark_plugin.jobs.wcc.cli`): the entry point ``sssp`` of the
group ``tfront.commands`` names :func:`add_sssp`. Importing this module loads neither PySpark
nor the job's kernels; the command imports them when it runs, after its input was checked.
"""

from __future__ import annotations

import argparse
import sys

from engine.cli.main import positive_int, positive_seconds

from spark_plugin.jobs.command import (MASTER_FORMS, add_source_options, check_columns,
                                       check_source_options, columns_option, conf_pair,
                                       path_option, master_url, memory_size, run_job_command)

__all__ = ["add_sssp", "run_sssp_command", "source_note", "SSSP_INPUT"]

SSSP_INPUT = """\
input formats (EDGES): as tfront wcc (text, CSV, Parquet, a directory of epoch files, or a
  Spark source the executors read: a URI such as hdfs://, s3a://, file://, a Spark-written
  directory, --table); an edge leads from src to dst (--undirected: both ways). With
  --weighted every edge has a third field, a finite weight >= 0 ('src dst weight';
  Parquet: a numeric column weight). --columns SRC,DST[,WEIGHT] picks other columns (names
  or 1-based numbers; WEIGHT with --weighted). With --ids string, --source names a vertex.

output (--out): a Parquet dataset with one part per final epoch, columns epoch, vertex,
  distance (int64 hops, or double with --weighted); only vertices the source reaches.
  --out (a path, or a Hadoop URI) keeps a manifest: a rerun of the same job (input, epochs, --source,
  --weighted, --undirected) computes only the epochs not final there (a rerun after
  success does nothing); --overwrite starts over. Without --out the distances are
  computed but not saved (the total line says so).
exit status: 0 done, 2 bad option or input, 130 interrupted (Ctrl-C).
"""


def _vertex(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if not 0 <= v < (1 << 63):
        raise argparse.ArgumentTypeError(f"{text!r} is not a vertex id (a non-negative int64)")
    return v


def _source(args, parser) -> "int | str":
    """``--source`` as the job takes it: a name with ``--ids string``, else a vertex id
    (a parser error naming it otherwise)."""
    if getattr(args, "ids", "int") == "string":
        if not args.source.strip():
            parser.error("argument --source: an empty vertex name")
        return args.source.strip()
    try:
        return _vertex(args.source)
    except argparse.ArgumentTypeError as e:
        parser.error(f"argument --source: {e} (names: --ids string)")


def add_sssp(sub) -> argparse.ArgumentParser:
    """Add ``tfront sssp`` to ``sub`` (the ``tfront`` parser's subparsers)."""
    s = sub.add_parser("sssp", help="incremental single-source shortest paths on Spark "
                                    "(needs pyspark)",
                       epilog=SSSP_INPUT, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("edges", nargs="?", default=None, type=path_option,
                   help="edge file (text, CSV, Parquet), directory of epoch files, or a Spark "
                        "source: a URI (hdfs://, s3a://, file://) or a Spark-written directory")
    s.add_argument("--source", required=True, metavar="V",
                   help="the vertex distances are measured from (its name with --ids string)")
    add_source_options(s, "distances")
    s.add_argument("--epochs", type=positive_int, default=None, metavar="K",
                   help="split a single edge file (or a Spark source, in read order) into K "
                        "epochs of equal size (default 1; not for a directory of epoch files)")
    s.add_argument("--out", type=path_option, default=None,
                   help="Parquet dataset to append epoch,vertex,distance to (without it the "
                        "distances are not saved). A run on an existing OUT of the same job "
                        "resumes it: epochs already final there are skipped")
    s.add_argument("--changes", action="store_true",
                   help="with --out: write for each epoch only the vertices whose distance is "
                        "new or changed in it (epoch 0: all reached); a vertex's distance after "
                        "epoch E is its row of the latest epoch <= E")
    s.add_argument("--overwrite", action="store_true",
                   help="remove the content of an existing --out and start from epoch 0")
    s.add_argument("--weighted", action="store_true",
                   help="edges have a third field, a weight >= 0 (default: every edge weighs 1, "
                        "distances are BFS levels)")
    s.add_argument("--undirected", action="store_true", help="every edge also leads back")
    s.add_argument("--columns", type=columns_option, default=None, metavar="SRC,DST[,WEIGHT]",
                   help="the input's columns read as src, dst (and with --weighted, weight): "
                        "names (Parquet, a header row) or 1-based numbers (any format)")
    s.add_argument("--master", type=master_url, default=None, metavar="URL",
                   help=f"Spark master URL (default local[*]): {MASTER_FORMS}")
    s.add_argument("--partitions", type=positive_int, default=None, metavar="P",
                   help="Spark partitions, one task each per round on Spark (default: cores)")
    s.add_argument("--partitioner", choices=("locality", "hash"), default="locality",
                   help="how vertices are placed on partitions once the edges outgrow the "
                        "driver: locality (default; neighbours together, few rounds) or hash")
    s.add_argument("--checkpoint-dir", default=None,
                   help="checkpoint the partitions' edges reliably here, once per epoch (e.g. "
                        "an HDFS path on a cluster) instead of localCheckpoint")
    s.add_argument("--follow", type=positive_seconds, nargs="?", const=float("inf"),
                   default=None, metavar="IDLE",
                   help="consume the directory EDGES as a stream, as tfront wcc --follow does: "
                        "new files become epochs until a _DONE file exists (or IDLE seconds "
                        "pass without a new file)")
    s.add_argument("--progress-log", default=None, metavar="FILE",
                   help="record every frontier change at every operator input in FILE, one "
                        "JSON object per line; draw it with tfront progress")
    talk = s.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="print only warnings and errors (no progress bar, epoch lines or "
                           "totals)")
    talk.add_argument("-v", "--verbose", action="count", default=0,
                      help="-v: also a line per round on stderr and Spark's warnings; -vv: also "
                           "debug output and Spark's INFO log")
    s.add_argument("--driver-memory", type=memory_size, default=None, metavar="SIZE",
                   help="heap of the Spark driver JVM, e.g. 8g (default: sized from this machine)")
    s.add_argument("--conf", type=conf_pair, action="append", default=None, metavar="KEY=VALUE",
                   help="a Spark setting (repeatable)")
    s.set_defaults(run=run_sssp_command)
    return s


def source_note(edges, source: int, *, weighted: bool = False,
                undirected: bool = False, columns=None) -> str | None:
    """Why the source reaches no other vertex, read from the input's files once more (a run
    whose last epoch reached only the source): the source is in no edge of any epoch, or,
    directed, only ever an edge's destination. ``None`` when it has an outgoing edge."""
    from pathlib import Path

    import numpy as np

    from spark_plugin.sources import edge_files, read_edges, read_weighted_edges

    path = Path(edges)
    read = read_weighted_edges if weighted else read_edges
    as_src = as_dst = False
    for f in (edge_files(path) if path.is_dir() else [path]):
        t = read(f, columns)
        as_src = as_src or bool(np.any(t.column("src").to_numpy() == source))
        as_dst = as_dst or bool(np.any(t.column("dst").to_numpy() == source))
        if as_src:
            return None
    if not as_dst:
        return (f"--source {source} is not in the graph: no edge of any epoch of {edges} "
                f"has vertex {source}, so it reaches only itself")
    if undirected:
        return None
    return (f"--source {source} has no outgoing edge in {edges} (it is only a destination), "
            f"so it reaches only itself; --undirected follows edges both ways")


def run_sssp_command(args, parser: argparse.ArgumentParser) -> int:
    """Run ``tfront sssp``: check the input, then run the job as every job command does
    (:func:`~spark_plugin.jobs.command.run_job_command`: Spark settings and the line that says
    them, ``-q``/``-v``/``-vv``, one line per final epoch and a total line on stdout through
    the progress bar, a JVM out of memory as a named error, Ctrl-C exit 130 with the epochs
    already printed written). When every epoch is already final in ``--out`` this says so
    and returns 0 without starting Spark. In a process that already has an active Spark
    session (a test, a notebook) that session is used -- its settings win over ``--master``
    and ``--conf`` -- and left running. A weighted input's first rows are checked as
    ``src dst weight`` before Spark starts. When the last epoch reached no vertex but the
    source, a warning says why (:func:`source_note`: the source is in no edge, or has no
    outgoing one)."""
    if args.overwrite and args.out is None:
        parser.error("sssp --overwrite needs --out")
    columns = args.columns = check_columns(args, parser, weighted=args.weighted)
    check_source_options(args, parser, "sssp")   # a typo: before importing the Spark side
    source = _source(args, parser)
    from spark_plugin.sources import SparkEdges, spark_source

    epochs = args.epochs or 1
    edges = spark_source(args.edges, epochs=epochs, columns=columns, table=args.table,
                         fmt=args.fmt, header=args.header, epoch_column=args.epoch_column,
                         epoch_every=args.epoch_every, follow=args.follow, ids=args.ids,
                         weighted=args.weighted)
    spark_input = isinstance(edges, SparkEdges)   # read by the executors: checked there
    if not spark_input:
        from spark_plugin.sources import check_input

        # every file's first rows (with --weighted as 'src dst weight')
        for note in check_input(args.edges, args.epochs, follow=args.follow, columns=columns,
                                weighted=args.weighted):
            print(f"tfront sssp: warning: {note}", file=sys.stderr, flush=True)
    from spark_plugin.jobs.sssp.job import driver_finish_rows, run_sssp, sssp_fingerprint

    # the job's own fingerprint (a Spark source's, or the local input's, however it is read)
    fingerprint = sssp_fingerprint(edges, epochs, args.follow, source, args.weighted,
                                   args.undirected, picked=columns, changes=args.changes)

    def banner(spark) -> str:
        rows, why = driver_finish_rows(spark)
        return (f"epochs of up to {rows:,} edges in all finish on the driver ({why}); past "
                f"that one Spark job per round, vertices placed by {args.partitioner}")

    def after(res, level, warn) -> None:
        if res.epochs and res.epochs[-1].reached <= 1 and not spark_input:
            # the source reaches only itself: why, from the local files
            note = source_note(args.edges, source, weighted=args.weighted,
                               undirected=args.undirected, columns=columns)
            if note:
                warn(note)

    def run(spark, level, on_epoch):
        return run_sssp(spark, edges, source, epochs=epochs, out=args.out,
                        weighted=args.weighted, undirected=args.undirected,
                        partitions=args.partitions, progress=level, on_epoch=on_epoch,
                        follow=args.follow, checkpoint_dir=args.checkpoint_dir,
                        progress_log=args.progress_log, overwrite=args.overwrite,
                        partitioner=args.partitioner, columns=columns, changes=args.changes)

    return run_job_command(
        args, name="sssp", what="distances", run=run, banner=banner, after=after,
        memory_hint="lower TFRONT_SSSP_DRIVER_ROWS so that the driver holds fewer edges",
        fingerprint=fingerprint)
