"""CUDA plumbing shared by the kernel modules: lazy ``numba.cuda``, device versions of the
scalar core, launch sizes, streams and the array namespace of an argument.

Nothing here imports ``numba.cuda`` or CuPy when the module is imported: the kernel modules
build their CUDA kernels inside memoized factories that call :func:`cuda` on first use, so
``import gpu_kernels.<module>`` stays light and a process can still set
``NUMBA_ENABLE_CUDASIM=1`` before Numba's CUDA target loads (the simulator is chosen once,
when ``numba`` itself is imported).

**Device functions from the scalar core.** :func:`device` turns an ``@njit`` scalar function
(``summary_rows.apply_into``, ``pareto.antichain_insert``, ...) into a CUDA device function
compiled from the *same Python source*, after replacing every ``@njit`` function it calls by
that function's device version (recursively). A CUDA kernel therefore only indexes and
bounds-checks; the logic it runs is, line for line, the logic its CPU twin runs (the
``test_cpu_gpu_compat`` pattern of numba-cuda). Rewriting the calls matters under the
simulator, where a device function is plain Python and a CPU dispatcher cannot accept the
simulator's array wrappers; on a device it keeps every call inside one NVVM module.

**Launches.** :func:`launch` runs a one-thread-per-item kernel on ``n`` items:
:data:`THREADS_PER_BLOCK` threads per block on a device; on the simulator, where every thread
is a Python thread (about 0.5 ms each) and idle threads cost as much as busy ones,
:data:`SIM_THREADS_PER_BLOCK` (1 unless a test raises it to exercise partial blocks).
Kernels go to CuPy's current stream, so that Numba kernels and CuPy primitives (sort, scan,
compaction) on the same arrays are ordered without host synchronisation.

**Counts.** A GPU design is judged by its launches, blocking host synchronisations and
device allocations, so the orchestration counts them (:data:`COUNTS`), on a device and under
the simulator alike: :func:`launch`/:func:`launch_blocks` count each Numba launch,
:func:`op` an array-library primitive (a CuPy sort, scan, compaction, reduction: at least one
kernel each), :func:`read` a blocking device-to-host read, :func:`alloc` a device
allocation. The cuda backend reports the counts of each batch beside its timings.

**NumPy 2.5 and numba-cuda 0.30.** numba-cuda 0.30 registers an overload for
``numpy.row_stack``, which NumPy 2.5 removed, and so fails while compiling the first kernel.
:func:`cuda` restores the documented alias ``numpy.row_stack = numpy.vstack`` (NumPy's own
definition of it before the removal) when it is missing, before ``numba.cuda`` loads
(:data:`NUMPY_ALIASES` says whether it did).
"""

from __future__ import annotations

import functools
import os
import types

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

__all__ = ["cuda", "simulator", "device", "launch", "launch_blocks", "blocks",
           "namespace", "to_host", "stream", "upper_bound_n", "THREADS_PER_BLOCK",
           "SIM_THREADS_PER_BLOCK", "DeviceCounts", "COUNTS", "op", "read", "alloc",
           "NUMPY_ALIASES", "restore_numpy_aliases", "KERNEL_CACHE"]

#: Numba's on-disk cache for the CUDA kernels (``@cuda.jit(cache=KERNEL_CACHE)``, in the
#: ``__pycache__`` beside each module), on with ``TFRONT_CUDA_KERNEL_CACHE=1``. Without it
#: every process compiles the kernels it launches: a first ``tfront wcc --backend cuda`` on
#: an H200 spent 89 s loading kernels and each later run about 5 s (the CPU's: 0.8-1.2 s).
#: Off by default until a device run shows the cached kernels load and run the same
#: (``perf/device_checks.sh``'s jobs step is run both ways); the simulator ignores it.
KERNEL_CACHE = os.environ.get("TFRONT_CUDA_KERNEL_CACHE", "0") == "1"

#: Threads per block of one-thread-per-item kernels on a device: 8 warps, enough to hide
#: latency with several resident blocks per SM and small enough for irregular work.
THREADS_PER_BLOCK = 256
#: The same under the simulator; tests raise it to exercise partial blocks.
SIM_THREADS_PER_BLOCK = 1


