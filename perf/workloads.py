"""Deterministic synthetic workloads in the progress workload format v1.

See ``docs/formats.md``, section "Synthetic workloads for benchmarks".
Everything is drawn from ``np.random.default_rng(seed)``, so a seed names one file, byte for
byte, that any tracker can replay.

The graph (:func:`generate_graph`):

* node 0 is the scope (1 input, 1 output); nodes ``1..n`` form a chain: the scope's output 0
  feeds operator 1, operator ``c`` feeds ``c + 1``, operator ``n`` feeds the scope's input 0;
  every chain operator has the identity summary from its chain input 0 to its output 0;
* about ``n / 50`` feedback loops, in ``round(n / 150)`` groups of three: the chain is split
  into that many contiguous segments and six distinct positions ``p0 < ... < p5`` are drawn in
  each, giving the nested intervals ``[p2, p3]`` inside ``[p1, p4]`` inside ``[p0, p5]``. For
  an interval ``[h, e]`` a feedback node (summary ``(0, 1)``) is fed by operator ``e``'s output
  and feeds an extra input of the loop head ``h`` (identity summary to ``h``'s output);
* about ``n / 100`` diamonds: a chain operator ``d`` in ``2..n-1`` that is not a loop head
  becomes a delay (chain summary ``(1, 0)``) and a side node (summary ``(0, 1)``), fed by
  operator ``d - 1``'s output, feeds an extra input of operator ``d + 1`` (identity summary).

Nodes ``n + 1 ..`` are the feedback nodes (in loop order), then the side nodes (in diamond
order). Every node has one output port; input ports other than 0 of a chain operator are the
extra inputs, numbered in the order loops then diamonds.

The batches (:func:`generate_batches`): a load batch of ``b`` additions, three churn batches of
``b`` changes (``b // 2`` retractions of live occurrences, the rest new additions, shuffled),
and a drain batch retracting everything still live, consolidated.

>>> spec = generate_graph(100, seed=1)
>>> len(spec.loops), len(spec.diamonds), spec.num_locations
(3, 1, 214)
>>> batches = generate_batches(spec, 10, seed=1)
>>> [b.kind for b in batches], [int(b.diff.sum()) for b in batches]
(['load', 'churn', 'churn', 'churn', 'drain'], [10, 0, 0, 0, -10])
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, TextIO

import numpy as np

__all__ = ["GraphSpec", "BatchSpec", "generate_graph", "generate_batches", "adversarial_batches",
           "ADVERSARIAL_KINDS", "write_workload",
           "workload_text", "build_graph", "batch_columns", "HEADER", "EPOCHS", "ITERS", "BATCH_KINDS", "main"]

HEADER = "timely-reach v1"
#: Random times are ``(e, i)`` with ``e < EPOCHS`` and ``i < ITERS``.
EPOCHS, ITERS = 16, 64
BATCH_KINDS = ("load", "churn", "churn", "churn", "drain")

# A live pointstamp is packed into one int64 key: (port index << 10) | (epoch << 6) | iter.
_E_BITS, _I_BITS = 4, 6
_T_BITS = _E_BITS + _I_BITS


@dataclass
class GraphSpec:
    """A generated graph: what the ``node``, ``summary`` and ``edge`` lines say.

    ``nodes[k] = (inputs, outputs)``; ``summaries`` rows are
    ``(node, input, output, d_epoch, d_iter)``; ``edges`` rows are
    ``(src_node, src_port, dst_node, dst_port)``. The remaining fields describe the structure:
    ``chain`` is ``n``; ``loops`` rows are ``(head, end, feedback_node)``; ``diamonds`` rows
    are ``(delay_op, side_node)``.
    """

    nodes: list[tuple[int, int]]
    summaries: list[tuple[int, int, int, int, int]]
    edges: list[tuple[int, int, int, int]]
    chain: int = 0
    loops: list[tuple[int, int, int]] = field(default_factory=list)
    diamonds: list[tuple[int, int]] = field(default_factory=list)

    @property
    def num_locations(self) -> int:
        """Number of ports (input and output) over all nodes, node 0 included."""
        return sum(i + o for i, o in self.nodes)

    def ports(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(is_source, node, port)`` of every port: output ports first, each in (node, port) order."""
        n_in = np.array([i for i, _ in self.nodes], dtype=np.int64)
        n_out = np.array([o for _, o in self.nodes], dtype=np.int64)
        ids = np.arange(len(self.nodes), dtype=np.int32)

        def expand(counts):
            node = np.repeat(ids, counts)
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            port = (np.arange(len(node), dtype=np.int64) - starts).astype(np.int32)
            return node, port

        s_node, s_port = expand(n_out)
        t_node, t_port = expand(n_in)
        is_source = np.concatenate([np.ones(len(s_node), bool), np.zeros(len(t_node), bool)])
        return is_source, np.concatenate([s_node, t_node]), np.concatenate([s_port, t_port])


