"""The ``cuda`` backend: CuPy arrays resident on a GPU, driven by the CUDA kernels of ``gpu_kernels``.

:class:`CudaKernels` binds the backend interface (:class:`~engine.kernels.KernelSet`) to CuPy
and to the ``*_cuda`` kernels that sit beside each CPU twin in ``gpu_kernels``;
:class:`~engine.batched.BatchedTracker` runs on it unchanged. The count table, ``F`` and
``I`` stay on the device between batches; a batch's columns go in (through pinned host
buffers when large) and only its frontier changes come out.

* **Device.** An explicit ``device`` index (among the visible devices) or the current CuPy
  device; ``CUDA_VISIBLE_DEVICES`` decides which devices are visible, as for any CUDA
  program. Numba's kernels run on the same device and on CuPy's current stream, so running
  the tracker under ``with cupy.cuda.Stream(non_blocking=True):`` puts all of its work
  (CuPy primitives and Numba kernels alike) on that stream, to overlap with other GPU work.
* **Memory.** CuPy allocations go through RMM (``rmm_cupy_allocator``) when RMM is
  importable -- the allocator the RAPIDS Accelerator for Spark configures, so both share one
  pool on one GPU -- and through CuPy's own memory pool otherwise. Numba kernels allocate
  nothing.
* **Simulated.** ``CudaKernels(simulated=True)`` runs the same orchestration with NumPy
  standing in for CuPy and the kernels on Numba's CUDA simulator, so that every line of the
  backend runs in the normal test run. The process must have set ``NUMBA_ENABLE_CUDASIM=1``
  before importing Numba (``tests/test_cuda_sim.py`` does it in a subprocess). Slow (about
  a millisecond per simulated thread): for small inputs only.

:func:`usable_device` says, without raising, whether the real backend can run here and why.
Importing this module loads neither CuPy nor Numba's CUDA target; constructing a
:class:`CudaKernels` does.
"""

from __future__ import annotations

import contextlib
import functools
import os
import types
import weakref

import numpy as np

from .errors import BackendError
from .kernels import KernelSet

__all__ = ["CudaKernels", "usable_device", "device_report", "PINNED_THRESHOLD"]

#: Host arrays of at least this many bytes travel through pinned (page-locked) buffers.
PINNED_THRESHOLD = 1 << 20


def _simulator_enabled() -> bool:
    from numba.core import config
    return bool(config.ENABLE_CUDASIM)


