"""The bundled sample graph of ``make run``: deterministic, about 300,000 edges, SNAP text.

Three parts with disjoint vertex ids, rows shuffled (so every epoch slice touches all of
them), written by :func:`make_sample` (``python -m spark_plugin.jobs.wcc.sample PATH``):

* 20,000 small random components (trees of 2 to 12 vertices plus a few extra edges);
* a 200 x 200 grid (79,600 edges, diameter 398: plain label propagation would need ~400
  rounds);
* a power-law part: 60,000 vertices, each new vertex attached to ``Zipf``-chosen earlier
  ones (about 120,000 edges), with duplicates and a few self-loops left in.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

__all__ = ["sample_edges", "make_sample"]


def sample_edges(seed: int = 20261122) -> tuple[np.ndarray, np.ndarray]:
    """The sample's edges ``(src, dst)`` as int64 arrays."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    base = 0
    # small components
    sizes = rng.integers(2, 13, 20_000)
    for part in np.split(np.arange(int(sizes.sum())), np.cumsum(sizes)[:-1]):
        k = len(part)
        parents = part[(rng.random(k - 1) * np.arange(1, k)).astype(np.int64)]
        src.append(part[1:])
        dst.append(parents)
        extra = rng.integers(0, k, (k // 4, 2))
        src.append(part[extra[:, 0]])
        dst.append(part[extra[:, 1]])
    base = int(sizes.sum())
    # grid
    g = 200
    idx = base + np.arange(g * g).reshape(g, g)
    src += [idx[:, :-1].ravel(), idx[:-1, :].ravel()]
    dst += [idx[:, 1:].ravel(), idx[1:, :].ravel()]
    base += g * g
    # power-law part
    n = 60_000
    new = np.repeat(np.arange(1, n), 2)
    pick = np.minimum(rng.zipf(1.6, new.shape[0]) - 1, new - 1)
    target = new - 1 - pick  # mostly recent vertices, sometimes far back
    src.append(base + new)
    dst.append(base + target)
    loops = rng.integers(0, n, 50)
    src.append(base + loops)
    dst.append(base + loops)
    s, d = np.concatenate(src), np.concatenate(dst)
    order = rng.permutation(s.shape[0])
    flip = rng.random(s.shape[0]) < 0.5
    s, d = s[order], d[order]
    s2 = np.where(flip, d, s)
    d2 = np.where(flip, s, d)
    return s2.astype(np.int64), d2.astype(np.int64)


def make_sample(path) -> Path:
    """Write the sample as SNAP text (``# comment`` header, ``src dst`` lines) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    s, d = sample_edges()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write("# timely-frontier WCC sample graph (spark_plugin/jobs/wcc/sample.py)\n")
        f.write(f"# edges {len(s)}\n")
        np.savetxt(f, np.column_stack([s, d]), fmt="%d", delimiter="\t")
    tmp.replace(path)
    return path


if __name__ == "__main__":
    out = make_sample(sys.argv[1] if len(sys.argv) > 1 else "build/sample_edges.txt")
    print(f"wrote {out}")
