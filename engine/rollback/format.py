"""The ``timely-rollback v1`` text format: reading rollback problems and printing their answers
(``docs/rollback.md``).

A file is read into a :class:`~engine.rollback.problem.RollbackProblem` and checked as a whole
(:func:`parse_rollback`, :func:`read_rollback`); an :class:`~engine.rollback.problem.Answer` is
printed by :func:`format_answer`. In answers, a frontier is written by its maximal elements (an
:data:`~engine.rollback.problem.Antichain`).

>>> from engine.rollback.problem import solve
>>> problem = parse_rollback('''timely-rollback v1
... times 2 1
... node 0
... node 1
... in 0 0
... edge 1 0 1
... consumed 0 0 0 1 0
... consumed 1 0 0
... inflight 1 1 0
... ''')
>>> print(format_answer(problem, solve(problem)), end="")
# timely-rollback answer v1
guard full
<BLANKLINE>
result ok
f 0 1 1 0
f 1 1 0 0
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.errors import RollbackFormatError, RollbackLimitError
from engine.rollback.problem import Answer, EdgeDecl, RollbackProblem, Time, _fmt, maximal

__all__ = ["HEADER", "ANSWER_HEADER", "MAX_STATES", "MAX_DIGITS", "parse_rollback",
           "read_rollback", "format_answer"]

HEADER = "timely-rollback v1"
ANSWER_HEADER = "# timely-rollback answer v1"
#: The most ``(location, time)`` states a problem may have by default (``--max-states``):
#: ``(nodes + internal edges) x NE x NI``, the states of its could-result-in and the cells of
#: the solvers' masks. The batched solver takes about a second and a few hundred MB at the
#: limit; ``times 10000 10000`` alone (10**8) took 1.6 GB and 15 s before this limit.
MAX_STATES = 10_000_000
#: The most digits of a number in a problem file (node, edge, time, ``NE``, ``NI``).
MAX_DIGITS = 18


# --- printing the answer ----------------------------------------------------------------------

def _times(ts) -> str:
    return " ".join([str(len(ts))] + [f"{e} {i}" for e, i in ts])


def format_answer(problem: RollbackProblem, answer: Answer) -> str:
    """The answer in the printed format (format section 5); a ``nolargest`` answer cut at
    ``max_choices`` (:attr:`~engine.rollback.problem.Answer.cut`) has a line ``cut`` after
    its result line."""
    lines = [ANSWER_HEADER, f"guard {answer.guard.value}", ""]
    if answer.result == "ok":
        lines.append("result ok")
        lines += [f"f {p} {_times(x)}" for p, x in enumerate(answer.choice)]
        if answer.fc is not None:
            lines += [f"c {p} {_times(x)}" for p, x in enumerate(answer.fc)]
    elif answer.result == "nolargest":
        lines.append(f"result nolargest {len(answer.choices)}")
        if answer.cut:
            lines.append("cut")
        for j, f in enumerate(answer.choices, 1):
            lines.append(f"choice {j}")
            lines += [f"f {p} {_times(x)}" for p, x in enumerate(f)]
    else:
        lines.append("result none")
        lines += [f"lost {p} {cond} {k} {_times(ts)}" for p, cond, k, ts in answer.lost]
        if not answer.lost:
            lines.append("conflict")
        lines += [f"bound {p} {_times(x)}" for p, x in enumerate(answer.bound)]
    return "\n".join(lines) + "\n"


# --- reading the format ----------------------------------------------------------------------

_INT = re.compile(r"[0-9]+\Z")


def _short(token: str) -> str:
    """A token for a message: quoted, its middle left out when it is long."""
    return repr(token) if len(token) <= 40 else repr(token[:20] + "..." + token[-8:])
_DATA = {"phi", "need", "step", "avail", "consumed", "notified", "inflight"}
_EDGES = {"in", "edge", "out"}


def read_rollback(path, *, max_states: int = MAX_STATES) -> RollbackProblem:
    """Read a ``timely-rollback v1`` file; see :func:`parse_rollback`. Errors name the file
    and the line (``FILE:LINE: ...``, :attr:`RollbackFormatError.path`); bytes that are not
    UTF-8 are one (at their line). ``OSError`` when the file cannot be read."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start].decode("utf-8")
        lines = (before + "x").splitlines()
        raise RollbackFormatError(f"not UTF-8 text: byte 0x{data[e.start]:02x} at column "
                                  f"{len(lines[-1])} ({e.reason})", len(lines),
                                  str(path)) from None
    try:
        return parse_rollback(text, max_states=max_states)
    except RollbackFormatError as e:
        raise e.at(path) from None


