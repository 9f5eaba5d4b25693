"""perf.bench_rollback: the benchmark runs end to end on the smallest settings, the two solvers
agree on its generated problems, and it writes the JSON it promises. A smoke test, not a timing."""

from __future__ import annotations

import json

from perf import bench_rollback as br


def test_bench_rollback_smoke(tmp_path, capsys):
    out = tmp_path / "results" / "rollback.json"
    png = tmp_path / "rollback.png"
    rc = br.main(["--procs", "10,30", "--times", "20", "--repeat", "2", "--reference-limit", "1e4", "--reference-limit-full", "1e3",
                  "--max-cells", "1e4", "--out", str(out), "--plot", str(png), "--quiet"])
    assert rc == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "dirty", "machine", "parameters", "runs", "cases",
                "skipped", "consistency"):
        assert key in data, f"missing {key!r}; present: {sorted(data)}"
    assert data["consistency"] == []
    assert [(c["guard"], c["n"]) for c in data["cases"]] == [
        ("simple", 10), ("simple", 30), ("full", 10), ("full", 30)]
    for c in data["cases"]:
        assert c["reference_s"] is not None and c["speedup"] > 0
        assert c["result"] in ("ok", "none", "nolargest") and c["rounds"] >= 1
    variants = [(r["guard"], r["n"], r["variant"]) for r in data["runs"]]
    assert variants.count(("full", 30, "batched")) == 2
    assert variants.count(("full", 30, "reference")) == 1
    assert png.stat().st_size > 0
    assert "batched" in capsys.readouterr().out


def test_generated_problem_is_valid():
    problem = br.generate_problem(50, 40, seed=3)
    problem.check()  # buffers, need, steps, Condition 4
    assert problem.ne * problem.ni == 40 and problem.n == 50 + 2
