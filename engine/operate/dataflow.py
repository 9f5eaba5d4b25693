"""Operators in their own words: ``Operate`` descriptions, nested ``Scope``s, progress ``Report``s.

An operator describes itself by its ports, its *internal summary* (for each (input, output)
an antichain of :class:`~engine.core.summary.Summary`, absent when not connected) and its
*initial capabilities* per output (:class:`Operate`). Operators are added to a
:class:`Scope`, a subgraph whose contents run one loop level deeper than the scope's own
ports; a scope is itself an operator of its parent. The root scope builds into a
:class:`Dataflow`: one flat :class:`~engine.core.graph.Graph` that every tracker backend tracks,
with each scope's boundary as an ingress operator (entering appends a loop counter 0) and an
egress operator (leaving drops it). The system gives each operator back its *external
summary* (for each (output, input), how data leaving that output can come back, from
``Psi``).

At run time an operator speaks of messages *consumed* per input, messages *produced* per
output and *capability changes* per output (:class:`Report`, columnar, in
``engine.operate.report``). The dataflow turns them into pointstamp changes -- consumed at an input:
``-count`` there; produced at an output: ``+count`` at every operator input its channels
reach, through scope boundaries (whose ingress and egress change the timestamp and hold
nothing); capabilities: at the output -- checks them against the capabilities held
(:meth:`Dataflow.check`), and a :class:`DataflowTracker` applies each report as one tracker
batch and pushes the frontier changes at every operator's inputs back to it
(docs/operate.md).

Operators are addressed by their *path*: names from the root scope down, joined by ``/``
(``"loop/body"``); names are unique among the children of a scope.

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

from numbers import Integral
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from engine.core.antichain import SummaryAntichain
from engine.errors import (DepthMismatchError, DuplicateChannelError, OperatorNameError, ScopeError,
                     SummaryShapeError, TimestampWidthError, UnknownOperatorError,
                     UnknownPortError)
from engine.core.graph import Graph, GraphBuilder, PortKind
from engine.operate.report import Ports, Report, ReportKind, _held
from engine.core.summary import Summary
from engine.core.timestamp import Timestamp, check_timestamp

__all__ = ["Operate", "Scope", "BOUNDARY", "Report", "ReportKind", "Dataflow", "Ports",
           "DataflowTracker"]

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
                raise UnknownPortError(f"{where}: summary keys are (input, output) pairs, "
                                       f"got {key!r}")
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
                    rows.append(check_timestamp(t, m, depth,
                                                where=f"{where} output {o} capability"))
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
        n_children = len(self._children)
        if isinstance(op, bool) or not isinstance(op, Integral) or not 0 <= op < n_children:
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
        from engine.batched.psi import compute_psi
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
            from engine.batched.psi import compute_psi
            self._psi = compute_psi(self.graph, threads=1)
        return self._psi

    def initial(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The operators' initial capabilities as pointstamps (:meth:`Ports.initial`)."""
        return self.ports.initial()

    def initial_capabilities(self) -> list[tuple[str, int, Timestamp]]:
        """The operators' initial capabilities in their words: ``(path, output, ts)``, one
        row per capability held, in the order the operators were flattened.

        >>> root = Scope("root")
        >>> _ = root.add(Operate("a", 0, 2, capabilities={1: [(0,), (3,)]}))
        >>> root.build().initial_capabilities()
        [('a', 1, (0,)), ('a', 1, (3,))]
        """
        return [(path, o, tuple(t)) for path, d, _ in self._flat.leaves
                for o, times in sorted(d.capabilities.items()) for t in times]

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
        from engine.batched.backend import make_tracker
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
            In strict mode, a count would become negative; nothing applied (consuming more
            than is in flight is caught before, by any tracker, as
            :class:`~engine.errors.NotInFlightError`, itself a ``NegativeCountError``).
        """
        loc, ts, diff = self.dataflow.check(report, self.tracker)
        return self._push(loc, ts, diff)

    def _push(self, loc, ts, diff):
        t = self.tracker
        if hasattr(t, "update_arrays"):
            c = t.update_arrays(loc, ts, diff)
        else:
            ch = t.update(loc, ts, diff)
            W = self.dataflow.ports.W
            c = ([x.loc for x in ch], [x.ts + (0,) * (W - len(x.ts)) for x in ch],
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
