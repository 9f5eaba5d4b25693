"""Lineage truncation after every stage of a job: Spark checkpoints, released when superseded."""

from __future__ import annotations

import logging

__all__ = ["Checkpoints"]

log = logging.getLogger(__name__)


class Checkpoints:
    """Truncates lineage after every stage. With no directory: ``localCheckpoint`` (executor
    storage, fast), tracking the RDDs it persists to release them when superseded. With a
    checkpoint directory (a reliable file system, e.g. HDFS on a cluster): ``checkpoint``,
    written there (under the run's own ``<directory>/<uuid>``, which ``setCheckpointDir``
    creates), so an executor lost mid-run costs a recomputation of nothing but its current
    stage. Each checkpoint is then known by the ``rdd-*`` directories it added, and
    :meth:`release` deletes them once superseded (through Hadoop's ``FileSystem``, so HDFS
    too) -- Spark's own cleaner would only do so when the JVM collects the RDD, and only with
    ``spark.cleaner.referenceTracking.cleanCheckpoints``. :meth:`close` deletes everything of
    the run but what it is told to keep: the newest completed epoch's stars and labels, the
    state a recovery would restart from."""

    def __init__(self, spark, directory: str | None = None):
        # a LazySession (spark_plugin.session.lazy) is not started here: a job that runs no
        # Spark job checkpoints nothing, and starting the JVM for that would cost seconds
        self._spark, self.directory = spark, directory
        self.reliable = directory is not None
        self.root = None
        self._sc = None

    @property
    def sc(self):
        """The SparkContext (a lazy session is started now), the checkpoint directory set."""
        if self._sc is None:
            from spark_plugin.session.lazy import session_of

            sc = session_of(self._spark).sparkContext
            if self.reliable:
                sc.setCheckpointDir(str(self.directory))
                jvm = sc._jvm
                root = sc._jsc.sc().getCheckpointDir().get()   # <directory>/<uuid>
                self.root = jvm.org.apache.hadoop.fs.Path(root)
                self.fs = self.root.getFileSystem(sc._jsc.hadoopConfiguration())
            self._sc = sc
        return self._sc

    def _ids(self) -> set:
        from py4j.protocol import Py4JError

        try:
            return set(int(k) for k in self.sc._jsc.getPersistentRDDs().keySet().toArray())
        except Py4JError as e:  # only a memory optimisation: keep going, say why
            log.warning("cannot list persisted RDDs (%s); superseded checkpoints stay cached", e)
            return set()

    def _files(self) -> set:
        """The run's checkpoint directories (``.../<uuid>/rdd-N``, as URI strings)."""
        self.sc   # the directory is set once Spark runs
        if not self.fs.exists(self.root):
            return set()
        return {st.getPath().toString() for st in self.fs.listStatus(self.root)}

    def checkpoint(self, df):
        """``(checkpointed df, ids)``: ids name what :meth:`release` frees (persisted RDD ids,
        or the checkpoint directories written)."""
        if self.reliable:
            before = self._files()
            out = df.checkpoint(eager=True)
            return out, self._files() - before
        before = self._ids()
        out = df.localCheckpoint(eager=True)
        return out, self._ids() - before

    def checkpoint_rdd(self, rdd):
        """:meth:`checkpoint` for an RDD whose partitions the job keeps between stages (e.g.
        a per-partition index): cached, lineage truncated; ``(rdd, ids)``. Without a
        directory the RDD is computed by the first stage that uses it (``localCheckpoint``,
        its id is what :meth:`release` unpersists); with one it is computed and written at
        once (one Spark job), so that the files it added are known, and read from them
        by every stage after."""
        if not self.reliable:
            rdd.cache()
            rdd.localCheckpoint()
            return rdd, {rdd.id()}
        before = self._files()
        rdd.checkpoint()
        rdd.count()
        return rdd, self._files() - before

    def release(self, ids) -> None:
        if not ids or self._sc is None:   # nothing was checkpointed
            return
        from py4j.protocol import Py4JError

        if self.reliable:
            for path in ids:
                try:
                    self.fs.delete(self.sc._jvm.org.apache.hadoop.fs.Path(path), True)
                except Py4JError as e:   # the labels are right regardless: say what is left
                    log.warning("cannot delete the superseded checkpoint %s: %s", path, e)
            return
        try:
            rdds = self.sc._jsc.getPersistentRDDs()
            for i in ids:
                r = rdds.get(i)
                if r is not None:
                    r.unpersist(False)
        except Py4JError as e:  # only a memory optimisation: keep going, say why
            log.warning("cannot unpersist superseded checkpoints: %s", e)

    def close(self, live, keep=frozenset(), hand_over=frozenset()) -> tuple:
        """End of the run: release ``live`` (the ids still held) but ``keep``; with a
        directory, also delete any other checkpoint of the run (a stage of a failed epoch),
        and the run's directory when nothing is kept. ``hand_over``: the checkpoints of a
        result the job returns as a DataFrame (a Spark source's labels), never released
        here -- the caller's to read. Returns the kept checkpoint directories, sorted."""
        hand_over = set(hand_over)
        if not self.reliable:
            self.release((set(live) | set(keep)) - hand_over)
            return ()
        keep = set(keep) | hand_over
        if self._sc is None:   # no stage ran on Spark: no directory of the run was made
            return tuple(sorted(keep))
        from py4j.protocol import Py4JError

        try:
            self.release(self._files() - keep)
            if not keep:
                self.fs.delete(self.root, True)
        except Py4JError as e:
            log.warning("cannot clean the checkpoint directory %s: %s", self.root, e)
        return tuple(sorted(keep))