def parse_rollback(text: str, *, max_states: int = MAX_STATES) -> RollbackProblem:
    """Parse a rollback problem (format sections 4 and 6) and run the end-of-file checks.

    Raises :class:`RollbackFormatError` with the 1-based line number of the offending line;
    :class:`~engine.errors.RollbackLimitError` (a subclass), at the line that crosses it,
    for a problem of more than ``max_states`` ``(location, time)`` states
    (``(nodes + internal edges) x NE x NI``, :data:`MAX_STATES`) -- checked before anything
    of that size is built -- and for a number of more than :data:`MAX_DIGITS` digits.
    """
    if isinstance(max_states, bool) or not isinstance(max_states, int) or max_states < 1:
        raise ValueError(f"max_states must be a positive integer, got {max_states!r}")
    return _Parser(text, max_states).parse()


class _Parser:
    def __init__(self, text: str, max_states: int = MAX_STATES):
        self.max_states = max_states
        self.lines = text.splitlines()
        self.ne = self.ni = None
        self.buffer: list[bool] = []
        self.node_line: list[int] = []
        self.edges: list[EdgeDecl] = []
        self.internal = 0   # internal edges so far
        self.phase = "times"  # times -> nodes -> edges -> data
        self.p = None

    def parse(self) -> RollbackProblem:
        end = len(self.lines) + 1
        if not self.lines or self.lines[0].split("#", 1)[0].split() != HEADER.split():
            got = self.lines[0].strip() if self.lines else "an empty file"
            raise RollbackFormatError(f"expected header {HEADER!r}, got {got!r}", 1)
        for no, raw in enumerate(self.lines[1:], start=2):
            tok = raw.split("#", 1)[0].split()
            if tok:
                self.line(no, tok)
        if self.ne is None:
            raise RollbackFormatError("missing 'times NE NI' line", end)
        if not self.buffer:
            raise RollbackFormatError("no 'node' line", end)
        if self.p is None:
            self._start_data()
        self.p.check()
        return self.p

    # -- tokens --
    def ints(self, no, toks) -> list[int]:
        for x in toks:
            if not _INT.match(x):
                raise RollbackFormatError(f"expected a non-negative integer, got {_short(x)}", no)
            if len(x) > MAX_DIGITS:
                raise RollbackLimitError(f"number {_short(x)} has {len(x):,} digits; numbers "
                                         f"have at most {MAX_DIGITS}", no)
        return [int(x) for x in toks]

    def check_size(self, no, what: str) -> None:
        """Refuse, at line ``no``, a problem that has grown past ``max_states`` states."""
        locs = max(len(self.buffer) + self.internal, 1)
        states = locs * self.ne * self.ni
        if states > self.max_states:
            raise RollbackLimitError(
                f"{what}: the problem has {states:,} (location, time) states ((nodes + internal "
                f"edges) x NE x NI = {locs} x {self.ne} x {self.ni}), more than "
                f"max_states = {self.max_states:,}; raise the limit (--max-states) to solve "
                f"it", no)

    def times(self, no, toks, *, required=True) -> list[Time]:
        vals = self.ints(no, toks)
        if len(vals) % 2:
            raise RollbackFormatError(f"odd number of time integers ({len(vals)})", no)
        if required and not vals:
            raise RollbackFormatError("expected at least one time", no)
        out = []
        for e, i in zip(vals[::2], vals[1::2]):
            if e >= self.ne or i >= self.ni:
                raise RollbackFormatError(
                    f"time ({e}, {i}) outside T = {{0..{self.ne - 1}}} x {{0..{self.ni - 1}}}", no)
            out.append((e, i))
        return out

    def count(self, no, tok, lo, hi=None) -> None:
        hi = lo if hi is None else hi
        if not lo <= len(tok) <= hi:
            want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi < 10**6 else f"at least {lo}")
            raise RollbackFormatError(
                f"'{tok[0]}' takes {want} tokens, got {len(tok)}", no)

    def node(self, no, x: str) -> int:
        (v,) = self.ints(no, [x])
        if v >= len(self.buffer):
            raise RollbackFormatError(f"unknown node {v} (nodes are 0..{len(self.buffer) - 1})", no)
        return v

    def edge(self, no, x: str) -> int:
        (v,) = self.ints(no, [x])
        if v >= len(self.edges):
            raise RollbackFormatError(f"unknown edge {v} (edges are 0..{len(self.edges) - 1})", no)
        return v

    # -- lines --
    def line(self, no, tok) -> None:
        kw = tok[0]
        if self.phase == "times":
            if kw != "times":
                raise RollbackFormatError(f"expected 'times NE NI' after the header, got {kw!r}", no)
            self.count(no, tok, 3)
            self.ne, self.ni = self.ints(no, tok[1:])
            if self.ne == 0 or self.ni == 0:
                raise RollbackFormatError(f"NE and NI must be >= 1, got {self.ne} {self.ni}", no)
            self.check_size(no, f"times {self.ne} {self.ni}")
            self.phase = "nodes"
        elif kw == "times":
            raise RollbackFormatError("a second 'times' line", no)
        elif kw == "node":
            if self.phase != "nodes":
                raise RollbackFormatError(f"'node' after {self.phase} lines", no)
            self.count(no, tok, 2, 3)
            (v,) = self.ints(no, tok[1:2])
            if v != len(self.buffer):
                raise RollbackFormatError(f"node IDs go in order: expected {len(self.buffer)}, got {v}", no)
            if len(tok) == 3 and tok[2] != "buffer":
                raise RollbackFormatError(f"expected 'buffer' or nothing after the node ID, got {tok[2]!r}", no)
            self.buffer.append(len(tok) == 3)
            self.node_line.append(no)
            self.check_size(no, f"node {v}")
        elif kw in _EDGES:
            if not self.buffer:
                raise RollbackFormatError(f"'{kw}' before any 'node' line", no)
            if self.phase == "data":
                raise RollbackFormatError(f"edge line '{kw}' after data lines", no)
            self.phase = "edges"
            self.edge_line(no, tok)
        elif kw in _DATA:
            if not self.buffer:
                raise RollbackFormatError(f"'{kw}' before any 'node' line", no)
            if self.p is None:
                self._start_data()
            self.phase = "data"
            getattr(self, "data_" + kw)(no, tok)
        else:
            raise RollbackFormatError(f"unknown keyword {kw!r}", no)

    def edge_line(self, no, tok) -> None:
        kw = tok[0]
        self.count(no, tok, 4 if kw == "edge" else 3)
        (k,) = self.ints(no, tok[1:2])
        if k != len(self.edges):
            raise RollbackFormatError(f"edge IDs go in order: expected {len(self.edges)}, got {k}", no)
        if kw == "in":
            self.edges.append(EdgeDecl("in", None, self.node(no, tok[2]), no))
        elif kw == "out":
            v = self.node(no, tok[2])
            if not self.buffer[v]:
                raise RollbackFormatError(
                    f"output edge {k} from node {v}, which is not a buffer node (Condition 1)", no)
            self.edges.append(EdgeDecl("out", v, None, no))
        else:
            a, b = self.node(no, tok[2]), self.node(no, tok[3])
            if a == b:
                raise RollbackFormatError(f"edge {k} from node {a} to itself", no)
            self.edges.append(EdgeDecl("edge", a, b, no))
            self.internal += 1
            self.check_size(no, f"edge {k}")

    def _start_data(self) -> None:
        self.p = RollbackProblem(self.ne, self.ni, list(self.buffer), list(self.edges),
                                 node_line=list(self.node_line))
        self.explicit_avail: set = set()

    def phi_edge(self, no, x: str) -> int:
        k = self.edge(no, x)
        d = self.edges[k]
        if d.kind != "edge":
            raise RollbackFormatError(f"edge {k} is not an internal edge", no)
        if self.buffer[d.src]:
            raise RollbackFormatError(f"edge {k} leaves buffer node {d.src} (its phi is the identity)", no)
        return k

    def data_phi(self, no, tok) -> None:
        self.count(no, tok, 5)
        k = self.phi_edge(no, tok[1])
        if tok[2] != "shift":
            raise RollbackFormatError(f"expected 'shift', got {tok[2]!r}", no)
        if k in self.p.shift:
            raise RollbackFormatError(f"a second 'phi' for edge {k}", no)
        self.p.shift[k] = tuple(self.ints(no, tok[3:5]))

    def data_need(self, no, tok) -> None:
        self.count(no, tok, 4, 10**9)
        k = self.phi_edge(no, tok[1])
        (t,) = self.times(no, tok[2:4])
        gens = maximal(self.times(no, tok[4:], required=False))
        over = self.p.need_over.setdefault(k, {})
        if t in over:
            raise RollbackFormatError(f"a second 'need' for edge {k} at {_fmt(t)}", no)
        over[t] = gens
        self.p.need_line.setdefault(k, {})[t] = no

    def data_step(self, no, tok) -> None:
        self.count(no, tok, 6)
        k = self.phi_edge(no, tok[1])
        a, b = self.times(no, tok[2:6])
        self.p.steps.setdefault(k, set()).add((a, b))
        self.p.step_line.setdefault((k, a, b), no)

    def data_avail(self, no, tok) -> None:
        self.count(no, tok, 2, 10**9)
        v = self.node(no, tok[1])
        a = self.p.avail[v]
        if a.every and v not in self.explicit_avail:  # the first avail line: no longer 'every'
            a.every = False
        self.explicit_avail.add(v)
        if len(tok) > 2 and tok[2] == "every":
            self.count(no, tok, 3)
            a.every = True
        elif len(tok) > 2 and tok[2] == "epochs":
            self.count(no, tok, 3, 4)
            k = self.ne - 1 if len(tok) == 3 else self.ints(no, tok[3:4])[0]
            if k >= self.ne:
                raise RollbackFormatError(f"avail epochs {k}: K must be < NE = {self.ne}", no)
            a.epochs = max(a.epochs, k)
        else:
            a.explicit.add(maximal(self.times(no, tok[2:], required=False)))

    def data_consumed(self, no, tok) -> None:
        self.count(no, tok, 2, 10**9)
        k = self.edge(no, tok[1])
        if self.edges[k].kind == "out":
            raise RollbackFormatError(f"'consumed' on output edge {k}", no)
        self.p.consumed.setdefault(k, set()).update(self.times(no, tok[2:]))

    def data_notified(self, no, tok) -> None:
        self.count(no, tok, 2, 10**9)
        v = self.node(no, tok[1])
        self.p.notified[v].update(self.times(no, tok[2:]))

    def data_inflight(self, no, tok) -> None:
        self.count(no, tok, 2, 10**9)
        k = self.edge(no, tok[1])
        if self.edges[k].kind != "edge":
            raise RollbackFormatError(f"'inflight' on edge {k}, which is not an internal edge", no)
        self.p.inflight.setdefault(k, set()).update(self.times(no, tok[2:]))
