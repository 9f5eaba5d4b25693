"""Spark jobs counted from Spark's own status tracker, independently of the code that runs them.

Spark numbers the jobs of a ``SparkContext`` ``0, 1, 2, ...`` in submission order, whatever
their job group, tag or thread, and its status tracker (``sc.statusTracker()``, fed by the
application status store, which runs with ``spark.ui.enabled=false`` too) answers
``getJobInfo(id)`` for every job it retains. So the number of jobs submitted so far is the
first id it does not know, found by an exponential then a binary search from the previous
count (:func:`jobs_submitted`); :class:`JobCount` takes that number before and after a
piece of work. Nothing here asks the job that is measured.

Two conditions make the count exact, and :data:`RETAINED_JOBS` / :func:`jobs_submitted`
see to them:

* the store keeps the last ``spark.ui.retainedJobs`` jobs only (default 1,000): the
  benchmarks raise it to :data:`RETAINED_JOBS`, and a count of more than that is flagged
  (``spark_jobs_exact`` false);
* the store learns of a job through Spark's listener bus, asynchronously: the reading waits
  until the bus is empty first (``LiveListenerBus.waitUntilEmpty``, milliseconds).

Examples
--------
::

    count = JobCount(spark.sparkContext)   # reading before
    run_the_job()
    rec.update(count.stop())               # {"spark_jobs": 12, "spark_jobs_exact": True}
"""

from __future__ import annotations

__all__ = ["RETAINED_JOBS", "jobs_submitted", "JobCount"]

#: ``spark.ui.retainedJobs`` of the benchmarks' sessions: more jobs than any run counts.
RETAINED_JOBS = 1_000_000


def _known(tracker, job_id: int) -> bool:
    return tracker.getJobInfo(job_id) is not None


def jobs_submitted(sc, start: int = 0) -> int:
    """How many jobs ``sc`` has run or started: the smallest id ``>= start`` its status
    tracker does not know (``start``: a count read before, so the search is short).
    ``O(log jobs)`` status-tracker calls, after the listener bus has drained."""
    sc._jsc.sc().listenerBus().waitUntilEmpty()
    tracker = sc.statusTracker()
    if not _known(tracker, start):
        if start > 0 and not _known(tracker, start - 1):
            raise RuntimeError(f"Spark's status tracker no longer knows job {start - 1}: "
                               f"raise spark.ui.retainedJobs (now "
                               f"{sc.getConf().get('spark.ui.retainedJobs', '1000')})")
        return start
    lo, step = start, 1                  # lo is known; find an unknown hi above it
    while _known(tracker, lo + step):
        lo, step = lo + step, step * 2
    hi = lo + step
    while hi - lo > 1:                   # lo known, hi unknown
        mid = (lo + hi) // 2
        if _known(tracker, mid):
            lo = mid
        else:
            hi = mid
    return hi


def _lazy(sc) -> bool:
    from spark_plugin.session.lazy import LazySession

    return isinstance(sc, LazySession)


class JobCount:
    """The Spark jobs ``sc`` runs between construction and :meth:`stop`."""

    def __init__(self, sc):
        """``sc``: a SparkContext, or a :class:`~spark_plugin.session.lazy.LazySession` not
        started yet (every job of a session it starts is counted; none if it never does)."""
        self.sc = sc
        self.before = 0 if _lazy(sc) else jobs_submitted(sc)

    def stop(self) -> dict:
        """``spark_jobs`` (jobs submitted since construction) and ``spark_jobs_exact``
        (whether all of them, and the last one before, were still retained)."""
        sc = self.sc
        if _lazy(sc):
            if not sc.started:
                return {"spark_jobs": 0, "spark_jobs_exact": True}
            sc = sc.get().sparkContext
        after = jobs_submitted(sc, self.before)
        retained = int(sc.getConf().get("spark.ui.retainedJobs", "1000"))
        return {"spark_jobs": after - self.before, "spark_jobs_exact": after <= retained}
