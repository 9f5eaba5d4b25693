"""perf.count_witness: runs end to end on the smallest settings and writes the JSON it
promises; its counts are consistent (the witness rule never recomputes more targets in full
than the rule before it, and does fewer on the 12-operator chain with 1,000-row batches; its
only-producer refinement never more than the witness rule alone, nor fewer than without the
table's cap).
A smoke test of a count, not a timing."""

from __future__ import annotations

import json

from perf import count_witness as cw


def test_count_witness_smoke(tmp_path, capsys):
    out = tmp_path / "results" / "witness.json"
    assert cw.main(["--sizes", "12", "--batch", "50,1000", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "dirty", "machine", "parameters", "cases"):
        assert key in data, f"missing {key!r}; present: {sorted(data)}"
    assert [(c["n"], c["batch"]) for c in data["cases"]] == [(12, 50), (12, 1000)]
    for c in data["cases"]:
        assert c["churn_batches"] == 3
        assert 0 <= c["full_exact"] <= c["full"] <= c["full_witness"] <= c["full_before"] \
            <= c["reached"]
        assert c["incremental"] == c["reached"] - c["full"]
    assert data["cases"][1]["full"] < data["cases"][1]["full_before"]
    assert "reached" in capsys.readouterr().out
