"""Edge input of the jobs: SNAP text, CSV, Parquet, Arrow tables; epochs from slices or files.

* **SNAP text** (any name but ``*.csv`` / ``*.parquet``; ``.gz`` is decompressed): one edge
  ``src dst`` per line, separated by white space or a comma; ``#`` starts a comment; blank
  lines are skipped.
* **CSV** (``*.csv``, ``*.csv.gz``): fields separated by ``,``, ``;`` or a tab (whichever the
  first row uses), optionally in double quotes (``"1","2"``). The first row (after ``#``
  comment and blank lines) is a **header unless its first two fields are integers**; then
  the columns ``src`` and ``dst`` are used (else the first two). Otherwise it is the first
  edge (:data:`CSV_RULE`).
* **Parquet** (``*.parquet``, ``*.pq``): integer columns ``src`` and ``dst``.
* A text file's first row (``*.txt``, ``*.tsv``, any other name) is a **header** when none
  of its fields is an integer (``src dst``, ``from\tto``): named columns are then picked as
  a CSV's are. A text or CSV row may have more than two fields: the first two are ``src``,
  ``dst`` and the rest is ignored (:func:`check_input` says so once).
* **Other columns** (:class:`EdgeColumns`, ``--columns SRC,DST[,WEIGHT]``, ``columns=``):
  each of the picked columns by name (a Parquet or table column, a DataFrame's, a header
  field) or by 1-based number (any format, a header-less text file too).

* **Arrow** (:func:`epoch_sources` only): a ``pyarrow.Table`` with integer columns ``src``
  and ``dst``, split like a file.

Ids must be non-negative integers that fit int64. Anything else raises
:class:`EdgeInputError`, naming the file and the line (the row for Parquet); so does a
``.gz`` file that is not gzip or is truncated, an input with no edges at all, and an input
file that changes (size, modification time or inode) after the job recorded it
(:class:`FileStamp`).

:func:`epoch_sources` turns a file into ``K`` consecutive, equal slices of its rows, or a
directory into one epoch per file (in natural order: ``e2`` before ``e10``; hidden and ``_``
files skipped). :func:`check_input` validates an input (existence, readability, the first
rows of every file) cheaply, before a Spark session is started.
"""

from __future__ import annotations

import csv as _csv
import gzip
import os
import re
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import TimelyFrontierError

__all__ = ["EdgeInputError", "ColumnsError", "read_edges", "epoch_sources", "edge_files", "EDGE_SCHEMA",
           "EpochSource", "ParquetSlice", "DONE_MARKER", "edge_format", "even_cuts",
           "check_input", "FileStamp", "natural_key", "CSV_RULE", "edges_table",
           "EdgeColumns", "COLUMNS_HINT", "check_regular"]

#: How a CSV edge file is read (also printed by ``tfront wcc --help``).
CSV_RULE = ("CSV (*.csv): fields separated by ',', ';' or a tab, optionally double-quoted; "
            "the first row is a header unless its first two fields are integers (then columns "
            "src,dst are used, else the first two); otherwise it is the first edge -- except "
            "the column positions 0,1 (pandas' default header), a header, said on stderr")

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


#: What a message refusing an input's columns adds: the option that picks others.
COLUMNS_HINT = ("--columns SRC,DST (columns= in run_wcc / run_sssp) picks other columns, "
                "by name or 1-based number")


