"""The cuda backend where no GPU is needed: backend selection and its reasons, errors that
say why, ``tfront info``, light imports, and the host-side helpers of the CUDA kernels.

The kernels themselves run in ``test_cuda_sim.py`` (simulator) and ``test_cuda_gpu.py`` (a
real device)."""

import subprocess
import sys

import numpy as np
import pytest

import engine
from engine import Backend, BackendError
from engine.cli.main import main
from engine.batched.cuda import CudaKernels, usable_device
from engine.core.workload import EXAMPLE_PATH, example_graph

HAVE_DEVICE = usable_device()[0]
no_device = pytest.mark.skipif(HAVE_DEVICE, reason="a CUDA device is usable here")


def test_kernel_modules_and_backend_import_light():
    """Importing the kernel modules and the backend module loads neither CuPy nor Numba's
    CUDA target: both load when a kernel first runs."""
    mods = ["engine.batched.cuda", "gpu_kernels._cuda", "gpu_kernels.intake",
            "gpu_kernels.consolidate", "gpu_kernels.pareto", "gpu_kernels.propagate",
            "gpu_kernels.closure", "gpu_kernels.precursors"]
    code = ("import sys\n" + "".join(f"import {m}\n" for m in mods) +
            "print(','.join(m for m in ('cupy', 'numba.cuda') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"loaded {r.stdout.strip()}"


def test_usable_device_never_raises():
    for device in (None, 0, 1, 99, -1, "x", True):
        ok, why = usable_device(device)
        assert isinstance(ok, bool) and isinstance(why, str) and why


@no_device
def test_auto_picks_cpu_and_says_why(monkeypatch):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    backend, why = engine.resolve_backend()
    assert backend is Backend.CPU
    assert why.startswith("auto (default): cpu") and "cuda not usable" in why
    assert engine.resolve_backend("auto")[0] is Backend.CPU


@no_device
def test_explicit_cuda_without_device_names_the_cause(monkeypatch):
    reason = usable_device()[1]
    with pytest.raises(BackendError, match="backend cuda \\(requested\\) cannot run here") as e:
        engine.resolve_backend("cuda")
    assert reason in str(e.value)
    monkeypatch.setenv("TFRONT_BACKEND", "CUDA")
    with pytest.raises(BackendError, match="TFRONT_BACKEND=CUDA"):
        engine.resolve_backend()
    with pytest.raises(BackendError, match="cannot run here"):
        engine.make_tracker(example_graph(), "cuda")
    with pytest.raises(BackendError, match="cannot run here"):
        CudaKernels()


def test_simulated_backend_needs_the_simulator():
    with pytest.raises(BackendError, match="NUMBA_ENABLE_CUDASIM=1"):
        CudaKernels(simulated=True)


def test_info_reports_backend_versions_devices(capsys, monkeypatch):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    backend, why = engine.resolve_backend()
    assert f"backend: {backend.value}\nreason: {why}\n" in out
    for word in ("versions:", "numpy", "numba", "cupy-cuda12x", "CUDA_VISIBLE_DEVICES:", "devices:"):
        assert word in out


@no_device
def test_info_and_replay_with_unusable_cuda(capsys):
    assert main(["info", "--backend", "cuda"]) == 2
    out = capsys.readouterr().out
    assert "backend: none" in out and "cannot run here" in out
    assert main(["replay", str(EXAMPLE_PATH), "--backend", "cuda"]) == 2
    assert "tfront replay: error: backend cuda (requested) cannot run here" in capsys.readouterr().err


def test_cost_model_choices():
    """Issue 10, item 1: auto chooses by estimated cost per batch. On the example graph small
    batches are estimated cheaper on the CPU and large ones on the GPU; on a graph whose Psi
    is estimated over the memory budget, the closure strategy is ruled out whatever its speed;
    the cpu backend always propagates edge-wise."""
    from engine.batched.cost import choose_backend, choose_strategy
    from engine.batched.graph_arrays import GraphArrays
    ga = GraphArrays.from_graph(example_graph())
    small, large = choose_backend(ga, 10), choose_backend(ga, 10 ** 7)
    assert (small.backend, large.backend) == ("cpu", "cuda")
    assert small.cpu_s < small.cuda_s and large.cuda_s < large.cpu_s
    assert "rows" in small.reason and "cuda" in small.reason
    assert choose_strategy(ga, on_device=False).strategy == "edgewise"
    tight = choose_strategy(ga, on_device=True, memory_budget=0)
    assert tight.strategy == "edgewise" and "memory budget" in tight.reason
    roomy = choose_strategy(ga, on_device=True)
    assert roomy.strategy == ("closure" if roomy.closure_s < roomy.edgewise_s else "edgewise")


def test_per_batch_strategy_choice_by_the_model():
    """Issue 24, item 4: the model prices a batch by the share of locations whose F changed;
    the churn batch (share 1) is what choose_strategy compares. With the calibrated H100
    constants edge-wise is cheaper at every share, so choosing per batch has nothing to gain;
    the same question answers "pays" on a device where the closure gather wins the churn batch
    and the host is slow, so the answer comes from the model, not from a constant."""
    from dataclasses import replace

    from engine.batched.cost import (H100_840C890, CostModel, choose_strategy,
                                     per_batch_choice, propagation_s)
    from engine.batched.graph_arrays import GraphArrays
    ga = GraphArrays.from_graph(example_graph())
    churn = choose_strategy(ga, on_device=True)
    assert propagation_s(ga) == (churn.closure_s, churn.edgewise_s)
    shares = (1e-3, 0.1, 0.5, 1.0)
    costs = [propagation_s(ga, changed=s) for s in shares]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(costs, costs[1:]))
    for bad in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match="changed must be a share"):
            propagation_s(ga, changed=bad)
    calibrated = per_batch_choice(ga)
    assert calibrated.tracker == "edgewise" and calibrated.saving_s == 0.0
    assert not calibrated.pays and "nothing to gain" in str(calibrated)
    # a slow host and a gather with no serial cost: closure wins the churn batch, and
    # edge-wise the small ones (the gather's two launches stay)
    fast_gpu = CostModel(device=replace(H100_840C890, serial_step_s=1e-9), host_relax_s=1e-5)
    c1, e1 = propagation_s(ga, model=fast_gpu)
    c0, e0 = propagation_s(ga, changed=1e-4, model=fast_gpu)
    assert c1 < e1 and e0 < c0
    other = per_batch_choice(ga, model=fast_gpu)
    assert other.tracker == "closure" and other.best_changed == 1e-4
    assert other.saving_s == pytest.approx(c0 - e0)
    assert other.pays == (other.saving_s > other.switch_s)


def test_make_tracker_reports_its_backend_choice(monkeypatch):
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    tr = engine.make_tracker(example_graph(), batch_hint=10)
    assert tr.kernels.name == "cpu" and tr.backend_reason.startswith("auto")
    assert engine.make_tracker(example_graph(), "reference").backend_reason == "requested"
