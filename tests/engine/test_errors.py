"""Bad input to the engine API (docs/semantics.md 7): every class of bad input raises its named
exception, the message names the offending operator, port, location, timestamp or row, and a
rejected call leaves all state exactly as it was (a later valid call behaves as on fresh state).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.errors as errors
from engine import Backend, GraphBuilder, Summary
from engine.errors import (AntichainOverflowError, BackendError, BatchError, DepthMismatchError,
                           DuplicateChannelError, NegativeCountError, SummaryShapeError,
                           TimestampRangeError, TimestampWidthError, TimelyFrontierError,
                           UnknownLocationError, UnknownOperatorError, UnknownPortError,
                           ZeroAdvanceCycleError)

# --------------------------------------------------------------------------------------------
# The exception hierarchy
# --------------------------------------------------------------------------------------------

NAMED = [getattr(errors, name) for name in errors.__all__ if name != "TimelyFrontierError"]


@pytest.mark.parametrize("exc", NAMED, ids=lambda e: e.__name__)
def test_named_errors_derive_from_base(exc):
    assert issubclass(exc, TimelyFrontierError)
    assert getattr(engine, exc.__name__) is exc  # part of the public API
    if exc in (errors.ConvergenceError, errors.DependencyError,  # not bad input: an internal
               errors.SafetyError):  # guard, a missing package, a protocol invariant broken
        assert issubclass(exc, RuntimeError)
    else:
        assert issubclass(exc, ValueError)


def test_hierarchy_groups():
    for exc in (UnknownOperatorError, UnknownPortError, DepthMismatchError, SummaryShapeError,
                DuplicateChannelError, ZeroAdvanceCycleError):
        assert issubclass(exc, errors.GraphError)
    for exc in (UnknownLocationError, TimestampWidthError, TimestampRangeError, NegativeCountError):
        assert issubclass(exc, BatchError)


# --------------------------------------------------------------------------------------------
# GraphBuilder
# --------------------------------------------------------------------------------------------

def _builder():
    """A small valid builder: src (depth 1) -> mid (depth 1, two inputs) -> out (depth 0)."""
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=1, name="src")
    mid = b.add_operator(2, 1, depth=1, name="mid")
    b.add_summary(mid, 0, 0, Summary.identity(1))
    b.add_summary(mid, 1, 0, Summary.product(0, 1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0], name="leave")
    b.add_summary(leave, 0, 0, Summary.egress(1))
    sink = b.add_operator(1, 0, depth=0, name="sink")
    b.connect(src, 0, mid, 0)
    b.connect(mid, 0, leave, 0)
    b.connect(leave, 0, sink, 0)
    return b, dict(src=src, mid=mid, leave=leave, sink=sink)


def _snapshot(builder):
    g = builder.build()
    return g.num_locations, g.locations, g.edges, g.op_names


BUILDER_ERRORS = [
    # (id, call(builder, ops), exception, words in the message)
    ("summary-unknown-op", lambda b, o: b.add_summary(99, 0, 0, Summary.identity(1)),
     UnknownOperatorError, ["99"]),
    ("summary-negative-op", lambda b, o: b.add_summary(-1, 0, 0, Summary.identity(1)),
     UnknownOperatorError, ["-1"]),
    ("summary-bool-op", lambda b, o: b.add_summary(True, 0, 0, Summary.identity(1)),
     UnknownOperatorError, ["True"]),
    ("connect-unknown-src-op", lambda b, o: b.connect(7, 0, o["mid"], 1),
     UnknownOperatorError, ["7"]),
    ("connect-unknown-dst-op", lambda b, o: b.connect(o["src"], 0, 8, 0),
     UnknownOperatorError, ["8"]),
    ("summary-unknown-input", lambda b, o: b.add_summary(o["mid"], 2, 0, Summary.identity(1)),
     UnknownPortError, ["mid", "input port 2"]),
    ("summary-unknown-output", lambda b, o: b.add_summary(o["mid"], 0, 1, Summary.identity(1)),
     UnknownPortError, ["mid", "output port 1"]),
    ("connect-unknown-output", lambda b, o: b.connect(o["src"], 1, o["mid"], 1),
     UnknownPortError, ["src", "output port 1"]),
    ("connect-unknown-input", lambda b, o: b.connect(o["src"], 0, o["mid"], 5),
     UnknownPortError, ["mid", "input port 5"]),
    ("connect-input-as-output", lambda b, o: b.connect(o["sink"], 0, o["mid"], 1),
     UnknownPortError, ["sink", "output port 0"]),
    ("operator-depth-list-length", lambda b, o: b.add_operator(2, 1, input_depths=[1]),
     UnknownPortError, ["2 inputs"]),
    ("operator-negative-ports", lambda b, o: b.add_operator(-1, 1),
     UnknownPortError, ["inputs=-1"]),
    ("operator-negative-depth", lambda b, o: b.add_operator(1, 1, depth=-2),
     UnknownPortError, ["depth=-2"]),
    ("connect-depth-mismatch", lambda b, o: b.connect(o["leave"], 0, o["mid"], 1),
     DepthMismatchError, ["leave", "out0", "depth 0", "mid", "in1", "depth 1"]),
    ("summary-wrong-src-depth", lambda b, o: b.add_summary(o["leave"], 0, 0, Summary.identity(0)),
     SummaryShapeError, ["leave", "input 0", "depth 1", "output 0", "depth 0"]),
    ("summary-wrong-dst-depth", lambda b, o: b.add_summary(o["mid"], 0, 0, Summary.egress(1)),
     SummaryShapeError, ["mid", "depth 1"]),
    ("summary-wrong-m", lambda b, o: b.add_summary(o["mid"], 0, 0, Summary.identity(1, m=2)),
     SummaryShapeError, ["mid", "m=1"]),
    ("duplicate-channel", lambda b, o: b.connect(o["src"], 0, o["mid"], 0),
     DuplicateChannelError, ["mid", "in0", "src", "out0"]),
]


@pytest.mark.parametrize("call,exc,words", [c[1:] for c in BUILDER_ERRORS],
                         ids=[c[0] for c in BUILDER_ERRORS])
def test_builder_rejects_and_leaves_state(call, exc, words):
    b, ops = _builder()
    before = _snapshot(b)
    with pytest.raises(exc) as info:
        call(b, ops)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert _snapshot(b) == before
    # The builder keeps working: a valid call afterwards succeeds as on a fresh builder.
    b.connect(ops["mid"], 0, ops["mid"], 1)  # a loop through mid's (0,1) summary: advances
    fresh, fops = _builder()
    fresh.connect(fops["mid"], 0, fops["mid"], 1)
    assert _snapshot(b) == _snapshot(fresh)


def test_builder_rejects_bad_m():
    with pytest.raises(SummaryShapeError, match="m"):
        GraphBuilder(m=0)


def test_graph_lookup_errors():
    b, ops = _builder()
    g = b.build()
    with pytest.raises(UnknownOperatorError, match="42"):
        g.target(42, 0)
    with pytest.raises(UnknownPortError, match="input port 3"):
        g.target(ops["mid"], 3)
    with pytest.raises(UnknownPortError, match="output port 0"):
        g.source(ops["sink"], 0)


# --- zero-advance cycles -----------------------------------------------------------------------

def _identity_loop_builder():
    """A loop at depth 1 whose 'feedback' is the identity: no counter advances around it."""
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=1, name="src")
    step = b.add_operator(2, 1, depth=1, name="step")
    b.add_summary(step, 0, 0, Summary.identity(1))
    b.add_summary(step, 1, 0, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1, name="fb")
    b.add_summary(fb, 0, 0, Summary.identity(1))
    b.connect(src, 0, step, 0)
    b.connect(step, 0, fb, 0)
    b.connect(fb, 0, step, 1)
    return b, dict(src=src, step=step, fb=fb)


def _outer_loop_builder():
    """A loop at depth 0 through a nested loop: the inner feedback advances the counter, but
    egress drops it again, so nothing advances around the outer cycle."""
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=0, name="src")
    join = b.add_operator(2, 1, depth=0, name="join")
    b.add_summary(join, 0, 0, Summary.identity(0))
    b.add_summary(join, 1, 0, Summary.identity(0))
    enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1], name="enter")
    b.add_summary(enter, 0, 0, Summary.ingress(0))
    body = b.add_operator(1, 1, depth=1, name="body")
    b.add_summary(body, 0, 0, Summary.feedback(1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0], name="leave")
    b.add_summary(leave, 0, 0, Summary.egress(1))
    b.connect(src, 0, join, 0)
    b.connect(join, 0, enter, 0)
    b.connect(enter, 0, body, 0)
    b.connect(body, 0, leave, 0)
    b.connect(leave, 0, join, 1)
    return b, dict(src=src, join=join, enter=enter, body=body, leave=leave)


@pytest.mark.parametrize("make,cycle_ports", [
    (_identity_loop_builder,
     [("t", "step", 1), ("s", "step", 0), ("t", "fb", 0), ("s", "fb", 0)]),
    (_outer_loop_builder,
     [("t", "join", 1), ("s", "join", 0), ("t", "enter", 0), ("s", "enter", 0),
      ("t", "body", 0), ("s", "body", 0), ("t", "leave", 0), ("s", "leave", 0)]),
], ids=["identity-feedback", "outer-loop-through-egress"])
def test_zero_advance_cycle(make, cycle_ports):
    b, ops = make()
    with pytest.raises(ZeroAdvanceCycleError) as info:
        b.build()
    err = info.value
    g = b.build(allow_zero_cycles=True)  # the failed build changed nothing; allowed, it builds
    assert g.allow_zero_cycles
    expected = {g.target(ops[op], p) if k == "t" else g.source(ops[op], p)
                for k, op, p in cycle_ports}
    cycle = err.cycle
    assert isinstance(cycle, list)
    assert cycle[0] == cycle[-1]
    assert len(cycle) == len(expected) + 1
    assert set(cycle[:-1]) == expected
    edges = {(e.src, e.dst) for e in g.edges}
    for u, v in zip(cycle, cycle[1:]):
        assert (u, v) in edges
    msg = str(err)
    assert str(cycle) in msg
    for loc in cycle:
        assert g.describe(loc) in msg
    assert "allow_zero_cycles" in msg
    assert g.find_zero_advance_cycle() is not None


def test_advancing_loops_build():
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=1)
    step = b.add_operator(2, 1, depth=1)
    b.add_summary(step, 0, 0, Summary.identity(1))
    b.add_summary(step, 1, 0, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1)
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    b.connect(src, 0, step, 0)
    b.connect(step, 0, fb, 0)
    b.connect(fb, 0, step, 1)
    g = b.build()
    assert g.find_zero_advance_cycle() is None and not g.allow_zero_cycles


# --------------------------------------------------------------------------------------------
# Summary constructor
# --------------------------------------------------------------------------------------------

SUMMARY_ERRORS = [
    ("keep-above-min-depth", lambda: Summary(1, 0, 1, (0,), (0,), ()), ["keeps 1", "at most 0"]),
    ("keep-above-both-depths", lambda: Summary(2, 2, 3, (0,), (0, 0, 0), ()), ["keeps 3"]),
    ("d_cnt-too-long", lambda: Summary(1, 1, 1, (0,), (0, 0), ()), ["d_cnt", "2 entries"]),
    ("d_cnt-too-short", lambda: Summary(2, 2, 2, (0,), (0,), ()), ["d_cnt", "1 entries"]),
    ("reset-too-short", lambda: Summary(0, 1, 0, (0,), (), ()), ["reset", "0 entries"]),
    ("reset-too-long", lambda: Summary(1, 0, 0, (0,), (), (0,)), ["reset", "1 entries"]),
    ("d_out-empty", lambda: Summary(1, 1, 1, (), (0,), ()), ["d_out"]),
    ("negative-d_out", lambda: Summary(1, 1, 1, (-1,), (0,), ()), ["d_out", "-1"]),
    ("negative-d_cnt", lambda: Summary(1, 1, 1, (0,), (-2,), ()), ["d_cnt", "-2"]),
    ("negative-reset", lambda: Summary(0, 1, 0, (0,), (), (-3,)), ["reset", "-3"]),
    ("too-large-d_out", lambda: Summary(1, 1, 1, (2**62,), (0,), ()), ["d_out", "2**62"]),
    ("non-integer-d_cnt", lambda: Summary(1, 1, 1, (0,), (0.5,), ()), ["d_cnt", "0.5"]),
    ("negative-depth", lambda: Summary(-1, 0, 0, (0,), (), ()), ["src_depth", "-1"]),
    ("negative-keep", lambda: Summary(1, 1, -1, (0,), (), ()), ["keep", "-1"]),
    ("egress-at-depth-0", lambda: Summary.egress(0), ["depth 0"]),
    ("feedback-at-depth-0", lambda: Summary.feedback(0), ["depth 0"]),
    ("delay-wrong-m", lambda: Summary.delay(1, m=2, by=(1,)), ["m=2"]),
    ("product-negative", lambda: Summary.product(0, -1), ["-1"]),
]


@pytest.mark.parametrize("call,words", [c[1:] for c in SUMMARY_ERRORS],
                         ids=[c[0] for c in SUMMARY_ERRORS])
def test_summary_shape_errors(call, words):
    with pytest.raises(SummaryShapeError) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_summary_composition_and_comparison_shape_errors():
    with pytest.raises(SummaryShapeError, match="depth"):
        Summary.identity(1).then(Summary.identity(0))
    with pytest.raises(SummaryShapeError, match="m="):
        Summary.identity(1).then(Summary.identity(1, m=2))
    with pytest.raises(SummaryShapeError):
        Summary.identity(1).le(Summary.identity(0))


# --------------------------------------------------------------------------------------------
# Tracker batches
# --------------------------------------------------------------------------------------------

def _mixed_depth_graph():
    """scope (depth 0) -> ingress -> step (depth 1, with a feedback loop) -> egress -> scope."""
    b = GraphBuilder(m=1)
    scope = b.add_operator(1, 1, depth=0, name="scope")
    enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1], name="ingress")
    b.add_summary(enter, 0, 0, Summary.ingress(0))
    step = b.add_operator(2, 1, depth=1, name="step")
    b.add_summary(step, 0, 0, Summary.identity(1))
    b.add_summary(step, 1, 0, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1, name="feedback")
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    leave = b.add_operator(1, 1, input_depths=[1], output_depths=[0], name="egress")
    b.add_summary(leave, 0, 0, Summary.egress(1))
    b.connect(scope, 0, enter, 0)
    b.connect(enter, 0, step, 0)
    b.connect(step, 0, fb, 0)
    b.connect(fb, 0, step, 1)
    b.connect(step, 0, leave, 0)
    b.connect(leave, 0, scope, 0)
    return b.build()


G = _mixed_depth_graph()
L = G.num_locations
SCOPE_OUT = G.source(0, 0)     # depth 0
SCOPE_IN = G.target(0, 0)      # depth 0
STEP_IN0 = G.target(2, 0)      # depth 1
STEP_IN1 = G.target(2, 1)      # depth 1
FB_IN = G.target(3, 0)         # depth 1

TRACKERS = [engine.ImpliedFrontierTracker, engine.PropagationTracker, engine.NaiadTracker,
            engine.BatchedTracker]

# The state every bad batch is applied on top of.
INITIAL = ([SCOPE_OUT, STEP_IN0], [(2,), (1, 3)], [1, 1])
# A valid batch applied after the rejected one.
FOLLOW_UP = ([SCOPE_OUT, STEP_IN0, FB_IN], [(2,), (1, 3), (0, 9)], [-1, 0, 2])


def _state(tracker):
    state = {"counts": sorted(tracker.counts.items())}
    if isinstance(tracker, engine.NaiadTracker):
        state["active_frontier"] = tracker.active_frontier()
    else:
        state["frontiers"] = tracker.frontiers()
    if isinstance(tracker, engine.PropagationTracker):
        state["imp"] = [dict(x) for x in tracker.imp]
    return state


# (id, loc, ts, diff, exception, words in the message); row 0 is always valid, row 1 is bad.
BAD_BATCHES = [
    ("unknown-location", [SCOPE_OUT, L], [(3,), (0, 0)], [1, 1], UnknownLocationError,
     ["row 1", f"location {L}", f"0..{L - 1}"]),
    ("negative-location", [SCOPE_OUT, -1], [(3,), (0, 0)], [1, 1], UnknownLocationError,
     ["row 1", "location -1"]),
    ("non-integer-location", [SCOPE_OUT, 1.0], [(3,), (0, 0)], [1, 1], UnknownLocationError,
     ["row 1", "1.0"]),
    ("timestamp-too-short", [SCOPE_OUT, STEP_IN0], [(3,), (4,)], [1, 1], TimestampWidthError,
     ["row 1", G.describe(STEP_IN0), "(4,)", "expected 2"]),
    ("timestamp-too-long", [SCOPE_OUT, STEP_IN0], [(3,), (4, 0, 0)], [1, 1], TimestampWidthError,
     ["row 1", G.describe(STEP_IN0), "(4, 0, 0)"]),
    ("timestamp-too-long-depth-0", [SCOPE_OUT, SCOPE_IN], [(3,), (4, 0, 0)], [1, 1],
     TimestampWidthError, ["row 1", G.describe(SCOPE_IN), "(4, 0, 0)"]),
    ("timestamp-not-a-sequence", [SCOPE_OUT, STEP_IN0], [(3,), 4], [1, 1], TimestampWidthError,
     ["row 1", G.describe(STEP_IN0), "4"]),
    ("nonzero-padded-counter", [SCOPE_OUT, SCOPE_IN], [(3,), (4, 1)], [1, 1],
     TimestampWidthError, ["row 1", G.describe(SCOPE_IN), "(4, 1)", "non-zero"]),
    ("negative-epoch", [SCOPE_OUT, STEP_IN0], [(3,), (-1, 0)], [1, 1], TimestampRangeError,
     ["row 1", G.describe(STEP_IN0), "-1"]),
    ("negative-counter", [SCOPE_OUT, STEP_IN1], [(3,), (0, -5)], [1, 1], TimestampRangeError,
     ["row 1", G.describe(STEP_IN1), "-5"]),
    ("coordinate-2**62", [SCOPE_OUT, STEP_IN0], [(3,), (2**62, 0)], [1, 1], TimestampRangeError,
     ["row 1", G.describe(STEP_IN0), str(2**62), "2**62"]),
    ("counter-2**62", [SCOPE_OUT, STEP_IN0], [(3,), (0, 2**62)], [1, 1], TimestampRangeError,
     ["row 1", G.describe(STEP_IN0), str(2**62)]),
    ("non-integer-coordinate", [SCOPE_OUT, STEP_IN0], [(3,), (1.5, 0)], [1, 1],
     TimestampWidthError, ["row 1", G.describe(STEP_IN0), "1.5", "not an integer"]),
    ("bool-coordinate", [SCOPE_OUT, STEP_IN0], [(3,), (True, 0)], [1, 1], TimestampWidthError,
     ["row 1", G.describe(STEP_IN0), "not an integer"]),
    ("string-coordinate", [SCOPE_OUT, SCOPE_IN], [(3,), ("4",)], [1, 1], TimestampWidthError,
     ["row 1", G.describe(SCOPE_IN), "not an integer"]),
    ("columns-unequal-ts", [SCOPE_OUT, STEP_IN0], [(3,)], [1, 1], BatchError,
     ["length", "2", "1"]),
    ("columns-unequal-diff", [SCOPE_OUT, STEP_IN0], [(3,), (0, 0)], [1], BatchError,
     ["length", "2", "1"]),
    ("non-integer-diff", [SCOPE_OUT, STEP_IN0], [(3,), (0, 0)], [1, 1.0], BatchError,
     ["row 1", "diff", "1.0"]),
    ("string-diff", [SCOPE_OUT, STEP_IN0], [(3,), (0, 0)], [1, "1"], BatchError,
     ["row 1", "diff"]),
    ("diff-over-64-bits", [SCOPE_OUT, STEP_IN0], [(3,), (0, 0)], [1, 2**63], BatchError,
     ["row 1", "diff", str(2**63)]),
]


def _fresh(cls, *, strict=False):
    t = cls(G, strict=strict)
    t.update(*INITIAL)
    return t


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("loc,ts,diff,exc,words", [b[1:] for b in BAD_BATCHES],
                         ids=[b[0] for b in BAD_BATCHES])
@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
def test_bad_batch_rejected_atomically(cls, strict, loc, ts, diff, exc, words):
    tracker = _fresh(cls, strict=strict)
    before = _state(tracker)
    with pytest.raises(exc) as info:
        tracker.update(loc, ts, diff)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert _state(tracker) == before
    # A valid batch afterwards gives what it gives on a tracker that never saw the bad one.
    reference = _fresh(cls, strict=strict)
    assert tracker.update(*FOLLOW_UP) == reference.update(*FOLLOW_UP)
    assert _state(tracker) == _state(reference)


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_strict_negative_count_rejected_atomically(cls):
    tracker = _fresh(cls, strict=True)
    before = _state(tracker)
    # Row 0 adds a new pointstamp; rows 1-2 take STEP_IN0@(1,3) (count 1) down by 2 in total.
    with pytest.raises(NegativeCountError) as info:
        tracker.update([FB_IN, STEP_IN0, STEP_IN0], [(0, 0), (1, 3), (1, 3)], [5, -1, -1])
    msg = str(info.value)
    assert G.describe(STEP_IN0) in msg and "(1, 3)" in msg and "-1" in msg, msg
    assert _state(tracker) == before
    reference = _fresh(cls, strict=True)
    assert tracker.update(*FOLLOW_UP) == reference.update(*FOLLOW_UP)
    assert _state(tracker) == _state(reference)


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_strict_never_seen_pointstamp_retraction(cls):
    tracker = _fresh(cls, strict=True)
    before = _state(tracker)
    with pytest.raises(NegativeCountError) as info:
        tracker.update([SCOPE_IN], [(7,)], [-1])
    assert G.describe(SCOPE_IN) in str(info.value) and "(7,)" in str(info.value)
    assert _state(tracker) == before


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_strict_accepts_batch_whose_net_count_is_non_negative(cls):
    # Within one batch a retraction may come before its addition: only the net result counts.
    tracker = _fresh(cls, strict=True)
    tracker.update([FB_IN, FB_IN], [(0, 0), (0, 0)], [-1, 1])
    tracker.update([STEP_IN0, STEP_IN0], [(1, 3), (1, 3)], [-1, 1])
    assert _state(tracker) == _state(_fresh(cls, strict=True))


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_lenient_mode_keeps_negative_counts(cls):
    tracker = _fresh(cls)
    tracker.update([SCOPE_IN], [(7,)], [-1])
    assert (SCOPE_IN, (7,)) in dict(tracker.counts.items())
    assert dict(tracker.counts.items())[(SCOPE_IN, (7,))] == -1


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_padded_timestamps_at_shallower_locations(cls):
    padded, plain = cls(G), cls(G)
    # Width m + K = 2 everywhere; the depth-0 locations get a trailing 0 counter.
    r1 = padded.update([SCOPE_OUT, SCOPE_IN, STEP_IN1], [(5, 0), (6, 0), (4, 2)], [1, 2, 1])
    r2 = plain.update([SCOPE_OUT, SCOPE_IN, STEP_IN1], [(5,), (6,), (4, 2)], [1, 2, 1])
    assert r1 == r2
    assert sorted(padded.counts.items()) == [((SCOPE_IN, (6,)), 2), ((SCOPE_OUT, (5,)), 1),
                                             ((STEP_IN1, (4, 2)), 1)]
    assert _state(padded) == _state(plain)
    # Retracting with the other form cancels: both forms name the same pointstamp.
    padded.update([SCOPE_OUT], [(5,)], [-1])
    plain.update([SCOPE_OUT], [(5, 0)], [-1])
    assert _state(padded) == _state(plain)
    assert (SCOPE_OUT, (5,)) not in dict(padded.counts.items())


@pytest.mark.parametrize("cls", TRACKERS, ids=lambda c: c.__name__)
def test_numpy_columns_with_padding(cls):
    loc = np.array([SCOPE_OUT, STEP_IN0], dtype=np.int64)
    ts = np.array([[5, 0], [1, 3]], dtype=np.int64)
    diff = np.array([1, 1], dtype=np.int64)
    a, b = cls(G), cls(G)
    a.update(loc, ts, diff)
    b.update([SCOPE_OUT, STEP_IN0], [(5,), (1, 3)], [1, 1])
    assert _state(a) == _state(b)
    with pytest.raises(TimestampWidthError, match="row 0"):
        a.update(loc[:1], np.array([[5, 1]], dtype=np.int64), diff[:1])
    assert _state(a) == _state(b)


def test_padded_frontiers_by_hand():
    # scope.out@(5,) enters the loop at (5,0); the feedback makes (5,1) at step.in1; the egress
    # brings (5,) back to the scope's input. step.in1 also holds (4,2) itself, which reaches
    # feedback.in as (4,2) and the scope's input as (4,). (4,2) and (5,1) are incomparable: the
    # epoch is earlier but the loop counter later.
    for cls in (engine.ImpliedFrontierTracker, engine.PropagationTracker):
        tr = cls(G)
        tr.update([SCOPE_OUT, STEP_IN1], [(5, 0), (4, 2)], [1, 1])
        assert tr.frontier(SCOPE_IN) == [(4,)]
        assert tr.frontier(STEP_IN0) == [(5, 0)]
        assert tr.frontier(STEP_IN1) == [(4, 2), (5, 1)]
        assert tr.frontier(FB_IN) == [(4, 2), (5, 0)]


# --- Naiad queries -----------------------------------------------------------------------------

@pytest.mark.parametrize("query", [
    lambda nv: nv.precursor_count(L, (0, 0)),
    lambda nv: nv.may_deliver(L, (0, 0)),
    lambda nv: nv.occurrence_count(L, (0, 0)),
    lambda nv: nv.could_result_in([SCOPE_OUT], [(0,)], [L], [(0, 0)]),
], ids=["precursor_count", "may_deliver", "occurrence_count", "could_result_in"])
def test_naiad_query_unknown_location(query):
    nv = _fresh(engine.NaiadTracker)
    before = _state(nv)
    with pytest.raises(UnknownLocationError) as info:
        query(nv)
    assert str(L) in str(info.value)
    assert _state(nv) == before


@pytest.mark.parametrize("query,exc", [
    (lambda nv: nv.precursor_count(STEP_IN0, (0,)), TimestampWidthError),
    (lambda nv: nv.may_deliver(STEP_IN0, (0, -1)), TimestampRangeError),
    (lambda nv: nv.could_result_in([SCOPE_OUT], [(0, 1)], [STEP_IN0], [(0, 0)]),
     TimestampWidthError),
    (lambda nv: nv.could_result_in([SCOPE_OUT], [(0,)], [STEP_IN0], []), BatchError),
], ids=["width", "range", "padded-nonzero", "unequal-columns"])
def test_naiad_query_bad_timestamp(query, exc):
    nv = _fresh(engine.NaiadTracker)
    with pytest.raises(exc):
        query(nv)


def test_naiad_query_accepts_numpy_location():
    # Batches accept numpy integer locations; the queries on the same tracker must too.
    nv = _fresh(engine.NaiadTracker)
    loc = np.int64(STEP_IN0)
    assert nv.occurrence_count(loc, (1, 3)) == nv.occurrence_count(STEP_IN0, (1, 3)) == 1
    assert nv.may_deliver(loc, (1, 3)) == nv.may_deliver(STEP_IN0, (1, 3))


def test_could_result_in_unknown_location():
    psi = engine.closure(G)
    with pytest.raises(UnknownLocationError, match=str(L)):
        engine.could_result_in(psi, G, L, (0, 0), SCOPE_IN, (0,))


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------

def test_backend_parse_unknown_lists_choices():
    with pytest.raises(BackendError) as info:
        Backend.parse("nope")
    msg = str(info.value)
    assert "'nope'" in msg
    for b in Backend:
        assert b.value in msg


def test_backend_parse_names():
    assert Backend.parse("Reference") is Backend.REFERENCE
    assert Backend.parse(" timely ") is Backend.TIMELY
    assert Backend.parse(Backend.AUTO) is Backend.AUTO


def test_env_var_selects_backend(monkeypatch):
    monkeypatch.setenv("TFRONT_BACKEND", "reference")
    assert engine.resolve_backend()[0] is Backend.REFERENCE
    assert isinstance(engine.make_tracker(G), engine.ImpliedFrontierTracker)
    # An explicit argument wins over the environment.
    assert engine.resolve_backend("timely")[0] is Backend.TIMELY
    assert isinstance(engine.make_tracker(G, "timely"), engine.PropagationTracker)
    assert engine.resolve_backend(Backend.TIMELY)[0] is Backend.TIMELY


def test_default_backend_without_env(monkeypatch):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    backend, why = engine.resolve_backend()
    assert backend in (Backend.CPU, Backend.CUDA, Backend.REFERENCE, Backend.TIMELY)  # a concrete one
    assert backend is not Backend.AUTO and why


def test_env_var_unknown_backend(monkeypatch):
    monkeypatch.setenv("TFRONT_BACKEND", "gpu-please")
    with pytest.raises(BackendError, match="gpu-please"):
        engine.resolve_backend()
    # An explicit, valid argument is not affected by a bad environment value.
    assert engine.resolve_backend("reference")[0] is Backend.REFERENCE


def test_make_tracker_unknown_backend():
    with pytest.raises(BackendError, match="nope"):
        engine.make_tracker(G, "nope")


def test_cli_rejects_unknown_backend(capsys):
    from engine.cli.main import main
    from engine.core.workload import EXAMPLE_PATH
    with pytest.raises(SystemExit) as info:
        main(["replay", str(EXAMPLE_PATH), "--backend", "nope"])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "nope" in err


# --------------------------------------------------------------------------------------------
# Antichain overflow
# --------------------------------------------------------------------------------------------

def _diamond_graph():
    """A (depth 1) -> {B delay (1,0), C side (0,1)} -> D (two inputs) -> E."""
    b = GraphBuilder(m=1)
    a = b.add_operator(0, 1, depth=1, name="A")
    d1 = b.add_operator(1, 1, depth=1, name="B")
    b.add_summary(d1, 0, 0, Summary.product(1, 0))
    d2 = b.add_operator(1, 1, depth=1, name="C")
    b.add_summary(d2, 0, 0, Summary.product(0, 1))
    j = b.add_operator(2, 1, depth=1, name="D")
    b.add_summary(j, 0, 0, Summary.identity(1))
    b.add_summary(j, 1, 0, Summary.identity(1))
    e = b.add_operator(1, 0, depth=1, name="E")
    b.connect(a, 0, d1, 0)
    b.connect(a, 0, d2, 0)
    b.connect(d1, 0, j, 0)
    b.connect(d2, 0, j, 1)
    b.connect(j, 0, e, 0)
    return b.build(), dict(A=a, B=d1, C=d2, D=j, E=e)


def test_closure_antichain_overflow():
    g, ops = _diamond_graph()
    src, join_out = g.source(ops["A"], 0), g.source(ops["D"], 0)
    # Psi[A.out][D.out] = {(0,1), (1,0)}: the first pair where the two paths meet.
    psi = engine.closure(g, max_antichain=2)
    assert sorted((s.d_out, s.d_cnt) for s in psi[src][join_out]) == [((0,), (1,)), ((1,), (0,))]
    assert len(psi[src][g.target(ops["E"], 0)]) == 2
    with pytest.raises(AntichainOverflowError) as info:
        engine.closure(g, max_antichain=1)
    msg = str(info.value)
    assert g.describe(src) in msg and g.describe(join_out) in msg, msg
    assert f"Psi[{src}][{join_out}]" in msg and "max_antichain=1" in msg
    with pytest.raises(AntichainOverflowError):
        engine.closure_row(g, src, max_antichain=1)
    with pytest.raises(AntichainOverflowError):
        engine.ImpliedFrontierTracker(g, max_antichain=1)


def test_closure_within_cap_from_other_rows():
    g, ops = _diamond_graph()
    # Rows starting after the fork never hold two summaries.
    for loc in (g.target(ops["B"], 0), g.target(ops["C"], 0), g.target(ops["D"], 1)):
        row = engine.closure_row(g, loc, max_antichain=1)
        assert all(len(chain) == 1 for chain in row.values())


def test_failed_propagation_changes_nothing():
    """Issue 10 review: a batch whose propagation fails (here: the edge-wise step limit)
    leaves table, F and I exactly as before, so the next batches stay exact."""
    tracker = _fresh(engine.BatchedTracker)
    reference = _fresh(engine.ImpliedFrontierTracker)
    before = _state(tracker)
    F = (tracker._F_ptr.copy(), tracker._F_ts.copy())
    tracker.max_steps = 0
    with pytest.raises(errors.ConvergenceError):
        tracker.update(*FOLLOW_UP)
    assert _state(tracker) == before
    np.testing.assert_array_equal(tracker._F_ptr, F[0])
    np.testing.assert_array_equal(tracker._F_ts, F[1])
    tracker.max_steps = 10 ** 6
    tracker.update(*FOLLOW_UP)
    reference.update(*FOLLOW_UP)
    assert _state(tracker) == _state(reference)
