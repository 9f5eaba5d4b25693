"""Where the exchange protocol's time goes: a clock that splits wall time into named phases.

The simulator (:class:`~engine.exchange.simulation.Exchange`) and its workers share one
:class:`PhaseClock`; ``perf/bench_exchange.py --profile`` reports it. Phases nest, and time is
*exclusive*: while a nested phase runs, its parent's clock stops, so the phases add up to the
time spent inside any of them.

>>> clock = PhaseClock()
>>> with clock("deliver"):
...     with clock("tracker"):
...         pass
>>> sorted(clock.seconds)
['deliver', 'tracker']
>>> clock.calls["tracker"]
1
"""

from __future__ import annotations

import time

__all__ = ["PhaseClock", "PHASES"]

#: The phases the exchange code reports, in the order a report lists them:
#: ``split`` (a workload batch split among the workers, the workload counts), ``perform``
#: (``perf_op`` and its guards), ``build`` (``send_upd``: the policy's choice, the
#: ``justified`` guard, the update), ``deliver`` (``recv_upd``/``recv_cap``: sequence checks,
#: ``glob``, the round's columnar batch), ``tracker`` (the workers' local trackers and the
#: tracker of ``rec``), ``check`` (Safe, Mono, the frontier property, agreement) and
#: ``schedule`` (choosing transitions: enabled events, admissibility).
PHASES = ("split", "perform", "build", "deliver", "tracker", "check", "schedule")


class PhaseClock:
    """Accumulates exclusive wall time (``seconds``) and entries (``calls``) per phase name.

    Use ``with clock(name): ...``; nesting pauses the enclosing phase.
    """

    __slots__ = ("seconds", "calls", "_stack")

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list] = []

    def __call__(self, name: str) -> "_Phase":
        return _Phase(self, name)

    def _enter(self, name: str) -> None:
        now = time.perf_counter()
        if self._stack:
            parent = self._stack[-1]
            self.seconds[parent[0]] = self.seconds.get(parent[0], 0.0) + now - parent[1]
        self._stack.append([name, now])
        self.calls[name] = self.calls.get(name, 0) + 1

    def _exit(self) -> None:
        now = time.perf_counter()
        name, start = self._stack.pop()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - start
        if self._stack:
            self._stack[-1][1] = now

    def reset(self) -> None:
        """Forget what was measured (open phases keep running)."""
        self.seconds.clear()
        self.calls.clear()

    def report(self) -> dict:
        """``{phase: {"s": seconds, "calls": n}}`` in :data:`PHASES` order, then any others."""
        names = [p for p in PHASES if p in self.seconds] + \
            sorted(p for p in self.seconds if p not in PHASES)
        return {p: {"s": self.seconds[p], "calls": self.calls.get(p, 0)} for p in names}


class _Phase:
    __slots__ = ("clock", "name")

    def __init__(self, clock: PhaseClock, name: str):
        self.clock, self.name = clock, name

    def __enter__(self):
        self.clock._enter(self.name)
        return self

    def __exit__(self, *exc) -> None:
        self.clock._exit()
