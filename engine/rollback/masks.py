"""Rollback frontiers as bitmasks over the time universe, the guards as array operations, and
the greatest fixed point of :mod:`engine.rollback.problem` as rounds over all processors at
once (NumPy, cpu).

A frontier of processor ``p`` is row ``p`` of a ``bool[n, NE, NI]`` array (time ``(e, i)`` at
``[p, e, i]``); downward closure and upward closure are cumulative ORs along the two axes.
``phi(e)(f)`` is ``f`` shifted by the edge's ``shift`` with its ``need`` overrides patched in;
a condition "``need_e(t) ⊆ f(p)``" is "every generator of ``need_e(t)`` is in ``f(p)``", so
C3, C4 and S2 become gathers of generator bits and a count of misses per row. The answer is
assembled by :func:`engine.rollback.problem.decide`, the same code the reference uses, so the two
differ only in how a fixed point is computed; they are compared on random problems in
``tests/engine/rollback/test_rollback.py``.

Cost, per round: ``O(n NE NI)`` for the masks plus ``O(rows)`` for the C3 and C4 rows. The
number of rounds is at most the length of the longest chain of forced drops (one processor's
frontier shrinking makes a neighbour's shrink). C4 needs ``R(q, t2, p)`` for every notification,
computed by reverse reachability over all locations at once, in chunks of notifications: at
most ``O(notifications x (n + E) x NE x NI)`` per round of that fixed point, each round
stepping back only from the edges whose demands grew in the previous one; the simple guard
needs none of it (section 7.4's point).

The cuda solver (:mod:`engine.rollback.cuda`) keeps these arrays and runs their rounds on
the device; :func:`engine.rollback.batched.solve_batched` chooses between them.
"""

from __future__ import annotations

import numpy as np

from engine.rollback.problem import Guard, RollbackProblem

__all__ = ["RollbackArrays", "upclose", "downclose", "maximal_rows", "CHUNK_BYTES"]

#: Bytes of the reverse-reachability block ``bool[n + E, B, NE, NI]`` for one chunk of
#: notifications (C4 precomputation).
CHUNK_BYTES = 1 << 26


def upclose(x: np.ndarray) -> np.ndarray:
    """Every time above a set time, per row of ``bool[..., NE, NI]``."""
    return np.logical_or.accumulate(np.logical_or.accumulate(x, axis=-2), axis=-1)


def downclose(x: np.ndarray) -> np.ndarray:
    """Every time below a set time, per row of ``bool[..., NE, NI]``."""
    r = x[..., ::-1, ::-1]
    return np.logical_or.accumulate(np.logical_or.accumulate(r, axis=-2), axis=-1)[..., ::-1, ::-1]


def maximal_rows(x: np.ndarray) -> list:
    """The canonical form (sorted maximal elements) of every row of a downward-closed
    ``bool[n, NE, NI]``."""
    top = x.copy()
    top[:, :-1, :] &= ~x[:, 1:, :]
    top[:, :, :-1] &= ~x[:, :, 1:]
    p, e, i = np.nonzero(top)
    out: list = [[] for _ in range(x.shape[0])]
    for a, b, c in zip(p.tolist(), e.tolist(), i.tolist()):
        out[a].append((b, c))
    return [tuple(r) for r in out]  # np.nonzero is row-major: each row already sorted


