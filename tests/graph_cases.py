"""Graph oracles shared by the kernel tests and the job tests: scipy's shortest distances."""

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
