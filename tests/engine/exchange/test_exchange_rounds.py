"""Issue 25: the exchange simulation at the speed of one tracker -- rounds, batched delivery,
frontier-based guards and checks -- must not change a single answer.

* :meth:`PointstampOrder.reaches` (frontiers through a scratch tracker) against could-result-in
  by brute force over the reference closure, on random graphs and multisets;
* :func:`covered` against the timestamp order, :func:`_lookup` against a dict;
* :meth:`Worker.receive_many` against receiving one update at a time;
* rounds (:meth:`Exchange.round`) and every check mode of ``tfront replay --workers``
  produce the single tracker's output, on the bundled example, on an adversarial workload of
  ``perf.workloads`` and on random workloads, for every policy and several worker counts;
* a Safe violation is named in ``round`` mode too.

The state machine of ``test_exchange.py`` also takes rounds between its other rules.
"""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import engine.exchange.worker as exchange_worker
from engine.cli.main import main
from engine.core.closure import closure, could_result_in
from engine.core.timestamp import le
from engine.core.workload import EXAMPLE_PATH, example_graph
from engine.errors import BackendError, UpdateOrderError
from engine.exchange.messages import Update
from engine.exchange.multisets import PointstampOrder, _lookup, covered
from engine.exchange.policies import POLICIES, Policy
from engine.exchange.simulation import CheckMode, Exchange
from engine.exchange.worker import Worker
from strategies import any_graphs, timestamps


def _table(graph, items):
    """A consolidated ``(loc, ts, cnt)`` table from ``{(loc, ts): count}``."""
    from engine.exchange.multisets import _zsum
    W = graph.m + graph.max_depth
    loc = np.array([p[0] for p in items], np.int32)
    ts = np.zeros((len(items), W), np.int64)
    for i, (_, t) in enumerate(items):
        ts[i, :len(t)] = t
    return _zsum((loc, ts, np.array(list(items.values()), np.int64)))


@st.composite
def graph_and_points(draw):
    g = draw(any_graphs(max_ops=3))
    pts = st.integers(0, g.num_locations - 1).flatmap(
        lambda l: st.tuples(st.just(l), timestamps(g.m, g.depth(l), hi=3)))
    table = draw(st.dictionaries(pts, st.integers(-2, 3).filter(bool), max_size=12))
    queries = draw(st.lists(pts, min_size=1, max_size=10))
    # queries that are in the table too: the ambiguous case of `strict`
    queries += draw(st.lists(st.sampled_from(sorted(table)), max_size=4)) if table else []
    return g, table, queries


@settings(max_examples=60, deadline=None)
@given(case=graph_and_points(), through_frontiers=st.booleans())
def test_reaches_is_could_result_in(case, through_frontiers):
    g, table, queries = case
    order = PointstampOrder(g)
    if through_frontiers:       # the scratch tracker's path even for tiny inputs
        order.DIRECT_ACTIVE = 0
    psi = closure(g)
    t = _table(g, table)
    W = g.m + g.max_depth
    q_loc = np.array([q[0] for q in queries], np.int32)
    q_ts = np.zeros((len(queries), W), np.int64)
    for i, (_, ts) in enumerate(queries):
        q_ts[i, :len(ts)] = ts
    positive = [p for p, c in table.items() if c > 0]
    for strict in (False, True):
        want = [any(could_result_in(psi, g, p[0], p[1], q[0], q[1]) and not (strict and p == q)
                    for p in positive) for q in queries]
        got = order.reaches(t, q_loc, q_ts, strict=strict)
        assert got.tolist() == want, (strict, queries)
    # the scratch tracker is left empty
    if order._tracker is not None:
        assert len(order._tracker.table()[0]) == 0


@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(1, 2), depth=st.integers(0, 2))
def test_covered_is_the_timestamp_order(data, m, depth):
    row = timestamps(m, depth, hi=3)
    f = sorted(data.draw(st.lists(st.tuples(st.integers(0, 3), row), max_size=8, unique=True)))
    q = data.draw(st.lists(st.tuples(st.integers(0, 4), row), min_size=1, max_size=8))
    W = m + depth
    f_loc = np.array([x[0] for x in f], np.int32)
    f_ts = np.array([x[1] for x in f], np.int64).reshape(len(f), W)
    q_loc = np.array([x[0] for x in q], np.int32)
    q_ts = np.array([x[1] for x in q], np.int64).reshape(len(q), W)
    want = [any(l == ql and le(t, qt, m) for l, t in f) for ql, qt in q]
    assert covered(f_loc, f_ts, q_loc, q_ts, m).tolist() == want


@settings(max_examples=40, deadline=None)
@given(rows=st.dictionaries(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 1 << 61)),
                            st.integers(-3, 3).filter(bool), max_size=10),
       queries=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 1 << 61)),
                        max_size=6),
       shuffle=st.booleans())
def test_lookup_finds_counts_by_key(rows, queries, shuffle):
    keys = sorted(rows)
    queries = queries + keys[:2]
    if shuffle:         # a table not in key order is sorted first
        keys = keys[::-1]
    loc = np.array([k[0] for k in keys], np.int32)
    ts = np.array([k[1:] for k in keys], np.int64).reshape(len(keys), 2)
    cnt = np.array([rows[k] for k in keys], np.int64)
    q_loc = np.array([k[0] for k in queries], np.int32)
    q_ts = np.array([k[1:] for k in queries], np.int64).reshape(len(queries), 2)
    assert _lookup((loc, ts, cnt), q_loc, q_ts).tolist() == [rows.get(k, 0) for k in queries]


# --------------------------------------------------------------------------------------------
# receive_many
# --------------------------------------------------------------------------------------------

