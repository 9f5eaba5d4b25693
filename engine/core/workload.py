"""The progress workload format, version 1: read workloads, write frontier and closure reports.

See ``docs/formats.md``. A workload is a dataflow graph whose every
location has timestamps ``(epoch, iteration)`` (``m = 1``, depth 1) plus batches of
pointstamp count changes. Malformed input raises :class:`~engine.errors.WorkloadFormatError`
naming the line number.

Limits: a workload may declare at most :data:`MAX_LOCATIONS` ports (locations) over all its
``node`` lines (``max_locations=``, ``tfront replay/psi --max-locations``); past it,
:class:`~engine.errors.WorkloadLimitError` at the ``node`` line that crosses it, before
anything is built. Every number fits a signed 64-bit integer (at most 19 digits).

>>> w = parse_workload(EXAMPLE_PATH.read_text())
>>> w.graph.num_locations, len(w.batches), len(w.batches[0].loc)
(8, 5, 2)
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence, TextIO

import numpy as np

from engine.errors import (TimelyFrontierError, WorkloadFormatError, WorkloadLimitError,
                           ZeroAdvanceCycleError)
from engine.core.graph import Graph, GraphBuilder
from engine.core.summary import Summary
from engine.core.timestamp import MAX_COORD, Timestamp, check_timestamp

__all__ = ["HEADER", "EXAMPLE_PATH", "MAX_LOCATIONS", "Batch", "Workload", "parse_workload", "read_workload",
           "example_graph", "write_frontier_report", "write_psi_report", "REPLAY_HEADER",
           "PSI_HEADER"]

HEADER = "timely-reach v1"
REPLAY_HEADER = "# timely-reach replay output v1"
PSI_HEADER = "# timely-reach psi output v1"

#: The bundled example: the weakly-connected-components dataflow of the verified paper.
EXAMPLE_PATH = Path(__file__).parent / "examples" / "wcc.txt"

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

#: The most ports (locations: inputs plus outputs, node 0's included) a workload may declare.
#: A location costs the graph builder and the trackers about half a kilobyte and a few
#: microseconds (``node 1 0 10000000`` took 78 s and 5.4 GB); the largest workload of
#: ``perf/`` (5,000 operators) has about 10,000 and a 100,000-operator chain 200,000.
MAX_LOCATIONS = 1_000_000
#: Significant digits of the largest number the format holds (signed 64-bit).
MAX_DIGITS = 19


@dataclass
class Batch:
    """One ``batch`` .. ``end`` block as columns, with the line number of its ``batch`` line.

    ``loc`` is ``int32[n]``, ``ts`` ``int64[n, 2]`` (epoch, iteration), ``diff`` ``int64[n]``.
    """

    line: int
    loc: np.ndarray
    ts: np.ndarray
    diff: np.ndarray


@dataclass
class Workload:
    """A parsed workload: the graph, the port counts of each node, and the batches."""

    graph: Graph
    inputs: list[int]
    outputs: list[int]
    batches: list[Batch]

    def input_ports(self) -> list[tuple[int, int, int]]:
        """``(node, port, location)`` of every input port, in ``(node, port)`` order."""
        return [(n, p, self.graph.target(n, p)) for n in range(len(self.inputs))
                for p in range(self.inputs[n])]

    def output_ports(self) -> list[tuple[int, int, int]]:
        """``(node, port, location)`` of every output port, in ``(node, port)`` order."""
        return [(n, p, self.graph.source(n, p)) for n in range(len(self.outputs))
                for p in range(self.outputs[n])]


_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")


def _ints(tokens: list[str], lineno: int) -> list[int]:
    for tok in tokens:
        if not _DECIMAL.match(tok):
            raise WorkloadFormatError(f"expected a decimal integer, got {_short(tok)}", lineno)
        digits = len(tok.lstrip("+-").lstrip("0"))
        if digits > MAX_DIGITS:
            raise WorkloadFormatError(f"a number of {digits:,} digits ({_short(tok)}); numbers "
                                      f"are signed 64-bit integers, of at most {MAX_DIGITS} "
                                      f"digits", lineno)
    return [int(tok) for tok in tokens]


def _short(tok: str) -> str:
    """``tok`` quoted, cut to 30 characters (a token may be megabytes long)."""
    return repr(tok) if len(tok) <= 30 else repr(tok[:27]) + "..."


def parse_workload(text: str | Iterable[str], *, allow_zero_cycles: bool = False,
                   max_locations: int = MAX_LOCATIONS) -> Workload:
    """Parse a workload from its text (a string or an iterable of lines).

    Parameters
    ----------
    text : str or iterable of str
        The workload.
    allow_zero_cycles : bool
        Accept cycles that do not advance time.
    max_locations : int
        The most ports the ``node`` lines may declare in all (:data:`MAX_LOCATIONS`).

    Raises
    ------
    WorkloadFormatError
        Naming the line: a bad header, an unknown keyword, node or port, a non-integer or a
        number past 64 bits, a graph line after the first batch, a change outside a batch, a
        missing ``end``, or a graph the builder rejects (a depth or channel error, a
        zero-advance cycle).
    WorkloadLimitError
        At the ``node`` line whose ports take the graph past ``max_locations``, before the
        graph is built.
    ValueError
        If ``max_locations`` is not a positive integer.
    """
    if isinstance(max_locations, bool) or not isinstance(max_locations, int) or max_locations < 1:
        raise ValueError(f"max_locations must be a positive integer, got {max_locations!r}")
    lines = text.splitlines() if isinstance(text, str) else [l.rstrip("\r\n") for l in text]
    builder = GraphBuilder(m=1)
    inputs: list[int] = []
    outputs: list[int] = []
    raw_batches: list[tuple[int, list[tuple[int, str, int, int, Timestamp, int]]]] = []
    current: list | None = None
    edge_lines: dict[tuple, int] = {}   # location-graph edge -> the line that made it
    declared = 0                        # ports of the node lines so far
    seen_header = False
    in_graph = True
    lineno = 0
    skip_to = 0
    for lineno, raw in enumerate(lines, start=1):
        if lineno < skip_to:
            continue            # rows of a batch taken by the vectorised path
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not seen_header:
            if line != HEADER:
                raise WorkloadFormatError(
                    f"the first line must be {HEADER!r}, got {line!r}" if lineno == 1 else
                    f"the header {HEADER!r} must come first (before it only comments and "
                    f"blank lines), got {line!r}", lineno)
            seen_header = True
            continue
        tok = line.split()
        kw, args = tok[0], tok[1:]
        try:
            if kw in ("node", "summary", "edge"):
                if not in_graph:
                    raise WorkloadFormatError(f"{kw!r} line after the first batch; graph lines "
                                              f"must come first", lineno)
                vals = _ints(args, lineno)
                declared += _graph_line(builder, inputs, outputs, kw, vals, lineno,
                                        max_locations - declared)
                if kw == "summary":
                    edge_lines.setdefault(("t", vals[0], vals[1], "s", vals[0], vals[2]), lineno)
                elif kw == "edge":
                    edge_lines[("s", vals[0], vals[1], "t", vals[2], vals[3])] = lineno
            elif kw == "batch":
                if args or current is not None:
                    raise WorkloadFormatError(
                        "'batch' takes no arguments" if args else
                        f"'batch' inside the batch that began on line {raw_batches[-1][0]} "
                        f"(missing 'end')", lineno)
                in_graph = False
                fast = _fast_batch(lines, lineno, inputs, outputs)
                if fast is not None:
                    raw_batches.append((lineno, fast[0]))
                    skip_to = fast[1] + 1
                else:
                    current = []
                    raw_batches.append((lineno, current))
            elif kw == "end":
                if args or current is None:
                    raise WorkloadFormatError("'end' takes no arguments" if args else
                                              "'end' without a 'batch'", lineno)
                current = None
            elif kw in ("s", "t"):
                if current is None:
                    raise WorkloadFormatError(f"change line {kw!r} outside a batch", lineno)
                if len(args) != 5:
                    raise WorkloadFormatError(f"'{kw}' takes NODE PORT EPOCH ITER DIFF, got "
                                              f"{len(args)} values", lineno)
                node, port, epoch, it, diff = _ints(args, lineno)
                ports = inputs if kw == "t" else outputs
                what = "input" if kw == "t" else "output"
                if not 0 <= node < len(ports):
                    raise WorkloadFormatError(f"unknown node {node} (nodes are 0..{len(ports) - 1})",
                                              lineno)
                if not 0 <= port < ports[node]:
                    raise WorkloadFormatError(f"node {node} has no {what} port {port} (it has "
                                              f"{ports[node]})", lineno)
                if not INT64_MIN <= diff <= INT64_MAX:
                    raise WorkloadFormatError(f"DIFF {diff} is not a signed 64-bit integer", lineno)
                ts = check_timestamp((epoch, it), 1, 1, where=f"{kw!r} change")
                current.append((lineno, kw, node, port, ts, diff))
            else:
                raise WorkloadFormatError(f"unknown keyword {kw!r} (expected node, summary, edge, "
                                          f"batch, s, t or end)", lineno)
        except WorkloadFormatError:
            raise
        except TimelyFrontierError as e:
            raise WorkloadFormatError(str(e), lineno) from e
    if not seen_header:
        raise WorkloadFormatError(f"empty workload: the first line must be {HEADER!r}", lineno or 1)
    if current is not None:
        raise WorkloadFormatError(f"the batch that began on line {raw_batches[-1][0]} has no "
                                  f"'end' before the end of the file", lineno)
    try:
        graph = builder.build(allow_zero_cycles=allow_zero_cycles)
    except ZeroAdvanceCycleError as e:
        g = builder.build(allow_zero_cycles=True)
        lines = []
        for u, v in zip(e.cycle, e.cycle[1:]):
            lu, lv = g.locations[u], g.locations[v]
            key = (lu.kind.value, lu.op, lu.port, lv.kind.value, lv.op, lv.port)
            if key in edge_lines:
                lines.append(edge_lines[key])
        lines = sorted(set(lines))
        raise WorkloadFormatError(
            f"the summary and edge lines {', '.join(map(str, lines))} form a cycle that can "
            f"bring data back at the same or an earlier time: {e}", lines[0] if lines else None) from e
    # (is_source, node, port) -> location, as base[is_source, node] + port: one entry per
    # port (a table of nodes x the most ports of any node could be far larger)
    shape = Workload(graph, inputs, outputs, [])
    base = np.zeros((2, max(len(inputs), 1)), np.int64)
    flat = np.zeros(graph.num_locations, np.int32)
    for side, (counts, ports) in enumerate(((inputs, shape.input_ports()),
                                            (outputs, shape.output_ports()))):
        start = sum(inputs) if side else 0
        base[side, 1:len(counts)] = start + np.cumsum(counts[:-1], dtype=np.int64)
        base[side, 0] = start
        for n, p, l in ports:
            flat[base[side, n] + p] = l
    batches = []
    for start, rows in raw_batches:
        if isinstance(rows, list):      # the line-by-line path
            rows = np.array([(kw == "s", node, port, ts[0], ts[1], diff)
                             for _ln, kw, node, port, ts, diff in rows], dtype=object).reshape(-1, 6)
            cols = (rows[:, 0].astype(bool), rows[:, 1].astype(np.int64), rows[:, 2].astype(np.int64),
                    rows[:, 3:5].astype(np.int64), rows[:, 5].astype(np.int64))
        else:
            cols = rows
        is_src, node, port, ts, diff = cols
        batches.append(Batch(start, flat[base[is_src.astype(np.int64), node] + port],
                             ts.reshape(-1, 2), diff))
    return Workload(graph, inputs, outputs, batches)


_FAST_BLOCK = re.compile(r"[st0-9 \t\n+-]*\Z")


def _fast_batch(lines: list[str], batch_line: int, inputs: list[int], outputs: list[int]):
    """Vectorised parse of the change lines of the batch opened on line ``batch_line``.

    Returns ``((is_source, node, port, ts, diff), end_line)`` or None when the block is not
    plain ``s``/``t`` rows followed by a bare ``end`` line whose every value is in range --
    then the line-by-line path parses it and names the offending line.
    """
    try:
        end = lines.index("end", batch_line)          # 0-based index of the end line
    except ValueError:
        return None
    block = "\n".join(lines[batch_line:end])
    if not _FAST_BLOCK.match(block):
        return None
    tokens = block.split()
    n = end - batch_line
    if len(tokens) != 6 * n or (n and len(block.split("\n")) != n):
        return None
    arr = np.array(tokens, dtype=str).reshape(n, 6)
    kind = arr[:, 0]
    is_src = kind == "s"
    if not (is_src | (kind == "t")).all():
        return None
    try:
        vals = arr[:, 1:].astype(np.int64)
    except (ValueError, OverflowError):
        return None
    node, port, ts, diff = vals[:, 0], vals[:, 1], vals[:, 2:4], vals[:, 4]
    n_in, n_out = np.asarray(inputs, np.int64), np.asarray(outputs, np.int64)
    if n and ((node < 0) | (node >= len(inputs))).any():
        return None
    if n and ((port < 0) | (port >= np.where(is_src, n_out[node], n_in[node]))).any():
        return None
    if ((ts < 0) | (ts >= MAX_COORD)).any():
        return None
    return (is_src, node, port, ts, diff), end + 1


def _graph_line(builder: GraphBuilder, inputs: list[int], outputs: list[int], kw: str,
                vals: list[int], lineno: int, room: int) -> int:
    """Apply one ``node``, ``summary`` or ``edge`` line; returns the ports it declares (a
    ``node`` line may declare at most ``room``)."""
    arity = {"node": 3, "summary": 5, "edge": 4}[kw]
    if len(vals) != arity:
        raise WorkloadFormatError(f"{kw!r} takes {arity} integers, got {len(vals)}", lineno)
    if kw == "node":
        nid, n_in, n_out = vals
        if nid != len(inputs):
            raise WorkloadFormatError(f"node ids must be 0, 1, 2, ... in order: expected "
                                      f"{len(inputs)}, got {nid}", lineno)
        if n_in < 0 or n_out < 0:
            raise WorkloadFormatError(f"node {nid} has a negative port count", lineno)
        if n_in + n_out > room:
            limit = sum(inputs) + sum(outputs) + room
            raise WorkloadLimitError(
                f"node {nid} declares {n_in:,} inputs and {n_out:,} outputs, which would make "
                f"{limit - room + n_in + n_out:,} locations (ports) in all, more than "
                f"max_locations = {limit:,}; raise the limit (--max-locations) to read it",
                lineno)
        builder.add_operator(n_in, n_out, depth=1, name="scope" if nid == 0 else f"node{nid}")
        inputs.append(n_in)
        outputs.append(n_out)
        return n_in + n_out
    elif kw == "summary":
        node, i, o, d_epoch, d_iter = vals
        if node == 0:
            raise WorkloadFormatError("node 0 is the enclosing scope and has no summary lines",
                                      lineno)
        if not 0 <= node < len(inputs):
            raise WorkloadFormatError(f"unknown node {node} (nodes are 0..{len(inputs) - 1})", lineno)
        if d_epoch < 0 or d_iter < 0:
            raise WorkloadFormatError(f"summary ({d_epoch}, {d_iter}) must be non-negative", lineno)
        builder.add_summary(node, i, o, Summary.product(d_epoch, d_iter))
    else:
        builder.connect(*vals)
    return 0


def read_workload(path: str | Path, *, allow_zero_cycles: bool = False,
                  max_locations: int = MAX_LOCATIONS) -> Workload:
    """Parse the workload file at ``path`` (see :func:`parse_workload`)."""
    with open(path, encoding="utf-8") as f:
        return parse_workload(f, allow_zero_cycles=allow_zero_cycles, max_locations=max_locations)


def example_graph() -> Graph:
    """The graph of the bundled example workload (``engine/core/examples/wcc.txt``).

    Nodes: 0 scope (1 input), 1 edge input ``a`` (1 output), 2 label operator ``b`` (inputs:
    labels, edges; outputs: label updates, results), 3 feedback ``c`` (adds one iteration).
    """
    return parse_workload(EXAMPLE_PATH.read_text()).graph


def _fmt_times(times: list[Timestamp]) -> str:
    parts = [str(len(times))]
    for t in times:
        parts.extend(str(x) for x in t)
    return " ".join(parts)


def write_frontier_report(out: TextIO, workload: Workload, batch_index: int,
                          frontier: Callable[[int], list[Timestamp]], *, sources: bool = False) -> None:
    """Write one batch's ``B``/``T``/``S`` lines (frontiers sorted by ``(epoch, iteration)``)."""
    buf = io.StringIO()
    buf.write(f"B {batch_index} {len(workload.batches[batch_index].loc)}\n")
    for node, port, loc in workload.input_ports():
        buf.write(f"T {node} {port} {_fmt_times(sorted(frontier(loc)))}\n")
    if sources:
        for node, port, loc in workload.output_ports():
            buf.write(f"S {node} {port} {_fmt_times(sorted(frontier(loc)))}\n")
    out.write(buf.getvalue())


