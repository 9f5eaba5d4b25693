"""Deterministic graph generators for the job benchmarks (``perf.bench_wcc``, ``perf.bench_sssp``).

Every generator is vectorised (numpy; no per-edge Python loop) and deterministic: the same
arguments and ``seed`` give the same ``(src, dst)`` int64 arrays, edge for edge.

* :func:`rmat` -- R-MAT (Chakrabarti, Zhan, Faloutsos 2004) with the usual
  ``(a, b, c, d) = (0.57, 0.19, 0.19, 0.05)``: ``m`` edges over ``2**scale`` vertex ids, one
  quadrant draw per bit level for all edges at once, then a random relabelling of the vertex
  ids (as Graph500 does) so that ids carry no locality. Duplicates and self-loops are kept,
  so the file has exactly ``m`` lines; vertices that no edge touches do not exist.
* :func:`grid` -- the ``n x n`` grid graph: vertex ``r * n + c``, an edge to the right and
  one downwards, ``2 n (n - 1)`` edges, one component of diameter ``2 (n - 1)``.
* :func:`path` -- the path ``0 - 1 - ... - (n - 1)``: ``n - 1`` edges ``i -> i + 1``, diameter
  ``n - 1`` (one hop per vertex: the longest chain of rounds a job can meet).
* :func:`road` -- a road-like planar graph: the ``n x n`` grid plus, for each vertex with
  probability ``p``, one *local shortcut* to a uniformly drawn vertex at most ``reach`` rows and
  columns away (never itself): large diameter, low degree, locality in the vertex ids.
* :func:`small_components` -- ``k`` components of random sizes in ``[min_size, max_size]``,
  each a random recursive tree (vertex ``i`` of a component links to a uniformly chosen
  earlier one) plus ``extra`` random intra-component edges per component on average;
  vertex ids are shuffled over the whole graph and so is the edge order. Exactly ``k``
  components.

:func:`ensure_graph` writes a named graph of :data:`GRAPHS` once under a cache directory as

* ``NAME.parquet`` -- columns ``src, dst`` (int64);
* ``NAME.txt`` -- SNAP-style text: ``#`` comment lines, then ``src<TAB>dst`` per line (what
  GraphX's ``GraphLoader.edgeListFile`` reads);
* ``NAME.json`` -- metadata: generator and parameters, ``edges``, ``vertices`` (ids touched by
  an edge), ``components`` (from scipy, the reference every system is checked against).

and returns the paths; a later call with the same parameters reuses the files.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: R-MAT quadrant probabilities (a, b, c, d) of the Graph500 / SNAP generators.
RMAT_PROBS = (0.57, 0.19, 0.19, 0.05)


def rmat(scale: int, m: int, *, probs: tuple[float, float, float, float] = RMAT_PROBS,
         seed: int = 1, permute: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``m`` R-MAT edges over vertex ids ``[0, 2**scale)``; returns ``(src, dst)`` int64.

    At each of the ``scale`` bit levels every edge falls into quadrant ``a`` (0, 0),
    ``b`` (0, 1), ``c`` (1, 0) or ``d`` (1, 1) of the adjacency matrix; the bits make the
    source and destination ids. With ``permute`` the ids are then relabelled by a random
    permutation of ``[0, 2**scale)``.
    """
    if scale < 1 or scale > 40:
        raise ValueError(f"scale must be in [1, 40], got {scale}")
    if m < 0:
        raise ValueError(f"m must be non-negative, got {m}")
    a, b, c, d = (float(p) for p in probs)
    if min(a, b, c, d) < 0 or abs(a + b + c + d - 1.0) > 1e-9:
        raise ValueError(f"probs must be non-negative and sum to 1, got {probs}")
    rng = np.random.default_rng(seed)
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    t_ab, t_abc = a + b, a + b + c
    for level in range(scale):
        r = rng.random(m, dtype=np.float64)
        bit = np.int64(1) << np.int64(scale - 1 - level)
        src_bit = r >= t_ab                      # quadrants c, d: lower half
        dst_bit = ((r >= a) & (r < t_ab)) | (r >= t_abc)   # quadrants b, d: right half
        src[src_bit] |= bit
        dst[dst_bit] |= bit
    if permute:
        perm = rng.permutation(np.int64(1) << np.int64(scale)).astype(np.int64)
        src = perm[src]
        dst = perm[dst]
    return src, dst


def grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n x n`` grid: vertex ``r * n + c`` links to its right and lower neighbours."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    ids = np.arange(n * n, dtype=np.int64).reshape(n, n)
    right_src, right_dst = ids[:, :-1].ravel(), ids[:, 1:].ravel()
    down_src, down_dst = ids[:-1, :].ravel(), ids[1:, :].ravel()
    return (np.concatenate([right_src, down_src]), np.concatenate([right_dst, down_dst]))