@dataclass
class BatchSpec:
    """One batch as columns: ``is_source`` True for an ``s`` line (output port), False for ``t``."""

    kind: str
    is_source: np.ndarray  # bool[n]
    node: np.ndarray  # int32[n]
    port: np.ndarray  # int32[n]
    epoch: np.ndarray  # int64[n]
    iter: np.ndarray  # int64[n]
    diff: np.ndarray  # int64[n]

    def __len__(self) -> int:
        return len(self.diff)


def generate_graph(n: int, seed: int) -> GraphSpec:
    """A chain of ``n`` operators with about ``n / 50`` nested feedback loops and ``n / 100`` diamonds."""
    if n < 1:
        raise ValueError(f"the chain needs at least one operator, got n={n}")
    rng = np.random.default_rng(seed)

    # Loops: groups of three nested intervals, one group per contiguous segment of the chain.
    groups = min(int(round(n / 150)), n // 6)
    loops_he: list[tuple[int, int]] = []
    if groups:
        bounds = np.linspace(1, n + 1, groups + 1).astype(np.int64)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            p = np.sort(rng.choice(int(hi - lo), 6, replace=False)) + int(lo)
            loops_he += [(int(p[0]), int(p[5])), (int(p[1]), int(p[4])), (int(p[2]), int(p[3]))]
    heads = {h for h, _ in loops_he}

    # Diamonds: delay operators in 2..n-1, distinct, never a loop head.
    cand = np.array([c for c in range(2, n) if c not in heads], dtype=np.int64)
    n_diamonds = min(int(round(n / 100)), len(cand))
    delays = (np.sort(rng.choice(cand, n_diamonds, replace=False)).tolist()
              if n_diamonds else [])
    delay_set = set(delays)

    n_fb = len(loops_he)
    fb_nodes = list(range(n + 1, n + 1 + n_fb))
    side_nodes = list(range(n + 1 + n_fb, n + 1 + n_fb + len(delays)))

    # Extra inputs of chain operators: loops first, then diamonds.
    extra = [0] * (n + 1)
    loop_port = []
    for h, _e in loops_he:
        extra[h] += 1
        loop_port.append(extra[h])
    diamond_port = []
    for d in delays:
        extra[d + 1] += 1
        diamond_port.append(extra[d + 1])

    nodes = [(1, 1)] + [(1 + extra[c], 1) for c in range(1, n + 1)] + \
            [(1, 1)] * (n_fb + len(delays))
    summaries = []
    for c in range(1, n + 1):
        summaries.append((c, 0, 0, 1 if c in delay_set else 0, 0))
        summaries.extend((c, x, 0, 0, 0) for x in range(1, 1 + extra[c]))
    summaries.extend((f, 0, 0, 0, 1) for f in fb_nodes)
    summaries.extend((s, 0, 0, 0, 1) for s in side_nodes)

    edges = [(0, 0, 1, 0)] + [(c, 0, c + 1, 0) for c in range(1, n)] + [(n, 0, 0, 0)]
    for (h, e), f, x in zip(loops_he, fb_nodes, loop_port):
        edges += [(e, 0, f, 0), (f, 0, h, x)]
    for d, s, x in zip(delays, side_nodes, diamond_port):
        edges += [(d - 1, 0, s, 0), (s, 0, d + 1, x)]

    return GraphSpec(nodes, summaries, edges, chain=n,
                     loops=[(h, e, f) for (h, e), f in zip(loops_he, fb_nodes)],
                     diamonds=list(zip(delays, side_nodes)))


def _random_keys(rng: np.random.Generator, num_ports: int, size: int) -> np.ndarray:
    port = rng.integers(0, num_ports, size, dtype=np.int64)
    epoch = rng.integers(0, EPOCHS, size, dtype=np.int64)
    it = rng.integers(0, ITERS, size, dtype=np.int64)
    return (port << _T_BITS) | (epoch << _I_BITS) | it


def _batch(kind: str, keys: np.ndarray, diff: np.ndarray, ports) -> BatchSpec:
    is_source, node, port = ports
    pidx = keys >> _T_BITS
    return BatchSpec(kind, is_source[pidx], node[pidx], port[pidx],
                     (keys >> _I_BITS) & ((1 << _E_BITS) - 1), keys & ((1 << _I_BITS) - 1),
                     diff.astype(np.int64))


def generate_batches(spec: GraphSpec, b: int, seed: int) -> list[BatchSpec]:
    """The five batches: load, churn x3, drain (see the module docstring).

    A churn batch retracts ``min(b // 2, live)`` distinct occurrences drawn uniformly without
    replacement from the occurrences live when the batch begins, and adds the rest as new
    pointstamps; the rows are shuffled. Every retraction therefore hits an occurrence still
    live at that moment, whatever the order, so no count ever goes negative. The drain has one
    row per distinct live pointstamp, ``diff = -count``, sorted by (port, epoch, iteration),
    where ports are ordered output ports first, each in (node, port) order.
    """
    if b < 0:
        raise ValueError(f"batch size must be non-negative, got {b}")
    rng = np.random.default_rng(seed)
    ports = spec.ports()
    num_ports = len(ports[0])
    if num_ports == 0:
        raise ValueError("the graph has no ports")

    out = []
    live = _random_keys(rng, num_ports, b)  # one key per live occurrence
    out.append(_batch("load", live, np.ones(b, np.int64), ports))
    for _ in range(3):
        r = min(b // 2, len(live))
        ridx = rng.choice(len(live), r, replace=False) if r else np.zeros(0, np.int64)
        retracted = live[ridx]
        added = _random_keys(rng, num_ports, b - r)
        keys = np.concatenate([retracted, added])
        diff = np.concatenate([np.full(r, -1, np.int64), np.ones(b - r, np.int64)])
        perm = rng.permutation(b)
        out.append(_batch("churn", keys[perm], diff[perm], ports))
        keep = np.ones(len(live), bool)
        keep[ridx] = False
        live = np.concatenate([live[keep], added])
    uniq, counts = np.unique(live, return_counts=True)
    out.append(_batch("drain", uniq, -counts.astype(np.int64), ports))
    return out


#: The shapes of :func:`adversarial_batches`, in the order they cycle.
ADVERSARIAL_KINDS = ("burst", "tiny", "cancel", "negative", "empty", "duplicates", "far",
                     "advance", "restore", "churn")


def adversarial_batches(spec: GraphSpec, seed: int, batches: int = 26,
                        rows: int = 6400) -> list[BatchSpec]:
    """Batches of awkward shapes for a tracker (and a workload splitter) to get wrong, about
    ``rows`` rows over ``batches`` batches, the last one draining everything live. The kinds
    (:data:`ADVERSARIAL_KINDS`) cycle: a *burst* of additions; a *tiny* batch (1-3 rows);
    *cancel* (each pointstamp added and retracted in the same batch); *negative* (retractions
    of pointstamps that are not there: counts below zero); an *empty* batch; *duplicates*
    (one pointstamp on many rows whose diffs partly cancel); *far* (times up to ``2**40``);
    *advance* (capabilities at output ports move to later times: ``+1`` later, ``-1`` now);
    *restore* (what *negative* took below zero comes back, and more); *churn* (half
    retractions of live pointstamps, half additions, as :func:`generate_batches`)."""
    rng = np.random.default_rng(seed)
    ports = spec.ports()
    num_ports = len(ports[0])
    sources = np.flatnonzero(ports[0])
    per = max(1, rows // max(1, batches - 1))
    live: dict[int, int] = {}
    owed: list[int] = []
    out = []

    def add(keys, diff, kind):
        for k, d in zip(keys.tolist(), diff.tolist()):
            live[k] = live.get(k, 0) + d
            if live[k] == 0:
                del live[k]
        out.append(_batch(kind, keys, diff, ports))

    def far_keys(n):
        port = rng.integers(0, num_ports, n)
        epoch = rng.integers(0, 1 << 40, n)
        it = rng.integers(0, 1 << 40, n)
        return port, epoch, it

    for b in range(batches - 1):
        kind = ADVERSARIAL_KINDS[b % len(ADVERSARIAL_KINDS)]
        if kind == "burst":
            keys = _random_keys(rng, num_ports, 3 * per)
            add(keys, rng.integers(1, 4, len(keys)), kind)
        elif kind == "tiny":
            keys = _random_keys(rng, num_ports, int(rng.integers(1, 4)))
            add(keys, np.ones(len(keys), np.int64), kind)
        elif kind == "cancel":
            keys = _random_keys(rng, num_ports, per // 2)
            both = np.concatenate([keys, keys])
            diff = np.concatenate([np.ones(len(keys), np.int64), -np.ones(len(keys), np.int64)])
            perm = rng.permutation(len(both))
            add(both[perm], diff[perm], kind)
        elif kind == "negative":
            keys = _random_keys(rng, num_ports, per // 4)
            keys = keys[[k not in live for k in keys.tolist()]]
            owed += keys.tolist()
            add(keys, -np.ones(len(keys), np.int64), kind)
        elif kind == "empty":
            add(np.zeros(0, np.int64), np.zeros(0, np.int64), kind)
        elif kind == "duplicates":
            key = _random_keys(rng, num_ports, 1)
            keys = np.repeat(key, per // 2)
            diff = rng.choice(np.array([-1, 1, 2], np.int64), len(keys))
            diff[0] = 1 + max(0, int(-diff.sum()))  # ends positive
            add(keys, diff, kind)
        elif kind == "far":
            port, epoch, it = far_keys(per // 2)
            is_source, node, pt = ports
            out.append(BatchSpec(kind, is_source[port], node[port], pt[port], epoch, it,
                                 np.ones(len(port), np.int64)))
        elif kind == "advance":
            held = np.array([k for k in live if (k >> _T_BITS) in set(sources.tolist())
                             and live[k] > 0 and (k & ((1 << _I_BITS) - 1)) < ITERS - 1],
                            np.int64)[:per]
            keys = np.concatenate([held + 1, held])
            diff = np.concatenate([np.ones(len(held), np.int64), -np.ones(len(held), np.int64)])
            add(keys, diff, kind)
        elif kind == "restore":
            keys = np.array(owed, np.int64)
            owed = []
            add(keys, np.full(len(keys), 2, np.int64), kind)
        else:   # churn
            items = [k for k, c in live.items() if c > 0]
            r = min(per // 2, len(items))
            ret = np.array(items, np.int64)[rng.choice(len(items), r, replace=False)] if r else \
                np.zeros(0, np.int64)
            new = _random_keys(rng, num_ports, per - r)
            keys = np.concatenate([ret, new])
            diff = np.concatenate([-np.ones(r, np.int64), np.ones(len(new), np.int64)])
            perm = rng.permutation(len(keys))
            add(keys[perm], diff[perm], kind)
    # drain: every live count back to zero (the far rows too)
    keys = np.array(sorted(live), np.int64)
    add(keys, -np.array([live[k] for k in keys.tolist()], np.int64), "drain")
    far = [x for x in out if x.kind == "far"]     # not in `live` (their times do not pack)
    fields = ("is_source", "node", "port", "epoch", "iter", "diff")
    out[-1] = BatchSpec("drain", *[np.concatenate([getattr(out[-1], f)] + [
        -x.diff if f == "diff" else getattr(x, f) for x in far]) for f in fields])
    return out


# --- writing -------------------------------------------------------------------------------

def _field_width(vals: np.ndarray) -> int:
    if len(vals) == 0:
        return 1
    lo, hi = int(vals.min()), int(vals.max())
    width = len(str(max(abs(lo), abs(hi))))
    return width + (1 if lo < 0 else 0)


def _put_int(buf: np.ndarray, col: int, width: int, vals: np.ndarray) -> None:
    """Write ``vals`` right-aligned into ``buf[:, col:col + width]``; unused bytes stay 0."""
    a = np.abs(vals.astype(np.int64)).astype(np.uint64)
    ndig = np.ones(len(a), np.int64)
    for k in range(width):
        c = col + width - 1 - k
        d = (a % np.uint64(10)).astype(np.uint8) + np.uint8(48)
        if k == 0:
            buf[:, c] = d
        else:
            present = a > 0
            buf[:, c] = np.where(present, d, np.uint8(0))
            ndig += present
        a //= np.uint64(10)
    neg = np.flatnonzero(vals < 0)
    if len(neg):
        buf[neg, col + width - 1 - ndig[neg]] = ord("-")


def _format_batch(batch: BatchSpec) -> bytes:
    """The ``s|t NODE PORT EPOCH ITER DIFF`` lines of a batch, as bytes."""
    n = len(batch)
    if n == 0:
        return b""
    cols = [batch.node, batch.port, batch.epoch, batch.iter, batch.diff]
    widths = [_field_width(c) for c in cols]
    line_w = 1 + sum(w + 1 for w in widths) + 1
    buf = np.zeros((n, line_w), np.uint8)
    buf[:, 0] = np.where(batch.is_source, np.uint8(ord("s")), np.uint8(ord("t")))
    pos = 1
    for c, w in zip(cols, widths):
        buf[:, pos] = ord(" ")
        _put_int(buf, pos + 1, w, c)
        pos += w + 1
    buf[:, pos] = ord("\n")
    return buf[buf != 0].tobytes()


def _graph_text(spec: GraphSpec) -> str:
    lines = [HEADER,
             f"# synthetic workload (perf.workloads): chain {spec.chain}, loops {len(spec.loops)}, "
             f"diamonds {len(spec.diamonds)}, locations {spec.num_locations}"]
    lines += [f"node {k} {i} {o}" for k, (i, o) in enumerate(spec.nodes)]
    lines += ["summary %d %d %d %d %d" % s for s in spec.summaries]
    lines += ["edge %d %d %d %d" % e for e in spec.edges]
    return "\n".join(lines) + "\n"


def _chunks(spec: GraphSpec, batches: list[BatchSpec]) -> Iterator[bytes]:
    yield _graph_text(spec).encode("ascii")
    for batch in batches:
        yield b"batch\n"
        yield _format_batch(batch)
        yield b"end\n"


def workload_text(spec: GraphSpec, batches: list[BatchSpec]) -> str:
    """The whole workload file as a string (what :func:`write_workload` writes)."""
    return b"".join(_chunks(spec, batches)).decode("ascii")


def write_workload(path_or_file: str | os.PathLike | BinaryIO | TextIO, spec: GraphSpec,
                   batches: list[BatchSpec]) -> int:
    """Write the workload to a path or an open (binary or text) file; return the bytes written."""
    total = 0
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "wb") as f:
            for chunk in _chunks(spec, batches):
                total += f.write(chunk)
        return total
    text_mode = isinstance(path_or_file, io.TextIOBase)
    for chunk in _chunks(spec, batches):
        path_or_file.write(chunk.decode("ascii") if text_mode else chunk)
        total += len(chunk)
    return total


# --- command line --------------------------------------------------------------------------

def build_graph(spec: GraphSpec):
    """The :class:`engine.Graph` of a spec (depth 1 everywhere, ``m = 1``), without text.

    Location ids follow the engine's numbering, so :func:`batch_columns` can address them.
    """
    from engine import GraphBuilder, Summary

    b = GraphBuilder(m=1)
    for k, (n_in, n_out) in enumerate(spec.nodes):
        b.add_operator(n_in, n_out, depth=1, name="scope" if k == 0 else f"node{k}")
    for node, i, o, d_epoch, d_iter in spec.summaries:
        b.add_summary(node, i, o, Summary.product(d_epoch, d_iter))
    for e in spec.edges:
        b.connect(*e)
    return b.build()


def batch_columns(graph, batch: BatchSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(loc int32[n], ts int64[n, 2], diff int64[n])`` of a batch, for ``graph = build_graph(spec)``.

    Vectorised: a lookup table from ``(is_source, node, port)`` to location.
    """
    from engine.core.graph import PortKind

    max_port = max(l.port for l in graph.locations) + 1 if graph.locations else 1
    table = np.full((2, graph.num_operators, max_port), -1, dtype=np.int32)
    for i, l in enumerate(graph.locations):
        table[1 if l.kind is PortKind.SOURCE else 0, l.op, l.port] = i
    loc = table[batch.is_source.astype(np.int64), batch.node, batch.port]
    ts = np.stack([batch.epoch, batch.iter], axis=1).astype(np.int64)
    return loc, ts, batch.diff.astype(np.int64)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m perf.workloads",
                                description="Write a deterministic synthetic workload (format v1).")
    p.add_argument("--nodes", type=int, required=True, help="chain operators N")
    p.add_argument("--batch", type=int, default=None,
                   help="changes per batch B (required unless --adversarial)")
    p.add_argument("--adversarial", action="store_true",
                   help="batches of awkward shapes instead (adversarial_batches: 26 batches, "
                        "about 6,400 rows)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output file ('-' for stdout)")
    args = p.parse_args(argv)
    if args.batch is None and not args.adversarial:
        p.error("--batch is required (or --adversarial)")
    start = time.perf_counter()
    spec = generate_graph(args.nodes, args.seed)
    batches = adversarial_batches(spec, args.seed) if args.adversarial else \
        generate_batches(spec, args.batch, args.seed)
    if args.out == "-":
        size = write_workload(sys.stdout.buffer, spec, batches)
        sys.stdout.flush()
    else:
        size = write_workload(args.out, spec, batches)
    secs = time.perf_counter() - start
    changes = sum(len(b) for b in batches)
    graph_lines = 2 + len(spec.nodes) + len(spec.summaries) + len(spec.edges)
    print(f"nodes={len(spec.nodes)} chain={spec.chain} loops={len(spec.loops)} "
          f"diamonds={len(spec.diamonds)} locations={spec.num_locations} batches={len(batches)} "
          f"changes={changes} lines={graph_lines + changes + 2 * len(batches)} bytes={size} "
          f"seconds={secs:.2f}", file=sys.stderr if args.out == "-" else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
