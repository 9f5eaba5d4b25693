"""Exactly once, whatever happens (issue 15): delivery units split across parts, calls and
copies; dictionary-encoded producers; crash-safe saves and validated restores; a change log
that replays to the frontiers; bounded held batches; poisoned held batches.

No Spark here: tables are built with pyarrow (``test_spark_streaming.py`` runs the real
Structured Streaming sink); the reference tracker is the oracle.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from engine import NegativeCountError
from spark_plugin import FrontierService, MissingBatchError, ServiceStateError, read_log
from spark_plugin.errors import (ChangeLogError, DeliveryConflictError, HeldBatchError,
                                 HeldLimitError)
from spark_plugin.service.persistence import CRASH_ENV

from spark_cases import full_state, random_rounds, reference_states, rows_table, state

ROOT = Path(__file__).resolve().parents[3]


#: the ``rounds`` fixture (conftest.py): 6 random delta rounds, seed 5
ROUNDS = (6, 5)


def W(graph):
    return graph.m + graph.max_depth


def unit_table(rows, producer, seq, width, *, part=None, parts=None, origin=None):
    """The rows of one part; an empty part is a marker row (as executors send it)."""
    t = rows_table(rows or [(0, [0] * width, 0)], producer, seq, width)
    n = t.num_rows
    if part is not None:
        t = t.append_column("part", pa.array([part] * n, pa.int64()))
        t = t.append_column("parts", pa.array([parts] * n, pa.int64()))
    if origin is not None:
        t = t.append_column("origin", pa.array([origin] * n, pa.string()))
    return t


def split_rows(rows, cuts):
    """``rows`` in ``len(cuts) + 1`` consecutive pieces (possibly empty)."""
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]
    return [rows[a:b] for a, b in zip(bounds, bounds[1:])]


def replay(graph, changes: pa.Table):
    """Frontiers obtained by replaying change rows in order."""
    fr = [set() for _ in range(graph.num_locations)]
    for r in changes.to_pylist():
        t = tuple(r["ts"][:graph.width(r["loc"])])
        (fr[r["loc"]].add if r["diff"] > 0 else fr[r["loc"]].remove)(t)
    return [sorted(s) for s in fr]


# -- 1-3: delivery units, whatever the boundaries ------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_boundary_placement_counts_each_unit_once(graph, rounds, data):
    """Units split into parts (files), parts copied (retries), files shuffled and grouped into
    calls of any size (triggers): the end state is the reference's, each unit applied once,
    every extra copy a duplicate -- whether a copy shares a call with its original or not."""
    width, producers = W(graph), ["a", "b"]
    files = []  # (table, is_extra_copy)
    for p in producers:
        for seq, rows in enumerate(rounds[:4]):
            rows = rows[producers.index(p)::2]
            parts = data.draw(st.integers(1, 3), label=f"parts {p}{seq}")
            cuts = data.draw(st.lists(st.integers(0, len(rows)), min_size=parts - 1,
                                      max_size=parts - 1), label="cuts")
            for k, piece in enumerate(split_rows(rows, cuts)):
                copies = data.draw(st.integers(1, 2), label="copies")
                for c in range(copies):
                    files.append((unit_table(piece, p, seq, width, part=k, parts=parts,
                                             origin=f"{p}-{seq}-{k}-copy{c}.parquet"), c > 0))
    order = data.draw(st.permutations(range(len(files))), label="file order")
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=len(files), max_size=len(files)),
                      label="files per trigger")
    svc = FrontierService(graph)
    applied, i = [], 0
    for size in sizes:
        if i >= len(order):
            break
        batch = [files[j][0] for j in order[i:i + size]]
        i += size
        applied += svc.apply(pa.concat_tables(batch)).applied
    assert sorted(applied) == [(p, s) for p in producers for s in range(4)]
    assert state(svc) == reference_states(graph, rounds[:4])[-1]
    assert svc.status().duplicates == sum(extra for _, extra in files)
    assert not svc.gaps() and svc.status().next_seq == {p: 4 for p in producers}


def test_a_unit_split_across_calls_waits_for_its_last_part(graph, rounds):
    """Issue 15.1: one (producer, seq) as two files read one per trigger: nothing dropped."""
    width = W(graph)
    first, second = split_rows(rounds[0], [len(rounds[0]) // 2])
    svc = FrontierService(graph)
    res = svc.apply(unit_table(first, "p", 0, width, part=0, parts=2))
    assert res.applied == [] and res.held == [("p", 0)]
    [gap] = svc.gaps()
    assert gap.partial == ((0, 1, 2),) and "parts of seq 0 (1 of 2 parts)" in str(gap)
    with pytest.raises(MissingBatchError, match=r"producer 'p': parts of seq 0"):
        svc.check_complete()
    assert svc.apply(unit_table(second, "p", 0, width, part=1, parts=2)).applied == [("p", 0)]
    assert state(svc) == reference_states(graph, rounds[:1])[0]
    # a unit sent without parts columns whose second half comes later is a conflict, not a drop
    svc.apply(rows_table(first, "q", 0, width))
    with pytest.raises(DeliveryConflictError, match=r"\(producer 'q', seq 0\) arrived again"):
        svc.apply(rows_table(second, "q", 0, width))


def test_a_retried_copy_counts_once_in_the_same_or_a_later_call(graph, rounds):
    """Issues 15.2 and 15.3: the copy in the same call (another origin) is a duplicate, as in
    a later call; a copy with other content is a DeliveryConflictError changing nothing."""
    width = W(graph)
    one = unit_table(rounds[0], "p", 0, width, origin="f1")
    again = unit_table(rounds[0], "p", 0, width, origin="f1-retry")
    svc = FrontierService(graph)
    res = svc.apply(pa.concat_tables([one, again]))
    assert res.applied == [("p", 0)] and res.duplicates == [("p", 0)]
    assert state(svc) == reference_states(graph, rounds[:1])[0]
    assert svc.apply(again).duplicates == [("p", 0)]
    before = full_state(svc)
    other = unit_table(rounds[1], "p", 1, width, origin="g1")
    bad = unit_table(rounds[2], "p", 1, width, origin="g1-retry")
    with pytest.raises(DeliveryConflictError, match=r"part 0 of \(producer 'p', seq 1\) arrived "
                                                    r"again from 'g1-retry' with other content"):
        svc.apply(pa.concat_tables([other, bad]))
    assert full_state(svc) == before
    with pytest.raises(DeliveryConflictError, match=r"arrived as 3 part\(s\).*but was held as 2"):
        svc.apply(pa.concat_tables([unit_table(rounds[1][:1], "p", 5, width, part=0, parts=2),
                                    unit_table(rounds[1][1:], "p", 5, width, part=1,
                                               parts=3)]))
    assert full_state(svc) == before


def test_a_dictionary_encoded_producer_is_decoded_before_keying(graph, rounds):
    """Issue 15.4: duplicate dictionary entries and an unused "" entry."""
    width = W(graph)
    table = rows_table(rounds[0], "p", 0, width)
    n = table.num_rows
    dictionary = pa.array(["", "p", "p"])
    idx = pa.array(np.arange(n) % 2 + 1, pa.int32())            # rows use both "p" entries
    prod = pa.DictionaryArray.from_arrays(idx, dictionary)
    t = table.set_column(table.schema.get_field_index("producer"), "producer", prod)
    svc = FrontierService(graph)
    res = svc.apply(t)
    assert res.applied == [("p", 0)] and not res.duplicates
    assert state(svc) == reference_states(graph, rounds[:1])[0]
    # a chunked column whose chunks have different dictionaries
    t2 = rows_table(rounds[1], "p", 1, width)
    half = t2.num_rows // 2
    chunks = [pa.DictionaryArray.from_arrays(pa.array([0] * half, pa.int32()), pa.array(["p"])),
              pa.DictionaryArray.from_arrays(pa.array([1] * (t2.num_rows - half), pa.int32()),
                                             pa.array(["x", "p"]))]
    t2 = t2.set_column(t2.schema.get_field_index("producer"), "producer",
                       pa.chunked_array(chunks))
    assert svc.apply(t2).applied == [("p", 1)]
    assert state(svc) == reference_states(graph, rounds[:2])[1]


# -- 5-6: saves survive crashes; restore validates -----------------------------------------------

CRASH_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from spark_cases import loop_graph, random_rounds, rows_table
    from spark_plugin import FrontierService
    g = loop_graph()
    rounds = random_rounds(g, rounds=3, seed=5)
    svc = FrontierService(g)
    svc.apply(rows_table(rounds[0], "p", 0, g.m + g.max_depth))
    svc.save({path!r})
    svc.apply(rows_table(rounds[1], "p", 1, g.m + g.max_depth))
    import os
    os.environ[{env!r}] = {step!r}
    svc.save({path!r})           # killed here, at that step
    print("saved twice")
""")


