"""Text and CSV edge files, read by the driver: SNAP text, CSV, and with weights ``src dst weight``.

* **SNAP text** (any name but ``*.csv`` / ``*.parquet``; ``.gz`` is decompressed): one edge
  ``src dst`` per line, separated by white space or a comma; ``#`` starts a comment; blank
  lines are skipped. A first row (``*.txt``, ``*.tsv``, any other name) is a **header**
  when none of its fields is an integer (``src dst``, ``from\tto``): named columns are then
  picked as a CSV's are.
* **CSV** (``*.csv``, ``*.csv.gz``): fields separated by ``,``, ``;`` or a tab (whichever the
  first row uses), optionally in double quotes (``"1","2"``). The first row (after ``#``
  comment and blank lines) is a **header unless its first two fields are integers**; then
  the columns ``src`` and ``dst`` are used (else the first two). Otherwise it is the first
  edge (:data:`CSV_RULE`).
* A row may have more than two fields: the first two are ``src``, ``dst`` and the rest is
  ignored (:func:`check_text_file` says so once); ``--columns`` picks others
  (:class:`~spark_plugin.sources.columns.EdgeColumns`).
* **Weighted** (``tfront sssp --weighted``, :func:`read_weighted_text`): every line
  ``src dst weight``, fields separated by white space, a comma, ``;`` or a tab; a first line
  whose first two fields are not integers is a header.

A malformed line raises :class:`~spark_plugin.errors.EdgeInputError` reading ``FILE:LINE:
...``; so does a ``.gz`` file that is not gzip or is truncated, and a file that is not UTF-8.
The ids and weights are checked as every reader checks them (:mod:`~spark_plugin.sources.rows`).
"""

from __future__ import annotations

import csv as _csv
import gzip
import re
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_plugin.errors import EdgeInputError
from spark_plugin.sources.columns import COLUMNS_HINT, EdgeColumns, find_column
from spark_plugin.sources.files import edge_format, ends_with
from spark_plugin.sources.rows import EDGE_SCHEMA, INT, WEIGHTED_SCHEMA, check_weights, int64_array

__all__ = ["CSV_RULE", "read_text_edges", "read_weighted_text", "check_text_file",
           "check_weighted_text_file", "known_text_rows", "text_complete", "positions_header",
           "parse_lines", "decode_text"]

#: How a CSV edge file is read (also printed by ``tfront wcc --help``).
#: How a CSV edge file is read (also printed by ``tfront wcc --help``).
CSV_RULE = ("CSV (*.csv): fields separated by ',', ';' or a tab, optionally double-quoted; "
            "the first row is a header unless its first two fields are integers (then columns "
            "src,dst are used, else the first two); otherwise it is the first edge -- except "
            "the column positions 0,1 (pandas' default header), a header, said on stderr")


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
        raise EdgeInputError(f"{path}:{n + 1}: the gzip data ends early (truncated file?): "
                             f"only {n} complete line{'s' if n != 1 else ''} could be read",
                             str(path), n + 1) from None
    except (gzip.BadGzipFile, zlib.error) as e:
        with open(path, "rb") as f:
            magic = f.read(2)
        if magic != b"\x1f\x8b":
            raise EdgeInputError(f"{path}: not a gzip file (it starts with {magic!r}, not "
                                 f"the gzip magic b'\\x1f\\x8b'); rename it without .gz if it "
                                 f"is plain text", str(path)) from None
        n = _gzip_lines(path)
        raise EdgeInputError(f"{path}:{n + 1}: corrupt gzip data after line {n} ({e})",
                             str(path), n + 1) from None
    except IsADirectoryError:
        raise EdgeInputError(f"{path}: is a directory, not an edge file",
                             str(path)) from None
    except PermissionError as e:
        raise EdgeInputError(f"{path}: cannot read the edge file ({e.strerror})",
                             str(path)) from None


