"""The progress workload format v1 end to end: `tfront replay` and `tfront psi` outputs worked out
by hand from the format's definition, the `--time` / `--quiet` / `--strict` /
`--allow-zero-cycles` options, and malformed workloads (each error names its line).

Hand derivations use the definition of docs/formats.md: the frontier at a
port is the set of minimal elements of { s(t) : (l', t) has a positive count, s in Psi[l', port] },
with the identity in Psi[port, port]; channels are the identity; a summary (a, b) maps (e, i) to
(e + a, i + b). Timestamps are (epoch, iteration) in the product order.
"""

from __future__ import annotations

import io
import json
import re

import pytest

import engine
from engine.cli.main import main
from engine.errors import WorkloadFormatError, WorkloadLimitError
from engine.core.workload import EXAMPLE_PATH, parse_workload, read_workload

# the cuda backend replays too, where a device is usable (gpu marker: skipped elsewhere)
BACKENDS = [pytest.param(b.value, marks=pytest.mark.gpu) if b is engine.Backend.CUDA else b.value
            for b in engine.Backend]


def run_cli(capsys, *argv):
    """Run ``tfront *argv``; return (exit status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# --------------------------------------------------------------------------------------------
# The bundled example, engine/core/examples/wcc.txt
# --------------------------------------------------------------------------------------------
#
# Ports: node 0 (scope) has input T0.0; node 1 (a) output S1.0; node 2 (b) inputs T2.0 (labels),
# T2.1 (edges), outputs S2.0, S2.1, every input -> every output with (0,0); node 3 (c) T3.0 -> S3.0
# with (0,1) (the (0,2) line is dominated).  Channels: S1.0->T2.1, S2.0->T3.0, S3.0->T2.0,
# S2.1->T0.0.
#
# Psi rows needed (from the locations that ever hold pointstamps):
#   from S1.0: T0.0 (0,0)  T2.0 (0,1)  T2.1 (0,0)  T3.0 (0,0)  S1.0 (0,0)  S2.0 (0,0)  S2.1 (0,0)
#              S3.0 (0,1)
#   from S2.0: T0.0 (0,1)  T2.0 (0,1)  T3.0 (0,0)  S2.0 (0,0)  S2.1 (0,1)  S3.0 (0,1)   (no T2.1, S1.0)
#   from T2.1: T0.0 (0,0)  T2.0 (0,1)  T2.1 (0,0)  T3.0 (0,0)  S2.0 (0,0)  S2.1 (0,0)  S3.0 (0,1)
#   from T3.0: T0.0 (0,1)  T2.0 (0,1)  T3.0 (0,0)  S2.0 (0,1)  S2.1 (0,1)  S3.0 (0,1)   (no T2.1, S1.0)
# (Going round the loop again only adds (0,2), (0,3), ... which are dominated.)

WCC_REPLAY_SOURCES = (
    "# timely-reach replay output v1\n"
    # Batch 0: active S1.0@(0,0), S2.0@(0,0).
    #   T0.0: (0,0) via S1.0, (0,1) via S2.0 -> {(0,0)};  T2.0: (0,1), (0,1) -> {(0,1)};
    #   T2.1: only S1.0 -> {(0,0)};  T3.0: {(0,0)};  S1.0: itself {(0,0)};  S2.0: {(0,0)};
    #   S2.1: (0,0) via S1.0, (0,1) via S2.0 -> {(0,0)};  S3.0: (0,1) from both -> {(0,1)}.
    "B 0 2\n"
    "T 0 0 1 0 0\n"
    "T 2 0 1 0 1\n"
    "T 2 1 1 0 0\n"
    "T 3 0 1 0 0\n"
    "S 1 0 1 0 0\n"
    "S 2 0 1 0 0\n"
    "S 2 1 1 0 0\n"
    "S 3 0 1 0 1\n"
    # Batch 1: active S1.0@(1,0), S2.0@(0,0), T2.1@(0,0) x5.
    #   T0.0: (1,0), (0,1), (0,0) -> {(0,0)};  T2.0: (1,1), (0,1), (0,1) -> {(0,1)};
    #   T2.1: (1,0), (0,0) -> {(0,0)};  T3.0: (1,0), (0,0), (0,0) -> {(0,0)};  S1.0: {(1,0)};
    #   S2.0: (1,0), (0,0), (0,0) -> {(0,0)};  S2.1: (1,0), (0,1), (0,0) -> {(0,0)};
    #   S3.0: (1,1), (0,1), (0,1) -> {(0,1)}.
    "B 1 3\n"
    "T 0 0 1 0 0\n"
    "T 2 0 1 0 1\n"
    "T 2 1 1 0 0\n"
    "T 3 0 1 0 0\n"
    "S 1 0 1 1 0\n"
    "S 2 0 1 0 0\n"
    "S 2 1 1 0 0\n"
    "S 3 0 1 0 1\n"
    # Batch 2: active S1.0@(1,0), T3.0@(0,0) x3, S2.0@(0,1).
    #   T0.0: (1,0) via S1.0, (0,1) via T3.0, (0,2) via S2.0 -> {(0,1), (1,0)} (incomparable);
    #   T2.0: (1,1), (0,1), (0,2) -> {(0,1)};  T2.1: only S1.0 reaches it -> {(1,0)};
    #   T3.0: (1,0), (0,0), (0,1) -> {(0,0)};  S1.0: {(1,0)};
    #   S2.0: (1,0), (0,1) via T3.0, (0,1) itself -> {(0,1), (1,0)};
    #   S2.1: (1,0), (0,1), (0,2) -> {(0,1), (1,0)};  S3.0: (1,1), (0,1), (0,2) -> {(0,1)}.
    "B 2 4\n"
    "T 0 0 2 0 1 1 0\n"
    "T 2 0 1 0 1\n"
    "T 2 1 1 1 0\n"
    "T 3 0 1 0 0\n"
    "S 1 0 1 1 0\n"
    "S 2 0 2 0 1 1 0\n"
    "S 2 1 2 0 1 1 0\n"
    "S 3 0 1 0 1\n"
    # Batch 3: every positive count drops to 0; T2.1@(7,0) has count -1, which is not positive:
    # nothing is active, every frontier is empty.
    "B 3 4\n"
    "T 0 0 0\n"
    "T 2 0 0\n"
    "T 2 1 0\n"
    "T 3 0 0\n"
    "S 1 0 0\n"
    "S 2 0 0\n"
    "S 2 1 0\n"
    "S 3 0 0\n"
    # Batch 4: T2.1@(7,0) goes from -1 to 0: still nothing active.
    "B 4 1\n"
    "T 0 0 0\n"
    "T 2 0 0\n"
    "T 2 1 0\n"
    "T 3 0 0\n"
    "S 1 0 0\n"
    "S 2 0 0\n"
    "S 2 1 0\n"
    "S 3 0 0\n"
)


def _without_sources(report: str) -> str:
    return "".join(line + "\n" for line in report.splitlines() if not line.startswith("S "))


# Psi of the example, to input ports only, sorted by (KIND, NODE, PORT, TNODE, TPORT), s first:
#   s 1 0: reaches T0.0 through b's second output (0,0), T2.0 only around c (0,1), T2.1 and T3.0
#          directly (0,0);
#   s 2 0: T3.0 (0,0); then through c: T2.0 (0,1) and T0.0 (0,1); never T2.1;
#   s 2 1: only T0.0 (0,0);
#   s 3 0: T2.0 directly, then T0.0 and T3.0 through b, all (0,0);
#   t 0 0: the scope's input reaches only itself;
#   t 2 0: itself (identity; the loop's (0,1) is dominated), T0.0 and T3.0 through b (0,0);
#   t 2 1: like S1.0 (the edges input is where S1.0's channel lands);
#   t 3 0: itself (0,0); everything else through c: T0.0, T2.0 (0,1).
WCC_PSI = (
    "# timely-reach psi output v1\n"
    "P s 1 0 0 0 1 0 0\n"
    "P s 1 0 2 0 1 0 1\n"
    "P s 1 0 2 1 1 0 0\n"
    "P s 1 0 3 0 1 0 0\n"
    "P s 2 0 0 0 1 0 1\n"
    "P s 2 0 2 0 1 0 1\n"
    "P s 2 0 3 0 1 0 0\n"
    "P s 2 1 0 0 1 0 0\n"
    "P s 3 0 0 0 1 0 0\n"
    "P s 3 0 2 0 1 0 0\n"
    "P s 3 0 3 0 1 0 0\n"
    "P t 0 0 0 0 1 0 0\n"
    "P t 2 0 0 0 1 0 0\n"
    "P t 2 0 2 0 1 0 0\n"
    "P t 2 0 3 0 1 0 0\n"
    "P t 2 1 0 0 1 0 0\n"
    "P t 2 1 2 0 1 0 1\n"
    "P t 2 1 2 1 1 0 0\n"
    "P t 2 1 3 0 1 0 0\n"
    "P t 3 0 0 0 1 0 1\n"
    "P t 3 0 2 0 1 0 1\n"
    "P t 3 0 3 0 1 0 0\n"
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wcc_replay_with_sources(capsys, backend):
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--sources", "--backend", backend)
    assert (status, err) == (0, "")
    assert out == WCC_REPLAY_SOURCES


@pytest.mark.parametrize("backend", BACKENDS)
def test_wcc_replay_targets_only(capsys, backend):
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--backend", backend)
    assert (status, err) == (0, "")
    assert out == _without_sources(WCC_REPLAY_SOURCES)


def test_wcc_replay_default_backend(capsys, monkeypatch):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--sources")
    assert (status, out, err) == (0, WCC_REPLAY_SOURCES, "")


@pytest.mark.parametrize("backend", BACKENDS)
def test_wcc_psi(capsys, backend):
    status, out, err = run_cli(capsys, "psi", EXAMPLE_PATH, "--backend", backend)
    assert (status, err) == (0, "")
    assert out == WCC_PSI


# --------------------------------------------------------------------------------------------
# A diamond: a delay (1,0) in parallel with a side operator (0,1)
# --------------------------------------------------------------------------------------------

DIAMOND = """\
timely-reach v1
# 0: scope (its output feeds node 1; node 4 feeds its input)
node 0 1 1
# 1: head of the diamond
node 1 1 1
summary 1 0 0 0 0
# 2: the delay; the dominated (1,3) comes first and must be evicted by (1,0)
node 2 1 1
summary 2 0 0 1 3
summary 2 0 0 1 0
# 3: the side operator; (1,1) is dominated by (0,1)
node 3 1 1
summary 3 0 0 0 1
summary 3 0 0 1 1
# 4: joins both paths on two inputs
node 4 2 1
summary 4 0 0 0 0
summary 4 1 0 0 0
edge 0 0 1 0
edge 1 0 2 0
edge 1 0 3 0
edge 2 0 4 0
edge 3 0 4 1
edge 4 0 0 0
batch
s 0 0 0 0 1
end
batch
s 0 0 2 0 1
s 0 0 0 0 -1
t 3 0 0 5 1
t 2 0 0 3 2
end
batch
t 3 0 0 5 -1
t 2 0 0 3 -2
t 4 1 1 1 1
end
batch
s 0 0 2 0 -1
t 4 1 1 1 -1
end
"""

# The same graph without the dominated summary lines: every result must be identical.
DIAMOND_MINIMAL = DIAMOND.replace("summary 2 0 0 1 3\n", "").replace("summary 3 0 0 1 1\n", "")

# Psi to the input ports (T0.0 T1.0 T2.0 T3.0 T4.0 T4.1):
#   from S0.0 / S1.0 / T1.0 (before the diamond): T1.0 (start only), T2.0, T3.0 (0,0);
#       T4.0 (1,0) through the delay; T4.1 (0,1) through the side; T0.0 {(0,1), (1,0)}: the two
#       incomparable paths.
#   from S2.0: T4.0, T0.0 (0,0).   from S3.0: T4.1, T0.0 (0,0).   from S4.0: T0.0 (0,0).
#   from T0.0: only itself.   from T2.0: itself, then (1,0) at T4.0 and T0.0.
#   from T3.0: itself, then (0,1) at T4.1 and T0.0.   from T4.0 / T4.1: itself, T0.0 (0,0).
DIAMOND_PSI = (
    "# timely-reach psi output v1\n"
    "P s 0 0 0 0 2 0 1 1 0\n"
    "P s 0 0 1 0 1 0 0\n"
    "P s 0 0 2 0 1 0 0\n"
    "P s 0 0 3 0 1 0 0\n"
    "P s 0 0 4 0 1 1 0\n"
    "P s 0 0 4 1 1 0 1\n"
    "P s 1 0 0 0 2 0 1 1 0\n"
    "P s 1 0 2 0 1 0 0\n"
    "P s 1 0 3 0 1 0 0\n"
    "P s 1 0 4 0 1 1 0\n"
    "P s 1 0 4 1 1 0 1\n"
    "P s 2 0 0 0 1 0 0\n"
    "P s 2 0 4 0 1 0 0\n"
    "P s 3 0 0 0 1 0 0\n"
    "P s 3 0 4 1 1 0 0\n"
    "P s 4 0 0 0 1 0 0\n"
    "P t 0 0 0 0 1 0 0\n"
    "P t 1 0 0 0 2 0 1 1 0\n"
    "P t 1 0 1 0 1 0 0\n"
    "P t 1 0 2 0 1 0 0\n"
    "P t 1 0 3 0 1 0 0\n"
    "P t 1 0 4 0 1 1 0\n"
    "P t 1 0 4 1 1 0 1\n"
    "P t 2 0 0 0 1 1 0\n"
    "P t 2 0 2 0 1 0 0\n"
    "P t 2 0 4 0 1 1 0\n"
    "P t 3 0 0 0 1 0 1\n"
    "P t 3 0 3 0 1 0 0\n"
    "P t 3 0 4 1 1 0 1\n"
    "P t 4 0 0 0 1 0 0\n"
    "P t 4 0 4 0 1 0 0\n"
    "P t 4 1 0 0 1 0 0\n"
    "P t 4 1 4 1 1 0 0\n"
)

DIAMOND_REPLAY = (
    "# timely-reach replay output v1\n"
    # Batch 0: the scope holds (0,0) at S0.0.  T0.0 = {(0,0)+(0,1), (0,0)+(1,0)} = {(0,1), (1,0)},
    # two incomparable elements; T1.0, T2.0, T3.0 = (0,0); T4.0 = (1,0); T4.1 = (0,1).
    "B 0 1\n"
    "T 0 0 2 0 1 1 0\n"
    "T 1 0 1 0 0\n"
    "T 2 0 1 0 0\n"
    "T 3 0 1 0 0\n"
    "T 4 0 1 1 0\n"
    "T 4 1 1 0 1\n"
    # Batch 1: active S0.0@(2,0), T3.0@(0,5), T2.0@(0,3) x2.
    #   T0.0: (2,1), (3,0) via S0.0; (0,6) via T3.0; (1,3) via T2.0: all four incomparable;
    #   T1.0: (2,0);  T2.0: (2,0), (0,3);  T3.0: (2,0), (0,5);
    #   T4.0: (3,0) via S0.0, (1,3) via T2.0;  T4.1: (2,1) via S0.0, (0,6) via T3.0.
    "B 1 4\n"
    "T 0 0 4 0 6 1 3 2 1 3 0\n"
    "T 1 0 1 2 0\n"
    "T 2 0 2 0 3 2 0\n"
    "T 3 0 2 0 5 2 0\n"
    "T 4 0 2 1 3 3 0\n"
    "T 4 1 2 0 6 2 1\n"
    # Batch 2: active S0.0@(2,0), T4.1@(1,1).
    #   T0.0: (2,1), (3,0), (1,1) -> (1,1) <= (2,1), so {(1,1), (3,0)};
    #   T1.0, T2.0, T3.0: (2,0);  T4.0: (3,0);  T4.1: (2,1), (1,1) -> {(1,1)}.
    "B 2 3\n"
    "T 0 0 2 1 1 3 0\n"
    "T 1 0 1 2 0\n"
    "T 2 0 1 2 0\n"
    "T 3 0 1 2 0\n"
    "T 4 0 1 3 0\n"
    "T 4 1 1 1 1\n"
    # Batch 3: everything retracted: all frontiers empty.
    "B 3 2\n"
    "T 0 0 0\n"
    "T 1 0 0\n"
    "T 2 0 0\n"
    "T 3 0 0\n"
    "T 4 0 0\n"
    "T 4 1 0\n"
)


@pytest.fixture
def diamond_path(tmp_path):
    p = tmp_path / "diamond.txt"
    p.write_text(DIAMOND)
    return p


@pytest.fixture
def diamond_minimal_path(tmp_path):
    p = tmp_path / "diamond-minimal.txt"
    p.write_text(DIAMOND_MINIMAL)
    return p


@pytest.mark.parametrize("backend", BACKENDS)
def test_diamond_replay(capsys, diamond_path, backend):
    status, out, err = run_cli(capsys, "replay", diamond_path, "--backend", backend)
    assert (status, err) == (0, "")
    assert out == DIAMOND_REPLAY


@pytest.mark.parametrize("backend", BACKENDS)
def test_diamond_psi(capsys, diamond_path, backend):
    status, out, err = run_cli(capsys, "psi", diamond_path, "--backend", backend)
    assert (status, err) == (0, "")
    assert out == DIAMOND_PSI


@pytest.mark.parametrize("backend", BACKENDS)
def test_dominated_summary_lines_change_nothing(capsys, diamond_path, diamond_minimal_path, backend):
    results = []
    for path in (diamond_path, diamond_minimal_path):
        for cmd in (["replay", path, "--sources", "--backend", backend], ["psi", path]):
            status, out, err = run_cli(capsys, *cmd)
            assert (status, err) == (0, "")
            results.append(out)
    assert results[:2] == results[2:]
    assert results[1] == DIAMOND_PSI
    # The graphs themselves are equal: the dominated summaries were dropped.
    g1, g2 = parse_workload(DIAMOND).graph, parse_workload(DIAMOND_MINIMAL).graph
    assert g1.edges == g2.edges


def test_diamond_parse_structure():
    w = parse_workload(DIAMOND)
    assert w.inputs == [1, 1, 1, 1, 2] and w.outputs == [1, 1, 1, 1, 1]
    assert w.graph.num_locations == 11
    assert [b.line for b in w.batches] == [25, 28, 34, 39]
    assert [len(b.loc) for b in w.batches] == [1, 4, 3, 2]
    g = w.graph
    assert w.batches[1].loc.tolist() == [g.source(0, 0), g.source(0, 0), g.target(3, 0), g.target(2, 0)]
    assert [tuple(r) for r in w.batches[1].ts.tolist()] == [(2, 0), (0, 0), (0, 5), (0, 3)]
    assert w.batches[1].diff.tolist() == [1, -1, 1, 2]


# --------------------------------------------------------------------------------------------
# --time, --quiet
# --------------------------------------------------------------------------------------------

REPLAY_TIMING_KEYS = {"batch", "changes", "apply_ms", "propagate_ms", "total_ms"}
#: On a device backend each line also has the batch's device work (issue 10, item 3).
DEVICE_KEYS = {"launches", "ops", "syncs", "allocs"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_replay_time_writes_one_json_per_batch(capsys, backend):
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--time", "--backend", backend)
    assert status == 0
    assert out == _without_sources(WCC_REPLAY_SOURCES)  # --time does not change stdout
    lines = err.splitlines()
    assert len(lines) == 5
    for k, (line, n) in enumerate(zip(lines, [2, 3, 4, 4, 1])):
        obj = json.loads(line)
        assert REPLAY_TIMING_KEYS <= set(obj) <= REPLAY_TIMING_KEYS | DEVICE_KEYS
        if backend == "cuda":
            assert DEVICE_KEYS <= set(obj)
        assert obj["batch"] == k and obj["changes"] == n
        assert type(obj["batch"]) is int and type(obj["changes"]) is int
        for key in ("apply_ms", "propagate_ms", "total_ms"):
            assert isinstance(obj[key], (int, float)) and not isinstance(obj[key], bool)
            assert obj[key] >= 0
        assert obj["total_ms"] == pytest.approx(obj["apply_ms"] + obj["propagate_ms"], abs=0.0025)


def test_replay_quiet_suppresses_stdout(capsys):
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--quiet", "--sources")
    assert (status, out, err) == (0, "", "")


def test_replay_quiet_with_time(capsys, diamond_path):
    status, out, err = run_cli(capsys, "replay", diamond_path, "--quiet", "--time")
    assert (status, out) == (0, "")
    objs = [json.loads(line) for line in err.splitlines()]
    assert [o["batch"] for o in objs] == [0, 1, 2, 3]
    assert [o["changes"] for o in objs] == [1, 4, 3, 2]
    assert all(set(o) == REPLAY_TIMING_KEYS for o in objs)


@pytest.mark.parametrize("path_fixture,stats", [
    # WCC: 22 lines, each a single summary.
    ("wcc", {"pairs": 22, "summaries": 22, "max_antichain": 1}),
    # Diamond: 33 lines, three of them (s 0 0, s 1 0, t 1 0 to T0.0) with two summaries.
    ("diamond", {"pairs": 33, "summaries": 36, "max_antichain": 2}),
])
def test_psi_time(capsys, request, path_fixture, stats):
    path = EXAMPLE_PATH if path_fixture == "wcc" else request.getfixturevalue("diamond_path")
    status, out, err = run_cli(capsys, "psi", path, "--time")
    assert status == 0
    assert out == (WCC_PSI if path_fixture == "wcc" else DIAMOND_PSI)
    lines = err.splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert set(obj) == {"closure_ms", "pairs", "summaries", "max_antichain"}
    assert isinstance(obj["closure_ms"], (int, float)) and obj["closure_ms"] >= 0
    assert {k: obj[k] for k in stats} == stats


def test_psi_ignores_batches(capsys, tmp_path):
    # The graph part alone gives the same closure as the file with batches.
    graph_only = DIAMOND.split("batch", 1)[0]
    p = tmp_path / "graph-only.txt"
    p.write_text(graph_only)
    status, out, err = run_cli(capsys, "psi", p)
    assert (status, out, err) == (0, DIAMOND_PSI, "")


# --------------------------------------------------------------------------------------------
# Malformed workloads
# --------------------------------------------------------------------------------------------

HEAD = "timely-reach v1\nnode 0 1 0\nnode 1 0 1\nedge 1 0 0 0\n"   # lines 1-4


def _body(*lines: str) -> str:
    """HEAD followed by ``lines`` (the first of them is line 5)."""
    return HEAD + "".join(line + "\n" for line in lines)


# (id, text, line the error must name, a word the message must contain)
MALFORMED = [
    ("bad-header", "timely-reach v2\nnode 0 1 0\n", 1, "timely-reach v1"),
    ("header-not-first", "node 0 1 0\ntimely-reach v1\n", 1, "timely-reach v1"),
    ("bad-header-after-comments", "# comment\n\n  \ntimely reach v1\n", 4, "timely-reach v1"),
    ("unknown-keyword", _body("nodes 2 1 1"), 5, "nodes"),
    ("non-integer-node", "timely-reach v1\nnode 0 1 0\nnode 1 x 1\n", 3, "'x'"),
    ("non-integer-float", _body("batch", "s 1 0 1.5 0 1", "end"), 6, "1.5"),
    ("non-integer-diff", _body("batch", "s 1 0 0 0 +-1", "end"), 6, "+-1"),
    ("hex-number", _body("batch", "s 1 0 0x1 0 1", "end"), 6, "0x1"),
    ("node-ids-out-of-order", "timely-reach v1\nnode 0 1 0\nnode 2 0 1\n", 3, "expected 1"),
    ("node-id-repeated", "timely-reach v1\nnode 0 1 0\nnode 0 0 1\n", 3, "expected 1"),
    ("node-negative-ports", "timely-reach v1\nnode 0 1 0\nnode 1 -1 1\n", 3, "negative"),
    ("node-wrong-fields", "timely-reach v1\nnode 0 1\n", 2, "3"),
    ("summary-wrong-fields", _body("summary 1 0 0 0"), 5, "5"),
    ("edge-wrong-fields", _body("edge 1 0 0"), 5, "4"),
    ("change-wrong-fields", _body("batch", "s 1 0 0 0", "end"), 6, "4 values"),
    ("change-too-many-fields", _body("batch", "t 0 0 0 0 1 1", "end"), 6, "6 values"),
    ("batch-with-argument", _body("batch 1", "end"), 5, "batch"),
    ("end-with-argument", _body("batch", "end 1"), 6, "end"),
    ("summary-on-node-0", _body("summary 0 0 0 0 0"), 5, "node 0"),
    ("summary-unknown-node", _body("summary 7 0 0 0 0"), 5, "7"),
    ("summary-unknown-input-port", _body("summary 1 0 0 0 0"), 5, "input port 0"),
    ("summary-negative", "timely-reach v1\nnode 0 0 0\nnode 1 1 1\nsummary 1 0 0 -1 0\n", 4,
     "-1"),
    ("summary-too-large", "timely-reach v1\nnode 0 0 0\nnode 1 1 1\n"
                          f"summary 1 0 0 {2**62} 0\n", 4, "2**62"),
    ("edge-unknown-node", _body("edge 9 0 0 0"), 5, "9"),
    ("edge-unknown-src-port", _body("edge 1 1 0 0"), 5, "output port 1"),
    ("edge-unknown-dst-port", _body("edge 1 0 0 3"), 5, "input port 3"),
    ("edge-from-input-side", _body("edge 0 0 1 0"), 5, "output port 0"),
    ("second-channel-into-input", _body("edge 1 0 0 0"), 5, "already has a channel"),
    ("summary-after-batch", _body("batch", "end", "summary 1 0 0 0 0"), 7, "summary"),
    ("node-after-batch", _body("batch", "end", "node 2 1 1"), 7, "node"),
    ("edge-after-batch", _body("batch", "end", "edge 1 0 0 0"), 7, "edge"),
    ("change-outside-batch", _body("s 1 0 0 0 1"), 5, "outside a batch"),
    ("change-after-end", _body("batch", "end", "t 0 0 0 0 1"), 7, "outside a batch"),
    ("end-without-batch", _body("end"), 5, "without"),
    ("nested-batch", _body("batch", "s 1 0 0 0 1", "batch", "end"), 7, "line 5"),
    ("missing-end", _body("batch", "s 1 0 0 0 1"), 6, "line 5"),
    ("missing-end-last-batch", _body("batch", "end", "batch", "t 0 0 1 1 1", "# trailing"), 9,
     "line 7"),
    ("change-unknown-node-s", _body("batch", "s 5 0 0 0 1", "end"), 6, "unknown node 5"),
    ("change-unknown-node-t", _body("batch", "t 2 0 0 0 1", "end"), 6, "unknown node 2"),
    ("change-negative-node", _body("batch", "t -1 0 0 0 1", "end"), 6, "unknown node -1"),
    ("change-unknown-output-port", _body("batch", "s 1 1 0 0 1", "end"), 6, "output port 1"),
    ("change-unknown-input-port", _body("batch", "t 0 1 0 0 1", "end"), 6, "input port 1"),
    ("change-s-on-node-without-outputs", _body("batch", "s 0 0 0 0 1", "end"), 6,
     "output port 0"),
    ("negative-epoch", _body("batch", "s 1 0 -1 0 1", "end"), 6, "-1"),
    ("negative-iteration", _body("batch", "t 0 0 0 -3 1", "end"), 6, "-3"),
    ("epoch-2**62", _body("batch", f"s 1 0 {2**62} 0 1", "end"), 6, str(2**62)),
    ("iteration-2**62", _body("batch", f"t 0 0 0 {2**62} 1", "end"), 6, str(2**62)),
    ("diff-over-64-bits", _body("batch", f"s 1 0 0 0 {2**63}", "end"), 6, str(2**63)),
    ("diff-under-64-bits", _body("batch", f"s 1 0 0 0 {-2**63 - 1}", "end"), 6, str(-2**63 - 1)),
]


@pytest.mark.parametrize("text,line,word", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_parse_malformed_names_line(text, line, word):
    with pytest.raises(WorkloadFormatError) as info:
        parse_workload(text)
    msg = str(info.value)
    assert f"line {line}" in msg, msg
    assert re.search(rf"\bline {line}\b", msg), msg
    assert word in msg, msg
    assert info.value.line == line
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text,line,word", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
@pytest.mark.parametrize("command", ["replay", "psi"])
def test_cli_malformed_exits_2(capsys, tmp_path, command, text, line, word):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    status, out, err = run_cli(capsys, command, p)
    assert status == 2
    assert out == ""
    assert err.startswith(f"tfront {command}: error:"), err
    assert re.search(rf"\bline {line}\b", err), err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("token", ["1_0", "\u0663", "\uff11"],
                         ids=["underscore", "arabic-indic-digit", "fullwidth-digit"])
def test_non_decimal_number_tokens_rejected(token):
    # "numbers are decimal": Python's int() also takes digit-group underscores and non-ASCII
    # digits, which are not decimal numerals of the format (other trackers reject them).
    with pytest.raises(WorkloadFormatError, match=r"\bline 6\b"):
        parse_workload(_body("batch", f"s 1 0 {token} 0 1", "end"))


def test_limits_just_inside_are_accepted():
    text = _body("batch", f"s 1 0 {2**62 - 1} {2**62 - 1} {2**63 - 1}",
                 f"t 0 0 0 0 {-2**63}", "end")
    w = parse_workload(text)
    assert [tuple(r) for r in w.batches[0].ts.tolist()] == [(2**62 - 1, 2**62 - 1), (0, 0)]
    assert w.batches[0].diff.tolist() == [2**63 - 1, -2**63]


def test_comments_and_blank_lines_are_ignored():
    text = ("# leading comment\n\n" + HEAD.replace("node 1 0 1", "node 1 0 1   # a\t")
            + "batch # begins\n  s 1 0 3 4 2  # tokens\tand tabs\nend\n")
    w = parse_workload(text)
    assert [b.line for b in w.batches] == [7]
    assert w.batches[0].ts.tolist() == [[3, 4]] and w.batches[0].diff.tolist() == [2]


def test_empty_file_is_an_error():
    with pytest.raises(WorkloadFormatError, match="line 1"):
        parse_workload("")


def test_missing_file_exits_2(capsys, tmp_path):
    status, out, err = run_cli(capsys, "replay", tmp_path / "nope.txt")
    assert (status, out) == (2, "")
    assert "nope.txt" in err


# --- zero-advance cycles -----------------------------------------------------------------------

ZERO_CYCLE = """\
timely-reach v1
node 0 0 0
node 1 1 1
summary 1 0 0 0 0
edge 1 0 1 0
batch
t 1 0 0 0 1
end
batch
t 1 0 0 0 -1
end
"""
# Lines 4 (the (0,0) summary) and 5 (the edge closing the loop) make the cycle.
ZERO_CYCLE_LINES = {4, 5}


def test_zero_advance_cycle_names_a_line():
    with pytest.raises(WorkloadFormatError) as info:
        parse_workload(ZERO_CYCLE)
    msg = str(info.value)
    assert isinstance(info.value.__cause__, engine.ZeroAdvanceCycleError)
    assert "cycle" in msg
    lines = {int(n) for n in re.findall(r"\bline (\d+)\b", msg)}
    assert lines & ZERO_CYCLE_LINES, f"message names no line of the cycle: {msg!r}"


def test_zero_advance_cycle_cli_exits_2(capsys, tmp_path):
    p = tmp_path / "zero.txt"
    p.write_text(ZERO_CYCLE)
    for command in ("replay", "psi"):
        status, out, err = run_cli(capsys, command, p)
        assert (status, out) == (2, "")
        assert "cycle" in err
        lines = {int(n) for n in re.findall(r"\bline (\d+)\b", err)}
        assert lines & ZERO_CYCLE_LINES, f"message names no line of the cycle: {err!r}"


def test_advancing_cycle_is_accepted():
    w = parse_workload(ZERO_CYCLE.replace("summary 1 0 0 0 0", "summary 1 0 0 0 1"))
    assert not w.graph.allow_zero_cycles


def test_zero_advance_cycle_allowed():
    w = parse_workload(ZERO_CYCLE, allow_zero_cycles=True)
    assert w.graph.allow_zero_cycles
    assert len(w.batches) == 2
    # An iterable of lines parses like the string.
    w2 = parse_workload(io.StringIO(ZERO_CYCLE), allow_zero_cycles=True)
    assert w2.graph.edges == w.graph.edges


@pytest.mark.parametrize("extra", [[], ["--backend", "auto"], ["--backend", "reference"]])
def test_zero_advance_cycle_replay_allowed(capsys, tmp_path, monkeypatch, extra):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    p = tmp_path / "zero.txt"
    p.write_text(ZERO_CYCLE)
    status, out, err = run_cli(capsys, "replay", p, "--allow-zero-cycles", "--sources", *extra)
    assert (status, err) == (0, "")
    # Batch 0: T1.0@(0,0); the loop maps it to itself, so T1.0 and S1.0 are {(0,0)}.
    # Batch 1: retracted; the implied frontier drains.
    assert out == ("# timely-reach replay output v1\n"
                   "B 0 1\nT 1 0 1 0 0\nS 1 0 1 0 0\n"
                   "B 1 1\nT 1 0 0\nS 1 0 0\n")


def test_zero_advance_cycle_psi_allowed(capsys, tmp_path):
    p = tmp_path / "zero.txt"
    p.write_text(ZERO_CYCLE)
    status, out, err = run_cli(capsys, "psi", p, "--allow-zero-cycles")
    assert (status, err) == (0, "")
    assert out == ("# timely-reach psi output v1\n"
                   "P s 1 0 1 0 1 0 0\n"
                   "P t 1 0 1 0 1 0 0\n")


def test_read_workload_allow_zero_cycles(tmp_path):
    p = tmp_path / "zero.txt"
    p.write_text(ZERO_CYCLE)
    with pytest.raises(WorkloadFormatError):
        read_workload(p)
    assert read_workload(p, allow_zero_cycles=True).graph.allow_zero_cycles


# --- strict mode -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_strict_rejects_transient_negative_count(capsys, backend):
    # wcc.txt's batch 3 (its 'batch' line is line 41) retracts T2.1@(7,0) before it is added.
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--strict", "--backend", backend)
    assert status == 2
    assert err.startswith("tfront replay: error:")
    assert "batch 3" in err and "line 41" in err, err
    assert "(7, 0)" in err, err
    # Batches 0-2 were fine and had been reported before the failure; batch 3 is not.
    expected = WCC_REPLAY_SOURCES.split("B 3 ")[0]
    assert out == _without_sources(expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_strict_accepts_transient_negative_count(capsys, backend):
    status, out, err = run_cli(capsys, "replay", EXAMPLE_PATH, "--backend", backend)
    assert (status, err) == (0, "")
    assert out.count("\nB ") == 5


def test_strict_accepts_workload_without_negative_counts(capsys, diamond_path):
    status, out, err = run_cli(capsys, "replay", diamond_path, "--strict")
    assert (status, out, err) == (0, DIAMOND_REPLAY, "")


def test_strict_negative_in_first_batch(capsys, tmp_path):
    p = tmp_path / "neg.txt"
    p.write_text(_body("batch", "s 1 0 0 0 1", "end", "# a comment", "batch", "t 0 0 2 3 -1", "end"))
    status, out, err = run_cli(capsys, "replay", p, "--strict", "--quiet")
    assert (status, out) == (2, "")
    assert "batch 1" in err and "line 9" in err, err


def test_vectorised_and_line_by_line_batch_parsing_agree():
    """Plain batches take the vectorised path; a comment inside a batch forces the
    line-by-line path. Both must give the same columns."""
    import numpy as np
    text = EXAMPLE_PATH.read_text()
    plain = parse_workload(text)
    commented = parse_workload(text.replace("\nend", "\n# a comment forces the slow path\nend"))
    assert len(plain.batches) == len(commented.batches) == 5
    for i, (a, b) in enumerate(zip(plain.batches, commented.batches)):
        assert b.line == a.line + i        # one comment line was inserted per earlier batch
        for x, y in zip((a.loc, a.ts, a.diff), (b.loc, b.ts, b.diff)):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------------------------
# Issue 32, item 9: declared port counts are bounded (max_locations)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("node", "what"), [
    # 78 s and 5.4 GB before; then a MemoryError traceback; then an OverflowError traceback
    ("node 1 0 10000000", "10,000,002 locations (ports) in all, more than max_locations"),
    ("node 1 1000000000 1", "1,000,000,003 locations (ports) in all, more than max_locations"),
    ("node 1 12345678901234567890123 1", "a number of 23 digits"),
    ("node 1 1 " + "7" * 5_000_000, "a number of 5,000,000 digits"),
])
@pytest.mark.parametrize("command", ["replay", "psi"])
def test_gh32_declared_port_counts_are_refused_at_their_line(capsys, tmp_path, command, node, what):
    path = tmp_path / "wide.txt"
    path.write_text("timely-reach v1\nnode 0 1 1\n" + node + "\nedge 0 0 0 0\nbatch\nend\n")
    status, out, err = run_cli(capsys, command, path)
    assert (status, out) == (2, "")
    assert err.startswith(f"tfront {command}: error: line 3: ") and what in err, err
    assert err.count("\n") == 1 and len(err) < 400 and "Traceback" not in err
    if "locations" in what:
        assert "max_locations = 1,000,000" in err and "--max-locations" in err


def test_gh32_the_location_limit_counts_every_node_and_can_be_raised(capsys, tmp_path):
    """The limit is on all the ports together, named at the node line that crosses it; the
    option and the API argument raise it; below it nothing changes."""
    text = _body("node 2 1 1", "node 3 2 3")          # 2 + 2 + 5 = 9 locations
    assert parse_workload(text, max_locations=9).graph.num_locations == 9
    with pytest.raises(WorkloadLimitError, match=r"^line 6: node 3 declares 2 inputs and 3 "
                                                  r"outputs, which would make 9 locations") as e:
        parse_workload(text, max_locations=8)
    assert e.value.line == 6 and isinstance(e.value, WorkloadFormatError)
    path = tmp_path / "nine.txt"
    path.write_text(text)
    status, _, err = run_cli(capsys, "replay", path, "--max-locations", 8)
    assert status == 2 and "line 6: " in err and "max_locations = 8;" in err
    status, _, err = run_cli(capsys, "replay", path, "--max-locations", 3)
    assert status == 2 and "line 5: node 2 " in err
    status, out, _ = run_cli(capsys, "psi", path, "--max-locations", 9)
    assert status == 0 and out.startswith("# timely-reach psi output v1")
    with pytest.raises(ValueError, match="max_locations must be a positive integer"):
        parse_workload(text, max_locations=0)


def test_gh32_changes_at_the_ports_of_a_wide_node_reach_their_locations():
    """Batch rows are mapped to locations through one entry per port (not nodes x the widest
    node's ports): a change at every port of each kind lands on that port's location."""
    text = ("timely-reach v1\nnode 0 1 1\nnode 1 3 500\nnode 2 2 1\nbatch\n"
            + "".join(f"s 1 {p} 0 0 1\n" for p in range(500))
            + "t 1 2 0 0 1\nt 2 1 0 0 1\ns 2 0 0 0 1\ns 0 0 0 0 1\nt 0 0 0 0 1\nend\n")
    w = parse_workload(text)
    g = w.graph
    want = ([g.source(1, p) for p in range(500)]
            + [g.target(1, 2), g.target(2, 1), g.source(2, 0), g.source(0, 0), g.target(0, 0)])
    assert w.batches[0].loc.tolist() == want
