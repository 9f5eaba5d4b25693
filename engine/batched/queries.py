"""Could-result-in and Naiad's precursor counts on the batched engine, with lazy ``Psi`` rows.

Queries need ``Psi[l1, :]`` only for the locations ``l1`` they start from (a query's source,
or a location holding an active pointstamp), so :class:`PsiRowCache` computes those rows on
first use with the array closure kernel and keeps them: on a large graph whose full ``Psi``
would not fit, only the rows asked for are ever built (docs/batched-engine.md).

The tracker methods that use this are :meth:`engine.batched.tracker.BatchedTracker.could_result_in`,
``precursor_counts``, ``active_frontier`` and ``may_deliver``.
"""

from __future__ import annotations

import numpy as np

from engine.batched.graph_arrays import GraphArrays

__all__ = ["PsiRowCache"]


class PsiRowCache:
    """``Psi`` rows of selected sources, computed on demand and kept.

    Parameters
    ----------
    arrays : GraphArrays
    max_antichain : int, optional
        Cap on antichain size (``AntichainOverflowError`` beyond it).
    """

    def __init__(self, arrays: GraphArrays, max_antichain: int | None = None):
        self.ga = arrays
        self.max_antichain = max_antichain or 0
        self._rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._fast = None
        self._csr = None      # the CSR arrays of every computed row (csr())

    def __len__(self) -> int:
        return len(self._rows)

    def _compute(self, source: int) -> None:
        from gpu_kernels.closure import AntichainOverflow, closure_rows, translation_mask
        from engine.errors import AntichainOverflowError
        ga = self.ga
        if self._fast is None:
            self._fast = translation_mask(ga.depth, ga.in_ptr, ga.in_src, ga.in_sum)
        try:
            _ptr, dst, sum_ptr, sums = closure_rows(
                source, source + 1, ga.m, ga.K, ga.depth, ga.in_ptr, ga.in_src, ga.in_sum,
                ga.out_ptr, ga.out_dst, ga.order, ga.rank, self._fast, self.max_antichain)
        except AntichainOverflow as e:
            s, t, size = e.args
            raise AntichainOverflowError(
                f"Psi[{s}][{t}] has {size} minimal summaries, more than max_antichain="
                f"{self.max_antichain}") from None
        self._rows[source] = (dst, sum_ptr - sum_ptr[0], sums.astype(np.int64))

    def csr(self, sources: np.ndarray):
        """``(row_of int64[L], pair_ptr, pair_dst, sum_ptr, sums)`` covering ``sources``
        (computing missing rows), in the form of :mod:`gpu_kernels.precursors`.

        The arrays cover every row computed so far (a superset of ``sources``: the kernels
        look rows up through ``row_of``) and are kept: they are rebuilt only when a call
        needs a row that was not computed yet, so the many small queries of the exchange
        protocol's guards do not copy ``Psi`` rows each time. Treat them as read-only.
        """
        sources = np.unique(np.asarray(sources, dtype=np.int64))
        missing = [s for s in sources.tolist() if s not in self._rows]
        for s in missing:
            self._compute(s)
        if self._csr is None or missing:
            self._csr = self._build(np.fromiter(sorted(self._rows), np.int64, len(self._rows)))
        return self._csr

    def _build(self, sources: np.ndarray):
        row_of = np.full(self.ga.L, -1, np.int64)
        pair_ptr = np.zeros(len(sources) + 1, np.int64)
        dsts, ptrs, sums = [], [], []
        n_sums = 0
        for r, s in enumerate(sources.tolist()):
            dst, sp, sm = self._rows[s]
            row_of[s] = r
            pair_ptr[r + 1] = pair_ptr[r] + len(dst)
            dsts.append(dst)
            ptrs.append(sp[:-1] + n_sums)
            sums.append(sm)
            n_sums += len(sm)
        W = 1 + self.ga.m + self.ga.K
        pair_dst = np.concatenate(dsts) if dsts else np.zeros(0, np.int32)
        sum_ptr = np.concatenate(ptrs + [np.array([n_sums], np.int64)])
        all_sums = np.concatenate(sums) if sums else np.zeros((0, W), np.int64)
        return row_of, pair_ptr, pair_dst.astype(np.int32), sum_ptr, all_sums
