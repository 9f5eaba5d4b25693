"""engine.operate.dataflow (issue 13 items 1-4): operator descriptions, nested scopes, reports in the
operators' words, the guards, and the frontiers pushed back.

The oracle of the nesting property is the reference tracker on the same graph built flat with
``GraphBuilder`` directly, with messages routed through the scope boundaries by a separate,
plain-Python walk of the same description, and the guards decided row by row in Python.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, strategies as st

import engine
from engine import (BOUNDARY, CapabilityRegressionError, DepthMismatchError, DuplicateChannelError,
                    GraphBuilder, ImpliedFrontierTracker, NoCapabilityError, NotInFlightError,
                    Operate, OperatorNameError, Report, ReportCountError, ReportError,
                    ReportKind, ReportOperatorError, ReportPortError, Scope, ScopeError, Summary,
                    SummaryShapeError, TimestampRangeError, TimestampWidthError,
                    UnheldCapabilityError, UnknownOperatorError, UnknownPortError,
                    ZeroAdvanceCycleError, closure)
from engine.core.timestamp import le

from strategies import examples, summaries, timestamps


# --------------------------------------------------------------------------------------------
# A loop scope: input -> loop(body <-> feedback) -> output
# --------------------------------------------------------------------------------------------

def loop_dataflow(m: int = 1):
    root = Scope("root", m=m)
    src = root.add(Operate("input", 0, 1, capabilities={0: [(0,) * m]}))
    loop = Scope("loop", 1, 1, depth=1, m=m)
    ident = Summary.identity(1, m)
    body = loop.add(Operate("body", 2, 2, summary={(i, o): ident for i in (0, 1) for o in (0, 1)}))
    fb = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1, m)}))
    loop.connect(BOUNDARY, 0, body, 0)
    loop.connect(body, 0, fb, 0)
    loop.connect(fb, 0, body, 1)
    loop.connect(body, 1, BOUNDARY, 0)
    lp = root.add(loop)
    sink = root.add(Operate("output", 1, 0))
    root.connect(src, 0, lp, 0)
    root.connect(lp, 0, sink, 0)
    return root.build()


def state(rt):
    """Everything a rejected report must leave as it was."""
    loc, ts, cnt = rt.tracker.table()
    return (loc.tolist(), ts.tolist(), cnt.tolist(), rt.tracker.frontiers(),
            {k: dict(v) for k, v in rt._pending.items()})


def test_flat_graph_of_a_loop_scope():
    df = loop_dataflow()
    g = df.graph
    assert g.op_names == ["input", "loop[ingress]", "loop[egress]", "loop/body", "loop/feedback",
                          "output"]
    assert [g.depth(df.target(op, 0)) for op in ("loop", "loop/body", "output")] == [0, 1, 0]
    assert g.depth(df.source("loop", 0)) == 0
    assert sorted(df.operators) == ["input", "loop", "loop/body", "loop/feedback", "output"]
    # the scope as its parent sees it: ingress, through the body, egress
    assert df.internal_summary("loop") == {(0, 0): (Summary.identity(0),)}
    assert df.internal_summary("loop/feedback") == {(0, 0): (Summary.feedback(1),)}
    # external summaries are Psi of the flat graph between an operator's outputs and inputs
    psi = closure(g)
    for op in df.operators:
        d = df._lookup(op)[1]
        expect = {}
        for o in range(d.outputs):
            for i in range(d.inputs):
                chain = psi[df.source(op, o)].get(df.target(op, i))
                if chain:
                    expect[(o, i)] = chain
        assert df.external_summary(op) == expect
    assert df.external_summary("loop/body") == {(0, 1): (Summary.feedback(1),)}
    assert df.external_summary("loop/feedback") == {(0, 0): (Summary.identity(1),)}


def test_a_scope_presents_itself_as_one_operator():
    """Replacing the loop scope by ``as_operate()`` gives the same frontiers outside it."""
    df = loop_dataflow()
    root = Scope("root")
    src = root.add(Operate("input", 0, 1, capabilities={0: [(0,)]}))
    lp = root.add(df.root.children[1].as_operate())
    sink = root.add(Operate("output", 1, 0))
    root.connect(src, 0, lp, 0)
    root.connect(lp, 0, sink, 0)
    flat = root.build()
    a, b = df.tracker("reference"), flat.tracker("reference")
    steps = [Report().capabilities("input", 0, (0,), -1).capabilities("input", 0, (2,), 1),
             Report().produced("input", 0, (3,), 4).capabilities("input", 0, (2,), -1)]
    for r in steps:
        a.apply(r)
        b.apply(r)
        assert a.frontier("output", 0) == b.frontier("output", 0)
    assert a.frontier("output", 0) == [(3,)]


# --------------------------------------------------------------------------------------------
# Descriptions and nesting: each bad call raises its named error and changes nothing
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make, exc, words", [
    (lambda: Operate("", 1, 1), OperatorNameError, "non-empty"),
    (lambda: Operate("a/b", 1, 1), OperatorNameError, "'/'"),
    (lambda: Operate(3, 1, 1), TypeError, "string"),
    (lambda: Operate("a", -1, 1), UnknownPortError, "inputs"),
    (lambda: Operate("a", 1, 1, summary={(1, 0): Summary.identity(0)}), UnknownPortError,
     "no input port 1"),
    (lambda: Operate("a", 1, 1, summary={(0, 0): Summary.ingress(0)}), SummaryShapeError,
     "changes the loop depth"),
    (lambda: Operate("a", 2, 1, summary={(0, 0): Summary.identity(0),
                                         (1, 0): Summary.identity(1)}), SummaryShapeError,
     "depth 1"),
    (lambda: Operate("a", 1, 1, summary={(0, 0): "identity"}), SummaryShapeError, "engine.Summary"),
    (lambda: Operate("a", 1, 1, capabilities={2: [(0,)]}), UnknownPortError, "output port 2"),
    (lambda: Operate("a", 1, 1, summary={(0, 0): Summary.identity(1)}, capabilities={0: [(0,)]}),
     TimestampWidthError, "capability"),
    (lambda: Operate("a", 0, 1, capabilities={0: [(0,), (0, 0)]}), TimestampWidthError,
     "different widths"),
    (lambda: Operate("a", 0, 1, capabilities={0: [(-1,)]}), TimestampRangeError, "outside"),
])
def test_operate_validates_its_description(make, exc, words):
    with pytest.raises(exc, match=words):
        make()


def test_operate_is_immutable_and_picklable():
    op = Operate("a", 1, 2, summary={(0, 1): [Summary.identity(1), Summary.feedback(1)]},
                 capabilities={0: [(0, 0), (0, 0)]})
    assert op.summary == {(0, 1): (Summary.identity(1),)}  # the antichain keeps the minimum
    assert op.depth == 1 and op.m == 1 and op.capabilities == {0: ((0, 0), (0, 0))}
    with pytest.raises(AttributeError):
        op.inputs = 3
    again = pickle.loads(pickle.dumps(op))
    assert (again.name, again.summary, again.capabilities) == (op.name, op.summary, op.capabilities)


def test_scope_rejects_bad_nesting_and_changes_nothing():
    root = Scope("root")
    a = root.add(Operate("a", 1, 1, summary={(0, 0): Summary.identity(0)}))
    inner = Scope("inner", 1, 1, depth=1)
    before = (root.children, list(root._channels))
    bad = [
        (lambda: root.add(Operate("a", 0, 1)), OperatorNameError, "already has a child named 'a'"),
        (lambda: root.add(Operate("b", 1, 1, summary={(0, 0): Summary.identity(1)})),
         DepthMismatchError, "depth 1"),
        (lambda: root.add(Operate("b", 0, 1, capabilities={0: [(0, 0)]})), TimestampWidthError,
         "capability"),
        (lambda: root.add(Scope("deep", 1, 1, depth=2)), ScopeError, "one loop deeper"),
        (lambda: root.add(Scope("wide", 1, 1, depth=1, m=2)), ScopeError, "m=2"),
        (lambda: root.add(root), ScopeError, "itself"),
        (lambda: root.add("a"), TypeError, "Operate or a Scope"),
        (lambda: root.connect(a, 0, 5, 0), UnknownOperatorError, "no child 5"),
        (lambda: root.connect(a, 1, a, 0), UnknownPortError, "output port 1"),
        (lambda: root.connect(BOUNDARY, 0, a, 0), UnknownPortError, "input port 0"),
        (lambda: inner.connect(BOUNDARY, 0, BOUNDARY, 1), UnknownPortError, "output port 1"),
    ]
    for call, exc, words in bad:
        with pytest.raises(exc, match=words):
            call()
        assert (root.children, list(root._channels)) == before
    i = root.add(inner)
    with pytest.raises(ScopeError, match="already a child"):
        Scope("other").add(inner)
    root.connect(a, 0, i, 0)
    with pytest.raises(DuplicateChannelError, match="already has a channel"):
        root.connect(a, 0, i, 0)
    with pytest.raises(ScopeError, match="child of scope 'root'"):
        inner.build()
    with pytest.raises(ScopeError, match="nothing outside a root"):
        Scope("top", 1, 0).build()
    with pytest.raises(ScopeError, match="depth 0"):
        Scope("top", 1, 1).internal_summary()
    # a loop without an advancing summary is rejected when built
    loopy = Scope("root")
    x = loopy.add(Operate("x", 1, 1, summary={(0, 0): Summary.identity(0)}))
    loopy.connect(x, 0, x, 0)
    with pytest.raises(ZeroAdvanceCycleError, match="x"):
        loopy.build()


# --------------------------------------------------------------------------------------------
# Reports: columns, round trips, translation
# --------------------------------------------------------------------------------------------

def test_report_columns_round_trip_and_concat():
    a = Report().produced("x", 1, [[1, 2], [3, 4]], [5, 6])
    b = Report().consumed("y/z", 0, (7,), [1, 2, 3]).capabilities("x", 0, (1, 1), -1)
    both = Report.concat([a, b])
    cols = both.to_arrays()
    assert cols["ops"] == ["x", "y/z"]
    assert cols["kind"].tolist() == [2, 2, 1, 1, 1, 0]
    assert cols["op"].tolist() == [0, 0, 1, 1, 1, 0]
    assert cols["port"].tolist() == [1, 1, 0, 0, 0, 0]
    assert cols["width"].tolist() == [2, 2, 1, 1, 1, 2]
    assert cols["ts"].tolist() == [[1, 2], [3, 4], [7, 0], [7, 0], [7, 0], [1, 1]]
    assert cols["count"].tolist() == [5, 6, 1, 2, 3, -1]
    back = Report.from_arrays(**cols).to_arrays()
    assert back.keys() == cols.keys()
    for k in cols:
        assert np.array_equal(back[k], cols[k]) if k != "ops" else back[k] == cols[k]
    assert len(pickle.loads(pickle.dumps(both))) == 6
    # the caller's arrays are copied: changing them later changes nothing
    ts = np.array([[1, 1]])
    r = Report().produced("x", 0, ts, 1)
    ts[0, 0] = 9
    assert r.to_arrays()["ts"].tolist() == [[1, 1]]


@pytest.mark.parametrize("call, exc, words", [
    (lambda: Report().produced(0, 0, (0,), 1), TypeError, "path"),
    (lambda: Report().produced("x", -1, (0,), 1), ReportPortError, "no output port -1"),
    (lambda: Report().consumed("x", 0, [[0], [1]], [1, 2, 3]), ReportCountError, "2 timestamps"),
    (lambda: Report().consumed("x", 0, [[[0]]], 1), TimestampWidthError, "shape"),
    (lambda: Report().consumed("x", 0, [0.5], 1), ReportError, "integers"),
    (lambda: Report.from_arrays([3], [0], [0], [[0]], [1], ["x"]), ReportError, "ReportKind"),
    (lambda: Report.from_arrays([0], [1], [0], [[0]], [1], ["x"]), ReportOperatorError, "code 1"),
    (lambda: Report.from_arrays([0, 0], [0], [0], [[0]], [1], ["x"]), ReportCountError, "shape"),
])
def test_report_rejects_malformed_calls(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_pointstamps_route_through_scope_boundaries():
    df = loop_dataflow()
    g, p = df.graph, pickle.loads(pickle.dumps(df.ports))
    r = (Report().produced("input", 0, [[4, 0]], 3)        # padded to m + K; enters the loop:
         .produced("loop/body", 1, [[2, 5], [2, 7]], 1)     # counter 0 appended; leaves it:
         .consumed("loop/body", 1, (2, 9), 2)               # counter dropped
         .capabilities("loop/feedback", 0, [[1, 1]], 1))
    loc, ts, diff = p.pointstamps(r)
    got = sorted((int(l), tuple(t[:g.width(l)]), int(d)) for l, t, d in zip(loc, ts, diff))
    assert got == sorted([(df.target("loop/body", 0), (4, 0), 3),
                          (df.target("output", 0), (2,), 2),
                          (df.target("loop/body", 1), (2, 9), -2),
                          (df.source("loop/feedback", 0), (1, 1), 1)])
    assert ts.dtype == np.int64 and ts.shape[1] == 2 and loc.dtype == np.int32
    # a message that entered a scope is counted where it waits, inside: the scope's input
    # frontier (as the parent sees it) is what may still arrive there
    rt = df.tracker("cpu")
    rt.apply(Report().produced("input", 0, (4,), 3).capabilities("input", 0, (0,), -1))
    assert rt.frontier("loop", 0) == [] and rt.frontier("loop/body", 0) == [(4, 0)]
    assert rt.frontier("output", 0) == [(4,)]
    # pure: the same report translates the same way again
    assert all(np.array_equal(a, b) for a, b in zip(p.pointstamps(r), (loc, ts, diff)))


@pytest.mark.parametrize("report, exc, words", [
    (Report().produced("nope", 0, (0,), 1), ReportOperatorError, "'nope'"),
    (Report().produced("loop", 0, (0,), 1), ReportOperatorError, "scope 'loop'"),
    (Report().produced("input", 1, (0,), 1), ReportPortError, "'input' has no output port 1"),
    (Report().consumed("loop/body", 2, (0, 0), 1), ReportPortError, "no input port 2"),
    (Report().produced("loop/body", 0, (0,), 1), TimestampWidthError, r"'loop/body' output 0"),
    (Report().produced("input", 0, (0, 3), 1), TimestampWidthError, "beyond depth 0"),
    (Report().produced("input", 0, (1 << 62,), 1), TimestampRangeError, "'input' output 0"),
    (Report().consumed("output", 0, (0,), -1), ReportCountError, "'output' input 0"),
    (Report().produced("input", 0, (0,), [1 << 62, 1 << 62, 1 << 62]), ReportCountError,
     "64-bit"),
])
def test_bad_reports_are_rejected_by_name(report, exc, words):
    df = loop_dataflow()
    with pytest.raises(exc, match=words):
        df.pointstamps(report)
    rt = df.tracker("cpu")
    before = state(rt)
    with pytest.raises(exc, match=words):
        rt.apply(report)
    assert state(rt) == before


def around_the_loop(df, rt, ts):
    """Put one message per row of ``ts`` (``(0, it)``, ``it >= 1``) in flight at the body's
    feedback input, by the guards' rules: the input sends one message and drops its
    capability; the body consumes it and takes a capability at ``(0, 0)``; then, in one
    report, the body sends at ``(0, it - 1)`` and drops that capability, and the feedback
    consumes what the body sent and sends it on at ``(0, it)``."""
    prev = ts.copy()
    prev[:, 1] -= 1
    rt.apply(Report().produced("input", 0, (0,), 1).capabilities("input", 0, (0,), -1))
    rt.apply(Report().consumed("loop/body", 0, (0, 0), 1).capabilities("loop/body", 0, (0, 0), 1))
    rt.apply(Report().produced("loop/body", 0, prev, 1).capabilities("loop/body", 0, (0, 0), -1)
             .consumed("loop/feedback", 0, prev, 1).produced("loop/feedback", 0, ts, 1))


@pytest.mark.parametrize("n, times", [(1_000_000, 200), (200_000, 100_000)])
def test_a_million_message_report_is_array_work(n, times):
    """1e6 consumed and 1e6 produced rows at 200 distinct times, and 2e5 at 1e5 distinct
    times (guards quadratic in the distinct times would take minutes here): the translation
    and the guards give the exact consolidated counts (the work is NumPy over the columns;
    the time is measured by perf/bench_operate.py, see docs/operate.md)."""
    df = loop_dataflow()
    rt = df.tracker("cpu")
    rng = np.random.default_rng(13)
    it = rng.integers(1, times + 1, n)
    ts = np.zeros((n, 2), np.int64)
    ts[:, 1] = it
    around_the_loop(df, rt, ts)
    body_in1, fb_in = df.target("loop/body", 1), df.target("loop/feedback", 0)
    per = np.bincount(it, minlength=times + 1)[1:]
    hit = per > 0
    # the body consumes the messages on its feedback input and sends each twice around
    r = Report().consumed("loop/body", 1, ts, 1).produced("loop/body", 0, ts, 2)
    loc, out_ts, diff = df.check(r, rt.tracker)
    assert set(loc.tolist()) == {body_in1, fb_in}
    assert np.array_equal(diff[loc == body_in1], -per[hit])
    assert np.array_equal(diff[loc == fb_in], 2 * per[hit])
    assert np.array_equal(out_ts[loc == fb_in][:, 1], np.flatnonzero(hit) + 1)
    rt.apply(r)
    assert rt.frontier("loop/feedback", 0) == [(0, int(it.min()))]
    assert rt.frontier("loop/body", 1) == [(0, int(it.min()) + 1)]
    # one message more than was sent, at the latest time: rejected whole, nothing applied
    last = (0, int(it.max()) + 1)
    over = Report().consumed("loop/feedback", 0, ts, 2).consumed("loop/feedback", 0, last, 1)
    before = state(rt)
    with pytest.raises(NotInFlightError, match=rf"consumes 1 messages at \(0, {last[1]}\) but "
                                               r"only 0 are in flight"):
        rt.apply(over.produced("loop/feedback", 0, last, 1))
    assert state(rt) == before


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_a_message_never_sent_justifies_nothing(backend):
    """Consuming a message that is not in flight is rejected by name (NotInFlightError) and
    changes nothing: it cannot justify a capability in the past, so no frontier moves back."""
    df = loop_dataflow()
    rt = df.tracker(backend)
    rt.apply(Report().produced("input", 0, (0,), 5).capabilities("input", 0, (0,), -1))
    rt.apply(Report().consumed("loop/body", 0, (0, 0), 5))
    assert rt.frontier("output", 0) == []
    def snap():
        return rt.tracker.frontiers(), sorted(rt.tracker.counts.active())

    before = snap()
    for bad, words in [
            # the phantom: a capability at (0, 0) on the body's way out, from nothing
            (Report().consumed("loop/body", 0, (0, 0), 1).capabilities("loop/body", 1, (0, 0), 1),
             r"'loop/body' input 0 consumes 1 messages at \(0, 0\) but only 0 are in flight "
             r"there \(0 counted, 0 sent in this report\)"),
            (Report().consumed("loop/body", 0, (0, 0), 1).produced("loop/body", 1, (0, 0), 1),
             r"'loop/body' input 0"),
            # a message sent in the same report can be consumed, but not twice
            (Report().produced("loop/feedback", 0, (0, 1), 1)
             .consumed("loop/body", 1, (0, 1), 2), r"report row 1: .*only 1 are in flight"),
            (Report().consumed("loop/body", 1, (0, 7), 1), r"at \(0, 7\)")]:
        with pytest.raises(NotInFlightError, match=words):
            rt.apply(bad)
        assert snap() == before
        assert rt.frontier("output", 0) == []
    assert issubclass(NotInFlightError, ReportError) and \
        issubclass(NotInFlightError, engine.NegativeCountError)
    # what is in flight: counted, or sent in the same report (around the loop in one step)
    rt2 = df.tracker(backend)
    rt2.apply(Report().produced("input", 0, (0,), 2).capabilities("input", 0, (0,), -1))
    rt2.apply(Report().consumed("loop/body", 0, (0, 0), 1).produced("loop/body", 0, (0, 0), 1)
              .consumed("loop/feedback", 0, (0, 0), 1).produced("loop/feedback", 0, (0, 1), 1)
              .consumed("loop/body", 1, (0, 1), 1).produced("loop/body", 1, (0, 1), 1))
    assert rt2.frontier("output", 0) == [(0,)]
    # the same guard on every holder of counts: a table without the message rejects it
    loc, ts, cnt = rt2.tracker.table() if backend == "cpu" else (np.zeros(0, np.int64),
                                                                  np.zeros((0, 2), np.int64),
                                                                  np.zeros(0, np.int64))
    keep = loc != df.target("loop/body", 0)
    with pytest.raises(NotInFlightError):
        df.check(Report().consumed("loop/body", 0, (0, 0), 1), (loc[keep], ts[keep], cnt[keep]))


# --------------------------------------------------------------------------------------------
# Guards
# --------------------------------------------------------------------------------------------

def test_guards_reject_by_name_and_change_nothing():
    df = loop_dataflow()
    rt = df.tracker("cpu")
    rt.apply(Report().produced("input", 0, (0,), 2)
             .capabilities("input", 0, [(0,), (2,)], [-1, 1]))
    rt.apply(Report().consumed("loop/body", 0, (0, 0), 1).produced("loop/body", 0, (0, 0), 1))
    rt.pending("loop/body"), rt.pending("loop/feedback"), rt.pending("output"), rt.pending("loop")
    bad = [
        # produces on an output without a capability, consuming nothing
        (Report().produced("loop/body", 1, (0, 3), 1), NoCapabilityError,
         r"'loop/body' output 1 produces at \(0, 3\)"),
        # produces before its capability
        (Report().produced("input", 0, (1,), 1), NoCapabilityError,
         r"'input' output 0 produces at \(1,\).*holds \(2,\)"),
        # the consumed message justifies only what its summary allows: feedback adds 1
        (Report().consumed("loop/feedback", 0, (0, 0), 1).produced("loop/feedback", 0, (0, 0), 1),
         NoCapabilityError, r"'loop/feedback' output 0 produces at \(0, 0\)"),
        # a consumed message on an input not connected to that output justifies nothing
        (Report().consumed("loop/body", 0, (0, 0), 1).produced("input", 0, (0,), 1),
         NoCapabilityError, r"'input'"),
        # capabilities move forward only
        (Report().capabilities("input", 0, (1,), 1), CapabilityRegressionError,
         r"'input' output 0 acquires a capability at \(1,\)"),
        (Report().capabilities("input", 0, [(2,), (1,)], [-1, 1]), CapabilityRegressionError,
         r"at \(1,\)"),
        # drops what it does not hold
        (Report().capabilities("input", 0, (2,), -2), UnheldCapabilityError,
         r"'input' output 0 drops 2 capabilities at \(2,\) but holds 1"),
        (Report().capabilities("loop/body", 0, (0, 0), -1), UnheldCapabilityError,
         r"'loop/body' output 0 drops 1 capabilities at \(0, 0\) but holds 0"),
        # one bad row spoils the whole report
        (Report().produced("input", 0, (2,), 1).produced("input", 0, (0,), 1), NoCapabilityError,
         r"report row 1"),
    ]
    for report, exc, words in bad:
        before = state(rt)
        with pytest.raises(exc, match=words):
            rt.apply(report)
        assert state(rt) == before
        assert issubclass(exc, engine.CapabilityError)
    # what the guards allow: produce at or after a held capability, move it forward, hand a
    # capability over to a later time in one report, derive one from a consumed message
    ok = [Report().produced("input", 0, [(2,), (5,)], [1, 1]),
          # the body holds nothing: what it consumed at (0, 0) lets it produce at (0, 0)
          Report().consumed("loop/body", 0, (0, 0), 1).produced("loop/body", 1, (0, 0), 1),
          Report().capabilities("input", 0, [(2,), (3,)], [-1, 1]).produced("input", 0, (3,), 1),
          Report().consumed("loop/feedback", 0, (0, 0), 1)
          .capabilities("loop/feedback", 0, (0, 1), 1).produced("loop/feedback", 0, (0, 4), 1),
          Report().produced("loop/feedback", 0, (0, 1), 1)
          .capabilities("loop/feedback", 0, (0, 1), -1),
          Report().capabilities("input", 0, (4,), 1).produced("input", 0, (4,), 1)
          .capabilities("input", 0, (4,), -1)]
    for report in ok:
        rt.apply(report)
    assert rt.capabilities("input", 0) == {(3,): 1}
    assert rt.capabilities("loop/feedback", 0) == {}


def test_check_reads_counts_from_every_kind_of_holder():
    """``check`` guards against a reference tracker, the batched tracker, a plain table and
    the Spark driver's FrontierService alike."""
    from spark_plugin.schema import delta_table
    from spark_plugin.service.frontier_service import FrontierService

    df = loop_dataflow()
    loc, ts, diff = df.initial()
    svc = FrontierService(df.graph)
    svc.apply(delta_table(loc.tolist(), ts.tolist(), diff.tolist(), "init", 0))
    ref = df.tracker("reference")
    cpu = df.tracker("cpu")
    good = Report().produced("input", 0, (0,), 1)
    bad = Report().produced("input", 0, (0,), 1).capabilities("input", 0, (0,), -2)
    for holder in (svc, ref.tracker, cpu.tracker, cpu, cpu.tracker.table()):
        assert [a.tolist() for a in df.check(good, holder)] == \
               [a.tolist() for a in df.pointstamps(good)]
        with pytest.raises(UnheldCapabilityError):
            df.check(bad, holder)
    with pytest.raises(TypeError, match="counts"):
        df.check(good, 3)


