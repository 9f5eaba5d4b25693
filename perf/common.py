"""What the ``perf/`` benchmarks share, written once: where a run happened (commit, machine),
the command-line pieces (``--out``, ``--plot``, ``--quiet``, number and name lists), the JSON
result with repository-relative paths, the PNG, and timing, memory and child-process helpers.

Every ``perf/bench_*.py`` writes its JSON through :func:`write_results` (so a result never
records a machine's absolute paths) and draws through :func:`figure`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

__all__ = ["ROOT", "git", "commit_info", "machine", "commit_label", "utc_now", "int_list", "name_list",
           "add_output_args", "progress", "require_backend", "repo_path", "repo_relative",
           "write_results", "save_results", "figure", "timed", "maxrss_kib", "reset_peak_rss", "proc_kib", "process_children",
           "ChildRun",
           "child_env", "run_child_process", "child_main", "JOB_START_MARK", "job_started"]

#: The repository root (the parent of ``perf/``).
ROOT = Path(__file__).resolve().parent.parent


# --- where a run happened ------------------------------------------------------------------

def git(*args: str) -> str | None:
    """Output of ``git ARGS`` in the repository, or None where git is unavailable."""
    try:
        r = subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def commit_info() -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` (dirty: tracked files changed)."""
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def machine(**extra) -> dict:
    """Platform, interpreter, NumPy/Numba versions and CPU count, plus ``extra`` entries."""
    import numba

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "cpu_count": os.cpu_count(),
        "hostname": platform.node(),
        **extra,
    }


def commit_label(results: dict) -> str:
    """Short commit of a results dict for a plot title: ``'0123abcd45'`` or ``'...+dirty'``."""
    return (results.get("commit") or "unknown")[:10] + ("+dirty" if results.get("dirty") else "")


def utc_now() -> str:
    """The time now, UTC, to the second, ISO 8601 (a run's ``started`` / ``finished``)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# --- command line --------------------------------------------------------------------------

def int_list(text: str) -> list[int]:
    """argparse type: comma-separated positive integers, ``1e5`` forms accepted."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            val = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {part!r}") from None
        if val != int(val) or val < 1:
            raise argparse.ArgumentTypeError(f"expected a positive integer, got {part!r}")
        out.append(int(val))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def name_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    """argparse type body: comma-separated names, each one of ``allowed`` (at least one).

    >>> name_list("ours, scipy", ("ours", "graphx", "scipy"), "system")
    ['ours', 'scipy']
    """
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items


def add_output_args(p: argparse.ArgumentParser, out: str | Path | None, *,
                    plot: str | None = "also draw the results to this PNG",
                    quiet: str = "no progress lines, only the table") -> None:
    """``--out FILE.json`` (default ``out``), ``--plot FILE.png`` (unless ``plot`` is None: its
    help) and ``--quiet``; ``args.out`` and ``args.plot`` are Paths (or None)."""
    p.add_argument("--out", type=Path, default=out, help="JSON output file")
    if plot is not None:
        p.add_argument("--plot", type=Path, metavar="FILE.png", help=plot)
    p.add_argument("--quiet", action="store_true", help=quiet)


def progress(quiet: bool) -> Callable[..., None]:
    """The progress printer of a run: ``print`` flushed at once, or nothing under ``--quiet``."""
    if quiet:
        return lambda *a, **k: None
    return lambda *a, **k: print(*a, **k, flush=True)


def require_backend(p: argparse.ArgumentParser, backend: str) -> None:
    """Exit through ``p.error`` when ``backend`` cannot run here (e.g. ``cuda`` without a
    device), before anything is measured."""
    from engine.batched.backend import resolve_backend
    from engine.errors import TimelyFrontierError

    try:
        resolve_backend(backend)
    except TimelyFrontierError as e:
        p.error(str(e))


# --- the JSON result -----------------------------------------------------------------------

#: An absolute path inside a longer text (an input named in a message, a traceback line):
#: a ``/`` that no word, dot, colon or slash precedes, then at least one directory.
_EMBEDDED_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s/\"'():,]+/)+([^\s/\"'():,]*)")


