"""Checks shared by the simulator tests (``tests/cuda_sim/``) and the GPU tests
(``tests/engine/batched/test_cuda_gpu.py``): every CUDA kernel against its CPU twin, and the cuda backend
against the reference tracker. One body per check; ``dev`` puts a host array on the device
(the identity under the simulator, ``cupy.asarray`` on a GPU) and ``host`` brings it back.

Importing this module loads no CUDA: the kernels load when a check runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import AntichainOverflowError, GraphBuilder, ImpliedFrontierTracker, Summary
from engine.batched.tracker import BatchedTracker
from engine.batched.graph_arrays import GraphArrays
from engine.batched.psi import compute_psi
from gpu_kernels import _cuda, closure, consolidate, intake, pareto, precursors, propagate
from gpu_kernels.summary_rows import smallest_dtype, ts_le

from tracker_cases import replay_changes


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
    got = intake.consolidate_cuda(dev(loc), dev(ts), dev(diff), tpb=tpb)
    for a, b in zip(want, got):
        _same(a, b, host)


# -- sums outside int64 (issue 23, item 2) --------------------------------------------------

BIG = 1 << 62
I64_MAX, I64_MIN = (1 << 63) - 1, -(1 << 63)
#: Diffs of one pointstamp within a batch, and the exact sum the consolidation must give or,
#: where it leaves int64, report (``SumOverflow.total``). Sums that fit although a partial
#: sum leaves int64 must be exact, as with unbounded integers.
SUM_CASES = [
    ([BIG, BIG], 1 << 63),                          # issue 23: two rows of 2**62
    ([I64_MIN, -1], I64_MIN - 1),
    ([I64_MAX, I64_MAX, I64_MAX], 3 * I64_MAX),
    ([BIG, BIG, -BIG], None),                       # fits: 2**62
    ([I64_MAX, 1, -1, -I64_MAX], None),             # cancels (dropped)
    ([I64_MIN, I64_MIN, I64_MAX, I64_MAX, 2], None),  # cancels too
    ([I64_MIN, 5], None),
]
#: Paths through the consolidations: packed keys with the row index in 32 or 64 bits, packed
#: keys argsorted (no room for the index), and a lexsort (no packing at all).
SUM_KEYS = ("uint32", "uint64", "argsort", "lexsort")


def _sum_batch(rng, diffs, keys, *, n_other=6, W=2, L=4):
    """A shuffled batch: ``diffs`` at one pointstamp of location 1, small diffs elsewhere
    (and one row of 2**62 at another pointstamp, so that the exact path sums ordinary runs
    too), with coordinates that send it down the ``keys`` path. Returns the batch and the
    pointstamp ``(loc, ts)``."""
    base = np.zeros(W, np.int64)
    base[0] = {"uint32": 0, "uint64": 1 << 30, "argsort": 1 << 57, "lexsort": 1 << 40}[keys]
    if keys == "lexsort":
        base[1:] = 1 << 40
    o_loc = np.r_[rng.integers(0, L, n_other), 3].astype(np.int32)
    o_ts = base + 2 + rng.integers(0, 3, (n_other + 1, W))
    o_diff = np.r_[rng.integers(-2, 3, n_other), BIG].astype(np.int64)
    loc = np.r_[np.ones(len(diffs), np.int32), o_loc].astype(np.int32)
    ts = np.concatenate([np.tile(base, (len(diffs), 1)), o_ts]).astype(np.int64)
    diff = np.r_[np.array(diffs, dtype=object).astype(np.int64), o_diff]
    perm = rng.permutation(len(loc))
    return (loc[perm], np.ascontiguousarray(ts[perm]), diff[perm]), \
        (1, tuple(int(x) for x in base))


def _python_consolidate(loc, ts, diff):
    """Consolidation with unbounded integers: ``{(loc, ts): sum}``, zeros dropped."""
    out: dict = {}
    for l, t, d in zip(loc.tolist(), ts.tolist(), diff.tolist()):
        out[(l, tuple(t))] = out.get((l, tuple(t)), 0) + d
    return {k: v for k, v in out.items() if v}


def check_sum_overflow(rng, dev=None, host=None, *, tpb=None):
    """Issue 23, item 2: every consolidation -- the CPU twins ``consolidate`` and ``intake``,
    and with ``dev`` the CUDA ``consolidate_cuda`` and ``intake_cuda`` (no guess, a guess, and
    deferred) -- sums exactly: a sum that fits is the unbounded integer sum, even where a
    partial sum leaves int64; one that does not raises ``SumOverflow`` naming the first such
    pointstamp in ``(loc, ts)`` order and its exact sum, never a wrapped count."""
    from gpu_kernels import intake as gi
    from gpu_kernels.consolidate import SumOverflow
    W, L = 2, 4
    depth = np.zeros(L, np.int64)
    for keys in SUM_KEYS:
        for diffs, total in SUM_CASES:
            (loc, ts, diff), p = _sum_batch(rng, diffs, keys, W=W, L=L)
            want = _python_consolidate(loc, ts, diff)
            runs = [lambda: consolidate.consolidate(loc, ts, diff),
                    lambda: gi.intake(loc, ts, diff, depth, W, L, W)[2:5]]
            if dev is not None:
                d = (dev(loc), dev(ts), dev(diff))
                spec = gi.speculative_widths(np.r_[loc.max(), ts.max(axis=0)], L, len(loc))
                runs += [lambda: intake.consolidate_cuda(*d, tpb=tpb),
                         lambda: gi.intake_cuda(*d, dev(depth), W, L, W, tpb=tpb)[2:5]]
                if spec is not None:
                    runs.append(lambda: gi.intake_cuda(*d, dev(depth), W, L, W, guess=spec,
                                                       tpb=tpb)[2:5])
                    runs.append(lambda: _deferred_intake(gi, d, dev(depth), W, L, spec, tpb))
            for run in runs:
                if total is None:
                    got = [host(a) if host is not None else np.asarray(a) for a in run()]
                    assert _python_consolidate(*got) == want, (keys, diffs)
                    assert list(zip(got[0].tolist(), map(tuple, got[1].tolist()))) == \
                        sorted(want), (keys, diffs)
                else:
                    with pytest.raises(SumOverflow) as info:
                        run()
                    assert (info.value.loc, info.value.ts, info.value.total) == (*p, total), \
                        (keys, diffs)


def _deferred_intake(gi, d, depth, W, L, spec, tpb):
    """``intake_cuda`` deferred: its statistics judged afterwards (``deferred_verdict``), an
    overflow named by ``overflow_on_host`` as the cuda backend does."""
    from gpu_kernels.consolidate import overflow_on_host
    r = gi.intake_cuda(*d, depth, W, L, W, guess=spec, defer=True, tpb=tpb)
    n = len(d[0])
    verdict = gi.deferred_verdict(_cuda.to_host(r.pending), n, r.spec)
    if verdict[0] == "overflow":
        raise overflow_on_host(*d, W)
    assert verdict[0] == "ok", verdict
    c = verdict[2]
    return r.loc[:c], r.ts[:c], r.diff[:c]


def check_batch_sum_overflow(make, strict):
    """Issue 23, item 2, through a tracker: a batch whose changes to one pointstamp sum
    outside int64 (two rows of 2**62) raises the reference's ``CountOverflowError``, message
    for message, and changes nothing; first on a fresh tracker, then after batches (on the
    cuda backend: the deferred intake); a batch whose sum fits though a partial sum does
    not is applied exactly."""
    from engine import CountOverflowError
    from engine.core.workload import example_graph

    graph = example_graph()
    W = graph.m + graph.max_depth
    a, b = graph.source(1, 0), graph.target(2, 0)
    ts = np.zeros((3, W), np.int64)
    ts[:, 0] = [0, 0, 3]
    bad = (np.array([a, a, b], np.int32), ts, np.array([BIG, BIG, 1], np.int64))
    zero = np.zeros((3, W), np.int64)
    fine = (np.array([a, a, a], np.int32), zero, np.array([BIG, BIG, -BIG], np.int64))
    undo = (fine[0], zero, -fine[2])
    eng, ref = make(graph), ImpliedFrontierTracker(graph, strict=strict)
    for batch in (bad, fine, bad, undo, bad):
        if batch is bad:
            before = (sorted(eng.counts.items()), eng.frontiers())
            with pytest.raises(CountOverflowError) as want:
                ref.update(*batch)
            with pytest.raises(CountOverflowError) as got:
                eng.update(*batch)
            assert str(got.value) == str(want.value)
            assert f"({a}, (0, 0))" in str(got.value) and str(1 << 63) in str(got.value)
            assert (sorted(eng.counts.items()), eng.frontiers()) == before
        else:
            assert eng.update(*batch) == ref.update(*batch)
        assert sorted(eng.counts.items()) == sorted(ref.counts.items())
        assert eng.frontiers() == ref.frontiers()
        if batch is fine:
            assert ref.counts.count(a, (0, 0)) == BIG


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


def check_merge_overflow(dev, host, *, tpb=None):
    """A count taken past int64 either way is flagged as ``-2 - row`` (the first such row),
    in both modes, before a strict-mode violation, with the old table untouched."""
    big = np.iinfo(np.int64).max
    t_loc = np.array([0, 1, 2], np.int32)
    t_ts = np.array([[0, 0], [1, 0], [2, 0]], np.int64)
    t_cnt = np.array([big, -big - 1, 5], np.int64)
    cases = [  # batch diffs at the table's three rows (0 = no batch row): bad (lenient, strict)
        ([1, 0, 0], (-2, -2)), ([0, -1, 0], (-2, -2)), ([0, 0, big], (-2, -2)),
        ([-1, -1, 0], (-3, -3)), ([-1, 1, -4], (-1, 1)), ([0, 0, -6], (-1, 0)),
        ([-big - 1, 0, big], (-3, -3))]         # a negative count, then an overflow: overflow
    for diffs, want in cases:
        keep = [i for i, d in enumerate(diffs) if d]
        batch = (t_loc[keep], t_ts[keep], np.array(diffs, np.int64)[keep])
        for strict in (False, True):
            expect = want[strict]
            table = (t_loc.copy(), t_ts.copy(), t_cnt.copy())
            f1, f2 = np.zeros(3, np.bool_), dev(np.zeros(3, np.bool_))
            got_cpu = consolidate.merge_counts(*table, *batch, strict, f1)
            got = consolidate.merge_counts_cuda(*(dev(a) for a in table + batch), strict, f2,
                                                tpb=tpb)
            assert int(got_cpu[3]) == int(got[3]) == expect, (diffs, strict, got_cpu[3], got[3])
            for a, b in zip(table, (t_loc, t_ts, t_cnt)):
                np.testing.assert_array_equal(a, b)
            if expect == -1:
                for a, b in zip(got_cpu[:3], got[:3]):
                    _same(a, b, host)


# -- frontiers ------------------------------------------------------------------------------

def check_frontier_update(rng, dev, host, *, m, W, L=5, threads=None, rounds=3, rows=12):
    """``frontier_update_cuda`` (every location, no sync) equals the twin over a sequence
    of merges: the used rows of ``F``, the modes, and the withdrawn marks of the old ``F``'s
    rows (checked against their definition too: a mark exactly where no new row of the
    location is ``<=`` the old row, and only at retreated locations). Returns how many rows
    were marked withdrawn over all rounds."""
    F_ptr, F_ts = np.zeros(L + 1, np.int64), np.zeros((0, W), np.int64)
    table = (np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64))
    marked = 0
    for _ in range(rounds):
        batch = _table(rng, rows, L, W, hi=3)
        flip = np.zeros(L, np.bool_)
        new = consolidate.merge_counts(*table, *batch, False, flip)[:3]
        want = pareto.frontier_update(*new, flip, F_ptr, F_ts, m)
        got = pareto.frontier_update_cuda(*(dev(a) for a in new), dev(flip), dev(F_ptr),
                                          dev(F_ts), m, threads=threads)
        _same(want[0], got[0], host)
        _same(want[1], host(got[1])[:int(want[0][-1])], np.asarray)
        _same(want[2], got[2], host)
        n_old = int(F_ptr[-1])
        _same(want[3], host(got[3])[:n_old], np.asarray)
        for l in range(L):
            for i in range(F_ptr[l], F_ptr[l + 1]):
                new_rows = want[1][want[0][l]:want[0][l + 1]]
                covered = any(ts_le(r, F_ts[i], m, W) for r in new_rows)
                assert want[3][i] == (flip[l] and want[2][l] == 2 and not covered), (l, i)
        marked += int(want[3].sum())
        table, F_ptr, F_ts = new, want[0], want[1]
    return marked


# -- propagation ----------------------------------------------------------------------------

def _steps(graph, batches):
    """``(ga, before, after, seeds)`` for every batch of a cpu-backend replay: ``F`` and ``I``
    (CSR pairs) before and after it, and the locations whose ``F`` changed; first a step from
    nothing to the final state with every location as a seed."""
    tr = BatchedTracker(graph, strategy="edgewise")
    L, W = tr.ga.L, tr.ga.width
    empty = (np.zeros(L + 1, np.int64), np.zeros((0, W), np.int64))
    steps = []
    for b in batches:
        before = (tr._F_ptr, tr._F_ts, tr._I_ptr, tr._I_ts)
        tr.update(*b)
        after = (tr._F_ptr, tr._F_ts, tr._I_ptr, tr._I_ts)
        seeds = [l for l in range(L)
                 if not np.array_equal(before[1][before[0][l]:before[0][l + 1]],
                                       after[1][after[0][l]:after[0][l + 1]])]
        steps.append((before, after, np.asarray(seeds, np.int64)))
    final = (tr._F_ptr, tr._F_ts, tr._I_ptr, tr._I_ts)
    steps.insert(0, (empty + empty, final, np.arange(L, dtype=np.int64)))
    return tr.ga, steps


def check_frontier_changes(graph, batches, dev, host, *, tpb=None):
    """``frontier_changes_cuda`` equals its twin on every location of every step."""
    ga, steps = _steps(graph, batches)
    locs = np.arange(ga.L, dtype=np.int64)
    for before, after, _ in steps:
        want = propagate.frontier_changes(locs, before[2], before[3], after[2], after[3], ga.width)
        got = propagate.frontier_changes_cuda(dev(locs), dev(before[2]), dev(before[3]),
                                              dev(after[2]), dev(after[3]), ga.width, tpb=tpb)
        for a, b in zip(want, got):
            _same(a, b, host)


def check_vote_counts(graph, batches, dev, host, *, hit_rows=propagate.HIT_ROWS, threads=None):
    """``coop_gather``'s vote (issue 24, item 4): on every step, the targets it recomputed in
    full and those it updated incrementally (``_cuda.COUNTS``) are those of its CPU twin
    ``closure_vote`` with the same table of ``hit_rows``, and the new ``I`` is exact. Rows
    enough that no target overflows (an overflow is counted in full whatever the vote).
    Returns the twin's votes of every step."""
    ga, steps = _steps(graph, batches)
    psi = compute_psi(graph, layout="ragged")
    sums = psi.sums.reshape(-1, psi.sums.shape[-1])
    tm = propagate.target_major(ga.L, 0, np.zeros((1, 1), np.uint8), psi.t_ptr, psi.t_src,
                                psi.t_pair, psi.sum_ptr, sums)
    d_tm = tuple(dev(a) for a in tm)
    votes = []
    for before, after, seeds in steps:
        mode, gone = pareto.seed_withdrawn(ga.L, seeds, before[0], before[1], after[0],
                                           after[1], ga.m)
        vote = propagate.closure_vote(ga.m, *tm, mode, gone, before[0], before[1], after[0],
                                      after[1], before[2], before[3], hit_rows)
        votes.append(vote)
        snap = _cuda.COUNTS.snapshot()
        new_ptr, new_ts, _ = propagate.closure_step_cuda(
            ga.m, *d_tm, dev(mode), dev(after[0]), dev(after[1]), dev(before[2]),
            dev(before[3]), old_ptr=dev(before[0]), old_ts=dev(before[1]), gone=dev(gone),
            rows=propagate.COOP_ROWS, threads=threads, hit_rows=hit_rows)
        assert _cuda.COUNTS.gather_since(snap) == {
            "targets_full": int((vote == 2).sum()), "targets_incremental": int((vote == 1).sum()),
            "targets_overflowed": 0}
        _same(after[2], new_ptr, host)
        _same(after[3], new_ts, host)
    return votes


