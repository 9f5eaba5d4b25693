"""Ours against GraphX and scipy, side by side: what the job benchmarks (``perf.bench_wcc``,
``perf.bench_sssp``) share once their runs are recorded -- the systems, the child's
environment per system, ratios with bounds where a run timed out, the issue's targets, the
table and the PNG.

A run record is a dict with ``graph``, ``system``, ``status`` (``ok`` / ``failed`` /
``timeout``) and, when ``ok``, ``whole_s``, ``job_s``, ``spark_jobs_per_epoch``, ``rounds``; a
timed-out run has ``timed_out`` true and lower bounds ``whole_s_at_least`` /
``job_s_at_least`` instead (:meth:`perf.common.ChildRun.outcome`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from perf.common import figure

__all__ = ["SYSTEMS", "OURS", "system_env", "time_of", "ratio", "speedups", "Target",
           "evaluate_targets", "fmt_time", "format_runs", "format_speedups", "format_targets",
           "plot_systems"]

#: The systems: ours as ``tfront`` runs it, ours with every round on Spark, GraphX, scipy.
SYSTEMS = ("ours", "ours-spark", "graphx", "scipy")
#: The systems that are our job (compared against GraphX).
OURS = ("ours", "ours-spark")


def system_env(system: str, env: dict[str, str], driver_rows_var: str) -> dict[str, str]:
    """The child's environment for ``system``: ``ours-spark`` with ``driver_rows_var``
    (``TFRONT_WCC_DRIVER_ROWS`` / ``TFRONT_SSSP_DRIVER_ROWS``) set to ``0`` -- no epoch
    finished on the driver, every round a Spark job --, ``ours`` without it (the default
    sizing), the others as given.

    >>> system_env("ours-spark", {"X": "5"}, "X"), system_env("ours", {"X": "5"}, "X")
    ({'X': '0'}, {})
    """
    env = dict(env)
    if system == "ours-spark":
        env[driver_rows_var] = "0"
    elif system == "ours":
        env.pop(driver_rows_var, None)
    return env


# --- ratios --------------------------------------------------------------------------------

def _find(runs: Sequence[dict], graph: str, system: str) -> dict | None:
    for r in runs:
        if r["graph"] == graph and r["system"] == system:
            return r
    return None


def time_of(rec: dict | None, key: str) -> tuple[float | None, str]:
    """``(seconds, kind)`` of ``rec[key]`` (``whole_s`` / ``job_s``): ``"="`` measured, ``">"``
    a lower bound (the run timed out), ``(None, "")`` where there is nothing to say."""
    if rec is None:
        return None, ""
    if rec.get("status") == "ok" and rec.get(key) is not None:
        return float(rec[key]), "="
    if rec.get("status") == "timeout" and rec.get(f"{key}_at_least") is not None:
        return float(rec[f"{key}_at_least"]), ">"
    return None, ""


def ratio(slow: dict | None, fast: dict | None, key: str) -> tuple[float | None, str]:
    """``slow[key] / fast[key]`` and its kind: ``"="``, ``">="`` (``slow`` timed out: a lower
    bound) or ``"<="`` (``fast`` timed out); ``(None, "")`` when both timed out or either
    failed.

    >>> ratio({"status": "timeout", "job_s_at_least": 100.0}, {"status": "ok", "job_s": 4.0},
    ...       "job_s")
    (25.0, '>=')
    """
    a, ka = time_of(slow, key)
    b, kb = time_of(fast, key)
    if a is None or b is None or (ka == ">" and kb == ">") or b <= 0:
        return None, ""
    return a / b, {("=", "="): "=", (">", "="): ">=", ("=", ">"): "<="}[(ka, kb)]


def speedups(runs: Sequence[dict], graphs: Sequence[str]) -> dict:
    """Per graph and our system, GraphX's time over ours (above 1: ours faster): ``whole``,
    ``job`` and their kinds ``whole_bound`` / ``job_bound`` (:func:`ratio`); only where a
    ratio exists."""
    out = {}
    for g in graphs:
        gx = _find(runs, g, "graphx")
        row = {}
        for s in OURS:
            entry = {}
            for key in ("whole", "job"):
                v, kind = ratio(gx, _find(runs, g, s), f"{key}_s")
                if v is not None:
                    entry[key], entry[f"{key}_bound"] = v, kind
            if entry:
                row[s] = entry
        if row:
            out[g] = row
    return out


# --- targets -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One of the issue's targets on ``graph`` (``"*"``: every graph run):

    * ``speedup`` -- GraphX's ``key`` time over ``system``'s at least ``threshold``
      (``beside``: the other time's ratio, shown with it);
    * ``whole_under`` -- ``system``'s whole process under ``threshold`` seconds;
    * ``jobs_per_diameter`` -- ``system``'s Spark jobs per epoch at most ``threshold`` times
      the graph's diameter;
    * ``finishes`` -- ``system`` finishes;
    * ``tracking_share`` -- ``system``'s progress tracking at most ``threshold`` of its job
      time, on every graph.
    """

    graph: str
    kind: str
    threshold: float | None
    text: str
    system: str = "ours"
    key: str = "whole"


