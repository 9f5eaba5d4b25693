"""Structured Streaming: delta files processed with ``availableNow`` end with the frontiers of
the batch application of the same deltas."""

import pyarrow.parquet as pq
import pytest

from spark_plugin import DeltaSink, FrontierService, read_delta_stream, start_delta_stream
from spark_plugin.executor import to_wire

from spark_cases import full_state, loop_graph, random_rounds, reference_states, rows_table, state

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def graph():
    return loop_graph()


@pytest.fixture(scope="module")
def rounds(graph):
    return random_rounds(graph, rounds=5, seed=3)


def batch_service(graph, rounds, producers):
    """The batch application: every file's rows applied directly, in order."""
    svc = FrontierService(graph)
    for r, rows in enumerate(rounds):
        for i, p in enumerate(producers):
            svc.apply(rows_table(rows[i::len(producers)], p, r, svc.width))
    return svc


def test_files_carrying_their_identity(spark, graph, rounds, tmp_path):
    """One Parquet file per (producer, seq), three files per micro-batch: micro-batch
    boundaries fall inside rounds, and exactly-once holds per file."""
    producers = ["left", "right"]
    src = tmp_path / "deltas"
    src.mkdir()
    for r, rows in enumerate(rounds):
        for i, p in enumerate(producers):
            table = to_wire(rows_table(rows[i::len(producers)], p, r, 2))
            pq.write_table(table, src / f"r{r:03d}-{p}.parquet")
    svc = FrontierService(graph)
    sink = DeltaSink(svc)
    query = start_delta_stream(read_delta_stream(spark, str(src), max_files_per_trigger=3), sink,
                               str(tmp_path / "checkpoint"), available_now=True)
    query.awaitTermination(120)
    assert query.exception() is None
    assert sink.batches == 4                                   # ceil(10 files / 3)
    expected = batch_service(graph, rounds, producers)
    assert state(svc) == state(expected) == reference_states(graph, rounds)[-1]
    assert svc.status().next_seq == {p: len(rounds) for p in producers}
    assert not svc.gaps()


def test_a_stamping_sink_uses_the_micro_batch_id(spark, graph, rounds, tmp_path):
    """Raw delta files; the sink stamps each micro-batch (stream, batch_id). Restarting the
    query from its checkpoint with a restored service continues where it stopped."""
    src = tmp_path / "raw"
    src.mkdir()
    for r, rows in enumerate(rounds[:3]):
        t = to_wire(rows_table(rows, "unused", r, 2)).select(["loc", "ts", "diff"])
        pq.write_table(t, src / f"r{r:03d}.parquet")
    svc = FrontierService(graph)
    checkpoint = str(tmp_path / "checkpoint")

    def run(service):
        sink = DeltaSink(service, producer="stream")
        q = start_delta_stream(read_delta_stream(spark, str(src), stamped=True,
                                                 max_files_per_trigger=1),
                               sink, checkpoint, available_now=True)
        q.awaitTermination(120)
        assert q.exception() is None
        return sink

    assert run(svc).batches == 3
    assert state(svc) == reference_states(graph, rounds)[2]
    svc.save(tmp_path / "saved")
    for r, rows in enumerate(rounds[3:], start=3):
        t = to_wire(rows_table(rows, "unused", r, 2)).select(["loc", "ts", "diff"])
        pq.write_table(t, src / f"r{r:03d}.parquet")
    restored = FrontierService.restore(tmp_path / "saved", graph)
    assert run(restored).batches == 2
    assert restored.status().next_seq == {"stream": len(rounds)}
    assert state(restored) == reference_states(graph, rounds)[-1]
    assert full_state(restored)[1:] == ({"stream": 5}, {}, 0)