class EdgeColumns:
    """Which input columns are ``src``, ``dst`` (and ``weight``): ``--columns SRC,DST[,WEIGHT]``
    of ``tfront wcc`` / ``tfront sssp``, ``columns=`` of ``run_wcc`` / ``run_sssp``.

    Each pick is a column name (a Parquet file's or an Arrow table's or a DataFrame's column,
    a field of a CSV or text file's header row; matched exactly, then ignoring case) or a
    1-based column number (every format, header-less text files too). The picks are part of
    the job's fingerprint: a resumed ``--out`` must have been written with the same ones.

    >>> EdgeColumns.parse("from,to").picks
    ('from', 'to')
    >>> EdgeColumns.parse("1, 3, 2", weighted=True).picks
    (1, 3, 2)
    >>> EdgeColumns.parse("a,b,w")
    Traceback (most recent call last):
    ...
    spark_plugin.jobs.edges.ColumnsError: --columns 'a,b,w': 3 columns, expected two, SRC,DST (a third, WEIGHT, is read by tfront sssp --weighted)
    """

    __slots__ = ("picks",)

    def __init__(self, picks: tuple):
        self.picks = tuple(picks)

    @classmethod
    def parse(cls, value, *, weighted: bool | None = False) -> "EdgeColumns | None":
        """``value`` (``"a,b"``, ``("a", "b")``, ``(1, 2)``, an :class:`EdgeColumns` or
        ``None``) checked: two picks, three with ``weighted`` (``None``: either), each a
        non-empty name or a number ``>= 1``, no column twice.

        Raises
        ------
        ColumnsError
            Naming the value and what is wrong with it.
        """
        if value is None:
            return None
        shown = value if isinstance(value, str) else ",".join(map(str, value.picks)) \
            if isinstance(value, EdgeColumns) else None
        if isinstance(value, EdgeColumns):
            raw = list(value.picks)
        elif isinstance(value, str):
            raw = [p.strip() for p in value.split(",")]
        elif isinstance(value, (list, tuple)):
            raw = list(value)
            shown = ",".join(map(str, raw))
        else:
            raise ColumnsError(f"--columns: expected 'SRC,DST' or a sequence of column names "
                               f"or numbers, got {type(value).__name__}")
        picks = []
        for p in raw:
            if isinstance(p, str) and p.strip().isdigit():
                p = int(p)
            if isinstance(p, bool) or not isinstance(p, (str, int, np.integer)) or (
                    isinstance(p, str) and not p.strip()):
                raise ColumnsError(f"--columns {shown!r}: {p!r} is not a column name or a "
                                   f"1-based column number")
            if not isinstance(p, str) and p < 1:
                raise ColumnsError(f"--columns {shown!r}: column numbers start at 1, got {p}")
            picks.append(p.strip() if isinstance(p, str) else int(p))
        want = (2, 3) if weighted is None else (3,) if weighted else (2,)
        if len(picks) not in want:
            raise ColumnsError(
                f"--columns {shown!r}: {len(picks)} column{'s' if len(picks) != 1 else ''}, "
                + ("expected three, SRC,DST,WEIGHT (--weighted reads a weight per edge)"
                   if weighted else "expected two, SRC,DST" + (
                       " (a third, WEIGHT, is read by tfront sssp --weighted)"
                       if len(picks) == 3 else "") if weighted is False
                   else "expected SRC,DST or SRC,DST,WEIGHT"))
        if len(set(picks)) != len(picks):
            raise ColumnsError(f"--columns {shown!r}: a column is picked twice")
        return cls(tuple(picks))

    def __repr__(self) -> str:
        return f"EdgeColumns({self.picks!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, EdgeColumns) and self.picks == other.picks

    def __hash__(self) -> int:
        return hash(self.picks)

    def __str__(self) -> str:
        return ",".join(map(str, self.picks))

    def indices(self, names, width: int, where: str, line: int | None = None) -> tuple:
        """The 0-based indices of the picks in a row of ``width`` fields whose header is
        ``names`` (``None``: no header row).

        Raises
        ------
        EdgeInputError
            A number past ``width``, a name with no header, a name the header lacks."""
        at = f"{where}:{line}" if line is not None else where
        out = []
        for p in self.picks:
            if isinstance(p, int):
                if p > width:
                    raise EdgeInputError(f"{at}: --columns {self}: there is no column {p}: "
                                         f"the rows have {width} fields", where, line)
                out.append(p - 1)
                continue
            if names is None:
                raise EdgeInputError(f"{at}: --columns {self} names column {p!r}, but the "
                                     f"file has no header row (its first row holds ids); "
                                     f"pick columns by 1-based number, e.g. --columns 1,2",
                                     where, line)
            k = _find(names, p)
            if k is None:
                raise EdgeInputError(f"{at}: --columns {self}: no column {p!r} (columns: "
                                     f"{', '.join(map(str, names)) or '(none)'})", where, line)
            out.append(k)
        return tuple(out)

    def names(self, names, where: str) -> list[str]:
        """The picked columns' names among ``names`` (a Parquet file's, a table's, a
        DataFrame's columns)."""
        return [names[k] for k in self.indices(list(names), len(names), where)]


class ColumnsError(TimelyFrontierError, ValueError):
    """A ``--columns`` / ``columns=`` value that is not ``SRC,DST[,WEIGHT]``."""


def _find(names, name: str) -> int | None:
    """The index of ``name`` among ``names``: exact, else ignoring case (``None``: absent)."""
    names = [str(n) for n in names]
    if name in names:
        return names.index(name)
    low = [n.lower() for n in names]
    return low.index(name.lower()) if name.lower() in low else None


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


def _gzip_lines(path: Path) -> int:
    """Complete lines that decompress from the start of a damaged ``.gz`` file."""
    d = zlib.decompressobj(31)
    n = 0
    try:
        with open(path, "rb") as f:
            while not d.eof:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                n += d.decompress(chunk).count(b"\n")
    except zlib.error:
        pass
    return n


def _read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The (decompressed) bytes of a text edge file, at most ``limit`` of them; a damaged or
    non-gzip ``.gz`` file or an unreadable file raises :class:`EdgeInputError`."""
    try:
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read() if limit is None else f.read(limit)
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit)
    except EOFError:
        n = _gzip_lines(path)
        raise EdgeInputError(f"{_fmt(path)}:{n + 1}: the gzip data ends early (truncated file?): "
                             f"only {n} complete line{'s' if n != 1 else ''} could be read",
                             str(path), n + 1) from None
    except (gzip.BadGzipFile, zlib.error) as e:
        with open(path, "rb") as f:
            magic = f.read(2)
        if magic != b"\x1f\x8b":
            raise EdgeInputError(f"{_fmt(path)}: not a gzip file (it starts with {magic!r}, not "
                                 f"the gzip magic b'\\x1f\\x8b'); rename it without .gz if it "
                                 f"is plain text", str(path)) from None
        n = _gzip_lines(path)
        raise EdgeInputError(f"{_fmt(path)}:{n + 1}: corrupt gzip data after line {n} ({e})",
                             str(path), n + 1) from None
    except IsADirectoryError:
        raise EdgeInputError(f"{_fmt(path)}: is a directory, not an edge file",
                             str(path)) from None
    except PermissionError as e:
        raise EdgeInputError(f"{_fmt(path)}: cannot read the edge file ({e.strerror})",
                             str(path)) from None


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise EdgeInputError(f"{_fmt(path)}:{line}: not a UTF-8 text edge file ({e})",
                             str(path), line) from None


def _open_text(path: Path) -> str:
    return _decode(path, _read_bytes(path))


def read_edges(path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """Read one edge file as a table ``src int64, dst int64`` (rows in file order);
    ``columns`` (:class:`EdgeColumns`) picks other columns than the default ones.

    Raises
    ------
    EdgeInputError
        A malformed line (not two fields), a non-integer or negative id; the message reads
        ``FILE:LINE: ...``; a pipe or device (:func:`check_regular`); a file the driver's
        memory cannot hold (``MemoryError`` while reading, named with what to do).
    FileNotFoundError
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"edge file {_fmt(path)!r} does not exist")
    check_regular(path)
    try:
        return _read_edges(path, columns)
    except (MemoryError, pa.ArrowMemoryError):   # issue 32 item 11: named, not a traceback
        size = path.stat().st_size
        raise EdgeInputError(f"{_fmt(path)}: the driver ran out of memory reading this "
                             f"{size / 2**30:.1f} GiB edge file; read it on the executors "
                             f"instead: tfront wcc file://{path.absolute()} (a Spark source), "
                             f"or as Parquet", str(path)) from None


