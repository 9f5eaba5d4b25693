"""The CUDA kernels and the simulated cuda backend, on Numba's CUDA simulator; then every
kernel, as launched there, compiled by the real CUDA target.

The simulator must be chosen before Numba is imported, and this process has imported Numba
already (for the CPU kernels), so the checks in ``tests/cuda_sim/`` run in one subprocess
with ``NUMBA_ENABLE_CUDASIM=1``: every CUDA kernel against its CPU twin
(``test_sim_kernels.py``) and ``BatchedTracker`` on ``CudaKernels(simulated=True)`` against
the reference tracker (``test_sim_backend.py``). That run records the argument types of every
launch; a second subprocess compiles each kernel for those types to PTX for sm_90
(``tests/cuda_sim/compile_ptx.py``), which catches what only the CUDA compiler rejects. It
needs NVVM, not a GPU, and is skipped, with the reason, where NVVM is missing. Neither the
simulator nor Numba's CUDA target loads in this process.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


SIM_CMD = [sys.executable, "-m", "pytest", "tests/cuda_sim", "-q", "-p", "no:cacheprovider",
           "--no-header", "-rfEs"]
SIM_TIMEOUT_S = 900


def start_simulator_run(workdir: Path) -> tuple:
    """Start the simulator run in the background (``tests/conftest.py`` calls this as soon as
    collection has selected a test of this module, so that the single-threaded simulator runs
    on the second core while the rest of the suite runs here). Returns ``(popen, log, sigs)``."""
    sigs = workdir / "kernels.json"
    log = workdir / "simulator.log"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TFRONT_RECORD_KERNELS=str(sigs))
    env.pop("PYTEST_ADDOPTS", None)
    with open(log, "w") as out:
        proc = subprocess.Popen(SIM_CMD, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                text=True)
    return proc, log, sigs


@pytest.fixture(scope="module")
def simulator_run(request, tmp_path_factory):
    started = getattr(request.config, "_tfront_simulator", None)
    if started is None:  # not started at collection (e.g. the module run on its own by path)
        started = start_simulator_run(tmp_path_factory.mktemp("cuda_sim"))
    proc, log, sigs = started[:3]
    try:
        proc.wait(timeout=SIM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    out = log.read_text()
    return SIM_CMD, subprocess.CompletedProcess(SIM_CMD, proc.returncode, out, ""), sigs


def test_cuda_kernels_and_simulated_backend_on_the_simulator(simulator_run):
    cmd, r, _ = simulator_run
    tail = (r.stdout + r.stderr)[-6000:]
    assert r.returncode == 0, f"simulator tests failed ({' '.join(cmd)}):\n{tail}"
    assert " passed" in r.stdout and "skipped" not in r.stdout, tail


def test_every_kernel_compiles_for_the_cuda_target(simulator_run):
    _, r, sigs = simulator_run
    if r.returncode != 0 or not sigs.exists():
        pytest.skip("the simulator run failed: no signatures recorded")
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    c = subprocess.run([sys.executable, "tests/cuda_sim/compile_ptx.py", str(sigs)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    if c.returncode == 77:
        pytest.skip(f"no NVVM here to compile with: {c.stdout.strip()}")
    assert c.returncode == 0, (c.stdout + c.stderr)[-6000:]
    assert "kernel signatures compiled for sm_90" in c.stdout
