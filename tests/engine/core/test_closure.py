"""The reference closure ``Psi`` against brute-force path enumeration, and the validity check
against brute-force cycle enumeration (docs/semantics.md 2.4)."""

from itertools import product

from hypothesis import given, strategies as st

from engine import AntichainOverflowError, GraphBuilder, Summary, SummaryAntichain, closure
from engine.core.timestamp import le

from strategies import examples, random_graphs, structured_graphs, summaries


def walks_psi(graph, source, max_visits):
    """Minimal summaries over every walk from ``source`` visiting no location more than
    ``max_visits`` times, by exhaustive depth-first enumeration."""
    found: dict[int, SummaryAntichain] = {}
    visits = [0] * graph.num_locations

    def dfs(loc, s):
        found.setdefault(loc, SummaryAntichain()).insert(s)
        visits[loc] += 1
        for e in graph.out_edges[loc]:
            if visits[e.dst] < max_visits:
                for label in e.summaries:
                    dfs(e.dst, s.then(label))
        visits[loc] -= 1

    dfs(source, Summary.identity(graph.depth(source), graph.m))
    return {l: a.sorted() for l, a in found.items()}


def simple_cycles(graph):
    """Every simple cycle as a list of locations (first repeated at the end), once per
    rotation-free start (its smallest location)."""
    out = []

    def dfs(start, loc, path, on_path):
        for e in graph.out_edges[loc]:
            if e.dst == start:
                out.append(path + [start])
            elif e.dst > start and e.dst not in on_path:
                on_path.add(e.dst)
                dfs(start, e.dst, path + [e.dst], on_path)
                on_path.discard(e.dst)

    for start in range(graph.num_locations):
        dfs(start, start, [start], {start})
    return out


def cycle_summaries(graph, cycle):
    """Every summary of the cycle, one per choice of antichain element on each edge."""
    labels = []
    for u, v in zip(cycle, cycle[1:]):
        labels.append([s for e in graph.out_edges[u] if e.dst == v for s in e.summaries])
    out = []
    for choice in product(*labels):
        s = choice[0]
        for x in choice[1:]:
            s = s.then(x)
        out.append(s)
    return out


def samples(m, depth):
    """Timestamps that witness ``s(t) <= t`` whenever it can hold: all-zero, small and
    counters above every constant used by the generators (at most 2)."""
    return [tuple([0] * (m + depth)), tuple([1] * (m + depth)), tuple([0] * m + [9] * depth),
            tuple([5] * (m + depth))]


small_random = random_graphs(max_ops=3, max_depth=2, max_antichain=2)


@examples(120)
@given(st.one_of(small_random, structured_graphs(max_ops=7)))
def test_closure_equals_brute_force_walks(graph):
    """Psi is complete (every walk's summary, here walks visiting no location more than
    twice, is dominated by an element of Psi) and exact (every element of Psi is minimal
    among the walks visiting no location more than four times: a minimal summary can need
    a cycle taken twice with different antichain choices)."""
    psi = closure(graph)
    for l in range(graph.num_locations):
        for target, found in walks_psi(graph, l, max_visits=2).items():
            for s in found:
                assert any(p.le(s) for p in psi[l][target]), (l, target, s)
        deep = walks_psi(graph, l, max_visits=4)
        for target, chain in psi[l].items():
            assert set(chain) <= set(deep[target]), (l, target)


@examples(80)
@given(small_random)
def test_simple_paths_suffice_when_every_cycle_strictly_advances(graph):
    """docs/semantics.md 2.4: if every cycle, from each of its locations, maps every t to a
    strictly later time, Psi is the minimum over simple paths."""
    strictly = all(s.strictly_advances()
                   for c in simple_cycles(graph) for r in rotations(c)
                   for s in cycle_summaries(graph, r))
    if strictly:
        psi = closure(graph)
        for l in range(graph.num_locations):
            assert psi[l] == walks_psi(graph, l, max_visits=1)


def rotations(cycle):
    """The same cycle started at each of its locations."""
    body = cycle[:-1]
    return [body[i:] + body[:i] + [body[i]] for i in range(len(body))]


