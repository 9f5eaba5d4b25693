"""Edge input of the WCC job: SNAP text, CSV with a header, Parquet; epochs from slices or files.

* **SNAP text** (any name but ``*.csv`` / ``*.parquet``; ``.gz`` is decompressed): one edge
  ``src dst`` per line, separated by white space or a comma; ``#`` starts a comment; blank
  lines are skipped.
* **CSV** (``*.csv``, ``*.csv.gz``): a header line; the columns ``src`` and ``dst`` (else the
  first two columns); ``#`` comment lines are skipped.
* **Parquet** (``*.parquet``, ``*.pq``): integer columns ``src`` and ``dst``.

Ids must be non-negative integers that fit int64. Anything else raises
:class:`EdgeInputError`, naming the file and the line (the row for Parquet).

:func:`epoch_sources` turns a file into ``K`` consecutive, equal slices of its rows, or a
directory into one epoch per file (sorted by name, hidden and ``_`` files skipped).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import TimelyFrontierError

__all__ = ["EdgeInputError", "read_edges", "epoch_sources", "edge_files", "EDGE_SCHEMA",
           "EpochSource", "ParquetSlice", "DONE_MARKER", "edge_format", "even_cuts"]

#: The schema :func:`read_edges` returns.
EDGE_SCHEMA = pa.schema([pa.field("src", pa.int64(), nullable=False),
                         pa.field("dst", pa.int64(), nullable=False)])


class EdgeInputError(TimelyFrontierError, ValueError):
    """An edge file is malformed: the message names the file and the line (or row).

    Attributes
    ----------
    path : str
    line : int or None
        1-based line number (row number, 1-based, for Parquet); ``None`` for file-level errors.
    """

    def __init__(self, message: str, path: str, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


def _fmt(path) -> str:
    return str(path)


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    return "text"


def edge_format(path) -> str:
    """``"parquet"``, ``"csv"`` or ``"text"``: how :func:`read_edges` reads ``path`` (by name)."""
    return _kind(Path(path))


def _open_text(path: Path) -> str:
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return f.read()
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise EdgeInputError(f"{_fmt(path)}: not a UTF-8 text edge file ({e})", str(path)) from None


def read_edges(path) -> pa.Table:
    """Read one edge file as a table ``src int64, dst int64`` (rows in file order).

    Raises
    ------
    EdgeInputError
        A malformed line (not two fields), a non-integer or negative id; the message reads
        ``FILE:LINE: ...``.
    FileNotFoundError
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"edge file {_fmt(path)!r} does not exist")
    kind = _kind(path)
    if kind == "parquet":
        return _read_parquet(path)
    text = _open_text(path)
    if kind == "text":
        fast = _parse_simple_text(text)
        if fast is not None:
            return fast
    return _parse_lines(path, text.splitlines(), csv=kind == "csv")


