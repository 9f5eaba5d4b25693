"""Which implementation tracks frontiers: backend names parsed in one place.

``TFRONT_BACKEND`` overrides the default ``auto``; an explicit argument overrides both.
Available now: ``reference`` (implied frontiers straight from ``Psi``, the oracle) and
``timely`` (incremental local propagation, no ``Psi``). ``auto`` picks the fastest
implementation available, currently ``timely``.

>>> Backend.parse("Reference")
<Backend.REFERENCE: 'reference'>
"""

from __future__ import annotations

import enum
import os

from .errors import BackendError
from .graph import Graph
from .tracker import FrontierTracker

__all__ = ["Backend", "resolve_backend", "make_tracker", "ENV_VAR"]

ENV_VAR = "TFRONT_BACKEND"


class Backend(enum.Enum):
    """Frontier-tracking implementations selectable by name."""

    AUTO = "auto"
    REFERENCE = "reference"
    TIMELY = "timely"

    @classmethod
    def parse(cls, name: "str | Backend") -> "Backend":
        """Parse a backend name (case-insensitive); raise :class:`BackendError` naming the choices."""
        if isinstance(name, Backend):
            return name
        try:
            return cls(str(name).strip().lower())
        except ValueError:
            choices = ", ".join(b.value for b in cls)
            raise BackendError(f"unknown backend {name!r}; choose one of: {choices}") from None


def resolve_backend(name: "str | Backend | None" = None) -> tuple[Backend, str]:
    """The concrete backend to use and the reason for the choice.

    ``name`` wins over ``TFRONT_BACKEND``, which wins over ``auto``.
    """
    if name is None:
        env = os.environ.get(ENV_VAR)
        backend, origin = (Backend.parse(env), f"{ENV_VAR}={env}") if env else (Backend.AUTO, "default")
    else:
        backend, origin = Backend.parse(name), "requested"
    if backend is Backend.AUTO:
        return Backend.TIMELY, f"auto ({origin}): timely is the fastest backend available"
    return backend, origin


def make_tracker(graph: Graph, backend: "str | Backend | None" = None, *, strict: bool = False) -> FrontierTracker:
    """A frontier tracker for ``graph`` on the chosen backend.

    ``auto`` takes ``reference`` for a graph with a zero-advance cycle (built with
    ``allow_zero_cycles=True``): local propagation keeps such a cycle's implications alive
    after its pointstamps are gone, while the implied frontier drains.
    """
    chosen, _why = resolve_backend(backend)
    is_auto = backend is None and not os.environ.get(ENV_VAR) or \
        Backend.parse(backend if backend is not None else os.environ[ENV_VAR]) is Backend.AUTO
    if is_auto and graph.allow_zero_cycles and graph.find_zero_advance_cycle() is not None:
        chosen = Backend.REFERENCE
    if chosen is Backend.REFERENCE:
        from .reference import ImpliedFrontierTracker
        return ImpliedFrontierTracker(graph, strict=strict)
    from .propagation import PropagationTracker
    return PropagationTracker(graph, strict=strict)
