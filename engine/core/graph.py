"""Dataflow graphs: operators with ports, channels, and the dense location numbering.

A mutable :class:`GraphBuilder` collects operators (with a loop depth per port), their
internal summary antichains and the channels between them, validating each call; ``build``
checks the cycles and compiles an immutable :class:`Graph` whose locations are numbered
densely ``0..L-1``: for each operator in order, its input ports (targets) then its output
ports (sources) (docs/semantics.md 2.1).

Examples
--------
A loop that increments the iteration counter, entered from the scope at depth 0:

>>> from engine.core.summary import Summary
>>> b = GraphBuilder(m=1)
>>> scope = b.add_operator(1, 1, depth=0, name="scope")
>>> enter = b.add_operator(1, 1, input_depths=[0], output_depths=[1], name="ingress")
>>> b.add_summary(enter, 0, 0, Summary.ingress(0))
>>> step = b.add_operator(2, 1, depth=1, name="step")
>>> b.add_summary(step, 0, 0, Summary.identity(1)); b.add_summary(step, 1, 0, Summary.identity(1))
>>> fb = b.add_operator(1, 1, depth=1, name="feedback")
>>> b.add_summary(fb, 0, 0, Summary.feedback(1))
>>> b.connect(scope, 0, enter, 0); b.connect(enter, 0, step, 0)
>>> b.connect(step, 0, fb, 0); b.connect(fb, 0, step, 1)
>>> g = b.build()
>>> g.num_locations, g.max_depth, g.describe(g.target(step, 1))
(9, 1, 'target step[2].in1 (depth 1)')
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from numbers import Integral
from typing import Sequence

from engine.errors import (DepthMismatchError, DuplicateChannelError, SummaryShapeError,
                     UnknownOperatorError, UnknownPortError, ZeroAdvanceCycleError)
from engine.core.summary import Summary
from engine.core.antichain import SummaryAntichain

__all__ = ["PortKind", "Location", "Edge", "GraphBuilder", "Graph"]


class PortKind(enum.Enum):
    """A location is an operator input (target) or an operator output (source)."""

    TARGET = "t"
    SOURCE = "s"


@dataclass(frozen=True)
class Location:
    """One port: ``kind`` (target = input, source = output), operator, port, loop depth."""

    kind: PortKind
    op: int
    port: int
    depth: int


@dataclass(frozen=True)
class Edge:
    """An edge of the location graph, labelled with an antichain of summaries.

    Channels (source -> target) carry the identity; internal connections (target -> source)
    carry the operator's summary antichain from that input to that output.
    """

    src: int
    dst: int
    summaries: tuple[Summary, ...]
    channel: bool


@dataclass
class _Operator:
    name: str
    input_depths: list[int]
    output_depths: list[int]
    summaries: dict[tuple[int, int], SummaryAntichain] = field(default_factory=dict)


def _check_int(v, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, Integral):
        raise TypeError(f"{name} must be an integer, got {v!r}")
    return int(v)


class GraphBuilder:
    """Collects operators, summaries and channels; ``build()`` compiles a :class:`Graph`.

    Parameters
    ----------
    m : int
        Number of outer (epoch) coordinates of every timestamp, ``m >= 1``.

    Every method validates its arguments before changing anything and raises a
    :class:`~engine.errors.GraphError` subclass naming the operator and port.
    """

    def __init__(self, m: int = 1):
        m = _check_int(m, "m")
        if m < 1:
            raise SummaryShapeError(f"m (outer timestamp width) must be >= 1, got {m}")
        self.m = m
        self._ops: list[_Operator] = []
        self._channels: list[tuple[int, int, int, int]] = []
        self._fed: dict[tuple[int, int], tuple[int, int]] = {}

    # -- operators ---------------------------------------------------------------------------

    def add_operator(self, inputs: int, outputs: int, *, depth: int = 0,
                     input_depths: Sequence[int] | None = None,
                     output_depths: Sequence[int] | None = None, name: str | None = None) -> int:
        """Add an operator with ``inputs`` input ports and ``outputs`` output ports.

        Every port has loop depth ``depth`` unless ``input_depths`` / ``output_depths`` give
        one per port. Returns the operator's id (0, 1, 2, ... in order of addition). Inputs
        and outputs start unconnected: add summaries with :meth:`add_summary`.
        """
        inputs, outputs, depth = (_check_int(inputs, "inputs"), _check_int(outputs, "outputs"),
                                  _check_int(depth, "depth"))
        if inputs < 0 or outputs < 0 or depth < 0:
            raise UnknownPortError(
                f"operator needs non-negative port counts and depth, got inputs={inputs}, "
                f"outputs={outputs}, depth={depth}")
        ins = [depth] * inputs if input_depths is None else [_check_int(d, "depth") for d in input_depths]
        outs = [depth] * outputs if output_depths is None else [_check_int(d, "depth") for d in output_depths]
        if len(ins) != inputs or len(outs) != outputs or min(ins + outs, default=0) < 0:
            raise UnknownPortError(
                f"operator has {inputs} inputs and {outputs} outputs but depths {ins} / {outs} "
                f"were given (one non-negative depth per port)")
        op = len(self._ops)
        self._ops.append(_Operator(name if name is not None else f"op{op}", ins, outs))
        return op

    def add_summary(self, op: int, input: int, output: int, summary: Summary) -> None:
        """Add one element to the summary antichain from ``input`` to ``output`` of ``op``.

        A summary dominated by one already present changes nothing.
        """
        o = self._operator(op)
        self._port(op, input, PortKind.TARGET)
        self._port(op, output, PortKind.SOURCE)
        if not isinstance(summary, Summary):
            raise TypeError(f"summary must be an engine.Summary, got {type(summary).__name__}")
        a, b = o.input_depths[input], o.output_depths[output]
        if (summary.src_depth, summary.dst_depth, summary.m) != (a, b, self.m):
            raise SummaryShapeError(
                f"summary {summary!r} of {self._name(op)} from input {input} (depth {a}) to "
                f"output {output} (depth {b}) must map depth {a} to depth {b} with m={self.m}")
        o.summaries.setdefault((input, output), SummaryAntichain()).insert(summary)

    def connect(self, src_op: int, src_port: int, dst_op: int, dst_port: int) -> None:
        """Add a channel from output ``src_port`` of ``src_op`` to input ``dst_port`` of ``dst_op``."""
        self._port(src_op, src_port, PortKind.SOURCE)
        self._port(dst_op, dst_port, PortKind.TARGET)
        a = self._ops[src_op].output_depths[src_port]
        b = self._ops[dst_op].input_depths[dst_port]
        if a != b:
            raise DepthMismatchError(
                f"channel {self._name(src_op)}.out{src_port} (depth {a}) -> "
                f"{self._name(dst_op)}.in{dst_port} (depth {b}): a channel must join ports of "
                f"equal loop depth; use ingress/egress operators to change depth")
        if (dst_op, dst_port) in self._fed:
            s_op, s_port = self._fed[(dst_op, dst_port)]
            raise DuplicateChannelError(
                f"input {self._name(dst_op)}.in{dst_port} already has a channel from "
                f"{self._name(s_op)}.out{s_port}; an input port takes at most one channel")
        self._fed[(dst_op, dst_port)] = (src_op, src_port)
        self._channels.append((src_op, src_port, dst_op, dst_port))

    # -- compile -----------------------------------------------------------------------------

    def build(self, *, allow_zero_cycles: bool = False) -> "Graph":
        """Number the locations, collect the edges and check the cycles.

        Raises
        ------
        ZeroAdvanceCycleError
            If a cycle can bring data back to a location at the same or an earlier time,
            unless ``allow_zero_cycles`` is true (legitimate for asynchronous loops).
        """
        locations: list[Location] = []
        index: dict[tuple[PortKind, int, int], int] = {}
        for op, o in enumerate(self._ops):
            for kind, depths in ((PortKind.TARGET, o.input_depths), (PortKind.SOURCE, o.output_depths)):
                for port, d in enumerate(depths):
                    index[(kind, op, port)] = len(locations)
                    locations.append(Location(kind, op, port, d))
        edges = []
        for s_op, s_port, d_op, d_port in self._channels:
            loc = index[(PortKind.SOURCE, s_op, s_port)]
            edges.append(Edge(loc, index[(PortKind.TARGET, d_op, d_port)],
                              (Summary.identity(locations[loc].depth, self.m),), True))
        for op, o in enumerate(self._ops):
            for (i, j), chain in sorted(o.summaries.items()):
                edges.append(Edge(index[(PortKind.TARGET, op, i)], index[(PortKind.SOURCE, op, j)],
                                  chain.sorted(), False))
        graph = Graph(self.m, locations, edges, [o.name for o in self._ops], index,
                      allow_zero_cycles)
        if not allow_zero_cycles:
            cycle = graph.find_zero_advance_cycle()
            if cycle is not None:
                names = " -> ".join(graph.describe(l) for l in cycle)
                raise ZeroAdvanceCycleError(
                    f"cycle through locations {cycle} can bring data back at the same or an "
                    f"earlier time (no epoch or kept loop counter advances around it): {names}; "
                    f"add a feedback or delay summary, or pass allow_zero_cycles=True for an "
                    f"asynchronous loop", cycle)
        return graph

    # -- helpers -----------------------------------------------------------------------------

    def _name(self, op: int) -> str:
        return f"operator {op} ({self._ops[op].name})"

    def _operator(self, op) -> _Operator:
        if isinstance(op, bool) or not isinstance(op, Integral) or not 0 <= op < len(self._ops):
            raise UnknownOperatorError(f"unknown operator {op!r}: the graph has operators "
                                       f"0..{len(self._ops) - 1}")
        return self._ops[op]

    def _port(self, op, port, kind: PortKind) -> None:
        o = self._operator(op)
        n = len(o.input_depths if kind is PortKind.TARGET else o.output_depths)
        what = "input" if kind is PortKind.TARGET else "output"
        if isinstance(port, bool) or not isinstance(port, Integral) or not 0 <= port < n:
            raise UnknownPortError(f"{self._name(op)} has no {what} port {port!r} "
                                   f"(it has {n} {what} ports)")


class Graph:
    """An immutable, validated location graph (compile it with :class:`GraphBuilder`).

    Attributes
    ----------
    m : int
        Outer timestamp width.
    max_depth : int
        ``K``, the largest loop depth; array timestamps are ``int64[n, m + K]``.
    locations : list[Location]
        Indexed by location id.
    edges : list[Edge]
        Channels first, then internal connections.
    out_edges : list[list[Edge]]
        Indexed by location id: the edges leaving it.
    allow_zero_cycles : bool
        Whether the graph was built allowing cycles that do not advance time.
    """

    def __init__(self, m, locations, edges, op_names, index, allow_zero_cycles):
        self.m = m
        self.locations = locations
        self.edges = edges
        self.op_names = op_names
        self._index = index
        self.allow_zero_cycles = allow_zero_cycles
        self.max_depth = max((l.depth for l in locations), default=0)
        self.out_edges: list[list[Edge]] = [[] for _ in locations]
        for e in edges:
            self.out_edges[e.src].append(e)

    @property
    def num_locations(self) -> int:
        """``L``: locations are numbered ``0..L-1``."""
        return len(self.locations)

    @property
    def num_operators(self) -> int:
        return len(self.op_names)

    def target(self, op: int, port: int) -> int:
        """Location id of input ``port`` of operator ``op``."""
        return self._lookup(PortKind.TARGET, op, port)

    def source(self, op: int, port: int) -> int:
        """Location id of output ``port`` of operator ``op``."""
        return self._lookup(PortKind.SOURCE, op, port)

    def depth(self, loc: int) -> int:
        return self.locations[loc].depth

    def width(self, loc: int) -> int:
        """Timestamp width ``m + depth`` at ``loc``."""
        return self.m + self.locations[loc].depth

    def describe(self, loc: int) -> str:
        """Human-readable name of a location, for messages: ``'target name[op].in0 (depth 1)'``."""
        l = self.locations[loc]
        if l.kind is PortKind.TARGET:
            return f"target {self.op_names[l.op]}[{l.op}].in{l.port} (depth {l.depth})"
        return f"source {self.op_names[l.op]}[{l.op}].out{l.port} (depth {l.depth})"

    def _lookup(self, kind: PortKind, op: int, port: int) -> int:
        try:
            return self._index[(kind, op, port)]
        except (KeyError, TypeError):
            if not (isinstance(op, Integral) and 0 <= op < len(self.op_names)):
                raise UnknownOperatorError(f"unknown operator {op!r}: the graph has operators "
                                           f"0..{len(self.op_names) - 1}") from None
            what = "input" if kind is PortKind.TARGET else "output"
            raise UnknownPortError(f"operator {op} ({self.op_names[op]}) has no {what} port "
                                   f"{port!r}") from None

    def find_zero_advance_cycle(self) -> list[int] | None:
        """A cycle whose summary ``s`` has ``s(t) <= t`` for some ``t``, or None.

        The summary of a cycle keeps ``J`` = the smallest ``keep`` along it, adds up the
        ``d_out`` and the first ``J`` entries of ``d_cnt``; it fails to advance iff all of those
        are zero. So for each ``J`` we take the edges with ``keep >= J`` that advance nothing in
        the outer coordinates or the first ``J`` counters, and look for such an edge with
        ``keep == J`` whose ends share a strongly connected component.

        Returns the cycle's locations with the first repeated at the end. Cost:
        O((K + 1) * (L + E)).
        """
        L = self.num_locations
        for J in range(self.max_depth + 1):
            adj: list[list[int]] = [[] for _ in range(L)]
            tight: list[tuple[int, int]] = []
            for e in self.edges:
                for s in e.summaries:
                    if s.keep >= J and not any(s.d_out) and not any(s.d_cnt[:J]):
                        adj[e.src].append(e.dst)
                        if s.keep == J:
                            tight.append((e.src, e.dst))
            if not tight:
                continue
            comp = _strongly_connected(adj)
            for u, v in tight:
                if comp[u] == comp[v]:
                    path = _bfs_path(adj, v, u)
                    return [u] + path
        return None


def _strongly_connected(adj: list[list[int]]) -> list[int]:
    """Component id of every vertex (iterative Tarjan). Cost: O(V + E)."""
    n = len(adj)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = [-1] * n
    stack: list[int] = []
    counter = ncomp = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            if i < len(adj[v]):
                work[-1] = (v, i + 1)
                w = adj[v][i]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    return comp


def _bfs_path(adj: list[list[int]], start: int, goal: int) -> list[int]:
    """A shortest path ``start .. goal`` (inclusive); ``goal`` must be reachable."""
    prev = {start: start}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if v == goal:
            break
        for w in adj[v]:
            if w not in prev:
                prev[w] = v
                queue.append(w)
    path = [goal]
    while path[-1] != start:
        path.append(prev[path[-1]])
    return path[::-1]