def test_frontier_changes_are_pushed_to_the_operators():
    df = loop_dataflow()
    rt = df.tracker("reference")
    assert rt.pending("loop/body") == {0: [((0, 0), 1)], 1: [((0, 1), 1)]}
    assert rt.pending("loop/body") == {}
    seen = []
    stop = rt.subscribe("output", seen.append)
    pushed = rt.apply(Report().capabilities("input", 0, [(0,), (1,)], [-1, 1]))
    assert pushed["output"] == {0: [((0,), -1), ((1,), 1)]}
    assert pushed["loop"] == pushed["output"]           # the scope's input, as the parent sees it
    assert seen == [pushed["output"]]
    assert rt.pending("loop/feedback") == {0: [((0, 0), 1), ((0, 0), -1), ((1, 0), 1)]}
    stop()
    rt.apply(Report().capabilities("input", 0, (1,), -1))
    assert len(seen) == 1 and rt.frontier("output", 0) == []
    with pytest.raises(UnknownOperatorError, match="'nope'"):
        rt.pending("nope")
    with pytest.raises(UnknownPortError, match="input port 1"):
        rt.frontier("output", 1)


# --------------------------------------------------------------------------------------------
# Nested scopes equal the same graph built flat (Hypothesis)
# --------------------------------------------------------------------------------------------

