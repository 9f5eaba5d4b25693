"""The progress view (issue 11, item 16): ``tfront progress`` draws a progress log as a PNG and
as a self-contained HTML page that follows a running job; the page is checked in a real
headless browser (Debian's ``chromium``, installed by ``make browser``) when there is one."""

import json
import re
import shutil
import subprocess
import sys
import threading

import pytest

pytest.importorskip("pyarrow", reason="the logs are written by the real recorder")

from engine.cli.main import main  # noqa: E402
from engine.errors import DependencyError, ProgressLogError  # noqa: E402
from engine.operate.progress_view import (parse_progress, read_progress, render_html,  # noqa: E402
                                  render_png, timeline, watch)
from progress_cases import simulated_log  # noqa: E402

INPUTS = ["output.in0", "label.in0", "label.in1", "star.in0", "feedback.in0"]


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    path = tmp_path_factory.mktemp("progress") / "wcc.jsonl"
    simulated_log(path, iterations=(3, 2))
    return path


def lines(path):
    return open(path).read().splitlines(keepends=True)


def test_timeline_has_a_line_per_input_climbing_to_done_and_messages_per_iteration(log):
    tl = timeline(read_progress(log))
    assert [i["name"] for i in tl["inputs"]] == INPUTS
    for inp in tl["inputs"]:
        ys = [p[1] for p in inp["points"]]
        assert ys == sorted(ys), inp["name"]   # frontiers only advance
        assert ys[-1] == tl["top"] == 2 and inp["points"][-1][2] == "{}"
    label = next(i for i in tl["inputs"] if i["name"] == "label.in0")
    # one step per iteration (epoch 0: 3, epoch 1: 2), the next epoch's edges already pending
    assert [(p[1], p[2]) for p in label["points"]] == [
        (0.25, "{(0, 1)}"), (0.5, "{(0, 2), (1, 1)}"), (0.75, "{(0, 3), (1, 1)}"),
        (1.333333, "{(1, 1)}"), (1.666667, "{(1, 2)}"), (2.0, "{}")]
    assert [it["iteration"] for it in tl["iterations"]] == [0, 1, 2]
    assert [e for _, e in tl["finals"]] == [0, 1] and not tl["live"]
    assert tl["status"].startswith("finished")


def test_a_log_being_written_is_read_up_to_its_last_complete_line(log, tmp_path):
    part = tmp_path / "part.jsonl"
    text = lines(log)
    part.write_text("".join(text[:12]) + text[12][:25])   # line 13 half written
    run = read_progress(part)
    assert len(run.events) == 11 and not run.finished
    assert timeline(run)["live"] and timeline(run)["status"].startswith("running")


@pytest.mark.parametrize("content, match", [
    ("", "empty progress log"),
    ('{"event": "step", "elapsed": 0}\n', r"bad\.jsonl:1: a progress log starts with"),
    ("@START@not json\n", r"bad\.jsonl:2: not a JSON object"),
    ('@START@{"event": "frontier", "elapsed": 1, "input": "nope.in0", "frontier": []}\n',
     r"bad\.jsonl:2: frontier event: \"input\" 'nope.in0' is not one of"),
    ('@START@{"event": "frontier", "elapsed": 1, "input": "label.in0", "frontier": [1]}\n',
     r"bad\.jsonl:2: frontier event: \"frontier\" must be a list of timestamps"),
    ('@START@{"event": "messages", "elapsed": "x"}\n', r"bad\.jsonl:2: messages event: \"elapsed\""),
])
def test_a_malformed_log_is_refused_naming_file_and_line(log, tmp_path, content, match):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content.replace("@START@", lines(log)[0]))
    with pytest.raises(ProgressLogError, match=match):
        read_progress(bad)
    assert main(["progress", str(bad)]) == 2


def test_unknown_events_are_skipped():
    start = ('{"event": "start", "format": "tfront-progress/1", "elapsed": 0, "inputs": []}')
    assert parse_progress([start, '{"event": "later-kind", "x": 1}']).events == []


def test_png_draws_the_timeline(log, tmp_path):
    image = pytest.importorskip("matplotlib.image")
    out = tmp_path / "p.png"
    render_png(read_progress(log), out)
    px = image.imread(out)[..., :3]
    ink = (px.min(axis=2) < 0.9).mean()   # share of pixels that are not (near) white
    colours = {tuple(c) for c in (px[::3, ::3] * 8).astype(int).reshape(-1, 3).tolist()}
    assert 0.02 < ink < 0.6 and len(colours) > 8
    assert not list(tmp_path.glob(".*tmp*"))   # written under a temporary name, renamed


