"""Splicing CSR row sets: the segmented gather every device-side update of ``F`` and ``I`` ends
with.

Per-location row sets (frontiers ``F`` and ``I``) are CSR: ``ptr int64[L+1]`` and
``rows int64[f, W]``. An update replaces some locations' segments and keeps the others, so the
new arrays are a *gather*: given the new lengths (``new_ptr``) and, for every location, where
its rows come from -- source ``which[l]`` (0 or 1) starting at row ``start[l]`` -- output row
``o`` of location ``l`` is ``src_which[l][start[l] + o - new_ptr[l]]``.

* :func:`gather_segments` -- CPU twin (NumPy, vectorised).
* :func:`gather_segments_cuda` -- the CUDA kernel: one thread per *output row*, which finds
  its location by a binary search in ``new_ptr`` (:func:`gpu_kernels._cuda.upper_bound`) and
  copies ``W`` int64. Numba ``@cuda.jit``: it shares the binary search with the other kernels
  and runs under the simulator; a CuPy ``ElementwiseKernel`` would need the search re-written
  in CUDA C.

Launch shape: ``ceil(f / 256)`` blocks of 256 threads. Bytes per output row: ``16 W``
(``8 W`` read, ``8 W`` written) plus ``O(log L)`` cached reads of ``new_ptr``; consecutive
threads read consecutive rows of one segment, so accesses coalesce. No synchronisation inside;
the caller's read of ``new_ptr[-1]`` (the output size) is one host synchronisation.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _cuda

__all__ = ["gather_segments", "gather_segments_cuda"]


def gather_segments(new_ptr, which, start, src0, src1):
    """CPU twin: ``rows int64[new_ptr[-1], W]`` gathered segment by segment (see module doc).

    >>> src0 = np.array([[0], [1], [2]]); src1 = np.array([[7], [8]])
    >>> gather_segments(np.array([0, 1, 3]), np.array([0, 1], np.uint8), np.array([2, 0]),
    ...                 src0, src1)[:, 0].tolist()
    [2, 7, 8]
    """
    new_ptr = np.asarray(new_ptr, np.int64)
    W = src0.shape[1]
    total = int(new_ptr[-1])
    out = np.empty((total, W), np.int64)
    if total == 0:
        return out
    o = np.arange(total)
    loc = np.searchsorted(new_ptr, o, side="right") - 1
    s = np.asarray(start)[loc] + (o - new_ptr[loc])
    from_1 = np.asarray(which)[loc] != 0
    out[~from_1] = src0[s[~from_1]]
    out[from_1] = src1[s[from_1]]
    return out


#: ``numba.cuda``, bound by :func:`_kernels` on first use. A module global, not a local of the
#: factory, because the simulator swaps the kernels' *global* ``cuda`` for its fake module.
cuda = None


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()
    upper_bound = _cuda.device(_cuda.upper_bound)

    @cuda.jit
    def gather_rows(new_ptr, which, start, src0, src1, out):
        o = cuda.grid(1)
        if o < out.shape[0]:
            l = upper_bound(new_ptr, o) - 1
            s = start[l] + (o - new_ptr[l])
            if which[l] == 0:
                for c in range(out.shape[1]):
                    out[o, c] = src0[s, c]
            else:
                for c in range(out.shape[1]):
                    out[o, c] = src1[s, c]

    return gather_rows


def gather_segments_cuda(new_ptr, which, start, src0, src1, *, tpb=None):
    """CUDA kernel of :func:`gather_segments` (arrays of one namespace, NumPy under the
    simulator or CuPy). Synchronises once, to read the output size."""
    xp = _cuda.namespace(new_ptr, src0)
    W = src0.shape[1]
    total = int(_cuda.read(new_ptr[-1:])[0])
    out = _cuda.alloc(xp, (total, W), xp.int64)
    _cuda.launch(_kernels(), total, new_ptr, which, start, src0, src1, out, tpb=tpb)
    return out
