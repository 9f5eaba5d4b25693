"""Which input columns are an edge's ``src``, ``dst`` (and ``weight``): ``--columns`` of
``tfront wcc`` / ``tfront sssp``, ``columns=`` of ``run_wcc`` / ``run_sssp``.

Every reader picks its columns here: a local file's (:mod:`~spark_plugin.sources.text`,
:mod:`~spark_plugin.sources.parquet`), an Arrow table's (:mod:`~spark_plugin.sources.rows`)
and a Spark source's (:mod:`~spark_plugin.sources.dataset`).
"""

from __future__ import annotations

import numpy as np

from spark_plugin.errors import ColumnsError, EdgeInputError

__all__ = ["EdgeColumns", "ColumnsError", "COLUMNS_HINT", "find_column", "table_columns"]

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
    spark_plugin.errors.ColumnsError: --columns 'a,b,w': 3 columns, expected two, SRC,DST (a third, WEIGHT, is read by tfront sssp --weighted)
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
            k = find_column(names, p)
            if k is None:
                raise EdgeInputError(f"{at}: --columns {self}: no column {p!r} (columns: "
                                     f"{', '.join(map(str, names)) or '(none)'})", where, line)
            out.append(k)
        return tuple(out)

    def names(self, names, where: str) -> list[str]:
        """The picked columns' names among ``names`` (a Parquet file's, a table's, a
        DataFrame's columns)."""
        return [names[k] for k in self.indices(list(names), len(names), where)]



def find_column(names, name: str) -> int | None:
    """The index of ``name`` among ``names``: exact, else ignoring case (``None``: absent)."""
    names = [str(n) for n in names]
    if name in names:
        return names.index(name)
    low = [n.lower() for n in names]
    return low.index(name.lower()) if name.lower() in low else None


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