@dataclass
class Leaf:
    name: str
    inputs: int
    outputs: int
    summary: dict
    caps: dict


@dataclass
class Sub:
    name: str
    inputs: int
    outputs: int
    depth: int
    children: list = field(default_factory=list)
    channels: list = field(default_factory=list)  # (src, port, dst, port); "B" = boundary


@st.composite
def nestings(draw, m: int):
    """A root scope at depth 0 with scopes nested 1 to 3 levels: operators with random
    summaries and capabilities, channels forward among siblings and the boundary, and a
    feedback operator per loop scope whose channel may go back."""
    levels = draw(st.integers(1, 3))
    counter = iter(range(1000))

    def scope(depth, inputs, outputs, left):
        s = Sub(f"s{next(counter)}", inputs, outputs, depth)
        n = draw(st.integers(1, 3))
        nest_at = draw(st.integers(0, n - 1)) if left else -1
        for k in range(n):
            if k == nest_at:
                s.children.append(scope(depth + 1, draw(st.integers(1, 2)), draw(st.integers(1, 2)),
                                        left - 1))
                continue
            ins, outs = draw(st.integers(0, 2)), draw(st.integers(0, 2))
            summ = {}
            for i in range(ins):
                for o in range(outs):
                    if draw(st.booleans()):
                        summ[(i, o)] = draw(st.lists(summaries(m, depth, depth), min_size=1,
                                                     max_size=2))
            caps = {o: [draw(timestamps(m, depth, hi=1))] for o in range(outs)
                    if draw(st.integers(0, 3))}
            s.children.append(Leaf(f"o{next(counter)}", ins, outs, summ, caps))
        s.children.append(Leaf(f"sink{next(counter)}", 2, 0, {}, {}))  # reads what precedes it
        back = depth >= 1 and draw(st.booleans())
        if back:
            s.children.append(Leaf(f"fb{next(counter)}", 1, 1,
                                   {(0, 0): [Summary.feedback(depth, m)]}, {}))
        last = len(s.children)
        sources = [("B", p, -1) for p in range(inputs)] + \
                  [(k, p, k) for k, c in enumerate(s.children) for p in range(c.outputs)]
        targets = [(k, p, k) for k, c in enumerate(s.children) for p in range(c.inputs)] + \
                  [("B", p, last) for p in range(outputs)]
        for t_op, t_port, t_pos in targets:
            cands = [x for x in sources if x[2] < t_pos or (back and x[0] == last - 1)]
            if cands and (t_op == "B" or draw(st.integers(0, 3)) > 0):
                s_op, s_port, _ = draw(st.sampled_from(cands))
                s.channels.append((s_op, s_port, t_op, t_port))
        return s

    root = scope(0, 0, 0, levels)
    return root