def check_closure_step(graph, batches, dev, host, *, rows=2, threads=None, tpb=None):
    """``closure_step_cuda`` (block per target over target-major ``Psi``; incremental unless
    an old frontier row lost every producer; ``rows`` small enough to send big frontiers down
    the overflow path)
    gives every step's new ``I`` and exactly the changes of ``frontier_changes`` over all
    locations, for both layouts of ``Psi``; ``target_major`` lists every ``Psi`` entry by
    target. Also the CPU twin of the seed modes (non-zero exactly where ``F`` changed)."""
    ga, steps = _steps(graph, batches)
    W = ga.width
    locs = np.arange(ga.L, dtype=np.int64)
    for layout in ("dense", "ragged"):
        psi = compute_psi(graph, layout=layout)
        sums = psi.sums.reshape(-1, psi.sums.shape[-1])
        if layout == "dense":
            tm = propagate.target_major(ga.L, psi.max_antichain, psi.count, np.zeros(1, np.int64),
                                        np.zeros(1, np.int32), np.zeros(1, np.int64),
                                        np.zeros(1, np.int64), sums)
        else:
            tm = propagate.target_major(ga.L, 0, np.zeros((1, 1), np.uint8), psi.t_ptr, psi.t_src,
                                        psi.t_pair, psi.sum_ptr, sums)
        tm_ptr, tm_src, tm_sum = tm
        assert int(tm_ptr[-1]) == psi.num_summaries
        for l2 in range(ga.L):
            got = sorted((int(l1), tuple(r)) for l1, r in zip(tm_src[tm_ptr[l2]:tm_ptr[l2 + 1]],
                                                              tm_sum[tm_ptr[l2]:tm_ptr[l2 + 1]].tolist()))
            want = sorted((l1, tuple(r)) for l1 in range(ga.L)
                          for r in psi.summaries(l1, l2).tolist())
            assert got == want
        d_tm = tuple(dev(a) for a in tm)
        for before, after, seeds in steps:
            modes, gone = pareto.seed_withdrawn(ga.L, seeds, before[0], before[1], after[0],
                                                after[1], ga.m)
            np.testing.assert_array_equal(
                modes, pareto.seed_modes(ga.L, seeds, before[0], before[1], after[0], after[1],
                                         ga.m))
            differs = [not np.array_equal(before[1][before[0][l]:before[0][l + 1]],
                                          after[1][after[0][l]:after[0][l + 1]])
                       for l in range(ga.L)]
            np.testing.assert_array_equal(modes > 0, differs)
            new_ptr, new_ts, ch = propagate.closure_step_cuda(
                ga.m, *d_tm, dev(modes), dev(after[0]), dev(after[1]), dev(before[2]),
                dev(before[3]), old_ptr=dev(before[0]), old_ts=dev(before[1]), gone=dev(gone), rows=rows,
                threads=threads, tpb=tpb)
            _same(after[2], new_ptr, host)
            _same(after[3], new_ts, host)
            c_loc, c_ts, c_diff = propagate.frontier_changes(locs, before[2], before[3], after[2],
                                                             after[3], W)
            ch = host(ch)
            assert ch.shape == (len(c_loc), 2 + W)
            np.testing.assert_array_equal(ch[:, 0], c_loc)
            np.testing.assert_array_equal(ch[:, 1], c_diff)
            np.testing.assert_array_equal(ch[:, 2:], c_ts)


