"""Graph oracles shared by the kernel tests, the job tests and the benchmarks' tests: scipy's
shortest distances and a plain union-find's components."""

import numpy as np


def scipy_distances(src, dst, w, vertices, source):
    """scipy's distances from ``source`` to each of ``vertices`` (inf: unreachable). The
    graph is given dense with ``inf`` for "no edge" (``csgraph_from_dense``), so that
    zero-weight edges stay edges; of duplicate edges the lightest counts."""
    from scipy.sparse.csgraph import csgraph_from_dense, shortest_path

    ids = np.unique(np.concatenate([vertices, [source], src, dst]))
    s, d = np.searchsorted(ids, src), np.searchsorted(ids, dst)
    mat = np.full((len(ids), len(ids)), np.inf)
    np.minimum.at(mat, (s, d), np.asarray(w, np.float64))
    graph = csgraph_from_dense(mat, null_value=np.inf)
    out = shortest_path(graph, directed=True, indices=int(np.searchsorted(ids, source)))
    return out[np.searchsorted(ids, vertices)]


def union_find_components(src, dst):
    """Each vertex's smallest-id component member (union-find with path halving), over the
    vertices some edge touches; independent of scipy and Spark."""
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(src.tolist(), dst.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {v: find(v) for v in list(parent)}
