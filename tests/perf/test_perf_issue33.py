"""perf.bench_issue33: the rows run end to end (on small stand-ins for their sizes) and the JSON,
table and plot say what the module promises. A smoke test, not a timing."""

from __future__ import annotations

import json

import pytest

from perf import bench_issue33 as b


@pytest.fixture
def small_rows(monkeypatch):
    monkeypatch.setattr(b, "ROWS", {"psi N=1000": ("psi", 30, 0),
                                    "churn N=1000 B=1e5": ("churn", 20, 300),
                                    "churn N=5000 B=1e5": ("churn", 40, 300)})


def test_bench_issue33_smoke(tmp_path, capsys, small_rows):
    out, png = tmp_path / "results" / "issue33.json", tmp_path / "issue33.png"
    assert b.main(["--repeat", "3", "--out", str(out), "--plot", str(png), "--quiet"]) == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "machine", "parameters", "warmup", "runs", "rows"):
        assert key in data
    assert [r["row"] for r in data["rows"]] == list(b.ROWS)
    assert len(data["runs"]) == 9
    for row in data["rows"]:
        assert row["calls"] == (3 if row["unit"] == "s" else 9)
        assert row["ratio_median"] > 0 and isinstance(row["target_met"], bool)
        assert row["reference"]["range"] == list(b.REFERENCE[row["row"]]["range"])
    churn = [r for r in data["runs"] if r["row"].startswith("churn")]
    assert all(len(r["batches"]) == 3 and "apply_s" in r["batches"][0] for r in churn)
    text = capsys.readouterr().out
    assert "psi N=1000" in text and "churn N=5000 B=1e5" in text and "1.28-1.37 s" in text
    assert png.stat().st_size > 0


def test_bench_issue33_rejects_bad_arguments(small_rows):
    for argv in (["--repeat", "2"], ["--rows", "psi:N=5"], ["--rep", "3"]):
        with pytest.raises(SystemExit):
            b.main(argv)