# -- Psi on the device ----------------------------------------------------------------------

PSI_FIELDS = ("pair_ptr", "pair_dst", "sum_ptr", "sums", "t_ptr", "t_src", "t_pair")


def chain_graph(n):
    """``n`` operators in a chain at depth 1, inside one loop (an input, a head merging the
    input with the feedback, the chain, a feedback operator): the longest path grows with
    ``n``, and every source reaches a cycle."""
    b = GraphBuilder(m=1)
    src = b.add_operator(0, 1, depth=1, name="input")
    head = b.add_operator(2, 1, depth=1, name="head")
    b.add_summary(head, 0, 0, Summary.identity(1))
    b.add_summary(head, 1, 0, Summary.identity(1))
    b.connect(src, 0, head, 0)
    prev = head
    for i in range(n):
        op = b.add_operator(1, 1, depth=1, name=f"op{i}")
        b.add_summary(op, 0, 0, Summary.delay(1, by=1) if i % 3 == 2 else Summary.identity(1))
        b.connect(prev, 0, op, 0)
        prev = op
    fb = b.add_operator(1, 1, depth=1, name="feedback")
    b.add_summary(fb, 0, 0, Summary.feedback(1))
    b.connect(prev, 0, fb, 0)
    b.connect(fb, 0, head, 1)
    return b.build()


def _settle_args(ga, dev):
    fast = closure.translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
    return (ga.m, ga.K, *(dev(a) for a in (ga.depth, ga.in_ptr, ga.in_src, ga.in_sum,
                                           ga.out_ptr, ga.out_dst, ga.order, ga.rank, fast)))


