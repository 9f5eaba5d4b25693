"""CUDA kernels of the batched rollback solver (``engine.rollback.cuda``): the round of the
greatest fixed point and the C4 precomputation, with the masks resident on the device.

Every array is flat ``uint8`` (a mask) or ``int64`` (an index). A mask over processors is
``[n * NT]`` with time ``(e, i)`` of processor ``p`` at ``p * NT + e * NI + i`` (``NT = NE *
NI``), the layout of ``engine.rollback.masks.RollbackArrays`` flattened; a C4 block is
``[E * B * NT]`` (edge, notification, time). The NumPy twins are the array operations of
:class:`engine.rollback.masks.RollbackArrays` (``upclose``/``downclose``, ``_Rows.violated``,
``fc_step``, ``largest_available``, ``need_image``/``_steps_image``, the gathers by sender and
receiver) -- ``tests/cuda_sim/test_sim_rollback.py`` checks each kernel against its twin.

Threads and serial work (one thread per item, :func:`gpu_kernels._cuda.launch`):

* ``close_rows`` / ``close_cols``: a thread per row ``(m, e)`` / column ``(m, i)``, a
  cumulative OR of ``NI`` / ``NE`` cells (upward or downward);
* ``bad_init``: a thread per cell; ``rows_violated``: a thread per C3/C4/S2 row, its
  generators (stops at the first miss);
* ``fc_step``: a thread per cell ``(q, t)``: ``phi(e)(fc[src e])[t]`` for each edge into
  ``q`` (a shift, or a scan of the edge's ``need`` overrides);
* ``select``: a thread per processor: the largest available frontier within ``f & ~up(bad)``
  -- ``O(NT)`` for a chain of epochs, ``O(members x NT)`` for an explicit list (the lists are
  short: checkpoints);
* ``write``: a thread per cell, sets the round's "changed" flag;
* ``seed_demands``, ``image_scatter``, ``pull_dst``: a thread per ``(edge, notification,
  time)``; ``gather_src``: a thread per ``(processor, notification, time)`` over the
  processor's out-edges; ``tops``: a thread per cell.

**The changed flag.** A kernel that changes a mask writes the round number ``rnd`` into
``flag[0]``; the host reads ``flag`` once per round and the round changed something iff it
reads ``rnd`` back. No reset between rounds (no extra launch or copy), and concurrent writers
all write the same value.
"""

from __future__ import annotations

import functools
import types

from . import _cuda

__all__ = ["close_cuda", "bad_init_cuda", "rows_violated_cuda", "fc_step_cuda", "select_cuda",
           "write_cuda", "seed_demands_cuda", "image_scatter_cuda", "gather_src_cuda",
           "pull_dst_cuda", "tops_cuda", "EVERY", "CHAIN", "LISTED"]

#: Kinds of availability per processor (``select``/``write``): every frontier, a chain of
#: epochs ``down{(k, NI-1)}``, an explicit list of members (also a processor fixed by ``decide``).
EVERY, CHAIN, LISTED = 0, 1, 2

#: ``numba.cuda``, bound by :func:`_kernels` on first use (a module global: the simulator swaps
#: the kernels' global ``cuda`` for its fake module).
cuda = None


