"""Checks shared by the simulator tests (``tests/cuda_sim/``) and the GPU tests
(``tests/test_cuda_gpu.py``): every CUDA kernel against its CPU twin, and the cuda backend
against the reference tracker. One body per check; ``dev`` puts a host array on the device
(the identity under the simulator, ``cupy.asarray`` on a GPU) and ``host`` brings it back.

Importing this module loads no CUDA: the kernels load when a check runs.
"""

from __future__ import annotations

import numpy as np

from engine import ImpliedFrontierTracker
from engine.batched import BatchedTracker
from engine.graph_arrays import GraphArrays
from engine.psi import compute_psi
from gpu_kernels import closure, consolidate, pareto, precursors, propagate, segments

from test_trackers import replay_changes


def _same(a, b, host):
    """Equal arrays (values and dtype) from the twin (host) and the kernel (device)."""
    b = host(b)
    np.testing.assert_array_equal(a, b)
    assert np.asarray(a).dtype == b.dtype, (np.asarray(a).dtype, b.dtype)


def _table(rng, n, L, W, hi=3):
    """A consolidated random count table (sorted, no zeros)."""
    loc = rng.integers(0, L, n).astype(np.int32)
    ts = rng.integers(0, hi, (n, W)).astype(np.int64)
    diff = rng.integers(-2, 3, n).astype(np.int64)
    return consolidate.consolidate(loc, ts, diff)


# -- consolidation --------------------------------------------------------------------------

KEYS = ("uint32", "uint64", "lexsort")


def check_consolidate(rng, dev, host, *, n=24, W=2, L=4, keys="uint32", tpb=None):
    """``keys``: rows that pack into 32 bits, into 63 bits, or not at all (lexsort path)."""
    loc = rng.integers(0, L, n).astype(np.int32)
    ts = rng.integers(0, 3, (n, W)).astype(np.int64)
    if keys == "uint64":
        ts[:, 0] += np.int64(1) << 30
    elif keys == "lexsort":
        ts += np.int64(1) << 40
    diff = rng.integers(-2, 3, n).astype(np.int64)
    want = consolidate.consolidate(loc, ts, diff)
    got = consolidate.consolidate_cuda(dev(loc), dev(ts), dev(diff), tpb=tpb)
    for a, b in zip(want, got):
        _same(a, b, host)


def check_merge_counts(rng, dev, host, *, r=16, n=10, W=2, L=4, tpb=None):
    table = _table(rng, r, L, W)
    batch = _table(rng, n, L, W)
    for strict in (False, True):
        f1 = np.zeros(L, np.bool_)
        f2 = dev(np.zeros(L, np.bool_))
        want = consolidate.merge_counts(*table, *batch, strict, f1)
        got = consolidate.merge_counts_cuda(*(dev(a) for a in table + batch), strict, f2, tpb=tpb)
        assert int(want[3]) == int(got[3])
        if want[3] < 0:
            for a, b in zip(want[:3], got[:3]):
                _same(a, b, host)
            _same(f1, f2, host)


# -- frontiers ------------------------------------------------------------------------------

def check_segment_frontiers(rng, dev, host, *, m, W, n=40, L=5, threads=None):
    t_loc, t_ts, t_cnt = _table(rng, n, L, W, hi=4)
    seg_ptr = np.searchsorted(t_loc, np.arange(L + 1)).astype(np.int64)
    locs = np.sort(rng.choice(L, int(rng.integers(1, L + 1)), replace=False)).astype(np.int64)
    want = pareto.segment_frontiers(t_ts, t_cnt, seg_ptr, locs, m)
    got = pareto.segment_frontiers_cuda(dev(t_ts), dev(t_cnt), dev(seg_ptr), dev(locs), m,
                                        threads=threads)
    for a, b in zip(want, got):
        _same(a, b, host)
    return locs, want


def check_replace_segments(rng, dev, host, *, W=2, L=5, tpb=None):
    ptr = np.zeros(L + 1, np.int64)
    rows = np.zeros((0, W), np.int64)
    for _ in range(3):
        locs, (sel_ptr, sel_rows) = check_segment_frontiers(rng, dev, host, m=1, W=W, L=L,
                                                            threads=1)
        want = pareto.replace_segments(ptr, rows, locs, sel_ptr, sel_rows)
        got = pareto.replace_segments_cuda(dev(ptr), dev(rows), dev(locs), dev(sel_ptr),
                                           dev(sel_rows), tpb=tpb)
        for a, b in zip(want, got):
            _same(a, b, host)
        ptr, rows = want[0], want[1]