def _read_edges(path: Path, columns) -> pa.Table:
    kind = _kind(path)
    if kind == "parquet":
        return ParquetSlice.of(path, columns=columns).read()
    if kind == "text" and columns is None:
        data = _read_bytes(path)
        fast = _parse_simple_text(data)
        if fast is not None:
            return fast
        text = _decode(path, data)
    else:
        text = _open_text(path)
    return _parse_lines(path, text.splitlines(), csv=kind == "csv", columns=columns)


def _parse_simple_text(data: bytes) -> pa.Table | None:
    """Fast path for the common SNAP text file: every non-blank line is exactly ``src<sep>dst``
    with one space or one tab, non-negative int64 ids, no comments (but a header of ``#``
    lines), no commas. Returns
    ``None`` when the text is anything else (the line-by-line parser then accepts it or names
    the offending line), so both paths accept exactly the same files with the same rows.
    Works on the file's bytes, parsed in place by Arrow: the header must be UTF-8 (else
    ``None``, and the line parser names the line), the rest parses as integers only if it
    is ASCII."""
    pos, end = 0, len(data)   # skip leading comment and blank lines (a SNAP header)
    while pos < end and data[pos] in b"#\n":
        if data[pos] == 10:   # "\n"
            pos += 1
            continue
        nl = data.find(b"\n", pos)
        pos = end if nl < 0 else nl + 1
    try:
        data[:pos].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if pos == end or any(data.find(c, pos) >= 0 for c in (b"#", b",", b"\r")):
        return None
    first = data[pos:pos + 256].split(b"\n", 1)[0]
    sep = " " if b" " in first else "\t" if b"\t" in first else None
    if sep is None or (sep == " " and data.find(b"\t", pos) >= 0):
        return None
    import pyarrow.csv as pcsv

    try:
        t = pcsv.read_csv(
            pa.py_buffer(memoryview(data)[pos:]),
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


_INT = re.compile(r"[+-]?[0-9]+\Z")
_SEPARATORS = (",", ";", "\t")


def _csv_rows(path: Path, lines: list[str]):
    """``(line number, fields)`` of a CSV edge file's non-comment, non-blank lines, split at
    the separator its first row uses, double quotes removed (:data:`CSV_RULE`)."""
    at = [0]

    def data():
        for no, raw in enumerate(lines, 1):
            line = raw.strip()
            if line and not line.startswith("#"):
                at[0] = no
                yield line
    it = data()
    first = next(it, None)
    if first is None:
        return
    seps = [c for c in _SEPARATORS if c in first]
    if not seps:
        raise EdgeInputError(f"{_fmt(path)}:{at[0]}: no field separator in {first!r}: a CSV "
                             f"edge file separates its fields by ',', ';' or a tab",
                             str(path), at[0])
    sep = seps[0]

    def again():
        yield first
        yield from it
    reader = _csv.reader(again(), delimiter=sep, skipinitialspace=True, strict=True)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except _csv.Error as e:
            raise EdgeInputError(f"{_fmt(path)}:{at[0]}: malformed CSV line ({e}); fields are "
                                 f"separated by {sep!r} and may be double-quoted", str(path),
                                 at[0]) from None
        yield at[0], [f.strip() for f in fields]


def _text_rows(lines: list[str]):
    """``(line number, fields, raw line)`` of a text edge file's data lines: ``#`` starts a
    comment, fields are separated by white space or a comma."""
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "#" in line:
            line = line.split("#", 1)[0]
        yield no, line.replace(",", " ").split(), raw


def _is_header(fields: list[str], csv: bool) -> bool:
    """A CSV's first row is a header unless its first two fields are integers -- or it is
    the column positions ``0,1[,2...]``, the header pandas writes by default
    (:func:`positions_header`), which is one --; a text file's only when none of its fields
    is (a typo in an edge is not taken for one)."""
    if csv:
        return positions_header(fields) or not (_INT.match(fields[0]) and _INT.match(fields[1]))
    return not any(_INT.match(f) for f in fields)


def positions_header(fields: list[str]) -> bool:
    """A first row that is the column positions, ``0,1`` (pandas' default header).

    >>> positions_header(["0", "1"]), positions_header(["0", "1", "2"]), positions_header(["0", "2"])
    (True, True, False)
    """
    return len(fields) >= 2 and [f.strip().strip('"') for f in fields] == [
        str(i) for i in range(len(fields))]


def _layout(path: Path, lines: list[str], *, csv: bool):
    """``(fields per row, header names or None)`` of a text or CSV edge file, from its
    first data row (``(0, None)`` without one)."""
    rows = ((no, f) for no, f in _csv_rows(path, lines)) if csv else (
        (no, f) for no, f, _ in _text_rows(lines))
    for _, fields in rows:
        return len(fields), (fields if len(fields) >= 2 and _is_header(fields, csv) else None)
    return 0, None


def _picks(path: Path, no: int, fields: list[str], header: bool, columns, want: int = 2):
    """The indices of the ``want`` columns of a text or CSV file whose first data row (line
    ``no``) is ``fields`` (a header when ``header``): ``columns``' picks, else the header's
    ``src``, ``dst`` (``weight``) when it names them, else the first ones."""
    names = fields if header else None
    if columns is not None:
        return columns.indices(names, len(fields), str(path), no)
    if names is not None:
        idx = [_find(names, n) for n in ("src", "dst", "weight")[:want]]
        if None not in idx:
            return tuple(idx)
    return tuple(range(want))


def _parse_lines(path: Path, lines: list[str], *, csv: bool,
                 columns: "EdgeColumns | None" = None) -> pa.Table:
    cols = (0, 1)
    ncols = None
    names, taken = None, ""
    rows: list[list[str]] = []
    numbers: list[int] = []
    source = ((no, f, lines[no - 1]) for no, f in _csv_rows(path, lines)) if csv else \
        _text_rows(lines)
    for no, fields, raw in source:
        if ncols is None:
            ncols = len(fields)
            if ncols < 2:
                if csv:
                    raise EdgeInputError(f"{_fmt(path)}:{no}: CSV row {raw.strip()!r} has "
                                         f"fewer than two columns (expected src,dst)",
                                         str(path), no)
                raise EdgeInputError(f"{_fmt(path)}:{no}: malformed line {raw!r}: expected two "
                                     f"vertex ids 'src dst'", str(path), no)
            header = _is_header(fields, csv)
            cols = _picks(path, no, fields, header, columns)
            names = fields if header else None
            if header:
                continue
        if len(fields) != ncols:
            if not csv and ncols == 2:
                raise EdgeInputError(f"{_fmt(path)}:{no}: malformed line {raw!r}: expected two "
                                     f"vertex ids 'src dst'", str(path), no)
            raise EdgeInputError(f"{_fmt(path)}:{no}: malformed line {raw!r}: "
                                 f"{len(fields)} fields, the first row has {ncols}",
                                 str(path), no)
        if not rows:   # the columns read, named in the messages below (issue 32 item 15)
            taken = (f"columns {cols[0] + 1}, {cols[1] + 1}"
                     + (f" ({names[cols[0]]}, {names[cols[1]]} of the header)"
                        if names is not None else "") + " read as src, dst")
        rows.append([fields[cols[0]], fields[cols[1]]])
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
                    raise EdgeInputError(f"{_fmt(path)}:{no}: vertex id {x!r} is not an integer "
                                         f"({taken}; {COLUMNS_HINT})", str(path), no) from None
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
    return pa.Table.from_arrays([_int64_array(ids[:, 0]), _int64_array(ids[:, 1])],
                                schema=EDGE_SCHEMA)


def _int64_array(x: np.ndarray) -> pa.Array:
    """An int64 Arrow array of ``x`` built from its buffer (``pa.array`` of a NumPy array
    imports pandas, half a second of a driver run: issue 33)."""
    x = np.ascontiguousarray(x, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(x), [None, pa.py_buffer(x)])


def _check_parquet(t: pa.Table, path, first_row: int, names=("src", "dst")) -> pa.Table:
    """Validate the columns ``names`` (``src``, ``dst`` by default) of rows of a Parquet
    edge file (``first_row``: the 0-based file row of ``t``'s first row; errors name 1-based
    file rows) and return them as ``src, dst``."""
    cols = []
    for name in names:
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
            raise EdgeInputError(f"{_fmt(path)}: the edge file does not exist", str(path)) from None
        return cls(path, st.st_size, st.st_mtime_ns, st.st_ino)

    def same(self, other: "FileStamp") -> bool:
        return (self.size, self.mtime_ns, self.ino) == (other.size, other.mtime_ns, other.ino)

    def check(self, when: str = "since the job recorded it") -> None:
        """Raise :class:`EdgeInputError` if the file changed (or vanished) since this stamp."""
        try:
            now = FileStamp.of(self.path)
        except EdgeInputError:
            raise EdgeInputError(f"{_fmt(self.path)}: the edge file was removed {when}; "
                                 f"input files must not change while the job uses them",
                                 self.path) from None
        if not self.same(now):
            what = (f"size {self.size} -> {now.size} bytes" if now.size != self.size
                    else "replaced" if now.ino != self.ino else "modification time changed")
            raise EdgeInputError(f"{_fmt(self.path)}: the edge file changed {when} ({what}); "
                                 f"input files must not change while the job uses them",
                                 self.path)

    def __repr__(self) -> str:
        return f"FileStamp({self.path!r}, {self.size}, {self.mtime_ns}, {self.ino})"


class ParquetSlice:
    """Rows ``[start, stop)`` (0-based) of a Parquet edge file, read -- and validated -- by
    whoever needs them: the driver (:meth:`read`) or a Spark task (:meth:`read` of a
    sub-range), which opens only the row groups it needs. Errors name 1-based file rows.
    ``stamp`` (a :class:`FileStamp`, recorded by :meth:`of`): :meth:`read` first checks that
    the file is still the one whose footer gave the row count."""

    __slots__ = ("path", "start", "stop", "stamp", "names")

    def __init__(self, path, start: int, stop: int, stamp: FileStamp | None = None,
                 names: tuple = ("src", "dst")):
        self.path, self.start, self.stop = str(path), int(start), int(stop)
        self.stamp, self.names = stamp, tuple(names)

    @classmethod
    def of(cls, path, start: int = 0, stop: int | None = None,
           stamp: FileStamp | None = None,
           columns: "EdgeColumns | None" = None) -> "ParquetSlice":
        """The rows ``[start, stop)`` of ``path`` (default: all); checks the file's footer and
        columns now, the values when read. ``stamp``: the file as the job recorded it
        (default: as it is now); ``columns``: the columns read as ``src``, ``dst`` (default
        those)."""
        stamp = FileStamp.of(path) if stamp is None else stamp
        stamp.check()
        pf = cls._open(path)
        names = cls._names(pf, path, columns)
        n = pf.metadata.num_rows
        return cls(path, start, n if stop is None else min(stop, n), stamp, names)

    @staticmethod
    def _names(pf, path, columns: "EdgeColumns | None", want=("src", "dst")) -> tuple:
        """The file's columns read as ``want`` (``columns``' picks, else those names)."""
        names = pf.schema_arrow.names
        if columns is not None:
            return tuple(columns.names(names, _fmt(path)))
        for name in want:
            if name not in names:
                raise EdgeInputError(f"{_fmt(path)}: Parquet file has no column {name!r} "
                                     f"(columns: {', '.join(names) or '(none)'}); "
                                     f"{COLUMNS_HINT}", str(path))
        return tuple(want)

    @staticmethod
    def _open(path):
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{_fmt(path)}: not a readable Parquet file ({e})",
                                 str(path)) from None

    @property
    def rows(self) -> int:
        return self.stop - self.start

    def part(self, p: int, parts: int) -> "ParquetSlice":
        """The ``p``-th of ``parts`` consecutive, equal sub-slices."""
        cuts = even_cuts(self.rows, parts)
        return ParquetSlice(self.path, self.start + cuts[p], self.start + cuts[p + 1],
                            self.stamp, self.names)

    def read(self) -> pa.Table:
        """The rows as ``src int64, dst int64`` (validated)."""
        if self.rows <= 0:
            return EDGE_SCHEMA.empty_table()
        if self.stamp is not None:
            self.stamp.check()
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
            t = pf.read_row_groups(groups, columns=list(self.names))
        except (pa.ArrowInvalid, OSError) as e:
            raise EdgeInputError(f"{_fmt(self.path)}: not a readable Parquet file ({e})",
                                 self.path) from None
        if self.stamp is not None:
            self.stamp.check()
        t = t.slice(self.start - first, self.rows)
        return _check_parquet(t, self.path, self.start, self.names)

    def __repr__(self) -> str:
        return f"ParquetSlice({self.path!r}, {self.start}, {self.stop})"


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
            raise EdgeInputError(f"{_fmt(p)}: a symbolic link to a missing file "
                                 f"({os.readlink(p)!r}) among the epoch files: remove it or "
                                 f"give it a hidden or '_' name", str(p)) from None
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                    else "a device")
            raise EdgeInputError(f"{_fmt(p)}: {kind}, not a regular file, among the epoch "
                                 f"files: a stream is read once and would not be the same "
                                 f"epoch again; write it to a file (or give it a hidden or "
                                 f"'_' name)", str(p))
        files.append(p)
    return sorted(files, key=lambda p: natural_key(p.name))


