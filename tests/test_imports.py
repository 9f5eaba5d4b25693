"""Importing a package must not drag in heavy optional dependencies (checked in a fresh interpreter)."""

import subprocess
import sys

import pytest


def _loaded_modules_after_import(package: str, forbidden: list[str]) -> list[str]:
    code = (
        "import sys\n"
        f"import {package}\n"
        f"print(','.join(m for m in {forbidden!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"`import {package}` failed:\n{result.stderr}"
    return [name for name in result.stdout.strip().split(",") if name]


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("engine", ["cupy", "pyspark", "numba.cuda", "pyarrow"]),
        ("gpu_kernels", ["cupy", "pyspark"]),
        ("spark_plugin", ["cupy"]),
        # issue 13: the engine's CLI finds the Spark commands by entry point, never by import
        ("engine.cli.main", ["spark_plugin", "pyspark", "pyarrow", "cupy"]),
    ],
)
def test_import_stays_light(package, forbidden):
    offenders = _loaded_modules_after_import(package, forbidden)
    assert not offenders, f"`import {package}` loaded {offenders}"
