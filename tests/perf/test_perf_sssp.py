"""perf.bench_sssp: its scipy baseline and fingerprints on tiny graphs, the source it picks,
its table and speed-ups on synthetic runs, and (``spark``) GraphX ``ShortestPaths`` through the
JVM gateway on a few edges, checked against scipy."""

from __future__ import annotations


import numpy as np
import pytest

from perf import bench_sssp as bs
from perf import graphs as G

# 1 -> 2 -> 3, 1 -> 4, 4 -> 3, 5 -> 1 (5 unreachable from 1), 7 -> 7
SRC = np.array([1, 2, 1, 4, 5, 7], np.int64)
DST = np.array([2, 3, 4, 3, 1, 7], np.int64)


def test_scipy_bfs_and_fingerprint_on_a_tiny_graph(tmp_path):
    path = tmp_path / "e.parquet"
    G.write_parquet(path, SRC, DST)
    rec = bs.scipy_bfs(str(path), 1)
    assert (rec["reached"], rec["dist_sum"], rec["dist_max"]) == (4, 0 + 1 + 2 + 1, 2)
    assert rec["digest"] == bs.fingerprint(np.array([4, 3, 2, 1]), np.array([1, 2, 1, 0]))["digest"]
    assert rec["digest"] != bs.fingerprint(np.array([1, 2, 3, 4]), np.array([0, 1, 2, 2]))["digest"]
    meta = {"kind": "rmat", "parquet": str(path)}
    assert bs.pick_source(meta) == 1          # out-degree 2, the largest
    assert bs.pick_source({"kind": "grid"}) == 0


def test_table_and_speedups_on_synthetic_runs():
    runs = [{"graph": "g", "system": "ours", "status": "ok", "whole_s": 10.0, "job_s": 2.0,
             "rounds": 7, "reached": 5, "equal_to_scipy": True, "peak_total_kib": 2048},
            {"graph": "g", "system": "graphx", "status": "ok", "whole_s": 30.0, "job_s": 8.0,
             "reached": 5, "equal_to_scipy": True},
            {"graph": "g", "system": "scipy", "status": "timeout", "error": "slow"}]
    sp = bs.speedups(runs, ["g"])
    assert sp["g"] == {"whole": pytest.approx(3.0), "job": pytest.approx(4.0)}
    table = bs.format_table({"runs": runs, "speedups": sp, "commit": "abc", "dirty": False,
                             "parameters": {"master": "local[2]", "partitions": 2},
                             "machine": {"cpu_count": 2}})
    assert "3.00x" in table and "timeout" in table and "yes" in table


@pytest.mark.spark
def test_graphx_shortest_paths_equals_scipy_on_a_tiny_graph(tmp_path):
    pytest.importorskip("pyspark")
    txt, parquet = tmp_path / "e.txt", tmp_path / "e.parquet"
    G.write_snap(txt, SRC, DST)
    G.write_parquet(parquet, SRC, DST)
    from pyspark import SparkContext

    shared = SparkContext._active_spark_context is not None   # another module's session
    spark = bs.start_spark(bs.spark_settings("local[2]", 2, "1g", 2), str(tmp_path / "ckpt"),
                           "test-graphx-sssp")
    try:
        out = bs.graphx_shortest_paths(spark.sparkContext, str(txt), 1, 2, str(tmp_path))
    finally:
        if not shared:
            spark.stop()
    ref = bs.scipy_bfs(str(parquet), 1)
    assert out["vertices"] == 6
    assert {k: out[k] for k in ("reached", "dist_sum", "dist_max", "digest")} == \
        {k: ref[k] for k in ("reached", "dist_sum", "dist_max", "digest")}
