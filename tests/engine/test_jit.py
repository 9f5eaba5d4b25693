"""engine.jit: kernel loading timed apart, compilation announced once, and the edge-wise
warm-up covering everything a frontier service's batches call (so that a job's tracking time
holds no kernel loading or compiling)."""

import subprocess
import sys

import numpy as np
from numba import njit

from engine.jit import CompileWatch

# A fresh process: warm the edge-wise kernels as run_wcc does, then apply batches through a
# frontier service of the WCC graph and list every kernel signature that appeared meanwhile
# (loaded from the cache or compiled): there must be none.
_COVERAGE = r"""
import numpy as np
from numba.core.registry import CPUDispatcher
import gc
from engine.batched.tracker import warm_up
from spark_plugin.jobs.wcc.job import wcc_graph
from spark_plugin.service.frontier_service import FrontierService
from spark_plugin.schema import delta_table

def signatures():
    return {(id(d), s) for d in gc.get_objects() if isinstance(d, CPUDispatcher)
            for s in d.signatures}

wg = wcc_graph()
svc = FrontierService(wg.graph, backend="cpu", strict=True)
warm_up(wg.graph.m, wg.graph.max_depth, svc._tracker.kernels,
        strategies=(svc._tracker.strategy.value,))
before = signatures()
svc.apply(delta_table([wg.a_out, wg.b_in1, wg.s_out1], [[0, 0], [0, 0], [0, 0]], [1, 4, 1], "d", 0))
svc.apply(delta_table([wg.b_in1, wg.s_in0, wg.a_out, wg.a_out], [[0, 0], [0, 0], [0, 0], [1, 0]],
                      [-4, 3, -1, 1], "d", 1))
svc.apply(delta_table([wg.s_in0, wg.b_in0, wg.d_in0], [[0, 0], [0, 1], [0, 0]], [-3, 2, 1], "d", 2))
svc.frontier(wg.b_in0)
print(len(signatures() - before))
"""


def test_compile_watch_announces_the_first_compilation_once():
    calls = []

    @njit(cache=False)
    def twice(x):
        return 2 * x

    with CompileWatch(lambda: calls.append(1)) as w:
        twice(np.int64(3))
        twice(np.float64(3.0))   # a second signature: a second compilation, no second notice
    assert w.compiled >= 2 and calls == [1]
    assert w.describe().startswith("kernels compiled ")
    with CompileWatch(lambda: calls.append(1)) as w2:
        twice(np.int64(4))       # already compiled: nothing to announce
    assert w2.compiled == 0 and calls == [1]
    assert w2.describe().startswith("kernels loaded ")


def test_edgewise_warm_up_covers_every_kernel_a_service_batch_calls():
    proc = subprocess.run([sys.executable, "-c", _COVERAGE], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0", proc.stdout