def check_closure_psi(graph, dev, host, *, rows=None, growth=2, tpb=None, layout=None):
    """The device count pass (``closure_settle_cuda``) and both fill passes equal the CPU
    kernels' ``compute_psi``, array for array and dtype for dtype. A small ``rows`` makes
    sources overflow their work space and settle again in larger ones. Returns the settle."""
    ga = GraphArrays.from_graph(graph)
    ragged = compute_psi(graph, layout="ragged")
    dense = compute_psi(graph, layout="dense")
    settle = closure.closure_settle_cuda(*_settle_args(ga, dev), rows=rows, growth=growth,
                                         attempts=16, tpb=tpb, layout=layout)
    assert settle.status == closure.OK and settle.err_src == -1
    assert (settle.num_pairs, settle.num_summaries, settle.largest) == (
        ragged.num_pairs, ragged.num_summaries, ragged.max_antichain)
    assert smallest_dtype(settle.vmax) == ragged.dtype
    # one fill launch per settle attempt, one thread per (work-space slot, target)
    slots = [int(sp[0].shape[0]) * ga.L for sp in settle.spaces]
    with launch_items() as items:
        got = closure.closure_fill_cuda(settle, ragged.dtype, tpb=tpb)
    assert items == [("closure_fill_rows", n) for n in slots if n], (items, slots)
    for name, b in zip(PSI_FIELDS, got):
        _same(getattr(ragged, name), b, host)
    with launch_items() as items:
        sums, count = closure.closure_fill_dense_cuda(settle, dense.dtype, dense.count.dtype,
                                                      tpb=tpb)
    assert items == [("closure_fill_dense_rows", n) for n in slots if n], (items, slots)
    _same(dense.sums, sums, host)
    _same(dense.count, count, host)
    return settle


class launch_items:
    """Context manager recording ``(kernel name, items)`` of every ``_cuda.launch`` (the
    fill kernels' names: the others as ``"other"``)."""

    def __enter__(self):
        k = closure._kernels()
        names = {id(k.closure_fill_rows): "closure_fill_rows",
                 id(k.closure_fill_dense_rows): "closure_fill_dense_rows",
                 id(k.closure_settle): "closure_settle"}
        self.real, self.items = _cuda.launch, []

        def launch(kernel, n, *args, tpb=None):
            if int(n) > 0:
                self.items.append((names.get(id(kernel), "other"), int(n)))
            return self.real(kernel, n, *args, tpb=tpb)
        _cuda.launch = launch
        return self.items

    def __exit__(self, *exc):
        _cuda.launch = self.real
        return False


def check_psi_fill_thread_per_pair(graph, dev, host):
    """The fill kernels write one pair per thread, thread ``k`` the pair of work-space slot
    ``k // L`` into target ``k % L``: a launch of only the first ``L + 1`` threads (one block
    each) writes the first slot's whole row and the second slot's pair into target 0, and
    nothing of the second slot's other targets, which a thread per source would write."""
    ga = GraphArrays.from_graph(graph)
    L = ga.L
    ragged = compute_psi(graph, layout="ragged")
    dense = compute_psi(graph, layout="dense")
    settle = closure.closure_settle_cuda(*_settle_args(ga, dev))
    assert len(settle.spaces) == 1
    srcs, settled, anchor, delta, row_off, row_len, pool = settle.spaces[0]
    s0, s1 = (int(x) for x in host(srcs)[:2])
    assert (dense.count[s1, 1:] > 0).any(), "the check needs a second source reaching more"
    xp = _cuda.namespace(settle.pair_ptr)
    k = closure._kernels()
    # dense: the first slot's row, and the second slot's pair into target 0
    sums = dev(np.zeros_like(dense.sums))
    count = dev(np.zeros_like(dense.count))
    _cuda.launch_blocks(k.closure_fill_dense_rows, L + 1, 1, srcs, settled, ga.m, ga.K, anchor,
                        delta, row_off, row_len, pool, sums, count)
    want_c = np.zeros_like(dense.count)
    want_s = np.zeros_like(dense.sums)
    want_c[s0], want_s[s0] = dense.count[s0], dense.sums[s0]
    want_c[s1, 0], want_s[s1, 0] = dense.count[s1, 0], dense.sums[s1, 0]
    _same(want_c, count, host)
    _same(want_s, sums, host)
    # ragged: the same pairs, at their offsets inside the rows
    pair_inc, sum_inc = closure._pair_offsets(xp, anchor, row_len)
    pair_dst = dev(np.full(ragged.num_pairs, -1, np.int32))
    sum_ptr = dev(np.full(ragged.num_pairs + 1, -1, np.int64))
    sums = dev(np.zeros_like(ragged.sums))
    _cuda.launch_blocks(k.closure_fill_rows, L + 1, 1, srcs, settled, ga.m, ga.K, anchor, delta,
                        row_off, row_len, pool, settle.pair_ptr, settle.row_ptr, pair_inc,
                        sum_inc, pair_dst, sum_ptr, sums)
    pp, sp = ragged.pair_ptr, ragged.sum_ptr
    written = list(range(pp[s0], pp[s0 + 1]))
    if ragged.pair_dst[pp[s1]] == 0:
        written.append(int(pp[s1]))
    want_d = np.full(ragged.num_pairs, -1, np.int32)
    want_p = np.full(ragged.num_pairs + 1, -1, np.int64)
    want_s = np.zeros_like(ragged.sums)
    want_d[written] = ragged.pair_dst[written]
    want_p[written] = ragged.sum_ptr[written]
    for q in written:
        want_s[sp[q]:sp[q + 1]] = ragged.sums[sp[q]:sp[q + 1]]
    _same(want_d, pair_dst, host)
    _same(want_p, sum_ptr, host)
    _same(want_s, sums, host)


def check_closure_psi_overflow(graph, dev, host, *, tpb=None):
    """One-row work spaces: every source that reaches a location with a materialised row
    overflows and is settled again (rows doubling); the result is unchanged.
    One attempt with one row is not enough: ``WorkSpaceOverflow`` names the sources."""
    settle = check_closure_psi(graph, dev, host, rows=1, growth=2, tpb=tpb)
    assert settle.launches > 1 and settle.rows > 1
    ga = GraphArrays.from_graph(graph)
    try:
        closure.closure_settle_cuda(*_settle_args(ga, dev), rows=1, growth=2, attempts=1,
                                    tpb=tpb)
    except closure.WorkSpaceOverflow as e:
        assert e.rows == 1 and e.sources and "did not fit a work space of 1 summary rows" in str(e)
    else:
        raise AssertionError("one attempt with one row per source did not overflow")