class EpochSource:
    """One epoch's edges: ``what`` (for messages: the file, or the rows of a file, that
    became the epoch), ``read()`` (the rows as ``src, dst`` on the driver, validated), for
    Parquet input ``scan`` (a :class:`ParquetSlice` that Spark tasks can read themselves;
    ``None`` otherwise), and ``check()``: raises :class:`EdgeInputError` if the epoch's file
    changed since the job recorded it (a no-op for rows already held in memory).
    ``in_memory``: the rows are a slice of a table on the driver (an Arrow table, a
    collected DataFrame), so ``read()`` costs nothing. ``frame``, ``rows``, ``stamp``: an
    epoch of a Spark source, which the executors read (``read()`` collects it, for an epoch
    finished on the driver)."""

    __slots__ = ("what", "read", "scan", "check", "in_memory", "frame", "rows", "stamp")

    def __init__(self, what: str, read, scan: ParquetSlice | None = None, check=None,
                 in_memory: bool = False, frame=None, rows: int | None = None,
                 stamp: str | None = None):
        self.what, self.read, self.scan, self.in_memory = what, read, scan, in_memory
        self.check = check if check is not None else (lambda: None)
        #: A Spark source's epoch (:mod:`spark_plugin.sources`): its rows as a DataFrame
        #: (``src, dst``) the executors read, their count, and the dataset's listing digest.
        self.frame, self.rows, self.stamp = frame, rows, stamp