def _parse_simple_text(text: str) -> pa.Table | None:
    """Fast path for the common SNAP text file: every non-blank line is exactly ``src<sep>dst``
    with one space or one tab, non-negative int64 ids, no comments (but a header of ``#``
    lines), no commas. Returns
    ``None`` when the text is anything else (the line-by-line parser then accepts it or names
    the offending line), so both paths accept exactly the same files with the same rows."""
    pos = 0   # skip leading comment and blank lines (a SNAP header)
    while pos < len(text) and text[pos] in "#\n":
        if text[pos] == "\n":
            pos += 1
            continue
        nl = text.find("\n", pos)
        pos = len(text) if nl < 0 else nl + 1
    text = text[pos:]
    if not text or "#" in text or "," in text or "\r" in text:
        return None
    head = text[:256]
    first = head.split("\n", 1)[0]
    sep = " " if " " in first else "\t" if "\t" in first else None
    if sep is None or (sep == " " and "\t" in text):
        return None
    import pyarrow.csv as pcsv

    try:
        t = pcsv.read_csv(
            pa.py_buffer(text.encode("utf-8")),
            read_options=pcsv.ReadOptions(column_names=["src", "dst"], use_threads=True),
            parse_options=pcsv.ParseOptions(delimiter=sep, quote_char=False,
                                            double_quote=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={"src": pa.int64(), "dst": pa.int64()}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None
    if t.num_columns != 2 or t.column("src").null_count or t.column("dst").null_count:
        return None
    src = t.column("src").combine_chunks() if t.num_rows else pa.array([], pa.int64())
    dst = t.column("dst").combine_chunks() if t.num_rows else pa.array([], pa.int64())
    if t.num_rows and (pc.min(src).as_py() < 0 or pc.min(dst).as_py() < 0):
        return None
    return pa.Table.from_arrays([src, dst], schema=EDGE_SCHEMA)


def _parse_lines(path: Path, lines: list[str], *, csv: bool) -> pa.Table:
    cols = (0, 1)
    ncols = None
    rows: list[list[str]] = []
    numbers: list[int] = []
    header_seen = not csv
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not header_seen:
            names = [c.strip().strip('"').lower() for c in line.split(",")]
            if "src" in names and "dst" in names:
                cols = (names.index("src"), names.index("dst"))
            elif len(names) < 2:
                raise EdgeInputError(f"{_fmt(path)}:{no}: CSV header {line!r} has fewer than two "
                                     f"columns (expected src,dst)", str(path), no)
            ncols = len(names)
            header_seen = True
            continue
        if csv:
            fields = [c.strip() for c in line.split(",")]
            if len(fields) != ncols:
                raise EdgeInputError(f"{_fmt(path)}:{no}: malformed line {raw!r}: {len(fields)} "
                                     f"fields, the header has {ncols}", str(path), no)
            fields = [fields[cols[0]], fields[cols[1]]]
        else:
            if "#" in line:
                line = line.split("#", 1)[0]
            fields = line.replace(",", " ").split()
            if len(fields) != 2:
                raise EdgeInputError(f"{_fmt(path)}:{no}: malformed line {raw!r}: expected two "
                                     f"vertex ids 'src dst'", str(path), no)
        rows.append(fields)
        numbers.append(no)
    n = len(rows)
    flat = [x for r in rows for x in r]
    try:
        ids = np.array(flat, dtype=np.int64) if n else np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        ids = None
    if ids is None or ids.shape != (2 * n,):
        for r, no in zip(rows, numbers):
            for x in r:
                try:
                    v = int(x)
                except ValueError:
                    raise EdgeInputError(f"{_fmt(path)}:{no}: vertex id {x!r} is not an integer",
                                         str(path), no) from None
                if not -(1 << 63) <= v < (1 << 63):
                    raise EdgeInputError(f"{_fmt(path)}:{no}: vertex id {x} does not fit int64",
                                         str(path), no)
        raise EdgeInputError(f"{_fmt(path)}: cannot parse vertex ids", str(path))  # pragma: no cover
    neg = np.flatnonzero(ids < 0)
    if neg.size:
        r = int(neg[0]) // 2
        raise EdgeInputError(f"{_fmt(path)}:{numbers[r]}: vertex id {int(ids[neg[0]])} is "
                             f"negative; ids must be >= 0", str(path), numbers[r])
    ids = ids.reshape(n, 2)
    return pa.Table.from_arrays([pa.array(ids[:, 0]), pa.array(ids[:, 1])], schema=EDGE_SCHEMA)


def _read_parquet(path: Path) -> pa.Table:
    return ParquetSlice.of(path).read()


def _check_parquet(t: pa.Table, path, first_row: int) -> pa.Table:
    """Validate the columns ``src, dst`` of rows of a Parquet edge file (``first_row``: the
    0-based file row of ``t``'s first row; errors name 1-based file rows)."""
    cols = []
    for name in ("src", "dst"):
        c = t.column(name).combine_chunks() if t.num_rows else pa.array([], pa.int64())
        if not pa.types.is_integer(c.type):
            raise EdgeInputError(f"{_fmt(path)}: column {name!r} has type {c.type}, expected "
                                 f"integer vertex ids", str(path))
        if c.null_count:
            row = first_row + int(np.flatnonzero(c.is_null().to_numpy(zero_copy_only=False))[0]) + 1
            raise EdgeInputError(f"{_fmt(path)}: row {row}: column {name!r} is null", str(path),
                                 row)
        try:
            c = c.cast(pa.int64())
        except pa.ArrowInvalid as e:
            raise EdgeInputError(f"{_fmt(path)}: column {name!r}: {e}", str(path)) from None
        if len(c) and pc.min(c).as_py() < 0:   # only a bad file pays for finding the row
            v = c.to_numpy(zero_copy_only=False)
            k = int(np.flatnonzero(v < 0)[0])
            row = first_row + k + 1
            raise EdgeInputError(f"{_fmt(path)}: row {row}: vertex id {int(v[k])} in column "
                                 f"{name!r} is negative; ids must be >= 0", str(path), row)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=EDGE_SCHEMA)


def even_cuts(n: int, k: int) -> list[int]:
    """The ``k + 1`` bounds of ``k`` consecutive, equal slices of ``n`` rows (the first ones
    one row shorter when ``k`` does not divide ``n``)."""
    return [(i * n) // k for i in range(k + 1)]


class ParquetSlice:
    """Rows ``[start, stop)`` (0-based) of a Parquet edge file, read -- and validated -- by
    whoever needs them: the driver (:meth:`read`) or a Spark task (:meth:`read` of a
    sub-range), which opens only the row groups it needs. Errors name 1-based file rows."""

    __slots__ = ("path", "start", "stop")

    def __init__(self, path, start: int, stop: int):
        self.path, self.start, self.stop = str(path), int(start), int(stop)

    @classmethod
    def of(cls, path, start: int = 0, stop: int | None = None) -> "ParquetSlice":
        """The rows ``[start, stop)`` of ``path`` (default: all); checks the file's footer and
        columns now, the values when read."""
        pf = cls._open(path)
        n = pf.metadata.num_rows
        return cls(path, start, n if stop is None else min(stop, n))

    @staticmethod
    def _open(path):
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{_fmt(path)}: not a readable Parquet file ({e})",
                                 str(path)) from None
        names = pf.schema_arrow.names
        for name in ("src", "dst"):
            if name not in names:
                raise EdgeInputError(f"{_fmt(path)}: Parquet file has no column {name!r} "
                                     f"(columns: {', '.join(names) or '(none)'})", str(path))
        return pf

    @property
    def rows(self) -> int:
        return self.stop - self.start

    def part(self, p: int, parts: int) -> "ParquetSlice":
        """The ``p``-th of ``parts`` consecutive, equal sub-slices."""
        cuts = even_cuts(self.rows, parts)
        return ParquetSlice(self.path, self.start + cuts[p], self.start + cuts[p + 1])

    def read(self) -> pa.Table:
        """The rows as ``src int64, dst int64`` (validated)."""
        if self.rows <= 0:
            return EDGE_SCHEMA.empty_table()
        pf = self._open(self.path)
        md = pf.metadata
        groups, first, at = [], None, 0
        for g in range(md.num_row_groups):
            k = md.row_group(g).num_rows
            if at < self.stop and at + k > self.start:
                groups.append(g)
                first = at if first is None else first
            at += k
        try:
            t = pf.read_row_groups(groups, columns=["src", "dst"])
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{_fmt(self.path)}: not a readable Parquet file ({e})",
                                 self.path) from None
        t = t.slice(self.start - first, self.rows)
        return _check_parquet(t, self.path, self.start)

    def __repr__(self) -> str:
        return f"ParquetSlice({self.path!r}, {self.start}, {self.stop})"