def test_png_without_matplotlib_says_what_to_install(log, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)   # as if not installed
    with pytest.raises(DependencyError, match=r"needs matplotlib: pip install 'timely-frontier\[plot\]'"):
        render_png(read_progress(log), tmp_path / "p.png")
    assert not (tmp_path / "p.png").exists()


def test_html_is_self_contained_and_reloads_only_while_the_job_runs(log, tmp_path):
    done, live = tmp_path / "done.html", tmp_path / "live.html"
    render_html(read_progress(log), done)
    part = tmp_path / "part.jsonl"
    part.write_text("".join(lines(log)[:20]))
    render_html(read_progress(part), live)
    for page in (done.read_text(), live.read_text()):
        assert "<script src" not in page and "<link" not in page and "href=" not in page
        assert "https://" not in page and page.count("http://") == 1   # the SVG namespace
        data = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
        assert [i["name"] for i in data["inputs"]] == INPUTS
    assert 'http-equiv="refresh"' in live.read_text() and 'data-live="true"' in live.read_text()
    assert "refresh" not in done.read_text() and 'data-live="false"' in done.read_text()


def test_watch_redraws_as_the_log_grows_and_stops_at_its_end(log, tmp_path):
    """A writer appends the log in chunks, each after the watcher drew the previous one."""
    src, dst, page = lines(log), tmp_path / "w.jsonl", tmp_path / "w.html"
    chunks = [src[:1], src[1:15], src[15:40], src[40:]]
    drawn, seen = threading.Event(), []

    def on_update(run):
        seen.append((len(run.events), run.finished, "refresh" in page.read_text()))
        drawn.set()

    def writer():
        for chunk in chunks:
            with open(dst, "a") as f:
                f.write("".join(chunk[:-1]) + chunk[-1][:10])   # last line half written...
                f.flush()
                f.write(chunk[-1][10:])                         # ...then completed
            assert drawn.wait(60)
            drawn.clear()

    t = threading.Thread(target=writer)
    t.start()
    run = watch(dst, html=page, interval=0.01, on_update=on_update)
    t.join()
    assert run.finished and len(run.events) == len(src) - 1
    assert [n for n, _, _ in seen] == [0, 14, 39, len(src) - 1]
    assert [live for _, _, live in seen] == [True, True, True, False]


