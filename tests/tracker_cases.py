"""Graphs and checks shared by the tracker tests and the backend tests: a zero-advance loop,
frontier changes replayed onto frontiers, and strict rejection against the reference."""

import pytest

from engine import GraphBuilder, NegativeCountError, Summary


def replay_changes(frontiers, changes):
    """Apply emitted ``(loc, ts, +1/-1)`` rows to a copy of the previous frontiers."""
    out = [set(f) for f in frontiers]
    for loc, ts, d in changes:
        if d > 0:
            assert ts not in out[loc], "change adds an element already present"
            out[loc].add(ts)
        else:
            assert ts in out[loc], "change removes an element not present"
            out[loc].remove(ts)
    return [sorted(f) for f in out]


def check_strict_rejection(eng, ref, batches):
    """Replay ``batches`` on a strict tracker ``eng`` and the strict reference ``ref``: a batch
    the reference rejects is rejected by ``eng`` too, its counts and frontiers unchanged; after
    every batch the frontiers agree."""
    for loc, ts, diff in batches:
        try:
            ref.update(loc, ts, diff)
        except NegativeCountError:
            state = (sorted(eng.counts.items()), eng.frontiers())
            with pytest.raises(NegativeCountError):
                eng.update(loc, ts, diff)
            assert (sorted(eng.counts.items()), eng.frontiers()) == state
        else:
            eng.update(loc, ts, diff)
        assert eng.frontiers() == ref.frontiers()


def zero_cycle_graph():
    """A loop whose feedback does not advance the counter: allowed only explicitly."""
    b = GraphBuilder(m=1)
    head = b.add_operator(2, 1, depth=1)
    b.add_summary(head, 0, 0, Summary.identity(1))
    b.add_summary(head, 1, 0, Summary.identity(1))
    fb = b.add_operator(1, 1, depth=1)
    b.add_summary(fb, 0, 0, Summary.identity(1))   # no advance: an asynchronous loop
    b.connect(head, 0, fb, 0)
    b.connect(fb, 0, head, 1)
    return b.build(allow_zero_cycles=True), head
