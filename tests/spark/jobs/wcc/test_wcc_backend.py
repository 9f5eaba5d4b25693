"""Where the WCC job's kernels run (issue 10, item 6): ``--backend`` decided per task.

The placement rule (:func:`spark_plugin.service.device.place_kernels`), one stage's task function
run directly (outside Spark: ``TaskContext`` is ``None``, partition 0) with each backend, the
job with ``backend="cuda"`` on whatever this machine has (its labels equal scipy's, and the
tasks it counts per backend -- and the CPU fallback's reason where there is no usable GPU --
are reported), and, marked ``gpu``, the task function on the device.
"""

import logging

import networkx as nx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine import Backend
from engine.cli.main import _parser
from engine.batched.cuda import usable_device
from engine.errors import BackendError
from spark_plugin.service import device
from spark_plugin.service.device import AUTO_GPU_MIN_ROWS, place_kernels
from spark_plugin.jobs.backend import requested_backend as _requested_backend
from spark_plugin.jobs.wcc.job import WCC_BACKENDS, _Stage, run_wcc, wcc_kernels
from wcc_cases import Families, expected_labels


def run_stage(kind, backend, a, b, f, seq=3):
    """One stage's task function over the rows ``a, b, f``: (data rows sorted, progress
    rows: the task's report)."""
    batch = pa.record_batch([pa.array(a, pa.int64()), pa.array(b, pa.int64()),
                             pa.array(f, pa.bool_())], names=["a", "b", "f"])
    fn = _Stage(kind, 1, 2, seq, False, None, backend)
    out = pa.Table.from_batches(list(fn(iter([batch]))), schema=fn.schema())
    isd = out.column("kind").is_valid()
    data = out.filter(pc.invert(isd))
    deltas = out.filter(isd)
    rows = sorted(zip(*(data.column(c).to_pylist() for c in ("a", "b", "f"))))
    return rows, deltas.to_pydict()


