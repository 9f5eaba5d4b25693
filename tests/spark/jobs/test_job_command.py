"""The job commands at their edges (issue 23, "Round 3 at the edges"), as a user meets them:

* ``--overwrite`` (``overwrite=True``) removes only what a job wrote: an ``--out`` that is
  or contains the input, a folder without a manifest of ours, and one holding other files
  are refused, changing nothing (item 1);
* what the job would refuse about ``--out`` -- a file on its path, another job's output, a
  read-only folder -- and a ``--weighted`` input without weights are refused before Spark
  starts, naming the option and the path (item 8);
* a ``--source`` in no edge is said after the run (item 9);
* Ctrl-C in the middle of a job, sent to the process group as a terminal does: one line,
  exit status 130, no traceback (item 7), after ``starting Spark (MASTER) ...`` (item 11).
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_plugin.errors import OutputStateError
from spark_plugin.jobs.recovery import FORMAT, LOOP_DIR, MANIFEST, OutputLog, job_fingerprint

ROOT = Path(__file__).resolve().parents[3]
TFRONT = [sys.executable, "-c", "import sys; from engine.cli.main import main; sys.exit(main())"]


def _manifest(out: Path, job: dict, files=()) -> None:
    """``out`` as a job leaves it: its manifest (naming ``files`` as epoch 0's) and files."""
    out.mkdir(parents=True, exist_ok=True)
    for f in files:
        (out / f).write_bytes(b"PAR1")
    (out / MANIFEST).write_text(json.dumps({
        "format": FORMAT, "job": job, "complete": False, "total": None, "input": [],
        "loop": [], "output": [{"epoch": 0, "files": list(files), "rows": 1, "edges": 1}]
        if files else []}))


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_overwrite_removes_only_what_a_job_wrote_gh23(tmp_path):
    """Item 1: the input's own folder as --out, a folder with files but no manifest, and a
    job's folder holding a file it did not write are refused with overwrite, changing
    nothing; a folder holding only a job's files is emptied of them and started over."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "in.txt").write_text("1 2\n2 3\n")
    (d / "e1.txt").write_text("3 4\n")
    before = _tree(tmp_path)
    for edges, out, what in [(d / "in.txt", d, "contains the job's input"),
                             (d, d, "is the job's input"),
                             (d / "in.txt", d / "sub", None)]:
        if what is None:   # --out inside the input's folder, not containing it: allowed
            OutputLog.open(out, job_fingerprint(edges, 1, None), overwrite=True)
            shutil.rmtree(out)
            continue
        with pytest.raises(OutputStateError, match=f"--out {out} {what}"):
            OutputLog.open(out, job_fingerprint(edges, 1, None), overwrite=True)
    assert _tree(tmp_path) == before

    job = job_fingerprint(d / "in.txt", 1, None)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputStateError, match=f"no {MANIFEST}.*--overwrite .*removes only"):
        OutputLog.open(other, job, overwrite=True)
    mixed = tmp_path / "mixed"
    part = "part-epoch-000000-00000-0123456789ab.parquet"
    _manifest(mixed, job, [part])
    (mixed / "keep.csv").write_text("1,2\n")
    with pytest.raises(OutputStateError, match=r"files that no tfront job wrote \(keep\.csv\)"):
        OutputLog.open(mixed, job, overwrite=True)
    with pytest.raises(OutputStateError, match=r"files that no tfront job wrote \(keep\.csv\)"):
        OutputLog.open(mixed, job)   # resuming would have removed it as a leftover
    assert _tree(tmp_path) == {**before, "other/notes.txt": b"mine", "mixed/keep.csv": b"1,2\n",
                               f"mixed/{part}": b"PAR1",
                               f"mixed/{MANIFEST}": (mixed / MANIFEST).read_bytes()}

    (mixed / "keep.csv").unlink()   # only what a job wrote: its leftovers go too
    for name in (".epoch-000001.tmp", f"{LOOP_DIR}/epoch-000001-iteration-000002"):
        (mixed / name).mkdir(parents=True)
        (mixed / name / "part-00000.parquet").write_bytes(b"PAR1")
    (mixed / "part-epoch-000001-00000-ffffffffffff.parquet").write_bytes(b"PAR1")
    (mixed / f".{part}.crc").write_bytes(b"crc")
    log, resume = OutputLog.open(mixed, job, overwrite=True)
    log.close()   # its lock (issue 32) goes with it
    assert resume.epoch == 0 and os.listdir(mixed) == [MANIFEST]


@pytest.mark.spark
def test_run_wcc_and_run_sssp_overwrite_keep_the_input_gh23(spark, tmp_path):
    """Item 1 in the Python API: ``overwrite=True`` with the input's folder as ``out``."""
    from spark_plugin.jobs.sssp.job import run_sssp
    from spark_plugin.jobs.wcc.job import run_wcc

    d = tmp_path / "d"
    d.mkdir()
    (d / "e0.txt").write_text("1 2\n")
    (d / "e1.txt").write_text("2 3\n")
    before = _tree(d)
    with pytest.raises(OutputStateError, match="contains the job's input"):
        run_wcc(spark, d / "e0.txt", out=str(d), overwrite=True, progress=False)
    with pytest.raises(OutputStateError, match="is the job's input"):
        run_sssp(spark, d, 1, out=str(d), overwrite=True, progress=False)
    assert _tree(d) == before


CHECKS = r"""
import json, sys
from engine.cli.main import main
res = [main(argv) for argv in json.loads(sys.argv[1])]
print(json.dumps({"status": res, "pyspark": "pyspark" in sys.modules}))
"""


def _read_only_dir(tmp_path) -> Path:
    """A folder this process cannot write: one without write permission, or -- as root,
    whom permissions do not bind -- a read-only file system's (``/proc/sys`` in a
    container)."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    if Path("/proc/sys").is_dir() and not os.access("/proc/sys", os.W_OK):
        return Path("/proc/sys")
    pytest.skip("running as root with no read-only file system at hand: no folder here is "
                "read-only for this process")


def test_out_and_weights_are_checked_before_spark_starts_gh23(tmp_path):
    """Items 1 and 8: exit status 2, one line naming the option and the path, PySpark never
    imported, nothing changed."""
    base = tmp_path
    d = base / "d"
    d.mkdir()
    (d / "in.txt").write_text("1 2\n2 3\n")
    (base / "g.txt").write_text("1 2\n2 3\n")
    (base / "afile").write_text("x")
    (base / "notes").mkdir()
    (base / "notes" / "notes.txt").write_text("mine")
    _manifest(base / "sssp-out", {**job_fingerprint(base / "g.txt", 1, None), "job": "sssp",
                                  "source": 1, "weighted": False, "undirected": False})
    _manifest(base / "mixed", job_fingerprint(base / "g.txt", 1, None))
    (base / "mixed" / "keep.txt").write_text("mine")
    pq.write_table(pa.table({"src": [1], "dst": [2]}), base / "nw.parquet")
    pq.write_table(pa.table({"from": [1], "to": [2], "w": [1.0]}), base / "named.parquet")
    ro = _read_only_dir(tmp_path)
    before = _tree(base)
    cases = [
        (["wcc", "d/in.txt", "--out", "d", "--overwrite"],
         f"--out d contains the job's input {d / 'in.txt'}"),
        (["wcc", "d", "--out", "d", "--overwrite"], f"--out d is the job's input {d}"),
        (["wcc", "g.txt", "--out", "notes", "--overwrite"],
         f"--out notes: the directory has files (notes.txt) but no {MANIFEST}"),
        (["wcc", "g.txt", "--out", "mixed", "--overwrite"],
         "--out mixed holds files that no tfront job wrote (keep.txt)"),
        (["wcc", "g.txt", "--out", "afile/labels"],
         f"--out afile/labels cannot be a directory: {base / 'afile'} is a file"),
        (["wcc", "g.txt", "--out", "afile"], "--out afile: exists and is not a directory"),
        (["wcc", "g.txt", "--out", "sssp-out"],
         "--out sssp-out holds the output of another job (tfront sssp there, tfront wcc now)"),
        (["sssp", "g.txt", "--source", "1", "--out", str(ro / "dist")],
         f"--out {ro / 'dist'} cannot be created: {ro} is not writable"),
        (["sssp", "g.txt", "--source", "1", "--weighted"],
         "g.txt:1: malformed line '1 2': expected 'src dst weight' (--weighted: every "
         "edge has a third field, its weight)"),
        (["sssp", "nw.parquet", "--source", "1", "--weighted"],
         "nw.parquet: Parquet file has no column 'weight' (columns: src, dst); --weighted "
         "needs src, dst and weight"),
        # issue 23 item 12: a layout refused names the option that takes it
        (["wcc", "named.parquet"], "named.parquet: Parquet file has no column 'src' "
         "(columns: from, to, w); --columns SRC,DST"),
        (["wcc", "named.parquet", "--columns", "from,to,w"],
         "--columns 'from,to,w': 3 columns, expected two, SRC,DST (a third, WEIGHT, is read "
         "by tfront sssp --weighted)"),
        (["sssp", "named.parquet", "--source", "1", "--weighted", "--columns", "from,to"],
         "--columns 'from,to': 2 columns, expected three, SRC,DST,WEIGHT"),
        (["sssp", "named.parquet", "--source", "1", "--weighted", "--columns", "from,to,x"],
         "named.parquet: --columns from,to,x: no column 'x' (columns: from, to, w)"),
        # issue 23 item 13: more epochs than edges printed 'rows 1-0'
        (["wcc", "g.txt", "--epochs", "3"],
         "g.txt: --epochs 3 is more than its 2 edges: each epoch of a split input needs at "
         "least one (--epochs 2 or fewer)"),
        (["wcc", "g.txt", "--columns", "from,to"],
         "g.txt:1: --columns from,to names column 'from', but the file has no header row"),
    ]
    if ro.parent == tmp_path:   # a folder of ours: also as --out itself
        cases.append((["wcc", "g.txt", "--out", "ro"], "--out ro: the directory is not writable"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CHECKS, json.dumps([c[0] for c in cases])],
                          cwd=base, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got == {"status": [2] * len(cases), "pyspark": False}, (got, proc.stderr)
    errs = proc.stderr.splitlines()
    assert len(errs) == len(cases), proc.stderr
    for line, (argv, what) in zip(errs, cases):
        assert line.startswith(f"tfront {argv[0]}: error: ") and what in line, (line, what)
    assert _tree(base) == before


@pytest.mark.spark
def test_a_source_in_no_edge_is_said_after_the_run_gh23(spark, tmp_path, capsys):
    """Item 9: ``--source`` in no edge of any epoch (and one that is only a destination)
    reaches only itself, and a warning after the run says why, naming it."""
    from engine.cli.main import main

    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n3 0\n")
    assert main(["sssp", str(edges), "--source", "9", "--epochs", "2"]) == 0
    cap = capsys.readouterr()
    assert "reached 1," in cap.out.splitlines()[-2], cap.out
    assert (f"tfront sssp: warning: --source 9 is not in the graph: no edge of any epoch of "
            f"{edges} has vertex 9, so it reaches only itself") in cap.err.splitlines(), cap.err
    edges.write_text("0 1\n1 2\n3 2\n")
    assert main(["sssp", str(edges), "--source", "2"]) == 0
    assert "--source 2 has no outgoing edge" in capsys.readouterr().err
    assert main(["sssp", str(edges), "--source", "3"]) == 0   # reaches 2: nothing to say
    assert "warning" not in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("job", ["wcc", "sssp"])
def test_ctrl_c_in_the_middle_of_a_job_prints_one_line_and_exits_130_gh23(tmp_path, job):
    """Items 7 and 11: the command first says which master it will use, then that it starts
    Spark when the first epoch needs it (every epoch is forced onto Spark here); SIGINT
    to its whole process group, as a terminal's Ctrl-C, while it computes epoch 1 of 40:
    exit status 130, the ``interrupted after K epochs`` line last, and no other line --
    no traceback of py4j or PySpark, no Python worker crash."""
    rng = np.random.default_rng(23)
    n = 4000
    src, dst = rng.integers(0, n // 2, n), rng.integers(0, n // 2, n)
    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{s} {t}\n" for s, t in zip(src, dst)))
    argv = TFRONT + [job, str(edges), "--epochs", "40", "--master", "local[2]",
                     "--partitions", "2", "--out", str(tmp_path / "out")]
    if job == "sssp":
        argv += ["--source", str(src[0])]
    # every epoch on Spark (Ctrl-C during a Spark job): the session starts at epoch 0
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{f"TFRONT_{job.upper()}_DRIVER_ROWS": "0"})
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line, deadline = "", time.monotonic() + 500
        while not line.startswith("epoch 0:") and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 5)[0]:
                line = proc.stdout.readline()
                if not line:
                    break
        assert line.startswith("epoch 0:"), (line, proc.poll(), proc.stderr.read())
        os.killpg(proc.pid, signal.SIGINT)   # the terminal's Ctrl-C: the process group
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    lines = err.splitlines()
    assert lines[0].startswith(f"tfront {job}: Spark master local[2], started when an epoch "
                               f"needs it; driver memory"), err
    assert lines[1] == f"tfront {job}: starting Spark (local[2]) ...", err
    k = 1 + sum(x.startswith("epoch ") for x in out.splitlines())
    said = (f"epochs 0-{k - 1} are" if k > 1 else "epoch 0 is")
    assert lines[-1] == (f"tfront {job}: interrupted after {k} epoch{'s' if k > 1 else ''}; "
                         f"{said} written to {tmp_path / 'out'}"), err
    # nothing else: at most the note that the kernels are being compiled
    assert all(x.startswith(f"{job}: compiling") for x in lines[2:-1]), err


def test_gh32_a_broken_java_is_one_line_naming_it(tmp_path):
    """Issue 32 item 12: ``JAVA_HOME=/nonexistent`` when an epoch needs Spark gave a 57-line
    traceback ending in ``[JAVA_GATEWAY_EXITED]``, exit 1; now one line saying why, exit 2."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"src": [1], "dst": [2]}), tmp_path / "e.parquet")
    env = dict(os.environ, JAVA_HOME="/nonexistent")
    r = subprocess.run([sys.executable, "-m", "engine.cli.main", "wcc",
                        (tmp_path / "e.parquet").as_uri()], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["tfront wcc: error: cannot start Spark: java not found (no bin/java under "
                      "JAVA_HOME=/nonexistent; Spark needs Java 17+)"]
    assert "Traceback" not in r.stderr