@pytest.mark.parametrize("step,expected_seq", [("files-written", 1), ("renamed", 2)])
def test_a_save_killed_at_any_step_leaves_a_complete_version(graph, tmp_path, step,
                                                             expected_seq):
    """Issue 15.5: a real SIGKILL inside ``save``; ``restore`` finds the newest complete
    version: the previous one before the rename, the new one after."""
    path = tmp_path / "state"
    script = CRASH_SCRIPT.format(tests=str(ROOT / "tests" / "spark"), path=str(path),
                                 env=CRASH_ENV, step=step)
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == -9, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "saved twice" not in r.stdout
    back = FrontierService.restore(path, graph)
    assert back.status().next_seq == {"p": expected_seq}
    rounds = random_rounds(graph, rounds=3, seed=5)
    assert state(back) == reference_states(graph, rounds)[expected_seq - 1]
    back.save(path)                                            # leftovers are cleaned up
    assert [p.name for p in path.iterdir()] == [f"v-{expected_seq + 1:08d}"]


def _saved(graph, rounds, path, **kw):
    svc = FrontierService(graph, **kw)
    width = W(graph)
    svc.apply(rows_table(rounds[0], "p", 0, width))
    svc.apply(rows_table(rounds[2], "p", 2, width))            # held
    return svc, svc.save(path)


