"""The tree keeps its architecture (issue 21): layers only point down, and no import circles.

Every module of ``gpu_kernels``, ``engine`` and ``spark_plugin`` is read with :mod:`ast`
(not imported), and every ``import`` in it counts -- at the top, inside functions (lazy) and
under ``TYPE_CHECKING`` alike, since each is a dependency a reader has to hold in mind. The
layers, lowest first, are :data:`LAYERS`; docs/architecture.md describes them and
``docs/img/architecture.py`` draws them from this module's :data:`GRAPH`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gpu_kernels", "engine", "spark_plugin")

#: ``(unit, rank)``: a module belongs to the unit that is the longest prefix of its name. A
#: module may import its own unit, and any unit of a strictly lower rank: units of equal rank
#: are siblings that do not import each other.
LAYERS = [
    # kernels: arrays in, arrays out, nothing of ours
    ("gpu_kernels", 0),
    # the engine: semantics, then algorithms over them
    ("engine.errors", 1),
    ("engine.core", 2),
    ("engine.trackers", 3),
    ("engine.batched", 4),
    ("engine.operate", 5), ("engine.rollback", 5), ("engine.exchange", 5),
    ("engine.jit", 6),
    ("engine", 7),  # the package's own __init__: re-exports for users, never imported inside
    # integration
    ("spark_plugin.errors", 8),
    ("spark_plugin.schema", 9),
    ("spark_plugin.session", 10),
    ("spark_plugin.service", 11),
    # the jobs' input: files the driver reads and Spark sources the executors read
    ("spark_plugin.sources", 12),
    ("spark_plugin.jobs", 13),
    ("spark_plugin.jobs.wcc", 14), ("spark_plugin.jobs.sssp", 14),
    ("spark_plugin", 15),
    # the command line on top: tfront, what the job commands share, the job commands
    ("engine.cli", 16),
    ("spark_plugin.jobs.command", 17),
    ("spark_plugin.jobs.wcc.cli", 18), ("spark_plugin.jobs.sssp.cli", 18),
    ("spark_plugin.tfront_submit", 19),
]
RANK = dict(LAYERS)


def unit_of(module: str) -> str:
    """The longest prefix of ``module`` (at a dot) that :data:`LAYERS` names.

    >>> unit_of("engine.batched.psi"), unit_of("engine"), unit_of("spark_plugin.jobs.wcc.cli")
    ('engine.batched', 'engine', 'spark_plugin.jobs.wcc.cli')
    """
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in RANK:
            return ".".join(parts[:n])
    raise KeyError(f"{module} is in no layer of tests/test_layers.py: add its package there")


def modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


class Import(NamedTuple):
    """Where a module is first imported, and whether some import of it runs at module level
    (``False``: only inside functions, loaded lazily)."""

    line: int
    top_level: bool


def imports_of(name: str, path: Path, known: dict[str, Path]) -> dict[str, Import]:
    """The modules of ours that ``name`` imports anywhere in its file: ``{module: Import}``.

    ``from package import name`` counts as importing the submodule when ``name`` is one.
    """
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    lazy = {id(n) for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(f)}
    out: dict[str, Import] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
                       for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] in PACKAGES and target != name:
                seen = out.get(target)
                top = id(node) not in lazy
                out[target] = Import(min(seen.line, node.lineno) if seen else node.lineno,
                                     top or bool(seen and seen.top_level))
    return out


GRAPH = {name: imports_of(name, path, modules()) for name, path in modules().items()}


def test_every_module_is_in_a_layer():
    assert [m for m in GRAPH if not any(m == u or m.startswith(u + ".") for u in RANK)] == []


def test_layers_only_point_down():
    wrong = []
    for name, targets in GRAPH.items():
        unit = unit_of(name)
        for target, (line, _) in targets.items():
            other = unit_of(target)
            if other != unit and RANK[other] >= RANK[unit]:
                wrong.append(f"{modules()[name].relative_to(ROOT)}:{line}: {name} ({unit}, "
                             f"layer {RANK[unit]}) imports {target} ({other}, layer {RANK[other]})")
    assert wrong == [], "imports that point up or sideways:\n" + "\n".join(wrong)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circles():
    # a package's __init__ re-exporting its own modules is no circle: it only points down
    graph = {name: {t: imp for t, imp in targets.items()
                    if not (name == t.rpartition(".")[0] or t in PACKAGES)}
             for name, targets in GRAPH.items()}
    assert _cycles(graph) == []


@pytest.mark.parametrize("edges, expected", [
    ({"a": {"b": 1}, "b": {"a": 1}}, [["a", "b"]]),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {}}, []),
    ({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}, [["a", "b", "c"]]),
])
def test_the_circle_finder_finds_circles(edges, expected):
    assert _cycles(edges) == expected


def test_every_module_says_what_it_is_for():
    missing = [str(path.relative_to(ROOT)) for path in modules().values()
               if not (ast.get_docstring(ast.parse(path.read_text())) or "").strip()]
    assert missing == []