def write_psi_report(out: TextIO, workload: Workload,
                     row: Callable[[int], Mapping[int, Sequence[Summary]]]) -> dict:
    """Write the closure lines ``P KIND NODE PORT TNODE TPORT K ...``; return counts for ``--time``.

    ``row(l1)`` gives ``Psi[l1]`` as a mapping from reachable locations to summaries; it is
    asked for one row at a time, and the lines go out in pieces of about a megabyte.

    Returns ``{"pairs": ..., "summaries": ..., "max_antichain": ...}``.
    """
    targets = workload.input_ports()
    starts = [("s", n, p, l) for n, p, l in workload.output_ports()] + \
             [("t", n, p, l) for n, p, l in workload.input_ports()]
    pairs = summaries = largest = 0
    buf = io.StringIO()
    buf.write(PSI_HEADER + "\n")
    for kind, node, port, loc in starts:
        reach = row(loc)
        for tnode, tport, tloc in targets:
            chain = reach.get(tloc, ())
            if not chain:
                continue
            elems = sorted((s.d_out[0], s.d_cnt[0]) for s in chain)
            buf.write(f"P {kind} {node} {port} {tnode} {tport} {len(elems)} "
                      + " ".join(f"{a} {b}" for a, b in elems) + "\n")
            pairs += 1
            summaries += len(elems)
            largest = max(largest, len(elems))
        if buf.tell() > 1 << 20:
            out.write(buf.getvalue())
            buf = io.StringIO()
    out.write(buf.getvalue())
    return {"pairs": pairs, "summaries": summaries, "max_antichain": largest}