#: The marker file that ends a followed directory stream (:func:`epoch_sources`).
DONE_MARKER = "_DONE"


def _check_epochs(epochs, where: str) -> None:
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise EdgeInputError(f"--epochs must be a positive integer, got {epochs!r}", where)


def edges_table(table: pa.Table, what: str = "edge table",
                columns: "EdgeColumns | None" = None) -> pa.Table:
    """An Arrow table of edges (integer columns ``src``, ``dst``, or those ``columns``
    picks; other columns ignored) as ``src int64, dst int64``, validated like a Parquet
    file (rows named 1-based)."""
    if not isinstance(table, pa.Table):
        raise EdgeInputError(f"{what}: expected a pyarrow.Table, got {type(table).__name__}", what)
    names = table_columns(table.column_names, what, columns)
    return _check_parquet(table.select(names), what, 0, names)


def table_columns(names, what: str, columns: "EdgeColumns | None",
                  want=("src", "dst")) -> list[str]:
    """The columns of a table or DataFrame (``names``) read as ``want``: ``columns``'
    picks, else those names; a missing one raises :class:`EdgeInputError` naming the
    columns there and the option that picks others."""
    names = list(names)
    if columns is not None:
        return columns.names(names, what)
    for name in want:
        if name not in names:
            raise EdgeInputError(f"{what}: no column {name!r} (columns: "
                                 f"{', '.join(names) or '(none)'}); {COLUMNS_HINT}", what)
    return list(want)


