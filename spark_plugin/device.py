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
"""

from __future__ import annotations

import functools
import os
from typing import Any, Mapping

from .errors import DeviceSelectionError

__all__ = ["GPU_RESOURCE", "CUDA_VISIBLE_DEVICES", "choose_device", "task_device",
           "task_resources", "gpu_usable"]

#: Name of Spark's GPU resource (``spark.executor.resource.gpu.*``, ``TaskContext.resources()``).
GPU_RESOURCE = "gpu"
#: The CUDA runtime's device-visibility variable.
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


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
