"""perf.bench_operate: the benchmark runs end to end on the smallest settings, its report and
its hand-written deltas leave the same frontiers, and it writes the JSON it promises. A smoke
test, not a timing."""

from __future__ import annotations

import json

from perf import bench_operate as bo


def test_bench_operate_smoke(tmp_path, capsys):
    out = tmp_path / "results" / "operate.json"
    png = tmp_path / "operate.png"
    rc = bo.main(["--rows", "100,300", "--times", "7", "--repeat", "2", "--out", str(out),
                  "--plot", str(png)])
    assert rc == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "dirty", "machine", "parameters", "runs", "cases",
                "consistency"):
        assert key in data, f"missing {key!r}; present: {sorted(data)}"
    assert data["consistency"] == []
    assert [c["rows"] for c in data["cases"]] == [100, 300]
    assert sorted({r["variant"] for r in data["runs"]}) == sorted(bo.VARIANTS)
    assert len(data["runs"]) == 2 * 2 * len(bo.VARIANTS)
    assert all(c["apply_over_by_hand"] > 0 for c in data["cases"])
    assert png.stat().st_size > 0
    assert "apply/by_hand" in capsys.readouterr().out