def _edit_state(version, change):
    state_file = version / "state.json"
    st_ = json.loads(state_file.read_text())
    change(st_)
    from spark_plugin.service.persistence import _state_checksum
    st_["checksum"] = _state_checksum(st_)                     # a consistent but invalid file
    state_file.write_text(json.dumps(st_))


@pytest.mark.parametrize("case,match", [
    ("bit flip in counts", r"counts.parquet' does not match the checksum"),
    ("bit flip in state", r"state.json' is corrupted: its checksum"),
    ("counts of another save", r"counts.parquet' does not match the checksum"),
    ("negative next_seq", r"field \"next_seq\['p'\]\" must be an integer >= 0, got -3"),
    ("non-integer next_seq", r"field \"next_seq\['p'\]\" must be an integer >= 0, got 1.5"),
    ("held below next_seq", r"field \"pending\['p'\]\['2'\]\" is held but below next_seq 7"),
    ("strict not a bool", r"field 'strict' must be true or false"),
    ("missing field", r"field 'applied' is missing"),
])
def test_restore_rejects_corrupted_or_invalid_state(graph, rounds, tmp_path, case, match):
    """Issue 15.6: every field is checked, and the error names what is wrong."""
    _, version = _saved(graph, rounds, tmp_path / "s")
    if case == "bit flip in counts":
        data = bytearray((version / "counts.parquet").read_bytes())
        data[len(data) // 2] ^= 0x10
        (version / "counts.parquet").write_bytes(bytes(data))
    elif case == "bit flip in state":
        text = (version / "state.json").read_text().replace('"applied": 1', '"applied": 3')
        (version / "state.json").write_text(text)
    elif case == "counts of another save":
        other = FrontierService(graph)
        other.apply(rows_table(rounds[1], "p", 0, W(graph)))
        other_version = other.save(tmp_path / "other")
        (version / "counts.parquet").write_bytes((other_version / "counts.parquet").read_bytes())
    elif case == "negative next_seq":
        _edit_state(version, lambda s: s["next_seq"].update(p=-3))
    elif case == "non-integer next_seq":
        _edit_state(version, lambda s: s["next_seq"].update(p=1.5))
    elif case == "held below next_seq":
        _edit_state(version, lambda s: s["next_seq"].update(p=7))
    elif case == "strict not a bool":
        _edit_state(version, lambda s: s.update(strict="yes"))
    elif case == "missing field":
        _edit_state(version, lambda s: s.pop("applied"))
    with pytest.raises(ServiceStateError, match=match):
        FrontierService.restore(tmp_path / "s", graph)


# -- 7-8: the change log ---------------------------------------------------------------------

def test_a_failed_log_write_changes_nothing_and_the_redelivery_is_logged(graph, rounds, tmp_path):
    """Issue 15.7: the log is written before the state is committed."""
    width, log_dir = W(graph), tmp_path / "log"
    svc = FrontierService(graph, log_path=log_dir)
    seen = []
    svc.subscribe(seen.append)
    svc.apply(rows_table(rounds[0], "p", 0, width))
    before = full_state(svc)
    blocker = log_dir / f"changes-{len(svc.log_files()):08d}.parquet"
    blocker.mkdir()                                            # the rename onto it fails
    with pytest.raises(ChangeLogError, match="nothing of this apply call was applied"):
        svc.apply(rows_table(rounds[1], "p", 1, width))
    assert full_state(svc) == before and len(seen) == 1
    blocker.rmdir()
    assert svc.apply(rows_table(rounds[1], "p", 1, width)).applied == [("p", 1)]
    assert replay(graph, read_log(log_dir)) == svc.frontiers()
    assert [f.name for f in log_dir.iterdir() if f.name.endswith(".tmp")] == []


def test_a_log_directory_in_use_is_refused(graph, tmp_path):
    """Issue 15.7: two services on one log directory would overwrite each other's files."""
    first = FrontierService(graph, log_path=tmp_path / "log")
    with pytest.raises(ChangeLogError, match=r"in use by another FrontierService \(pid \d+\)"):
        FrontierService(graph, log_path=tmp_path / "log")
    first.close()
    with FrontierService(graph, log_path=tmp_path / "log"):
        pass


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.one_of(st.tuples(st.just("deliver"), st.integers(0, 5)),
                              st.just(("save",)), st.just(("restore",))),
                    min_size=1, max_size=14))
