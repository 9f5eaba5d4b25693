"""Progress reports in the operators' words, and their translation into pointstamp changes.

A :class:`Report` holds three count maps as columns -- messages consumed per input, messages
produced per output, capability changes per output -- for operators named by their path in
a dataflow (``engine.operate.dataflow``). :class:`Ports`, small and picklable, turns a report into the
pointstamp changes it stands for (consumed at an input: ``-count`` at its target; produced at
an output: ``+count`` at every operator input its channels reach, through scope boundaries;
capabilities: at the output's source) and checks it against the capabilities held (the
guards of docs/operate.md). Everything is NumPy over the columns: a report of a million
messages costs array operations, and one Python step per distinct operator path.

>>> r = Report().produced("a", 0, [[1, 0], [2, 0]], [3, 4]).capabilities("a", 0, (1, 0), -1)
>>> cols = r.to_arrays()
>>> cols["kind"].tolist(), cols["count"].tolist(), cols["ops"]
([2, 2, 0], [3, 4, -1], ['a'])
"""

from __future__ import annotations

import enum
from numbers import Integral
from typing import Iterable, NamedTuple

import numpy as np

from engine.errors import (CapabilityRegressionError, NoCapabilityError, NotInFlightError,
                     ReportCountError, ReportError, ReportOperatorError, ReportPortError,
                     TimestampRangeError, TimestampWidthError, UnheldCapabilityError)
from engine.core.graph import PortKind
from engine.core.summary import Summary
from engine.core.timestamp import MAX_COORD, Timestamp

__all__ = ["Report", "ReportKind", "Ports"]

INT64_MAX = (1 << 63) - 1


class ReportKind(enum.IntEnum):
    """What a report row says: a capability change, messages consumed, messages produced."""

    CAPABILITY = 0
    CONSUMED = 1
    PRODUCED = 2


