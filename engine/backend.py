"""Which implementation tracks frontiers: backend names parsed in one place.

``TFRONT_BACKEND`` overrides the default ``auto``; an explicit argument overrides both.

* ``cpu`` -- the batched engine (:class:`~engine.batched.BatchedTracker`) on NumPy + Numba
  kernels: the product's default;
* ``reference`` -- implied frontiers recomputed from ``Psi`` by the definition (the oracle);
* ``timely`` -- timely-style incremental local propagation in plain Python (no ``Psi``);
* ``auto`` -- the fastest backend that can run here: ``cpu``. (The CUDA backend is the
  subject of a later issue; until it exists ``auto`` never picks a GPU.)

>>> Backend.parse("Reference")
<Backend.REFERENCE: 'reference'>
>>> resolve_backend("auto")[0]
<Backend.CPU: 'cpu'>
"""

from __future__ import annotations

import os

from .choices import Choice
from .graph import Graph

__all__ = ["Backend", "resolve_backend", "make_tracker", "ENV_VAR"]

ENV_VAR = "TFRONT_BACKEND"


class Backend(Choice):
    """Frontier-tracking implementations selectable by name."""

    AUTO = "auto"
    CPU = "cpu"
    REFERENCE = "reference"
    TIMELY = "timely"


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
        return Backend.CPU, (f"auto ({origin}): cpu, the batched engine on NumPy + Numba "
                             f"(no CUDA backend in this build)")
    return backend, origin


def make_tracker(graph: Graph, backend: "str | Backend | None" = None, *, strict: bool = False, **options):
    """A frontier tracker for ``graph`` on the chosen backend.

    ``options`` go to :class:`~engine.batched.BatchedTracker` (``strategy``,
    ``max_antichain``, ``memory_budget``) for the ``cpu`` backend.
    """
    chosen, _why = resolve_backend(backend)
    if chosen is Backend.REFERENCE:
        from .reference import ImpliedFrontierTracker
        return ImpliedFrontierTracker(graph, strict=strict)
    if chosen is Backend.TIMELY:
        from .propagation import PropagationTracker
        return PropagationTracker(graph, strict=strict)
    from .batched import BatchedTracker
    return BatchedTracker(graph, strict=strict, **options)
