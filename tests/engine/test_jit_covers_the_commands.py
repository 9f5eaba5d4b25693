"""``python -m engine.jit`` (``make venv``) compiles every kernel the commands' first runs use
(issue 32 item 17: the first ``make run`` compiled one more kernel, the first ``tfront sssp``
several): with a fresh Numba cache, after it, ``tfront wcc`` and ``tfront sssp`` (hops and
weights) compile nothing."""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

RUN = textwrap.dedent("""
    import sys
    from numba.core import event
    compiled = []
    class Seen(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher")
            compiled.append(getattr(getattr(d, "py_func", d), "__qualname__", str(d)))
        def on_end(self, ev):
            pass
    event.register("numba:compile", Seen())
    from engine.cli.main import main
    for argv in (sys.argv[1:5], sys.argv[5:9], sys.argv[9:]):
        assert main([a for a in argv if a]) == 0, argv
    print("COMPILED", sorted(set(compiled)))
""")


def test_gh32_engine_jit_compiles_what_the_first_runs_use(tmp_path):
    pytest.importorskip("pyspark")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    r = subprocess.run([sys.executable, "-m", "engine.jit"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rng = __import__("numpy").random.default_rng(1)
    edges = tmp_path / "e.txt"
    edges.write_text("".join(f"{a} {b}\n" for a, b in rng.integers(0, 3000, (6000, 2))))
    weighted = tmp_path / "w.txt"
    weighted.write_text("1 2 0.5\n2 3 1\n3 4 2\n")
    argv = ["wcc", str(edges), "--epochs", "2", "sssp", str(edges), "--source", "1",
            "sssp", str(weighted), "--source", "1", "--weighted", "-q"]
    r = subprocess.run([sys.executable, "-c", RUN, *argv], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "COMPILED []"
