"""gpu_kernels.unionfind: the array-operation twins (``*_xp``) equal the Numba kernels.

With NumPy as the array module on Hypothesis edge lists (dense and spread-out ids, self-loops,
duplicates, empty lists); with CuPy on a GPU (``gpu``, skipped without a usable device). The
twins must give the *same* edges as the CPU versions -- ``uf_stars`` and ``large_star``
exactly, in the same order; ``small_star`` and ``root_links`` as the same multiset of rows
-- so that the WCC
job's labels do not depend on where a task ran.
"""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpu_kernels.unionfind import (large_star, large_star_xp, root_links, root_links_xp,
                                   small_star, small_star_xp, uf_stars, uf_stars_xp)
from strategies import examples


@st.composite
def edge_lists(draw, max_vertices: int = 40, max_edges: int = 80):
    """``(a, b)`` int64 arrays: random edges over a few vertices, their ids either dense
    (the id-indexed union-find) or scaled far apart (the compacted one)."""
    n = draw(st.integers(1, max_vertices))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=max_edges))
    scale = draw(st.sampled_from([1, 1, 3, 10 ** 9 + 7]))
    shift = draw(st.sampled_from([0, 5, 2 ** 40]))
    e = np.array(edges, np.int64).reshape(-1, 2) * scale + shift
    return e[:, 0].copy(), e[:, 1].copy()


def _rows(*cols):
    return sorted(zip(*(np.asarray(c).tolist() for c in cols)))


def _equal(x, y) -> bool:
    return all(np.asarray(p).dtype == np.asarray(q).dtype and np.array_equal(p, q)
               for p, q in zip(x, y, strict=True))


@examples(200)
@given(edge_lists())
def test_uf_stars_xp_equals_uf_stars(edges):
    a, b = edges
    assert _equal(uf_stars_xp(np, a, b), uf_stars(a, b))


@examples(200)
@given(edge_lists())
def test_large_star_xp_equals_large_star(edges):
    a, b = edges
    u, v = np.r_[a, b], np.r_[b, a]   # both directions, as the job's large-star stage gets them
    assert _equal(large_star_xp(np, u, v), large_star(u, v))


@examples(200)
@given(edge_lists(), st.randoms(use_true_random=False))
def test_small_star_xp_equals_small_star(edges, rnd):
    a, b = edges
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    new = np.array([rnd.random() < 0.4 for _ in range(lo.size)], np.bool_)
    got, want = small_star_xp(np, lo, hi, new), small_star(lo, hi, new)
    assert [np.asarray(x).dtype for x in got] == [x.dtype for x in want]
    assert _rows(*got) == _rows(*want)


def _contracted(a, b, parts):
    """What the job's contract stage emits for the edges split into ``parts`` (part = index
    mod ``parts``): each part's stars and its roots' rows ``(r, r)``."""
    r, v = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for p in range(parts):
        ra, rb = uf_stars(a[p::parts], b[p::parts])
        roots = np.unique(ra)
        r += [ra, roots]
        v += [rb, roots]
    return np.concatenate(r), np.concatenate(v)


@examples(200)
@given(edge_lists(), st.integers(1, 4))
def test_root_links_xp_equals_root_links(edges, parts):
    r, v = _contracted(*edges, parts)
    got, want = root_links_xp(np, r, v), root_links(r, v)
    assert [np.asarray(x).dtype for x in got] == [x.dtype for x in want]
    assert _rows(*got) == _rows(*want)
    # links are new, pointers not; each vertex that is no root has exactly one pointer
    a, b, new = want
    assert (a < b).all() and len(set(b[~new].tolist())) == int((~new).sum())
    assert not set(b[~new].tolist()) & set(r[r == v].tolist())


@pytest.mark.gpu
@pytest.mark.parametrize("n, m", [(1, 0), (10, 5), (1000, 3000), (200_000, 600_000)])
def test_cupy_twins_equal_the_cpu_kernels(n, m):
    """On the device: the CuPy twins give the same edges as the Numba kernels (scaled ids
    take the compacted union-find on the CPU, ``unique`` on the device)."""
    import cupy

    rng = np.random.default_rng(n + m)
    for scale in (1, 10 ** 9 + 7):
        a = rng.integers(0, n, m).astype(np.int64) * scale
        b = rng.integers(0, n, m).astype(np.int64) * scale
        got = uf_stars_xp(cupy, cupy.asarray(a), cupy.asarray(b))
        assert _equal([cupy.asnumpy(x) for x in got], uf_stars(a, b))
        u, v = np.r_[a, b], np.r_[b, a]
        got = large_star_xp(cupy, cupy.asarray(u), cupy.asarray(v))
        assert _equal([cupy.asnumpy(x) for x in got], large_star(u, v))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keep = lo != hi
        lo, hi = lo[keep], hi[keep]
        new = rng.random(lo.size) < 0.3
        got = small_star_xp(cupy, cupy.asarray(lo), cupy.asarray(hi), cupy.asarray(new))
        assert _rows(*(cupy.asnumpy(x) for x in got)) == _rows(*small_star(lo, hi, new))
        r, v = _contracted(a, b, 3)
        got = root_links_xp(cupy, cupy.asarray(r), cupy.asarray(v))
        assert _rows(*(cupy.asnumpy(x) for x in got)) == _rows(*root_links(r, v))
