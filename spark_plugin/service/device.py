"""Which GPU a Spark task uses: ``CUDA_VISIBLE_DEVICES``, else its ``gpu`` resource, else the CPU.

:func:`choose_device` is the pure rule (environment and task resources in, device ordinal or
``None`` out); :func:`task_device` applies it inside a running task; :func:`gpu_usable` says
whether CuPy can actually run on the chosen device. Executor functions call these per task
and fall back to the CPU, with a logged reason, when no GPU is usable.

The ordinal returned is the index CUDA uses *inside the process*, i.e. among the devices
``CUDA_VISIBLE_DEVICES`` leaves visible:

1. ``CUDA_VISIBLE_DEVICES`` is set (a cluster manager or the user isolated GPUs):

   * no device is visible (empty, or starting with an invalid entry such as ``-1``) -> ``None``;
   * the task has a ``gpu`` address that is one of the visible entries -> its position;
   * the task has an integer address below the number of visible devices -> that address
     (it is already an in-process ordinal, as when a container renumbers its GPUs);
   * the task has any other address -> :class:`DeviceSelectionError`;
   * the task has no ``gpu`` resource -> ``0``, the first visible device.

2. Otherwise the task's first ``gpu`` address, which must be an integer (Spark's GPU discovery
   scripts report ``nvidia-smi`` indices), is the ordinal.
3. Otherwise ``None``: the CPU.

>>> choose_device({}, {})
>>> choose_device({}, {"gpu": ["1"]})
1
>>> choose_device({"CUDA_VISIBLE_DEVICES": "2,3"}, {"gpu": ["3"]})
1
>>> choose_device({"CUDA_VISIBLE_DEVICES": "-1"}, {"gpu": ["0"]})

:func:`place_kernels` turns a requested backend (``auto``, ``cpu``, ``cuda``) into where one
task's kernels run -- a :class:`KernelPlacement`, the CPU or a CUDA device, with the reason --
deciding per task, so that a driver without a GPU can still send work to executors that
have one. A CPU fallback is logged once per reason per Python worker.

>>> place_kernels(Backend.CPU)
KernelPlacement(backend=<Backend.CPU: 'cpu'>, device=None, reason='cpu requested')
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from engine import Backend

from spark_plugin.errors import DeviceSelectionError

__all__ = ["GPU_RESOURCE", "CUDA_VISIBLE_DEVICES", "choose_device", "task_device",
           "task_resources", "gpu_usable", "KernelPlacement", "place_kernels",
           "AUTO_GPU_MIN_ROWS"]

log = logging.getLogger(__name__)

#: Name of Spark's GPU resource (``spark.executor.resource.gpu.*``, ``TaskContext.resources()``).
GPU_RESOURCE = "gpu"
#: The CUDA runtime's device-visibility variable.
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
#: Under ``auto``, a task with fewer input rows than this runs the CPU kernels even where a
#: GPU is usable: for small inputs the copies to and from the device and the fixed cost of
#: the array passes are taken to outweigh the kernels (an estimate, not a measured
#: crossover; ``cuda`` always uses a usable GPU).
AUTO_GPU_MIN_ROWS = 1 << 16


def choose_device(env: Mapping[str, str], task_resources: Mapping[str, Any]) -> int | None:
    """The CUDA device ordinal a task should use, or ``None`` for the CPU.

    Parameters
    ----------
    env : mapping
        The process environment (``os.environ``); only ``CUDA_VISIBLE_DEVICES`` is read.
    task_resources : mapping
        Resource name -> assigned addresses: a sequence of address strings, or an object with
        an ``addresses`` attribute (``pyspark.resource.ResourceInformation``), as returned by
        ``TaskContext.resources()``.

    Returns
    -------
    int or None

    Raises
    ------
    DeviceSelectionError
        The task's GPU address cannot be mapped to a visible device ordinal.
    """
    addresses = _addresses(task_resources.get(GPU_RESOURCE))
    visible_var = env.get(CUDA_VISIBLE_DEVICES)
    if visible_var is not None:
        visible = _visible(visible_var)
        if not visible:
            return None
        if not addresses:
            return 0
        addr = addresses[0]
        if addr in visible:
            return visible.index(addr)
        if addr.isdigit() and int(addr) < len(visible):
            return int(addr)
        raise DeviceSelectionError(
            f"the task's {GPU_RESOURCE!r} address {addr!r} is neither one of the visible devices "
            f"{CUDA_VISIBLE_DEVICES}={visible_var!r} nor an ordinal below {len(visible)}")
    if not addresses:
        return None
    addr = addresses[0]
    if not addr.isdigit():
        raise DeviceSelectionError(
            f"the task's {GPU_RESOURCE!r} address {addr!r} is not a device index; the GPU "
            f"discovery script must report nvidia-smi indices such as \"0\", or "
            f"{CUDA_VISIBLE_DEVICES} must list the device")
    return int(addr)


def task_resources() -> dict[str, Any]:
    """``TaskContext.get().resources()`` inside a Spark task, ``{}`` outside one."""
    if "pyspark" not in sys.modules:   # not a Spark task (a task has PySpark loaded)
        return {}
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return dict(ctx.resources()) if ctx is not None else {}


def task_device() -> int | None:
    """:func:`choose_device` for the running task (``os.environ`` and its resources)."""
    return choose_device(os.environ, task_resources())


@functools.cache
def gpu_usable(device: int) -> tuple[bool, str]:
    """Whether CuPy runs on CUDA device ``device`` in this process, and why (never raises).

    Cached per Python worker: the check imports CuPy and runs one tiny computation.
    """
    try:
        import cupy
    except Exception as e:  # ImportError, or a CUDA installation that fails while loading
        return False, f"CuPy is not importable ({type(e).__name__}: {e})"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # cupy.cuda.runtime.CUDARuntimeError: no driver or no device
        return False, f"the CUDA runtime reports no usable device: {e}"
    if not 0 <= device < n:
        return False, f"device {device} requested, but the visible devices are 0..{n - 1}"
    try:
        with cupy.cuda.Device(device):
            int((cupy.arange(4, dtype=cupy.int64) + 1).sum())
    except Exception as e:  # a device that is visible but does not run code (MIG, ECC, ...)
        return False, f"device {device} does not run CuPy code: {type(e).__name__}: {e}"
    return True, f"device {device}"


@dataclass(frozen=True)
class KernelPlacement:
    """Where one task's kernels run.

    Attributes
    ----------
    backend : Backend
        ``Backend.CUDA`` (the CuPy twins on ``device``) or ``Backend.CPU`` (the Numba kernels).
    device : int or None
        The CUDA device ordinal (in-process, :func:`choose_device`); ``None`` on the CPU.
    reason : str
        Why: the device's description, or why the CPU runs the kernels.
    """

    backend: Backend
    device: int | None
    reason: str


def place_kernels(requested: "Backend | str", rows: int | None = None, *,
                  env: Mapping[str, str] | None = None,
                  resources: Mapping[str, Any] | None = None) -> KernelPlacement:
    """Where a task's kernels run, for the backend the job requested.

    Parameters
    ----------
    requested : Backend or str
        ``cuda``: the task's GPU when one is usable, else the CPU (a warning, once per
        reason in this process, names why). ``auto``: the same, but quietly, and only for
        inputs of at least :data:`AUTO_GPU_MIN_ROWS` rows. Any other backend (``cpu``, and
        the tracker-only ``reference`` and ``timely``): the CPU, without importing CuPy.
    rows : int, optional
        The task's input rows (``auto`` only).
    env, resources : mapping, optional
        The environment and the task's resources (default ``os.environ`` and
        :func:`task_resources`), as for :func:`choose_device`.

    Returns
    -------
    KernelPlacement

    Raises
    ------
    engine.errors.BackendError
        ``requested`` names no backend. A missing or unusable GPU is not an error: it gives
        the CPU placement.

    Notes
    -----
    The device is :func:`choose_device`'s; a task with neither ``CUDA_VISIBLE_DEVICES`` nor
    a ``gpu`` resource (a ``local`` master, a driver) uses the process's default device, 0.
    Usability is :func:`engine.batched.cuda.usable_device` (CuPy imports, the device runs a
    CuPy computation, Numba's CUDA target is present; cached per device and process), so
    the check costs one small computation per Python worker.
    """
    requested = Backend.parse(requested)
    if requested not in (Backend.AUTO, Backend.CUDA):
        return KernelPlacement(Backend.CPU, None, f"{requested.value} requested")
    if requested is Backend.AUTO and rows is not None and rows < AUTO_GPU_MIN_ROWS:
        return KernelPlacement(Backend.CPU, None,   # one reason for all such tasks
                               f"auto: fewer than AUTO_GPU_MIN_ROWS = {AUTO_GPU_MIN_ROWS} rows")
    env = os.environ if env is None else env
    try:
        device = choose_device(env, task_resources() if resources is None else resources)
    except DeviceSelectionError as e:   # a bad GPU address must not fail the task
        return _cpu_fallback(requested, str(e))
    if device is None and env.get(CUDA_VISIBLE_DEVICES) is not None:
        return _cpu_fallback(requested, f"{CUDA_VISIBLE_DEVICES}="
                                        f"{env[CUDA_VISIBLE_DEVICES]!r} hides every device")
    from engine.batched.cuda import usable_device

    ok, why = usable_device(device)
    if not ok:
        return _cpu_fallback(requested, why)
    return KernelPlacement(Backend.CUDA, 0 if device is None else device, why)


_REPORTED: set = set()   # (requested, reason) already logged by this process


def _cpu_fallback(requested: Backend, reason: str) -> KernelPlacement:
    """The CPU placement, logged the first time this process sees ``reason``."""
    if (requested, reason) not in _REPORTED:
        _REPORTED.add((requested, reason))
        log.log(logging.WARNING if requested is Backend.CUDA else logging.INFO,
                "backend %s: no usable GPU for this task, kernels run on the CPU (process %d): "
                "%s", requested.value, os.getpid(), reason)
    return KernelPlacement(Backend.CPU, None, reason)


def _addresses(resource) -> list[str]:
    if resource is None:
        return []
    addrs = getattr(resource, "addresses", resource)
    if isinstance(addrs, str):
        addrs = [addrs]
    return [str(a).strip() for a in addrs]


def _visible(value: str) -> list[str]:
    """The entries CUDA honours: up to the first empty or invalid (negative) one."""
    out = []
    for tok in value.split(","):
        tok = tok.strip()
        if not tok or tok.startswith("-"):
            break
        out.append(tok)
    return out