def stage_inputs(rng, n):
    """Rows for each stage kind: raw edges (contract), both directions (large), normalised
    edges (small, final), each with a random new-flag; two halves contracted, with their
    roots' rows (links)."""
    from gpu_kernels.unionfind import uf_stars

    a, b = rng.integers(0, n // 2 + 1, n), rng.integers(0, n // 2 + 1, n)
    f = rng.random(n) < 0.5
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    r, v = [], []
    for half in (slice(0, n // 2), slice(n // 2, n)):
        ra, rb = uf_stars(a[half], b[half])
        r += [ra, np.unique(ra)]
        v += [rb, np.unique(ra)]
    r, v = np.concatenate(r), np.concatenate(v)
    return {"contract": (a, b, f), "large": (np.r_[a, b], np.r_[b, a], np.r_[f, f]),
            "small": (lo[keep], hi[keep], f[keep]), "final": (lo[keep], hi[keep], f[keep]),
            "links": (r, v, np.ones(len(r), np.bool_))}


# -- the placement rule -----------------------------------------------------------------------

def test_cpu_never_probes_the_gpu_and_auto_keeps_small_inputs_on_the_cpu():
    before = usable_device.cache_info()
    p = place_kernels("cpu")
    assert (p.backend, p.device, p.reason) == (Backend.CPU, None, "cpu requested")
    assert wcc_kernels(Backend.CPU).placement == p
    p = place_kernels(Backend.AUTO, AUTO_GPU_MIN_ROWS - 1)
    assert p.backend is Backend.CPU and "fewer than AUTO_GPU_MIN_ROWS" in p.reason
    assert place_kernels("reference").backend is Backend.CPU
    after = usable_device.cache_info()
    assert after.hits + after.misses == before.hits + before.misses   # no device probe


@pytest.mark.parametrize(("env", "resources", "reason"), [
    ({"CUDA_VISIBLE_DEVICES": "-1"}, {}, "CUDA_VISIBLE_DEVICES='-1' hides every device"),
    ({"CUDA_VISIBLE_DEVICES": ""}, {"gpu": ["0"]}, "CUDA_VISIBLE_DEVICES='' hides every device"),
    ({}, {"gpu": ["GPU-3f2a"]}, "address 'GPU-3f2a' is not a device index"),
])
def test_cuda_without_a_device_falls_back_to_the_cpu_with_the_reason(env, resources, reason,
                                                                     caplog, monkeypatch):
    monkeypatch.setattr(device, "_REPORTED", set())   # this process has logged nothing yet
    with caplog.at_level(logging.INFO, logger="spark_plugin.service.device"):
        for _ in range(3):
            for requested in (Backend.CUDA, Backend.AUTO):
                p = place_kernels(requested, AUTO_GPU_MIN_ROWS, env=env, resources=resources)
                assert p.backend is Backend.CPU and p.device is None and reason in p.reason
    # logged once per reason and process: a warning for cuda, information for auto
    logged = [r for r in caplog.records if reason in r.getMessage()]
    assert [r.levelno for r in logged] == [logging.WARNING, logging.INFO]


def test_cuda_uses_the_task_gpu_exactly_when_the_device_is_usable():
    """No resource, no ``CUDA_VISIBLE_DEVICES`` (a local master, a driver): device 0 of the
    process, if it is usable; the reason is ``usable_device``'s either way."""
    ok, why = usable_device(None)
    p = place_kernels(Backend.CUDA, env={}, resources={})
    assert p.reason == why
    assert (p.backend, p.device) == ((Backend.CUDA, 0) if ok else (Backend.CPU, None))


def test_backend_names_are_parsed_by_backend_parse(monkeypatch):
    assert _requested_backend(" CUDA ") is Backend.CUDA
    monkeypatch.delenv("TFRONT_BACKEND", raising=False)
    assert _requested_backend(None) is Backend.AUTO
    monkeypatch.setenv("TFRONT_BACKEND", "cpu")
    assert _requested_backend(None) is Backend.CPU
    with pytest.raises(BackendError, match="must be one of auto, cpu, cuda, got 'reference'"):
        _requested_backend("reference")
    with pytest.raises(BackendError, match="unknown backend 'gpu'"):
        _requested_backend("gpu")
    args = _parser().parse_args(["wcc", "g.txt", "--backend", "cuda"])
    assert Backend.parse(args.backend) is Backend.CUDA
    assert [b.value for b in WCC_BACKENDS] == ["auto", "cpu", "cuda"]
    with pytest.raises(SystemExit):
        _parser().parse_args(["wcc", "g.txt", "--backend", "reference"])


# -- one task --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["contract", "large", "small", "links", "final"])
def test_task_function_reports_its_kernels_and_matches_the_cpu(kind):
    """Every backend gives the CPU kernels' rows; the delta rows name the backend the task
    used and why (on this machine, without a usable GPU, ``cuda`` names the fallback)."""
    rng = np.random.default_rng(11)
    a, b, f = stage_inputs(rng, 300)[kind]
    want, want_deltas = run_stage(kind, Backend.CPU, a, b, f)
    assert set(want_deltas["kernels"]) == {"cpu"}
    assert set(want_deltas["kernels_reason"]) == {"cpu requested"}
    for backend in (Backend.CUDA, Backend.AUTO):
        got, deltas = run_stage(kind, backend, a, b, f)
        assert got == want
        p = place_kernels(backend, len(a))
        assert set(deltas["kernels"]) == {p.backend.value}
        assert set(deltas["kernels_reason"]) == {p.reason}
        assert (deltas["count"], deltas["op"], deltas["ts"]) == (want_deltas["count"], want_deltas["op"], want_deltas["ts"])


# -- the job -----------------------------------------------------------------------------------

@pytest.mark.spark
@pytest.mark.parametrize("driver_rows", [None, "0"], ids=["driver-finish", "spark-loop"])
def test_backend_cuda_job_equals_scipy_and_reports_its_kernels(spark, tmp_path, monkeypatch,
                                                               caplog, driver_rows):
    """``backend="cuda"`` runs wherever there is no GPU: the frontier service falls back to
    the cpu backend, every task to the CPU kernels, and the job counts them and names why."""
    if driver_rows is not None:
        monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", driver_rows)
    fam = Families()
    fam.add_nx(nx.grid_2d_graph(12, 12))
    fam.add(np.column_stack([np.arange(60), np.arange(1, 61)])[::-1])
    fam.add([(3, 3), (4, 5), (5, 4), (9, 8)])
    src, dst = fam.arrays()
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{s} {d}\n" for s, d in zip(src.tolist(), dst.tolist())))
    with caplog.at_level(logging.WARNING, logger="spark_plugin"):
        res = run_wcc(spark, path, epochs=2, partitions=2, progress=False, backend="cuda")
    got = dict(zip(*(res.labels.column(c).to_pylist() for c in ("vertex", "component"))))
    assert got == expected_labels(src, dst)
    assert res.service.counts().num_rows == 0
    ok, why = usable_device()
    assert res.backend is Backend.CUDA
    assert res.service_backend == ("cuda" if ok else "cpu")
    # two tasks per Spark stage; the driver's union-find of each epoch counts as one task
    tasks = 2 * res.stages + (2 if driver_rows is None else 0)
    assert sum(res.kernels.values()) == tasks
    assert sum(n for s in res.epochs for _, n in s.kernels) == tasks
    if ok:   # a local master: every task uses the process's device 0
        assert res.kernels == {"cuda": tasks} and res.kernel_fallbacks == {}
        assert "kernels cuda" in res.epochs[0].line()
    else:
        assert res.kernels == {"cpu": tasks} and res.kernel_fallbacks == {why: tasks}
        assert res.epochs[0].line().endswith(f"kernels cpu {res.epochs[0].kernels[0][1]}")
        assert f"on the CPU because: {why} ({tasks} tasks)" in res.kernels_line()
        messages = [r.getMessage() for r in caplog.records]
        assert any("the driver has no usable GPU" in m and why in m for m in messages)
        assert any("WCC kernels on the CPU in stage" in m and why in m for m in messages)


# -- on a GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["contract", "large", "small", "links", "final"])
def test_task_function_on_the_gpu_equals_the_cpu(kind):
    """With a usable device, ``cuda`` (and ``auto`` from ``AUTO_GPU_MIN_ROWS`` rows) run the
    CuPy twins in the task, with the same rows and deltas as the CPU kernels."""
    assert place_kernels(Backend.CUDA, env={}, resources={}).backend is Backend.CUDA
    rng = np.random.default_rng(12)
    for n in (50, AUTO_GPU_MIN_ROWS):
        a, b, f = stage_inputs(rng, n)[kind]
        want, want_deltas = run_stage(kind, Backend.CPU, a, b, f)
        for backend in (Backend.CUDA, Backend.AUTO):
            got, deltas = run_stage(kind, backend, a, b, f)
            assert got == want
            on_gpu = backend is Backend.CUDA or len(a) >= AUTO_GPU_MIN_ROWS
            assert set(deltas["kernels"]) == {"cuda" if on_gpu else "cpu"}
            assert deltas["count"] == want_deltas["count"]
