"""Operators in their own words: ``Operate`` descriptions, nested ``Scope``s, progress ``Report``s.

An operator describes itself by its ports, its *internal summary* (for each (input, output)
an antichain of :class:`~engine.summary.Summary`, absent when not connected) and its
*initial capabilities* per output (:class:`Operate`). Operators are added to a
:class:`Scope`, a subgraph whose contents run one loop level deeper than the scope's own
ports; a scope is itself an operator of its parent. The root scope builds into a
:class:`Dataflow`: one flat :class:`~engine.graph.Graph` that every tracker backend tracks,
with each scope's boundary as an ingress operator (entering appends a loop counter 0) and an
egress operator (leaving drops it). The system gives each operator back its *external
summary* (for each (output, input), how data leaving that output can come back, from
``Psi``).

At run time an operator speaks of messages *consumed* per input, messages *produced* per
output and *capability changes* per output (:class:`Report`, columnar). The dataflow turns
them into pointstamp changes -- consumed at an input: ``-count`` at its target; produced at
an output: ``+count`` at the target of every channel leaving it, through scope boundaries
(whose ingress and egress change the timestamp and hold nothing); capabilities: at the
output's source -- checks them against the capabilities held (:meth:`Dataflow.check`), and a
:class:`DataflowTracker` applies each report as one tracker batch and pushes the frontier
changes at every operator's inputs back to it (docs/operate.md).

Operators are addressed by their *path*: names from the root scope down, joined by ``/``
(``"loop/step"``); names are unique among the children of a scope.

Examples
--------
A source feeding a loop scope whose body steps the iteration counter:

>>> from engine import Summary
>>> root = Scope("root", m=1)
>>> src = root.add(Operate("input", 0, 1, capabilities={0: [(0,)]}))
>>> loop = Scope("loop", 1, 1, depth=1)
>>> body = loop.add(Operate("body", 2, 2, summary={(i, o): Summary.identity(1)
...                                                 for i in (0, 1) for o in (0, 1)}))
>>> fb = loop.add(Operate("feedback", 1, 1, summary={(0, 0): Summary.feedback(1)}))
>>> loop.connect(BOUNDARY, 0, body, 0); loop.connect(body, 0, fb, 0)
>>> loop.connect(fb, 0, body, 1); loop.connect(body, 1, BOUNDARY, 0)
>>> lp = root.add(loop)
>>> root.connect(src, 0, lp, 0)
>>> df = root.build()
>>> df.internal_summary("loop")
{(0, 0): (Summary(0->0, keep=0, d_out=(0,), d_cnt=(), reset=()),)}
>>> df.external_summary("loop/body")
{(0, 1): (Summary(1->1, keep=1, d_out=(0,), d_cnt=(1,), reset=()),)}
>>> rt = df.tracker(backend="reference")
>>> rt.frontier("loop/body", 0)
[(0, 0)]
>>> pushed = rt.apply(Report().produced("input", 0, (0,), 5).capabilities("input", 0, (0,), -1))
>>> rt.frontier("loop/body", 0), rt.frontier("loop/body", 1)
([(0, 0)], [(0, 1)])
>>> pushed = rt.apply(Report().consumed("loop/body", 0, (0, 0), 5))
>>> rt.frontier("loop/body", 0), pushed["loop/body"]
([], {0: [((0, 0), -1)], 1: [((0, 1), -1)]})
"""

from __future__ import annotations

import enum
from numbers import Integral
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .antichain import SummaryAntichain
from .errors import (CapabilityRegressionError, DepthMismatchError, DuplicateChannelError,
                     NoCapabilityError, OperatorNameError, ReportCountError, ReportError,
                     ReportOperatorError, ReportPortError, ScopeError, SummaryShapeError,
                     TimestampRangeError, TimestampWidthError, UnheldCapabilityError,
                     UnknownOperatorError, UnknownPortError)
from .graph import Graph, GraphBuilder, PortKind
from .summary import Summary
from .timestamp import MAX_COORD, Timestamp, check_timestamp

__all__ = ["Operate", "Scope", "BOUNDARY", "Report", "ReportKind", "Dataflow", "Ports",
           "DataflowTracker"]

INT64_MAX = (1 << 63) - 1


class ReportKind(enum.IntEnum):
    """What a report row says: a capability change, messages consumed, messages produced."""

    CAPABILITY = 0
    CONSUMED = 1
    PRODUCED = 2