@functools.cache
def _kernels():
    global cuda
    cuda = _cuda.cuda()

    @cuda.jit(device=True)
    def phi_at(x, base, j, t, ni, shift_e, shift_i, over_ptr, over_t, gen_ptr, gen_t):
        """``phi(e_j)(x[base:base+NT])`` at time index ``t``: the override's generators all
        set, else the cell ``t - shift`` (set below the shift: ``need`` is empty there)."""
        for o in range(over_ptr[j], over_ptr[j + 1]):
            if over_t[o] == t:
                for g in range(gen_ptr[o], gen_ptr[o + 1]):
                    if x[base + gen_t[g]] == 0:
                        return 0
                return 1
        e = t // ni - shift_e[j]
        i = t % ni - shift_i[j]
        if e < 0 or i < 0:
            return 1
        return x[base + e * ni + i]

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def close_rows(x, rows, ne, ni, down):
        """In place: cumulative OR along ``i`` of row ``(m, e)`` (``down``: from the top)."""
        k = cuda.grid(1)
        if k < rows:
            base = k * ni
            acc = 0
            for s in range(ni):
                c = base + (ni - 1 - s if down else s)
                acc |= x[c]
                x[c] = acc

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def close_cols(x, cols, ne, ni, down):
        """In place: cumulative OR along ``e`` of column ``(m, i)``."""
        k = cuda.grid(1)
        if k < cols:
            m = k // ni
            i = k - m * ni
            base = m * ne * ni + i
            acc = 0
            for s in range(ne):
                c = base + (ne - 1 - s if down else s) * ni
                acc |= x[c]
                x[c] = acc

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def bad_init(inflight, notified, fc, bad, cells, simple):
        """``bad = inflight | (simple & notified & ~fc)`` (C5, and S2 of the simple guard)."""
        c = cuda.grid(1)
        if c < cells:
            v = inflight[c]
            if simple and notified[c] != 0 and fc[c] == 0:
                v = 1
            bad[c] = v

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def rows_violated(gen_ptr, gen_at, target, f, bad, nrows):
        """A row with a generator missing from ``f`` marks its target in ``bad``."""
        r = cuda.grid(1)
        if r < nrows:
            for g in range(gen_ptr[r], gen_ptr[r + 1]):
                if f[gen_at[g]] == 0:
                    bad[target[r]] = 1
                    break

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def fc_step(fc, f, out, in_ptr, in_edge, src, shift_e, shift_i, over_ptr, over_t, gen_ptr,
                gen_t, cells, nt, ni, flag, rnd):
        """``out[q, t] = fc[q, t] & f[q, t] & AND_{e into q} phi(e)(fc[src e])[t]``."""
        c = cuda.grid(1)
        if c < cells:
            q = c // nt
            t = c - q * nt
            v = fc[c] & f[c]
            k = in_ptr[q]
            while v != 0 and k < in_ptr[q + 1]:
                j = in_edge[k]
                v = phi_at(fc, src[j] * nt, j, t, ni, shift_e, shift_i, over_ptr, over_t,
                           gen_ptr, gen_t)
                k += 1
            out[c] = v
            if v != fc[c]:
                flag[0] = rnd

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def select(f, up, kind, chain_k, mem_ptr, masks, sizes, pick, n, ne, ni):
        """``pick[p]``: epochs kept (chain) or the member (list, -1: none) that is the largest
        available frontier within ``d = f & ~up`` of processor ``p``."""
        p = cuda.grid(1)
        if p < n:
            nt = ne * ni
            base = p * nt
            if kind[p] == 1:
                k = 0
                while k < ne and k <= chain_k[p]:
                    full = True
                    for i in range(ni):
                        c = base + k * ni + i
                        if f[c] == 0 or up[c] != 0:
                            full = False
                            break
                    if not full:
                        break
                    k += 1
                pick[p] = k
            elif kind[p] == 2:
                best = -1
                size = 0
                for m in range(mem_ptr[p], mem_ptr[p + 1]):
                    if sizes[m] > size:
                        fits = True
                        for t in range(nt):
                            if masks[m * nt + t] != 0 and (f[base + t] == 0 or up[base + t] != 0):
                                fits = False
                                break
                        if fits:
                            best = m
                            size = sizes[m]
                pick[p] = best

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def write(f, up, kind, pick, masks, cells, ne, ni, flag, rnd):
        """``f`` := the selected frontier (``d`` itself where every frontier is available)."""
        c = cuda.grid(1)
        if c < cells:
            nt = ne * ni
            p = c // nt
            t = c - p * nt
            kp = kind[p]
            if kp == 0:
                v = f[c] & (1 - up[c])
            elif kp == 1:
                v = 1 if t // ni < pick[p] else 0
            else:
                m = pick[p]
                v = masks[m * nt + t] if m >= 0 else 0
            if v != f[c]:
                f[c] = v
                flag[0] = rnd

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def seed_demands(dem, dst, blk_q, blk_t, cells, bsize, nt, ni):
        """``dem[e, b, t] = dst(e) == q_b and t <= t2_b``: the edges into the notifying
        processor, at the times below the notification."""
        k = cuda.grid(1)
        if k < cells:
            j = k // (bsize * nt)
            r = k - j * bsize * nt
            b = r // nt
            t = r - b * nt
            t2 = blk_t[b]
            v = 0
            if dst[j] == blk_q[b] and t // ni <= t2 // ni and t % ni <= t2 % ni:
                v = 1
            dem[k] = v

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def image_scatter(x, out, cells, bsize, nt, ni, shift_e, shift_i, over_ptr, over_t, gen_ptr,
                      gen_t, has_steps, step_ptr, step_a, step_b, use_steps):
        """``out[e, b] |= need_e(t)``'s generators for every set ``x[e, b, t]`` (the listed
        ``~>1`` pairs ``(a, t)`` instead where ``use_steps`` and the edge has ``step`` lines).
        ``out`` must start empty; a downward closure follows."""
        k = cuda.grid(1)
        if k < cells and x[k] != 0:
            j = k // (bsize * nt)
            t = k % nt
            base = k - t
            if use_steps and has_steps[j] != 0:
                for s in range(step_ptr[j], step_ptr[j + 1]):
                    if step_b[s] == t:
                        out[base + step_a[s]] = 1
                return
            for o in range(over_ptr[j], over_ptr[j + 1]):
                if over_t[o] == t:
                    for g in range(gen_ptr[o], gen_ptr[o + 1]):
                        out[base + gen_t[g]] = 1
                    return
            e = t // ni - shift_e[j]
            i = t % ni - shift_i[j]
            if e >= 0 and i >= 0:
                out[base + e * ni + i] = 1

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def gather_src(pre, acc, out_ptr, out_edge, cells, bsize, nt):
        """``acc[p, b, t] |= OR_{e out of p} pre[e, b, t]``."""
        k = cuda.grid(1)
        if k < cells:
            p = k // (bsize * nt)
            r = k - p * bsize * nt
            v = acc[k]
            for s in range(out_ptr[p], out_ptr[p + 1]):
                if v != 0:
                    break
                v = pre[out_edge[s] * bsize * nt + r]
            acc[k] = v

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def pull_dst(dem, demp, dst, cells, bsize, nt, flag, rnd):
        """``dem[e, b, t] |= demp[dst e, b, t]`` (the flag says whether it grew)."""
        k = cuda.grid(1)
        if k < cells and dem[k] == 0:
            j = k // (bsize * nt)
            r = k - j * bsize * nt
            if demp[dst[j] * bsize * nt + r] != 0:
                dem[k] = 1
                flag[0] = rnd

    @cuda.jit(cache=_cuda.KERNEL_CACHE)
    def tops(x, out, cells, ne, ni):
        """``out``: the maximal elements of each downward-closed row of ``x``."""
        c = cuda.grid(1)
        if c < cells:
            t = c % (ne * ni)
            e = t // ni
            i = t - e * ni
            v = x[c]
            if v != 0 and e + 1 < ne and x[c + ni] != 0:
                v = 0
            if v != 0 and i + 1 < ni and x[c + 1] != 0:
                v = 0
            out[c] = v

    return types.SimpleNamespace(
        close_rows=close_rows, close_cols=close_cols, bad_init=bad_init,
        rows_violated=rows_violated, fc_step=fc_step, select=select, write=write,
        seed_demands=seed_demands, image_scatter=image_scatter, gather_src=gather_src,
        pull_dst=pull_dst, tops=tops)