def epoch_sources(edges, epochs: int = 1, *, follow: float | None = None,
                  poll: float = 0.5, sleep=None, reader=None,
                  columns: "EdgeColumns | None" = None
                  ) -> tuple[int | None, Iterator[EpochSource]]:
    """``(number of epochs, iterator of EpochSource per epoch)``.

    A text or CSV file (or a ``pyarrow.Table`` of edges) is read (and validated) once, up
    front, and split into ``epochs`` consecutive slices of equal size (the first slices one
    row shorter when it does not divide); a Parquet file is split the same way by its row
    count (footer), each slice read and validated when its epoch starts; a directory yields
    one epoch per file, in natural order of the names, each read when its epoch starts
    (``epochs`` must then be 1). An input with no edges at all, or a directory without epoch
    files, raises :class:`EdgeInputError`. Every input file's :class:`FileStamp` is recorded
    here: a file that changes later stops the job with :class:`EdgeInputError` naming it.

    ``follow`` (directories only) consumes the directory as a **stream**: after the files
    present, new files become the next epochs as they appear (natural order within one
    listing; every file exactly once), until the marker file ``_DONE`` exists and every file
    is consumed, or no file has appeared or grown for ``follow`` seconds (``math.inf``: wait
    for the marker). The number of epochs is then ``None``. A file is taken only once its
    size and modification time were the same at two listings ``poll`` seconds apart (and,
    for Parquet, it ends with its footer); a taken file that changes afterwards stops the
    job with :class:`EdgeInputError`. Writers should still create each file under a hidden
    or ``_``-prefixed name and rename it when complete (those names are skipped): a writer
    that pauses for longer than ``poll`` mid-file otherwise has its file taken early, and
    then refused. ``sleep`` (testing hook) replaces ``time.sleep`` between listings.

    ``reader(path) -> pyarrow.Table`` reads and validates one whole file of another row
    format (the shortest-paths job's weighted edges: :mod:`spark_plugin.jobs.sssp.io`) instead of
    :func:`read_edges`; every file, Parquet too, is then read whole (a single file up front,
    a directory's files when their epochs start). A table ``edges`` is the caller's to
    validate for such a format. ``columns`` (:class:`EdgeColumns`): the columns read as
    ``src``, ``dst`` by the default reader (a ``reader`` picks its own).
    """
    if isinstance(edges, pa.Table):
        _check_epochs(epochs, "edge table")
        return _table_sources(edges_table(edges, columns=columns), epochs, "edge table")
    if reader is None and columns is not None:
        reader = _ColumnsReader(columns)
    path = Path(edges)
    _check_epochs(epochs, str(path))
    check_regular(path)
    if follow is not None:
        if not path.is_dir():
            raise EdgeInputError(f"{_fmt(path)}: following needs a directory of epoch files",
                                 str(path))
        if not follow > 0:
            raise ValueError(f"follow must be a positive number of seconds, got {follow!r}")
        if epochs != 1:
            raise EdgeInputError(f"{_fmt(path)}: epochs={epochs} splits a single file; a "
                                 f"directory has one epoch per file", str(path))
        import time
        return None, _follow(path, float(follow), float(poll), sleep or time.sleep, reader)
    if path.is_dir():
        if epochs != 1:
            raise EdgeInputError(f"{_fmt(path)}: epochs={epochs} splits a single file; a "
                                 f"directory has one epoch per file", str(path))
        files = edge_files(path)
        if not files:
            raise EdgeInputError(f"{_fmt(path)}: the directory has no epoch files (hidden and "
                                 f"'_'-prefixed files are skipped); nothing to do", str(path))
        stamps = [FileStamp.of(f) for f in files]
        return len(files), (_file_source(f, st, reader) for f, st in zip(files, stamps))
    if not path.exists():
        raise FileNotFoundError(f"edge file {_fmt(path)!r} does not exist")
    if _parquet_slices(reader, path):
        whole = ParquetSlice.of(path, columns=getattr(reader, "columns", None))
        if whole.rows == 0:
            raise EdgeInputError(f"{_fmt(path)}: the Parquet file has no rows: no edges, "
                                 f"nothing to do", str(path))
        _check_split(whole.rows, epochs, str(path))
        slices = [whole.part(e, epochs) for e in range(epochs)]
        return epochs, (EpochSource(f"{path} rows {s.start + 1}-{s.stop}", s.read, s,
                                    whole.stamp.check) for s in slices)
    table = (reader or read_edges)(path)
    if table.num_rows == 0:
        raise EdgeInputError(f"{_fmt(path)}: no edges (the file is empty or has only comments "
                             f"and blank lines); nothing to do", str(path))
    return _table_sources(table, epochs, str(path))


