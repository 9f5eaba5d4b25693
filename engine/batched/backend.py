"""Which implementation tracks frontiers: backend names parsed in one place.

``TFRONT_BACKEND`` overrides the default ``auto``; an explicit argument overrides both.

* ``cpu`` -- the batched engine (:class:`~engine.batched.tracker.BatchedTracker`) on NumPy + Numba
  kernels;
* ``cuda`` -- the same engine on a GPU: CuPy arrays and the CUDA kernels of ``gpu_kernels``
  (:class:`~engine.batched.cuda.CudaKernels`);
* ``reference`` -- implied frontiers recomputed from ``Psi`` by the definition (the oracle);
* ``timely`` -- timely-style incremental local propagation in plain Python (no ``Psi``);
* ``auto`` -- the fastest backend that can run here: ``cuda`` when a CUDA device is actually
  usable (:func:`~engine.batched.cuda.usable_device`), else ``cpu``; the reason says which
  and why.

An explicit ``cuda`` (argument or ``TFRONT_BACKEND``) without a usable device raises
:class:`~engine.errors.BackendError` naming the cause (no CuPy, no device, ...).

>>> Backend.parse("Reference")
<Backend.REFERENCE: 'reference'>
>>> resolve_backend("reference")
(<Backend.REFERENCE: 'reference'>, 'requested')
>>> resolve_backend("auto")[0] in (Backend.CPU, Backend.CUDA)
True
"""

from __future__ import annotations

import os

from engine.core.choices import Choice
from engine.errors import BackendError
from engine.core.graph import Graph

__all__ = ["Backend", "resolve_backend", "make_tracker", "ENV_VAR"]

ENV_VAR = "TFRONT_BACKEND"


class Backend(Choice):
    """Frontier-tracking implementations selectable by name."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"
    REFERENCE = "reference"
    TIMELY = "timely"


def resolve_backend(name: "str | Backend | None" = None) -> tuple[Backend, str]:
    """The concrete backend to use and the reason for the choice.

    ``name`` wins over ``TFRONT_BACKEND``, which wins over ``auto``. ``auto`` takes ``cuda``
    when a CUDA device is usable, else ``cpu`` (probing for a device imports CuPy, once).

    Raises
    ------
    BackendError
        For an unknown name, or ``cuda`` requested where no device is usable.
    """
    if name is None:
        env = os.environ.get(ENV_VAR)
        backend, origin = (Backend.parse(env), f"{ENV_VAR}={env}") if env else (Backend.AUTO, "default")
    else:
        backend, origin = Backend.parse(name), "requested"
    if backend is Backend.AUTO:
        from engine.batched.cuda import usable_device
        ok, why = usable_device()
        if ok:
            return Backend.CUDA, f"auto ({origin}): cuda, the batched engine on the GPU: {why}"
        return Backend.CPU, (f"auto ({origin}): cpu, the batched engine on NumPy + Numba; "
                             f"cuda not usable: {why}")
    if backend is Backend.CUDA:
        from engine.batched.cuda import usable_device
        ok, why = usable_device()
        if not ok:
            raise BackendError(f"backend cuda ({origin}) cannot run here: {why}")
        return backend, f"{origin}: {why}"
    return backend, origin


def make_tracker(graph: Graph, backend: "str | Backend | None" = None, *, strict: bool = False,
                 device: int | None = None, batch_hint: int | None = None, **options):
    """A frontier tracker for ``graph`` on the chosen backend.

    ``options`` go to :class:`~engine.batched.tracker.BatchedTracker` (``strategy``,
    ``max_antichain``, ``memory_budget``) for the ``cpu`` and ``cuda`` backends; ``device``
    picks the GPU (an index among the visible devices) for ``cuda``. ``batch_hint``, the
    expected rows per batch, lets ``auto`` keep the cpu backend where a GPU is usable but
    the cost model (:func:`engine.batched.cost.choose_backend`) estimates batches that small to be
    cheaper on the CPU (a fixed number of launches and syncs per batch against a per-row
    cost). The tracker's ``backend_reason`` says what was picked and why.
    """
    chosen, why = resolve_backend(backend)
    requested = backend if backend is not None else (os.environ.get(ENV_VAR) or "auto")
    if chosen is Backend.CUDA and batch_hint is not None and Backend.parse(requested) is Backend.AUTO:
        from engine.batched.cost import choose_backend
        from engine.batched.graph_arrays import GraphArrays
        budget = {k: options[k] for k in ("memory_budget",) if k in options}
        pick = choose_backend(GraphArrays.from_graph(graph), batch_hint, **budget)
        why = f"{why}; {pick.backend} for {pick.reason}"
        if pick.backend == "cpu":
            chosen = Backend.CPU
    if chosen is Backend.CUDA:
        from engine.batched.tracker import BatchedTracker
        from engine.batched.cuda import CudaKernels
        tracker = BatchedTracker(graph, strict=strict, kernels=CudaKernels(device), **options)
    elif chosen is Backend.REFERENCE:
        from engine.trackers.reference import ImpliedFrontierTracker
        tracker = ImpliedFrontierTracker(graph, strict=strict)
    elif chosen is Backend.TIMELY:
        from engine.trackers.propagation import PropagationTracker
        tracker = PropagationTracker(graph, strict=strict)
    else:
        from engine.batched.tracker import BatchedTracker
        tracker = BatchedTracker(graph, strict=strict, **options)
    tracker.backend_reason = why
    return tracker
