"""``perf/bench_psi_fill.py`` on Numba's CUDA simulator (a subprocess: the simulator is chosen
before Numba loads): both variants' fills equal the host's ``Psi`` (the script asserts it)
and the JSON holds a settle and two fill times per variant and size. No assertion is about
time."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_psi_fill_runs_both_variants_on_the_simulator(tmp_path):
    have = subprocess.run(["git", "cat-file", "-e", "56ea7d0^{commit}"], cwd=ROOT,
                          capture_output=True)
    if have.returncode != 0:
        pytest.skip("the baseline commit 56ea7d0 is not in this clone (shallow?)")
    out = tmp_path / "psi-fill.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-m", "perf.bench_psi_fill", "--simulated", "--sizes",
                        "2,3", "--repeat", "1", "--out", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(out.read_text())
    assert res["simulated"] and res["baseline"] == "56ea7d0"
    assert [s["n"] for s in res["sizes"]] == [2, 3]
    for s in res["sizes"]:
        for variant in ("baseline", "this tree"):
            assert set(s[variant]) == {"settle_ms", "fill_dense_ms", "fill_ragged_ms", "all"}
