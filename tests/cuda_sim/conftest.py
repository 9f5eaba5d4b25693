"""The simulator tests: collected only in a process that runs Numba's CUDA simulator.

``tests/test_cuda_sim.py`` runs ``pytest tests/cuda_sim`` in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` set before Numba loads. In any other process (the normal test
run, which also imports every module for its doctests) this directory is ignored, so the
simulator never leaks into it and no real CUDA target is loaded.

With ``TFRONT_RECORD_KERNELS=FILE`` the run also records every kernel launch's argument
types (JSON), which ``compile_ptx.py`` then compiles for a real device.
"""

import json
import os

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    collect_ignore_glob = ["*.py"]
else:
    RECORD = os.environ.get("TFRONT_RECORD_KERNELS")
    _seen: dict = {}

    def _arg_type(a):
        import numpy as np
        if isinstance(a, np.ndarray):
            layout = "C" if a.flags.c_contiguous else ("F" if a.flags.f_contiguous else "A")
            return ["array", a.dtype.str, a.ndim, layout]
        if isinstance(a, (bool, np.bool_)):
            return ["bool"]
        if isinstance(a, (int, np.integer)):
            return ["int"]
        raise TypeError(f"kernel argument of unexpected type {type(a)}")

    def _record(kernel, args):
        fn = kernel.fn  # the simulator's kernel wraps the Python function
        # the memoized factory that built it, and the integer constants it closed over (a
        # kernel whose shared/local array sizes are compile-time constants, e.g. coop_gather)
        factory = fn.__qualname__.split(".<locals>")[0]
        consts = {v: c.cell_contents for v, c in zip(fn.__code__.co_freevars, fn.__closure__ or ())
                  if isinstance(c.cell_contents, int) and not isinstance(c.cell_contents, bool)}
        _seen[json.dumps([fn.__module__, fn.__name__, [_arg_type(a) for a in args], factory,
                          consts], sort_keys=True)] = None

    def pytest_configure(config):
        if not RECORD:
            return
        from gpu_kernels import _cuda
        launch, launch_blocks = _cuda.launch, _cuda.launch_blocks

        def recording_launch(kernel, n, *args, tpb=None):
            _record(kernel, args)
            return launch(kernel, n, *args, tpb=tpb)

        def recording_launch_blocks(kernel, n_blocks, threads, *args):
            _record(kernel, args)
            return launch_blocks(kernel, n_blocks, threads, *args)

        _cuda.launch, _cuda.launch_blocks = recording_launch, recording_launch_blocks

    def pytest_sessionfinish(session, exitstatus):
        if RECORD:
            with open(RECORD, "w") as f:
                json.dump([json.loads(k) for k in _seen], f, indent=0)
