"""A Spark session started when a job first needs one (:mod:`spark_plugin.session.lazy`).

What the job asks before it runs a Spark job -- master, parallelism, settings, the driver's
heap -- is answered without starting the session; the first Spark job starts it, once. A WCC
or SSSP job whose every epoch fits the driver never starts it, and its results are scipy's;
one forced onto Spark starts it at its first Spark step, and its results are the same.
The lazy sessions here start the suite's shared session (no second JVM), counting the starts.
"""

import threading

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph_cases import scipy_distances, union_find_components
from spark_plugin.session.lazy import (LazySession, conf_of, heap_of, master_of,
                                       parallelism_of, session_of, started)

pytestmark = pytest.mark.spark


class Counting:
    """A ``start`` for :class:`LazySession` returning ``session``, counting its calls."""

    def __init__(self, session):
        self.session, self.calls = session, 0

    def __call__(self):
        self.calls += 1
        return self.session


def lazy(session, **settings):
    conf = {"spark.master": "local[2]", "spark.default.parallelism": "2",
            "spark.driver.memory": "3g", **settings}
    start = Counting(session)
    return LazySession(start, conf), start


def test_answers_without_starting_then_from_the_running_session(spark):
    ls, start = lazy(spark, **{"spark.driver.maxResultSize": "2g"})
    assert (master_of(ls), parallelism_of(ls), heap_of(ls)) == ("local[2]", 2, 3 << 30)
    assert conf_of(ls, "spark.driver.maxResultSize") == "2g"
    assert conf_of(ls, "spark.nothing", "x") == "x"
    assert not started(ls) and start.calls == 0
    assert session_of(ls) is spark and started(ls) and start.calls == 1
    # once it runs, the running session answers
    assert master_of(ls) == spark.sparkContext.master
    assert heap_of(ls) == int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())
    assert session_of(ls) is spark and start.calls == 1


@pytest.mark.parametrize("master,want", [("local", 1), ("local[3]", 3), ("local[4,2]", 4)])
def test_parallelism_of_an_embedded_master(master, want):
    ls = LazySession(lambda: pytest.fail("started"), {"spark.master": master})
    assert ls.parallelism == want


def test_starts_once_from_many_threads(spark):
    ls, start = lazy(spark)
    got = []
    threads = [threading.Thread(target=lambda: got.append(ls.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [spark] * 8 and start.calls == 1


@pytest.mark.parametrize("master", ["yarn", "spark://h:7077", "local-cluster[2,1,1024]"])
def test_a_cluster_master_is_refused(master):
    with pytest.raises(ValueError, match="must run embedded"):
        LazySession(lambda: None, {"spark.master": master})


graphs = st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, n), min_size=1, max_size=80),
    st.lists(st.integers(0, n), min_size=80, max_size=80)))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs, st.integers(1, 3))
def test_wcc_on_the_driver_never_starts_spark(spark, monkeypatch, g, epochs):
    from spark_plugin.jobs.wcc.job import run_wcc

    monkeypatch.delenv("TFRONT_WCC_DRIVER_ROWS", raising=False)
    src = np.array(g[0], np.int64)
    dst = np.array(g[1][:len(src)], np.int64)
    epochs = min(epochs, len(src))   # a split input needs an edge per epoch
    ls, start = lazy(spark)
    res = run_wcc(ls, pa.table({"src": src, "dst": dst}), epochs=epochs, partitions=2,
                  progress=False)
    assert start.calls == 0, "a job that fits the driver started Spark"
    got = dict(zip(res.labels.column("vertex").to_pylist(),
                   res.labels.column("component").to_pylist()))
    assert got == union_find_components(src, dst)
    assert [e.rounds for e in res.epochs] == [1] * len(res.epochs)


def test_wcc_forced_onto_spark_starts_it_at_its_first_spark_step(spark, monkeypatch):
    from spark_plugin.jobs.wcc.job import run_wcc

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 300, 400), rng.integers(0, 300, 400)
    # epoch 0 fits the driver (no Spark), epoch 1 does not: Spark starts there
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "250")
    ls, start = lazy(spark)
    seen = []
    res = run_wcc(ls, pa.table({"src": src, "dst": dst}), epochs=2, partitions=2,
                  progress=False, on_epoch=lambda s: seen.append(start.calls))
    assert seen == [0, 1] and start.calls == 1
    got = dict(zip(res.labels.column("vertex").to_pylist(),
                   res.labels.column("component").to_pylist()))
    assert got == union_find_components(src, dst)


@pytest.mark.parametrize("driver_rows,calls", [(None, 0), ("0", 1)])
def test_sssp_starts_spark_only_past_the_driver(spark, monkeypatch, driver_rows, calls):
    from spark_plugin.jobs.sssp.job import run_sssp

    if driver_rows is None:
        monkeypatch.delenv("TFRONT_SSSP_DRIVER_ROWS", raising=False)
    else:
        monkeypatch.setenv("TFRONT_SSSP_DRIVER_ROWS", driver_rows)
    rng = np.random.default_rng(4)
    src, dst = rng.integers(0, 80, 200), rng.integers(0, 80, 200)
    ls, start = lazy(spark)
    res = run_sssp(ls, pa.table({"src": src, "dst": dst}), int(src[0]), epochs=2,
                   partitions=2, progress=False)
    assert start.calls == calls
    verts = np.unique(np.r_[src, dst])
    want = scipy_distances(src, dst, np.ones(len(src)), verts, int(src[0]))
    got = dict(zip(res.distances.column("vertex").to_pylist(),
                   res.distances.column("distance").to_pylist()))
    assert got == {int(v): int(t) for v, t in zip(verts, want) if np.isfinite(t)}


@pytest.mark.parametrize("level,quiet", [("default", True), (None, False)])
def test_build_session_is_as_quiet_as_the_commands_by_default_gh23(level, quiet):
    """Issue 23 item 13: ``build_session`` (and a job run in its session) printed Spark's
    start-up notices and WARN lines, which the commands hide. By default it now starts the
    JVM at level ``error``; ``log_level=None`` keeps Spark's own configuration."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    arg = "" if level == "default" else ", log_level=None"
    code = ("from spark_plugin.session.config import build_session\n"
            "import pyarrow as pa\n"
            "from spark_plugin.jobs.sssp.job import run_sssp\n"
            f"s = build_session('local', conf={{'spark.master': 'local[1]', "
            f"'spark.ui.enabled': 'false'}}{arg})\n"
            "r = run_sssp(s, pa.table({'src': [0, 1], 'dst': [1, 2]}), 0, progress=False)\n"
            "print(r.distances.num_rows)\n"
            "s.stop()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "3"
    noisy = [x for x in proc.stderr.splitlines()
             if "WARN" in x or "Setting default log level" in x or "log4j" in x]
    assert (noisy == []) == quiet, proc.stderr
