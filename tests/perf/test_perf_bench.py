"""perf.bench_propagate: the benchmark runs end to end on the smallest settings and writes the
JSON it promises (commit, machine, parameters, raw runs, summary). A smoke test, not a timing."""

from __future__ import annotations

import json

from perf import bench_propagate as bp
from perf.common import int_list


def test_bench_propagate_smoke(tmp_path, capsys):
    out = tmp_path / "results" / "propagate.json"
    png = tmp_path / "propagate.png"
    rc = bp.main(["--sizes", "20", "--batches", "1e2", "--repeat", "1", "--variants", "edgewise",
                  "--out", str(out), "--plot", str(png), "--quiet"])
    assert rc == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "machine", "parameters", "warmup", "cases", "runs",
                "memory_runs", "skipped", "summary", "ratios", "consistency", "memory_method"):
        assert key in data, f"missing {key!r}; present: {sorted(data)}"
    for key in ("platform", "python", "numpy", "numba", "cpu_count"):
        assert key in data["machine"]
    assert data["parameters"]["sizes"] == [20] and data["parameters"]["batches"] == [100]
    assert data["warmup"]["edgewise"]["status"] == "ok"

    (run,) = data["runs"]
    assert (run["n"], run["b"], run["variant"], run["repeat"]) == (20, 100, "edgewise", 0)
    assert [x["kind"] for x in run["batches"]] == ["load", "churn", "churn", "churn", "drain"]
    for x in run["batches"]:
        for key in ("rows", "wall_s", "apply_s", "propagate_s", "emitted", "updates_per_s",
                    "maxrss_before_kib", "peak_kib"):
            assert key in x
        assert x["wall_s"] > 0
    assert run["batches"][0]["rows"] == 100 and run["nbytes_after_load"] > 0

    (row,) = data["summary"]
    assert row["status"] == "ok"
    for kind in ("load", "churn", "drain"):
        for key in ("wall_s_min", "wall_s_median", "apply_s_median", "propagate_s_median",
                    "emitted_median", "updates_per_s_median"):
            assert row[kind][key] is not None
    assert row["churn"]["batches"] == 3
    assert data["consistency"] == []
    assert png.stat().st_size > 0
    assert "edgewise" in capsys.readouterr().out


def test_lists_parse_exponents():
    assert int_list("1e3, 1e5,2000") == [1000, 100000, 2000]
    assert bp._variant_list("Edgewise,closure,edgewise") == ["edgewise", "closure"]