class DeviceCounts:
    """Running totals of device work issued by this process: ``launches`` (Numba kernels),
    ``ops`` (array-library primitives, each at least one kernel), ``syncs`` (blocking
    device-to-host reads) and ``allocs`` (device arrays made through :func:`alloc`); and of
    what the closure gather did with the targets a changed ``F`` reaches (:data:`GATHER`):
    ``targets_full``, recomputed from all their sources, ``targets_incremental``, updated
    from their old frontier and the changed sources only, and ``targets_overflowed``, those
    whose antichain outgrew a thread's rows and went to the serial overflow path
    (:func:`gpu_kernels.propagate.closure_step_cuda`).

    >>> c = DeviceCounts(); before = c.snapshot(); c.syncs += 2; c.targets_full += 1
    >>> c.since(before)
    {'launches': 0, 'ops': 0, 'syncs': 2, 'allocs': 0}
    >>> c.gather_since(before)
    {'targets_full': 1, 'targets_incremental': 0, 'targets_overflowed': 0}
    """

    FIELDS = ("launches", "ops", "syncs", "allocs")
    GATHER = ("targets_full", "targets_incremental", "targets_overflowed")

    def __init__(self):
        self.launches = self.ops = self.syncs = self.allocs = 0
        self.targets_full = self.targets_incremental = self.targets_overflowed = 0

    def snapshot(self) -> tuple[int, ...]:
        return tuple(getattr(self, f) for f in self.FIELDS + self.GATHER)

    def since(self, snap: tuple[int, ...]) -> dict[str, int]:
        """Device work (:data:`FIELDS`) issued since ``snap`` (a :meth:`snapshot`)."""
        return {f: getattr(self, f) - v for f, v in zip(self.FIELDS, snap)}

    def gather_since(self, snap: tuple[int, ...]) -> dict[str, int]:
        """The closure gather's targets (:data:`GATHER`) since ``snap``."""
        n = len(self.FIELDS)
        return {f: getattr(self, f) - v for f, v in zip(self.GATHER, snap[n:])}


#: The process-wide counts (device work is process-wide too: one CUDA context per device).
COUNTS = DeviceCounts()


def op(result=None, k: int = 1):
    """Count ``k`` array-library primitives (CuPy sort, scan, compaction, reduction, fancy
    indexing); returns ``result`` so a call can wrap the expression it counts."""
    COUNTS.ops += k
    return result


def read(a) -> np.ndarray:
    """A blocking device-to-host read of a (small) array, counted as one synchronisation."""
    COUNTS.syncs += 1
    return to_host(a)


def alloc(xp, shape, dtype, fill=None):
    """A device array of ``shape``/``dtype`` (uninitialised, or filled with ``fill``),
    counted as one allocation (served by the pooled allocator on a device)."""
    COUNTS.allocs += 1
    if fill is None:
        return xp.empty(shape, dtype)
    if fill == 0:
        return xp.zeros(shape, dtype)
    return xp.full(shape, fill, dtype)


#: Aliases :func:`restore_numpy_aliases` had to add to NumPy (empty when none was missing).
NUMPY_ALIASES: list[str] = []


