"""What every benchmark records about where it ran (git commit, machine), and the small
pieces of command-line and plot plumbing the ``perf/bench_*.py`` scripts share, so their
JSON files and plots describe runs the same way.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from pathlib import Path

import numpy as np

__all__ = ["ROOT", "git", "commit_info", "machine", "commit_label", "int_list"]

#: The repository root (the parent of ``perf/``).
ROOT = Path(__file__).resolve().parent.parent


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