def _verdict(ok: bool, decides: str = "both") -> str:
    """PASS / FAIL where the value is measured (``decides`` ``both``); where it is only a bound,
    it decides one way (``PASS``: a lower bound on a speed-up; ``FAIL``: a lower bound on a
    time or a count), and is ``open`` the other way."""
    if decides == "both":
        return "PASS" if ok else "FAIL"
    if decides == "PASS":
        return "PASS" if ok else "open"
    return "open" if ok else "FAIL"


def evaluate_targets(targets: Sequence[Target], runs: Sequence[dict], graphs: Sequence[str],
                     metas: dict, sp: dict) -> list[dict]:
    """Each target with ``value``, ``bound`` (``=``, ``>=``, ``<=``), ``beside`` and
    ``verdict``: PASS, FAIL, ``open`` (only a bound that does not decide: a timed-out GraphX
    whose lower bound is short of the target) or ``n/a`` (not run)."""
    res = []
    for t in targets:
        e = {"target": t.text, "graph": t.graph, "system": t.system, "threshold": t.threshold,
             "value": None, "bound": "", "verdict": "n/a"}
        res.append(e)
        if t.graph != "*" and t.graph not in graphs:
            continue
        rec = _find(runs, t.graph, t.system)
        if t.kind == "speedup":
            s = sp.get(t.graph, {}).get(t.system, {})
            other = "job" if t.key == "whole" else "whole"
            if other in s:
                e["beside"] = {"key": other, "value": s[other], "bound": s[f"{other}_bound"]}
            if t.key in s:
                e.update(value=s[t.key], bound=s[f"{t.key}_bound"])
                e["verdict"] = _verdict(e["value"] >= t.threshold,
                                        {"=": "both", ">=": "PASS", "<=": "FAIL"}[e["bound"]])
            elif rec is not None and rec["status"] != "ok":
                e.update(value=rec["status"], verdict="FAIL")
        elif t.kind == "whole_under":
            v, kind = time_of(rec, "whole_s")
            if v is not None:
                e.update(value=v, bound="=" if kind == "=" else ">=")
                e["verdict"] = _verdict(v < t.threshold, "both" if kind == "=" else "FAIL")
            elif rec is not None:
                e.update(value=rec["status"], verdict="FAIL")
        elif t.kind == "jobs_per_diameter":
            diameter = (metas.get(t.graph) or {}).get("diameter")
            if diameter:
                e["limit"] = t.threshold * diameter
            if rec is not None and rec["status"] == "ok" and diameter:
                e.update(value=rec.get("spark_jobs_per_epoch"),
                         bound="=" if rec.get("spark_jobs_exact", True) else ">=")
                if e["value"] is not None:
                    e["verdict"] = _verdict(e["value"] <= e["limit"],
                                            "both" if e["bound"] == "=" else "FAIL")
            elif rec is not None and rec["status"] != "ok":
                e.update(value=rec["status"], verdict="FAIL")
        elif t.kind == "finishes":
            if rec is not None:
                e.update(value=rec["status"], verdict="PASS" if rec["status"] == "ok" else "FAIL")
        elif t.kind == "tracking_share":
            shares = [r["tracking_share"] for r in runs if r["system"] == t.system
                      and r["status"] == "ok" and r.get("tracking_share") is not None]
            if shares:
                e.update(value=max(shares), bound="=",
                         verdict="PASS" if max(shares) <= t.threshold else "FAIL")
        else:
            raise ValueError(f"unknown target kind {t.kind!r}")
    return res


# --- the table -----------------------------------------------------------------------------

