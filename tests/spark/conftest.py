"""The one real local Spark session shared by every ``spark`` test (session-scoped).

``local[2,4]``: two cores, and a task may fail up to 4 times before its job fails, so the
exactly-once tests can make every task fail on its first attempt. Two shuffle partitions,
no UI. Loopback networking comes from ``tests/conftest.py`` (``SPARK_LOCAL_IP``) and the
``local`` preset.
"""

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="PySpark is not installed: pip install -e '.[spark]'")
    from spark_plugin.session.config import build_session

    session = build_session("local", cores=2, app_name="timely-frontier-tests", conf={
        "spark.master": "local[2,4]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