def nested_build(desc: Sub, m: int) -> Scope:
    s = Scope(desc.name if desc.depth else "root", desc.inputs, desc.outputs, depth=desc.depth, m=m)
    for c in desc.children:
        if isinstance(c, Leaf):
            s.add(Operate(c.name, c.inputs, c.outputs, summary=c.summary,
                          capabilities=c.caps))
        else:
            s.add(nested_build(c, m))
    for a, p, b, q in desc.channels:
        s.connect(BOUNDARY if a == "B" else a, p, BOUNDARY if b == "B" else b, q)
    return s


def flat_build(desc: Sub, m: int):
    """The same dataflow with ``GraphBuilder`` directly, in its own order: children before
    their scope, each scope's boundary one operator (inputs: the scope's inputs outside,
    then its outputs inside; outputs: the inputs inside, then the outputs outside).
    Returns the graph and ``where[(kind, path, port)] -> location``."""
    b = GraphBuilder(m)
    ops = {}  # path -> ("leaf" | "scope", op, description)
    scopes = []

    def walk(s: Sub, prefix: str):
        scopes.append((s, prefix))
        for c in reversed(s.children):
            path = prefix + c.name
            if isinstance(c, Leaf):
                op = b.add_operator(c.inputs, c.outputs, depth=s.depth, name=path)
                for (i, o), chain in c.summary.items():
                    for x in chain:
                        b.add_summary(op, i, o, x)
                ops[path] = ("leaf", op, c)
            else:
                walk(c, path + "/")
                I, O, d = c.inputs, c.outputs, c.depth
                op = b.add_operator(I + O, I + O, input_depths=[d - 1] * I + [d] * O,
                                    output_depths=[d] * I + [d - 1] * O, name=path)
                for i in range(I):
                    b.add_summary(op, i, i, Summary.ingress(d - 1, m))
                for o in range(O):
                    b.add_summary(op, I + o, I + o, Summary.egress(d, m))
                ops[path] = ("scope", op, c)

    walk(desc, "")
    for s, prefix in scopes:
        for a, p, t, q in s.channels:
            if a == "B":
                src = (ops[prefix[:-1]][1], p)
            else:
                kind, op, c = ops[prefix + s.children[a].name]
                src = (op, p) if kind == "leaf" else (op, c.inputs + p)
            if t == "B":
                dst = (ops[prefix[:-1]][1], s.inputs + q)
            else:
                kind, op, c = ops[prefix + s.children[t].name]
                dst = (op, q)
            b.connect(*src, *dst)
    g = b.build()
    where = {}
    for path, (kind, op, c) in ops.items():
        if kind == "leaf":
            for i in range(c.inputs):
                where[("in", path, i)] = g.target(op, i)
            for o in range(c.outputs):
                where[("out", path, o)] = g.source(op, o)
        else:
            for i in range(c.inputs):
                where[("in", path, i)] = g.target(op, i)
                where[("inner_in", path, i)] = g.source(op, i)
            for o in range(c.outputs):
                where[("inner_out", path, o)] = g.target(op, c.inputs + o)
                where[("out", path, o)] = g.source(op, c.inputs + o)
    return g, where