def _fmt(v, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def fmt_time(rec: dict, key: str) -> str:
    """``12.34``, ``>300.0`` for a timed-out run's lower bound, ``-`` otherwise."""
    v, kind = time_of(rec, key)
    if v is None:
        return "-"
    return f"{v:.2f}" if kind == "=" else f">{v:.1f}"


def format_runs(runs: Sequence[dict],
                extra: Sequence[tuple[str, int, Callable[[dict], str]]] = ()) -> list[str]:
    """One line per run: graph, system, status, whole and job seconds (``>T`` where it timed
    out), Spark start-up, Spark jobs per epoch, rounds, peak memory, then ``extra`` columns
    ``(header, width, cell)``; a run that did not finish adds a line with its error."""
    hdr = (f"{'graph':<9} {'system':<10} {'status':<8} {'whole s':>8} {'job s':>8} "
           f"{'start s':>7} {'jobs/ep':>8} {'rounds':>7} {'peak MB':>8}"
           + "".join(f" {h:>{w}}" for h, w, _ in extra))
    lines = [hdr, "-" * len(hdr)]
    for r in runs:
        peak = r.get("peak_total_kib")
        jobs = r.get("spark_jobs_per_epoch")
        jobs_s = "-" if jobs is None else (f"{jobs:.1f}" if r.get("spark_jobs_exact", True)
                                           else f">{jobs:.0f}")
        lines.append(f"{r['graph']:<9} {r['system']:<10} {r['status']:<8} "
                     f"{fmt_time(r, 'whole_s'):>8} {fmt_time(r, 'job_s'):>8} "
                     f"{_fmt(r.get('session_s')):>7} {jobs_s:>8} {_fmt(r.get('rounds'), 'd'):>7} "
                     f"{_fmt(peak / 1024 if peak else None, '.0f'):>8}"
                     + "".join(f" {cell(r):>{w}}" for _, w, cell in extra))
        if r["status"] != "ok":
            lines.append(f"    {r['status']}: {str(r.get('error', '')).strip().splitlines()[-1:]}")
    return lines


def _ratio_text(v: float | None, bound: str) -> str:
    return "-" if v is None else f"{'' if bound == '=' else bound}{v:.2f}x"


def format_speedups(sp: dict) -> list[str]:
    lines = ["speed-up over GraphX (GraphX time / ours; > 1: ours faster; >= where GraphX "
             "timed out: a lower bound)"]
    for g, row in sp.items():
        for s, e in row.items():
            lines.append(f"  {g:<9} {s:<10} whole {_ratio_text(e.get('whole'), e.get('whole_bound')):>9}"
                         f"   job {_ratio_text(e.get('job'), e.get('job_bound')):>9}")
    return lines


def format_targets(targets: Sequence[dict]) -> list[str]:
    lines = ["targets"]
    for t in targets:
        v = t["value"]
        if isinstance(v, float):
            vs = f"{'' if t['bound'] in ('=', '') else t['bound']}{v:.3g}"
        else:
            vs = "-" if v is None else str(v)
        if "limit" in t:
            vs += f", limit {t['limit']:.3g}"
        if "beside" in t:
            b = t["beside"]
            vs += f"; {b['key']} {_ratio_text(b['value'], b['bound'])}"
        lines.append(f"  [{t['verdict']:>4}] {t['target']}  (value {vs})")
    return lines


# --- the PNG -------------------------------------------------------------------------------

COLORS = {"ours": "tab:blue", "ours-spark": "tab:cyan", "graphx": "tab:red", "scipy": "tab:gray"}


def plot_systems(results: dict, path: str | os.PathLike, labels: Sequence[str], *, title: str,
                 dpi: int, fontsize: int) -> None:
    """Bars per graph and system on log scales: whole-process seconds, job seconds and Spark
    jobs per epoch. A timed-out run is a hatched bar up to its lower bound, labelled ``>T``;
    a failed one is marked ``failed``. ``labels``: the graphs' tick labels."""
    graphs = results["parameters"]["graphs"]
    systems = results["parameters"]["systems"]
    panels = (("whole_s", "whole process (s, incl. start-up)"),
              ("job_s", "job after the session is up (s)"),
              ("spark_jobs_per_epoch", "Spark jobs per epoch"))
    with figure(path, dpi=dpi, ncols=3, figsize=(max(12, 1.6 * len(graphs) * 3), 5.0)) as (fig, axes):
        width = 0.8 / max(1, len(systems))
        for ax, (key, sub) in zip(axes, panels):
            for j, sysname in enumerate(systems):
                color = COLORS.get(sysname, "k")
                for i, g in enumerate(graphs):
                    rec = _find(results["runs"], g, sysname)
                    if rec is None:
                        continue
                    x = i + (j - (len(systems) - 1) / 2) * width
                    if key == "spark_jobs_per_epoch":
                        v = rec.get(key) if rec["status"] == "ok" else None
                        kind = "=" if v else ""
                    else:
                        v, kind = time_of(rec, key)
                    if v:
                        ax.bar(x, v, width, color=color, hatch="//" if kind == ">" else None,
                               alpha=0.5 if kind == ">" else 1.0, edgecolor=color)
                        ax.text(x, v, (">" if kind == ">" else "") + f"{v:.3g}", ha="center",
                                va="bottom", fontsize=6, rotation=90 if kind == ">" else 0)
                        if kind == ">":
                            ax.text(x, 0.02, "timed out", rotation=90, ha="center",
                                    va="bottom", fontsize=6, transform=ax.get_xaxis_transform())
                    elif rec["status"] != "ok" or key != "spark_jobs_per_epoch":
                        ax.text(x, 0.02, rec["status"] if rec["status"] != "ok" else "n/a",
                                rotation=90, ha="center", va="bottom", fontsize=6, color=color,
                                transform=ax.get_xaxis_transform())
            ax.set_yscale("log")
            ax.set_xticks(range(len(graphs)))
            ax.set_xticklabels(labels, fontsize=7)
            ax.set_title(sub, fontsize=fontsize)
            ax.grid(axis="y", which="both", alpha=0.3)
        from matplotlib.patches import Patch

        handles = [Patch(color=COLORS.get(s, "k"), label=s) for s in systems]
        handles.append(Patch(facecolor="white", edgecolor="k", hatch="//", label="timed out (>T)"))
        axes[0].legend(handles=handles, fontsize=7)
        fig.suptitle(title, fontsize=fontsize)
