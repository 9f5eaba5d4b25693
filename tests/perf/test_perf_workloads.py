"""perf.workloads: the synthetic workloads of docs/formats.md parse,
are deterministic in the seed, keep counts non-negative and drain to zero, have the promised
shape, and replay identically with the reference and propagation trackers."""

from __future__ import annotations

import doctest
import io
from collections import Counter, defaultdict

import numpy as np
import pytest

import engine
from engine.core.workload import parse_workload
from perf import workloads as pw
from perf.workloads import (BatchSpec, GraphSpec, generate_batches, generate_graph,
                            workload_text, write_workload)


def make(n, b, seed):
    spec = generate_graph(n, seed)
    return spec, generate_batches(spec, b, seed)


def rows(batch: BatchSpec):
    """The batch as Python tuples ``((kind, node, port, epoch, iter), diff)``."""
    kinds = np.where(batch.is_source, "s", "t")
    return [((k, int(n), int(p), int(e), int(i)), int(d)) for k, n, p, e, i, d in
            zip(kinds, batch.node, batch.port, batch.epoch, batch.iter, batch.diff)]


def test_doctests():
    assert doctest.testmod(pw).failed == 0


def test_file_parses_and_matches_the_batches(tmp_path):
    spec, batches = make(100, 1000, seed=7)
    path = tmp_path / "w.txt"
    size = write_workload(path, spec, batches)
    text = path.read_text()
    assert size == len(text.encode())
    assert text.startswith("timely-reach v1\n")
    w = parse_workload(text)  # raises on an invalid graph, e.g. a zero-advance cycle
    assert w.graph.find_zero_advance_cycle() is None
    assert w.graph.num_locations == spec.num_locations
    assert w.inputs == [i for i, _ in spec.nodes] and w.outputs == [o for _, o in spec.nodes]
    assert [len(b.loc) for b in w.batches] == [len(b) for b in batches]
    for wb, gb in zip(w.batches, batches):
        locs = [w.graph.source(n, p) if s else w.graph.target(n, p)
                for s, n, p in zip(gb.is_source, gb.node.tolist(), gb.port.tolist())]
        assert wb.loc.tolist() == locs
        assert [tuple(r) for r in wb.ts.tolist()] == list(zip(gb.epoch.tolist(), gb.iter.tolist()))
        assert wb.diff.tolist() == gb.diff.tolist()
    # the text, a text file and a binary file all agree
    tbuf, bbuf = io.StringIO(), io.BytesIO()
    write_workload(tbuf, spec, batches)
    write_workload(bbuf, spec, batches)
    assert tbuf.getvalue() == text == bbuf.getvalue().decode() == workload_text(spec, batches)


def test_graph_shape():
    spec = generate_graph(100, seed=3)
    assert isinstance(spec, GraphSpec)
    n = spec.chain
    # every input port has at most one incoming channel, and every port exists
    dst = Counter((d, p) for _, _, d, p in spec.edges)
    assert max(dst.values()) == 1
    for s, sp, d, dp in spec.edges:
        assert 0 <= sp < spec.nodes[s][1] and 0 <= dp < spec.nodes[d][0]
    assert (0, 0, 1, 0) in spec.edges and (n, 0, 0, 0) in spec.edges
    heads = [h for h, _, _ in spec.loops]
    delays = [d for d, _ in spec.diamonds]
    assert len(set(heads)) == len(heads) and len(set(delays)) == len(delays)
    assert not set(heads) & set(delays)
    for g in range(0, len(spec.loops), 3):  # groups: k contains j contains i
        (h3, e3, _), (h2, e2, _), (h1, e1, _) = spec.loops[g:g + 3]
        assert h3 < h2 < h1 <= e1 < e2 < e3
    summ = {(s[0], s[1], s[2]): (s[3], s[4]) for s in spec.summaries}
    for d, side in spec.diamonds:
        assert summ[(d, 0, 0)] == (1, 0) and summ[(side, 0, 0)] == (0, 1)
        assert (d - 1, 0, side, 0) in spec.edges
        assert any(e[:3] == (side, 0, d + 1) and summ[(d + 1, e[3], 0)] == (0, 0)
                   for e in spec.edges)
    for h, e, fb in spec.loops:
        assert summ[(fb, 0, 0)] == (0, 1) and (e, 0, fb, 0) in spec.edges
        assert any(x[:3] == (fb, 0, h) and summ[(h, x[3], 0)] == (0, 0) for x in spec.edges)


def test_determinism():
    a = workload_text(*make(100, 1000, seed=11))
    b = workload_text(*make(100, 1000, seed=11))
    c = workload_text(*make(100, 1000, seed=12))
    assert a == b
    assert a != c


@pytest.mark.parametrize("b", [1000, 1001, 7])
def test_counts_stay_non_negative_and_drain_to_zero(b):
    spec, batches = make(100, b, seed=5)
    assert [x.kind for x in batches] == ["load", "churn", "churn", "churn", "drain"]
    load = rows(batches[0])
    assert len(load) == b and all(d == 1 for _, d in load)
    for key, _ in load:
        assert key[3] < 16 and key[4] < 64
    counts: defaultdict = defaultdict(int)
    for key, d in load:
        counts[key] += d
    for batch in batches[1:4]:
        rs = rows(batch)
        assert len(rs) == b
        assert sum(1 for _, d in rs if d == -1) == b // 2
        assert all(d in (1, -1) for _, d in rs)
        for key, d in rs:  # in file order: each retraction hits a live occurrence
            counts[key] += d
            assert counts[key] >= 0, key
    drain = rows(batches[4])
    assert len({k for k, _ in drain}) == len(drain)  # consolidated
    assert all(d < 0 for _, d in drain)
    assert {k: -d for k, d in drain} == {k: c for k, c in counts.items() if c}
    total: defaultdict = defaultdict(int)
    for batch in batches:
        for key, d in rows(batch):
            total[key] += d
    assert all(v == 0 for v in total.values())


def test_loop_and_diamond_counts():
    n = 1000
    spec = generate_graph(n, seed=0)
    feedback = len(spec.loops)
    sides = len(spec.diamonds)
    assert len(spec.nodes) == 1 + n + feedback + sides
    assert feedback % 3 == 0 and n / 50 - 3 <= feedback <= n / 50 + 3
    assert abs(sides - n / 100) <= 1


def test_trackers_agree_on_a_replay():
    w = parse_workload(workload_text(*make(100, 200, seed=2)))
    psi = engine.closure(w.graph)
    ref = engine.ImpliedFrontierTracker(w.graph, psi=psi)
    prop = engine.PropagationTracker(w.graph)
    nonempty = 0
    for batch in w.batches:
        ref.update(batch.loc, batch.ts, batch.diff)
        prop.update(batch.loc, batch.ts, batch.diff)
        assert ref.frontiers() == prop.frontiers()
        nonempty += any(ref.frontiers())
    assert nonempty == 4  # everything is drained by the last batch
    assert not any(ref.frontiers())


def max_antichain(psi) -> int:
    return max(len(chain) for row in psi.values() for chain in row.values())


def test_psi_antichains_grow_with_diamonds():
    spec = generate_graph(300, seed=1)
    assert len(spec.diamonds) == 3
    g = parse_workload(workload_text(spec, [])).graph
    assert max_antichain(engine.closure(g)) > 1
    # without diamonds (n < 50 has none) every antichain is a single summary
    small = generate_graph(40, seed=1)
    assert small.diamonds == []
    assert max_antichain(engine.closure(parse_workload(workload_text(small, [])).graph)) == 1
