"""Spark configuration presets ``local``, ``gpu-cluster`` and ``rapids``, each key with its reason.

* ``local`` -- embedded Spark in this Python process: ``local[*]``, one shuffle partition per
  core, Arrow batches sized for delta rows, loopback networking.
* ``gpu-cluster`` -- a cluster whose executors have NVIDIA GPUs: GPU resource amounts and
  the discovery script, so that each task is handed a GPU address
  (:mod:`spark_plugin.service.device` maps it to a CUDA device) and our ``mapInArrow`` consolidation
  runs there with CuPy.
* ``rapids`` -- ``gpu-cluster`` plus the RAPIDS Accelerator (``spark.plugins =
  com.nvidia.spark.SQLPlugin``): Spark SQL runs on the GPU, Python workers are scheduled on
  the executor's GPU, and the memory pool fractions leave room for our kernels. The plugin
  jar cannot be downloaded here: the caller passes its path.

:func:`preset_settings` lists a preset's :class:`Setting` objects (key, value, why);
:func:`spark_conf` returns them as a dict; :func:`build_session` starts a ``SparkSession``
with :func:`session_conf`'s settings: the preset's, overridden by what ``spark-submit``
started the JVM with (:func:`submitted_conf`), overridden by the caller's. The ``local``
preset sizes the driver's memory from the machine (:func:`default_driver_memory`).

>>> conf = spark_conf("local", cores=2)
>>> conf["spark.master"], conf["spark.sql.shuffle.partitions"]
('local[2]', '2')
>>> spark_conf("rapids", discovery_script="/opt/spark/getGpus.sh")
Traceback (most recent call last):
...
spark_plugin.errors.ConfigError: the rapids preset needs the RAPIDS Accelerator jar: ...
"""

from __future__ import annotations

import enum
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from spark_plugin.errors import ConfigError

__all__ = ["Preset", "Setting", "preset_settings", "spark_conf", "build_session",
           "session_conf", "submitted_conf", "is_embedded_master", "machine_memory",
           "default_driver_memory", "parse_memory", "format_memory",
           "GPU_DISCOVERY_SCRIPT", "write_discovery_script", "RAPIDS_PLUGIN"]

#: The RAPIDS Accelerator's Spark plugin class.
RAPIDS_PLUGIN = "com.nvidia.spark.SQLPlugin"

#: A GPU discovery script for ``spark.{executor,worker}.resource.gpu.discoveryScript``: prints
#: the indices of the GPUs ``nvidia-smi`` sees as Spark's resource JSON.
GPU_DISCOVERY_SCRIPT = """#!/usr/bin/env bash
# Spark GPU discovery: print {"name": "gpu", "addresses": ["0", "1", ...]} (nvidia-smi indices).
set -euo pipefail
addrs=$(nvidia-smi --query-gpu=index --format=csv,noheader | tr -d ' ' | paste -sd, - \\
    | sed 's/,/","/g')
echo "{\\"name\\": \\"gpu\\", \\"addresses\\": [\\"${addrs}\\"]}"
"""


class Preset(enum.Enum):
    """The configuration presets."""

    LOCAL = "local"
    GPU_CLUSTER = "gpu-cluster"
    RAPIDS = "rapids"

    @classmethod
    def parse(cls, name: "str | Preset") -> "Preset":
        """Parse a preset name (case-insensitive); raise :class:`ConfigError` naming the choices."""
        if isinstance(name, Preset):
            return name
        try:
            return cls(str(name).strip().lower())
        except ValueError:
            raise ConfigError(f"unknown Spark preset {name!r}; choose one of: "
                              f"{', '.join(p.value for p in cls)}") from None


@dataclass(frozen=True)
class Setting:
    """One Spark configuration key of a preset, its value, and why it is set."""

    key: str
    value: str
    why: str


