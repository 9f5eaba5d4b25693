"""perf.systems, perf.spark_jobs and what the job benchmarks gained for issue 22 (item 6): the
path and road generators and ``--graphs all``, the ``ours-spark`` environment, ratios and
targets with bounds where a run timed out, a killed child's lower bounds, ``--partitioner``
and ``--graphx-timeout`` reaching the child, both benchmarks end to end on a tiny graph with
scipy alone, and the PNG with a timed-out bar. The Spark job count itself is checked against
Spark's scheduler in ``test_perf_wcc`` (it needs a session)."""

from __future__ import annotations

import doctest
import json
import sys

import numpy as np
import pytest

from perf import bench_sssp as bs
from perf import bench_wcc as bw
from perf import graphs as G
from perf import spark_jobs, systems
from perf.common import JOB_START_MARK, ChildRun, run_child_process


# --- graphs --------------------------------------------------------------------------------

def test_path_is_one_chain():
    s, d = G.path(6)
    assert s.tolist() == [0, 1, 2, 3, 4] and d.tolist() == [1, 2, 3, 4, 5]
    assert G.path(1)[0].size == 0
    assert G.GraphSpec("p", "path", {"n": 6}).diameter() == 5
    with pytest.raises(ValueError):
        G.path(0)


def test_road_is_a_grid_with_seeded_local_shortcuts():
    n, reach = 40, 3
    s, d = G.road(n, p=0.1, reach=reach, seed=5)
    s2, d2 = G.road(n, p=0.1, reach=reach, seed=5)
    assert np.array_equal(s, s2) and np.array_equal(d, d2)               # deterministic
    assert not np.array_equal(s, G.road(n, p=0.1, reach=reach, seed=6)[0])
    gs, gd = G.grid(n)
    m = gs.size
    assert np.array_equal(s[:m], gs) and np.array_equal(d[:m], gd)       # the grid first
    cs, cd = s[m:], d[m:]
    assert 0.05 * n * n < cs.size < 0.15 * n * n                         # ~p per vertex
    assert np.all(cs != cd)                                               # no self-loops
    assert np.all(np.abs(cs // n - cd // n) <= reach)                     # local: rows
    assert np.all(np.abs(cs % n - cd % n) <= reach)                       # and columns
    assert np.all(np.diff(cs) > 0)                                        # one per vertex
    assert G.scipy_components(s, d) == (n * n, 1)
    assert G.GraphSpec("r", "road", {"n": n}).diameter() is None
    with pytest.raises(ValueError):
        G.road(5, p=2.0)


def test_issue_graphs_and_all():
    assert G.graph_names("all") == list(G.ISSUE_GRAPHS)
    assert G.graph_names("tiny, all, tiny") == ["tiny", *G.ISSUE_GRAPHS]
    assert set(G.ISSUE_GRAPHS) == {"grid100", "grid300", "path100k", "rmat1m", "rmat10m", "road"}
    assert G.GRAPHS["path100k"].params["n"] == 100_000 and G.GRAPHS["path100k"].undirected
    assert G.GRAPHS["road"].undirected and G.GRAPHS["road"].params["n"] >= 300
    assert G.GRAPHS["grid300"].diameter() == 598
    with pytest.raises(Exception, match="unknown graph"):
        G.graph_names("nope")
    assert bw.build_parser().parse_args(["--graphs", "all"]).graphs == list(G.ISSUE_GRAPHS)
    assert bw.DEFAULT_GRAPHS == bs.DEFAULT_GRAPHS == ("grid100",)


def test_ensure_graph_records_direction_and_diameter(tmp_path):
    meta = G.ensure_graph(G.GraphSpec("p", "path", {"n": 50}, undirected=True), tmp_path)
    assert (meta["edges"], meta["components"], meta["diameter"], meta["undirected"]) == \
        (49, 1, 49, True)
    again = G.ensure_graph(G.GraphSpec("p", "path", {"n": 50}, undirected=True), tmp_path)
    assert again["diameter"] == 49 and again["undirected"]                # from the cache too


# --- systems, ratios, targets --------------------------------------------------------------

def test_doctests():
    for mod in (G, systems):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_ours_spark_forces_spark_and_ours_runs_the_default(monkeypatch):
    env = {"TFRONT_WCC_DRIVER_ROWS": "7", "PATH": "x"}
    assert systems.system_env("ours-spark", env, "TFRONT_WCC_DRIVER_ROWS")["TFRONT_WCC_DRIVER_ROWS"] == "0"
    assert "TFRONT_WCC_DRIVER_ROWS" not in systems.system_env("ours", env, "TFRONT_WCC_DRIVER_ROWS")
    assert systems.system_env("graphx", env, "TFRONT_WCC_DRIVER_ROWS") == env
    # the child's command line and environment, without starting it
    seen = []

    def popen(cmd, **kw):
        seen.append((cmd, kw["env"]))
        raise OSError("not started")

    monkeypatch.setattr(bw.subprocess, "Popen", popen)
    meta = {"name": "g", "parquet": "g.parquet", "txt": "g.txt", "source": 0,
            "sssp_undirected": True}
    for mod, var in ((bw, "TFRONT_WCC_DRIVER_ROWS"), (bs, "TFRONT_SSSP_DRIVER_ROWS")):
        args = mod.parse_args(mod.build_parser(), ["--partitioner", "locality",
                                                   "--graphx-timeout", "12", "--timeout", "99"])
        assert bw.system_timeout("graphx", args) == 12 and bw.system_timeout("ours", args) == 99
        with pytest.raises(OSError, match="not started"):
            mod.run_child("ours-spark", meta, args)
        cmd, env = seen[-1]
        assert env[var] == "0" and cmd[cmd.index("--partitioner") + 1] == "locality"
        assert (mod is bs) == ("--undirected" in cmd)
    args = bw.parse_args(bw.build_parser(), [])
    assert args.partitioner is None and "--partitioner" not in bw.system_args(args)


def test_ratio_bounds():
    ok = {"status": "ok", "whole_s": 10.0, "job_s": 2.0}
    gx = {"status": "ok", "whole_s": 50.0, "job_s": 30.0}
    out = {"status": "timeout", "whole_s_at_least": 100.0, "job_s_at_least": 80.0}
    assert systems.ratio(gx, ok, "job_s") == (15.0, "=")
    assert systems.ratio(out, ok, "whole_s") == (10.0, ">=")
    assert systems.ratio(gx, out, "job_s") == (30.0 / 80.0, "<=")
    assert systems.ratio(out, out, "job_s") == (None, "")
    assert systems.ratio({"status": "failed"}, ok, "job_s") == (None, "")
    assert systems.ratio({"status": "timeout", "job_s_at_least": None}, ok, "job_s") == (None, "")
    assert systems.fmt_time(out, "whole_s") == ">100.0" and systems.fmt_time(ok, "job_s") == "2.00"


def test_jobs_per_diameter_target_open_when_the_count_is_not_exact():
    t = [systems.Target("g", "jobs_per_diameter", 0.1, "x", system="ours-spark")]
    run = {"graph": "g", "system": "ours-spark", "status": "ok", "spark_jobs_per_epoch": 5.0,
           "spark_jobs_exact": False}
    e, = systems.evaluate_targets(t, [run], ["g"], {"g": {"diameter": 100}}, {})
    assert (e["verdict"], e["bound"]) == ("open", ">=")
    e, = systems.evaluate_targets(t, [dict(run, spark_jobs_per_epoch=11.0)], ["g"],
                                  {"g": {"diameter": 100}}, {})
    assert e["verdict"] == "FAIL"
    e, = systems.evaluate_targets(t, [], ["h"], {}, {})
    assert e["verdict"] == "n/a"


# --- a child killed at its timeout ---------------------------------------------------------

def test_timeout_gives_lower_bounds_from_the_job_start():
    # the child says its job started, then waits for ever (killed at the timeout)
    code = (f"import time, threading; print({JOB_START_MARK!r} + repr(time.time()), flush=True);"
            " threading.Event().wait()")
    run = run_child_process([sys.executable, "-S", "-c", code], timeout=3.0, mark="X ")
    assert run.timed_out and run.job_started_s is not None
    rec = {}
    assert run.outcome(rec, 3.0) is None
    assert rec["status"] == "timeout" and rec["timed_out"] is True
    assert rec["whole_s_at_least"] >= 3.0
    assert 0 < rec["job_s_at_least"] <= rec["whole_s_at_least"]
    assert "whole_s" not in rec and "job_s" not in rec
    rec = {}
    ChildRun(1.0, 0, {"job_s": 0.5}, "", None, False).outcome(rec, 3.0)
    assert rec["timed_out"] is False and rec["status"] == "ok"


# --- end to end without Spark, and the PNG -------------------------------------------------

@pytest.mark.parametrize("mod", [bw, bs], ids=["wcc", "sssp"])
def test_benchmark_end_to_end_with_scipy_on_a_tiny_graph(mod, tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    assert mod.main(["--graphs", "tiny", "--systems", "scipy", "--cache", str(tmp_path / "g"),
                     "--out", str(out), "--plot", str(png), "--quiet"]) == 0
    data = json.loads(out.read_text())
    run, = data["runs"]
    assert run["status"] == "ok" and run["timed_out"] is False and run["whole_s"] > 0
    assert [t["verdict"] for t in data["targets"]] == ["n/a"] * len(mod.TARGETS)
    assert data["parameters"]["graphx_timeout_s"] == data["parameters"]["timeout_s"]
    assert png.stat().st_size > 0


def test_plot_marks_a_timed_out_run(tmp_path):
    runs = [{"graph": "g", "system": "ours", "status": "ok", "whole_s": 9.0, "job_s": 2.0,
             "spark_jobs_per_epoch": 3.0},
            {"graph": "g", "system": "graphx", "status": "timeout", "timed_out": True,
             "whole_s_at_least": 300.0, "job_s_at_least": 290.0},
            {"graph": "g", "system": "scipy", "status": "failed", "error": "x"}]
    results = {"runs": runs, "parameters": {"graphs": ["g"],
                                            "systems": ["ours", "graphx", "scipy"]}}
    systems.plot_systems(results, tmp_path / "p.png", ["g"], title="t", dpi=50, fontsize=8)
    assert (tmp_path / "p.png").stat().st_size > 0


def test_spark_jobs_retention_is_raised():
    assert bw.spark_settings("local[2]", 2, "1g", 10)["spark.ui.retainedJobs"] == \
        str(spark_jobs.RETAINED_JOBS)