def edge_files(directory) -> list[Path]:
    """The epoch files of a directory, sorted by name (hidden and ``_``-prefixed skipped)."""
    d = Path(directory)
    return sorted(p for p in d.iterdir()
                  if p.is_file() and not p.name.startswith((".", "_")))


class EpochSource:
    """One epoch's edges: ``what`` (for messages), ``read()`` (the rows as ``src, dst`` on the
    driver, validated) and, for Parquet input, ``scan`` (a :class:`ParquetSlice` that Spark
    tasks can read themselves; ``None`` otherwise)."""

    __slots__ = ("what", "read", "scan")

    def __init__(self, what: str, read, scan: ParquetSlice | None = None):
        self.what, self.read, self.scan = what, read, scan


#: The marker file that ends a followed directory stream (:func:`epoch_sources`).
DONE_MARKER = "_DONE"


def epoch_sources(edges, epochs: int = 1, *, follow: float | None = None,
                  poll: float = 0.5) -> tuple[int | None, Iterator[EpochSource]]:
    """``(number of epochs, iterator of EpochSource per epoch)``.

    A text or CSV file is read (and validated) once, up front, and split into ``epochs``
    consecutive slices of equal size (the first slices one row shorter when it does not
    divide); a Parquet file is split the same way by its row count (footer), each slice read
    and validated when its epoch starts; a directory yields one epoch per file, each read when
    its epoch starts.

    ``follow`` (directories only) consumes the directory as a **stream**: after the files
    present, new files become the next epochs as they appear (name order within one listing;
    every file exactly once), until the marker file ``_DONE`` exists and every file is
    consumed, or no new file has appeared for ``follow`` seconds (``math.inf``: wait for the
    marker). The number of epochs is then ``None``. Writers should create each file under a
    hidden or ``_``-prefixed name and rename it when complete (those names are skipped).
    """
    path = Path(edges)
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise EdgeInputError(f"--epochs must be a positive integer, got {epochs!r}", str(path))
    if follow is not None:
        if not path.is_dir():
            raise EdgeInputError(f"{_fmt(path)}: following needs a directory of epoch files",
                                 str(path))
        if not follow > 0:
            raise ValueError(f"follow must be a positive number of seconds, got {follow!r}")
        return None, _follow(path, float(follow), float(poll))
    if path.is_dir():
        files = edge_files(path)
        return len(files), (_file_source(f) for f in files)
    if not path.exists():
        raise FileNotFoundError(f"edge file {_fmt(path)!r} does not exist")
    if _kind(path) == "parquet":
        whole = ParquetSlice.of(path)
        slices = [whole.part(e, epochs) for e in range(epochs)]
        return epochs, (EpochSource(f"{path} rows {s.start + 1}-{s.stop}", s.read, s)
                        for s in slices)
    table = read_edges(path)
    bounds = even_cuts(table.num_rows, epochs)
    return epochs, (EpochSource(f"{path} rows {bounds[e] + 1}-{bounds[e + 1]}",
                                (lambda s=bounds[e], t=bounds[e + 1]: table.slice(s, t - s)))
                    for e in range(epochs))


def _file_source(f: Path) -> EpochSource:
    """A directory's epoch file (called when its epoch starts: the iterator is lazy)."""
    if _kind(f) == "parquet":
        whole = ParquetSlice.of(f)
        return EpochSource(str(f), whole.read, whole)
    return EpochSource(str(f), lambda: read_edges(f))


def _follow(path: Path, idle: float, poll: float) -> Iterator[EpochSource]:
    import time

    seen: set[str] = set()
    last = time.monotonic()
    while True:
        done = (path / DONE_MARKER).exists()   # before listing: files written before it count
        new = [f for f in edge_files(path) if f.name not in seen]
        for f in new:
            seen.add(f.name)
            yield _file_source(f)
        if new:
            last = time.monotonic()
            continue
        if done or time.monotonic() - last >= idle:
            return
        time.sleep(min(poll, max(0.0, idle - (time.monotonic() - last))))