def repo_path(path: str | os.PathLike) -> str:
    """``path`` as a result records it: relative to the repository root where it lies inside,
    the bare file name where it lies elsewhere (a temporary file, an interpreter), and as
    given where it is relative already.

    >>> repo_path(ROOT / "perf" / "results" / "wcc.json")
    'perf/results/wcc.json'
    >>> repo_path("/tmp/bench-x/e.parquet"), repo_path("g.parquet")
    ('e.parquet', 'g.parquet')
    """
    if not os.path.isabs(path):
        return os.fspath(path)
    real = Path(os.path.realpath(path))
    try:
        return real.relative_to(ROOT).as_posix() or "."
    except ValueError:
        return Path(path).name


def _relative_text(text: str) -> str:
    if os.path.isabs(text) and not any(c.isspace() for c in text):
        return repo_path(text)
    text = text.replace(f"{ROOT}{os.sep}", "")
    return _EMBEDDED_PATH.sub(lambda m: m.group(1), text)


def repo_relative(obj):
    """``obj`` (JSON-ready) with every absolute path in its strings made repository-relative
    (:func:`repo_path`; inside a longer text the repository prefix is dropped and a path
    elsewhere shortened to its file name). Numbers and keys are left as they are.

    >>> repo_relative({"input": f"{ROOT}/g.parquet rows 1-5", "n": 3, "cmd": ["/usr/bin/python"]})
    {'input': 'g.parquet rows 1-5', 'n': 3, 'cmd': ['python']}
    """
    if isinstance(obj, str):
        return _relative_text(obj)
    if isinstance(obj, dict):
        return {k: repo_relative(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [repo_relative(v) for v in obj]
    return obj


def write_results(results: dict, out: str | os.PathLike) -> Path:
    """Write ``results`` as indented JSON to ``out`` (parents created), paths made
    repository-relative (:func:`repo_relative`); returns the path written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(repo_relative(results), indent=1) + "\n")
    return out


def save_results(results: dict, args: argparse.Namespace,
                 plot: Callable[[dict, Path], None] | None = None, *,
                 table: str | None = None) -> Path:
    """The end of a benchmark's ``main``: :func:`write_results` to ``args.out``, print ``table``
    (when given) and ``wrote OUT``; with ``args.plot``, draw it with ``plot`` and say so."""
    out = write_results(results, args.out)
    if table is not None:
        print(table)
    print(f"wrote {out}")
    if plot is not None and args.plot:
        plot(results, args.plot)
        print(f"wrote {args.plot}")
    return out


# --- the PNG -------------------------------------------------------------------------------

@contextmanager
def figure(path: str | os.PathLike, *, dpi: int = 110, **subplots) -> Iterator[tuple]:
    """``with figure(path, dpi=..., figsize=...) as (fig, axes):`` draw; on leaving, the
    figure is laid out tightly and saved to ``path`` (parents created), off-screen (Agg), and
    closed. ``subplots`` go to ``plt.subplots``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(**subplots)
    try:
        yield fig, axes
        fig.tight_layout()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


# --- timing and memory ---------------------------------------------------------------------

def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """``(seconds, fn())``, timed with ``time.perf_counter`` (host work: nothing synchronised)."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def maxrss_kib() -> int:
    """This process's peak resident memory (``ru_maxrss``) in KiB."""
    scale = 1 if sys.platform.startswith("linux") else 1 / 1024  # macOS reports bytes
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale)


def proc_kib(pid: int, field: str = "VmRSS") -> int | None:
    """A memory figure of process ``pid`` from ``/proc/PID/status`` in KiB (``VmRSS``,
    ``VmHWM``, ...), or ``None`` (no such process, not Linux)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def process_children() -> dict[int, list[int]]:
    """Every process's children, by parent id, from one scan of ``/proc`` (whichever of a
    parent's threads started them); empty where there is no ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark to the current RSS (Linux: ``5`` written to
    ``/proc/self/clear_refs``); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# --- child processes -----------------------------------------------------------------------

#: The line a child prints when its timed job starts (:func:`job_started`), then the time.
JOB_START_MARK = "BENCH_JOB_START "


def job_started() -> None:
    """The child's side: say that the timed job starts now (the wall clock, which parent and
    child share), so that a parent that kills it on timeout knows how long the job ran."""
    print(f"{JOB_START_MARK}{time.time()!r}", flush=True)