def preset_settings(preset: "str | Preset", *, cores: int | None = None,
                    discovery_script: str | None = None, tasks_per_gpu: int = 4,
                    rapids_jar: str | None = None, concurrent_gpu_tasks: int = 2,
                    gpu_alloc_fraction: float = 0.5, gpu_max_alloc_fraction: float = 0.6,
                    python_gpu_alloc_fraction: float = 0.15,
                    python_gpu_max_alloc_fraction: float = 0.3) -> list[Setting]:
    """The settings of ``preset``, in order.

    Parameters
    ----------
    preset : {"local", "gpu-cluster", "rapids"} or Preset
    cores : int, optional
        ``local``: cores to use (default all: ``local[*]``, and ``os.cpu_count()`` shuffle
        partitions).
    discovery_script : str, optional
        ``gpu-cluster``/``rapids`` (required): absolute path, on every executor host, of a GPU
        discovery script (:data:`GPU_DISCOVERY_SCRIPT`, written by :func:`write_discovery_script`).
    tasks_per_gpu : int
        ``gpu-cluster``/``rapids``: tasks sharing one GPU (``spark.task.resource.gpu.amount =
        1 / tasks_per_gpu``); match it to ``spark.executor.cores``.
    rapids_jar : str, optional
        ``rapids`` (required): path of the RAPIDS Accelerator jar on the driver,
        ``rapids-4-spark_2.13-<version>.jar`` for Spark 4 (Scala 2.13).
    concurrent_gpu_tasks : int
        ``rapids``: tasks running SQL on one GPU at a time.
    gpu_alloc_fraction, gpu_max_alloc_fraction : float
        ``rapids``: initial and largest share of GPU memory for the executor's RMM pool.
    python_gpu_alloc_fraction, python_gpu_max_alloc_fraction : float
        ``rapids``: the same for all Python workers of the executor (our kernels). The two
        maxima must leave part of the GPU free (their sum must be below 1).

    Raises
    ------
    ConfigError
        Unknown preset; a missing, relative or nonexistent path; fractions out of range.
    """
    preset = Preset.parse(preset)
    if preset is Preset.LOCAL:
        return _local(cores)
    if discovery_script is None:
        raise ConfigError(
            f"the {preset.value} preset needs discovery_script: the absolute path, on every "
            f"executor host, of a script printing the GPUs as {{\"name\": \"gpu\", "
            f"\"addresses\": [\"0\", ...]}} (write one with write_discovery_script(path))")
    if not os.path.isabs(discovery_script):
        raise ConfigError(f"discovery_script must be an absolute path (executors resolve it on "
                          f"their own hosts), got {discovery_script!r}")
    if isinstance(tasks_per_gpu, bool) or not isinstance(tasks_per_gpu, int) or tasks_per_gpu < 1:
        raise ConfigError(f"tasks_per_gpu must be a positive integer, got {tasks_per_gpu!r}")
    settings = _gpu_cluster(discovery_script, tasks_per_gpu)
    if preset is Preset.GPU_CLUSTER:
        return settings
    return settings + _rapids(rapids_jar, concurrent_gpu_tasks, gpu_alloc_fraction,
                              gpu_max_alloc_fraction, python_gpu_alloc_fraction,
                              python_gpu_max_alloc_fraction)


def spark_conf(preset: "str | Preset", **options) -> dict[str, str]:
    """:func:`preset_settings` as a ``{key: value}`` dict (for ``SparkConf.setAll``,
    ``spark-submit --conf`` or ``spark-defaults.conf``)."""
    return {s.key: s.value for s in preset_settings(preset, **options)}


def build_session(preset: "str | Preset" = Preset.LOCAL, *, app_name: str = "timely-frontier",
                  conf: Mapping[str, str] | None = None, log_level: str | None = "error",
                  **options):
    """Start (or get) a ``SparkSession`` configured by ``preset``.

    Parameters
    ----------
    preset : {"local", "gpu-cluster", "rapids"} or Preset
    app_name : str
    conf : mapping, optional
        Extra or overriding settings (e.g. ``{"spark.master": "local[2,4]"}``).
    log_level : str or None, optional
        Spark's (log4j's) root log level: when this call starts the driver JVM, from its
        first line on, and the JVM's own start-up notices are left out below ``warn``
        (:func:`spark_plugin.session.console.start_jvm`); otherwise through
        ``setLogLevel``. Default ``"error"``, as ``tfront wcc`` / ``tfront sssp`` run by
        default: no start-up notices, no ``WARN`` lines. ``None``: Spark's own
        configuration (its start-up notices and ``WARN`` level).
    **options
        Preset arguments (see :func:`preset_settings`).

    Notes
    -----
    The settings are :func:`session_conf`'s: the preset's defaults, overridden by whatever
    ``spark-submit`` started the JVM with (its ``--master``, ``--conf``, properties file),
    overridden by ``conf``. ``local`` runs Python workers with this interpreter
    (``PYSPARK_PYTHON``, when unset, is set to ``sys.executable``: embedded workers need the
    same packages) and, for a ``local[...]`` master, binds to loopback (``SPARK_LOCAL_IP``,
    when unset). ``getOrCreate`` returns an already running session unchanged: static
    settings only apply to a new one.
    """
    from pyspark.sql import SparkSession

    preset = Preset.parse(preset)
    settings = session_conf(preset, conf=conf, **options)
    if preset is Preset.LOCAL:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if is_embedded_master(settings.get("spark.master", "local[*]")):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if log_level is not None:
        from spark_plugin.session.console import start_jvm
        start_jvm(settings, log_level)   # nothing when a JVM already runs
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if log_level is not None:
        session.sparkContext.setLogLevel(log_level.upper())
    return session