def decode_text(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise EdgeInputError(f"{path}:{line}: not a UTF-8 text edge file ({e})",
                             str(path), line) from None


def _open_text(path: Path) -> str:
    return decode_text(path, _read_bytes(path))


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


_SEPARATORS = (",", ";", "\t")
_SPLIT = re.compile(r"[\s,;]+")


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
        raise EdgeInputError(f"{path}:{at[0]}: no field separator in {first!r}: a CSV "
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
            raise EdgeInputError(f"{path}:{at[0]}: malformed CSV line ({e}); fields are "
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
        return positions_header(fields) or not (INT.match(fields[0]) and INT.match(fields[1]))
    return not any(INT.match(f) for f in fields)


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
        idx = [find_column(names, n) for n in ("src", "dst", "weight")[:want]]
        if None not in idx:
            return tuple(idx)
    return tuple(range(want))


def parse_lines(path: Path, lines: list[str], *, csv: bool,
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
                    raise EdgeInputError(f"{path}:{no}: CSV row {raw.strip()!r} has "
                                         f"fewer than two columns (expected src,dst)",
                                         str(path), no)
                raise EdgeInputError(f"{path}:{no}: malformed line {raw!r}: expected two "
                                     f"vertex ids 'src dst'", str(path), no)
            header = _is_header(fields, csv)
            cols = _picks(path, no, fields, header, columns)
            names = fields if header else None
            if header:
                continue
        if len(fields) != ncols:
            if not csv and ncols == 2:
                raise EdgeInputError(f"{path}:{no}: malformed line {raw!r}: expected two "
                                     f"vertex ids 'src dst'", str(path), no)
            raise EdgeInputError(f"{path}:{no}: malformed line {raw!r}: "
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
                    raise EdgeInputError(f"{path}:{no}: vertex id {x!r} is not an integer "
                                         f"({taken}; {COLUMNS_HINT})", str(path), no) from None
                if not -(1 << 63) <= v < (1 << 63):
                    raise EdgeInputError(f"{path}:{no}: vertex id {x} does not fit int64",
                                         str(path), no)
        raise EdgeInputError(f"{path}: cannot parse vertex ids", str(path))  # pragma: no cover
    neg = np.flatnonzero(ids < 0)
    if neg.size:
        r = int(neg[0]) // 2
        raise EdgeInputError(f"{path}:{numbers[r]}: vertex id {int(ids[neg[0]])} is "
                             f"negative; ids must be >= 0", str(path), numbers[r])
    ids = ids.reshape(n, 2)
    return pa.Table.from_arrays([int64_array(ids[:, 0]), int64_array(ids[:, 1])],
                                schema=EDGE_SCHEMA)


def text_complete(f: Path, size: int) -> bool:
    """A followed text or CSV file is complete when it ends with a newline (or is empty):
    a last line without one may be half written (issue 32 item 3). A ``.gz`` file is taken
    once stable, as before (its reader refuses a truncated one: ``the gzip data ends
    early``)."""
    return size == 0 or f.name.lower().endswith(".gz") or ends_with(f, size, b"\n")


def _peek_text(path: Path, limit: int) -> tuple[list[str], bool]:
    """The first complete lines of a text edge file (at most ``limit`` bytes, decompressed)
    and whether that is the whole file."""
    data = _read_bytes(path, limit + 1)
    whole = len(data) <= limit
    if not whole:
        data = data[:data.rfind(b"\n") + 1] if b"\n" in data[:limit] else b""
    return decode_text(path, data).splitlines(), whole


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _weighted_lines(path: Path, lines: list[str],
                    columns: "EdgeColumns | None" = None) -> pa.Table:
    """The text lines of a weighted edge file (its first ones, or all) as
    :data:`WEIGHTED_SCHEMA`, validated (lines named 1-based). Without ``columns`` every
    line has three fields, ``src dst weight`` (a header naming them may order them
    otherwise); with them, as many as the first row has, three of them picked."""
    rows, numbers = [], []
    width, picks = None, (0, 1, 2)
    for no, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [f.strip('"') for f in _SPLIT.split(line) if f]
        if width is None and len(fields) >= 2:
            # a header: the first two fields are not both integers (without columns: the
            # weight may come first when they are picked, so then no field is a number)
            header = (not (INT.match(fields[0]) and INT.match(fields[1]))
                      if columns is None else not any(_is_number(f) for f in fields))
            if columns is not None:
                width = len(fields)
                picks = columns.indices(fields if header else None, width, str(path), no)
            elif header and len(fields) == 3:
                idx = [find_column(fields, n) for n in ("src", "dst", "weight")]
                picks = tuple(idx) if None not in idx else picks
            if header and (columns is not None or len(fields) == 3):
                continue   # a header line
        want = 3 if columns is None else width
        if len(fields) != want:
            raise EdgeInputError(f"{path}:{no}: malformed line {raw!r}: expected 'src dst weight'"
                                 + (" (--weighted: every edge has a third field, its weight)"
                                    if len(fields) == 2 else
                                    f"; {COLUMNS_HINT} (with a third, WEIGHT)"
                                    if columns is None else
                                    f": {len(fields)} fields, the first row has {want}"),
                                 str(path), no)
        if width is None:
            width = len(fields)
        rows.append([fields[k] for k in picks])
        numbers.append(no)
    ids = np.zeros((len(rows), 2), np.int64)
    w = np.zeros(len(rows), np.float64)
    for k, (s, d, x) in enumerate(rows):
        for j, v in enumerate((s, d)):
            if not INT.match(v):
                raise EdgeInputError(f"{path}:{numbers[k]}: vertex id {v!r} is not an integer",
                                     str(path), numbers[k])
            n = int(v)
            if not 0 <= n < (1 << 63):
                raise EdgeInputError(f"{path}:{numbers[k]}: vertex id {v} is negative or does "
                                     f"not fit int64", str(path), numbers[k])
            ids[k, j] = n
        try:
            w[k] = float(x)
        except ValueError:
            raise EdgeInputError(f"{path}:{numbers[k]}: weight {x!r} is not a number",
                                 str(path), numbers[k]) from None
    check_weights(w, str(path), numbers)
    return pa.Table.from_arrays([pa.array(ids[:, 0]), pa.array(ids[:, 1]), pa.array(w)],
                                schema=WEIGHTED_SCHEMA)


def read_text_edges(path: Path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """A whole text or CSV edge file as ``src int64, dst int64`` (rows in file order);
    ``columns`` picks other columns than the first two (or a header's ``src``, ``dst``)."""
    csv = edge_format(path) == "csv"
    if not csv and columns is None:
        data = _read_bytes(path)
        fast = _parse_simple_text(data)
        if fast is not None:
            return fast
        text = decode_text(path, data)
    else:
        text = _open_text(path)
    return parse_lines(path, text.splitlines(), csv=csv, columns=columns)


def read_weighted_text(path: Path, columns: "EdgeColumns | None" = None) -> pa.Table:
    """A whole weighted text or CSV edge file as
    :data:`~spark_plugin.sources.rows.WEIGHTED_SCHEMA` (``columns``: the three picked)."""
    return _weighted_lines(path, _open_text(path).splitlines(), columns)


def check_text_file(f: Path, peek: int, columns: "EdgeColumns | None" = None):
    """Validate the first rows (``peek`` bytes, decompressed) of a text or CSV edge file:
    ``(has_edges, note)``, ``has_edges`` ``False`` when it certainly has none; ``note``
    says that its first row is read as a header of column positions, or that its rows have
    fields beyond ``src``, ``dst`` that are ignored (no ``columns`` given, no header naming
    them)."""
    lines, whole = _peek_text(f, peek)
    csv = edge_format(f) == "csv"
    n = parse_lines(f, lines, csv=csv, columns=columns).num_rows
    width, header = _layout(f, lines, csv=csv)
    note = None
    if csv and header is not None and positions_header(header):
        note = (f"{f}: its first row {','.join(header)} is read as a header (the column "
                f"positions, as pandas writes them), not as an edge; --header no reads it as "
                f"an edge")
    elif columns is None and width > 2 and not (
            header is not None and None not in (find_column(header, "src"),
                                                find_column(header, "dst"))):
        note = (f"{f}: its rows have {width} fields: the first two are src, dst and the rest "
                f"is ignored (--columns SRC,DST picks others; tfront sssp --weighted reads a "
                f"third as the weight)")
    return n > 0 or not whole, note


def check_weighted_text_file(f: Path, peek: int, columns: "EdgeColumns | None" = None) -> bool:
    """Validate the first rows of a weighted text or CSV edge file; ``False`` when it
    certainly has no edges."""
    lines, whole = _peek_text(f, peek)
    return _weighted_lines(f, lines, columns).num_rows > 0 or not whole


def known_text_rows(path: Path, peek: int, columns) -> int | None:
    """The edges of a text or CSV file no longer than ``peek`` bytes, else ``None``."""
    lines, whole = _peek_text(path, peek)
    if whole:
        return parse_lines(path, lines, csv=edge_format(path) == "csv",
                           columns=columns).num_rows
    return None
