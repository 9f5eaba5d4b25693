"""perf.bench_exchange: the benchmark runs end to end at a tiny size -- the simulator and two
real worker processes, every policy -- agrees with itself (the simulator follows the
processes' schedule, so under the naive policy their traffic counts are equal), and writes the JSON and PNG it
promises. A smoke test, not a timing."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow", reason="the real processes need pyarrow (the spark extra)")

from perf import bench_exchange as be  # noqa: E402


def test_bench_exchange_smoke(tmp_path, capsys):
    out = tmp_path / "results" / "exchange.json"
    png = tmp_path / "exchange.png"
    rc = be.main(["--nodes", "20", "--batch", "12", "--procs", "2", "--sim", "2,3",
                  "--op-rows", "2", "--out", str(out), "--plot", str(png), "--quiet"])
    assert rc == 0
    data = json.loads(out.read_text())
    for key in ("benchmark", "commit", "dirty", "machine", "parameters", "workload",
                "reference", "runs", "cases"):
        assert key in data, f"missing {key!r}; present: {sorted(data)}"
    assert data["reference"]["source"].endswith("timely-dataflow/issues/190")
    cases = {(c["mode"], c["workers"], c["policy"]): c for c in data["cases"]}
    assert set(cases) == {(m, k, p) for m, k in (("sim", 2), ("sim", 3), ("real", 2))
                          for p in be.POLICIES}
    changes = sum(data["workload"]["changes"])
    for (mode, k, policy), c in cases.items():
        assert c["changes"] == changes
        t = c["totals"]
        assert t["delivered_pointstamps"] == t["pointstamps"] * (k - 1)
        assert c["updates_per_change"] == t["updates"] / changes
        if mode == "real":
            sim = cases[("sim", k, policy)]["totals"]
            assert t["data_messages"] == sim["data_messages"]      # the same split
            if policy == "all":
                # the same schedule in one process and on two: the same protocol traffic (the
                # other policies' choices depend on when a capability sent as data arrives)
                assert {x: t[x] for x in ("updates", "pointstamps", "bytes")} == \
                    {x: sim[x] for x in ("updates", "pointstamps", "bytes")}
            assert t["messages"] == t["updates"] * (k - 1) and t["wire_bytes"] > t["bytes"]
            assert 0 <= c["latency_s_median"] <= c["latency_s_max"]
    assert cases[("sim", 3, "all")]["vs_all"] == 1.0
    assert png.stat().st_size > 0
    assert "real K=  2 holdback" in capsys.readouterr().out
