"""The progress log (issue 11, item 16): every frontier change at every operator input, as the
frontier service publishes it, with its time and the step that caused it; flushed per event."""

import json

import pytest

pytest.importorskip("pyarrow", reason="the recorder reads the service's Arrow tables")

from engine.core.graph import PortKind  # noqa: E402
from engine.operate.progress_view import PROGRESS_FORMAT, read_progress  # noqa: E402
from progress_cases import WccProtocol  # noqa: E402
from spark_plugin.jobs.progress_log import ProgressRecorder, input_names, job_description  # noqa: E402


def events(path):
    return [json.loads(line) for line in open(path)]


def test_every_frontier_change_at_every_input_is_logged_with_the_frontier_after_it(tmp_path):
    """Oracle: the service's own ApplyResult.changes, and its frontiers after each apply."""
    path = tmp_path / "p.jsonl"
    proto = WccProtocol(path)
    after = []   # (location -> frontier) after each apply that changed one
    targets = [l for l, loc in enumerate(proto.wg.graph.locations) if loc.kind is PortKind.TARGET]
    proto.svc.subscribe(lambda ch: after.append(
        {int(l): proto.svc.frontier(int(l)) for l in set(ch.column("loc").to_pylist())}))
    proto.run(iterations=(3, 2))
    names = input_names(proto.wg.graph)
    want = []
    for res in proto.results:
        rows = [r for r in res.changes.to_pylist() if r["loc"] in names]
        keys = list(dict.fromkeys((r["producer"], r["seq"], r["loc"]) for r in rows))
        for p, s, l in keys:
            mine = [r for r in rows if (r["producer"], r["seq"], r["loc"]) == (p, s, l)]
            want.append((names[l], p, s, sorted(r["ts"] for r in mine if r["diff"] > 0),
                         sorted(r["ts"] for r in mine if r["diff"] < 0)))
    got = [(ev["input"], ev["producer"], ev["seq"], sorted(ev["added"]), sorted(ev["removed"]))
           for ev in events(path) if ev["event"] == "frontier"]
    assert got == want and len(got) > 20
    # each logged frontier is the service's frontier at that input after the batch
    fr = iter(ev for ev in events(path) if ev["event"] == "frontier")
    for snap in after:
        for loc in sorted(l for l in snap if l in names):
            ev = next(fr)
            assert (ev["loc"], ev["frontier"]) == (loc, [list(t) for t in snap[loc]])
    assert all(proto.svc.frontier(l) == [] for l in targets)   # the job ended: all empty


def test_events_name_the_step_that_sent_the_batch_and_carry_wall_clock_time(tmp_path):
    path = tmp_path / "p.jsonl"
    WccProtocol(path).run(iterations=(3, 2))
    evs = events(path)
    assert evs[0]["event"] == "start" and evs[0]["format"] == PROGRESS_FORMAT
    assert {i["name"] for i in evs[0]["inputs"]} == {
        "output.in0", "label.in0", "label.in1", "star.in0", "feedback.in0"}
    assert evs[-1] == {**evs[-1], "event": "end", "ok": True, "error": None}
    times = [ev["time"] for ev in evs]
    assert times == sorted(times) and [ev["elapsed"] for ev in evs] == sorted(
        ev["elapsed"] for ev in evs)
    steps = {ev["stage"]: ev for ev in evs if ev["event"] == "step" and ev["stage"] is not None}
    for ev in evs:
        if ev["event"] != "frontier":
            continue
        if ev["producer"].startswith("wcc-") and ev["producer"][4:].isdigit():
            st = steps[ev["seq"]]   # a task's batch: the stage whose seq it carries
            assert (ev["epoch"], ev["iteration"], ev["step"], ev["job"]) == (
                st["epoch"], st["iteration"], st["step"], st["job"])
            assert ev["job"] == job_description("wcc", st["step"], st["epoch"], st["iteration"])
    # the driver's batch that ends epoch 1 is the output step's, not the last stage's
    outs = [ev for ev in evs if ev["event"] == "frontier" and ev["producer"] == "wcc-output"]
    assert [(ev["step"], ev["epoch"]) for ev in outs] == [("output", 0), ("output", 1)]
    assert [ev["epoch"] for ev in evs if ev["event"] == "epoch"] == [0, 1]


def test_messages_in_flight_are_the_counts_at_operator_inputs(tmp_path):
    path = tmp_path / "p.jsonl"
    proto = WccProtocol(path).run(iterations=(3, 2))
    msgs = [ev["in_flight"] for ev in events(path) if ev["event"] == "messages"]
    assert [0, 0, 100] in msgs[0]            # the first epoch's 100 edges at label.in1
    assert any([0, 2, 25] in m for m in msgs)   # small-star halves them per iteration
    assert msgs[-1] == [] and proto.svc.counts().num_rows == 0
    assert all(a != b for a, b in zip(msgs, msgs[1:]))   # written only when they changed


def test_each_event_is_on_disk_before_the_next_batch(tmp_path):
    """A reader following the log sees an event as soon as it happened (flushed per event)."""
    path = tmp_path / "p.jsonl"
    proto = WccProtocol(path)
    proto.driver([(proto.wg.a_out, (0, 0), 1)])
    proto.rec.step("read", 0, 0)
    run = read_progress(path)   # the recorder is still open
    assert not run.finished
    assert {ev["input"] for ev in run.of("frontier")} == set(input_names(proto.wg.graph).values())
    assert run.of("step")[-1]["job"] == "wcc epoch 0 round 1: read"
    proto.rec.close(RuntimeError("disk on fire"))
    end = read_progress(path).end
    assert end["ok"] is False and end["error"] == "RuntimeError: disk on fire"
    proto.rec.close()   # idempotent
    assert read_progress(path).end == end


def test_without_a_path_nothing_is_written_or_subscribed(tmp_path):
    proto = WccProtocol(None)
    proto.run(iterations=(2,))
    assert not proto.rec.logging and proto.svc._subscribers == []
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError, match="no-such-dir"):
        ProgressRecorder(None, tmp_path / "no-such-dir" / "p.jsonl", graph=proto.wg.graph)
