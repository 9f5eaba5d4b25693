"""The repository documents itself: no reference to files outside it (the team's design
notes and format drafts), and docs/formats.md names the headers the code reads and writes."""

import re
from pathlib import Path

from engine.core.workload import HEADER, PSI_HEADER, REPLAY_HEADER

ROOT = Path(__file__).resolve().parents[1]
#: Paths that exist only outside the repository (spelled in pieces so this file does not match).
OUTSIDE = re.compile("|".join(re.escape(s) for s in (
    "DESIGN" + ".md", "shared" + "/formats", "shared" + "/gpu", "shared" + "/seeds",
    "../" + "shared", "shared" + "/hooks", "CONVENTIONS" + ".md")))


def _text_files():
    for top in ("engine", "gpu_kernels", "spark_plugin", "perf", "tests", "docs", ".ci"):
        for p in sorted((ROOT / top).rglob("*")):
            rel = p.relative_to(ROOT).parts
            if "results" in rel or "__pycache__" in rel:   # benchmark output, bytecode
                continue
            if (p.is_file() and p.suffix in {".py", ".md", ".txt", ".sh", ".toml", ".yml", ""}
                    and p.stat().st_size < 1 << 20):
                yield p
    for name in ("README.md", "Makefile", "pyproject.toml", "environment.yml"):
        yield ROOT / name


def test_nothing_refers_to_files_outside_the_repository():
    hits = []
    for p in _text_files():
        try:
            text = p.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{p.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not hits, "references to files that are not in the repository:\n" + "\n".join(hits)


def test_formats_doc_names_the_headers_and_sections_the_code_cites():
    formats = (ROOT / "docs" / "formats.md").read_text()
    for header in (HEADER, REPLAY_HEADER, PSI_HEADER):
        assert header in formats
    semantics = (ROOT / "docs" / "semantics.md").read_text()
    for section in ("### 2.1 ", "### 2.2 ", "### 2.3 ", "### 2.4 ", "### 2.5 ", "### 2.6 ",
                    "## 7. "):
        assert section in semantics
    # every "docs/semantics.md N" citation in the code names a section that exists
    cited = set()
    for p in _text_files():
        if p.suffix == ".py":
            cited |= set(re.findall(r"docs/semantics\.md (\d(?:\.\d)?)", p.read_text()))
    assert cited
    for sec in cited:
        assert re.search(rf"^##+ {re.escape(sec)}[. ]", semantics, re.M), sec
