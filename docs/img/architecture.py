"""Draw docs/img/architecture.png: the packages as boxes in their layers, the imports between them.

The arrows are computed from the source with :mod:`ast` (every ``import`` and ``from ...
import`` of ``engine``, ``spark_plugin`` and ``gpu_kernels`` modules, relative ones resolved;
the graph and the layer rule are those of ``tests/test_layers.py``), so the picture stays true
as the code changes: rerun it after moving modules::

    .venv/bin/python docs/img/architecture.py            # writes docs/img/architecture.png
    .venv/bin/python docs/img/architecture.py --check    # only lists imports that break the layers

A solid arrow is an import at module level, a dashed one an import made only inside a function
(loaded lazily). An arrow that points up or sideways breaks the rule of
docs/architecture.md (a module imports only from its own unit or a lower layer): it is drawn
red and listed on stdout, and ``--check`` exits with status 1 when there is one.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
# the layer rule and the import graph, read with ast once, where the test that keeps them lives
from test_layers import GRAPH, RANK, unit_of  # noqa: E402

#: The layers, lowest first (docs/architecture.md), and the boxes in each, row by row. A
#: layer may take several rows (spark_plugin: its base, service and session, the edge
#: input, the job framework, the jobs); a box is a package or a named group of modules (see
#: ``box_of``).
LAYERS = [
    ("kernels", [["gpu_kernels"]]),
    ("errors", [["engine.errors"]]),
    ("semantics", [["engine.core"]]),
    ("trackers", [["engine.trackers"]]),
    ("batched engine", [["engine.batched"]]),
    ("operate, rollback, exchange", [["engine.operate", "engine.rollback", "engine.exchange"]]),
    ("jit, public API", [["engine.jit", "engine (API)"]]),
    ("integration", [["spark_plugin (errors, schema)"],
                     ["spark_plugin.service", "spark_plugin.session", "spark_plugin (API)"],
                     ["spark_plugin.sources"],
                     ["spark_plugin.jobs"],
                     ["spark_plugin.jobs.wcc", "spark_plugin.jobs.sssp"]]),
    ("command line", [["engine.cli", "commands"]]),
]

#: Where a box sits across the page (0 left .. 1 right) when not spread evenly over its row.
X = {"gpu_kernels": 0.72, "engine.errors": 0.28, "engine.trackers": 0.4, "engine.core": 0.55}

#: Boxes whose incoming arrows are not drawn (nearly every package imports them).
NOT_DRAWN_INTO = ("engine.errors",)

#: What each box holds, printed under its name.
NOTES = {
    "gpu_kernels": "CPU twins + CUDA kernels",
    "engine.errors": "one exception hierarchy",
    "engine.core": "timestamps, summaries, graph, Psi",
    "engine.trackers": "reference, timely-style, Naiad",
    "engine.batched": "BatchedTracker, backends, cost, Arrow schema",
    "engine.operate": "Operate, Scope, Report, progress view",
    "engine.rollback": "problem, format, solvers, state",
    "engine.exchange": "workers, policies, simulation, processes",
    "engine.jit": "compile kernels into the cache",
    "engine (API)": "engine/__init__.py",
    "spark_plugin (errors, schema)": "errors.py, schema.py (Spark types)",
    "spark_plugin.service": "FrontierService, persistence, executors",
    "spark_plugin.session": "presets, console",
    "spark_plugin (API)": "spark_plugin/__init__.py",
    "spark_plugin.sources": "local files, Spark sources, epochs, ids",
    "spark_plugin.jobs": "framework, recovery, progress bar",
    "spark_plugin.jobs.wcc": "job, sample",
    "spark_plugin.jobs.sssp": "job, spark",
    "engine.cli": "tfront",
    "commands": "jobs.*.cli, jobs.command, tfront_submit",
}


def box_of(mod: str) -> str:
    """The box a module is drawn in: its package, with the groups the layers name."""
    if mod == "engine":
        return "engine (API)"
    if mod in ("engine.errors", "engine.jit"):
        return mod
    if mod == "spark_plugin":
        return "spark_plugin (API)"
    if mod in ("spark_plugin.errors", "spark_plugin.schema"):
        return "spark_plugin (errors, schema)"
    if (mod in ("spark_plugin.jobs.command", "spark_plugin.tfront_submit")
            or (mod.startswith("spark_plugin.jobs.") and mod.endswith(".cli"))):
        return "commands"
    parts = mod.split(".")
    if parts[0] == "gpu_kernels":
        return "gpu_kernels"
    if parts[0] == "engine":
        return ".".join(parts[:2])
    # spark_plugin: the deepest listed package holding the module
    boxes = {b for _, rows in LAYERS for row in rows for b in row}
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in boxes:
            return ".".join(parts[:n])
    raise ValueError(f"module {mod} is in no box of LAYERS: add its package there")


def graph():
    """Boxes' layer and row, and the box-to-box imports: {(a, b): (top_level, [module pairs])}."""
    layer_of, row_of = {}, {}
    row = 0
    for li, (_, rows) in enumerate(LAYERS):
        for boxes in rows:
            for b in boxes:
                layer_of[b], row_of[b] = li, row
            row += 1
    edges: dict[tuple[str, str], list] = defaultdict(lambda: [False, []])
    for a, targets in GRAPH.items():
        for b, imp in targets.items():
            ba, bb = box_of(a), box_of(b)
            if ba != bb:
                e = edges[(ba, bb)]
                e[0] = e[0] or imp.top_level
                e[1].append((a, b, imp.top_level))
    return layer_of, row_of, dict(edges)