class _Boundary:
    """The scope's own boundary, as the other end of a channel in :meth:`Scope.connect`."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "BOUNDARY"

    def __reduce__(self):
        return (_Boundary, ())


#: In :meth:`Scope.connect`, the scope's own inputs (as the source of a channel) and outputs
#: (as its target).
BOUNDARY = _Boundary()


def _count(v, what: str, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, Integral) or v < 0:
        raise UnknownPortError(f"{where}: {what} must be a non-negative integer, got {v!r}")
    return int(v)


def _name(name, what: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a string, got {type(name).__name__}")
    if not name or "/" in name:
        raise OperatorNameError(f"{what} name {name!r} must be non-empty and contain no '/' "
                                f"(paths join names with '/')")
    return name


class Operate:
    """The description of one operator: ports, internal summary, initial capabilities.

    Parameters
    ----------
    name : str
        Unique among the children of the scope it is added to; no ``/``.
    inputs, outputs : int
        Number of input and output ports.
    summary : mapping ``(input, output) -> Summary or iterable of Summary``, optional
        The internal summary: how a timestamp at that input can advance on its way to that
        output; absent pairs are not connected. Every summary maps the operator's loop depth
        to itself (all ports of an operator share its scope's depth).
    capabilities : mapping ``output -> iterable of timestamps``, optional
        Initial capabilities; a timestamp listed twice is held twice.
    depth, m : int, optional
        The loop depth and outer width; taken from the summaries when they give them, else
        from the scope the operator is added to.

    Raises
    ------
    UnknownPortError
        A negative port count, or a summary or capability naming a port the operator lacks.
    SummaryShapeError
        A summary that is not a :class:`Summary` of the operator's depth and ``m``, or
        summaries of different shapes.
    TimestampWidthError, TimestampRangeError
        An initial capability that is not a timestamp of width ``m + depth``.
    OperatorNameError
        A name that is empty or contains ``/``.
    """

    __slots__ = ("name", "inputs", "outputs", "summary", "capabilities", "depth", "m")

    def __init__(self, name: str, inputs: int, outputs: int, *,
                 summary: Mapping[tuple[int, int], "Summary | Iterable[Summary]"] | None = None,
                 capabilities: Mapping[int, Iterable[Sequence[int]]] | None = None,
                 depth: int | None = None, m: int | None = None):
        name = _name(name, "operator")
        where = f"operator {name!r}"
        inputs, outputs = _count(inputs, "inputs", where), _count(outputs, "outputs", where)
        if depth is not None:
            depth = _count(depth, "depth", where)
        if m is not None:
            m = _count(m, "m", where)
            if m < 1:
                raise SummaryShapeError(f"{where}: m (outer timestamp width) must be >= 1")
        chains: dict[tuple[int, int], tuple[Summary, ...]] = {}
        for key, value in dict(summary or {}).items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise UnknownPortError(f"{where}: summary keys are (input, output) pairs, got {key!r}")
            i, o = key
            self._port(where, i, inputs, "input")
            self._port(where, o, outputs, "output")
            items = [value] if isinstance(value, Summary) else list(value)
            chain = SummaryAntichain()
            for s in items:
                if not isinstance(s, Summary):
                    raise SummaryShapeError(f"{where}: summary from input {i} to output {o} must "
                                            f"be an engine.Summary, got {type(s).__name__}")
                if s.src_depth != s.dst_depth:
                    raise SummaryShapeError(
                        f"{where}: summary {s!r} from input {i} to output {o} changes the loop "
                        f"depth; an operator's ports share one depth (scopes change it)")
                if depth is None:
                    depth = s.src_depth
                if m is None:
                    m = s.m
                if (s.src_depth, s.m) != (depth, m):
                    raise SummaryShapeError(
                        f"{where}: summary {s!r} from input {i} to output {o} is for depth "
                        f"{s.src_depth} and m={s.m}, but the operator has depth {depth} and m={m}")
                chain.insert(s)
            if len(chain):
                chains[(int(i), int(o))] = chain.sorted()
        caps: dict[int, tuple[Timestamp, ...]] = {}
        for o, times in dict(capabilities or {}).items():
            self._port(where, o, outputs, "output")
            rows = []
            for t in times:
                if m is not None and depth is not None:
                    rows.append(check_timestamp(t, m, depth, where=f"{where} output {o} capability"))
                else:  # the width is checked when the operator joins a scope
                    try:
                        width = len(t)
                    except TypeError:
                        width = 1
                    rows.append(check_timestamp(t, 1, max(width, 1) - 1,
                                                where=f"{where} output {o} capability"))
            if rows:
                caps[int(o)] = tuple(rows)
        widths = {len(t) for ts in caps.values() for t in ts}
        if len(widths) > 1:
            raise TimestampWidthError(f"{where}: initial capabilities of different widths "
                                      f"{sorted(widths)}; all have m + depth coordinates")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "summary", chains)
        object.__setattr__(self, "capabilities", caps)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "m", m)

    def __setattr__(self, name, value):
        raise AttributeError("an Operate description is immutable")

    def __reduce__(self):
        return (_operate, (self.name, self.inputs, self.outputs, self.summary,
                           self.capabilities, self.depth, self.m))

    def __repr__(self) -> str:
        return (f"Operate({self.name!r}, inputs={self.inputs}, outputs={self.outputs}, "
                f"depth={self.depth}, connected={sorted(self.summary)})")

    @staticmethod
    def _port(where, p, n, what):
        if isinstance(p, bool) or not isinstance(p, Integral) or not 0 <= p < n:
            raise UnknownPortError(f"{where} has no {what} port {p!r} (it has {n} {what} ports)")

    def _check_fits(self, m: int, depth: int, where: str) -> None:
        """Raise unless the operator can live in a scope of outer width ``m`` at ``depth``."""
        if self.depth is not None and self.depth != depth:
            raise DepthMismatchError(f"{where}: operator {self.name!r} has depth {self.depth}, "
                                     f"the scope's contents have depth {depth}")
        if self.m is not None and self.m != m:
            raise SummaryShapeError(f"{where}: operator {self.name!r} has m={self.m}, the "
                                    f"scope has m={m}")
        for o, times in self.capabilities.items():
            for t in times:
                check_timestamp(t, m, depth, where=f"{where}: operator {self.name!r} output {o} "
                                                   f"capability")


def _operate(name, inputs, outputs, summary, capabilities, depth, m):
    return Operate(name, inputs, outputs, summary=summary, capabilities=capabilities,
                   depth=depth, m=m)


class Scope:
    """A subgraph of operators and scopes; itself an operator of the scope it is added to.

    Parameters
    ----------
    name : str
        Unique among its siblings; no ``/``. The root scope's name is not part of any path.
    inputs, outputs : int
        The scope's boundary ports (a root scope has none).
    depth : int
        The loop depth of the scope's contents. A child scope runs one level deeper than its
        parent (``depth = parent.depth + 1``): data entering it gains a loop counter starting
        at 0, data leaving it loses the innermost counter. The root's depth is free (0 for
        plain epochs).
    m : int
        The outer (epoch) width of every timestamp, the same throughout a dataflow.

    Connect children with :meth:`connect`, naming a child by the index :meth:`add` returned
    and the scope's own inputs and outputs by :data:`BOUNDARY`.
    """

    BOUNDARY = BOUNDARY

    def __init__(self, name: str, inputs: int = 0, outputs: int = 0, *, depth: int = 0, m: int = 1):
        self.name = _name(name, "scope")
        where = f"scope {name!r}"
        self.inputs = _count(inputs, "inputs", where)
        self.outputs = _count(outputs, "outputs", where)
        self.depth = _count(depth, "depth", where)
        self.m = _count(m, "m", where)
        if self.m < 1:
            raise SummaryShapeError(f"{where}: m (outer timestamp width) must be >= 1")
        self._children: list[Operate | Scope] = []
        self._index: dict[str, int] = {}
        self._channels: list[tuple[object, int, object, int]] = []
        self._fed: dict[tuple[object, int], tuple[object, int]] = {}
        self._parent: Scope | None = None

    def __repr__(self) -> str:
        return (f"Scope({self.name!r}, inputs={self.inputs}, outputs={self.outputs}, "
                f"depth={self.depth}, children={[c.name for c in self._children]})")

    @property
    def children(self) -> tuple["Operate | Scope", ...]:
        """The children in order of addition (their index is what :meth:`add` returned)."""
        return tuple(self._children)

    def add(self, child: "Operate | Scope") -> int:
        """Add an operator or a scope; return its index in this scope.

        Raises
        ------
        OperatorNameError
            A sibling already has the child's name.
        DepthMismatchError, SummaryShapeError, TimestampWidthError
            An operator whose depth, ``m`` or capabilities do not fit this scope.
        ScopeError
            A child scope whose depth is not this scope's plus one, whose ``m`` differs, that
            already has a parent, or that is this scope or one of its ancestors.
        """
        where = f"scope {self.name!r}"
        if isinstance(child, Scope):
            if child._parent is not None:
                raise ScopeError(f"{where}: scope {child.name!r} is already a child of scope "
                                 f"{child._parent.name!r}; a scope has one parent")
            s = self
            while s is not None:
                if s is child:
                    raise ScopeError(f"{where}: scope {child.name!r} cannot contain itself")
                s = s._parent
            if child.depth != self.depth + 1:
                raise ScopeError(f"{where} (depth {self.depth}): child scope {child.name!r} has "
                                 f"depth {child.depth}; a child scope's contents run one loop "
                                 f"deeper, depth {self.depth + 1}")
            if child.m != self.m:
                raise ScopeError(f"{where} has m={self.m}, child scope {child.name!r} m={child.m}")
        elif isinstance(child, Operate):
            child._check_fits(self.m, self.depth, where)
        else:
            raise TypeError(f"{where}: add takes an Operate or a Scope, got {type(child).__name__}")
        if child.name in self._index:
            raise OperatorNameError(f"{where} already has a child named {child.name!r}")
        self._index[child.name] = len(self._children)
        self._children.append(child)
        if isinstance(child, Scope):
            child._parent = self
        return len(self._children) - 1

    def connect(self, src_op, src_port: int, dst_op, dst_port: int) -> None:
        """A channel from output ``src_port`` of child ``src_op`` to input ``dst_port`` of
        child ``dst_op``. ``src_op = BOUNDARY`` takes the scope's input ``src_port``;
        ``dst_op = BOUNDARY`` delivers to the scope's output ``dst_port``.

        Raises
        ------
        UnknownOperatorError, UnknownPortError
            No such child, or no such port.
        DuplicateChannelError
            The input (or scope output) already has a channel: each takes at most one.
        """
        src = self._end(src_op, src_port, PortKind.SOURCE)
        dst = self._end(dst_op, dst_port, PortKind.TARGET)
        if dst in self._fed:
            raise DuplicateChannelError(f"scope {self.name!r}: {self._describe(*dst, 'in')} "
                                        f"already has a channel from "
                                        f"{self._describe(*self._fed[dst], 'out')}; an input takes "
                                        f"at most one channel")
        self._fed[dst] = src
        self._channels.append((*src, *dst))

    def _end(self, op, port, kind: PortKind) -> tuple[object, int]:
        where = f"scope {self.name!r}"
        if op is BOUNDARY:
            n = self.inputs if kind is PortKind.SOURCE else self.outputs
            what = "input" if kind is PortKind.SOURCE else "output"
            Operate._port(where, port, n, what)
            return BOUNDARY, int(port)
        if isinstance(op, bool) or not isinstance(op, Integral) or not 0 <= op < len(self._children):
            raise UnknownOperatorError(f"{where} has no child {op!r} (children 0.."
                                       f"{len(self._children) - 1}, or BOUNDARY)")
        c = self._children[op]
        n = c.outputs if kind is PortKind.SOURCE else c.inputs
        what = "output" if kind is PortKind.SOURCE else "input"
        Operate._port(f"{where}: child {c.name!r}", port, n, what)
        return int(op), int(port)

    def _describe(self, op, port, io) -> str:
        if op is BOUNDARY:
            return f"the scope's {'input' if io == 'out' else 'output'} {port}"
        return f"{self._children[op].name!r}.{io}{port}"

    def internal_summary(self) -> dict[tuple[int, int], tuple[Summary, ...]]:
        """For each (input, output) of this scope, the antichain of summaries from the
        scope's input (outside, depth ``self.depth - 1``) to its output, through ingress,
        the scope's own ``Psi`` and egress; absent pairs are not connected.

        Raises
        ------
        ScopeError
            For a scope at depth 0 (it has no outside to enter from).
        """
        if self.depth < 1:
            raise ScopeError(f"scope {self.name!r} has depth 0: it cannot be entered from a "
                             f"parent, so it has no internal summary")
        from .psi import compute_psi
        flat = _flatten(self, with_boundary=True)
        psi = compute_psi(flat.graph, threads=1)
        ing, eg = flat.boundary[""]
        out = {}
        for i in range(self.inputs):
            row = psi.row(flat.graph.target(ing, i))
            for o in range(self.outputs):
                chain = row.get(flat.graph.source(eg, o))
                if chain:
                    out[(i, o)] = chain
        return out

    def as_operate(self) -> Operate:
        """This scope as its parent sees it: an :class:`Operate` with the scope's ports and
        :meth:`internal_summary` (no capabilities: those belong to the operators inside)."""
        return Operate(self.name, self.inputs, self.outputs, summary=self.internal_summary(),
                       depth=self.depth - 1, m=self.m)

    def build(self) -> "Dataflow":
        """Compile this root scope and everything in it into a :class:`Dataflow`.

        Raises
        ------
        ScopeError
            If this scope has a parent or boundary ports.
        ZeroAdvanceCycleError
            If a cycle can bring data back at the same or an earlier time.
        """
        if self._parent is not None:
            raise ScopeError(f"scope {self.name!r} is a child of scope {self._parent.name!r}; "
                             f"build the root scope")
        if self.inputs or self.outputs:
            raise ScopeError(f"root scope {self.name!r} has {self.inputs} inputs and "
                             f"{self.outputs} outputs, but nothing outside a root can feed or "
                             f"read them: model the outside world as operators")
        return Dataflow(self)


# --------------------------------------------------------------------------------------------
# Flattening
# --------------------------------------------------------------------------------------------

class _Flat(NamedTuple):
    graph: Graph
    leaves: list[tuple[str, Operate, int]]      # path, description, flat operator id
    scopes: dict[str, tuple[Scope, int, int]]   # path -> scope, ingress op, egress op
    boundary: dict[str, tuple[int, int]]        # path -> (ingress op, egress op); "" = own


def _flatten(root: Scope, *, with_boundary: bool) -> _Flat:
    """One :class:`GraphBuilder` graph for ``root`` and everything in it: operators at their
    scope's depth, each child scope's boundary as an ingress operator (its inputs at the
    parent's depth, its outputs inside, summary ``ingress``) and an egress operator (summary
    ``egress``). ``with_boundary`` gives ``root`` its own boundary operators too (path ``""``)."""
    m = root.m
    b = GraphBuilder(m)
    leaves: list[tuple[str, Operate, int]] = []
    scopes: dict[str, tuple[Scope, int, int]] = {}
    boundary: dict[str, tuple[int, int]] = {}

    def add_boundary(scope: Scope, path: str) -> tuple[int, int]:
        d, label = scope.depth, path or scope.name
        ing = b.add_operator(scope.inputs, scope.inputs, input_depths=[d - 1] * scope.inputs,
                             output_depths=[d] * scope.inputs, name=f"{label}[ingress]")
        eg = b.add_operator(scope.outputs, scope.outputs, input_depths=[d] * scope.outputs,
                            output_depths=[d - 1] * scope.outputs, name=f"{label}[egress]")
        for i in range(scope.inputs):
            b.add_summary(ing, i, i, Summary.ingress(d - 1, m))
        for o in range(scope.outputs):
            b.add_summary(eg, o, o, Summary.egress(d, m))
        boundary[path] = (ing, eg)
        return ing, eg

    def walk(scope: Scope, prefix: str, own: tuple[int, int] | None) -> None:
        ends: list[tuple[int, int] | int] = []
        for child in scope._children:
            path = prefix + child.name
            if isinstance(child, Operate):
                op = b.add_operator(child.inputs, child.outputs, depth=scope.depth, name=path)
                for (i, o), chain in child.summary.items():
                    for s in chain:
                        b.add_summary(op, i, o, s)
                leaves.append((path, child, op))
                ends.append(op)
            else:
                ing, eg = add_boundary(child, path)
                scopes[path] = (child, ing, eg)
                ends.append((ing, eg))
                walk(child, path + "/", (ing, eg))
        for s_op, s_port, d_op, d_port in scope._channels:
            if s_op is BOUNDARY:
                src = own[0]
            else:
                e = ends[s_op]
                src = e[1] if isinstance(e, tuple) else e
            if d_op is BOUNDARY:
                dst = own[1]
            else:
                e = ends[d_op]
                dst = e[0] if isinstance(e, tuple) else e
            b.connect(src, s_port, dst, d_port)

    own = add_boundary(root, "") if with_boundary else None
    walk(root, "", own)
    return _Flat(b.build(), leaves, scopes, boundary)


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

class Report:
    """Progress in the operators' words: three count maps as columns.

    ``consumed(op, input, ts, counts)``: messages taken from an input; ``produced(op,
    output, ts, counts)``: messages sent on an output; ``capabilities(op, output, ts,
    diffs)``: capabilities acquired (``+``) or dropped (``-``) on an output. ``op`` is the
    operator's path; ``ts`` is ``int64[n, w]`` (``w = m + depth`` of the operator, or the
    dataflow's padded ``m + K`` with zero padding) or one timestamp broadcast to every
    count; ``counts`` is ``int64[n]`` or one integer broadcast to every timestamp. Each call
    returns the report, so calls chain. Nothing is checked against a dataflow until the
    report is translated (:meth:`Ports.pointstamps`) or guarded (:meth:`Dataflow.check`).

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
                                      f"be one timestamp or an (n, width) array, got shape {t.shape}")
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
            raise TimestampWidthError(f"report column ts must be an (n, width) array, got shape {t.shape}")
        n = len(t)
        w = np.full(n, t.shape[1], np.int16) if width is None else _int_array(width, "report column width")
        for name, col in (("kind", k), ("op", o), ("port", p), ("count", c), ("width", w)):
            if col.ndim != 1 or len(col) != n:
                raise ReportCountError(f"report column {name} has shape {col.shape}, expected ({n},)")
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
            raise ReportPortError(f"report row {i}: operator {ops[int(o[i])]!r} has no port {int(p[i])}")
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
    to Spark tasks). Build it with :class:`Dataflow`; :attr:`Dataflow.ports`.

    Attributes
    ----------
    m, K : int
        Outer width and the dataflow's largest loop depth; pointstamps are ``int64[n, m+K]``.
    names : tuple[str, ...]
        The operators' paths (leaves only: scopes report nothing of their own), indexed by
        leaf number.
    """

    def __init__(self, flat: _Flat):
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

    def _routes(self, flat: _Flat) -> None:
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

    def _initial(self, flat: _Flat) -> None:
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
        return self._translate(self._rows(report))

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
        if n:
            bad = (ts < 0) | (ts >= MAX_COORD)
            if bad.any():
                i = _first(bad.any(axis=1))
                raise TimestampRangeError(
                    f"report row {i}: {self._where(kind[i], op[i], port[i])}: timestamp "
                    f"{self._ts(ts[i], op[i])} has a coordinate outside [0, 2**62)")
            if self.K:
                unused = (np.arange(self.W)[None, :] >= expect[:, None]) & (ts != 0)
                if unused.any():
                    i = _first(unused.any(axis=1))
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
        loc = np.where(consumed, self.in_loc[np.minimum(self.in_ptr[op] + port, len(self.in_loc) - 1)]
                       if len(self.in_loc) else 0,
                       self.out_loc[np.minimum(self.out_ptr[op] + port, len(self.out_loc) - 1)]
                       if len(self.out_loc) else 0)
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
        p_ts[np.arange(self.W)[None, :] >= keep[:, None]] = 0
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

        1. drops: the net negative change at ``t`` is at most the count held at ``t``;
        2. acquisitions move forward: a net positive change at ``t`` needs a capability
           ``t' <= t`` held on that output, or a message consumed in this report at an input
           ``i`` with ``s(t_c) <= t`` for some ``s`` in the summary from ``i`` to that output;
        3. production: a message produced at ``t`` needs a capability ``t' <= t`` held on
           that output or acquired in this report, or a consumed message as in 2.

        Raises
        ------
        UnheldCapabilityError, CapabilityRegressionError, NoCapabilityError
            The first row (in report order) breaking guard 1, 2 or 3; the message names the
            operator, the port and the time.
        ReportError
            Anything :meth:`pointstamps` rejects.
        """
        rows = self._rows(report)
        out = self._translate(rows)
        self._guard(rows, counts)
        return out

    def _guard(self, r: _Rows, counts) -> None:
        m, W = self.m, self.W
        cap = np.flatnonzero(r.kind == ReportKind.CAPABILITY)
        prod = np.flatnonzero((r.kind == ReportKind.PRODUCED) & (r.count > 0))
        if not len(cap) and not len(prod):
            return
        c_loc, c_ts, c_diff = _consolidate(r.loc[cap], r.ts[cap], r.count[cap])
        touched = np.unique(np.concatenate([r.loc[cap], r.loc[prod]]))
        h_loc, h_ts, h_cnt = _held(counts, touched, W)
        # 1. drops
        neg = c_diff < 0
        if neg.any():
            have = _lookup(c_loc[neg], c_ts[neg], h_loc, h_ts, h_cnt)
            bad = have < -c_diff[neg]
            if bad.any():
                j = _first(bad)
                l, t, d = int(c_loc[neg][j]), c_ts[neg][j], int(c_diff[neg][j])
                i = self._first_row(r, cap, l, t)
                raise UnheldCapabilityError(
                    f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} drops "
                    f"{-d} capabilities at {self._ts(t, r.op[i])} but holds {int(have[j])} "
                    f"there; report rejected, nothing applied")
        # what consumed messages justify: s(t_c) at the outputs their inputs connect to
        j_loc, j_ts = self._consumed_reach(r)
        # 2. acquisitions
        pos = c_diff > 0
        if pos.any():
            ok = _dominated(c_loc[pos], c_ts[pos], np.concatenate([h_loc, j_loc]),
                            np.concatenate([h_ts, j_ts]), m)
            if not ok.all():
                j = _first(~ok)
                l, t = int(c_loc[pos][j]), c_ts[pos][j]
                i = self._first_row(r, cap, l, t)
                raise CapabilityRegressionError(
                    f"report row {i}: {self._where(r.kind[i], r.op[i], r.port[i])} acquires a "
                    f"capability at {self._ts(t, r.op[i])}, which is not at or after a "
                    f"capability it holds there ({self._held_text(h_loc, h_ts, l, r.op[i])}) "
                    f"nor reached from a message consumed in this report; capabilities only "
                    f"move forward: report rejected, nothing applied")
        # 3. production
        if len(prod):
            q_loc, q_ts, _ = _consolidate(r.loc[prod], r.ts[prod], np.ones(len(prod), np.int64))
            ok = _dominated(q_loc, q_ts, np.concatenate([h_loc, c_loc[pos], j_loc]),
                            np.concatenate([h_ts, c_ts[pos], j_ts]), m)
            if not ok.all():
                j = _first(~ok)
                l, t = int(q_loc[j]), q_ts[j]
                i = self._first_row(r, prod, l, t)
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
                        locs.append(np.full(len(rows), self.out_loc[self.out_ptr[leaf] + o], np.int64))
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