def path(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The path of ``n`` vertices: ``i -> i + 1`` for ``i < n - 1``.

    >>> [a.tolist() for a in path(4)]
    [[0, 1, 2], [1, 2, 3]]
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    ids = np.arange(n, dtype=np.int64)
    return ids[:-1].copy(), ids[1:].copy()


def road(n: int, *, p: float = 0.05, reach: int = 3,
         seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The ``n x n`` :func:`grid` plus local shortcuts: each vertex ``(r, c)`` with probability
    ``p`` gets one edge to ``(r + dr, c + dc)``, ``dr, dc`` uniform in ``[-reach, reach]``
    (clipped to the grid; a draw that lands on the vertex itself is dropped). The grid's edges
    come first, then the shortcuts in vertex order."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if not 0 <= p <= 1 or reach < 0:
        raise ValueError(f"need 0 <= p <= 1 and reach >= 0, got p={p}, reach={reach}")
    rng = np.random.default_rng(seed)
    gs, gd = grid(n)
    v = np.flatnonzero(rng.random(n * n) < p).astype(np.int64)
    r = np.clip(v // n + rng.integers(-reach, reach + 1, v.size), 0, n - 1)
    c = np.clip(v % n + rng.integers(-reach, reach + 1, v.size), 0, n - 1)
    u = r * n + c
    keep = u != v
    return np.concatenate([gs, v[keep]]), np.concatenate([gd, u[keep]])


def small_components(k: int, *, min_size: int = 2, max_size: int = 20, extra: float = 0.5,
                     seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``k`` components with sizes uniform in ``[min_size, max_size]`` (``min_size >= 2``, so
    every vertex lies on an edge): random recursive trees plus on average ``extra`` random
    intra-component edges each; shuffled vertex ids and edge order."""
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    if min_size < 2 or max_size < min_size:
        raise ValueError(f"need 2 <= min_size <= max_size, got {min_size}, {max_size}")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, max_size + 1, size=k, dtype=np.int64)
    starts = np.zeros(k, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    n = int(sizes.sum())
    comp = np.repeat(np.arange(k, dtype=np.int64), sizes)
    local = np.arange(n, dtype=np.int64) - starts[comp]         # index inside the component
    child = np.flatnonzero(local > 0)
    # tree edge: vertex with local index i > 0 -> a uniform earlier vertex of its component
    parent = starts[comp[child]] + (rng.random(child.size) * local[child]).astype(np.int64)
    n_extra = rng.poisson(extra * k) if extra > 0 else 0
    ec = rng.integers(0, k, size=n_extra, dtype=np.int64)
    eu = starts[ec] + (rng.random(n_extra) * sizes[ec]).astype(np.int64)
    ev = starts[ec] + (rng.random(n_extra) * sizes[ec]).astype(np.int64)
    src = np.concatenate([child, eu])
    dst = np.concatenate([parent, ev])
    perm = rng.permutation(n).astype(np.int64)                 # shuffle vertex ids
    order = rng.permutation(src.size)                          # and the edge order
    return perm[src][order], perm[dst][order]


# --- reference components ------------------------------------------------------------------

def scipy_components(src: np.ndarray, dst: np.ndarray) -> tuple[int, int]:
    """``(vertices, components)`` of the undirected graph of the edges, counting only the
    vertex ids that some edge touches (scipy ``connected_components`` on a CSR matrix)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    if src.size == 0:
        return 0, 0
    ids, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = ids.size
    s, d = inv[:src.size], inv[src.size:]
    mat = csr_matrix((np.ones(s.size, dtype=np.int8), (s, d)), shape=(n, n))
    ncomp, _ = connected_components(mat, directed=True, connection="weak")
    return int(n), int(ncomp)


# --- named graphs and the on-disk cache ----------------------------------------------------

@dataclass(frozen=True)
class GraphSpec:
    """A named benchmark graph: generator name and keyword arguments."""
    name: str
    kind: str
    params: dict = field(default_factory=dict)
    #: The graph stands for an undirected one (a path, roads): shortest paths follow every
    #: edge both ways (``tfront sssp --undirected``). Components do not depend on it.
    undirected: bool = False

    def generate(self) -> tuple[np.ndarray, np.ndarray]:
        fn = {"rmat": rmat, "grid": grid, "path": path, "road": road,
              "small": small_components}[self.kind]
        return fn(**self.params)

    def diameter(self) -> int | None:
        """The diameter where the generator fixes it (a grid: ``2 (n - 1)``, also from its
        corner along the directed edges; a path: ``n - 1``), else None."""
        n = self.params.get("n")
        return {"grid": lambda: 2 * (n - 1), "path": lambda: n - 1}.get(self.kind, lambda: None)()

    def key(self) -> str:
        """File stem: name plus parameters, so changed parameters never reuse old files."""
        parts = [self.name] + [f"{k}{v}" for k, v in sorted(self.params.items())]
        return "-".join(str(p).replace(".", "p") for p in parts)


#: The benchmark's graphs (``--graphs``). R-MAT uses Graph500's edge factor of ~16.
GRAPHS: dict[str, GraphSpec] = {
    "tiny": GraphSpec("tiny", "grid", {"n": 5}),
    "rmat1m": GraphSpec("rmat1m", "rmat", {"scale": 16, "m": 1_000_000, "seed": 1}),
    "rmat10m": GraphSpec("rmat10m", "rmat", {"scale": 20, "m": 10_000_000, "seed": 1}),
    # the large-input runs of ``tfront wcc`` with default (machine-sized) memory
    "rmat20m": GraphSpec("rmat20m", "rmat", {"scale": 21, "m": 20_000_000, "seed": 1}),
    "rmat50m": GraphSpec("rmat50m", "rmat", {"scale": 22, "m": 50_000_000, "seed": 1}),
    "grid100": GraphSpec("grid100", "grid", {"n": 100}),
    "grid300": GraphSpec("grid300", "grid", {"n": 300}),
    "grid1000": GraphSpec("grid1000", "grid", {"n": 1000}),
    "small": GraphSpec("small", "small", {"k": 100_000, "min_size": 2, "max_size": 20,
                                          "extra": 0.5, "seed": 1}),
    "path100k": GraphSpec("path100k", "path", {"n": 100_000}, undirected=True),
    # 320 x 320 = 102,400 vertices, 204,160 grid edges and ~5,000 shortcuts
    "road": GraphSpec("road", "road", {"n": 320, "p": 0.05, "reach": 3, "seed": 1},
                      undirected=True),
}

#: The graphs of issue 22's benchmarks (``--graphs all``), smallest first.
ISSUE_GRAPHS = ("grid100", "grid300", "path100k", "road", "rmat1m", "rmat10m")


def graph_names(text: str) -> list[str]:
    """argparse type: comma-separated names of :data:`GRAPHS`; ``all`` is :data:`ISSUE_GRAPHS`.

    >>> graph_names("tiny,all")[:3]
    ['tiny', 'grid100', 'grid300']
    """
    out = []
    for name in (t.strip() for t in text.split(",")):
        if not name:
            continue
        if name == "all":
            out += [g for g in ISSUE_GRAPHS if g not in out]
        elif name not in GRAPHS:
            raise argparse.ArgumentTypeError(f"unknown graph {name!r}; choose from all, "
                                             f"{', '.join(GRAPHS)}")
        elif name not in out:
            out.append(name)
    if not out:
        raise argparse.ArgumentTypeError("no graph named")
    return out


def write_parquet(path: str | os.PathLike, src: np.ndarray, dst: np.ndarray) -> None:
    """``src, dst`` int64 columns to a Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"src": pa.array(src, type=pa.int64()), "dst": pa.array(dst, type=pa.int64())})
    pq.write_table(table, str(path), compression="snappy")


def write_snap(path: str | os.PathLike, src: np.ndarray, dst: np.ndarray,
               comment: str = "") -> None:
    """SNAP-style text: ``#`` comment lines, then ``src<TAB>dst`` lines (via Arrow's CSV writer)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    header = "".join(f"# {line}\n" for line in comment.splitlines() if line)
    header += "# FromNodeId\tToNodeId\n"
    table = pa.table({"src": pa.array(src, type=pa.int64()), "dst": pa.array(dst, type=pa.int64())})
    with pa.OSFile(str(path), "wb") as f:
        f.write(header.encode())
        pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, delimiter="\t",
                                                     quoting_style="none"))


def read_snap(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read a SNAP-style edge list (``#`` comments, whitespace-separated pairs)."""
    data = np.loadtxt(str(path), dtype=np.int64, comments="#", ndmin=2)
    return data[:, 0].copy(), data[:, 1].copy()


def ensure_graph(name: str | GraphSpec, cache_dir: str | os.PathLike) -> dict:
    """Generate ``name`` into ``cache_dir`` unless already there; return its metadata with the
    paths added (``parquet``, ``txt``, ``meta``)."""
    spec = name if isinstance(name, GraphSpec) else GRAPHS[name]
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    stem = cache / spec.key()
    paths = {"parquet": f"{stem}.parquet", "txt": f"{stem}.txt", "meta": f"{stem}.json"}
    known = {"undirected": spec.undirected, "diameter": spec.diameter()}
    if all(os.path.exists(p) for p in paths.values()):
        meta = json.loads(Path(paths["meta"]).read_text())
        return {**meta, **known, **paths}
    t0 = time.perf_counter()
    src, dst = spec.generate()
    gen_s = time.perf_counter() - t0
    vertices, components = scipy_components(src, dst)
    meta = {"name": spec.name, "kind": spec.kind, "params": spec.params, "edges": int(src.size),
            "vertices": vertices, "components": components, "generate_seconds": round(gen_s, 3)}
    comment = (f"{spec.name}: {spec.kind} {json.dumps(spec.params, sort_keys=True)}\n"
               f"Nodes: {vertices} Edges: {src.size} Components: {components}")
    # write to temporary names, then rename: an interrupted run leaves no half-written graph
    write_parquet(paths["parquet"] + ".tmp", src, dst)
    write_snap(paths["txt"] + ".tmp", src, dst, comment)
    os.replace(paths["parquet"] + ".tmp", paths["parquet"])
    os.replace(paths["txt"] + ".tmp", paths["txt"])
    Path(paths["meta"] + ".tmp").write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(paths["meta"] + ".tmp", paths["meta"])
    return {**meta, **known, **paths}
