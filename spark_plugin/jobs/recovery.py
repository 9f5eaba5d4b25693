"""Crash recovery of the epoch jobs: what their operators have made final, kept durably in
``--out``, and the rollback (:mod:`engine.rollback.problem`) a job resumes from.

The WCC job (:func:`spark_plugin.jobs.wcc.job.run_wcc`) has three operators whose work survives a crash:

* the **input** records which source became which epoch (the file, or rows of a file, with its
  size, modification time and inode) when the epoch starts;
* the **loop** records the epochs whose converged state (the stars: component, vertex) is
  durable. The state after epoch ``e`` is exactly what epoch ``e``'s labels say (every vertex
  whose component is not itself is a leaf of its component's star), so it is read back from
  the labels in ``--out``: the output's records make the loop's state available too. Inside
  the epoch in flight, the Spark loop also writes *loop checkpoints* (its edges after the
  small-star stage of an iteration, under ``OUT/_tfront_loop/``; :meth:`OutputLog.record_loop`),
  one record at a time;
* the **output** records the epochs whose labels are in ``--out`` and the data files of each.

All three live in one manifest, ``OUT/_tfront_manifest.json`` (readers of the dataset --
pyarrow, Spark -- skip ``_``-prefixed names), rewritten atomically: a temporary file, fsync,
rename over the old one, fsync of the directory. An epoch's data files are written under
hidden names, fsynced and renamed into place *before* the manifest names them, so a crash
leaves at worst files the manifest does not name; they are removed on the next start.

On a start with an existing manifest, :func:`recovery_problem` turns the records into a
rollback problem (processors input -> loop -> output, times ``(epoch, iteration)``) and
:func:`engine.rollback.problem.solve` chooses the frontiers to keep: the output keeps exactly the
epochs it made final (condition C2), the loop the same (C3) plus, where a loop checkpoint
allows it, the epoch in flight up to the checkpoint's iteration; the input its records. The
job then starts at the first epoch the output has not made final (after the kept
checkpoint's iteration, if any), with the loop's state rebuilt from the last final epoch's
labels, re-reading no input of a kept epoch. ``docs/wcc.md``
("Crash recovery") states the rules.

Every :class:`~spark_plugin.jobs.framework.EpochJob` keeps its local ``out`` this way: its result
columns are read back (:class:`OutputLog` ``columns``), its fingerprint names what makes two
runs the same job, and a job whose loop state is more than its last result (the
shortest-paths job's edges) rebuilds it from the input of the kept epochs, which the input
keeps (``EpochJob.replay``); the crash hook below stops any of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.rollback.problem import Avail, EdgeDecl, RollbackProblem, in_down, solve

import contextlib
import errno

from spark_plugin.errors import OutputStateError, OutputWriteError
from spark_plugin.jobs.out_store import (LOCK, MANIFEST, OutStore, _file_digest, is_local,
                                         local_out, open_store)
from spark_plugin.sources import FileStamp, edge_files

__all__ = ["MANIFEST", "FORMAT", "CRASH_ENV", "LOOP_DIR", "job_fingerprint", "table_digest",
           "dataframe_digest", "OutputLog",
           "recovery_problem", "kept_epochs", "loop_records", "crash_point", "already_final",
           "check_out", "check_out_path", "is_own_name", "OWN_NAMES", "job_name"]

FORMAT = "tfront-wcc-manifest v1"
#: Testing hook: ``epoch:E:POINT`` kills the job (``SIGKILL``) at ``POINT`` of epoch ``E``,
#: one of ``after-input`` (input recorded), ``after-data`` (labels renamed into place, not yet
#: in the manifest), ``after-manifest`` (the epoch is final).
CRASH_ENV = "TFRONT_WCC_CRASH_AT"
CRASH_POINTS = ("after-input", "after-data", "after-manifest")
#: Mid-epoch points of ``$TFRONT_WCC_CRASH_AT``, as ``epoch:E:iteration:I:POINT``: after the
#: loop checkpoint of iteration ``I`` was renamed into place (not yet in the manifest), and
#: after the manifest recorded it.
LOOP_CRASH_POINTS = ("after-loop-data", "after-loop")
#: The directory inside ``--out`` that holds the loop checkpoints (one subdirectory each).
LOOP_DIR = "_tfront_loop"

#: The processors of the recovery problem.
INPUT, LOOP, OUTPUT = 0, 1, 2


def crash_point(point: str, epoch: int) -> None:
    """Kill this process with ``SIGKILL`` if ``$TFRONT_WCC_CRASH_AT`` names this point."""
    want = os.environ.get(CRASH_ENV)
    if want and want == f"epoch:{epoch}:{point}":
        os.kill(os.getpid(), signal.SIGKILL)


def job_fingerprint(edges, epochs: int, follow, *, columns=("src", "dst"),
                    dataframe: dict | None = None, picked=None) -> dict:
    """What makes two runs the same job: the input and how it is split into epochs.

    A file or directory: its absolute path (a single file's stamp: size, modification time,
    inode). An Arrow table: its rows and :func:`table_digest` of its ``columns`` (a SHA-256
    of the column buffers: same content, same order). A Spark DataFrame (collected to the
    driver at the start): ``dataframe``, its :func:`dataframe_digest` (an order-independent
    digest Spark computes in one pass over it). Partitions, backend and ``follow`` (a
    directory's files become the same epochs either way; each kept epoch's file is checked
    on resume) do not change the labels and are not part of it. ``picked``: the
    :class:`~spark_plugin.sources.columns.EdgeColumns` the input was read with (``--columns``),
    recorded as ``"columns"`` when given: other columns are another job."""
    if dataframe is not None:
        job = {"input": "edge DataFrame", "rows": int(dataframe["rows"]),
               "content": dataframe["content"], "epochs": int(epochs)}
    elif isinstance(edges, pa.Table):
        job = {"input": "edge table", "rows": edges.num_rows,
               "content": table_digest(edges, columns), "epochs": int(epochs)}
    else:
        path = Path(edges).absolute()
        job = {"input": str(path), "kind": "directory" if path.is_dir() else "file",
               "epochs": int(epochs)}
        if path.is_file():
            st = FileStamp.of(path)
            job["stamp"] = [st.size, st.mtime_ns, st.ino]
    if picked is not None:
        job["columns"] = list(picked.picks)
    return job


def spark_fingerprint(source, dataframe: dict | None = None, picked=None) -> dict:
    """:func:`job_fingerprint` of a Spark source (:class:`~spark_plugin.sources.SparkEdges`):
    its location (URI, table), format, header rule and epoch plan, needing no Spark; a
    DataFrame's ``dataframe`` digest (:func:`dataframe_digest`). Whether its files changed
    is each epoch's input record (the listing's digest)."""
    job = source.fingerprint()
    if dataframe is not None:
        job["rows"], job["content"] = int(dataframe["rows"]), dataframe["content"]
    if picked is not None:
        job["columns"] = list(picked.picks)
    return job


def table_digest(table: pa.Table, columns=("src", "dst")) -> str:
    """``sha256:<hex>`` of ``columns`` of ``table`` (``src``, ``dst`` as int64, ``weight`` as
    its own type), column after column: the bytes of each chunk's values through a NumPy
    view, not row by row. Same rows in the same order, same digest (however chunked)."""
    h = hashlib.sha256()
    for name in columns:
        col = table.column(name)
        if name in ("src", "dst") and col.type != pa.int64():
            col = col.cast(pa.int64())
        h.update(f"{name}:{col.type}:{len(col)}:{col.null_count};".encode())
        for chunk in col.chunks:
            h.update(np.ascontiguousarray(chunk.to_numpy(zero_copy_only=False)).data)
    return "sha256:" + h.hexdigest()


def dataframe_digest(df, columns=("src", "dst")) -> dict:
    """An order-independent digest of ``columns`` of the Spark DataFrame ``df``, computed by
    Spark in one aggregation (one pass over the input): the row count and the sums (as
    ``decimal(38,0)``: no overflow) of two independent 64-bit hashes of each row,
    ``xxhash64(cols)`` and ``xxhash64('tfront', cols)``, with ``src``, ``dst`` as bigint (an
    int column and a bigint one of the same values digest alike). Returns ``{"rows": n,
    "content": "xxhash64-sums:<a>:<b>"}``."""
    from pyspark.sql import functions as F

    cols = [F.col(c).cast("bigint") if c in ("src", "dst") else F.col(c) for c in columns]
    row = df.select(*cols).agg(
        F.count(F.lit(1)).alias("n"),
        F.sum(F.xxhash64(*cols).cast("decimal(38,0)")).alias("a"),
        F.sum(F.xxhash64(F.lit("tfront"), *cols).cast("decimal(38,0)")).alias("b")).first()
    return {"rows": int(row["n"]),
            "content": f"xxhash64-sums:{int(row['a'] or 0)}:{int(row['b'] or 0)}"}


def _stamp_of(source) -> list | str | None:
    """The recorded stamp of an epoch's input: a file's (a directory's epoch) size,
    modification time and inode; rows held in memory (a slice of an Arrow table or a
    collected DataFrame) :func:`table_digest` of them -- a DataFrame's fingerprint does not
    see the order of its rows, which decides the epochs' slices; else ``None``."""
    stamp = getattr(source, "stamp", None)
    if stamp is not None:   # a Spark source: its files' listing, or a DataFrame slice's digest
        return stamp() if callable(stamp) else stamp
    if getattr(source, "in_memory", False):
        t = source.read()
        return table_digest(t, [c for c in ("src", "dst", "weight") if c in t.column_names])
    p = Path(source.what)
    if p.is_file():
        st = FileStamp.of(p)
        return [st.size, st.mtime_ns, st.ino]
    return None


def loop_records(manifest: dict) -> list[dict]:
    """The manifest's loop checkpoints: the ``loop`` entries that are records ``{"epoch": E,
    "iteration": I, "dir": ..., "files": [...], ...}`` (the loop's state after iteration
    ``I`` of epoch ``E``), not plain epochs (a final epoch's state, in its labels)."""
    return [r for r in manifest.get("loop", []) if isinstance(r, dict)]


def _loop_epochs(manifest: dict) -> list[int]:
    return [r for r in manifest.get("loop", []) if not isinstance(r, dict)]


def recovery_problem(manifest: dict) -> RollbackProblem:
    """The rollback problem of a manifest's records, in two-dimensional times ``(epoch,
    iteration)``.

    Processors: input (0), loop (1), output (2, a buffer whose output edge leaves the job).
    Edges: outside -> input, input -> loop, loop -> output, output -> outside. The input's
    messages of epoch ``e`` are at ``(e, 0)``, determined by its history up to ``(e, 0)``
    (the identity ``phi``); the loop's labels of epoch ``e`` are determined only by the
    whole epoch, ``need((e, i)) = down{(e, NI-1)}``, ``NI - 1`` being past every recorded
    iteration. ``consumed``: the input and the loop consumed every recorded input epoch
    (the one in flight too), the output every epoch it made final. Available frontiers:

    * input: the chain ``down{(k, NI-1)}`` up to its last record ("epochs <= k");
    * output: the chain up to its last final epoch;
    * loop: the chain up to its last durable epoch -- its own records or the output's final
      labels, which rebuild it -- and, for each loop checkpoint ``(E, I)`` (the state after
      iteration ``I`` of epoch ``E``) of the epoch right after the output's last final one,
      the frontier ``down{(E-1, NI-1), (E, I)}``: epochs before ``E`` complete, plus epoch
      ``E`` up to iteration ``I``. A checkpoint of epoch ``E`` means the loop consumed the
      input's epoch ``E`` (C3 then keeps it only if the input keeps its record of ``E``).
    """
    inputs = _chain(r["epoch"] for r in manifest.get("input", []))
    outputs = _chain(r["epoch"] for r in manifest.get("output", []))
    loop = max(_chain(_loop_epochs(manifest)), outputs)
    # a checkpoint is of the epoch after the last final one (the job writes none elsewhere):
    # the loop's state does not hold the labels of the epochs before it, which an output
    # that has not made them final would need again
    checkpoints = [(int(r["epoch"]), int(r["iteration"])) for r in loop_records(manifest)
                   if int(r["epoch"]) == outputs + 1]
    ne = max([inputs, outputs, loop] + [e for e, _ in checkpoints]) + 2
    ni = max([i for _, i in checkpoints], default=-1) + 2
    edges = [EdgeDecl("in", None, INPUT), EdgeDecl("edge", INPUT, LOOP),
             EdgeDecl("edge", LOOP, OUTPUT), EdgeDecl("out", OUTPUT, None)]
    top = ni - 1
    need = {2: {(e, i): ((e, top),) for e in range(ne) for i in range(ni)}}
    consumed = {0: {(e, 0) for e in range(inputs + 1)},
                1: {(e, 0) for e in range(inputs + 1)} | {(e, 0) for e, _ in checkpoints},
                2: {(e, 0) for e in range(outputs + 1)}}
    explicit = {tuple(x for x in (((e - 1, top),) if e else ()) + ((e, i),))
                for e, i in checkpoints}
    problem = RollbackProblem(
        ne=ne, ni=ni, buffer=[False, False, True], edges=edges, need_over=need,
        avail=[Avail(every=False, epochs=inputs),
               Avail(every=False, epochs=loop, explicit=explicit),
               Avail(every=False, epochs=outputs)],
        consumed=consumed)
    problem.check()
    return problem


def _chain(epochs) -> int:
    """The last epoch ``k`` such that ``0..k`` are all recorded (``-1``: not even epoch 0)."""
    have = set(epochs)
    k = -1
    while k + 1 in have:
        k += 1
    return k


def kept_epochs(manifest: dict) -> dict:
    """Solve the manifest's recovery problem: ``{"input": n, "loop": n, "output": n}``, the
    number of epochs each operator keeps whole (epochs ``0..n-1``), and ``"iteration"``: the
    last iteration the loop keeps of epoch ``loop`` (the epoch in flight), from a loop
    checkpoint, or ``None`` when it keeps none of it.

    Raises
    ------
    OutputStateError
        The records admit no single largest consistent rollback.
    """
    problem = recovery_problem(manifest)
    answer = solve(problem)
    if answer.result != "ok":
        raise OutputStateError(f"the records of {MANIFEST} admit no consistent rollback "
                               f"(solver: {answer.result})")
    top = problem.ni - 1
    kept = {}
    for name, p in (("input", INPUT), ("loop", LOOP), ("output", OUTPUT)):
        kept[name] = sum(1 for e in range(problem.ne) if in_down((e, top), answer.choice[p]))
    partial = [i for e, i in answer.choice[LOOP] if e == kept["loop"] and i < top]
    kept["iteration"] = max(partial) if partial else None
    return kept


#: The exact names a resumable job gives what it writes at the top of ``--out``, besides the
#: data files its manifest names: its manifest (``_tfront_manifest.json``, on Hadoop the
#: versions ``_tfront_manifest.<n>.json``), the loop checkpoints (:data:`LOOP_DIR`), the lock
#: (:data:`~spark_plugin.jobs.out_store.LOCK`), an epoch's part files
#: (``part-epoch-E-K-ID.parquet``: renamed in before the manifest names them), its hidden
#: temporary files and folders (``.part-epoch-E-K-ID.parquet.tmp``, ``.epoch-E.tmp``,
#: ``._tfront_manifest.json.ID.tmp``) and the checksum files Hadoop's local file system keeps
#: beside each (``.NAME.crc``). Nothing else -- a user's ``_tfront_notes`` is not the job's.
_OWN = (r"_tfront_manifest\.json|_tfront_manifest\.\d+\.json|_tfront_loop|_tfront_lock"
        r"|part-epoch-\d+-\d+-[0-9a-f]{12}\.parquet|\.part-epoch-\d+-\d+-[0-9a-f]{12}\.parquet\.tmp"
        r"|\.epoch-\d+\.tmp|\._tfront_manifest\.json\.[0-9a-f]{8}\.tmp")
OWN_NAMES = re.compile(rf"(?:{_OWN})|\.(?:{_OWN})\.crc")


def is_own_name(name: str) -> bool:
    """Whether ``name``, at the top of ``--out``, is of the kind a resumable job writes
    (:data:`OWN_NAMES`).

    >>> [is_own_name(n) for n in ("_tfront_loop", ".epoch-000002.tmp", "in.txt", "_tfront_x")]
    [True, True, False, False]
    """
    return bool(OWN_NAMES.fullmatch(name))


def job_name(job: dict) -> str:
    """The command of a fingerprint: ``sssp`` names itself, WCC's has no ``job`` field."""
    return str(job.get("job") or "wcc")


def _few(names, k: int = 5) -> str:
    names = list(names)
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")


def check_out(store: OutStore, job: dict, *, overwrite: bool = False) -> dict | None:
    """Check, changing nothing, that ``store`` can be the ``--out`` of the job ``job`` (its
    fingerprint): returns its manifest to resume, or ``None`` when the job starts at epoch 0
    there (nothing there yet, or ``overwrite`` of what a job wrote).

    Refused: an ``out`` that is not a directory; one that is, or contains, the job's input
    (a file or directory fingerprint's path); a directory with files but no manifest (with
    ``overwrite`` too: it removes only what a job wrote); a directory holding files that
    neither its manifest names nor have a job's names (:func:`is_own_name`); without
    ``overwrite``, a manifest of another format or of another job (the differing settings
    named).

    Raises
    ------
    OutputStateError
        Naming ``--out`` and what is wrong.
    """
    d = store.url
    if store.exists() and not store.is_dir():
        raise OutputStateError(f"--out {d}: exists and is not a directory")
    here = store.local_path()
    if here is not None and (job.get("kind") in ("file", "directory") or (
            job.get("kind") == "dataset" and Path(job["input"]).is_absolute())):
        inp = Path(job["input"]).resolve()
        if inp == here.resolve() or here.resolve() in inp.parents:
            what = "is" if inp == here.resolve() else "contains"
            raise OutputStateError(f"--out {d} {what} the job's input {job['input']}: the "
                                   f"output needs a directory of its own; choose another --out")
    names = [n for n in store.listdir() if n != LOCK]   # the lock: this run's, or a killed one's
    if not names:
        return None
    if not any(store.is_manifest(n) for n in names):
        if all(is_own_name(n) for n in names):   # a job killed before its first manifest
            if overwrite:
                return None
            raise OutputStateError(f"--out {d}: the directory holds leftovers of a tfront "
                                   f"job ({_few(names)}) but no {MANIFEST}; pass --overwrite "
                                   f"to start over")
        raise OutputStateError(
            f"--out {d}: the directory has files ({_few(names)}) but no {MANIFEST}: not "
            f"written by a resumable tfront job (wcc, sssp), and --overwrite (overwrite=True) "
            f"removes only what such a job wrote; choose a new or empty --out")
    try:
        manifest = store.load_manifest()
    except OutputStateError:
        if not overwrite:
            raise
        manifest = None   # damaged: what has a job's names goes, anything else stays
    named = {f for r in (manifest or {}).get("output", []) if isinstance(r, dict)
             for f in r.get("files", [])} if isinstance(manifest, dict) else set()
    foreign = [n for n in names
               if n not in named and not store.is_manifest(n) and not is_own_name(n)]
    if foreign:
        raise OutputStateError(
            f"--out {d} holds files that no tfront job wrote ({_few(foreign)}); a job "
            f"removes only its own files (--overwrite too): move them away or choose "
            f"another --out")
    if overwrite:
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise OutputStateError(f"--out {d}: {MANIFEST} is not a {FORMAT!r} manifest; pass "
                               f"--overwrite to start over")
    there = manifest.get("job") if isinstance(manifest.get("job"), dict) else {}
    if job_name(there) != job_name(job):
        raise OutputStateError(f"--out {d} holds the output of another job (tfront "
                               f"{job_name(there)} there, tfront {job_name(job)} now); choose "
                               f"another --out or pass --overwrite to replace it")
    differ = [f"{k}: {there.get(k)!r} there, {job.get(k)!r} now"
              for k in sorted(set(job) | set(there)) if there.get(k) != job.get(k)]
    if differ:
        raise OutputStateError(f"--out {d} holds the output of another job ("
                               + "; ".join(differ) + "); pass --overwrite to replace it")
    return manifest


def check_out_path(out) -> None:
    """Before a Spark session starts, for a local ``--out``: that it can be a directory
    this process writes -- no file on its path, and the directory (or, when it does not
    exist yet, the nearest existing folder above it) writable.

    Raises
    ------
    OutputStateError
        Naming ``--out`` and the path at fault.
    """
    p = local_out(out).absolute()
    for q in (p, *p.parents):
        if q.is_dir():
            break
        if q.exists() or q.is_symlink():
            raise OutputStateError(
                f"--out {out}: exists and is not a directory" if q == p else
                f"--out {out} cannot be a directory: {q} is a file")
    if not os.access(q, os.W_OK | os.X_OK):
        raise OutputStateError(
            f"--out {out}: the directory is not writable (permission denied or a read-only "
            f"file system)" if q == p else
            f"--out {out} cannot be created: {q} is not writable (permission denied or a "
            f"read-only file system)")



@dataclass
class Resume:
    """Where a job resumes: ``epoch`` (the first not final), the cumulative edge count
    before it, the last final epoch's labels (``None`` when starting from epoch 0), the
    leftovers removed, and the kept loop checkpoint of epoch ``epoch``, if any."""

    epoch: int = 0
    edges: int = 0
    labels: pa.Table | None = None
    removed: tuple = ()
    #: The loop checkpoint the solver kept (the state after iteration ``loop["iteration"]`` of
    #: epoch ``epoch``), or ``None``.
    loop: dict | None = None
    #: Lines for the user: what the resume found changed and does not use (a data file or a
    #: loop checkpoint whose content is not the one recorded).
    notes: tuple = ()


class OutputLog:
    """The manifest of a job's ``out`` (local or through Hadoop: every file operation goes
    through its :class:`~spark_plugin.jobs.out_store.OutStore`): open (resume or start), record,
    and finish. ``out`` is the directory's name in messages."""

    def __init__(self, store: OutStore, job: dict, manifest: dict,
                 columns: tuple = ("vertex", "component")):
        self.store, self.job, self.manifest, self.columns = store, job, manifest, tuple(columns)
        self.out = store.url
        #: The epochs final in the manifest last written (a failed write says so).
        self._saved_final = len(manifest.get("output", []))

    # -- opening --
    @classmethod
    def open(cls, out, job: dict, *, overwrite: bool = False,
             columns: tuple = ("vertex", "component"),
             spark=None, spark_read: bool = False,
             changes: bool = False) -> tuple["OutputLog", Resume]:
        """Open ``out`` for the job ``job`` (:func:`job_fingerprint`, or a job's own
        fingerprint), whose epochs' results have ``columns`` besides ``epoch`` (sorted by
        the first: WCC's ``vertex, component``). ``out`` is a bare local path, a URI
        (through Hadoop's ``FileSystem`` of ``spark``: :func:`~spark_plugin.jobs.out_store.open_store`)
        or an :class:`~spark_plugin.jobs.out_store.OutStore`.

        A missing or empty directory starts at epoch 0; so does, with ``overwrite``, a
        directory a resumable job wrote (its files are removed: nothing else is there,
        :func:`check_out`). A directory with this job's manifest resumes: leftovers of a
        killed epoch (files of the job's own names the manifest does not name) are removed,
        the rollback is solved, the records past it dropped, and the last final epoch's
        result read back -- by the driver, or, with ``spark_read`` (a job on a Spark source,
        whose labels may not fit the driver), as a Spark DataFrame the executors read, its
        rows checked by one aggregation. With ``changes`` (``--changes``: each epoch's files
        hold only the rows new or changed in it) the result is rebuilt from every final
        epoch's files: per key, the row of the latest epoch.

        One run at a time: ``out`` on this machine's file system is locked first
        (:meth:`OutStore.lock`, ``OUT/_tfront_lock``) and stays locked until :meth:`close`
        (or the process ends); on HDFS or an object store there is no lock.

        Raises
        ------
        OutputInUseError
            Another run holds ``out`` (named in the message).
        OutputStateError
            What :func:`check_out` refuses (``out`` not a directory, the input inside it,
            files no job wrote, another job's output), or a damaged manifest or data file.
            Nothing in ``out`` is changed then.
        """
        store = out if isinstance(out, OutStore) else open_store(out, spark)
        check_out(store, job, overwrite=overwrite)   # changes nothing: refused before the lock
        held = store.lock()
        try:   # again under the lock: another run may have written there meanwhile
            manifest = check_out(store, job, overwrite=overwrite)
            if overwrite:   # only what a job wrote is there (checked): remove it, start over
                for name in store.listdir():
                    if name != LOCK:
                        store.remove(name)
            if manifest is None:
                store.mkdirs()
                log = cls(store, job, {"format": FORMAT, "job": job, "complete": False,
                                       "total": None, "input": [], "loop": [], "output": []},
                          columns)
                log._held = held
                log.save()
                return log, Resume()
            log = cls(store, job, manifest, columns)
            log._held = held
            log._changes = changes
            if spark_read:
                log._spark = spark
            return log, log._resume()
        except BaseException:
            if held is not None:
                held.release()
            raise

    #: This run's hold on ``out``'s lock (:meth:`open`), released by :meth:`close`.
    _held = None

    def close(self) -> None:
        """Release ``out`` for another run (its lock); the job's framework calls it when
        the run ends, also after an error. Calling it again does nothing."""
        held, self._held = self._held, None
        if held is not None:
            held.release()

    def _changed(self, names, digests) -> str | None:
        """The first of the files ``names`` (relative to ``--out``) that is there but whose
        content is not the one recorded (``digests``, :meth:`OutStore.digest`), else ``None``.
        A record without digests (an older manifest) is not checked."""
        if not digests:
            return None
        for name, want in zip(names, digests):
            if self.store.is_file(name) and self.store.digest(name) != want:
                return name
        return None

    def _drop_changed_epochs(self) -> list[str]:
        """Check the final epochs' data files by content, in epoch order: from the first epoch
        one of whose files changed since it was written (same name, other bytes: a damaged or
        rewritten file), the output, the loop and the input forget the epochs, as if the job
        had been killed before that epoch's manifest write; they are computed again. Returns
        the lines saying so (none when nothing changed)."""
        m = self.manifest
        for r in sorted(m["output"], key=lambda r: r["epoch"]):
            bad = self._changed(r["files"], r.get("digests"))
            if bad is None:
                continue
            k = int(r["epoch"])
            last = max(int(x["epoch"]) for x in m["output"])
            m["output"] = [x for x in m["output"] if x["epoch"] < k]
            m["loop"] = [x for x in _loop_epochs(m) if x < k] + [
                x for x in loop_records(m) if int(x["epoch"]) <= k]
            m["input"] = [x for x in m["input"] if x["epoch"] <= k]
            m["complete"] = False
            which = f"epoch {k} is" if k == last else f"epochs {k}-{last} are"
            return [f"epoch {k}'s data file {bad} in {self.out} does not match the digest "
                    f"{MANIFEST} recorded when it was written (changed or damaged since): "
                    f"{which} computed again"]
        return []

    def _resume(self) -> Resume:
        m, store = self.manifest, self.store
        notes = self._drop_changed_epochs()
        kept = kept_epochs(m)
        n_out = kept["output"]
        final = [r for r in m["output"] if r["epoch"] < n_out]
        if len(final) != n_out or [r["epoch"] for r in final] != list(range(n_out)):
            raise OutputStateError(f"--out {self.out}: {MANIFEST} lists epochs "
                                   f"{[r['epoch'] for r in m['output']]}, not 0..{n_out - 1}")
        m["output"] = final
        # the loop keeps the epochs it keeps whole, and the one checkpoint of the epoch in
        # flight the solver chose, if its files are all there (else the epoch restarts)
        loop = None
        if kept["iteration"] is not None and kept["loop"] == n_out:
            loop = next((r for r in loop_records(m) if r["epoch"] == n_out
                         and r["iteration"] == kept["iteration"]), None)
            if loop is not None and not all(store.is_file(f"{LOOP_DIR}/{loop['dir']}/{f}")
                                            for f in loop["files"]):
                loop = None
            bad = None if loop is None else self._changed(
                [f"{LOOP_DIR}/{loop['dir']}/{f}" for f in loop["files"]], loop.get("digests"))
            if bad is not None:   # dropping it is always consistent: the epoch restarts
                notes.append(f"epoch {loop['epoch']}: the loop checkpoint of iteration "
                             f"{loop['iteration']} is not used: its part file {bad} in "
                             f"{self.out} does not match the digest {MANIFEST} recorded "
                             f"when it was written (changed or damaged since); the epoch "
                             f"restarts from its first iteration")
                loop = None
        m["loop"] = [e for e in _loop_epochs(m) if e < kept["loop"]] + (
            [loop] if loop is not None else [])
        m["input"] = [r for r in m["input"] if r["epoch"] < kept["input"]]
        if n_out < (m.get("total") or 0) or m.get("total") is None:
            m["complete"] = False
        for r in final:
            for f in r["files"]:
                if not store.is_file(f):
                    raise OutputStateError(f"--out {self.out}: epoch {r['epoch']}'s data file "
                                           f"{f} named by {MANIFEST} is missing; pass "
                                           f"--overwrite to start over")
        # checked before anything changes
        labels = (None if not final else self._read_changes(final) if self._changes
                  else self._read(final[-1]))
        named = {f for r in final for f in r["files"]}
        if loop is not None:
            named.add(LOOP_DIR)
        removed = []
        for name in store.listdir():   # all of them the job's (check_out)
            if (name not in named and name != LOCK and not store.is_manifest(name)
                    and is_own_name(name)):
                removed.append(name)
                store.remove(name)
        if loop is not None:   # other checkpoints (superseded, or never recorded) go too
            for name in store.listdir(LOOP_DIR):
                if name != loop["dir"]:
                    removed.append(f"{LOOP_DIR}/{name}")
                    store.remove(f"{LOOP_DIR}/{name}")
            for name in store.listdir(f"{LOOP_DIR}/{loop['dir']}"):
                if name not in loop["files"]:
                    removed.append(f"{LOOP_DIR}/{loop['dir']}/{name}")
                    store.remove(f"{LOOP_DIR}/{loop['dir']}/{name}")
        self.save()
        if not final:
            return Resume(removed=tuple(removed), loop=loop, notes=tuple(notes))
        return Resume(n_out, int(final[-1]["edges"]), labels, tuple(removed), loop,
                      tuple(notes))

    #: The Spark session that reads a resumed result back (:meth:`open`'s ``spark_read``).
    _spark = None
    #: Each epoch's files hold its changes (``--changes``): :meth:`_read_changes`.
    _changes = False

    def _read_changes(self, final: list):
        """The result after the last of the epochs ``final`` when each epoch's files hold
        only its changes: per key (the first column), the row of the latest epoch; every
        epoch's files checked against the rows recorded."""
        cols = list(self.columns)
        parts = [self._read(rec) for rec in final]   # each checked: rows, epoch
        if self._spark is not None:
            from pyspark.sql import functions as F

            both = None
            for rec, df in zip(final, parts):
                df = df.withColumn("epoch", F.lit(rec["epoch"]))
                both = df if both is None else both.unionByName(df)
            return both.groupBy(cols[0]).agg(*(F.max_by(c, "epoch").alias(c) for c in cols[1:]))
        t = pa.concat_tables([p.append_column("epoch", pa.array(np.full(p.num_rows, r["epoch"],
                                                                          np.int64)))
                              for r, p in zip(final, parts)])
        k = t.column(cols[0]).to_numpy()
        order = np.lexsort((t.column("epoch").to_numpy(), k))
        k = k[order]
        last = np.r_[k[1:] != k[:-1], True] if len(k) else np.zeros(0, np.bool_)
        return t.select(cols).take(pa.array(order[last]))

    def _read(self, rec: dict):
        """Epoch ``rec``'s result (its :attr:`columns`, sorted by the first), checked against
        the row count the manifest recorded: a ``pyarrow.Table``, or a DataFrame read by
        the executors (``spark_read``)."""
        cols = list(self.columns)
        if self._spark is not None:
            return self._read_spark(rec, cols)
        try:
            t = self.store.read_table(rec["files"], ["epoch", *cols])
        except Exception as e:   # noqa: BLE001 -- Arrow, OSError, py4j: a damaged --out
            raise OutputStateError(f"--out {self.out}: epoch {rec['epoch']}'s data files cannot "
                                   f"be read as columns epoch, {', '.join(cols)} ({e}); pass "
                                   f"--overwrite to start over") from None
        if t is None or t.num_rows != rec["rows"] or (
                t.num_rows and set(t.column("epoch").unique().to_pylist()) != {rec["epoch"]}):
            raise OutputStateError(f"--out {self.out}: epoch {rec['epoch']}'s data files do not "
                                   f"hold the {rec['rows']} rows {MANIFEST} recorded; pass "
                                   f"--overwrite to start over")
        t = t.select(cols)
        return t.take(pa.array(np.argsort(t.column(cols[0]).to_numpy(), kind="stable")))

    def _read_spark(self, rec: dict, cols: list):
        from pyspark.sql import functions as F

        from spark_plugin.session.lazy import session_of

        try:
            df = session_of(self._spark).read.parquet(
                *(self.store.path(f) for f in rec["files"])).select("epoch", *cols)
            st = df.agg(F.count(F.lit(1)).alias("n"), F.min("epoch").alias("lo"),
                        F.max("epoch").alias("hi")).first()
        except Exception as e:   # noqa: BLE001 -- AnalysisException, py4j: a damaged --out
            raise OutputStateError(f"--out {self.out}: epoch {rec['epoch']}'s data files cannot "
                                   f"be read as columns epoch, {', '.join(cols)} "
                                   f"({str(e).strip().splitlines()[0]}); pass --overwrite to "
                                   f"start over") from None
        if int(st["n"]) != rec["rows"] or (st["n"] and not st["lo"] == st["hi"] == rec["epoch"]):
            raise OutputStateError(f"--out {self.out}: epoch {rec['epoch']}'s data files do not "
                                   f"hold the {rec['rows']} rows {MANIFEST} recorded; pass "
                                   f"--overwrite to start over")
        return df.select(*cols)

    # -- writing --
    @contextlib.contextmanager
    def writing(self, what: str, name: str = ""):
        """Turn a failed write of ``what`` (``name``: the file, relative to ``--out``) into
        an :class:`~spark_plugin.errors.OutputWriteError` that names the file and says that
        a rerun resumes: an ``OSError`` here, or a Spark job's failure whose message says
        the disk is full. Other Spark errors pass unchanged."""
        try:
            yield
        except OutputWriteError:
            raise
        except OSError as err:
            where = err.filename if err.filename else self.store.path(name)
            why = ("no space left on device" if err.errno == errno.ENOSPC
                   else (err.strerror or str(err)).lower())
            raise self._write_error(what, where, why) from None
        except Exception as err:   # noqa: BLE001 -- Py4J: the executors' IOException
            if "No space left on device" not in str(err):
                raise
            raise self._write_error(what, self.store.path(name),
                                    "no space left on device") from None

    def _write_error(self, what: str, where, why: str) -> OutputWriteError:
        final = self._saved_final   # what the manifest on disk makes final
        kept = ("no epoch was final there yet" if not final else
                "epoch 0 is final there and kept" if final == 1 else
                f"epochs 0-{final - 1} are final there and kept")
        return OutputWriteError(
            f"--out {self.out}: writing {what} to {where} failed: {why}; {kept}: "
            + ("free some space, then " if why == "no space left on device" else "")
            + f"rerun the same command to resume from epoch {final}")

    # -- the input --
    def kept_input(self, e: int) -> dict | None:
        """The input record of epoch ``e``, if kept."""
        for r in self.manifest["input"]:
            if r["epoch"] == e:
                return r
        return None

    def check_source(self, e: int, source) -> None:
        """A kept epoch's source must be the one recorded (same file or rows, unchanged)."""
        r = self.kept_input(e)
        if r is None:
            return
        if r["source"] != source.what:
            raise OutputStateError(f"--out {self.out}: epoch {e} was {r['source']}, the input "
                                   f"now gives {source.what}; pass --overwrite to start over")
        if r.get("stamp") is not None and _stamp_of(source) != r["stamp"]:
            raise OutputStateError(f"--out {self.out}: epoch {e}'s input {source.what} changed "
                                   f"since the job recorded it; pass --overwrite to start over")

    def same_source(self, e: int, source) -> bool:
        """Whether epoch ``e``'s kept input record names ``source``, unchanged."""
        r = self.kept_input(e)
        return r is not None and r["source"] == source.what and (
            r.get("stamp") is None or _stamp_of(source) == r["stamp"])

    def record_input(self, e: int, source) -> None:
        """Epoch ``e`` starts: record which source it is. A record of ``e`` kept from a
        killed run (the epoch then in flight) is replaced: nothing of that epoch left the
        job, and its file may have been fixed since."""
        self.manifest["input"] = [r for r in self.manifest["input"] if r["epoch"] != e]
        self.manifest["input"].append({"epoch": e, "source": source.what,
                                       "stamp": _stamp_of(source)})
        self.save()

    # -- the output --
    def new_name(self, e: int, k: int = 0) -> str:
        return f"part-epoch-{e:06d}-{k:05d}-{uuid.uuid4().hex[:12]}.parquet"

    def write_table(self, e: int, table: pa.Table) -> list[str]:
        """Write epoch ``e``'s result ``table`` (on the driver) into the dataset as one part
        file: columns ``epoch`` then :attr:`columns` (int64, as Spark's writer), written under
        a hidden name and renamed in when complete (readers -- pyarrow, Spark -- skip hidden
        names, so they never see a partial part). No Spark job. Returns the file's name."""
        n = table.num_rows
        table = pa.table({"epoch": pa.array(np.full(n, e, np.int64)),
                          **{c: table.column(c) for c in self.columns}})
        name = self.new_name(e)
        with self.writing(f"epoch {e}'s result", f".{name}.tmp"):
            self.store.write_table(f".{name}.tmp", table)
            self.store.rename_in(f".{name}.tmp", name)
        return [name]

    def write_df(self, e: int, df) -> list[str]:
        """Write epoch ``e``'s result (a DataFrame) into the dataset: Spark writes a hidden
        directory inside it, whose part files are renamed into the dataset. Returns their
        names (the manifest names them afterwards)."""
        from pyspark.sql import functions as F

        tmp = f".epoch-{e:06d}.tmp"
        with self.writing(f"epoch {e}'s result", tmp):
            df.select(F.lit(e).cast("long").alias("epoch"), *self.columns) \
                .write.mode("overwrite").parquet(self.store.path(tmp))
            files = []
            parts = [p for p in self.store.listdir(tmp)
                     if p.startswith("part-") and p.endswith(".parquet")]
            for k, part in enumerate(parts):
                name = self.new_name(e, k)
                self.store.rename_in(f"{tmp}/{part}", name)
                files.append(name)
            self.store.remove(tmp)
        return files

    def record_final(self, e: int, files: list[str], rows: int, edges: int) -> None:
        """Epoch ``e``'s data ``files`` (already renamed into place) are final: the output
        and the loop record it, in one atomic manifest write; the loop checkpoints of epoch
        ``e`` are then superseded and deleted (a crash before that leaves files the manifest
        no longer names: the next start removes them)."""
        with self.writing(f"epoch {e}'s result", ""):
            self.store.sync()
            digests = [self.store.digest(f) for f in files]   # checked on resume
        self.manifest["output"].append({"epoch": e, "files": list(files), "rows": int(rows),
                                        "edges": int(edges), "digests": digests})
        old = loop_records(self.manifest)
        self.manifest["loop"] = _loop_epochs(self.manifest) + [e]
        self.save()
        self._drop_loop(old)

    # -- the loop's checkpoints --
    def loop_name(self, e: int, it: int) -> str:
        """The directory (inside :data:`LOOP_DIR`) of the loop checkpoint after iteration
        ``it`` of epoch ``e``."""
        return f"epoch-{e:06d}-iteration-{it:06d}"

    def record_loop(self, e: int, it: int, df, *, new: int, pointstamps: list) -> dict:
        """Make the loop's state after iteration ``it`` of epoch ``e`` durable: Spark writes
        ``df`` (a DataFrame) as Parquet into a hidden directory of :data:`LOOP_DIR`, each part
        file is renamed (after an fsync, locally) into the checkpoint's directory, which is
        synced; only then does the manifest's ``loop`` list record it (its rows, counted from
        the files' footers, ``new`` of them flagged new, and the tracker's ``pointstamps`` at
        that point), replacing the epoch's previous checkpoint, whose files are deleted
        after. Returns the record."""
        with self.writing(f"the loop checkpoint of epoch {e} iteration {it}", LOOP_DIR):
            return self._record_loop(e, it, df, new=new, pointstamps=pointstamps)

    def _record_loop(self, e: int, it: int, df, *, new: int, pointstamps: list) -> dict:
        store = self.store
        name = self.loop_name(e, it)
        tmp = f"{LOOP_DIR}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
        df.write.mode("overwrite").parquet(store.path(tmp))
        final = f"{LOOP_DIR}/{name}"
        store.remove(final)   # a leftover of a killed run the manifest does not name
        store.mkdirs(final)
        files = []
        parts = [p for p in store.listdir(tmp) if p.startswith("part-") and p.endswith(".parquet")]
        for k, part in enumerate(parts):
            f = f"part-{k:05d}.parquet"
            store.rename_in(f"{tmp}/{part}", f"{final}/{f}")
            files.append(f)
        store.remove(tmp)
        rows = store.parquet_rows([f"{final}/{f}" for f in files])
        store.sync(final)
        store.sync(LOOP_DIR)
        store.sync()   # OUT's entry of LOOP_DIR (Spark's writer made it) before the record
        crash_point(f"iteration:{it}:after-loop-data", e)
        old = loop_records(self.manifest)
        rec = {"epoch": int(e), "iteration": int(it), "dir": name, "files": files,
               "digests": [store.digest(f"{final}/{f}") for f in files],   # checked on resume
               "rows": int(rows), "new": int(new), "pointstamps": pointstamps}
        self.manifest["loop"] = _loop_epochs(self.manifest) + [rec]
        self.save()
        crash_point(f"iteration:{it}:after-loop", e)
        self._drop_loop(old)
        return rec

    def loop_paths(self, rec: dict) -> list[str]:
        """The data files of loop checkpoint ``rec`` (paths or URIs Spark reads)."""
        return [self.store.path(f"{LOOP_DIR}/{rec['dir']}/{f}") for f in rec["files"]]

    def drop_loop(self) -> None:
        """Forget every loop checkpoint (the epoch in flight restarts from its beginning)."""
        old = loop_records(self.manifest)
        if old:
            self.manifest["loop"] = _loop_epochs(self.manifest)
            self.save()
            self._drop_loop(old)

    def _drop_loop(self, records) -> None:
        """Delete the files of loop checkpoints the manifest no longer names, and the loop
        directory once it is empty."""
        for r in records:
            self.store.remove(f"{LOOP_DIR}/{r['dir']}")
        if not loop_records(self.manifest):
            self.store.remove(LOOP_DIR)

    def finish(self, total: int) -> None:
        """The input is exhausted after ``total`` epochs, all final."""
        self.manifest["complete"], self.manifest["total"] = True, int(total)
        self.save()

    def save(self) -> None:
        """Write the manifest atomically and durably (:meth:`OutStore.save_manifest`)."""
        with self.writing("the manifest", MANIFEST):
            self.store.save_manifest(self.manifest)
        self._saved_final = len(self.manifest.get("output", []))


def already_final(out, edges, epochs: int, follow, job: dict | None = None) -> str | None:
    """Without starting Spark: the message for a rerun whose every epoch is final in the
    local ``out`` (same job -- ``job``, the job's fingerprint, by default
    :func:`job_fingerprint`'s --, the input as recorded, every epoch written), else ``None``
    (the job runs, and :meth:`OutputLog.open` explains any problem; a URI ``out`` needs
    Hadoop's ``FileSystem``, so its job starts Spark and finds there is nothing to do)."""
    if out is None or follow is not None or not is_local(out) or not isinstance(
            edges, (str, os.PathLike)):
        return None
    m = local_out(out) / MANIFEST
    try:
        manifest = json.loads(m.read_text())
        if (manifest.get("format") != FORMAT or not manifest.get("complete")
                or manifest.get("job") != (job if job is not None
                                           else job_fingerprint(edges, epochs, follow))):
            return None
        total = manifest["total"]
        if [r["epoch"] for r in manifest["output"]] != list(range(total)):
            return None
        if Path(edges).is_dir():
            files = [str(f) for f in edge_files(edges)]
            recs = sorted(manifest["input"], key=lambda r: r["epoch"])
            if files != [r["source"] for r in recs]:
                return None     # files were added (or renamed): the job has more to do
            for f, r in zip(files, recs):
                st = FileStamp.of(f)
                if [st.size, st.mtime_ns, st.ino] != r["stamp"]:
                    return None
        named = {f for r in manifest["output"] for f in r["files"]}
        if any(is_own_name(n) and n not in named and n not in (MANIFEST, LOCK)
               for n in os.listdir(m.parent)):
            return None   # files of a job the manifest does not name: the run removes them
        for r in manifest["output"]:
            if not all((m.parent / f).is_file() for f in r["files"]):
                return None
            if r.get("digests") and [_file_digest(m.parent / f) for f in r["files"]] != \
                    r["digests"]:
                return None   # changed since it was written: the run says so, recomputes
    except Exception:   # unreadable, damaged or another job's: the run explains it
        return None
    return (f"all {total} epoch{'s' if total != 1 else ''} of {edges} are final in {m.parent} "
            f"(its {MANIFEST}); nothing to do (--overwrite recomputes them)")
