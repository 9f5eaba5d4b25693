"""The cpu backend's intake fast path (issue 33): one kernel pass validates an array batch and
finds the maxima the consolidation packs its keys with. It must consolidate exactly as the
general path (``batch_arrays`` then ``consolidate``) does, and leave every faulty batch to
the general path, which names the error."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from engine.batched.graph_arrays import GraphArrays
from engine.batched.kernels import KernelSet, cpu_kernels
from engine.errors import TimelyFrontierError
from gpu_kernels.intake import MAX_COORD, check_columns

from strategies import examples, random_graphs, structured_graphs

graphs = st.one_of(random_graphs(max_ops=4, max_depth=2), structured_graphs(max_ops=8))


def general(graph, depth, loc, ts, diff):
    """The general path (``KernelSet.intake``: ``batch_arrays``, then ``consolidate``)."""
    return KernelSet.intake(cpu_kernels, graph, depth, loc, ts, diff)


def outcome(f, *args):
    try:
        return "ok", f(*args)
    except TimelyFrontierError as e:
        return type(e), str(e)


@st.composite
def array_batches(draw, graph):
    """``int64`` columns at the padded width, mostly valid, sometimes with one fault: a
    location out of range, a negative or too-large coordinate, a non-zero padding entry, a
    diff large enough for a sum to leave int64."""
    L, W = graph.num_locations, graph.m + graph.max_depth
    n = draw(st.integers(1, 40))
    loc = np.array(draw(st.lists(st.integers(0, L - 1), min_size=n, max_size=n)), np.int64)
    ts = np.zeros((n, W), np.int64)
    depth = np.array([graph.depth(l) for l in range(L)])
    for i in range(n):
        for c in range(graph.m + int(depth[loc[i]])):
            ts[i, c] = draw(st.sampled_from([0, 1, 2, 3, 1000, MAX_COORD - 1]))
    diff = np.array(draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)), np.int64)
    fault = draw(st.sampled_from(["none"] * 4 + ["loc", "neg", "big", "pad", "sum"]))
    i = draw(st.integers(0, n - 1))
    if fault == "loc":
        loc[i] = draw(st.sampled_from([-1, L, L + 5]))
    elif fault == "neg" and W:
        ts[i, draw(st.integers(0, W - 1))] = -1
    elif fault == "big" and W:
        ts[i, draw(st.integers(0, W - 1))] = MAX_COORD
    elif fault == "pad" and graph.m + int(depth[loc[i]]) < W:
        ts[i, W - 1] = 7
    elif fault == "sum":
        diff[:] = (1 << 62)
    if draw(st.booleans()):
        loc = loc.astype(np.int32)
    return loc, ts, diff


@examples(150)
@given(st.data(), graphs)
def test_gh33_fast_intake_equals_the_general_path(data, graph):
    if graph.num_locations == 0:
        return
    loc, ts, diff = data.draw(array_batches(graph))
    depth = GraphArrays.from_graph(graph).depth
    want = outcome(general, graph, depth, loc, ts, diff)
    got = outcome(cpu_kernels.intake, graph, depth, loc, ts, diff)
    assert got[0] == want[0]
    if want[0] != "ok":
        assert got[1] == want[1]
        return
    for a, b in zip(got[1], want[1]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_gh33_check_columns_finds_the_maxima():
    depth = np.array([0, 1, 0])
    loc = np.array([2, 1, 0], np.int32)
    ts = np.array([[5, 0], [3, 9], [1, 0]], np.int64)
    bad, lmax, cmax = check_columns(loc, ts, depth, 1, 3)
    assert (bad, lmax, cmax.tolist()) == (-1, 2, [5, 9])
    ts[0, 1] = 1  # padding of a depth-0 location
    assert check_columns(loc, ts, depth, 1, 3)[0] == 0


def test_gh33_other_inputs_take_the_general_path():
    """Lists, uint columns and narrow timestamps are left to the general path: same result."""
    from engine.core.workload import example_graph
    g = example_graph()
    depth = GraphArrays.from_graph(g).depth
    W = g.m + g.max_depth
    loc, ts, diff = [0, 1, 0], [(0,) * W, (1,) + (0,) * (W - 1), (0,) * W], [1, 1, 1]
    for args in ((loc, ts, diff), (np.array(loc, np.uint8), np.array(ts, np.uint16),
                                   np.array(diff, np.int64))):
        for a, b in zip(cpu_kernels.intake(g, depth, *args), general(g, depth, *args)):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(TimelyFrontierError):
        cpu_kernels.intake(g, depth, np.array([99]), np.zeros((1, W), np.int64),
                           np.array([1]))

