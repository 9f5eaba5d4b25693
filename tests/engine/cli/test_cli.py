"""The ``tfront`` command line as a user meets it (issue 11): option checks with argparse
messages, ``--version``, ``info``'s versions, a closed stdout, CLI wording of engine errors,
and input checks that happen before Spark starts."""

import argparse
import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.cli.main import EXIT_BROKEN_PIPE, _parser, main
from engine.core.workload import REPLAY_HEADER, parse_workload
from engine.errors import WorkloadFormatError

ROOT = Path(__file__).resolve().parents[3]


def parse_error(capsys, *argv):
    """argparse's exit status and message for ``tfront *argv``."""
    with pytest.raises(SystemExit) as ei:
        _parser().parse_args([str(a) for a in argv])
    return ei.value.code, capsys.readouterr().err


@pytest.mark.parametrize(("argv", "what"), [
    (["--partitions", "-3"], "argument --partitions: must be a positive integer, got -3"),
    (["--partitions", "0"], "argument --partitions: must be a positive integer, got 0"),
    (["--partitions", "two"], "argument --partitions: expected a positive integer, got 'two'"),
    (["--epochs", "0"], "argument --epochs: must be a positive integer, got 0"),
    (["--follow", "-1"], "argument --follow: must be a positive number of seconds"),
    (["--master", "bogus://x"], "argument --master: 'bogus://x' is not a Spark master URL"),
    (["--master", "local[0]"], "is not a Spark master URL"),
    (["--master", "local[2"], "is not a Spark master URL"),
    (["--loop-checkpoint", "-1"], "argument --loop-checkpoint: '-1' is not a number of seconds"),
    (["--loop-checkpoint", "never"], "'never' is not a number of seconds >= 0 or 'off'"),
])
def test_wcc_options_are_checked_by_the_parser(capsys, argv, what):
    code, err = parse_error(capsys, "wcc", "g.txt", *argv)
    assert code == 2 and what in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "local[2,4]", "local[*,3]",
                                 "local-cluster[2,1,1024]", "spark://h1:7077",
                                 "spark://h1:7077,h2:7077", "yarn", "k8s://https://k:6443",
                                 "mesos://m:5050"])
def test_wcc_master_forms_accepted(url):
    assert _parser().parse_args(["wcc", "g.txt", "--master", url]).master == url


def test_wcc_loop_checkpoint_forms():
    """``--loop-checkpoint``: seconds (default 60), ``0`` every round, ``off`` never -- and
    the API's ``loop_checkpoint`` refuses what the option refuses, naming the value."""
    from spark_plugin.errors import ConfigError
    from spark_plugin.jobs.wcc.job import loop_checkpoint_seconds

    parse = _parser().parse_args
    assert parse(["wcc", "g.txt"]).loop_checkpoint == 60.0
    assert parse(["wcc", "g.txt", "--loop-checkpoint", "0"]).loop_checkpoint == 0.0
    assert parse(["wcc", "g.txt", "--loop-checkpoint", "OFF"]).loop_checkpoint is None
    for bad in (-1, "nan", "inf", True, "soon"):
        with pytest.raises(ConfigError, match="loop_checkpoint must be a number of seconds"):
            loop_checkpoint_seconds(bad)


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as ei:
        _parser().parse_args(["--version"])
    assert ei.value.code == 0
    assert capsys.readouterr().out.strip() == f"tfront (timely-frontier) {version('timely-frontier')}"


def test_info_lists_pyspark_pyarrow_and_java(capsys):
    status = main(["info", "--backend", "cpu"])
    out = capsys.readouterr().out
    assert status == 0
    for name in ("pyspark", "pyarrow"):
        assert re.search(rf"^  {name} \S+", out, re.M), out
    assert re.search(r"^  java (\S+ \(/\S*java\)|not found .*)$", out, re.M), out


def test_replay_into_a_closed_pipe_exits_quietly(tmp_path):
    """``tfront replay FILE | head -1``: no ``Broken pipe`` message, the SIGPIPE status."""
    lines = ["timely-reach v1", "node 0 1 0", "node 1 0 1", "edge 1 0 0 0"]
    for k in range(4000):   # ~200 KB of frontiers: more than a pipe holds
        lines += ["batch", f"s 1 0 {k} 0 1", f"s 1 0 {k} 0 -1" if k else "s 1 0 0 1 1", "end"]
    wl = tmp_path / "big.txt"
    wl.write_text("\n".join(lines) + "\n")
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "replay", str(wl),
                             "--backend", "reference"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert first.decode() == REPLAY_HEADER + "\n"
    assert err == "", err


