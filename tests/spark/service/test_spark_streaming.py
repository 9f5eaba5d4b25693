"""Structured Streaming: delta files processed with ``availableNow`` end with the frontiers of
the batch application of the same deltas."""

import pyarrow.parquet as pq
import pytest

from spark_plugin import DeltaSink, FrontierService, read_delta_stream, start_delta_stream
from spark_plugin.service.executor import to_wire

from spark_cases import full_state, reference_states, rows_table, state

pytestmark = pytest.mark.spark


#: the ``rounds`` fixture (conftest.py): 5 random delta rounds, seed 3
ROUNDS = (5, 3)


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


def test_units_in_parts_and_retried_copies_across_micro_batches(spark, graph, rounds, tmp_path):
    """Issue 15.1-2 end to end: a (producer, seq) written as two part files lands in two
    micro-batches and is applied once complete; a retried copy of a file counts once whether it
    shares the micro-batch with its original or comes later; a file without part columns is
    a one-part unit. File order (modification times) fixes the micro-batch boundaries."""
    import os

    import pyarrow as pa

    src = tmp_path / "deltas"
    src.mkdir()

    def part_file(name, r, rows, part=None, parts=None):
        t = to_wire(rows_table(rows, "p", r, 2))
        if part is not None:
            t = t.append_column("part", pa.array([part] * t.num_rows, pa.int64())).append_column(
                "parts", pa.array([parts] * t.num_rows, pa.int64()))
        pq.write_table(t, src / name)
        return name

    halves = [(rows[:len(rows) // 2], rows[len(rows) // 2:]) for rows in rounds[:3]]
    order = [  # two files per micro-batch: (a, b copy of a), (c, d), (e, f copy of c), (g)
        part_file("a.parquet", 0, halves[0][0], 0, 2),
        part_file("b.parquet", 0, halves[0][0], 0, 2),
        part_file("c.parquet", 0, halves[0][1], 1, 2),
        part_file("d.parquet", 1, halves[1][1], 1, 2),
        part_file("e.parquet", 1, halves[1][0], 0, 2),
        part_file("f.parquet", 0, halves[0][1], 1, 2),
        part_file("g.parquet", 2, rounds[2])]
    for i, name in enumerate(order):
        os.utime(src / name, (1_700_000_000 + 10 * i,) * 2)
    svc = FrontierService(graph)
    sink = DeltaSink(svc)
    query = start_delta_stream(read_delta_stream(spark, str(src), max_files_per_trigger=2), sink,
                               str(tmp_path / "checkpoint"), available_now=True)
    query.awaitTermination(120)
    assert query.exception() is None
    assert sink.batches == 4
    assert svc.status().next_seq == {"p": 3} and svc.status().duplicates == 2
    assert state(svc) == reference_states(graph, rounds)[2]