def leaves_of(desc: Sub, prefix=""):
    for c in desc.children:
        if isinstance(c, Leaf):
            yield prefix + c.name, c
        else:
            yield from leaves_of(c, prefix + c.name + "/")


def deliver(chain, end, t, out):
    """Where a message sent from ``end`` (child index and output, or ("B", input) for a scope
    input seen from inside) of the innermost scope of ``chain`` lands: leaf inputs, the
    timestamp gaining a 0 entering a scope and losing its last counter leaving one."""
    s, prefix, _ = chain[-1]
    for a, p, b, q in s.channels:
        if (a, p) != end:
            continue
        if b == "B":
            deliver(chain[:-1], (chain[-1][2], q), t[:-1], out)
        elif isinstance(s.children[b], Leaf):
            out.append((("in", prefix + s.children[b].name, q), t))
        else:
            c = s.children[b]
            deliver(chain + [(c, prefix + c.name + "/", b)], ("B", q), t + (0,), out)


def crosses_boundary(desc: Sub, path: str, output: int) -> bool:
    """Whether output ``output`` of the leaf at ``path`` has a channel to its scope's output
    or into a child scope."""
    chain, k = chain_to(desc, path)
    s = chain[-1][0]
    return any((a, p) == (k, output) and (b == "B" or isinstance(s.children[b], Sub))
               for a, p, b, _ in s.channels)


