"""perf.graphs and perf.bench_wcc: the WCC benchmark's graph generators (determinism, sizes,
grid structure, R-MAT degree skew, exact component counts), its scipy baseline on tiny graphs,
its table / targets on a synthetic result, and (``spark``) GraphX ``connectedComponents``
through the JVM gateway on a few edges."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from graph_cases import union_find_components
from perf import bench_wcc as bw
from perf import graphs as G
from perf.spark_jobs import JobCount


# --- generators ----------------------------------------------------------------------------

def test_rmat_deterministic_and_sized():
    s1, d1 = G.rmat(10, 5000, seed=7)
    s2, d2 = G.rmat(10, 5000, seed=7)
    s3, _ = G.rmat(10, 5000, seed=8)
    assert s1.dtype == np.int64 and d1.dtype == np.int64
    assert s1.size == d1.size == 5000
    assert np.array_equal(s1, s2) and np.array_equal(d1, d2)
    assert not np.array_equal(s1, s3)
    assert s1.min() >= 0 and max(s1.max(), d1.max()) < 1 << 10


def test_rmat_quadrant_probabilities_without_permutation():
    # one bit level: the top bit of (src, dst) is the quadrant, frequencies ~ (a, b, c, d)
    s, d = G.rmat(1, 200_000, seed=3, permute=False)
    freq = np.bincount(s * 2 + d, minlength=4) / s.size
    assert np.allclose(freq, G.RMAT_PROBS, atol=0.01), freq


def test_rmat_degree_skew():
    s, d = G.rmat(14, 200_000, seed=1)
    deg = np.bincount(np.concatenate([s, d]), minlength=1 << 14)
    deg = deg[deg > 0]
    mean = deg.mean()
    # power-law-ish: the maximum degree is far above the mean, and the top 1% of vertices
    # hold a large share of the edge endpoints (a uniform random graph: max ~ 2x mean, ~2%)
    assert deg.max() > 20 * mean
    top = np.sort(deg)[::-1][: max(1, deg.size // 100)]
    assert top.sum() / deg.sum() > 0.15
    grid_like = np.bincount(np.random.default_rng(0).integers(0, 1 << 14, 400_000))
    assert deg.std() / mean > 3 * (grid_like.std() / grid_like.mean())


def test_grid_structure():
    n = 7
    s, d = G.grid(n)
    assert s.size == 2 * n * (n - 1)
    pairs = set(zip(s.tolist(), d.tolist()))
    assert len(pairs) == s.size                                   # no duplicates
    for u, v in pairs:                                            # right or down neighbours
        assert (v == u + 1 and u // n == v // n) or v == u + n
    deg = np.bincount(np.concatenate([s, d]), minlength=n * n)
    assert deg.min() == 2 and deg.max() == 4                      # corners 2, interior 4
    assert int((deg == 2).sum()) == 4 and int((deg == 4).sum()) == (n - 2) ** 2
    assert G.scipy_components(s, d) == (n * n, 1)
    assert G.grid(1)[0].size == 0


def test_small_components_exact_count_and_determinism():
    s, d = G.small_components(500, min_size=2, max_size=9, extra=0.5, seed=4)
    s2, d2 = G.small_components(500, min_size=2, max_size=9, extra=0.5, seed=4)
    assert np.array_equal(s, s2) and np.array_equal(d, d2)
    vertices, comps = G.scipy_components(s, d)
    assert comps == 500 == len(set(union_find_components(s, d).values()))
    assert 500 * 2 <= vertices <= 500 * 9
    assert s.size >= vertices - 500                               # at least the trees
    assert np.unique(np.concatenate([s, d])).size == vertices     # ids are 0..vertices-1
    assert max(s.max(), d.max()) == vertices - 1


def test_generators_reject_bad_arguments():
    with pytest.raises(ValueError):
        G.rmat(0, 10)
    with pytest.raises(ValueError):
        G.rmat(4, 10, probs=(0.5, 0.5, 0.5, 0.5))
    with pytest.raises(ValueError):
        G.grid(0)
    with pytest.raises(ValueError):
        G.small_components(10, min_size=1)


def test_ensure_graph_writes_cache_once(tmp_path):
    spec = G.GraphSpec("t", "small", {"k": 30, "min_size": 2, "max_size": 5, "seed": 2})
    meta = G.ensure_graph(spec, tmp_path)
    assert meta["components"] == 30 and meta["edges"] > 0
    import pyarrow.parquet as pq

    table = pq.read_table(meta["parquet"])
    assert table.schema.names == ["src", "dst"]
    assert str(table.schema.field("src").type) == "int64"
    s, d = G.read_snap(meta["txt"])
    assert np.array_equal(s, table.column("src").to_numpy())
    assert np.array_equal(d, table.column("dst").to_numpy())
    assert Path(meta["txt"]).read_text().startswith("#")
    mtime = Path(meta["parquet"]).stat().st_mtime_ns
    again = G.ensure_graph(spec, tmp_path)                        # cached: not rewritten
    assert Path(meta["parquet"]).stat().st_mtime_ns == mtime
    assert again["components"] == 30
    assert json.loads(Path(meta["meta"]).read_text())["edges"] == meta["edges"]


# --- scipy baseline and reporting ----------------------------------------------------------

def test_scipy_baseline_tiny(tmp_path):
    # two components {1,2,3} and {10,11}, a self-loop component {7}; ids 0, 4-6, 8, 9 unused
    src = np.array([1, 2, 10, 7], dtype=np.int64)
    dst = np.array([2, 3, 11, 7], dtype=np.int64)
    path = tmp_path / "e.parquet"
    G.write_parquet(path, src, dst)
    rec = bw.scipy_wcc(str(path))
    assert rec["components"] == 3 and rec["vertices"] == 6
    assert rec["job_s"] >= rec["cc_s"] >= 0
    assert G.scipy_components(src, dst) == (6, 3)
    rec = bw.run_one("scipy", str(path), master="local[1]", partitions=1, driver_memory="1g",
                     checkpoint_interval=10)
    assert rec["components"] == 3 and rec["peak_total_kib"] > 0


def test_master_cores():
    assert bw.master_cores("local[2]") == 2
    assert bw.master_cores("local[3,4]") == 3
    assert bw.master_cores("local") == 1


def test_large_input_runs_use_the_machine_sized_driver_memory(monkeypatch):
    """``--driver-memory auto`` leaves spark.driver.memory to the local preset (sized from the
    machine, as tfront wcc does); ``--epochs`` reaches the child; 20M/50M-edge graphs exist."""
    assert "spark.driver.memory" not in bw.spark_settings("local[2]", 2, "auto", 10)
    assert bw.spark_settings("local[2]", 2, "8g", 10)["spark.driver.memory"] == "8g"
    args = bw.build_parser().parse_args(["--graphs", "rmat20m,rmat50m", "--driver-memory",
                                         "auto", "--epochs", "4"])
    assert args.graphs == ["rmat20m", "rmat50m"] and args.epochs == 4
    args.partitions = 2
    seen = []

    def popen(cmd, **kw):   # the child's command line, without starting it
        seen.append(cmd)
        raise OSError("not started")

    monkeypatch.setattr(bw.subprocess, "Popen", popen)
    with pytest.raises(OSError, match="not started"):
        bw.run_child("ours", {"name": "g", "parquet": "g.parquet", "txt": "g.txt"}, args)
    cmd = seen[0]
    assert cmd[cmd.index("--epochs") + 1] == "4" and cmd[cmd.index("--driver-memory") + 1] == "auto"
    assert G.GRAPHS["rmat20m"].params["m"] == 20_000_000
    assert G.GRAPHS["rmat50m"].params["m"] == 50_000_000


def test_table_speedups_and_targets_on_synthetic_runs():
    runs = [
        {"graph": "grid300", "system": "ours", "status": "ok", "whole_s": 10.0, "job_s": 4.0,
         "tracking_share": 0.02, "components": 1, "components_ok": True},
        {"graph": "grid300", "system": "ours-spark", "status": "ok", "whole_s": 20.0,
         "job_s": 14.0, "spark_jobs": 40, "spark_jobs_exact": True, "spark_jobs_per_epoch": 40.0,
         "rounds": 5, "components": 1, "components_ok": True},
        {"graph": "grid300", "system": "graphx", "status": "ok", "whole_s": 120.0, "job_s": 110.0,
         "components": 1, "components_ok": True},
        {"graph": "grid300", "system": "scipy", "status": "failed", "error": "boom"},
        {"graph": "grid1000", "system": "ours", "status": "timeout", "error": "slow",
         "timed_out": True, "whole_s_at_least": 400.0, "job_s_at_least": 390.0},
    ]
    graphs = ["grid300", "grid1000"]
    metas = {"grid300": {"diameter": 598}, "grid1000": {"diameter": 1998}}
    sp = bw.speedups(runs, graphs)
    assert sp["grid300"]["ours"]["whole"] == pytest.approx(12.0)
    assert sp["grid300"]["ours"]["job"] == pytest.approx(27.5)
    assert sp["grid300"]["ours-spark"]["whole"] == pytest.approx(6.0)
    assert sp["grid300"]["ours"]["whole_bound"] == "="
    targets = {t["target"]: t for t in bw.evaluate_targets(bw.TARGETS, runs, graphs, metas, sp)}
    by = {t.text: targets[t.text]["verdict"] for t in bw.TARGETS}
    assert by[bw.TARGETS[0].text] == "PASS"                        # 12x >= 10x on grid300
    assert by[bw.TARGETS[1].text] == "n/a"                         # rmat10m not run
    assert by[bw.TARGETS[2].text] == "PASS"                        # 40 <= 59.8 jobs per epoch
    assert targets[bw.TARGETS[2].text]["limit"] == pytest.approx(59.8)
    assert by[bw.TARGETS[3].text] == "FAIL"                        # grid1000 timed out
    assert by[bw.TARGETS[4].text] == "PASS"
    results = {"runs": runs, "speedups": sp,
               "targets": bw.evaluate_targets(bw.TARGETS, runs, graphs, metas, sp),
               "parameters": {"master": "local[2]", "partitions": 2, "driver_memory": "8g",
                              "checkpoint_interval": 10, "graphs": graphs,
                              "systems": list(bw.SYSTEMS)},
               "commit": "abc", "dirty": False, "machine": {"cpu_count": 2}}
    table = bw.format_table(results)
    assert "grid300" in table and "12.00x" in table and "timeout" in table
    assert ">400.0" in table and "40.0" in table                  # lower bound, jobs per epoch


# --- GraphX through the JVM gateway --------------------------------------------------------

@pytest.mark.spark
def test_graphx_connected_components_tiny(tmp_path):
    pytest.importorskip("pyspark")
    # components {1,2,3}, {4,5}, {7} (self-loop), {20,21,22,23} (a cycle)
    src = np.array([1, 2, 4, 7, 20, 21, 22, 23], dtype=np.int64)
    dst = np.array([2, 3, 5, 7, 21, 22, 23, 20], dtype=np.int64)
    path = tmp_path / "e.txt"
    G.write_snap(path, src, dst, "tiny test graph")
    assert G.scipy_components(src, dst) == (10, 4)
    from pyspark import SparkContext

    # another test module's session (tests/spark) may still be running: reuse, do not stop it
    shared = SparkContext._active_spark_context is not None
    settings = bw.spark_settings("local[2]", 2, "1g", 2)
    spark = bw.start_spark(settings, str(tmp_path / "ckpt"), "test-graphx-wcc")
    try:
        sc = spark.sparkContext
        if not shared:
            assert sc.getConf().get("spark.graphx.pregel.checkpointInterval") == "2"
        scheduled = int(sc._jsc.sc().dagScheduler().nextJobId())   # Spark's own job ids
        out = bw.graphx_connected_components(sc, str(path), 2)
        mem = bw._spark_memory(sc)
        # the count sees jobs of any job group and thread, as the scheduler numbers them
        count = JobCount(sc)
        before = int(sc._jsc.sc().dagScheduler().nextJobId())
        sc.setJobGroup("other", "a job group of its own")
        sc.parallelize(range(4), 2).count()
        sc.setLocalProperty("spark.jobGroup.id", None)
        worker = threading.Thread(target=lambda: sc.parallelize(range(4), 2).sum())
        worker.start()
        worker.join()
        counted = count.stop()
        ran = int(sc._jsc.sc().dagScheduler().nextJobId()) - before
    finally:
        if not shared:
            spark.stop()
    assert out["vertices"] == 10
    assert out["components"] == 4
    assert mem["jvm_hwm_kib"] and mem["jvm_hwm_kib"] > 0
    # GraphX's timed part ran Spark jobs (loading, Pregel supersteps); the check after it more
    assert out["spark_jobs_exact"] and 1 <= out["spark_jobs"] < before - scheduled
    assert counted == {"spark_jobs": ran, "spark_jobs_exact": True} and ran == 2
