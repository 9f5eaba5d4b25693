"""Shortest paths with the distances kept in Spark: a Spark source's epochs past the driver's
budget (issue 31 item 6).

The driver holds ``O(P)`` numbers; everything of size ``V`` or ``E`` is an RDD of ``P``
elements, one per partition, built and kept on the executors:

* every vertex has an *owner* partition (:class:`Owner`: ``v % P``, or ``locality``: ranges
  of ids cut at quantiles that Spark samples from the first Spark epoch's sources);
* partition ``p``'s element is ``(owned, csr, dist, active, active_d, added)``: the vertices
  it owns (sorted), the edges whose source it owns
  (:func:`~gpu_kernels.shortest_paths.local_csr`), their distances, the round's active
  vertices (local indices, distances) and how many edges the epoch added there;
* an epoch starts with one Spark job that reads the epoch's rows on the executors (and, the
  first time, the state the driver or a resumed ``--out`` held), splits them by owner
  (``mapInArrow``, then a shuffle of per-partition blocks) and merges them into the
  elements; the *seeds* (the reached sources of the epoch's new edges; epoch 0: the
  source) are the active vertices of round 0;
* a global round is one Spark job: every partition runs the CPU kernel
  :func:`~gpu_kernels.shortest_paths.local_fixpoint` (Dijkstra to its local fixpoint) from
  its active vertices, its candidates for vertices owned elsewhere are shuffled to their
  owners, and there ``min`` (:func:`~gpu_kernels.shortest_paths.improve`) keeps those that
  lower a distance: the next round's active vertices. The driver gets each task's report and
  three counts, and decides from the frontiers as for every epoch;
* the epoch's distances (reached vertices) become a DataFrame ``vertex, distance``,
  checkpointed, written by the executors.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np

from gpu_kernels.shortest_paths import improve, local_csr, local_fixpoint, sorted_distinct, unreached

__all__ = ["Owner", "SparkDistances", "EdgeFrame", "MergeTotals"]


class Owner:
    """The owner partition of each vertex: ``v % P``, or with ``cuts`` (``P - 1`` sorted ids)
    the range ``searchsorted(cuts, v, "right")``. Picklable, vectorised."""

    def __init__(self, P: int, cuts=None):
        self.P = int(P)
        self.cuts = None if cuts is None else np.asarray(cuts, np.int64)

    def __call__(self, v) -> np.ndarray:
        v = np.asarray(v, np.int64)
        if self.cuts is None:
            return v % self.P
        return np.searchsorted(self.cuts, v, side="right").astype(np.int64)


@dataclass(frozen=True)
class EdgeFrame:
    """Rows to merge into the partitions: a DataFrame ``src, dst`` (``weight``); ``fresh``:
    consumed at ``step.in1`` this epoch (reported by the tasks of round 0); ``seed``: its
    reached sources are round 0's active vertices (the epoch's own edges); ``summed``: its
    weights are in the job's weight sum already (edges the driver held); ``both``: its rows
    are both ways already (the driver's edges of an undirected job)."""

    frame: object
    fresh: bool = True
    seed: bool = True
    summed: bool = False
    both: bool = False


@dataclass
class MergeTotals:
    """What merging an epoch found, summed over the partitions: the edges it added that are
    consumed this epoch (``fresh``), the seeds, every edge and vertex so far, the cut edges
    it added, the weights it added (not summed before)."""

    fresh: int = 0
    seeds: int = 0
    edges: int = 0
    vertices: int = 0
    cut: int = 0
    weight_sum: float = 0.0


class _Split:
    """``mapInArrow``: each batch of rows as blocks keyed by owner: ``(p, blob)`` rows, the
    blob a pickled ``("e", src, dst, w, fresh, seed, summed)`` (edges whose source ``p``
    owns) or ``("v", vertices)`` (the targets ``p`` owns) or ``("d", vertices,
    distances)`` (known distances)."""

    def __init__(self, owner: Owner, kind: str, *, weighted=False, undirected=False,
                 fresh=True, seed=True, summed=False, dtype=np.int64):
        self.owner, self.kind, self.weighted, self.undirected = owner, kind, weighted, undirected
        self.fresh, self.seed, self.summed, self.dtype = fresh, seed, summed, dtype

    def __call__(self, batches):
        import pyarrow as pa

        for b in batches:
            if not b.num_rows:
                continue
            out_p, out_blob = [], []
            if self.kind == "d":
                v = b.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
                d = b.column(1).to_numpy(zero_copy_only=False).astype(self.dtype)
                own = self.owner(v)
                for p in np.unique(own):
                    k = own == p
                    out_p.append(int(p))
                    out_blob.append(pickle.dumps(("d", v[k], d[k]), protocol=5))
            else:
                s = b.column(0).to_numpy(zero_copy_only=False).astype(np.int64)
                t = b.column(1).to_numpy(zero_copy_only=False).astype(np.int64)
                w = (b.column(2).to_numpy(zero_copy_only=False).astype(np.float64)
                     if self.weighted else np.ones(len(s), np.int64))
                if self.undirected:
                    s, t, w = np.concatenate([s, t]), np.concatenate([t, s]), np.concatenate([w, w])
                own, town = self.owner(s), self.owner(t)
                for p in np.unique(own):
                    k = own == p
                    out_p.append(int(p))
                    out_blob.append(pickle.dumps(("e", s[k], t[k], w[k], self.fresh, self.seed,
                                                  self.summed), protocol=5))
                for p in np.unique(town):
                    out_p.append(int(p))
                    out_blob.append(pickle.dumps(("v", t[town == p]), protocol=5))
            yield pa.RecordBatch.from_arrays([pa.array(out_p, pa.int32()),
                                              pa.array(out_blob, pa.binary())], ["p", "blob"])


def _identity(p):
    return p


def _blocks(rows):
    """One element per partition: its blocks, unpickled (``partitionBy`` put them there)."""
    yield [pickle.loads(blob) for _, blob in rows]


class _Merge:
    """Round 0's input: a partition's element with its new blocks merged in (module
    docstring), and its counts ``(fresh, seeds, edges, vertices, cut, weight_sum)``."""

    def __init__(self, owner: Owner, source: int, first: bool, dtype):
        self.owner, self.source, self.first, self.dtype = owner, source, first, dtype

    def __call__(self, p, pairs):
        for old, blocks in pairs:
            yield self._merge(p, old, blocks)

    def _merge(self, p, old, blocks):
        dt = self.dtype
        empty_i = np.zeros(0, np.int64)
        if old is not None:
            owned, (indptr, _, tglob, weights), dist = old[0], old[1], old[2]
            old_s, old_t, old_w = np.repeat(owned, np.diff(indptr)), tglob, weights.astype(dt)
        else:
            owned, dist = empty_i, np.zeros(0, dt)
            old_s, old_t, old_w = empty_i, empty_i, np.zeros(0, dt)
        es = [b for b in blocks if b[0] == "e"]
        vs = [b[1] for b in blocks if b[0] == "v"]
        ds = [b for b in blocks if b[0] == "d"]
        mine = [np.array([self.source], np.int64)] if int(self.owner([self.source])[0]) == p \
            else []
        verts = sorted_distinct(owned, *[b[1] for b in es], *vs, *[b[1] for b in ds], *mine)
        d = np.full(len(verts), unreached(dt), dt)
        d[np.searchsorted(verts, owned)] = dist
        for _, dv, dd in ds:
            improve(verts, d, dv, dd.astype(dt, copy=False))
        if mine:
            d[np.searchsorted(verts, self.source)] = 0
        s = np.concatenate([old_s, *[b[1] for b in es]]) if es else old_s
        t = np.concatenate([old_t, *[b[2] for b in es]]) if es else old_t
        w = np.concatenate([old_w, *[b[3].astype(dt, copy=False) for b in es]]) if es else old_w
        csr = local_csr(verts, s, t, w)
        fresh = sum(len(b[1]) for b in es if b[4])
        wsum = float(sum(np.sum(b[3], dtype=np.float64) for b in es if not b[6]))
        cut = sum(int(np.count_nonzero(self.owner(b[2]) != p)) for b in es)
        if self.first:
            seeds = np.array(mine[0] if mine else empty_i, np.int64)
        else:
            seeds = sorted_distinct(*[b[1] for b in es if b[5]]) if any(b[5] for b in es) \
                else empty_i
        ai = np.searchsorted(verts, seeds)
        ad = d[ai] if len(ai) else np.zeros(0, dt)
        keep = ad != unreached(dt)
        ai, ad = ai[keep], ad[keep]
        counts = (int(fresh), int(len(ai)), int(len(t)), int(len(verts)), int(cut), wsum)
        return (verts, csr, d, ai, ad, int(fresh)), counts


class _Step:
    """A global round's ``step`` on one partition (``mapPartitionsWithIndex``): its local
    fixpoint from its active vertices; yields ``((owned, csr, dist), candidates by owner,
    (report arrays, sent to min, local rounds))``. ``report_of`` is the job's
    ``local_report``."""

    def __init__(self, e: int, g: int, owner: Owner, report_of, wrap=None):
        self.e, self.g, self.owner, self.report_of, self.wrap = e, g, owner, report_of, wrap

    def __call__(self, p, elements):
        fn = self._run if self.wrap is None else self.wrap(self._run)
        return fn(p, elements)

    def _run(self, p, elements):
        for item in elements:
            (owned, csr, dist, ai, ad, added), _ = item
            res = local_fixpoint(csr, dist, ai, ad)
            report = self.report_of(self.e, self.g, res, active=len(ai), seeds=self.g == 0,
                                    edges=added if self.g == 0 else None)
            dist = dist.copy()
            dist[res.updated] = res.distances
            own = self.owner(res.out_v)
            cands = {int(q): (res.out_v[own == q], res.out_d[own == q]) for q in np.unique(own)}
            meta = (report.to_arrays(), int(len(res.updated) + len(res.out_v)),
                    int(len(res.settled_rounds)))
            yield (owned, csr, dist), cands, meta


def _candidates(item):
    return list(item[1].items())


def _state_of(item):
    return item[0], item[2]


def _gather(rows):
    """One element per partition: the candidates shuffled to it, concatenated."""
    vs, ds = [], []
    for _, (v, d) in rows:
        vs.append(v)
        ds.append(d)
    yield (np.concatenate(vs) if vs else np.zeros(0, np.int64),
           np.concatenate(ds) if ds else None)


def _min(pair):
    """``min`` in the owner: the candidates that lower a distance are the next round's
    active vertices."""
    ((owned, csr, dist), meta), (cv, cd) = pair
    cd = np.zeros(0, dist.dtype) if cd is None else cd.astype(dist.dtype, copy=False)
    av, ad = improve(owned, dist, cv, cd)
    return (owned, csr, dist, np.searchsorted(owned, av), ad, 0), (meta, len(av))


def _counts(item):
    return item[1]


def _reached(item):
    (owned, _, dist, _, _, _), _ = item
    k = dist != unreached(dist.dtype)
    return zip(owned[k].tolist(), dist[k].tolist())


def _summary(item):
    (owned, _, dist, _, _, _), _ = item
    k = dist != unreached(dist.dtype)
    return len(owned), int(k.sum()), (float(dist[k].max()) if k.any() else 0.0)


class SparkDistances:
    """The driver's handle on the distances kept in Spark (module docstring): ``O(P)``
    numbers and the RDD's checkpoint ids. ``job``: the :class:`~spark_plugin.jobs.sssp.job.SsspJob`
    (its driver, partitions, source, kernels' report function)."""

    def __init__(self, job, report_of):
        self.job, self.report_of = job, report_of
        self.state, self.state_ids = None, set()
        self.result_ids = set()
        self.owner: Owner | None = None
        self.n_cut = 0
        self._pending = None

    @property
    def ids(self) -> set:
        return set(self.state_ids) | set(self.result_ids)

    def _owner(self, frames) -> Owner:
        """``hash``: ``v % P``; ``locality``: ranges of ids at quantiles of the sources that
        Spark samples (one small job, ``P - 1`` numbers to the driver)."""
        job, P = self.job, self.job.P
        if job.partitioner == "hash" or P == 1:
            return Owner(P)
        from pyspark.sql import functions as F

        union = None
        for f in frames:
            part = f.frame.select(F.col("src").alias("k"))
            union = part if union is None else union.unionByName(part)
        cuts = sorted({int(q) for q in union.approxQuantile(
            "k", [i / P for i in range(1, P)], 0.001)})
        return Owner(P, cuts)

    def merge(self, e: int, frames: list, dist_frame=None) -> MergeTotals:
        """Read ``frames`` (:class:`EdgeFrame`) and ``dist_frame`` (``vertex, distance``:
        known distances, or ``None``) on the executors and merge them into the partitions
        (one Spark job); the new state is kept by :meth:`commit` (a refused epoch keeps the
        old)."""
        job, P = self.job, self.job.P
        sc = job.spark.sparkContext
        if self.owner is None:
            self.owner = self._owner(frames)
        blocks = []
        for f in frames:
            split = _Split(self.owner, "e", weighted=job.weighted, undirected=job.undirected
                           and not f.both, fresh=f.fresh, seed=f.seed, summed=f.summed)
            blocks.append(f.frame.select(*(["src", "dst", "weight"] if job.weighted
                                           else ["src", "dst"]))
                          .mapInArrow(split, "p int, blob binary").rdd.map(tuple))
        if dist_frame is not None:
            split = _Split(self.owner, "d", dtype=job.dtype)
            blocks.append(dist_frame.select("vertex", "distance")
                          .mapInArrow(split, "p int, blob binary").rdd.map(tuple))
        grouped = sc.union(blocks).partitionBy(P, _identity).mapPartitions(_blocks)
        old = (self.state.map(lambda item: item[0]) if self.state is not None
               else sc.parallelize([None] * P, P))
        merged = old.zip(grouped).mapPartitionsWithIndex(
            _Merge(self.owner, job.source, e == 0, job.dtype))
        job.driver.steps.step("merge", e, 0)
        state, ids = job.driver.checkpoints.checkpoint_rdd(merged)
        c = state.map(_counts).collect()
        self._pending = (state, ids)
        return MergeTotals(*(sum(x[k] for x in c) for k in range(5)),
                           weight_sum=float(sum(x[5] for x in c)))

    def commit(self, totals: MergeTotals) -> None:
        state, ids = self._pending
        self._pending = None
        self.job.driver.checkpoints.release(self.state_ids)
        self.state, self.state_ids = state, ids
        self.n_cut += totals.cut

    def discard(self) -> None:
        if self._pending is not None:
            self.job.driver.checkpoints.release(self._pending[1])
            self._pending = None

    def rounds(self, e: int) -> tuple[int, int]:
        """Global rounds from the seeds until the frontier at ``step.in3`` has no element of
        epoch ``e``: each one Spark job (the step, the candidates' shuffle, ``min``). Returns
        the last round and the most local rounds of a task."""
        from engine import Report

        job, d, P = self.job, self.job.driver, self.job.P
        it, local = 0, 0
        while True:
            s = d.new_stage("round", e, it)
            step = self.state.mapPartitionsWithIndex(
                _Step(e, it, self.owner, self.report_of, job.task_wrapper)).persist()
            cands = step.flatMap(_candidates).partitionBy(P, _identity).mapPartitions(_gather)
            nxt = step.map(_state_of).zip(cands).map(_min)
            nxt, ids = d.checkpoints.checkpoint_rdd(nxt)
            got = nxt.map(_counts).collect()
            step.unpersist()
            d.apply_stage({f"{job.name}-{p}": Report.from_arrays(**meta[0])
                           for p, (meta, _) in enumerate(got)},
                          s, f"round, epoch {e} round {it}",
                          [("cpu", "the shortest-paths kernels run on the CPU only")] * len(got))
            d.checkpoints.release(self.state_ids)
            self.state, self.state_ids = nxt, ids
            local = max([local] + [meta[2] for meta, _ in got])
            received = sum(meta[1] for meta, _ in got)
            lowered = sum(n for _, n in got)
            d.report(job._min_report(e, it, received, lowered))
            if job._decide(e, it, "every task reported"):
                return it, local
            it += 1

    def distances(self, e: int):
        """The reached vertices' distances as a DataFrame ``vertex, distance`` (checkpointed,
        on the executors), with the counts ``(vertices, reached, max distance)``."""
        job, ck = self.job, self.job.driver.checkpoints
        job.driver.steps.step("distances", e, 0)
        kind = "double" if job.weighted else "bigint"
        df = job.spark.createDataFrame(self.state.flatMap(_reached),
                                       f"vertex bigint, distance {kind}")
        df, ids = ck.checkpoint(df)
        # the previous epoch's stay until this one is written (--changes compares them):
        # the framework releases them then (the job's holding() no longer names them)
        self.result_ids = ids
        c = self.state.map(_summary).collect()
        return df, sum(x[0] for x in c), sum(x[1] for x in c), max(
            [0.0] + [x[2] for x in c])