# -- launch wrappers: one launch each, no synchronisation ---------------------------------------

def close_cuda(x, m: int, ne: int, ni: int, *, down: bool, tpb=None) -> None:
    """In place: the upward (``down=False``) or downward closure of each of the ``m`` rows
    ``[NE, NI]`` of ``x``: two launches (rows, then columns)."""
    k = _kernels()
    _cuda.launch(k.close_rows, m * ne, x, m * ne, ne, ni, bool(down), tpb=tpb)
    _cuda.launch(k.close_cols, m * ni, x, m * ni, ne, ni, bool(down), tpb=tpb)


def bad_init_cuda(inflight, notified, fc, bad, *, simple: bool, tpb=None) -> None:
    _cuda.launch(_kernels().bad_init, len(bad), inflight, notified, fc, bad, len(bad),
                 bool(simple), tpb=tpb)


def rows_violated_cuda(gen_ptr, gen_at, target, f, bad, nrows: int, *, tpb=None) -> None:
    _cuda.launch(_kernels().rows_violated, nrows, gen_ptr, gen_at, target, f, bad, int(nrows),
                 tpb=tpb)


def fc_step_cuda(fc, f, out, edges, nt: int, ni: int, flag, rnd: int, *, tpb=None) -> None:
    """``edges``: the namespace of device edge arrays (``engine.rollback.cuda``)."""
    g = edges
    _cuda.launch(_kernels().fc_step, len(f), fc, f, out, g.in_ptr, g.in_edge, g.src, g.shift_e,
                 g.shift_i, g.over_ptr, g.over_t, g.gen_ptr, g.gen_t, len(f), nt, ni, flag,
                 int(rnd), tpb=tpb)


