"""The device intake on Numba's simulator (issue 10, item 2): validation inside the packing
kernel and the key-only consolidation equal the host path -- ``consolidate(*batch_arrays())``
-- on Hypothesis batches, valid and broken in every way ``batch_arrays`` rejects (same
exception, same message, tracker unchanged); the pinned pool reuses its buffers; a valid
batch costs a fixed number of launches and syncs whatever its size."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cuda_cases as cc
from engine.batched.cuda import CudaKernels, PinnedPool
from engine.core.workload import example_graph
from strategies import examples, random_graphs, structured_graphs

graphs = st.one_of(random_graphs(max_ops=3, max_depth=2), structured_graphs(max_ops=6))
KERNELS = CudaKernels(simulated=True)


def same(a):
    return a


@examples(25)
@given(data=st.data())
def test_intake_kernels_equal_twin_and_host(data):
    """Three threads per block: the per-block shared reduction and partial blocks run."""
    graph = data.draw(graphs)
    cc.check_intake_kernels(graph, data.draw(cc.raw_batches(graph)), same, np.asarray, tpb=3)


@examples(40)
@given(data=st.data())
def test_intake_twin_equals_host(data):
    """The CPU twin alone, on more and larger batches (it is fast)."""
    from gpu_kernels import intake as gi
    graph = data.draw(graphs)
    loc, ts, diff = data.draw(cc.raw_batches(graph, max_rows=40))
    want = cc.host_intake(graph, loc, ts, diff)
    got = gi.intake(np.ascontiguousarray(loc), np.ascontiguousarray(ts), diff, cc._depth(graph),
                    graph.m, graph.num_locations, graph.m + graph.max_depth)
    assert got.valid != isinstance(want, Exception)
    if got.valid:
        for a, b in zip(want, got[2:]):
            cc._same(a, b, np.asarray)


@examples(30)
@given(data=st.data())
def test_backend_intake_equals_host_path(data):
    graph = data.draw(graphs)
    cc.check_intake_backend(graph, data.draw(cc.raw_batches(graph)), KERNELS)


def test_intake_staging_in_chunks():
    """Chunks of 16 bytes: every column is filled by the thread pool in several chunks and
    copied chunk by chunk."""
    k = CudaKernels(simulated=True)
    k.stage_chunk = 16
    graph = example_graph()
    cc.check_intake_counts(graph, k, [5, 11], np.random.default_rng(3))


def test_intake_launches_and_syncs_do_not_depend_on_n():
    cc.check_intake_counts(example_graph(), CudaKernels(simulated=True), [2, 7, 13],
                           np.random.default_rng(4))


def test_pinned_pool_reuses_buffers_across_batches():
    k = CudaKernels(simulated=True)
    k.pool.min_bytes = 256
    cc.check_pinned_pool_reuse(example_graph(), k, 4, np.random.default_rng(5))


class _Copy:
    """A copy still in flight until ``done`` is set."""

    done = False


def test_pinned_pool_waits_for_pending_copies():
    pool = PinnedPool(lambda n: np.empty(n, np.uint8), min_bytes=64)
    a = pool.take(100)
    copy = _Copy()
    pool.release(a, copy)
    b = pool.take(100)  # a's copy is pending: a new buffer
    assert b is not a and pool.allocations == 2
    pool.release(b, copy)
    copy.done = True
    assert pool.take(60) in (a, b) and pool.allocations == 2
    c = pool.take(300)  # outgrows the idle buffer, which is dropped
    assert c.buffer.nbytes == 512 and pool.allocations == 3 and len(pool.entries) == 2


def test_host_path_inputs_keep_their_messages():
    """Lists, ragged rows, floats and uint64 go through ``batch_arrays`` unchanged."""
    from engine.errors import BatchError, TimestampRangeError, TimestampWidthError
    g = example_graph()
    K = KERNELS
    d = cc._depth(g)
    assert K._device_columns([0], [(0, 0)], [1], 2) is None
    cases = [([0, 1], [(0,), (0, 0, 0)], [1, 1], TimestampWidthError),
             (np.zeros(1, np.int32), np.array([[2 ** 63, 0]], np.uint64), np.ones(1), TimestampRangeError),
             (np.zeros(1, np.int32), np.zeros((1, 2), np.int64), np.ones(1, np.uint64) << np.uint64(63),
              BatchError)]
    for loc, ts, diff, exc in cases:
        want = cc.host_intake(g, loc, ts, diff)
        assert isinstance(want, exc)
        with pytest.raises(exc) as info:
            K.intake(g, d, loc, ts, diff)
        assert str(info.value) == str(want)
