"""How much of an epoch the driver may finish itself: the jobs' shared sizing rule.

An epoch whose work fits the driver is finished there by one kernel call -- WCC's global
union-find, SSSP's Dijkstra over the whole graph -- instead of one Spark job per round. The
limit follows the driver's memory: per row of the epoch's loop input the driver JVM holds
about :data:`DRIVER_JVM_BYTES_PER_ROW` (rows shipped and collected as serialized blobs, with
the copies made while they move), of which collected results are about
:data:`DRIVER_RESULT_BYTES_PER_ROW` (bounded by ``spark.driver.maxResultSize``), and the
Python driver about :data:`DRIVER_PYTHON_BYTES_PER_ROW` (the rows, the kernel's arrays, the
result). :func:`driver_finish_rows` takes the smallest of the three bounds, or the job's
environment variable (``0``: every round on Spark), and says which it took -- the jobs print
it in their Spark line.
"""

from __future__ import annotations

import os

__all__ = ["driver_finish_rows", "DRIVER_JVM_BYTES_PER_ROW", "DRIVER_RESULT_BYTES_PER_ROW",
           "DRIVER_PYTHON_BYTES_PER_ROW", "DRIVER_FINISH_ROWS"]

DRIVER_JVM_BYTES_PER_ROW = 128
DRIVER_RESULT_BYTES_PER_ROW = 40
DRIVER_PYTHON_BYTES_PER_ROW = 256
#: The limit for a driver with Spark's default 1g heap (about 8.4M rows).
DRIVER_FINISH_ROWS = (1 << 30) // DRIVER_JVM_BYTES_PER_ROW


def driver_finish_rows(spark, env: str) -> tuple[int, str]:
    """The largest loop input (rows) of an epoch finished on the driver, and how it was chosen:
    the environment variable ``env`` when set, else the smallest of the driver JVM's heap over
    :data:`DRIVER_JVM_BYTES_PER_ROW`, ``spark.driver.maxResultSize`` over
    :data:`DRIVER_RESULT_BYTES_PER_ROW`, and the memory outside the JVM
    (:func:`~spark_plugin.session.config.machine_memory` less the heap) over
    :data:`DRIVER_PYTHON_BYTES_PER_ROW`.

    Raises
    ------
    ConfigError
        ``env`` is set but not a non-negative integer.
    """
    from spark_plugin.errors import ConfigError
    from spark_plugin.session.config import format_memory, machine_memory, parse_memory
    from spark_plugin.session.lazy import conf_of, heap_of

    value = os.environ.get(env)
    if value is not None and value.strip() != "":
        try:
            rows = int(value)
        except ValueError:
            rows = -1
        if rows < 0:
            raise ConfigError(f"${env} must be a non-negative integer, got {value!r}")
        return rows, f"${env}"
    heap = heap_of(spark)   # a lazy session's: the -Xmx it will start with
    limits = {f"driver heap {format_memory(heap)}": heap // DRIVER_JVM_BYTES_PER_ROW}
    result_size = conf_of(spark, "spark.driver.maxResultSize", "1g")
    try:
        cap = parse_memory(result_size if result_size[-1:].isalpha() else result_size + "b")
    except Exception:   # an unusual value: Spark checks it; leave this bound out
        cap = 0
    if cap > 0:
        limits[f"spark.driver.maxResultSize {result_size}"] = cap // DRIVER_RESULT_BYTES_PER_ROW
    outside = machine_memory() - heap
    if outside > 0:
        limits[f"{format_memory(outside)} outside the JVM"] = outside // DRIVER_PYTHON_BYTES_PER_ROW
    why, rows = min(limits.items(), key=lambda kv: kv[1])
    return int(rows), why
