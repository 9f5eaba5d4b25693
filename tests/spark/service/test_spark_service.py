"""FrontierService: exactly-once per (producer, seq), gaps, rollback, publication, save/restore.

No Spark here: tables are built with pyarrow; the reference tracker is the oracle.
"""

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine import (BatchError, CountOverflowError, ImpliedFrontierTracker, NegativeCountError,
                    TimestampRangeError, TimestampWidthError, UnknownLocationError)
from engine.core.workload import example_graph
from spark_plugin import (FrontierService, MissingBatchError, SchemaError, ServiceStateError,
                          SubscriberError, delta_schema, delta_table, read_log)
from spark_plugin.errors import DeliveryConflictError
from spark_plugin.service.executor import to_wire

from spark_cases import (full_state, loop_graph, reference_states, rows_table,
                         state)


#: the ``rounds`` fixture (conftest.py): 6 random delta rounds, seed 1
ROUNDS = (6, 1)


def width(graph):
    return graph.m + graph.max_depth


def test_apply_matches_the_reference_round_by_round(graph, rounds):
    svc = FrontierService(graph)
    expected = reference_states(graph, rounds)
    replayed = [set() for _ in range(graph.num_locations)]
    for r, rows in enumerate(rounds):
        res = svc.apply(rows_table(rows, "p", r, width(graph)))
        assert res.applied == [("p", r)] and not res.duplicates and not res.held
        assert state(svc) == expected[r]
        for row in res.changes.to_pylist():
            t = tuple(row["ts"][:graph.width(row["loc"])])
            (replayed[row["loc"]].add if row["diff"] > 0 else replayed[row["loc"]].remove)(t)
            assert (row["producer"], row["seq"]) == ("p", r)
        assert [sorted(s) for s in replayed] == svc.frontiers()
    assert svc.status().applied == len(rounds)


def test_backends_agree(graph, rounds):
    services = [FrontierService(graph, backend=b) for b in ("cpu", "reference", "timely")]
    for r, rows in enumerate(rounds):
        results = [s.apply(rows_table(rows, "p", r, width(graph))) for s in services]
        assert len({state(s).__repr__() for s in services}) == 1
        assert len({res.changes.to_pylist().__repr__() for res in results}) == 1


def test_a_duplicate_is_ignored_and_counted(graph, rounds):
    svc = FrontierService(graph)
    svc.apply(rows_table(rounds[0], "p", 0, width(graph)))
    before = state(svc)
    res = svc.apply(rows_table(rounds[0], "p", 0, width(graph)))
    assert res.duplicates == [("p", 0)] and res.applied == [] and res.changes.num_rows == 0
    # different content under an applied (producer, seq) is a conflict, not a duplicate
    with pytest.raises(DeliveryConflictError, match=r"part 0 of \(producer 'p', seq 0\) "
                                                    r"arrived again with other content"):
        svc.apply(rows_table(rounds[1], "p", 0, width(graph)))
    assert state(svc) == before
    assert svc.status().duplicates == 1 and svc.status().next_seq == {"p": 1}


def test_a_gap_is_held_reported_and_filled_in_order(graph, rounds, caplog):
    svc = FrontierService(graph)
    expected = reference_states(graph, rounds)
    seen_gaps = []
    svc.subscribe_gaps(seen_gaps.append)
    svc.apply(rows_table(rounds[0], "p", 0, width(graph)))
    with caplog.at_level(logging.WARNING, logger="spark_plugin.service.frontier_service"):
        res = svc.apply(pa.concat_tables([rows_table(rounds[3], "p", 3, width(graph)),
                                          rows_table(rounds[2], "p", 2, width(graph))]))
    assert res.applied == [] and res.held == [("p", 2), ("p", 3)]
    assert state(svc) == expected[0]
    [gap] = svc.gaps()
    assert (gap.producer, gap.expected, gap.held, gap.missing) == ("p", 1, (2, 3), ((1, 1),))
    assert "producer 'p' is missing seq 1 (holding 2-3)" in caplog.text
    assert seen_gaps == [[gap]]
    with pytest.raises(MissingBatchError, match=r"producer 'p': seq 1\b") as exc:
        svc.check_complete()
    assert exc.value.missing == {"p": [(1, 1)]}
    # a held batch delivered again is a duplicate
    assert svc.apply(rows_table(rounds[2], "p", 2, width(graph))).duplicates == [("p", 2)]
    res = svc.apply(rows_table(rounds[1], "p", 1, width(graph)))
    assert res.applied == [("p", 1), ("p", 2), ("p", 3)] and not res.gaps
    assert state(svc) == expected[3]
    svc.check_complete()
    with pytest.raises(MissingBatchError, match=r"producer 'p': seq 4-5; producer 'q': seq 0"):
        svc.check_complete(expected={"p": 5, "q": 0})


