"""A directory of epoch files, read by the driver one file per epoch -- or followed as a stream.

:func:`edge_files` lists the epoch files in natural order of their names (``e2`` before
``e10``; hidden and ``_`` files skipped). :func:`follow_files` consumes a directory as a
**stream** (``--follow``): after the files present, new files become the next epochs as
they appear -- each taken once complete (stable at two listings; a Parquet footer, a text
file's last newline) -- until the marker :data:`DONE_MARKER` exists or the stream goes idle.
Each file is then read by its format's reader (:mod:`~spark_plugin.sources.local`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

from spark_plugin.errors import EdgeInputError
from spark_plugin.sources.files import FileStamp, edge_format
from spark_plugin.sources.parquet import parquet_complete
from spark_plugin.sources.text import text_complete

__all__ = ["natural_key", "edge_files", "DONE_MARKER", "follow_files"]

#: The marker file that ends a followed directory stream (:func:`follow_files`).
DONE_MARKER = "_DONE"


def natural_key(name: str):
    """Sort key of natural order: digit runs compare as numbers (``e2`` before ``e10``).

    >>> sorted(["e10.txt", "e2.txt", "e1.txt"], key=natural_key)
    ['e1.txt', 'e2.txt', 'e10.txt']
    """
    parts = [(0, int(t), "") if t.isdigit() else (1, 0, t)
             for t in re.split(r"([0-9]+)", name) if t]
    return parts, name    # equal numbers written differently (2, 02): by the name


def edge_files(directory) -> list[Path]:
    """The epoch files of a directory in natural order of their names (``e2`` before
    ``e10``); hidden and ``_``-prefixed names and sub-directories skipped.

    Raises
    ------
    EdgeInputError
        An entry that would be an epoch but is no regular file -- a symbolic link to a
        missing file, a FIFO, a socket, a device (issue 32 item 4): never skipped silently,
        which would drop its epoch."""
    import stat

    d = Path(directory)
    files = []
    for p in d.iterdir():
        if p.name.startswith((".", "_")):
            continue
        try:
            mode = p.stat().st_mode
        except FileNotFoundError:
            raise EdgeInputError(f"{p}: a symbolic link to a missing file "
                                 f"({os.readlink(p)!r}) among the epoch files: remove it or "
                                 f"give it a hidden or '_' name", str(p)) from None
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device")
            raise EdgeInputError(f"{p}: {kind}, not a regular file, among the epoch "
                                 f"files: a stream is read once and would not be the same "
                                 f"epoch again; write it to a file (or give it a hidden or "
                                 f"'_' name)", str(p))
        files.append(p)
    return sorted(files, key=lambda p: natural_key(p.name))


def follow_files(path: Path, idle: float, poll: float,
                 sleep) -> Iterator[tuple[Path, FileStamp]]:
    """The files of the directory ``path`` as a stream: ``(file, stamp)`` once each file is
    complete, in natural order within a listing, until :data:`DONE_MARKER` exists and every
    file is taken, or no file appeared or grew for ``idle`` seconds; ``poll`` seconds between
    listings (``sleep`` waits them). A taken file that changes afterwards stops the stream.

    Raises
    ------
    EdgeInputError
        A taken file changed or vanished; the stream went idle with a text file's last line
        unfinished."""
    import time

    seen: set[str] = set()
    taken: list[FileStamp] = []
    sizes: dict[str, FileStamp] = {}   # a new file's stamp at the previous listing
    last = time.monotonic()
    while True:
        done = (path / DONE_MARKER).exists()   # before listing: files written before it count
        for st in taken:     # a consumed file must stay as it was: refuse loudly otherwise
            if os.path.exists(st.path):
                st.check("after the job took it")
        quiet = time.monotonic() - last >= idle
        ready, waiting = [], False
        for f in edge_files(path):
            if f.name in seen:
                continue
            try:
                st = FileStamp.of(f)
            except EdgeInputError:   # gone between listing and stat
                continue
            prev = sizes.get(f.name)
            stable = prev is not None and prev.same(st)
            complete = (parquet_complete(f, st.size) if edge_format(f) == "parquet"
                        else text_complete(f, st.size))
            if quiet and stable and not (complete or done) and edge_format(f) != "parquet":
                raise EdgeInputError(
                    f"{f}: the stream went idle ({idle:g} s) with this file's last line "
                    f"unfinished (no newline at its end): it may be half written; end the "
                    f"file with a newline, or write {DONE_MARKER} to say it is complete",
                    str(f))
            if waiting or not stable or not (complete or done or quiet):
                if not stable:          # a new or growing file: the stream is not idle
                    last = time.monotonic()
                sizes[f.name] = st
                waiting = True   # later files wait too: epochs keep the natural order
                continue
            ready.append((f, st))
        for f, st in ready:
            seen.add(f.name)
            sizes.pop(f.name, None)
            taken.append(st)
            yield f, st
        if ready:
            last = time.monotonic()
            continue
        if not waiting and (done or time.monotonic() - last >= idle):
            return
        sleep(poll if waiting else min(poll, max(0.0, idle - (time.monotonic() - last))))