@functools.cache
def usable_device(device: int | None = None) -> tuple[bool, str]:
    """Whether the real ``cuda`` backend can run here, and why (never raises).

    Checks, in order: Numba is not simulating CUDA; CuPy imports; the CUDA runtime sees at
    least one device (``CUDA_VISIBLE_DEVICES`` applies) and ``device`` is one of them; a
    small CuPy computation runs on it; Numba's CUDA target finds the driver and NVVM. The
    result is cached per ``device``.

    Returns
    -------
    (bool, str)
        ``(True, "device 0 (NVIDIA H100 ...) ...")`` or ``(False, reason)``.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    try:
        if _simulator_enabled():
            return False, ("NUMBA_ENABLE_CUDASIM=1: Numba simulates CUDA in this process, "
                           "and the simulator is no device")
    except ImportError:  # pragma: no cover - numba is a dependency
        return False, "Numba is not installed"
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA installation raising on import
        return False, f"CuPy is not importable ({type(e).__name__}: {e}); install the [cuda] extra"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # cupy.cuda.runtime.CUDARuntimeError: no driver, no device
        return False, f"the CUDA runtime reports no usable device{shown}: {e}"
    if n == 0:
        return False, f"no CUDA device is visible{shown}"
    d = 0 if device is None else device
    if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < n:
        return False, f"device {device!r} requested, but the visible devices are 0..{n - 1}{shown}"
    try:
        with cupy.cuda.Device(d):
            props = cupy.cuda.runtime.getDeviceProperties(d)
            int((cupy.arange(4, dtype=cupy.int64) + 1).sum())
    except Exception as e:
        return False, f"device {d} does not run CuPy code: {type(e).__name__}: {e}"
    try:
        from gpu_kernels._cuda import restore_numpy_aliases
        restore_numpy_aliases()  # numba-cuda 0.30 on NumPy 2.5: see gpu_kernels._cuda
        from numba import cuda
        if not cuda.is_available():
            return False, "Numba's CUDA target cannot reach the driver (numba-cuda installed?)"
        from numba.cuda.cudadrv import nvvm
        if not nvvm.is_available():
            return False, "Numba's CUDA target finds no NVVM (install numba-cuda[cu12] or cuda-nvcc)"
    except Exception as e:
        return False, f"Numba's CUDA target is not usable: {type(e).__name__}: {e}"
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    gib = props["totalGlobalMem"] / 2**30
    return True, (f"device {d} of {n} visible{shown}: {name}, compute capability "
                  f"{props['major']}.{props['minor']}, {gib:.0f} GiB")


def device_report() -> list[str]:
    """One line per visible CUDA device (name, compute capability, memory), or one line
    saying why there is none. For ``tfront info``; never raises."""
    try:
        import cupy
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return [f"none ({type(e).__name__}: {e})"]
    lines = []
    for d in range(n):
        try:
            p = cupy.cuda.runtime.getDeviceProperties(d)
            name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
            lines.append(f"{d}: {name}, compute capability {p['major']}.{p['minor']}, "
                         f"{p['totalGlobalMem'] / 2**30:.1f} GiB")
        except Exception as e:
            lines.append(f"{d}: unreadable ({type(e).__name__}: {e})")
    return lines or ["none (no CUDA device visible)"]


def _use_memory_pool() -> str:
    """Route CuPy's allocations through RMM when it is importable, else CuPy's pool; returns
    which. Process-wide, as allocators are."""
    import cupy
    try:
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        try:
            from rmm import rmm_cupy_allocator  # RMM before 23.x
        except ImportError:
            cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
            return "cupy memory pool"
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    return "rmm (rmm_cupy_allocator)"


class CudaKernels(KernelSet):
    """The ``cuda`` backend: CuPy arrays and the CUDA kernels of ``gpu_kernels``.

    Parameters
    ----------
    device : int, optional
        Device index among the visible ones; default the current CuPy device.
    simulated : bool
        NumPy arrays and Numba's CUDA simulator instead of a GPU (tests only).
    pinned_threshold : int
        Host arrays of at least this many bytes are staged through pinned buffers.

    Raises
    ------
    BackendError
        If no device is usable (the message says why), or ``simulated`` without
        ``NUMBA_ENABLE_CUDASIM=1`` in this process.

    Attributes
    ----------
    device : int or None
    allocator : str
        ``"rmm (...)"``, ``"cupy memory pool"`` or ``"numpy (simulated)"``.
    """

    name = "cuda"
    on_device = True

    def __init__(self, device: int | None = None, *, simulated: bool = False,
                 pinned_threshold: int = PINNED_THRESHOLD):
        self.simulated = bool(simulated)
        self.pinned_threshold = int(pinned_threshold)
        self._graphs: dict[int, types.SimpleNamespace] = {}
        self._psis: dict[int, types.SimpleNamespace] = {}
        self._staging: list = []
        if self.simulated:
            if not _simulator_enabled():
                raise BackendError(
                    "the simulated cuda backend needs Numba's CUDA simulator: set "
                    "NUMBA_ENABLE_CUDASIM=1 before numba is imported (it is not set in this "
                    "process)")
            self.xp = np
            self.device = None
            self.allocator = "numpy (simulated)"
            return
        ok, why = usable_device(device)
        if not ok:
            raise BackendError(f"the cuda backend cannot run here: {why}")
        import cupy
        from gpu_kernels import _cuda
        self.xp = cupy
        self.device = int(device) if device is not None else int(cupy.cuda.runtime.getDevice())
        cupy.cuda.Device(self.device).use()
        _cuda.cuda().select_device(self.device)  # Numba's kernels on the same device
        self.allocator = _use_memory_pool()

    def __repr__(self) -> str:
        where = "simulated" if self.simulated else f"device {self.device}"
        return f"CudaKernels({where}, allocator={self.allocator!r})"

    # -- transfers -------------------------------------------------------------------------

    def asarray(self, a):
        """Host array -> device array; at least ``pinned_threshold`` bytes go through a
        pinned staging buffer and an asynchronous copy on the current stream."""
        if self.simulated:
            return np.asarray(a)
        cupy = self.xp
        if isinstance(a, cupy.ndarray):
            return a
        a = np.ascontiguousarray(a)
        if a.nbytes < self.pinned_threshold:
            return cupy.asarray(a)
        import cupyx
        # a staging buffer may only be reused once its copy is done
        self._staging = [(e, b) for e, b in self._staging if not e.done]
        staged = cupyx.empty_pinned(a.shape, a.dtype)
        staged[...] = a
        out = cupy.empty(a.shape, a.dtype)
        out.set(staged, stream=cupy.cuda.get_current_stream())
        done = cupy.cuda.Event()
        done.record()
        self._staging.append((done, staged))
        return out

    def to_host(self, a) -> np.ndarray:
        """Device array -> NumPy array (into a pinned buffer when large); synchronises."""
        if self.simulated or isinstance(a, np.ndarray):
            return np.asarray(a)
        if a.nbytes < self.pinned_threshold:
            return a.get()
        import cupyx
        out = cupyx.empty_pinned(a.shape, a.dtype)
        a.get(out=out)
        return out

    # -- device copies of per-graph arrays -------------------------------------------------

    def _graph(self, ga):
        """The graph's arrays on the device, and the level structure of the edge-wise
        kernels; built once per :class:`~engine.graph_arrays.GraphArrays`."""
        hit = self._graphs.get(id(ga))
        if hit is not None:
            return hit
        from gpu_kernels.propagate import edgewise_levels
        dev = self._device_copy
        levels = edgewise_levels(ga.order, ga.scc, ga.scc_ptr, ga.in_ptr, ga.in_src)
        g = types.SimpleNamespace(
            m=ga.m, in_ptr=dev(ga.in_ptr), in_src=dev(ga.in_src), in_sum=dev(ga.in_sum),
            out_ptr=dev(ga.out_ptr), out_dst=dev(ga.out_dst), order=dev(ga.order),
            rank=dev(ga.rank), scc=dev(ga.scc), scc_ptr=dev(ga.scc_ptr),
            scc_members=dev(ga.scc_members),
            levels={k: dev(v) if isinstance(v, np.ndarray) else v for k, v in levels.items()})
        self._graphs[id(ga)] = g
        weakref.finalize(ga, self._graphs.pop, id(ga), None)
        return g

    def _psi(self, psi):
        """``Psi``'s arrays on the device (the layout the gather reads); once per ``Psi``."""
        hit = self._psis.get(id(psi))
        if hit is not None:
            return hit
        from .psi import PsiLayout
        dev = self._device_copy
        i64, i32 = np.zeros(1, np.int64), np.zeros(1, np.int32)
        sums = psi.sums.reshape(-1, psi.sums.shape[-1])
        if psi.layout is PsiLayout.DENSE:
            p = types.SimpleNamespace(
                pair_ptr=dev(i64), pair_dst=dev(i32), sum_ptr=dev(i64), t_ptr=dev(i64),
                t_src=dev(i32), t_pair=dev(i64), count=dev(psi.count), sums=dev(sums),
                dense_A=psi.max_antichain)
        else:
            p = types.SimpleNamespace(
                pair_ptr=dev(psi.pair_ptr), pair_dst=dev(psi.pair_dst), sum_ptr=dev(psi.sum_ptr),
                t_ptr=dev(psi.t_ptr), t_src=dev(psi.t_src), t_pair=dev(psi.t_pair),
                count=dev(np.zeros((1, 1), np.uint8)), sums=dev(sums), dense_A=0)
        self._psis[id(psi)] = p
        weakref.finalize(psi, self._psis.pop, id(psi), None)
        return p

    def _device_copy(self, a):
        return np.ascontiguousarray(a) if self.simulated else self.xp.asarray(np.ascontiguousarray(a))

    def _scope(self):
        """The backend's device as the current one, for CuPy and for Numba, around one call:
        kernels then run on the right device from any thread. (BatchedTracker's own CuPy glue
        runs on the calling thread's current device: use the tracker from the thread that
        built it, or make the device current there with ``cupy.cuda.Device(d).use()``.)"""
        if self.simulated:
            return contextlib.nullcontext()
        from gpu_kernels import _cuda
        scope = contextlib.ExitStack()
        scope.enter_context(self.xp.cuda.Device(self.device))
        scope.enter_context(_cuda.cuda().gpus[self.device])
        return scope

    # -- the kernels ---------------------------------------------------------------------------

    def consolidate(self, loc, ts, diff):
        from gpu_kernels.consolidate import consolidate_cuda
        with self._scope():
            return consolidate_cuda(loc, ts, diff)

    def merge_counts(self, t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip):
        from gpu_kernels.consolidate import merge_counts_cuda
        with self._scope():
            return merge_counts_cuda(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip)

    def segment_frontiers(self, t_ts, t_cnt, seg_ptr, locs, m):
        from gpu_kernels.pareto import segment_frontiers_cuda
        with self._scope():
            return segment_frontiers_cuda(t_ts, t_cnt, seg_ptr, locs, m)

    def replace_segments(self, ptr, rows, locs, sel_ptr, sel_rows):
        from gpu_kernels.pareto import replace_segments_cuda
        with self._scope():
            return replace_segments_cuda(ptr, rows, locs, sel_ptr, sel_rows)

    def edgewise(self, ga, F_ptr, F_ts, I_ptr, I_ts, seeds, max_steps):
        from gpu_kernels.propagate import edgewise_cuda
        with self._scope():
            g = self._graph(ga)
            return edgewise_cuda(g.m, g.in_ptr, g.in_src, g.in_sum, g.out_ptr, g.out_dst, g.order,
                                 g.rank, g.scc, g.scc_ptr, g.scc_members, F_ptr, F_ts, I_ptr, I_ts,
                                 seeds, max_steps, levels=g.levels)

    def gather_closure(self, ga, psi, F_ptr, F_ts, I_ptr, I_ts, seeds):
        from gpu_kernels.propagate import gather_closure_cuda
        with self._scope():
            p = self._psi(psi)
            return gather_closure_cuda(ga.m, p.pair_ptr, p.pair_dst, p.sum_ptr, p.t_ptr, p.t_src,
                                       p.t_pair, p.count, p.sums, p.dense_A, F_ptr, F_ts, I_ptr,
                                       I_ts, seeds)

    def frontier_changes(self, locs, old_ptr, old_ts, new_ptr, new_ts, W):
        from gpu_kernels.propagate import frontier_changes_cuda
        with self._scope():
            return frontier_changes_cuda(locs, old_ptr, old_ts, new_ptr, new_ts, W)