def restore_numpy_aliases() -> list[str]:
    """Put back the NumPy names numba-cuda still registers overloads for but this NumPy no
    longer has (``row_stack``, removed in NumPy 2.5, was an alias of ``vstack``). Idempotent;
    returns the names added."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
        NUMPY_ALIASES.append("numpy.row_stack = numpy.vstack")
    return NUMPY_ALIASES


@functools.cache
def cuda():
    """The ``numba.cuda`` module, imported on first use.

    On a device this also sets two of Numba's process-wide options
    (``numba.core.config``, and numba-cuda's own config module when present):

    * ``CUDA_ARRAY_INTERFACE_SYNC = False``: Numba otherwise synchronises the stream that a
      CUDA Array Interface producer (CuPy) exports with every array argument -- a host-side
      stream synchronise per argument and per launch -- needless here, because every kernel
      is launched on CuPy's current stream (:func:`stream`), after the work that produced its
      inputs;
    * ``CUDA_LOW_OCCUPANCY_WARNINGS = False``: small launches (a handful of locations) are
      part of the design, not a mistake worth a warning each.
    """
    restore_numpy_aliases()
    from numba import cuda as _cuda
    if not simulator():
        import importlib
        for name in ("numba.core.config", "numba.cuda.core.config"):
            try:
                config = importlib.import_module(name)
            except ImportError:
                continue
            for option in ("CUDA_ARRAY_INTERFACE_SYNC", "CUDA_LOW_OCCUPANCY_WARNINGS"):
                if hasattr(config, option):
                    setattr(config, option, False)
    return _cuda


def simulator() -> bool:
    """Whether Numba runs CUDA kernels on its simulator (``NUMBA_ENABLE_CUDASIM=1`` was set
    before ``numba`` was imported)."""
    from numba.core import config
    return bool(config.ENABLE_CUDASIM)


_DEVICE: dict = {}


def device(fn):
    """The CUDA device function of the ``@njit`` function ``fn``, compiled from its Python
    source with every ``@njit`` function it calls replaced by that function's device version.
    Memoized."""
    hit = _DEVICE.get(fn)
    if hit is not None:
        return hit
    py = getattr(fn, "py_func", fn)
    env = dict(py.__globals__)
    for name in py.__code__.co_names:
        g = py.__globals__.get(name)
        if isinstance(g, Dispatcher):
            env[name] = device(g)
    clone = types.FunctionType(py.__code__, env, py.__name__, py.__defaults__, py.__closure__)
    clone.__qualname__, clone.__module__, clone.__doc__ = py.__qualname__, py.__module__, py.__doc__
    out = cuda().jit(device=True)(clone)
    _DEVICE[fn] = out
    return out


def blocks(n: int, threads: int) -> int:
    """Blocks of ``threads`` threads that cover ``n`` items (at least 1)."""
    return max(1, -(-int(n) // int(threads)))


def _threads(tpb: int | None) -> int:
    if tpb is not None:
        return int(tpb)
    return SIM_THREADS_PER_BLOCK if simulator() else THREADS_PER_BLOCK


def launch(kernel, n: int, *args, tpb: int | None = None) -> None:
    """Run ``kernel`` with one thread per item ``0 <= i < n`` (``cuda.grid(1)``; the kernel
    bounds-checks). No launch for ``n == 0``. Asynchronous on a device."""
    n = int(n)
    if n <= 0:
        return
    t = _threads(tpb)
    COUNTS.launches += 1
    kernel[blocks(n, t), t, stream()](*args)


def launch_blocks(kernel, n_blocks: int, threads: int, *args) -> None:
    """Run ``kernel`` on ``n_blocks`` blocks of ``threads`` threads (cooperative kernels)."""
    if int(n_blocks) <= 0:
        return
    COUNTS.launches += 1
    kernel[int(n_blocks), int(threads), stream()](*args)


_STREAMS: dict = {}


def stream():
    """The Numba stream for CuPy's current stream (0, the default stream, on the simulator
    or when CuPy uses the legacy default stream)."""
    if simulator():
        return 0
    import cupy
    ptr = cupy.cuda.get_current_stream().ptr
    if not ptr:
        return 0
    s = _STREAMS.get(ptr)
    if s is None:
        s = _STREAMS[ptr] = cuda().external_stream(ptr)
    return s


def namespace(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy`` (CuPy is not imported to
    find out: the type's module says it)."""
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy
            return cupy
    return np


def to_host(a) -> np.ndarray:
    """A NumPy copy (or view) of a NumPy or CuPy array; synchronises on a device."""
    get = getattr(a, "get", None)
    return get() if get is not None and not isinstance(a, np.ndarray) else np.asarray(a)


@njit(cache=True, inline="always")
def upper_bound_n(a, n, x):
    """Number of entries of the ascending ``a[:n]`` that are ``<= x`` (binary search)."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo
