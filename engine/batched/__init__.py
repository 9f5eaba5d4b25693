"""The batched engine (the product's tracker): arrays in, frontier changes out, state resident.

* :mod:`~engine.batched.tracker` -- ``BatchedTracker`` and its two strategies;
* :mod:`~engine.batched.kernels` -- the backend interface (array namespace plus kernels), the
  cpu backend; :mod:`~engine.batched.cuda` -- the cuda backend (CuPy, loaded lazily);
* :mod:`~engine.batched.graph_arrays`, :mod:`~engine.batched.batch_arrays`,
  :mod:`~engine.batched.psi` -- a graph, a delta batch and ``Psi`` as flat arrays;
* :mod:`~engine.batched.queries` -- could-result-in and precursor counts with lazy ``Psi`` rows;
* :mod:`~engine.batched.cost` -- the cost model behind ``auto``; :mod:`~engine.batched.backend`
  -- backend names and ``make_tracker``, the one factory of every tracker.

Written once against an array namespace; the kernels themselves live in ``gpu_kernels``.
"""