def chain_to(desc: Sub, path: str):
    """The scopes from the root down to the leaf at ``path``, and the leaf's index."""
    parts = path.split("/")
    chain, s, prefix = [(desc, "", None)], desc, ""
    for name in parts[:-1]:
        k = next(i for i, c in enumerate(s.children) if c.name == name)
        s = s.children[k]
        prefix += name + "/"
        chain.append((s, prefix, k))
    return chain, next(i for i, c in enumerate(s.children) if c.name == parts[-1])


def oracle_guard(report_rows, leaves, held, m, waiting, lands):
    """The guards decided row by row: the error class the report deserves, or None.

    The oracle's own count model says what is in flight: ``waiting(path, input, t)``, the
    reference tracker's count at that input, plus what the report's produced rows deliver
    there (``lands(path, output, t)``: the ``(path, input, t')`` its channels reach, by the
    description's own routing). A consumed message justifies only when in flight."""
    caps, consumed, produced = {}, {}, []
    taken, sent = {}, {}
    for kind, path, port, t, c in report_rows:
        if kind == ReportKind.CAPABILITY:
            caps[(path, port, t)] = caps.get((path, port, t), 0) + c
        elif kind == ReportKind.CONSUMED and c > 0:
            consumed.setdefault(path, set()).add((port, t))
            taken[(path, port, t)] = taken.get((path, port, t), 0) + c
        elif kind == ReportKind.PRODUCED and c > 0:
            produced.append((path, port, t))
            for key in lands(path, port, t):
                sent[key] = sent.get(key, 0) + c
    for (path, i, t), c in taken.items():
        if max(waiting(path, i, t), 0) + sent.get((path, i, t), 0) < c:
            return NotInFlightError

    def reached(path, o):
        return {s.apply(t) for i, t in consumed.get(path, ())
                for s in leaves[path].summary.get((i, o), ())}

    for (path, o, t), d in caps.items():
        if d < 0 and held(path, o).get(t, 0) < -d:
            return UnheldCapabilityError
    for (path, o, t), d in caps.items():
        if d > 0 and not any(le(h, t, m) for h in list(held(path, o)) + list(reached(path, o))):
            return CapabilityRegressionError
    for path, o, t in produced:
        gained = [u for (p2, o2, u), d in caps.items() if (p2, o2) == (path, o) and d > 0]
        if not any(le(h, t, m) for h in list(held(path, o)) + gained + list(reached(path, o))):
            return NoCapabilityError
    return None


