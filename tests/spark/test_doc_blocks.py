"""Every fenced code block of README.md and docs/*.md runs (or says why it does not).

Conventions for the Markdown files (keep them when adding blocks):

* Every fence names its kind: ````python``, ````sh`` (also ``bash``, ``shell``) or ````text``
  (output samples, diagrams, signatures: never run). A bare ```` ``` ```` fence fails here.
* ````python`` blocks run, in order, in one namespace per Markdown file (a later block may use
  an earlier block's names), with a temporary directory as the working directory. ``spark``
  is the tests' shared local session (``tests/spark/conftest.py``) when a block of the file
  mentions Spark; ``build_session("local")`` returns that same session. A block must not stop
  the session.
* ````sh`` blocks run with ``bash -euo pipefail`` in that temporary directory, with this
  interpreter's ``bin`` directory (``tfront``, ``python``) first on ``PATH`` and ``$REPO``
  naming the repository root.
* A block that cannot run here (a cluster, a GPU, the RAPIDS jar, minutes of work) is preceded
  by ``<!-- not-run: REASON -->`` on the line just above its fence (any indentation); a
  ``python`` block marked so is still compiled, so its syntax is checked.
"""

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
KINDS = {"python": "python", "sh": "sh", "bash": "sh", "shell": "sh", "text": "text"}
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(\S.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


@dataclass
class Block:
    path: Path
    line: int            # 1-based line of the opening fence
    kind: str            # the info string as written
    code: str
    not_run: str | None  # the reason, when marked

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, dedented by their fence's indentation."""
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence)
                                      and lines[j].strip().strip(fence[0]) == ""):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = NOT_RUN.match(lines[k].strip()) if k >= 0 else None
        out.append(Block(path, i + 1, info, textwrap.dedent("\n".join(body)) + "\n",
                         marker.group(1) if marker else None))
        i = j + 1
    return out


ALL = [b for p in DOCS for b in blocks(p)]


def test_the_docs_have_blocks_and_every_fence_names_its_kind():
    assert len(ALL) > 10 and any(b.kind == "python" for b in ALL)
    bad = [f"{b.where()}: {b.kind or '(none)'}" for b in ALL if b.kind not in KINDS]
    assert not bad, ("fences must be ```python, ```sh or ```text (output samples): "
                     + "; ".join(bad))


def test_python_blocks_marked_not_run_still_compile():
    for b in ALL:
        if KINDS.get(b.kind) == "python":
            compile(b.code, b.where(), "exec")


@pytest.mark.parametrize("path", [p for p in DOCS if any(
    KINDS.get(b.kind) in ("python", "sh") for b in blocks(p))], ids=lambda p: p.name)
def test_blocks_run(path, request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    mine = [b for b in blocks(path) if KINDS.get(b.kind) in ("python", "sh")]
    namespace = {"__name__": f"doc_{path.stem}"}
    if any(KINDS[b.kind] == "python" and not b.not_run and re.search(r"\bspark\b", b.code)
           for b in mine):
        namespace["spark"] = request.getfixturevalue("spark")
    env = dict(os.environ, REPO=str(ROOT),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    ran = 0
    for b in mine:
        if b.not_run:
            continue
        if KINDS[b.kind] == "python":
            try:
                exec(compile(b.code, b.where(), "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"the block at {b.where()} failed: {type(e).__name__}: {e}") from e
        else:
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", b.code], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, (f"the block at {b.where()} exited "
                                          f"{proc.returncode}:\n{proc.stdout[-2000:]}"
                                          f"{proc.stderr[-3000:]}")
        ran += 1
    assert ran, f"{path.name}: every block is marked not-run"
