"""Spark integration pieces that need no Spark session: device choice, schema, executor
consolidation (called as a plain function), configuration presets, docs and doctests."""

import doctest
import importlib
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine import TimestampWidthError
from gpu_kernels.consolidate import consolidate
from spark_plugin import (ConfigError, DeviceSelectionError, PartitionConsolidator, Preset,
                          SchemaError, choose_device, consolidate_table, delta_schema, delta_table,
                          gpu_usable, preset_settings, spark_conf, wire_schema,
                          write_discovery_script)
from spark_plugin.schema import check_delta_schema

ROOT = Path(__file__).resolve().parents[3]


# -- device selection ----------------------------------------------------------------------------

@pytest.mark.parametrize(("env", "resources", "device"), [
    ({}, {}, None),                                                   # nothing: the CPU
    ({}, {"gpu": ["0"]}, 0),                                          # the task's address
    ({}, {"gpu": ["3", "4"]}, 3),                                     # the first of several
    ({}, {"fpga": ["0"]}, None),                                      # not a GPU
    ({"CUDA_VISIBLE_DEVICES": "1"}, {}, 0),                           # isolated, no resource
    ({"CUDA_VISIBLE_DEVICES": "2,3"}, {"gpu": ["3"]}, 1),             # its place in the list
    ({"CUDA_VISIBLE_DEVICES": "5"}, {"gpu": ["0"]}, 0),               # container renumbering
    ({"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, {"gpu": ["GPU-b"]}, 1),  # UUIDs
    ({"CUDA_VISIBLE_DEVICES": ""}, {"gpu": ["0"]}, None),             # GPUs hidden
    ({"CUDA_VISIBLE_DEVICES": "-1"}, {"gpu": ["0"]}, None),
    ({"CUDA_VISIBLE_DEVICES": "0,-1,1"}, {"gpu": ["0"]}, 0),          # CUDA stops at -1
])
def test_choose_device(env, resources, device):
    assert choose_device(env, resources) == device


def test_choose_device_reads_spark_resource_information():
    from pyspark.resource import ResourceInformation

    assert choose_device({}, {"gpu": ResourceInformation("gpu", ["2"])}) == 2


@pytest.mark.parametrize(("env", "resources", "message"), [
    ({}, {"gpu": ["GPU-1234"]}, r"address 'GPU-1234' is not a device index"),
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, {"gpu": ["7"]},
     r"address '7' is neither one of the visible devices CUDA_VISIBLE_DEVICES='0,1'"),
])
def test_choose_device_rejects_unmappable_addresses(env, resources, message):
    with pytest.raises(DeviceSelectionError, match=message):
        choose_device(env, resources)


def test_gpu_usable_says_why():
    ok, why = gpu_usable(0)
    assert isinstance(ok, bool) and why
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert not ok and "CuPy is not importable" in why


# -- schema ----------------------------------------------------------------------------------

def test_delta_table_has_exactly_the_declared_types():
    t = delta_table([0, 1], np.zeros((2, 3), np.int64), [1, -1], "p", 4)
    assert t.schema == delta_schema(3)
    assert [f.type for f in t.schema] == [pa.int32(), pa.list_(pa.int64(), 3), pa.int64(),
                                          pa.string(), pa.int64()]


def test_spark_schema_matches_the_ddl():
    from spark_plugin import SPARK_DDL, spark_schema

    fields = [col.split(" ") for col in SPARK_DDL.split(", ")]
    assert spark_schema().simpleString() == f"struct<{','.join(f'{n}:{t}' for n, t in fields)}>"


def test_schema_errors_name_the_column_and_list_those_present():
    schema = pa.schema([("loc", pa.int32()), ("diff", pa.int64())])
    with pytest.raises(SchemaError, match=r"no column 'ts' .*columns present: 'loc', 'diff'"):
        check_delta_schema(schema, 2)
    bad = delta_schema(2).set(3, pa.field("producer", pa.int64()))
    with pytest.raises(SchemaError, match=r"column 'producer' has type int64, expected string"):
        check_delta_schema(bad, 2)
    with pytest.raises(TimestampWidthError, match=r"3 coordinates, expected 2"):
        check_delta_schema(delta_schema(3), 2)


# -- executor consolidation ------------------------------------------------------------------

def _raw(rows, list_type=pa.list_(pa.int64())):
    return pa.table({"loc": pa.array([r[0] for r in rows], pa.int32()),
                     "ts": pa.array([r[1] for r in rows], list_type),
                     "diff": pa.array([r[2] for r in rows], pa.int64())})


def _run(fn, table, chunk=None):
    out = list(fn(table.to_batches(max_chunksize=chunk)))
    assert out and all(b.schema == out[0].schema for b in out)
    return pa.Table.from_batches(out)


def _expected(rows):
    acc = {}
    for loc, ts, d in rows:
        acc[(loc, tuple(ts))] = acc.get((loc, tuple(ts)), 0) + d
    return sorted((k, v) for k, v in acc.items() if v)


def test_consolidator_sums_drops_zeros_and_declares_spark_types():
    rng = np.random.default_rng(3)
    rows = [(int(rng.integers(0, 6)), [int(x) for x in rng.integers(0, 4, 2)],
             int(rng.integers(-3, 4))) for _ in range(400)]
    for chunk, flush in ((None, 1 << 20), (37, 50)):       # re-consolidation every 50 rows
        out = _run(PartitionConsolidator(2, producer="job", seq=3, flush_rows=flush),
                   _raw(rows), chunk)
        assert out.schema == wire_schema()
        got = [((l, tuple(t)), d) for l, t, d in zip(*(out.column(c).to_pylist()
                                                       for c in ("loc", "ts", "diff")))]
        assert got == _expected(rows)
        assert set(out.column("producer").to_pylist()) == {"job-0"}
        assert set(out.column("seq").to_pylist()) == {3}


def test_consolidator_keeps_producer_groups_and_marks_cancelled_ones():
    t = delta_table([1, 1, 2, 2, 1], [[0, 0]] * 5, [1, -1, 4, 1, 2], ["a", "a", "b", "b", "c"],
                    [0, 0, 5, 5, 1])
    out = _run(PartitionConsolidator(2), t).to_pydict()
    assert list(zip(out["producer"], out["seq"], out["loc"], out["diff"])) == [
        ("a", 0, 0, 0),          # cancelled: one marker row keeps the sequence number
        ("b", 5, 2, 5),
        ("c", 1, 1, 2),
    ]
    empty = _run(PartitionConsolidator(2, producer="job", seq=9, per_partition=False),
                 _raw([]).slice(0, 0)).to_pydict()
    assert empty == {"loc": [0], "ts": [[0, 0]], "diff": [0], "producer": ["job"], "seq": [9]}


def test_consolidator_passes_invalid_rows_on_for_the_driver_to_reject():
    rows = [(1, [0, 0], 1), (1, [0, 0, 0], 1), (-1, [0, 0], 2), (2, [0, -3], 1), (1, [0, 0], 1)]
    out = _run(PartitionConsolidator(2, producer="job", seq=0), _raw(rows)).to_pydict()
    assert list(zip(out["loc"], out["ts"], out["diff"])) == [
        (1, [0, 0], 2), (1, [0, 0, 0], 1), (-1, [0, 0], 2), (2, [0, -3], 1)]


def test_gh23_consolidator_passes_a_group_summing_outside_int64_on_unconsolidated():
    """Issue 23, item 2: a (producer, seq) whose diffs at one pointstamp sum outside int64
    is not wrapped on the executor: its rows go on as they are, and the driver refuses the
    unit with CountOverflowError."""
    from engine import CountOverflowError
    from engine.core.workload import example_graph
    from spark_plugin import FrontierService

    big = 1 << 62
    t = delta_table([1, 1, 2, 2], [[0, 0]] * 4, [big, big, 1, 2], ["a", "a", "b", "b"],
                    [0, 0, 0, 0])
    out = consolidate_table(t, 2).to_pydict()
    assert list(zip(out["producer"], out["loc"], out["diff"])) == [
        ("a", 1, big), ("a", 1, big), ("b", 2, 3)]
    svc = FrontierService(example_graph())
    with pytest.raises(CountOverflowError, match=r"producer 'a', seq 0.*overflow 64 bits"):
        svc.apply(_run(PartitionConsolidator(2), t))
    assert svc.status().next_seq == {}


def test_consolidator_large_types_and_schema_errors():
    out = _run(PartitionConsolidator(2, producer="j", seq=0, large_types=True),
               _raw([(1, [0, 0], 1)]))
    assert out.schema == wire_schema(large_types=True)
    with pytest.raises(SchemaError, match=r"no column 'producer'.*columns present: 'loc', 'ts'"):
        list(PartitionConsolidator(2)(_raw([(1, [0, 0], 1)]).to_batches()))
    with pytest.raises(Exception, match=r"needs a sequence number seq >= 0, got None"):
        PartitionConsolidator(2, producer="job")


def test_consolidate_table_equals_the_engine_consolidation_per_group():
    rng = np.random.default_rng(5)
    n = 300
    loc = rng.integers(0, 9, n).astype(np.int32)
    ts = rng.integers(0, 5, (n, 3)).astype(np.int64)
    diff = rng.integers(-2, 3, n).astype(np.int64)
    prod = rng.choice(["x", "y"], n).tolist()
    seq = rng.integers(0, 2, n)
    out = consolidate_table(delta_table(loc, ts, diff, prod, seq), 3)
    assert out.schema == delta_schema(3)
    for p in ("x", "y"):
        for s in (0, 1):
            sel = (np.array(prod) == p) & (seq == s)
            e_loc, e_ts, e_diff = consolidate(loc[sel], ts[sel], diff[sel])
            mine = out.filter(pa.compute.and_(pa.compute.equal(out["producer"], p),
                                              pa.compute.equal(out["seq"], s))).to_pydict()
            assert mine["loc"] == e_loc.tolist() and mine["diff"] == e_diff.tolist()
            assert mine["ts"] == e_ts.tolist()


@pytest.mark.gpu
def test_gpu_consolidation_equals_the_cpu():
    rng = np.random.default_rng(11)
    n = 5000
    t = delta_table(rng.integers(0, 50, n), rng.integers(0, 7, (n, 2)), rng.integers(-3, 4, n),
                    rng.choice(["a", "b", "c"], n).tolist(), rng.integers(0, 3, n))
    assert consolidate_table(t, 2, device=0).equals(consolidate_table(t, 2, device=None))


# -- configuration presets -------------------------------------------------------------------

def test_local_preset():
    conf = spark_conf("local")
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.sql.shuffle.partitions"] == str(os.cpu_count() or 1)
    assert int(conf["spark.sql.execution.arrow.maxRecordsPerBatch"]) > 10_000
    assert spark_conf(Preset.LOCAL, cores=3)["spark.master"] == "local[3]"


def test_gpu_presets(tmp_path):
    jar = tmp_path / "rapids-4-spark_2.13-25.10.0.jar"
    jar.write_bytes(b"PK")
    gpu = spark_conf("gpu-cluster", discovery_script="/opt/gpus.sh", tasks_per_gpu=4)
    assert gpu["spark.executor.resource.gpu.amount"] == "1"
    assert gpu["spark.task.resource.gpu.amount"] == "0.25"
    assert gpu["spark.executor.resource.gpu.discoveryScript"] == "/opt/gpus.sh"
    rapids = spark_conf("rapids", discovery_script="/opt/gpus.sh", rapids_jar=str(jar))
    assert gpu.items() <= rapids.items()
    assert rapids["spark.plugins"] == "com.nvidia.spark.SQLPlugin"
    assert rapids["spark.jars"] == str(jar.resolve())
    assert rapids["spark.executorEnv.PYTHONPATH"] == str(jar.resolve())
    assert rapids["spark.rapids.sql.python.gpu.enabled"] == "true"
    assert rapids["spark.python.daemon.module"] == "rapids.daemon"
    pools = (float(rapids["spark.rapids.memory.gpu.maxAllocFraction"])
             + float(rapids["spark.rapids.python.memory.gpu.maxAllocFraction"]))
    assert pools < 1


@pytest.mark.parametrize(("preset", "options", "message"), [
    ("nonsense", {}, r"unknown Spark preset 'nonsense'; choose one of: local, gpu-cluster, rapids"),
    ("gpu-cluster", {}, r"needs discovery_script"),
    ("gpu-cluster", {"discovery_script": "gpus.sh"}, r"must be an absolute path"),
    ("gpu-cluster", {"discovery_script": "/g.sh", "tasks_per_gpu": 0}, r"tasks_per_gpu"),
    ("rapids", {"discovery_script": "/g.sh"}, r"needs the RAPIDS Accelerator jar: pass "
                                              r"rapids_jar='/path/to/rapids-4-spark_2.13"),
    ("rapids", {"discovery_script": "/g.sh", "rapids_jar": "/no/such/rapids.jar"},
     r"'/no/such/rapids.jar' does not exist"),
    ("local", {"cores": 0}, r"cores must be a positive integer"),
])
def test_preset_errors(preset, options, message):
    with pytest.raises(ConfigError, match=message):
        spark_conf(preset, **options)


def test_rapids_pool_fractions_must_leave_room(tmp_path):
    jar = tmp_path / "r.jar"
    jar.write_bytes(b"PK")
    with pytest.raises(ConfigError, match=r"leaves no GPU memory outside the pools"):
        spark_conf("rapids", discovery_script="/g.sh", rapids_jar=str(jar),
                   gpu_max_alloc_fraction=0.8, python_gpu_max_alloc_fraction=0.3)


def test_every_preset_key_is_documented(tmp_path):
    jar = tmp_path / "r.jar"
    jar.write_bytes(b"PK")
    doc = (ROOT / "docs" / "spark.md").read_text()
    for preset in Preset:
        for s in preset_settings(preset, discovery_script="/g.sh", rapids_jar=str(jar)):
            assert f"`{s.key}`" in doc, f"{preset.value}: {s.key} is not in docs/spark.md"
            assert s.why


def test_discovery_script_reports_nvidia_smi_indices(tmp_path):
    """The script runs against a stand-in ``nvidia-smi`` that prints two indices."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text("#!/bin/sh\nprintf '0\\n1\\n'\n")
    fake.chmod(0o755)
    script = write_discovery_script(tmp_path / "gpus.sh")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    out = subprocess.run([str(script)], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == {"name": "gpu", "addresses": ["0", "1"]}


# -- docstring examples ------------------------------------------------------------------------

@pytest.mark.parametrize("module", ["schema", "service.device", "service.executor",
                                    "service.frontier_service", "session.config",
                                    "sources.columns", "sources.files", "sources.text",
                                    "sources.epochs", "sources.directory"])
def test_doctests(module):
    mod = importlib.import_module(f"spark_plugin.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed


def test_no_unfinished_work_markers_in_the_plugin():
    for path in (ROOT / "spark_plugin").rglob("*.py"):
        assert not re.search(r"\b(TODO|FIXME|XXX|stub|placeholder)\b", path.read_text()), path