@examples(100)
@given(st.data())
def test_nested_scopes_equal_the_flat_graph(data):
    m = data.draw(st.sampled_from([1, 2]), label="m")
    desc = data.draw(nestings(m), label="nesting")
    try:
        df = nested_build(desc, m).build()
    except ZeroAdvanceCycleError:
        # a random summary reset a loop counter on a feedback cycle: drop the back channels
        def forward(s):
            fb = [k for k, c in enumerate(s.children) if c.name.startswith("fb")]
            s.channels = [ch for ch in s.channels
                          if not (ch[0] in fb and ch[2] != "B" and ch[2] <= ch[0])]
            for c in s.children:
                if isinstance(c, Sub):
                    forward(c)
        forward(desc)
        df = nested_build(desc, m).build()
    g, where = flat_build(desc, m)
    assert g.num_locations == df.graph.num_locations
    # every location of the nested build, paired with the flat build's
    pairs = []
    for (kind, path, port), loc in where.items():
        if kind == "in":
            pairs.append((df.target(path, port), loc))
        elif kind == "out":
            pairs.append((df.source(path, port), loc))
        elif kind == "inner_in":
            pairs.append((df.graph.source(df.graph.op_names.index(f"{path}[ingress]"), port), loc))
        else:
            pairs.append((df.graph.target(df.graph.op_names.index(f"{path}[egress]"), port), loc))
    assert sorted(a for a, _ in pairs) == list(range(g.num_locations))
    for a, b in pairs:
        assert df.graph.depth(a) == g.depth(b)

    leaves = {p: c for p, c in leaves_of(desc)}
    ref = ImpliedFrontierTracker(g)
    init = [(where[("out", p, o)], t, 1) for p, c in leaves.items() for o, ts in c.caps.items()
            for t in ts]
    ref.update([x[0] for x in init], [x[1] for x in init], [x[2] for x in init])
    rt = df.tracker("cpu")

    def same():
        for a, b in pairs:
            assert rt.tracker.frontier(a) == ref.frontier(b), (df.graph.describe(a), g.describe(b))

    def held(path, o):
        return {t: c for t, c in ref.counts.at(where[("out", path, o)]).items() if c > 0}

    def waiting(path, i, t):
        return ref.counts.at(where[("in", path, i)]).get(t, 0)

    def lands(path, o, t):
        chain, k = chain_to(desc, path)
        out = []
        deliver(chain, (k, o), t, out)
        return [(p, i, u) for (_, p, i), u in out]

    same()
    outs = [(p, o) for p, c in sorted(leaves.items()) for o in range(c.outputs)]
    ins = [(p, i) for p, c in sorted(leaves.items()) for i in range(c.inputs)]
    # outputs whose messages leave their scope, or enter a child scope: often drawn
    crossing = [(p, o) for p, o in outs if crosses_boundary(desc, p, o)]
    for _ in range(data.draw(st.integers(1, 6), label="reports")):
        rows = []
        # half the reports speak for one operator, often one whose messages cross a boundary
        focus = data.draw(st.sampled_from(sorted({p for p, _ in crossing}) if crossing and
                                          data.draw(st.booleans()) else sorted(leaves)))
        one = data.draw(st.booleans())
        my_outs = [x for x in outs if x[0] == focus] if one else outs
        my_ins = [x for x in ins if x[0] == focus] if one else ins
        for _ in range(data.draw(st.integers(1, 4))):
            kinds = ([ReportKind.CONSUMED] if my_ins else []) + \
                    ([ReportKind.PRODUCED, ReportKind.CAPABILITY] if my_outs else [])
            if not kinds:
                break
            kind = data.draw(st.sampled_from(kinds))
            if kind == ReportKind.CONSUMED:
                path, port = data.draw(st.sampled_from(my_ins))
                at = ref.counts.at(where[("in", path, port)])
                here = sorted(t for t, c in at.items() if c > 0)
            else:
                pool = my_outs
                cross = [x for x in crossing if x in my_outs]
                if kind == ReportKind.PRODUCED and cross and data.draw(st.booleans()):
                    pool = cross
                path, port = data.draw(st.sampled_from(pool))
                here = sorted(held(path, port))
            depth = len(path.split("/")) - 1
            if here and data.draw(st.booleans()):  # an in-flight message, a held capability
                t = data.draw(st.sampled_from(here))
            else:
                t = data.draw(timestamps(m, depth, hi=2))
            if kind == ReportKind.CAPABILITY:
                n = data.draw(st.integers(-1, 1) if here else st.integers(-1, 2))
            elif kind == ReportKind.CONSUMED and at.get(t, 0) > 0:
                n = data.draw(st.integers(0, at[t] + 1))  # at most one more than in flight
            else:
                n = data.draw(st.integers(0, 3))
            rows.append((kind, path, port, t, n))
        report = Report()
        for kind, path, port, t, n in rows:
            {ReportKind.CONSUMED: report.consumed, ReportKind.PRODUCED: report.produced,
             ReportKind.CAPABILITY: report.capabilities}[kind](path, port, t, n)
        expect = oracle_guard(rows, leaves, held, m, waiting, lands)
        before = state(rt)
        if expect is not None:
            with pytest.raises(expect):
                rt.apply(report)
            assert state(rt) == before
            continue
        rt.apply(report)
        loc, ts, diff = [], [], []
        for kind, path, port, t, n in rows:
            if kind == ReportKind.CONSUMED:
                loc.append(where[("in", path, port)]); ts.append(t); diff.append(-n)
            elif kind == ReportKind.CAPABILITY:
                loc.append(where[("out", path, port)]); ts.append(t); diff.append(n)
            else:
                chain, k = chain_to(desc, path)
                out = []
                deliver(chain, (k, port), t, out)
                for key, u in out:
                    loc.append(where[key]); ts.append(u); diff.append(n)
        ref.update(loc, ts, diff)
        same()


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_a_strict_tracker_rejects_consuming_what_is_not_in_flight(backend):
    df = loop_dataflow()
    rt = df.tracker(backend, strict=True)
    rt.apply(Report().produced("input", 0, (0,), 2))
    before = rt.tracker.frontiers(), sorted(rt.tracker.counts.active())
    with pytest.raises(engine.NegativeCountError):
        rt.apply(Report().consumed("loop/body", 0, (0, 0), 3))
    assert (rt.tracker.frontiers(), sorted(rt.tracker.counts.active())) == before
    rt.apply(Report().consumed("loop/body", 0, (0, 0), 2))
    assert rt.frontier("loop/body", 0) == [(0, 0)]  # the input still holds its capability


@examples(40)
@given(st.data())
def test_dominance_against_the_antichain_equals_every_pair(data):
    """The guards' dominance test (justifiers reduced to their antichain, a binary search for
    ``m == 1``, chunks for ``m > 1``) says what comparing every query with every justifier
    says, on random timestamps at a few locations."""
    from engine.operate.report import _dominated

    m = data.draw(st.sampled_from([1, 2]), label="m")
    depth = data.draw(st.integers(0, 2), label="depth")
    rows = st.tuples(st.integers(0, 2), timestamps(m, depth, hi=3))
    J = data.draw(st.lists(rows, max_size=30), label="justifiers")
    Q = data.draw(st.lists(rows, max_size=30), label="queries")
    W = m + depth

    def cols(xs):
        return (np.array([l for l, _ in xs], np.int64),
                np.array([t for _, t in xs], np.int64).reshape(len(xs), W))

    got = _dominated(*cols(Q), *cols(J), m)
    assert got.tolist() == [any(l2 == l and le(t2, t, m) for l2, t2 in J) for l, t in Q]