@dataclass
class ChildRun:
    """What :func:`run_child_process` saw of one child: its wall time from start to reaping,
    exit code, the record it printed (or None), its stderr's tail, the ``ru_maxrss`` of what it
    reaped (KiB as the kernel reports it), whether it ran past the timeout, and when its job
    started (:func:`job_started`; seconds after the child started, None if it never said)."""

    whole_s: float
    returncode: int
    result: dict | None
    stderr: str
    maxrss_kib: int | None
    timed_out: bool
    job_started_s: float | None = None

    def outcome(self, rec: dict, timeout: float) -> dict | None:
        """Set ``status`` (``ok`` / ``failed`` / ``timeout``), ``timed_out`` and ``error`` on
        ``rec``; with ``ok``, merge the child's record and ``whole_s`` (the wall time less the
        child's ``verify_s``) and return the child's record, else None. A run killed at the
        timeout gets lower bounds instead of times: ``whole_s_at_least`` (the wall time until
        the kill) and ``job_s_at_least`` (from its job's start to the kill; None if the job
        never started)."""
        child = self.result
        rec["timed_out"] = self.timed_out
        if self.timed_out:
            rec.update(status="timeout", error=f"no result within the timeout of {timeout:g} s",
                       whole_s_at_least=self.whole_s,
                       job_s_at_least=(None if self.job_started_s is None
                                       else self.whole_s - self.job_started_s))
            return None
        if child is None or "error" in child:
            rec.update(status="failed", error=(child or {}).get("error")
                       or f"exit code {self.returncode}; stderr tail:\n{self.stderr}")
            return None
        rec.update(child)
        rec["status"] = "ok"
        rec["whole_s"] = self.whole_s - float(child.get("verify_s") or 0.0)
        return child


def child_env(**defaults: str) -> dict[str, str]:
    """This environment with the repository first on ``PYTHONPATH``, bytecode caching on, and
    ``defaults`` set where unset, for a ``python -m perf....`` child."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # a user's install has its bytecode cached; without the cache every child would compile
    # this repository's modules from source (1-2 s of a whole-process time on 2 cores)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for k, v in defaults.items():
        env.setdefault(k, v)
    return env


def _tail(path: Path, n: int = 3000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text[-n:]


def run_child_process(cmd: Sequence[str], *, timeout: float, mark: str,
                      env: dict[str, str] | None = None) -> ChildRun:
    """Run ``cmd`` in the repository in its own session, wait at most ``timeout`` seconds,
    then kill its whole process group (a JVM it started included) and read the last stdout
    line starting with ``mark`` as its JSON record (:func:`child_main` prints it), and the
    last :data:`JOB_START_MARK` line as the time its job started."""
    with tempfile.TemporaryDirectory(prefix="bench-child-") as tmp:
        out_p, err_p = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with open(out_p, "wb") as fo, open(err_p, "wb") as fe:
            wall0, t0 = time.time(), time.perf_counter()
            proc = subprocess.Popen(list(cmd), cwd=ROOT, env=env, stdout=fo, stderr=fe,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            deadline = t0 + timeout
            timed_out = False
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                if time.perf_counter() > deadline:
                    timed_out = True
                    _kill_group(proc.pid)
                    _, status, rusage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.02)
            whole = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            _kill_group(proc.pid)   # the child's session: make sure nothing is left behind
        stdout, stderr = out_p.read_text(errors="replace"), _tail(err_p)
    result = started = None
    for line in reversed(stdout.splitlines()):
        if result is None and line.startswith(mark):
            result = json.loads(line[len(mark):])
        if started is None and line.startswith(JOB_START_MARK):
            started = float(line[len(JOB_START_MARK):]) - wall0
    return ChildRun(whole, proc.returncode, result, stderr,
                    int(rusage.ru_maxrss) if rusage else None, timed_out, started)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def child_main(mark: str, system: str, run: Callable[[], dict]) -> int:
    """The child's side of :func:`run_child_process`: ``run()``'s record, or the error it
    raised with its traceback, printed on one line after ``mark``; 0, or 1 on an error."""
    try:
        rec = run()
    except BaseException as exc:  # noqa: BLE001 -- reported to the parent, not a crash
        import traceback
        rec = {"system": system, "error": f"{type(exc).__name__}: {exc}"[:4000],
               "traceback": traceback.format_exc()[-6000:]}
    print(mark + json.dumps(rec), flush=True)
    return 0 if "error" not in rec else 1
