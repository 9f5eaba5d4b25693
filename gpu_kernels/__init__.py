"""CUDA kernels for the batched engine, each with a CPU twin.

Kernels take arrays in and give arrays out; one concern per module, each module's docstring
stating its inputs, outputs and cost:

* ``intake`` -- batch validation inside the packing kernel (device intake);
* ``consolidate`` -- delta consolidation (sort + segmented reduce) and the merge into the
  count table;
* ``pareto`` -- per-location Pareto minima (one-outer-coordinate fast path, general path),
  splicing new segments into a CSR, and every location's new frontier with its change mode;
* ``propagate`` -- the closure strategy (gather through ``Psi``; on the device a block per
  target over target-major ``Psi``), edge-wise relaxation (host), and the frontier changes;
* ``closure`` -- the path-summary closure ``Psi`` (per-source settle; on the device one
  thread per source in a constant number of launches);
* ``precursors`` -- could-result-in and Naiad's precursor counts through ``Psi`` rows;
* ``summary_rows`` -- the scalar core (apply, compose, order) every kernel shares;
* ``rollback`` -- the batched rollback solver's round (closures, violated rows, ``f_c``,
  the shrink) and C4's reverse reachability;
* ``unionfind`` -- the WCC job's union-find and star contractions; ``_cuda`` -- launch
  plumbing and the device-work counts.

A module's CPU twins are Numba ``@njit`` functions; its CUDA kernels (``*_cuda`` wrappers)
are built on first use by a memoized factory from the same scalar functions. This package
imports nothing from ``engine`` or ``spark_plugin``, and imports neither CuPy nor Numba's CUDA
target until a CUDA kernel first runs, so it loads on machines without a GPU and a process
can still choose Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``) first.
"""