def _updates(g, rng, senders=3, each=3):
    W = g.m + g.max_depth
    out = []
    for s in range(senders):
        for seq in range(each):
            n = int(rng.integers(0, 4))
            out.append(Update(s, seq, rng.integers(0, g.num_locations, n).astype(np.int32),
                              np.hstack([rng.integers(0, 3, (n, 1)), np.zeros((n, W - 1), np.int64)])
                              if W > 1 else rng.integers(0, 3, (n, 1)),
                              rng.integers(-2, 3, n)))
    return out


def test_receive_many_is_receiving_one_at_a_time():
    g = example_graph()
    rng = np.random.default_rng(3)
    ups = _updates(g, rng)
    one, many = Worker(g, 0, 3), Worker(g, 0, 3)
    for u in ups:
        one.receive(u)
    many.receive_many(ups[:4])
    many.receive_many(ups[4:])
    assert [a.tolist() for a in one.glob] == [a.tolist() for a in many.glob]
    assert one.frontiers() == many.frontiers()
    assert one.stats == many.stats and one._expect == many._expect


def test_receive_many_refuses_a_gap_and_changes_nothing():
    g = example_graph()
    ups = _updates(g, np.random.default_rng(4))
    w = Worker(g, 1, 3)
    w.receive_many(ups[:2])
    before = ([a.tolist() for a in w.glob], w.frontiers(), dict(w.stats), list(w._expect))
    with pytest.raises(UpdateOrderError, match=r"worker 1: update 2 from worker 0 is out of "
                                               r"order: expected update 2|update 0 from worker 0 "
                                               r"is a duplicate"):
        w.receive_many([ups[3], ups[0]])     # sender 1's first is fine, then sender 0's 0 again
    with pytest.raises(UpdateOrderError, match="update 1 from worker 1 is out of order: "
                                               "expected update 0"):
        w.receive_many([ups[2], ups[4]])     # sender 0's 2, then sender 1's 1: a gap
    assert ([a.tolist() for a in w.glob], w.frontiers(), dict(w.stats), list(w._expect)) == before


# --------------------------------------------------------------------------------------------
# check modes and rounds
# --------------------------------------------------------------------------------------------

def test_check_modes_parse_in_one_place():
    assert CheckMode.of(True) is CheckMode.EVERY_STEP and CheckMode.of(False) is CheckMode.NONE
    assert CheckMode.of(" Round ") is CheckMode.ROUND
    with pytest.raises(BackendError, match="unknown check mode 'often'; choose one of: "
                                           "every-step, round, batch, none"):
        Exchange(example_graph(), 2, check="often")


def _replay(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["replay", *map(str, argv)])
    assert status == 0 and err.getvalue() == "", err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("check", ["every-step", "round", "batch"])
def test_every_check_mode_prints_the_single_replay(check):
    want = _replay(EXAMPLE_PATH, "--sources")
    for k in (1, 3, 7):
        for policy in POLICIES:
            got = _replay(EXAMPLE_PATH, "--sources", "--workers", k, "--policy", policy,
                          "--schedule-seed", k, "--check", check)
            assert got == want, (k, policy)


def test_adversarial_workload_is_replayed_exactly_on_many_workers(tmp_path):
    """The shapes of issue 25's held-out-style workload (bursts, in-batch cancels, counts
    below zero and back, duplicates, times up to 2**40, an empty batch) at a small size."""
    from perf.workloads import adversarial_batches, generate_graph, write_workload
    spec = generate_graph(30, 5)
    path = tmp_path / "adversarial.txt"
    write_workload(path, spec, adversarial_batches(spec, 5, batches=12, rows=300))
    want = _replay(path, "--sources")
    for k, policy in ((2, "all"), (5, "batch"), (16, "holdback"), (33, "all")):
        assert _replay(path, "--sources", "--workers", k, "--policy", policy) == want, (k, policy)


def test_round_takes_every_worker_and_moves_each_queue_as_one_batch():
    g = example_graph()
    a, edges = g.source(1, 0), g.target(2, 1)
    ex = Exchange(g, 3, check="round", seed=2)
    ex.perform_batch([a], [(0, 0)], [1])            # admitted as initial
    ex.perform_batch([edges, a, a], [(0, 0), (1, 0), (0, 0)], [5, 1, -1])
    received = [w.stats["updates_received"] for w in ex.workers]
    assert ex.round(hold_back=False) > 0            # operations, sends, everything delivered
    assert not any(ex.msg.values()) and not any(len(d[0]) for d in ex.data)
    sent = ex.stats["updates_sent"]
    assert [w.stats["updates_received"] - r for w, r in zip(ex.workers, received)] == [sent] * 3
    ex.quiesce()
    ex.check_agreement()
    assert ex.round() == 0 and ex.rounds >= 1


class _DropsFirst(Policy):
    def release(self, worker, now=None):
        return worker.temp[2] < 0


def test_round_mode_names_the_first_safety_violation(monkeypatch):
    monkeypatch.setattr(exchange_worker, "justified", lambda *a: -1)
    monkeypatch.setitem(POLICIES, "all", _DropsFirst)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["replay", str(EXAMPLE_PATH), "--workers", "2", "--check", "round"])
    assert status == 2
    assert re.match(r"tfront replay: error: batch 1 \(line 28\): round \d+ \(step \d+\): Safe "
                    r"fails: worker \d's view is vacant up to", err.getvalue()), err.getvalue()


def test_check_needs_workers_and_is_not_for_processes(capsys):
    for argv, msg in ((["--check", "round"], "replay --check needs --workers"),
                      (["--workers", "2", "--processes", "--check", "batch"],
                       "replay --check is for the simulated workers")):
        with pytest.raises(SystemExit) as e:
            main(["replay", str(EXAMPLE_PATH), *argv])
        assert e.value.code == 2
        assert msg in capsys.readouterr().err