def check_compute_psi_device(graph, kernels):
    """``compute_psi(..., kernels=<device backend>)`` equals the host's ``compute_psi`` in
    every layout, and its ``device`` arrays equal ``propagate.target_major`` of them (the
    gather's form); an antichain cap below the largest antichain raises the host's error."""
    host = kernels.to_host
    for layout in ("auto", "dense", "ragged"):
        want = compute_psi(graph, layout=layout)
        got = compute_psi(graph, layout=layout, kernels=kernels)
        assert repr(got) == repr(want)
        assert got.layout is want.layout and got.dtype == want.dtype
        assert want.device is None and got.device is not None
        for name in PSI_FIELDS + ("count",):
            a, b = getattr(want, name), getattr(got, name)
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_array_equal(a, b)
                assert a.dtype == b.dtype, name
        i64, i32 = np.zeros(1, np.int64), np.zeros(1, np.int32)
        W = got.sums.shape[-1]
        if got.layout.value == "dense":
            tm = propagate.target_major(got.L, got.max_antichain, got.count, i64, i32, i64,
                                        i64, got.sums.reshape(-1, W))
        else:
            tm = propagate.target_major(got.L, 0, np.zeros((1, 1), np.uint8), got.t_ptr,
                                        got.t_src, got.t_pair, got.sum_ptr, got.sums)
        for a, b in zip(tm, (got.device.tm_ptr, got.device.tm_src, got.device.tm_sum)):
            _same(a, b, host)
    A = want.max_antichain
    if A > 1:
        with pytest.raises(AntichainOverflowError) as on_host:
            compute_psi(graph, max_antichain=A - 1)
        with pytest.raises(AntichainOverflowError) as on_device:
            compute_psi(graph, max_antichain=A - 1, kernels=kernels)
        assert str(on_device.value) == str(on_host.value)


def check_psi_launches_do_not_grow(kernels, short=3, long=30):
    """Launches, syncs, operations and allocations of the device ``Psi`` are the same for a
    chain of ``short`` and of ``long`` operators (in a loop): none grows with the longest
    path."""
    counts = {}
    for n in (short, long):
        graph = chain_graph(n)
        L = graph.num_locations
        for layout in ("dense", "ragged"):
            before = _cuda.COUNTS.snapshot()
            with launch_items() as items:
                got = compute_psi(graph, layout=layout, kernels=kernels)
            counts[n, layout] = _cuda.COUNTS.since(before)
            fill = "closure_fill_dense_rows" if layout == "dense" else "closure_fill_rows"
            # a thread per source settles, a thread per (source, target) fills
            assert items == [("closure_settle", L), (fill, L * L)], items
            want = compute_psi(graph, layout=layout)
            np.testing.assert_array_equal(got.sums, want.sums)
    for layout in ("dense", "ragged"):
        assert counts[short, layout] == counts[long, layout], counts
        want = dict(PSI_BUILD_COUNTS[layout])
        if not getattr(kernels, "simulated", True):
            # on a device each copy of a result array to the host counts as a sync
            want["syncs"] += PSI_HOST_COPIES[layout]
        assert counts[short, layout] == want, (layout, counts)


#: Device work of one ``compute_psi(..., kernels=)`` without work-space overflows: the settle
#: (one launch, 14 operations, one sync, 7 allocations with the work spaces), the fill and
#: ``target_major_cuda``. Ragged adds to the dense layout's fill the pairs' offsets (six
#: operations, two allocations), the four arrays of its rows and the grouping by target.
PSI_BUILD_COUNTS = {"dense": {"launches": 2, "ops": 30, "syncs": 1, "allocs": 12},
                    "ragged": {"launches": 2, "ops": 47, "syncs": 1, "allocs": 18}}
#: Arrays ``compute_psi`` copies to the host after a device build (``sums``, ``count``; the
#: ragged layout's seven), each a counted sync on a device and none on the simulator.
PSI_HOST_COPIES = {"dense": 2, "ragged": 7}


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


def check_count_overflow(make, strict):
    """``make(graph)``'s tracker raises the reference's ``CountOverflowError`` for a count
    taken past int64 either way, and keeps its counts and frontiers."""
    from engine import CountOverflowError
    from engine.core.workload import example_graph

    graph = example_graph()
    loc = graph.source(1, 0)
    big = np.iinfo(np.int64).max
    ts = np.zeros((1, graph.m + graph.max_depth), np.int64)
    steps = [(big, None), (1, CountOverflowError), (-big, None)]
    if not strict:  # down to INT64_MIN, then one below
        steps += [(-big, None), (-1, None), (-1, CountOverflowError)]
    eng, ref = make(graph), ImpliedFrontierTracker(graph, strict=strict)
    for d, error in steps:
        args = (np.array([loc], np.int32), ts, np.array([d], np.int64))
        if error is None:
            eng.update(*args)
            ref.update(*args)
        else:
            before = (sorted(eng.counts.items()), eng.frontiers())
            for tr in (ref, eng):
                with pytest.raises(error, match="overflow 64 bits"):
                    tr.update(*args)
            assert (sorted(eng.counts.items()), eng.frontiers()) == before
        assert sorted(eng.counts.items()) == sorted(ref.counts.items())
        assert eng.frontiers() == ref.frontiers()


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


# -- batch intake on the device (issue 10, item 2) ------------------------------------------

def _raw_batch_strategy():
    """Hypothesis: ``(loc, ts, diff)`` NumPy columns for a graph, valid or broken on purpose
    (``corrupt``), in the dtypes and widths a caller may pass."""
    from hypothesis import strategies as st

    @st.composite
    def raw_batches(draw, graph, max_rows=6):
        L, m, K = graph.num_locations, graph.m, graph.max_depth
        W = m + K
        depth = [graph.depth(l) for l in range(L)]
        n = draw(st.integers(1, max_rows))
        w, pool = W, list(range(L))
        if K and draw(st.booleans()):  # narrower than W: every row of one depth
            d = draw(st.sampled_from(sorted(set(depth))))
            w, pool = m + d, [l for l in range(L) if depth[l] == d]
        loc = np.array([draw(st.sampled_from(pool)) for _ in range(n)], np.int64)
        hi = draw(st.sampled_from([3, 40, 1 << 20, 1 << 45]))  # 32-bit, 64-bit, argsort, lexsort
        ts = np.zeros((n, w), np.int64)
        for i in range(n):
            for c in range(min(w, m + depth[loc[i]])):
                ts[i, c] = draw(st.one_of(st.integers(0, 5), st.just(hi), st.integers(0, hi)))
        diff = np.array(draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n)), np.int64)
        for kind, i in draw(st.lists(st.tuples(
                st.sampled_from(["loc", "width", "range", "padding", "wide"]),
                st.integers(0, n - 1)), max_size=2)):
            if kind == "loc":
                loc[i] = draw(st.sampled_from([L, L + 5, -1, -(1 << 40)]))
            elif kind == "width":
                other = [l for l in range(L) if m + depth[l] != w]
                if other:
                    loc[i] = draw(st.sampled_from(other))
            elif kind == "range":
                ts[i, draw(st.integers(0, w - 1))] = draw(st.sampled_from(
                    [-1, -(1 << 62), 1 << 62, (1 << 63) - 1]))
            elif kind == "padding" and w == W:
                shallow = [l for l in range(L) if m + depth[l] < W]
                if shallow:
                    loc[i] = draw(st.sampled_from(shallow))
                    ts[i, draw(st.integers(m + depth[loc[i]], W - 1))] = draw(st.integers(1, 9))
            elif kind == "wide":
                ts = np.concatenate([ts, np.zeros((n, 1), np.int64)], axis=1)
                w += 1
        loc_t = draw(st.sampled_from([np.int32, np.int64, np.uint16]))
        if np.issubdtype(loc_t, np.unsignedinteger) and (loc < 0).any():
            loc_t = np.int64
        if np.iinfo(loc_t).max < loc.max() or np.iinfo(loc_t).min > loc.min():
            loc_t = np.int64
        ts_t = draw(st.sampled_from([np.int64, np.int64, np.int32]))
        if ts.size and (np.iinfo(ts_t).max < ts.max() or np.iinfo(ts_t).min > ts.min()):
            ts_t = np.int64
        diff_t = draw(st.sampled_from([np.int64, np.int32]))
        ts = ts.astype(ts_t)
        if draw(st.booleans()):  # strided columns take the same path
            ts = np.asfortranarray(ts)
        return loc.astype(loc_t), ts, diff.astype(diff_t)

    return raw_batches


