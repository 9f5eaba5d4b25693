"""Summary laws (docs/semantics.md 2.3): composition, application, and the exact order."""

from itertools import product

import pytest
from hypothesis import given, strategies as st

from engine import Summary, SummaryShapeError
from engine.core.timestamp import le

from strategies import examples, SMALL, summaries, timestamps

depths = st.integers(0, 3)
ms = st.sampled_from([1, 2])


def grid(m, depth, hi=SMALL):
    """Every timestamp of width ``m + depth`` with coordinates in ``[0, hi]``."""
    return product(range(hi + 1), repeat=m + depth)


@st.composite
def chain3(draw):
    """Three composable summaries a->b->c->d and a timestamp at depth a."""
    m = draw(ms)
    a, b, c, d = (draw(depths) for _ in range(4))
    return (m, draw(summaries(m, a, b)), draw(summaries(m, b, c)), draw(summaries(m, c, d)),
            draw(timestamps(m, a)))


@given(chain3())
def test_composition_is_associative(args):
    _m, s1, s2, s3, _t = args
    assert s1.then(s2).then(s3) == s1.then(s2.then(s3))


@given(chain3())
def test_composition_applies_in_order(args):
    _m, s1, s2, s3, t = args
    assert s1.then(s2).apply(t) == s2.apply(s1.apply(t))
    assert s1.then(s2).then(s3).apply(t) == s3.apply(s2.apply(s1.apply(t)))


@given(st.data())
def test_apply_is_monotone(data):
    m, a, b = data.draw(ms), data.draw(depths), data.draw(depths)
    s = data.draw(summaries(m, a, b))
    t1, t2 = data.draw(timestamps(m, a)), data.draw(timestamps(m, a))
    if le(t1, t2, m):
        assert le(s.apply(t1), s.apply(t2), m)


@examples(300)
@given(st.data())
def test_order_is_exact_against_brute_force(data):
    """``s.le(s')`` iff ``s(t) <= s'(t)`` on every ``t`` of a grid large enough to witness
    every failure (constants are at most 2, so counters up to 3 suffice)."""
    m, a, b = data.draw(ms), data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))
    s1, s2 = data.draw(summaries(m, a, b)), data.draw(summaries(m, a, b))
    brute = all(le(s1.apply(t), s2.apply(t), m) for t in grid(m, a))
    assert s1.le(s2) == brute
    assert s1.le(s1)
    if s1.le(s2) and s2.le(s1):
        assert s1 == s2


@given(st.data())
def test_order_is_transitive_and_compatible_with_composition(data):
    m, a, b, c = data.draw(ms), data.draw(depths), data.draw(depths), data.draw(depths)
    s1, s2, s3 = (data.draw(summaries(m, a, b)) for _ in range(3))
    if s1.le(s2) and s2.le(s3):
        assert s1.le(s3)
    x = data.draw(summaries(m, b, c))
    if s1.le(s2):
        assert s1.then(x).le(s2.then(x))


def test_loop_primitives():
    assert Summary.ingress(1, m=1).apply((5, 3)) == (5, 3, 0)
    assert Summary.egress(2, m=1).apply((5, 3, 9)) == (5, 3)
    assert Summary.feedback(2, m=1).apply((5, 3, 9)) == (5, 3, 10)
    assert Summary.delay(1, m=2, by=(0, 1)).apply((5, 6, 7)) == (5, 7, 7)
    assert Summary.identity(2, m=1).apply((1, 2, 3)) == (1, 2, 3)
    # leave, delay, re-enter: (e, i) -> (e + 1, 0), incomparable with the identity
    cycle = Summary.egress(1).then(Summary.delay(0)).then(Summary.ingress(0))
    assert cycle.apply((4, 7)) == (5, 0)
    ident = Summary.identity(1)
    assert not cycle.le(ident) and not ident.le(cycle)
    assert cycle.advances()
    # nested re-entry is strictly later: (e, i, 57) then (e, i+1, 0)
    step = Summary.egress(2).then(Summary.feedback(1)).then(Summary.ingress(1))
    assert step.apply((0, 3, 57)) == (0, 4, 0)
    assert le((0, 3, 57), step.apply((0, 3, 57)), 1)


def test_advances_classifies_cycle_summaries():
    assert not Summary.identity(1).advances()
    assert not Summary(1, 1, 0, (0,), (), (0,)).advances()   # resets the counter: can go back
    assert Summary.feedback(1).advances()
    assert Summary.delay(0).advances()


@pytest.mark.parametrize("args", [
    (1, 1, 2, (0,), (0, 0), ()),        # keeps more counters than the depths allow
    (1, 1, 1, (0,), (), ()),            # d_cnt too short
    (1, 1, 0, (0,), (), ()),            # reset too short
    (0, 0, 0, (-1,), (), ()),           # negative delta
    (0, 0, 0, (), (), ()),              # no outer coordinate
    (0, 0, 0, (1 << 62,), (), ()),      # delta out of range
])
def test_bad_summaries_are_rejected(args):
    with pytest.raises(SummaryShapeError):
        Summary(*args)


def test_composition_and_order_check_shapes():
    with pytest.raises(SummaryShapeError, match="depth 1"):
        Summary.identity(1).then(Summary.identity(2))
    with pytest.raises(SummaryShapeError):
        Summary.identity(1).le(Summary.identity(2))
    with pytest.raises(SummaryShapeError):
        Summary.egress(0)