ZERO_CYCLE = textwrap.dedent("""\
    timely-reach v1
    node 0 0 0
    node 1 1 1
    summary 1 0 0 0 0
    edge 1 0 1 0
    """)


def test_zero_cycle_error_names_the_cli_option(capsys, tmp_path):
    p = tmp_path / "zc.txt"
    p.write_text(ZERO_CYCLE)
    for command in ("replay", "psi"):
        assert main([command, str(p)]) == 2
        err = capsys.readouterr().err
        assert "--allow-zero-cycles" in err and "allow_zero_cycles=True" not in err, err
    with pytest.raises(WorkloadFormatError, match="allow_zero_cycles=True"):   # the API's words
        parse_workload(ZERO_CYCLE)


@pytest.mark.parametrize("change", ["s 1 0 -1 0 1", f"s 1 0 0 {2**62} 1"])
def test_a_timestamp_error_names_its_line_once(capsys, tmp_path, change):
    p = tmp_path / "w.txt"
    p.write_text("timely-reach v1\nnode 0 1 0\nnode 1 0 1\nedge 1 0 0 0\nbatch\n"
                 f"{change}\nend\n")
    assert main(["replay", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("line 6") == 1 and "outside [0, 2**62)" in err, err


CHECKS = r"""
import json, os, sys
from engine.cli.main import main
res = []
for argv in json.loads(sys.argv[1]):
    res.append(main(argv))
print(json.dumps({"status": res, "pyspark": "pyspark" in sys.modules}))
"""


def test_wcc_input_is_checked_before_spark_starts(tmp_path):
    """Bad input exits 2 with the file (and line) named, and PySpark was never imported."""
    (tmp_path / "bad.csv").write_text("src,dst\n1,2\n3,x\n")
    (tmp_path / "c.txt").write_text("# nothing\n\n")
    (tmp_path / "pipe.csv").write_text("1|2\n")
    (tmp_path / "t.txt.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "e1.txt").write_text("1 2\n")
    (tmp_path / "empty").mkdir()
    cases = [
        (["wcc", str(tmp_path / "nope.txt")], "nope.txt' does not exist"),
        (["wcc", str(tmp_path / "bad.csv")], "bad.csv:3: vertex id 'x' is not an integer"),
        (["wcc", str(tmp_path / "c.txt")], "c.txt: no edges"),
        (["wcc", str(tmp_path / "pipe.csv")], "separates its fields by ',', ';' or a tab"),
        (["wcc", str(tmp_path / "t.txt.gz")], "t.txt.gz:1: the gzip data ends early"),
        (["wcc", str(tmp_path / "d"), "--epochs", "3"], "a directory has one epoch per file"),
        (["wcc", str(tmp_path / "empty")], "the directory has no epoch files"),
        (["wcc", str(tmp_path / "d" / "e1.txt"), "--follow"], "--follow needs a directory"),
    ]
    proc = subprocess.run([sys.executable, "-c", CHECKS, json.dumps([c[0] for c in cases])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got == {"status": [2] * len(cases), "pyspark": False}, (got, proc.stderr)
    errs = proc.stderr.splitlines()
    assert len(errs) == len(cases), proc.stderr
    for line, (_, what) in zip(errs, cases):
        assert line.startswith("tfront wcc: error: ") and what in line, line


NO_SPARK_EXTRA = r"""
import json, sys
sys.modules["pyarrow"] = None   # as if the spark extra were not installed: import fails
from engine.cli.main import main
status = [main(["psi", sys.argv[1]])]
light = "spark_plugin" not in sys.modules   # a built-in command loads no other package
status.append(main(["wcc", "edges.txt", "--epochs", "2"]))
print(json.dumps({"status": status, "light": light}))
"""


def test_spark_commands_register_by_entry_point_and_say_when_their_extra_is_missing(tmp_path):
    """Issue 13: ``engine.cli.main`` does not import ``spark_plugin``; ``tfront wcc`` comes from
    the ``tfront.commands`` entry point, and without pyarrow it exits 2 naming the extra."""
    from importlib.metadata import entry_points

    from engine.cli.main import COMMANDS_GROUP
    assert "wcc" in {ep.name for ep in entry_points(group=COMMANDS_GROUP)}
    wl = tmp_path / "w.txt"
    wl.write_text("timely-reach v1\nnode 0 1 0\nnode 1 0 1\nedge 1 0 0 0\n")
    proc = subprocess.run([sys.executable, "-c", NO_SPARK_EXTRA, str(wl)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got == {"status": [0, 2], "light": True}, (got, proc.stderr)
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tfront wcc: error: the wcc command cannot run "
                                               "here: "), proc.stderr
    assert "pyarrow" in err[0] and "pip install 'timely-frontier[spark]'" in err[0], err


@pytest.mark.parametrize("command", ["replay", "psi", "progress", "rollback"])
def test_gh23_unreadable_files_are_named_without_errno_text(capsys, tmp_path, command):
    """Issue 23, item 13: a missing file, a directory, or bytes that are not UTF-8 give one
    line ``tfront COMMAND: error: FILE: what`` (a rollback problem's bad byte: ``error: line N:
    ... (in FILE)``, the line its format fixes), status 2 -- no ``[Errno N]``, no traceback."""
    missing, latin1 = tmp_path / "missing.txt", tmp_path / "latin1.txt"
    latin1.write_bytes(b"# caf\xe9\n")
    for path, what in ((missing, "No such file or directory"), (tmp_path, "Is a directory"),
                       (latin1, "not UTF-8 text")):
        assert main([command, str(path)]) == 2
        out, err = capsys.readouterr()
        if command == "rollback" and path == latin1:   # a line of the file: format/rollback-v1
            assert err.startswith("error: line 1: ") and f"(in {path})" in err, err
        else:
            assert err.startswith(f"tfront {command}: error: {path}"), err
        assert what in err, err
        assert "Errno" not in err and err.count("\n") == 1 and out == ""


def _parsers(parser):
    """``parser`` and every parser below it (the commands', the commands' subcommands')."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


@pytest.mark.parametrize(("argv", "bad"), [
    (["wcc", "g.txt", "--out", "o", "--overwrit"], "--overwrit"),
    (["wcc", "g.txt", "--epoch", "2"], "--epoch"),
    (["sssp", "g.txt", "--source", "1", "--weight"], "--weight"),
    (["sssp", "g.txt", "--sourc", "1"], "--source"),   # the required one is missing
    (["replay", "w.txt", "--work", "2"], "--work"),
    (["rollback", "r.txt", "--solv", "batched"], "--solv"),
])
def test_an_abbreviated_option_is_refused_gh23(capsys, argv, bad):
    """Issue 23 item 10: ``--overwrit`` used to run as ``--overwrite``. No parser of
    ``tfront`` matches prefixes; every parser of the tree is made with allow_abbrev=False."""
    code, err = parse_error(capsys, *argv)
    assert code == 2 and bad in err, err
    parsers = list(_parsers(_parser()))
    assert len(parsers) > 7 and all(not p.allow_abbrev for p in parsers), \
        [p.prog for p in parsers if p.allow_abbrev]
    made = []
    for path in ROOT.glob("**/*.py"):   # every parser of the tree's modules and scripts
        if ".venv" in path.parts or "tests" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "ArgumentParser":
                made.append((str(path.relative_to(ROOT)), any(
                    k.arg == "allow_abbrev" and getattr(k.value, "value", True) is False
                    for k in node.keywords)))
    assert len(made) > 10 and all(ok for _, ok in made), [p for p, ok in made if not ok]


@pytest.mark.parametrize(("argv", "command"), [
    (["wcc", "g.txt", "--outdir", "x"], "wcc"),
    (["sssp", "g.txt", "--source", "1", "--outdir", "x"], "sssp"),
    (["replay", "w.txt", "--bogus"], "replay"),
    (["--bogus", "psi", "w.txt"], "psi"),
])
def test_gh23_an_unknown_option_is_the_commands_error_with_its_usage(capsys, argv, command):
    """Issue 23 item 13: ``tfront wcc ... --outdir x`` printed the top-level usage (which,
    for a built-in command, listed no wcc or sssp); the command's own usage and prefix."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.startswith(f"usage: tfront {command} "), err
    assert f"tfront {command}: error: unrecognized arguments: " in err, err


def test_gh23_the_top_level_usage_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main([])
    err = capsys.readouterr().err
    assert all(c in err for c in ("wcc", "sssp", "replay", "psi", "progress", "rollback")), err


def test_gh23_a_workload_header_after_comments_is_not_called_the_first_line(capsys, tmp_path):
    """Issue 23 item 13: ``line 4: first line must be ...`` for a file whose first lines are
    comments: the header must come first, before it only comments and blank lines."""
    w = tmp_path / "w.txt"
    w.write_text("# a comment\n\n# another\n1 2\n")
    assert main(["psi", str(w)]) == 2
    assert capsys.readouterr().err == (
        "tfront psi: error: line 4: the header 'timely-reach v1' must come first (before it "
        "only comments and blank lines), got '1 2'\n")
    w.write_text("1 2\n")
    assert main(["psi", str(w)]) == 2
    assert "line 1: the first line must be 'timely-reach v1', got '1 2'" in \
        capsys.readouterr().err


def run_cli(capsys, *argv):
    """Run ``tfront *argv``; return (exit status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def _chain_workload(n: int) -> str:
    """A chain of ``n`` operators from the scope's output back to its input (identity
    summaries): every location reaches those after it, about ``2 n**2`` pairs."""
    lines = ["timely-reach v1", "node 0 1 1"] + [f"node {k} 1 1" for k in range(1, n + 1)]
    lines += ["edge 0 0 1 0"] + [f"edge {k} 0 {k + 1} 0" for k in range(1, n)] + [f"edge {n} 0 0 0"]
    lines += [f"summary {k} 0 0 0 0" for k in range(1, n + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_gh32_psi_of_a_graph_too_large_is_refused_before_computing_it(capsys, tmp_path, backend):
    """A 20,000-operator chain (a 1 MB file) died with a 5.96 GiB allocation traceback: its
    Psi has 800 million pairs. Refused at the default limit, naming the size and the option;
    with a limit above its pairs, a small chain prints its closure."""
    path = tmp_path / "chain.txt"
    path.write_text(_chain_workload(20_000))
    status, out, err = run_cli(capsys, "psi", path, "--backend", backend)
    assert (status, out) == (2, "")
    assert err.startswith("tfront psi: error: Psi of this graph (40,002 locations) has more "
                          "than 200,"), err
    assert "max_summaries = 20,000,000" in err and "--max-summaries" in err and " GB as arrays" in err
    assert err.count("\n") == 1
    path.write_text(_chain_workload(3))   # 8 locations, 36 pairs (0 reaches all 8, ...)
    status, _, err = run_cli(capsys, "psi", path, "--backend", backend, "--max-summaries", 35)
    assert status == 2 and "has 36 pairs of locations joined by a path" in err
    status, out, _ = run_cli(capsys, "psi", path, "--backend", backend, "--max-summaries", 36)
    assert status == 0 and out.count("\nP ") == 20   # 4 inputs: 4+3+2+1 from t, 4+3+2+1 from s


NOT_INSTALLED = r"""
import importlib.metadata as md, json, sys
real = md.entry_points
md.entry_points = lambda **kw: [] if kw.get("group", "").startswith("tfront.") else real(**kw)
class NoSpark:  # a GPU host's image: no PySpark, no py4j
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, NoSpark())
from engine.cli.main import main
rc = main(["wcc", sys.argv[1], "--out", sys.argv[2], "--backend", "cpu", "-q"])
print(json.dumps({"rc": rc, "spark": any(m.startswith("pyspark") for m in sys.modules)}))
"""


def test_gh34_a_checkout_that_is_not_installed_still_has_the_job_commands(tmp_path):
    """Issue 34, item 4: ``python -m engine.cli.main wcc`` from a source checkout that pip
    never installed (a GPU host's image: no entry points, no PySpark) finds ``wcc`` and
    ``sssp`` in the checkout's ``pyproject.toml`` and finishes the epoch on the driver."""
    import pyarrow.parquet as pq
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n5 6\n")
    out = tmp_path / "labels"
    proc = subprocess.run([sys.executable, "-c", NOT_INSTALLED, str(edges), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"rc": 0, "spark": False}, proc.stderr
    got = pq.read_table(str(out)).to_pydict()
    comp = dict(zip(got["vertex"], got["component"]))
    assert comp[0] == comp[1] == comp[2] != comp[5] == comp[6]
    from engine.cli.main import _checkout_entry_points
    assert {ep.name for ep in _checkout_entry_points("tfront.commands")} >= {"wcc", "sssp"}
