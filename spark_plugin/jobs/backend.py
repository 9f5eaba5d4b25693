"""Which kernel backend a job runs: the one requested, and the driver's frontier service's."""

from __future__ import annotations

import logging
import os

from engine import Backend
from engine.batched.backend import ENV_VAR
from engine.errors import BackendError

__all__ = ["requested_backend", "service_backend"]

log = logging.getLogger(__name__)


def requested_backend(backend, accepted=(Backend.AUTO, Backend.CPU, Backend.CUDA),
                      job: str = "wcc") -> Backend:
    """The job's backend: ``backend`` (one of ``accepted``), else ``$TFRONT_BACKEND``, else
    auto.

    Raises
    ------
    BackendError
        An unknown name, or an argument naming a backend not in ``accepted``.
    """
    if backend is None:
        env = os.environ.get(ENV_VAR)
        return Backend.parse(env) if env else Backend.AUTO
    chosen = Backend.parse(backend)
    if chosen not in accepted:
        raise BackendError(f"the {job.upper()} job's backend must be one of "
                           f"{', '.join(b.value for b in accepted)}, got {backend!r}")
    return chosen


def service_backend(requested: Backend) -> Backend:
    """The concrete engine backend of the driver's frontier service for ``requested``:
    itself (``auto`` resolved), except ``cuda`` on a driver without a usable GPU, which
    gives ``cpu`` with a logged warning -- the executors may still have GPUs."""
    from engine import resolve_backend

    if requested is Backend.CUDA:
        from engine.batched.cuda import usable_device

        ok, why = usable_device()
        if not ok:
            log.warning("backend cuda: the driver has no usable GPU (%s); its frontier service "
                        "runs on the cpu backend, and every task still runs its kernels on its "
                        "own GPU where it has one", why)
            return Backend.CPU
    return resolve_backend(requested)[0]