class _ColumnsReader:
    """:func:`read_edges` with :class:`EdgeColumns` (a Parquet file still becomes lazy
    :class:`ParquetSlice` epochs: :func:`_parquet_slices`)."""

    def __init__(self, columns: "EdgeColumns"):
        self.columns = columns

    def __call__(self, path) -> pa.Table:
        return read_edges(path, self.columns)


def _parquet_slices(reader, path) -> bool:
    """A Parquet file read as lazy slices (the default reader, with or without columns)."""
    return (reader is None or isinstance(reader, _ColumnsReader)) and _kind(Path(path)) == "parquet"


def _check_split(rows: int, epochs: int, what: str) -> None:
    """A split input has at least one edge per epoch (else the epoch lines read ``rows
    1-0``)."""
    if epochs > rows > 0:
        raise EdgeInputError(f"{what}: --epochs {epochs} is more than its {rows} "
                             f"edge{'s' if rows != 1 else ''}: each epoch of a split input "
                             f"needs at least one (--epochs {rows} or fewer)", what)


def _table_sources(table: pa.Table, epochs: int, what: str):
    if table.num_rows == 0:
        raise EdgeInputError(f"{what}: no edges (no rows); nothing to do", what)
    _check_split(table.num_rows, epochs, what)
    bounds = even_cuts(table.num_rows, epochs)
    return epochs, (EpochSource(f"{what} rows {bounds[e] + 1}-{bounds[e + 1]}",
                                (lambda s=bounds[e], t=bounds[e + 1]: table.slice(s, t - s)),
                                in_memory=True)
                    for e in range(epochs))


def _file_source(f: Path, stamp: FileStamp | None = None, reader=None) -> EpochSource:
    """A directory's epoch file (called when its epoch starts: the iterator is lazy), as it
    was when ``stamp`` was recorded (default: now), read by ``reader`` (default
    :func:`read_edges`, Parquet as a lazy slice)."""
    stamp = FileStamp.of(f) if stamp is None else stamp
    if _parquet_slices(reader, f):
        whole = ParquetSlice.of(f, stamp=stamp, columns=getattr(reader, "columns", None))
        return EpochSource(str(f), whole.read, whole, stamp.check)

    def read():
        stamp.check()
        t = (reader or read_edges)(f)
        stamp.check()
        return t
    return EpochSource(str(f), read, None, stamp.check)


def _parquet_complete(f: Path, size: int) -> bool:
    """The file ends with Parquet's footer magic (a writer has finished it)."""
    if size < 12:
        return False
    try:
        with open(f, "rb") as h:
            h.seek(size - 4)
            return h.read(4) == b"PAR1"
    except OSError:
        return False


def _text_complete(f: Path, size: int) -> bool:
    """A followed text or CSV file is complete when it ends with a newline (or is empty):
    a last line without one may be half written (issue 32 item 3). A ``.gz`` file is taken
    once stable, as before (its reader refuses a truncated one: ``the gzip data ends
    early``)."""
    if size == 0 or f.name.lower().endswith(".gz"):
        return True
    try:
        with open(f, "rb") as h:
            h.seek(size - 1)
            return h.read(1) == b"\n"
    except OSError:
        return False


