"""Edge input of the WCC job as users meet it: CSV headers detected, damaged ``.gz`` files and
empty inputs named, directories in natural order, a followed file taken only once complete,
input files that change under the job refused, Arrow tables and DataFrames as input, and the
``tfront wcc`` command's messages (issue 11 items 1-5, 8, 13; issue 15 item 13)."""

import gzip
import os
import re
import select
import signal
import subprocess
import sys
import time
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from spark_plugin.jobs.wcc.job import EdgeInputError, run_wcc
from spark_plugin.sources import (CSV_RULE, DONE_MARKER, check_input, edge_files,
                                  epoch_sources, read_edges)

from wcc_cases import EDGES, expected, write_text, written

WANT = [(1, 2), (2, 3), (3, 4)]


def pairs(t):
    return list(zip(t.column("src").to_pylist(), t.column("dst").to_pylist()))


def labels(res):
    t = res.labels   # a Spark source's (a DataFrame's) labels stay a DataFrame: collected here
    t = t if isinstance(t, pa.Table) else t.toArrow()
    return dict(zip(*(t.column(c).to_pylist() for c in ("vertex", "component"))))


@pytest.mark.parametrize("text", [
    "1,2\n2,3\n3,4\n",                       # no header: the first row is an edge
    "src,dst\n1,2\n2,3\n3,4\n",
    '"1","2"\n"2","3"\n"3","4"\n',
    "# comment\n\n1;2\n2;3\n3;4\n",
    "1\t2\n2\t3\n3\t4\n",
    '"dst";"src"\n2;1\n3;2\n4;3\n',          # named columns, in another order
    "1,2,0.5\n2,3,1\n3,4,2\n",               # a weight column: the first two are integers
    " 1 , 2\n2, 3\n3 ,4\n",
], ids=["no-header", "header", "quoted", "semicolon", "tab", "named", "weight", "spaces"])
def test_csv_first_row_is_a_header_only_unless_it_holds_two_integers(tmp_path, text):
    # regression: issue 11 item 1
    p = tmp_path / "n.csv"
    p.write_text(text)
    assert pairs(read_edges(p)) == WANT
    with gzip.open(tmp_path / "n.csv.gz", "wt") as f:
        f.write(text)
    assert pairs(read_edges(tmp_path / "n.csv.gz")) == WANT


@pytest.mark.parametrize(("text", "line", "what"), [
    ("1|2\n2|3\n", 1, "separates its fields by ',', ';' or a tab"),
    ('src,dst\n1,2\n"3,4\n', 3, "malformed CSV line"),
    ("src,dst\n1,2\n3,4,5\n", 3, "3 fields, the first row has 2"),
    ("src,dst\n1,2\n,3\n", 3, "vertex id '' is not an integer"),
])
def test_csv_that_cannot_be_read_says_what_is_accepted(tmp_path, text, line, what):
    # regression: issue 11 item 1
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(EdgeInputError, match=rf"bad\.csv:{line}: .*{what}") as ei:
        read_edges(p)
    assert ei.value.line == line
    assert "','" in CSV_RULE and "header unless its first two fields are integers" in CSV_RULE


