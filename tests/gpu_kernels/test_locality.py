"""gpu_kernels.locality: the locality partitioner keeps neighbours together and balances the
partitions; the streaming placement puts a vertex with its neighbours."""

import numpy as np
from hypothesis import given, strategies as st

from gpu_kernels.locality import bfs_order, cut_edges, ldg_parts, range_parts
from perf import graphs as G
from strategies import examples


@examples(60)
@given(st.integers(1, 40), st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)),
                                    max_size=80), st.integers(1, 4))
def test_bfs_order_is_a_permutation_and_ranges_are_contiguous_and_balanced(n, edges, P):
    e = np.array([(a % n, b % n) for a, b in edges], np.int64).reshape(-1, 2)
    order = bfs_order(n, e[:, 0], e[:, 1])
    assert sorted(order.tolist()) == list(range(n))
    weight = np.bincount(e[:, 0], minlength=n) + 1.0
    parts = range_parts(order, weight, P)
    assert parts.min() >= 0 and parts.max() < P
    assert (np.diff(parts[order]) >= 0).all()            # contiguous ranges of the order
    load = np.bincount(parts, weights=weight, minlength=P)
    assert load.max() <= weight.sum() / P + weight.max()  # no range more than a vertex over


def test_a_path_and_a_grid_are_cut_in_few_places_where_hash_cuts_everywhere():
    n = 10_000
    s, d = np.arange(n - 1), np.arange(1, n)
    parts = range_parts(bfs_order(n, s, d), np.ones(n), 4)
    assert cut_edges(s, d, parts) == 3                    # P - 1 cuts of one path
    assert cut_edges(s, d, (np.arange(n) % 4)) == n - 1  # hash: every edge
    gs, gd = G.grid(100)
    gp = range_parts(bfs_order(100 * 100, gs, gd), np.ones(100 * 100), 2)
    assert cut_edges(gs, gd, gp) <= 2 * 100 * 2           # about one anti-diagonal
    assert abs(np.bincount(gp)[0] - 5000) <= 1


def test_ldg_places_new_vertices_with_their_neighbours_within_capacity():
    # vertices 0-3 placed (0, 1 on 0; 2, 3 on 1); 4 joins 2 and 3, 5 joins 0, 6 is alone
    parts = np.array([0, 0, 1, 1, -1, -1, -1], np.int32)
    s, d = np.array([4, 4, 5]), np.array([2, 3, 0])
    out = ldg_parts(parts, s, d, np.ones(7), 2)
    assert out[:4].tolist() == [0, 0, 1, 1]
    assert out[4] == 1 and out[5] == 0
    assert out[6] == 0                                  # no neighbour: the least loaded
    assert parts[4] == -1                                # the input is not changed
