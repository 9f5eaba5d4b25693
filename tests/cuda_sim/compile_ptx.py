"""Compile every recorded kernel signature with Numba's real CUDA target, to PTX for sm_90.

Usage: ``python tests/cuda_sim/compile_ptx.py SIGNATURES.json`` (written by a simulator run
with ``TFRONT_RECORD_KERNELS``). The simulator runs kernels as Python, so it cannot catch
what only the CUDA compiler rejects (typing, unsupported operations in device code); this
does, without a GPU, wherever NVVM is installed. Exit status 0: all compiled; 1: some
failed (listed); 77: no NVVM here (nothing checked).

A device function compiles for the *current device's* compute capability, which needs a
driver; here, in a process of its own, the current device is replaced by a stand-in that
reports 9.0 (H100).
"""

import importlib
import inspect
import json
import sys
import types as pytypes
from pathlib import Path


def main(path: str) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
    import numpy as np
    from numba import cuda, from_dtype, types
    from numba.cuda.cudadrv import nvvm
    if not nvvm.is_available():
        print("NVVM is not available: no kernel compiled")
        return 77
    import numba.cuda.dispatcher as dispatcher
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))

    def numba_type(k):
        if k[0] == "array":
            return types.Array(from_dtype(np.dtype(k[1])), k[2], k[3])
        return types.boolean if k[0] == "bool" else types.int64

    failures = 0
    sigs = json.load(open(path))
    for module, name, args, factory, consts in sigs:
        # rebuild the kernel with its factory, passing the constants it closed over by the
        # factory's parameter names (e.g. _coop_kernel(W, C, T))
        make = getattr(importlib.import_module(module), factory)
        params = inspect.signature(getattr(make, "__wrapped__", make)).parameters
        kernels = make(*(consts[p] for p in params))
        kernel = getattr(kernels, name, kernels)
        sig = tuple(numba_type(k) for k in args)
        try:
            cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        except Exception as e:  # report every kernel, then fail
            failures += 1
            print(f"FAIL {module}.{name}{sig}: {type(e).__name__}: {e}")
        else:
            print(f"ok   {module}.{name}")
    print(f"{len(sigs) - failures} of {len(sigs)} kernel signatures compiled for sm_90")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
