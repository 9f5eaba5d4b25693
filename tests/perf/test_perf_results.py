"""perf/results/*.json and perf.common.write_results: a committed benchmark result names files
relative to the repository, never by a machine's absolute path (issue 21, item 5)."""

from __future__ import annotations

import doctest
import json
import re

import pytest

from perf import common
from perf.common import ROOT, repo_path, write_results

RESULTS = sorted((ROOT / "perf" / "results").glob("*.json"))

#: A path from the file-system root (``/work/...``, ``/tmp/...``, ``~/...``, ``C:\\...``) at the
#: start of a string or after a space, quote, bracket, ``=`` or comma.
ABSOLUTE = re.compile(r"(?:^|[\s\"'(\[=,])(?:/[^/\s]|~/|[A-Za-z]:[\\/])")


def _strings(obj, where="$"):
    if isinstance(obj, str):
        yield where, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{where} key", k
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{where}[{i}]")


def test_there_are_committed_results():
    assert RESULTS, "no perf/results/*.json"


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_committed_results_name_no_absolute_paths(path):
    found = [f"{where}: {text!r}" for where, text in _strings(json.loads(path.read_text()))
             if ABSOLUTE.search(text)]
    assert not found, f"{path.name} records absolute paths:\n" + "\n".join(found[:10])


def test_write_results_makes_paths_repository_relative(tmp_path):
    outside = tmp_path / "graphs" / "e.parquet"
    inside = ROOT / "perf" / "results" / "graphs" / "g.parquet"
    results = {"input": str(inside), "cmd": ["/usr/bin/python3", "--graph", str(outside)],
               "source": f"{inside} rows 1-5", "error": f"cannot read {outside}: gone",
               "seconds": 1.25, "url": "https://github.com/TimelyDataflow/timely-dataflow/issues/190"}
    out = write_results(results, tmp_path / "r" / "x.json")
    data = json.loads(out.read_text())
    assert data == {"input": "perf/results/graphs/g.parquet",
                    "cmd": ["python3", "--graph", "e.parquet"],
                    "source": "perf/results/graphs/g.parquet rows 1-5",
                    "error": "cannot read e.parquet: gone", "seconds": 1.25,
                    "url": results["url"]}
    assert not [t for _, t in _strings(data) if ABSOLUTE.search(t)]
    assert repo_path("perf/results/wcc.json") == "perf/results/wcc.json"


def test_common_doctests():
    assert doctest.testmod(common).failed == 0
