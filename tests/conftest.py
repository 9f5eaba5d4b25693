"""Shared pytest setup: bind Spark to loopback and skip `gpu` tests without a usable CUDA device."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _cuda_device_usable() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _cuda_device_usable():
        return
    skip = pytest.mark.skip(reason="no usable CUDA device (cupy not installed or no GPU visible)")
    for item in gpu_items:
        item.add_marker(skip)


# Hypothesis: 100 examples per property by default; TFRONT_TEST_SCALE multiplies them.
from hypothesis import settings  # noqa: E402

settings.register_profile(
    "tfront", max_examples=100 * int(os.environ.get("TFRONT_TEST_SCALE", "1")), deadline=None)
settings.load_profile("tfront")


def pytest_collection_finish(session):
    """Start the CUDA-simulator subprocess of ``tests/test_cuda_sim.py`` now, in the background,
    when that module has tests selected: it is single-threaded and takes minutes, and on a
    2-core machine it overlaps the rest of the suite instead of adding to it."""
    if not any(item.path.name == "test_cuda_sim.py" for item in session.items):
        return
    from test_cuda_sim import start_simulator_run

    workdir = Path(tempfile.mkdtemp(prefix="tfront-cuda-sim-"))
    session.config._tfront_simulator = (*start_simulator_run(workdir), workdir)


def pytest_sessionfinish(session):
    started = getattr(session.config, "_tfront_simulator", None)
    if started is None:
        return
    proc, _log, _sigs, workdir = started
    if proc.poll() is None:  # interrupted before its test ran
        proc.kill()
        proc.wait()
    shutil.rmtree(workdir, ignore_errors=True)