def test_cli_draws_and_summarises(log, tmp_path, capsys):
    png, html = tmp_path / "p.png", tmp_path / "p.html"
    assert main(["progress", str(log), "--png", str(png), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "finished after" in out and "label.in0 {}" in out and f"page: {html}" in out
    assert png.stat().st_size > 10_000 and html.stat().st_size > 5_000
    assert main(["progress", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["progress", str(log), "--watch"])
    assert e.value.code == 2 and "--watch needs --html and/or --png to redraw" in capsys.readouterr().err


def chromium():
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(chromium() is None,
                    reason="no chromium on PATH: `make browser` installs Debian's package")
def test_the_page_draws_the_timeline_in_a_headless_browser(log, tmp_path):
    page = tmp_path / "p.html"
    render_html(read_progress(log), page)
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars"]
    dom = subprocess.run(flags + [f"--user-data-dir={tmp_path / 'u1'}",
                                  "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-drawn="5"' in dom   # the script ran to its end
    for name in INPUTS:
        path = dom.split(f'<path class="frontier" data-input="{name}"')[1].split(">")[0]
        d = path.split(' d="')[1].split('"')[0]
        assert d.startswith("M") and d.count("V") >= 2, (name, d)
    for k in range(3):
        assert f'<path class="inflight" data-iteration="{k}"' in dom
    assert dom.count('<circle class="change"') >= 20
    # a page of a running job draws what has happened so far (and says it reloads)
    part, live = tmp_path / "part.jsonl", tmp_path / "live.html"
    part.write_text("".join(lines(log)[:30]))
    render_html(read_progress(part), live)
    dom = subprocess.run(flags + [f"--user-data-dir={tmp_path / 'u3'}",
                                  "--virtual-time-budget=500", "--dump-dom", live.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-live="true"' in dom and "reloads every 2 s" in dom and 'data-drawn="5"' in dom
    assert 0 < dom.count('<circle class="change"') < 20
    shot = tmp_path / "shot.png"
    subprocess.run(flags + [f"--user-data-dir={tmp_path / 'u2'}", "--window-size=1100,720",
                            f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    image = pytest.importorskip("matplotlib.image")
    px = image.imread(shot)[..., :3]
    chart = px[60:640, 60:860]   # where the two SVG panels are
    coloured = (chart.max(axis=2) - chart.min(axis=2) > 0.3).mean()   # the coloured lines
    assert 0.002 < coloured < 0.5 and (chart.min(axis=2) < 0.9).mean() > 0.01


def test_gh23_every_iteration_has_its_own_colour_and_legend_entry(tmp_path):
    """Issue 23 item 13: the page's legend stopped after 13 iterations and the PNG reused
    its 10 colours. 25 iterations: 25 colours, 25 legend entries in both."""
    from progress_cases import WccProtocol

    path = tmp_path / "long.jsonl"
    WccProtocol(path).run((25,), edges=1 << 30)   # enough messages to last 25 iterations
    run = read_progress(path)
    tl = timeline(run)
    its = tl["iterations"]
    assert len(its) == 25 and len({it["color"] for it in its}) == 25
    fig = render_png(run, tmp_path / "p.png")
    ax, bx = fig.axes
    assert len({line.get_color() for line in bx.get_lines()
                if line.get_label().startswith("iteration")}) == 25
    assert [t.get_text() for t in bx.get_legend().get_texts()] == [
        f"iteration {k}" for k in range(25)]
    page = tmp_path / "p.html"
    render_html(run, page)
    text = page.read_text()
    assert ".slice(0, 13)" not in text and "COLORS[" not in text
    if chromium() is None:
        return
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'u'}",
             "--virtual-time-budget=2000", "--dump-dom", page.as_uri()]
    dom = subprocess.run(flags, capture_output=True, text=True, timeout=120).stdout
    assert 'data-drawn="5"' in dom
    for k in range(25):
        assert f'class="legend">iteration {k}<' in dom, k
    # issue 32 item 19: the legend makes the drawing taller, never wider than the page
    widths = [int(w) for w in re.findall(r'<svg id="\w+" width="(\d+)"', dom)]
    assert len(widths) == 2 and max(widths) <= 1200, widths
    strokes = {p.split(' stroke="')[1].split('"')[0]
               for p in dom.split('<path class="inflight"')[1:]}
    assert len(strokes) == 25


def test_gh23_png_and_html_paths_are_checked_before_drawing(log, tmp_path, capsys):
    """Issue 23 item 13: ``--png`` into a missing folder named a temporary file; ``--png
    x.jpg`` wrote PNG data under a JPEG name. Both are refused naming the path given, and
    nothing is written."""
    missing = tmp_path / "nodir" / "x.png"
    assert main(["progress", str(log), "--png", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (f"tfront progress: error: {missing}: its folder {missing.parent} does not "
                   f"exist\n"), err
    assert main(["progress", str(log), "--html", str(tmp_path / "nodir" / "x.html")]) == 2
    assert "x.html: its folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["progress", str(log), "--png", str(tmp_path / "x.jpg")])
    assert e.value.code == 2
    assert ("argument --png: the picture is PNG data; give it a name ending in .png (e.g. "
            "x.png)") in capsys.readouterr().err
    with pytest.raises(ProgressLogError, match=r"x\.jpg: the picture is PNG data"):
        render_png(read_progress(log), tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []


def test_gh32_the_time_axis_starts_at_the_first_frontier_change_after_a_long_lead_in(log):
    """Issue 32 item 19: a job finished on the driver loads its kernels for seconds, then runs
    in a blink; the axis started at 0 and the lines were squeezed into the picture's last
    tenth. It now starts just before the first frontier change (said in the axis label)."""
    pytest.importorskip("matplotlib")
    shifted = []
    for line in lines(log):
        ev = json.loads(line)
        if ev.get("event") != "start" and "elapsed" in ev:
            ev["elapsed"] = float(ev["elapsed"]) + 50.0   # 50 s of kernel loading first
        shifted.append(json.dumps(ev) + "\n")
    run = parse_progress(shifted)
    tl = timeline(run)
    first = min(p[0] for i in tl["inputs"] for p in i["points"])
    assert first >= 50 and first - 1 < tl["t0"] < first
    fig = render_png(run, log.parent / "late.png")
    left, right = fig.axes[1].get_xlim()
    assert left == tl["t0"] and right > tl["t_end"]
    assert "the axis starts at" in fig.axes[1].get_xlabel()
    evs = [json.loads(line) for line in lines(log)]
    lead = min(float(e["elapsed"]) for e in evs if e.get("event") == "frontier")
    early = [json.dumps({**e, "elapsed": max(0.0, float(e["elapsed"]) - lead)}) + "\n"
             if "elapsed" in e else json.dumps(e) + "\n" for e in evs]
    assert timeline(parse_progress(early))["t0"] == 0.0   # no lead-in: from 0 as before