def breaks_layers(a: str, b: str) -> bool:
    """``a`` importing ``b`` points up or sideways: the rule of tests/test_layers.py."""
    ua, ub = unit_of(a), unit_of(b)
    return ua != ub and RANK[ub] >= RANK[ua]


def upward(layer_of, edges):
    """The imports that break the layers, as 'importer -> imported' lines."""
    return [f"{a} -> {b}" + ("" if top else " (inside a function)")
            for (ba, bb), (_, pairs) in sorted(edges.items())
            for a, b, top in sorted(pairs) if breaks_layers(a, b)]


def draw(out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    layer_of, row_of, edges = graph()
    nrows = max(row_of.values()) + 1
    W, LEFT, BW, BH, DY = 13.0, 2.6, 3.0, 0.62, 1.15
    pos = {}
    for _, rows in LAYERS:
        for boxes in rows:
            n = len(boxes)
            for i, b in enumerate(boxes):
                x = LEFT + (W - LEFT) * X.get(b, (i + 0.5) / n)
                pos[b] = (x, row_of[b] * DY)
    fig, ax = plt.subplots(figsize=(13, 0.9 * nrows + 1.2))
    ax.set_xlim(-0.2, W + 0.2)
    ax.set_ylim(-0.8, (nrows - 1) * DY + 0.9)
    ax.axis("off")

    # layer bands, lowest first, named on the left
    row = 0
    for li, (name, rows) in enumerate(LAYERS):
        y0, y1 = row * DY - DY / 2, (row + len(rows) - 1) * DY + DY / 2
        ax.add_patch(Rectangle((-0.1, y0 + 0.04), W + 0.2, y1 - y0 - 0.08,
                               color="#f2f2f2" if li % 2 else "#e6eef7", zorder=0))
        ax.text(0.0, (y0 + y1) / 2, f"{li}  {name}", va="center", ha="left", fontsize=9,
                color="#444444")
        row += len(rows)

    bad = upward(layer_of, edges)
    for (ba, bb), (top, pairs) in sorted(edges.items()):
        if bb in NOT_DRAWN_INTO:
            continue
        (xa, ya), (xb, yb) = pos[ba], pos[bb]
        up = any(breaks_layers(a, b) for a, b, _ in pairs)
        same_row = ya == yb
        start = (xa, ya + (0 if same_row else (-BH / 2 if yb < ya else BH / 2)))
        end = (xb, yb + (0 if same_row else (BH / 2 if yb < ya else -BH / 2)))
        if same_row:
            start = (xa + (BW / 2 if xb > xa else -BW / 2), ya)
            end = (xb + (-BW / 2 if xb > xa else BW / 2), yb)
        ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=9,
            connectionstyle="arc3,rad=0.12", linewidth=1.6 if up else 0.7,
            linestyle="-" if top else (0, (3, 2)),
            color="#d62728" if up else "#5a6b85", alpha=0.95 if up else 0.4, zorder=1))

    for b, (x, y) in pos.items():
        ax.add_patch(FancyBboxPatch((x - BW / 2, y - BH / 2), BW, BH,
                                    boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor="white", edgecolor="#2b4a7a", linewidth=1.2,
                                    zorder=2))
        ax.text(x, y + 0.1, b, ha="center", va="center", fontsize=9.5, weight="bold", zorder=3)
        ax.text(x, y - 0.15, NOTES.get(b, ""), ha="center", va="center", fontsize=7.5,
                color="#444444", zorder=3)
    ax.set_title("timely-frontier: packages by layer, lowest first. An arrow is an import (dashed:"
                 " only inside a function; red: upward, breaks the layers).\nImports of"
                 " engine.errors, which nearly every package makes, are not drawn.", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("architecture.png"))
    p.add_argument("--check", action="store_true", help="only list imports that break the layers")
    args = p.parse_args(argv)
    if args.check:
        layer_of, _, edges = graph()
        bad = upward(layer_of, edges)
    else:
        bad = draw(args.out)
        print(f"wrote {args.out}")
    for line in bad:
        print(f"upward import: {line}")
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