raw_batches = _raw_batch_strategy()


def _depth(graph):
    return np.array([graph.depth(l) for l in range(graph.num_locations)], np.int64)


def host_intake(graph, loc, ts, diff):
    """The host path's result: ``consolidate(*batch_arrays(...))``, or the exception."""
    from engine.batched.batch_arrays import batch_arrays
    from engine.errors import BatchError
    try:
        return consolidate.consolidate(*batch_arrays(graph, _depth(graph), loc, ts, diff))
    except BatchError as e:
        return e


def check_intake_kernels(graph, batch, dev, host, *, tpb=None):
    """``intake_cuda`` (speculative widths, then none, then wrong ones) equals its CPU twin
    ``intake`` -- first bad rows, maxima, output -- and a valid batch equals the host path."""
    from gpu_kernels import intake as gi
    loc, ts, diff = batch
    m, L, W = graph.m, graph.num_locations, graph.m + graph.max_depth
    depth = _depth(graph)
    want = gi.intake(np.ascontiguousarray(loc), np.ascontiguousarray(ts), diff, depth, m, L, W)
    guesses = [None]
    if want.valid:
        guesses += [gi.speculative_widths(want.maxima, L, len(loc)),
                    np.zeros(W + 1, np.int64)]  # too narrow whenever a maximum is > 0
    for guess in guesses:
        got = gi.intake_cuda(dev(np.ascontiguousarray(loc)), dev(np.ascontiguousarray(ts)),
                             dev(diff), dev(depth), m, L, W, guess=guess, tpb=tpb)
        np.testing.assert_array_equal(want.bad, got.bad)
        assert want.valid == got.valid
        if want.valid:
            np.testing.assert_array_equal(want.maxima, got.maxima)
            for a, b in zip(want[2:], got[2:]):
                _same(a, b, host)
    oracle = host_intake(graph, loc, ts, diff)
    assert isinstance(oracle, Exception) != want.valid, (oracle, want.bad)
    if want.valid:
        for a, b in zip(oracle, want[2:]):
            _same(a, b, np.asarray)


def check_intake_backend(graph, batch, kernels):
    """``kernels.intake`` equals the host path on a raw batch: the same consolidated arrays,
    or the same exception type and message; a tracker that rejects the batch is unchanged
    and then agrees with the cpu backend's."""
    import pytest
    loc, ts, diff = batch
    assert kernels._device_columns(loc, ts, diff, graph.m + graph.max_depth) is not None
    want = host_intake(graph, loc, ts, diff)
    if isinstance(want, Exception):
        with pytest.raises(type(want)) as info:
            kernels.intake(graph, _depth(graph), loc, ts, diff)
        assert str(info.value) == str(want)
        eng = BatchedTracker(graph, kernels=kernels, strategy="edgewise")
        cpu = BatchedTracker(graph, strategy="edgewise")
        first = (np.zeros(1, np.int32), np.zeros((1, graph.m + graph.max_depth), np.int64),
                 np.ones(1, np.int64))
        eng.update_arrays(*first)
        cpu.update_arrays(*first)
        state = [kernels.to_host(a) for a in eng.table()] + [eng.frontiers()]
        with pytest.raises(type(want), match=None) as info:
            eng.update_arrays(loc, ts, diff)
        assert str(info.value) == str(want)
        after = [kernels.to_host(a) for a in eng.table()] + [eng.frontiers()]
        for a, b in zip(state[:3], after[:3]):
            np.testing.assert_array_equal(a, b)
        assert state[3] == after[3] == cpu.frontiers()
    else:
        got = kernels.intake(graph, _depth(graph), loc, ts, diff)
        for a, b in zip(want, got):
            _same(a, b, kernels.to_host)


#: Launches (Numba kernels), CuPy primitives, blocking syncs and device allocations of the
#: device intake of a valid batch once the packing guessed from the previous batch holds
#: (``CudaKernels.intake``): check_pack, run_values, run_tails, emit_runs; sort, 2 scans;
#: one read of the statistics; staging buffer, statistics, keys, workspace, output.
INTAKE_STEADY = {"launches": 4, "ops": 3, "syncs": 1, "allocs": 5}


def _churn(rng, graph, n, hi=6):
    depth = _depth(graph)
    W = graph.m + graph.max_depth
    loc = rng.integers(0, graph.num_locations, n).astype(np.int32)
    ts = rng.integers(0, hi, (n, W)).astype(np.int64)
    ts[:, graph.m:] *= np.arange(graph.max_depth)[None, :] < depth[loc][:, None]
    return loc, ts, rng.integers(-2, 3, n).astype(np.int64)


def check_intake_counts(graph, kernels, sizes, rng):
    """Per valid batch, after a first one sets the packing guess: exactly
    :data:`INTAKE_STEADY` launches, primitives, syncs and allocations, whatever ``n``."""
    from gpu_kernels import _cuda
    kernels.intake(graph, _depth(graph), *_churn(rng, graph, sizes[0]))
    seen = []
    for n in sizes:
        batch = _churn(rng, graph, n)
        before = _cuda.COUNTS.snapshot()
        got = kernels.intake(graph, _depth(graph), *batch)
        seen.append(_cuda.COUNTS.since(before))
        for a, b in zip(host_intake(graph, *batch), got):
            _same(a, b, kernels.to_host)
    assert all(s == INTAKE_STEADY for s in seen), seen


