"""``tfront wcc`` as a terminal shows it, and what it leaves behind.

* Under a pseudo-terminal the progress bar and the epoch lines never share a line, the bar's
  round number for an epoch ends at the epoch line's ``rounds``, Spark's start-up warnings
  are not shown, and the totals report kernel loading apart from progress tracking.
* ``--quiet`` prints nothing; ``-v`` / ``-vv`` parse.
* Round lines (``progress=2``) count rounds exactly as the epoch summaries do.
* ``--checkpoint-dir`` keeps only the newest final epoch's stars and labels.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import _parser
from spark_plugin.jobs.command import verbosity
from spark_plugin.jobs.wcc.job import WccResult, run_wcc

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[4]
TFRONT = [sys.executable, "-c", "import sys; from engine.cli.main import main; sys.exit(main())"]
# a path of 9 vertices in two epochs: several Spark rounds per epoch when the driver does
# not finish epochs (TFRONT_WCC_DRIVER_ROWS=0), one round each when it does
PATH_EDGES = "".join(f"{i} {i + 1}\n" for i in range(8))
SPARK_NOISE = ("WARN", "log4j", "Setting default log level", "NativeCodeLoader",
               "incubator modules", "To adjust logging level")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    env.pop("COLUMNS", None)
    return env


def _screen(raw: str) -> list[str]:
    """What a terminal shows: each line as the last overwrite of every column (``\\r``
    returns to column 0 and later text overwrites earlier text)."""
    rows = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        buf: list[str] = []
        for seg in line.split("\r"):
            buf[:len(seg)] = seg
        rows.append("".join(buf).rstrip())
    return rows


def _run_in_pty(argv, env, cols=120):
    import fcntl
    import pty
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:   # the child: stdout and stderr are the terminal
        try:
            os.chdir(ROOT)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:   # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_cli_in_a_terminal_lines_do_not_interleave_and_rounds_agree(tmp_path):
    src = tmp_path / "g.txt"
    src.write_text(PATH_EDGES)
    rc, raw = _run_in_pty(TFRONT + ["wcc", str(src), "--epochs", "2", "--partitions", "2",
                                    "--master", "local[2]", "--out", str(tmp_path / "o")],
                          _env())
    assert rc == 0, raw
    assert "wcc: " in raw and "epoch/s" in raw, raw   # the bar was drawn
    screen = _screen(raw)
    epoch_rows = [r for r in screen if "vertices" in r]
    assert len(epoch_rows) == 2, screen
    for e, row in enumerate(epoch_rows):   # each epoch line alone on its row
        assert re.fullmatch(rf"epoch {e}: vertices \d+, edges \d+, components 1, rounds \d+, "
                            r"[\d.]+ s, kernels cpu \d+; input \S+ rows \d+-\d+", row), screen
    # the bar's round numbers for each epoch, in the order drawn, end at its epoch line's count
    for e, row in enumerate(epoch_rows):
        rounds = int(re.search(r"rounds (\d+)", row).group(1))
        drawn = [int(r) for r in re.findall(rf"epoch {e} round (\d+)", raw)]
        assert drawn and max(drawn) == rounds and min(drawn) == 1, (e, rounds, drawn)
    total = next(r for r in screen if r.startswith("total: "))
    assert re.fullmatch(r"total: 2 epochs, [\d.]+ s \(kernels (loaded|compiled) [\d.]+ s.*, "
                        r"progress tracking [\d.]+ s\), labels in .*", total), total
    assert screen[-2].startswith("kernels: ") or screen[-1].startswith("kernels: "), screen
    noise = [r for r in screen if any(n in r for n in SPARK_NOISE)]
    assert not noise, noise


def test_cli_quiet_prints_nothing_and_still_writes_the_labels(tmp_path):
    src = tmp_path / "g.txt"
    src.write_text(PATH_EDGES)
    out = tmp_path / "o"
    proc = subprocess.run(TFRONT + ["wcc", str(src), "--quiet", "--partitions", "2", "--master",
                                    "local[2]", "--out", str(out)], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == "", (proc.stdout, proc.stderr)
    import pyarrow.parquet as pq
    assert pq.read_table(out).num_rows == 9


def test_verbosity_options():
    p = _parser()
    assert verbosity(p.parse_args(["wcc", "g"])) == 1
    assert verbosity(p.parse_args(["wcc", "g", "-q"])) == 0
    assert verbosity(p.parse_args(["wcc", "g", "-v"])) == 2
    assert verbosity(p.parse_args(["wcc", "g", "-vv"])) == 3
    assert verbosity(p.parse_args(["wcc", "g", "-vvvv"])) == 3
    with pytest.raises(SystemExit):
        p.parse_args(["wcc", "g", "-q", "-v"])
    res = WccResult(seconds=4.0, tracking_seconds=0.05, kernel_seconds=0.2)
    assert res.total_line("o") == ("total: 0 epochs, 4.00 s (kernels loaded 0.20 s, progress "
                                   "tracking 0.05 s); nothing written to o")
    res.kernels_compiled = 12
    assert "kernels compiled 0.20 s (once: cached for later runs)" in res.total_line()


def _rdd_dirs(ck: Path) -> set:
    return {p for p in ck.rglob("rdd-*") if p.is_dir()}


def test_checkpoint_dir_keeps_only_the_newest_final_epoch_and_rounds_agree(
        spark, tmp_path, monkeypatch, capsys):
    """Every stage of the Spark loop is checkpointed; after the run only the last epoch's
    stars and labels are left (two checkpoints), also when a later epoch fails. The round
    lines of ``progress=2`` number each epoch's rounds 1..R, R its summary's ``rounds``."""
    monkeypatch.setenv("TFRONT_WCC_DRIVER_ROWS", "0")
    src = tmp_path / "g.txt"
    src.write_text(PATH_EDGES)
    ck = tmp_path / "ck"
    res = run_wcc(spark, src, epochs=2, partitions=2, progress=2, checkpoint_dir=str(ck))
    assert res.labels.num_rows == 9 and set(res.labels.column("component").to_pylist()) == {0}
    assert res.stages > 4 and max(s.rounds for s in res.epochs) > 1   # many checkpoints
    left = _rdd_dirs(ck)
    assert len(left) == 2 and len(res.checkpoints) == 2, (left, res.checkpoints)
    assert {p.name for p in left} == {c.rsplit("/", 1)[-1] for c in res.checkpoints}
    err = capsys.readouterr().err
    for s in res.epochs:
        said = [int(r) for r in re.findall(rf"wcc: epoch {s.epoch} round (\d+):", err)]
        assert said == list(range(1, s.rounds + 1)), (s, err)

    # epoch 1 is malformed: the run fails, and what is left is epoch 0's state
    d = tmp_path / "epochs"
    d.mkdir()
    (d / "e0.txt").write_text("0 1\n1 2\n")
    (d / "e1.txt").write_text("2 3\n3 x\n")
    ck2 = tmp_path / "ck2"
    from spark_plugin.jobs.wcc.job import EdgeInputError
    with pytest.raises(EdgeInputError):
        run_wcc(spark, d, partitions=2, progress=False, checkpoint_dir=str(ck2))
    assert len(_rdd_dirs(ck2)) == 2