@examples(150)
@given(st.data())
def test_strictly_advances_matches_brute_force(data):
    m, a = data.draw(st.sampled_from([1, 2])), data.draw(st.integers(0, 2))
    s = data.draw(summaries(m, a, a))
    grid = product(range(4), repeat=m + a)
    assert s.strictly_advances() == all(le(t, s.apply(t), m) and s.apply(t) != t for t in grid)


@examples(200)
@given(random_graphs(max_ops=3, max_depth=2, allow_invalid=True))
def test_validity_check_matches_cycle_enumeration(graph):
    """A graph is rejected exactly when some cycle has a summary with ``s(t) <= t``."""
    m = graph.m
    bad = any(le(s.apply(t), t, m)
              for c in simple_cycles(graph) for s in cycle_summaries(graph, c)
              for t in samples(m, s.src_depth))
    found = graph.find_zero_advance_cycle()
    assert (found is not None) == bad
    if found is not None:
        assert found[0] == found[-1]
        assert any(le(s.apply(t), t, m) for s in cycle_summaries(graph, found)
                   for t in samples(m, s.src_depth))


def test_reset_cycle_adds_a_minimal_summary():
    """Leave a loop, delay one epoch, re-enter: Psi gains (e, i) -> (e + 1, 0) beside the
    identity, and going round twice is dominated."""
    b = GraphBuilder(m=1)
    merge = b.add_operator(2, 2, depth=1)
    for i in range(2):
        for o in range(2):
            b.add_summary(merge, i, o, Summary.identity(1))
    out = b.add_operator(1, 1, input_depths=[1], output_depths=[0])
    b.add_summary(out, 0, 0, Summary.egress(1))
    delay = b.add_operator(1, 1, depth=0)
    b.add_summary(delay, 0, 0, Summary.delay(0))
    back = b.add_operator(1, 1, input_depths=[0], output_depths=[1])
    b.add_summary(back, 0, 0, Summary.ingress(0))
    b.connect(merge, 1, out, 0)
    b.connect(out, 0, delay, 0)
    b.connect(delay, 0, back, 0)
    b.connect(back, 0, merge, 1)
    g = b.build()
    psi = closure(g)
    row = psi[g.target(merge, 0)][g.source(merge, 0)]
    assert sorted(s.apply((3, 7)) for s in row) == [(3, 7), (4, 0)]


def diamond_chain(d):
    """``d`` diamonds in series (a delay in parallel with a loop step): d + 1 minimal summaries."""
    b = GraphBuilder(m=1)
    prev = b.add_operator(0, 1, depth=1)
    prev_port = 0
    for _ in range(d):
        split = b.add_operator(1, 2, depth=1)
        b.add_summary(split, 0, 0, Summary.identity(1))
        b.add_summary(split, 0, 1, Summary.identity(1))
        slow = b.add_operator(1, 1, depth=1)
        b.add_summary(slow, 0, 0, Summary.delay(1))
        side = b.add_operator(1, 1, depth=1)
        b.add_summary(side, 0, 0, Summary.feedback(1))
        merge = b.add_operator(2, 1, depth=1)
        b.add_summary(merge, 0, 0, Summary.identity(1))
        b.add_summary(merge, 1, 0, Summary.identity(1))
        b.connect(prev, prev_port, split, 0)
        b.connect(split, 0, slow, 0)
        b.connect(split, 1, side, 0)
        b.connect(slow, 0, merge, 0)
        b.connect(side, 0, merge, 1)
        prev, prev_port = merge, 0
    return b.build(), prev


def test_diamonds_in_series_grow_the_antichain():
    g, last = diamond_chain(4)
    row = closure(g)[0][g.source(last, 0)]
    assert sorted((s.d_out[0], s.d_cnt[0]) for s in row) == [(k, 4 - k) for k in range(5)]


def test_max_antichain_overflow_is_an_error():
    g, last = diamond_chain(2)
    closure(g, max_antichain=3)
    try:
        closure(g, max_antichain=2)
    except AntichainOverflowError as e:
        assert "max_antichain=2" in str(e)
    else:
        raise AssertionError("expected AntichainOverflowError")