def check_gather_segments(rng, dev, host, *, L=6, W=2, tpb=None):
    lens = rng.integers(0, 3, L)
    new_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    src0 = rng.integers(0, 9, (20, W)).astype(np.int64)
    src1 = rng.integers(0, 9, (12, W)).astype(np.int64)
    which = rng.integers(0, 2, L).astype(np.uint8)
    start = np.where(which == 0, rng.integers(0, 20 - 2, L), rng.integers(0, 12 - 2, L))
    want = segments.gather_segments(new_ptr, which, start, src0, src1)
    got = segments.gather_segments_cuda(dev(new_ptr), dev(which), dev(start.astype(np.int64)),
                                        dev(src0), dev(src1), tpb=tpb)
    _same(want, got, host)


# -- propagation ----------------------------------------------------------------------------

def _state(graph, batches):
    """``(ga, F_ptr, F_ts, I_ptr, I_ts)`` after replaying ``batches`` on the cpu backend."""
    tr = BatchedTracker(graph, strategy="edgewise")
    for b in batches:
        tr.update(*b)
    return tr.ga, tr._F_ptr, tr._F_ts, tr._I_ptr, tr._I_ts


def _graph_args(ga, dev):
    return (ga.m, *(dev(a) for a in (ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr, ga.out_dst,
                                     ga.order, ga.rank, ga.scc, ga.scc_ptr, ga.scc_members)))


def check_edgewise(graph, batches, rng, dev, host, *, tpb=None):
    """Recompute every location from an empty ``I``, and a few seeds from the true ``I``."""
    ga, F_ptr, F_ts, I_ptr, I_ts = _state(graph, batches)
    L, W = ga.L, ga.width
    E_ptr, E_ts = np.zeros(L + 1, np.int64), np.zeros((0, W), np.int64)
    host_args = (ga.m, ga.in_ptr, ga.in_src, ga.in_sum, ga.out_ptr, ga.out_dst, ga.order,
                 ga.rank, ga.scc, ga.scc_ptr, ga.scc_members)
    seeds_all = np.arange(L, dtype=np.int64)
    seeds_few = np.sort(rng.choice(L, min(L, 2), replace=False)).astype(np.int64)
    for (o_ptr, o_ts), seeds in (((E_ptr, E_ts), seeds_all), ((I_ptr, I_ts), seeds_few),
                                 ((E_ptr, E_ts), seeds_few)):
        want = propagate.edgewise(*host_args, F_ptr, F_ts, o_ptr, o_ts, seeds, 10 ** 6)
        got = propagate.edgewise_cuda(*_graph_args(ga, dev), dev(F_ptr), dev(F_ts), dev(o_ptr),
                                      dev(o_ts), dev(seeds), 10 ** 6, tpb=tpb)
        _same(want[0], got[0], host)
        _same(want[1], got[1], host)
        assert got[3] >= 0
        # the emitted changes, over the union of the recomputed locations
        touched = np.union1d(want[2], host(got[2])).astype(np.int64)
        c_want = propagate.frontier_changes(touched, o_ptr, o_ts, want[0], want[1], W)
        c_got = propagate.frontier_changes_cuda(dev(touched), dev(o_ptr), dev(o_ts), dev(want[0]),
                                                dev(want[1]), W, tpb=tpb)
        for a, b in zip(c_want, c_got):
            _same(a, b, host)
        if seeds is seeds_all:  # everything from empty: the least fixed point, the true I
            _same(I_ptr, got[0], host)
            _same(I_ts, got[1], host)


def _psi_args(psi, dev):
    dense = psi.layout.value == "dense"
    i64, i32 = np.zeros(1, np.int64), np.zeros(1, np.int32)
    return (i64 if dense else psi.pair_ptr, i32 if dense else psi.pair_dst,
            i64 if dense else psi.sum_ptr, i64 if dense else psi.t_ptr,
            i32 if dense else psi.t_src, i64 if dense else psi.t_pair,
            psi.count if dense else np.zeros((1, 1), np.uint8),
            psi.sums.reshape(-1, psi.sums.shape[-1]), psi.max_antichain if dense else 0)


def check_gather_closure(graph, batches, rng, dev, host, *, capacity=1, tpb=None):
    ga, F_ptr, F_ts, I_ptr, I_ts = _state(graph, batches)
    L, W = ga.L, ga.width
    E_ptr, E_ts = np.zeros(L + 1, np.int64), np.zeros((0, W), np.int64)
    seeds = np.sort(rng.choice(L, min(L, 3), replace=False)).astype(np.int64)
    for layout in ("dense", "ragged"):
        psi = compute_psi(graph, layout=layout)
        args = _psi_args(psi, dev)
        want = propagate.gather_closure(ga.m, *args, F_ptr, F_ts, E_ptr, E_ts, seeds)
        d_args = tuple(dev(a) if isinstance(a, np.ndarray) else a for a in args)
        got = propagate.gather_closure_cuda(ga.m, *d_args, dev(F_ptr), dev(F_ts), dev(E_ptr),
                                            dev(E_ts), dev(seeds), capacity=capacity, tpb=tpb)
        for a, b in zip(want, got):
            _same(a, b, host)