def _follow(path: Path, idle: float, poll: float, sleep, reader=None) -> Iterator[EpochSource]:
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
            complete = (_parquet_complete(f, st.size) if _kind(f) == "parquet"
                        else _text_complete(f, st.size))
            if quiet and stable and not (complete or done) and _kind(f) != "parquet":
                raise EdgeInputError(
                    f"{_fmt(f)}: the stream went idle ({idle:g} s) with this file's last line "
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
            yield _file_source(f, st, reader)
        if ready:
            last = time.monotonic()
            continue
        if not waiting and (done or time.monotonic() - last >= idle):
            return
        sleep(poll if waiting else min(poll, max(0.0, idle - (time.monotonic() - last))))


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
    raise EdgeInputError(f"{_fmt(path)}: {kind}, not a regular file: the job reads its input "
                         f"more than once (checks, epochs, a resume), which a stream cannot "
                         f"give; write it to a file first (e.g. cat ... > edges.txt)", str(path))


def _peek_text(path: Path, limit: int) -> tuple[list[str], bool]:
    """The first complete lines of a text edge file (at most ``limit`` bytes, decompressed)
    and whether that is the whole file."""
    data = _read_bytes(path, limit + 1)
    whole = len(data) <= limit
    if not whole:
        data = data[:data.rfind(b"\n") + 1] if b"\n" in data[:limit] else b""
    return _decode(path, data).splitlines(), whole


def check_input(edges, epochs: int | None = None, *, follow: float | None = None,
                peek: int = 1 << 16, check_file=None,
                columns: "EdgeColumns | None" = None) -> list[str]:
    """Validate an edge input cheaply, before a Spark session starts: that it exists and is
    readable, that ``epochs`` and ``follow`` fit it, and the first rows of every file (the
    first ``peek`` bytes of a text or CSV file, decompressed; a Parquet file's footer,
    columns and first row group); a small file is checked completely, so an input without
    edges is refused here. A followed directory's files are not read here (one may be half
    written): each is validated when it is taken. Returns notes for the user (e.g. an epoch
    file without edges). ``check_file(path, peek) -> bool`` validates one file's first rows
    instead of the ``src dst`` reader (the weighted input of
    :func:`spark_plugin.jobs.sssp.io.check_weighted_input`): ``False`` when the file
    certainly has no edges, or ``(has_edges, note)`` with a note for the user (said once
    per input: the first file whose rows have fields the job ignores). ``columns``: the
    columns the default reader picks (:class:`EdgeColumns`).

    Raises
    ------
    EdgeInputError
        What :func:`epoch_sources` or the first rows' reading would raise, naming the file
        (and line); ``FileNotFoundError`` for a missing input.
    """
    path = Path(edges)
    if check_file is None:
        def check_file(f, peek):
            return _check_file(f, peek, columns)
    said = []

    def check(f, peek) -> bool:
        got = check_file(f, peek)
        has, note = got if isinstance(got, tuple) else (got, None)
        if note and not said:
            said.append(note)
        return has
    if not path.exists():
        raise FileNotFoundError(f"edge input {str(path)!r} does not exist")
    check_regular(path)
    if epochs is not None:
        _check_epochs(epochs, str(path))
    if path.is_dir():
        if epochs not in (None, 1):
            raise EdgeInputError(f"{_fmt(path)}: --epochs splits a single file; a directory "
                                 f"has one epoch per file (drop --epochs)", str(path))
        if not os.access(path, os.R_OK | os.X_OK):
            raise EdgeInputError(f"{_fmt(path)}: cannot list the directory (permission "
                                 f"denied)", str(path))
        if follow is not None:   # a stream: each file is validated when it is taken, complete
            return []
        files = edge_files(path)
        if not files:
            raise EdgeInputError(f"{_fmt(path)}: the directory has no epoch files (hidden and "
                                 f"'_'-prefixed files are skipped); nothing to do", str(path))
        notes = []
        for f in files:
            if not check(f, peek):
                notes.append(f"{f}: no edges (empty, or only comments); its epoch adds none")
        return said + notes
    if follow is not None:
        raise EdgeInputError(f"{_fmt(path)}: --follow needs a directory of epoch files",
                             str(path))
    if not check(path, peek):
        raise EdgeInputError(f"{_fmt(path)}: no edges (the file is empty or has only comments "
                             f"and blank lines); nothing to do", str(path))
    if epochs is not None and epochs > 1:
        rows = _known_rows(path, peek, columns)
        if rows is not None:
            _check_split(rows, epochs, str(path))
    return said


def _known_rows(path: Path, peek: int, columns) -> int | None:
    """The edges of a file when they are known cheaply (a Parquet footer, a text file no
    longer than ``peek``), else ``None``."""
    try:
        if _kind(path) == "parquet":
            return ParquetSlice._open(path).metadata.num_rows
        lines, whole = _peek_text(path, peek)
        if whole:
            return _parse_lines(path, lines, csv=_kind(path) == "csv",
                                columns=columns).num_rows
    except EdgeInputError:   # another reader's format (weighted): the run counts them
        pass
    return None


def _check_file(f: Path, peek: int, columns: "EdgeColumns | None" = None):
    """Validate the first rows of one edge file: ``(has_edges, note)``, ``has_edges`` ``False``
    when it certainly has none; ``note`` says that its rows have fields beyond ``src``,
    ``dst`` that are ignored (no ``columns`` given, no header naming them)."""
    if _kind(f) == "parquet":
        s = ParquetSlice.of(f, columns=columns)
        if s.rows == 0:
            return False, None
        pf = ParquetSlice._open(f)
        batch = next(pf.iter_batches(batch_size=1024, columns=list(s.names)), None)
        if batch is not None:
            _check_parquet(pa.Table.from_batches([batch]), f, 0, s.names)
        return True, None
    lines, whole = _peek_text(f, peek)
    csv = _kind(f) == "csv"
    n = _parse_lines(f, lines, csv=csv, columns=columns).num_rows
    width, header = _layout(f, lines, csv=csv)
    note = None
    if csv and header is not None and positions_header(header):
        note = (f"{f}: its first row {','.join(header)} is read as a header (the column "
                f"positions, as pandas writes them), not as an edge; --header no reads it as "
                f"an edge")
    elif columns is None and width > 2 and not (
            header is not None and None not in (_find(header, "src"), _find(header, "dst"))):
        note = (f"{f}: its rows have {width} fields: the first two are src, dst and the rest "
                f"is ignored (--columns SRC,DST picks others; tfront sssp --weighted reads a "
                f"third as the weight)")
    return n > 0 or not whole, note