def test_the_log_replays_to_the_frontiers_after_saves_restores_and_redeliveries(
        graph, rounds, tmp_path_factory, ops):
    """Issue 15.8: whatever sequence of deliveries (in any order, repeated), saves and
    restores from the last save, the change log replays exactly to the frontiers."""
    tmp = tmp_path_factory.mktemp("log")
    width = W(graph)
    svc = FrontierService(graph, log_path=tmp / "log")
    saved = False
    for op in ops:
        if op[0] == "deliver":
            svc.apply(rows_table(rounds[op[1]], "p", op[1], width))
        elif op[0] == "save":
            svc.save(tmp / "state")
            saved = True
        elif saved:
            svc.close()
            svc = FrontierService.restore(tmp / "state", graph, log_path=tmp / "log")
        logged = read_log(tmp / "log") if svc.log_files() else None
        assert (replay(graph, logged) if logged is not None
                else [[] for _ in range(graph.num_locations)]) == svc.frontiers()
    for seq in range(6):                                       # everything redelivered
        svc.apply(rows_table(rounds[seq], "p", seq, width))
    assert replay(graph, read_log(tmp / "log")) == svc.frontiers()
    assert state(svc) == reference_states(graph, rounds)[-1]
    svc.close()


# -- 10-11: bounded holding, poisoned held batches -------------------------------------------

def test_huge_sequence_gaps_are_ranges_and_holding_is_bounded(graph, rounds):
    """Issue 15.10: seq 2**62 is one range, not a materialised list; the bound is named."""
    width = W(graph)
    svc = FrontierService(graph, max_held_batches=2)
    svc.apply(rows_table(rounds[0], "p", 2 ** 62, width))
    svc.apply(rows_table(rounds[0], "p", 10 ** 7, width))
    [gap] = svc.gaps()
    assert gap.missing == ((0, 10 ** 7 - 1), (10 ** 7 + 1, 2 ** 62 - 1))
    assert str(gap) == (f"producer 'p' is missing seq 0-9999999, 10000001-{2 ** 62 - 1} "
                        f"(holding 10000000, {2 ** 62})")
    with pytest.raises(MissingBatchError) as exc:
        svc.check_complete(expected={"p": 2 ** 62 + 5, "q": 3})
    assert exc.value.missing == {"p": [(0, 10 ** 7 - 1), (10 ** 7 + 1, 2 ** 62 - 1),
                                       (2 ** 62 + 1, 2 ** 62 + 5)], "q": [(0, 3)]}
    before = full_state(svc)
    with pytest.raises(HeldLimitError, match=r"producer 'p' would hold 3 delta batches .* "
                                             r"max_held_batches=2"):
        svc.apply(rows_table(rounds[1], "p", 5, width))
    assert full_state(svc) == before
    rows = FrontierService(graph, max_held_rows=1)
    with pytest.raises(HeldLimitError, match=r"would hold 2 rows .* max_held_rows=1"):
        rows.apply(rows_table([(3, [0, 1], 1), (3, [0, 2], 1)], "p", 1, width))


def test_a_poisoned_held_batch_is_named_seen_and_discarded(graph):
    """Issue 15.11: a held strict-mode batch that would go negative names itself when the
    missing batch arrives, and can be inspected and discarded; then the producer moves on."""
    width = W(graph)
    loc, ts = 3, [0, 1]
    svc = FrontierService(graph, strict=True)
    svc.apply(rows_table([(loc, ts, 1)], "p", 0, width))
    svc.apply(rows_table([(loc, ts, -5)], "p", 2, width))     # held: poisoned
    good = rows_table([(loc, ts, 1)], "p", 1, width)
    before = full_state(svc)
    for _ in range(2):
        with pytest.raises(HeldBatchError, match=r"held delta batch \(producer 'p', seq 2\).*"
                                                 r"discard_held\('p', 2\)") as exc:
            svc.apply(good)
        assert isinstance(exc.value, NegativeCountError)
        assert (exc.value.producer, exc.value.seq) == ("p", 2)
        assert full_state(svc) == before
    held = svc.held_batches("p")
    assert held.column("seq").to_pylist() == [2] and held.column("diff").to_pylist() == [-5]
    assert svc.discard_held("p", 2).num_rows == 1
    with pytest.raises(KeyError, match=r"\(producer 'p', seq 2\) is not held"):
        svc.discard_held("p", 2)
    assert svc.apply(good).applied == [("p", 1)]
    assert svc.apply(rows_table([(loc, ts, -2)], "p", 2, width)).applied == [("p", 2)]
    assert svc.counts().num_rows == 0