#: ``local`` preset keys that only make sense when Spark runs embedded in this process
#: (``local[...]``): under any other master (``spark-submit --master yarn``, ``--master
#: local-cluster[...]``, ``spark://...``) they are left to Spark, the cluster manager and the
#: user, so that executors on other hosts can reach the driver and the cluster's cores set
#: the parallelism.
EMBEDDED_ONLY = frozenset({"spark.master", "spark.sql.shuffle.partitions",
                           "spark.default.parallelism", "spark.driver.bindAddress",
                           "spark.driver.host"})


def is_embedded_master(master: str) -> bool:
    """Whether ``master`` runs Spark inside the driver JVM: ``local``, ``local[N]``,
    ``local[*]``, ``local[N,F]`` -- not ``local-cluster[...]`` (separate executor JVMs).

    >>> [is_embedded_master(m) for m in ("local[2,4]", "local", "local-cluster[2,1,1024]", "yarn")]
    [True, True, False, False]
    """
    m = str(master).strip()
    return m == "local" or m.startswith("local[")


def submitted_conf() -> dict[str, str]:
    """The settings ``spark-submit`` started the driver JVM with before it ran this Python
    program (its ``--master``, ``--conf``, ``--driver-memory``, ``--properties-file`` and
    ``spark-defaults.conf``); ``{}`` when this process was not started by ``spark-submit``
    (PySpark then starts a JVM with :func:`build_session`'s settings). Never starts a JVM."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:   # set by spark-submit for its Python app
        return {}
    try:
        from pyspark import SparkConf, SparkContext
    except ImportError:  # pragma: no cover - pyspark is an extra
        return {}
    SparkContext._ensure_initialized()   # connects to spark-submit's JVM; starts nothing new
    return {str(k): str(v) for k, v in SparkConf().getAll()}


def session_conf(preset: "str | Preset" = Preset.LOCAL, *, conf: Mapping[str, str] | None = None,
                 submitted: Mapping[str, str] | None = None,
                 defaults: Mapping[str, str] | None = None, **options) -> dict[str, str]:
    """The settings :func:`build_session` applies, lowest precedence first: the preset's
    settings and the caller's ``defaults``; then ``submitted`` (default
    :func:`submitted_conf`: what ``spark-submit`` gave the running JVM); then ``conf`` (the
    caller's, e.g. ``tfront wcc --conf``). The ``local`` preset's keys in
    :data:`EMBEDDED_ONLY` are dropped when the resulting master is not ``local[...]``. Under
    ``spark-submit`` the driver's heap is already fixed: ``spark.driver.memory`` is
    ``spark-submit``'s (Spark's default ``1g`` when it was not given), and the preset's
    ``spark.driver.maxResultSize`` is half of it.

    >>> c = session_conf("local", submitted={"spark.master": "yarn", "spark.executor.cores": "4"})
    >>> c["spark.master"], "spark.driver.host" in c, c["spark.executor.cores"]
    ('yarn', False, '4')
    >>> c = session_conf("local", conf={"spark.master": "local[3]", "spark.driver.memory": "2g"},
    ...                  submitted={})
    >>> c["spark.driver.host"], c["spark.driver.memory"], c["spark.driver.maxResultSize"]
    ('127.0.0.1', '2g', '1g')
    """
    preset = Preset.parse(preset)
    settings = spark_conf(preset, **options)
    settings.update({str(k): str(v) for k, v in (defaults or {}).items()})
    submitted = submitted_conf() if submitted is None else dict(submitted)
    given = {str(k): str(v) for k, v in submitted.items()}
    given.update({str(k): str(v) for k, v in (conf or {}).items()})
    if submitted:   # the JVM is running: its heap is what spark-submit gave it
        given["spark.driver.memory"] = submitted.get("spark.driver.memory", "1g")
    master = given.get("spark.master", settings.get("spark.master"))
    if preset is Preset.LOCAL and master is not None and not is_embedded_master(master):
        settings = {k: v for k, v in settings.items() if k not in EMBEDDED_ONLY}
    if (preset is Preset.LOCAL and "spark.driver.memory" in given
            and "spark.driver.maxResultSize" not in given):   # keep it half the given heap
        try:
            heap = parse_memory(given["spark.driver.memory"])
        except ConfigError:   # Spark names the bad value when it starts
            heap = 0
        if heap:
            settings["spark.driver.maxResultSize"] = format_memory(heap // 2)
    settings.update(given)
    return settings


#: Share of this machine's memory (:func:`machine_memory`) that the ``local`` preset gives
#: the driver JVM; the rest is for the Python driver (the WCC job finishes epochs there), the
#: Python workers and the OS.
DRIVER_MEMORY_SHARE = 0.35
#: Bounds of the default driver memory: Spark's own default, and a heap size beyond which
#: garbage collection pauses grow long.
MIN_DRIVER_MEMORY = 1 << 30
MAX_DRIVER_MEMORY = 64 << 30

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_memory(text: str) -> int:
    """Bytes in a JVM/Spark memory string: a whole number and a unit ``k``, ``m``, ``g``,
    ``t`` (``512m``, ``8g``; ``1.5g`` is refused, as by the JVM). A bare number is bytes
    here, but MiB for ``spark.driver.memory``: always write the unit.

    >>> parse_memory("8g"), parse_memory("512M"), parse_memory("100k")
    (8589934592, 536870912, 102400)
    >>> parse_memory("lots")
    Traceback (most recent call last):
    ...
    spark_plugin.errors.ConfigError: memory size 'lots' is not a whole number with a unit k, m, g or t (e.g. 512m, 8g)
    """
    t = str(text).strip().lower()
    if t.endswith("b") and len(t) > 1 and t[-2] in "kmgtp":
        t = t[:-1]
    digits, unit = (t[:-1], t[-1]) if t and t[-1] in _UNITS else (t, "")
    if not digits.isdigit():
        raise ConfigError(f"memory size {text!r} is not a whole number with a unit k, m, g or t "
                          f"(e.g. 512m, 8g)")
    return int(digits) * _UNITS[unit]


def format_memory(nbytes: int) -> str:
    """``nbytes`` as a Spark memory string in whole MiB (``8601m``), or GiB when exact.

    >>> format_memory(8 << 30), format_memory(3 << 29)
    ('8g', '1536m')
    """
    mib = max(1, int(nbytes) >> 20)
    return f"{mib >> 10}g" if mib % 1024 == 0 else f"{mib}m"


def driver_heap_bytes(spark) -> int:
    """The driver JVM's largest heap (``Runtime.maxMemory``): what ``spark.driver.memory``
    (or ``spark-submit --driver-memory``) actually gave it."""
    return int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())


def machine_memory() -> int:
    """Bytes of memory this machine gives this process: the physical memory, or the
    cgroup's limit (``/sys/fs/cgroup/memory.max``, v1 ``memory.limit_in_bytes``) when lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        total = 0
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = Path(f).read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and 0 < int(limit) < (total or 1 << 62):
            total = int(limit)
    return total