class Report:
    """Progress in the operators' words: three count maps as columns.

    ``consumed(op, input, ts, counts)``: messages taken from an input; ``produced(op,
    output, ts, counts)``: messages sent on an output; ``capabilities(op, output, ts,
    diffs)``: capabilities acquired (``+``) or dropped (``-``) on an output. ``op`` is the
    operator's path; ``ts`` is ``int64[n, w]`` (``w = m + depth`` of the operator, or the
    dataflow's padded ``m + K`` with zero padding) or one timestamp broadcast to every
    count; ``counts`` is ``int64[n]`` or one integer broadcast to every timestamp. Each call
    returns the report, so calls chain. Nothing is checked against a dataflow until the
    report is translated (:meth:`Ports.pointstamps`) or guarded
    (:meth:`engine.operate.dataflow.Dataflow.check`).

    :meth:`to_arrays` and :meth:`from_arrays` turn a report into plain columns and back
    (an operator column coded against a list of paths: an Arrow dictionary column).

    >>> r = Report().produced("a", 0, [[1, 0], [2, 0]], [3, 4]).capabilities("a", 0, (1, 0), -1)
    >>> cols = r.to_arrays()
    >>> cols["kind"].tolist(), cols["count"].tolist(), cols["ops"]
    ([2, 2, 0], [3, 4, -1], ['a'])
    >>> Report.from_arrays(**cols).to_arrays()["ts"].tolist()
    [[1, 0], [2, 0], [1, 0]]
    """

    __slots__ = ("_blocks", "_cols")

    def __init__(self):
        self._blocks: list[dict] = []
        self._cols: dict | None = None

    # -- building ------------------------------------------------------------------------------

    def consumed(self, op: str, input: int, ts, counts=1) -> "Report":
        """Messages consumed at ``input`` of ``op`` (``counts >= 0``)."""
        return self._add(ReportKind.CONSUMED, op, input, ts, counts)

    def produced(self, op: str, output: int, ts, counts=1) -> "Report":
        """Messages produced at ``output`` of ``op`` (``counts >= 0``)."""
        return self._add(ReportKind.PRODUCED, op, output, ts, counts)

    def capabilities(self, op: str, output: int, ts, diffs) -> "Report":
        """Capability changes at ``output`` of ``op``: ``+`` acquired, ``-`` dropped."""
        return self._add(ReportKind.CAPABILITY, op, output, ts, diffs)

    def _add(self, kind: ReportKind, op, port, ts, counts) -> "Report":
        if not isinstance(op, str):
            raise TypeError(f"report: an operator is named by its path (a string), got {op!r}")
        what = "input" if kind is ReportKind.CONSUMED else "output"
        if isinstance(port, bool) or not isinstance(port, Integral) or port < 0:
            raise ReportPortError(f"report: operator {op!r} has no {what} port {port!r}")
        t = _int_array(ts, f"report: timestamps of operator {op!r} {what} {port}")
        c = _int_array(counts, f"report: counts of operator {op!r} {what} {port}")
        if t.ndim == 1:
            t = t[None, :]
            single = True
        elif t.ndim == 2:
            single = False
        else:
            raise TimestampWidthError(f"report: timestamps of operator {op!r} {what} {port} must "
                                      f"be one timestamp or an (n, width) array, got shape "
                                      f"{t.shape}")
        if c.ndim == 0:
            c = np.full(1 if single else len(t), int(c), np.int64)
        elif c.ndim != 1:
            raise ReportCountError(f"report: counts of operator {op!r} {what} {port} must be one "
                                   f"integer or a 1-d array, got shape {c.shape}")
        if single:
            t = np.broadcast_to(t, (len(c), t.shape[1]))
        if len(t) != len(c):
            raise ReportCountError(f"report: operator {op!r} {what} {port}: {len(t)} timestamps "
                                   f"but {len(c)} counts")
        self._blocks.append({"kind": np.full(len(c), int(kind), np.int8),
                             "op": np.zeros(len(c), np.int32), "ops": [op],
                             "port": np.full(len(c), int(port), np.int32),
                             "width": np.full(len(c), t.shape[1], np.int16),
                             "ts": np.array(t, np.int64), "count": np.array(c, np.int64)})
        self._cols = None
        return self

    @classmethod
    def concat(cls, reports: Iterable["Report"]) -> "Report":
        """One report with the rows of all of ``reports``, in order."""
        out = cls()
        for r in reports:
            if not isinstance(r, Report):
                raise TypeError(f"Report.concat takes Reports, got {type(r).__name__}")
            out._blocks.extend(r._blocks)
        return out

    @classmethod
    def from_arrays(cls, kind, op, port, ts, count, ops, width=None) -> "Report":
        """The report whose :meth:`to_arrays` is the given columns: ``kind`` (int, a
        :class:`ReportKind`), ``op`` (int codes into ``ops``, the operators' paths),
        ``port``, ``ts`` (``int64[n, w]``), ``count`` and optionally ``width`` (each row's
        timestamp width as given, default ``w``).

        Raises
        ------
        ReportError
            Columns of different lengths, a kind or operator code out of range.
        """
        ops = list(ops)
        if not all(isinstance(o, str) for o in ops):
            raise TypeError("report: ops must be the operators' paths (strings)")
        k = _int_array(kind, "report column kind")
        o = _int_array(op, "report column op")
        p = _int_array(port, "report column port")
        t = _int_array(ts, "report column ts")
        c = _int_array(count, "report column count")
        if t.ndim != 2:
            raise TimestampWidthError(f"report column ts must be an (n, width) array, got "
                                      f"shape {t.shape}")
        n = len(t)
        w = (np.full(n, t.shape[1], np.int16) if width is None
             else _int_array(width, "report column width"))
        for name, col in (("kind", k), ("op", o), ("port", p), ("count", c), ("width", w)):
            if col.ndim != 1 or len(col) != n:
                raise ReportCountError(f"report column {name} has shape {col.shape}, "
                                       f"expected ({n},)")
        bad = (k < 0) | (k > 2)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ReportError(f"report row {i}: kind {int(k[i])} is not a ReportKind (0, 1, 2)")
        bad = (o < 0) | (o >= len(ops))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ReportOperatorError(f"report row {i}: operator code {int(o[i])} is not in ops "
                                      f"(0..{len(ops) - 1})")
        bad = (p < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ReportPortError(f"report row {i}: operator {ops[int(o[i])]!r} has no port "
                                  f"{int(p[i])}")
        bad = (w < 0) | (w > t.shape[1])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise TimestampWidthError(f"report row {i}: width {int(w[i])} outside 0..{t.shape[1]}")
        out = cls()
        if n:
            out._blocks.append({"kind": k.astype(np.int8), "op": o.astype(np.int32), "ops": ops,
                                "port": p.astype(np.int32), "width": w.astype(np.int16),
                                "ts": np.array(t, np.int64), "count": np.array(c, np.int64)})
        return out

    # -- reading -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return sum(len(b["count"]) for b in self._blocks)

    def to_arrays(self) -> dict:
        """The report as columns: ``kind int8[n]``, ``op int32[n]`` (codes into ``ops``),
        ``port int32[n]``, ``width int16[n]``, ``ts int64[n, w]`` (narrower rows padded with
        zeros), ``count int64[n]``, and ``ops`` (list of paths)."""
        if self._cols is None:
            self._cols = self._columns()
        c = self._cols
        return {k: (list(v) if k == "ops" else v.copy()) for k, v in c.items()}

    def _columns(self) -> dict:
        blocks = self._blocks
        W = max((b["ts"].shape[1] for b in blocks), default=0)
        names: dict[str, int] = {}
        for b in blocks:
            for name in b["ops"]:
                names.setdefault(name, len(names))
        n = len(self)
        ts = np.zeros((n, W), np.int64)
        ops = []
        at = 0
        for b in blocks:
            k = len(b["count"])
            ts[at:at + k, :b["ts"].shape[1]] = b["ts"]
            remap = np.array([names[x] for x in b["ops"]], np.int32)
            ops.append(remap[b["op"]] if k else b["op"])
            at += k

        def cat(key, dtype):
            return np.concatenate([b[key] for b in blocks]) if blocks else np.zeros(0, dtype)
        return {"kind": cat("kind", np.int8),
                "op": np.concatenate(ops) if ops else np.zeros(0, np.int32),
                "port": cat("port", np.int32), "width": cat("width", np.int16), "ts": ts,
                "count": cat("count", np.int64), "ops": list(names)}

    def _view(self) -> dict:
        if self._cols is None:
            self._cols = self._columns()
        return self._cols

    def __repr__(self) -> str:
        return f"Report({len(self)} rows, {len(self._view()['ops'])} operators)"


def _int_array(x, what: str) -> np.ndarray:
    try:
        a = np.asarray(x)
    except (ValueError, TypeError):
        raise ReportError(f"{what}: not a rectangular array of integers") from None
    if a.size == 0 and a.dtype.kind not in "iu":
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu" or a.dtype == np.bool_:
        raise ReportError(f"{what}: must be integers, got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > INT64_MAX:
        raise TimestampRangeError(f"{what}: value {int(a.max())} exceeds the signed 64-bit range")
    return a.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------------------
# Ports: the picklable translation
# --------------------------------------------------------------------------------------------

class _Rows(NamedTuple):
    kind: np.ndarray    # int8[n]
    op: np.ndarray      # int64[n] leaf index
    port: np.ndarray    # int64[n]
    ts: np.ndarray      # int64[n, W]
    count: np.ndarray   # int64[n]
    loc: np.ndarray     # int64[n]: the target (consumed) or source (produced, capability)


class Ports:
    """The pure translation of reports into pointstamp changes, small and picklable (ship it
    to Spark tasks): :attr:`engine.operate.dataflow.Dataflow.ports`.

    Attributes
    ----------
    m, K, W, L : int
        Outer width, the dataflow's largest loop depth, ``W = m + K`` (pointstamps are
        ``int64[n, W]``) and the number of locations of the flat graph.
    names : tuple[str, ...]
        The operators' paths (leaves only: scopes report nothing of their own), indexed by
        leaf number.
    depth, inputs, outputs : int64[leaves]
        Each operator's loop depth and port counts.
    in_ptr, in_loc, out_ptr, out_loc : int64 arrays
        The location of input ``i`` of leaf ``f`` is ``in_loc[in_ptr[f] + i]``; of output
        ``o``, ``out_loc[out_ptr[f] + o]``.
    loc_leaf, loc_port : int64[L]
        The leaf and port owning each location (``-1`` at scope boundaries).
    initial_loc, initial_ts : int64[c], int64[c, W]
        The initial capabilities, one row per capability held (see :meth:`initial`).
    route_ptr, route_dst, route_keep : int64 arrays
        Where messages produced at source location ``s`` land:
        ``route_dst[route_ptr[s]:route_ptr[s + 1]]``, keeping the first ``route_keep``
        timestamp columns (egress on the way zeroes the rest).
    """

    def __init__(self, flat):  # a flattened dataflow: engine.operate.dataflow._Flat
        g = flat.graph
        self.m, self.K, self.L = g.m, g.max_depth, g.num_locations
        self.W = self.m + self.K
        self.names = tuple(p for p, _, _ in flat.leaves)
        self._leaf = {p: i for i, p in enumerate(self.names)}
        self._scopes = frozenset(flat.scopes)
        n = len(self.names)
        self.depth = np.array([g.depth(g.target(op, 0)) if d.inputs else
                               (g.depth(g.source(op, 0)) if d.outputs else 0)
                               for _, d, op in flat.leaves], np.int64)
        self.inputs = np.array([d.inputs for _, d, _ in flat.leaves], np.int64)
        self.outputs = np.array([d.outputs for _, d, _ in flat.leaves], np.int64)
        self.in_ptr = np.zeros(n + 1, np.int64)
        self.out_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(self.inputs, out=self.in_ptr[1:])
        np.cumsum(self.outputs, out=self.out_ptr[1:])
        self.in_loc = np.array([g.target(op, i) for _, d, op in flat.leaves
                                for i in range(d.inputs)], np.int64)
        self.out_loc = np.array([g.source(op, o) for _, d, op in flat.leaves
                                 for o in range(d.outputs)], np.int64)
        # owner of each location: leaf and port (-1 for scope boundaries)
        self.loc_leaf = np.full(self.L, -1, np.int64)
        self.loc_port = np.full(self.L, -1, np.int64)
        for leaf, (_, d, op) in enumerate(flat.leaves):
            for i in range(d.inputs):
                self.loc_leaf[g.target(op, i)], self.loc_port[g.target(op, i)] = leaf, i
            for o in range(d.outputs):
                self.loc_leaf[g.source(op, o)], self.loc_port[g.source(op, o)] = leaf, o
        #: per leaf: (input, output, Summary) of its internal summary
        self.summaries = [[(i, o, s) for (i, o), chain in d.summary.items() for s in chain]
                          for _, d, _ in flat.leaves]
        self._routes(flat)
        self._initial(flat)

    def _routes(self, flat) -> None:
        """For each leaf output: the leaf inputs its messages reach, through channels and
        scope boundaries, and how many timestamp columns survive the way (egress drops the
        innermost counter; ingress appends a 0, which the zero padding already holds)."""
        g, m = flat.graph, self.m
        kind_of: dict[int, str] = {}
        for ing, eg in list(flat.boundary.values()) + [(i, e) for _, i, e in flat.scopes.values()]:
            kind_of[ing], kind_of[eg] = "ingress", "egress"
        ptr, dst, keep = [0], [], []
        for l in range(self.L):
            if self.loc_leaf[l] >= 0 and g.locations[l].kind is PortKind.SOURCE:
                stack, seen = [(l, self.W)], {l}
                while stack:
                    s, k = stack.pop()
                    for e in g.out_edges[s]:
                        t = e.dst
                        loc = g.locations[t]
                        if loc.op not in kind_of:
                            dst.append(t)
                            keep.append(k)
                            continue
                        k2 = k if kind_of[loc.op] == "ingress" else min(k, m + loc.depth - 1)
                        nxt = g.source(loc.op, loc.port)
                        if nxt not in seen:
                            seen.add(nxt)
                            stack.append((nxt, k2))
            ptr.append(len(dst))
        self.route_ptr = np.array(ptr, np.int64)
        self.route_dst = np.array(dst, np.int64)
        self.route_keep = np.array(keep, np.int64)

    def _initial(self, flat) -> None:
        loc, ts = [], []
        for _, d, op in flat.leaves:
            for o, times in d.capabilities.items():
                for t in times:
                    loc.append(flat.graph.source(op, o))
                    ts.append(tuple(t) + (0,) * (self.W - len(t)))
        self.initial_loc = np.array(loc, np.int64)
        self.initial_ts = np.array(ts, np.int64).reshape(len(ts), self.W)

    # -- the translation -----------------------------------------------------------------------

    def leaf(self, op: str) -> int:
        """The leaf number of the operator at path ``op``.

        Raises
        ------
        ReportOperatorError
            An unknown path, or the path of a scope.
        """
        try:
            return self._leaf[op]
        except (KeyError, TypeError):
            if op in self._scopes:
                raise ReportOperatorError(f"report names scope {op!r}: a scope has no progress "
                                          f"of its own; report against the operators inside "
                                          f"it") from None
            raise ReportOperatorError(f"report names operator {op!r}, which the dataflow does "
                                      f"not have (operators: {', '.join(self.names)})") from None

    def initial(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The initial capabilities as pointstamps ``(loc int32[n], ts int64[n, m+K],
        diff int64[n])``, consolidated."""
        return _consolidate(self.initial_loc, self.initial_ts,
                            np.ones(len(self.initial_loc), np.int64))

    def pointstamps(self, report: Report) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pointstamp changes a report stands for, consolidated: ``(loc int32[n],
        ts int64[n, m+K], diff int64[n])`` sorted by ``(loc, ts)``, zeros dropped.

        Consumed at an input: ``-count`` at its target; produced at an output: ``+count``
        at every leaf input its channels reach (through scope boundaries, the timestamp
        gaining or losing loop counters on the way); capability changes: at the output's
        source. Pure and stateless: NumPy work proportional to the rows, one Python step
        per distinct operator path.

        Raises
        ------
        ReportOperatorError, ReportPortError
            An unknown operator (or a scope), or a port the operator lacks.
        TimestampWidthError, TimestampRangeError
            A timestamp of the wrong width for its operator, or a coordinate outside
            ``[0, 2**62)``.
        ReportCountError
            A negative consumed or produced count, or a sum leaving 64 bits.
        """
        return self._translate(self._compact(self._rows(report)))

    def _rows(self, report: Report) -> _Rows:
        if not isinstance(report, Report):
            raise TypeError(f"expected a Report, got {type(report).__name__}")
        c = report._view()
        kind, port, width, ts, count = c["kind"], c["port"], c["width"], c["ts"], c["count"]
        n = len(kind)
        codes = np.array([self.leaf(name) for name in c["ops"]], np.int64)
        op = codes[c["op"]] if n else np.zeros(0, np.int64)
        port = port.astype(np.int64)
        consumed = kind == ReportKind.CONSUMED
        limit = np.where(consumed, self.inputs[op], self.outputs[op])
        bad = port >= limit
        if bad.any():
            i = _first(bad)
            what = "input" if consumed[i] else "output"
            raise ReportPortError(f"report row {i}: operator {self.names[op[i]]!r} has no {what} "
                                  f"port {int(port[i])} (it has {int(limit[i])} {what} ports)")
        expect = self.m + self.depth[op]
        bad = (width != expect) & (width != self.W)
        if bad.any():
            i = _first(bad)
            raise TimestampWidthError(
                f"report row {i}: {self._where(kind[i], op[i], port[i])}: timestamp "
                f"{tuple(int(x) for x in ts[i, :width[i]])} has {int(width[i])} coordinates, "
                f"expected {int(expect[i])} (m={self.m} + depth {int(self.depth[op[i]])}) or "
                f"{self.W} padded")
        w = ts.shape[1]
        if w < self.W:
            ts = np.concatenate([ts, np.zeros((n, self.W - w), np.int64)], axis=1)
        elif w > self.W:
            ts = ts[:, :self.W]  # columns past every row's width: zero padding by construction
        if n and (int(ts.min()) < 0 or int(ts.max()) >= MAX_COORD):
            bad = (ts < 0) | (ts >= MAX_COORD)
            if bad.any():
                i = _first(bad.any(axis=1))
                raise TimestampRangeError(
                    f"report row {i}: {self._where(kind[i], op[i], port[i])}: timestamp "
                    f"{self._ts(ts[i], op[i])} has a coordinate outside [0, 2**62)")
        if n and self.K and int(expect.min()) < self.W:
            unused = np.zeros(n, bool)
            for col in range(self.m, self.W):
                unused |= (expect <= col) & (ts[:, col] != 0)
            if unused.any():
                i = _first(unused)
                raise TimestampWidthError(
                    f"report row {i}: {self._where(kind[i], op[i], port[i])}: padded "
                    f"timestamp {tuple(int(x) for x in ts[i])} has non-zero counters beyond "
                    f"depth {int(self.depth[op[i]])}")
        bad = (kind != ReportKind.CAPABILITY) & (count < 0)
        if bad.any():
            i = _first(bad)
            raise ReportCountError(f"report row {i}: {self._where(kind[i], op[i], port[i])}: "
                                   f"count {int(count[i])} at {self._ts(ts[i], op[i])} is "
                                   f"negative; consumed and produced counts are >= 0")
        # the port's location (indices clamped: the other kind's value is not used)
        at_in = (self.in_loc[np.minimum(self.in_ptr[op] + port, len(self.in_loc) - 1)]
                 if len(self.in_loc) else 0)
        at_out = (self.out_loc[np.minimum(self.out_ptr[op] + port, len(self.out_loc) - 1)]
                  if len(self.out_loc) else 0)
        loc = np.where(consumed, at_in, at_out)
        return _Rows(kind, op, port, np.ascontiguousarray(ts), count, loc.astype(np.int64))

    def _translate(self, r: _Rows):
        produced = np.flatnonzero(r.kind == ReportKind.PRODUCED)
        direct = np.flatnonzero(r.kind != ReportKind.PRODUCED)
        sign = np.where(r.kind[direct] == ReportKind.CONSUMED, -1, 1)
        # produced: every row fans out along the routes of its output
        src = r.loc[produced]
        lo, hi = self.route_ptr[src], self.route_ptr[src + 1]
        fan = hi - lo
        rows = np.repeat(produced, fan)
        first = np.repeat(lo - (np.cumsum(fan) - fan), fan)
        route = first + np.arange(len(rows))
        p_ts = r.ts[rows]
        keep = self.route_keep[route]
        for c in range(self.m, self.W):  # egress on the way: those counters are dropped
            drop = keep <= c
            if drop.any():
                p_ts[drop, c] = 0
        loc = np.concatenate([r.loc[direct], self.route_dst[route]])
        ts = np.concatenate([r.ts[direct], p_ts])
        diff = np.concatenate([sign * r.count[direct], r.count[rows]])
        return _consolidate(loc, ts, diff)

    def _where(self, kind, op, port) -> str:
        what = "input" if kind == ReportKind.CONSUMED else "output"
        return f"operator {self.names[int(op)]!r} {what} {int(port)}"

    def _ts(self, row, op) -> Timestamp:
        return tuple(int(x) for x in row[:self.m + int(self.depth[int(op)])])

    # -- the guards ----------------------------------------------------------------------------

    def check(self, report: Report, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Check ``report`` against the capabilities held in ``counts``; return its
        pointstamps (:meth:`pointstamps`). Changes nothing.

        ``counts`` is where the pointstamp counts live: a tracker of this dataflow's graph
        (any backend), a ``FrontierService`` (its tracker), or a table ``(loc, ts, cnt)``.
        A capability is *held* at ``t`` on an output when the count at the output's source
        is positive. The guards, on the report as a whole:

        0. in flight: the messages consumed at an input and time are at most the positive
           count at that input plus what this report sends there;
        1. drops: the net negative change at ``t`` is at most the count held at ``t``;
        2. acquisitions move forward: a net positive change at ``t`` needs a capability
           ``t' <= t`` held on that output, or a message consumed in this report at an input
           ``i`` with ``s(t_c) <= t`` for some ``s`` in the summary from ``i`` to that output;
        3. production: a message produced at ``t`` needs a capability ``t' <= t`` held on
           that output or acquired in this report, or a consumed message as in 2.

        Raises
        ------
        NotInFlightError
            The first row (in report order) consuming more than is in flight (guard 0).
        UnheldCapabilityError, CapabilityRegressionError, NoCapabilityError
            The first row (in report order) breaking guard 1, 2 or 3; the message names the
            operator, the port and the time.
        ReportError
            Anything :meth:`pointstamps` rejects.
        """
        rows = self._rows(report)
        compact = self._compact(rows)
        out = self._translate(compact)
        self._in_flight(compact, rows, counts, out)
        self._guard(compact, rows, counts)
        return out

    def _in_flight(self, c: _Rows, r: _Rows, counts, out) -> None:
        """Guard 0: what the compacted rows ``c`` consume at ``(input, t)`` is in flight there:
        at most the positive count at the input's target in ``counts`` plus what the report
        itself sends there (``out``, its consolidated pointstamps, holds ``sent - consumed``
        at that key). An error names the first row of ``r`` that consumes there."""
        cons = np.flatnonzero((c.kind == ReportKind.CONSUMED) & (c.count > 0))
        if not len(cons):
            return
        k_loc, k_ts, k_cnt = c.loc[cons], c.ts[cons], c.count[cons]
        f_loc, f_ts, f_cnt = _held(counts, np.unique(k_loc), self.W)
        have = _lookup(k_loc, k_ts, f_loc, f_ts, f_cnt)
        net = _lookup(k_loc, k_ts, *out)          # sent here in this report - consumed here
        bad = have + net < 0
        if bad.any():
            j = _first(bad)
            l, t, n = int(k_loc[j]), k_ts[j], int(k_cnt[j])
            r_cons = np.flatnonzero((r.kind == ReportKind.CONSUMED) & (r.count > 0))
            i = self._first_row(r, r_cons, l, t)
            raise NotInFlightError(
                f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} consumes {n} "
                f"messages at {self._ts(t, r.op[i])} but only {int(have[j] + net[j] + n)} are "
                f"in flight there ({int(have[j])} counted, {int(net[j] + n)} sent in this "
                f"report); report rejected, nothing applied")

    def _compact(self, r: _Rows) -> _Rows:
        """The rows summed per (kind, location, time), zeros dropped: what the report says,
        in as many rows as it has distinct times per port (one pass over the columns)."""
        slot, ts, count = _consolidate(r.loc * 3 + r.kind, r.ts, r.count)
        slot = slot.astype(np.int64)
        loc = slot // 3
        return _Rows((slot % 3).astype(np.int8), self.loc_leaf[loc], self.loc_port[loc], ts,
                     count, loc)

    def _guard(self, c: _Rows, r: _Rows, counts) -> None:
        """The guards on the compacted rows ``c``; an error names the first row of the
        report's own rows ``r`` that breaks one."""
        m, W = self.m, self.W
        cap = np.flatnonzero(c.kind == ReportKind.CAPABILITY)
        prod = np.flatnonzero((c.kind == ReportKind.PRODUCED) & (c.count > 0))
        if not len(cap) and not len(prod):
            return
        r_cap = np.flatnonzero(r.kind == ReportKind.CAPABILITY)
        r_prod = np.flatnonzero((r.kind == ReportKind.PRODUCED) & (r.count > 0))
        c_loc, c_ts, c_diff = c.loc[cap], c.ts[cap], c.count[cap]  # net, non-zero
        touched = np.unique(np.concatenate([c.loc[cap], c.loc[prod]]))
        h_loc, h_ts, h_cnt = _held(counts, touched, W)
        # 1. drops
        neg = c_diff < 0
        if neg.any():
            have = _lookup(c_loc[neg], c_ts[neg], h_loc, h_ts, h_cnt)
            bad = have < -c_diff[neg]
            if bad.any():
                j = _first(bad)
                l, t, d = int(c_loc[neg][j]), c_ts[neg][j], int(c_diff[neg][j])
                i = self._first_row(r, r_cap, l, t)
                raise UnheldCapabilityError(
                    f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} drops "
                    f"{-d} capabilities at {self._ts(t, r.op[i])} but holds {int(have[j])} "
                    f"there; report rejected, nothing applied")
        # what consumed messages justify: s(t_c) at the outputs their inputs connect to
        j_loc, j_ts = self._consumed_reach(c)
        # 2. acquisitions
        pos = c_diff > 0
        if pos.any():
            ok = _dominated(c_loc[pos], c_ts[pos], np.concatenate([h_loc, j_loc]),
                            np.concatenate([h_ts, j_ts]), m)
            if not ok.all():
                j = _first(~ok)
                l, t = int(c_loc[pos][j]), c_ts[pos][j]
                i = self._first_row(r, r_cap, l, t)
                raise CapabilityRegressionError(
                    f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} acquires a "
                    f"capability at {self._ts(t, r.op[i])}, which is not at or after a "
                    f"capability it holds there ({self._held_text(h_loc, h_ts, l, r.op[i])}) "
                    f"nor reached from a message consumed in this report; capabilities only "
                    f"move forward: report rejected, nothing applied")
        # 3. production
        if len(prod):
            q_loc, q_ts = c.loc[prod], c.ts[prod]  # distinct
            ok = _dominated(q_loc, q_ts, np.concatenate([h_loc, c_loc[pos], j_loc]),
                            np.concatenate([h_ts, c_ts[pos], j_ts]), m)
            if not ok.all():
                j = _first(~ok)
                l, t = int(q_loc[j]), q_ts[j]
                i = self._first_row(r, r_prod, l, t)
                raise NoCapabilityError(
                    f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} produces "
                    f"at {self._ts(t, r.op[i])} without a capability at or before that time "
                    f"there ({self._held_text(h_loc, h_ts, l, r.op[i])}) and without a "
                    f"consumed message that could result in it; report rejected, nothing "
                    f"applied")

    def _consumed_reach(self, r: _Rows):
        """``(loc, ts)`` at leaf outputs: ``s(t_c)`` for every distinct consumed ``(input,
        t_c)`` with a positive count and every summary ``s`` from that input to an output."""
        take = np.flatnonzero((r.kind == ReportKind.CONSUMED) & (r.count > 0))
        locs, tss = [np.zeros(0, np.int64)], [np.zeros((0, self.W), np.int64)]
        if len(take):
            u_loc, u_ts, _ = _consolidate(r.loc[take], r.ts[take], np.ones(len(take), np.int64))
            for l in np.unique(u_loc).tolist():
                leaf, i = int(self.loc_leaf[l]), int(self.loc_port[l])
                rows = u_ts[u_loc == l]
                for si, o, s in self.summaries[leaf]:
                    if si == i:
                        out = self.out_loc[self.out_ptr[leaf] + o]
                        locs.append(np.full(len(rows), out, np.int64))
                        tss.append(_apply(s, rows, self.m, self.W))
        return np.concatenate(locs), np.concatenate(tss)

    def _first_row(self, r: _Rows, idx: np.ndarray, l: int, t: np.ndarray) -> int:
        hit = (r.loc[idx] == l) & (r.ts[idx] == t).all(axis=1)
        return int(idx[_first(hit)])

    def _held_text(self, h_loc, h_ts, l, op) -> str:
        held = [self._ts(t, op) for t in h_ts[h_loc == l][:5]]
        if not held:
            return "it holds none"
        more = " ..." if (h_loc == l).sum() > 5 else ""
        return "it holds " + ", ".join(map(str, held)) + more


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _apply(s: Summary, ts: np.ndarray, m: int, W: int) -> np.ndarray:
    """``s`` applied to every row of ``ts`` (``int64[n, W]``, zero padded)."""
    out = np.zeros((len(ts), W), np.int64)
    j = s.keep
    out[:, :m] = ts[:, :m] + np.asarray(s.d_out, np.int64)
    out[:, m:m + j] = ts[:, m:m + j] + np.asarray(s.d_cnt, np.int64)
    out[:, m + j:m + s.dst_depth] = np.asarray(s.reset, np.int64)
    return out


def _packing(loc: np.ndarray, ts: np.ndarray) -> list[int] | None:
    """Bits per column ``(loc, ts[:, 0], ...)`` when the rows pack into one non-negative
    int64 key, else None."""
    cols = [loc] + [ts[:, c] for c in range(ts.shape[1])]
    if min(int(c.min()) for c in cols) < 0:
        return None
    bits = [max(1, int(c.max()).bit_length()) for c in cols]
    return bits if sum(bits) <= 62 else None


def _pack(loc: np.ndarray, ts: np.ndarray, bits: list[int]) -> np.ndarray:
    key = loc.astype(np.int64)
    for c, b in enumerate(bits[1:]):
        key <<= b
        key |= ts[:, c]
    return key


def _unpack(key: np.ndarray, bits: list[int], W: int):
    key = key.copy()
    ts = np.zeros((len(key), W), np.int64)
    for c in range(len(bits) - 1, 0, -1):
        ts[:, c - 1] = key & ((1 << bits[c]) - 1)
        key >>= bits[c]
    return key, ts


def _order(loc: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A permutation sorting rows by ``(loc, ts)``, and the sorted packed keys (``None``
    when the rows do not pack into one int64 and a lexicographic sort was used)."""
    if len(loc) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    bits = _packing(loc, ts)
    if bits is not None:
        key = _pack(loc, ts, bits)
        order = np.argsort(key)
        return order, key[order]
    return np.lexsort(tuple(reversed([loc] + [ts[:, c] for c in range(ts.shape[1])]))), None


def _consolidate(loc, ts, diff):
    """Sum the diffs of equal ``(loc, ts)``, drop zeros, sort: ``(loc int32, ts, diff)``.

    Rows that pack into a small key range are summed into a dense table (``np.add.at``,
    no sort); others are sorted. Sums that could leave 64 bits are added exactly."""
    loc = np.asarray(loc, np.int64)
    n = len(loc)
    W = ts.shape[1]
    if n == 0:
        return np.zeros(0, np.int32), np.zeros((0, W), np.int64), np.zeros(0, np.int64)
    big = int(np.abs(diff).max())
    exact = big and big > INT64_MAX // n
    bits = _packing(loc, ts)
    if bits is not None and not exact and (1 << sum(bits)) <= min(max(1 << 20, 2 * n), 1 << 23):
        key = _pack(loc, ts, bits)
        sums = np.zeros(1 << sum(bits), np.int64)
        np.add.at(sums, key, diff)
        keys = np.flatnonzero(sums)
        loc_out, ts_out = _unpack(keys, bits, W)
        return loc_out.astype(np.int32), ts_out, sums[keys]
    if bits is not None:
        key = _pack(loc, ts, bits)
        order = np.argsort(key)
        key = key[order]
        new = np.ones(n, bool)
        np.not_equal(key[1:], key[:-1], out=new[1:])
    else:
        order = np.lexsort(tuple(reversed([loc] + [ts[:, c] for c in range(W)])))
        l, t = loc[order], ts[order]
        new = np.ones(n, bool)
        new[1:] = (l[1:] != l[:-1]) | (t[1:] != t[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    diff = diff[order]
    if exact:
        sums = [sum(int(x) for x in part) for part in np.split(diff, starts[1:])]
        if any(abs(x) > INT64_MAX for x in sums):
            raise ReportCountError("report: a pointstamp's summed count leaves the signed "
                                   "64-bit range")
        d = np.array(sums, np.int64)
    else:
        d = np.add.reduceat(diff, starts)
    keep = d != 0
    first = order[starts[keep]]
    return loc[first].astype(np.int32), ts[first], d[keep]


def _lookup(q_loc, q_ts, h_loc, h_ts, h_cnt) -> np.ndarray:
    """The count in the table ``(h_loc, h_ts, h_cnt)`` (distinct keys) of each distinct query
    key ``(q_loc, q_ts)``; 0 when absent."""
    nq, nh = len(q_loc), len(h_loc)
    out = np.zeros(nq, np.int64)
    if not nq or not nh:
        return out
    loc = np.concatenate([h_loc, q_loc]).astype(np.int64)
    tag = np.concatenate([np.zeros(nh, np.int64), np.ones(nq, np.int64)])
    ts = np.concatenate([np.concatenate([h_ts, q_ts]), tag[:, None]], axis=1)
    order, _ = _order(loc, ts)
    loc, ts, tag = loc[order], ts[order], tag[order]
    same = np.zeros(len(loc), bool)
    same[1:] = (loc[1:] == loc[:-1]) & (ts[1:, :-1] == ts[:-1, :-1]).all(axis=1) & (tag[:-1] == 0)
    pos = np.flatnonzero(tag == 1)
    val = np.concatenate([h_cnt, np.zeros(nq, np.int64)])[order]
    got = np.where(same[pos], val[pos - 1], 0)
    out[order[pos] - nh] = got
    return out


def _dominated(q_loc, q_ts, j_loc, j_ts, m: int) -> np.ndarray:
    """``bool[nq]``: some justifier ``(j_loc, j_ts)`` at the same location is ``<=`` the
    query (outer coordinates componentwise, counters lexicographically).

    The justifiers of each location are first reduced to their minimal elements (an
    antichain: sorted lexicographically and swept, :func:`gpu_kernels.pareto.segment_frontiers`),
    since a query is dominated iff a minimal justifier is ``<=`` it. With one outer
    coordinate the antichain, in lexicographic order, has strictly increasing outer and
    strictly decreasing counters, so the only candidate for a query is the last element
    whose outer coordinate is ``<=`` the query's (a binary search): ``O((nq + nj) log nj)``.
    With ``m > 1`` each query is compared with the antichain, in chunks of bounded memory."""
    from gpu_kernels.pareto import segment_frontiers

    out = np.zeros(len(q_loc), bool)
    if not len(q_loc) or not len(j_loc):
        return out
    W = q_ts.shape[1]
    j_loc = np.asarray(j_loc, np.int64)
    order, _ = _order(j_loc, j_ts)
    jl, jt = j_loc[order], np.ascontiguousarray(j_ts[order], np.int64)
    locs, starts = np.unique(jl, return_index=True)
    seg_ptr = np.append(starts, len(jl)).astype(np.int64)
    ptr, A = segment_frontiers(jt, np.ones(len(jl), np.int64), seg_ptr,
                               np.arange(len(locs), dtype=np.int64), m)
    q_loc = np.asarray(q_loc, np.int64)
    for k, l in enumerate(locs.tolist()):
        qi = np.flatnonzero(q_loc == l)
        if not len(qi):
            continue
        a = A[ptr[k]:ptr[k + 1]]
        if m == 1:
            Q = q_ts[qi]
            idx = np.searchsorted(a[:, 0], Q[:, 0], side="right") - 1
            ok = idx >= 0
            out[qi] = ok & _lex_le(a[np.maximum(idx, 0), m:], Q[:, m:])
            continue
        step = max(1, (1 << 22) // (len(a) * max(W, 1)))
        for s in range(0, len(qi), step):
            out[qi[s:s + step]] = _le_any(a, q_ts[qi[s:s + step]], m)
    return out


def _lex_le(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``bool[n]``: row ``a[i] <= b[i]`` lexicographically (rows of equal width)."""
    if not a.shape[1]:
        return np.ones(len(a), bool)
    d = np.sign(b - a)
    first = np.argmax(d != 0, axis=1)
    return d[np.arange(len(d)), first] >= 0


def _le_any(J: np.ndarray, Q: np.ndarray, m: int) -> np.ndarray:
    outer = (J[None, :, :m] <= Q[:, None, :m]).all(axis=-1)
    if J.shape[1] == m:
        return outer.any(axis=1)
    d = np.sign(Q[:, None, m:] - J[None, :, m:])
    first = np.argmax(d != 0, axis=-1)
    lex = np.take_along_axis(d, first[..., None], axis=-1)[..., 0] >= 0
    return (outer & lex).any(axis=1)


def _held(counts, locs: np.ndarray, W: int):
    """The positive counts at ``locs``: ``(loc int64[h], ts int64[h, W], cnt int64[h])``."""
    if hasattr(counts, "table") and callable(counts.table):            # the batched engine
        loc, ts, cnt = counts.table()
    elif hasattr(counts, "tracker") and not callable(counts.tracker):  # a FrontierService
        return _held(counts.tracker, locs, W)
    elif hasattr(counts, "counts") and hasattr(counts.counts, "at"):   # a reference tracker
        return _held(counts.counts, locs, W)
    elif hasattr(counts, "at"):                                        # PointstampCounts
        rows = [(l, t, c) for l in np.asarray(locs).tolist() for t, c in counts.at(l).items()]
        loc = np.array([r[0] for r in rows], np.int64)
        ts = np.zeros((len(rows), W), np.int64)
        for k, (_, t, _) in enumerate(rows):
            ts[k, :len(t)] = t
        cnt = np.array([r[2] for r in rows], np.int64)
    elif isinstance(counts, tuple) and len(counts) == 3:
        loc, ts, cnt = (np.asarray(x) for x in counts)
    else:
        raise TypeError(f"counts must be a tracker, a FrontierService or a (loc, ts, cnt) table, "
                        f"got {type(counts).__name__}")
    loc, ts, cnt = np.asarray(loc, np.int64), np.asarray(ts, np.int64), np.asarray(cnt, np.int64)
    if ts.ndim != 2:
        ts = ts.reshape(len(loc), -1)
    if ts.shape[1] < W:
        ts = np.concatenate([ts, np.zeros((len(ts), W - ts.shape[1]), np.int64)], axis=1)
    keep = np.isin(loc, locs) & (cnt > 0)
    return loc[keep], ts[keep][:, :W], cnt[keep]
