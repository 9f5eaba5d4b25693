"""Edge lists and oracles shared by the WCC job tests: small graphs, union-find and scipy labels,
the job's Parquet output read back."""

import os

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


EDGES = [(1, 2), (2, 3), (5, 6), (7, 7), (3, 1), (10, 11), (11, 12), (6, 2), (20, 21), (12, 20)]


def write_text(path, edges, header="# src dst\n"):
    with open(path, "w") as f:
        f.write(header)
        for s, d in edges:
            f.write(f"{s} {d}\n")
    return path


def expected(edges):
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x
    for s, d in edges:
        rs, rd = find(s), find(d)
        if rs != rd:
            parent[max(rs, rd)] = min(rs, rd)
    return {v: find(v) for v in parent}


def written(out):
    if not os.path.exists(out):
        return {}
    t = pq.read_table(out)
    res = {}
    for e, v, c in zip(*(t.column(n).to_pylist() for n in ("epoch", "vertex", "component"))):
        res.setdefault(e, []).append((v, c))
    return res


def expected_labels(src, dst) -> dict:
    """vertex -> smallest vertex of its component, over the vertices that occur in an edge."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if src.size == 0:
        return {}
    ids, inv = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = ids.size
    m = coo_matrix((np.ones(src.size), (inv[:src.size], inv[src.size:])), shape=(n, n))
    _, lab = connected_components(m, directed=False)
    mins = np.full(lab.max() + 1, np.iinfo(np.int64).max)
    np.minimum.at(mins, lab, ids)
    return dict(zip(ids.tolist(), mins[lab].tolist()))


class Families:
    """Edge lists of many graph families in disjoint id ranges."""

    def __init__(self):
        self.src, self.dst = [], []
        self.base = 0

    def add(self, edges, n=None):
        e = np.asarray(edges, np.int64).reshape(-1, 2)
        if e.size:
            self.src.append(e[:, 0] + self.base)
            self.dst.append(e[:, 1] + self.base)
            top = int(e.max()) + 1
        else:
            top = 0
        self.base += max(top, n or 0) + 1

    def add_nx(self, g):
        g = nx.convert_node_labels_to_integers(g)
        self.add(list(g.edges()), g.number_of_nodes())

    def arrays(self):
        return np.concatenate(self.src), np.concatenate(self.dst)
