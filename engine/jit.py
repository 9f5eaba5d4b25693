"""Loading the Numba kernels: from the on-disk cache, or compiled once into it.

Every CPU kernel is ``@njit(cache=True)``: the first process that calls one compiles it
(seconds per kernel) and writes it to Numba's cache (``__pycache__`` beside the source, or
``$NUMBA_CACHE_DIR``); later processes load it from there (milliseconds). Numba compiles
lazily, per kernel and argument types, so a run compiles only the kernels it calls.

:class:`CompileWatch` times a block that loads kernels and tells whether any of them had to be
compiled (announcing it once, when the first compilation starts), so that a job can report
compile time apart from the work it measures. ``python -m engine.jit`` compiles what the
``tfront wcc`` job and the cpu backend's default (edge-wise) strategy use -- ``make venv``
runs it, so the first run after install loads instead of compiling.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

__all__ = ["CompileWatch", "precompile", "warm_shortest_paths"]


class CompileWatch:
    """Context manager: times its block and counts the Numba compilations started in it.

    ``announce`` is called once, with no argument, when the first compilation starts (a
    kernel not found in the cache), e.g. to print ``compiling kernels (once) ...``. The
    compilations counted are this process's, on any thread, while the block runs.

    >>> with CompileWatch() as w:
    ...     pass
    >>> w.compiled, w.seconds >= 0
    (0, True)
    """

    def __init__(self, announce: Callable[[], None] | None = None):
        self.announce = announce
        self.compiled = 0
        self.seconds = 0.0
        self._lock = threading.Lock()
        self._listener = None

    def __enter__(self) -> "CompileWatch":
        from numba.core import event

        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                with watch._lock:
                    watch.compiled += 1
                    first = watch.compiled == 1
                if first and watch.announce is not None:
                    watch.announce()

            def on_end(self, ev):
                pass

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        from numba.core import event

        self.seconds = time.perf_counter() - self._t0
        event.unregister("numba:compile", self._listener)

    def describe(self) -> str:
        """``kernels loaded 0.21 s`` or ``kernels compiled 7.90 s (once: cached for later
        runs)``."""
        if self.compiled:
            return f"kernels compiled {self.seconds:.2f} s (once: cached for later runs)"
        return f"kernels loaded {self.seconds:.2f} s"


def precompile(wcc: bool = True) -> CompileWatch:
    """Load or compile the cpu backend's edge-wise kernels (what ``auto`` runs on the CPU,
    and the ``tfront wcc`` job's frontier service), those of the exchange protocol
    (``tfront replay --workers``) and, with ``wcc``, the Spark jobs' kernels
    (:mod:`gpu_kernels.unionfind`, :mod:`gpu_kernels.shortest_paths`). Returns the
    :class:`CompileWatch` of the work."""
    from engine.batched.tracker import warm_up

    with CompileWatch() as watch:
        warm_up(1, 1, strategies=("edgewise",))
        from engine.exchange.simulation import warm_up as exchange_warm_up
        exchange_warm_up()
        if wcc:
            import numpy as np

            from gpu_kernels.unionfind import large_star, root_links, small_star, uf_stars

            x, y = np.array([1, 0], np.int64), np.array([0, 2], np.int64)
            uf_stars(x, y)   # compact_ids: warm_shortest_paths, below
            large_star(x, y)
            small_star(x, y, np.ones(2, np.bool_))
            root_links(x, y)
            from gpu_kernels.shortest_paths import csr_by_source, relax

            for w in (np.ones(2, np.int64), np.ones(2, np.float64)):   # hops, weights
                relax(csr_by_source(x, y, w), x, w)
            warm_shortest_paths()
    return watch


def warm_shortest_paths() -> None:
    """Run the shortest-paths job's kernels once -- the driver's vertex numbering and CSR,
    the per-partition Dijkstra, hops and weights -- loading them from Numba's cache or
    compiling them there (``tfront sssp``'s first run compiled them, issue 32 item 17)."""
    import numpy as np

    from gpu_kernels.shortest_paths import (grow_csr, improve, local_csr, local_fixpoint,
                                            unit_weights, unreached)
    from gpu_kernels.unionfind import compact_ids

    x, y = np.array([0, 1], np.int64), np.array([1, 2], np.int64)
    compact_ids(x, y)   # the driver's vertex numbering ...
    rx, ry = x.copy(), y.copy()
    rx.flags.writeable = ry.flags.writeable = False
    compact_ids(rx, ry)   # ... of read-only views of the input's Arrow buffers (Numba types
    #                       those apart: compiled once more otherwise)
    for w in (None, np.ones(2, np.float64)):   # the driver's CSR: hops, weights
        indptr, t, wt = grow_csr(grow_csr(None, 2, x[:1], x[1:], None if w is None else w[:1]),
                                 3, x, y, w, at=np.array([0, 2], np.int64))
        wt = unit_weights(len(t)) if wt is None else wt
        local_fixpoint((indptr, t, t, wt), np.full(3, unreached(wt.dtype)), np.array([0]),
                       np.zeros(1, wt.dtype))
    for w in (np.ones(2, np.int64), np.ones(2, np.float64)):
        csr = local_csr(np.array([0, 1], np.int64), x, y, w)
        res = local_fixpoint(csr, np.full(2, unreached(w.dtype)), np.array([0]),
                             np.zeros(1, w.dtype))
        improve(np.array([0, 1, 2], np.int64), np.full(3, unreached(w.dtype)), res.out_v,
                res.out_d)


def main() -> int:
    print("compiling the Numba kernels into the cache (once) ...", file=sys.stderr, flush=True)
    watch = precompile()
    print(f"{watch.describe()} ({watch.compiled} compilations)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
