"""``tfront wcc`` on a cluster and on large inputs: whose settings win (``spark-submit``,
``--conf``, ``--master``, ``--driver-memory`` over the ``local`` preset's defaults), memory
sized from the machine, the driver-finish limit from the driver's memory, and a JVM that runs
out of heap stopping the job with a named error instead of hanging.

Two tests start their own JVMs in subprocesses (one SparkContext per process): the job under
``spark-submit --master local-cluster[2,1,1024]`` (separate executor JVMs), and a job whose
driver heap is far too small.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.main import _parser
from spark_plugin import ConfigError
from spark_plugin.session.config import (DRIVER_MEMORY_SHARE, default_driver_memory, format_memory,
                                 machine_memory, parse_memory, session_conf, spark_conf)
from spark_plugin.jobs.wcc.job import DRIVER_JVM_BYTES_PER_ROW, driver_finish_rows
from spark_plugin.session.config import driver_heap_bytes

from graph_cases import union_find_components

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[4]


# -- whose settings win ------------------------------------------------------------------------

def test_submitted_master_and_settings_win_over_the_local_preset():
    """Before: build_session applied local[*] and the loopback driver host whatever
    spark-submit said."""
    submitted = {"spark.master": "yarn", "spark.submit.deployMode": "client",
                 "spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "400"}
    c = session_conf("local", submitted=submitted)
    assert c["spark.master"] == "yarn"
    assert c["spark.driver.memory"] == "6g" and c["spark.driver.maxResultSize"] == "3g"
    assert c["spark.sql.shuffle.partitions"] == "400"
    # the embedded-only keys are left to the cluster: executors elsewhere must reach the driver
    for key in ("spark.driver.host", "spark.driver.bindAddress", "spark.default.parallelism"):
        assert key not in c
    # master-independent defaults stay
    assert c["spark.python.worker.reuse"] == "true"
    # the caller's settings (tfront wcc --conf / --master) win over spark-submit's
    c = session_conf("local", conf={"spark.master": "local-cluster[2,1,1024]",
                                    "spark.sql.shuffle.partitions": "3"}, submitted=submitted)
    assert c["spark.master"] == "local-cluster[2,1,1024]"
    assert c["spark.sql.shuffle.partitions"] == "3"
    # nothing submitted: the preset, loopback included
    c = session_conf("local", submitted={})
    assert c == spark_conf("local")
    assert c["spark.driver.host"] == "127.0.0.1"


def test_driver_memory_is_sized_from_the_machine():
    total = machine_memory()
    assert total > 0
    chosen = parse_memory(spark_conf("local")["spark.driver.memory"])
    assert chosen == default_driver_memory(total)
    assert (1 << 30) <= chosen <= max(1 << 30, DRIVER_MEMORY_SHARE * total)
    assert parse_memory(spark_conf("local")["spark.driver.maxResultSize"]) == chosen // 2 >> 20 << 20
    assert default_driver_memory(24 << 30) == 33 << 28            # 35 % of 24 GiB, in 256 MiB
    assert default_driver_memory(512 << 20) == 1 << 30            # never below Spark's 1g
    assert format_memory(default_driver_memory(1 << 40)) == "64g"  # nor above 64g
    with pytest.raises(ConfigError, match=r"memory size '8 gigs' is not a whole number"):
        parse_memory("8 gigs")


def test_cli_accepts_repeated_conf_and_driver_memory(capsys):
    args = _parser().parse_args(["wcc", "g.txt", "--conf", "spark.executor.memory=4g",
                                 "--conf", "spark.executor.cores=2", "--driver-memory", "8G"])
    assert args.conf == [("spark.executor.memory", "4g"), ("spark.executor.cores", "2")]
    assert args.driver_memory == "8g"
    assert _parser().parse_args(["wcc", "g.txt"]).conf is None
    for bad, word in ((["--conf", "executor.memory=4g"], "--conf"), (["--conf", "spark.x"], "--conf"),
                      (["--driver-memory", "1.5g"], "--driver-memory"),
                      (["--driver-memory", "8"], "--driver-memory")):
        with pytest.raises(SystemExit):
            _parser().parse_args(["wcc", "g.txt", *bad])
        assert f"argument {word}:" in capsys.readouterr().err


# -- the driver-finish limit -------------------------------------------------------------------

def test_driver_finish_rows_follows_the_driver_heap(spark, monkeypatch):
    """Before: a fixed 2^24 rows whatever the heap (1g: out of memory from about 8M edges)."""
    monkeypatch.delenv("TFRONT_WCC_DRIVER_ROWS", raising=False)
    heap = driver_heap_bytes(spark)
    rows, why = driver_finish_rows(spark)
    assert 0 < rows <= heap // DRIVER_JVM_BYTES_PER_ROW
    assert why
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "123")
    assert driver_finish_rows(spark) == (123, "$TFRONT_WCC_DRIVER_ROWS")
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "-4")
    with pytest.raises(ConfigError, match=r"TFRONT_WCC_DRIVER_ROWS must be a non-negative"):
        driver_finish_rows(spark)


# -- subprocesses: a real cluster master, and a driver out of memory ----------------------------

def _env(**extra):
    import pyspark

    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT",
                                                            "PYSPARK_GATEWAY_SECRET")}
    env.update(SPARK_HOME=os.path.dirname(pyspark.__file__), PYSPARK_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", TFRONT_BACKEND="cpu", **extra)
    return env


@pytest.mark.slow
def test_spark_submit_on_local_cluster_keeps_its_master_and_labels_are_right(tmp_path):
    """``spark-submit --master local-cluster[2,1,1024]`` (two workers, separate executor
    JVMs) runs ``tfront wcc`` through ``spark_plugin/tfront_submit.py``. Before: the CLI
    replaced the master with local[*] and bound the driver to loopback. Two epochs, each one
    Spark job on the executors finished by the driver (the all-Spark loop on this master took
    minutes on the shared 2-core machine; the loop itself is tested on local[2,4])."""
    import pyspark

    rng = np.random.default_rng(11)
    n = 2000
    src, dst = rng.integers(0, 2 * n, n), rng.integers(0, 2 * n, n)
    pq.write_table(pa.table({"src": src, "dst": dst}), tmp_path / "edges.parquet")
    submit = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")
    script = ROOT / "spark_plugin" / "tfront_submit.py"
    out = tmp_path / "labels"
    cmd = [submit, "--master", "local-cluster[2,1,1024]", "--conf", "spark.ui.enabled=false",
           "--conf", "spark.executor.memory=900m", str(script),
           "wcc", str(tmp_path / "edges.parquet"), "--epochs", "2", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=480, cwd=tmp_path,
                          env=_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # spark-submit's PythonRunner sends the program's stderr to its stdout
    info = [l for l in (proc.stdout + proc.stderr).splitlines()
            if l.startswith("tfront wcc: Spark master")]
    assert info and info[0].startswith("tfront wcc: Spark master local-cluster[2,1,1024]; "
                                       "driver memory 1g (Spark's default; "), info
    assert "executor memory 900m" in info[0]
    assert [l.split(":")[0] for l in proc.stdout.splitlines() if l.startswith("epoch")] == \
        ["epoch 0", "epoch 1"]
    labels = pq.read_table(out).to_pydict()
    for e, cut in enumerate((n // 2, n)):
        want = union_find_components(src[:cut], dst[:cut])
        got = {v: c for ep, v, c in zip(labels["epoch"], labels["vertex"], labels["component"])
               if ep == e}
        assert got == want, f"epoch {e}"


@pytest.mark.slow
def test_a_driver_out_of_memory_exits_with_a_named_error_not_a_hang(tmp_path):
    """A 64 MB driver heap given 1M edges on Spark (the driver finish off: an epoch finished on
    the driver no longer goes through the JVM). Before: no --driver-memory; with 1g and
    8M-20M edges the JVM ran out of heap and the job sometimes hung in task-result-getter. Now
    the JVM exits (ExitOnOutOfMemoryError) and tfront names the error, exit status 2."""
    rng = np.random.default_rng(5)
    n = 1_000_000
    edges = tmp_path / "edges.txt"
    lines = np.char.add(np.char.add(rng.integers(0, n, n).astype(str), " "),
                        rng.integers(0, n, n).astype(str))
    edges.write_text("\n".join(lines.tolist()) + "\n")
    cmd = [sys.executable, "-m", "engine.cli.main", "wcc", str(edges), "--driver-memory", "64m",
           # Spark refuses heaps below 450 MB at start-up unless told its memory for tests
           "--conf", "spark.testing.memory=600000000"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env=_env(TFRONT_WCC_DRIVER_ROWS="0"))
    except subprocess.TimeoutExpired as e:   # the failure this test is about: a hang
        pytest.fail(f"tfront wcc hung after the driver ran out of memory: {e}")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    # the session started (the job, not start-up, ran out of heap), then the named error
    started = proc.stderr.find("tfront wcc: starting Spark (local[*]) ...")
    failed = proc.stderr.find("tfront wcc: error: the Spark driver JVM ran out of memory")
    assert 0 <= started < failed, proc.stderr[-3000:]
    assert "larger --driver-memory (this run's heap: 64m)" in proc.stderr
    assert "Traceback" not in proc.stderr