def test_one_table_of_many_producers_in_any_row_order(graph, rounds):
    """Groups are formed by (producer, seq) whatever the row order and applied in seq order."""
    W = width(graph)
    parts = [rows_table(rounds[r][i::2], f"task-{i}", r, W) for r in range(3) for i in (0, 1)]
    table = pa.concat_tables(parts)
    shuffled = table.take(np.random.default_rng(7).permutation(table.num_rows))
    svc = FrontierService(graph)
    res = svc.apply(shuffled)
    assert res.applied == [(f"task-{i}", r) for i in (0, 1) for r in range(3)]
    assert state(svc) == reference_states(graph, rounds)[2]


def test_spark_wire_types_are_accepted(graph, rounds):
    W = width(graph)
    canonical = rows_table(rounds[0], "p", 0, W)
    wire = to_wire(canonical)
    wide = wire.set_column(0, "loc", pc.cast(wire.column("loc"), pa.int64()))
    for table in (wire, wide, to_wire(canonical, large_types=True)):
        svc = FrontierService(graph)
        svc.apply(table)
        assert state(svc) == reference_states(graph, rounds[:1])[0]


def _bad_tables(graph):
    W = width(graph)
    good = delta_table([3, 0], [[0, 1], [2, 0]], [1, 1], "p", 0)

    def with_col(name, arr):
        return good.set_column(good.schema.get_field_index(name), name, arr)

    return {
        "missing column": (good.drop_columns(["seq"]), SchemaError,
                           r"no column 'seq' .*columns present: 'loc', 'ts', 'diff', 'producer'"),
        "float loc": (with_col("loc", pa.array([3.0, 0.0])), SchemaError,
                      r"column 'loc' has type double.*columns present"),
        "string diff": (with_col("diff", pa.array(["1", "1"])), SchemaError, r"column 'diff'"),
        "unknown location": (delta_table([3, 12], [[0, 1], [2, 0]], [1, 1], "p", 0),
                             UnknownLocationError, r"row 1: location 12 does not exist"),
        "wide fixed-size ts": (delta_table([3], [[0, 1, 0]], [1], "p", 0), TimestampWidthError,
                               r"3 coordinates, expected 2"),
        "wide list ts": (with_col("ts", pa.array([[0, 1], [2, 0, 0]], pa.list_(pa.int64()))),
                         TimestampWidthError, r"row 1 \(target scope.*3 coordinates, expected 2"),
        "non-zero padding": (delta_table([3, 0], [[0, 1], [2, 5]], [1, 1], "p", 0),
                             TimestampWidthError, r"row 1 .*non-zero unused counters"),
        "negative coordinate": (delta_table([3, 0], [[0, -1], [2, 0]], [1, 1], "p", 0),
                                TimestampRangeError, r"row 0 .*outside \[0, 2\*\*62\)"),
        "null diff": (with_col("diff", pa.array([1, None], pa.int64())), BatchError,
                      r"row 1: column 'diff' is null"),
        "negative seq": (delta_table([3, 0], [[0, 1], [2, 0]], [1, 1], "p", [0, -1]), BatchError,
                         r"row 1: seq -1 is negative"),
        "empty producer": (delta_table([3, 0], [[0, 1], [2, 0]], [1, 1], ["p", ""], 0),
                           BatchError, r"row 1: column 'producer' is empty"),
        "not a table": ([1, 2, 3], SchemaError, r"expected a pyarrow Table"),
    }


@pytest.mark.parametrize("case", sorted(_bad_tables(loop_graph())))
def test_bad_input_raises_a_named_error_and_changes_nothing(graph, rounds, case):
    table, error, message = _bad_tables(graph)[case]
    svc = FrontierService(graph)
    svc.apply(rows_table(rounds[0], "p", 0, width(graph)))
    svc.apply(rows_table(rounds[2], "p", 2, width(graph)))   # held
    before = full_state(svc)
    with pytest.raises(error, match=message):
        svc.apply(table)
    assert full_state(svc) == before


def test_strict_rejection_rolls_back_the_whole_call(graph):
    svc = FrontierService(graph, strict=True)
    loc = graph.target(2, 0)
    svc.apply(delta_table([loc], [[0, 0]], [1], "a", 0))
    before = full_state(svc)
    table = pa.concat_tables([delta_table([loc], [[1, 0]], [2], "a", 1),      # fine
                              delta_table([loc], [[0, 0]], [-2], "b", 0)])    # 1 - 2 < 0
    with pytest.raises(NegativeCountError, match=r"delta batch \(producer 'b', seq 0\).*"
                                                 r"nothing of this apply call was applied"):
        svc.apply(table)
    assert full_state(svc) == before


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_gh23_a_unit_summing_outside_int64_is_refused_with_nothing_applied(graph, backend):
    """Issue 23, item 2: one delivery unit with two rows of 2**62 at one pointstamp was
    accepted (the count wrapped to -2**63 and the pointstamp left the frontier). The service
    now raises CountOverflowError naming the unit and the pointstamp and applies nothing of
    the call -- whether the rows are in one part or in two parts that only overflow
    together; the unit can then be delivered correctly."""
    big = 1 << 62
    loc = graph.target(2, 0)
    svc = FrontierService(graph, backend=backend)
    svc.apply(delta_table([loc], [[0, 0]], [1], "a", 0))
    before = full_state(svc)
    one_part = pa.concat_tables([delta_table([loc], [[1, 0]], [2], "b", 0),     # fine
                                 delta_table([loc, loc], [[0, 0], [0, 0]], [big, big], "a", 1)])
    with pytest.raises(CountOverflowError,
                       match=rf"producer 'a', seq 1.*\({loc}, \(0, 0\)\).*sum to {1 << 63}"):
        svc.apply(one_part)
    assert full_state(svc) == before
    halves = [delta_table([loc], [[0, 0]], [big], "a", 1).append_column(
        "part", pa.array([k], pa.int64())).append_column("parts", pa.array([2], pa.int64()))
        for k in (0, 1)]
    with pytest.raises(CountOverflowError, match=rf"\({loc}, \(0, 0\)\).*sum to {1 << 63}"):
        svc.apply(pa.concat_tables(halves))
    assert full_state(svc) == before
    svc.apply(delta_table([loc, loc], [[0, 0], [0, 0]], [big, -big], "a", 1))
    assert svc.status().next_seq == {"a": 2}


