"""Deltas produced in real Spark jobs, consolidated on the executors and applied exactly once.

Every test compares with the reference tracker fed the same deltas directly, or with a clean
run through the same path.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from engine import TimestampWidthError, UnknownLocationError
from spark_plugin import (DeltaSink, FrontierService, MissingBatchError, PartitionConsolidator,
                          SchemaError, apply_frame, collect_arrow, consolidate_frame)
from spark_plugin.schema import SPARK_DDL
from spark_plugin.service.streaming import RAW_DDL

from spark_cases import full_state, reference_states, state, wcc_rounds

pytestmark = pytest.mark.spark

PARTITIONS = 2


#: the ``rounds`` fixture (conftest.py): 4 random delta rounds, seed 2
ROUNDS = (4, 2)


def frame(spark, rows):
    """Raw deltas spread over ``PARTITIONS`` partitions by location (deterministic, so a
    retried task sees the same rows)."""
    return spark.createDataFrame(rows, RAW_DDL).repartition(PARTITIONS, "loc")


def test_job_deltas_give_the_reference_frontiers(spark, graph, rounds):
    svc = FrontierService(graph)
    expected = reference_states(graph, rounds)
    for r, rows in enumerate(rounds):
        res = apply_frame(svc, frame(spark, rows), producer="job", seq=r)
        assert sorted(res.applied) == [(f"job-{p}", r) for p in range(PARTITIONS)]
        assert state(svc) == expected[r]
    wcc, wcc_batches = wcc_rounds()
    svc = FrontierService(wcc)
    expected = reference_states(wcc, wcc_batches)
    for r, rows in enumerate(wcc_batches):
        apply_frame(svc, frame(spark, rows), producer="wcc", seq=r)
        assert state(svc) == expected[r]


def test_tasks_failing_on_their_first_attempt_apply_once(spark, graph, rounds, tmp_path):
    """Every task raises on attempt 0; Spark retries it (local[2,4]) and the retry
    re-produces the same (producer, seq)."""
    failures = tmp_path / "failures"
    failures.mkdir()
    failures_dir = str(failures)

    def fail_first_attempt(inner):
        def run(batches):
            from pyspark import TaskContext

            ctx = TaskContext.get()
            if ctx.attemptNumber() == 0:
                open(os.path.join(failures_dir, f"{ctx.stageId()}-{ctx.partitionId()}"), "w").close()
                raise RuntimeError("injected failure on the first attempt")
            yield from inner(batches)
        return run

    clean, retried = FrontierService(graph), FrontierService(graph)
    for r, rows in enumerate(rounds):
        apply_frame(clean, frame(spark, rows), producer="job", seq=r)
        fn = fail_first_attempt(PartitionConsolidator(clean.width, producer="job", seq=r))
        res = retried.apply(collect_arrow(frame(spark, rows).mapInArrow(fn, SPARK_DDL)))
        assert sorted(res.applied) == [(f"job-{p}", r) for p in range(PARTITIONS)]
    assert len(os.listdir(failures)) == PARTITIONS * len(rounds)
    assert full_state(retried) == full_state(clean)
    assert state(retried) == reference_states(graph, rounds)[-1]


def test_a_micro_batch_delivered_twice_is_applied_once(spark, graph, rounds):
    clean, twice = FrontierService(graph), FrontierService(graph)
    clean_sink, twice_sink = DeltaSink(clean, producer="stream"), DeltaSink(twice, producer="stream")
    for batch_id, rows in enumerate(rounds):
        df = frame(spark, rows)
        clean_sink(df, batch_id)
        twice_sink(df, batch_id)
        twice_sink(df, batch_id)                      # redelivered after a failure
        assert twice_sink.last_result.duplicates == [("stream", batch_id)]
    assert state(twice) == state(clean) == reference_states(graph, rounds)[-1]
    assert twice.status().duplicates == len(rounds) and clean.status().duplicates == 0
    assert twice.status().next_seq == clean.status().next_seq == {"stream": len(rounds)}


def test_a_missing_sequence_number_is_reported_and_held(spark, graph, rounds):
    svc = FrontierService(graph)
    expected = reference_states(graph, rounds)
    for r in (0, 2, 3):
        apply_frame(svc, frame(spark, rounds[r]), producer="job", seq=r)
    assert state(svc) == expected[0]
    assert [(g.producer, g.missing, g.held) for g in svc.gaps()] == [
        (f"job-{p}", ((1, 1),), (2, 3)) for p in range(PARTITIONS)]
    with pytest.raises(MissingBatchError, match=r"producer 'job-0': seq 1; producer 'job-1': seq 1"):
        svc.check_complete()
    res = apply_frame(svc, frame(spark, rounds[1]), producer="job", seq=1)
    assert sorted(res.applied) == sorted((f"job-{p}", s) for p in range(PARTITIONS)
                                         for s in (1, 2, 3))
    svc.check_complete()
    assert state(svc) == expected[-1]


def test_bad_frames_raise_named_errors_and_apply_nothing(spark, graph, rounds):
    svc = FrontierService(graph)
    apply_frame(svc, frame(spark, rounds[0]), producer="job", seq=0)
    before = full_state(svc)
    no_diff = spark.createDataFrame([(3, [0, 1])], "loc int, ts array<bigint>")
    with pytest.raises(SchemaError, match=r"no column 'diff'; columns present: loc int, "
                                          r"ts array<bigint>"):
        apply_frame(svc, no_diff, producer="job", seq=1)
    text_ts = spark.createDataFrame([(3, "0,1", 1)], "loc int, ts string, diff bigint")
    with pytest.raises(SchemaError, match=r"column 'ts' has type string, expected array<bigint>"):
        apply_frame(svc, text_ts, producer="job", seq=1)
    unknown = frame(spark, rounds[1] + [(graph.num_locations, [0, 0], 1)])
    with pytest.raises(UnknownLocationError, match=rf"location {graph.num_locations} does not "
                                                   rf"exist"):
        apply_frame(svc, unknown, producer="job", seq=1)
    wide = frame(spark, rounds[1] + [(3, [0, 1, 0], 1)])
    with pytest.raises(TimestampWidthError, match=r"\(0, 1, 0\) has 3 coordinates, expected 2"):
        apply_frame(svc, wide, producer="job", seq=1)
    assert full_state(svc) == before
    apply_frame(svc, frame(spark, rounds[1]), producer="job", seq=1)
    assert state(svc) == reference_states(graph, rounds)[1]


def test_consolidation_happens_on_the_executors(spark, graph, rounds):
    rows = rounds[0] * 3
    out = collect_arrow(consolidate_frame(frame(spark, rows), 2, producer="job", seq=0))
    net = {}
    for loc, ts, d in rows:
        net[(loc, tuple(ts))] = net.get((loc, tuple(ts)), 0) + d
    assert out.num_rows <= sum(1 for v in net.values() if v) + PARTITIONS
    assert out.num_rows < len(rows) / 3


CLUSTER_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from pyspark import TaskContext
    from pyspark.sql import SparkSession
    from spark_plugin import FrontierService, apply_frame
    from spark_plugin.service.device import choose_device, task_device
    from spark_plugin.service.streaming import RAW_DDL
    sys.path.insert(0, sys.argv[2])
    from spark_cases import loop_graph, random_rounds, reference_states, state

    script = sys.argv[1]
    spark = (SparkSession.builder.master("local-cluster[1,1,1024]")
             .config("spark.ui.enabled", "false")
             .config("spark.worker.resource.gpu.amount", "1")
             .config("spark.worker.resource.gpu.discoveryScript", script)
             .config("spark.executor.resource.gpu.amount", "1")
             .config("spark.executor.resource.gpu.discoveryScript", script)
             .config("spark.task.resource.gpu.amount", "1")
             .getOrCreate())

    def probe(_):
        ctx = TaskContext.get()
        res = ctx.resources()
        yield {"addresses": list(res["gpu"].addresses) if "gpu" in res else None,
               "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
               "device": task_device(), "pure": choose_device({}, res)}

    probes = spark.sparkContext.parallelize(range(2), 2).mapPartitions(probe).collect()
    # the consolidation job on a task that holds a GPU address but no usable GPU (no CuPy)
    graph = loop_graph()
    rounds = random_rounds(graph, rounds=2, seed=4)
    svc = FrontierService(graph)
    for r, rows in enumerate(rounds):
        apply_frame(svc, spark.createDataFrame(rows, RAW_DDL).repartition(2, "loc"),
                    producer="job", seq=r)
    ok = state(svc) == reference_states(graph, rounds)[-1]
    spark.stop()
    print("RESULT " + json.dumps({"probes": probes, "frontiers_ok": ok}))
""")


def test_local_cluster_tasks_get_a_gpu_address_and_choose_its_device(tmp_path):
    """A real ``local-cluster`` (separate worker and executor JVMs) whose fake discovery
    script hands every task GPU "0". In its own process: one SparkContext per process."""
    import pyspark

    script = tmp_path / "gpus.sh"
    script.write_text('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0"]}\'\n')
    script.chmod(0o755)
    main = tmp_path / "cluster_probe.py"
    main.write_text(CLUSTER_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(SPARK_HOME=os.path.dirname(pyspark.__file__), PYSPARK_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/spark: spark_cases
    proc = subprocess.run([sys.executable, str(main), str(script), here], capture_output=True,
                          text=True, env=env, timeout=240)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["frontiers_ok"]
    assert result["probes"] == [{"addresses": ["0"], "cuda_visible_devices": None,
                                 "device": 0, "pure": 0}] * 2