def default_driver_memory(total: int | None = None) -> int:
    """The driver JVM's heap the ``local`` preset chooses: :data:`DRIVER_MEMORY_SHARE` of
    ``total`` (default :func:`machine_memory`), rounded down to 256 MiB, within
    [:data:`MIN_DRIVER_MEMORY`, :data:`MAX_DRIVER_MEMORY`].

    >>> format_memory(default_driver_memory(24 << 30)), format_memory(default_driver_memory(1 << 30))
    ('8448m', '1g')
    """
    total = machine_memory() if total is None else int(total)
    share = int(total * DRIVER_MEMORY_SHARE) >> 28 << 28
    return min(MAX_DRIVER_MEMORY, max(MIN_DRIVER_MEMORY, share))


def write_discovery_script(path: str | os.PathLike) -> Path:
    """Write :data:`GPU_DISCOVERY_SCRIPT` to ``path``, executable; return the path."""
    p = Path(path)
    p.write_text(GPU_DISCOVERY_SCRIPT)
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


def _local(cores: int | None) -> list[Setting]:
    if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
        raise ConfigError(f"cores must be a positive integer, got {cores!r}")
    n = cores if cores is not None else (os.cpu_count() or 1)
    total = machine_memory()
    driver = default_driver_memory(total)
    return [
        Setting("spark.master", f"local[{cores if cores is not None else '*'}]",
                "embedded Spark in this process, one task slot per core"),
        Setting("spark.sql.shuffle.partitions", str(n),
                "one shuffle partition per core instead of 200: small local data, no idle "
                "tasks, few tiny output batches for the driver to apply"),
        Setting("spark.default.parallelism", str(n), "the same for RDD operations"),
        Setting("spark.sql.execution.arrow.pyspark.enabled", "true",
                "toPandas/createDataFrame through Arrow, like mapInArrow and toArrow"),
        Setting("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 16),
                "delta rows are small (about 40-60 bytes): 65,536 rows (a few MB) per Arrow "
                "batch amortise the JVM-Python round trip (default 10,000)"),
        Setting("spark.python.worker.reuse", "true",
                "keep Python workers across tasks so the Numba kernels they load stay cached"),
        Setting("spark.driver.bindAddress", "127.0.0.1", "embedded: listen on loopback only"),
        Setting("spark.driver.host", "127.0.0.1",
                "embedded: executors reach the driver over loopback, whatever the hostname "
                "resolves to"),
        Setting("spark.ui.showConsoleProgress", "false",
                "no progress bars interleaved with the job's own output"),
        Setting("spark.driver.memory", format_memory(driver),
                f"{DRIVER_MEMORY_SHARE:.0%} of this machine's {total / (1 << 30):.1f} GiB "
                f"(at least 1g): embedded, the tasks run in the driver JVM, and Spark's 1g "
                f"default runs out of heap on a few million collected edges; the rest is left "
                f"to the Python driver, the Python workers and the OS"),
        Setting("spark.driver.maxResultSize", format_memory(driver // 2),
                "half the driver's heap (default 1g): a job whose collected results would "
                "not fit fails with Spark's named error instead of exhausting the heap"),
    ]


def _gpu_cluster(script: str, tasks_per_gpu: int) -> list[Setting]:
    return [
        Setting("spark.executor.resource.gpu.amount", "1",
                "one GPU per executor (the RAPIDS Accelerator supports exactly one)"),
        Setting("spark.task.resource.gpu.amount", _fraction(1 / tasks_per_gpu),
                f"{tasks_per_gpu} tasks share an executor's GPU; every task is still handed "
                f"its address, which spark_plugin.service.device maps to a CUDA device"),
        Setting("spark.executor.resource.gpu.discoveryScript", script,
                "how an executor finds its GPUs (standalone, YARN and Kubernetes all run it)"),
        Setting("spark.executor.resource.gpu.vendor", "nvidia.com",
                "Kubernetes device-plugin resource name (ignored by other cluster managers)"),
        Setting("spark.python.worker.reuse", "true",
                "keep Python workers across tasks: compiled kernels and the CUDA context are "
                "created once per worker, not per task"),
        Setting("spark.sql.execution.arrow.pyspark.enabled", "true",
                "toPandas/createDataFrame through Arrow"),
        Setting("spark.sql.execution.arrow.maxRecordsPerBatch", str(1 << 17),
                "larger Arrow batches (131,072 rows) amortise host-device copies"),
        Setting("spark.cleaner.referenceTracking.cleanCheckpoints", "true",
                "remove a reliable checkpoint's files once its RDD is unreachable (the WCC "
                "job's --checkpoint-dir supersedes one per stage)"),
    ]


def _rapids(jar, concurrent, alloc, max_alloc, py_alloc, py_max_alloc) -> list[Setting]:
    if jar is None:
        raise ConfigError(
            "the rapids preset needs the RAPIDS Accelerator jar: pass "
            "rapids_jar='/path/to/rapids-4-spark_2.13-<version>.jar' (Maven Central, "
            "com.nvidia:rapids-4-spark_2.13, the version matching your Spark and CUDA)")
    jar_path = Path(jar)
    if jar_path.suffix != ".jar" or not jar_path.is_file():
        raise ConfigError(f"RAPIDS Accelerator jar {str(jar)!r} "
                          f"{'is not a .jar file' if jar_path.is_file() else 'does not exist'}")
    for name, v in (("gpu_alloc_fraction", alloc), ("gpu_max_alloc_fraction", max_alloc),
                    ("python_gpu_alloc_fraction", py_alloc),
                    ("python_gpu_max_alloc_fraction", py_max_alloc)):
        if not 0 < v < 1:
            raise ConfigError(f"{name} must lie in (0, 1), got {v!r}")
    if alloc > max_alloc or py_alloc > py_max_alloc:
        raise ConfigError("an initial GPU pool fraction exceeds its maximum: gpu_alloc_fraction "
                          f"{alloc} / max {max_alloc}, python {py_alloc} / max {py_max_alloc}")
    if max_alloc + py_max_alloc >= 1:
        raise ConfigError(f"gpu_max_alloc_fraction + python_gpu_max_alloc_fraction = "
                          f"{max_alloc + py_max_alloc:g} leaves no GPU memory outside the pools "
                          f"(CUDA contexts, cuDF and CuPy scratch); keep the sum below 1")
    if isinstance(concurrent, bool) or not isinstance(concurrent, int) or concurrent < 1:
        raise ConfigError(f"concurrent_gpu_tasks must be a positive integer, got {concurrent!r}")
    jar_abs = str(jar_path.resolve())
    return [
        Setting("spark.plugins", RAPIDS_PLUGIN, "load the RAPIDS Accelerator"),
        Setting("spark.jars", jar_abs, "ship the plugin jar to the driver and the executors"),
        Setting("spark.rapids.sql.enabled", "true", "run supported SQL operators on the GPU"),
        Setting("spark.rapids.sql.concurrentGpuTasks", str(concurrent),
                "tasks running SQL on one GPU at a time: 2 overlaps I/O with GPU work and "
                "still keeps the executor's GPU memory for few tasks"),
        Setting("spark.rapids.memory.gpu.pool", "ASYNC",
                "CUDA's stream-ordered allocator (cudaMallocAsync), less fragmentation than "
                "a fixed arena; the executor's pool is bounded by the fractions below"),
        Setting("spark.rapids.memory.gpu.allocFraction", _fraction(alloc),
                "initial share of GPU memory for the executor's RMM pool: well below the "
                "default (0.9 or 1.0 by version), to leave room for the Python workers' kernels"),
        Setting("spark.rapids.memory.gpu.maxAllocFraction", _fraction(max_alloc),
                "cap of the executor's pool, so it never takes the Python workers' share"),
        Setting("spark.rapids.sql.python.gpu.enabled", "true",
                "schedule Python workers (mapInArrow) on the executor's GPU, sharing it with "
                "the JVM"),
        Setting("spark.python.daemon.module", "rapids.daemon",
                "the RAPIDS Python daemon that sets up GPU scheduling and RMM in each worker "
                "(rapids.daemon_databricks on Databricks)"),
        Setting("spark.executorEnv.PYTHONPATH", jar_abs,
                "the daemon's Python files are packed in the plugin jar; the jar must be at "
                "this path on every executor host (or distribute it with --py-files)"),
        Setting("spark.submit.pyFiles", jar_abs,
                "the same files for YARN, which puts --py-files on the workers' path"),
        Setting("spark.rapids.python.memory.gpu.allocFraction", _fraction(py_alloc),
                "initial RMM pool of all Python workers of an executor: our consolidation "
                "kernels allocate from it (CuPy is routed through RMM)"),
        Setting("spark.rapids.python.memory.gpu.maxAllocFraction", _fraction(py_max_alloc),
                "cap of the Python workers' pool; with the executor's cap it leaves GPU memory "
                "for CUDA contexts and scratch space"),
        Setting("spark.rapids.memory.pinnedPool.size", "2g",
                "pinned host memory for fast host-device copies (Arrow batches in and out)"),
        Setting("spark.locality.wait", "0s",
                "do not hold GPU tasks back waiting for data locality"),
    ]


def _fraction(x: float) -> str:
    return f"{x:.6g}"