def check_closure_dense(graph, dev, host, *, tpb=None):
    ga = GraphArrays.from_graph(graph)
    psi = compute_psi(graph, layout="dense")
    sums, count, rounds = closure.closure_dense_cuda(
        ga.m, ga.K, dev(ga.depth), dev(ga.in_ptr), dev(ga.in_src), dev(ga.in_sum), capacity=1,
        tpb=tpb)
    A = psi.max_antichain
    sums, count = host(sums), host(count)
    np.testing.assert_array_equal(count, psi.count)
    assert sums.shape[2] >= A and not sums[:, :, A:].any()
    np.testing.assert_array_equal(sums[:, :, :A], psi.sums.astype(np.int64))
    assert rounds >= 1


def check_precursors(graph, batches, rng, dev, host, *, n=6, tpb=None):
    tr = BatchedTracker(graph, strategy="edgewise")
    for b in batches:
        tr.update(*b)
    t_loc, t_ts, t_cnt = tr.table()
    L, W, m = graph.num_locations, tr.ga.width, graph.m
    act = np.unique(t_loc[t_cnt > 0]).astype(np.int64)
    row_of, pair_ptr, pair_dst, sum_ptr, sums = tr._rows().csr(np.arange(L, dtype=np.int64))
    seg_ptr = np.searchsorted(t_loc, np.arange(L + 1)).astype(np.int64)
    q_loc = rng.integers(0, L, n).astype(np.int32)
    q_ts = rng.integers(0, 3, (n, W)).astype(np.int64)
    q_ts[:, m:] *= np.arange(W - m)[None, :] < tr.ga.depth[q_loc][:, None]  # zero padding
    if len(t_loc):  # include active pointstamps themselves
        q_loc, q_ts = np.concatenate([q_loc, t_loc]), np.concatenate([q_ts, t_ts])
    rows = (row_of, pair_ptr, pair_dst, sum_ptr, sums)
    want = precursors.precursor_counts(*rows, m, act, seg_ptr, t_ts, t_cnt, q_loc, q_ts)
    got = precursors.precursor_counts_cuda(*(dev(a) for a in rows), m, dev(act), dev(seg_ptr),
                                           dev(t_ts), dev(t_cnt), dev(q_loc), dev(q_ts), tpb=tpb)
    _same(want, got, host)
    l2 = rng.integers(0, L, len(q_loc)).astype(np.int32)
    t2 = q_ts[::-1].copy()
    want = precursors.could_result_in(*rows, m, q_loc, q_ts, l2, t2)
    got = precursors.could_result_in_cuda(*(dev(a) for a in rows), m, dev(q_loc), dev(q_ts),
                                          dev(l2), dev(t2), tpb=tpb)
    _same(want, got, host)


# -- the backend ----------------------------------------------------------------------------

def make_tracker(graph, kernels, strategy, **kw):
    """``closure-dense`` / ``closure-ragged`` force the layout of ``Psi``."""
    if strategy.startswith("closure-"):
        return BatchedTracker(graph, strategy="closure", psi_layout=strategy.split("-")[1],
                              kernels=kernels, **kw)
    return BatchedTracker(graph, strategy=strategy, kernels=kernels, **kw)


def check_backend_replay(graph, batches, kernels, strategy):
    """The backend's tracker equals the reference after every batch, and emits exactly the
    cpu backend's change arrays; a final batch drains everything."""
    ref = ImpliedFrontierTracker(graph)
    eng = make_tracker(graph, kernels, strategy)
    cpu = make_tracker(graph, None, strategy)
    for batch in list(batches) + [None]:
        if batch is None:
            rows = [(l, t, -c) for (l, t), c in ref.counts.items()]
            batch = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
        before = eng.frontiers()
        out = eng.update_arrays(*batch)
        for a, b in zip(cpu.update_arrays(*batch), out):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
        expected = ref.update(*batch)
        w = eng._width
        got = [(l, tuple(r[:w[l]]), d) for l, r, d in zip(out[0].tolist(), out[1].tolist(),
                                                          out[2].tolist())]
        assert got == [(c.loc, c.ts, c.diff) for c in expected]
        assert eng.frontiers() == ref.frontiers()
        assert replay_changes(before, expected) == eng.frontiers()
        assert sorted(eng.counts.items()) == sorted(ref.counts.items())
    assert eng.frontiers() == [[] for _ in range(graph.num_locations)]