def check_pinned_pool_reuse(graph, kernels, n, rng):
    """Batches of one size reuse one pinned buffer; a larger one allocates a buffer twice
    the size (or more) and drops the outgrown one; smaller ones then reuse it."""
    pool = kernels.pool
    start = pool.allocations
    for _ in range(3):
        kernels.intake(graph, _depth(graph), *_churn(rng, graph, n))
    assert pool.allocations - start <= 1
    small = max(e.buffer.nbytes for e in pool.entries)
    kernels.intake(graph, _depth(graph), *_churn(rng, graph, small // 20 + 1))
    assert pool.allocations - start == 2
    assert len(pool.entries) == 1 and pool.entries[0].buffer.nbytes >= 2 * small
    for _ in range(3):
        kernels.intake(graph, _depth(graph), *_churn(rng, graph, n))
    assert pool.allocations - start == 2 and len(pool.entries) == 1


#: Device work of one steady-state batch of the whole engine (intake, merge, the new ``F``,
#: propagation, the changes out), per strategy: what ``last_timing`` reports and the docs
#: state. The intake's and the merge's checks are deferred to the batch's first transfer.
#: The closure strategy: intake 4 kernels + 3 primitives + 0 syncs, merge 2 + 1 + 0 (its
#: status carries the intake's words), frontier update 2 + 1 + 0, closure step 2 + 1 + 2
#: (its statistics with the deferred words, copied by the gather; then the changes);
#: edge-wise (on the host): the same up to the frontier update, then 0 + 1 + 2 bringing
#: ``F`` (with the deferred words, one concatenation) to the host.
BATCH_COUNTS = {
    "closure": {"launches": 10, "ops": 6, "syncs": 2},
    "edgewise": {"launches": 8, "ops": 6, "syncs": 2},
}


def check_batch_counts(kernels, strategy, graphs, sizes, rng):
    """Every steady-state churn batch costs at most :data:`BATCH_COUNTS` launches, primitives
    and syncs (less only when no implied frontier changed: then the closure step stops after
    its first read), whatever the graph (``L``) and the batch size (``B``), and some batch
    costs exactly that; the results equal the cpu backend's."""
    seen = []
    for graph in graphs:
        eng = BatchedTracker(graph, strategy=strategy, kernels=kernels)
        cpu = BatchedTracker(graph, strategy=strategy)
        for i, n in enumerate([sizes[0]] + list(sizes)):
            batch = _churn(rng, graph, n)
            for a, b in zip(cpu.update_arrays(*batch), eng.update_arrays(*batch)):
                np.testing.assert_array_equal(a, b)
            if i:  # the first batch sets the intake's packing guess
                t = eng.last_timing
                seen.append({c: t[c] for c in ("launches", "ops", "syncs", "allocs")})
    want = BATCH_COUNTS[strategy]
    assert all(s[c] <= want[c] for s in seen for c in want), seen
    assert any({c: s[c] for c in want} == want for s in seen), seen  # the bound is reached


def check_deferred_checks(kernels, strategy, rng):
    """The intake's and the merge's checks ride on the batch's first transfer: a later batch
    with a bad row, or a negative count in strict mode, still raises exactly the cpu
    backend's exception and changes nothing; one whose coordinates outgrow the packing guess
    is taken again and gives the cpu backend's changes."""
    from perf.workloads import build_graph, generate_graph
    graph = build_graph(generate_graph(3, 1))
    eng = BatchedTracker(graph, strategy=strategy, kernels=kernels, strict=True)
    cpu = BatchedTracker(graph, strategy=strategy, strict=True)

    def state(t):
        return sorted(t.counts.items()), t.frontiers()

    loc, ts, diff = _churn(rng, graph, 40)
    diff = np.abs(diff) + 1  # strict mode: positive counts to start from
    for a, b in zip(cpu.update_arrays(loc, ts, diff), eng.update_arrays(loc, ts, diff)):
        np.testing.assert_array_equal(a, b)
    before = state(eng)
    bad_loc = loc.copy()
    bad_loc[7] = graph.num_locations + 3
    negative = (loc[:3], ts[:3], -diff[:3] - 5)
    for batch in ((bad_loc, ts, diff), negative):
        with pytest.raises(Exception) as want:
            cpu.update_arrays(*batch)
        with pytest.raises(type(want.value)) as got:
            eng.update_arrays(*batch)
        assert str(got.value) == str(want.value)
        assert state(eng) == before
    big = ts.copy()
    big[:, 0] += 1 << 20  # epochs far above the guessed field
    for a, b in zip(cpu.update_arrays(loc, big, diff), eng.update_arrays(loc, big, diff)):
        np.testing.assert_array_equal(a, b)
    assert state(eng) == state(cpu)


# -- the batched rollback solver on the device (engine.rollback.cuda) ---------------------------

def _random_down(rng, m, ne, ni, p=0.5):
    """``bool[m, NE, NI]``: random downward-closed rows (the downward closure of random cells)."""
    from engine.rollback.masks import downclose
    return downclose(rng.random((m, ne, ni)) < p / max(1, ne * ni) * 3)


def check_rollback_closures(rng, dev, host, *, tpb=None):
    """``close_cuda`` up and down against ``upclose``/``downclose`` on random masks."""
    from engine.rollback.masks import downclose, upclose
    from gpu_kernels import rollback as rk
    for m, ne, ni in ((1, 1, 1), (3, 2, 3), (2, 4, 1), (2, 3, 4)):
        x = rng.random((m, ne, ni)) < 0.2
        for down, twin in ((False, upclose), (True, downclose)):
            d = dev(x.astype(np.uint8).reshape(-1))
            rk.close_cuda(d, m, ne, ni, down=down, tpb=tpb)
            np.testing.assert_array_equal(host(d).reshape(m, ne, ni).astype(bool), twin(x))


def check_rollback_round_kernels(problem, guard, rng, *, simulated, tpb=None):
    """The kernels of one round, on random frontiers, against their NumPy twins: ``bad_init``
    and ``rows_violated`` against C5 | C3 | C4 (or S2) of ``RollbackArrays``; ``fc_step``
    against ``RollbackArrays.fc_step``; the upward closure, ``select`` and ``write`` against
    ``largest_available(f & ~upclose(bad))``, with the changed flag."""
    from engine.rollback.problem import Guard
    from engine.rollback.masks import RollbackArrays, upclose
    from engine.rollback.cuda import DeviceRollback
    from gpu_kernels import rollback as rk
    guard = Guard(guard)
    dr = DeviceRollback(problem, guard, simulated=simulated, tpb=tpb)
    a = RollbackArrays(problem, guard)
    n, ne, ni = a.shape
    xp = dr.xp
    host = lambda d: np.asarray(_cuda.to_host(d))  # noqa: E731
    f, fc = _random_down(rng, n, ne, ni), _random_down(rng, n, ne, ni, 0.8)
    flat = lambda x: xp.asarray(x.astype(np.uint8).reshape(-1))  # noqa: E731
    df, dfc = flat(f), flat(fc)
    flag = xp.zeros(1, xp.int64)
    # C5, C3, C4 / S2
    bad = xp.zeros(n * a.nt, xp.uint8)
    rk.bad_init_cuda(dr.inflight, dr.notified, dfc, bad, simple=guard is Guard.SIMPLE, tpb=tpb)
    rk.rows_violated_cuda(dr.gen_ptr, dr.gen_at, dr.target, df, bad, dr.nrows, tpb=tpb)
    want = a.inflight | a.c3.violated(f.reshape(-1))
    want |= a.c4.violated(f.reshape(-1)) if guard is Guard.FULL else a.notified & ~fc.reshape(-1)
    np.testing.assert_array_equal(host(bad).astype(bool), want)
    # one step of f_c
    out = xp.zeros(n * a.nt, xp.uint8)
    rk.fc_step_cuda(dfc, df, out, dr.edges, a.nt, ni, flag, 5, tpb=tpb)
    step = a.fc_step(fc, f)
    np.testing.assert_array_equal(host(out).reshape(n, ne, ni).astype(bool), step)
    assert int(host(flag)[0]) == (5 if (step != fc).any() else 0)
    # the shrink: up(bad), then the largest available frontier within f minus it
    fixed = {}
    if problem.n and rng.random() < 0.3:  # a processor fixed as decide fixes one
        fixed = {int(rng.integers(problem.n)): ((0, ni - 1),)}
    largest = a.availability(fixed)
    av = dr.avail_arrays(fixed)
    rk.close_cuda(bad, n, ne, ni, down=False, tpb=tpb)
    np.testing.assert_array_equal(host(bad).reshape(n, ne, ni).astype(bool),
                                  upclose(want.reshape(n, ne, ni)))
    pick = xp.zeros(n, xp.int64)
    rk.select_cuda(df, bad, av, pick, n, ne, ni, tpb=tpb)
    rk.write_cuda(df, bad, av, pick, ne, ni, flag, 6, tpb=tpb)
    new = largest(f & ~upclose(want.reshape(n, ne, ni)))
    np.testing.assert_array_equal(host(df).reshape(n, ne, ni).astype(bool), new)
    if (new != f).any():
        assert int(host(flag)[0]) == 6


def check_rollback_images(problem, rng, *, simulated, tpb=None):
    """``image_scatter`` + downward closure against ``need_image`` and ``_steps_image``;
    ``gather_src`` against the OR over each processor's out-edges; ``pull_dst`` against
    ``dem |= demp[dst]``; ``tops`` against ``maximal_rows``."""
    from engine.rollback.problem import Guard
    from engine.rollback.masks import RollbackArrays, _rank_passes, maximal_rows
    from engine.rollback.cuda import DeviceRollback
    from gpu_kernels import rollback as rk
    dr = DeviceRollback(problem, Guard.SIMPLE, simulated=simulated, tpb=tpb)
    a = RollbackArrays(problem, Guard.SIMPLE)
    n, ne, ni = a.shape
    E, nt, B = len(a.src), a.nt, 2
    xp = dr.xp
    host = lambda d: np.asarray(_cuda.to_host(d))  # noqa: E731
    if E:
        x = _random_down(rng, E * B, ne, ni).reshape(E, B, ne, ni)
        for use_steps, twin in ((True, a._steps_image), (False, a.need_image)):
            out = xp.zeros(E * B * nt, xp.uint8)
            rk.image_scatter_cuda(xp.asarray(x.astype(np.uint8).reshape(-1)), out, dr.edges, B,
                                  nt, ni, use_steps=use_steps, tpb=tpb)
            rk.close_cuda(out, E * B, ne, ni, down=True, tpb=tpb)
            np.testing.assert_array_equal(host(out).reshape(E, B, ne, ni).astype(bool), twin(x))
        acc0 = _random_down(rng, n * B, ne, ni, 0.2).reshape(n, B, ne, ni)
        acc = xp.asarray(acc0.astype(np.uint8).reshape(-1))
        rk.gather_src_cuda(xp.asarray(x.astype(np.uint8).reshape(-1)), acc, dr.edges, B, nt,
                           tpb=tpb)
        want = acc0.copy()
        for j in _rank_passes(a.src):
            want[a.src[j]] |= x[j]
        np.testing.assert_array_equal(host(acc).reshape(n, B, ne, ni).astype(bool), want)
        dem = xp.asarray(x.astype(np.uint8).reshape(-1))
        flag = xp.zeros(1, xp.int64)
        rk.pull_dst_cuda(dem, xp.asarray(want.astype(np.uint8).reshape(-1)), dr.edges, B, nt,
                         flag, 3, tpb=tpb)
        grown = x | want[a.dst]
        np.testing.assert_array_equal(host(dem).reshape(E, B, ne, ni).astype(bool), grown)
        assert int(host(flag)[0]) == (3 if (grown != x).any() else 0)
    r = _random_down(rng, n, ne, ni)
    top = xp.zeros(n * nt, xp.uint8)
    rk.tops_cuda(xp.asarray(r.astype(np.uint8).reshape(-1)), top, ne, ni, tpb=tpb)
    got = host(top).reshape(n, ne, ni)
    assert [tuple((int(e), int(i)) for e, i in zip(*np.nonzero(got[p]))) for p in range(n)] \
        == maximal_rows(r)


def check_rollback_c4_rows(problem, *, simulated, tpb=None):
    """C4's rows by the device's reverse reachability equal the cpu backend's."""
    from engine.rollback.problem import Guard
    from engine.rollback.masks import RollbackArrays
    from engine.rollback.cuda import DeviceRollback
    dev = DeviceRollback(problem, Guard.FULL, simulated=simulated, tpb=tpb).arrays.c4
    cpu = RollbackArrays(problem, Guard.FULL).c4
    for name in ("target", "gen_row", "gen_at"):
        np.testing.assert_array_equal(getattr(dev, name), getattr(cpu, name))


def check_rollback_solver(problem, guard, *, simulated):
    """``solve_batched(backend="cuda")`` equals the reference solver."""
    from engine.rollback.problem import solve
    from engine.rollback.batched import solve_batched
    from engine.rollback.cuda import RollbackStats
    stats = RollbackStats()
    answer = solve_batched(problem, guard, "cuda", simulated=simulated, stats=stats)
    assert answer == solve(problem, guard)
    assert stats.backend.startswith("cuda") and stats.rounds and min(stats.rounds) >= 1


#: Device work of one fixed-point round (with C3/C4 rows): launches and one flag read.
ROLLBACK_ROUND = {"simple": {"launches": 7, "ops": 0, "syncs": 1, "allocs": 0},
                  "full": {"launches": 6, "ops": 0, "syncs": 1, "allocs": 0}}


def rollback_chain(n: int, ne: int, ni: int):
    """A chain ``0 -> 1 -> ... -> n-1`` whose drops cascade: a message in flight into 1 at the
    top time, and each processor consumed a message at the top time from its predecessor, so
    the fixed point takes about ``n`` rounds (one processor more each round); a notification
    at the end gives C4 rows."""
    from engine.rollback.problem import EdgeDecl, RollbackProblem
    top = (ne - 1, ni - 1)
    edges = [EdgeDecl("in", None, 0)] + [EdgeDecl("edge", k, k + 1) for k in range(n - 1)]
    problem = RollbackProblem(ne, ni, [False] * n, edges)
    for k in range(1, n):
        problem.consumed[k] = {top}
    problem.inflight[1] = {top}
    problem.notified[n - 1] = {(0, 0)}
    problem.check()
    return problem


def check_rollback_round_counts(sizes, *, simulated):
    """Every round of the fixed point costs the same launches and syncs (:data:`ROLLBACK_ROUND`)
    on cascading chains of every size (``sizes``: ``(n, NE, NI)``), while the rounds grow with
    ``n``; the answers equal the cpu backend's."""
    from engine.rollback.problem import Guard
    from engine.rollback.batched import solve_batched
    from engine.rollback.cuda import RollbackStats
    for guard in Guard:
        seen, rounds = [], []
        for n, ne, ni in sizes:
            problem = rollback_chain(n, ne, ni)
            stats = RollbackStats()
            got = solve_batched(problem, guard, "cuda", simulated=simulated, stats=stats)
            assert got == solve_batched(problem, guard, "cpu")
            assert sum(stats.rounds) == len(stats.per_round)
            seen += stats.per_round
            rounds.append(sum(stats.rounds))
        assert rounds == sorted(rounds) and rounds[-1] >= rounds[0] + len(sizes) - 1, rounds
        assert all(s == ROLLBACK_ROUND[guard.value] for s in seen), (guard, seen)
