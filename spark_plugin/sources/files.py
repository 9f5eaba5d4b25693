"""A local edge file: its format by name, its identity while a job uses it, its kind of file.

The driver reads local files (:mod:`~spark_plugin.sources.local`: text, CSV, Parquet);
:func:`edge_format` says which reader by the name, :class:`FileStamp` records what the file
was when the job took it (a file that changes later stops the job), and
:func:`check_regular` refuses a pipe or a device, which cannot be read more than once.
"""

from __future__ import annotations

import os
from pathlib import Path

from spark_plugin.errors import EdgeInputError

__all__ = ["edge_format", "FileStamp", "check_regular", "ends_with"]


def edge_format(path) -> str:
    """``"parquet"``, ``"csv"`` or ``"text"``: how the driver reads ``path`` (by name; a
    ``.gz`` suffix is decompressed first).

    >>> edge_format("e.parquet"), edge_format("e.csv.gz"), edge_format("e.txt")
    ('parquet', 'csv', 'text')
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    return "text"


class FileStamp:
    """What an input file was when the job recorded it: size, modification time (ns) and
    inode. :meth:`check` raises :class:`EdgeInputError` naming the file if it is no longer
    that file -- rewritten, appended to, or replaced (e.g. by a rename over it) -- so a job
    never mixes rows of two versions of an input, nor misses rows written after it took it.
    """

    __slots__ = ("path", "size", "mtime_ns", "ino")

    def __init__(self, path, size: int, mtime_ns: int, ino: int):
        self.path, self.size, self.mtime_ns, self.ino = str(path), size, mtime_ns, ino

    @classmethod
    def of(cls, path) -> "FileStamp":
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise EdgeInputError(f"{path}: the edge file does not exist", str(path)) from None
        return cls(path, st.st_size, st.st_mtime_ns, st.st_ino)

    def same(self, other: "FileStamp") -> bool:
        return (self.size, self.mtime_ns, self.ino) == (other.size, other.mtime_ns, other.ino)

    def check(self, when: str = "since the job recorded it") -> None:
        """Raise :class:`EdgeInputError` if the file changed (or vanished) since this stamp."""
        try:
            now = FileStamp.of(self.path)
        except EdgeInputError:
            raise EdgeInputError(f"{self.path}: the edge file was removed {when}; "
                                 f"input files must not change while the job uses them",
                                 self.path) from None
        if not self.same(now):
            what = (f"size {self.size} -> {now.size} bytes" if now.size != self.size
                    else "replaced" if now.ino != self.ino else "modification time changed")
            raise EdgeInputError(f"{self.path}: the edge file changed {when} ({what}); "
                                 f"input files must not change while the job uses them",
                                 self.path)

    def __repr__(self) -> str:
        return f"FileStamp({self.path!r}, {self.size}, {self.mtime_ns}, {self.ino})"


def check_regular(path) -> None:
    """An edge input must be a regular file or a directory: a pipe (``<(cat e.txt)``), a FIFO
    or a device (``/dev/zero``) can be read only once -- or never ends -- while a job reads
    its input more than once (the checks before Spark starts, the epochs, a resume), so rows
    would be lost or the read would not end (issue 32 items 2 and 11).

    Raises
    ------
    EdgeInputError
        ``path`` is something else, named with what it is."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return   # missing: the callers say so
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = ("a pipe or FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device")
    raise EdgeInputError(f"{path}: {kind}, not a regular file: the job reads its input "
                         f"more than once (checks, epochs, a resume), which a stream cannot "
                         f"give; write it to a file first (e.g. cat ... > edges.txt)", str(path))


def ends_with(path, size: int, tail: bytes) -> bool:
    """Whether the file ``path`` of ``size`` bytes ends with ``tail`` (``False`` when it
    cannot be read): how a followed directory sees that a writer finished a file."""
    if size < len(tail):
        return False
    try:
        with open(path, "rb") as h:
            h.seek(size - len(tail))
            return h.read(len(tail)) == tail
    except OSError:
        return False
