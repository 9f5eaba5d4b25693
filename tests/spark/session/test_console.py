"""Lines on the console (:func:`spark_plugin.session.console.write_line`).

Issue 23 item 13: under ``-v`` a Spark WARN line and a round line came out glued together.
The JVM's lines are forwarded on their own thread while the job writes its round lines, and a
line used to be written as the text and then its newline; a second thread could write in
between. A stream that yields between writes makes that interleaving certain.
"""

import threading
import time

from spark_plugin.session.console import write_line


class SlowStream:
    """A text stream whose every write lets other threads run before it returns."""

    def __init__(self):
        self.chunks, self._lock = [], threading.Lock()

    def write(self, s):
        with self._lock:
            self.chunks.append(s)
        time.sleep(0.0005)
        return len(s)

    def flush(self):
        pass


def test_lines_from_two_threads_are_never_glued_gh23():
    out = SlowStream()

    def writer(tag):
        for i in range(60):
            write_line(f"{tag} line {i}", out)

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("jvm", "round")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = "".join(out.chunks).splitlines()
    assert sorted(lines) == sorted([f"{t} line {i}" for t in ("jvm", "round") for i in range(60)])


def test_gh32_the_local_checkpoint_warning_is_said_from_info_only():
    """Issue 32 item 22: under -v (log level warn) Spark's ``RDD N was locally checkpointed``
    warning about the jobs' own localCheckpoint came every round; its logger is at error
    then, and left to the root level at info (-vv)."""
    from spark_plugin.session.console import log4j2_properties

    warn = log4j2_properties("warn").read_text()
    assert "logger.ckpt.name = org.apache.spark.rdd.MapPartitionsRDD" in warn
    assert "logger.ckpt.level = error" in warn
    assert "MapPartitionsRDD" not in log4j2_properties("info").read_text()
