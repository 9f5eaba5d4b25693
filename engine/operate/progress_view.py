"""The progress view: a progress log (``tfront wcc --progress-log``) drawn as a timeline.

A progress log is JSON Lines, one event per line, written and flushed as the job runs
(:mod:`spark_plugin.jobs.progress_log` writes it; the format is in ``docs/progress.md``). This
module reads it -- also while it is being written: a last line without its newline is not
yet an event -- and draws it with :func:`timeline` as

* a PNG (matplotlib; :func:`render_png`): above, the frontier at every operator input over
  wall-clock time, as one step line per input; below, the messages in flight per loop
  iteration (pointstamp counts at operator inputs, summed over epochs, symlog scale);
* a self-contained HTML page (:func:`render_html`; inline SVG drawn by inline JavaScript, no
  network): the same timeline, with each frontier change's antichain and Spark job on hover.
  While the log has no ``end`` event the page reloads itself every few seconds, so a page
  that :func:`watch` (``tfront progress --watch``) keeps rewriting follows the job live.

A frontier is an antichain of timestamps ``(epoch, iteration)``; its line is drawn at the
height of its least element in lexicographic order (the earliest epoch still pending):
``epoch + iteration / (iterations of that epoch)``, so every epoch is one band of height 1
climbed in one step per iteration, and an empty frontier (the input is done) is drawn at
the top.

>>> run = parse_progress([
...     '{"event": "start", "format": "tfront-progress/1", "time": 0, "elapsed": 0,'
...     ' "job": "wcc", "inputs": [{"loc": 1, "name": "label.in0"}]}',
...     '{"event": "frontier", "time": 1, "elapsed": 1, "loc": 1, "input": "label.in0",'
...     ' "frontier": [[0, 1]], "added": [[0, 1]], "removed": []}'], "log")
>>> run.finished, [ev["frontier"] for ev in run.of("frontier")]
(False, [[[0, 1]]])
>>> timeline(run)["inputs"][0]["points"]
[[1.0, 0.5, '{(0, 1)}', '']]
"""

from __future__ import annotations

import html as _html
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from engine.errors import DependencyError, ProgressLogError

__all__ = ["PROGRESS_FORMAT", "ProgressRun", "read_progress", "parse_progress", "timeline",
           "render_png", "render_html", "watch", "summary_lines", "RELOAD_SECONDS", "colors",
           "check_png_path"]

#: The ``format`` of a progress log's ``start`` event.
PROGRESS_FORMAT = "tfront-progress/1"
#: A live page (no ``end`` event yet) reloads itself this often.
RELOAD_SECONDS = 2
#: The events every reader knows; other names are skipped (later versions may add some).
EVENTS = ("start", "step", "frontier", "messages", "epoch", "end")


@dataclass
class ProgressRun:
    """A parsed progress log: its ``start`` event and every later event, in order.

    ``finished``: the log has its ``end`` event (the job is over, ``end["ok"]`` says how).
    """

    path: str
    start: dict
    events: list[dict] = field(default_factory=list)

    @property
    def end(self) -> dict | None:
        return next((ev for ev in reversed(self.events) if ev["event"] == "end"), None)

    @property
    def finished(self) -> bool:
        return self.end is not None

    @property
    def inputs(self) -> list[str]:
        """The operator inputs' names (``label.in0``, ...), in the log's order."""
        return [i["name"] for i in self.start["inputs"]]

    def of(self, kind: str) -> list[dict]:
        """The events named ``kind``, in order."""
        return [ev for ev in self.events if ev["event"] == kind]