def select_cuda(f, up, avail, pick, n: int, ne: int, ni: int, *, tpb=None) -> None:
    """``avail``: ``kind``, ``chain_k``, ``mem_ptr``, ``masks``, ``sizes`` (device arrays)."""
    a = avail
    _cuda.launch(_kernels().select, n, f, up, a.kind, a.chain_k, a.mem_ptr, a.masks, a.sizes,
                 pick, n, ne, ni, tpb=tpb)


def write_cuda(f, up, avail, pick, ne: int, ni: int, flag, rnd: int, *, tpb=None) -> None:
    _cuda.launch(_kernels().write, len(f), f, up, avail.kind, pick, avail.masks, len(f), ne, ni,
                 flag, int(rnd), tpb=tpb)


def seed_demands_cuda(dem, dst, blk_q, blk_t, bsize: int, nt: int, ni: int, *, tpb=None):
    _cuda.launch(_kernels().seed_demands, len(dem), dem, dst, blk_q, blk_t, len(dem), bsize, nt,
                 ni, tpb=tpb)


def image_scatter_cuda(x, out, edges, bsize: int, nt: int, ni: int, *, use_steps: bool,
                       tpb=None) -> None:
    g = edges
    _cuda.launch(_kernels().image_scatter, len(x), x, out, len(x), bsize, nt, ni, g.shift_e,
                 g.shift_i, g.over_ptr, g.over_t, g.gen_ptr, g.gen_t, g.has_steps, g.step_ptr,
                 g.step_a, g.step_b, bool(use_steps), tpb=tpb)


def gather_src_cuda(pre, acc, edges, bsize: int, nt: int, *, tpb=None) -> None:
    _cuda.launch(_kernels().gather_src, len(acc), pre, acc, edges.out_ptr, edges.out_edge,
                 len(acc), bsize, nt, tpb=tpb)


def pull_dst_cuda(dem, demp, edges, bsize: int, nt: int, flag, rnd: int, *, tpb=None) -> None:
    _cuda.launch(_kernels().pull_dst, len(dem), dem, demp, edges.dst, len(dem), bsize, nt, flag,
                 int(rnd), tpb=tpb)


def tops_cuda(x, out, ne: int, ni: int, *, tpb=None) -> None:
    _cuda.launch(_kernels().tops, len(x), x, out, len(x), ne, ni, tpb=tpb)
