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


# -- issue 23 item 16 ------------------------------------------------------------------------

def _python_blocks(path: Path):
    """``(line, code)`` of the ```python blocks of a Markdown file."""
    text = path.read_text()
    for m in re.finditer(r"^([ \t]*)```python[ \t]*\n(.*?)^\1```", text, re.M | re.S):
        code = "\n".join(l[len(m.group(1)):] for l in m.group(2).splitlines())
        yield text[:m.start()].count("\n") + 1, code


def _names(code: str) -> list[tuple[str, bool]]:
    """The names of ``code`` in order, each with whether it is assigned there."""
    import io
    import tokenize

    toks = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                              tokenize.INDENT, tokenize.DEDENT)]
    return [(t.string, k + 1 < len(toks) and toks[k + 1].string == "="
             and (k == 0 or toks[k - 1].string != "."))
            for k, t in enumerate(toks) if t.type == tokenize.NAME]


def test_gh23_python_blocks_create_spark_before_they_use_it():
    """docs/wcc.md and docs/jobs.md used ``spark`` without creating it (the docs test gave
    them one): a reader's copy failed with a NameError."""
    bad = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        defined = False
        for line, code in _python_blocks(path):
            for name, assigned in _names(code):
                if name == "spark" and assigned:
                    defined = True
                elif name == "spark" and not defined:
                    bad.append(f"{path.relative_to(ROOT)}:{line}")
                    break
    assert not bad, "blocks that use spark before creating it: " + ", ".join(bad)


def test_gh23_the_docs_say_what_is_built_and_show_todays_output():
    rollback = (ROOT / "docs" / "rollback.md").read_text()
    assert "not built" not in rollback and "spark_plugin/jobs/recovery.py" in rollback
    readme = (ROOT / "README.md").read_text()
    synopsis = readme.split("In short:", 1)[1].split("```", 2)[1]
    assert "--loop-checkpoint" in synopsis and "--columns" in synopsis
    formats = (ROOT / "docs" / "formats.md").read_text()
    assert "## SSSP job (`tfront sssp`)" in formats
    assert "| `distance` |" in formats and "both ways" in formats
    console = formats.split("### Console output", 1)[1].split("```text", 1)[1].split("```")[0]
    epochs = [l for l in console.splitlines() if l.startswith("epoch ")]
    assert epochs and all("; input " in l for l in epochs), console
    # six edges fit the driver: no JVM starts (issue 32 item 16: the page showed one)
    assert "started when an epoch needs it" in console and "kernels loaded" in console
    assert "starting Spark" not in console


def test_gh23_the_papers_rollback_examples_ship_with_the_package_and_the_docs_run_them():
    examples = sorted((ROOT / "engine" / "examples").glob("rollback-example-*.txt"))
    assert [p.name for p in examples] == [f"rollback-example-{k}.txt" for k in (1, 2, 3)]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"engine" = ["examples/*.txt"]' in pyproject
    rollback = (ROOT / "docs" / "rollback.md").read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", rollback, re.M | re.S)
    for p in examples:
        assert any(f"tfront rollback engine/examples/{p.name}" in b for b in blocks), p.name