def read_progress(path: str | os.PathLike) -> ProgressRun:
    """Read the progress log at ``path`` (complete or still being written).

    Raises
    ------
    ProgressLogError
        The file is empty, does not start with a ``start`` event of format
        :data:`PROGRESS_FORMAT`, or a complete line is not such an event (file and line named).
    OSError
        The file cannot be read.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    # a last line without its newline is still being written: not an event yet
    return parse_progress(lines[:-1], str(path))


def parse_progress(lines: Iterable[str], path: str = "<progress log>") -> ProgressRun:
    """Parse complete lines of a progress log (see :func:`read_progress`)."""
    run = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as e:
            raise ProgressLogError(f"{path}:{n}: not a JSON object ({e.msg} at column "
                                   f"{e.colno})") from None
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
            raise ProgressLogError(f"{path}:{n}: an event is a JSON object with a string "
                                   f"\"event\", got {line[:60]!r}")
        if run is None:
            if ev["event"] != "start" or ev.get("format") != PROGRESS_FORMAT:
                raise ProgressLogError(
                    f"{path}:{n}: a progress log starts with a \"start\" event of format "
                    f"{PROGRESS_FORMAT!r}, got event {ev['event']!r} format "
                    f"{ev.get('format')!r}")
            inputs = ev.get("inputs")
            if not isinstance(inputs, list) or not all(
                    isinstance(i, dict) and isinstance(i.get("name"), str) for i in inputs):
                raise ProgressLogError(f"{path}:{n}: the start event's \"inputs\" must be a "
                                       f"list of {{\"loc\", \"name\"}} objects")
            run = ProgressRun(path, ev)
            continue
        if ev["event"] not in EVENTS:
            continue
        _check_event(ev, path, n, run)
        run.events.append(ev)
    if run is None:
        raise ProgressLogError(f"{path}: empty progress log (no complete \"start\" line yet)")
    return run


def _check_event(ev: dict, path: str, n: int, run: ProgressRun) -> None:
    def bad(what):
        raise ProgressLogError(f"{path}:{n}: {ev['event']} event: {what}")

    if not isinstance(ev.get("elapsed"), (int, float)):
        bad("\"elapsed\" (seconds since the start) must be a number")
    if ev["event"] == "frontier":
        if ev.get("input") not in run.inputs:
            bad(f"\"input\" {ev.get('input')!r} is not one of the start event's inputs "
                f"{run.inputs}")
        if not _is_antichain(ev.get("frontier")):
            bad("\"frontier\" must be a list of timestamps (lists of integers)")
    elif ev["event"] == "messages":
        rows = ev.get("in_flight")
        if not isinstance(rows, list) or not all(
                isinstance(r, list) and len(r) >= 2 and all(isinstance(x, int) for x in r)
                for r in rows):
            bad("\"in_flight\" must be a list of [epoch, iteration, ..., count] integer lists")


def _is_antichain(x) -> bool:
    return isinstance(x, list) and all(
        isinstance(t, list) and t and all(isinstance(c, int) for c in t) for t in x)


def _fmt(frontier) -> str:
    return "{" + ", ".join("(" + ", ".join(str(c) for c in t) + ")" for t in frontier) + "}"


def timeline(run: ProgressRun) -> dict:
    """The series both views draw, computed once here (so the PNG and the page agree).

    Returns
    -------
    dict
        ``inputs``: per operator input ``{"name", "points"}``, points ``[elapsed, y, frontier
        text, Spark job]`` at each change (``y`` as in the module doc); ``top``: the height of
        an empty frontier; ``epochs``: ``[[e, label], ...]`` tick positions; ``iterations``:
        per iteration index ``{"iteration", "points": [[elapsed, messages], ...]}``;
        ``finals``: ``[[elapsed, epoch], ...]`` when each epoch became final; ``t_end``: the
        last event's time; ``t0``: where the time axis starts -- 0, or just before the first
        frontier change when that comes after a tenth of the run; ``live``, ``title``,
        ``status``.
    """
    fr = run.of("frontier")
    last: dict[int, int] = {}   # epoch -> largest iteration in any frontier
    for ev in fr:
        for t in ev["frontier"]:
            last[t[0]] = max(last.get(t[0], 0), t[1] if len(t) > 1 else 0)
    top = (max(last) + 1) if last else 1

    def height(frontier) -> float:
        if not frontier:
            return float(top)
        t = min(tuple(x) for x in frontier)
        return t[0] + (t[1] if len(t) > 1 else 0) / (last[t[0]] + 1)

    inputs = [{"name": name, "points": [], "color": c}
              for name, c in zip(run.inputs, colors(len(run.inputs)))]
    by_name = {i["name"]: i for i in inputs}
    for ev in fr:
        by_name[ev["input"]]["points"].append(
            [float(ev["elapsed"]), round(height(ev["frontier"]), 6), _fmt(ev["frontier"]),
             str(ev.get("job") or "")])
    iterations: dict[int, list] = {}
    for ev in run.of("messages"):
        per: dict[int, int] = {}
        for row in ev["in_flight"]:
            k = row[1] if len(row) > 2 else 0
            per[k] = per.get(k, 0) + row[-1]
        for k in set(per) | set(iterations):
            iterations.setdefault(k, []).append([float(ev["elapsed"]), per.get(k, 0)])
    t_end = max([float(ev["elapsed"]) for ev in run.events] or [0.0])
    # the axis starts near the first frontier change when what comes before it is most of the
    # run (a job finished on the driver loads its kernels for seconds, then runs in a blink):
    # else the lines were squeezed into the last tenth of the picture (issue 32 item 19)
    first = min([float(ev["elapsed"]) for ev in fr] or [0.0])
    t0 = max(0.0, first - 0.02 * (t_end - first)) if first > 0.1 * t_end else 0.0
    end = run.end
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(run.start.get("time", 0))))
    if end is None:
        status = f"running: last event at {t_end:.2f} s"
    else:
        status = (f"finished after {t_end:.2f} s" if end.get("ok", True)
                  else f"failed after {t_end:.2f} s: {end.get('error')}")
    return {
        "title": f"{run.start.get('job', 'job')} progress, started {started}",
        "status": status, "live": end is None, "t_end": t_end, "t0": t0, "top": top,
        "inputs": inputs,
        "epochs": [[e, f"epoch {e}"] for e in range(top)],
        "iterations": [{"iteration": k, "points": iterations[k], "color": c}
                       for k, c in zip(sorted(iterations), colors(len(iterations)))],
        "finals": [[float(ev["elapsed"]), ev.get("epoch")] for ev in run.of("epoch")],
    }


#: The first colours of the lines (matplotlib's ``tab10``); more lines get hues spread
#: around the colour wheel (:func:`colors`).
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf")


def colors(n: int) -> list[str]:
    """``n`` distinct colours (``#rrggbb``), one per line of the PNG and the page: ``tab10``
    for up to 10 lines, else ``n`` hues a golden angle apart at alternating lightness -- no
    colour used twice, however many iterations a job takes.

    >>> colors(3)
    ['#1f77b4', '#ff7f0e', '#2ca02c']
    >>> len(set(colors(200))) == 200
    True
    """
    if n <= len(TAB10):
        return list(TAB10[:n])
    import colorsys

    out, seen = [], set()
    for k in range(n):
        light = (0.38, 0.52, 0.30, 0.45)[k % 4]
        r, g, b = colorsys.hls_to_rgb((k * 0.381966) % 1.0, light, 0.75)
        c = "#%02x%02x%02x" % tuple(round(255 * v) for v in (r, g, b))
        while c in seen:   # rounding made two alike: nudge the blue channel
            c = c[:5] + "%02x" % ((int(c[5:], 16) + 1) % 256)
        seen.add(c)
        out.append(c)
    return out


def summary_lines(run: ProgressRun) -> list[str]:
    """A few lines for a terminal: status, counts, the frontiers and messages now."""
    tl = timeline(run)
    lines = [f"{run.path}: {tl['title']}; {tl['status']}",
             f"events: {len(run.of('frontier'))} frontier changes, {len(run.of('step'))} steps, "
             f"{len(run.of('epoch'))} epochs final"]
    now = {}
    for ev in run.of("frontier"):
        now[ev["input"]] = ev["frontier"]
    lines.append("frontiers: " + ", ".join(f"{n} {_fmt(now[n])}" for n in run.inputs if n in now))
    msgs = run.of("messages")
    rows = msgs[-1]["in_flight"] if msgs else []
    lines.append("messages in flight: " + (", ".join(
        f"{tuple(r[:-1])} {r[-1]}" for r in rows) or "none"))
    return lines


# -- PNG ---------------------------------------------------------------------------------------

def render_png(run: ProgressRun, path: str | os.PathLike, *, dpi: int = 110):
    """Draw the timeline of ``run`` to the PNG file ``path`` (written under a temporary name
    and renamed, so a viewer never reads half a file); every line has a colour of its own
    (:func:`colors`). Returns the matplotlib ``Figure``.

    Raises
    ------
    ProgressLogError
        ``path`` does not end in ``.png`` (the picture is PNG data).
    FileNotFoundError
        The folder of ``path`` does not exist (naming ``path``, not a temporary file).
    DependencyError
        matplotlib is not installed.
    """
    check_png_path(path)
    _check_folder(path)
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DependencyError("drawing a PNG needs matplotlib: pip install "
                              "'timely-frontier[plot]' (or matplotlib); --html needs "
                              "nothing") from None
    tl = timeline(run)
    fig = Figure(figsize=(10, 6.4), layout="constrained")
    ax, bx = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    t_end = tl["t_end"] or 1.0
    n = len(tl["inputs"])
    for k, inp in enumerate(tl["inputs"]):
        pts = inp["points"]
        if not pts:
            continue
        off = (k - (n - 1) / 2) * 0.025   # inputs at the same frontier stay distinguishable
        xs = [p[0] for p in pts] + [t_end]
        ys = [p[1] + off for p in pts] + [pts[-1][1] + off]
        ax.step(xs, ys, where="post", lw=1.6, label=inp["name"], color=inp["color"])
    for t, e in tl["finals"]:
        for a in (ax, bx):
            a.axvline(t, color="0.6", lw=0.8, ls="--")
        ax.text(t, tl["top"] + 0.22, f"{e} ", fontsize=7, va="center", ha="right", color="0.4")
    ax.set_yticks([e for e, _ in tl["epochs"]] + [tl["top"]],
                  [lab for _, lab in tl["epochs"]] + ["done {}"])
    ax.set_ylim(-0.15, tl["top"] + 0.4)
    ax.set_ylabel("frontier (least element)")
    ax.set_title(f"{tl['title']} -- {tl['status']}\n(dashed: the epoch numbered at the top "
                 f"became final)", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="input",
              title_fontsize=8)
    ax.grid(axis="y", color="0.9")
    for it in tl["iterations"]:
        pts = it["points"]
        bx.step([p[0] for p in pts] + [t_end], [p[1] for p in pts] + [pts[-1][1]],
                where="post", lw=1.2, label=f"iteration {it['iteration']}", color=it["color"])
    bx.set_yscale("symlog", linthresh=1)
    bx.set_ylabel("messages in flight")
    t0 = tl["t0"]
    bx.set_xlabel("seconds since the job started" + (
        f" (the axis starts at {t0:.2f} s: before it no frontier changed -- the job "
        f"loaded its kernels)" if t0 > 0 else ""))
    if tl["iterations"]:
        bx.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7,
                  ncols=1 + len(tl["iterations"]) // 12)
    bx.set_xlim(t0, t_end + 0.04 * (t_end - t0))
    _replace(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"))
    return fig


# -- HTML --------------------------------------------------------------------------------------

def render_html(run: ProgressRun, path: str | os.PathLike) -> None:
    """Write the timeline of ``run`` as a self-contained HTML page to ``path`` (atomically:
    a reloading browser never reads half a page). The page draws inline SVG with inline
    JavaScript and loads nothing; while ``run`` has no ``end`` event it reloads itself every
    :data:`RELOAD_SECONDS` seconds."""
    _check_folder(path)
    tl = timeline(run)
    data = json.dumps(tl, separators=(",", ":")).replace("</", "<\\/")
    refresh = (f'<meta http-equiv="refresh" content="{RELOAD_SECONDS}">' if tl["live"] else "")
    page = (_PAGE.replace("@REFRESH@", refresh)
            .replace("@TITLE@", _html.escape(tl["title"]))
            .replace("@STATUS@", _html.escape(tl["status"] + (
                f" (this page reloads every {RELOAD_SECONDS} s)" if tl["live"] else "")))
            .replace("@LIVE@", "true" if tl["live"] else "false")
            .replace("@DATA@", data))
    _replace(path, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))


def check_png_path(path) -> None:
    """``--png`` names a ``.png`` file: the picture is PNG data, whatever the name says.

    Raises
    ------
    ProgressLogError
        Naming the path and the name to give it."""
    p = Path(path)
    if p.suffix.lower() != ".png":
        raise ProgressLogError(f"--png {path}: the picture is PNG data; give it a name ending "
                               f"in .png (e.g. {p.with_suffix('.png').name})")


def _check_folder(path) -> None:
    """The folder of ``path`` exists (else an error naming ``path``, before anything is
    drawn, not the temporary file written first)."""
    folder = Path(path).absolute().parent
    if not folder.is_dir():
        import errno

        raise FileNotFoundError(errno.ENOENT, f"its folder {folder} does not exist", str(path))


def _replace(path, write: Callable[[str], None]) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(str(tmp))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def watch(path: str | os.PathLike, *, html=None, png=None, interval: float = 1.0,
          on_update: Callable[[ProgressRun], None] | None = None) -> ProgressRun:
    """Redraw ``html`` and/or ``png`` from the log at ``path`` each time it grows, until it
    has its ``end`` event; return the finished run. A log that does not exist yet, or has no
    complete line yet, is waited for. ``on_update(run)`` is called after each redraw.

    Raises
    ------
    ProgressLogError
        The log is malformed (then nothing more is drawn).
    """
    seen = None
    while True:
        try:
            st = os.stat(path)
            key = (st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            key = None
        if key is not None and key != seen and key[0] > 0:
            try:
                run = read_progress(path)
            except ProgressLogError:
                if _has_complete_line(path):
                    raise
                run = None   # the start line is still being written
            if run is not None:
                seen = key
                if html is not None:
                    render_html(run, html)
                if png is not None:
                    render_png(run, png)
                if on_update is not None:
                    on_update(run)
                if run.finished:
                    return run
        time.sleep(interval)


def _has_complete_line(path) -> bool:
    with open(path, "rb") as f:
        return b"\n" in f.read()


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">@REFRESH@
<title>@TITLE@</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 16px; margin: 0 0 4px; } #status { margin: 0 0 8px; color: #555; }
svg { display: block; background: #fff; } .axis { stroke: #888; } .grid { stroke: #eee; }
text { font-size: 11px; fill: #444; } .final { stroke: #aaa; stroke-dasharray: 4 3; }
path.frontier, path.inflight { fill: none; stroke-width: 2; }
circle.change { fill-opacity: 0.9; } circle.change:hover { r: 5; }
</style></head>
<body>
<h1>@TITLE@</h1>
<p id="status" data-live="@LIVE@">@STATUS@</p>
<svg id="frontiers" width="1000" height="340" viewBox="0 0 1000 340"
     aria-label="frontier at each operator input"></svg>
<svg id="inflight" width="1000" height="240" viewBox="0 0 1000 240"
     aria-label="messages in flight per iteration"></svg>
<p>Above: the frontier at each operator input (its least element; an empty frontier, at the
top, means no more messages can arrive there). Below: messages in flight per loop iteration
(pointstamp counts at operator inputs, all epochs). Hover a point for the frontier and the
Spark job.</p>
<script id="data" type="application/json">@DATA@</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
const L = 70, R = 840, T = 16, PAGE = 1200;   // PAGE: the widest the drawings get
const tEnd = D.t_end > 0 ? D.t_end : 1, t0 = D.t0 || 0;   // t0: see timeline()
const X = t => L + (R - L) * (t - t0) / ((tEnd - t0) * 1.04);
function el(parent, name, attrs, text) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}
function steps(pts, xf, yf) {   // a step line through pts, held until tEnd
  let d = "";
  pts.forEach((p, i) => {
    d += (i === 0 ? "M" + xf(p[0]).toFixed(1) + " " + yf(p[1]).toFixed(1)
                  : "H" + xf(p[0]).toFixed(1) + "V" + yf(p[1]).toFixed(1));
  });
  return pts.length ? d + "H" + xf(tEnd).toFixed(1) : "";
}
function xAxis(svg, B) {
  el(svg, "line", {x1: L, x2: R, y1: B, y2: B, class: "axis"});
  const span = Math.max(tEnd - t0, 1e-6);
  const dec = Math.max(1, Math.min(4, Math.ceil(-Math.log10(span / 5)) + 1));
  for (let k = 0; k <= 5; k++) {
    const t = t0 + span * k / 5;
    el(svg, "text", {x: X(t), y: B + 14, "text-anchor": "middle"}, t.toFixed(dec) + " s");
  }
  if (t0 > 0)
    el(svg, "text", {x: R, y: B + 27, "text-anchor": "end", class: "axisnote"},
       "the axis starts at " + t0.toFixed(2) + " s: before it no frontier changed " +
       "(the job loaded its kernels)");
  D.finals.forEach(f => el(svg, "line", {x1: X(f[0]), x2: X(f[0]), y1: T, y2: B,
                                         class: "final"}));
}
function legend(svg, items, B) {   // every entry, within a 1200 px page: taller, not wider
  const W = 150, H = 16, maxCols = Math.max(1, Math.floor((PAGE - R - 20) / W));
  const rows = Math.max(1, Math.floor((B - T) / H), Math.ceil(items.length / maxCols));
  const cols = Math.ceil(items.length / rows);
  items.forEach((it, k) => {
    const x = R + 20 + W * Math.floor(k / rows), y = T + 8 + H * (k % rows);
    el(svg, "line", {x1: x, x2: x + 20, y1: y, y2: y, stroke: it.color, "stroke-width": 3});
    el(svg, "text", {x: x + 26, y: y + 4, class: "legend"}, it.name);
  });
  const width = Math.max(1000, R + 20 + W * cols);
  const height = Math.max(+svg.getAttribute("height"), T + 8 + H * rows + 8);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
}
function drawFrontiers() {
  const svg = document.getElementById("frontiers"), B = 310;
  const Y = y => B - (B - T - 10) * y / (D.top + 0.2);
  D.epochs.concat([[D.top, "done {}"]]).forEach(e => {
    el(svg, "line", {x1: L, x2: R, y1: Y(e[0]), y2: Y(e[0]), class: "grid"});
    el(svg, "text", {x: L - 6, y: Y(e[0]) + 4, "text-anchor": "end"}, e[1]);
  });
  xAxis(svg, B);
  // the epoch that became final, above the plot beside its dashed line (as in the PNG):
  // written down the plot it ran over the lines at the right edge
  D.finals.forEach(f => el(svg, "text", {x: X(f[0]) - 2, y: T - 4, "text-anchor": "end",
                                         class: "finallabel"}, String(f[1]))
                        .appendChild(document.createElementNS(NS, "title")).textContent =
                        "epoch " + f[1] + " final");
  const n = D.inputs.length;
  D.inputs.forEach((inp, k) => {
    const off = (k - (n - 1) / 2) * 0.025, c = inp.color;
    const g = el(svg, "g", {class: "input", "data-input": inp.name});
    el(g, "path", {class: "frontier", "data-input": inp.name, stroke: c,
                   d: steps(inp.points, X, y => Y(y + off))});
    inp.points.forEach(p => {
      const dot = el(g, "circle", {class: "change", cx: X(p[0]), cy: Y(p[1] + off), r: 2.5,
                                   fill: c});
      el(dot, "title", {}, inp.name + " at " + p[0].toFixed(3) + " s: " + p[2] +
                           (p[3] ? "\n" + p[3] : ""));
    });
  });
  legend(svg, D.inputs, B);
}
function drawInflight() {
  const svg = document.getElementById("inflight"), B = 210;
  let max = 1;
  D.iterations.forEach(it => it.points.forEach(p => { max = Math.max(max, p[1]); }));
  const top = Math.log10(1 + max);
  const Y = v => B - (B - T) * Math.log10(1 + v) / top;
  for (let k = 0; Math.pow(10, k) <= max * 10 && k < 12; k++) {
    const v = k === 0 ? 0 : Math.pow(10, k);
    if (v > max * 1.0001 && k > 0) break;
    el(svg, "line", {x1: L, x2: R, y1: Y(v), y2: Y(v), class: "grid"});
    el(svg, "text", {x: L - 6, y: Y(v) + 4, "text-anchor": "end"}, String(v));
  }
  xAxis(svg, B);
  el(svg, "text", {x: L, y: T - 4}, "messages in flight per iteration");
  D.iterations.forEach((it, k) => {
    el(svg, "path", {class: "inflight", "data-iteration": it.iteration,
                     stroke: it.color, d: steps(it.points, X, Y)});
  });
  legend(svg, D.iterations.map(it => ({name: "iteration " + it.iteration, color: it.color})), B);
}
drawFrontiers();
drawInflight();
document.body.setAttribute("data-drawn", String(D.inputs.length));
</script>
</body></html>
"""