def _rank_passes(keys: np.ndarray) -> list:
    """Indices of ``keys`` split into passes in which no key repeats (pass ``r`` holds each
    key's ``r``-th occurrence), so that ``x[keys[j]] op= y[j]`` is safe within a pass."""
    if not len(keys):
        return []
    order = np.argsort(keys, kind="stable")
    starts = np.flatnonzero(np.r_[True, keys[order][1:] != keys[order][:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return [order[rank == r] for r in range(int(rank.max()) + 1)]


class _Rows:
    """Rows each asking that some generator bits of ``f`` be set (``gen_at``, flat indices
    ``p * nt + t``, grouped by ``gen_row``); a violated row marks its ``target`` (``q * nt + t``)."""

    def __init__(self, size: int, target, gen_row, gen_at):
        self.size = size
        self.target = np.asarray(target, dtype=np.int64)
        self.gen_row = np.asarray(gen_row, dtype=np.int64)
        self.gen_at = np.asarray(gen_at, dtype=np.int64)
        self.count = len(self.target)

    @classmethod
    def from_lists(cls, n: int, nt: int, rows: list) -> "_Rows":
        """From ``(q, t, [(p, t'), ...])`` rows."""
        gen_row = [r for r, (_q, _t, gens) in enumerate(rows) for _ in gens]
        gen_at = [p * nt + t for _q, _t, gens in rows for p, t in gens]
        return cls(n * nt, [q * nt + t for q, t, _ in rows], gen_row, gen_at)

    def violated(self, f_flat: np.ndarray) -> np.ndarray:
        """``bool[n * nt]``: the targets of the violated rows."""
        out = np.zeros(self.size, dtype=bool)
        if self.count:
            miss = np.bincount(self.gen_row, weights=~f_flat[self.gen_at], minlength=self.count)
            out[self.target[miss > 0]] = True
        return out


class RollbackArrays:
    """A rollback problem as arrays, and its greatest fixed point by rounds.

    Parameters
    ----------
    problem : RollbackProblem
    guard : Guard
    """

    def __init__(self, problem: RollbackProblem, guard: Guard, c4_rows=None):
        self.problem, self.guard = problem, guard
        ne, ni, n = problem.ne, problem.ni, problem.n
        self.shape = (n, ne, ni)
        self.nt = nt = ne * ni
        tix = lambda t: t[0] * ni + t[1]  # noqa: E731
        self.internal = internal = problem.internal()
        self.src = np.array([problem.edges[k].src for k in internal], dtype=np.int64)
        self.dst = np.array([problem.edges[k].dst for k in internal], dtype=np.int64)
        self.shift = np.array([problem.shift.get(k, (0, 0)) for k in internal],
                              dtype=np.int64).reshape(-1, 2)
        # the distinct shifts, and each edge's index among them
        self.shifts, self.shift_of = np.unique(self.shift, axis=0, return_inverse=True)
        self.shift_of = self.shift_of.reshape(-1)
        # need overrides: (edge row, t, [generators])
        self.over = [(j, tix(t), [tix(g) for g in gens])
                     for j, k in enumerate(internal)
                     for t, gens in sorted(problem.need_over.get(k, {}).items())]
        self.over_mask = np.zeros((len(internal), nt), dtype=bool)
        for j, t, _ in self.over:
            self.over_mask[j, t] = True
        self.over_mask = self.over_mask.reshape(len(internal), ne, ni)
        # C5: in-flight times per receiver
        self.inflight = np.zeros(n * nt, dtype=bool)
        for k in internal:
            for t in problem.inflight.get(k, ()):
                self.inflight[problem.edges[k].dst * nt + tix(t)] = True
        # C3: each consumed message on an internal edge
        self.c3 = self._c3_rows()
        self.notified = np.zeros(n * nt, dtype=bool)
        for q in range(n):
            for t in problem.notified[q]:
                self.notified[q * nt + tix(t)] = True
        # C4's rows: by reverse reachability here, or by ``c4_rows(self)`` (the device's)
        self.c4 = (_Rows.from_lists(n, nt, (c4_rows or RollbackArrays._c4_rows)(self))
                   if guard is Guard.FULL else None)
        self.every = np.array([problem.avail[p].every for p in range(n)], dtype=bool)

    def _c3_rows(self) -> _Rows:
        """One row per message consumed on an internal edge ``e: p -> q`` at ``t``: the
        generators of ``need_e(t)`` must be kept by ``p``."""
        problem, (n, ne, ni), nt = self.problem, self.shape, self.nt
        j, t = [], []
        for jj, k in enumerate(self.internal):
            for tt in problem.consumed.get(k, ()):
                j.append(jj)
                t.append(tt[0] * ni + tt[1])
        j, t = np.array(j, dtype=np.int64), np.array(t, dtype=np.int64)
        over = {(jj, tt): gens for jj, tt, gens in self.over}
        is_over = np.array([(a, b) in over for a, b in zip(j.tolist(), t.tolist())], dtype=bool) \
            if over else np.zeros(len(j), dtype=bool)
        # rows without an override: one generator t - shift, or none below the shift
        e, i = t // ni - self.shift[j, 0], t % ni - self.shift[j, 1]
        has = ~is_over & (e >= 0) & (i >= 0)
        gen_row = [np.flatnonzero(has)]
        gen_at = [self.src[j[has]] * nt + e[has] * ni + i[has]]
        for r in np.flatnonzero(is_over).tolist():
            gens = over[(int(j[r]), int(t[r]))]
            gen_row.append(np.full(len(gens), r, dtype=np.int64))
            gen_at.append(np.array([self.src[j[r]] * nt + g for g in gens], dtype=np.int64))
        return _Rows(n * nt, self.dst[j] * nt + t, np.concatenate(gen_row), np.concatenate(gen_at))

    # -- phi and need as array operations -----------------------------------------------------

    def phi(self, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``phi(e)(x[j])`` for the internal edges ``e = rows[j]`` (default: all, in order):
        ``bool[len(rows), NE, NI]`` from the senders' frontiers ``x``, same shape."""
        ne, ni = self.shape[1:]
        rows = np.arange(len(self.src)) if rows is None else rows
        out = np.ones_like(x)
        group = self.shift_of[rows]
        for g, (de, di) in enumerate(self.shifts.tolist()):
            js = np.flatnonzero(group == g)
            if len(js) and de < ne and di < ni:
                out[js, de:, di:] = x[js, :ne - de, :ni - di]
        if self.over:
            at = np.full(len(self.src), -1)
            at[rows] = np.arange(len(rows))
            flat, xf = out.reshape(len(x), -1), x.reshape(len(x), -1)
            for j, t, gens in self.over:
                if at[j] >= 0:
                    flat[at[j], t] = bool(xf[at[j], gens].all()) if gens else True
        return out

    def need_image(self, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``N_e(x[j, b]) = ∪_{t in x[j, b]} need_e(t)`` for the internal edges ``e = rows[j]``
        (default: all, in order): ``bool[len(rows), B, NE, NI]`` from the same shape
        (downward closed)."""
        ne, ni = self.shape[1:]
        rows = np.arange(len(self.src)) if rows is None else rows
        z = x & ~self.over_mask[rows][:, None] if self.over else x
        out = np.zeros_like(x)
        group = self.shift_of[rows]
        for g, (de, di) in enumerate(self.shifts.tolist()):
            js = np.flatnonzero(group == g)
            if len(js) and de < ne and di < ni:
                out[js, :, :ne - de, :ni - di] = z[js, :, de:, di:]
        if not self.over:  # a shifted downward-closed set is downward closed
            return out
        at = self._positions(rows)
        flat, xf = out.reshape(*x.shape[:2], -1), x.reshape(*x.shape[:2], -1)
        for j, t, gens in self.over:
            if gens and at[j] >= 0:
                flat[at[j]][:, gens] |= xf[at[j]][:, t][:, None]
        return downclose(out)

    def _positions(self, rows: np.ndarray) -> np.ndarray:
        """``at[e]``: the position of internal edge ``e`` in ``rows`` (-1: absent)."""
        at = np.full(len(self.src), -1)
        at[rows] = np.arange(len(rows))
        return at

    def _steps_image(self, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``down{a : (a, b) in ~>1(e), b in x[j, ...]}`` per internal edge ``e = rows[j]``
        (the processor-side reverse step of could-result-in): ``need_image`` where ``~>1`` is
        the default, the listed pairs where the file gives ``step`` lines."""
        rows = np.arange(len(self.src)) if rows is None else rows
        out = self.need_image(x, rows)
        if not self.problem.steps:
            return out
        ni = self.shape[2]
        at = self._positions(rows)
        flat, xf = out.reshape(*x.shape[:2], -1), x.reshape(*x.shape[:2], -1)
        for j, k in enumerate(self.internal):
            if k in self.problem.steps and at[j] >= 0:
                r = at[j]
                flat[r] = False
                for a, b in self.problem.steps[k]:
                    flat[r][:, a[0] * ni + a[1]] |= xf[r][:, b[0] * ni + b[1]]
        return downclose(out)

    def _c4_rows(self) -> list:
        """One row per notification ``(q, t2)``: the generators of ``R(q, t2, p)`` for every
        ``p``, by reverse reachability from ``(e2, t2)`` for the internal edges ``e2`` into
        ``q``, over all locations at once, in chunks of notifications."""
        problem = self.problem
        n, ne, ni = self.shape
        nt, E = self.nt, len(self.internal)
        targets = [(q, t) for q in range(n) for t in sorted(problem.notified[q])]
        into = [np.flatnonzero(self.dst == q) for q in range(n)]
        rows = []
        chunk = max(1, CHUNK_BYTES // max(1, (n + E) * nt))
        passes = _rank_passes(self.src)  # edges in groups with distinct senders
        for lo in range(0, len(targets), chunk):
            block = targets[lo:lo + chunk]
            B = len(block)
            # dem_e[e, b]: times t with (e, t) ~> (e2, t2); dem_p[p, b] likewise for processors
            # (locations first, so that gathers and scatters move contiguous blocks)
            dem_e = np.zeros((E, B, ne, ni), dtype=bool)
            for b, (q, (e2t, i2t)) in enumerate(block):
                dem_e[into[q], b, :e2t + 1, :i2t + 1] = True
            dem_p = np.zeros((n, B, ne, ni), dtype=bool)
            # semi-naive: each round steps back only from the edges whose demands grew in
            # the previous one (the images are unions over times, so the others add nothing
            # new); the sets only grow, and the rounds stop when none does
            changed = np.flatnonzero(dem_e.any(axis=(1, 2, 3)))
            while len(changed):
                pre = self._steps_image(dem_e[changed], changed)
                srcs = self.src[changed]
                touched = np.unique(srcs)
                before = dem_p[touched]
                for j in _rank_passes(srcs):
                    dem_p[srcs[j]] |= pre[j]
                grown = touched[(dem_p[touched] != before).any(axis=(1, 2, 3))]
                moved = np.zeros(n, dtype=bool)
                moved[grown] = True
                cand = np.flatnonzero(moved[self.dst])
                new = dem_e[cand] | dem_p[self.dst[cand]]
                grew = (new != dem_e[cand]).any(axis=(1, 2, 3))
                dem_e[cand] = new
                changed = cand[grew]
            # R(q, t2, p) = ∪_{e1 out of p} N_e1(dem_e[e1])
            r = np.zeros((n, B, ne, ni), dtype=bool)
            if E:
                img = self.need_image(dem_e)
                for j in passes:
                    r[self.src[j]] |= img[j]
            for b, (q, t2) in enumerate(block):
                gens = [(p, e * ni + i) for p, ant in enumerate(maximal_rows(r[:, b]))
                        for e, i in ant]
                rows.append((q, t2[0] * ni + t2[1], gens))
        return rows

    # -- the greatest fixed point ------------------------------------------------------------

    def greatest_fc(self, fc: np.ndarray) -> np.ndarray:
        """``fc*`` from a start above it and within ``f``: rounds of
        ``f_c(q) &= AND over e into q of phi(e)(f_c(src e))``, each round over the edges whose
        sender changed in the previous one. The AND is taken in passes over the edges' ranks
        among those into the same processor, so no pass writes a processor twice."""
        fc = fc.copy()
        sel = np.arange(len(self.src))
        while len(sel):
            ph = self.phi(fc[self.src[sel]], sel)
            dst = self.dst[sel]
            targets = np.unique(dst)
            before = fc[targets]
            for j in _rank_passes(dst):
                fc[dst[j]] &= ph[j]
            changed = targets[(fc[targets] != before).any(axis=(1, 2))]
            moved = np.zeros(self.shape[0], dtype=bool)
            moved[changed] = True
            sel = np.flatnonzero(moved[self.src])
        return fc

    def fc_step(self, fc: np.ndarray, f: np.ndarray) -> np.ndarray:
        """One Jacobi step of the simple guard's ``f_c``:
        ``fc & f & AND over e into q of phi(e)(fc[src e])`` (the twin of the device's
        ``fc_step`` kernel, which runs the fixed point of ``f`` and ``f_c`` together)."""
        out = fc & f
        if len(self.src):
            ph = self.phi(fc[self.src])
            for j in _rank_passes(self.dst):
                out[self.dst[j]] &= ph[j]
        return out

    def _members(self, fixed: dict):
        """The finite availability lists as masks: ``(owner int[m], masks bool[m, NE, NI])``."""
        n, ne, ni = self.shape
        owner, masks = [], []
        for p in range(n):
            if p in fixed and fixed[p] is None:
                continue  # every frontier (decide's relaxation)
            if p in fixed:
                lst = [fixed[p]]
            elif self.every[p]:
                continue
            else:
                a = self.problem.avail[p]
                if not a.explicit:
                    continue  # a chain of epochs: handled by the prefix rule
                lst = a.frontiers(ne, ni)
            for ant in lst:
                m = np.zeros((ne, ni), dtype=bool)
                for e, i in ant:
                    m[:e + 1, :i + 1] = True
                owner.append(p)
                masks.append(m)
        return np.array(owner, dtype=np.int64), (np.array(masks) if masks else
                                                 np.zeros((0, ne, ni), dtype=bool))

    def availability(self, fixed: dict | None = None):
        """``largest_available(d)``: per processor, the largest available frontier within the
        downward-closed ``d`` (``bool[n, NE, NI]``), with the processors in ``fixed`` fixed to
        theirs (to every frontier where ``fixed[p]`` is None). Also sets ``self.avail_kind`` (``EVERY``/``CHAIN``/``LISTED`` of
        :mod:`gpu_kernels.rollback` per processor), ``self.chain_k``, ``self.member_owner``,
        ``self.member_masks`` (what the device's ``select`` kernel takes)."""
        fixed = fixed or {}
        n, ne, ni = self.shape
        problem = self.problem
        owner, masks = self._members(fixed)
        listed = np.zeros(n, dtype=bool)
        listed[owner] = True
        chain = np.array([not self.every[p] and p not in fixed and not listed[p]
                          for p in range(n)], dtype=bool)
        chain_k = np.array([problem.avail[p].epochs for p in range(n)], dtype=np.int64)[chain]
        sizes = masks.sum(axis=(1, 2))

        def largest_available(d):
            out = d.copy()
            if chain.any():  # epochs <= k for the largest k whose rows are all kept
                full = np.logical_and.accumulate(d[chain].all(axis=2), axis=1)
                k = np.minimum(full.sum(axis=1), chain_k + 1)
                out[chain] = (np.arange(ne)[None, :] < k[:, None])[:, :, None]
            if listed.any():  # the member of largest size within d (it is their union)
                fits = ~(masks & ~d[owner]).any(axis=(1, 2))
                key = np.where(fits, sizes, -1)
                best = np.full(n, -1)
                np.maximum.at(best, owner, key)
                out[listed] = False
                pick = fits & (key == best[owner]) & (key > 0)
                out[owner[pick]] = masks[pick]
            return out

        self.avail_kind = np.where(listed, 2, np.where(chain, 1, 0)).astype(np.int8)
        self.chain_k = np.array([problem.avail[p].epochs for p in range(n)], dtype=np.int64)
        self.member_owner, self.member_masks = owner, masks
        return largest_available

    def largest_consistent(self, fixed: dict | None = None):
        """Rounds of "``f(q)`` := the largest available frontier within ``f(q)`` minus the times
        C3, C4 (or S2) and C5 forbid", all processors at once, from ``T`` everywhere; the same
        fixed point as :func:`engine.rollback.problem.largest_consistent` (same arguments, returns)."""
        largest_available = self.availability(fixed)

        f = np.ones(self.shape, dtype=bool)
        fc = f
        self.rounds = 0
        while True:
            self.rounds += 1
            flat = f.reshape(-1)
            bad = self.inflight | self.c3.violated(flat)
            if self.guard is Guard.FULL:
                bad |= self.c4.violated(flat)
            else:
                fc = self.greatest_fc(fc & f)
                bad |= self.notified & ~fc.reshape(-1)
            new = largest_available(f & ~upclose(bad.reshape(self.shape)))
            if np.array_equal(new, f):
                break
            f = new
        fcs = None
        if self.guard is Guard.SIMPLE:
            fcs = maximal_rows(self.greatest_fc(fc & f))
        return maximal_rows(f), fcs