def test_damaged_gzip_files_raise_edge_input_errors_naming_them(tmp_path):
    # regression: issue 11 item 5
    body = "".join(f"{i} {i + 1}\n" for i in range(20000)).encode()
    whole = gzip.compress(body)
    (tmp_path / "t.txt.gz").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(EdgeInputError, match=r"t\.txt\.gz:\d+: the gzip data ends early") as ei:
        read_edges(tmp_path / "t.txt.gz")
    assert ei.value.path == str(tmp_path / "t.txt.gz") and 1 < ei.value.line < 20000
    # the line named is the first one that is not complete in what decompresses
    readable = zlib.decompressobj(31).decompress(whole[:len(whole) // 2])
    assert ei.value.line == readable.count(b"\n") + 1 and body.startswith(readable)
    (tmp_path / "n.txt.gz").write_text("no such thing\n")
    with pytest.raises(EdgeInputError, match=r"n\.txt\.gz: not a gzip file \(it starts with "
                                             r"b'no'") as ei:
        read_edges(tmp_path / "n.txt.gz")
    assert ei.value.line is None
    bad_crc = bytearray(whole)
    bad_crc[-8] ^= 0xFF
    (tmp_path / "c.csv.gz").write_bytes(bytes(bad_crc))
    with pytest.raises(EdgeInputError, match=r"c\.csv\.gz:\d+: corrupt gzip data"):
        read_edges(tmp_path / "c.csv.gz")


def test_inputs_without_edges_are_refused_and_empty_epoch_files_noted(tmp_path):
    # regression: issue 11 items 3 and 6
    (tmp_path / "c.txt").write_text("# only a comment\n\n")
    (tmp_path / "e.txt").write_text("")
    (tmp_path / "h.csv").write_text("src,dst\n")
    pq.write_table(pa.table({"src": pa.array([], pa.int64()), "dst": pa.array([], pa.int64())}),
                   tmp_path / "z.parquet")
    for name in ("c.txt", "e.txt", "h.csv", "z.parquet"):
        with pytest.raises(EdgeInputError, match="no (edges|rows)") as ei:
            epoch_sources(tmp_path / name, 2)
        assert ei.value.path == str(tmp_path / name)
        with pytest.raises(EdgeInputError, match="no (edges|rows)"):
            check_input(tmp_path / name)
    (tmp_path / "empty").mkdir()
    with pytest.raises(EdgeInputError, match="the directory has no epoch files"):
        epoch_sources(tmp_path / "empty")
    with pytest.raises(EdgeInputError, match="the directory has no epoch files"):
        check_input(tmp_path / "empty")
    assert check_input(tmp_path / "empty", follow=1.0) == []   # a stream may start empty
    d = tmp_path / "d"
    d.mkdir()
    write_text(d / "e0.txt", EDGES)
    (d / "e1.txt").write_text("# nothing this time\n")
    assert check_input(d) == [f"{d / 'e1.txt'}: no edges (empty, or only comments); its "
                              f"epoch adds none"]
    big = tmp_path / "big.txt"          # larger than the peek: the first rows are checked
    big.write_text("1 2\n" * 100 + "3 x\n")
    assert check_input(big, 1, peek=64) == []
    with pytest.raises(EdgeInputError, match=r"big\.txt:101: vertex id 'x'"):
        check_input(big, 1, peek=1 << 16)


def test_directory_epochs_are_in_natural_order():
    # regression: issue 11 item 8
    from spark_plugin.sources import natural_key

    names = ["e10.txt", "e2.txt", "e1.txt", "e02b.txt", "a.txt"]
    assert sorted(names, key=natural_key) == ["a.txt", "e1.txt", "e2.txt", "e02b.txt",
                                              "e10.txt"]


def test_a_followed_file_is_taken_only_once_its_size_is_stable(tmp_path):
    """Issue 11 item 2: the writer appends between two polls: the file is taken only when a poll saw it
    unchanged, with all its edges."""
    d = tmp_path / "s"
    d.mkdir()
    f = d / "e0.txt"
    f.write_text("1 2\n")
    more = ["2 3\n", "3 4\n"]
    polls = []

    def sleep(_):
        polls.append(1)
        if more:
            with open(f, "a") as h:
                h.write(more.pop(0))
        else:
            (d / DONE_MARKER).touch()
    _, sources = epoch_sources(d, follow=30.0, poll=0.01, sleep=sleep)
    first = next(sources)
    assert pairs(first.read()) == WANT and first.what == str(f)
    assert len(polls) >= 3
    assert list(sources) == []


def test_a_followed_parquet_file_waits_for_its_footer(tmp_path):
    # regression: issue 11 item 2
    d = tmp_path / "s"
    d.mkdir()
    full = tmp_path / "x.parquet"
    pq.write_table(pa.table({"src": [1, 2, 3], "dst": [2, 3, 4]}), full)
    data = full.read_bytes()
    f = d / "e0.parquet"
    f.write_bytes(data[:-8])     # a writer that has not written its footer yet

    def sleep(_):
        if f.stat().st_size < len(data) and len(calls) > 2:
            f.write_bytes(data)
        calls.append(1)
        if len(calls) > 6:
            (d / DONE_MARKER).touch()
    calls = []
    _, sources = epoch_sources(d, follow=30.0, poll=0.01, sleep=sleep)
    assert pairs(next(sources).read()) == WANT


def test_a_followed_file_that_changes_after_it_was_taken_is_refused(tmp_path):
    # regression: issue 11 item 2
    d = tmp_path / "s"
    d.mkdir()
    f = d / "e0.txt"
    f.write_text("1 2\n")
    _, sources = epoch_sources(d, follow=30.0, poll=0.01, sleep=lambda _: None)
    src = next(sources)
    assert pairs(src.read()) == [(1, 2)]
    with open(f, "a") as h:      # the writer was not done after all
        h.write("2 3\n")
    with pytest.raises(EdgeInputError, match=r"e0\.txt: the edge file changed .*size 4 -> 8"):
        src.check()
    with pytest.raises(EdgeInputError, match=r"e0\.txt: the edge file changed after the job "
                                             r"took it"):
        next(sources)


@pytest.mark.spark
def test_directory_epochs_named_in_natural_order_empty_noted_bad_gzip_stops(spark, tmp_path):
    """Issue 11 items 3, 5, 8: e1, e2, e3 (no edges), e10 become epochs 0-3 in that order, each summary naming its
    file; a truncated e11.txt.gz then stops the job naming it, with epochs 0-3 written."""
    d = tmp_path / "d"
    d.mkdir()
    chunks = {"e1.txt": EDGES[:3], "e2.txt": EDGES[3:6], "e3.txt": [], "e10.txt": EDGES[6:]}
    for name, edges in chunks.items():
        write_text(d / name, edges)
    whole = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(5000)))
    (d / "e11.txt.gz").write_bytes(whole[:len(whole) // 2])
    out = str(tmp_path / "out")
    seen = []
    with pytest.raises(EdgeInputError, match=r"e11\.txt\.gz:\d+: the gzip data ends early"):
        run_wcc(spark, d, out=out, partitions=2, progress=False, on_epoch=seen.append)
    order = ["e1.txt", "e2.txt", "e3.txt", "e10.txt"]
    assert [s.source for s in seen] == [str(d / n) for n in order]
    assert [s.new_edges for s in seen] == [len(chunks[n]) for n in order]
    final = written(out)
    assert sorted(final) == [0, 1, 2, 3]
    for e in range(4):
        assert dict(final[e]) == expected([x for n in order[:e + 1] for x in chunks[n]])


def _replace_parquet(path, edges):
    tmp = path.parent / f".{path.name}.tmp"
    pq.write_table(pa.table({"src": [s for s, _ in edges], "dst": [t for _, t in edges]}), tmp)
    os.replace(tmp, path)


@pytest.mark.spark
@pytest.mark.parametrize("layout", ["dir-parquet", "file-parquet", "dir-text"])
def test_an_input_file_changed_between_epochs_stops_the_job_naming_it(spark, tmp_path, layout):
    """Issue 15 item 13: the inputs are stamped when the job starts; a file replaced (fewer
    rows) or appended to after that stops the job with EdgeInputError naming it, before
    anything of its epoch is written."""
    out = str(tmp_path / "out")
    if layout == "file-parquet":
        victim = tmp_path / "g.parquet"
        _replace_parquet(victim, EDGES)
        edges, epochs = victim, 2
    else:
        edges, epochs = tmp_path / "d", 1
        edges.mkdir()
        ext = "parquet" if layout == "dir-parquet" else "txt"
        for k, part in enumerate((EDGES[:5], EDGES[5:])):
            if ext == "parquet":
                _replace_parquet(edges / f"e{k}.parquet", part)
            else:
                write_text(edges / f"e{k}.txt", part)
        victim = edges / f"e1.{ext}"

    def change(s):
        if s.epoch == 0:
            if victim.suffix == ".txt":
                with open(victim, "a") as h:
                    h.write("40 41\n")
            else:
                _replace_parquet(victim, EDGES[:2])
    with pytest.raises(EdgeInputError, match=rf"{victim.name}: the edge file changed"):
        run_wcc(spark, edges, epochs=epochs, out=out, partitions=2, progress=False,
                on_epoch=change)
    assert sorted(written(out)) == [0]


@pytest.mark.spark
def test_run_wcc_takes_an_arrow_table_or_a_spark_dataframe(spark):
    # regression: issue 11 item 13
    table = pa.table({"w": [0] * len(EDGES), "src": [s for s, _ in EDGES],
                      "dst": [d for _, d in EDGES]})
    res = run_wcc(spark, table, epochs=2, partitions=2, progress=False)
    assert labels(res) == expected(EDGES) and len(res.epochs) == 2
    assert res.epochs[0].source == "edge table rows 1-5"
    df = spark.createDataFrame(table.select(["src", "dst"]))
    res = run_wcc(spark, df, partitions=2, progress=False)
    assert not isinstance(res.labels, pa.Table)   # a Spark source: its labels stay in Spark
    got = res.labels.toArrow()
    assert dict(zip(got.column("vertex").to_pylist(), got.column("component").to_pylist())) \
        == expected(EDGES) and res.epochs[0].edges == len(EDGES)
    with pytest.raises(EdgeInputError, match="edge DataFrame: no column 'dst'"):
        run_wcc(spark, df.select("src"), partitions=2, progress=False)
    with pytest.raises(EdgeInputError, match=r"edge table: row 2: vertex id -4"):
        run_wcc(spark, pa.table({"src": [1, -4], "dst": [2, 3]}), partitions=2, progress=False)


TWO_RUNS = r"""
import sys
from engine.cli.main import main
opts = ["--master", "local[1]", "--partitions", "1", "--backend", "cpu"]
print("rc", main(["wcc", sys.argv[1], *opts]), flush=True)
sys.exit(main(["wcc", sys.argv[2], "--follow", "--out", sys.argv[3], *opts]))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_cli_messages_no_out_natural_order_empty_epoch_and_ctrl_c(tmp_path):
    """Issue 11 items 1, 3, 4, 8: ``tfront wcc`` twice in one process (one JVM start): the issue's headerless CSV
    without --out (edge 1-2 kept, labels said not saved); then a followed directory whose
    epoch lines name e2, e3 (no edges: a warning), e10 in that order, stopped by Ctrl-C while
    it waits for the next file: exit 130, a message, no traceback, epochs 0-2 written."""
    (tmp_path / "n.csv").write_text("1,2\n2,3\n3,4\n")
    d = tmp_path / "d"
    d.mkdir()
    write_text(d / "e10.txt", EDGES[5:])
    write_text(d / "e2.txt", EDGES[:5])
    write_text(d / "e3.txt", [])
    out_dir = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", TWO_RUNS, str(tmp_path / "n.csv"), str(d),
                             str(out_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines, deadline = [], time.monotonic() + 400
    while sum(x.startswith("epoch") for x in lines) < 4 and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 5)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
    assert sum(x.startswith("epoch") for x in lines) == 4, (lines, proc.poll())
    proc.send_signal(signal.SIGINT)     # the job now waits for the next file
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    first = lines[:lines.index("rc 0\n")]
    assert first[0].startswith("epoch 0: vertices 4, edges 3, components 1,"), first
    assert first[0].rstrip().endswith(f"; input {tmp_path / 'n.csv'} rows 1-3"), first
    assert first[1].startswith("total: 1 epochs") and first[1].rstrip().endswith(
        "labels not saved (no --out given)"), first
    follow = lines[lines.index("rc 0\n") + 1:]
    for k, name in enumerate(["e2.txt", "e3.txt", "e10.txt"]):
        assert follow[k].startswith(f"epoch {k}: ") and follow[k].rstrip().endswith(
            f"; input {d / name}"), follow
    assert f"warning: epoch 1: {d / 'e3.txt'} has no edges" in err, err
    assert f"interrupted after 3 epochs; epochs 0-2 are written to {out_dir}" in err, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert sorted(written(str(out_dir))) == [0, 1, 2]


# -- issue 23 item 12: other column names and layouts ----------------------------------------

def test_gh23_columns_pick_other_columns_in_every_format(tmp_path):
    """``columns`` (``--columns SRC,DST[,WEIGHT]``) by name -- a Parquet file's, a table's, a
    CSV or text header's -- or by 1-based number, in every format; a Parquet file's epochs
    stay lazy slices reading only those columns."""
    from spark_plugin.sources import EdgeColumns, read_weighted_edges

    pq.write_table(pa.table({"w": [0.5, 1.0, 2.0], "to": [2, 3, 4], "from": [1, 2, 3]}),
                   tmp_path / "o.parquet")
    (tmp_path / "h.csv").write_text("w,to,from\n0.5,2,1\n1,3,2\n2,4,3\n")
    (tmp_path / "n.txt").write_text("0.5 2 1\n1 3 2\n2 4 3\n")
    (tmp_path / "h.tsv").write_text("w\tto\tfrom\n0.5\t2\t1\n1\t3\t2\n2\t4\t3\n")
    named, numbered = EdgeColumns.parse("from,to"), EdgeColumns.parse("3,2")
    for name in ("o.parquet", "h.csv", "h.tsv"):
        assert pairs(read_edges(tmp_path / name, named)) == WANT, name
    for name in ("o.parquet", "h.csv", "n.txt", "h.tsv"):
        assert pairs(read_edges(tmp_path / name, numbered)) == WANT, name
    n, sources = epoch_sources(tmp_path / "o.parquet", 2, columns=named)
    sources = list(sources)
    assert sources[0].scan.names == ("from", "to")
    assert [pairs(s.read()) for s in sources] == [WANT[:1], WANT[1:]]
    table = pq.read_table(tmp_path / "o.parquet")
    n, sources = epoch_sources(table, 1, columns=EdgeColumns.parse(["from", "to"]))
    assert pairs(next(iter(sources)).read()) == WANT
    weighted = EdgeColumns.parse("from,to,w", weighted=True)
    for name in ("o.parquet", "h.csv", "h.tsv"):
        t = read_weighted_edges(tmp_path / name, weighted)
        assert pairs(t) == WANT and t.column("weight").to_pylist() == [0.5, 1.0, 2.0], name
    t = read_weighted_edges(tmp_path / "n.txt", EdgeColumns.parse("3,2,1", weighted=True))
    assert pairs(t) == WANT and t.column("weight").to_pylist() == [0.5, 1.0, 2.0]
    n, sources = epoch_sources(table, 1, columns=weighted, weighted=True)
    assert pairs(next(iter(sources)).read()) == WANT


def test_gh23_text_headers_and_extra_fields_are_read_and_said_once(tmp_path):
    """A ``.tsv`` / ``.txt`` with a header row is read like a CSV (its ``src``, ``dst``
    columns, else the first two); a three-column SNAP file gives its first two columns, and
    :func:`check_input` says once that the third is ignored, naming the option."""
    (tmp_path / "h.tsv").write_text("# graph\ndst\tsrc\n2\t1\n3\t2\n4\t3\n")
    (tmp_path / "h.txt").write_text("from to\n1 2\n2 3\n3 4\n")
    for name in ("h.tsv", "h.txt"):
        assert pairs(read_edges(tmp_path / name)) == WANT, name
        assert check_input(tmp_path / name) == []
    d = tmp_path / "three"
    d.mkdir()
    (d / "e0.txt").write_text("# FromNodeId ToNodeId Weight\n1\t2\t7\n2\t3\t1\n")
    (d / "e1.txt").write_text("3\t4\t5\n")
    assert pairs(read_edges(d / "e0.txt")) == WANT[:2]
    notes = check_input(d)
    assert len(notes) == 1 and notes[0].startswith(f"{d / 'e0.txt'}: its rows have 3 fields: "
                                                   "the first two are src, dst"), notes
    assert "--columns" in notes[0] and "--weighted" in notes[0]
    assert len(check_input(d / "e1.txt")) == 1
    # a typo in the first edge is not taken for a header
    (tmp_path / "typo.txt").write_text("1 x\n2 3\n")
    with pytest.raises(EdgeInputError, match=r"typo\.txt:1: vertex id 'x' is not an integer"):
        read_edges(tmp_path / "typo.txt")


@pytest.mark.parametrize(("make", "columns", "what"), [
    (lambda p: pq.write_table(pa.table({"a": [1], "b": [2]}), p / "x.parquet"), None,
     r"x\.parquet: Parquet file has no column 'src' \(columns: a, b\); --columns SRC,DST"),
    (lambda p: (p / "x.txt").write_text("1 2\n"), "a,b",
     r"x\.txt:1: --columns a,b names column 'a', but the file has no header row .* e\.g\. "
     r"--columns 1,2"),
    (lambda p: (p / "x.csv").write_text("a,b\n1,2\n"), "a,c",
     r"x\.csv:1: --columns a,c: no column 'c' \(columns: a, b\)"),
    (lambda p: (p / "x.txt").write_text("1 2\n"), "1,3",
     r"x\.txt:1: --columns 1,3: there is no column 3: the rows have 2 fields"),
], ids=["parquet-names", "no-header", "no-such-name", "no-such-number"])
def test_gh23_a_refused_layout_names_the_option_that_takes_it(tmp_path, make, columns, what):
    from spark_plugin.sources import EdgeColumns

    make(tmp_path)
    (f,) = [p for p in tmp_path.iterdir()]
    with pytest.raises(EdgeInputError, match=what):
        read_edges(f, EdgeColumns.parse(columns))
    with pytest.raises(EdgeInputError, match=what):
        check_input(f, columns=EdgeColumns.parse(columns))


def test_gh23_a_weighted_layout_refused_names_the_option(tmp_path):
    from spark_plugin.sources import read_weighted_edges

    pq.write_table(pa.table({"s": [1], "d": [2], "w": [1.0]}), tmp_path / "x.parquet")
    with pytest.raises(EdgeInputError, match=r"no column 'weight' \(columns: s, d, w\); "
                                             r"--weighted needs src, dst and weight; --columns"):
        check_input(tmp_path / "x.parquet", weighted=True)
    with pytest.raises(EdgeInputError, match=r"no column 'src' .*--columns SRC,DST"):
        read_weighted_edges(tmp_path / "x.parquet")
    (tmp_path / "four.txt").write_text("1 2 0.5 9\n")
    with pytest.raises(EdgeInputError, match=r"four\.txt:1: .*expected 'src dst weight'; "
                                             r"--columns SRC,DST"):
        read_weighted_edges(tmp_path / "four.txt")


@pytest.mark.parametrize(("value", "weighted", "what"), [
    ("a", False, "1 column, expected two, SRC,DST"),
    ("a,b,c", False, "3 columns, expected two, SRC,DST (a third, WEIGHT, is read by tfront "
                     "sssp --weighted)"),
    ("a,b", True, "2 columns, expected three, SRC,DST,WEIGHT (--weighted"),
    ("0,1", False, "column numbers start at 1, got 0"),
    ("a,a", False, "a column is picked twice"),
    ("a,", False, "'' is not a column name"),
    (3, False, "expected 'SRC,DST' or a sequence"),
])
def test_gh23_columns_values_are_checked_before_anything_runs(value, weighted, what):
    from spark_plugin.sources import ColumnsError, EdgeColumns

    with pytest.raises(ColumnsError, match=re.escape(what)):
        EdgeColumns.parse(value, weighted=weighted)
    from spark_plugin.jobs.sssp.job import run_sssp

    with pytest.raises(ColumnsError, match=re.escape(what)):   # before Spark is touched
        if weighted:
            run_sssp(None, "no-such-input", 1, weighted=True, columns=value)
        else:
            run_wcc(None, "no-such-input", columns=value)


@pytest.mark.spark
def test_gh23_run_wcc_and_tfront_wcc_read_other_columns(spark, tmp_path, capsys):
    """``columns=`` on a Parquet file and a DataFrame with other column names, recorded in
    the fingerprint (a rerun with other columns is another job); ``tfront wcc`` on a
    three-column SNAP file: the first two columns, the third said ignored once."""
    from engine.cli.main import main
    from spark_plugin.errors import OutputStateError

    pq.write_table(pa.table({"from": [1, 2, 5], "to": [2, 3, 6], "x": [0, 0, 0]}),
                   tmp_path / "o.parquet")
    out = tmp_path / "out"
    res = run_wcc(spark, tmp_path / "o.parquet", out=str(out), columns="from,to",
                  partitions=2, progress=False)
    t = pq.read_table(out)
    assert dict(zip(t.column("vertex").to_pylist(), t.column("component").to_pylist())) == \
        {1: 1, 2: 1, 3: 1, 5: 5, 6: 5}
    with pytest.raises(OutputStateError, match=r"columns: \['from', 'to'\] there, "
                                               r"\['to', 'from'\] now"):
        run_wcc(spark, tmp_path / "o.parquet", out=str(out), columns="to,from",
                partitions=2, progress=False)
    df = spark.createDataFrame(pq.read_table(tmp_path / "o.parquet").to_pandas())
    res = run_wcc(spark, df, columns=("from", "to"), partitions=2, progress=False)
    assert labels(res) == {1: 1, 2: 1, 3: 1, 5: 5, 6: 5}
    with pytest.raises(EdgeInputError, match=r"edge DataFrame: no column 'src' \(columns: "
                                             r"from, to, x\); --columns SRC,DST"):
        run_wcc(spark, df, partitions=2, progress=False)
    (tmp_path / "three.txt").write_text("1 2 9\n2 3 9\n5 6 9\n")
    capsys.readouterr()
    assert main(["wcc", str(tmp_path / "three.txt"), "--epochs", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert err.count("its rows have 3 fields: the first two are src, dst") == 1, err


def test_gh23_more_epochs_than_edges_is_refused(tmp_path):
    """Issue 23 item 13: ``--epochs`` larger than the edge count gave epochs reading ``rows
    1-0``; a split input needs an edge per epoch, and the message says how many it has."""
    (tmp_path / "g.txt").write_text("1 2\n2 3\n3 4\n")
    pq.write_table(pa.table({"src": [1, 2, 3], "dst": [2, 3, 4]}), tmp_path / "g.parquet")
    what = r"--epochs 4 is more than its 3 edges: each epoch of a split input needs at least " \
           r"one \(--epochs 3 or fewer\)"
    for name in ("g.txt", "g.parquet"):
        with pytest.raises(EdgeInputError, match=rf"g\.\w+: {what}"):
            check_input(tmp_path / name, 4)
        with pytest.raises(EdgeInputError, match=rf"g\.\w+: {what}"):
            epoch_sources(tmp_path / name, 4)
        assert epoch_sources(tmp_path / name, 3)[0] == 3
    with pytest.raises(EdgeInputError, match=rf"edge table: {what}"):
        epoch_sources(pq.read_table(tmp_path / "g.parquet"), 4)


def test_gh32_a_followed_text_file_with_a_half_written_last_line_is_not_taken(tmp_path,
                                                                            monkeypatch):
    """Issue 32 item 3: ``XXXXXX 21`` of the line ``XXXXXX 21xxxx`` written, then a pause of
    several polls: the file is not complete until its last line ends (a newline), so the
    edge is ``(XXXXXX, 21xxxx)``, never ``(XXXXXX, 21)``; a stream that goes idle with such
    a file is refused, naming it."""
    d = tmp_path / "s"
    d.mkdir()
    f = d / "e0.txt"
    f.write_text("1 2\n2 3\n3 4\n100 21")     # the writer pauses mid-line
    polls = []

    def sleep(_):
        polls.append(1)
        if len(polls) == 6:
            with open(f, "a") as h:
                h.write("5\n")             # ... and finishes it: 100 215
        if len(polls) == 9:
            (d / DONE_MARKER).touch()
    _, sources = epoch_sources(d, follow=30.0, poll=0.01, sleep=sleep)
    assert pairs(next(sources).read()) == WANT + [(100, 215)]
    assert len(polls) >= 6
    g = tmp_path / "idle"
    g.mkdir()
    (g / "e0.txt").write_text("1 2\n100 21")
    clock = [0.0]   # the stream's idle time on a clock the sleep hook moves: no real wait
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    _, sources = epoch_sources(g, follow=0.05, poll=0.01,
                               sleep=lambda t: clock.__setitem__(0, clock[0] + t))
    with pytest.raises(EdgeInputError, match=r"e0.txt: the stream went idle .* last line "
                                             r"unfinished"):
        next(sources)
    h = tmp_path / "done"   # the writer's _DONE says a file without a final newline is whole
    h.mkdir()
    (h / "e0.txt").write_text("1 2\n2 3\n3 4")
    (h / DONE_MARKER).touch()
    _, sources = epoch_sources(h, follow=30.0, poll=0.01, sleep=lambda _: None)
    assert pairs(next(sources).read()) == WANT


@pytest.mark.parametrize("kind", ["dangling symlink", "fifo"])
def test_gh32_a_directory_entry_that_is_no_regular_file_is_named_not_skipped(tmp_path, kind):
    """Issue 32 item 4: a dangling symlink or a FIFO among the epoch files stopped nothing and
    cost an epoch; now it is a named error, before anything runs."""
    d = tmp_path / "epochs"
    d.mkdir()
    (d / "e0.txt").write_text("1 2\n")
    (d / "e2.txt").write_text("3 4\n")
    bad = d / "e1.txt"
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to(tmp_path / "gone.txt")
    want = "a FIFO, not a regular file" if kind == "fifo" else "a symbolic link to a missing"
    with pytest.raises(EdgeInputError, match=f"e1.txt: {want}"):
        check_input(d)
    with pytest.raises(EdgeInputError, match=f"e1.txt: {want}"):
        epoch_sources(d)


def test_gh32_a_non_integer_id_names_the_columns_read_and_the_option(tmp_path):
    """Issue 32 item 15: a CSV header ``weight,from,to`` reads the first two columns; the
    error says which were read and how to pick others."""
    p = tmp_path / "w.csv"
    p.write_text("weight,from,to\n6.093,1,2\n")
    with pytest.raises(EdgeInputError, match=r"w.csv:2: vertex id '6.093' is not an integer "
                                             r"\(columns 1, 2 \(weight, from of the header\) "
                                             r"read as src, dst; --columns SRC,DST"):
        read_edges(p)


def test_gh32_a_pipe_or_device_input_is_refused_up_front(tmp_path):
    """Issue 32 items 2 and 11: ``tfront wcc <(cat e.txt)`` read the pipe several times (rows
    lost, exit 0) and ``/dev/zero`` until MemoryError; a stream is now refused before
    anything reads it, saying to write it to a file."""
    fifo = tmp_path / "edges.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a pipe or FIFO"), ("/dev/zero", "a device")):
        with pytest.raises(EdgeInputError, match=f"{kind}, not a regular file: .* write it to "
                                                 f"a file first"):
            check_input(path)
        with pytest.raises(EdgeInputError, match=kind):
            epoch_sources(path)
    r = subprocess.run([sys.executable, "-m", "engine.cli.main", "wcc", "/dev/zero"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "a device, not a regular file" in r.stderr


def test_gh32_run_wcc_takes_spark_none_and_starts_no_jvm_for_what_fits_the_driver():
    """Issue 32 item 21: ``run_wcc(None, table)`` raised AttributeError; it now runs as
    ``tfront wcc`` does (a session started only when an epoch needs Spark)."""
    script = ("import sys, pyarrow as pa\n"
              "from spark_plugin.jobs.wcc.job import run_wcc\n"
              "res = run_wcc(None, pa.table({'src': [1, 2, 5], 'dst': [2, 3, 6]}), progress=False)\n"
              "print(res.labels.to_pylist(), 'pyspark' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("[{'vertex': 1, 'component': 1}, {'vertex': 2, 'component': 1}, "
                                "{'vertex': 3, 'component': 1}, {'vertex': 5, 'component': 5}, "
                                "{'vertex': 6, 'component': 5}] False")


def test_gh32_running_out_of_memory_reading_a_file_is_a_named_error(tmp_path):
    """Issue 32 item 11: a read that runs out of the driver's memory is an ``EdgeInputError``
    saying what to do, not a MemoryError traceback (here a 300 MB text file under an
    address-space cap of 150 MB above what the process has mapped before reading)."""
    big = tmp_path / "big.txt"
    line = b"123456789 987654321\n"
    with open(big, "wb") as f:
        for _ in range(150):
            f.write(line * 100_000)
    script = ("import resource, sys\n"
              "from spark_plugin.sources import read_edges, EdgeInputError\n"
              "vm = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize'))"
              ".split()[1]) * 1024 + 150_000_000\n"
              "resource.setrlimit(resource.RLIMIT_AS, (vm, vm))\n"
              "try:\n"
              "    read_edges(sys.argv[1])\n"
              "except EdgeInputError as e:\n"
              "    print('named:', e)\n")
    r = subprocess.run([sys.executable, "-c", script, str(big)], capture_output=True,
                       text=True, timeout=300)
    assert "named:" in r.stdout and "ran out of memory reading" in r.stdout, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


_PIECES = ["1", "22", "303", "0", " ", " ", "\t", "\n", "\n", "# c\n", "#", ",", "\r", "-",
           "+", "x", "\n\n", "é", "9223372036854775808"]


_IDS = st.sampled_from(["0", "1", "22", "303", "9223372036854775807"])


@st.composite
def _edge_text(draw):
    """Mostly ``src<sep>dst`` lines with one separator (what the fast path takes), now and
    then a piece of something else."""
    sep = draw(st.sampled_from(["\t", " "]))
    line = st.builds(lambda a, b: f"{a}{sep}{b}\n", _IDS, _IDS)
    junk = st.sampled_from(_PIECES)
    return "".join(draw(st.lists(st.one_of(*[line] * 12, junk), max_size=12)))


def _before_gh33(text: str):
    """The text fast path as it was before issue 33 (on the decoded text, re-encoded for
    Arrow): the reference the byte-level one must equal."""
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    pos = 0
    while pos < len(text) and text[pos] in "#\n":
        if text[pos] == "\n":
            pos += 1
            continue
        nl = text.find("\n", pos)
        pos = len(text) if nl < 0 else nl + 1
    text = text[pos:]
    if not text or "#" in text or "," in text or "\r" in text:
        return None
    first = text[:256].split("\n", 1)[0]
    sep = " " if " " in first else "\t" if "\t" in first else None
    if sep is None or (sep == " " and "\t" in text):
        return None
    try:
        t = pcsv.read_csv(
            pa.py_buffer(text.encode("utf-8")),
            read_options=pcsv.ReadOptions(column_names=["src", "dst"], use_threads=True),
            parse_options=pcsv.ParseOptions(delimiter=sep, quote_char=False,
                                            double_quote=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={"src": pa.int64(), "dst": pa.int64()}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None
    if t.num_columns != 2 or t.column("src").null_count or t.column("dst").null_count:
        return None
    src, dst = (t.column(c).combine_chunks() if t.num_rows else pa.array([], pa.int64())
                for c in ("src", "dst"))
    if t.num_rows and (pc.min(src).as_py() < 0 or pc.min(dst).as_py() < 0):
        return None
    return pa.table({"src": src, "dst": dst})


@settings(max_examples=150, deadline=None)
@given(st.one_of(_edge_text(), _edge_text(), _edge_text(),
                st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)),
       st.sampled_from([b"", b"", b"\xff", b"\xef\xbb\xbf"]), st.booleans())
def test_gh33_the_text_fast_path_reads_what_it_read_before(tmp_path_factory, text, prefix,
                                                           header):
    """Issue 33: the SNAP fast path parses the file's bytes in place (no decode and
    re-encode of the whole file); whatever the file, read_edges gives the rows it gave
    before -- the old fast path on the decoded text, else the line-by-line parser -- or the
    same error (a non-UTF-8 byte in the header or the body, a BOM, comments, commas, signs,
    ids past int64 included)."""
    from spark_plugin.sources.text import decode_text, parse_lines

    data = prefix + (b"# FromNodeId\tToNodeId\n" if header else b"") + text.encode("utf-8")
    path = tmp_path_factory.mktemp("fast") / "e.txt"
    path.write_bytes(data)

    def outcome(fn):
        try:
            t = fn()
        except EdgeInputError as e:
            return ("error", str(e))
        return ("rows", pairs(t))

    def before():
        decoded = decode_text(path, data)
        fast = _before_gh33(decoded)
        return fast if fast is not None else parse_lines(path, decoded.splitlines(), csv=False)
    assert outcome(lambda: read_edges(path)) == outcome(before)


def test_gh33_the_fast_path_takes_a_snap_file_and_names_a_bad_header_byte(tmp_path):
    from spark_plugin.sources import text as E

    good = b"# a header\n1\t2\n3\t4\n"
    t = E._parse_simple_text(good)
    assert pairs(t) == [(1, 2), (3, 4)]
    assert E._parse_simple_text(b"# \xff\n1\t2\n") is None   # the line parser names it
    path = tmp_path / "bad.txt"
    path.write_bytes(b"# \xff\n1\t2\n")
    with pytest.raises(EdgeInputError, match=r"bad.txt:1: not a UTF-8 text edge file"):
        read_edges(path)
