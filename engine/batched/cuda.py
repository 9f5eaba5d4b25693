"""The ``cuda`` backend: CuPy arrays resident on a GPU, driven by the CUDA kernels of ``gpu_kernels``.

:class:`CudaKernels` binds the backend interface (:class:`~engine.batched.kernels.KernelSet`) to CuPy
and to the ``*_cuda`` kernels that sit beside each CPU twin in ``gpu_kernels``;
:class:`~engine.batched.tracker.BatchedTracker` runs on it unchanged. The count table, ``F`` and
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

from engine.errors import BackendError
from engine.batched.kernels import KernelSet

__all__ = ["CudaKernels", "PinnedPool", "usable_device", "device_report", "PINNED_THRESHOLD"]

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
            return False, ("Numba's CUDA target finds no NVVM (install the [cuda] extra: "
                           "numba-cuda[cu12], or [cuda13] for CUDA 13)")
    except Exception as e:
        return False, f"Numba's CUDA target is not usable: {type(e).__name__}: {e}"
    try:  # compile and run one tiny kernel: a broken toolchain is named here, not mid-batch
        with cupy.cuda.Device(d):
            _probe_kernel(cupy)
    except Exception as e:
        from importlib.metadata import version
        versions = []
        for dist in ("numpy", "numba", "numba-cuda"):
            try:
                versions.append(f"{dist} {version(dist)}")
            except Exception:
                pass
        return False, (f"Numba's CUDA target cannot compile and run a kernel here "
                       f"({type(e).__name__}: {e}; {', '.join(versions)})")
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    gib = props["totalGlobalMem"] / 2**30
    return True, (f"device {d} of {n} visible{shown}: {name}, compute capability "
                  f"{props['major']}.{props['minor']}, {gib:.0f} GiB")


def _probe_kernel(cupy) -> None:
    """Compile and run a one-line Numba kernel on CuPy memory; raises what Numba raises."""
    from gpu_kernels import _cuda
    cuda = _cuda.cuda()

    @cuda.jit
    def add_one(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] += 1

    a = cupy.zeros(4, cupy.int64)
    add_one[1, 4](a)
    if int(a.sum()) != 4:
        raise RuntimeError(f"a kernel adding 1 to 4 zeros gave {a.get().tolist()}")


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
    """Route CuPy's allocations through a *pooled* allocator; returns which. Process-wide, as
    allocators are.

    With RMM importable, CuPy allocates through RMM (``rmm_cupy_allocator``), so that the
    engine and the RAPIDS Accelerator for Spark share one pool on one GPU; when the current
    RMM resource is RMM's default, non-pooled one (``CudaMemoryResource`` or
    ``ManagedMemoryResource``: a ``cudaMalloc`` per allocation), it is wrapped in a
    ``PoolMemoryResource`` first, and a pool someone else set up (Spark's) is kept. Without
    RMM, CuPy's own memory pool."""
    import cupy
    try:
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
        return "cupy memory pool"
    mr = rmm.mr.get_current_device_resource()
    plain = tuple(getattr(rmm.mr, n) for n in ("CudaMemoryResource", "ManagedMemoryResource")
                  if hasattr(rmm.mr, n))
    if isinstance(mr, plain):
        mr = rmm.mr.PoolMemoryResource(mr)
        rmm.mr.set_current_device_resource(mr)
        how = f"rmm PoolMemoryResource over {type(mr.upstream_mr).__name__}, set here"
    else:
        how = f"rmm {type(mr).__name__}, as configured"
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    return how


class _Done:
    """A copy event that is already complete (the simulator copies synchronously)."""

    done = True


_DONE = _Done()


class PinnedPool:
    """Reusable page-locked host buffers for host-to-device copies.

    A buffer is taken for one staging (:meth:`take`) and handed back with the event
    recorded after its copies (:meth:`release`); it is taken again only once that event is
    done, so a copy in flight never sees its source overwritten. A request no idle buffer
    can hold allocates a new one with the next power of two bytes (at least ``min_bytes``):
    buffers grow by doubling, and idle ones the new buffer outgrows are dropped, so a
    steady stream of batches settles on one or two buffers and allocates nothing.

    Parameters
    ----------
    allocate : callable(nbytes) -> uint8[nbytes]
        Pinned memory (``cupyx.empty_pinned``; NumPy under the simulator).
    min_bytes : int

    Attributes
    ----------
    allocations : int
        Buffers allocated so far.

    >>> pool = PinnedPool(lambda n: np.empty(n, np.uint8), min_bytes=64)
    >>> a = pool.take(100); pool.release(a, _DONE); b = pool.take(80)
    >>> b is a, a.buffer.nbytes, pool.allocations
    (True, 128, 1)
    """

    class Entry:
        __slots__ = ("buffer", "event", "busy")

        def __init__(self, buffer):
            self.buffer, self.event, self.busy = buffer, None, False

    def __init__(self, allocate, *, min_bytes: int = 1 << 16):
        self._allocate = allocate
        self.min_bytes = int(min_bytes)
        self.entries: list[PinnedPool.Entry] = []
        self.allocations = 0

    def _idle(self, e) -> bool:
        return not e.busy and (e.event is None or e.event.done)

    def take(self, nbytes: int) -> "PinnedPool.Entry":
        """An idle buffer of at least ``nbytes`` bytes (the smallest), or a new one."""
        fit = [e for e in self.entries if self._idle(e) and e.buffer.nbytes >= nbytes]
        if fit:
            entry = min(fit, key=lambda e: e.buffer.nbytes)
        else:
            cap = max(self.min_bytes, 1 << max(int(nbytes) - 1, 0).bit_length())
            self.entries = [e for e in self.entries
                            if not (self._idle(e) and e.buffer.nbytes < cap)]
            entry = PinnedPool.Entry(self._allocate(cap))
            self.allocations += 1
            self.entries.append(entry)
        entry.busy, entry.event = True, None
        return entry

    def release(self, entry: "PinnedPool.Entry", event) -> None:
        """Hand ``entry`` back; it is reused once ``event.done``."""
        entry.busy, entry.event = False, event


def _fill(a: np.ndarray, pin: np.ndarray, lo: int, hi: int) -> None:
    """Copy rows ``lo:hi`` of ``a`` into the pinned view ``pin`` (a pool thread's job)."""
    if a.ndim == 0:
        pin[...] = a
    else:
        pin[lo:hi] = a[lo:hi]


def _intake_max_width() -> int:
    from gpu_kernels.intake import MAX_WIDTH
    return MAX_WIDTH


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
        self._psis: dict[int, types.SimpleNamespace] = {}
        #: keyword options of :func:`gpu_kernels.propagate.closure_step_cuda` (``rows``,
        #: ``threads``, ``capacity``): tests shrink them to force the overflow path. Without
        #: ``rows`` here, the rows of each thread's antichain are chosen per ``Psi`` and grow
        #: when a batch overflows them (:meth:`closure_rows`)
        self.closure_options: dict = {}
        self._coop_rows: dict[int, int] = {}
        self._pool = PinnedPool(self._pinned_buffer)
        self._stage_threads = None
        self._depths: dict[int, object] = {}
        self._guesses: dict[int, np.ndarray] = {}
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
        reusable pinned buffer of :attr:`pool` and asynchronous copies on the current stream
        (see :meth:`stage`)."""
        if self.simulated:
            return np.asarray(a)
        cupy = self.xp
        if isinstance(a, cupy.ndarray):
            return a
        a = np.asarray(a)
        if a.nbytes < self.pinned_threshold:
            return cupy.asarray(a)
        return self.stage(a)[0]

    def to_host(self, a) -> np.ndarray:
        """Device array -> NumPy array (into a pinned buffer when large); synchronises
        (counted in ``gpu_kernels._cuda.COUNTS.syncs``)."""
        if self.simulated or isinstance(a, np.ndarray):
            return np.asarray(a)
        from gpu_kernels import _cuda
        _cuda.COUNTS.syncs += 1
        if a.nbytes < self.pinned_threshold:
            return a.get()
        import cupyx
        out = cupyx.empty_pinned(a.shape, a.dtype)
        a.get(out=out)
        return out

    # -- staging through pinned buffers ----------------------------------------------------

    #: Bytes per staging chunk: the unit one pool thread fills and one copy moves.
    stage_chunk = 4 << 20
    #: Threads that fill pinned buffers (NumPy copies release the GIL).
    stage_threads = min(8, os.cpu_count() or 1)

    @property
    def pool(self) -> "PinnedPool":
        """The reusable pinned host buffers host-to-device copies go through."""
        return self._pool

    def _pinned_buffer(self, nbytes: int) -> np.ndarray:
        if self.simulated:
            return np.empty(nbytes, np.uint8)
        import cupyx
        return cupyx.empty_pinned((nbytes,), np.uint8)

    def _copy_done(self):
        """An event recorded on the current stream after the copies just issued (one that is
        done at once under the simulator, where copies are synchronous)."""
        if self.simulated:
            return _DONE
        e = self.xp.cuda.Event(block=False, disable_timing=True)
        e.record(self.xp.cuda.get_current_stream())
        return e

    def stage(self, *arrays) -> list:
        """Host arrays (any integer or float dtype, any strides) -> device arrays of the same
        dtypes and shapes, through one pinned buffer of :attr:`pool` and one device
        allocation.

        The columns are laid out one after another (8-byte aligned) in a pinned buffer and
        on the device. Each column is cut into row chunks of about :attr:`stage_chunk` bytes;
        a thread pool (:attr:`stage_threads`) fills the chunks in parallel, and the calling
        thread issues each chunk's asynchronous host-to-device copy on the current stream as
        soon as that chunk is filled, so copies overlap the filling of later chunks and the
        work already queued on the stream. An event recorded after the last copy returns the
        buffer to the pool. No synchronisation; one device allocation; ``ceil(bytes /
        stage_chunk)`` copies (the fill runs inline when there is one chunk).
        """
        from gpu_kernels import _cuda
        xp = self.xp
        offs, total = [], 0
        for a in arrays:
            offs.append(total)
            total += -(-a.nbytes // 8) * 8
        entry = self._pool.take(max(total, 8))
        dev = _cuda.alloc(xp, max(total, 8), xp.uint8)
        pins, outs, jobs = [], [], []
        for a, o in zip(arrays, offs):
            pin = entry.buffer[o:o + a.nbytes].view(a.dtype).reshape(a.shape)
            out = dev[o:o + a.nbytes].view(a.dtype).reshape(a.shape)
            pins.append(pin)
            outs.append(out)
            row = max(a.nbytes // max(len(a), 1), 1) if a.ndim else a.nbytes
            step = max(1, self.stage_chunk // row)
            for lo in range(0, len(a) if a.ndim else 1, step):
                jobs.append((a, pin, out, lo, lo + step))
        import concurrent.futures
        fills = [None] * len(jobs)
        try:
            if len(jobs) > 1:
                if self._stage_threads is None:
                    self._stage_threads = concurrent.futures.ThreadPoolExecutor(
                        self.stage_threads, thread_name_prefix="tfront-stage")
                fills = [self._stage_threads.submit(_fill, a, pin, lo, hi)
                         for a, pin, _, lo, hi in jobs]
            for (a, pin, out, lo, hi), f in zip(jobs, fills):
                if f is None:
                    _fill(a, pin, lo, hi)
                else:
                    f.result()
                if a.ndim == 0:
                    out[...] = pin
                elif self.simulated:
                    out[lo:hi] = pin[lo:hi]
                else:
                    out[lo:hi].set(pin[lo:hi], stream=xp.cuda.get_current_stream())
        finally:  # no fill may still write into the buffer once it is back in the pool
            concurrent.futures.wait([f for f in fills if f is not None])
            self._pool.release(entry, self._copy_done())
        return outs

    # -- batch intake on the device --------------------------------------------------------

    def intake(self, graph, depth, loc, ts, diff, deferred=None):
        """Validate and consolidate a batch on the device
        (:func:`gpu_kernels.intake.intake_cuda`); same results, exceptions and messages as
        the host path (:meth:`KernelSet.intake`), nothing changed on error.

        Integer NumPy columns (``loc`` 1-d, ``ts`` 2-d, ``diff`` 1-d, equal lengths, any
        integer dtype but ``uint64``, ``m + K <= 59``) travel as they are, through
        :meth:`stage`; CuPy columns are used in place. Anything else (lists, ragged rows,
        object or float dtypes, ``uint64``) takes the host path, ``batch_arrays``. On the
        device one kernel validates, takes the maxima and packs; when a row is invalid the
        host re-runs ``batch_arrays`` on the rows up to the first offending one (the error
        ``batch_arrays`` raises on the whole batch is the one of the first failing rule, at
        its first row), which raises exactly today's exception.

        Per valid batch in the steady state (the packing guessed from the previous batch
        holds): 4 launches, 3 CuPy primitives, **1 sync**, 5 allocations (staging buffer,
        statistics, keys, workspace, output); the first batch, or one whose maxima outgrow
        the guess, takes one more launch and sync. See ``docs/performance-model.md``.
        """
        from gpu_kernels import intake as gi
        from gpu_kernels.consolidate import SumOverflow, overflow_on_host
        from engine.batched.kernels import count_overflow
        m, W = graph.m, graph.m + graph.max_depth
        cols = self._device_columns(loc, ts, diff, W)
        if cols is None:
            return super().intake(graph, depth, loc, ts, diff)
        n = len(cols[0])
        guess = self._guesses.get(W)
        with self._scope():
            if any(isinstance(c, np.ndarray) for c in cols):
                d_loc, d_ts, d_diff = self.stage(*cols)
            else:
                d_loc, d_ts, d_diff = cols
            try:
                r = gi.intake_cuda(d_loc, d_ts, d_diff, self._device_depth(depth), m,
                                   graph.num_locations, W, guess=guess,
                                   defer=deferred is not None and guess is not None)
            except SumOverflow as e:
                raise count_overflow(graph, e) from None
        if r.pending is not None:  # judged when the batch's first transfer brings it back
            S = gi.stats_size(W)

            def check(words):
                verdict = gi.deferred_verdict(words, n, r.spec)
                if verdict[0] == "bad":
                    self._raise_first_bad(graph, depth, cols, verdict[1])
                if verdict[0] == "redo":
                    self._guesses.pop(W, None)
                    from engine.batched.kernels import RedoBatch
                    raise RedoBatch(f"maxima {verdict[1].tolist()} outgrew the packing guess")
                if verdict[0] == "overflow":
                    with self._scope():
                        raise count_overflow(graph, overflow_on_host(*cols, W))
                nxt = gi.speculative_widths(verdict[1], graph.num_locations, n)
                if nxt is not None:
                    self._guesses[W] = nxt

            deferred.add(r.pending, check)
            deferred.batch_count = r.pending[S - 1:S]
            return r.loc, r.ts, r.diff
        if not r.valid:
            self._raise_first_bad(graph, depth, cols, r.bad)
        guess = gi.speculative_widths(r.maxima, graph.num_locations, n)
        if guess is not None:
            self._guesses[W] = guess
        return r.loc, r.ts, r.diff

    def _device_columns(self, loc, ts, diff, W):
        """``(loc, ts, diff)`` if the device intake takes them as they are, else None."""
        xp = self.xp
        kinds = (np.ndarray,) if self.simulated else (np.ndarray, xp.ndarray)
        cols = (loc, ts, diff)
        if not all(isinstance(c, kinds) for c in cols):
            return None
        if [c.ndim for c in cols] != [1, 2, 1] or not len(loc):
            return None
        if not len(ts) == len(diff) == len(loc) or W > _intake_max_width():
            return None
        for c in cols:
            if c.dtype.kind not in "iu" or (c.dtype.kind == "u" and c.dtype.itemsize == 8):
                return None
        if not self.simulated and len({type(c) for c in cols}) > 1:  # mixed host/device
            cols = tuple(xp.asarray(c) for c in cols)
        return cols

    def _device_depth(self, depth):
        """``depth`` (``int64[L]``) on the device, copied once per array."""
        hit = self._depths.get(id(depth))
        if hit is not None and hit[0] is depth:
            return hit[1]
        host = np.ascontiguousarray(depth, dtype=np.int64)
        dev = host if self.simulated else self.xp.asarray(host)
        self._depths[id(depth)] = (depth, dev)
        return dev

    def _raise_first_bad(self, graph, depth, cols, bad):
        """Raise the exception ``batch_arrays`` raises for this batch: that of the first
        rule in its order that some row breaks, at that rule's first row ``r``. Rows after
        ``r`` cannot change it, so only rows ``0..r`` are validated again on the host."""
        from gpu_kernels.intake import KINDS
        from engine.batched.batch_arrays import batch_arrays
        host = [c if isinstance(c, np.ndarray) else self.to_host(c) for c in cols]
        n = len(host[0])
        r = next(int(bad[k]) for k in range(KINDS) if bad[k] < n)
        batch_arrays(graph, depth, *(c[:r + 1] for c in host))
        batch_arrays(graph, depth, *host)
        raise BackendError(f"the device intake flagged row {r} (first bad rows per rule: "
                           f"{[int(b) for b in bad]}), but host validation accepts the batch")

    # -- device copies of per-Psi arrays ---------------------------------------------------

    def _psi(self, psi):
        """``Psi`` target-major on the device (:func:`gpu_kernels.propagate.target_major`: the
        order the block-per-target gather reads it in); built and copied once per ``Psi``."""
        if getattr(psi, "device", None) is not None:  # built on the device, target-major
            return psi.device
        hit = self._psis.get(id(psi))
        if hit is not None:
            return hit
        from gpu_kernels.propagate import target_major
        from engine.batched.psi import PsiLayout
        sums = psi.sums.reshape(-1, psi.sums.shape[-1])
        i64, i32 = np.zeros(1, np.int64), np.zeros(1, np.int32)
        if psi.layout is PsiLayout.DENSE:
            tm = target_major(psi.L, psi.max_antichain, psi.count, i64, i32, i64, i64, sums)
        else:
            tm = target_major(psi.L, 0, np.zeros((1, 1), np.uint8), psi.t_ptr, psi.t_src,
                              psi.t_pair, psi.sum_ptr, sums)
        p = types.SimpleNamespace(**dict(zip(("tm_ptr", "tm_src", "tm_sum"),
                                             (self._device_copy(a) for a in tm))))
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
        from gpu_kernels.intake import consolidate_cuda
        with self._scope():
            return consolidate_cuda(loc, ts, diff)

    def merge_counts(self, t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip, deferred=None):
        """:func:`gpu_kernels.consolidate.merge_counts_cuda`; with ``deferred``, the
        violation and the new table's size stay on the device (the table arrays then hold
        spare rows past ``deferred.table_len``)."""
        from gpu_kernels.consolidate import merge_counts_cuda
        with self._scope():
            if deferred is None:
                return merge_counts_cuda(t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip)
            from gpu_kernels import _cuda
            _cuda.op(k=deferred.joins())
            carry = deferred.words()  # the intake's words: the merge's status carries them
            o_loc, o_ts, o_cnt, status = merge_counts_cuda(
                t_loc, t_ts, t_cnt, b_loc, b_ts, b_diff, strict, flip,
                b_count=deferred.batch_count, defer=True, carry=carry)
        n = int(b_ts.shape[0])
        P = 0 if carry is None else int(carry.size)

        def check(words):
            if int(words[2]) < n:
                from engine.batched.kernels import OverflowViolation
                raise OverflowViolation(int(words[2]))
            if strict and int(words[0]) < n:
                from engine.batched.kernels import StrictViolation
                raise StrictViolation(int(words[0]))
            deferred.results["table_len"] = int(words[1])

        deferred.absorb(status, check)
        deferred.table_len = status[P + 1:P + 2]
        return o_loc, o_ts, o_cnt, -1

    def deferred(self):
        """A :class:`~engine.batched.kernels.Deferred` on this device: the intake's and the merge's
        checks ride on the batch's first transfer instead of two synchronisations."""
        from engine.batched.kernels import Deferred
        return Deferred(self.xp)

    def flags(self, n: int):
        from gpu_kernels import _cuda
        return _cuda.alloc(self.xp, n, self.xp.bool_, 0)

    def frontier_update(self, t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m: int, deferred=None):
        """:func:`gpu_kernels.pareto.frontier_update_cuda`: every location at once, no sync."""
        from gpu_kernels.pareto import frontier_update_cuda
        t_len = deferred.table_len if deferred is not None else None
        with self._scope():
            return frontier_update_cuda(t_loc, t_ts, t_cnt, flip, F_ptr, F_ts, m, t_len=t_len)

    def frontiers_to_host(self, F_ptr, F_ts, mode, deferred=None):
        """``F_ptr``, the modes and the batch's deferred words in one transfer (their checks
        settled), then the used rows of ``F_ts``: 2 syncs, ``9 L + 8 W |F|`` bytes."""
        from gpu_kernels import _cuda
        xp = self.xp
        L = F_ptr.shape[0] - 1
        with self._scope():
            _cuda.op(k=deferred.joins() if deferred is not None else 0)
            words = deferred.words() if deferred is not None else None
            parts = [F_ptr.view(xp.uint8), mode.view(xp.uint8)]
            if words is not None:
                parts.insert(0, words.view(xp.uint8))
            host = _cuda.read(_cuda.op(xp.concatenate(parts)))
            if words is not None:
                k = 8 * words.size
                deferred.settle(np.ascontiguousarray(host[:k]).view(np.int64))
                host = host[k:]
            h_ptr = np.ascontiguousarray(host[:8 * (L + 1)]).view(np.int64)
            h_mode = np.ascontiguousarray(host[8 * (L + 1):])
            h_ts = _cuda.read(F_ts[:int(h_ptr[L])])
        return h_ptr, np.ascontiguousarray(h_ts), h_mode

    def closure_step(self, ga, psi, mode, F_ptr, F_ts, I_ptr, I_ts, deferred=None, old_F=None):
        """:func:`gpu_kernels.propagate.closure_step_cuda` over target-major ``Psi``, the
        batch's deferred words read (and their checks settled) with its first transfer; the
        changes come back in one copy and are split on the host. ``old_F`` (``F`` before the
        batch and its withdrawn marks, ``(F_ptr, F_ts, gone)``) is required: it tells which
        targets can be updated incrementally."""
        from gpu_kernels import _cuda
        from gpu_kernels.propagate import closure_step_cuda
        if old_F is None:
            raise BackendError("the cuda backend's closure step needs old_F, the frontiers "
                               "(F_ptr, F_ts) from before the batch and their withdrawn "
                               "marks (gone)")
        with self._scope():
            p = self._psi(psi)
            _cuda.op(k=deferred.joins() if deferred is not None else 0)
            words = deferred.words() if deferred is not None else None
            options = dict(self.closure_options)
            adaptive = "rows" not in options
            if adaptive:
                options["rows"] = self.closure_rows(psi)
            overflowed = _cuda.COUNTS.targets_overflowed
            new_ptr, new_ts, ch = closure_step_cuda(
                ga.m, p.tm_ptr, p.tm_src, p.tm_sum, mode, F_ptr, F_ts, I_ptr, I_ts,
                old_ptr=old_F[0], old_ts=old_F[1], gone=old_F[2],
                pending=words, settle=deferred.settle if words is not None else None,
                **options)
            if adaptive and _cuda.COUNTS.targets_overflowed > overflowed:
                self._grow_closure_rows(psi, int(F_ts.shape[1]), options.get("threads"))
        changes = (ch[:, 0].astype(np.int32), np.ascontiguousarray(ch[:, 2:]),
                   np.ascontiguousarray(ch[:, 1]))
        return new_ptr, new_ts, changes

    def closure_rows(self, psi) -> int:
        """Rows of each thread's own antichain in the closure gather over ``psi``
        (``coop_gather``'s ``C``). A target whose candidates outgrow them in some thread goes
        to the serial overflow path, a thread per target over all its candidates: measured
        on an H200, 408 targets overflowing 8 rows at N = 1000 made a churn batch take 114 ms
        instead of a few. So the rows start at the smallest power of two above ``Psi``'s
        largest antichain (at least :data:`~gpu_kernels.propagate.COOP_ROWS`), and each batch
        that overflows doubles them for the next, up to what shared memory holds
        (:func:`~gpu_kernels.propagate.coop_shape` caps them there). One kernel is compiled
        per size."""
        from gpu_kernels.propagate import COOP_ROWS
        hit = self._coop_rows.get(id(psi))
        if hit is None:
            rows = COOP_ROWS
            while rows <= int(psi.max_antichain):
                rows *= 2
            hit = self._coop_rows[id(psi)] = rows
            weakref.finalize(psi, self._coop_rows.pop, id(psi), None)
        return hit

    def _grow_closure_rows(self, psi, W: int, threads) -> None:
        from gpu_kernels.propagate import coop_shape, coop_threads
        T = int(threads) if threads is not None else coop_threads()
        cap = coop_shape(W, T, 1 << 20)[1]
        self._coop_rows[id(psi)] = max(1, min(2 * self.closure_rows(psi), cap))

    def frontier_changes(self, locs, old_ptr, old_ts, new_ptr, new_ts, W):
        from gpu_kernels.propagate import frontier_changes_cuda
        with self._scope():
            return frontier_changes_cuda(locs, old_ptr, old_ts, new_ptr, new_ts, W)

    # -- accounting -------------------------------------------------------------------------

    def counts_snapshot(self):
        from gpu_kernels import _cuda
        return _cuda.COUNTS.snapshot()

    def counts_since(self, snap) -> dict[str, int]:
        """The device work since ``snap`` and, for the closure strategy, the targets the
        gather recomputed in full and incrementally (``targets_full``,
        ``targets_incremental``)."""
        from gpu_kernels import _cuda
        return {**_cuda.COUNTS.since(snap), **_cuda.COUNTS.gather_since(snap)}