def _order(loc: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """A stable permutation sorting rows by ``(loc, ts)``: one packed int64 key when the
    columns' ranges fit in 63 bits (values are non-negative), else a lexicographic sort."""
    n = len(loc)
    if n == 0:
        return np.zeros(0, np.int64)
    cols = [loc] + [ts[:, c] for c in range(ts.shape[1])]
    bits = [max(1, int(c.max()).bit_length()) for c in cols]
    if sum(bits) <= 63 and min(int(c.min()) for c in cols) >= 0:
        key = np.zeros(n, np.int64)
        for c, b in zip(cols, bits):
            key = (key << b) | c.astype(np.int64)
        return np.argsort(key, kind="stable")
    return np.lexsort(tuple(reversed(cols)))


def _consolidate(loc, ts, diff):
    """Sum the diffs of equal ``(loc, ts)``, drop zeros, sort: ``(loc int32, ts, diff)``."""
    loc = np.asarray(loc, np.int64)
    n = len(loc)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros((0, ts.shape[1]), np.int64), np.zeros(0, np.int64)
    big = int(np.abs(diff).max())
    if big and big > INT64_MAX // n:  # sums could wrap: add them exactly
        order = _order(loc, ts)
        loc, ts, diff = loc[order], ts[order], diff[order]
        new = np.ones(n, bool)
        new[1:] = (loc[1:] != loc[:-1]) | (ts[1:] != ts[:-1]).any(axis=1)
        starts = np.flatnonzero(new)
        sums = [sum(int(x) for x in part) for part in np.split(diff, starts[1:])]
        if any(abs(s) > INT64_MAX for s in sums):
            raise ReportCountError("report: a pointstamp's summed count leaves the signed "
                                   "64-bit range")
        d = np.array(sums, np.int64)
    else:
        order = _order(loc, ts)
        loc, ts, diff = loc[order], ts[order], diff[order]
        new = np.ones(n, bool)
        new[1:] = (loc[1:] != loc[:-1]) | (ts[1:] != ts[:-1]).any(axis=1)
        starts = np.flatnonzero(new)
        d = np.add.reduceat(diff, starts)
    keep = d != 0
    return loc[starts][keep].astype(np.int32), ts[starts][keep], d[keep]


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
    order = _order(loc, ts)
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
    query (outer coordinates componentwise, counters lexicographically). Pairwise per
    location, in chunks of bounded memory."""
    out = np.zeros(len(q_loc), bool)
    if not len(q_loc) or not len(j_loc):
        return out
    W = q_ts.shape[1]
    for l in np.unique(q_loc).tolist():
        qi = np.flatnonzero(q_loc == l)
        J = j_ts[j_loc == l]
        if not len(J):
            continue
        step = max(1, (1 << 22) // (len(J) * max(W, 1)))
        for a in range(0, len(qi), step):
            out[qi[a:a + step]] = _le_any(J, q_ts[qi[a:a + step]], m)
    return out


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


# --------------------------------------------------------------------------------------------
# Dataflow and its tracker
# --------------------------------------------------------------------------------------------

class Dataflow:
    """A root :class:`Scope` compiled: the flat graph, the translation, the summaries.

    Build it with :meth:`Scope.build`.

    Attributes
    ----------
    graph : Graph
        The flat location graph: every operator at its scope's depth, every child scope's
        boundary an ingress and an egress operator (named ``path[ingress]``,
        ``path[egress]``). Any tracker backend tracks it.
    ports : Ports
        The picklable report translation (:meth:`Ports.pointstamps`).
    root : Scope
    """

    def __init__(self, root: Scope):
        self.root = root
        flat = _flatten(root, with_boundary=False)
        self._flat = flat
        self.graph = flat.graph
        self.ports = Ports(flat)
        self._psi = None
        #: input locations (leaf inputs and scope inputs) -> (path, input)
        self._input_of: dict[int, tuple[str, int]] = {}
        g = self.graph
        for path, d, op in flat.leaves:
            for i in range(d.inputs):
                self._input_of[g.target(op, i)] = (path, i)
        for path, (s, ing, _) in flat.scopes.items():
            for i in range(s.inputs):
                self._input_of[g.target(ing, i)] = (path, i)

    @property
    def operators(self) -> list[str]:
        """Every path: operators and scopes, in the order they were flattened."""
        return [p for p, _, _ in self._flat.leaves] + list(self._flat.scopes)

    def _lookup(self, op) -> tuple[str, Operate | Scope, int, int]:
        """``(path, description, flat op holding its inputs, flat op holding its outputs)``."""
        if isinstance(op, str):
            if op in self.ports._leaf:
                path, d, f = self._flat.leaves[self.ports._leaf[op]]
                return path, d, f, f
            if op in self._flat.scopes:
                s, ing, eg = self._flat.scopes[op]
                return op, s, ing, eg
        raise UnknownOperatorError(f"the dataflow has no operator or scope {op!r} (paths: "
                                   f"{', '.join(self.operators)})")

    def target(self, op: str, input: int) -> int:
        """The flat location of input ``input`` of ``op`` (for a scope: its input as the
        parent sees it)."""
        path, d, fin, _ = self._lookup(op)
        Operate._port(f"operator {path!r}", input, d.inputs, "input")
        return self.graph.target(fin, input)

    def source(self, op: str, output: int) -> int:
        """The flat location of output ``output`` of ``op`` (for a scope: as the parent sees it)."""
        path, d, _, fout = self._lookup(op)
        Operate._port(f"operator {path!r}", output, d.outputs, "output")
        return self.graph.source(fout, output)

    def internal_summary(self, op: str) -> dict[tuple[int, int], tuple[Summary, ...]]:
        """``{(input, output): antichain}``: an operator's declared summary, or a scope's
        computed from its own ``Psi`` (:meth:`Scope.internal_summary`)."""
        path, d, _, _ = self._lookup(op)
        return d.internal_summary() if isinstance(d, Scope) else dict(d.summary)

    def external_summary(self, op: str) -> dict[tuple[int, int], tuple[Summary, ...]]:
        """``{(output, input): antichain}``: how data leaving each output of ``op`` can come
        back to each of its inputs, from ``Psi`` of the flat graph; absent pairs cannot."""
        path, d, fin, fout = self._lookup(op)
        psi = self.psi
        out = {}
        for o in range(d.outputs):
            row = psi.row(self.graph.source(fout, o))
            for i in range(d.inputs):
                chain = row.get(self.graph.target(fin, i))
                if chain:
                    out[(o, i)] = chain
        return out

    @property
    def psi(self):
        """``Psi`` of the flat graph (:func:`engine.compute_psi`), computed on first use."""
        if self._psi is None:
            from .psi import compute_psi
            self._psi = compute_psi(self.graph, threads=1)
        return self._psi

    def initial(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The operators' initial capabilities as pointstamps (:meth:`Ports.initial`)."""
        return self.ports.initial()

    def pointstamps(self, report: Report):
        """:meth:`Ports.pointstamps`."""
        return self.ports.pointstamps(report)

    def check(self, report: Report, counts):
        """:meth:`Ports.check`: guard ``report`` against ``counts``; return its pointstamps."""
        return self.ports.check(report, counts)

    def tracker(self, backend=None, *, strict: bool = False, **options) -> "DataflowTracker":
        """A :class:`DataflowTracker` on ``engine.make_tracker(self.graph, backend, ...)``,
        holding the initial capabilities."""
        return DataflowTracker(self, backend, strict=strict, **options)

    def input_changes(self, loc, ts, diff) -> dict[str, dict[int, list[tuple[Timestamp, int]]]]:
        """Frontier changes ``(loc, ts, diff)`` at operator and scope inputs, in their words:
        ``{path: {input: [(ts, diff), ...]}}`` (other locations left out)."""
        out: dict[str, dict[int, list]] = {}
        g = self.graph
        for l, row, d in zip(np.asarray(loc).tolist(), np.asarray(ts).tolist(),
                             np.asarray(diff).tolist()):
            hit = self._input_of.get(l)
            if hit is not None:
                out.setdefault(hit[0], {}).setdefault(hit[1], []).append(
                    (tuple(row[:g.width(l)]), int(d)))
        return out


class DataflowTracker:
    """Frontiers of a :class:`Dataflow`, fed by reports, pushed back to the operators.

    Each :meth:`apply` guards one report against the counts held (:meth:`Ports.check`) and
    applies its pointstamps as one tracker batch; a rejected report changes nothing. The
    frontier changes at every operator's (and scope's) inputs are returned, queued for
    :meth:`pending` and given to the callbacks of :meth:`subscribe` -- timely's
    ``push_external_progress``.

    Attributes
    ----------
    dataflow : Dataflow
    tracker
        The engine tracker (``engine.make_tracker``) of ``dataflow.graph``.
    """

    def __init__(self, dataflow: Dataflow, backend=None, *, strict: bool = False, **options):
        from .backend import make_tracker
        self.dataflow = dataflow
        self.tracker = make_tracker(dataflow.graph, backend, strict=strict, **options)
        self._pending: dict[str, dict[int, list]] = {}
        self._subscribers: dict[str, list[Callable]] = {}
        self._push(*dataflow.initial())

    def apply(self, report: Report) -> dict[str, dict[int, list[tuple[Timestamp, int]]]]:
        """Guard and apply ``report``; return the frontier changes at operator inputs,
        ``{path: {input: [(ts, diff), ...]}}``.

        Raises
        ------
        ReportError
            The report is malformed or breaks a guard (:meth:`Ports.check`); nothing applied.
        NegativeCountError
            In strict mode, a count would become negative; nothing applied.
        """
        loc, ts, diff = self.dataflow.check(report, self.tracker)
        return self._push(loc, ts, diff)

    def _push(self, loc, ts, diff):
        t = self.tracker
        if hasattr(t, "update_arrays"):
            c = t.update_arrays(loc, ts, diff)
        else:
            ch = t.update(loc, ts, diff)
            c = ([x.loc for x in ch], [x.ts + (0,) * (self.dataflow.ports.W - len(x.ts)) for x in ch],
                 [x.diff for x in ch])
        pushed = self.dataflow.input_changes(*c)
        for path, changes in pushed.items():
            queue = self._pending.setdefault(path, {})
            for i, rows in changes.items():
                queue.setdefault(i, []).extend(rows)
            for callback in list(self._subscribers.get(path, ())):
                callback(changes)
        return pushed

    def frontier(self, op: str, input: int) -> list[Timestamp]:
        """The frontier at input ``input`` of ``op`` (a scope's: as its parent sees it)."""
        return self.tracker.frontier(self.dataflow.target(op, input))

    def capabilities(self, op: str, output: int) -> dict[Timestamp, int]:
        """The capabilities ``op`` holds on ``output``: ``{ts: count}``, positive counts."""
        loc = self.dataflow.source(op, output)
        _, ts, cnt = _held(self.tracker, np.array([loc]), self.dataflow.ports.W)
        w = self.dataflow.graph.width(loc)
        return {tuple(int(x) for x in row[:w]): int(c) for row, c in zip(ts, cnt)}

    def pending(self, op: str) -> dict[int, list[tuple[Timestamp, int]]]:
        """The frontier changes at ``op``'s inputs since the last call, ``{input: [(ts,
        diff), ...]}``, in order; the queue is emptied."""
        self.dataflow._lookup(op)
        return self._pending.pop(op, {})

    def subscribe(self, op: str, callback: Callable[[dict], None]) -> Callable[[], None]:
        """Call ``callback({input: [(ts, diff), ...]})`` after every change at ``op``'s
        inputs; returns a function that unsubscribes."""
        self.dataflow._lookup(op)
        self._subscribers.setdefault(op, []).append(callback)
        return lambda: self._subscribers[op].remove(callback)