def test_subscribers_and_the_parquet_log(graph, rounds, tmp_path):
    svc = FrontierService(graph, log_path=tmp_path / "log")
    got = []
    unsubscribe = svc.subscribe(got.append)
    results = [svc.apply(rows_table(rows, "p", r, width(graph))) for r, rows in enumerate(rounds)]
    published = [r.changes for r in results if r.changes.num_rows]
    assert got == published
    assert all(t.schema == delta_schema(width(graph)) for t in got)
    assert len(svc.log_files()) == len(published)
    assert read_log(tmp_path / "log").equals(pa.concat_tables(published))
    unsubscribe()
    svc.apply(rows_table(rounds[0], "p", len(rounds), width(graph)))
    assert len(got) == len(published)
    assert len(svc.log_files()) == len(published) + 1
    # a restarted service appends after the existing files
    svc.close()
    again = FrontierService(graph, log_path=tmp_path / "log")
    again.apply(rows_table(rounds[0], "p", 0, width(graph)))
    assert again.log_files()[-1].name == f"changes-{len(published) + 1:08d}.parquet"


def test_a_failing_subscriber_is_reported_after_the_batch_is_applied(graph, rounds):
    svc = FrontierService(graph)

    def broken(changes):
        raise RuntimeError("downstream is down")

    svc.subscribe(broken)
    with pytest.raises(SubscriberError, match=r"downstream is down.*\('p', 0\) were applied"):
        svc.apply(rows_table(rounds[0], "p", 0, width(graph)))
    assert svc.status().next_seq == {"p": 1}
    assert state(svc) == reference_states(graph, rounds[:1])[0]


def test_save_and_restore_round_trip(graph, rounds, tmp_path):
    W = width(graph)
    svc = FrontierService(graph)
    svc.apply(rows_table(rounds[0], "p", 0, W))
    svc.apply(rows_table(rounds[0], "p", 0, W))                  # a duplicate
    svc.apply(rows_table(rounds[2], "p", 2, W))                  # held
    svc.apply(rows_table(rounds[0], "q", 0, W))
    svc.save(tmp_path / "state")
    svc.save(tmp_path / "state")                                 # replaces atomically
    back = FrontierService.restore(tmp_path / "state", graph)
    assert full_state(back) == full_state(svc)
    for s in (svc, back):
        res = s.apply(rows_table(rounds[1], "p", 1, W))
        assert res.applied == [("p", 1), ("p", 2)]
    assert full_state(back) == full_state(svc)
    ref = FrontierService.restore(tmp_path / "state", graph, backend="reference")
    assert state(ref) == state(FrontierService.restore(tmp_path / "state", graph))


def test_restore_rejects_another_graph_and_broken_state(graph, tmp_path):
    svc = FrontierService(graph)
    svc.apply(delta_table([3], [[0, 1]], [1], "p", 0))
    svc.save(tmp_path / "s")
    with pytest.raises(ServiceStateError, match="belongs to another graph"):
        FrontierService.restore(tmp_path / "s", example_graph())
    with pytest.raises(ServiceStateError, match="cannot read saved service state"):
        FrontierService.restore(tmp_path / "nowhere", graph)
    [version] = (tmp_path / "s").iterdir()
    (version / "state.json").write_text('{"format": "something else"}')
    with pytest.raises(ServiceStateError, match="has format 'something else'"):
        FrontierService.restore(tmp_path / "s", graph)


def test_reference_and_service_agree_on_the_bundled_workload():
    from spark_cases import wcc_rounds

    graph, rounds = wcc_rounds()
    svc = FrontierService(graph)
    ref = ImpliedFrontierTracker(graph)
    for r, rows in enumerate(rounds):
        svc.apply(rows_table(rows, "wcc", r, 2))
        ref.update([x[0] for x in rows], [tuple(x[1]) for x in rows], [x[2] for x in rows])
        assert svc.frontiers() == ref.frontiers()
